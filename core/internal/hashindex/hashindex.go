// Package hashindex is the open-addressing hash table behind the indexes
// that hold one entry per open handle or issued key (core's handle and
// famd-key indexes, famd's key table): with a million entries a Go map
// costs about three cache misses a probe (its directory, control word and
// slot lie apart), this table one, because an entry holds what a probe
// compares (a key or its hash) next to its value, several to a cache line,
// in one array backed by huge pages where the kernel allows.
//
// Linear probing; a deletion shifts the entries after it back (no
// tombstones), so probes stay as short as the load (at most 3/4) allows
// however many entries come and go. Not safe for concurrent use.
package hashindex

import (
	"encoding/binary"
	"unsafe"

	"github.com/gofam/openfam/core/internal/hugeheap"
	"github.com/gofam/openfam/core/internal/pages"
)

// Kind says how a Table finds entries of type E by keys of type K. Its
// methods are called on the zero value of the implementing type.
type Kind[K, E any] interface {
	// Hash spreads k over 64 bits.
	Hash(k K) uint64
	// Home returns the hash of the key of e, a full entry. (By value: an
	// entry's address passed through the type parameter would make the
	// compiler move a caller's entry to the heap, an allocation per Add.)
	Home(e E) uint64
	// Is reports whether e, a full entry, is k's, h being Hash(k).
	Is(e *E, k K, h uint64) bool
	// Empty reports whether e is an empty slot (the zero E must be).
	Empty(e *E) bool
}

// Table maps keys K to entries E as kind X says. The zero value is an
// empty table.
type Table[K, E any, X Kind[K, E]] struct {
	e    []E
	mask uint64
	n    int
}

// find returns the position of k's entry, false if none.
func (t *Table[K, E, X]) find(k K) (uint64, bool) {
	if t.n == 0 {
		return 0, false
	}
	var x X
	h := x.Hash(k)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		e := &t.e[i]
		if x.Empty(e) {
			return 0, false
		}
		if x.Is(e, k, h) {
			return i, true
		}
	}
}

// Get returns k's entry, which the caller may change in place as long as
// it stays k's (its value, not its key), nil if none; valid until the next
// Add or Delete.
func (t *Table[K, E, X]) Get(k K) *E {
	if i, ok := t.find(k); ok {
		return &t.e[i]
	}
	return nil
}

// Add enters e, a full entry whose key is not in the table.
func (t *Table[K, E, X]) Add(e E) {
	if (t.n+1)*4 > len(t.e)*3 {
		t.grow()
	}
	t.place(e)
	t.n++
	// A table of open handles or issued keys this large means a large Go
	// heap of per-item objects: hugeheap backs it with huge pages.
	hugeheap.Grew(t.n)
}

func (t *Table[K, E, X]) place(e E) {
	var x X
	i := x.Home(e) & t.mask
	for !x.Empty(&t.e[i]) {
		i = (i + 1) & t.mask
	}
	t.e[i] = e
}

// grow doubles the table (at least 16 entries), re-placing the entries.
func (t *Table[K, E, X]) grow() {
	var x X
	old := t.e
	n := max(16, 2*len(old))
	t.e, t.mask = make([]E, n), uint64(n-1)
	var zero E
	pages.AdviseHuge(unsafe.Pointer(&t.e[0]), uintptr(n)*unsafe.Sizeof(zero))
	for i := range old {
		if !x.Empty(&old[i]) {
			t.place(old[i])
		}
	}
}

// Delete removes k's entry, if any.
func (t *Table[K, E, X]) Delete(k K) {
	if i, ok := t.find(k); ok {
		t.deleteAt(i)
	}
}

// Remove removes entry e, which Get returned since the last Add or Delete.
func (t *Table[K, E, X]) Remove(e *E) {
	t.deleteAt(uint64((uintptr(unsafe.Pointer(e)) - uintptr(unsafe.Pointer(&t.e[0]))) / unsafe.Sizeof(*e)))
}

func (t *Table[K, E, X]) deleteAt(i uint64) {
	var x X
	var zero E
	t.n--
	for {
		t.e[i] = zero
		j := i
		for {
			j = (j + 1) & t.mask
			e := &t.e[j]
			if x.Empty(e) {
				return
			}
			// e may fill the hole at i unless its home lies cyclically
			// in (i, j].
			home := x.Home(*e) & t.mask
			var stays bool
			if i <= j {
				stays = i < home && home <= j
			} else {
				stays = i < home || home <= j
			}
			if !stays {
				t.e[i] = *e
				i = j
				break
			}
		}
	}
}

// Each calls fn for every entry; fn must not add or delete entries.
func (t *Table[K, E, X]) Each(fn func(e *E)) {
	var x X
	for i := range t.e {
		if !x.Empty(&t.e[i]) {
			fn(&t.e[i])
		}
	}
}

// Len returns the number of entries.
func (t *Table[K, E, X]) Len() int { return t.n }

// Key16 is an entry of a table keyed by 16-byte keys (famd's item keys),
// the key stored in the entry, and pointing to a value of type P; P nil:
// empty.
type Key16[K ~[16]byte, P any] struct {
	K K
	P *P
}

// ByKey16 is the Kind of tables of Key16 entries. The keys famd issues are
// random already; mixing keeps the table sound for any key.
type ByKey16[K ~[16]byte, P any] struct{}

// Hash implements Kind.
func (ByKey16[K, P]) Hash(k K) uint64 {
	b := [16]byte(k)
	lo, hi := binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
	h := lo*0x9e3779b97f4a7c15 ^ hi
	h = (h ^ h>>31) * 0xbf58476d1ce4e5b9
	return h ^ h>>29
}

// Home implements Kind.
func (x ByKey16[K, P]) Home(e Key16[K, P]) uint64 { return x.Hash(e.K) }

// Is implements Kind.
func (ByKey16[K, P]) Is(e *Key16[K, P], k K, _ uint64) bool { return e.K == k }

// Empty implements Kind.
func (ByKey16[K, P]) Empty(e *Key16[K, P]) bool { return e.P == nil }

// KeyTable is a Table of Key16 entries: key -> *P.
type KeyTable[K ~[16]byte, P any] = Table[K, Key16[K, P], ByKey16[K, P]]
