package embed_test

import (
	"fmt"
	"sort"
	"syscall"
	"testing"
	"time"

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
// 256 MiB RAID1 or RAID5 region, and of a 1 GiB RAID1 region, over three
// servers (the data written first): per iteration the metadata famd asks
// for the rebuild and the benchmark waits until the server reports it
// done. The bytes counted are the region's.
//
//	go test -run '^$' -bench Rebuild -benchtime 3x ./core/embed/
//	go test -run '^$' -bench Rebuild/1GiB -benchtime 1x ./core/embed/
func BenchmarkRebuild(b *testing.B) {
	for _, cs := range []struct {
		size  uint64
		level core.Redundancy
	}{{256 << 20, core.RAID1}, {256 << 20, core.RAID5}, {1 << 30, core.RAID1}} {
		name := fmt.Sprintf("%dMiB/raid%d", cs.size>>20, map[core.Redundancy]int{core.RAID1: 1, core.RAID5: 5}[cs.level])
		if cs.size >= 1<<30 {
			name = fmt.Sprintf("%dGiB/raid%d", cs.size>>30, map[core.Redundancy]int{core.RAID1: 1, core.RAID5: 5}[cs.level])
		}
		b.Run(name, func(b *testing.B) {
			size := cs.size
			c := startCluster(b, 3, "metadata", 1<<20)
			f := c.client(b)
			r, err := f.CreateRegion("rb", size, 0o600, core.RegionAttr{Redundancy: cs.level})
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
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.rebuild(b, 1)
			}
		})
	}
}

// BenchmarkRedundancyRatio measures what BenchmarkRedundancy does for
// RAID1 against NONE, alternating the two in rounds on the same servers
// so that a loaded machine's swings hit both alike, and reports medians:
// each level's wall time per operation, the median of the rounds'
// RAID1/NONE ratios, and the same ratio of this process's CPU time (the
// client's and the servers', all in this process), steadier than wall
// time under load. b.N operations of each level in all.
//
//	go test -run '^$' -bench RedundancyRatio -benchtime 700x ./core/embed/
func BenchmarkRedundancyRatio(b *testing.B) {
	c := startCluster(b, 3, "metadata", 1<<20)
	f := c.client(b)
	ctx := f.Default()
	items := map[core.Redundancy]*core.Item{}
	for _, l := range []core.Redundancy{core.RedundancyNone, core.RAID1} {
		r, err := f.CreateRegion(fmt.Sprintf("ratio-%d", l), 64<<20, 0o600, core.RegionAttr{Redundancy: l})
		if err != nil {
			b.Fatal(err)
		}
		it, err := r.Allocate("x", 16<<20, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		items[l] = it
	}
	small, big := make([]byte, 256), make([]byte, 4<<20)
	ops := []struct {
		name string
		fn   func(it *core.Item, i int) error
	}{
		{"put-256B", func(it *core.Item, i int) error { return ctx.Put(small, it, uint64(i%1024)*256) }},
		{"get-256B", func(it *core.Item, i int) error { return ctx.Get(small, it, uint64(i%1024)*256) }},
		{"fetch_add", func(it *core.Item, i int) error {
			_, err := ctx.Atomic(it, 64, amo.Uint64, amo.Add, amo.Value{Lo: 1}, amo.Value{}, true)
			return err
		}},
		{"put-4MiB", func(it *core.Item, i int) error { return ctx.Put(big, it, uint64(i%4)<<20) }},
	}
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			const rounds = 7
			per := max(b.N/rounds, 1)
			// One round of each first, untimed: pages touched, connections made.
			for _, it := range items {
				for i := 0; i < per; i++ {
					if err := op.fn(it, i); err != nil {
						b.Fatal(err)
					}
				}
			}
			var wall, cpus [2][]float64
			var ratio, cpuRatio []float64
			b.ResetTimer()
			for r := 0; r < rounds; r++ {
				var w, cpu [2]float64
				for k := 0; k < 2; k++ {
					lvl := (r + k) % 2 // alternate which level goes first
					it := items[[]core.Redundancy{core.RedundancyNone, core.RAID1}[lvl]]
					c0, t0 := cpuTime(), time.Now()
					for i := 0; i < per; i++ {
						if err := op.fn(it, i); err != nil {
							b.Fatal(err)
						}
					}
					w[lvl] = float64(time.Since(t0).Nanoseconds()) / float64(per)
					cpu[lvl] = float64(cpuTime()-c0) / float64(per)
				}
				for k := range w {
					wall[k], cpus[k] = append(wall[k], w[k]), append(cpus[k], cpu[k])
				}
				ratio = append(ratio, w[1]/w[0])
				cpuRatio = append(cpuRatio, cpu[1]/cpu[0])
			}
			b.StopTimer()
			b.ReportMetric(median(wall[0])/1e3, "none-us/op")
			b.ReportMetric(median(wall[1])/1e3, "raid1-us/op")
			b.ReportMetric(median(cpus[0])/1e3, "none-cpu-us/op")
			b.ReportMetric(median(cpus[1])/1e3, "raid1-cpu-us/op")
			b.ReportMetric(median(ratio), "ratio")
			b.ReportMetric(median(cpuRatio), "cpu-ratio")
		})
	}
}

// cpuTime is this process's user and system CPU time so far, in
// nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
