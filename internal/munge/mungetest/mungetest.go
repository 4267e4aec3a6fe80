// Package mungetest runs a private munged for tests: its own key, socket,
// pid, log and seed files in a temporary directory, so that tests neither
// need nor disturb a system munged.
package mungetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gofam/openfam/internal/munge"
)

// Start starts a private munged, stops it when the test ends, and returns
// its socket path (give it to clients as OPENFAM_MUNGE_SOCKET and to famd
// as --munge-socket). It skips the test, saying why, when munged,
// mungekey or libmunge.so.2 is missing (Debian: apt-get install munge
// libmunge2; make deps does it).
func Start(t testing.TB) string {
	t.Helper()
	if err := munge.Available(); err != nil {
		t.Skipf("MUNGE test skipped: %v", err)
	}
	munged, err := exec.LookPath("munged")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/munged"); serr != nil {
			t.Skip("MUNGE test skipped: munged not found (apt-get install munge)")
		}
		munged = "/usr/sbin/munged"
	}
	mungekey, err := exec.LookPath("mungekey")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/mungekey"); serr != nil {
			t.Skip("MUNGE test skipped: mungekey not found (apt-get install munge)")
		}
		mungekey = "/usr/sbin/mungekey"
	}
	// munged insists that every directory above its socket is searchable
	// by all (clients of any user must reach it), so not t.TempDir, whose
	// parent is private. A short path also keeps within sun_path.
	dir, err := os.MkdirTemp("", "munged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "munge.key")
	if out, err := exec.Command(mungekey, "--create", "--keyfile="+key, "--bits=256").CombinedOutput(); err != nil {
		t.Fatalf("mungekey: %v\n%s", err, out)
	}
	sock := filepath.Join(dir, "munge.socket")
	cmd := exec.Command(munged, "--foreground", "--socket="+sock, "--key-file="+key,
		"--log-file="+filepath.Join(dir, "munged.log"), "--pid-file="+filepath.Join(dir, "munged.pid"),
		"--seed-file="+filepath.Join(dir, "munged.seed"))
	logf, err := os.Create(filepath.Join(dir, "munged.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting munged: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	// Ready when a credential round trip works.
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("munged exited at start (%v):\n%s", err, readLog(dir))
		default:
		}
		cred, err := munge.Encode(sock, []byte("ping"))
		if err == nil {
			if _, err = munge.Decode(sock, cred); err == nil {
				return sock
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("munged did not answer on %s within 20s (%v):\n%s", sock, err, readLog(dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readLog(dir string) string {
	var s string
	for _, n := range []string{"munged.out", "munged.log"} {
		if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
			s += fmt.Sprintf("%s:\n%s", n, b)
		}
	}
	return s
}
