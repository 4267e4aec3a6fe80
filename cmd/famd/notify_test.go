package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// notifySocket listens on a Unix datagram socket as systemd does for a
// Type=notify service, and returns it with the NOTIFY_SOCKET value naming
// it.
func notifySocket(t *testing.T, abstract bool) (*net.UnixConn, string) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "notify.sock")
	addr := &net.UnixAddr{Name: name, Net: "unixgram"}
	env := name
	if abstract {
		env = "@openfam-famd-test-" + filepath.Base(filepath.Dir(name))
		addr.Name = "\x00" + env[1:]
	}
	c, err := net.ListenUnixgram("unixgram", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, env
}

// receive returns the next datagram, failing after a generous deadline.
func receive(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	b := make([]byte, 4096)
	n, err := c.Read(b)
	if err != nil {
		t.Fatalf("no notification from famd: %v", err)
	}
	return string(b[:n])
}

// Under systemd (Type=notify) famd says READY=1 on $NOTIFY_SOCKET once it
// serves, and STOPPING=1 when it stops; both for a path and an abstract
// socket name.
func TestNotifyReady(t *testing.T) {
	for _, abstract := range []bool{false, true} {
		name := "path"
		if abstract {
			name = "abstract"
		}
		t.Run(name, func(t *testing.T) {
			c, env := notifySocket(t, abstract)
			dir := t.TempDir()
			sock := filepath.Join(dir, "famd.sock")
			f := startFamdEnv(t, []string{"NOTIFY_SOCKET=" + env}, "--socket", sock, "--data-dir", filepath.Join(dir, "data"))
			msg := receive(t, c)
			if !strings.Contains(msg, "READY=1") || !strings.Contains(msg, "MAINPID=") {
				t.Fatalf("famd notified %q, want READY=1 and its MAINPID", msg)
			}
			// Ready means serving: the socket answers now.
			if _, err := os.Stat(sock); err != nil {
				t.Fatalf("READY=1 sent before the socket exists: %v", err)
			}
			code, log := f.stop(t, syscall.SIGTERM)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, log)
			}
			if msg := receive(t, c); msg != "STOPPING=1" {
				t.Errorf("famd notified %q when stopping, want STOPPING=1", msg)
			}
		})
	}
}

// Without NOTIFY_SOCKET sdNotify does nothing; with a bad value it says
// why rather than failing silently.
func TestSdNotifyEnv(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if err := sdNotify("READY=1"); err != nil {
		t.Errorf("without NOTIFY_SOCKET: %v", err)
	}
	t.Setenv("NOTIFY_SOCKET", "relative/name")
	if err := sdNotify("READY=1"); err == nil {
		t.Error("a relative NOTIFY_SOCKET was accepted")
	}
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "none"))
	if err := sdNotify("READY=1"); err == nil {
		t.Error("a NOTIFY_SOCKET nobody listens on was accepted")
	}
}

// The unit in dist/systemd passes systemd-analyze verify where systemd is
// installed.
func TestSystemdUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	unit, err := filepath.Abs("../../dist/systemd/famd.service")
	if err != nil {
		t.Fatal(err)
	}
	// verify wants the ExecStart binary to exist: point it at the test's.
	// The man page it names is installed with make install, not here.
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(t.TempDir(), "famd.service")
	if err := os.WriteFile(tmp, []byte(strings.ReplaceAll(string(b), "@BINDIR@/famd", famdBin)), 0o644); err != nil {
		t.Fatal(err)
	}
	// verify exits 0 after warning about a value it ignores: any output
	// is a failure.
	out, err := exec.Command(sa, "verify", "--man=no", tmp).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The tmpfiles.d entry makes famd's data and shm directories, private to
// their owner (checked under a scratch root, owned by root: the openfam
// user exists only where systemd-sysusers made it).
func TestTmpfilesEntry(t *testing.T) {
	st, err := exec.LookPath("systemd-tmpfiles")
	if err != nil {
		t.Skip("systemd-tmpfiles is not installed")
	}
	if os.Getuid() != 0 {
		t.Skip("creating directories owned by a given user needs root")
	}
	b, err := os.ReadFile("../../dist/systemd/famd.tmpfiles.conf")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "openfam.conf")
	if err := os.WriteFile(conf, []byte(strings.ReplaceAll(string(b), "openfam openfam", "root root")), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	if out, err := exec.Command(st, "--create", "--root="+root, conf).CombinedOutput(); err != nil {
		t.Fatalf("systemd-tmpfiles --create: %v\n%s", err, out)
	}
	for _, d := range []string{"var/lib/openfam", "dev/shm/openfam"} {
		fi, err := os.Stat(filepath.Join(root, d))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("/%s: %v, %v; want a directory of mode 0700", d, fi, err)
		}
	}
}
