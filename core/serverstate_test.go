package core_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
)

// membershipCluster is a metadata famd with two memory servers that
// probes every 50 ms.
func membershipCluster(t *testing.T, health rpc.HealthOptions) (meta *embed.Famd, mems []*embed.Memory, startMem func(k int) *embed.Memory, tokenFile string) {
	dir := t.TempDir()
	tokenFile = writeToken(t, "membership")
	meta = startFamd(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: "membership", Role: "metadata",
		ShmDir: filepath.Join(dir, "meta-shm"), ServerToken: "membership-server", Health: health})
	startMem = func(k int) *embed.Memory {
		m, err := embed.StartMemory(embed.MemoryOptions{DataDir: filepath.Join(dir, "mem", string(rune('a'+k))),
			ShmDir: filepath.Join(dir, "shm", string(rune('a'+k))), TCPAddr: "127.0.0.1:0", Join: meta.Addr(),
			Token: "membership", ServerToken: "membership-server"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		select {
		case <-m.Joined():
		case <-time.After(60 * time.Second):
			t.Fatal("memory server did not join within 60s")
		}
		return m
	}
	mems = []*embed.Memory{startMem(0), startMem(1)}
	return meta, mems, startMem, tokenFile
}

// When famd declares a memory server down, every client's session hears
// it, a client that connects later learns it in its first events, and
// when the server is back every client holds it up again: all PEs agree.
func TestClientsAgreeOnDownServers(t *testing.T) {
	meta, mems, startMem, tokenFile := membershipCluster(t, rpc.HealthOptions{Interval: 50 * time.Millisecond})
	early := client(t, "unix:"+meta.SocketPath(), tokenFile)
	id := mems[1].ID()
	if core.ServerDown(early, id) {
		t.Fatal("a server that answers is held down")
	}
	mems[1].Close()
	waitFor(t, "the early client hears the server is down", func() bool { return core.ServerDown(early, id) })
	if core.ServerDown(early, mems[0].ID()) {
		t.Fatal("the other server is held down too")
	}
	late := client(t, "unix:"+meta.SocketPath(), tokenFile)
	// Initialize waits for the session's first event; the states follow
	// it on the stream, so the late client may need a moment.
	waitFor(t, "a client connected later learns the down server", func() bool { return core.ServerDown(late, id) })

	// Back with no redundant region on it: up at once (no rebuild).
	mems[1] = startMem(1)
	for _, f := range []*core.Fam{early, late} {
		waitFor(t, "clients hold the server up again", func() bool { return !core.ServerDown(f, id) && !core.ServerRebuilding(f, id) })
	}
}

// A client's suspicion reaches famd, which probes at once: with probes
// otherwise an hour apart, only the report can have declared the server
// down, and the client hears it back on its session.
func TestSuspectReportsToFamd(t *testing.T) {
	meta, mems, _, tokenFile := membershipCluster(t, rpc.HealthOptions{Interval: time.Hour, FailedProbes: 1000})
	f := client(t, "unix:"+meta.SocketPath(), tokenFile)
	up, id := mems[0].ID(), mems[1].ID()
	// A healthy server reported: famd's probe finds it answering.
	core.SuspectServer(f, up, errors.New("test: spurious timeout"))
	mems[1].Close()
	core.SuspectServer(f, id, errors.New("test: connection refused"))
	waitFor(t, "the reported server is declared down", func() bool { return core.ServerDown(f, id) })
	if core.ServerDown(f, up) || meta.Cluster().IsDown(up) {
		t.Fatal("a server that answers its probe was declared down on a client's word")
	}
}

// A client that completed a write without a server says so, and famd
// then holds that server's copy of a RAID1 region stale although the
// server answers: with no rebuild implementation plugged in, it stays
// rebuilding (writes reach it, reads avoid it) and every client hears it.
func TestWroteAroundMakesCopiesStale(t *testing.T) {
	meta, mems, _, tokenFile := membershipCluster(t, rpc.HealthOptions{Interval: 50 * time.Millisecond})
	// Whatever rebuild famd wires in by default, this test holds the
	// server in its rebuilding state by having none.
	meta.Cluster().SetRebuilder(nil)
	f := client(t, "unix:"+meta.SocketPath(), tokenFile)
	r, err := f.CreateRegion("mirrored", 1<<20, 0o600, core.RegionAttr{Redundancy: core.RAID1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	id := mems[1].ID()
	core.WroteAround(f, id, errors.New("test: put timed out"))
	waitFor(t, "the client holds the server rebuilding", func() bool { return core.ServerRebuilding(f, id) })
	if core.ServerDown(f, id) || core.ServerRebuilding(f, mems[0].ID()) {
		t.Fatal("states of the servers")
	}
}
