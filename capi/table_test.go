package capi

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/gofam/openfam/core"
)

// wantInvalid fails unless err is a FAM_EINVAL error mentioning want.
func wantInvalid(t *testing.T, err error, want string) {
	t.Helper()
	var e *core.Error
	if !errors.As(err, &e) || e.Code != core.CodeInvalid {
		t.Fatalf("got %v, want a CodeInvalid error", err)
	}
	if !strings.Contains(e.Msg, want) {
		t.Fatalf("message %q does not mention %q", e.Msg, want)
	}
}

func TestHandleLifecycle(t *testing.T) {
	e, err := newHandle("test", kindDesc, "item")
	if err != nil {
		t.Fatal(err)
	}
	h := e.h
	if got, err := lookup("test", h, kindDesc); err != nil || got != e {
		t.Fatalf("lookup of a live handle: %v, %v", got, err)
	}
	if !slotLive(h, kindDesc) || slotLive(h, kindRegion) {
		t.Fatal("C slot table disagrees about a live handle")
	}
	if uint32(h)&indexMask == 0 || uint32(h>>32) == 0 {
		t.Fatalf("handle %#x has index or generation 0", h)
	}

	_, err = lookup("test", h, kindRegion)
	wantInvalid(t, err, "not a region")
	// The same slot index with another kind in the handle bits is rejected
	// too, by both tables.
	forged := h&^(0xf<<28) | kindCtx<<28
	_, err = lookup("test", forged, kindCtx)
	wantInvalid(t, err, "not live")
	if slotLive(forged, kindCtx) {
		t.Fatal("forged kind accepted by the C table")
	}

	if release(h, kindRegion) != nil {
		t.Fatal("release with the wrong kind succeeded")
	}
	if release(h, kindDesc) != e {
		t.Fatal("release of a live handle failed")
	}
	if release(h, kindDesc) != nil {
		t.Fatal("second release succeeded")
	}
	_, err = lookup("test", h, kindDesc)
	wantInvalid(t, err, "not live")
	if slotLive(h, kindDesc) {
		t.Fatal("C table still has a released handle")
	}

	// The freed slot is reused under a new generation; the old handle stays
	// dead.
	e2, err := newHandle("test", kindDesc, "item2")
	if err != nil {
		t.Fatal(err)
	}
	defer release(e2.h, kindDesc)
	if uint32(e2.h)&indexMask != uint32(h)&indexMask || e2.h == h {
		t.Fatalf("expected slot reuse with a new generation: old %#x new %#x", h, e2.h)
	}
	if _, err := lookup("test", h, kindDesc); err == nil || slotLive(h, kindDesc) {
		t.Fatal("old handle revived by slot reuse")
	}
}

func TestGarbageHandles(t *testing.T) {
	live, err := newHandle("test", kindWait, "w")
	if err != nil {
		t.Fatal(err)
	}
	defer release(live.h, kindWait)
	_, err = lookup("test", 0, kindDesc)
	wantInvalid(t, err, "NULL")
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		h := r.Uint64()
		if i%2 == 0 {
			h &= 0xf_ffff_ffff // small generations and indexes, all kinds
		}
		if h == live.h {
			continue
		}
		for k := uint32(kindRegion); k <= kindWait; k++ {
			if _, err := lookup("test", h, k); err == nil {
				t.Fatalf("garbage handle %#x accepted as kind %d", h, k)
			}
			if slotLive(h, k) {
				t.Fatalf("garbage handle %#x live in the C table", h)
			}
		}
	}
}

func TestReleaseAll(t *testing.T) {
	var hs []uint64
	for k := uint32(kindRegion); k <= kindWait; k++ {
		e, err := newHandle("test", k, k)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, e.h)
	}
	if n := len(releaseAll()); n < len(hs) {
		t.Fatalf("releaseAll returned %d entries, want at least %d", n, len(hs))
	}
	for i, h := range hs {
		k := uint32(kindRegion + i)
		if _, err := lookup("test", h, k); err == nil || slotLive(h, k) {
			t.Fatalf("handle %#x survived releaseAll", h)
		}
	}
}

// TestConcurrentHandles creates, checks and releases handles from many
// goroutines: every handle is unique while live, resolves to its own object,
// and is dead once released.
func TestConcurrentHandles(t *testing.T) {
	const workers, rounds, batch = 8, 40, 64
	var (
		mu   sync.Mutex
		seen = map[uint64]bool{}
		wg   sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				var mine [batch]*entry
				for i := range mine {
					obj := [2]int{w, r*batch + i}
					e, err := newHandle("test", kindDesc, obj)
					if err != nil {
						t.Error(err)
						return
					}
					mine[i] = e
					mu.Lock()
					if seen[e.h] {
						t.Errorf("handle %#x handed out twice", e.h)
					}
					seen[e.h] = true
					mu.Unlock()
				}
				for i, e := range mine {
					got, err := lookup("test", e.h, kindDesc)
					if err != nil || got.obj != [2]int{w, r*batch + i} || !slotLive(e.h, kindDesc) {
						t.Errorf("handle %#x resolves to %v, %v", e.h, got, err)
					}
				}
				for _, e := range mine {
					if release(e.h, kindDesc) != e {
						t.Errorf("release %#x failed", e.h)
					}
					if slotLive(e.h, kindDesc) {
						t.Errorf("released handle %#x still live", e.h)
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != workers*rounds*batch {
		t.Fatalf("%d distinct handles, want %d", len(seen), workers*rounds*batch)
	}
}

// TestHandlesAcrossChunks keeps handles live across several chunks of the
// Go table (and the C one), releases them in random order and makes new
// ones in the freed slots: every live handle resolves to its own entry and
// every released one to none, and releaseAll returns each live entry once.
func TestHandlesAcrossChunks(t *testing.T) {
	const n = 3<<chunkBits + 17
	live := map[uint64]*entry{}
	var hs []uint64
	for i := 0; i < n; i++ {
		e, err := newHandle("test", kindDesc, i)
		if err != nil {
			t.Fatal(err)
		}
		live[e.h] = e
		hs = append(hs, e.h)
	}
	rand.Shuffle(len(hs), func(i, j int) { hs[i], hs[j] = hs[j], hs[i] })
	for _, h := range hs[:n/2] {
		if release(h, kindDesc) != live[h] {
			t.Fatalf("release of live handle %#x failed", h)
		}
		delete(live, h)
		if _, err := lookup("test", h, kindDesc); err == nil {
			t.Fatalf("released handle %#x still resolves", h)
		}
	}
	for i := 0; i < n/4; i++ {
		e, err := newHandle("test", kindDesc, -i)
		if err != nil {
			t.Fatal(err)
		}
		if live[e.h] != nil {
			t.Fatalf("handle %#x given out twice", e.h)
		}
		live[e.h] = e
	}
	for h, e := range live {
		if got, err := lookup("test", h, kindDesc); err != nil || got != e {
			t.Fatalf("live handle %#x: %v, %v", h, got, err)
		}
	}
	all := releaseAll()
	seen := map[*entry]bool{}
	for _, e := range all {
		if seen[e] {
			t.Fatal("releaseAll returned an entry twice")
		}
		seen[e] = true
	}
	for h, e := range live {
		if !seen[e] {
			t.Fatalf("releaseAll missed live handle %#x", h)
		}
		if _, err := lookup("test", h, kindDesc); err == nil || slotLive(h, kindDesc) {
			t.Fatalf("handle %#x survived releaseAll", h)
		}
	}
}
