package embed_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/embed"
)

// restartMemory stops nothing: it starts memory server i again on its
// data directory and addresses (after the caller closed it), as famd
// restarted on the same host would.
func (c *cluster) restartMemory(t testing.TB, i int) {
	t.Helper()
	old := c.mems[i]
	m, err := embed.StartMemory(embed.MemoryOptions{DataDir: old.DataDir(), ShmDir: old.DataDir() + "-shm",
		TCPAddr: old.Addr(), DataTCPAddr: old.DataAddr(), Join: c.meta.Addr(), Token: "cluster-test-token", ServerToken: serverToken})
	if err != nil {
		t.Fatal(err)
	}
	c.mems[i] = m
	select {
	case <-m.Joined():
	case <-time.After(60 * time.Second):
		t.Fatal("restarted memory server did not join within 60s")
	}
}

// rebuild has the metadata famd rebuild memory server i and waits until
// every one of its rebuilds is done.
func (c *cluster) rebuild(t testing.TB, i int) time.Duration {
	t.Helper()
	id := c.mems[i].ID()
	start := time.Now()
	n, err := c.meta.RebuildServer(id)
	if err != nil || n == 0 {
		t.Fatalf("rebuilding memory server %d: %d regions, %v", id, n, err)
	}
	deadline := time.Now().Add(120 * time.Second)
	for {
		st, err := c.meta.RebuildStatus(id)
		if err != nil {
			t.Fatal(err)
		}
		done := len(st) > 0
		for _, p := range st {
			if p.GetState() == "failed" {
				t.Fatalf("rebuild of region %d kind %d failed: %s", p.GetRegionId(), p.GetKind(), p.GetError())
			}
			if p.GetState() != "done" || p.GetBytesDone() != p.GetBytesTotal() {
				done = false
			}
		}
		if done {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("rebuild of memory server %d not done within 120s: %v", id, st)
		}
		time.Sleep(5 * time.Millisecond) // polling a background job's progress
	}
}

// TestRedundantRegionSurvivesAMemoryServer is issue 16's acceptance path on
// three in-process memory servers, for RAID1 and RAID5: data written
// before a server stops reads back exactly during its outage; writes and
// fetch_adds during the outage succeed; the server comes back stale (it
// missed them), is rebuilt while clients write, and then another server
// stops and nothing is lost.
func TestRedundantRegionSurvivesAMemoryServer(t *testing.T) {
	for _, level := range []core.Redundancy{core.RAID1, core.RAID5} {
		t.Run(fmt.Sprintf("RAID%d", map[core.Redundancy]int{core.RAID1: 1, core.RAID5: 5}[level]), func(t *testing.T) {
			c := startCluster(t, 3, "metadata", 4096)
			f := c.client(t)
			r, err := f.CreateRegion("red", 1<<20, 0o600, core.RegionAttr{Redundancy: level})
			if err != nil {
				t.Fatal(err)
			}
			st, err := r.Stat()
			if err != nil || st.Attr.Redundancy != level || len(st.Servers) != 3 {
				t.Fatalf("region stat %+v, %v", st, err)
			}
			it, err := r.Allocate("data", 200<<10, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			ctr, err := r.Allocate("counter", 4096, 0o600)
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
				if err := ctx.Get(got, it, 0); err != nil {
					t.Fatalf("%s: get: %v", stage, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: the item reads back different bytes", stage)
				}
			}
			var count uint64
			add := func(stage string, n int) {
				t.Helper()
				for i := 0; i < n; i++ {
					old, err := ctx.Atomic(ctr, 8, amo.Uint64, amo.Add, amo.Value{Lo: 1}, amo.Value{}, true)
					if err != nil {
						t.Fatalf("%s: fetch_add: %v", stage, err)
					}
					if old.Lo != count {
						t.Fatalf("%s: fetch_add returned %d, want %d", stage, old.Lo, count)
					}
					count++
				}
			}
			add("healthy", 10)
			check("healthy")

			// Server 1 stops: everything reads back, writes and atomics go on.
			if err := c.mems[1].Close(); err != nil {
				t.Fatal(err)
			}
			check("server 1 down")
			copy(want[1000:], randomBytes(150<<10, 2))
			if err := ctx.Put(want[1000:1000+150<<10], it, 1000); err != nil {
				t.Fatalf("put with server 1 down: %v", err)
			}
			add("server 1 down", 50)
			check("server 1 down, after writing")
			// A PE that starts during the outage looks the item up (its key
			// is granted on the survivors) and reads it.
			f2 := c.client(t)
			it2, err := f2.Lookup("data", "red")
			if err != nil {
				t.Fatalf("lookup with server 1 down: %v", err)
			}
			got2 := make([]byte, len(want))
			if err := f2.Default().Get(got2, it2, 0); err != nil || !bytes.Equal(got2, want) {
				t.Fatalf("a new PE's read with server 1 down: %v", err)
			}

			// Server 1 comes back with what it had: stale until rebuilt.
			c.restartMemory(t, 1)
			check("server 1 back, not rebuilt")
			copy(want[5000:], randomBytes(20<<10, 3))
			if err := ctx.Put(want[5000:5000+20<<10], it, 5000); err != nil {
				t.Fatalf("put with server 1 stale: %v", err)
			}
			add("server 1 stale", 20)
			took := c.rebuild(t, 1)
			t.Logf("rebuilt server 1 in %v", took)
			check("server 1 rebuilt")
			add("server 1 rebuilt", 5)

			// Now another server goes: the rebuilt server holds what it
			// missed (server 2's blocks are read from server 0's mirror or
			// reconstructed with server 1's).
			if err := c.mems[2].Close(); err != nil {
				t.Fatal(err)
			}
			check("server 2 down after the rebuild")
			add("server 2 down", 5)
			got := make([]byte, 8)
			if err := ctx.Get(got, ctr, 8); err != nil || binary.LittleEndian.Uint64(got) != count {
				t.Fatalf("counter %d (%v), want %d", binary.LittleEndian.Uint64(got), err, count)
			}
		})
	}
}

// TestRedundancyNeedsEnoughServers checks the refusals: RAID1 on one
// memory server, RAID5 on two, and any RAID level on a region famd would
// keep in its own files, fail at create with a message naming the count.
func TestRedundancyNeedsEnoughServers(t *testing.T) {
	c := startCluster(t, 2, "metadata", 4096)
	f := c.client(t)
	if _, err := f.CreateRegion("r5", 1<<20, 0o600, core.RegionAttr{Redundancy: core.RAID5}); core.CodeOf(err) != core.CodeResource ||
		!strings.Contains(err.Error(), "at least 3 memory servers; 2 joined") {
		t.Fatalf("RAID5 on 2 servers: %v", err)
	}
	if _, err := f.CreateRegion("r1", 1<<20, 0o600, core.RegionAttr{Redundancy: core.RAID1}); err != nil {
		t.Fatalf("RAID1 on 2 servers: %v", err)
	}
	if _, err := f.CreateRegion("r1n", 1<<20, 0o600, core.RegionAttr{Redundancy: core.RAID1, Interleave: core.InterleaveDisable}); core.CodeOf(err) != core.CodeResource {
		t.Fatalf("RAID1 without interleaving: %v", err)
	}
	c1 := startCluster(t, 1, "metadata", 4096)
	if _, err := c1.client(t).CreateRegion("r1", 1<<20, 0o600, core.RegionAttr{Redundancy: core.RAID1}); core.CodeOf(err) != core.CodeResource ||
		!strings.Contains(err.Error(), "at least 2 memory servers; 1 joined") {
		t.Fatalf("RAID1 on 1 server: %v", err)
	}
	c0 := startCluster(t, 0, "all", 4096)
	if _, err := c0.client(t).CreateRegion("r1", 1<<20, 0o600, core.RegionAttr{Redundancy: core.RAID1}); core.CodeOf(err) != core.CodeResource ||
		!strings.Contains(err.Error(), "0 joined") {
		t.Fatalf("RAID1 on famd's own storage: %v", err)
	}
	if _, err := c0.client(t).CreateRegion("none", 1<<20, 0o600, core.RegionAttr{}); err != nil {
		t.Fatalf("default redundancy: %v", err)
	}
}

// TestBackupAndRestoreOfRedundantItems: famd's own transfers (backup,
// restore) go through the redundant data plane: a RAID5 item backed up
// and restored into a RAID1 region reads back exactly, from either copy.
func TestBackupAndRestoreOfRedundantItems(t *testing.T) {
	c := startCluster(t, 3, "metadata", 64<<10)
	f := c.client(t)
	r5, err := f.CreateRegion("r5", 16<<20, 0o600, core.RegionAttr{Redundancy: core.RAID5})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := f.CreateRegion("r1", 16<<20, 0o600, core.RegionAttr{Redundancy: core.RAID1})
	if err != nil {
		t.Fatal(err)
	}
	const size = 5<<20 + 333
	it, err := r5.Allocate("src", size, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	want := randomBytes(size, 12)
	ctx := f.Default()
	if err := ctx.Put(want, it, 0); err != nil {
		t.Fatal(err)
	}
	w, err := f.Backup(it, "bk-r5")
	if err == nil {
		err = w.Wait()
	}
	if err != nil {
		t.Fatalf("backup of a RAID5 item: %v", err)
	}
	w, fresh, err := f.RestoreNew("bk-r5", r1, "restored", 0o600)
	if err == nil {
		err = w.Wait()
	}
	if err != nil {
		t.Fatalf("restore into a RAID1 region: %v", err)
	}
	got := make([]byte, size)
	if err := ctx.Get(got, fresh, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("restored item differs (%v)", err)
	}
	// Both copies were written: with any one server gone it reads back.
	if err := c.mems[0].Close(); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Get(got, fresh, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("restored item without server 0 differs (%v)", err)
	}
	if err := ctx.Get(got, it, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("RAID5 item without server 0 differs (%v)", err)
	}
}

// TestRedundantRegionResizeAndDestroy: a RAID1 and a RAID5 region grow
// (segments, mirrors and parity grow with them; the bytes already there
// keep their places), items in the new space survive a server's outage,
// and destroying the regions drops every segment of theirs.
func TestRedundantRegionResizeAndDestroy(t *testing.T) {
	c := startCluster(t, 3, "metadata", 4096)
	f := c.client(t)
	ctx := f.Default()
	var regions []*core.Region
	var items []*core.Item
	var wants [][]byte
	for i, level := range []core.Redundancy{core.RAID1, core.RAID5} {
		r, err := f.CreateRegion(fmt.Sprint("grow", i), 1<<20, 0o600, core.RegionAttr{Redundancy: level})
		if err != nil {
			t.Fatal(err)
		}
		a, err := r.Allocate("a", 900<<10, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		wa := randomBytes(900<<10, uint64(20+i))
		if err := ctx.Put(wa, a, 0); err != nil {
			t.Fatal(err)
		}
		if err := r.Resize(8 << 20); err != nil {
			t.Fatalf("resize: %v", err)
		}
		b, err := r.Allocate("b", 6<<20, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		wb := randomBytes(6<<20, uint64(30+i))
		if err := ctx.Put(wb, b, 0); err != nil {
			t.Fatal(err)
		}
		regions = append(regions, r)
		items = append(items, a, b)
		wants = append(wants, wa, wb)
	}
	if err := c.mems[2].Close(); err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		got := make([]byte, len(wants[i]))
		if err := ctx.Get(got, it, 0); err != nil || !bytes.Equal(got, wants[i]) {
			t.Fatalf("item %d after the resize, server 2 down: %v", i, err)
		}
	}
	c.restartMemory(t, 2)
	c.rebuild(t, 2)
	for _, r := range regions {
		if err := r.Destroy(); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range c.mems {
		if n, bytes := m.Server().Segments(); n != 0 || bytes != 0 {
			t.Fatalf("memory server %d keeps %d segments (%d bytes) after the regions were destroyed", i, n, bytes)
		}
	}
}

// TestRedundantRegionUnderLoadWhileAServerDies: four PEs (instances) run
// fetch_add loops on one shared counter and sequence-numbered puts of
// their own records on a RAID1 and a RAID5 region while a memory server
// stops under them; every acknowledged increment and record is there at
// the end, and the counter equals the acknowledgements (none was applied
// twice).
func TestRedundantRegionUnderLoadWhileAServerDies(t *testing.T) {
	c := startCluster(t, 3, "metadata", 4096)
	setup := c.client(t)
	const pes, recSize, recs, iters = 4, 512, 64, 400
	for i, level := range []core.Redundancy{core.RAID1, core.RAID5} {
		r, err := setup.CreateRegion(fmt.Sprint("load", i), 4<<20, 0o666, core.RegionAttr{Redundancy: level})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Allocate("ctr", 4096, 0o666); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Allocate("recs", pes*recs*recSize, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	type ack struct {
		adds int
		last [2][recs]int // per region and record slot: the last sequence number acknowledged
	}
	acks := make([]ack, pes)
	killed := make(chan struct{})
	errs := make([]error, pes)
	var ready, wg sync.WaitGroup
	for pe := 0; pe < pes; pe++ {
		f := c.client(t)
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			signalled := false
			defer func() {
				if !signalled {
					ready.Done()
				}
			}()
			var ctrs, rits [2]*core.Item
			for i := range 2 {
				var err error
				if ctrs[i], err = f.Lookup("ctr", fmt.Sprint("load", i)); err == nil {
					rits[i], err = f.Lookup("recs", fmt.Sprint("load", i))
				}
				if err != nil {
					errs[pe] = err
					return
				}
			}
			ctx := f.Default()
			rec := make([]byte, recSize)
			for seq := 1; seq <= iters; seq++ {
				if seq == iters/4 {
					signalled = true
					ready.Done() // running: the server may go now
				}
				if seq == iters/2 {
					<-killed // the rest runs with the server gone
				}
				for i := range 2 {
					if _, err := ctx.Atomic(ctrs[i], 0, amo.Uint64, amo.Add, amo.Value{Lo: 1}, amo.Value{}, true); err != nil {
						errs[pe] = fmt.Errorf("PE %d fetch_add on region %d at %d: %w", pe, i, seq, err)
						return
					}
					slot := seq % recs
					for k := range rec {
						rec[k] = byte(seq + k + pe)
					}
					binary.LittleEndian.PutUint64(rec, uint64(seq))
					if err := ctx.Put(rec, rits[i], uint64((pe*recs+slot)*recSize)); err != nil {
						errs[pe] = fmt.Errorf("PE %d put on region %d at %d: %w", pe, i, seq, err)
						return
					}
					acks[pe].last[i][slot] = seq
				}
				acks[pe].adds++
			}
		}()
	}
	ready.Wait()
	if err := c.mems[1].Close(); err != nil {
		t.Fatal(err)
	}
	close(killed)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx := setup.Default()
	for i := range 2 {
		ctr, err := setup.Lookup("ctr", fmt.Sprint("load", i))
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 8)
		if err := ctx.Get(b, ctr, 0); err != nil {
			t.Fatal(err)
		}
		if v := binary.LittleEndian.Uint64(b); v != pes*iters {
			t.Fatalf("region %d: counter %d, %d increments acknowledged", i, v, pes*iters)
		}
		rits, err := setup.Lookup("recs", fmt.Sprint("load", i))
		if err != nil {
			t.Fatal(err)
		}
		all := make([]byte, pes*recs*recSize)
		if err := ctx.Get(all, rits, 0); err != nil {
			t.Fatal(err)
		}
		for pe := range acks {
			for slot, seq := range acks[pe].last[i] {
				got := all[(pe*recs+slot)*recSize:][:recSize]
				if s := binary.LittleEndian.Uint64(got); s != uint64(seq) {
					t.Fatalf("region %d PE %d slot %d: record %d, %d acknowledged", i, pe, slot, s, seq)
				}
			}
		}
	}
}

// TestMetadataRestartKeepsRedundancy: the metadata famd restarts (a new
// epoch) while the memory servers stay up; the redundant regions keep
// working: new keys are granted with the same peer key (kept in the
// metadata famd's data directory), so forwards between memory servers
// still authenticate, and a memory server's outage afterwards loses
// nothing.
func TestMetadataRestartKeepsRedundancy(t *testing.T) {
	dir := t.TempDir()
	tok := writeToken(t, dir, "cluster-test-token")
	opts := embed.Options{DataDir: filepath.Join(dir, "meta"), SocketPath: filepath.Join(dir, "meta.sock"),
		TCPAddr: "127.0.0.1:0", Token: "cluster-test-token", Role: "metadata", InterleaveSize: 4096, ServerToken: serverToken}
	meta, err := embed.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{meta: meta, tokenFile: tok}
	t.Cleanup(func() {
		for _, m := range c.mems {
			m.Close()
		}
		c.meta.Close()
	})
	for i := 0; i < 3; i++ {
		c.addMemory(t, filepath.Join(dir, fmt.Sprint("m", i)))
	}
	f := c.client(t)
	ctx := f.Default()
	var items []*core.Item
	var wants [][]byte
	for i, level := range []core.Redundancy{core.RAID1, core.RAID5} {
		r, err := f.CreateRegion(fmt.Sprint("r", i), 1<<20, 0o600, core.RegionAttr{Redundancy: level, Memory: core.Persistent})
		if err != nil {
			t.Fatal(err)
		}
		it, err := r.Allocate("x", 100<<10, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		w := randomBytes(100<<10, uint64(40+i))
		if err := ctx.Put(w, it, 0); err != nil {
			t.Fatal(err)
		}
		items, wants = append(items, it), append(wants, w)
	}
	opts.TCPAddr, opts.DataTCPAddr = meta.Addr(), meta.DataAddr()
	if err := meta.Close(); err != nil {
		t.Fatal(err)
	}
	if c.meta, err = embed.Start(opts); err != nil {
		t.Fatal(err)
	}
	// A new client's lookups grant new keys (a new epoch) everywhere.
	f2 := c.client(t)
	ctx2 := f2.Default()
	for i := range items {
		it, err := f2.Lookup("x", fmt.Sprint("r", i))
		if err != nil {
			t.Fatal(err)
		}
		items[i] = it
		copy(wants[i][500:], randomBytes(30<<10, uint64(50+i)))
		if err := ctx2.Put(wants[i][500:500+30<<10], it, 500); err != nil {
			t.Fatalf("put after the metadata restart: %v", err)
		}
		if _, err := ctx2.Atomic(it, 64<<10, amo.Uint64, amo.Add, amo.Value{Lo: 3}, amo.Value{}, true); err != nil {
			t.Fatalf("atomic after the metadata restart (forwarded with the peer key): %v", err)
		}
		binary.LittleEndian.PutUint64(wants[i][64<<10:], binary.LittleEndian.Uint64(wants[i][64<<10:])+3)
	}
	if err := c.mems[0].Close(); err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		got := make([]byte, len(wants[i]))
		if err := ctx2.Get(got, it, 0); err != nil || !bytes.Equal(got, wants[i]) {
			t.Fatalf("region %d after the metadata restart and a memory server's outage: %v", i, err)
		}
	}
}
