package core

// LocalUsage sums, for monitoring (famd --metrics-listen), the regions
// whose bytes this instance keeps in its own files rather than on memory
// servers, whatever their permissions: how many, their size, and the
// bytes allocated to their items. It is not served over the network.
func (f *Fam) LocalUsage() (regions int, size, used uint64, err error) {
	const op = "fam_local_usage"
	if err := f.check(op); err != nil {
		return 0, 0, 0, err
	}
	if f.remote != nil {
		return 0, 0, 0, Errorf(CodeUnimplemented, op, "region usage is kept by famd")
	}
	for _, rec := range f.store.Regions() {
		if Placed(rec) {
			continue
		}
		f.mu.Lock()
		if f.closed.Load() {
			// Finalized meanwhile: open nothing more.
			f.mu.Unlock()
			return 0, 0, 0, f.check(op)
		}
		rs, rerr := f.regionLocked(rec.ID)
		f.mu.Unlock()
		if rerr != nil {
			// Destroyed since the listing.
			continue
		}
		regions++
		size += rec.Size
		rs.mu.Lock()
		used += rs.itemBytes
		rs.mu.Unlock()
	}
	return regions, size, used, nil
}
