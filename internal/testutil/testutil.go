// Package testutil holds helpers shared by tests of several packages that
// run parts of themselves as another Unix user.
package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// CopyExecutable copies the running test binary into a fresh directory
// another user may enter, and returns the copy's path: a helper process
// run with another uid cannot execute the binary where go test left it
// (under a private temporary directory). The copy goes away with the test.
func CopyExecutable(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "openfam-helper-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "helper")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
