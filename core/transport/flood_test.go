package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofam/openfam/core/wire"
	"github.com/gofam/openfam/internal/testutil"
)

// warnings collects a Server's warnings.
type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnings) warnf(format string, args ...any) {
	w.mu.Lock()
	w.lines = append(w.lines, fmt.Sprintf(format, args...))
	w.mu.Unlock()
}

func (w *warnings) has(sub string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// hello sends a Hello frame on c and returns the reply's status and
// message; a connection the server closed instead gives an error.
func hello(c net.Conn) (uint32, string, error) {
	c.SetDeadline(time.Now().Add(30 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(wire.Append(nil, wire.Header{Op: wire.OpHello, ID: 1}, nil)); err != nil {
		return 0, "", err
	}
	var hb [wire.HeaderSize]byte
	h, err := wire.ReadHeader(c, &hb)
	if err != nil {
		return 0, "", err
	}
	msg := make([]byte, h.PayloadLen)
	if _, err := io.ReadFull(c, msg); err != nil {
		return 0, "", err
	}
	return h.Status, string(msg), nil
}

// refusal checks that err is the server's refusal of a connection over
// the cap.
func refusal(t *testing.T, err error, peer string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != codeResource || !strings.Contains(e.Msg, "too many data-plane connections from "+peer) {
		t.Fatalf("got %v, want a FAM_ERESOURCE refusal naming %s", err, peer)
	}
}

// flood opens n connections to network addr and introduces each with
// Hello, one after another, so that each is admitted or refused before the
// next: it returns the admitted ones (held open) and how many were
// refused.
func flood(t *testing.T, network, addr string, n int) (held []net.Conn, refused int) {
	t.Helper()
	for i := 0; i < n; i++ {
		c, err := net.Dial(network, addr)
		if err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		st, _, err := hello(c)
		switch {
		case err == nil && st == wire.StatusOK:
			held = append(held, c)
			t.Cleanup(func() { c.Close() })
		case err == nil && st == codeResource:
			refused++
			c.Close()
		default:
			t.Fatalf("flood connection %d: status %d, %v", i, st, err)
		}
	}
	return held, refused
}

// TestFloodFromOneUidLeavesOthersServed: one uid holding as many Unix
// connections as it may, and opening many more (some never saying a word),
// is refused beyond the cap with a clear error and a warning, while a
// client of another uid connects and works, and the flooding uid connects
// again once it lets go. The old server had no cap: the flooding uid could
// hold every descriptor famd had.
func TestFloodFromOneUidLeavesOthersServed(t *testing.T) {
	const limit = 8
	dir := t.TempDir()
	mem := newFileMem(t, dir, 1<<20)
	key := mem.add(0, 4096, RightRead|RightWrite)
	var w warnings
	s := NewServer(mem, ServerOptions{MaxConnsPerPeer: limit, Warnf: w.warnf})

	// The socket must be reachable by another uid.
	sockDir, err := os.MkdirTemp("", "transport-flood-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "data.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve returned %v after Close", err)
		}
	})

	me := fmt.Sprintf("uid %d", os.Getuid())
	held, refused := flood(t, "unix", sock, 4*limit)
	if len(held) != limit || refused != 3*limit {
		t.Fatalf("flood: %d admitted and %d refused, want %d and %d", len(held), refused, limit, 3*limit)
	}
	// The flooding uid's own client is refused, clearly.
	_, err = Dial("unix", sock, ClientOptions{Conns: 1, Timeout: 30 * time.Second})
	refusal(t, err, me)
	if !w.has("refusing a connection from " + me) {
		t.Errorf("no warning names %s; warnings: %q", me, w.lines)
	}

	// More connections that never send anything: refused too (most
	// without an answer: see maxRefusing), and they must not hold up the
	// accept loop or the other uid.
	var silent []net.Conn
	for i := 0; i < 4*maxRefusing; i++ {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("silent connection %d: %v", i, err)
		}
		silent = append(silent, c)
	}
	t.Cleanup(func() {
		for _, c := range silent {
			c.Close()
		}
	})

	// Another uid is served.
	if os.Getuid() != 0 {
		t.Log("not root: cannot run a client as another uid; skipping that part")
	} else {
		out := runAsNobody(t, sock, key)
		if want := "ok uid=65534\n"; out != want {
			t.Fatalf("client as nobody said %q, want %q", out, want)
		}
	}

	// Once the flooding uid lets go, it is served again: the count falls as
	// each connection's handler sees it close.
	for _, c := range held {
		c.Close()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := Dial("unix", sock, ClientOptions{Conns: 1, Timeout: 30 * time.Second})
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still refused 30s after closing the flood: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFloodFromOneAddressLeavesOthersServed is the TCP case: the cap is
// per source address.
func TestFloodFromOneAddressLeavesOthersServed(t *testing.T) {
	const limit = 4
	mem := newFileMem(t, t.TempDir(), 1<<20)
	var w warnings
	s := NewServer(mem, ServerOptions{MaxConnsPerPeer: limit, Warnf: w.warnf})
	addr := serve(t, s, "tcp")
	held, refused := flood(t, "tcp", addr, 3*limit)
	if len(held) != limit || refused != 2*limit {
		t.Fatalf("flood: %d admitted and %d refused, want %d and %d", len(held), refused, limit, 2*limit)
	}
	_, err := Dial("tcp", addr, ClientOptions{Conns: 1, Timeout: 30 * time.Second})
	refusal(t, err, "address 127.0.0.1")
	// Another source address (all of 127/8 is local on Linux) is served.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 30 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot connect from 127.0.0.2 (%v); skipping the other-address part", err)
	}
	defer c.Close()
	if st, msg, err := hello(c); err != nil || st != wire.StatusOK {
		t.Fatalf("client from 127.0.0.2: status %d %q, %v", st, msg, err)
	}
	if !w.has("refusing a connection from address 127.0.0.1") {
		t.Errorf("no warning names the address; warnings: %q", w.lines)
	}
}

// TestNoCap: a negative cap admits everything.
func TestNoCap(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	addr := serve(t, NewServer(mem, ServerOptions{MaxConnsPerPeer: -1}), "unix")
	held, refused := flood(t, "unix", addr, 64)
	if len(held) != 64 || refused != 0 {
		t.Fatalf("%d admitted and %d refused, want 64 and 0", len(held), refused)
	}
}

// The client helper: a well-behaved client in its own process, run as
// another uid.
const (
	clientAddrEnv = "TRANSPORT_TEST_CLIENT_ADDR"
	clientKeyEnv  = "TRANSPORT_TEST_CLIENT_KEY"
)

// The short-of-descriptors server helper: a server with few descriptors
// in its own process.
const emfileSockEnv = "TRANSPORT_TEST_EMFILE_SOCK"

func init() {
	if addr := os.Getenv(clientAddrEnv); addr != "" {
		os.Exit(runClientHelper(addr, os.Getenv(clientKeyEnv)))
	}
	if sock := os.Getenv(emfileSockEnv); sock != "" {
		os.Exit(runEmfileServer(sock))
	}
}

// runEmfileServer serves sock, with no cap, in a process allowed 64
// descriptors, and prints "listening". It prints why if Serve stops.
func runEmfileServer(sock string) int {
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 64, Max: 64}); err != nil {
		fmt.Println("setrlimit:", err)
		return 1
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	fmt.Println("listening")
	var mem fileMem
	err = NewServer(&mem, ServerOptions{MaxConnsPerPeer: -1}).Serve(l)
	fmt.Println("serve stopped:", err)
	return 1
}

// TestAcceptSurvivesDescriptorShortage: a server out of descriptors (a
// flood larger than its limit) keeps its listener and serves again once
// the flood is gone. The old accept loop returned on EMFILE, which stopped
// famd's data plane for good.
func TestAcceptSurvivesDescriptorShortage(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "data.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), emfileSockEnv+"="+sock)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	br := bufio.NewReader(stdout)
	if line, err := br.ReadString('\n'); err != nil || line != "listening\n" {
		t.Fatalf("helper: %q %v", line, err)
	}
	// What the helper said, for a failure message.
	said := func() string {
		cmd.Process.Kill()
		b, _ := io.ReadAll(br)
		return string(b)
	}

	// More connections than the server has descriptors: the first are
	// served, the rest wait in the backlog while Accept fails.
	var conns []net.Conn
	for i := 0; i < 100; i++ {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	// A Hello answered on the last one would mean no shortage happened.
	last := conns[len(conns)-1]
	last.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := last.Write(wire.Append(nil, wire.Header{Op: wire.OpHello, ID: 1}, nil)); err != nil {
		t.Fatal(err)
	}
	var hb [wire.HeaderSize]byte
	if _, err := wire.ReadHeader(last, &hb); err == nil {
		t.Fatal("the 100th connection was served: the server was not short of descriptors")
	}
	for _, c := range conns {
		c.Close()
	}
	// Served again once the flood has gone.
	c, err := Dial("unix", sock, ClientOptions{Conns: 1, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatalf("after the flood: %v (helper said %q)", err, said())
	}
	c.Close()
}

// runClientHelper dials addr with the default pool, writes and reads back
// the item named by the hex key, and prints "ok uid=N".
func runClientHelper(addr, hexKey string) int {
	var k Key
	if b, err := hex.DecodeString(hexKey); err != nil || len(b) != len(k) {
		fmt.Println("bad key", hexKey)
		return 1
	} else {
		copy(k[:], b)
	}
	c, err := Dial("unix", addr, ClientOptions{Timeout: 30 * time.Second})
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	defer c.Close()
	want := []byte("served despite the flood")
	if err := c.Put(k, 0, want); err != nil {
		fmt.Println("put:", err)
		return 1
	}
	got := make([]byte, len(want))
	if err := c.Get(k, 0, got); err != nil || !bytes.Equal(got, want) {
		fmt.Printf("get: %q %v\n", got, err)
		return 1
	}
	fmt.Printf("ok uid=%d\n", os.Getuid())
	return 0
}

// runAsNobody runs the client helper as uid and gid 65534 against sock
// and returns what it printed.
func runAsNobody(t *testing.T, sock string, k Key) string {
	t.Helper()
	// nobody must be able to execute the binary: run a copy.
	bin := testutil.CopyExecutable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), clientAddrEnv+"="+sock, clientKeyEnv+"="+hex.EncodeToString(k[:]))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client as nobody: %v\n%s", err, out)
	}
	return string(out)
}
