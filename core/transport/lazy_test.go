package transport

import (
	"testing"
	"time"

	"github.com/gofam/openfam/core/amo"
)

// TestLazyTimerLeavesLaterFrame: the background reader's timer, armed by a
// fam_add whose caller has since read its reply (fam_quiet), does not take
// the read role from under a later fam_add sent within that timer's window:
// the later frame gets its own window, so that its fam_quiet reads the reply
// itself instead of waiting for a hand-off. The window is stretched to
// 400 ms (ClientOptions.lazyDelay) so that the test can time it on a loaded
// host; the sleeps place the second frame and the look inside the windows.
func TestLazyTimerLeavesLaterFrame(t *testing.T) {
	const delay = 400 * time.Millisecond
	mem := newFileMem(t, t.TempDir(), 1<<20)
	key := mem.add(0, 4096, RightRead|RightWrite)
	addr := serve(t, NewServer(mem, ServerOptions{}), "tcp")
	c := dial(t, "tcp", addr, ClientOptions{Conns: 1, lazyDelay: delay})
	first := c.AtomicAsync(key, 0, amo.Int64, amo.Add, amo.Value{Lo: 1})
	t1 := time.Now()
	if err := first.Wait(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(t1.Add(delay / 2)))
	second := c.AtomicAsync(key, 0, amo.Int64, amo.Add, amo.Value{Lo: 1})
	t2 := time.Now()
	// Past the first frame's window (the timer it armed has fired), well
	// inside the second's.
	time.Sleep(time.Until(t1.Add(delay + delay/4)))
	cc := c.slots[0].live()
	cc.mu.Lock()
	reading, left := cc.reading, cc.pending.len()
	cc.mu.Unlock()
	if time.Since(t2) > delay-delay/8 {
		t.Skip("the host was too slow to place the look inside the second frame's window")
	}
	if reading || left != 1 {
		t.Errorf("within the second fam_add's window: read role held %v, %d outstanding; want the reply left to its caller (false, 1)", reading, left)
	}
	if err := second.Wait(); err != nil {
		t.Fatal(err)
	}
	v, err := c.Atomic(key, 0, amo.Int64, amo.Fetch, amo.Value{}, amo.Value{}, true)
	if err != nil || v.Lo != 2 {
		t.Fatalf("after two adds the word is %d (%v), want 2", v.Lo, err)
	}
}
