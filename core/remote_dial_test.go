package core_test

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
)

// initFails initializes against server with the default 10 s timeout and
// checks that it fails with code want, within 2 s (famd being absent or
// refusing the client must not cost the timeout), and with a message
// holding every string in has.
func initFails(t *testing.T, server, tokenFile string, want core.Code, has ...string) {
	t.Helper()
	o := core.DefaultOptions()
	o.Server, o.TokenFile, o.Timeout = server, tokenFile, core.DefaultTimeout
	o.PEID, o.PECount = 0, 1
	start := time.Now()
	f, err := core.Initialize(o)
	took := time.Since(start)
	if err == nil {
		f.Finalize()
		t.Fatalf("Initialize(%q) succeeded", server)
	}
	if core.CodeOf(err) != want {
		t.Fatalf("Initialize(%q): %v (code %d), want code %d", server, err, core.CodeOf(err), want)
	}
	if took > 2*time.Second {
		t.Fatalf("Initialize(%q) took %v to fail (%v); want < 2s", server, took, err)
	}
	for _, s := range has {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("Initialize(%q): %q does not say %q", server, err, s)
		}
	}
}

// No socket file where OPENFAM_SERVER points: fails at once, naming it.
func TestDialMissingSocketFailsFast(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "famd.sock")
	initFails(t, "unix:"+sock, "", core.CodeRPC, sock, "not running")
}

// A TCP address nothing listens at: fails at once, naming it.
func TestDialRefusedTCPFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	initFails(t, addr, writeToken(t, "tok"), core.CodeRPC, addr, "connection refused")
}

// A socket file nobody listens at (famd killed without cleaning up).
func TestDialStaleSocketFailsFast(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "famd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	initFails(t, "unix:"+sock, "", core.CodeRPC, sock, "connection refused")
}

// A token famd does not hold: FAM_ERR_NOPERM, said as such, at once.
func TestDialWrongTokenSaysSo(t *testing.T) {
	d := startFamd(t, embed.Options{NoSocket: true, TCPAddr: "127.0.0.1:0", Token: "right"})
	tf := writeToken(t, "wrong")
	initFails(t, d.Addr(), tf, core.CodeNoPerm, d.Addr(), "wrong cluster token", tf)
}

// Anything but unix:PATH and HOST:PORT is FAM_ERR_INVALID, and the message
// says which forms are accepted.
func TestDialMalformedServer(t *testing.T) {
	tf := writeToken(t, "tok")
	for _, s := range []string{"bogus", "unix:", "/run/famd.sock", "localhost:", "localhost:http", "127.0.0.1:70000", "127.0.0.1:0", "tcp://127.0.0.1:7000"} {
		t.Run(s, func(t *testing.T) {
			initFails(t, s, tf, core.CodeInvalid, "unix:PATH", "HOST:PORT")
		})
	}
}
