package core

import (
	"fmt"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/amo"
)

// Benchmarks of the Go API. The C fast path is measured by cmd/fambench;
// these give the cost of the Go layer with a baseline in the same run.

func benchFam(b *testing.B) (*Fam, *Region) {
	d := b.TempDir()
	o := DefaultOptions()
	o.DataDir, o.ShmDir, o.BackupDir = d+"/data", d+"/shm", d+"/bk"
	f, err := Initialize(o)
	if err != nil {
		b.Fatal(err)
	}
	r, err := f.CreateRegion("bench", 64<<20, 0o600, RegionAttr{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Finalize() })
	return f, r
}

func BenchmarkAllocateDeallocate(b *testing.B) {
	for _, named := range []bool{false, true} {
		b.Run(fmt.Sprintf("named=%v", named), func(b *testing.B) {
			_, r := benchFam(b)
			name := ""
			if named {
				name = "item"
			}
			for i := 0; i < b.N; i++ {
				it, err := r.Allocate(name, 4096, 0o600)
				if err != nil {
					b.Fatal(err)
				}
				if err := it.Deallocate(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	for _, n := range []int{8, 4 << 20} {
		f, r := benchFam(b)
		it, _ := r.Allocate("g", uint64(n), 0o600)
		dst := make([]byte, n)
		src := make([]byte, n)
		b.Run(fmt.Sprintf("fam/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for i := 0; i < b.N; i++ {
				if err := f.Default().Get(dst, it, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("copy-baseline/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for i := 0; i < b.N; i++ {
				copy(dst, src)
			}
		})
	}
}

func BenchmarkFetchAddInt64(b *testing.B) {
	f, r := benchFam(b)
	it, _ := r.Allocate("c", 8, 0o600)
	for i := 0; i < b.N; i++ {
		if _, err := AtomicFetch(f.Default(), it, 0, amo.Add, int64(1)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSmallItemMemory reports the file-system bytes each 128-byte item
// costs (bytes/item: the heap files' allocated blocks over the item count)
// with every item of one mode, against items alternating between two modes,
// whose heap files are separate (see storage.go):
//
//	go test -run '^$' -bench SmallItemMemory -benchtime 10000x ./core/
func BenchmarkSmallItemMemory(b *testing.B) {
	for _, modes := range [][]uint32{{0o600}, {0o600, 0o640}} {
		b.Run(fmt.Sprintf("modes=%d", len(modes)), func(b *testing.B) {
			f, _ := benchFam(b)
			r, err := f.CreateRegion("small", 1<<30, 0o600, RegionAttr{PermLevel: PermDataItem})
			if err != nil {
				b.Fatal(err)
			}
			c := f.Default()
			one := []byte{1}
			for i := 0; i < b.N; i++ {
				it, err := r.Allocate("", 128, modes[i%len(modes)])
				if err != nil {
					b.Fatal(err)
				}
				// Touch the item so its page is really there.
				if err := c.Put(one, it, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			files, _ := filepath.Glob(f.opts.ShmDir + "/*")
			var used int64
			for _, p := range files {
				var st unix.Stat_t
				if unix.Stat(p, &st) == nil {
					used += st.Blocks * 512
				}
			}
			b.ReportMetric(float64(used)/float64(b.N), "bytes/item")
		})
	}
}
