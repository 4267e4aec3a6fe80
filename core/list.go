package core

import (
	"sort"

	"github.com/gofam/openfam/core/metadata"
)

// RegionIDs returns the id of every region of the instance, ascending,
// whatever its permissions (admin tools filter what they show). Served by
// famd, it returns the regions famd lets this client see.
func (f *Fam) RegionIDs() ([]uint64, error) {
	const op = "fam_list_regions"
	if err := f.check(op); err != nil {
		return nil, err
	}
	recs, err := f.regionRecords(op, false)
	if err != nil {
		return nil, err
	}
	ids := make([]uint64, 0, len(recs))
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// Items describes every data item of the region, by offset. The caller
// needs read or write permission on the region.
func (r *Region) Items() (map[uint64]Stat, error) {
	const op = "fam_list_items"
	rec, err := r.record(op)
	if err != nil {
		return nil, err
	}
	return r.f.b.listItems(r.f, op, rec)
}

// RegionEntry describes one region of a listing.
type RegionEntry struct {
	ID uint64 // the region's id (its global descriptor's RegionID)
	Stat
}

// Regions describes every region the caller may read or write (the
// permission rule of LookupRegion), by ascending id. Served by famd, it is
// famd's ListRegions, which applies the same rule with the client's
// identity.
func (f *Fam) Regions() ([]RegionEntry, error) {
	const op = "fam_list_regions"
	if err := f.check(op); err != nil {
		return nil, err
	}
	recs, err := f.regionRecords(op, true)
	if err != nil {
		return nil, err
	}
	out := make([]RegionEntry, 0, len(recs))
	for _, rec := range recs {
		out = append(out, RegionEntry{ID: rec.ID, Stat: Stat{
			Size: rec.Size, Mode: rec.Mode, Name: rec.Name, UID: rec.UID, GID: rec.GID,
			Attr: RegionAttr{Redundancy: Redundancy(rec.Redundancy), Memory: MemoryType(rec.MemoryType),
				Interleave: Interleave(rec.Interleave), PermLevel: PermLevel(rec.PermLevel)},
			NumServers: uint64(len(rec.Servers)), InterleaveSize: interleaveOf(rec),
			Servers: append([]uint64(nil), rec.Servers...),
		}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// regionRecords lists the regions: through famd, those famd lets this
// client see; embedded, every one, or with visible only those the caller
// may read or write.
func (f *Fam) regionRecords(op string, visible bool) ([]metadata.Region, error) {
	return f.b.listRegions(f, op, visible)
}
