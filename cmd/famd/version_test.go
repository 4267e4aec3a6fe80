package main

import (
	"bytes"
	"testing"

	"github.com/gofam/openfam/internal/version"
)

// --version prints "famd VERSION" (the stamped version) on stdout, nothing on
// stderr, and exits 0.
func TestVersionFlag(t *testing.T) {
	old := version.Version
	defer func() { version.Version = old }()
	version.Version = "1.2.3-gtest"
	var so, se bytes.Buffer
	if code := run([]string{"--version"}, &so, &se); code != 0 || so.String() != "famd 1.2.3-gtest\n" || se.Len() != 0 {
		t.Fatalf("famd --version: exit %d, stdout %q, stderr %q", code, so.String(), se.String())
	}
}
