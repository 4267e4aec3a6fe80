package core

import (
	"sort"

	"github.com/gofam/openfam/core/metadata"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
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
	f := r.f
	out := map[uint64]Stat{}
	if f.remote != nil {
		ctx, cancel := f.remote.ctx()
		defer cancel()
		rep, err := f.remote.cl.ListItems(ctx, &pb.ListItemsRequest{RegionId: r.id})
		if err := f.remote.famErr(op, rep.GetErr(), err); err != nil {
			return nil, err
		}
		for _, ii := range rep.GetItems() {
			out[ii.GetOffset()] = Stat{Size: ii.GetSize(), Mode: ii.GetMode(), Name: ii.GetName(), UID: ii.GetUid(), GID: ii.GetGid()}
		}
		return out, nil
	}
	if rightsFor(rec.Mode, rec.UID, rec.GID, f.uid, f.gid) == 0 {
		return nil, Errorf(CodeNoPerm, op, "no read or write permission on region %q", rec.Name)
	}
	for _, it := range f.store.Items(r.id) {
		out[it.Offset] = Stat{Size: it.Size, Mode: it.Mode, Name: it.Name, UID: it.UID, GID: it.GID,
			NumServers: uint64(len(rec.Servers)), InterleaveSize: interleaveOf(rec), Servers: append([]uint64(nil), rec.Servers...)}
	}
	return out, nil
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
	var recs []metadata.Region
	if f.remote != nil {
		ctx, cancel := f.remote.ctx()
		defer cancel()
		rep, err := f.remote.cl.ListRegions(ctx, &pb.ListRegionsRequest{})
		if err := f.remote.famErr(op, rep.GetErr(), err); err != nil {
			return nil, err
		}
		for _, ri := range rep.GetRegions() {
			recs = append(recs, regionFromPB(ri))
		}
		return recs, nil
	}
	for _, rec := range f.store.Regions() {
		if !visible || rightsFor(rec.Mode, rec.UID, rec.GID, f.uid, f.gid) != 0 {
			recs = append(recs, rec)
		}
	}
	return recs, nil
}
