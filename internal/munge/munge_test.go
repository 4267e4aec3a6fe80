package munge_test

import (
	"bytes"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/gofam/openfam/internal/munge"
	"github.com/gofam/openfam/internal/munge/mungetest"
	"github.com/gofam/openfam/internal/testutil"
)

// TestMain doubles as a helper process: with MUNGE_TEST_ENCODE set it
// prints a credential made by whichever user runs it.
func TestMain(m *testing.M) {
	if sock := os.Getenv("MUNGE_TEST_ENCODE"); sock != "" {
		cred, err := munge.Encode(sock, []byte("from a helper"))
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString(cred)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRoundTrip: a credential proves the encoder's uid and gid and carries
// its payload; a second decode is refused as a replay; garbage is refused.
func TestRoundTrip(t *testing.T) {
	sock := mungetest.Start(t)
	cred, err := munge.Encode(sock, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := munge.Decode(sock, cred)
	if err != nil || c.UID != uint32(os.Getuid()) || c.GID != uint32(os.Getgid()) || !bytes.Equal(c.Payload, []byte("hello")) {
		t.Fatalf("Decode = %+v, %v; want uid %d gid %d payload hello", c, err, os.Getuid(), os.Getgid())
	}
	if _, err := munge.Decode(sock, cred); munge.Code(err) != munge.ErrCredReplayed {
		t.Fatalf("second Decode: %v, want a replay error", err)
	}
	if _, err := munge.Decode(sock, "MUNGE:not-a-credential:"); err == nil {
		t.Fatal("garbage decoded")
	}
	if _, err := munge.Encode(sock+".none", nil); munge.Code(err) != munge.ErrSocket {
		t.Fatalf("Encode with no munged: %v, want a socket error", err)
	}
}

// TestOtherUser: a credential made by another Unix user (nobody) decodes
// to that user, not to the decoder.
func TestOtherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a helper as another user")
	}
	sock := mungetest.Start(t)
	bin := copyExecutable(t)
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "MUNGE_TEST_ENCODE="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, stderr.String())
	}
	c, err := munge.Decode(sock, string(out))
	if err != nil || c.UID != 65534 || c.GID != 65534 || string(c.Payload) != "from a helper" {
		t.Fatalf("Decode = %+v, %v; want nobody's credential", c, err)
	}
}

func copyExecutable(t *testing.T) string { return testutil.CopyExecutable(t) }
