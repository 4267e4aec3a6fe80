package core_test

import (
	"strings"
	"testing"

	"github.com/gofam/openfam/core"
)

// TestEmbeddedRefusesRedundancy: an embedded instance keeps regions in
// its own files, so a RAID level cannot be honoured: fam_create_region
// fails with FAM_ERR_RESOURCE naming the memory servers needed, instead
// of recording the attribute and keeping one copy. DEFAULT and NONE work.
func TestEmbeddedRefusesRedundancy(t *testing.T) {
	f := embeddedWith(t, t.TempDir(), core.PersistQuiet, 0)
	for _, tc := range []struct {
		level core.Redundancy
		need  string
	}{{core.RAID1, "at least 2 memory servers"}, {core.RAID5, "at least 3 memory servers"}} {
		_, err := f.CreateRegion("r", 1<<20, 0o600, core.RegionAttr{Redundancy: tc.level})
		if core.CodeOf(err) != core.CodeResource || !strings.Contains(err.Error(), tc.need) || !strings.Contains(err.Error(), "0 memory servers") {
			t.Fatalf("redundancy %d embedded: %v", tc.level, err)
		}
	}
	if _, err := f.LookupRegion("r"); err == nil {
		t.Fatal("a refused region was kept")
	}
	for _, lv := range []core.Redundancy{core.RedundancyDefault, core.RedundancyNone} {
		r, err := f.CreateRegion("ok", 1<<20, 0o600, core.RegionAttr{Redundancy: lv})
		if err != nil {
			t.Fatalf("redundancy %d: %v", lv, err)
		}
		if st, err := r.Stat(); err != nil || st.Attr.Redundancy != core.RedundancyNone {
			t.Fatalf("stat %+v %v: want NONE", st.Attr, err)
		}
		if err := r.Destroy(); err != nil {
			t.Fatal(err)
		}
	}
}
