package core_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/transport"
)

// TestRemoteSmallOpsAllocate: through a famd over TCP (in this process,
// so its allocations count too), a blocking get, put and fetch_add
// allocate nothing per call, and fam_add + fam_quiet one object (the
// Call the quiet collects). Before: the error mapping's escape, the
// quiet's list of calls and the transport's requests and closures, 3 to
// 11 a call.
func TestRemoteSmallOpsAllocate(t *testing.T) {
	if raceOn {
		t.Skip("SKIP under -race: the race detector allocates on every synchronisation; make test-go counts allocations in a run without it")
	}
	d, err := embed.Start(embed.Options{NoSocket: true, TCPAddr: "127.0.0.1:0", Token: "allocs",
		DataSpin: transport.DefaultServerSpin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	tok := t.TempDir() + "/token"
	if err := writeFile(tok, "allocs"); err != nil {
		t.Fatal(err)
	}
	o := core.DefaultOptions()
	o.Server, o.TokenFile, o.Timeout, o.PEID, o.PECount = d.Addr(), tok, time.Minute, 0, 1
	o.Spin = 100 * time.Microsecond
	f, err := core.Initialize(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Finalize() })
	r, err := f.CreateRegion("allocs", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 4096, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	c := f.Default()
	buf := make([]byte, 8)
	for _, tc := range []struct {
		name string
		max  float64
		fn   func() error
	}{
		{"get", 1, func() error { return c.Get(buf, it, 0) }},
		{"put", 1, func() error { return c.Put(buf, it, 0) }},
		{"fetch_add", 1, func() error { _, err := core.AtomicFetch(c, it, 1024, amo.Add, int64(1)); return err }},
		{"add+quiet", 2, func() error {
			if err := core.AtomicDo(c, it, 1024, amo.Add, int64(1)); err != nil {
				return err
			}
			return c.Quiet()
		}},
	} {
		if err := tc.fn(); err != nil { // warm up
			t.Fatalf("%s: %v", tc.name, err)
		}
		// The count is the whole process's, famd included: while the
		// spin windows hold nothing is allocated, but on a machine so busy
		// that they expire, parking allocates in the runtime. The best of
		// a few rounds counts, and a starved machine is reported as such.
		const n = 300
		best, slowest := 1e9, time.Duration(0)
		for round := 0; round < 5 && best >= tc.max; round++ {
			var before, after runtime.MemStats
			start := time.Now()
			runtime.ReadMemStats(&before)
			for i := 0; i < n; i++ {
				if err := tc.fn(); err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
			}
			runtime.ReadMemStats(&after)
			best = min(best, float64(after.Mallocs-before.Mallocs)/n)
			slowest = max(slowest, time.Since(start)/n)
		}
		if best >= tc.max && slowest > time.Millisecond {
			t.Logf("SKIP %s: the machine is too busy to hold the spin windows (%v a call, %.2f allocations)", tc.name, slowest, best)
			continue
		}
		if best >= tc.max {
			t.Errorf("%s: %.2f allocations a call, want under %v", tc.name, best, tc.max)
		}
	}
}
