package core

import (
	"github.com/gofam/openfam/core/internal/hashindex"
	"github.com/gofam/openfam/core/metadata"
	"github.com/gofam/openfam/core/transport"
)

// Bookkeeping of open handles, shared by the embedded and famd-served
// paths. The *Locked helpers need f.mu; release must be called without it.
//
// An item handle is bound to one incarnation of an item, (region, offset,
// metadata.Item.Gen), not to its offset: offsets are reused as soon as an
// item is deallocated, and an event about the old item (a deallocation, a
// revocation from famd arriving late) must never release or redirect a
// handle of the new one. f.items maps each incarnation to the first of its
// open handles, linked through Item.hprev and hnext, so releasing an item's
// handles costs O(its handles), not O(all handles), and binding or closing
// one costs one index probe and no allocation: with a million handles open,
// every extra map or allocation per handle is another cache miss per call
// and more for the collector to scan (so f.items is a handleIndex, not a Go
// map: see there).

// itemKey names one incarnation of an item; gen is never reused for the
// same store, so a key never names two items.
type itemKey struct{ region, offset, gen uint64 }

// key returns the incarnation an open handle is bound to. The fields it
// reads are set before the handle is published as open.
func (it *Item) key() itemKey { return itemKey{it.g.RegionID, it.g.Offset, it.inc} }

// bindLocked registers an open handle under its incarnation and, for a
// famd-served handle, under the key of its view (see keyRevoked). The new
// handle goes first in its incarnation's list, so that a handle closed soon
// after it was made (a lookup then a close) unlinks touching no other.
func (f *Fam) bindLocked(it *Item) {
	k := it.key()
	e := f.items.ref(k)
	if e == nil {
		it.hprev, it.hnext = nil, nil
		f.items.add(k, it)
	} else {
		head := e.p
		it.hprev, it.hnext = nil, head
		head.hprev = it
		e.p = it
	}
	if v := it.view.Load(); v != nil {
		f.indexKeyLocked(it, v.key)
	}
}

// unlinkLocked takes an open handle out of its incarnation's list; a handle
// that is in no list is left alone.
func (f *Fam) unlinkLocked(it *Item, k itemKey) {
	switch {
	case it.hprev != nil:
		it.hprev.hnext = it.hnext
	default:
		e := f.items.ref(k)
		if e == nil || e.p != it {
			return
		}
		if it.hnext != nil {
			e.p = it.hnext
		} else {
			f.items.del(k)
		}
	}
	if it.hnext != nil {
		it.hnext.hprev = it.hprev
	}
	it.hprev, it.hnext = nil, nil
}

// creation marks a call that makes item handles as under way, until the
// function it returns is called (see famState.doomed).
func (f *Fam) creation() (done func()) {
	f.mu.Lock()
	f.creating++
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		if f.creating--; f.creating == 0 {
			clear(f.doomed)
		}
		f.mu.Unlock()
	}
}

// doomLocked records that region id was destroyed, for the calls making
// item handles that are under way.
func (f *Fam) doomLocked(id uint64) {
	if f.creating > 0 {
		f.doomed[id] = struct{}{}
	}
}

// bindItemLocked makes an open handle on item rec with view v and
// registers it, unless the instance was finalized or the item's region
// was destroyed through this instance while the call was under way. The
// caller marked the call with creation. Backends call it in the
// critical section that makes the item reachable (see backend).
func (f *Fam) bindItemLocked(op string, rec metadata.Item, v *itemView) (*Item, error) {
	if f.closed.Load() {
		return nil, f.check(op)
	}
	if _, gone := f.doomed[rec.RegionID]; gone {
		// Destroyed by another thread after the backend made the item
		// and before this handle could be registered (famd's calls hold
		// no lock): Region.Destroy has released the region's handles
		// already and would never see this one.
		return nil, Errorf(CodeNotFound, op, "region %d was destroyed during the call", rec.RegionID)
	}
	it := &Item{f: f, g: GlobalDesc{RegionID: rec.RegionID, Offset: rec.Offset}, inc: rec.Gen}
	it.view.Store(v)
	f.bindLocked(it)
	return it, nil
}

// indexKeyLocked records that famd key k belongs to handle it.
func (f *Fam) indexKeyLocked(it *Item, k transport.Key) {
	if k == (transport.Key{}) {
		return // embedded views have no key
	}
	f.keys.set(k, it)
}

// unindexKeyLocked forgets famd key k if it still belongs to it.
func (f *Fam) unindexKeyLocked(it *Item, k transport.Key) {
	if k != (transport.Key{}) {
		f.keys.delIf(k, it)
	}
}

// unbindLocked forgets an open handle (Close).
func (f *Fam) unbindLocked(it *Item) {
	f.unlinkLocked(it, it.key())
	if v := it.view.Load(); v != nil && f.keys.len() > 0 {
		f.unindexKeyLocked(it, v.key)
	}
}

// closeIncarnationLocked marks released, and forgets, every open handle of
// incarnation k, and returns them for release. Handles of another
// incarnation at the same offset, and unresolved handles made from a global
// descriptor (bound to nothing yet), are untouched.
func (f *Fam) closeIncarnationLocked(k itemKey) []*Item {
	return f.closeIncarnationIntoLocked(k, nil)
}

// closeIncarnationIntoLocked is closeIncarnationLocked appending to closed:
// a caller's buffer on its stack spares a deallocation its one allocation
// (with a million handles the collector may be marking, and then every
// allocation pays for scanning cold memory).
func (f *Fam) closeIncarnationIntoLocked(k itemKey, closed []*Item) []*Item {
	for it := f.items.get(k); it != nil; {
		next := it.hnext
		it.hprev, it.hnext = nil, nil
		it.state.Store(stateClosed)
		// Only famd-served views have keys: an embedded instance, whose
		// index is empty, need not read the view (a cache miss per
		// deallocation with a million handles open).
		if v := it.view.Load(); v != nil && f.keys.len() > 0 {
			f.unindexKeyLocked(it, v.key)
		}
		closed = append(closed, it)
		it = next
	}
	f.items.del(k)
	return closed
}

// closeItemsLocked marks released, and forgets, every item handle (open or
// lazy) whose global descriptor match accepts, and returns them for
// release. It visits every handle: it is for whole-region events (a
// destroyed region); one item's handles go through closeIncarnationLocked.
func (f *Fam) closeItemsLocked(match func(g GlobalDesc) bool) []*Item {
	var closed []*Item
	var keys []itemKey // closing deletes from f.items, which each forbids
	f.items.each(func(key itemKey, _ *Item) {
		if match(GlobalDesc{RegionID: key.region, Offset: key.offset}) {
			keys = append(keys, key)
		}
	})
	for _, key := range keys {
		closed = append(closed, f.closeIncarnationLocked(key)...)
	}
	for it := range f.lazy {
		if match(it.g) {
			it.state.Store(stateClosed)
			delete(f.lazy, it)
			closed = append(closed, it)
		}
	}
	return closed
}

// regionItemsLocked returns the open item handles in region id.
func (f *Fam) regionItemsLocked(id uint64) []*Item {
	var its []*Item
	f.items.each(func(key itemKey, head *Item) {
		if key.region == id {
			for it := head; it != nil; it = it.hnext {
				its = append(its, it)
			}
		}
	})
	return its
}

// incarnationItemsLocked returns the open handles of incarnation k.
func (f *Fam) incarnationItemsLocked(k itemKey) []*Item {
	var its []*Item
	for it := f.items.get(k); it != nil; it = it.hnext {
		its = append(its, it)
	}
	return its
}

// release drops the mappings of handles closed by closeItemsLocked and
// closeIncarnationLocked, and tells their watchers (the C library's slots).
func release(its []*Item) {
	for _, it := range its {
		// Released by a deallocation or by destroying the region, not by
		// the handle's holder: a fam_map mapping the program (or a numpy
		// array over it) still uses must not vanish under it, so it is
		// retired (zero pages, the range kept reserved) rather than
		// unmapped.
		it.retireMaps()
		if v := it.view.Load(); v != nil {
			it.f.b.dropView(v)
		}
		it.fire()
	}
}

// Incarnation returns the incarnation of the item the handle is bound to
// (resolving a handle made from a global descriptor): a number that,
// together with the global descriptor, names this item and no item
// allocated at the same offset before or after it. Servers (famd) pass it
// to their clients so that their handles bind to the same item. Errors as
// for any use of the handle.
func (it *Item) Incarnation() (uint64, error) {
	if _, err := it.use("fam_incarnation", 0); err != nil {
		return 0, err
	}
	return it.inc, nil
}

// handleIndex maps each incarnation with open handles to its first handle,
// in a hashindex.Table whose entries are the key's 64-bit hash and the
// handle, 16 bytes, four to a cache line: the key is compared through the
// handle, which every caller touches anyway. A Go map of a million entries
// costs about three cache misses a probe; this one costs one. The zero
// value is an empty index. Guarded by Fam.mu.
type handleIndex struct {
	t hashindex.Table[itemKey, handleEntry, byIncarnation]
}

// handleEntry is one slot of a handleIndex; p == nil: empty.
type handleEntry struct {
	h uint64
	p *Item
}

// byIncarnation is the hashindex.Kind of handleIndex.
type byIncarnation struct{}

// Hash implements hashindex.Kind.
func (byIncarnation) Hash(k itemKey) uint64 { return hashKey(k) }

// Home implements hashindex.Kind.
func (byIncarnation) Home(e handleEntry) uint64 { return e.h }

// Is implements hashindex.Kind.
func (byIncarnation) Is(e *handleEntry, k itemKey, h uint64) bool { return e.h == h && e.p.key() == k }

// Empty implements hashindex.Kind.
func (byIncarnation) Empty(e *handleEntry) bool { return e.p == nil }

// hashKey spreads an incarnation's key over 64 bits.
func hashKey(k itemKey) uint64 {
	h := k.region*0x9e3779b97f4a7c15 ^ k.offset
	h = (h ^ h>>31) * 0xbf58476d1ce4e5b9
	h ^= k.gen * 0xc2b2ae3d27d4eb4f
	h = (h ^ h>>29) * 0x94d049bb133111eb
	return h ^ h>>32
}

// ref returns k's entry, whose handle the caller may replace (by another
// handle of the same incarnation), nil if none; valid until the next add
// or del.
func (x *handleIndex) ref(k itemKey) *handleEntry { return x.t.Get(k) }

// get returns k's first handle, nil if none.
func (x *handleIndex) get(k itemKey) *Item {
	if e := x.t.Get(k); e != nil {
		return e.p
	}
	return nil
}

// add enters p, a handle of k, which is not in the index.
func (x *handleIndex) add(k itemKey, p *Item) { x.t.Add(handleEntry{hashKey(k), p}) }

// del removes k's entry, if any.
func (x *handleIndex) del(k itemKey) { x.t.Delete(k) }

// each calls fn for every incarnation and its first handle; fn must not
// add or delete entries.
func (x *handleIndex) each(fn func(k itemKey, head *Item)) {
	x.t.Each(func(e *handleEntry) { fn(e.p.key(), e.p) })
}

// len returns the number of incarnations with open handles.
func (x *handleIndex) len() int { return x.t.Len() }
