package core

import (
	"encoding/binary"
	"unsafe"

	"github.com/gofam/openfam/core/internal/pages"
	"github.com/gofam/openfam/core/transport"
)

// keyIndex maps the famd key of each open famd-served handle's view to the
// handle (Fam.keys, see keyRevoked). It is bound and unbound with every
// handle, so with a million handles open it is on every allocation,
// lookup, close and deallocation through famd; a Go map of that size costs
// about three cache misses a probe (see handleIndex), this open-addressing
// table with linear probing one: an entry holds the key itself and the
// handle, 24 bytes. A deletion shifts the entries after it back (no
// tombstones). The zero value is an empty index. Guarded by Fam.mu.
type keyIndex struct {
	e    []keyEntry
	mask uint64
	n    int
}

// keyEntry is one slot of a keyIndex; p == nil: empty.
type keyEntry struct {
	k transport.Key
	p *Item
}

// hashTransportKey spreads a key over 64 bits. famd's keys are random
// already; mixing keeps the table sound for any key.
func hashTransportKey(k transport.Key) uint64 {
	h := binary.LittleEndian.Uint64(k[:8])*0x9e3779b97f4a7c15 ^ binary.LittleEndian.Uint64(k[8:])
	h = (h ^ h>>31) * 0xbf58476d1ce4e5b9
	return h ^ h>>29
}

// find returns the position of k's entry, false if none.
func (x *keyIndex) find(k transport.Key) (uint64, bool) {
	if x.n == 0 {
		return 0, false
	}
	for i := hashTransportKey(k) & x.mask; ; i = (i + 1) & x.mask {
		e := &x.e[i]
		if e.p == nil {
			return 0, false
		}
		if e.k == k {
			return i, true
		}
	}
}

// get returns k's handle, nil if none.
func (x *keyIndex) get(k transport.Key) *Item {
	if i, ok := x.find(k); ok {
		return x.e[i].p
	}
	return nil
}

// set makes k name handle p, replacing any earlier handle.
func (x *keyIndex) set(k transport.Key, p *Item) {
	if i, ok := x.find(k); ok {
		x.e[i].p = p
		return
	}
	if (x.n+1)*4 > len(x.e)*3 {
		x.grow()
	}
	x.place(keyEntry{k, p})
	x.n++
}

func (x *keyIndex) place(e keyEntry) {
	i := hashTransportKey(e.k) & x.mask
	for x.e[i].p != nil {
		i = (i + 1) & x.mask
	}
	x.e[i] = e
}

// grow doubles the index (at least 16 entries).
func (x *keyIndex) grow() {
	old := x.e
	n := max(16, 2*len(old))
	x.e, x.mask = make([]keyEntry, n), uint64(n-1)
	pages.AdviseHuge(unsafe.Pointer(&x.e[0]), uintptr(n)*unsafe.Sizeof(x.e[0]))
	for _, e := range old {
		if e.p != nil {
			x.place(e)
		}
	}
}

// delIf removes k's entry if it names p.
func (x *keyIndex) delIf(k transport.Key, p *Item) {
	i, ok := x.find(k)
	if !ok || x.e[i].p != p {
		return
	}
	x.n--
	for {
		x.e[i] = keyEntry{}
		j := i
		for {
			j = (j + 1) & x.mask
			e := x.e[j]
			if e.p == nil {
				return
			}
			// e may fill the hole at i unless its home lies cyclically
			// in (i, j].
			home := hashTransportKey(e.k) & x.mask
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

// len returns the number of keys indexed.
func (x *keyIndex) len() int { return x.n }
