package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPing checks the health check's two outcomes: exit 0 and "ok" with
// the version and uptime from a famd that answers, exit 1 and the reason
// from one that does not (no socket, wrong token, silent server).
func TestPing(t *testing.T) {
	f := startFamd(t)
	out := f.ok(t, "ping")
	want := "famd at unix:" + f.sock + ": ok (OpenFAM "
	if !strings.HasPrefix(out, want) || !strings.Contains(out, "uptime ") {
		t.Errorf("ping printed %q, want it to start with %q and give the uptime", out, want)
	}
	var j map[string]any
	f.okJSON(t, &j, "ping")
	if j["ok"] != true || j["version"] == "" {
		t.Errorf("ping --json: %v", j)
	}

	pingFails := func(t *testing.T, args []string, reason string) {
		t.Helper()
		var so, se bytes.Buffer
		code := run(append(args, "ping"), &so, &se)
		if code != exitError || !strings.Contains(se.String(), "not ok") || !strings.Contains(se.String(), reason) {
			t.Errorf("famctl %v ping: exit %d, stderr %q; want exit 1 saying %q", args, code, se.String(), reason)
		}
	}
	dir := t.TempDir()
	t.Run("no socket", func(t *testing.T) {
		pingFails(t, []string{"--server", "unix:" + dir + "/none.sock", "--timeout", "20s"}, dir+"/none.sock")
	})
	t.Run("wrong token", func(t *testing.T) {
		tf := filepath.Join(dir, "token")
		if err := os.WriteFile(tf, []byte("not-the-token\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		pingFails(t, []string{"--server", f.tcp, "--token-file", tf, "--timeout", "20s"}, "token")
	})
	t.Run("silent server", func(t *testing.T) {
		// A socket that accepts connections but never speaks: the ping must
		// give up at --timeout and say so.
		l, err := net.Listen("unix", filepath.Join(dir, "silent.sock"))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		pingFails(t, []string{"--server", "unix:" + dir + "/silent.sock", "--timeout", "1s"}, "1s")
	})
}
