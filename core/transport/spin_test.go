package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gofam/openfam/core/amo"
)

// spinServer serves a fresh item over TCP with the given polling window
// and cap, and returns the server, a client and the item's key.
func spinServer(t *testing.T, spin time.Duration, maxSpinners int) (*Server, *Client, Key) {
	t.Helper()
	mem := newFileMem(t, t.TempDir(), 1<<20)
	key := mem.add(0, 1<<20, RightRead|RightWrite)
	s := NewServer(mem, ServerOptions{Spin: spin, MaxSpinners: maxSpinners})
	addr := serve(t, s, "tcp")
	return s, dial(t, "tcp", addr, ClientOptions{Conns: 2}), key
}

// spinWorkload runs gets, puts and atomics from several goroutines and
// checks every result, so that a polling read that lost or reordered bytes
// would show.
func spinWorkload(t *testing.T, c *Client, key Key) {
	t.Helper()
	const workers, rounds = 4, 150
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := uint64(w) * 4096
			want := make([]byte, 300)
			got := make([]byte, 300)
			for i := 0; i < rounds; i++ {
				for k := range want {
					want[k] = byte(i + k + w)
				}
				n := 1 + (i*37)%len(want) // 1 to 300 bytes
				if err := c.Put(key, base, want[:n]); err != nil {
					errs <- err
					return
				}
				if err := c.Get(key, base, got[:n]); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got[:n], want[:n]) {
					errs <- fmt.Errorf("worker %d round %d: read back %x, wrote %x", w, i, got[:n], want[:n])
					return
				}
				if _, err := c.Atomic(key, 1<<19, amo.Int64, amo.Add, amo.Value{Lo: 1}, amo.Value{}, false); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	old, err := c.Atomic(key, 1<<19, amo.Int64, amo.Fetch, amo.Value{}, amo.Value{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if old.Lo != workers*rounds {
		t.Fatalf("counter is %d after %d adds", old.Lo, workers*rounds)
	}
}

// waitNoSpinners waits (generously) until no connection of the process
// polls: an idle server must park every connection.
func waitNoSpinners(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for spinners.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still polling 10 s after the last request", spinners.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestServerSpinOff: without a window the server never polls, and serves
// the same results.
func TestServerSpinOff(t *testing.T) {
	s, c, key := spinServer(t, 0, 0)
	spinWorkload(t, c, key)
	if polls, _ := s.SpinStats(); polls != 0 {
		t.Fatalf("%d polling reads with Spin 0", polls)
	}
}

// TestServerSpinOn: with a window, back-to-back requests are waited for by
// polling, at least some answered that way, results are unchanged, and
// once the client stops, no connection polls.
func TestServerSpinOn(t *testing.T) {
	// A window far longer than a request's turnaround even under -race
	// on a loaded host, so that polling must catch some requests.
	s, c, key := spinServer(t, time.Millisecond, 2)
	spinWorkload(t, c, key)
	polls, hits := s.SpinStats()
	if polls == 0 || hits == 0 {
		t.Fatalf("polling reads %d, answered by polling %d: want both > 0", polls, hits)
	}
	waitNoSpinners(t)
}

// TestServerSpinCap: with a cap of one, several busy connections never
// poll more than one at a time, and all are served.
func TestServerSpinCap(t *testing.T) {
	_, c, key := spinServer(t, time.Millisecond, 1)
	stop := make(chan struct{})
	peak := make(chan int32, 1)
	go func() {
		var top int32
		for {
			select {
			case <-stop:
				peak <- top
				return
			default:
			}
			top = max(top, spinners.Load())
		}
	}()
	spinWorkload(t, c, key)
	close(stop)
	if top := <-peak; top > 1 {
		t.Fatalf("%d connections polled at once with MaxSpinners 1", top)
	}
	waitNoSpinners(t)
}

// TestServerSpinAdapts: a client that pauses longer than the window
// between requests makes the server stop polling after a few misses,
// instead of spending the window on every request.
func TestServerSpinAdapts(t *testing.T) {
	const window = 20 * time.Microsecond
	s, c, key := spinServer(t, window, 1)
	buf := make([]byte, 8)
	const requests = 20
	for i := 0; i < requests; i++ {
		if err := c.Get(key, 0, buf); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // the client's think time, far beyond the window
	}
	// From 20us, halving per miss drops below minSpin (2us) after 4
	// misses; each of the client's two connections may poll that often.
	polls, _ := s.SpinStats()
	if polls > 2*5 {
		t.Fatalf("%d of %d requests waited for by polling though every gap exceeded the window", polls, requests)
	}
}

// TestBlockingCallsKeepToOneConnection: a caller making blocking calls one
// after another uses one connection of the pool (the first idle one), so
// that the server end it talks to is the one still polling for it.
func TestBlockingCallsKeepToOneConnection(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	key := mem.add(0, 4096, RightRead|RightWrite)
	c := dial(t, "tcp", serve(t, NewServer(mem, ServerOptions{}), "tcp"), ClientOptions{Conns: 4})
	buf := make([]byte, 8)
	const calls = 100
	for i := 0; i < calls; i++ {
		if err := c.Get(key, 0, buf); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Atomic(key, 8, amo.Int64, amo.Add, amo.Value{Lo: 1}, amo.Value{}, true); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.slots {
		cc := c.slots[i].cc
		cc.mu.Lock()
		sent := cc.nextID // the Hello, then every request on this connection
		cc.mu.Unlock()
		if i == 0 && sent != 1+2*calls || i > 0 && sent != 1 {
			t.Errorf("connection %d carried %d frames; want all %d calls on connection 0", i, sent, 2*calls)
		}
	}
}

// TestAtomicAsync: non-fetching atomics issued without waiting all apply,
// in order with the caller's later blocking calls, and report the
// server's refusals when waited for.
func TestAtomicAsync(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	key := mem.add(0, 4096, RightRead|RightWrite)
	ro := mem.add(8192, 4096, RightRead)
	c := dial(t, "tcp", serve(t, NewServer(mem, ServerOptions{}), "tcp"), ClientOptions{})
	const n = 1000
	calls := make([]*Call, 0, n)
	for i := 0; i < n; i++ {
		calls = append(calls, c.AtomicAsync(key, 64, amo.Int64, amo.Add, amo.Value{Lo: 2}))
	}
	// A blocking read issued after them by the same goroutine sees them
	// all, without waiting for them first.
	buf := make([]byte, 8)
	if err := c.Get(key, 64, buf); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint64(buf); got != 2*n {
		t.Fatalf("blocking get after %d adds of 2 read %d", n, got)
	}
	for _, cl := range calls {
		if err := cl.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	// Refusals come back at Wait, not at the call.
	for _, tc := range []struct {
		call *Call
		code int32
	}{
		{c.AtomicAsync(key, 4096, amo.Int64, amo.Add, amo.Value{Lo: 1}), 13},
		{c.AtomicAsync(key, 3, amo.Int64, amo.Add, amo.Value{Lo: 1}), 4},
		{c.AtomicAsync(ro, 0, amo.Int64, amo.Add, amo.Value{Lo: 1}), 2},
	} {
		var e *Error
		if err := tc.call.Wait(); !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("AtomicAsync refused: Wait gave %v, want FAM error %d", err, tc.code)
		}
	}
	if err := c.AtomicAsync(Key{9}, 0, amo.Int64, amo.Add, amo.Value{Lo: 1}).Wait(); !errors.Is(err, ErrStaleKey) {
		t.Errorf("AtomicAsync with an unknown key: Wait gave %v, want ErrStaleKey", err)
	}
}

// TestAtomicAsyncUnwaited: a non-fetching atomic nobody waits for still
// reaches the server (within lazyDelay, here within a generous deadline),
// and its reply is read, so the connection stays usable.
func TestAtomicAsyncUnwaited(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	key := mem.add(0, 4096, RightRead|RightWrite)
	addr := serve(t, NewServer(mem, ServerOptions{}), "tcp")
	c := dial(t, "tcp", addr, ClientOptions{})
	other := dial(t, "tcp", addr, ClientOptions{})
	c.AtomicAsync(key, 0, amo.Int64, amo.Set, amo.Value{Lo: 77})
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
			t.Fatal("an unwaited fam_set never reached the server")
		}
		time.Sleep(time.Millisecond)
	}
	cc := c.slots[0].cc
	deadline = time.Now().Add(10 * time.Second)
	for {
		cc.mu.Lock()
		left := cc.pending.len()
		cc.mu.Unlock()
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reply of an unwaited atomic was never read")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestUnixClientSpinKeepsDescriptors: a client polling for its replies on
// a Unix socket (Spin) reads with recvmsg, so descriptors passed with
// OpenFD replies are all kept and matched, polling or not.
func TestUnixClientSpinKeepsDescriptors(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	key := mem.add(8192, 4096, RightRead|RightWrite)
	s := NewServer(mem, ServerOptions{FDs: mem, Spin: time.Millisecond})
	c := dial(t, "unix", serve(t, s, "unix"), ClientOptions{Spin: time.Millisecond})
	if err := c.Put(key, 0, []byte("spin")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		f, off, size, rights, err := c.OpenFD(key)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4)
		if _, err := f.ReadAt(b, int64(off)); err != nil || string(b) != "spin" || size != 4096 || rights != RightRead|RightWrite {
			t.Fatalf("OpenFD %d: read %q (%v) at %d, size %d, rights %d", i, b, err, off, size, rights)
		}
		f.Close()
		got := make([]byte, 4)
		if err := c.Get(key, 0, got); err != nil || string(got) != "spin" {
			t.Fatalf("get %d: %q %v", i, got, err)
		}
	}
}

// blockingControl is a Controller that answers only once released.
type blockingControl struct{ release chan struct{} }

func (b *blockingControl) Control(p Peer, method, session uint64, req []byte) ([]byte, *os.File, uint64, uint64, uint8, error) {
	<-b.release
	return []byte("done"), nil, 0, 0, 0, nil
}

// TestControlAsyncDoesNotWait: ControlAsync returns while the server is
// still serving the call, the Call completes once it has answered, and a
// server without a Controller gets no Control frame at all (an older one
// would close the connection on it).
func TestControlAsyncDoesNotWait(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	ctl := &blockingControl{release: make(chan struct{})}
	c := dial(t, "unix", serve(t, NewServer(mem, ServerOptions{Control: ctl}), "unix"), ClientOptions{})
	call, err := c.ControlAsync(CtlCloseItem, 0, []byte("req"))
	if err != nil {
		t.Fatal(err)
	}
	close(ctl.release) // the server has not answered before this
	if err := call.Wait(); err != nil {
		t.Fatal(err)
	}
	plain := dial(t, "unix", serve(t, NewServer(mem, ServerOptions{}), "unix"), ClientOptions{})
	var e *Error
	if _, err := plain.ControlAsync(CtlCloseItem, 0, nil); !errors.As(err, &e) || e.Code != codeUnimpl {
		t.Fatalf("ControlAsync to a server without control calls: %v, want FAM_EUNIMPL at once", err)
	}
	if _, _, _, _, _, err := plain.Control(CtlLookup, 0, nil); !errors.As(err, &e) || e.Code != codeUnimpl {
		t.Fatalf("Control to a server without control calls: %v, want FAM_EUNIMPL", err)
	}
	if err := plain.Ping(); err != nil {
		t.Fatalf("connection after refused control calls: %v", err)
	}
}

// fdControl is a Controller whose CtlLookup answers with a new file
// holding the request's bytes, passed with the reply; other methods
// answer without one.
type fdControl struct{ dir string }

func (c *fdControl) Control(p Peer, method, session uint64, req []byte) ([]byte, *os.File, uint64, uint64, uint8, error) {
	if method != CtlLookup {
		return []byte("closed"), nil, 0, 0, 0, nil
	}
	f, err := os.CreateTemp(c.dir, "fd")
	if err != nil {
		return nil, nil, 0, 0, 0, err
	}
	if _, err := f.Write(req); err != nil {
		f.Close()
		return nil, nil, 0, 0, 0, err
	}
	return append([]byte("rep-"), req...), f, 0, uint64(len(req)), RightRead, nil
}

// TestControlDescriptorsFollowTheirReplies: on a Unix socket each control
// reply gets its own descriptor, whether it goes out behind a reply
// without one (a fam_close sent lazily before the call, answered in the
// same batch) or beside other replies carrying one (calls pipelined from
// several goroutines on one connection).
func TestControlDescriptorsFollowTheirReplies(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	c := dial(t, "unix", serve(t, NewServer(mem, ServerOptions{Control: &fdControl{dir: t.TempDir()}}), "unix"), ClientOptions{})
	check := func(what string) {
		rep, f, off, size, rights, err := c.Control(CtlLookup, 0, []byte(what))
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if f == nil {
			t.Errorf("%s: no descriptor with the reply", what)
			return
		}
		defer f.Close()
		b := make([]byte, size)
		if _, err := f.ReadAt(b, int64(off)); err != nil || string(b) != what || string(rep) != "rep-"+what || rights != RightRead {
			t.Errorf("%s: reply %q, descriptor holds %q (%v), rights %d", what, rep, b, err, rights)
		}
	}
	for i := 0; i < 50; i++ {
		if _, err := c.ControlAsync(CtlCloseItem, 0, []byte("close")); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("after-close-%d", i))
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				check(fmt.Sprintf("g%d-%d", g, i))
			}
		}()
	}
	wg.Wait()
}
