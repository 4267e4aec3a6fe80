package capi

/*
#include "ofam.h"
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gofam/openfam/core"
)

// Handle kinds, as encoded in bits 28..31 of a handle (ofam.h).
const (
	kindRegion = C.OFAM_KIND_REGION
	kindDesc   = C.OFAM_KIND_DESC
	kindCtx    = C.OFAM_KIND_CTX
	kindWait   = C.OFAM_KIND_WAIT
)

const indexMask = C.OFAM_INDEX_MASK

// kindName names a handle kind in messages.
func kindName(k uint32) string {
	switch k {
	case kindRegion:
		return "region (fam_region_t)"
	case kindDesc:
		return "data item (fam_desc_t)"
	case kindCtx:
		return "context (fam_ctx_t)"
	case kindWait:
		return "wait (fam_wait_t)"
	}
	return "unknown"
}

// entry is what a live handle stands for.
type entry struct {
	h   uint64 // the handle, generation and kind included
	obj any    // *core.Region, *core.Item, *core.Context or *waitObj

	// Data item handles only: the view (Local) cached in the C slot.
	epoch    atomic.Uint64 // bumped by every Watch notification
	needView atomic.Bool   // lazy handle whose view was never taken
}

// waitObj is a wait handle's object.
type waitObj struct {
	w     *core.Wait
	which C.int // the OFAM_WAIT_* call that may complete it
}

// table maps live handles to entries. The C slot table is the authority on
// which handles are live for the C fast path; this table mirrors it for Go,
// and both change together under mu.
var table struct {
	mu sync.RWMutex
	m  entryTable // by slot index
}

// chunkBits is log2 of the entries per chunk of entryTable, as in the C slot
// table (OFAM_CHUNK_BITS).
const chunkBits = C.OFAM_CHUNK_BITS

// entryTable holds entries by slot index in chunks, as the C slot table
// holds its slots. The C table reuses the index it released last, else
// takes the next never used, so the indices stay below the most handles
// ever live at once: an array costs one memory access per call where a hash map with a million
// handles live costs a probe of a table far larger than the caches, and the
// chunks never move, so no call pays for copying the whole table.
type entryTable struct {
	chunks []*[1 << chunkBits]*entry
	n      int // live entries
}

// get returns the entry at index idx, nil if none.
func (t *entryTable) get(idx uint32) *entry {
	c := int(idx >> chunkBits)
	if c >= len(t.chunks) || t.chunks[c] == nil {
		return nil
	}
	return t.chunks[c][idx&(1<<chunkBits-1)]
}

// set puts e (not nil) at index idx, which must be free.
func (t *entryTable) set(idx uint32, e *entry) {
	c := int(idx >> chunkBits)
	for len(t.chunks) <= c {
		t.chunks = append(t.chunks, nil)
	}
	if t.chunks[c] == nil {
		t.chunks[c] = new([1 << chunkBits]*entry)
	}
	t.chunks[c][idx&(1<<chunkBits-1)] = e
	t.n++
}

// del empties index idx, which must hold an entry.
func (t *entryTable) del(idx uint32) {
	t.chunks[idx>>chunkBits][idx&(1<<chunkBits-1)] = nil
	t.n--
}

// newHandle registers obj under a new handle of the given kind.
func newHandle(op string, kind uint32, obj any) (*entry, error) {
	table.mu.Lock()
	defer table.mu.Unlock()
	h := uint64(C.ofam_slot_new(C.uint32_t(kind)))
	if h == 0 {
		return nil, errf(core.CodeResource, op, "no handle slots left")
	}
	e := &entry{h: h, obj: obj}
	table.m.set(uint32(h)&indexMask, e)
	return e, nil
}

// lookup returns the entry of a live handle of the given kind, or a
// FAM_EINVAL error that says what is wrong with h.
func lookup(op string, h uint64, kind uint32) (*entry, error) {
	if h == 0 {
		return nil, errf(core.CodeInvalid, op, "%s handle is NULL", kindName(kind))
	}
	table.mu.RLock()
	e := table.m.get(uint32(h) & indexMask)
	table.mu.RUnlock()
	if e != nil && e.h == h && uint32(h>>C.OFAM_INDEX_BITS)&0xf == kind {
		return e, nil
	}
	return nil, badHandle(op, h, kind)
}

// badHandle explains why h is not a live handle of kind.
func badHandle(op string, h uint64, kind uint32) error {
	hk := uint32(h>>C.OFAM_INDEX_BITS) & 0xf
	if hk != kind && hk >= kindRegion && hk <= kindWait && uint32(h)&indexMask != 0 {
		return errf(core.CodeInvalid, op, "handle is a %s handle, not a %s handle", kindName(hk), kindName(kind))
	}
	if hk == kind && uint32(h)&indexMask != 0 && uint32(h>>32) != 0 {
		return errf(core.CodeInvalid, op, "%s handle is not live (released, or from before fam_finalize)", kindName(kind))
	}
	return errf(core.CodeInvalid, op, "not a %s handle", kindName(kind))
}

// release unregisters a live handle (its C slot too) and returns its entry;
// nil when h is not live. Later lookups of h fail.
func release(h uint64, kind uint32) *entry {
	table.mu.Lock()
	defer table.mu.Unlock()
	idx := uint32(h) & indexMask
	e := table.m.get(idx)
	if e == nil || e.h != h || uint32(h>>C.OFAM_INDEX_BITS)&0xf != kind {
		return nil
	}
	table.m.del(idx)
	C.ofam_slot_release(C.uint64_t(h))
	return e
}

// releaseAll unregisters every handle and returns their entries.
func releaseAll() []*entry {
	table.mu.Lock()
	defer table.mu.Unlock()
	all := make([]*entry, 0, table.m.n)
	for _, ch := range table.m.chunks {
		if ch == nil {
			continue
		}
		for _, e := range ch {
			if e != nil {
				all = append(all, e)
			}
		}
	}
	table.m = entryTable{}
	C.ofam_slot_release_all()
	return all
}

// live reports whether e is still registered.
func (e *entry) live() bool {
	table.mu.RLock()
	defer table.mu.RUnlock()
	return table.m.get(uint32(e.h)&indexMask) == e
}

// setView publishes a data item's mapping to the C fast path if e is still
// live and no notification arrived since the caller read epoch ep. Reports
// whether it is done (published, or e is gone).
func (e *entry) setView(ep uint64, base unsafe.Pointer, size uint64, rights uint32) bool {
	table.mu.Lock()
	defer table.mu.Unlock()
	if table.m.get(uint32(e.h)&indexMask) != e {
		return true
	}
	if e.epoch.Load() != ep {
		return false
	}
	C.ofam_slot_set_view(C.uint64_t(e.h), base, C.uint64_t(size), C.uint32_t(rights))
	return true
}

// clearView stops the C fast path from using e's mapping until the next
// refresh.
func (e *entry) clearView() {
	e.epoch.Add(1)
	table.mu.Lock()
	defer table.mu.Unlock()
	if table.m.get(uint32(e.h)&indexMask) == e {
		C.ofam_slot_set_view(C.uint64_t(e.h), nil, 0, 0)
	}
}

// refresh reads the item's mapping and publishes it. Core calls may not be
// made under table.mu (a Watch callback may run inside them), so the mapping
// is read first and published only if no newer notification came in between;
// otherwise it is read again.
func (e *entry) refresh() {
	it, ok := e.obj.(*core.Item)
	if !ok {
		return
	}
	for {
		ep := e.epoch.Load()
		base, size, rights, ok := it.Local()
		if !ok {
			base, size, rights = nil, 0, 0
		}
		r := uint32(rights)
		if ok && it.Persistent() {
			// The fast path lists this item's writes for the next
			// flush (persist.c).
			r |= C.OFAM_RIGHT_PERSIST
		}
		if e.setView(ep, base, size, r) {
			return
		}
	}
}

// newItemHandle registers an item. A resolved item's mapping is published at
// once; a lazy one (from a global descriptor) gets it after its first
// successful slow-path operation, so making the handle costs no lookup.
func newItemHandle(op string, it *core.Item, lazy bool) (*entry, error) {
	e, err := newHandle(op, kindDesc, it)
	if err != nil {
		return nil, err
	}
	e.watch(it)
	if lazy {
		e.needView.Store(true)
	} else {
		e.refresh()
	}
	return e, nil
}

// watch has it's changes (rights, mapping, validity) republish e's view.
func (e *entry) watch(it *core.Item) {
	it.Watch(func() {
		e.epoch.Add(1)
		e.refresh()
	})
}

// afterSlowOp gives a lazy item handle its view once it has been used.
func (e *entry) afterSlowOp() {
	if e.needView.Load() && e.needView.CompareAndSwap(true, false) {
		e.refresh()
	}
}

// slotLive reports whether the C slot table, which the fast path consults,
// considers h a live handle of kind.
func slotLive(h uint64, kind uint32) bool {
	return C.ofam_slot_live(C.uint64_t(h), C.uint32_t(kind)) != 0
}
