package rpc_test

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/internal/famauth"
)

// DialUnix and DialTCP fail at once, saying famd is not running, when
// nothing listens at the address, and keep the cause for errors.Is.
func TestDialNothingListening(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "famd.sock")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, c := range []struct {
		name  string
		dial  func() error
		cause error
		has   string
	}{
		{"unix", func() error { _, err := rpc.DialUnix(sock, 10*time.Second); return err }, syscall.ENOENT, "no socket file"},
		{"tcp", func() error {
			_, err := rpc.DialTCP(addr, &famauth.Client{Token: "t"}, 10*time.Second)
			return err
		}, syscall.ECONNREFUSED, "connection refused"},
	} {
		start := time.Now()
		err := c.dial()
		if err == nil || !errors.Is(err, c.cause) || !strings.Contains(err.Error(), "is not running: "+c.has) {
			t.Fatalf("%s: %v, want %v saying %q", c.name, err, c.cause, c.has)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s: took %v to fail", c.name, d)
		}
	}
}
