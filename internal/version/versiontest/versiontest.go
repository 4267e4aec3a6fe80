// Package versiontest checks a tool's --version flag, for the tests of
// every command that has one.
package versiontest

import (
	"bytes"
	"io"
	"testing"

	"github.com/gofam/openfam/internal/version"
)

// CheckFlag runs `NAME --version` through run (the command's testable
// main) with a stamped version and checks that it prints "NAME VERSION" on
// stdout, nothing on stderr, and exits 0.
func CheckFlag(t *testing.T, name string, run func(args []string, stdout, stderr io.Writer) int) {
	t.Helper()
	old := version.Version
	defer func() { version.Version = old }()
	version.Version = "1.2.3-gtest"
	var so, se bytes.Buffer
	if code := run([]string{"--version"}, &so, &se); code != 0 || so.String() != name+" 1.2.3-gtest\n" || se.Len() != 0 {
		t.Fatalf("%s --version: exit %d, stdout %q, stderr %q", name, code, so.String(), se.String())
	}
}
