// The membership side starts rebuilds through core/rpc/rebuild_r1.go.

package embed_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// With no manual rebuild: famd declares a stopped memory server down, clients
// write around it, and when it comes back famd rebuilds its copies from the
// survivors (R1's Rebuild call) and marks it up; then another server may die
// and nothing is lost.
func TestMembershipRebuildsAutomatically(t *testing.T) {
	for _, level := range []core.Redundancy{core.RAID1, core.RAID5} {
		t.Run(map[core.Redundancy]string{core.RAID1: "RAID1", core.RAID5: "RAID5"}[level], func(t *testing.T) {
			c := startCluster(t, 3, "metadata", 4096)
			f := c.client(t)
			r, err := f.CreateRegion("red", 1<<20, 0o600, core.RegionAttr{Redundancy: level})
			if err != nil {
				t.Fatal(err)
			}
			it, err := r.Allocate("data", 200<<10, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			ctx := f.Default()
			want := randomBytes(200<<10, 1)
			if err := ctx.Put(want, it, 0); err != nil {
				t.Fatal(err)
			}
			check := func(stage string) {
				t.Helper()
				got := make([]byte, len(want))
				if err := ctx.Get(got, it, 0); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s: get: %v (equal %v)", stage, err, bytes.Equal(got, want))
				}
			}
			wait := func(i int, st pb.ServerState) {
				t.Helper()
				id := c.mems[i].ID()
				for deadline := time.Now().Add(60 * time.Second); c.meta.Cluster().ServerState(id) != st; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("server %d is %v not %v", id, c.meta.Cluster().ServerState(id), st)
					}
				}
			}
			c.mems[1].Close()
			wait(1, pb.ServerState_SERVER_DOWN)
			copy(want[1000:], randomBytes(150<<10, 2))
			if err := ctx.Put(want[1000:1000+150<<10], it, 1000); err != nil {
				t.Fatalf("put with server 1 down: %v", err)
			}
			check("down")
			start := time.Now()
			c.restartMemory(t, 1)
			copy(want[5000:], randomBytes(20<<10, 3))
			if err := ctx.Put(want[5000:5000+20<<10], it, 5000); err != nil {
				t.Fatalf("put with server 1 back: %v", err)
			}
			wait(1, pb.ServerState_SERVER_UP)
			t.Logf("rejoin to up: %v", time.Since(start))
			check("rebuilt")
			c.mems[2].Close()
			check("server 2 down after the automatic rebuild")
		})
	}
}
