package testutil

import (
	"bytes"
	"os"
	"testing"
)

func TestCopyExecutableIsAnExecutableCopy(t *testing.T) {
	bin := CopyExecutable(t)
	st, err := os.Stat(bin)
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("copy %s: %v %v", bin, st, err)
	}
	a, _ := os.ReadFile(os.Args[0])
	b, _ := os.ReadFile(bin)
	if !bytes.Equal(a, b) {
		t.Fatal("the copy differs from the test binary")
	}
	if d, err := os.Stat(bin[:len(bin)-len("/helper")]); err != nil || d.Mode().Perm() != 0o755 {
		t.Fatalf("directory not enterable by others: %v %v", d, err)
	}
}
