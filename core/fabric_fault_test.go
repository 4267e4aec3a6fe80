package core_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
)

// faultProviders are the data planes TestMemoryFamdKilledMidTransfer runs
// on: the project's own (tcp) always, and the libfabric providers named in
// $OPENFAM_TEST_PROVIDERS (comma-separated; make test-fabric-fault sets
// "sockets,tcp;ofi_rxm").
func faultProviders() []string {
	ps := []string{"tcp"}
	for _, p := range strings.Split(os.Getenv("OPENFAM_TEST_PROVIDERS"), ",") {
		if p = strings.TrimSpace(p); p != "" && p != "tcp" {
			ps = append(ps, p)
		}
	}
	return ps
}

// buildFamd builds cmd/famd for tests that need a famd process to kill.
func buildFamd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "famd")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/famd").CombinedOutput(); err != nil {
		t.Fatalf("building famd: %v\n%s", err, out)
	}
	return bin
}

// TestMemoryFamdKilledMidTransfer: a memory famd (a real process, on the
// data plane of each provider) killed with SIGKILL while a PE's transfer
// to it is in flight gives the PE an error, at the call or at fam_quiet,
// within OPENFAM_TIMEOUT: never a hang. Finalize then returns too.
func TestMemoryFamdKilledMidTransfer(t *testing.T) {
	famd := buildFamd(t)
	for _, prov := range faultProviders() {
		t.Run(strings.ReplaceAll(prov, ";", "+"), func(t *testing.T) { killMidTransfer(t, famd, prov) })
	}
}

func killMidTransfer(t *testing.T, famd, prov string) {
	const timeout = 3 * time.Second
	// How much later than the timeout the error may come on a machine
	// whose cores are all busy; far below a hang.
	const slack = 20 * time.Second
	meta, cmd, tok := startMemoryFamd(t, famd, prov, "fault")

	o := core.DefaultOptions()
	o.Server, o.TokenFile, o.Provider, o.Timeout = "unix:"+meta.SocketPath(), tok, prov, timeout
	f, err := core.Initialize(o)
	if err != nil {
		t.Fatalf("fam_initialize on the %s data plane: %v", prov, err)
	}
	finalized := false
	defer func() {
		if !finalized {
			f.Finalize()
		}
	}()
	r := mustV(f.CreateRegion("fault", 128<<20, 0o600, core.RegionAttr{}))(t, "create region")
	it := mustV(r.Allocate("big", 64<<20, 0o600))(t, "allocate")
	ctx := f.Default()
	buf, back := make([]byte, 32<<20), make([]byte, 32<<20)

	type outcome struct {
		err     error
		at      time.Time // when the failing call returned
		started time.Time // when it was made
	}
	inflight, done := make(chan struct{}), make(chan outcome, 1)
	go func() {
		for i := 0; ; i++ {
			start := time.Now()
			err := ctx.PutNB(buf, it, uint64(i%2)*(32<<20))
			if i == 2 {
				close(inflight) // planes established; this put is in flight
			}
			if err == nil {
				err = ctx.Quiet()
			}
			if err == nil {
				start = time.Now()
				err = ctx.Get(back, it, 0)
			}
			if err != nil {
				done <- outcome{err, time.Now(), start}
				return
			}
		}
	}()
	select {
	case <-inflight:
	case o := <-done:
		t.Fatalf("a transfer failed before the memory famd was killed: %v", o.err)
	case <-time.After(120 * time.Second):
		t.Fatal("three transfers of 32 MiB did not complete within 120s")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	select {
	case o := <-done:
		var e *core.Error
		if !errors.As(o.err, &e) {
			t.Errorf("the failure is %T %v, want a *core.Error", o.err, o.err)
		}
		if took := o.at.Sub(maxTime(o.started, killed)); took > timeout+slack {
			t.Errorf("the call failed %v after the famd died, OPENFAM_TIMEOUT is %v", took, timeout)
		}
		t.Logf("provider %s: %v after the kill: %v", prov, o.at.Sub(killed), o.err)
	case <-time.After(timeout + slack + 30*time.Second):
		t.Fatalf("provider %s: the PE still waits %v after its memory famd was killed (OPENFAM_TIMEOUT %v)", prov, time.Since(killed), timeout)
	}
	fin := make(chan error, 1)
	go func() { fin <- f.Finalize() }()
	finalized = true
	select {
	case <-fin:
	case <-time.After(timeout + slack + 30*time.Second):
		t.Fatalf("provider %s: fam_finalize hangs after the memory famd was killed", prov)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// startMemoryFamd starts a metadata famd in this process and a memory famd
// process (binary famd) that joins it, both on data plane prov, with
// cluster and server tokens named after name; it returns once the memory
// famd has joined (failing the test with its log if it exits first or
// takes over 60 s), and kills it at the test's end.
func startMemoryFamd(t *testing.T, famd, prov, name string) (meta *embed.Famd, cmd *exec.Cmd, tok string) {
	t.Helper()
	dir := t.TempDir()
	tok, stok := writeToken(t, name+"-cluster-token"), filepath.Join(dir, "server-token")
	if err := os.WriteFile(stok, []byte(name+"-server-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	meta = startFamd(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: name + "-cluster-token", Role: "metadata",
		ShmDir: filepath.Join(dir, "meta-shm"), ServerToken: name + "-server-token", Provider: prov})
	cmd = exec.Command(famd, "--role", "memory", "--join", "tcp://"+meta.Addr(), "--listen", "tcp://127.0.0.1:0",
		"--token-file", tok, "--server-token-file", stok, "--data-dir", filepath.Join(dir, "mem"),
		"--shm-dir", filepath.Join(dir, "mem-shm"), "--provider", prov)
	cmd.Env = append(os.Environ(), "OPENFAM_TOKEN_FILE=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	joined, logDone := make(chan struct{}), make(chan struct{})
	var log strings.Builder
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if !signalled && strings.Contains(sc.Text(), "joined the metadata famd") {
				close(joined)
				signalled = true
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		<-logDone
	})
	select {
	case <-joined:
	case <-logDone:
		t.Fatalf("memory famd (--provider %s) exited before joining:\n%s", prov, log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("memory famd (--provider %s) did not join within 60s", prov)
	}
	return meta, cmd, tok
}
