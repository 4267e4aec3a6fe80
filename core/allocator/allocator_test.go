package allocator

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// extents lists the free extents in order and checks the chunk structure on
// the way: no empty or overfull chunk, correct maxima.
func extents(t testing.TB, a *Allocator) []extent {
	t.Helper()
	if len(a.maxes) != len(a.chunks) {
		t.Fatalf("%d maxima for %d chunks", len(a.maxes), len(a.chunks))
	}
	var out []extent
	for c, ch := range a.chunks {
		if len(ch) == 0 || len(ch) > chunkCap {
			t.Fatalf("chunk %d holds %d extents", c, len(ch))
		}
		if a.maxes[c] != chunkMax(ch) {
			t.Fatalf("chunk %d: max %d, want %d", c, a.maxes[c], chunkMax(ch))
		}
		out = append(out, ch...)
	}
	return out
}

// check verifies every structural property of a against the model free map
// (one bool per Align unit, true when allocated) and the model blocks.
func check(t testing.TB, a *Allocator, used []bool, blocks map[uint64]uint64) {
	t.Helper()
	if a.Size() != uint64(len(used))*Align {
		t.Fatalf("Size %d, model %d", a.Size(), len(used)*Align)
	}
	// Model's free extents, maximal runs.
	var want []extent
	for i := 0; i < len(used); {
		if used[i] {
			i++
			continue
		}
		j := i
		for j < len(used) && !used[j] {
			j++
		}
		want = append(want, extent{uint64(i) * Align, uint64(j-i) * Align})
		i = j
	}
	got := extents(t, a)
	if !slices.Equal(got, want) {
		t.Fatalf("free extents\n got %v\nwant %v", got, want)
	}
	var free, usedBytes, end uint64
	for _, e := range got {
		free += e.size
	}
	// Blocks must match the model exactly; the model never lets two
	// blocks share a unit, so equality also proves no overlap.
	if a.blocks.n != len(blocks) || a.Blocks() != len(blocks) {
		t.Fatalf("%d blocks, model %d", a.blocks.n, len(blocks))
	}
	for off, sz := range blocks {
		if got, _ := a.blocks.get(off); got != sz {
			t.Fatalf("block %d: size %d, model %d", off, got, sz)
		}
		if off%Align != 0 || sz%Align != 0 || off+sz > a.Size() {
			t.Fatalf("block [%d,+%d) misaligned or outside [0,%d)", off, sz, a.Size())
		}
		usedBytes += sz
		end = max(end, off+sz)
	}
	if a.Used() != usedBytes || a.FreeBytes() != free || a.Used()+a.FreeBytes() != a.Size() {
		t.Fatalf("Used %d FreeBytes %d Size %d; model used %d free %d", a.Used(), a.FreeBytes(), a.Size(), usedBytes, free)
	}
	if a.End() != end {
		t.Fatalf("End %d, model %d", a.End(), end)
	}
	var largest uint64
	for _, e := range want {
		largest = max(largest, e.size)
	}
	if a.LargestFree() != largest {
		t.Fatalf("LargestFree %d, model %d", a.LargestFree(), largest)
	}
}

// modelFit returns the lowest offset (in units) of a free run of k units.
func modelFit(used []bool, k int) (int, bool) {
	run := 0
	for i, u := range used {
		if u {
			run = 0
			continue
		}
		run++
		if run == k {
			return i - k + 1, true
		}
	}
	return 0, false
}

func mark(used []bool, off, sz uint64, v bool) {
	for i := off / Align; i < (off+sz)/Align; i++ {
		used[i] = v
	}
}

type live struct{ off, n uint64 }

// TestRandomModel drives an allocator and a unit-map model with the same
// random operations and compares them after every step.
func TestRandomModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const units = 512
	a := New(units*Align + 63) // the odd tail is rounded away
	used := make([]bool, units)
	blocks := map[uint64]uint64{}
	var lives []live
	counts := map[string]int{}
	for step := range 6000 {
		switch r := rng.IntN(100); {
		case r < 50: // alloc, mostly small, sometimes large
			n := uint64(rng.IntN(300) + 1)
			if rng.IntN(10) == 0 {
				n = uint64(rng.IntN(40*Align) + 1)
			}
			sz := roundup(n)
			wantOff, fits := modelFit(used, int(sz/Align))
			off, err := a.Alloc(n)
			if !fits {
				if !errors.Is(err, ErrNoSpace) {
					t.Fatalf("step %d: Alloc(%d) = %d, %v; want ErrNoSpace", step, n, off, err)
				}
				counts["nospace"]++
				break
			}
			if err != nil || off != uint64(wantOff)*Align {
				t.Fatalf("step %d: Alloc(%d) = %d, %v; want %d", step, n, off, err, wantOff*Align)
			}
			mark(used, off, sz, true)
			blocks[off] = sz
			lives = append(lives, live{off, n})
			counts["alloc"]++
		case r < 88 && len(lives) > 0: // free a random block
			i := rng.IntN(len(lives))
			b := lives[i]
			lives[i] = lives[len(lives)-1]
			lives = lives[:len(lives)-1]
			if err := a.Free(b.off, b.n); err != nil {
				t.Fatalf("step %d: Free(%d, %d): %v", step, b.off, b.n, err)
			}
			mark(used, b.off, blocks[b.off], false)
			delete(blocks, b.off)
			counts["free"]++
			// Freeing it again must fail and change nothing.
			if err := a.Free(b.off, b.n); !errors.Is(err, ErrNotAllocated) {
				t.Fatalf("step %d: double Free: %v", step, err)
			}
		case r < 94: // reserve a random range; model says whether it is free
			off := uint64(rng.IntN(len(used))) * Align
			n := uint64(rng.IntN(8*Align) + 1)
			sz := roundup(n)
			free := off+sz <= a.Size()
			for i := off / Align; free && i < (off+sz)/Align; i++ {
				free = !used[i]
			}
			err := a.Reserve(off, n)
			if free != (err == nil) || (!free && !errors.Is(err, ErrOverlap)) {
				t.Fatalf("step %d: Reserve(%d, %d) = %v; model free=%v", step, off, n, err, free)
			}
			if free {
				mark(used, off, sz, true)
				blocks[off] = sz
				lives = append(lives, live{off, n})
				counts["reserve"]++
			} else {
				counts["overlap"]++
			}
		case r < 97: // grow
			add := rng.IntN(64)
			if err := a.Grow(a.Size() + uint64(add)*Align + 5); err != nil {
				t.Fatalf("step %d: Grow: %v", step, err)
			}
			used = append(used, make([]bool, add)...)
			counts["grow"]++
		default: // shrink: to End() must work, below it must not
			end := a.End()
			if end > 0 {
				if err := a.Shrink(end - Align); !errors.Is(err, ErrInUse) {
					t.Fatalf("step %d: Shrink below End: %v", step, err)
				}
			}
			target := max(end, a.Size()-min(a.Size(), uint64(rng.IntN(32))*Align))
			if err := a.Shrink(target); err != nil {
				t.Fatalf("step %d: Shrink(%d) with End %d: %v", step, target, end, err)
			}
			used = used[:target/Align]
			counts["shrink"]++
		}
		check(t, a, used, blocks)
	}
	t.Logf("operation counts: %v", counts)
	for _, k := range []string{"alloc", "free", "reserve", "overlap", "nospace", "grow", "shrink"} {
		if counts[k] < 10 {
			t.Errorf("operation %q exercised only %d times: %v", k, counts[k], counts)
		}
	}

	// Freeing everything coalesces back into one extent.
	for _, b := range lives {
		if err := a.Free(b.off, b.n); err != nil {
			t.Fatal(err)
		}
	}
	if got := extents(t, a); len(got) != 1 || got[0] != (extent{0, a.Size()}) {
		t.Fatalf("after freeing all: extents %v, size %d", got, a.Size())
	}
	if a.Blocks() != 0 || a.Used() != 0 || a.End() != 0 || a.FreeBytes() != a.Size() {
		t.Fatalf("after freeing all: blocks %d used %d end %d", a.Blocks(), a.Used(), a.End())
	}
}

func TestReuseAfterFree(t *testing.T) {
	a := New(1 << 20)
	var offs []uint64
	for i := range 5 {
		off, err := a.Alloc(1000)
		if err != nil || off != uint64(i)*1024 {
			t.Fatalf("Alloc #%d = %d, %v", i, off, err)
		}
		offs = append(offs, off)
	}
	if err := a.Free(offs[3], 1000); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(offs[1], 1000); err != nil {
		t.Fatal(err)
	}
	// The lowest hole is reused, first for a smaller request, then the
	// rest of it, then the next hole; a too-large request goes past both.
	for _, c := range []struct{ n, want uint64 }{{100, 1024}, {2000, 5 * 1024}, {800, 1024 + 128}, {1024, 3 * 1024}} {
		if off, err := a.Alloc(c.n); err != nil || off != c.want {
			t.Fatalf("Alloc(%d) = %d, %v; want %d", c.n, off, err, c.want)
		}
	}
}

func TestAllocErrors(t *testing.T) {
	a := New(4 * Align)
	for _, n := range []uint64{0, math.MaxUint64, math.MaxUint64 - 62} {
		if _, err := a.Alloc(n); !errors.Is(err, ErrInvalidSize) {
			t.Errorf("Alloc(%d): %v, want ErrInvalidSize", n, err)
		}
	}
	if _, err := a.Alloc(4*Align + 1); !errors.Is(err, ErrNoSpace) {
		t.Errorf("oversized Alloc: %v", err)
	}
	if off, err := a.Alloc(4 * Align); err != nil || off != 0 {
		t.Fatalf("exact fill: %d, %v", off, err)
	}
	if _, err := a.Alloc(1); !errors.Is(err, ErrNoSpace) {
		t.Errorf("Alloc on full heap: %v", err)
	}
	var z Allocator // the zero value is an empty heap
	if _, err := z.Alloc(1); !errors.Is(err, ErrNoSpace) {
		t.Errorf("zero Allocator: %v", err)
	}
	if err := z.Grow(Align); err != nil {
		t.Fatal(err)
	}
	if off, err := z.Alloc(1); err != nil || off != 0 {
		t.Errorf("zero Allocator after Grow: %d, %v", off, err)
	}
}

func TestFreeErrors(t *testing.T) {
	a := New(1 << 16)
	off, _ := a.Alloc(100) // takes 128
	off2, _ := a.Alloc(64)
	for _, c := range []struct{ off, n uint64 }{
		{off, 129}, {off, 64}, {off, 0}, {off + 64, 64}, {off2 + 64, 64},
		{1 << 20, 64}, {off, math.MaxUint64}, {math.MaxUint64 - 63, 64},
	} {
		if err := a.Free(c.off, c.n); !errors.Is(err, ErrNotAllocated) {
			t.Errorf("Free(%d, %d): %v, want ErrNotAllocated", c.off, c.n, err)
		}
	}
	if a.Blocks() != 2 || a.Used() != 192 {
		t.Fatalf("rejected frees changed state: blocks %d used %d", a.Blocks(), a.Used())
	}
	if err := a.Free(off, 128); err != nil { // any n with the same rounding
		t.Fatal(err)
	}
	if err := a.Free(off, 100); !errors.Is(err, ErrNotAllocated) {
		t.Errorf("double free: %v", err)
	}
}

func TestReserveErrors(t *testing.T) {
	a := New(1024)
	if err := a.Reserve(128, 128); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		off, n uint64
		want   error
	}{
		{0, 0, ErrInvalidSize}, {32, 64, ErrInvalidSize}, {0, math.MaxUint64, ErrInvalidSize},
		{128, 64, ErrOverlap}, {64, 128, ErrOverlap}, {192, 64, ErrOverlap}, {0, 1024, ErrOverlap},
		{960, 128, ErrOverlap}, {1024, 64, ErrOverlap}, {math.MaxUint64 &^ 63, 128, ErrOverlap},
	} {
		if err := a.Reserve(c.off, c.n); !errors.Is(err, c.want) {
			t.Errorf("Reserve(%d, %d): %v, want %v", c.off, c.n, err, c.want)
		}
	}
	if got := extents(t, a); !slices.Equal(got, []extent{{0, 128}, {256, 768}}) {
		t.Fatalf("extents %v", got)
	}
	if off, _ := a.Alloc(64); off != 0 {
		t.Fatalf("Alloc after Reserve = %d", off)
	}
}

// TestReserveRebuild rebuilds an allocator from the blocks of a fragmented
// one, as a reopened region does, and checks that both then behave the same.
func TestReserveRebuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	a := New(1 << 22)
	var lives []live
	for range 3000 {
		if len(lives) > 0 && rng.IntN(3) == 0 {
			i := rng.IntN(len(lives))
			if err := a.Free(lives[i].off, lives[i].n); err != nil {
				t.Fatal(err)
			}
			lives = slices.Delete(lives, i, i+1)
			continue
		}
		n := uint64(rng.IntN(2000) + 1)
		off, err := a.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		lives = append(lives, live{off, n})
	}
	b := New(a.Size())
	for _, i := range rng.Perm(len(lives)) {
		if err := b.Reserve(lives[i].off, lives[i].n); err != nil {
			t.Fatalf("Reserve(%d, %d): %v", lives[i].off, lives[i].n, err)
		}
	}
	if !slices.Equal(extents(t, a), extents(t, b)) || a.Used() != b.Used() || a.End() != b.End() {
		t.Fatal("rebuilt allocator differs")
	}
	for i := range 2000 {
		if i%3 == 0 && len(lives) > 0 {
			l := lives[0]
			lives = lives[1:]
			ea, eb := a.Free(l.off, l.n), b.Free(l.off, l.n)
			if ea != nil || eb != nil {
				t.Fatalf("Free: %v / %v", ea, eb)
			}
			continue
		}
		n := uint64(rng.IntN(4000) + 1)
		oa, ea := a.Alloc(n)
		ob, eb := b.Alloc(n)
		if oa != ob || ea != eb {
			t.Fatalf("op %d: Alloc(%d) = %d, %v on original, %d, %v on rebuilt", i, n, oa, ea, ob, eb)
		}
		lives = append(lives, live{oa, n})
	}
}

func TestGrowShrink(t *testing.T) {
	a := New(1000) // rounds down to 960
	if a.Size() != 960 {
		t.Fatalf("Size %d", a.Size())
	}
	if err := a.Grow(900); !errors.Is(err, ErrInvalidSize) {
		t.Errorf("Grow smaller: %v", err)
	}
	if err := a.Shrink(2000); !errors.Is(err, ErrInvalidSize) {
		t.Errorf("Shrink larger: %v", err)
	}
	off, _ := a.Alloc(960) // full heap
	// Grow with no free space at the end adds a new extent...
	if err := a.Grow(1280); err != nil || a.Size() != 1280 {
		t.Fatalf("Grow: %v, size %d", err, a.Size())
	}
	if got := extents(t, a); !slices.Equal(got, []extent{{960, 320}}) {
		t.Fatalf("extents %v", got)
	}
	// ...and with free space at the end extends it.
	if err := a.Grow(2048 + 10); err != nil || a.Size() != 2048 {
		t.Fatalf("Grow: %v, size %d", err, a.Size())
	}
	if got := extents(t, a); !slices.Equal(got, []extent{{960, 1088}}) {
		t.Fatalf("extents %v", got)
	}
	if a.End() != 960 {
		t.Fatalf("End %d", a.End())
	}
	if err := a.Shrink(959); !errors.Is(err, ErrInUse) { // rounds to 896
		t.Errorf("Shrink into block: %v", err)
	}
	if err := a.Shrink(1000); err != nil || a.Size() != 960 {
		t.Fatalf("Shrink to 1000: %v, size %d", err, a.Size())
	}
	if got := extents(t, a); len(got) != 0 {
		t.Fatalf("extents after shrink to End: %v", got)
	}
	if err := a.Free(off, 960); err != nil {
		t.Fatal(err)
	}
	if err := a.Shrink(0); err != nil || a.Size() != 0 || a.FreeBytes() != 0 {
		t.Fatalf("Shrink(0): %v, size %d", err, a.Size())
	}
}

// BenchmarkAllocFree replaces random blocks of a heap holding 4096 blocks of
// mixed sizes: one Free and one Alloc per iteration.
func BenchmarkAllocFree(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	a := New(64 << 20)
	const live = 4096
	sizes := make([]uint64, 1<<16)
	for i := range sizes {
		sizes[i] = uint64(rng.IntN(4096) + 1)
	}
	type blk struct{ off, n uint64 }
	blks := make([]blk, live)
	for i := range blks {
		n := sizes[i]
		off, err := a.Alloc(n)
		if err != nil {
			b.Fatal(err)
		}
		blks[i] = blk{off, n}
	}
	victims := make([]int, 1<<16)
	for i := range victims {
		victims[i] = rng.IntN(live)
	}
	i := 0
	for b.Loop() {
		v := victims[i&(len(victims)-1)]
		if err := a.Free(blks[v].off, blks[v].n); err != nil {
			b.Fatal(err)
		}
		n := sizes[i&(len(sizes)-1)]
		off, err := a.Alloc(n)
		if err != nil {
			b.Fatal(err)
		}
		blks[v] = blk{off, n}
		i++
	}
	b.ReportMetric(float64(len(extents(b, a))), "extents")
}

// TestChunkMerge removes the largest extent of a small chunk, which merges
// it into its successor; the merged chunk's maximum must drop accordingly.
// The random tests rarely reach this case, so the chunks are built by hand.
func TestChunkMerge(t *testing.T) {
	a := &Allocator{size: 64 * Align}
	// Free extents at units 0 (size 3), 4 (size 1), 10 (size 1), 12 (size 2).
	a.chunks = [][]extent{{{0, 3 * Align}, {4 * Align, Align}}, {{10 * Align, Align}, {12 * Align, 2 * Align}}}
	a.maxes = []uint64{3 * Align, 2 * Align}
	a.removeAt(pos{0, 0})
	if got := extents(t, a); len(a.chunks) != 1 || !slices.Equal(got, []extent{{4 * Align, Align}, {10 * Align, Align}, {12 * Align, 2 * Align}}) {
		t.Fatalf("after merge: %d chunks, extents %v", len(a.chunks), got)
	}
	if a.maxes[0] != 2*Align {
		t.Fatalf("merged max %d", a.maxes[0])
	}
}
