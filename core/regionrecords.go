package core

import "github.com/gofam/openfam/core/metadata"

// RegionRecords returns the record of every region of the instance,
// whatever its permissions: famd's membership (issue 16) needs each
// redundant region's servers to rebuild a server's copies. Served by famd
// (a client instance) it returns what famd lets this client see.
func (f *Fam) RegionRecords() ([]metadata.Region, error) {
	const op = "fam_list_regions"
	if err := f.check(op); err != nil {
		return nil, err
	}
	return f.regionRecords(op, false)
}
