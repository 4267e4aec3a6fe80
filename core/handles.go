package core

// Bookkeeping of open handles, shared by the embedded and famd-served
// paths. The *Locked helpers need f.mu; release must be called without it.

// closeItemsLocked marks released, and forgets, every item handle (open or
// lazy) for which match is true, and returns them for release.
func (f *Fam) closeItemsLocked(match func(g GlobalDesc) bool) []*Item {
	var closed []*Item
	for key, set := range f.items {
		if !match(GlobalDesc{RegionID: key.region, Offset: key.offset}) {
			continue
		}
		for it := range set {
			it.state.Store(stateClosed)
			closed = append(closed, it)
		}
		delete(f.items, key)
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
	for key, set := range f.items {
		if key.region == id {
			for it := range set {
				its = append(its, it)
			}
		}
	}
	return its
}

// release drops the mappings of handles closed by closeItemsLocked and
// tells their watchers (the C library's slots).
func release(its []*Item) {
	for _, it := range its {
		it.dropView()
		it.fire()
	}
}
