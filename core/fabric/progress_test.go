package fabric

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gofam/openfam/core/transport"
)

// TestProgressBlocksAfterWork: after a stream of gets the progress
// goroutines of both ends go back to blocking on their CQ's wait fd (each
// block ends at the latest after sweepMillis, so the count grows while
// they block) rather than polling on, which would cost a core per idle
// endpoint. A wait fd left readable (the CQ's own signal, which only
// fi_trywait clears) would keep them polling. The preemption detection,
// which would end the polling on a busy host, is off.
func TestProgressBlocksAfterWork(t *testing.T) {
	forEach(t, func(t *testing.T, prov string) {
		gap := preemptGap
		preemptGap = time.Hour                 // before the endpoints' goroutines start
		t.Cleanup(func() { preemptGap = gap }) // after they have stopped
		pr := openPair(t, prov, Options{})
		if pr.srv.waitFD < 0 {
			t.Skipf("SKIP provider %s: its CQ has no wait fd (the progress goroutine polls with a backoff)", prov)
		}
		k, _ := pr.ctl.add(4096, transport.RightRead|transport.RightWrite)
		buf := make([]byte, 256)
		for i := 0; i < 300; i++ {
			if err := pr.p.Get(k, 0, buf); err != nil {
				t.Fatal(err)
			}
			if i%3 == 0 {
				// An asynchronous put too: completed by the client's
				// progress goroutine rather than a caller.
				if err := pr.p.PutAsync(k, 256, buf).Wait(); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, x := range []struct {
			side string
			e    *Endpoint
		}{{"server", pr.srv}, {"client", pr.cli}} {
			b0 := x.e.blocks.Load()
			deadline := time.Now().Add(20 * time.Second)
			for x.e.blocks.Load() < b0+2 {
				if time.Now().After(deadline) {
					t.Fatalf("provider %s: the %s's progress goroutine blocked %d times in 20 s after the stream, want 2 (it keeps polling)", prov, x.side, x.e.blocks.Load()-b0)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	})
}

// TestProgressPollsInStream: in a stream of 256-byte gets over
// tcp;ofi_rxm (manual progress: the server's endpoint serves a read only
// while its progress goroutine calls into the CQ) the server's progress
// goroutine keeps polling between requests instead of blocking and
// being woken for each. A host too busy to leave the pollers their
// cores (a preemption while polling shortens the windows) is reported as
// a skip with the figures.
func TestProgressPollsInStream(t *testing.T) {
	// slowGet: a get slower than this on average leaves the server's
	// polling window (20-200 us) no request to catch.
	const slowGet = 100 * time.Microsecond
	const prov, n = "tcp;ofi_rxm", 2000
	pr := openPair(t, prov, Options{})
	if pr.srv.waitFD < 0 {
		t.Skipf("SKIP provider %s: its CQ has no wait fd here", prov)
	}
	k, _ := pr.ctl.add(4096, transport.RightRead)
	buf := make([]byte, 256)
	var blocks, parks int64
	for round := 0; round < 5; round++ {
		c0, c1 := pr.srv.crowded.Load(), pr.cli.crowded.Load()
		b0, p0 := pr.srv.blocks.Load(), pr.cli.parks.Load()
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := pr.p.Get(k, 0, buf); err != nil {
				t.Fatal(err)
			}
		}
		took := time.Since(start)
		blocks, parks = pr.srv.blocks.Load()-b0, pr.cli.parks.Load()-p0
		if pr.srv.crowded.Load() != c0 || pr.cli.crowded.Load() != c1 {
			t.Logf("round %d: a poller was preempted; %d gets in %v, server blocked %d times, client parked %d", round, n, took, blocks, parks)
			continue
		}
		t.Logf("round %d: %d gets in %v (%v each), server blocked %d times, client parked %d", round, n, took, took/n, blocks, parks)
		if took/n > slowGet {
			// Requests further apart than the polling windows (at most
			// 200 us) let the server block between them by design: a
			// host this slow (both cores busy, the race detector) shows
			// nothing about polling.
			continue
		}
		if blocks > n/4 {
			t.Fatalf("the server's progress goroutine blocked %d times in %d gets with nothing preempted, want at most %d: it does not poll between requests", blocks, n, n/4)
		}
		return
	}
	t.Skipf("SKIP: every round had a poller preempted or took over %v a get (host too busy to measure polling); last: server blocked %d times, client parked %d in %d gets", slowGet, blocks, parks, n)
}

// TestHostCrowded: a poller's gap counts as a preemption by its CPU
// pressure reading: high pressure or none readable is crowded, low is not.
func TestHostCrowded(t *testing.T) {
	file := pressureFile
	t.Cleanup(func() { pressureFile = file; pressureAt.Store(0) })
	dir := t.TempDir()
	for _, c := range []struct {
		name, text string
		want       bool
	}{
		{"busy", "some avg10=94.00 avg60=95.38 avg300=96.54 total=2662184149\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", true},
		{"quiet", "some avg10=3.10 avg60=2.00 avg300=1.00 total=12345\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", false},
		{"garbled", "nothing here\n", true},
		{"missing", "", true},
	} {
		pressureFile = filepath.Join(dir, c.name)
		if c.text != "" {
			if err := os.WriteFile(pressureFile, []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		pressureAt.Store(0) // read again
		if got := hostCrowded(); got != c.want {
			t.Errorf("%s: hostCrowded() = %v, want %v", c.name, got, c.want)
		}
	}
}
