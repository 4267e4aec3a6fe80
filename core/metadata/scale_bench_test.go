package metadata

import (
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkItemTableScale: a random lookup by name, and a random
// delete+re-add, in an item table of N named items (issue 18: each within
// 1.5x at 1e6 of its cost at 1e3).
func BenchmarkItemTableScale(b *testing.B) {
	for _, n := range []int{1000, 1000000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) { benchItemTable(b, n) })
	}
}

func benchItemTable(b *testing.B, n int) {
	t := newItemTable()
	names := make([]string, n)
	for i := range n {
		names[i] = "it" + strconv.Itoa(i)
		t.add(Item{Offset: uint64(i) * 256, Name: names[i], Size: 128}, t.nameHash(names[i]), true)
	}
	rng := uint64(0x9e3779b97f4a7c15)
	rnd := func() int {
		rng ^= rng >> 12
		rng ^= rng << 25
		rng ^= rng >> 27
		return int((rng * 2685821657736338717) % uint64(n))
	}
	b.Run("named", func(b *testing.B) {
		for range b.N {
			nm := names[rnd()]
			if _, ok := t.named(nm, t.nameHash(nm)); !ok {
				b.Fatal("missing")
			}
		}
	})
	b.Run("remove-add", func(b *testing.B) {
		for range b.N {
			i := rnd()
			it, _ := t.at(uint64(i) * 256)
			t.remove(it.Offset)
			t.add(it, t.nameHash(it.Name), true)
		}
	})
}

// BenchmarkStoreDeleteScale: random DeleteItem in a store whose region
// holds N items already checkpointed into bbolt, with a Checkpoint after
// every 1000 deletions timed with them (famd's deallocation at a million
// items: each random deletion lands in another bbolt leaf).
func BenchmarkStoreDeleteScale(b *testing.B) {
	for _, n := range []int{1000, 1000000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			r, err := s.CreateRegion(Region{Name: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			live := make([]bool, n)
			put := func(i int) {
				if err := s.PutItem(Item{RegionID: r.ID, Offset: uint64(i) * 256, Size: 128, Name: "it" + strconv.Itoa(i), Mode: 0o600}); err != nil {
					b.Fatal(err)
				}
				live[i] = true
			}
			for i := range n {
				put(i)
			}
			if err := s.Checkpoint(); err != nil {
				b.Fatal(err)
			}
			rng := uint64(0x9e3779b97f4a7c15)
			rnd := func() int {
				rng ^= rng >> 12
				rng ^= rng << 25
				rng ^= rng >> 27
				return int((rng * 2685821657736338717) % uint64(n))
			}
			batch := min(n/4, 1000)
			var gone []int
			// CPU time of the process in the timed part (the checkpoints'
			// work included), steadier than wall time on a busy machine.
			var cpu time.Duration
			t0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				i := rnd()
				for !live[i] {
					i = rnd()
				}
				if err := s.DeleteItem(r.ID, uint64(i)*256); err != nil {
					b.Fatal(err)
				}
				live[i] = false
				if gone = append(gone, i); len(gone) == batch {
					if err := s.Checkpoint(); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					cpu += cpuTime() - t0
					for _, i := range gone {
						put(i)
					}
					if err := s.Checkpoint(); err != nil {
						b.Fatal(err)
					}
					gone = gone[:0]
					t0 = cpuTime()
					b.StartTimer()
				}
			}
			b.StopTimer()
			cpu += cpuTime() - t0
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime returns the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
