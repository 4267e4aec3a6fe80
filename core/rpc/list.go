package rpc

import "github.com/gofam/openfam/core"

// Listing needs two calls the core API does not have yet; they are
// reached through these interfaces so that famd builds either way and
// lists as soon as the core provides them.
type regionLister interface {
	// RegionIDs returns the id of every region of the instance, whatever
	// its permissions.
	RegionIDs() ([]uint64, error)
}

type itemLister interface {
	// Items returns every data item of the region by offset; the caller
	// needs read or write permission on the region.
	Items() (map[uint64]core.Stat, error)
}

func regionIDs(f *core.Fam) ([]uint64, error) {
	if l, ok := any(f).(regionLister); ok {
		return l.RegionIDs()
	}
	return nil, core.Errorf(core.CodeUnimplemented, "fam_list_regions", "this famd's core cannot list regions")
}

func regionItems(r *core.Region) (map[uint64]core.Stat, error) {
	if l, ok := any(r).(itemLister); ok {
		return l.Items()
	}
	return nil, core.Errorf(core.CodeUnimplemented, "fam_list_items", "this famd's core cannot list data items")
}
