package core

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestScaleProbe does what tests/scale/famscale.c does, through the Go API
// and in one process, to find what grows with the number of items (issue
// 18): FAM_SCALE_N items allocated with their handles kept open, then
// FAM_SCALE_OPS (default 20000) random lookups and closes, permission
// changes of one item, random deallocations. For each it prints the median
// over batches of 1000 of the wall and this thread's CPU time per operation
// (the CPU time holds on a busy machine), and the allocations. Optional:
// FAM_SCALE_PROF, a file for a CPU profile of the timed part only;
// FAM_SCALE_PERFCTL, a perf --control fifo enabled for the timed part only;
// FAM_SCALE_GC, collect before timing. Skipped unless FAM_SCALE_N is set:
//
//	FAM_SCALE_N=1000000 go test -run TestScaleProbe -v ./core/
func TestScaleProbe(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("FAM_SCALE_N"))
	if n == 0 {
		t.Skip("FAM_SCALE_N not set")
	}
	ops := 20000
	if o, _ := strconv.Atoi(os.Getenv("FAM_SCALE_OPS")); o > 0 {
		ops = o
	}
	d := t.TempDir()
	o := DefaultOptions()
	o.DataDir, o.ShmDir, o.BackupDir = d+"/data", d+"/shm", d+"/bk"
	f, err := Initialize(o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Finalize()
	r, err := f.CreateRegion("scale", uint64(n)*256+(1<<20), 0o600, RegionAttr{Memory: Volatile, PermLevel: PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	its := make([]*Item, n)
	for i := range its {
		if its[i], err = r.Allocate("it"+strconv.Itoa(i), 128, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if os.Getenv("FAM_SCALE_GC") != "" {
		runtime.GC()
	}
	rng := uint64(0x9e3779b97f4a7c15)
	rnd := func(n int) int {
		rng ^= rng >> 12
		rng ^= rng << 25
		rng ^= rng >> 27
		return int((rng * 2685821657736338717) % uint64(n))
	}
	if p := os.Getenv("FAM_SCALE_PROF"); p != "" {
		pf, _ := os.Create(p)
		pprof.StartCPUProfile(pf)
		defer pprof.StopCPUProfile()
	}
	if c := os.Getenv("FAM_SCALE_PERFCTL"); c != "" {
		ctl, err := os.OpenFile(c, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		ctl.WriteString("enable\n")
		defer ctl.WriteString("disable\n")
	}
	var ms0, ms1 runtime.MemStats
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := func() time.Duration {
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
		return time.Duration(ts.Nano())
	}
	// Per batch of 1000 operations: wall and this thread's CPU time; the
	// medians are reported, robust to a busy machine's preemptions.
	phase := func(name string, k int, fn func(i int)) {
		runtime.ReadMemStats(&ms0)
		var walls, cpus []float64
		for b := 0; b < k; b += 1000 {
			a, c := time.Now(), cpu()
			for i := b; i < min(k, b+1000); i++ {
				fn(i)
			}
			m := float64(min(k, b+1000) - b)
			walls = append(walls, float64(time.Since(a).Nanoseconds())/m/1e3)
			cpus = append(cpus, float64((cpu()-c).Nanoseconds())/m/1e3)
		}
		runtime.ReadMemStats(&ms1)
		slices.Sort(walls)
		slices.Sort(cpus)
		fmt.Printf("N=%d %-8s median wall %7.2f us/op  cpu %7.2f us/op  %6.0f B/op %5.1f allocs/op  GCs %d\n", n, name,
			walls[len(walls)/2], cpus[len(cpus)/2], float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(k),
			float64(ms1.Mallocs-ms0.Mallocs)/float64(k), ms1.NumGC-ms0.NumGC)
	}
	phase("lookup", ops, func(int) {
		x, err := f.Lookup("it"+strconv.Itoa(rnd(n)), "scale")
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	})
	phase("chmod", ops, func(k int) {
		m := uint32(0o600)
		if k&1 == 0 {
			m = 0o640
		}
		if err := its[n/2].ChangePermissions(m); err != nil {
			t.Fatal(err)
		}
	})
	nfree := min(ops, n/2)
	phase("dealloc", nfree, func(int) {
		for {
			i := rnd(n)
			if its[i] == nil || i == n/2 {
				continue
			}
			if err := its[i].Deallocate(); err != nil {
				t.Fatal(err)
			}
			its[i] = nil
			return
		}
	})
}
