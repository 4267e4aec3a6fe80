package embed

import (
	"fmt"
	"slices"

	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// RebuildServer asks memory server id to rebuild its segments of every
// redundant region it holds a share of, from the regions' other servers,
// in the background (issue 16). It returns how many regions it asked
// about; the first failure stops it. Progress: RebuildStatus.
func (d *Famd) RebuildServer(id uint64) (int, error) {
	if d.cluster == nil {
		return 0, fmt.Errorf("this famd has no memory servers")
	}
	recs, err := d.fam.RedundantRegions()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, rec := range recs {
		if !slices.Contains(rec.Servers, id) {
			continue
		}
		if err := d.cluster.Rebuild(rec, id); err != nil {
			return n, fmt.Errorf("region %d: %w", rec.ID, err)
		}
		n++
	}
	return n, nil
}

// RebuildStatus reports memory server id's rebuilds (see RebuildServer).
func (d *Famd) RebuildStatus(id uint64) ([]*pb.RebuildProgress, error) {
	if d.cluster == nil {
		return nil, fmt.Errorf("this famd has no memory servers")
	}
	return d.cluster.RebuildStatus(id)
}
