package memserver_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
)

// TestRAID1AtomicAllocations: a RAID1 fetch_add (the client's plane, the
// primary executing and forwarding, the mirror applying, all in this
// process, on Unix sockets) allocates nothing but what timing costs
// (parking a connection's reader when a reply or request is not there
// within the polling window, and the like: see the loop). It
// made 7 per operation: its operands and result escaping into the
// client's request, the server's result, the forward's record and
// payload, and the address unix.Recvmsg made on each of the two Unix
// replies read.
func TestRAID1AtomicAllocations(t *testing.T) {
	if raceOn {
		t.Skip("SKIP under -race: the race detector allocates on every synchronisation")
	}
	rg := newRaidRig(t, core.RAID1, 3, 4096, 64<<10)
	op := func(i int) {
		// Words on each server in turn: every server executes and every
		// one applies forwards.
		off := uint64(i%16) * 4096
		if _, err := rg.plane.Atomic(rg.key, off, amo.Int64, amo.Add, amo.Value{Lo: 1}, amo.Value{}, true); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 300; i++ { // warm up: connections
		op(i)
	}
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	before := allocsByStack()
	// Long enough that what the collections cause (requests pooled
	// again, connections found idle and probed once) is lost in it.
	const n = 2000
	for i := 0; i < n; i++ {
		op(i)
	}
	after := allocsByStack()
	total, where := int64(0), map[string]int64{}
	for k, v := range after {
		// Counted: what the project's code allocates, less what timing
		// causes: parks, the liveness probe of a connection idle for a
		// millisecond (cconn.alive; on a loaded host a round trip can
		// take that long), and the requests pooled again after the
		// collections that allocsByStack runs (one empties sync.Pools).
		if d := v - before[k]; d > 0 && strings.Contains(k, "gofam/openfam/core") && !strings.Contains(k, "allocsByStack") &&
			!strings.Contains(k, "quietConn).wait") && !strings.Contains(k, "cconn).alive") && !strings.Contains(k, "sync.(*Pool)") {
			total += d
			where[k] += d
		}
	}
	// The retry table's map may allocate now and then as its ring fills.
	if float64(total)/n > 0.05 {
		for k, v := range where {
			t.Logf("%d allocations at:\n%s", v, k)
		}
		t.Fatalf("%.2f allocations per RAID1 fetch_add outside parking, want none", float64(total)/n)
	}
}

// allocsByStack is the memory profile's allocation count per stack,
// made current by two garbage collections (the profile lags by up to
// two cycles).
func allocsByStack() map[string]int64 {
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	out := map[string]int64{}
	for _, r := range recs {
		var b strings.Builder
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			b.WriteString(f.Function + "\n")
			if !more {
				break
			}
		}
		out[b.String()] += r.AllocObjects
	}
	return out
}
