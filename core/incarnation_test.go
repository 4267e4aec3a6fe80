package core_test

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
)

// Issue 11: a revocation event for an item that was deallocated reached a
// new item allocated at the same offset, releasing its handle ("handle was
// released" errors, items that could no longer be deallocated) or moving a
// handle of the old item onto the new one. Handles are bound to an item
// incarnation; these tests drive the interleavings exactly.

// reuseSetup starts a famd with two client programs, a and b. a allocates
// item X and holds its revocation events; b deallocates X, so famd revokes
// a's key of X. It returns a's region and handle of X once that revocation
// has reached a (held, not yet handled).
func reuseSetup(t *testing.T) (a *core.Fam, r *core.Region, x *core.Item, gx core.GlobalDesc, q *core.Revocations) {
	t.Helper()
	d := startFamd(t, embed.Options{})
	server := "unix:" + d.SocketPath()
	a, b := client(t, server, ""), client(t, server, "")
	t.Cleanup(func() { a.Finalize(); b.Finalize() })
	r, err := a.CreateRegion("reuse", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if x, err = r.Allocate("", 64, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.Default().Put([]byte("X"), x, 0); err != nil {
		t.Fatal(err)
	}
	if gx, err = x.Global(); err != nil {
		t.Fatal(err)
	}
	q = a.HoldRevocations()
	kx := core.KeyOf(x)
	bx, err := b.ItemFromGlobal(gx)
	if err != nil {
		t.Fatal(err)
	}
	if err := bx.Deallocate(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-q.Arrived(kx):
	case <-time.After(30 * time.Second):
		t.Fatal("famd never sent the revocation of the deallocated item's key")
	}
	return a, r, x, gx, q
}

// allocateAt allocates a 64-byte item in r and checks that it took offset
// g (the allocator reuses the lowest free block).
func allocateAt(t *testing.T, r *core.Region, g core.GlobalDesc) *core.Item {
	t.Helper()
	y, err := r.Allocate("", 64, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if gy, err := y.Global(); err != nil || gy != g {
		t.Fatalf("new item at %+v (%v), want the freed offset %+v", gy, err, g)
	}
	return y
}

// checkUsable writes, reads back and finally deallocates it.
func checkUsable(t *testing.T, f *core.Fam, it *core.Item, what string) {
	t.Helper()
	c := f.Default()
	if err := c.Put([]byte("Y"), it, 8); err != nil {
		t.Fatalf("put through %s: %v", what, err)
	}
	got := make([]byte, 1)
	if err := c.Get(got, it, 8); err != nil || string(got) != "Y" {
		t.Fatalf("get through %s: %q, %v", what, got, err)
	}
	if err := it.Deallocate(); err != nil {
		t.Fatalf("deallocate through %s: %v", what, err)
	}
}

// TestLateRevocationSparesNewItemAtSameOffset: the revocation of X's key is
// being handled (famd has already said X is gone) when the program
// allocates Y at X's offset; the end of that handling used to release every
// handle at the offset, Y's included.
func TestLateRevocationSparesNewItemAtSameOffset(t *testing.T) {
	a, r, x, gx, q := reuseSetup(t)
	kx := core.KeyOf(x)
	answered, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a.AfterItemAt(func() {
		once.Do(func() {
			close(answered)
			<-resume
		})
	})
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		q.Deliver(kx)
	}()
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("handling the revocation never asked famd about the item")
	}
	y := allocateAt(t, r, gx)
	close(resume)
	<-delivered
	checkUsable(t, a, y, "the new item's handle")
	if err := a.Default().Get(make([]byte, 1), x, 0); core.CodeOf(err) != core.CodeInvalid {
		t.Fatalf("get through the deallocated item's handle: %v, want CodeInvalid", err)
	}
}

// TestLateRevocationDoesNotMoveHandleToNewItem: the revocation of X's key
// arrives after Y took X's offset. Renewing X's handle used to bind it to
// Y, so writes meant for X landed in Y.
func TestLateRevocationDoesNotMoveHandleToNewItem(t *testing.T) {
	a, r, x, gx, q := reuseSetup(t)
	y := allocateAt(t, r, gx)
	q.Deliver(core.KeyOf(x))
	c := a.Default()
	if err := c.Put([]byte("stale"), x, 0); core.CodeOf(err) != core.CodeInvalid {
		t.Fatalf("put through the deallocated item's handle: %v, want CodeInvalid", err)
	}
	if err := x.Deallocate(); core.CodeOf(err) != core.CodeInvalid {
		t.Fatalf("deallocate through the deallocated item's handle: %v, want CodeInvalid", err)
	}
	got := make([]byte, 5)
	if err := c.Get(got, y, 0); err != nil || !bytes.Equal(got, make([]byte, 5)) {
		t.Fatalf("the new item reads %q, %v; want zeroes", got, err)
	}
	checkUsable(t, a, y, "the new item's handle")
}

// TestDescriptorBindsToItemFirstResolved: an unresolved handle made from a
// global descriptor names no item yet; deallocating the item then at the
// offset does not release it. Once resolved it is bound to that item: when
// that item goes, it is released, and a later item at the offset is not
// reached through it. Embedded and famd-served alike.
func TestDescriptorBindsToItemFirstResolved(t *testing.T) {
	d := startFamd(t, embed.Options{})
	for _, mode := range []string{"embedded", "famd"} {
		t.Run(mode, func(t *testing.T) {
			var f *core.Fam
			if mode == "famd" {
				f = client(t, "unix:"+d.SocketPath(), "")
			} else {
				o := core.DefaultOptions()
				o.DataDir, o.ShmDir = t.TempDir(), t.TempDir()
				var err error
				if f, err = core.Initialize(o); err != nil {
					t.Fatal(err)
				}
			}
			defer f.Finalize()
			r, err := f.CreateRegion("bind-"+mode, 1<<20, 0o600, core.RegionAttr{})
			if err != nil {
				t.Fatal(err)
			}
			x, err := r.Allocate("", 64, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			g, err := x.Global()
			if err != nil {
				t.Fatal(err)
			}
			lazy, err := f.ItemFromGlobal(g)
			if err != nil {
				t.Fatal(err)
			}
			if err := x.Deallocate(); err != nil {
				t.Fatal(err)
			}
			y := allocateAt(t, r, g)
			c := f.Default()
			if err := c.Put([]byte("y"), y, 0); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 1)
			if err := c.Get(got, lazy, 0); err != nil || string(got) != "y" {
				t.Fatalf("descriptor resolved after the offset was reused: %q, %v; want the new item", got, err)
			}
			if err := y.Deallocate(); err != nil {
				t.Fatal(err)
			}
			z := allocateAt(t, r, g)
			// famd tells this program about the deallocation of y through
			// the session; the lazily made handle must end released.
			if mode == "famd" {
				waitFor(t, "the descriptor's handle to be released", func() bool {
					return core.CodeOf(c.Get(got, lazy, 0)) == core.CodeInvalid
				})
			}
			if err := c.Get(got, lazy, 0); core.CodeOf(err) != core.CodeInvalid {
				t.Fatalf("get through a descriptor bound to a deallocated item: %v, want CodeInvalid", err)
			}
			checkUsable(t, f, z, "the newest item's handle")
		})
	}
}

// TestAllocateDeallocateStress: 8 goroutines of one program allocate,
// use and deallocate items through famd as fast as they can for a few
// seconds, while a second program does the same in the same region, so
// offsets are reused all the time while revocation events of both
// programs' deallocations are in flight. Not one call may fail, and every
// item must be deallocated (the region ends empty).
func TestAllocateDeallocateStress(t *testing.T) {
	d := startFamd(t, embed.Options{})
	server := "unix:" + d.SocketPath()
	a, b := client(t, server, ""), client(t, server, "")
	defer a.Finalize()
	defer b.Finalize()
	ra, err := a.CreateRegion("stress", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.LookupRegion("stress")
	if err != nil {
		t.Fatal(err)
	}
	const workers = 8
	deadline := time.Now().Add(3 * time.Second)
	var cycles atomic.Int64
	errs := make(chan error, workers+2)
	var wg sync.WaitGroup
	for w := range workers + 2 {
		f, r := a, ra
		if w >= workers {
			f, r = b, rb
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := f.Default()
			msg := []byte(fmt.Sprintf("worker %d", w))
			got := make([]byte, len(msg))
			for i := 0; time.Now().Before(deadline); i++ {
				it, err := r.Allocate("", 64, 0o600)
				if err != nil {
					errs <- fmt.Errorf("worker %d cycle %d: allocate: %v", w, i, err)
					return
				}
				if err := c.Put(msg, it, 0); err != nil {
					errs <- fmt.Errorf("worker %d cycle %d: put: %v", w, i, err)
					return
				}
				if err := c.Get(got, it, 0); err != nil || !bytes.Equal(got, msg) {
					errs <- fmt.Errorf("worker %d cycle %d: get: %q, %v", w, i, got, err)
					return
				}
				if err := it.Deallocate(); err != nil {
					errs <- fmt.Errorf("worker %d cycle %d: deallocate: %v", w, i, err)
					return
				}
				cycles.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	items, err := ra.Items()
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 0 {
		t.Errorf("%d items left in the region after every worker deallocated its items", len(items))
	}
	t.Logf("%d allocate/put/get/deallocate cycles in 3s", cycles.Load())
}
