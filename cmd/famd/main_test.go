package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/famauth"
	"github.com/gofam/openfam/internal/munge/mungetest"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

var famdBin string

// TestMain builds the famd binary once for the tests that run it.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "famd-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	famdBin = filepath.Join(dir, "famd")
	out, err := exec.Command("go", "build", "-o", famdBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building famd: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// famd is a running famd process and the lines it logged so far.
type famd struct {
	cmd   *exec.Cmd
	lines chan string
	log   bytes.Buffer
}

func startFamd(t *testing.T, args ...string) *famd {
	t.Helper()
	return startFamdEnv(t, nil, args...)
}

// startFamdEnv starts famd with env added to the clean environment.
func startFamdEnv(t *testing.T, env []string, args ...string) *famd {
	t.Helper()
	f := &famd{cmd: exec.Command(famdBin, args...), lines: make(chan string, 100)}
	f.cmd.Env = append(cleanEnv(), env...)
	stderr, err := f.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
		close(f.lines)
	}()
	t.Cleanup(func() {
		if f.cmd.ProcessState == nil {
			f.cmd.Process.Kill()
			f.cmd.Wait()
		}
	})
	return f
}

// cleanEnv is the test's environment without OpenFAM variables, so that
// a developer's settings do not change famd's defaults.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENFAM_") {
			env = append(env, kv)
		}
	}
	return env
}

// waitLine returns the first logged line containing s.
func (f *famd) waitLine(t *testing.T, s string) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-f.lines:
			if !ok {
				t.Fatalf("famd exited without logging %q; log:\n%s", s, f.log.String())
			}
			f.log.WriteString(l + "\n")
			if strings.Contains(l, s) {
				return l
			}
		case <-timeout:
			t.Fatalf("famd did not log %q within 60s; log:\n%s", s, f.log.String())
		}
	}
}

// stop sends sig and returns the exit status and the rest of the log.
func (f *famd) stop(t *testing.T, sig os.Signal) (int, string) {
	t.Helper()
	if err := f.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		for l := range f.lines {
			f.log.WriteString(l + "\n")
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("famd did not stop within 60s")
	}
	f.cmd.Wait()
	return f.cmd.ProcessState.ExitCode(), f.log.String()
}

func runFamd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(famdBin, args...)
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

func TestHelp(t *testing.T) {
	code, out, _ := runFamd(t, "--help")
	if code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	for _, want := range []string{"--data-dir", "--listen", "--data-listen", "--socket", "--token-file", "--shm-dir",
		"--backup-dir", "--join", "--role", "--log-level", "--log-format", "--shutdown-timeout", "--advertise", "--interleave-size", "--spin", "--probe-interval", "--probe-failures",
		"metadata", "memory",
		"OPENFAM_DATA_DIR", "OPENFAM_SHM_DIR", "OPENFAM_BACKUP_DIR", "OPENFAM_TOKEN_FILE", "OPENFAM_SERVER", "SIGTERM"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not mention %s", want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	loose := filepath.Join(dir, "loose-token")
	os.WriteFile(loose, []byte("secret\n"), 0o644)
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("secret\n"), 0o600)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "nothing to serve"},
		{[]string{"--bogus"}, 2, "see famd --help"},
		{[]string{"--socket", dir + "/s", "--role", "chef"}, 2, "--role must be"},
		{[]string{"--socket", dir + "/s", "--join", "meta:7000"}, 2, "--join is for memory servers"},
		{[]string{"--socket", dir + "/s", "--role", "metadata", "--advertise", "h"}, 2, "--advertise is for memory servers"},
		{[]string{"--socket", dir + "/s", "--interleave-size", "1000"}, 2, "not a multiple of 4096"},
		{[]string{"--socket", dir + "/s", "--interleave-size", "0"}, 2, "positive multiple of 4096"},
		{[]string{"--socket", dir + "/s", "--interleave-size", "1.5M"}, 2, "positive multiple of 4096"},
		{[]string{"--socket", dir + "/s", "--role", "metadata", "--interleave-size", "lots"}, 2, "--interleave-size"},
		{[]string{"--role", "memory", "--listen", "tcp://127.0.0.1:0", "--token-file", tok}, 2, "needs --join"},
		{[]string{"--role", "memory", "--join", "nonsense", "--listen", "tcp://127.0.0.1:0", "--token-file", tok}, 2, "want tcp://HOST:PORT, HOST:PORT or unix:PATH"},
		{[]string{"--role", "memory", "--join", "unix:", "--listen", "tcp://127.0.0.1:0", "--token-file", tok}, 2, "empty socket path"},
		{[]string{"--role", "memory", "--join", "tcp://meta:7000", "--socket", dir + "/d", "--token-file", tok}, 2, "needs --listen"},
		{[]string{"--role", "memory", "--join", "meta:7000", "--listen", "tcp://0.0.0.0:0", "--token-file", tok}, 2, "--advertise"},
		{[]string{"--role", "memory", "--join", "meta:7000", "--listen", "tcp://127.0.0.1:0"}, 2, "needs a cluster token"},
		{[]string{"--role", "memory", "--join", "meta:7000", "--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--interleave-size", "64K"}, 2, "metadata famd"},
		{[]string{"--role", "memory", "--join", "meta:7000", "--listen", "tcp://127.0.0.1:0", "--token-file", loose}, 1, "chmod 600"},
		{[]string{"--socket", dir + "/s", "--log-level", "loud"}, 2, "--log-level"},
		{[]string{"--socket", dir + "/s", "--spin", "-1us"}, 2, "--spin -1µs: give a duration from 0"},
		{[]string{"--socket", dir + "/s", "--spin", "2ms"}, 2, "--spin 2ms: give a duration from 0"},
		{[]string{"--role", "memory", "--join", "unix:/x", "--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--spin", "1s"}, 2, "--spin 1s"},
		{[]string{"--listen", "127.0.0.1:7000"}, 2, "want tcp://HOST:PORT"},
		{[]string{"--listen", "tcp://127.0.0.1:0"}, 2, "needs a cluster token"},
		{[]string{"--listen", "tcp://127.0.0.1:0", "--token-file", loose}, 1, "chmod 600"},
		{[]string{"--socket", dir + "/s", "--data-listen", "127.0.0.1:1"}, 2, "--data-listen needs --listen"},
		{[]string{"--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--auth", "kerberos"}, 2, "--auth must be token or munge"},
		{[]string{"--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--auth", "munge", "--tcp-identity", "1:1"}, 2, "--tcp-identity is for --auth token"},
		{[]string{"--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--munge-socket", "/x"}, 2, "--munge-socket is for --auth munge"},
		{[]string{"--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--tcp-identity", "joe"}, 2, "want UID:GID"},
		{[]string{"--socket", dir + "/s", "--tcp-identity", "1:1"}, 2, "need --listen"},
		{[]string{"--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--tcp-identity", "1:1", "--server-token-file", tok}, 2, "holds the cluster token"},
		{[]string{"--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--tcp-identity", "1:1", "--server-token-file", loose}, 1, "chmod 600"},
		{[]string{"--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--tcp-identity", "1:1", "--role", "metadata"}, 2, "needs --server-token-file"},
		{[]string{"--role", "memory", "--join", "meta:7000", "--listen", "tcp://127.0.0.1:0", "--token-file", tok}, 2, "--join over TCP needs --server-token-file"},
		{[]string{"--role", "memory", "--join", "meta:7000", "--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--server-token-file", tok}, 2, "holds the cluster token"},
		{[]string{"--role", "memory", "--join", "unix:/x", "--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--auth", "munge"}, 2, "set on the metadata famd"},
	} {
		code, _, stderr := runFamd(t, append(tc.args, "--data-dir", dir+"/data")...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("famd %q: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr, tc.code, tc.msg)
		}
	}
}

func TestServeUnixAndSIGTERM(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "famd.sock")
	f := startFamd(t, "--socket", sock, "--data-dir", filepath.Join(dir, "data"))
	line := f.waitLine(t, "serving")
	for _, want := range []string{"unix:" + sock, "unix:" + sock + ".data", filepath.Join(dir, "data")} {
		if !strings.Contains(line, want) {
			t.Errorf("serving line %q does not mention %s", line, want)
		}
	}

	conn, err := rpc.DialUnix(sock, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := pb.NewFamClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := c.CreateRegion(ctx, &pb.CreateRegionRequest{Name: "kept", Size: 1 << 20, Mode: 0o600,
		Attr: &pb.RegionAttr{Memory: 2}})
	if err != nil || rep.GetErr() != nil {
		t.Fatalf("CreateRegion: %v %v", err, rep.GetErr())
	}

	// A second famd on the same data directory fails at once.
	code, _, stderr := runFamd(t, "--socket", filepath.Join(dir, "other.sock"), "--data-dir", filepath.Join(dir, "data"))
	if code != 1 || !strings.Contains(stderr, "in use by another famd") {
		t.Fatalf("second famd: exit %d, %q", code, stderr)
	}

	code, log := f.stop(t, syscall.SIGTERM)
	if code != 0 || !strings.Contains(log, "stopped") {
		t.Fatalf("after SIGTERM: exit %d, log:\n%s", code, log)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind after a graceful stop: %v", err)
	}

	// The persistent region is there for the next famd.
	f = startFamd(t, "--socket", sock, "--data-dir", filepath.Join(dir, "data"))
	f.waitLine(t, "serving")
	conn2, err := rpc.DialUnix(sock, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	lr, err := pb.NewFamClient(conn2).LookupRegion(ctx, &pb.LookupRegionRequest{Name: "kept"})
	if err != nil || lr.GetErr() != nil {
		t.Fatalf("LookupRegion after restart: %v %v", err, lr.GetErr())
	}
	if code, log := f.stop(t, syscall.SIGINT); code != 0 {
		t.Fatalf("after SIGINT: exit %d, log:\n%s", code, log)
	}
}

func TestServeTCP(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("sesame\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	daddr := dl.Addr().String()
	dl.Close()
	f := startFamd(t, "--listen", "tcp://"+addr, "--data-listen", daddr, "--token-file", tok,
		"--data-dir", filepath.Join(dir, "data"), "--log-level", "debug", "--tcp-identity", "1000:1000")
	line := f.waitLine(t, "serving")
	if !strings.Contains(line, "tcp://"+addr) || !strings.Contains(line, "tcp://"+daddr) ||
		!strings.Contains(line, "every client acts as uid 1000 gid 1000") {
		t.Fatalf("serving line %q lacks tcp://%s, tcp://%s or the TCP identity", line, addr, daddr)
	}
	conn, err := rpc.DialTCP(addr, &famauth.Client{Token: "sesame"}, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	info, err := pb.NewFamClient(conn).Info(ctx, &pb.InfoRequest{})
	if err != nil || info.GetDataTcp() != daddr {
		t.Fatalf("Info over TCP: %v %v", info, err)
	}
	if code, log := f.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d, log:\n%s", code, log)
	}
}

func TestParseInterleave(t *testing.T) {
	for in, want := range map[string]uint64{"": 0, "4096": 4096, "64K": 64 << 10, "64KiB": 64 << 10, "64kb": 64 << 10,
		"1MiB": 1 << 20, "2M": 2 << 20, "1G": 1 << 30, "8192": 8192} {
		if got, err := parseInterleave(in); err != nil || got != want {
			t.Errorf("parseInterleave(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "4095", "6000", "1K", "-4096", "K", "1T", "99999999999999999999G"} {
		if v, err := parseInterleave(in); err == nil || !isUsage(err) {
			t.Errorf("parseInterleave(%q) = %d, %v; want a usage error", in, v, err)
		}
	}
}

var joinedRe = regexp.MustCompile(`joined the metadata famd at (\S+) as memory server (\d+)`)

// TestMemoryServers runs a metadata famd and two memory famds as processes
// on real sockets: the memory servers join (and say so), a client's region
// is striped over both and reads back what it wrote, and a memory server
// restarted on its data directory rejoins with the same id and keeps its
// persistent segment.
func TestMemoryServers(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("cluster\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	metaSock := filepath.Join(dir, "meta.sock")
	meta := startFamd(t, "--role", "metadata", "--socket", metaSock, "--data-dir", filepath.Join(dir, "meta"),
		"--shm-dir", filepath.Join(dir, "meta-shm"), "--interleave-size", "64KiB")
	line := meta.waitLine(t, "serving")
	for _, want := range []string{"role metadata", "interleave size 65536", "unix:" + metaSock} {
		if !strings.Contains(line, want) {
			t.Errorf("metadata serving line %q does not mention %q", line, want)
		}
	}
	// startMem starts memory server k and returns it with the id it joined
	// as.
	startMem := func(k int) (*famd, string) {
		d := filepath.Join(dir, fmt.Sprint("mem", k))
		sock := d + ".data"
		m := startFamd(t, "--role", "memory", "--join", "unix:"+metaSock, "--listen", "tcp://127.0.0.1:0",
			"--token-file", tok, "--socket", sock, "--data-dir", d, "--shm-dir", d+"-shm")
		line := m.waitLine(t, "serving")
		for _, want := range []string{"role memory", "unix:" + metaSock, "tcp://127.0.0.1:", "unix:" + sock, d} {
			if !strings.Contains(line, want) {
				t.Errorf("memory serving line %q does not mention %q", line, want)
			}
		}
		sub := joinedRe.FindStringSubmatch(m.waitLine(t, "joined the metadata famd"))
		if sub == nil || sub[1] != "unix:"+metaSock {
			t.Fatalf("memory server %d: join line does not name the metadata famd and an id:\n%s", k, m.log.String())
		}
		return m, sub[2]
	}
	m1, id1 := startMem(1)
	_, id2 := startMem(2)
	if id1 == id2 {
		t.Fatalf("both memory servers joined as %s", id1)
	}

	f, err := core.Initialize(core.Options{Server: "unix:" + metaSock, TokenFile: tok, UID: -1, GID: -1,
		PEID: 0, PECount: 1, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Finalize()
	r, err := f.CreateRegion("striped", 4<<20, 0o600, core.RegionAttr{Memory: core.Persistent})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Stat()
	if err != nil || len(st.Servers) != 2 || st.InterleaveSize != 64<<10 {
		t.Fatalf("region stat %+v, %v: want 2 servers and 64 KiB blocks", st, err)
	}
	const size = 5*64<<10 + 100
	it, err := r.Allocate("x", size, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i>>16)
	}
	ctx := f.Default()
	if err := ctx.Put(want, it, 0); err != nil {
		t.Fatal(err)
	}
	servers := listServers(t, metaSock)
	if len(servers) != 2 {
		t.Fatalf("Servers lists %d memory servers, want 2", len(servers))
	}
	for _, s := range servers {
		if !s.GetReachable() || s.GetSegments() != 1 || s.GetBytes() == 0 {
			t.Errorf("memory server %d: reachable %v, %d segments, %d bytes; want reachable with the region's segment",
				s.GetId(), s.GetReachable(), s.GetSegments(), s.GetBytes())
		}
	}

	// A graceful stop and a start on the same directory: same id, same
	// bytes.
	if code, log := m1.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("memory server stop: exit %d\n%s", code, log)
	}
	_, again := startMem(1)
	if again != id1 {
		t.Fatalf("memory server rejoined as %s, was %s", again, id1)
	}
	got := make([]byte, size)
	if err := ctx.Get(got, it, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after the memory server restarted the item reads back differently (%v)", err)
	}
	if code, log := meta.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("metadata famd stop: exit %d\n%s", code, log)
	}
}

// listServers calls the Servers RPC of the famd at sock.
func listServers(t *testing.T, sock string) []*pb.ServerInfo {
	t.Helper()
	conn, err := rpc.DialUnix(sock, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := pb.NewFamClient(conn).Servers(ctx, &pb.ServersRequest{Probe: true})
	if err != nil || rep.GetErr() != nil {
		t.Fatalf("Servers: %v %v", err, rep.GetErr())
	}
	return rep.GetServers()
}

// TestMaxConnsPerPeer: --max-conns-per-peer caps one uid's data-plane
// connections; the one over is refused with a message naming the flag, and
// famd logs a warning at the default level.
func TestMaxConnsPerPeer(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "famd.sock")
	f := startFamd(t, "--socket", sock, "--data-dir", filepath.Join(dir, "data"), "--max-conns-per-peer", "3")
	f.waitLine(t, "serving")
	opts := transport.ClientOptions{Conns: 3, Timeout: 20 * time.Second}
	c, err := transport.Dial("unix", sock+".data", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts.Conns = 1
	_, err = transport.Dial("unix", sock+".data", opts)
	var e *transport.Error
	if !errors.As(err, &e) || e.Code != 17 || !strings.Contains(e.Msg, "--max-conns-per-peer") {
		t.Fatalf("4th connection: %v, want a FAM_ERESOURCE refusal naming --max-conns-per-peer", err)
	}
	if l := f.waitLine(t, "data plane: refusing a connection from uid"); !strings.Contains(l, "level=WARN") {
		t.Fatalf("refusal logged below level warn: %s", l)
	}
}

// TestRootNeedsTCPIdentity: a famd running as root does not silently make
// every holder of the cluster token root.
func TestRootNeedsTCPIdentity(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("famd refuses this only when it runs as root; the test runs as uid", os.Getuid())
	}
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runFamd(t, "--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--data-dir", dir+"/data")
	if code != 2 || !strings.Contains(stderr, "--tcp-identity") {
		t.Fatalf("root famd with --auth token and no --tcp-identity: exit %d, %q; want exit 2 asking for --tcp-identity", code, stderr)
	}
}

// TestMemoryJoinNeedsServerToken runs a metadata famd on TCP with a
// server token, and memory famds joining it over TCP: one holding only
// the cluster token (a PE's credentials) is refused and the metadata famd
// logs a warning; one with a wrong server token likewise; one with the
// right server token joins.
func TestMemoryJoinNeedsServerToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tok, stok, wrong := write("token", "cluster"), write("server-token", "servers-only"), write("wrong", "guess")
	meta := startFamd(t, "--role", "metadata", "--listen", "tcp://127.0.0.1:0", "--token-file", tok,
		"--server-token-file", stok, "--tcp-identity", "1000:1000", "--data-dir", filepath.Join(dir, "meta"),
		"--shm-dir", filepath.Join(dir, "meta-shm"))
	line := meta.waitLine(t, "serving")
	m := regexp.MustCompile(`gRPC on tcp://(\S+) `).FindStringSubmatch(line)
	if m == nil || !strings.Contains(line, "memory servers join with the server token") {
		t.Fatalf("metadata serving line %q: no TCP address or server-token note", line)
	}
	metaAddr := m[1]
	startMem := func(k int, extra ...string) *famd {
		d := filepath.Join(dir, fmt.Sprint("mem", k))
		return startFamd(t, append([]string{"--role", "memory", "--join", "tcp://" + metaAddr, "--listen", "tcp://127.0.0.1:0",
			"--token-file", tok, "--data-dir", d, "--shm-dir", d + "-shm", "--log-level", "debug"}, extra...)...)
	}
	// --role memory insists on a server token for a TCP join; to play the
	// PE that has only the cluster token, give it a token it does not
	// know: the metadata famd must refuse, whatever the token.
	bad := startMem(1, "--server-token-file", wrong)
	bad.waitLine(t, "refused this memory server: wrong server credential")
	if l := meta.waitLine(t, "refused a memory server joining from 127.0.0.1"); !strings.Contains(l, "level=WARN") {
		t.Fatalf("refused join logged below level warn: %s", l)
	}
	if bad.cmd.Wait(); bad.cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("memory famd refused by the metadata famd: exit %d, want 1; log:\n%s", bad.cmd.ProcessState.ExitCode(), bad.log.String())
	}
	good := startMem(2, "--server-token-file", stok)
	if sub := joinedRe.FindStringSubmatch(good.waitLine(t, "joined the metadata famd")); sub == nil || sub[2] != "1" {
		t.Fatalf("memory famd with the server token: join line wrong:\n%s", good.log.String())
	}
}

// TestServeTCPWithMunge runs famd --auth munge against a private munged:
// a TCP client is who its MUNGE credential says (this test's uid), and
// one without MUNGE is refused.
func TestServeTCPWithMunge(t *testing.T) {
	sock := mungetest.Start(t)
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("sesame\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := startFamd(t, "--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--auth", "munge", "--munge-socket", sock,
		"--data-dir", filepath.Join(dir, "data"))
	line := f.waitLine(t, "serving")
	m := regexp.MustCompile(`gRPC on tcp://(\S+) `).FindStringSubmatch(line)
	if m == nil || !strings.Contains(line, "clients authenticated with MUNGE") {
		t.Fatalf("serving line %q: no TCP address or MUNGE note", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func(c *famauth.Client) pb.FamClient {
		conn, err := rpc.DialTCP(m[1], c, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return pb.NewFamClient(conn)
	}
	rep, err := dial(&famauth.Client{Token: "sesame", MungeSocket: sock}).CreateRegion(ctx, &pb.CreateRegionRequest{Name: "r", Size: 1 << 20, Mode: 0o600})
	if err != nil || rep.GetErr() != nil || rep.GetRegion().GetUid() != uint32(os.Getuid()) {
		t.Fatalf("CreateRegion over TCP with MUNGE: %v %v, owner %d; want owned by uid %d", err, rep.GetErr(), rep.GetRegion().GetUid(), os.Getuid())
	}
	if _, err := dial(&famauth.Client{Token: "sesame", Mode: famauth.ModeToken}).Info(ctx, &pb.InfoRequest{}); err == nil ||
		!strings.Contains(err.Error(), "OPENFAM_AUTH=token") {
		t.Fatalf("a client refusing MUNGE: %v, want a refusal naming OPENFAM_AUTH=token", err)
	}
	if code, log := f.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d, log:\n%s", code, log)
	}
}
