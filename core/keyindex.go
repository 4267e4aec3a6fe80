package core

import (
	"github.com/gofam/openfam/core/internal/hashindex"
	"github.com/gofam/openfam/core/transport"
)

// keyIndex maps the famd key of each open famd-served handle's view to the
// handle (Fam.keys, see keyRevoked). It is bound and unbound with every
// handle, so with a million handles open it is on every allocation,
// lookup, close and deallocation through famd; a Go map of that size costs
// about three cache misses a probe (see handleIndex), this
// hashindex.KeyTable one: an entry holds the key itself and the handle, 24
// bytes. The zero value is an empty index. Guarded by Fam.mu.
type keyIndex struct {
	t hashindex.KeyTable[transport.Key, Item]
}

// get returns k's handle, nil if none.
func (x *keyIndex) get(k transport.Key) *Item {
	if e := x.t.Get(k); e != nil {
		return e.P
	}
	return nil
}

// set makes k name handle p, replacing any earlier handle.
func (x *keyIndex) set(k transport.Key, p *Item) {
	if e := x.t.Get(k); e != nil {
		e.P = p
		return
	}
	x.t.Add(hashindex.Key16[transport.Key, Item]{K: k, P: p})
}

// delIf removes k's entry if it names p.
func (x *keyIndex) delIf(k transport.Key, p *Item) {
	if e := x.t.Get(k); e != nil && e.P == p {
		x.t.Remove(e)
	}
}

// len returns the number of keys indexed.
func (x *keyIndex) len() int { return x.t.Len() }
