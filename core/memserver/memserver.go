// Package memserver is the memory role of famd: it holds one segment per
// region that a metadata service placed on this server (a file mapped
// MAP_SHARED, on tmpfs for volatile regions and under the data directory
// for persistent ones), and serves their bytes on the data plane (package
// transport) to whoever presents a key the metadata service granted.
//
// The metadata service is the only caller of the control service
// (openfam.v1.Memory): it proves itself with the secret this server sent
// when it joined (see Join). A key reaches exactly one contiguous range of
// one segment, an item's share (package stripe), with the rights the
// metadata service checked; keys live in memory only, so a restarted
// memory server knows none and clients resolve their items again.
package memserver

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/internal/pages"
	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// Options configure a Server.
type Options struct {
	// DataDir holds persistent segments (DataDir/segments) and the
	// server's identity file.
	DataDir string
	// ShmDir holds volatile segments; "" means /dev/shm/openfam-mem-UID.
	ShmDir string
	// Logf receives one line per notable event; nil is silent.
	Logf func(format string, args ...any)
	// Token is the cluster token, with which this server reaches its
	// peers' data planes over TCP (redundant regions).
	Token string
	// Fabric, when set, is the libfabric endpoint the server's keys are
	// exposed on (famd --provider); every key forgotten here is withdrawn
	// from it too. SetFabric sets it later.
	Fabric transport.FabricServer
	// PeerSpin is how long a request forwarding to a peer (a RAID1
	// atomic's word to the other copy, a RAID5 parity delta) polls the
	// peer connection for the reply before parking (transport's
	// ClientOptions.Spin); famd gives its data plane's --spin. The
	// forward is on the client's critical path: a parked forwarder costs
	// a wake-up (and on famd's Unix connections a park through a
	// duplicate descriptor) on every redundant atomic. 0: never polls.
	PeerSpin time.Duration
}

// Server is a memory server: segments, granted keys, and the Memory
// control service. It implements transport.Memory for the data plane. All
// methods are safe for concurrent use.
type Server struct {
	pb.UnimplementedMemoryServer

	opts   Options
	uuid   string
	secret string
	start  time.Time

	mu     sync.Mutex // segs and the epoch
	segs   map[segKey]*segment
	epoch  string
	closed bool

	gmu    sync.RWMutex
	grants map[transport.Key]*grant
	// revoked remembers when each key was revoked, for RevokedMemory, so
	// that a Grant of it that the metadata service gave up on, but that
	// reaches the map only after the Revoke sent in its place, is refused.
	// Guarded by gmu.
	revoked   map[transport.Key]time.Time
	lastPrune time.Time

	raid raidServer // redundant regions (raid.go)
	// fab is the libfabric endpoint keys are withdrawn from (fabric.go).
	fab atomic.Pointer[fabricRef]
}

// RevokedMemory is how long a memory server refuses to grant a key again
// after revoking it. The metadata service never grants a key twice; the
// only Grant that can arrive for a revoked key is one it gave up on (its
// deadline passed, and it revoked the key instead) that this server ran
// late. Such a Grant carries its caller's deadline and is refused once
// that has passed, so keeping revocations for much longer than any call's
// timeout (10 s by default) closes the gap.
const RevokedMemory = 10 * time.Minute

// segment is one region's share of bytes on this server.
type segment struct {
	id         uint64
	persistent bool
	path       string
	file       *os.File
	mem        atomic.Pointer[[]byte] // current mapping
	old        [][]byte               // superseded mappings, kept until close: a racing request may still use one
	mu         sync.Mutex             // resizing, zeroing
	reserved   pages.Reserved         // chunks of the file known to be backed
	kind       uint32                 // KindData, KindMirror or KindParity (raid.go)
	raid       raidSeg                // redundancy state (raid.go)
}

type grant struct {
	seg        *segment
	start, end uint64
	rights     uint8 // what the data plane's plain operations may do
	epoch      string
	raid       *raidGrant // redundant regions: the rights OpRaid checks, the item's shares (raid.go)
}

// New opens a memory server on opts.DataDir (created if needed). Its
// persistent identity (DataDir/memserver.id) survives restarts so that
// the metadata service gives it back its server id; its secret is new at
// every start.
func New(opts Options) (*Server, error) {
	if opts.DataDir == "" {
		return nil, errors.New("memory server: no data directory")
	}
	if opts.ShmDir == "" {
		opts.ShmDir = fmt.Sprintf("/dev/shm/openfam-mem-%d", os.Getuid())
	}
	for _, d := range []string{filepath.Join(opts.DataDir, "segments"), opts.ShmDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("memory server: %w", err)
		}
	}
	id, err := identityFile(filepath.Join(opts.DataDir, "memserver.id"))
	if err != nil {
		return nil, err
	}
	var sec [32]byte
	_, _ = rand.Read(sec[:])
	s := &Server{opts: opts, uuid: id, secret: hex.EncodeToString(sec[:]), start: time.Now(),
		segs: map[segKey]*segment{}, grants: map[transport.Key]*grant{}, revoked: map[transport.Key]time.Time{},
		lastPrune: time.Now()}
	if opts.Fabric != nil {
		s.SetFabric(opts.Fabric)
	}
	return s, nil
}

// identityFile reads the server's identity, creating it on first start.
func identityFile(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if s := strings.TrimSpace(string(b)); s != "" {
			return s, nil
		}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("memory server identity: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("memory server identity: %w", err)
	}
	return id, nil
}

// UUID is the server's persistent identity.
func (s *Server) UUID() string { return s.uuid }

// Secret is what the metadata service must present on every Memory call;
// send it only to the metadata service, in the JoinRequest.
func (s *Server) Secret() string { return s.secret }

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// Resolve implements transport.Memory: the share a key was granted, as
// mapped now, and its rights.
func (s *Server) Resolve(key transport.Key) (mem []byte, rights uint8, ok bool) {
	s.gmu.RLock()
	g, ok := s.grants[key]
	s.gmu.RUnlock()
	if !ok || g.seg.raid.stale.Load() {
		// A copy not current yet is refused (see Refusal).
		return nil, 0, false
	}
	m := *g.seg.mem.Load()
	if g.end > uint64(len(m)) {
		// The segment shrank below the share: the item is gone.
		return nil, 0, false
	}
	return m[g.start:g.end:g.end], g.rights, true
}

// Close unmaps every segment (flushing persistent ones) and forgets every
// key. Stop the data plane first.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	segs := s.segs
	s.segs = map[segKey]*segment{}
	s.mu.Unlock()
	s.raid.close()
	s.gmu.Lock()
	grants := s.grants
	s.grants = map[transport.Key]*grant{}
	s.gmu.Unlock()
	// Registrations must go before the memory they reach is unmapped.
	s.withdrawGrants(grants)
	for _, sg := range segs {
		sg.close()
	}
}

func (sg *segment) close() {
	sg.mu.Lock()
	defer sg.mu.Unlock()
	m := *sg.mem.Load()
	if sg.persistent && len(m) > 0 {
		_ = unix.Msync(m, unix.MS_SYNC)
	}
	for _, x := range append(sg.old, m) {
		if len(x) > 0 {
			_ = unix.Munmap(x)
		}
	}
	sg.old = nil
	empty := []byte(nil)
	sg.mem.Store(&empty)
	if sg.file != nil {
		sg.file.Close()
		sg.file = nil
	}
}

func (s *Server) segPath(id uint64, persistent bool, kind uint32) string {
	name := fmt.Sprintf("seg-%d.heap", id)
	if kind != KindData {
		name = fmt.Sprintf("seg-%d.%s.heap", id, kindName(kind))
	}
	if persistent {
		return filepath.Join(s.opts.DataDir, "segments", name)
	}
	return filepath.Join(s.opts.ShmDir, name)
}

// segment returns region d's segment, opening or creating its file and
// growing it to at least d.size (exact is set by Ensure, which may also
// shrink it).
func (s *Server) segment(d *pb.Segment, exact bool) (*segment, error) {
	if d == nil {
		return nil, errors.New("no segment described")
	}
	if d.GetRedundancy() >= levelRAID1 && d.GetKind() == KindData {
		return s.raidSegment(d, exact) // raid.go: with its mirror or parity segment
	}
	return s.openSegment(d, exact)
}

// openSegment is segment for one segment file, whatever its kind.
func (s *Server) openSegment(d *pb.Segment, exact bool) (*segment, error) {
	size := d.GetSize()
	if size == 0 || size > 1<<46 {
		return nil, fmt.Errorf("segment size %d out of range", size)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("memory server is closing")
	}
	sk := segKey{d.GetRegionId(), d.GetKind()}
	sg, ok := s.segs[sk]
	if !ok {
		sg = &segment{id: d.GetRegionId(), persistent: d.GetPersistent(), kind: d.GetKind(),
			path: s.segPath(d.GetRegionId(), d.GetPersistent(), d.GetKind())}
		empty := []byte(nil)
		sg.mem.Store(&empty)
		s.segs[sk] = sg
	}
	s.mu.Unlock()
	sg.mu.Lock()
	defer sg.mu.Unlock()
	if sg.file == nil {
		sg.raid.opened(d) // raid.go: a redundant copy not made fresh here is not current
		f, err := os.OpenFile(sg.path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, err
		}
		if sg.persistent {
			// The segment's name must survive a power loss with the
			// bytes a commit makes durable (issue 20).
			if d, err := os.Open(filepath.Dir(sg.path)); err == nil {
				err = d.Sync()
				d.Close()
				if err != nil {
					f.Close()
					return nil, fmt.Errorf("syncing the directory of segment %s: %w", sg.path, err)
				}
			}
		}
		sg.file = f
	}
	st, err := sg.file.Stat()
	if err != nil {
		return nil, err
	}
	cur := uint64(len(*sg.mem.Load()))
	want := max(size, uint64(st.Size()))
	if exact {
		want = size
	}
	if cur == want && uint64(st.Size()) == want {
		return sg, nil
	}
	if cur == 0 {
		s.logf("memserver: region %d's segment %s: %d bytes", sg.id, sg.path, want)
	} else {
		// The fabric registrations of its keys reach the old mapping,
		// whose pages a shrink is about to cut from the file: withdraw
		// them first (clients ask again, and get the new mapping).
		s.withdrawSegment(sg)
	}
	if err := sg.file.Truncate(int64(want)); err != nil {
		return nil, fmt.Errorf("sizing segment %s to %d bytes: %w", sg.path, want, err)
	}
	m, err := unix.Mmap(int(sg.file.Fd()), 0, int(want), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping segment %s (%d bytes): %w", sg.path, want, err)
	}
	if old := *sg.mem.Load(); len(old) > 0 {
		sg.old = append(sg.old, old)
	}
	sg.mem.Store(&m)
	if len(sg.old) > 0 {
		// A FabricKey that resolved the old mapping may have exposed
		// it after the withdrawal above; it is withdrawn now (or, if
		// later still, by that request itself, which sees the new one).
		s.withdrawSegment(sg)
	}
	// A shrink gave pages back: what was known backed may not be now.
	sg.reserved = pages.Reserved{}
	return sg, nil
}

// Segments reports how many regions have segments open here and the
// segments' total size.
func (s *Server) Segments() (n int, bytes uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sk, sg := range s.segs {
		if sk.kind == KindData {
			n++ // a redundant region's mirror or parity segment is the same region
		}
		bytes += uint64(len(*sg.mem.Load()))
	}
	return n, bytes
}

// Keys reports how many keys are granted (for logs and tests).
func (s *Server) Keys() int {
	s.gmu.RLock()
	defer s.gmu.RUnlock()
	return len(s.grants)
}

func fail(err error) *pb.Reply {
	if err == nil {
		return &pb.Reply{}
	}
	return &pb.Reply{Err: &pb.FamError{Code: int32(core.CodeResource), Msg: err.Error()}}
}

// Info describes the server.
func (s *Server) Info(context.Context, *pb.InfoRequest) (*pb.InfoReply, error) {
	n, bytes := s.Segments()
	host, _ := os.Hostname()
	return &pb.InfoReply{Version: "3.2.0", DataDir: s.opts.DataDir, UptimeNs: uint64(time.Since(s.start)),
		Regions: uint64(n), BytesTotal: bytes, Hostname: host}, nil
}

// Ensure creates a region's segment or sets its size.
func (s *Server) Ensure(_ context.Context, req *pb.SegmentRequest) (*pb.Reply, error) {
	_, err := s.segment(req.GetSegment(), true)
	return fail(err), nil
}

// Drop deletes a region's segment and every key into it (with its
// mirror or parity segment, for a redundant region).
func (s *Server) Drop(ctx context.Context, req *pb.SegmentRequest) (*pb.Reply, error) {
	d := req.GetSegment()
	if d.GetRedundancy() >= levelRAID1 && d.GetKind() == KindData {
		if rep := s.dropCompanion(ctx, d); rep.GetErr() != nil { // raid.go
			return rep, nil
		}
	}
	s.mu.Lock()
	sg := s.segs[segKey{d.GetRegionId(), d.GetKind()}]
	delete(s.segs, segKey{d.GetRegionId(), d.GetKind()})
	s.mu.Unlock()
	s.gmu.Lock()
	var dropped []transport.Key
	for k, g := range s.grants {
		if g.seg.id == d.GetRegionId() && g.seg.kind == d.GetKind() {
			delete(s.grants, k)
			dropped = append(dropped, k)
		}
	}
	s.gmu.Unlock()
	s.withdraw(dropped...)
	path := s.segPath(d.GetRegionId(), d.GetPersistent(), d.GetKind())
	if sg != nil {
		path = sg.path
		// A request that resolved its key a moment ago may still be
		// copying: the mappings stay until Close, backed by the unlinked
		// file.
		sg.mu.Lock()
		sg.old = append(sg.old, *sg.mem.Load())
		empty := []byte(nil)
		sg.mem.Store(&empty)
		// Its pages go back now, not when the server stops: such a
		// racing request reads zeros.
		if st, err := sg.file.Stat(); err == nil && st.Size() > 0 {
			_ = unix.Fallocate(int(sg.file.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, st.Size())
		}
		sg.mu.Unlock()
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(err), nil
	}
	return &pb.Reply{}, nil
}

// Zero clears bytes of a segment (a fresh item's share): large ranges
// have their pages punched out of the file.
func (s *Server) Zero(_ context.Context, req *pb.ZeroRequest) (*pb.Reply, error) {
	sg, err := s.segment(req.GetSegment(), false)
	if err != nil {
		return fail(err), nil
	}
	off, n := req.GetOffset(), req.GetLength()
	if sg.raid.parityProtected() {
		// RAID5 data: zeros written block by block with their parity
		// deltas (raid.go), so that the row's parity stays exact.
		return fail(s.zero5(sg, off, n)), nil
	}
	sg.mu.Lock()
	defer sg.mu.Unlock()
	m := *sg.mem.Load()
	if off > uint64(len(m)) || n > uint64(len(m))-off {
		return fail(fmt.Errorf("zero [%d, +%d) beyond segment of %d bytes", off, n, len(m))), nil
	}
	if err := pages.ZeroReserve(int(sg.file.Fd()), m, off, n, &sg.reserved); err != nil {
		return &pb.Reply{Err: &pb.FamError{Code: int32(core.CodeNoSpace), Msg: err.Error()}}, nil
	}
	return &pb.Reply{}, nil
}

// Grant lets a key reach one range of a segment. A grant carrying a new
// epoch (a restarted metadata service) first drops every older grant, so
// keys a previous incarnation issued cannot outlive it. A grant whose
// caller has given up (ctx done), or of a key revoked here in the last
// RevokedMemory, is refused: the caller has revoked, or will revoke, that
// key, and a late grant would outlive the revocation.
func (s *Server) Grant(ctx context.Context, req *pb.GrantRequest) (*pb.Reply, error) {
	var k transport.Key
	if len(req.GetKey()) != len(k) {
		return fail(fmt.Errorf("malformed key of %d bytes", len(req.GetKey()))), nil
	}
	copy(k[:], req.GetKey())
	if req.GetEnd() < req.GetStart() || req.GetEnd() > req.GetSegment().GetSize() {
		return fail(fmt.Errorf("grant [%d, %d) outside a segment of %d bytes", req.GetStart(), req.GetEnd(), req.GetSegment().GetSize())), nil
	}
	sg, err := s.segment(req.GetSegment(), false)
	if err != nil {
		return fail(err), nil
	}
	epoch := string(req.GetEpoch())
	s.mu.Lock()
	newEpoch := epoch != s.epoch
	s.epoch = epoch
	s.mu.Unlock()
	s.gmu.Lock()
	if err := ctx.Err(); err != nil {
		s.gmu.Unlock()
		return fail(fmt.Errorf("grant abandoned by the metadata service: %v", err)), nil
	}
	if _, gone := s.revoked[k]; gone {
		s.gmu.Unlock()
		return fail(errors.New("grant of a key already revoked")), nil
	}
	var dropped []transport.Key
	if newEpoch {
		for key, g := range s.grants {
			if g.epoch != epoch {
				delete(s.grants, key)
				dropped = append(dropped, key)
			}
		}
	}
	s.grants[k] = &grant{seg: sg, start: req.GetStart(), end: req.GetEnd(), rights: uint8(req.GetRights() & 3), epoch: epoch}
	s.raidGrantLocked(k, sg, req, epoch) // raid.go
	s.gmu.Unlock()
	s.withdraw(dropped...)
	return &pb.Reply{}, nil
}

// Revoke forgets keys, and remembers them for RevokedMemory (see Grant);
// unknown ones are remembered too, since their Grant may still be on its
// way.
func (s *Server) Revoke(_ context.Context, req *pb.RevokeRequest) (*pb.Reply, error) {
	now := time.Now()
	s.gmu.Lock()
	gone := make([]transport.Key, 0, len(req.GetKeys()))
	for _, b := range req.GetKeys() {
		var k transport.Key
		if len(b) == len(k) {
			copy(k[:], b)
			delete(s.grants, k)
			s.revoked[k] = now
			// A RAID1 item's mirror key goes with its key.
			delete(s.grants, transport.MirrorKey(k))
			gone = append(gone, k, transport.MirrorKey(k))
		}
	}
	// Pruning at most every half period keeps the average cost of a
	// Revoke constant; every key is kept for at least RevokedMemory.
	if now.Sub(s.lastPrune) > RevokedMemory/2 {
		for k, at := range s.revoked {
			if now.Sub(at) > RevokedMemory {
				delete(s.revoked, k)
			}
		}
		s.lastPrune = now
	}
	s.gmu.Unlock()
	// Forgotten first, withdrawn second: a FabricKey request racing with
	// this finds the key gone when it looks again (transport/fabric.go).
	s.withdraw(gone...)
	return &pb.Reply{}, nil
}

// MDSecret is the gRPC metadata key carrying the server's secret.
const MDSecret = "x-fam-memserver-secret"

// UnaryInterceptor refuses every call that does not carry the secret.
func (s *Server) UnaryInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(MDSecret)
	if len(v) != 1 || subtle.ConstantTimeCompare([]byte(v[0]), []byte(s.secret)) != 1 {
		return nil, status.Error(codes.Unauthenticated, "memory server: missing or wrong secret (only the metadata service it joined may call it)")
	}
	return h(ctx, req)
}

// SegmentIDs lists the regions with a segment open here, sorted.
func (s *Server) SegmentIDs() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]uint64, 0, len(s.segs))
	for sk := range s.segs {
		if sk.kind == KindData {
			ids = append(ids, sk.id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// SecretCreds sends a memory server's secret with every call; the
// metadata service dials memory servers with it.
type SecretCreds string

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (c SecretCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{MDSecret: string(c)}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials: the
// secret travels like the cluster token, on the trusted cluster network.
func (SecretCreds) RequireTransportSecurity() bool { return false }
