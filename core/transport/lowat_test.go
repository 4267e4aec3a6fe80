package transport

import (
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/amo"
)

// lowatOf reads nc's SO_RCVLOWAT.
func lowatOf(t *testing.T, nc net.Conn) int {
	t.Helper()
	return sockopt(t, nc, unix.SOL_SOCKET, unix.SO_RCVLOWAT)
}

// sockopt reads an integer socket option of nc.
func sockopt(t *testing.T, nc net.Conn, level, opt int) int {
	t.Helper()
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), level, opt) }); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return v
}

// serverConn returns the server's end of its only connection.
func serverConn(t *testing.T, s *Server) net.Conn {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) != 1 {
		t.Fatalf("server holds %d connections, want 1", len(s.conns))
	}
	for c := range s.conns {
		return c
	}
	return nil
}

// waitLowat waits (generously) until nc's low-water mark is want.
func waitLowat(t *testing.T, nc net.Conn, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for lowatOf(t, nc) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: SO_RCVLOWAT is %d 10 s on, want %d", what, lowatOf(t, nc), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPollingRaisesLowWater: while the server polls a TCP connection for
// the next request, and between a polling client's calls, the socket's
// receive low-water mark is up, so that small frames arriving do not wake
// the process's network poller (one thread wake-up and two context
// switches per request on each side before). The mark on the client side
// stays up after the call, and a reply read by the background reader
// (nobody polling) still arrives: the reader lowers the mark first.
func TestPollingRaisesLowWater(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	key := mem.add(0, 4096, RightRead|RightWrite)
	// A window no request gap can exhaust: the server polls until the
	// client closes.
	s := NewServer(mem, ServerOptions{Spin: time.Minute, MaxSpinners: 1})
	c := dial(t, "tcp", serve(t, s, "tcp"), ClientOptions{Conns: 1, Spin: time.Minute})
	buf := make([]byte, 8)
	for i := 0; i < 20; i++ {
		if err := c.Get(key, 0, buf); err != nil {
			t.Fatal(err)
		}
	}
	if polls, hits := s.SpinStats(); hits == 0 {
		t.Fatalf("the server answered none of %d polling reads by polling", polls)
	}
	sc := serverConn(t, s)
	if got := lowatOf(t, sc); got <= wireFrame {
		t.Errorf("polling server's SO_RCVLOWAT is %d: a request wakes the poller", got)
	}
	cc := c.slots[0].live()
	if got := lowatOf(t, cc.c); got <= wireFrame {
		t.Errorf("polling client's SO_RCVLOWAT is %d: a reply wakes the poller", got)
	}
	// Linux clamps the receive window to a mark the buffer could not
	// hold; the mark is kept low enough that it never does.
	for _, nc := range []net.Conn{sc, cc.c} {
		if clamp := sockopt(t, nc, unix.IPPROTO_TCP, unix.TCP_WINDOW_CLAMP); clamp <= pollLowat {
			t.Errorf("TCP_WINDOW_CLAMP is %d after polling: the mark clamped the window", clamp)
		}
	}
	// Read by the background reader, which parks: it must be woken.
	if err := c.GetAsync(key, 0, buf).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(key, 0, buf); err != nil {
		t.Fatal(err)
	}
}

// wireFrame is more than a small request or reply carries (a header and a
// few bytes): a mark above it keeps the poller asleep for them.
const wireFrame = 128

// TestLowWaterLoweredBeforeParking: a server and a client whose polling
// windows run out park their connection with the mark back at one byte,
// so that the next small request (server) and a late reply (client) wake
// them; with the mark left up, either would wait for bytes that never
// come.
func TestLowWaterLoweredBeforeParking(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	key := mem.add(0, 4096, RightRead|RightWrite)
	ctl := &blockingControl{release: make(chan struct{})}
	s := NewServer(mem, ServerOptions{Spin: 100 * time.Microsecond, MaxSpinners: 1, Control: ctl})
	c := dial(t, "tcp", serve(t, s, "tcp"), ClientOptions{Conns: 1, Spin: 100 * time.Microsecond, Timeout: 15 * time.Second})
	buf := make([]byte, 8)
	if err := c.Get(key, 0, buf); err != nil {
		t.Fatal(err)
	}
	// The server's window runs out with no request coming: it parks.
	waitLowat(t, serverConn(t, s), 1, "idle server")
	if err := within(t, 30*time.Second, func() error { return c.Get(key, 0, buf) }); err != nil {
		t.Fatalf("a small request to a parked server: %v", err)
	}
	// The client polls for a reply the server holds back, then parks.
	cc := c.slots[0].live()
	done := make(chan error, 1)
	go func() {
		_, _, _, _, _, err := c.Control(CtlLookup, 0, []byte("req"))
		done <- err
	}()
	waitLowat(t, cc.c, 1, "client waiting past its window")
	close(ctl.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a parked client never saw the late reply")
	}
}

// TestSmallCallsAllocateNothing: a blocking get, put and fetching atomic
// over a polled TCP connection allocate nothing per call, client and
// server together (before: the request, the atomic's arguments and
// result, and the polling reads' closures, 8 to 11 allocations a call).
// The request pool may drop entries (the race detector makes it), so the
// bound is one allocation a call, which every call made before.
func TestSmallCallsAllocateNothing(t *testing.T) {
	if raceOn {
		t.Skip("SKIP under -race: the race detector allocates on every synchronisation; make test-go counts allocations in a run without it")
	}
	mem := newFileMem(t, t.TempDir(), 1<<20)
	key := mem.add(0, 4096, RightRead|RightWrite)
	s := NewServer(mem, ServerOptions{Spin: time.Second, MaxSpinners: 1})
	c := dial(t, "tcp", serve(t, s, "tcp"), ClientOptions{Conns: 1, Spin: time.Second})
	// Two more servers for RAID1's two-copy put (PutSend to each, then
	// Wait on each; with PutNow it made two allocations a put). They do
	// not poll for requests: with the client polling for one's reply, a
	// server polling in this process would hold the other processor of
	// two that the second server needs (Go's scheduler does not see an
	// OS-level yield), for up to a preemption tick a put.
	twoCopy := [2]*Client{}
	twoKey := [2]Key{}
	for i := range twoCopy {
		m := newFileMem(t, t.TempDir(), 1<<20)
		twoKey[i] = m.add(0, 4096, RightRead|RightWrite)
		twoCopy[i] = dial(t, "tcp", serve(t, NewServer(m, ServerOptions{}), "tcp"), ClientOptions{Conns: 1, Spin: time.Second})
	}
	buf := make([]byte, 8)
	for name, fn := range map[string]func() error{
		"get": func() error { return c.Get(key, 0, buf) },
		"put": func() error { return c.Put(key, 0, buf) },
		"two-copy put": func() error {
			a, b := twoCopy[0].PutSend(twoKey[0], 0, buf), twoCopy[1].PutSend(twoKey[1], 0, buf)
			errA, errB := a.Wait(), b.Wait()
			if errA != nil {
				return errA
			}
			return errB
		},
		"fetch_add": func() error {
			_, err := c.Atomic(key, 64, amo.Int64, amo.Add, amo.Value{Lo: 1}, amo.Value{}, true)
			return err
		},
	} {
		// The count is the whole process's, server included. While the
		// spin windows hold, a call allocates nothing; on a machine so
		// busy that they expire (a call then takes milliseconds instead of
		// microseconds), parking allocates in the runtime. The best of a
		// few rounds is taken, and a starved machine is reported as such
		// rather than as a regression.
		best, slowest := 1e9, time.Duration(0)
		for round := 0; round < 5 && best >= 1; round++ {
			start := time.Now()
			allocs, err := allocsPerCall(500, fn)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			best = min(best, allocs)
			slowest = max(slowest, time.Since(start)/500)
		}
		if best >= 1 && slowest > time.Millisecond {
			t.Skipf("SKIP %s: the machine is too busy to hold the spin windows (%v a call, %.2f allocations); the count needs a machine that is not starved", name, slowest, best)
		}
		if best >= 1 {
			t.Errorf("%s: %.2f allocations per call, want none", name, best)
		}
	}
}

// allocsPerCall is testing.AllocsPerRun without its GOMAXPROCS(1), under
// which a polling client would hold the only processor its server needs.
func allocsPerCall(n int, fn func() error) (float64, error) {
	if err := fn(); err != nil { // warm up: connections, pools
		return 0, err
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		if err := fn(); err != nil {
			return 0, err
		}
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(n), nil
}

// TestLazyAtomicOnIdleConnectionGoesOut: fam_add on a connection with
// nothing outstanding is on the wire when the call returns (its round
// trip overlaps the caller's way to fam_quiet), and nobody needs to wait
// for it to be applied; one issued behind it is queued, and both complete.
func TestLazyAtomicOnIdleConnectionGoesOut(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	key := mem.add(0, 4096, RightRead|RightWrite)
	addr := serve(t, NewServer(mem, ServerOptions{}), "tcp")
	c := dial(t, "tcp", addr, ClientOptions{Conns: 1})
	other := dial(t, "tcp", addr, ClientOptions{Conns: 1})
	first := c.AtomicAsync(key, 0, amo.Int64, amo.Set, amo.Value{Lo: 77})
	if c.slots[0].live().queued.Load() {
		t.Fatal("an atomic on an idle connection was queued, not written")
	}
	second := c.AtomicAsync(key, 8, amo.Int64, amo.Add, amo.Value{Lo: 1})
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := other.Atomic(key, 0, amo.Int64, amo.Fetch, amo.Value{}, amo.Value{}, true)
		if err != nil {
			t.Fatal(err)
		}
		if v.Lo == 77 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the written atomic never reached the server")
		}
		time.Sleep(time.Millisecond)
	}
	for _, cl := range []*Call{first, second} {
		if err := cl.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	v, err := c.Atomic(key, 8, amo.Int64, amo.Fetch, amo.Value{}, amo.Value{}, true)
	if err != nil || v.Lo != 1 {
		t.Fatalf("the queued add: word is %d (%v), want 1", v.Lo, err)
	}
}
