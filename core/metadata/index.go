package metadata

import (
	"hash/maphash"
	"math/bits"
	"unsafe"

	"github.com/gofam/openfam/core/internal/hugeheap"
	"github.com/gofam/openfam/core/internal/pages"
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
//
// The records hold no Go pointers (a name is copied into its record; only
// names too long for it live in a map), so the collector neither scans the
// chunks nor marks a string per item, and the chunks can be backed by huge
// pages: with a million records the chunks are the larger part of what a
// random operation touches, and a TLB miss on them (a page walk, several
// memory accesses in a virtual machine) cost more than the cache miss
// itself. Chunk sizes double (base, base, 2 base, 4 base, ...) so that a
// small region takes little memory and a large one lies mostly in chunks
// of many megabytes that huge pages cover.

// baseBits is log2 of the records in the first chunk.
const baseBits = 8

// itemTable holds the items of one region. Not safe for concurrent
// mutation: the Store's mutex guards it (readers may share it).
type itemTable struct {
	chunks [][]rec           // records by slot (see slot)
	long   map[uint32]string // names too long for their record, by slot
	free   []uint32          // slots emptied by deletions, reused first
	slots  uint32            // slots ever used
	byOff  slotIndex         // every item, by offset
	byName slotIndex         // named items, by name
	seed   maphash.Seed
}

// rec is one slot: an item without its name's string, the hash of its
// name, so that removing or renaming it finds its name's index entry
// without hashing the name again, and the name's bytes when they fit
// (nlen <= len(name); nlen == longName: the name is in itemTable.long).
// 128 bytes, so that records stay aligned on cache-line pairs.
type rec struct {
	Offset, Size, RegionID uint64
	Created                int64
	Gen                    uint64
	Mode, UID, GID         uint32
	nh                     uint32
	nlen                   uint16
	name                   [70]byte
}

// longName in rec.nlen: the name is in itemTable.long.
const longName = 0xffff

// nameIs reports whether the record in slot s is called name.
func (t *itemTable) nameIs(r *rec, s uint32, name string) bool {
	if r.nlen == longName {
		return t.long[s] == name
	}
	return int(r.nlen) == len(name) && string(r.name[:len(name)]) == name
}

// item returns the item in slot s, r; name, when not nil, is its name
// (which the caller has: no copy of it is made).
func (t *itemTable) item(r *rec, s uint32, name *string) Item {
	it := Item{RegionID: r.RegionID, Offset: r.Offset, Size: r.Size, Mode: r.Mode, UID: r.UID, GID: r.GID,
		Created: r.Created, Gen: r.Gen}
	switch {
	case name != nil:
		it.Name = *name
	case r.nlen == longName:
		it.Name = t.long[s]
	case r.nlen > 0:
		it.Name = string(r.name[:r.nlen])
	}
	return it
}

// store writes it into slot s, replacing what was there.
func (t *itemTable) store(s uint32, it Item) {
	r := t.slot(s)
	if r.nlen == longName {
		delete(t.long, s)
	}
	*r = rec{Offset: it.Offset, Size: it.Size, RegionID: it.RegionID, Created: it.Created, Gen: it.Gen,
		Mode: it.Mode, UID: it.UID, GID: it.GID}
	t.setName(r, s, it.Name)
}

// setName records name in slot s, r (replacing its previous name).
func (t *itemTable) setName(r *rec, s uint32, name string) {
	if r.nlen == longName {
		delete(t.long, s)
	}
	if len(name) <= len(r.name) {
		r.nlen = uint16(len(name))
		copy(r.name[:], name)
		return
	}
	r.nlen = longName
	if t.long == nil {
		t.long = map[uint32]string{}
	}
	t.long[s] = name
}

func newItemTable() *itemTable { return &itemTable{seed: maphash.MakeSeed()} }

// slot returns the record in slot s: slots below 1<<baseBits are in chunk
// 0, and chunk k >= 1 holds slots [base<<(k-1), base<<k).
func (t *itemTable) slot(s uint32) *rec {
	if s < 1<<baseBits {
		return &t.chunks[0][s]
	}
	k := bits.Len32(s >> baseBits)
	return &t.chunks[k][s-(1<<baseBits)<<(k-1)]
}

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

// has reports whether there is an item at off.
func (t *itemTable) has(off uint64) bool {
	_, _, ok := t.findOff(off)
	return ok
}

// at returns the item at off, false if none.
func (t *itemTable) at(off uint64) (Item, bool) {
	if _, s, ok := t.findOff(off); ok {
		return t.item(t.slot(s), s, nil), true
	}
	return Item{}, false
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
			if s := uint32(e) - 1; t.slot(s).Offset == off {
				return i, s, true
			}
		}
	}
}

// named returns the item called name (hashed by nameHash as h), false if
// none.
func (t *itemTable) named(name string, h uint32) (Item, bool) {
	if _, s, ok := t.findName(name, h); ok {
		return t.item(t.slot(s), s, &name), true
	}
	return Item{}, false
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
			if s := uint32(e) - 1; t.nameIs(t.slot(s), s, name) {
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
		if s == 0 || s >= 1<<baseBits && s&(s-1) == 0 {
			// The first slot of a new chunk: slot 0, then each power of
			// two from the base on.
			n := max(1<<baseBits, int(s))
			c := make([]rec, n)
			pages.AdviseHuge(unsafe.Pointer(&c[0]), uintptr(n)*unsafe.Sizeof(c[0]))
			t.chunks = append(t.chunks, c)
		}
	}
	t.store(s, it)
	t.byOff.insert(offHash(it.Offset), s)
	// A region this large means a large Go heap of per-item objects (here
	// and in the callers): hugeheap backs it with huge pages.
	hugeheap.Grew(t.byOff.n)
	if withName && it.Name != "" {
		t.slot(s).nh = h
		t.byName.insert(h, s)
	}
}

// put stores it at its offset, replacing what is there, without touching
// the name index (journal replay, which rebuilds it after: see indexNames).
func (t *itemTable) put(it Item) {
	if _, s, ok := t.findOff(it.Offset); ok {
		t.store(s, it)
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
			if r := t.slot(s); r.nlen != 0 {
				r.nh = t.nameHash(t.item(r, s, nil).Name)
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
	r := t.slot(s)
	if r.nlen == longName {
		delete(t.long, s)
	}
	*r = rec{}
	t.free = append(t.free, s)
}

// unname takes slot s's name out of the name index, finding its entry by
// the hash and slot number kept in the record.
func (t *itemTable) unname(s uint32) {
	r := t.slot(s)
	x := &t.byName
	if r.nlen == 0 || x.n == 0 {
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
	if !t.nameIs(r, s, it.Name) {
		t.unname(s)
		t.setName(r, s, it.Name)
		r.nh = 0
		if it.Name != "" {
			r.nh = h
			t.byName.insert(h, s)
		}
	}
	r.Offset, r.Size, r.RegionID, r.Created, r.Gen = it.Offset, it.Size, it.RegionID, it.Created, it.Gen
	r.Mode, r.UID, r.GID = it.Mode, it.UID, it.GID
}

// each calls fn for every item, in no particular order.
func (t *itemTable) each(fn func(Item)) {
	for _, e := range t.byOff.e {
		if e != 0 {
			s := uint32(e) - 1
			fn(t.item(t.slot(s), s, nil))
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
	pages.AdviseHuge(unsafe.Pointer(&x.e[0]), uintptr(n)*8)
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
