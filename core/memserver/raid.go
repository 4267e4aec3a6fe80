package memserver

// Redundant regions (issue 16; spec/cluster.md "Redundancy").
//
// A memory server of a RAID1 region holds, besides its data segment, a
// mirror segment: a byte-for-byte copy of the data segment of the server
// before it in interleave order (stripe.MirrorOf). Clients write both
// copies themselves (plain puts, the mirror one with transport.MirrorKey)
// and read either; an atomic is executed by the copy's primary, which
// forwards the word's new value to the other copy before it answers,
// holding the word's block lock so that forwards of one word never
// reorder.
//
// A server of a RAID5 region holds its data blocks in its data segment
// and the parity blocks of the rows it is parity server of in a parity
// segment (stripe.Parity). Clients may read their items' data blocks with
// plain gets but write only through RaidPut5: this server swaps the bytes
// under the block's lock, sends the XOR of old and new to the row's
// parity server (deltas commute, so concurrent writers to one row cannot
// corrupt its parity) and answers after the parity server did; if the
// forward fails the bytes are put back and the client is told which peer
// failed. A dead server's bytes are read and written by the row's parity
// server, which reconstructs them from the row's other blocks.
//
// Consistency of reconstructions: a data server holds a block's lock from
// the swap to the parity server's answer, and PeerRead takes that lock,
// so a peer read never sees data whose delta is still on its way. The
// parity server counts the deltas applied to each parity block
// (versions); a reconstruction reads the parity's version, the parity and
// the other data blocks, and starts again if the version moved meanwhile.
// Degraded writes of one row are serialized at its parity server.
//
// Memory servers know nothing of membership: a client tells a server, per
// request, which servers of the region it holds down (a bit mask), and the
// server then skips forwarding to them; a forward to any other server that
// fails fails the request (transport.PeerDownError) with nothing applied.
//
// Currency: a redundant segment a server opens in one incarnation without
// the metadata service saying the region is new (Segment.fresh) may miss
// writes made while the server was away: it is "not current" and refuses
// clients' plain reads and writes (transport.ErrNotCurrent) until Rebuild
// has rebuilt it from its peers. Clients then read the other copy or
// reconstruct, and write in order (RaidOrderedPut: under the block lock the
// rebuild copies under, after the surviving copy acknowledged) or through
// the parity server.

import (
	"context"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/stripe"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/core/wire"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// Segment kinds (pb.Segment.kind).
const (
	KindData   uint32 = 0
	KindMirror uint32 = 1
	KindParity uint32 = 2
)

// Redundancy levels as fam_redundancy_level_t.
const (
	levelRAID1 uint32 = 2
	levelRAID5 uint32 = 3
)

func kindName(k uint32) string {
	switch k {
	case KindMirror:
		return "mirror"
	case KindParity:
		return "parity"
	}
	return fmt.Sprintf("kind%d", k)
}

type segKey struct {
	id   uint64
	kind uint32
}

// lockStripes is the number of block locks of a segment; blocks share a
// lock when their indices are equal modulo it (harmless: a lock is held
// for one block's work only, and never two at once).
const lockStripes = 256

// versionStripes is the number of parity-version counters of a parity
// segment; blocks sharing one only cost reconstructions a retry.
const versionStripes = 4096

// maxRetries bounds the retries of a reconstruction that concurrent
// writes to its row keep invalidating.
const maxRetries = 10000

// peerTimeout bounds each server-to-server request.
const peerTimeout = 10 * time.Second

// raidConf is what a memory server knows of a redundant region: from the
// metadata service, in every kind-0 Segment it sends.
type raidConf struct {
	level   uint32
	index   int
	k       int
	block   uint64
	peers   []*pb.PeerInfo
	peerKey transport.Key
	region  uint64
	persist bool
	redSize uint64 // size of the mirror or parity segment
	// clients caches peerClient's answer for each peer: every forward
	// (one per RAID1 atomic, per RAID5 write) otherwise asked the host
	// name and looked the address up under a lock. A new conf (peers
	// moved) starts empty.
	clients []atomic.Pointer[transport.Client]
}

func (c *raidConf) parity() stripe.Parity { return stripe.Parity{Block: c.block, Servers: c.k} }

// raidSeg is a segment's redundancy state.
type raidSeg struct {
	conf   atomic.Pointer[raidConf]
	stale  atomic.Bool // not current: clients' plain operations refused
	locks  [lockStripes]sync.Mutex
	dlocks [lockStripes]sync.Mutex // parity segment: degraded writes of a row
	vers   [versionStripes]atomic.Uint64
}

// opened is called when the segment's file is first opened in this
// incarnation: a redundant segment the metadata service did not just
// create may be missing writes.
func (r *raidSeg) opened(d *pb.Segment) {
	if d.GetRedundancy() >= levelRAID1 && !d.GetFresh() {
		r.stale.Store(true)
	}
}

// parityProtected reports whether the segment is RAID5 data.
func (r *raidSeg) parityProtected() bool {
	c := r.conf.Load()
	return c != nil && c.level == levelRAID5
}

func (r *raidSeg) lock(off, block uint64) *sync.Mutex { return &r.locks[(off/block)%lockStripes] }

// raidGrant is a key's grant as OpRaid sees it.
type raidGrant struct {
	rights       uint8
	starts, ends []uint64 // RAID5: the item's share on each server
	mirror       bool     // the grant is on the mirror segment
}

// raidServer is a Server's redundancy state.
type raidServer struct {
	pmu   sync.Mutex
	peers map[string]*transport.Client // by data-plane address

	rmu      sync.Mutex
	rebuilds map[segKey]*rebuild

	ops appliedOps

	// fenced: servers (per region) whose forwards this server refuses
	// since a client made it act for them (degraded RAID5 writes, RAID1
	// atomics at the mirror); until they say they are current again
	// (RaidPeerCurrent, at the end of their rebuild). fmu is held for
	// reading across a forward's check and application.
	fmu    sync.RWMutex
	fenced map[fenceKey]bool

	// acting counts the RAID1 atomics this server (the mirror) executes
	// for a primary, in flight; handing marks a primary being handed its
	// atomics back (handBack), when no new one is admitted. amu guards
	// both; acted is signalled when a count drops to 0.
	amu     sync.Mutex
	acted   *sync.Cond
	acting  map[fenceKey]int
	handing map[fenceKey]bool

	// live: per peer (and region), whether it is believed alive (hear,
	// heard, silent): a RAID5 parity server writes a degraded write
	// through to a data server believed alive even when the client holds
	// it down. fenceKey -> *liveness.
	live sync.Map
}

// liveness counts the requests a peer sent (heardGen) and notes the
// count at the last write-through it failed, plus one (failed): it is
// believed alive until it fails one, and again from its next request.
// Atomics, not a lock: every forward a peer sends counts.
type liveness struct {
	heardGen, failed atomic.Uint64
}

// peerLive is server i of region's liveness.
func (rs *raidServer) peerLive(region uint64, i int) *liveness {
	k := fenceKey{region, i}
	if l, ok := rs.live.Load(k); ok {
		return l.(*liveness)
	}
	l, _ := rs.live.LoadOrStore(k, new(liveness))
	return l.(*liveness)
}

// hear notes a request from server i of region.
func (rs *raidServer) hear(region uint64, i int) { rs.peerLive(region, i).heardGen.Add(1) }

// heard reports whether server i of region is believed alive, and the
// generation of that belief for silent.
func (rs *raidServer) heard(region uint64, i int) (bool, uint64) {
	l := rs.peerLive(region, i)
	g := l.heardGen.Load()
	return g >= l.failed.Load(), g
}

// silent notes that server i of region failed a request made when its
// generation was gen: not alive until it is heard from again.
func (rs *raidServer) silent(region uint64, i int, gen uint64) {
	l := rs.peerLive(region, i)
	for {
		f := l.failed.Load()
		if f >= gen+1 || l.failed.CompareAndSwap(f, gen+1) {
			return
		}
	}
}
func (rs *raidServer) close() {
	rs.pmu.Lock()
	defer rs.pmu.Unlock()
	for _, c := range rs.peers {
		c.Close()
	}
	rs.peers = nil
}

// confOf reads a kind-0 redundant Segment.
func confOf(d *pb.Segment) (*raidConf, error) {
	c := &raidConf{level: d.GetRedundancy(), index: int(d.GetIndex()), k: len(d.GetPeers()), block: d.GetBlock(),
		peers: d.GetPeers(), region: d.GetRegionId(), persist: d.GetPersistent(), redSize: d.GetRedundantSize(),
		clients: make([]atomic.Pointer[transport.Client], len(d.GetPeers()))}
	if len(d.GetPeerKey()) != len(c.peerKey) {
		return nil, errors.New("redundant segment without a peer key")
	}
	copy(c.peerKey[:], d.GetPeerKey())
	switch {
	case c.level == levelRAID1 && c.k < 2, c.level == levelRAID5 && c.k < 3, c.level > levelRAID5:
		return nil, fmt.Errorf("redundancy level %d over %d servers", c.level, c.k)
	case c.index >= c.k || c.block == 0 || c.redSize == 0:
		return nil, fmt.Errorf("malformed redundant segment (index %d of %d, block %d)", c.index, c.k, c.block)
	}
	return c, nil
}

// raidSegment opens a redundant region's data segment and its mirror or
// parity segment, and records the region's redundancy on both.
func (s *Server) raidSegment(d *pb.Segment, exact bool) (*segment, error) {
	c, err := confOf(d)
	if err != nil {
		return nil, err
	}
	sg, err := s.openSegment(d, exact)
	if err != nil {
		return nil, err
	}
	cd := companionOf(d, c)
	cs, err := s.openSegment(cd, exact)
	if err != nil {
		return nil, err
	}
	sg.raid.conf.Store(c)
	cs.raid.conf.Store(c)
	return sg, nil
}

// companionOf describes the mirror or parity segment of data segment d.
func companionOf(d *pb.Segment, c *raidConf) *pb.Segment {
	kind := KindMirror
	if c.level == levelRAID5 {
		kind = KindParity
	}
	return &pb.Segment{RegionId: d.GetRegionId(), Size: c.redSize, Persistent: d.GetPersistent(), Kind: kind,
		Redundancy: d.GetRedundancy(), Fresh: d.GetFresh()}
}

// dropCompanion drops the mirror or parity segment of data segment d.
func (s *Server) dropCompanion(ctx context.Context, d *pb.Segment) *pb.Reply {
	kind := KindMirror
	if d.GetRedundancy() == levelRAID5 {
		kind = KindParity
	}
	rep, _ := s.Drop(ctx, &pb.SegmentRequest{Segment: &pb.Segment{RegionId: d.GetRegionId(), Size: d.GetRedundantSize(),
		Persistent: d.GetPersistent(), Kind: kind}})
	return rep
}

// raidGrantLocked completes the grant of k just made on data segment sg:
// RAID1 grants the item's mirror share to the mirror key, RAID5 keeps the
// write right for OpRaid only (a plain put would bypass the parity,
// which covers other items' bytes). Caller holds s.gmu.
func (s *Server) raidGrantLocked(k transport.Key, sg *segment, req *pb.GrantRequest, epoch string) {
	c := sg.raid.conf.Load()
	if c == nil || sg.kind != KindData {
		return
	}
	g := s.grants[k]
	rg := &raidGrant{rights: g.rights, starts: req.GetShareStarts(), ends: req.GetShareEnds()}
	g.raid = rg
	switch c.level {
	case levelRAID5:
		g.rights &^= transport.RightWrite
	case levelRAID1:
		if req.GetMirrorEnd() <= req.GetMirrorStart() {
			return
		}
		s.mu.Lock()
		ms := s.segs[segKey{sg.id, KindMirror}]
		s.mu.Unlock()
		if ms == nil || req.GetMirrorEnd() > uint64(len(*ms.mem.Load())) {
			return
		}
		s.grants[transport.MirrorKey(k)] = &grant{seg: ms, start: req.GetMirrorStart(), end: req.GetMirrorEnd(),
			rights: g.rights, epoch: epoch, raid: &raidGrant{rights: g.rights, mirror: true}}
	}
}

// Refusal implements transport.Refuser: a key of a copy that is not
// current.
func (s *Server) Refusal(key transport.Key) (uint32, string, bool) {
	s.gmu.RLock()
	g, ok := s.grants[key]
	s.gmu.RUnlock()
	if ok && g.seg.raid.stale.Load() {
		return wire.StatusNotCurrent, fmt.Sprintf("region %d's %s segment on this memory server is being rebuilt", g.seg.id, kindName(g.seg.kind)), true
	}
	return 0, "", false
}

// errorf is a failure answered with a FAM code.
func errorf(code int32, format string, args ...any) error {
	return &transport.Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

const (
	codeNoPerm     = 2
	codeInvalid    = 4
	codeOutOfRange = 13
	codeResource   = 17
)

// Raid implements transport.RaidHandler.
func (s *Server) Raid(h wire.Header, payload, buf []byte) ([]byte, error) {
	sub := h.Arg[0]
	if sub >= transport.RaidPeerRead {
		return s.peerOp(h, payload)
	}
	s.gmu.RLock()
	g, ok := s.grants[transport.Key(h.Key)]
	s.gmu.RUnlock()
	if !ok {
		return nil, transport.ErrStaleKey
	}
	c := g.seg.raid.conf.Load()
	if c == nil || g.raid == nil {
		return nil, errorf(codeInvalid, "the item is not in a redundant region")
	}
	down := h.Arg[3]
	switch sub {
	case transport.RaidAtomic:
		return s.atomic(g, c, h.Arg[1], h.Arg[2], down, payload, buf)
	case transport.RaidPut5:
		if c.level != levelRAID5 {
			return nil, errorf(codeInvalid, "RAID5 write on a RAID%d region", c.level)
		}
		return nil, s.put5(g, c, h.Arg[1], payload, down)
	case transport.RaidOrderedPut:
		if g.raid.rights&transport.RightWrite == 0 {
			return nil, errorf(codeNoPerm, "put needs write permission on the data item")
		}
		if c.level != levelRAID1 {
			return nil, errorf(codeInvalid, "ordered write on a RAID5 region")
		}
		mem, so, err := g.span(h.Arg[1], uint64(len(payload)), c.block)
		if err != nil {
			return nil, err
		}
		l := g.seg.raid.lock(so, c.block)
		l.Lock()
		copy(mem[so:], payload)
		l.Unlock()
		return nil, nil
	case transport.RaidDegradedGet, transport.RaidDegradedPut, transport.RaidDegradedAtomic:
		if c.level != levelRAID5 {
			return nil, errorf(codeInvalid, "reconstruction on a RAID%d region", c.level)
		}
		return s.degraded(g, c, sub, h, payload)
	}
	return nil, errorf(codeInvalid, "unknown redundant operation %d", sub)
}

// span checks n bytes at share offset off of grant g, within one block,
// and returns the segment's mapping and the segment offset.
func (g *grant) span(off, n, block uint64) ([]byte, uint64, error) {
	size := g.end - g.start
	if n == 0 {
		return nil, 0, errorf(codeInvalid, "transfer size is 0")
	}
	if off > size || n > size-off {
		return nil, 0, errorf(codeOutOfRange, "offset %d + %d bytes exceeds the item's share of %d bytes", off, n, size)
	}
	so := g.start + off
	if so/block != (so+n-1)/block {
		return nil, 0, errorf(codeInvalid, "redundant operation across an interleave block")
	}
	mem := *g.seg.mem.Load()
	if so+n > uint64(len(mem)) {
		return nil, 0, transport.ErrStaleKey
	}
	return mem, so, nil
}

func isDown(mask uint64, i int) bool { return i < 64 && mask&(1<<uint(i)) != 0 }

// atomic executes an atomic at this copy (RAID1: the primary, or the
// mirror acting for a dead primary; RAID5: the data server) and forwards
// its effect before answering. arg packs kind | op<<8 | fetch<<16. The
// result is made in buf (see transport.RaidHandler).
func (s *Server) atomic(g *grant, c *raidConf, off, arg, down uint64, args, buf []byte) ([]byte, error) {
	if len(args) != atomicArgs || arg>>17 != 0 {
		return nil, errorf(codeInvalid, "malformed redundant atomic")
	}
	opID := binary.LittleEndian.Uint64(args[wire.AtomicArgsSize:])
	kind, op, fetch := amo.Kind(arg&0xff), amo.Op(arg>>8&0xff), arg>>16&1 != 0
	if !amo.Valid(kind, op) {
		return nil, errorf(codeInvalid, "atomic op %d not defined for operand type %d", op, kind)
	}
	var need uint8
	if op.Modifies() {
		need |= transport.RightWrite
	}
	if fetch || op == amo.Fetch {
		need |= transport.RightRead
	}
	if g.raid.rights&need != need {
		return nil, errorf(codeNoPerm, "the atomic needs more permission on the data item")
	}
	size := kind.Size()
	if off%size != 0 {
		return nil, errorf(codeInvalid, "offset %d is not a multiple of the operand size %d", off, size)
	}
	if g.seg.raid.stale.Load() {
		return nil, transport.ErrNotCurrent
	}
	mem, so, err := g.span(off, size, c.block)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	v := amo.Value{Lo: le.Uint64(args[0:]), Hi: le.Uint64(args[8:])}
	cmp := amo.Value{Lo: le.Uint64(args[16:]), Hi: le.Uint64(args[24:])}
	if g.raid.mirror && op.Modifies() {
		// Acting for the primary: its forwards are refused from now on
		// (see degraded), so that one copy executes this word's atomics.
		prim := stripe.MirroredBy(c.index, c.k)
		if !isDown(down, prim) && !s.raid.fencedNow(c.region, prim) {
			// As in degraded: only while the primary is not current. It
			// is asked first, so that a current primary's forwards are
			// not refused meanwhile (its clients would bounce between
			// the copies), and again once fenced (it may have become
			// current in between).
			if s.peerCurrent(c, prim, so, size) {
				return nil, errPeerCurrent
			}
			s.raid.fence(c.region, prim)
			if err := s.stillStale(c, prim, so, size); err != nil {
				return nil, err
			}
		} else {
			s.raid.fence(c.region, prim)
		}
		// Counted in flight, so that the primary gets its atomics back
		// only once none executes here any more: one running here while
		// the primary executed the same word's and each waited for the
		// other's block lock (a deadlock until the peer timeout, after
		// which a late forward could still apply on one copy only).
		if !s.raid.actFor(c.region, prim) {
			return nil, errPeerCurrent
		}
		defer s.raid.doneActing(c.region, prim)
	}
	l := g.seg.raid.lock(so, c.block)
	l.Lock()
	defer l.Unlock()
	if res, ok := s.raid.applied(c.region, opID); ok {
		// A retry of an atomic this copy already has (executed here, or
		// forwarded here by a copy that died before answering).
		return res, nil
	}
	var before [16]byte
	copy(before[:], mem[so:so+size])
	old, err := amo.Do(unsafe.Pointer(&mem[so]), kind, op, v, cmp)
	if err != nil {
		return nil, errorf(codeInvalid, "%v", err)
	}
	if len(buf) < wire.AtomicResultSize {
		buf = make([]byte, wire.AtomicResultSize)
	}
	res := buf[:wire.AtomicResultSize]
	le.PutUint64(res[0:], old.Lo)
	le.PutUint64(res[8:], old.Hi)
	if op.Modifies() && !equal(before[:size], mem[so:so+size]) {
		if ferr := s.forwardWord(g, c, so, before[:size], mem[so:so+size], down, opID, res); ferr != nil {
			// Nothing may stay applied that the other copy lacks: the
			// word is put back (its lock kept every other atomic out).
			copy(mem[so:so+size], before[:size])
			return nil, ferr
		}
	}
	s.raid.record(c.region, opID, res)
	return res, nil
}

func equal(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }

// forwardWord sends a changed word (up to 16 bytes) to the other copy
// (RAID1) or its parity delta to the row's parity server (RAID5), with
// the record of the atomic that changed it: its id and result res.
func (s *Server) forwardWord(g *grant, c *raidConf, so uint64, before, after []byte, down, id uint64, res []byte) error {
	switch c.level {
	case levelRAID1:
		other, kind := stripe.MirrorOf(c.index, c.k), KindMirror
		if g.raid.mirror {
			other, kind = stripe.MirroredBy(c.index, c.k), KindData
		}
		if isDown(down, other) {
			return nil
		}
		return s.peerWord(c, other, transport.RaidPeerWrite, kind, so, after, id, res)
	default:
		var d [wire.AtomicResultSize]byte
		delta := d[:copy(d[:], before)]
		stripe.XOR(delta, after)
		p := c.parity()
		row := p.RowOfData(c.index, so/c.block)
		ps := p.ParityServer(row)
		if isDown(down, ps) {
			return nil
		}
		return s.peerWord(c, ps, transport.RaidPeerXor, KindParity, p.ParityOffset(row, so%c.block), delta, id, res)
	}
}

// put5 writes a RAID5 data range (within one block) and its parity delta.
func (s *Server) put5(g *grant, c *raidConf, off uint64, data []byte, down uint64) error {
	if g.raid.rights&transport.RightWrite == 0 {
		return errorf(codeNoPerm, "put needs write permission on the data item")
	}
	if g.seg.raid.stale.Load() {
		return transport.ErrNotCurrent
	}
	mem, so, err := g.span(off, uint64(len(data)), c.block)
	if err != nil {
		return err
	}
	return s.write5(g.seg, c, mem, so, data, down)
}

// write5 swaps data into the data segment at so and forwards the delta to
// the row's parity server, under the block's lock; on a failed forward
// the old bytes are put back.
func (s *Server) write5(sg *segment, c *raidConf, mem []byte, so uint64, data []byte, down uint64) error {
	l := sg.raid.lock(so, c.block)
	l.Lock()
	defer l.Unlock()
	delta := append([]byte(nil), mem[so:so+uint64(len(data))]...)
	stripe.XOR(delta, data)
	copy(mem[so:], data)
	p := c.parity()
	row := p.RowOfData(c.index, so/c.block)
	ps := p.ParityServer(row)
	if isDown(down, ps) {
		return nil
	}
	if err := s.peerXor(c, ps, p.ParityOffset(row, so%c.block), delta); err != nil {
		stripe.XOR(mem[so:so+uint64(len(data))], delta)
		return err
	}
	return nil
}

// zero5 clears a RAID5 data range with parity deltas (a fresh item).
func (s *Server) zero5(sg *segment, off, n uint64) error {
	c := sg.raid.conf.Load()
	mem := *sg.mem.Load()
	if off > uint64(len(mem)) || n > uint64(len(mem))-off {
		return fmt.Errorf("zero [%d, +%d) beyond segment of %d bytes", off, n, len(mem))
	}
	zeros := make([]byte, min(c.block, n))
	for done := uint64(0); done < n; {
		so := off + done
		m := min(n-done, c.block-so%c.block)
		if !allZero(mem[so : so+m]) {
			if err := s.write5(sg, c, mem, so, zeros[:m], 0); err != nil {
				return err
			}
		}
		done += m
	}
	return nil
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// degraded serves a RAID5 operation on a dead (or not current) server's
// bytes at the row's parity server: Arg[1] the offset in the dead
// server's share of the item, Arg[2] packs dead | len<<8 (get) or dead |
// (kind | op<<8 | fetch<<16)<<8 (atomic).
func (s *Server) degraded(g *grant, c *raidConf, sub uint64, h wire.Header, payload []byte) ([]byte, error) {
	dead := int(h.Arg[2] & 0xff)
	down := h.Arg[3] | 1<<uint(dead)
	var n uint64
	var kind amo.Kind
	var op amo.Op
	var fetch bool
	var need uint8
	switch sub {
	case transport.RaidDegradedGet:
		n, need = h.Arg[2]>>8, transport.RightRead
	case transport.RaidDegradedPut:
		n, need = uint64(len(payload)), transport.RightWrite
	default:
		a := h.Arg[2] >> 8
		kind, op, fetch = amo.Kind(a&0xff), amo.Op(a>>8&0xff), a>>16&1 != 0
		if !amo.Valid(kind, op) || len(payload) != atomicArgs {
			return nil, errorf(codeInvalid, "malformed redundant atomic")
		}
		n = kind.Size()
		if op.Modifies() {
			need |= transport.RightWrite
		}
		if fetch || op == amo.Fetch {
			need |= transport.RightRead
		}
	}
	if g.raid.rights&need != need {
		return nil, errorf(codeNoPerm, "the operation needs more permission on the data item")
	}
	if dead >= c.k || len(g.raid.starts) != c.k || len(g.raid.ends) != c.k {
		return nil, errorf(codeInvalid, "reconstruction of server %d: the grant describes no share there", dead)
	}
	off := h.Arg[1]
	share := g.raid.ends[dead] - g.raid.starts[dead]
	if n == 0 || off > share || n > share-off {
		// The key covers exactly the item's bytes on every server.
		return nil, errorf(codeOutOfRange, "offset %d + %d bytes exceeds the item's share of %d bytes on server %d", off, n, share, dead)
	}
	dso := g.raid.starts[dead] + off
	if dso/c.block != (dso+n-1)/c.block {
		return nil, errorf(codeInvalid, "redundant operation across an interleave block")
	}
	if sub != transport.RaidDegradedGet && kind != 0 && dso%n != 0 {
		return nil, errorf(codeInvalid, "offset is not a multiple of the operand size %d", n)
	}
	p := c.parity()
	row := p.RowOfData(dead, dso/c.block)
	if p.ParityServer(row) != c.index {
		return nil, errorf(codeInvalid, "server %d is not the parity server of that row", c.index)
	}
	ps, err := s.paritySeg(c)
	if err != nil {
		return nil, err
	}
	in := dso % c.block
	if sub == transport.RaidDegradedGet {
		return s.reconstruct(ps, c, row, in, n, dead, down)
	}
	pl := &ps.raid.dlocks[(p.ParityOffset(row, 0)/c.block)%lockStripes]
	pl.Lock()
	defer pl.Unlock()
	// From now on the dead server's forwards to this one are refused: a
	// write it executed but whose delta is still on its way (or a server
	// only some clients hold dead) would otherwise race with this one.
	s.raid.fence(c.region, dead)
	if !isDown(h.Arg[3], dead) {
		// Not held down: the client came here because the server answered
		// not current. Acting for it is right only while it still is: a
		// request that arrived after its rebuild ended (and it said so,
		// unfencing) fenced it again for good, refusing every later
		// write of it, and the next server's death then failed its rows.
		if err := s.stillStale(c, dead, dso, n); err != nil {
			return nil, err
		}
	}
	// Counted in flight until its write-through below reached the dead
	// server, so that the server is not handed its writes back (unfenced,
	// its clients sent back to it) in between: it would execute an atomic
	// on the word this one changed in parity only, fetching the value
	// this one fetched, and the write-through then overwrote its result.
	if !s.raid.actFor(c.region, dead) {
		return nil, errPeerCurrent
	}
	defer s.raid.doneActing(c.region, dead)
	var opID uint64
	if sub == transport.RaidDegradedAtomic {
		opID = binary.LittleEndian.Uint64(payload[wire.AtomicArgsSize:])
		if res, ok := s.raid.applied(c.region, opID); ok {
			// The dead data server executed it and its parity delta
			// arrived here before it died: not again.
			return res, nil
		}
	}
	old, err := s.reconstruct(ps, c, row, in, n, dead, down)
	if err != nil {
		return nil, err
	}
	var reply []byte
	newv := payload
	if sub == transport.RaidDegradedAtomic {
		le := binary.LittleEndian
		var word [2]uint64 // aligned for amo
		wb := unsafe.Slice((*byte)(unsafe.Pointer(&word[0])), 16)
		copy(wb, old)
		v := amo.Value{Lo: le.Uint64(payload[0:]), Hi: le.Uint64(payload[8:])}
		cmp := amo.Value{Lo: le.Uint64(payload[16:]), Hi: le.Uint64(payload[24:])}
		prev, err := amo.Do(unsafe.Pointer(&word[0]), kind, op, v, cmp)
		if err != nil {
			return nil, errorf(codeInvalid, "%v", err)
		}
		reply = make([]byte, wire.AtomicResultSize)
		le.PutUint64(reply[0:], prev.Lo)
		le.PutUint64(reply[8:], prev.Hi)
		newv = append([]byte(nil), wb[:n]...)
	}
	delta := append([]byte(nil), old...)
	stripe.XOR(delta, newv)
	s.xorParity(ps, c, p.ParityOffset(row, in), delta)
	if sub == transport.RaidDegradedAtomic {
		s.raid.record(c.region, opID, reply)
	}
	// The dead server may be alive: back and rebuilding (its rebuild may
	// have reconstructed these bytes already), or current while this
	// client's membership view still holds it down. It gets the bytes too,
	// also when the client holds it down but it spoke to this server since
	// it last failed a write-through (heard, checked after the parity
	// changed: a rebuild's reconstruction asked later sees the change).
	// Skipped, its copy kept the old bytes, and once it was handed its
	// writes back it executed atomics on the old word: two fetch_adds
	// fetched the same value and one increment was lost.
	heldDown := isDown(h.Arg[3], dead)
	alive, gen := s.raid.heard(c.region, dead)
	if !heldDown || alive {
		if err := s.peerWrite(c, dead, KindData, p.DataOffset(row, dead, in), newv); err != nil && heldDown {
			// Dead indeed: not asked again (a peer timeout each) until
			// it speaks again; it rebuilds these bytes when it is back.
			// Not covered: a write-through that fails though the server
			// is alive (a timeout, a pooled connection to its previous
			// incarnation) leaves its copy of these bytes behind if its
			// rebuild already passed them; as before, the write is not
			// undone (it is in parity and recorded).
			s.raid.silent(c.region, dead, gen)
		}
	}
	return reply, nil
}

// paritySeg is this server's current parity segment of region c.
func (s *Server) paritySeg(c *raidConf) (*segment, error) {
	s.mu.Lock()
	ps := s.segs[segKey{c.region, KindParity}]
	s.mu.Unlock()
	if ps == nil {
		return nil, errorf(codeResource, "region %d has no parity segment here", c.region)
	}
	if ps.raid.stale.Load() {
		return nil, transport.ErrNotCurrent
	}
	return ps, nil
}

// xorParity applies a delta to a parity range and counts it.
func (s *Server) xorParity(ps *segment, c *raidConf, poff uint64, delta []byte) {
	mem := *ps.mem.Load()
	if poff+uint64(len(delta)) > uint64(len(mem)) {
		return
	}
	l := ps.raid.lock(poff, c.block)
	l.Lock()
	stripe.XOR(mem[poff:], delta)
	ps.raid.vers[(poff/c.block)%versionStripes].Add(1)
	l.Unlock()
}

// reconstruct computes bytes [in, in+n) of server dead's block of row
// from the row's parity (this server's) and its other data blocks.
func (s *Server) reconstruct(ps *segment, c *raidConf, row, in, n uint64, dead int, down uint64) ([]byte, error) {
	p := c.parity()
	poff := p.ParityOffset(row, in)
	ver := &ps.raid.vers[(poff/c.block)%versionStripes]
	l := ps.raid.lock(poff, c.block)
	for try := 0; try < maxRetries; try++ {
		v0 := ver.Load()
		out := make([]byte, n)
		mem := *ps.mem.Load()
		l.Lock()
		if poff+n <= uint64(len(mem)) {
			copy(out, mem[poff:poff+n])
		}
		l.Unlock()
		_, members := p.Row(row)
		for _, m := range members {
			if m.Server == dead {
				continue
			}
			if isDown(down, m.Server) {
				return nil, &transport.PeerDownError{Peer: m.Server, Msg: "a second server of the row is down: its bytes cannot be reconstructed"}
			}
			b, err := s.peerRead(c, m.Server, KindData, m.Off+in, n)
			if err != nil {
				return nil, err
			}
			stripe.XOR(out, b)
		}
		if ver.Load() == v0 {
			return out, nil
		}
	}
	return nil, errorf(codeResource, "reconstruction of row %d kept being overtaken by writes", row)
}

// --- server to server ---

// peerClient returns the data-plane client of peer i of region c.
func (s *Server) peerClient(c *raidConf, i int) (*transport.Client, error) {
	if cl := c.clients[i].Load(); cl != nil {
		return cl, nil
	}
	cl, err := s.dialPeer(c, i)
	if err == nil {
		c.clients[i].Store(cl)
	}
	return cl, err
}

// dialPeer returns the client of peer i's data-plane address, shared by
// every region on that peer, dialling it the first time.
func (s *Server) dialPeer(c *raidConf, i int) (*transport.Client, error) {
	pi := c.peers[i]
	host, _ := os.Hostname()
	network, addr, tok := "tcp", pi.GetDataTcp(), ""
	if pi.GetDataUnix() != "" && pi.GetHostname() == host {
		network, addr = "unix", pi.GetDataUnix()
	} else if s.opts.Token != "" {
		tok = s.opts.Token
	}
	rs := &s.raid
	rs.pmu.Lock()
	defer rs.pmu.Unlock()
	if cl, ok := rs.peers[network+":"+addr]; ok {
		return cl, nil
	}
	cl, err := transport.Dial(network, addr, transport.ClientOptions{Token: tok, Timeout: peerTimeout, Conns: 4, Spin: s.opts.PeerSpin})
	if err != nil {
		return nil, &transport.PeerDownError{Peer: i, Msg: err.Error()}
	}
	if rs.peers == nil {
		rs.peers = map[string]*transport.Client{}
	}
	rs.peers[network+":"+addr] = cl
	return cl, nil
}

// peerWord is peerWrite (sub RaidPeerWrite) or peerXor (RaidPeerXor) of
// an atomic's word or parity delta (up to 16 bytes) with the atomic's
// record (id, result res; none when id is 0), the forward every
// redundant atomic makes before answering: its payload is built here
// and sent with RaidSmall, which copies it, so that it allocates nothing.
func (s *Server) peerWord(c *raidConf, i int, sub uint64, kind uint32, off uint64, word []byte, id uint64, res []byte) error {
	cl, err := s.peerClient(c, i)
	if err != nil {
		return err
	}
	var b [transport.RaidSmallMax]byte
	if len(word) > wire.AtomicResultSize || len(res) != wire.AtomicResultSize {
		return errorf(codeInvalid, "forward of a %d-byte word", len(word))
	}
	n := copy(b[:], word)
	if id != 0 {
		binary.LittleEndian.PutUint64(b[n:], id)
		n += 8 + copy(b[n+8:], res)
	}
	_, err = cl.RaidSmall(sub, c.peerKey, c.region, off, uint64(kind)|uint64(len(word))<<8|uint64(c.index+1)<<56, b[:n], nil)
	return peerErr(i, err)
}

// peerErr is the error of a failed server-to-server request: a peer that
// answered not current or named a peer of its own that is down as it
// said, any other failure a PeerDownError naming peer i.
func peerErr(i int, err error) error {
	if err == nil {
		return nil // before pd, which escapes: a success allocates nothing
	}
	var pd *transport.PeerDownError
	if errors.Is(err, transport.ErrNotCurrent) || errors.As(err, &pd) {
		return err
	}
	return &transport.PeerDownError{Peer: i, Msg: err.Error()}
}

// peerCall makes one server-to-server request; any failure to reach the
// peer is a PeerDownError naming it.
func (s *Server) peerCall(c *raidConf, i int, sub, off uint64, kind uint32, n uint64, payload []byte) ([]byte, error) {
	cl, err := s.peerClient(c, i)
	if err != nil {
		return nil, err
	}
	var dst []byte
	if sub == transport.RaidPeerRead || sub == transport.RaidPeerRebuild {
		dst = make([]byte, n)
	}
	// Arg[3] also names the sender, so that a peer can fence it.
	out, err := cl.Raid(sub, c.peerKey, c.region, off, uint64(kind)|n<<8|uint64(c.index+1)<<56, payload, dst)
	if err != nil {
		return nil, peerErr(i, err)
	}
	return out, nil
}

func (s *Server) peerRead(c *raidConf, i int, kind uint32, off, n uint64) ([]byte, error) {
	return s.peerCall(c, i, transport.RaidPeerRead, off, kind, n, nil)
}

// peerWrite writes b at off of peer i's segment. (An atomic's forward,
// which carries its record, goes through peerWord.)
func (s *Server) peerWrite(c *raidConf, i int, kind uint32, off uint64, b []byte) error {
	_, err := s.peerCall(c, i, transport.RaidPeerWrite, off, kind, uint64(len(b)), b)
	return err
}

// peerXor applies a parity delta at peer i.
func (s *Server) peerXor(c *raidConf, i int, off uint64, delta []byte) error {
	_, err := s.peerCall(c, i, transport.RaidPeerXor, off, KindParity, uint64(len(delta)), delta)
	return err
}

// peerOp serves a request from a peer memory server: Arg[1] region,
// Arg[2] segment offset, Arg[3] kind | len<<8 (for RaidPeerRebuild, the
// dead server's index | len<<8, the offset in its data segment).
func (s *Server) peerOp(h wire.Header, payload []byte) ([]byte, error) {
	sub, region, off := h.Arg[0], h.Arg[1], h.Arg[2]
	kind, n, sender := uint32(h.Arg[3]&0xff), h.Arg[3]>>8&(1<<48-1), int(h.Arg[3]>>56)-1
	unlocked := sub == transport.RaidPeerRead && kind&kindUnlocked != 0
	kind &^= kindUnlocked
	if sub == transport.RaidPeerRebuild {
		kind = KindData
	}
	s.mu.Lock()
	sg := s.segs[segKey{region, kind}]
	s.mu.Unlock()
	if sg == nil {
		return nil, errorf(codeResource, "region %d has no %s segment on this memory server", region, kindName(kind))
	}
	c := sg.raid.conf.Load()
	if c == nil || subtle.ConstantTimeCompare(c.peerKey[:], h.Key[:]) != 1 {
		return nil, errorf(codeNoPerm, "wrong peer key for region %d", region)
	}
	if sender >= 0 {
		s.raid.hear(region, sender)
	}
	if sub == transport.RaidPeerCurrent {
		if sender >= 0 {
			s.raid.handBack(region, sender)
		}
		return nil, nil
	}
	if n == 0 || n > wire.MaxPayload {
		return nil, errorf(codeInvalid, "peer request of %d bytes", n)
	}
	mem := *sg.mem.Load()
	switch sub {
	case transport.RaidPeerRead:
		if sg.raid.stale.Load() {
			return nil, transport.ErrNotCurrent
		}
		out := make([]byte, n)
		l := sg.raid.lock(off, c.block)
		if !unlocked {
			l.Lock()
		}
		if off < uint64(len(mem)) {
			// Beyond the segment's end lie blocks never written: zeros.
			copy(out, mem[off:min(off+n, uint64(len(mem)))])
		}
		if !unlocked {
			l.Unlock()
		}
		return out, nil
	case transport.RaidPeerWrite:
		rec, ok := splitRecord(payload, n)
		if !ok || off+n > uint64(len(mem)) {
			return nil, errorf(codeOutOfRange, "peer write [%d, +%d) beyond the %s segment of %d bytes", off, n, kindName(kind), len(mem))
		}
		rs := &s.raid
		rs.fmu.RLock()
		defer rs.fmu.RUnlock()
		// A RAID5 data write from a peer is a parity server's write-through
		// of a degraded write (it acts for this server, not this server
		// for it): never refused, or this copy kept old bytes.
		if rs.isFenced(region, sender) && !(c.level == levelRAID5 && kind == KindData) {
			return nil, errFenced
		}
		l := sg.raid.lock(off, c.block)
		l.Lock()
		copy(mem[off:], payload[:n])
		s.raid.keep(c.region, rec)
		l.Unlock()
		return nil, nil
	case transport.RaidPeerXor:
		rec, ok := splitRecord(payload, n)
		if !ok || off+n > uint64(len(mem)) {
			return nil, errorf(codeOutOfRange, "parity delta [%d, +%d) beyond the parity segment of %d bytes", off, n, len(mem))
		}
		rs := &s.raid
		rs.fmu.RLock()
		defer rs.fmu.RUnlock()
		if rs.isFenced(region, sender) {
			return nil, errFenced
		}
		s.xorParity(sg, c, off, payload[:n])
		s.raid.keep(c.region, rec)
		return nil, nil
	case transport.RaidPeerRebuild:
		dead := int(h.Arg[3] & 0xff)
		if c.level != levelRAID5 || dead >= c.k {
			return nil, errorf(codeInvalid, "reconstruction request for server %d", dead)
		}
		p := c.parity()
		row := p.RowOfData(dead, off/c.block)
		if p.ParityServer(row) != c.index || off%c.block+n > c.block {
			return nil, errorf(codeInvalid, "server %d is not the parity server of that row", c.index)
		}
		ps, err := s.paritySeg(c)
		if err != nil {
			return nil, err
		}
		return s.reconstruct(ps, c, row, off%c.block, n, dead, 0)
	}
	return nil, errorf(codeInvalid, "unknown peer operation %d", sub)
}

// errPeerCurrent answers a request to act for a server that is current
// (its rebuild ended): the client goes back to it.
var errPeerCurrent = fmt.Errorf("%w: the server this one would act for is current again: ask it", transport.ErrNotCurrent)

// stillStale checks, after fencing server i of region c, that i is still
// not current (its data segment refuses a read of [off, off+n)): if it
// answers, the fence is lifted and the request refused (errPeerCurrent).
// An unreachable i keeps the fence (it announces itself current at the
// end of its next rebuild). The read takes no block lock (kindUnlocked):
// the caller may hold one and i may be forwarding to this server.
func (s *Server) stillStale(c *raidConf, i int, off, n uint64) error {
	if s.peerCurrent(c, i, off, n) {
		s.raid.handBack(c.region, i)
		return errPeerCurrent
	}
	return nil
}

// peerCurrent reports whether server i of region c serves [off, off+n)
// of its data segment (it is current), without taking its block lock.
func (s *Server) peerCurrent(c *raidConf, i int, off, n uint64) bool {
	_, err := s.peerCall(c, i, transport.RaidPeerRead, off, KindData|kindUnlocked, n, nil)
	return err == nil
}

// fencedNow reports whether server i of region is fenced.
func (rs *raidServer) fencedNow(region uint64, i int) bool {
	rs.fmu.RLock()
	defer rs.fmu.RUnlock()
	return rs.isFenced(region, i)
}

// actFor admits an atomic executed for server i of region (fenced
// already), unless i is being handed its atomics back.
func (rs *raidServer) actFor(region uint64, i int) bool {
	rs.amu.Lock()
	defer rs.amu.Unlock()
	k := fenceKey{region, i}
	if rs.handing[k] {
		return false
	}
	if rs.acting == nil {
		rs.acting = map[fenceKey]int{}
	}
	rs.acting[k]++
	return true
}

// doneActing ends an atomic admitted by actFor.
func (rs *raidServer) doneActing(region uint64, i int) {
	rs.amu.Lock()
	defer rs.amu.Unlock()
	k := fenceKey{region, i}
	if rs.acting[k]--; rs.acting[k] <= 0 {
		delete(rs.acting, k)
		if rs.acted != nil {
			rs.acted.Broadcast()
		}
	}
}

// handBack lifts server i's fence once no atomic executed here for it is
// in flight, admitting none meanwhile. Those in flight finish: their
// forwards to i apply there, since i's own forwards here stay refused
// (fenced) until then, so that i never waits for a block lock held here.
func (rs *raidServer) handBack(region uint64, i int) {
	k := fenceKey{region, i}
	rs.amu.Lock()
	if rs.handing == nil {
		rs.handing = map[fenceKey]bool{}
	}
	if rs.acted == nil {
		rs.acted = sync.NewCond(&rs.amu)
	}
	rs.handing[k] = true
	for rs.acting[k] > 0 {
		rs.acted.Wait()
	}
	rs.amu.Unlock()
	rs.unfence(region, i)
	rs.amu.Lock()
	delete(rs.handing, k)
	rs.amu.Unlock()
}

// kindUnlocked, or'ed into a RaidPeerRead's segment kind, asks for the
// bytes without taking their block lock: a RAID1 rebuild's read, made
// while the rebuilt copy holds its own block lock (see rebuildSegment).
const kindUnlocked uint32 = 0x80

// --- fences ---

type fenceKey struct {
	region uint64
	server int
}

// errFenced answers a forward from a fenced server: it puts its write
// back and its client goes to the server acting for it.
var errFenced = fmt.Errorf("%w: this server acts for the sender now (a client holds it down)", transport.ErrNotCurrent)

func (rs *raidServer) fence(region uint64, server int) {
	rs.fmu.RLock()
	done := rs.fenced[fenceKey{region, server}]
	rs.fmu.RUnlock()
	if done {
		return
	}
	// Taking the lock for writing waits for every forward being applied.
	rs.fmu.Lock()
	defer rs.fmu.Unlock()
	if rs.fenced == nil {
		rs.fenced = map[fenceKey]bool{}
	}
	rs.fenced[fenceKey{region, server}] = true
}

func (rs *raidServer) unfence(region uint64, server int) {
	rs.fmu.Lock()
	defer rs.fmu.Unlock()
	delete(rs.fenced, fenceKey{region, server})
}

// isFenced is called with fmu held.
func (rs *raidServer) isFenced(region uint64, server int) bool {
	return server >= 0 && rs.fenced[fenceKey{region, server}]
}

// announceCurrent tells region c's other servers that this one is
// current again, so that they stop refusing its forwards.
func (s *Server) announceCurrent(c *raidConf) {
	for i := range c.peers {
		if i != c.index {
			_, _ = s.peerCall(c, i, transport.RaidPeerCurrent, 0, 0, 0, nil)
		}
	}
}

// --- atomics applied exactly once ---

// atomicArgs is the payload of a redundant atomic: the Atomic operands
// and the client's random id of the operation, by which a retry (after
// the executing server died before answering) is recognised.
const atomicArgs = wire.AtomicArgsSize + 8

// recordSize is an atomic's record sent with its forward: id and result.
const recordSize = 8 + wire.AtomicResultSize

// appliedMemory is how many atomics' records a server keeps.
const appliedMemory = 1 << 16

type opKey struct{ region, id uint64 }

// appliedOps remembers the results of the latest atomics executed here
// or forwarded here, by operation id.
// The results live in a ring allocated once (on the first record), the
// map holding each one's slot: a record costs no allocation, where a map
// of result slices cost one per atomic on each copy.
type appliedOps struct {
	mu   sync.Mutex
	slot map[opKey]int32
	ring []appliedOp
	next int
}

// appliedOp is one remembered atomic.
type appliedOp struct {
	key  opKey
	res  [wire.AtomicResultSize]byte
	used bool
}

// splitRecord checks a peer payload of n bytes, perhaps followed by an
// atomic's record, and returns the record.
func splitRecord(payload []byte, n uint64) ([]byte, bool) {
	switch uint64(len(payload)) {
	case n:
		return nil, true
	case n + recordSize:
		return payload[n:], true
	}
	return nil, false
}

func (rs *raidServer) keep(region uint64, rec []byte) {
	if len(rec) == recordSize {
		rs.record(region, binary.LittleEndian.Uint64(rec), rec[8:])
	}
}

func (rs *raidServer) record(region, id uint64, res []byte) {
	if id == 0 {
		return
	}
	a := &rs.ops
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ring == nil {
		a.ring = make([]appliedOp, appliedMemory)
		a.slot = make(map[opKey]int32, appliedMemory)
	}
	k := opKey{region, id}
	if _, ok := a.slot[k]; ok {
		return
	}
	e := &a.ring[a.next]
	if e.used {
		delete(a.slot, e.key)
	}
	e.key, e.used = k, true
	copy(e.res[:], res)
	a.slot[k] = int32(a.next)
	a.next = (a.next + 1) % appliedMemory
}

func (rs *raidServer) applied(region, id uint64) ([]byte, bool) {
	if id == 0 {
		return nil, false
	}
	a := &rs.ops
	a.mu.Lock()
	defer a.mu.Unlock()
	i, ok := a.slot[opKey{region, id}]
	if !ok {
		return nil, false
	}
	// A copy: the slot is reused once appliedMemory more are recorded.
	return append([]byte(nil), a.ring[i].res[:]...), true
}

// --- rebuild ---

// rebuildChunk is the most a rebuild moves in one step (under one lock).
const rebuildChunk = 1 << 20

// rebuild is the progress of one segment's rebuild.
type rebuild struct {
	mu                sync.Mutex
	region            uint64
	kind              uint32
	state, err        string
	done, total       uint64
	started, finished time.Time
	running           bool
}

// Rebuild implements the Memory service: it starts rebuilding this
// server's segments of a redundant region (data and mirror, or data and
// parity) from their peers in the background, and answers at once. A
// rebuild already running for the region is left running.
func (s *Server) Rebuild(_ context.Context, req *pb.RebuildRequest) (*pb.Reply, error) {
	d := req.GetSegment()
	if d.GetRedundancy() < levelRAID1 || d.GetKind() != KindData {
		return fail(errors.New("rebuild: describe the data segment of a redundant region")), nil
	}
	sg, err := s.segment(d, false)
	if err != nil {
		return fail(err), nil
	}
	c := sg.raid.conf.Load()
	comp := KindMirror
	if c.level == levelRAID5 {
		comp = KindParity
	}
	s.mu.Lock()
	cs := s.segs[segKey{c.region, comp}]
	s.mu.Unlock()
	rs := &s.raid
	rs.rmu.Lock()
	defer rs.rmu.Unlock()
	if rs.rebuilds == nil {
		rs.rebuilds = map[segKey]*rebuild{}
	}
	var jobs []*rebuild
	for _, seg := range []*segment{sg, cs} {
		k := segKey{c.region, seg.kind}
		if rb := rs.rebuilds[k]; rb != nil {
			rb.mu.Lock()
			running := rb.running
			rb.mu.Unlock()
			if running {
				continue
			}
		}
		seg.raid.stale.Store(true)
		rb := &rebuild{region: c.region, kind: seg.kind, state: "rebuilding", total: uint64(len(*seg.mem.Load())),
			started: time.Now(), running: true}
		rs.rebuilds[k] = rb
		jobs = append(jobs, rb)
		go s.runRebuild(seg, c, rb)
	}
	if len(jobs) > 0 {
		s.logf("memserver: rebuilding region %d's segments (RAID%d, server %d of %d)", c.region, map[uint32]int{2: 1, 3: 5}[c.level], c.index, c.k)
	}
	return &pb.Reply{}, nil
}

func (s *Server) runRebuild(sg *segment, c *raidConf, rb *rebuild) {
	err := s.rebuildSegment(sg, c, rb)
	rb.mu.Lock()
	rb.running, rb.finished = false, time.Now()
	if err != nil {
		rb.state, rb.err = "failed", err.Error()
	} else {
		rb.state = "done"
		sg.raid.stale.Store(false)
	}
	rb.mu.Unlock()
	if err == nil && s.regionCurrent(c.region) {
		s.announceCurrent(c)
	}
	if err != nil {
		s.logf("memserver: rebuilding region %d's %s segment failed after %d of %d bytes: %v", c.region, kindName(sg.kind), rb.done, rb.total, err)
	} else {
		s.logf("memserver: region %d's %s segment rebuilt (%d bytes in %v)", c.region, kindName(sg.kind), rb.total, rb.finished.Sub(rb.started).Round(time.Millisecond))
	}
}

// regionCurrent reports whether every segment of region here is current.
func (s *Server) regionCurrent(region uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, sg := range s.segs {
		if k.id == region && sg.raid.stale.Load() {
			return false
		}
	}
	return true
}

// rebuildSegment copies or reconstructs every chunk of sg, each under
// its block lock: a client's write to this copy (RaidOrderedPut, a peer
// forward) made before the chunk's turn is overwritten by the survivor's
// bytes, which already hold it (clients write the survivor first); one
// made after overwrites the chunk.
func (s *Server) rebuildSegment(sg *segment, c *raidConf, rb *rebuild) error {
	mem := *sg.mem.Load()
	chunk := min(c.block, rebuildChunk)
	p := c.parity()
	for off := uint64(0); off < uint64(len(mem)); off += chunk {
		n := min(chunk, uint64(len(mem))-off, c.block-off%c.block)
		var err error
		switch {
		case c.level == levelRAID1:
			src, kind := stripe.MirrorOf(c.index, c.k), KindMirror
			if sg.kind == KindMirror {
				src, kind = stripe.MirroredBy(c.index, c.k), KindData
			}
			l := sg.raid.lock(off, c.block)
			l.Lock()
			var b []byte
			// Read without the source's block lock (kindUnlocked): the
			// source's atomics hold that lock while they forward to this
			// copy, which waits for the lock held here, so a locked read
			// deadlocked until the peer timeout, failing both the forward
			// and the rebuild. Unlocked is safe: a forward in flight is
			// applied here after this chunk (it waits for this lock), and
			// a plain put's ordered copy to this server too.
			if b, err = s.peerRead(c, src, kind|kindUnlocked, off, n); err == nil {
				copy(mem[off:], b)
			}
			l.Unlock()
		case sg.kind == KindData:
			row := p.RowOfData(c.index, off/c.block)
			ps := p.ParityServer(row)
			l := sg.raid.lock(off, c.block)
			l.Lock()
			var b []byte
			// The request's "kind" byte names the server rebuilt (this one).
			b, err = s.peerCall(c, ps, transport.RaidPeerRebuild, off, uint32(c.index), n, nil)
			if err == nil {
				copy(mem[off:], b)
			}
			l.Unlock()
			if err != nil {
				err = fmt.Errorf("reconstructing block at %d: %w", off, err)
			}
		default:
			err = s.rebuildParity(sg, c, off, n)
		}
		if err != nil {
			return err
		}
		rb.mu.Lock()
		rb.done += n
		rb.mu.Unlock()
	}
	return nil
}

// rebuildParity recomputes parity bytes [off, off+n) of this server's
// parity segment from the row's data blocks, starting again if a delta
// arrived meanwhile.
func (s *Server) rebuildParity(sg *segment, c *raidConf, off, n uint64) error {
	p := c.parity()
	row := p.RowOfParity(c.index, off/c.block)
	in := off % c.block
	ver := &sg.raid.vers[(off/c.block)%versionStripes]
	mem := *sg.mem.Load()
	for try := 0; try < maxRetries; try++ {
		v0 := ver.Load()
		acc := make([]byte, n)
		_, members := p.Row(row)
		for _, m := range members {
			b, err := s.peerRead(c, m.Server, KindData, m.Off+in, n)
			if err != nil {
				return fmt.Errorf("reading row %d from server %d: %w", row, m.Server, err)
			}
			stripe.XOR(acc, b)
		}
		l := sg.raid.lock(off, c.block)
		l.Lock()
		if ver.Load() == v0 {
			copy(mem[off:], acc)
			l.Unlock()
			return nil
		}
		l.Unlock()
	}
	return fmt.Errorf("parity of row %d kept being overtaken by writes", row)
}

// RebuildStatus implements the Memory service.
func (s *Server) RebuildStatus(context.Context, *pb.RebuildStatusRequest) (*pb.RebuildStatusReply, error) {
	rs := &s.raid
	rs.rmu.Lock()
	defer rs.rmu.Unlock()
	out := &pb.RebuildStatusReply{}
	for _, rb := range rs.rebuilds {
		rb.mu.Lock()
		pr := &pb.RebuildProgress{RegionId: rb.region, Kind: rb.kind, State: rb.state, BytesDone: rb.done,
			BytesTotal: rb.total, Error: rb.err, StartedNs: uint64(rb.started.UnixNano())}
		if !rb.finished.IsZero() {
			pr.FinishedNs = uint64(rb.finished.UnixNano())
		}
		rb.mu.Unlock()
		out.Rebuilds = append(out.Rebuilds, pr)
	}
	sort.Slice(out.Rebuilds, func(i, j int) bool {
		a, b := out.Rebuilds[i], out.Rebuilds[j]
		return a.RegionId < b.RegionId || a.RegionId == b.RegionId && a.Kind < b.Kind
	})
	return out, nil
}
