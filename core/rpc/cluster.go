package rpc

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/memserver"
	"github.com/gofam/openfam/core/metadata"
	"github.com/gofam/openfam/core/stripe"
	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// DefaultInterleaveSize is the block size of interleaved regions unless
// famd is told otherwise (OpenFAM's dataitem_interleave_size default).
const DefaultInterleaveSize = core.DefaultInterleaveSize

// ClusterOptions configure a Cluster.
type ClusterOptions struct {
	// DataDir holds the membership file (cluster.json).
	DataDir string
	// Role is "all" (this famd also keeps regions in its own files: those
	// not interleaved, and every region while no memory server has
	// joined) or "metadata" (every region goes to memory servers).
	Role string
	// InterleaveSize is the block size of interleaved regions; 0 means
	// DefaultInterleaveSize.
	InterleaveSize uint64
	// Timeout bounds each call to a memory server; 0 means 10s.
	Timeout time.Duration
	// Logf receives one line per notable event; nil is silent.
	Logf func(format string, args ...any)
	// Token is the cluster token, with which famd itself reaches memory
	// servers' data planes over TCP (backup and restore of their items);
	// without it only servers with a data-plane Unix socket on this host
	// can be reached.
	Token string
	// Health tunes the probes that decide a memory server is down, and
	// rebuilds (issue 16; see health.go).
	Health HealthOptions
}

// Cluster is the metadata service's side of its memory servers: who
// joined (kept in DataDir/cluster.json so that a restarted famd knows its
// servers), where regions go (it is the core.Placer of famd's instance),
// and the keys it grants on them. Safe for concurrent use.
//
// Placement policy: an interleaved region (the default attribute) is
// striped over every memory server that has joined, in server id order,
// in blocks of InterleaveSize; a region created with interleaving
// disabled stays in famd's own files with role "all", and goes to one
// memory server, chosen by a hash of its name, with role "metadata". With
// no memory server joined, role "all" keeps every region itself and role
// "metadata" refuses to create one.
type Cluster struct {
	opts  ClusterOptions
	path  string
	epoch []byte

	mu      sync.Mutex
	members map[uint64]*member
	nextID  uint64

	// omu guards owed: per server id, the revocations that server has not
	// acknowledged, with the incarnation they are owed by.
	omu  sync.Mutex
	owed map[uint64]*owedRevocations

	stop      chan struct{} // closed by Close: ends retryRevokes
	closeOnce sync.Once

	rmu        sync.Mutex // raidSecret (raid.go)
	raidSecret []byte
	// health is the membership of the servers: up, down, rebuilding, and
	// which copies of redundant regions are current (health.go).
	health *health
}

// owedRevocations are keys one incarnation of a memory server (told apart
// by its secret, which is new at every start) still honours because their
// revocation did not reach it. Keys are only ever appended, so a retry that
// sent the first n may drop exactly those once the server acknowledged
// them.
type owedRevocations struct {
	secret string
	keys   [][]byte
}

// memberRecord is what cluster.json keeps of a memory server.
type memberRecord struct {
	ID       uint64 `json:"id"`
	UUID     string `json:"uuid"`
	Control  string `json:"control"`
	DataTCP  string `json:"data_tcp"`
	DataUnix string `json:"data_unix,omitempty"`
	Hostname string `json:"hostname"`
	Secret   string `json:"secret"`
	// Provider and FabricAddr are its libfabric data plane (fabric.go).
	Provider   string `json:"provider,omitempty"`
	FabricAddr []byte `json:"fabric_addr,omitempty"`
}

type member struct {
	rec       memberRecord
	conn      *grpc.ClientConn
	cl        pb.MemoryClient
	reachable bool

	dmu  sync.Mutex
	data *transport.Client // famd's own data-plane client, dialled on first use
}

type clusterFile struct {
	NextID  uint64         `json:"next_id"`
	Servers []memberRecord `json:"servers"`
}

// NewCluster loads the membership of opts.DataDir (none on a first start).
func NewCluster(opts ClusterOptions) (*Cluster, error) {
	switch opts.Role {
	case "all", "metadata":
	default:
		return nil, fmt.Errorf("cluster role must be all or metadata, not %q", opts.Role)
	}
	if opts.InterleaveSize == 0 {
		opts.InterleaveSize = DefaultInterleaveSize
	}
	if opts.InterleaveSize%4096 != 0 {
		return nil, fmt.Errorf("interleave size %d is not a multiple of 4096", opts.InterleaveSize)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	c := &Cluster{opts: opts, path: filepath.Join(opts.DataDir, "cluster.json"), members: map[uint64]*member{}, nextID: 1,
		epoch: make([]byte, 16), owed: map[uint64]*owedRevocations{}, stop: make(chan struct{})}
	_, _ = rand.Read(c.epoch)
	b, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		if err := c.startHealth(); err != nil {
			return nil, err
		}
		go c.retryRevokes()
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	var cf clusterFile
	if err := json.Unmarshal(b, &cf); err != nil {
		return nil, fmt.Errorf("%s: %v", c.path, err)
	}
	c.nextID = max(cf.NextID, 1)
	for _, r := range cf.Servers {
		m, err := dialMember(r)
		if err != nil {
			return nil, err
		}
		c.members[r.ID] = m
		c.nextID = max(c.nextID, r.ID+1)
	}
	if err := c.startHealth(); err != nil {
		return nil, err
	}
	go c.retryRevokes()
	return c, nil
}

func (c *Cluster) logf(format string, args ...any) {
	if c.opts.Logf != nil {
		c.opts.Logf(format, args...)
	}
}

// dialMember connects (lazily: gRPC dials on first call) to a memory
// server's control service with its secret.
func dialMember(r memberRecord) (*member, error) {
	conn, err := grpc.NewClient("passthrough:///"+r.Control,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(memserver.SecretCreds(r.Secret)),
		grpc.WithConnectParams(memberConnectParams))
	if err != nil {
		return nil, fmt.Errorf("memory server %d at %s: %v", r.ID, r.Control, err)
	}
	return &member{rec: r, conn: conn, cl: pb.NewMemoryClient(conn), reachable: true}, nil
}

// saveLocked writes cluster.json atomically. Caller holds c.mu.
func (c *Cluster) saveLocked() error {
	cf := clusterFile{NextID: c.nextID}
	for _, id := range c.idsLocked() {
		cf.Servers = append(cf.Servers, c.members[id].rec)
	}
	b, err := json.MarshalIndent(cf, "", "  ")
	if err != nil {
		return err
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.path)
}

func (c *Cluster) idsLocked() []uint64 {
	ids := make([]uint64, 0, len(c.members))
	for id := range c.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Close closes the connections to memory servers.
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		close(c.stop)
		c.health.close()
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.members {
		m.conn.Close()
		m.dmu.Lock()
		if m.data != nil {
			m.data.Close()
		}
		m.dmu.Unlock()
	}
}

// register records (or re-records, by uuid) a memory server and returns
// its id, and whether it was known (it restarted); join (health.go) calls
// it.
func (c *Cluster) register(req *pb.JoinRequest) (id uint64, rejoin bool, err error) {
	if req.GetUuid() == "" || req.GetControl() == "" || req.GetDataTcp() == "" || len(req.GetSecret()) == 0 {
		return 0, false, errors.New("a joining memory server must give its uuid, control and data addresses and secret")
	}
	r := memberRecord{UUID: req.GetUuid(), Control: req.GetControl(), DataTCP: req.GetDataTcp(),
		DataUnix: req.GetDataUnix(), Hostname: req.GetHostname(), Secret: string(req.GetSecret()),
		Provider: req.GetProvider(), FabricAddr: req.GetFabricAddr()}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, m := range c.members {
		if m.rec.UUID == r.UUID {
			r.ID = id
		}
	}
	if r.ID == 0 {
		r.ID = c.nextID
		c.nextID++
	}
	m, err := dialMember(r)
	if err != nil {
		return 0, false, err
	}
	rejoin = c.members[r.ID] != nil
	if old := c.members[r.ID]; old != nil {
		// A new secret is a new incarnation (the secret is new at every
		// start of a memory server).
		rejoin = old.rec.Secret != r.Secret
		// A rejoining server restarted and holds no grants: the
		// revocations it owed are moot.
		old.conn.Close()
		old.dmu.Lock()
		if old.data != nil {
			old.data.Close()
		}
		old.dmu.Unlock()
	}
	c.members[r.ID] = m
	if err := c.saveLocked(); err != nil {
		return 0, false, fmt.Errorf("recording memory server %d: %v", r.ID, err)
	}
	c.logf("famd: memory server %d joined: control %s, data plane %s (host %s)", r.ID, r.Control, r.DataTCP, r.Hostname)
	return r.ID, rejoin, nil
}

// list describes the members; with probe it asks each for its usage (up
// to 2 s for one that does not answer), which clients looking for
// addresses do without.
func (c *Cluster) list(probe bool) []*pb.ServerInfo {
	c.mu.Lock()
	ids := c.idsLocked()
	ms := make([]*member, len(ids))
	for i, id := range ids {
		ms[i] = c.members[id]
	}
	c.mu.Unlock()
	out := make([]*pb.ServerInfo, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		out[i] = &pb.ServerInfo{Id: m.rec.ID, DataTcp: m.rec.DataTCP, DataUnix: m.rec.DataUnix,
			Hostname: m.rec.Hostname, Control: m.rec.Control, Provider: m.rec.Provider, FabricAddr: m.rec.FabricAddr}
		c.describeServer(out[i])
		if !probe {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), min(c.opts.Timeout, 2*time.Second))
			defer cancel()
			info, err := m.cl.Info(ctx, &pb.InfoRequest{})
			if err == nil {
				out[i].Reachable, out[i].Segments, out[i].Bytes = true, info.GetRegions(), info.GetBytesTotal()
			}
		}()
	}
	wg.Wait()
	return out
}

// members returns the members with the given ids, failing on unknown ones.
func (c *Cluster) pick(ids []uint64) ([]*member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ms := make([]*member, len(ids))
	for i, id := range ids {
		m, ok := c.members[id]
		if !ok {
			return nil, fmt.Errorf("memory server %d is not registered", id)
		}
		ms[i] = m
	}
	return ms, nil
}

// onServers runs fn on every server of ids in parallel and returns the
// first failure, naming the server. A reply's FamError counts as failure.
func (c *Cluster) onServers(ids []uint64, fn func(ctx context.Context, j int, m *member) (*pb.Reply, error)) error {
	ms, err := c.pick(ids)
	if err != nil {
		return err
	}
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for j, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
			defer cancel()
			rep, err := fn(ctx, j, m)
			switch {
			case err != nil:
				errs[j] = fmt.Errorf("memory server %d at %s: %v", m.rec.ID, m.rec.Control, err)
			case rep.GetErr().GetCode() != 0:
				// The server's code travels on (no space, say) so that the
				// core can report it.
				errs[j] = core.Errorf(core.Code(rep.GetErr().GetCode()), "", "memory server %d at %s: %s", m.rec.ID, m.rec.Control, rep.GetErr().GetMsg())
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func layoutOf(rec metadata.Region) stripe.Layout {
	return stripe.Layout{Block: rec.InterleaveSize, Servers: len(rec.Servers)}
}

func segmentOf(rec metadata.Region) *pb.Segment {
	return &pb.Segment{RegionId: rec.ID, Size: layoutOf(rec).SegmentSize(core.Capacity(rec)),
		Persistent: core.MemoryType(rec.MemoryType) == core.Persistent}
}

// Place implements core.Placer with the policy described on Cluster.
func (c *Cluster) Place(name string, size uint64, attr core.RegionAttr) ([]uint64, uint64, error) {
	c.mu.Lock()
	ids := c.idsLocked()
	c.mu.Unlock()
	if attr.Redundancy == core.RAID1 || attr.Redundancy == core.RAID5 {
		return c.placeRedundant(attr, ids) // raid.go
	}
	if len(ids) == 0 {
		if c.opts.Role == "metadata" {
			return nil, 0, errors.New("no memory server has joined this metadata service (start famd --role memory --join ...)")
		}
		return nil, c.opts.InterleaveSize, nil
	}
	if attr.Interleave == core.InterleaveDisable {
		if c.opts.Role == "all" {
			return nil, c.opts.InterleaveSize, nil
		}
		h := fnv.New32a()
		h.Write([]byte(name))
		return []uint64{ids[int(h.Sum32()%uint32(len(ids)))]}, c.opts.InterleaveSize, nil
	}
	return ids, c.opts.InterleaveSize, nil
}

// Create implements core.Placer: a segment on each server; on failure
// the ones made are dropped again.
func (c *Cluster) Create(rec metadata.Region) error {
	segs, err := c.segsFor(rec) // raid.go: each server's own description
	if err != nil {
		return err
	}
	err = c.onServers(rec.Servers, func(ctx context.Context, j int, m *member) (*pb.Reply, error) {
		seg := proto.Clone(segs[j]).(*pb.Segment)
		seg.Fresh = true // new segments: current by definition
		return m.cl.Ensure(ctx, &pb.SegmentRequest{Segment: seg})
	})
	if err != nil {
		c.Destroy(rec)
	}
	return err
}

// Resize implements core.Placer.
func (c *Cluster) Resize(rec metadata.Region) error {
	segs, err := c.segsFor(rec)
	if err != nil {
		return err
	}
	return c.onServers(rec.Servers, func(ctx context.Context, j int, m *member) (*pb.Reply, error) {
		return m.cl.Ensure(ctx, &pb.SegmentRequest{Segment: segs[j]})
	})
}

// Destroy implements core.Placer; a server that cannot be reached keeps
// its segment file (logged), which holds no reachable data.
func (c *Cluster) Destroy(rec metadata.Region) {
	segs, err := c.segsFor(rec)
	if err != nil {
		c.logf("famd: destroying region %d's segments: %v", rec.ID, err)
		return
	}
	if err := c.onServers(rec.Servers, func(ctx context.Context, j int, m *member) (*pb.Reply, error) {
		return m.cl.Drop(ctx, &pb.SegmentRequest{Segment: segs[j]})
	}); err != nil {
		c.logf("famd: destroying region %d's segments: %v", rec.ID, err)
	}
}

// Zero implements core.Placer.
func (c *Cluster) Zero(rec metadata.Region, off, n uint64) error {
	segs, err := c.segsFor(rec)
	if err != nil {
		return err
	}
	lay := geometryOf(rec)
	if err := c.onServers(rec.Servers, func(ctx context.Context, j int, m *member) (*pb.Reply, error) {
		s, e := lay.Share(off, n, j)
		if s == e {
			return &pb.Reply{}, nil
		}
		return m.cl.Zero(ctx, &pb.ZeroRequest{Segment: segs[j], Offset: s, Length: e - s})
	}); err != nil {
		return err
	}
	return c.zeroMirrors(rec, off, n) // raid.go
}

// grant lets key reach the item's share on each of its servers.
func (c *Cluster) grant(p core.Placement, key transport.Key) error {
	segs, err := c.segsFor(p.Region)
	if err != nil {
		return err
	}
	if redundant(p.Region) {
		return c.grantRedundant(p, key, segs) // raid.go: one server may be down
	}
	return c.onServers(p.Region.Servers, func(ctx context.Context, j int, m *member) (*pb.Reply, error) {
		req := grantRequest(p, segs[j], key, j, c.epoch) // raid.go
		if req == nil {
			return &pb.Reply{}, nil
		}
		return m.cl.Grant(ctx, req)
	})
}

// revoke withdraws key from servers. A server that cannot be reached
// keeps the key on its list of revocations owed, which retryRevokes sends
// again every second until that server acknowledges them (or is found to
// have restarted: a new incarnation holds no grants).
func (c *Cluster) revoke(servers []uint64, key transport.Key) {
	ms, err := c.pick(servers)
	if err != nil {
		c.logf("famd: revoking a key: %v", err)
		return
	}
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.sendRevokes(m, [][]byte{key[:]}); err != nil {
				c.logf("famd: revoking a key on memory server %d: %v (will retry)", m.rec.ID, err)
				c.owe(m, key)
			}
		}()
	}
	wg.Wait()
}

// owe records that m's incarnation still honours key. Lock order: c.mu,
// then c.omu.
func (c *Cluster) owe(m *member, key transport.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.members[m.rec.ID]; cur != nil && cur.rec.Secret != m.rec.Secret {
		// The server rejoined with a new secret while the call was out:
		// it restarted, and the incarnation that held the key is gone.
		return
	}
	c.omu.Lock()
	defer c.omu.Unlock()
	o := c.owed[m.rec.ID]
	if o == nil || o.secret != m.rec.Secret {
		// Whatever an earlier incarnation was owed died with it.
		o = &owedRevocations{secret: m.rec.Secret}
		c.owed[m.rec.ID] = o
	}
	o.keys = append(o.keys, append([]byte(nil), key[:]...))
}

// sendRevokes asks m to forget keys; nil means it has: its Revoke handler
// deletes them before it answers.
func (c *Cluster) sendRevokes(m *member, keys [][]byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
	defer cancel()
	rep, err := m.cl.Revoke(ctx, &pb.RevokeRequest{Keys: keys})
	if err == nil && rep.GetErr().GetCode() != 0 {
		err = errors.New(rep.GetErr().GetMsg())
	}
	return err
}

// retryRevokes sends owed revocations every second until Close.
func (c *Cluster) retryRevokes() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.retryOwed()
	}
}

// retryOwed makes one attempt to deliver every owed revocation. A key
// stays owed (and counted by Owed) until its server has acknowledged its
// revocation: taking it off the list before the answer would report it
// delivered while the server still honours it.
func (c *Cluster) retryOwed() {
	type batch struct {
		m    *member
		o    *owedRevocations
		keys [][]byte
	}
	var batches []batch
	var moot []string
	c.mu.Lock()
	c.omu.Lock()
	for id, o := range c.owed {
		m := c.members[id]
		switch {
		case m == nil:
		case o.secret != m.rec.Secret:
			// The server restarted (it rejoined with a new secret): the
			// incarnation that held these keys is gone.
			delete(c.owed, id)
			moot = append(moot, fmt.Sprintf("famd: memory server %d restarted; the %d revocations it owed are moot", id, len(o.keys)))
		case len(o.keys) > 0:
			batches = append(batches, batch{m, o, slices.Clone(o.keys)})
		}
	}
	c.omu.Unlock()
	c.mu.Unlock()
	for _, line := range moot {
		c.logf("%s", line)
	}
	var wg sync.WaitGroup
	for _, b := range batches {
		wg.Add(1)
		// One server that does not answer must not hold up the others.
		go func() {
			defer wg.Done()
			if err := c.sendRevokes(b.m, b.keys); err != nil {
				return
			}
			id := b.m.rec.ID
			c.omu.Lock()
			if c.owed[id] == b.o {
				b.o.keys = b.o.keys[len(b.keys):]
				if len(b.o.keys) == 0 {
					delete(c.owed, id)
				}
			}
			c.omu.Unlock()
			c.logf("famd: memory server %d took %d owed revocations", id, len(b.keys))
		}()
	}
	wg.Wait()
}

// Owed reports how many revocations memory servers have not acknowledged
// yet, counting those being retried right now (for logs and tests).
func (c *Cluster) Owed() int {
	c.omu.Lock()
	defer c.omu.Unlock()
	n := 0
	for _, o := range c.owed {
		n += len(o.keys)
	}
	return n
}

// dataClient returns famd's data-plane client of m: its Unix socket when
// it is on this host, else TCP with the cluster token.
func (c *Cluster) dataClient(m *member) (*transport.Client, error) {
	m.dmu.Lock()
	defer m.dmu.Unlock()
	if m.data != nil {
		return m.data, nil
	}
	host, _ := os.Hostname()
	network, addr, token := "tcp", m.rec.DataTCP, c.opts.Token
	if m.rec.DataUnix != "" && m.rec.Hostname == host {
		network, addr, token = "unix", m.rec.DataUnix, ""
	} else if token == "" {
		return nil, fmt.Errorf("memory server %d's data plane is on TCP (%s) and this famd has no cluster token", m.rec.ID, addr)
	}
	d, err := transport.Dial(network, addr, transport.ClientOptions{Token: token, Timeout: c.opts.Timeout})
	if err != nil {
		return nil, fmt.Errorf("memory server %d's data plane at %s: %v", m.rec.ID, addr, err)
	}
	m.data = d
	return d, nil
}

// ReadAt implements core.Placer.
func (c *Cluster) ReadAt(rec metadata.Region, off uint64, b []byte) error {
	return c.move(rec, off, b, false)
}

// WriteAt implements core.Placer.
func (c *Cluster) WriteAt(rec metadata.Region, off uint64, b []byte) error {
	return c.move(rec, off, b, true)
}

// move grants famd a key for the range's share on every server, moves the
// bytes piece by piece with every server at once, and revokes the key.
func (c *Cluster) move(rec metadata.Region, off uint64, b []byte, write bool) error {
	if len(b) == 0 {
		return nil
	}
	var key transport.Key
	_, _ = rand.Read(key[:])
	rights := core.RightRead
	if write {
		rights |= core.RightWrite
	}
	p := core.Placement{Region: rec, Offset: off, Size: uint64(len(b)), Rights: rights}
	if err := c.grant(p, key); err != nil {
		c.revoke(rec.Servers, key)
		return err
	}
	defer c.revoke(rec.Servers, key)
	ms, err := c.pick(rec.Servers)
	if err != nil {
		return err
	}
	if redundant(rec) {
		return c.moveRedundant(rec, ms, key, off, b, write) // raid.go
	}
	lay := layoutOf(rec)
	starts := make([]uint64, len(ms))
	for j := range ms {
		starts[j], _ = lay.Share(off, uint64(len(b)), j)
	}
	return core.StripedTransfer(lay, off, starts, key, 0, b, write,
		func(j int) (*transport.Client, error) { return c.dataClient(ms[j]) }).Wait()
}

var _ core.Placer = (*Cluster)(nil)
