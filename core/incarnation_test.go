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

// TestAllocateDeallocateStress: for a few seconds, 8 goroutines of one
// program allocate an item, open a second handle on it from its global
// descriptor, use both, deallocate it through one of them and check that
// the other is released, as fast as they can; offsets are reused all the
// time. Through famd a second program does the same in the same region,
// so revocation events of both programs' deallocations are in flight
// throughout. Not one call may fail spuriously, and every item must be
// deallocated (the region ends empty).
func TestAllocateDeallocateStress(t *testing.T) {
	for _, mode := range []string{"embedded", "famd"} {
		t.Run(mode, func(t *testing.T) {
			var progs []*core.Fam
			var regions []*core.Region
			if mode == "famd" {
				d := startFamd(t, embed.Options{})
				server := "unix:" + d.SocketPath()
				progs = []*core.Fam{client(t, server, ""), client(t, server, "")}
			} else {
				o := core.DefaultOptions()
				o.DataDir, o.ShmDir = t.TempDir(), t.TempDir()
				f, err := core.Initialize(o)
				if err != nil {
					t.Fatal(err)
				}
				progs = []*core.Fam{f}
			}
			for i, f := range progs {
				defer f.Finalize()
				var r *core.Region
				var err error
				if i == 0 {
					r, err = f.CreateRegion("stress", 1<<20, 0o600, core.RegionAttr{})
				} else {
					r, err = f.LookupRegion("stress")
				}
				if err != nil {
					t.Fatal(err)
				}
				regions = append(regions, r)
			}
			const workers = 8
			deadline := time.Now().Add(3 * time.Second)
			var cycles atomic.Int64
			errs := make(chan error, 2*workers)
			var wg sync.WaitGroup
			for w := range workers * len(progs) {
				f, r := progs[w/workers], regions[w/workers]
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := stressWorker(f, r, w, deadline, &cycles); err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			items, err := regions[0].Items()
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != 0 {
				t.Errorf("%d items left in the region after every worker deallocated its items", len(items))
			}
			t.Logf("%d allocate/use/deallocate cycles in 3s", cycles.Load())
		})
	}
}

// stressWorker runs allocate/use/deallocate cycles in r until deadline and
// returns the first failure.
func stressWorker(f *core.Fam, r *core.Region, w int, deadline time.Time, cycles *atomic.Int64) error {
	c := f.Default()
	msg := []byte(fmt.Sprintf("worker %d", w))
	got := make([]byte, len(msg))
	for i := 0; time.Now().Before(deadline); i++ {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("worker %d cycle %d: %s", w, i, fmt.Sprintf(format, args...))
		}
		it, err := r.Allocate("", 64, 0o600)
		if err != nil {
			return fail("allocate: %v", err)
		}
		g, err := it.Global()
		if err != nil {
			return fail("global descriptor: %v", err)
		}
		other, err := f.ItemFromGlobal(g)
		if err != nil {
			return fail("from global descriptor: %v", err)
		}
		if err := c.Put(msg, it, 0); err != nil {
			return fail("put: %v", err)
		}
		if err := c.Get(got, other, 0); err != nil || !bytes.Equal(got, msg) {
			return fail("get through the second handle: %q, %v", got, err)
		}
		// Deallocate through either handle; the other is then released.
		gone, kept := it, other
		if i%2 == 1 {
			gone, kept = other, it
		}
		if err := gone.Deallocate(); err != nil {
			return fail("deallocate: %v", err)
		}
		if err := c.Get(got, kept, 0); core.CodeOf(err) != core.CodeInvalid {
			return fail("get through the other handle of a deallocated item: %v, want CodeInvalid", err)
		}
		cycles.Add(1)
	}
	return nil
}

// BenchmarkAllocateDeallocateManyOpen measures an allocate+deallocate pair
// while the program keeps 0 or 10,000 other items open (issue 18:
// releasing one item's handles used to visit every open handle, and so did
// handling each revocation event famd sends a client).
func BenchmarkAllocateDeallocateManyOpen(b *testing.B) {
	for _, c := range []struct {
		mode string
		open int
	}{{"embedded", 0}, {"embedded", 10000}, {"famd", 0}, {"famd", 10000}} {
		mode, open := c.mode, c.open
		b.Run(fmt.Sprintf("%s/open=%d", mode, open), func(b *testing.B) {
			o := core.DefaultOptions()
			if mode == "famd" {
				d, err := embed.Start(embed.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { d.Close() })
				o.Server, o.PEID, o.PECount = "unix:"+d.SocketPath(), 0, 1
			} else {
				o.DataDir, o.ShmDir = b.TempDir(), b.TempDir()
			}
			f, err := core.Initialize(o)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { f.Finalize() })
			r, err := f.CreateRegion("many", 64<<20, 0o600, core.RegionAttr{})
			if err != nil {
				b.Fatal(err)
			}
			for range open {
				if _, err := r.Allocate("", 64, 0o600); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				it, err := r.Allocate("", 64, 0o600)
				if err != nil {
					b.Fatal(err)
				}
				if err := it.Deallocate(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
