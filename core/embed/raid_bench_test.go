package embed_test

import (
	"fmt"
	"testing"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
)

// BenchmarkRedundancy compares RAID1 and RAID5 regions with a NONE region
// on the same three memory servers (in this process, loopback TCP data
// planes, 1 MiB blocks), in one run: put and get of 256 B and 4 MiB,
// fetch_add, and (RAID5) a 4 MiB read with one server down, every block
// of it reconstructed or read from survivors.
//
//	go test -run '^$' -bench Redundancy -benchtime 2000x ./core/embed/
func BenchmarkRedundancy(b *testing.B) {
	c := startCluster(b, 3, "metadata", 1<<20)
	f := c.client(b)
	ctx := f.Default()
	levels := []struct {
		name  string
		level core.Redundancy
	}{{"none", core.RedundancyNone}, {"raid1", core.RAID1}, {"raid5", core.RAID5}}
	items := map[string]*core.Item{}
	for _, l := range levels {
		r, err := f.CreateRegion("bench-"+l.name, 64<<20, 0o600, core.RegionAttr{Redundancy: l.level})
		if err != nil {
			b.Fatal(err)
		}
		it, err := r.Allocate("x", 16<<20, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		items[l.name] = it
	}
	small, big := make([]byte, 256), make([]byte, 4<<20)
	for _, l := range levels {
		it := items[l.name]
		b.Run("put-256B/"+l.name, func(b *testing.B) {
			b.SetBytes(256)
			for i := 0; i < b.N; i++ {
				if err := ctx.Put(small, it, uint64(i%1024)*256); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("get-256B/"+l.name, func(b *testing.B) {
			b.SetBytes(256)
			for i := 0; i < b.N; i++ {
				if err := ctx.Get(small, it, uint64(i%1024)*256); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("fetch_add/"+l.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := ctx.Atomic(it, 64, amo.Uint64, amo.Add, amo.Value{Lo: 1}, amo.Value{}, true); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("put-4MiB/"+l.name, func(b *testing.B) {
			b.SetBytes(int64(len(big)))
			for i := 0; i < b.N; i++ {
				if err := ctx.Put(big, it, uint64(i%4)<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("get-4MiB/"+l.name, func(b *testing.B) {
			b.SetBytes(int64(len(big)))
			for i := 0; i < b.N; i++ {
				if err := ctx.Get(big, it, uint64(i%4)<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// Last, as it stops a server for good.
	if err := c.mems[1].Close(); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"raid1", "raid5"} {
		it := items[name]
		b.Run("degraded-get-4MiB/"+name, func(b *testing.B) {
			b.SetBytes(int64(len(big)))
			for i := 0; i < b.N; i++ {
				if err := ctx.Get(big, it, uint64(i%4)<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRebuild times the rebuild of one memory server's segments of a
// 256 MiB RAID1 or RAID5 region over three servers (the data written
// first): per iteration the metadata famd asks for the rebuild and the
// benchmark waits until the server reports it done. The bytes counted are
// the region's, so MB/s times 4 seconds is a 1 GiB region's rebuild.
//
//	go test -run '^$' -bench Rebuild -benchtime 3x ./core/embed/
func BenchmarkRebuild(b *testing.B) {
	const size = 256 << 20
	for _, level := range []core.Redundancy{core.RAID1, core.RAID5} {
		b.Run(fmt.Sprintf("256MiB/raid%d", map[core.Redundancy]int{core.RAID1: 1, core.RAID5: 5}[level]), func(b *testing.B) {
			c := startCluster(b, 3, "metadata", 1<<20)
			f := c.client(b)
			r, err := f.CreateRegion("rb", size, 0o600, core.RegionAttr{Redundancy: level})
			if err != nil {
				b.Fatal(err)
			}
			it, err := r.Allocate("x", size, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			buf := randomBytes(16<<20, 5)
			for off := uint64(0); off < size; off += uint64(len(buf)) {
				if err := f.Default().Put(buf, it, off); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.rebuild(b, 1)
			}
		})
	}
}
