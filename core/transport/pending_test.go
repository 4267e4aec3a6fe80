package transport

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestPendingSet checks the ring-and-map set against a plain map through
// random additions and removals, with pipelines longer than the ring (ids
// sharing a slot) and replies out of order.
func TestPendingSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var p pendingSet
	want := map[uint64]*req{}
	next := uint64(0)
	for step := 0; step < 20000; step++ {
		if len(want) == 0 || (rng.IntN(3) > 0 && len(want) < 3*pendingRing) {
			next++
			r := &req{id: next}
			p.add(r)
			want[r.id] = r
		} else {
			// Remove a random outstanding id, or one never added.
			var id uint64
			for id = range want {
				break
			}
			if rng.IntN(10) == 0 {
				id = next + 1 + uint64(rng.IntN(100))
			}
			if got := p.get(id); got != want[id] {
				t.Fatalf("step %d: get(%d) = %v, want %v", step, id, got, want[id])
			}
			p.del(id)
			delete(want, id)
		}
		if p.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, p.len(), len(want))
		}
		probe := uint64(rng.IntN(int(next) + 2))
		if got := p.get(probe); got != want[probe] {
			t.Fatalf("step %d: get(%d) = %v, want %v", step, probe, got, want[probe])
		}
	}
	seen := map[uint64]bool{}
	p.drain(func(r *req) {
		if want[r.id] != r || seen[r.id] {
			t.Fatalf("drain gave request %d, not outstanding or twice", r.id)
		}
		seen[r.id] = true
	})
	if len(seen) != len(want) || p.len() != 0 || p.get(next) != nil {
		t.Fatalf("drain gave %d of %d requests and left %d", len(seen), len(want), p.len())
	}
}

// TestLazyHold checks when the background reader leaves a lazy frame's
// reply to its caller past its first kick's timer: only while the frame
// is the lone outstanding request, unread, and younger than lazyDelay, and
// then for what is left of its own window.
func TestLazyHold(t *testing.T) {
	const timeout = 30 * time.Second
	now := int64(1000 * time.Second) // on monoNow's clock
	lone := func(age time.Duration, lazy bool) *cconn {
		cc := &cconn{cl: &Client{opts: ClientOptions{Timeout: timeout}}}
		cc.nextID = 7
		cc.pending.add(&req{id: 7, lazy: lazy, deadline: now - int64(age) + int64(timeout)})
		return cc
	}
	if d := lone(50*time.Microsecond, true).lazyHold(now, lazyDelay); d != lazyDelay-50*time.Microsecond {
		t.Errorf("a lone lazy frame sent 50us ago: hold %v, want %v", d, lazyDelay-50*time.Microsecond)
	}
	if d := lone(lazyDelay, true).lazyHold(now, lazyDelay); d != 0 {
		t.Errorf("a lone lazy frame sent lazyDelay ago: hold %v, want 0", d)
	}
	if d := lone(10*time.Microsecond, false).lazyHold(now, lazyDelay); d != 0 {
		t.Errorf("a lone request not sent lazy: hold %v, want 0", d)
	}
	cc := lone(10*time.Microsecond, true)
	cc.reading = true
	if d := cc.lazyHold(now, lazyDelay); d != 0 {
		t.Errorf("with the read role held: hold %v, want 0", d)
	}
	cc = lone(10*time.Microsecond, true)
	cc.nextID = 8
	cc.pending.add(&req{id: 8, lazy: true, deadline: now + int64(timeout)})
	if d := cc.lazyHold(now, lazyDelay); d != 0 {
		t.Errorf("with two lazy frames outstanding: hold %v, want 0", d)
	}
	cc = lone(10*time.Microsecond, true)
	cc.nextID = 9 // the lone request is not the newest: its window is not renewed
	if d := cc.lazyHold(now, lazyDelay); d != 0 {
		t.Errorf("a lone frame older than a later, completed one: hold %v, want 0", d)
	}
}
