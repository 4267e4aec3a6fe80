package allocator

import (
	"errors"
	"math"
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
// by address. Free extents are kept coalesced in a treap ordered by offset and
// augmented with the largest extent of each subtree, so finding the lowest
// extent that fits, freeing and reserving all take O(log extents) time.
// Allocated blocks are tracked so that Free can reject anything but an exact
// block. The zero value is an empty heap of size 0; an Allocator is not safe
// for concurrent use.
type Allocator struct {
	root   *node
	size   uint64
	used   uint64
	blocks map[uint64]uint64 // offset -> rounded size of each allocated block
	seed   uint64            // treap priority generator state
	spare  *node             // recycled nodes, linked through right
}

// node is one free extent [off, off+size).
type node struct {
	off, size   uint64
	max         uint64 // largest size in this subtree
	prio        uint64
	left, right *node
}

func (n *node) fix() {
	m := n.size
	if n.left != nil && n.left.max > m {
		m = n.left.max
	}
	if n.right != nil && n.right.max > m {
		m = n.right.max
	}
	n.max = m
}

// New returns an allocator managing [0, size) with size rounded down to
// Align, all of it free.
func New(size uint64) *Allocator {
	a := &Allocator{size: size &^ (Align - 1)}
	if a.size > 0 {
		a.insert(0, a.size)
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
	if a.root == nil || a.root.max < sz {
		return 0, ErrNoSpace
	}
	// Descend towards the lowest extent that fits: the left subtree holds
	// lower offsets, so prefer it whenever it contains a large enough extent.
	t := a.root
	for {
		if t.left != nil && t.left.max >= sz {
			t = t.left
		} else if t.size >= sz {
			break
		} else {
			t = t.right
		}
	}
	off = t.off
	if t.size == sz {
		a.remove(off)
	} else {
		// Trimming the front keeps the extent between its neighbours, so
		// the tree order holds; only the max values on the path change.
		t.off += sz
		t.size -= sz
		a.refresh(a.root, t.off)
	}
	a.track(off, sz)
	return off, nil
}

// Free returns the block at off, of the size n passed to Alloc (or Reserve),
// to the free space, merging it with free neighbours. It returns
// ErrNotAllocated, changing nothing, when [off, off+roundup(n)) is not
// exactly one allocated block: a double free, a wrong size, or a range
// outside the heap.
func (a *Allocator) Free(off, n uint64) error {
	sz := roundup(n)
	if got, ok := a.blocks[off]; !ok || sz == 0 || got != sz {
		return ErrNotAllocated
	}
	delete(a.blocks, off)
	a.used -= sz
	end := off + sz
	prev := a.floor(off)
	next := a.ceil(end)
	joinPrev := prev != nil && prev.off+prev.size == off
	joinNext := next != nil && next.off == end
	switch {
	case joinPrev && joinNext:
		merged := next.size
		a.remove(next.off)
		prev.size += sz + merged
		a.refresh(a.root, prev.off)
	case joinPrev:
		prev.size += sz
		a.refresh(a.root, prev.off)
	case joinNext:
		// Moving next's start down to off keeps it above prev's end.
		next.off = off
		next.size += sz
		a.refresh(a.root, off)
	default:
		a.insert(off, sz)
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
	t := a.floor(off)
	if t == nil || t.off+t.size < end {
		return ErrOverlap
	}
	before, after := off-t.off, t.off+t.size-end
	switch {
	case before == 0 && after == 0:
		a.remove(t.off)
	case before == 0:
		t.off = end
		t.size = after
		a.refresh(a.root, end)
	default:
		t.size = before
		a.refresh(a.root, t.off)
		if after > 0 {
			a.insert(end, after)
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
	if last := a.last(); last != nil && last.off+last.size == a.size {
		last.size += newSize - a.size
		a.refresh(a.root, last.off)
	} else {
		a.insert(a.size, newSize-a.size)
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
	// Everything from End() up is free and coalesced, so one extent covers
	// [x, size) with x <= newSize.
	last := a.last()
	if last.off == newSize {
		a.remove(last.off)
	} else {
		last.size = newSize - last.off
		a.refresh(a.root, last.off)
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
	if len(a.blocks) == 0 {
		return 0
	}
	// Free space is coalesced, so the space above the highest block is
	// exactly the last extent when that extent reaches the heap's end.
	if last := a.last(); last != nil && last.off+last.size == a.size {
		return last.off
	}
	return a.size
}

// Blocks returns the number of allocated blocks.
func (a *Allocator) Blocks() int { return len(a.blocks) }

// LargestFree returns the size of the largest free extent, the biggest
// request Alloc can currently satisfy.
func (a *Allocator) LargestFree() uint64 {
	if a.root == nil {
		return 0
	}
	return a.root.max
}

func (a *Allocator) track(off, sz uint64) {
	if a.blocks == nil {
		a.blocks = make(map[uint64]uint64)
	}
	a.blocks[off] = sz
	a.used += sz
}

// floor returns the extent with the highest offset <= off, or nil.
func (a *Allocator) floor(off uint64) *node {
	var best *node
	for t := a.root; t != nil; {
		if t.off <= off {
			best, t = t, t.right
		} else {
			t = t.left
		}
	}
	return best
}

// ceil returns the extent with the lowest offset >= off, or nil.
func (a *Allocator) ceil(off uint64) *node {
	var best *node
	for t := a.root; t != nil; {
		if t.off >= off {
			best, t = t, t.left
		} else {
			t = t.right
		}
	}
	return best
}

// last returns the highest extent, or nil.
func (a *Allocator) last() *node {
	t := a.root
	for t != nil && t.right != nil {
		t = t.right
	}
	return t
}

// refresh recomputes max on the path from t to the extent at off after that
// extent's size (or its offset, within its neighbours) changed.
func (a *Allocator) refresh(t *node, off uint64) {
	if t == nil {
		return
	}
	if off < t.off {
		a.refresh(t.left, off)
	} else if off > t.off {
		a.refresh(t.right, off)
	}
	t.fix()
}

func (a *Allocator) insert(off, size uint64) {
	n := a.spare
	if n != nil {
		a.spare = n.right
		*n = node{}
	} else {
		n = new(node)
	}
	// splitmix64: cheap, deterministic priorities so runs are reproducible.
	a.seed += 0x9e3779b97f4a7c15
	z := a.seed
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	n.off, n.size, n.max, n.prio = off, size, size, z^(z>>31)
	l, r := split(a.root, off)
	a.root = merge(merge(l, n), r)
}

// remove deletes the extent at off, which must exist.
func (a *Allocator) remove(off uint64) {
	l, r := split(a.root, off)
	m, r := split(r, off+1)
	a.root = merge(l, r)
	m.left, m.right = nil, a.spare
	a.spare = m
}

// split divides t into extents with offset < off and those with offset >= off.
func split(t *node, off uint64) (l, r *node) {
	if t == nil {
		return nil, nil
	}
	if t.off < off {
		t.right, r = split(t.right, off)
		t.fix()
		return t, r
	}
	l, t.left = split(t.left, off)
	t.fix()
	return l, t
}

// merge joins l and r, every offset in l being below every offset in r.
func merge(l, r *node) *node {
	switch {
	case l == nil:
		return r
	case r == nil:
		return l
	case l.prio > r.prio:
		l.right = merge(l.right, r)
		l.fix()
		return l
	default:
		r.left = merge(l, r.left)
		r.fix()
		return r
	}
}
