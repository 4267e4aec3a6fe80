package core

import (
	"math/rand/v2"
	"testing"

	"github.com/gofam/openfam/core/transport"
)

// handleFam is an embedded instance in a temporary directory with one
// region of per-item permissions.
func handleFam(t *testing.T) (*Fam, *Region) {
	t.Helper()
	d := t.TempDir()
	o := DefaultOptions()
	o.DataDir, o.ShmDir, o.BackupDir = d+"/data", d+"/shm", d+"/bk"
	f, err := Initialize(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Finalize() })
	r, err := f.CreateRegion("handles", 1<<20, 0o600, RegionAttr{PermLevel: PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	return f, r
}

// openHandles returns the handles f.items lists for it's incarnation, first
// to last, checking the back links agree.
func openHandles(t *testing.T, f *Fam, k itemKey) []*Item {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var its []*Item
	var prev *Item
	for it := f.items.get(k); it != nil; it = it.hnext {
		if it.hprev != prev {
			t.Fatalf("handle %d of the list links back to %p, not %p", len(its), it.hprev, prev)
		}
		its = append(its, it)
		prev = it
	}
	return its
}

func sameHandles(t *testing.T, got []*Item, want ...*Item) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d open handles listed, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("open handle %d is %p, want %p", i, got[i], want[i])
		}
	}
}

// The open handles of one item are a list: closing any of them (first,
// middle, last) leaves the others listed and usable, a permission change
// reaches every one, and a deallocation releases every one and nothing of
// another item.
func TestHandlesOfOneIncarnation(t *testing.T) {
	f, r := handleFam(t)
	a0, err := r.Allocate("a", 64, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Allocate("b", 64, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	var hs []*Item
	for range 3 {
		h, err := f.Lookup("a", "handles")
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	k := a0.key()
	sameHandles(t, openHandles(t, f, k), hs[2], hs[1], hs[0], a0)

	for _, c := range []*Item{hs[1], hs[2], a0} { // middle, first, last
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err == nil {
			t.Fatal("second close of a handle succeeded")
		}
	}
	sameHandles(t, openHandles(t, f, k), hs[0])
	if err := f.Default().Put([]byte("x"), hs[0], 0); err != nil {
		t.Fatalf("the remaining handle: %v", err)
	}

	h2, err := f.Lookup("a", "handles")
	if err != nil {
		t.Fatal(err)
	}
	// Every handle's view is made again from the new record (the bytes
	// moved to the new mode's heap file).
	before := []*itemView{hs[0].view.Load(), h2.view.Load()}
	if err := hs[0].ChangePermissions(0o400); err != nil {
		t.Fatal(err)
	}
	for i, h := range []*Item{hs[0], h2} {
		if h.view.Load() == before[i] {
			t.Fatalf("handle %d kept its view after the permission change", i)
		}
	}

	if err := h2.Deallocate(); err != nil {
		t.Fatal(err)
	}
	sameHandles(t, openHandles(t, f, k))
	for _, h := range []*Item{hs[0], h2} {
		if err := f.Default().Put([]byte("x"), h, 0); err == nil {
			t.Fatal("a handle of a deallocated item still writes")
		}
	}
	sameHandles(t, openHandles(t, f, b.key()), b)
	if err := f.Default().Put([]byte("y"), b, 0); err != nil {
		t.Fatalf("the other item's handle: %v", err)
	}
}

// Making and closing a handle allocates nothing for the bookkeeping: with a
// million handles open each allocation is more for the collector to scan
// and another cache miss per call (issue 18). The old bookkeeping made a map
// for every item's handles.
func TestLookupCloseAllocations(t *testing.T) {
	f, r := handleFam(t)
	a, err := r.Allocate("a", 64, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		h, err := f.Lookup("a", "handles")
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	})
	// 4 with the handles listed in the handles themselves; the
	// bookkeeping with a map per item made 6.
	if allocs > 4 {
		t.Fatalf("%.1f allocations per lookup and close, want at most 4", allocs)
	}
}

// TestHandleIndexMatchesMap drives a handleIndex and a Go map with the same
// random adds, head replacements and deletions of few distinct keys (so
// probe runs collide, wrap around the end and shift back on deletion,
// across several doublings), and checks after each step that both agree,
// misses included.
func TestHandleIndexMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var x handleIndex
	want := map[itemKey]*Item{}
	newHandle := func(k itemKey) *Item {
		return &Item{g: GlobalDesc{RegionID: k.region, Offset: k.offset}, inc: k.gen}
	}
	check := func(step int) {
		t.Helper()
		if x.len() != len(want) {
			t.Fatalf("step %d: %d entries, want %d", step, x.len(), len(want))
		}
		for k, p := range want {
			if got := x.get(k); got != p {
				t.Fatalf("step %d: get(%v) = %p, want %p", step, k, got, p)
			}
		}
		n := 0
		x.each(func(k itemKey, head *Item) {
			n++
			if want[k] != head {
				t.Fatalf("step %d: each gave %v -> %p, want %p", step, k, head, want[k])
			}
		})
		if n != len(want) {
			t.Fatalf("step %d: each gave %d entries, want %d", step, n, len(want))
		}
	}
	const keys = 2000
	for step := range 60000 {
		k := itemKey{region: uint64(rng.IntN(3)), offset: uint64(rng.IntN(keys/3)) * 64, gen: uint64(rng.IntN(2))}
		grow := step < 30000
		switch _, ok := want[k]; {
		case !ok && (grow || rng.IntN(3) == 0):
			p := newHandle(k)
			x.add(k, p)
			want[k] = p
		case ok && rng.IntN(3) == 0:
			p := newHandle(k)
			x.ref(k).p = p
			want[k] = p
		case ok:
			x.del(k)
			delete(want, k)
		}
		if x.get(itemKey{region: 7}) != nil {
			t.Fatalf("step %d: found a key never added", step)
		}
		if step%499 == 0 {
			check(step)
		}
	}
	check(-1)
}

// TestKeyIndexMatchesMap drives a keyIndex and a Go map with the same
// random sets, replacements and deletions (some naming another handle, which
// must leave the entry), over keys whose hashes collide in a small table,
// and checks after each step that both agree, misses included.
func TestKeyIndexMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var x keyIndex
	want := map[transport.Key]*Item{}
	check := func(step int) {
		t.Helper()
		if x.len() != len(want) {
			t.Fatalf("step %d: %d entries, want %d", step, x.len(), len(want))
		}
		for k, p := range want {
			if got := x.get(k); got != p {
				t.Fatalf("step %d: get(%x) = %p, want %p", step, k, got, p)
			}
		}
	}
	const keys = 2000
	for step := range 60000 {
		var k transport.Key
		k[0], k[1] = byte(rng.IntN(keys/250)), byte(rng.IntN(250))
		grow := step < 30000
		switch p, ok := want[k]; {
		case !ok && (grow || rng.IntN(3) == 0):
			p := &Item{}
			x.set(k, p)
			want[k] = p
		case ok && rng.IntN(3) == 0:
			p := &Item{}
			x.set(k, p)
			want[k] = p
		case ok && rng.IntN(4) == 0:
			x.delIf(k, &Item{}) // another handle's: stays
		case ok:
			x.delIf(k, p)
			delete(want, k)
		}
		if x.get(transport.Key{0xff}) != nil {
			t.Fatalf("step %d: found a key never added", step)
		}
		if step%499 == 0 {
			check(step)
		}
	}
	check(-1)
}
