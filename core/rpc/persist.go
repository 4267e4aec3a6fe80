package rpc

import "github.com/gofam/openfam/core"

// persistName is famd's persistence policy as Info reports it (issue 20).
func persistName(f *core.Fam) string {
	p := f.PersistPolicy()
	if p == core.PersistLazy {
		return p.String() + " " + f.PersistInterval().String()
	}
	return p.String()
}

// memoryType is ItemInfo.memory_type: what tells a client to commit its
// writes to the item at quiet.
func memoryType(it *core.Item) uint32 {
	if it.Persistent() {
		return uint32(core.Persistent)
	}
	return uint32(core.Volatile)
}
