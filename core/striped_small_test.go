package core_test

import (
	"bytes"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/wire"
)

// countGets counts the gets and puts a memory server answered.
type countGets struct{ gets, puts atomic.Int64 }

func (c *countGets) Request(op wire.Op, status uint32, read, written uint64) {
	switch op {
	case wire.OpGet:
		c.gets.Add(1)
	case wire.OpPut:
		c.puts.Add(1)
	}
}

// TestStripedSmallRequestIsOneRoundTrip: on an item striped over two
// memory servers, a blocking get or put inside one interleave block is one
// request to the server holding the block, sent on the first idle
// connection of the client's pool, as on an unstriped item (so that a
// thread's back-to-back calls find that server end still polling); one
// straddling a block boundary is a request to each server.
func TestStripedSmallRequestIsOneRoundTrip(t *testing.T) {
	const block = 64 << 10
	dir := t.TempDir()
	tokenFile := writeToken(t, "striped-small")
	meta := startFamd(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: "striped-small", Role: "metadata",
		InterleaveSize: block, ShmDir: filepath.Join(dir, "meta-shm"), ServerToken: "striped-small-server"})
	var counts [2]countGets
	for i := range counts {
		m, err := embed.StartMemory(embed.MemoryOptions{DataDir: filepath.Join(dir, "mem", string(rune('a'+i))),
			ShmDir: filepath.Join(dir, "shm", string(rune('a'+i))), TCPAddr: "127.0.0.1:0", Join: meta.Addr(),
			Token: "striped-small", ServerToken: "striped-small-server", DataObserver: &counts[i]})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		select {
		case <-m.Joined():
		case <-time.After(60 * time.Second):
			t.Fatal("memory server did not join within 60s")
		}
	}
	f := client(t, "unix:"+meta.SocketPath(), tokenFile)
	defer f.Finalize()
	r, err := f.CreateRegion("small", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 4*block, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	st, err := it.Stat()
	if err != nil || len(st.Servers) != 2 {
		t.Fatalf("item placed on %v (%v), want 2 memory servers", st.Servers, err)
	}
	ctx := f.Default()
	want := bytes.Repeat([]byte("0123456789abcdef"), 16) // 256 B
	got := make([]byte, len(want))
	// Warm up: both servers' clients dialled.
	if err := ctx.Put(make([]byte, 4*block), it, 0); err != nil {
		t.Fatal(err)
	}
	var before [2][2]int64
	snap := func() (s [2][2]int64) {
		for i := range counts {
			s[i] = [2]int64{counts[i].gets.Load(), counts[i].puts.Load()}
		}
		return s
	}
	before = snap()
	framesBefore := core.MemFrames(f)
	const n = 40
	for i := 0; i < n; i++ {
		if err := ctx.Put(want, it, 4096); err != nil {
			t.Fatal(err)
		}
		if err := ctx.Get(got, it, 4096); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read back %q, %v", got, err)
		}
	}
	after := snap()
	var touched []int
	for i := range counts {
		dg, dp := after[i][0]-before[i][0], after[i][1]-before[i][1]
		switch {
		case dg == n && dp == n:
			touched = append(touched, i)
		case dg == 0 && dp == 0:
		default:
			t.Fatalf("memory server %d answered %d gets and %d puts for %d of each inside one block", i, dg, dp, n)
		}
	}
	if len(touched) != 1 {
		t.Fatalf("%d servers answered the in-block requests, want 1", len(touched))
	}
	// All on one connection: the first idle one.
	framesAfter := core.MemFrames(f)
	for id, fr := range framesAfter {
		for k := range fr {
			d := fr[k] - framesBefore[id][k]
			if k == 0 && d != 0 && d != 2*n || k > 0 && d != 0 {
				t.Fatalf("memory server %d: connection %d carried %d of the %d in-block requests; want all on connection 0 of one server",
					id, k, d, 2*n)
			}
		}
	}
	// A request straddling a block boundary is one request to each server.
	before = snap()
	if err := ctx.Get(got, it, block-100); err != nil {
		t.Fatal(err)
	}
	after = snap()
	for i := range counts {
		if d := after[i][0] - before[i][0]; d != 1 {
			t.Fatalf("memory server %d answered %d gets for one straddling the boundary, want 1", i, d)
		}
	}
}
