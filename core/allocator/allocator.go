package allocator

import (
	"errors"
	"math"
	"slices"
	"sort"
)

// Align is the granularity of the heap: every block offset and size is a
// multiple of it. A request of n bytes takes n rounded up to Align.
const Align = 64

// Errors returned by Allocator methods.
var (
	// ErrNoSpace: no free extent is large enough for the request.
	ErrNoSpace = errors.New("allocator: no free space large enough")
	// ErrInvalidSize: a size of 0, a size or offset that overflows, an
	// unaligned Reserve offset, or a Grow/Shrink in the wrong direction.
	ErrInvalidSize = errors.New("allocator: invalid size")
	// ErrNotAllocated: Free of a range that is not exactly one allocated block.
	ErrNotAllocated = errors.New("allocator: block not allocated")
	// ErrOverlap: Reserve of a range that is not entirely free.
	ErrOverlap = errors.New("allocator: range overlaps allocated or out-of-range space")
	// ErrInUse: Shrink would cut off an allocated block.
	ErrInUse = errors.New("allocator: allocated block beyond new size")
)

// Allocator hands out 64-byte aligned blocks of a heap [0, Size()) first-fit
// by address. Free extents are kept coalesced and sorted by offset in a list
// of chunks (short sorted arrays) with the largest extent of each chunk kept
// beside it: first fit scans the chunk maxima, then one chunk; the other
// operations binary-search to a chunk and edit an array of at most chunkCap
// extents. Allocated blocks are tracked so that Free can reject anything but
// an exact block. The zero value is an empty heap of size 0. An Allocator is
// not safe for concurrent use.
type Allocator struct {
	chunks [][]extent // non-empty chunks of free extents, in offset order
	maxes  []uint64   // maxes[i]: largest extent size in chunks[i]
	size   uint64
	used   uint64
	blocks blockTable // offset -> rounded size of each allocated block
}

// extent is a free range [off, off+size).
type extent struct{ off, size uint64 }

// chunkCap bounds a chunk: large enough that chunk maxima stay few, small
// enough that inserting into a chunk moves at most a couple of KiB.
const chunkCap = 128

// pos is the place of one extent: chunks[c][i].
type pos struct{ c, i int }

// New returns an allocator managing [0, size) with size rounded down to
// Align, all of it free.
func New(size uint64) *Allocator {
	a := &Allocator{size: size &^ (Align - 1)}
	if a.size > 0 {
		a.insertAt(pos{}, extent{0, a.size})
	}
	return a
}

// roundup returns n rounded up to Align, or 0 when n is 0 or the rounding
// overflows.
func roundup(n uint64) uint64 {
	if n > math.MaxUint64-(Align-1) {
		return 0
	}
	return (n + Align - 1) &^ (Align - 1)
}

// Alloc allocates roundup(n, Align) bytes at the lowest offset where they
// fit and returns that offset. It returns ErrInvalidSize when n is 0 or too
// large to round, and ErrNoSpace when no free extent is large enough.
func (a *Allocator) Alloc(n uint64) (off uint64, err error) {
	sz := roundup(n)
	if sz == 0 {
		return 0, ErrInvalidSize
	}
	for c, m := range a.maxes {
		if m < sz {
			continue
		}
		for i, e := range a.chunks[c] {
			if e.size < sz {
				continue
			}
			if e.size == sz {
				a.removeAt(pos{c, i})
			} else {
				// Trimming the front keeps the extent in order.
				a.setAt(pos{c, i}, extent{e.off + sz, e.size - sz})
			}
			a.track(e.off, sz)
			return e.off, nil
		}
	}
	return 0, ErrNoSpace
}

// Free returns the block at off, of the size n passed to Alloc (or Reserve),
// to the free space, merging it with free neighbours. It returns
// ErrNotAllocated, changing nothing, when [off, off+roundup(n)) is not
// exactly one allocated block: a double free, a wrong size, or a range
// outside the heap.
func (a *Allocator) Free(off, n uint64) error {
	sz := roundup(n)
	if got, ok := a.blocks.get(off); !ok || sz == 0 || got != sz {
		return ErrNotAllocated
	}
	a.blocks.del(off)
	a.used -= sz
	end := off + sz
	// No extent starts at off (it was allocated), so floor finds the one
	// below it, and the one after that is the next extent above.
	p, hasPrev := a.floor(off)
	q, hasNext := a.after(p, hasPrev)
	var prev, next extent
	if hasPrev {
		prev = a.chunks[p.c][p.i]
	}
	if hasNext {
		next = a.chunks[q.c][q.i]
	}
	joinPrev := hasPrev && prev.off+prev.size == off
	joinNext := hasNext && next.off == end
	switch {
	case joinPrev && joinNext:
		// Update prev before removing next: removal may shift positions
		// after p, never p itself.
		a.setAt(p, extent{prev.off, prev.size + sz + next.size})
		a.removeAt(q)
	case joinPrev:
		a.setAt(p, extent{prev.off, prev.size + sz})
	case joinNext:
		a.setAt(q, extent{off, next.size + sz})
	default:
		a.insertAt(q, extent{off, sz})
	}
	return nil
}

// Reserve marks [off, off+roundup(n)) allocated, as if Alloc had returned
// off; a reopened heap uses it to re-create its blocks from persisted
// metadata. It returns ErrInvalidSize when n is 0 or too large or off is not
// a multiple of Align, and ErrOverlap, changing nothing, when any part of the
// range is allocated or outside [0, Size()).
func (a *Allocator) Reserve(off, n uint64) error {
	sz := roundup(n)
	if sz == 0 || off%Align != 0 {
		return ErrInvalidSize
	}
	end := off + sz
	if end < off {
		return ErrOverlap
	}
	// Free space is coalesced, so a free range lies inside a single
	// extent: the one starting at or below off.
	p, ok := a.floor(off)
	if !ok {
		return ErrOverlap
	}
	t := a.chunks[p.c][p.i]
	if t.off+t.size < end {
		return ErrOverlap
	}
	before, after := off-t.off, t.off+t.size-end
	switch {
	case before == 0 && after == 0:
		a.removeAt(p)
	case before == 0:
		a.setAt(p, extent{end, after})
	default:
		a.setAt(p, extent{t.off, before})
		if after > 0 {
			a.insertAt(pos{p.c, p.i + 1}, extent{end, after})
		}
	}
	a.track(off, sz)
	return nil
}

// Grow extends the heap to newSize rounded down to Align, adding the new
// space to the free extent that ends at the old size or as a new extent. It
// returns ErrInvalidSize when the rounded newSize is below Size().
func (a *Allocator) Grow(newSize uint64) error {
	newSize &^= Align - 1
	if newSize < a.size {
		return ErrInvalidSize
	}
	if newSize == a.size {
		return nil
	}
	if p, ok := a.last(); ok && a.chunks[p.c][p.i].off+a.chunks[p.c][p.i].size == a.size {
		e := a.chunks[p.c][p.i]
		a.setAt(p, extent{e.off, e.size + newSize - a.size})
	} else if ok {
		a.insertAt(pos{p.c, p.i + 1}, extent{a.size, newSize - a.size})
	} else {
		a.insertAt(pos{}, extent{a.size, newSize - a.size})
	}
	a.size = newSize
	return nil
}

// Shrink cuts the heap to newSize rounded down to Align. It returns
// ErrInvalidSize when newSize is above Size() and ErrInUse when an allocated
// block ends beyond the rounded newSize; on error nothing changes.
func (a *Allocator) Shrink(newSize uint64) error {
	if newSize > a.size {
		return ErrInvalidSize
	}
	newSize &^= Align - 1
	if a.End() > newSize {
		return ErrInUse
	}
	if newSize == a.size {
		return nil
	}
	// Everything from End() up is free and coalesced, so the last extent
	// covers [x, size) with x <= newSize.
	p, _ := a.last()
	if e := a.chunks[p.c][p.i]; e.off == newSize {
		a.removeAt(p)
	} else {
		a.setAt(p, extent{e.off, newSize - e.off})
	}
	a.size = newSize
	return nil
}

// Size returns the size of the managed heap [0, Size()).
func (a *Allocator) Size() uint64 { return a.size }

// Used returns the bytes in allocated blocks (rounded sizes).
func (a *Allocator) Used() uint64 { return a.used }

// FreeBytes returns the bytes not in allocated blocks; Used()+FreeBytes() ==
// Size(). (It cannot be called Free: that name is the block release.)
func (a *Allocator) FreeBytes() uint64 { return a.size - a.used }

// End returns the end offset of the highest allocated block, or 0 when none
// is allocated: the size the heap could shrink to.
func (a *Allocator) End() uint64 {
	if a.blocks.n == 0 {
		return 0
	}
	// Free space is coalesced, so the space above the highest block is
	// exactly the last extent when that extent reaches the heap's end.
	if p, ok := a.last(); ok && a.chunks[p.c][p.i].off+a.chunks[p.c][p.i].size == a.size {
		return a.chunks[p.c][p.i].off
	}
	return a.size
}

// Blocks returns the number of allocated blocks.
func (a *Allocator) Blocks() int { return a.blocks.n }

// LargestFree returns the size of the largest free extent, the biggest
// request Alloc can currently satisfy.
func (a *Allocator) LargestFree() uint64 {
	var m uint64
	for _, x := range a.maxes {
		m = max(m, x)
	}
	return m
}

func (a *Allocator) track(off, sz uint64) {
	a.blocks.set(off, sz)
	a.used += sz
}

// floor returns the position of the extent with the highest offset <= off;
// ok is false when there is none.
func (a *Allocator) floor(off uint64) (p pos, ok bool) {
	c := sort.Search(len(a.chunks), func(c int) bool { return a.chunks[c][0].off > off }) - 1
	if c < 0 {
		return pos{}, false
	}
	ch := a.chunks[c]
	return pos{c, sort.Search(len(ch), func(i int) bool { return ch[i].off > off }) - 1}, true
}

// after returns the position following p (the first position when !valid)
// and whether an extent is there. When none is, the returned position is
// still where an extent sorting last would be inserted.
func (a *Allocator) after(p pos, valid bool) (pos, bool) {
	if !valid {
		return pos{}, len(a.chunks) > 0
	}
	if p.i+1 < len(a.chunks[p.c]) {
		return pos{p.c, p.i + 1}, true
	}
	if p.c+1 < len(a.chunks) {
		return pos{p.c + 1, 0}, true
	}
	return pos{p.c, p.i + 1}, false
}

// last returns the position of the highest extent; ok is false when there is
// no free extent.
func (a *Allocator) last() (p pos, ok bool) {
	if len(a.chunks) == 0 {
		return pos{}, false
	}
	c := len(a.chunks) - 1
	return pos{c, len(a.chunks[c]) - 1}, true
}

// setAt replaces the extent at p with e, which must keep the order.
func (a *Allocator) setAt(p pos, e extent) {
	ch := a.chunks[p.c]
	old := ch[p.i].size
	ch[p.i] = e
	if e.size >= a.maxes[p.c] {
		a.maxes[p.c] = e.size
	} else if old == a.maxes[p.c] {
		a.maxes[p.c] = chunkMax(ch)
	}
}

// insertAt inserts e before the extent at p (p.i may equal the chunk's
// length to append to it), splitting a full chunk.
func (a *Allocator) insertAt(p pos, e extent) {
	if len(a.chunks) == 0 {
		ch := make([]extent, 1, chunkCap)
		ch[0] = e
		a.chunks = append(a.chunks, ch)
		a.maxes = append(a.maxes, e.size)
		return
	}
	if len(a.chunks[p.c]) == chunkCap {
		ch := a.chunks[p.c]
		right := make([]extent, chunkCap/2, chunkCap)
		copy(right, ch[chunkCap/2:])
		a.chunks[p.c] = ch[:chunkCap/2]
		a.chunks = slices.Insert(a.chunks, p.c+1, right)
		a.maxes = slices.Insert(a.maxes, p.c+1, chunkMax(right))
		a.maxes[p.c] = chunkMax(a.chunks[p.c])
		if p.i > chunkCap/2 {
			p = pos{p.c + 1, p.i - chunkCap/2}
		}
	}
	a.chunks[p.c] = slices.Insert(a.chunks[p.c], p.i, e)
	a.maxes[p.c] = max(a.maxes[p.c], e.size)
}

// removeAt deletes the extent at p, dropping an emptied chunk and merging a
// small chunk into its successor so that chunks stay reasonably full.
func (a *Allocator) removeAt(p pos) {
	ch := a.chunks[p.c]
	old := ch[p.i].size
	ch = slices.Delete(ch, p.i, p.i+1)
	a.chunks[p.c] = ch
	switch {
	case len(ch) == 0:
		a.chunks = slices.Delete(a.chunks, p.c, p.c+1)
		a.maxes = slices.Delete(a.maxes, p.c, p.c+1)
	case p.c+1 < len(a.chunks) && len(ch)+len(a.chunks[p.c+1]) <= chunkCap/2:
		a.chunks[p.c] = append(ch, a.chunks[p.c+1]...)
		a.maxes[p.c] = max(a.maxes[p.c], a.maxes[p.c+1])
		a.chunks = slices.Delete(a.chunks, p.c+1, p.c+2)
		a.maxes = slices.Delete(a.maxes, p.c+1, p.c+2)
		if old == a.maxes[p.c] {
			a.maxes[p.c] = chunkMax(a.chunks[p.c])
		}
	case old == a.maxes[p.c]:
		a.maxes[p.c] = chunkMax(ch)
	}
}

func chunkMax(ch []extent) uint64 {
	var m uint64
	for _, e := range ch {
		m = max(m, e.size)
	}
	return m
}
