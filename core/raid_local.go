package core

import "github.com/gofam/openfam/core/metadata"

// redundancyHere refuses a RAID level on a region kept in an instance's
// own storage (embedded mode, or a famd with no memory servers for it):
// one copy in one process's files cannot survive that process's host, so
// the attribute would be a lie (issue 16). servers is where the region
// was placed ({0}: here).
func redundancyHere(op string, attr RegionAttr, servers []uint64) error {
	if attr.Redundancy != RAID1 && attr.Redundancy != RAID5 {
		return nil
	}
	if len(servers) > 0 && servers[0] != 0 {
		return nil
	}
	need, name := 2, "RAID1"
	if attr.Redundancy == RAID5 {
		need, name = 3, "RAID5"
	}
	return Errorf(CodeResource, op, "redundancy %s needs at least %d memory servers; this region would be kept in one instance's own storage (0 memory servers): start memory famds (famd --role memory --join ...) or ask for FAM_REDUNDANCY_NONE", name, need)
}

// RedundantRegions lists the records of the RAID1 and RAID5 regions this
// instance keeps (famd's metadata service: for rebuilding a memory
// server's share of them, issue 16).
func (f *Fam) RedundantRegions() ([]metadata.Region, error) {
	recs, err := f.regionRecords("fam_list_regions", false)
	if err != nil {
		return nil, err
	}
	var out []metadata.Region
	for _, rec := range recs {
		if r := Redundancy(rec.Redundancy); (r == RAID1 || r == RAID5) && Placed(rec) {
			out = append(out, rec)
		}
	}
	return out, nil
}
