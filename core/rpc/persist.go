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
