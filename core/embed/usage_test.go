package embed_test

import (
	"testing"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/rpc"
)

// Server.Usage (famd's memory metrics) reports each memory server's
// segments and bytes, and this famd's own regions only with role all,
// including regions of other owners with private modes; a memory server
// that stopped is reported unreachable.
func TestUsagePerServer(t *testing.T) {
	c := startCluster(t, 2, "metadata", 64<<10)
	f := c.client(t)
	if _, err := f.CreateRegion("striped", 4<<20, 0o600, core.RegionAttr{}); err != nil {
		t.Fatal(err)
	}
	us, err := c.meta.Server().Usage()
	if err != nil {
		t.Fatal(err)
	}
	if len(us) != 2 {
		t.Fatalf("role metadata with 2 memory servers: usage %+v, want the 2 servers only", us)
	}
	for _, u := range us {
		if u.ID == 0 || !u.Reachable || u.Regions != 1 || u.Bytes == 0 {
			t.Errorf("memory server usage %+v: want reachable, 1 region, some bytes", u)
		}
	}
	c.mems[1].Close()
	us, err = c.meta.Server().Usage()
	if err != nil {
		t.Fatal(err)
	}
	if len(us) != 2 || !us[0].Reachable || us[1].Reachable {
		t.Errorf("after memory server %d stopped: usage %+v, want it unreachable", us[1].ID, us)
	}

	// Role all: famd's own regions, whoever owns them: here uid 65534
	// (every TCP caller's identity), mode 0600, which famd's own uid
	// could not open.
	d := startClusterAs(t, 0, "all", 0, &rpc.Identity{UID: 65534, GID: 65534})
	owner := core.Options{Server: d.meta.Addr(), TokenFile: d.tokenFile, UID: -1, GID: -1, PEID: 0, PECount: 1}
	g, err := core.Initialize(owner)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Finalize()
	r, err := g.CreateRegion("own", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Allocate("x", 12288, 0o600); err != nil {
		t.Fatal(err)
	}
	us, err = d.meta.Server().Usage()
	if err != nil {
		t.Fatal(err)
	}
	if len(us) != 1 || us[0].ID != 0 || us[0].Regions != 1 || us[0].Bytes != 1<<20 || us[0].Used != 12288 {
		t.Errorf("role all: usage %+v, want server 0 with 1 region of 1 MiB, 12288 bytes used", us)
	}
	if st, err := r.Stat(); err != nil || st.UID != 65534 {
		t.Errorf("the region's owner: %+v, %v; want uid 65534", st, err)
	}
}
