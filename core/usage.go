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
	return f.b.localUsage(f, op)
}
