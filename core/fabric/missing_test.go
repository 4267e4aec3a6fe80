package fabric

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func init() {
	// The child of TestNoLibfabric loads a library that does not exist.
	if os.Getenv("FABRIC_TEST_NO_LIBFABRIC") != "" {
		libraryName = "libfabric-absent-for-test.so.1"
	}
}

// TestNoLibfabric: where libfabric.so.1 cannot be loaded, Open fails with
// an error wrapping ErrNoLibfabric that carries the loader's message, and
// nothing else breaks. Run in a child process, whose loader is pointed at
// a library that does not exist.
func TestNoLibfabric(t *testing.T) {
	if os.Getenv("FABRIC_TEST_NO_LIBFABRIC") != "" {
		_, err := Open("sockets", Options{})
		if !errors.Is(err, ErrNoLibfabric) || !strings.Contains(err.Error(), "libfabric-absent-for-test.so.1") {
			t.Fatalf("Open without libfabric: %v, want ErrNoLibfabric with the loader's message", err)
		}
		t.Logf("Open without libfabric: %v", err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoLibfabric$", "-test.v")
	cmd.Env = append(os.Environ(), "FABRIC_TEST_NO_LIBFABRIC=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestNoLibfabric") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestTCPIsNotAProvider: the project's own data plane is not opened here.
func TestTCPIsNotAProvider(t *testing.T) {
	for _, p := range []string{"", TCP} {
		if e, err := Open(p, Options{}); err == nil {
			e.Close()
			t.Fatalf("Open(%q) succeeded", p)
		}
	}
}
