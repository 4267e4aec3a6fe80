package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/memserver"
	"github.com/gofam/openfam/core/metadata"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// fastHealth probes often so that the tests finish soon; the deadlines
// they wait with stay generous.
var fastHealth = HealthOptions{Interval: 50 * time.Millisecond, ProbeTimeout: 2 * time.Second, FailedProbes: 3,
	Settle: 10 * time.Millisecond, PollInterval: 10 * time.Millisecond, RetryInterval: 50 * time.Millisecond}

// fakeRebuilder stands in for the memory servers' rebuild call: each
// progress question moves a started rebuild a quarter further.
type fakeRebuilder struct {
	mu       sync.Mutex
	started  map[copyKey]uint64 // from
	done     map[copyKey]uint64
	failNext bool // the next StartRebuild fails
	calls    int
}

const fakeTotal = 1 << 20

func newFakeRebuilder() *fakeRebuilder {
	return &fakeRebuilder{started: map[copyKey]uint64{}, done: map[copyKey]uint64{}}
}

func (f *fakeRebuilder) StartRebuild(_ context.Context, target uint64, rec metadata.Region, from uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.failNext {
		f.failNext = false
		return errors.New("injected start failure")
	}
	k := copyKey{rec.ID, target}
	f.started[k] = from
	f.done[k] = from
	return nil
}

func (f *fakeRebuilder) RebuildProgress(_ context.Context, target, regionID uint64) (RebuildProgress, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := copyKey{regionID, target}
	if _, ok := f.started[k]; !ok {
		return RebuildProgress{}, errors.New("no rebuild of that region runs")
	}
	f.done[k] = min(f.done[k]+fakeTotal/4, fakeTotal)
	return RebuildProgress{Done: f.done[k], Total: fakeTotal, Finished: f.done[k] == fakeTotal}, nil
}

func (f *fakeRebuilder) startedFor(k copyKey) (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	from, ok := f.started[k]
	return from, ok
}

// memHost is a memory server of a test: its data directory outlives
// restarts, its control service can be stopped and served again.
type memHost struct {
	t       *testing.T
	dataDir string
	ms      *memserver.Server
	addr    string
	stop    func()
}

func startMemHost(t *testing.T) *memHost {
	h := &memHost{t: t, dataDir: t.TempDir()}
	h.restart()
	return h
}

// restart starts a new incarnation (new secret, same uuid) on a new port.
func (h *memHost) restart() {
	h.t.Helper()
	if h.ms != nil {
		h.stop()
		h.ms.Close()
	}
	ms, err := memserver.New(memserver.Options{DataDir: h.dataDir, ShmDir: h.t.TempDir()})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(ms.Close)
	h.ms = ms
	h.addr, h.stop = serveMemory(h.t, ms, "127.0.0.1:0")
	h.t.Cleanup(h.stop)
}

func (h *memHost) joinReq() *pb.JoinRequest {
	return &pb.JoinRequest{Uuid: h.ms.UUID(), Control: h.addr, DataTcp: "127.0.0.1:1", Secret: []byte(h.ms.Secret())}
}

// waitState polls until server id is in state want.
func waitState(t *testing.T, c *Cluster, id uint64, want pb.ServerState) {
	t.Helper()
	for deadline := time.Now().Add(clusterDeadline); c.ServerState(id) != want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("memory server %d is %v, not %v, %v on", id, c.ServerState(id), want, clusterDeadline)
		}
	}
}

// stateLog records the state changes a Cluster announces.
type stateLog struct {
	mu     sync.Mutex
	events []pb.ServerState
}

func (l *stateLog) add(_ uint64, st pb.ServerState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, st)
}

func (l *stateLog) has(seq ...pb.ServerState) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := 0
	for _, e := range l.events {
		if i < len(seq) && e == seq[i] {
			i++
		}
	}
	return i == len(seq)
}

func raid1Region(id uint64, servers ...uint64) metadata.Region {
	return metadata.Region{ID: id, Name: "r", Size: 1 << 20, Redundancy: uint8(core.RAID1), InterleaveSize: 4096, Servers: servers}
}

// A memory server that stops answering is declared down within a bounded
// time, its redundant regions turn degraded, and that survives a restart
// of the metadata famd; when the server comes back (a restart: it joins
// again), famd rebuilds its copies and marks it up, and that survives a
// restart too.
func TestServerDownRebuiltAndPersisted(t *testing.T) {
	a, b := startMemHost(t), startMemHost(t)
	dir := t.TempDir()
	var lmu sync.Mutex
	var lines []string
	logf := func(format string, args ...any) {
		lmu.Lock()
		defer lmu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	logged := func(sub string) bool {
		lmu.Lock()
		defer lmu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, sub) {
				return true
			}
		}
		return false
	}
	open := func() (*Cluster, *fakeRebuilder, *stateLog) {
		c, err := NewCluster(ClusterOptions{DataDir: dir, Role: "metadata", Health: fastHealth, Timeout: 5 * time.Second, Logf: logf})
		if err != nil {
			t.Fatal(err)
		}
		rb := newFakeRebuilder()
		c.SetRebuilder(rb)
		c.SetRegionSource(func() ([]metadata.Region, error) {
			return []metadata.Region{raid1Region(7, 1, 2), {ID: 8, Name: "plain", Size: 1 << 20, Servers: []uint64{1, 2}}}, nil
		})
		log := &stateLog{}
		c.OnServerState(log.add)
		return c, rb, log
	}
	c, _, log := open()
	ida, err := c.join(a.joinReq())
	if err != nil {
		t.Fatal(err)
	}
	idb, err := c.join(b.joinReq())
	if err != nil || ida != 1 || idb != 2 {
		t.Fatalf("join: ids %d %d, %v", ida, idb, err)
	}
	region := func(c *Cluster, id uint64) *pb.RegionInfo {
		ri := &pb.RegionInfo{Id: id, Servers: []uint64{1, 2}, Attr: &pb.RegionAttr{Redundancy: uint32(core.RAID1)}}
		if id == 8 {
			ri.Attr.Redundancy = uint32(core.RedundancyNone)
		}
		c.describeRegion(ri)
		return ri
	}
	if ri := region(c, 7); ri.GetRedundancyState() != pb.RegionRedundancyState_REGION_REDUNDANCY_OK {
		t.Fatalf("region with every server up: %v", ri.GetRedundancyState())
	}

	b.stop()
	start := time.Now()
	waitState(t, c, idb, pb.ServerState_SERVER_DOWN)
	t.Logf("declared down %v after its control service stopped", time.Since(start).Round(time.Millisecond))
	if !log.has(pb.ServerState_SERVER_DOWN) {
		t.Fatalf("subscribers were not told: %v", log.events)
	}
	if c.ServerState(ida) != pb.ServerState_SERVER_UP {
		t.Fatalf("the server that answers is %v", c.ServerState(ida))
	}
	ri := region(c, 7)
	if ri.GetRedundancyState() != pb.RegionRedundancyState_REGION_REDUNDANCY_DEGRADED || len(ri.GetStaleServers()) != 1 || ri.GetStaleServers()[0] != idb {
		t.Fatalf("RAID1 region with a server down: %v, stale %v", ri.GetRedundancyState(), ri.GetStaleServers())
	}
	if ri := region(c, 8); ri.GetRedundancyState() != pb.RegionRedundancyState_REGION_REDUNDANCY_OK || len(ri.GetStaleServers()) != 0 {
		t.Fatalf("a region without redundancy has no copies to be stale: %v %v", ri.GetRedundancyState(), ri.GetStaleServers())
	}
	for _, si := range c.list(false) {
		if si.GetId() == idb && (si.GetState() != pb.ServerState_SERVER_DOWN || si.GetStaleRegions() != 1 || si.GetLastError() == "") {
			t.Fatalf("server listing: %v", si)
		}
	}

	// famd restarts: the server is still down, its copy still stale.
	c.Close()
	c, rb, log := open()
	if c.ServerState(idb) != pb.ServerState_SERVER_DOWN {
		t.Fatalf("after famd's restart the down server is %v", c.ServerState(idb))
	}
	if ri := region(c, 7); ri.GetRedundancyState() != pb.RegionRedundancyState_REGION_REDUNDANCY_DEGRADED {
		t.Fatalf("after famd's restart the region is %v", ri.GetRedundancyState())
	}

	// The server restarts and joins again: rebuilding, then up.
	b.restart()
	if _, err := c.join(b.joinReq()); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, idb, pb.ServerState_SERVER_UP)
	if !log.has(pb.ServerState_SERVER_REBUILDING, pb.ServerState_SERVER_UP) {
		t.Fatalf("transitions told: %v, want rebuilding then up", log.events)
	}
	if from, ok := rb.startedFor(copyKey{7, idb}); !ok || from != 0 {
		t.Fatalf("rebuild of region 7 on server %d: started %v from %d", idb, ok, from)
	}
	if _, ok := rb.startedFor(copyKey{8, idb}); ok {
		t.Fatal("a region without redundancy was rebuilt")
	}
	if ri := region(c, 7); ri.GetRedundancyState() != pb.RegionRedundancyState_REGION_REDUNDANCY_OK {
		t.Fatalf("after the rebuild the region is %v, stale %v", ri.GetRedundancyState(), ri.GetStaleServers())
	}
	for _, want := range []string{"memory server 2 suspect -> down: declared down after 3 failed probes",
		"memory server 2 down -> rebuilding", `rebuilding region 7 ("r"): 50% (512.0 KiB of 1.0 MiB)`,
		`region 7 ("r") rebuilt: 1.0 MiB`, "memory server 2 rebuilding -> up: rebuilt 1 redundant regions"} {
		if !logged(want) {
			t.Errorf("famd did not log %q; it logged:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	c.Close()
	c, _, _ = open()
	defer c.Close()
	if st := c.ServerState(idb); st != pb.ServerState_SERVER_UP {
		t.Fatalf("after the rebuild and famd's restart the server is %v", st)
	}
	if ri := region(c, 7); ri.GetRedundancyState() != pb.RegionRedundancyState_REGION_REDUNDANCY_OK {
		t.Fatalf("after the rebuild and famd's restart the region is %v", ri.GetRedundancyState())
	}
}

// A client's report makes famd probe at once: a server that does not
// answer is down after that one probe, without waiting for FailedProbes;
// a server that answers stays up whatever clients say.
func TestReportProbesAtOnce(t *testing.T) {
	a, b := startMemHost(t), startMemHost(t)
	slow := fastHealth
	slow.Interval = time.Hour // only reports probe
	slow.FailedProbes = 1000
	c, err := NewCluster(ClusterOptions{DataDir: t.TempDir(), Role: "metadata", Health: slow})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ida, _ := c.join(a.joinReq())
	idb, _ := c.join(b.joinReq())
	if err := c.health.report(ida, "test: healthy server reported", "test", false); err != nil {
		t.Fatal(err)
	}
	b.stop()
	if err := c.health.report(idb, "test: connection refused", "test", false); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, idb, pb.ServerState_SERVER_DOWN)
	// The healthy server's probe ran before b's (reports are probed in
	// order), so its verdict is in.
	if st := c.ServerState(ida); st != pb.ServerState_SERVER_UP {
		t.Fatalf("a server that answers was reported and is now %v", st)
	}
	if err := c.health.report(99, "no such server", "test", false); err == nil {
		t.Fatal("a report of an unknown server was taken")
	}
}

// A rebuild that fails to start is tried again; famd restarting in the
// middle of a rebuild resumes from the recorded watermark when the
// server's incarnation is the same.
func TestRebuildRetriesAndResumes(t *testing.T) {
	a, b := startMemHost(t), startMemHost(t)
	dir := t.TempDir()
	c, err := NewCluster(ClusterOptions{DataDir: dir, Role: "metadata", Health: fastHealth})
	if err != nil {
		t.Fatal(err)
	}
	c.SetRegionSource(func() ([]metadata.Region, error) { return []metadata.Region{raid1Region(3, 1, 2)}, nil })
	_, _ = c.join(a.joinReq())
	idb, _ := c.join(b.joinReq())
	b.stop()
	waitState(t, c, idb, pb.ServerState_SERVER_DOWN)
	// Record a half-done rebuild of this incarnation, as a famd that
	// stopped mid-rebuild leaves it.
	c.health.mu.Lock()
	cp := c.health.copies[copyKey{3, idb}]
	cp.State, cp.Watermark, cp.Total, cp.Incarnation = copyRebuilding, fakeTotal/2, fakeTotal, incarnation(b.ms.Secret())
	if err := c.health.store.putCopies(map[copyKey]*copyRecord{{3, idb}: cp}); err != nil {
		t.Fatal(err)
	}
	c.health.mu.Unlock()
	c.Close()

	c, err = NewCluster(ClusterOptions{DataDir: dir, Role: "metadata", Health: fastHealth})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rb := newFakeRebuilder()
	rb.failNext = true
	c.SetRebuilder(rb)
	c.SetRegionSource(func() ([]metadata.Region, error) { return []metadata.Region{raid1Region(3, 1, 2)}, nil })
	// The same incarnation answers again (a network cut healed): no
	// rejoin, the probe finds it.
	_, b.stop = serveMemory(t, b.ms, b.addr)
	t.Cleanup(b.stop)
	waitState(t, c, idb, pb.ServerState_SERVER_UP)
	rb.mu.Lock()
	calls := rb.calls
	rb.mu.Unlock()
	if calls < 2 {
		t.Fatalf("%d StartRebuild calls: the failed one was not retried", calls)
	}
	if from, _ := rb.startedFor(copyKey{3, idb}); from != fakeTotal/2 {
		t.Fatalf("rebuild resumed from %d, want the watermark %d", from, fakeTotal/2)
	}
}

// Without a rebuild implementation a server with stale copies stays
// rebuilding (never up with stale copies) and the region stays degraded.
func TestNoRebuilderNeverMarksUp(t *testing.T) {
	a, b := startMemHost(t), startMemHost(t)
	c, err := NewCluster(ClusterOptions{DataDir: t.TempDir(), Role: "metadata", Health: fastHealth})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetRebuilder(nil) // whatever famd wires in by default
	c.SetRegionSource(func() ([]metadata.Region, error) { return []metadata.Region{raid1Region(3, 1, 2)}, nil })
	_, _ = c.join(a.joinReq())
	idb, _ := c.join(b.joinReq())
	b.restart()
	if _, err := c.join(b.joinReq()); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, idb, pb.ServerState_SERVER_REBUILDING)
	// Several retry rounds pass; it must still not be up.
	for deadline := time.Now().Add(20 * fastHealth.RetryInterval); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st := c.ServerState(idb); st != pb.ServerState_SERVER_REBUILDING {
			t.Fatalf("without a rebuild implementation the server became %v", st)
		}
	}
	ri := &pb.RegionInfo{Id: 3, Servers: []uint64{1, 2}, Attr: &pb.RegionAttr{Redundancy: uint32(core.RAID1)}}
	c.describeRegion(ri)
	if ri.GetRedundancyState() != pb.RegionRedundancyState_REGION_REDUNDANCY_DEGRADED {
		t.Fatalf("region %v", ri.GetRedundancyState())
	}
}

// A server with stale copies is never marked up while famd cannot list
// its regions: it stays down, and recovers once the listing works.
func TestRegionListingFailureKeepsCopiesStale(t *testing.T) {
	a, b := startMemHost(t), startMemHost(t)
	c, err := NewCluster(ClusterOptions{DataDir: t.TempDir(), Role: "metadata", Health: fastHealth})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetRebuilder(newFakeRebuilder())
	var mu sync.Mutex
	broken := false
	c.SetRegionSource(func() ([]metadata.Region, error) {
		mu.Lock()
		defer mu.Unlock()
		if broken {
			return nil, errors.New("injected listing failure")
		}
		return []metadata.Region{raid1Region(3, 1, 2)}, nil
	})
	_, _ = c.join(a.joinReq())
	idb, _ := c.join(b.joinReq())
	b.stop()
	waitState(t, c, idb, pb.ServerState_SERVER_DOWN)
	mu.Lock()
	broken = true
	mu.Unlock()
	_, b.stop = serveMemory(t, b.ms, b.addr)
	t.Cleanup(b.stop)
	for deadline := time.Now().Add(20 * fastHealth.RetryInterval); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st := c.ServerState(idb); st != pb.ServerState_SERVER_DOWN {
			t.Fatalf("with the region listing failing the server with a stale copy became %v", st)
		}
	}
	mu.Lock()
	broken = false
	mu.Unlock()
	waitState(t, c, idb, pb.ServerState_SERVER_UP)
}

// A client's report that it wrote around a server that answers makes
// famd rebuild that server's redundant copies from 0 (not resume: the
// missed write may lie below a watermark) before it is up again.
func TestWroteAroundRebuildsAnsweringServer(t *testing.T) {
	a, b := startMemHost(t), startMemHost(t)
	c, err := NewCluster(ClusterOptions{DataDir: t.TempDir(), Role: "metadata", Health: fastHealth})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rb := newFakeRebuilder()
	c.SetRebuilder(rb)
	c.SetRegionSource(func() ([]metadata.Region, error) { return []metadata.Region{raid1Region(3, 1, 2)}, nil })
	log := &stateLog{}
	c.OnServerState(log.add)
	_, _ = c.join(a.joinReq())
	idb, _ := c.join(b.joinReq())
	if err := c.health.report(idb, "test: put timed out", "test", true); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, idb, pb.ServerState_SERVER_UP)
	if !log.has(pb.ServerState_SERVER_DOWN, pb.ServerState_SERVER_REBUILDING, pb.ServerState_SERVER_UP) {
		t.Fatalf("transitions %v, want down, rebuilding, up", log.events)
	}
	if from, ok := rb.startedFor(copyKey{3, idb}); !ok || from != 0 {
		t.Fatalf("rebuild started %v from %d, want from 0", ok, from)
	}
}

// fakeSessionStream records what a session stream sends.
type fakeSessionStream struct {
	grpc.ServerStream
	sent []*pb.SessionEvent
}

func (f *fakeSessionStream) Send(ev *pb.SessionEvent) error {
	f.sent = append(f.sent, ev)
	return nil
}

// A session queues the latest state per server; waitDelivered reports
// false until every open session sent what was queued, true after.
func TestSessionServerStatesDelivery(t *testing.T) {
	ss := newSessions()
	_, se, _ := ss.open()
	ss.notifyServer(2, pb.ServerState_SERVER_SUSPECT)
	ss.notifyServer(2, pb.ServerState_SERVER_DOWN)
	ss.notifyServer(3, pb.ServerState_SERVER_REBUILDING)
	if ss.waitDelivered(time.Now()) {
		t.Fatal("delivered before the session sent anything")
	}
	var st fakeSessionStream
	if err := se.sendServers(&st); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]pb.ServerState{}
	for _, ev := range st.sent {
		got[ev.GetServerId()] = ev.GetServerState()
	}
	if len(st.sent) != 2 || got[2] != pb.ServerState_SERVER_DOWN || got[3] != pb.ServerState_SERVER_REBUILDING {
		t.Fatalf("sent %v, want the latest state of servers 2 and 3", st.sent)
	}
	if !ss.waitDelivered(time.Now().Add(clusterDeadline)) {
		t.Fatal("not delivered after the session sent it")
	}
	// A session opened later has nothing queued: it holds nothing up.
	ss.open()
	if !ss.waitDelivered(time.Now()) {
		t.Fatal("a new session with nothing queued holds delivery up")
	}
}
