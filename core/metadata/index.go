package metadata

import (
	"hash/maphash"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A region's items, kept for a million items and more (issue 18): every
// item operation finds its record by offset or by name, and with Go maps of
// a million entries each find costs a probe of a map far larger than the
// caches, twice when a name leads to an offset that leads to the record.
// itemTable keeps each record once, in chunks that never move (no copy of
// a million records when the table grows), and finds it through two
// pointer-free open-addressing indexes of slot numbers: one miss for the
// index entry, one for the record. An index entry also holds 32 bits of
// its key's hash, so a probe passing other entries reads no record, and a
// growing index re-places its entries without reading records or hashing a
// name again.

// chunkBits is log2 of the records per chunk.
const chunkBits = 14

// itemTable holds the items of one region. Not safe for concurrent
// mutation: the Store's mutex guards it (readers may share it).
type itemTable struct {
	chunks [][]rec   // records by slot, 1<<chunkBits per chunk
	free   []uint32  // slots emptied by deletions, reused first
	slots  uint32    // slots ever used
	byOff  slotIndex // every item, by offset
	byName slotIndex // named items, by name
	seed   maphash.Seed
}

// rec is one slot: an item and the hash of its name, so that removing or
// renaming it finds its name's index entry without reading the name (one
// more cache miss, and a hash of it, per deallocation), and a copy of a
// short name, so that a lookup by name compares it where the record is
// rather than where the string's bytes are (one more miss per lookup).
type rec struct {
	Item
	nh    uint32
	short shortName
}

// shortName holds a name of at most len(b) bytes; n is its length plus one
// (0: the name is longer, or not copied).
type shortName struct {
	n uint8
	b [23]byte
}

func makeShort(name string) (s shortName) {
	if len(name) <= len(s.b) {
		s.n = uint8(len(name) + 1)
		copy(s.b[:], name)
	}
	return s
}

// nameIs reports whether the record's name is name.
func (r *rec) nameIs(name string) bool {
	if r.short.n != 0 {
		return int(r.short.n)-1 == len(name) && string(r.short.b[:len(name)]) == name
	}
	return r.Name == name
}

func newItemTable() *itemTable { return &itemTable{seed: maphash.MakeSeed()} }

// rec returns the item in slot s.
func (t *itemTable) rec(s uint32) *Item { return &t.slot(s).Item }

func (t *itemTable) slot(s uint32) *rec { return &t.chunks[s>>chunkBits][s&(1<<chunkBits-1)] }

// offHash spreads an offset (a multiple of the allocator's alignment) over
// 32 bits (the finaliser of MurmurHash3).
func offHash(off uint64) uint32 {
	off ^= off >> 33
	off *= 0xff51afd7ed558ccd
	off ^= off >> 33
	off *= 0xc4ceb9fe1a85ec53
	off ^= off >> 33
	return uint32(off)
}

// nameHash hashes a name once for all the index probes of one call.
func (t *itemTable) nameHash(name string) uint32 {
	h := maphash.String(t.seed, name)
	return uint32(h) ^ uint32(h>>32)
}

// len returns the number of items.
func (t *itemTable) len() int { return t.byOff.n }

// at returns the item at off, nil if none.
func (t *itemTable) at(off uint64) *Item {
	if _, s, ok := t.findOff(off); ok {
		return t.rec(s)
	}
	return nil
}

func (t *itemTable) findOff(off uint64) (pos uint64, slot uint32, ok bool) {
	h := offHash(off)
	x := &t.byOff
	if x.n == 0 {
		return 0, 0, false
	}
	for i := uint64(h) & x.mask; ; i = (i + 1) & x.mask {
		e := x.e[i]
		if e == 0 {
			return 0, 0, false
		}
		if uint32(e>>32) == h {
			if s := uint32(e) - 1; t.rec(s).Offset == off {
				return i, s, true
			}
		}
	}
}

// named returns the item called name (hashed by nameHash as h), nil if none.
func (t *itemTable) named(name string, h uint32) *Item {
	if _, s, ok := t.findName(name, h); ok {
		return t.rec(s)
	}
	return nil
}

func (t *itemTable) findName(name string, h uint32) (pos uint64, slot uint32, ok bool) {
	x := &t.byName
	if x.n == 0 {
		return 0, 0, false
	}
	for i := uint64(h) & x.mask; ; i = (i + 1) & x.mask {
		e := x.e[i]
		if e == 0 {
			return 0, 0, false
		}
		if uint32(e>>32) == h {
			if s := uint32(e) - 1; t.slot(s).nameIs(name) {
				return i, s, true
			}
		}
	}
}

// add stores it, whose offset is not in the table, indexing its name (hashed
// as h) when withName and the name is not empty; the name must be free.
func (t *itemTable) add(it Item, h uint32, withName bool) {
	var s uint32
	if n := len(t.free); n > 0 {
		s = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		s = t.slots
		t.slots++
		if int(s>>chunkBits) == len(t.chunks) {
			c := make([]rec, 1<<chunkBits)
			hugePages(unsafe.Pointer(&c[0]), uintptr(len(c))*unsafe.Sizeof(c[0]))
			t.chunks = append(t.chunks, c)
		}
	}
	*t.slot(s) = rec{Item: it}
	t.byOff.insert(offHash(it.Offset), s)
	if withName && it.Name != "" {
		r := t.slot(s)
		r.nh, r.short = h, makeShort(it.Name)
		t.byName.insert(h, s)
	}
}

// put stores it at its offset, replacing what is there, without touching
// the name index (journal replay, which rebuilds it after: see indexNames).
func (t *itemTable) put(it Item) {
	if _, s, ok := t.findOff(it.Offset); ok {
		*t.slot(s) = rec{Item: it}
		return
	}
	t.add(it, 0, false)
}

// indexNames rebuilds the name index from the records.
func (t *itemTable) indexNames() {
	t.byName = slotIndex{}
	for _, e := range t.byOff.e {
		if e != 0 {
			s := uint32(e) - 1
			if r := t.slot(s); r.Name != "" {
				r.nh, r.short = t.nameHash(r.Name), makeShort(r.Name)
				t.byName.insert(r.nh, s)
			}
		}
	}
}

// remove deletes the item at off, if any, with its name (when indexed).
func (t *itemTable) remove(off uint64) {
	pos, s, ok := t.findOff(off)
	if !ok {
		return
	}
	t.byOff.deleteAt(pos)
	t.unname(s)
	*t.slot(s) = rec{} // drop the name's string for the collector
	t.free = append(t.free, s)
}

// unname takes slot s's name out of the name index, finding its entry by
// the hash and slot number kept in the record.
func (t *itemTable) unname(s uint32) {
	r := t.slot(s)
	x := &t.byName
	if r.Name == "" || x.n == 0 {
		return // unnamed, or replay, which indexes names after
	}
	want := uint64(r.nh)<<32 | uint64(s+1)
	for i := uint64(r.nh) & x.mask; x.e[i] != 0; i = (i + 1) & x.mask {
		if x.e[i] == want {
			x.deleteAt(i)
			return
		}
	}
}

// update replaces the item at it.Offset (which must exist) by it,
// re-indexing its name when it changes; a new name, hashed as h, must be
// free.
func (t *itemTable) update(it Item, h uint32) {
	_, s, _ := t.findOff(it.Offset)
	r := t.slot(s)
	if r.Name != it.Name {
		t.unname(s)
		r.nh, r.short = 0, shortName{}
		if it.Name != "" {
			r.nh, r.short = h, makeShort(it.Name)
			t.byName.insert(h, s)
		}
	}
	r.Item = it
}

// each calls fn for every item, in no particular order.
func (t *itemTable) each(fn func(*Item)) {
	for _, e := range t.byOff.e {
		if e != 0 {
			fn(t.rec(uint32(e) - 1))
		}
	}
}

// slotIndex is an open-addressing hash index with linear probing. Each entry
// is hash<<32 | slot+1; 0 is empty. Deletion shifts the entries after it
// back (no tombstones), so probes stay as short as the load allows however
// many items come and go.
type slotIndex struct {
	e    []uint64
	mask uint64
	n    int
}

// insert adds an entry for slot s with hash h (no check for duplicates).
func (x *slotIndex) insert(h uint32, s uint32) {
	if (x.n+1)*4 > len(x.e)*3 {
		x.grow()
	}
	x.place(uint64(h)<<32 | uint64(s+1))
	x.n++
}

func (x *slotIndex) place(e uint64) {
	i := (e >> 32) & x.mask
	for x.e[i] != 0 {
		i = (i + 1) & x.mask
	}
	x.e[i] = e
}

// grow doubles the index (at least 16 entries), re-placing entries by the
// hash bits they hold.
func (x *slotIndex) grow() {
	old := x.e
	n := max(16, 2*len(old))
	x.e, x.mask = make([]uint64, n), uint64(n-1)
	hugePages(unsafe.Pointer(&x.e[0]), uintptr(n)*8)
	for _, e := range old {
		if e != 0 {
			x.place(e)
		}
	}
}

// deleteAt empties entry i and moves back the entries of its probe run that
// would otherwise be cut off from their home position.
func (x *slotIndex) deleteAt(i uint64) {
	x.n--
	for {
		x.e[i] = 0
		j := i
		for {
			j = (j + 1) & x.mask
			e := x.e[j]
			if e == 0 {
				return
			}
			home := (e >> 32) & x.mask
			// e may fill the hole at i unless its home lies cyclically
			// in (i, j].
			var stays bool
			if i <= j {
				stays = i < home && home <= j
			} else {
				stays = i < home || home <= j
			}
			if !stays {
				x.e[i] = e
				i = j
				break
			}
		}
	}
}

// hugePages asks the kernel to back the 2 MiB pages inside [p, p+n) with
// huge pages where it is configured to on request (transparent_hugepage
// "madvise", the usual default). A million-item index or record array
// spans thousands of 4 KiB pages, so each random probe is also a TLB miss,
// and in a virtual machine a page walk costs several memory accesses more;
// a few huge pages cover it. Best effort: advice the kernel ignores changes
// nothing. Called on fresh allocations, before their pages are touched.
func hugePages(p unsafe.Pointer, n uintptr) {
	const huge = 2 << 20
	lo := (uintptr(p) + huge - 1) &^ (huge - 1)
	hi := (uintptr(p) + n) &^ (huge - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, lo-uintptr(p))), hi-lo), unix.MADV_HUGEPAGE)
}
