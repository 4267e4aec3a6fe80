package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/metadata"
	"github.com/gofam/openfam/core/rpc"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// heldRebuilder stands in for the memory servers' rebuild call: a
// rebuild stays at half way until release is closed.
type heldRebuilder struct {
	release chan struct{}
	mu      sync.Mutex
	started map[uint64]bool // region ids
}

func (h *heldRebuilder) StartRebuild(_ context.Context, _ uint64, rec metadata.Region, _ uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.started[rec.ID] = true
	return nil
}

func (h *heldRebuilder) RebuildProgress(_ context.Context, _, regionID uint64) (rpc.RebuildProgress, error) {
	h.mu.Lock()
	ok := h.started[regionID]
	h.mu.Unlock()
	if !ok {
		return rpc.RebuildProgress{}, fmt.Errorf("no rebuild of region %d runs", regionID)
	}
	select {
	case <-h.release:
		return rpc.RebuildProgress{Done: 1 << 20, Total: 1 << 20, Finished: true}, nil
	default:
		return rpc.RebuildProgress{Done: 1 << 19, Total: 1 << 20}, nil
	}
}

// serversJSON is `famctl --json servers` as these tests read it.
type serversJSON struct {
	MemoryServers []memoryServerJSON `json:"memory_servers"`
	Redundancy    redundancySummary  `json:"redundancy"`
}

// pollJSON runs `famctl --json args` until ok accepts its output, for up
// to 60 s (a deadline for a loaded machine, not a measurement).
func pollJSON[T any](t *testing.T, f *famdServer, what string, ok func(T) bool, args ...string) T {
	t.Helper()
	var v T
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var cur T
		f.okJSON(t, &cur, args...)
		v = cur
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 60s; last: %+v", what, v)
		}
	}
}

// A memory server of a RAID1 region stops: famctl servers shows it down
// and the region degraded; it comes back: rebuilding with its progress,
// then up and the region ok, in the text and --json forms.
func TestServersShowDownAndRebuild(t *testing.T) {
	dir := t.TempDir()
	meta, err := embed.Start(embed.Options{Role: "metadata", InterleaveSize: 64 << 10, ShmDir: filepath.Join(dir, "meta-shm"),
		Health: rpc.HealthOptions{Interval: 50 * time.Millisecond, Settle: 10 * time.Millisecond, PollInterval: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	rb := &heldRebuilder{release: make(chan struct{}), started: map[uint64]bool{}}
	meta.Cluster().SetRebuilder(rb)
	startMem := func(k int) *embed.Memory {
		d := filepath.Join(dir, fmt.Sprint("mem", k))
		m, err := embed.StartMemory(embed.MemoryOptions{DataDir: d, ShmDir: d + "-shm", TCPAddr: "127.0.0.1:0",
			Join: "unix:" + meta.SocketPath(), Token: testToken})
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
	mems := []*embed.Memory{startMem(0), startMem(1)}
	f := &famdServer{sock: meta.SocketPath(), dataDir: meta.DataDir()}

	conn, err := rpc.DialUnix(f.sock, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := pb.NewFamClient(conn).CreateRegion(ctx, &pb.CreateRegionRequest{Name: "mirrored", Size: 1 << 20, Mode: 0o600,
		Attr: &pb.RegionAttr{Redundancy: 2}}) // FAM_REDUNDANCY_RAID1
	if err != nil || rep.GetErr() != nil {
		t.Fatalf("creating a RAID1 region: %v %v", err, rep.GetErr())
	}
	f.ok(t, "create-region", "plain", "1M")

	var srv serversJSON
	f.okJSON(t, &srv, "servers")
	if len(srv.MemoryServers) != 2 || srv.MemoryServers[0].State != "up" || srv.MemoryServers[1].State != "up" || srv.Redundancy.State != "ok" {
		t.Fatalf("servers --json with every server up: %+v", srv)
	}

	down := mems[1].ID()
	mems[1].Close()
	srv = pollJSON(t, f, "server declared down", func(s serversJSON) bool {
		return len(s.MemoryServers) == 2 && s.MemoryServers[1].State == "down"
	}, "servers")
	if m := srv.MemoryServers[1]; m.ID != down || m.StaleRegions != 1 || m.LastError == "" || m.StateSince == "" ||
		srv.Redundancy.State != "degraded" || !slices.Equal(srv.Redundancy.Degraded, []string{"mirrored"}) {
		t.Fatalf("servers --json with server %d down: %+v", down, srv)
	}
	var regs struct {
		Regions []regionJSON `json:"regions"`
	}
	f.okJSON(t, &regs, "regions")
	for _, r := range regs.Regions {
		switch r.Name {
		case "mirrored":
			if r.RedundancyState != "degraded" || !slices.Equal(r.StaleServers, []uint64{down}) {
				t.Errorf("regions --json, the RAID1 region: %+v", r)
			}
		case "plain":
			if r.RedundancyState != "ok" || len(r.StaleServers) != 0 {
				t.Errorf("regions --json, a region without redundancy: %+v", r)
			}
		}
	}
	out := f.ok(t, "servers")
	if row := rowFor(t, out[strings.Index(out, "ID "):], 0, fmt.Sprint(down)); row[7] != "down" {
		t.Errorf("servers table row of the down server: %v", row)
	}
	if row := rowFor(t, f.ok(t, "regions"), 1, "mirrored"); row[len(row)-1] != "degraded" {
		t.Errorf("regions table row of the RAID1 region: %v", row)
	}

	// The server comes back (same identity): rebuilding, held at 50%.
	mems[1] = startMem(1)
	srv = pollJSON(t, f, "server rebuilding at 50%", func(s serversJSON) bool {
		return len(s.MemoryServers) == 2 && s.MemoryServers[1].State == "rebuilding" && s.MemoryServers[1].RebuildPercent == 50
	}, "servers")
	if srv.Redundancy.State != "rebuilding" || !slices.Equal(srv.Redundancy.Rebuilding, []string{"mirrored"}) {
		t.Fatalf("servers --json while rebuilding: %+v", srv)
	}
	out = f.ok(t, "servers")
	if row := rowFor(t, out[strings.Index(out, "ID "):], 0, fmt.Sprint(down)); row[7] != "rebuilding(50%)" {
		t.Errorf("servers table row of the rebuilding server: %v", row)
	}
	if row := rowFor(t, f.ok(t, "regions"), 1, "mirrored"); row[len(row)-1] != "rebuilding(50%)" {
		t.Errorf("regions table row of the RAID1 region being rebuilt: %v", row)
	}

	close(rb.release)
	srv = pollJSON(t, f, "server up after its rebuild", func(s serversJSON) bool {
		return len(s.MemoryServers) == 2 && s.MemoryServers[1].State == "up"
	}, "servers")
	if m := srv.MemoryServers[1]; m.StaleRegions != 0 || m.RebuildPercent != 100 || srv.Redundancy.State != "ok" {
		t.Fatalf("servers --json after the rebuild: %+v", srv)
	}
}
