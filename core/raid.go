package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/stripe"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/core/wire"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// redundantPlane is the data plane of one item of a RAID1 or RAID5
// region (issue 16; spec/cluster.md "Redundancy"). It cuts requests into
// per-block pieces as stripedPlane does, and for each piece:
//
//   - RAID1 get: one copy, the primary (the data segment's server) or the
//     mirror alternately by block so that reads spread; the other copy
//     when that one fails or is not current.
//   - RAID1 put: both copies at once (plain puts; the mirror with
//     transport.MirrorKey); it completes when both hold the bytes, or the
//     one left when the other's server is down. A copy being rebuilt gets
//     the bytes after the survivor acknowledged them, in order with the
//     rebuild (RaidOrderedPut).
//   - RAID1 atomic: executed by the primary, which forwards the new word
//     to the mirror before answering; by the mirror, forwarding to the
//     primary, when the primary is down.
//   - RAID5: reads at the data server; writes and atomics through it
//     (RaidPut5, RaidAtomic: it forwards the parity delta); a dead or not
//     current server's bytes are read, written and updated by the row's
//     parity server, which reconstructs them.
//
// On a server's failure (transport.ErrUnavailable: unreachable or
// OPENFAM_TIMEOUT) the plane tells its owner (suspect) and finishes the
// piece on the survivors; servers the owner reports down are skipped and
// named in each request's down mask, so that memory servers do not
// forward to them. An operation either completes on the survivors or
// returns an error; a server that fails a forward applies nothing.
type redundantPlane struct {
	level   Redundancy
	lay     stripe.Layout // RAID1
	par     stripe.Parity // RAID5
	base    uint64
	ids     []uint64
	starts  []uint64 // the item's share start in each server's data segment
	client  func(j int) (*transport.Client, error)
	down    func(j int) bool
	suspect func(j int, err error)
	// wrote, when set, is told of a server that a RAID1 put finished
	// without (famd holds it down and it failed): its copy is behind, and
	// famd hears it from the writer too, not only from its own probes
	// (core/serverstate.go wroteAround).
	wrote func(j int, err error)
}

// OnWroteAround sets the function told of each server a completed write
// skipped after it failed (see wrote). Clients set it to report to the
// membership; tests set it to watch.
func (p *redundantPlane) OnWroteAround(fn func(j int, err error)) { p.wrote = fn }

// around tells wrote of every server of extra (a down mask of server
// indexes; bit 63, "primary not current", is not a server) that the
// completed write skipped.
func (p *redundantPlane) around(extra uint64, err error) {
	if p.wrote == nil {
		return
	}
	for j := range p.ids {
		if j < 63 && isDownIn(extra, j) {
			p.wrote(j, err)
		}
	}
}

// NewRedundantPlane returns the data plane of an item of size bytes at
// region offset base of a region with redundancy level (RAID1 or RAID5)
// over the memory servers ids (interleave order) in blocks of block
// bytes. client(j) gives server j's data-plane client; down(j) says the
// membership holds server j down; suspect(j, err) is told of a server
// that failed an operation. Clients and famd's metadata service (backup
// and restore) use it.
func NewRedundantPlane(level Redundancy, block, base, size uint64, ids []uint64, client func(j int) (*transport.Client, error),
	down func(j int) bool, suspect func(j int, err error)) (DataPlane, error) {
	p := &redundantPlane{level: level, base: base, ids: ids, client: client, down: down, suspect: suspect,
		lay: stripe.Layout{Block: block, Servers: len(ids)}, par: stripe.Parity{Block: block, Servers: len(ids)}}
	switch {
	case level == RAID1 && len(ids) >= 2 && block > 0:
	case level == RAID5 && p.par.Valid():
	default:
		return nil, fmt.Errorf("redundancy level %d over %d servers with block size %d cannot be served", level, len(ids), block)
	}
	p.starts = make([]uint64, len(ids))
	for j := range ids {
		p.starts[j], _ = p.share(base, size, j)
	}
	return p, nil
}

func (p *redundantPlane) share(a, n uint64, j int) (uint64, uint64) {
	if p.level == RAID5 {
		return p.par.Share(a, n, j)
	}
	return p.lay.Share(a, n, j)
}

// pieceMax bounds one request's payload within a block.
const pieceMax = 4 << 20

func (p *redundantPlane) pieces(off, n uint64, fn func(stripe.Piece)) {
	cut := func(pc stripe.Piece) {
		for done := uint64(0); done < pc.Len; done += pieceMax {
			m := min(pieceMax, pc.Len-done)
			fn(stripe.Piece{Server: pc.Server, Off: pc.Off + done, Buf: pc.Buf + done, Len: m})
		}
	}
	if p.level == RAID5 {
		p.par.Pieces(p.base, p.starts, off, n, cut)
		return
	}
	p.lay.Pieces(p.base, p.starts, off, n, cut)
}

// mask is the down mask of a request: the servers the membership holds
// down, and those this operation found unreachable.
func (p *redundantPlane) mask(extra uint64) uint64 {
	m := extra
	for j := range p.ids {
		if j < 64 && p.down(j) {
			m |= 1 << uint(j)
		}
	}
	return m
}

func isDownIn(mask uint64, j int) bool { return j < 64 && mask&(1<<uint(j)) != 0 }

func unavailable(err error) bool { return errors.Is(err, transport.ErrUnavailable) }

// fail reports a failed server and says whether the piece may go on
// without it.
func (p *redundantPlane) failed(j int, err error) bool {
	if unavailable(err) {
		p.suspect(j, err)
		return true
	}
	return false
}

// run does every piece of [off, off+n), in parallel when there are
// several, and returns the first error.
func (p *redundantPlane) run(off uint64, buf []byte, fn func(pc stripe.Piece, b []byte) error) error {
	var pcs []stripe.Piece
	p.pieces(off, uint64(len(buf)), func(pc stripe.Piece) { pcs = append(pcs, pc) })
	if len(pcs) == 1 {
		pc := pcs[0]
		return fn(pc, buf[pc.Buf:pc.Buf+pc.Len])
	}
	errs := make([]error, len(pcs))
	var wg sync.WaitGroup
	for i, pc := range pcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(pc, buf[pc.Buf:pc.Buf+pc.Len])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// onePiece returns the piece of [off, off+n) when it is a single one.
// Small operations are: they take this path, which allocates nothing
// (run's closures and piece list are heap allocations).
func (p *redundantPlane) onePiece(off, n uint64) (stripe.Piece, bool) {
	var first stripe.Piece
	k := 0
	p.pieces(off, n, func(pc stripe.Piece) {
		if k == 0 {
			first = pc
		}
		k++
	})
	return first, k == 1
}

// Get implements DataPlane.
func (p *redundantPlane) Get(key transport.Key, off uint64, dst []byte) error {
	if pc, ok := p.onePiece(off, uint64(len(dst))); ok {
		return p.getPiece(key, pc, dst[pc.Buf:pc.Buf+pc.Len])
	}
	return p.run(off, dst, func(pc stripe.Piece, b []byte) error { return p.getPiece(key, pc, b) })
}

// Put implements DataPlane.
func (p *redundantPlane) Put(key transport.Key, off uint64, src []byte) error {
	if pc, ok := p.onePiece(off, uint64(len(src))); ok {
		return p.putPiece(key, pc, src[pc.Buf:pc.Buf+pc.Len])
	}
	return p.run(off, src, func(pc stripe.Piece, b []byte) error { return p.putPiece(key, pc, b) })
}

// GetAsync implements DataPlane.
func (p *redundantPlane) GetAsync(key transport.Key, off uint64, dst []byte) *transport.Call {
	return transport.GoCall(func() error { return p.Get(key, off, dst) })
}

// PutAsync implements DataPlane.
func (p *redundantPlane) PutAsync(key transport.Key, off uint64, src []byte) *transport.Call {
	return transport.GoCall(func() error { return p.Put(key, off, src) })
}

// GatherIndexed implements DataPlane, element by element.
func (p *redundantPlane) GatherIndexed(key transport.Key, dst []byte, index []uint64, esize uint64) error {
	return p.elements(key, dst, index, esize, true)
}

// ScatterIndexed implements DataPlane, element by element.
func (p *redundantPlane) ScatterIndexed(key transport.Key, src []byte, index []uint64, esize uint64) error {
	return p.elements(key, src, index, esize, false)
}

func (p *redundantPlane) elements(key transport.Key, buf []byte, index []uint64, esize uint64, gather bool) error {
	if esize == 0 || uint64(len(buf))/esize < uint64(len(index)) {
		return &transport.Error{Code: int32(CodeInvalid), Msg: "buffer smaller than the element list"}
	}
	for i, e := range index {
		b := buf[uint64(i)*esize : uint64(i+1)*esize]
		var err error
		if gather {
			err = p.Get(key, e*esize, b)
		} else {
			err = p.Put(key, e*esize, b)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// OpenFD implements DataPlane: a redundant item has no single file.
func (p *redundantPlane) OpenFD(transport.Key) (*os.File, uint64, uint64, uint8, error) {
	return nil, 0, 0, 0, &transport.Error{Code: int32(CodeUnimplemented), Msg: "an item of a redundant region cannot be mapped"}
}

// Close implements DataPlane.
func (p *redundantPlane) Close() error { return nil }

// copyOf is where a RAID1 piece's copy c (0 primary, 1 mirror) is: the
// server index and the key.
func (p *redundantPlane) copyOf(key transport.Key, j, c int) (int, transport.Key) {
	if c == 0 {
		return j, key
	}
	return stripe.MirrorOf(j, len(p.ids)), transport.MirrorKey(key)
}

func (p *redundantPlane) getPiece(key transport.Key, pc stripe.Piece, b []byte) error {
	if p.level == RAID5 {
		return p.get5(key, pc, b)
	}
	// Reads alternate between the copies by block of the server's
	// segment, so both copies serve.
	first := int((p.starts[pc.Server] + pc.Off) / p.lay.Block % 2)
	var lastErr error
	for t := 0; t < 2; t++ {
		s, k := p.copyOf(key, pc.Server, (first+t)%2)
		if p.down(s) {
			continue
		}
		c, err := p.client(s)
		if err == nil {
			err = c.Get(k, pc.Off, b)
		}
		if err == nil {
			return nil
		}
		lastErr = err
		if !p.failed(s, err) && !errors.Is(err, transport.ErrNotCurrent) {
			return err
		}
	}
	return p.noCopy(pc.Server, lastErr)
}

// noCopy5 is the error of a RAID5 write whose data server failed it and
// was not declared down in time.
func (p *redundantPlane) noCopy5(j int, err error) error {
	return fmt.Errorf("%w: memory server %d failed a write and famd has not declared it down: %v", transport.ErrUnavailable, p.ids[j], err)
}

func (p *redundantPlane) noCopy(j int, err error) error {
	if err == nil {
		err = transport.ErrUnavailable
	}
	return fmt.Errorf("%w: no current copy of the bytes of memory server %d (nor of its mirror on %d) is reachable: %v",
		transport.ErrUnavailable, p.ids[j], p.ids[stripe.MirrorOf(j, len(p.ids))], err)
}

func (p *redundantPlane) putPiece(key transport.Key, pc stripe.Piece, b []byte) error {
	if p.level == RAID5 {
		return p.put5(key, pc, b)
	}
	type copyRes struct {
		s   int
		k   transport.Key
		c   *transport.Client
		err error
	}
	var rs [2]copyRes
	for t := 0; t < 2; t++ {
		s, k := p.copyOf(key, pc.Server, t)
		rs[t] = copyRes{s: s, k: k, err: errSkipped}
		if !p.down(s) {
			rs[t].c, rs[t].err = p.client(s)
		}
	}
	// Both copies at once: both frames are written before either reply
	// is awaited, and this goroutine then reads the two replies itself
	// (PutSend), the second usually already there. A goroutine per copy
	// cost a spawn and two more wake-ups per put, more than the copies'
	// overlap saved on a small put.
	var sent [2]transport.Sent
	for t := range rs {
		if rs[t].c != nil && rs[t].err == nil {
			sent[t] = rs[t].c.PutSend(rs[t].k, pc.Off, b)
		}
	}
	for t := range sent {
		if rs[t].c != nil && rs[t].err == nil {
			rs[t].err = sent[t].Wait()
		}
	}
	ok := 0
	var skipped uint64
	var skipErr error
	for t := range rs {
		// A copy that failed while the membership holds its server up is
		// written again until it answers or is held down: completing the
		// put on the other copy alone left this one behind, and nothing
		// rebuilds a server famd never declared down (a lost record when
		// the other copy's server died later).
		start := time.Now()
		for try := 0; rs[t].err != nil && unavailable(rs[t].err) && !p.down(rs[t].s); try++ {
			if !p.retryLater(rs[t].s, rs[t].err, start, try) {
				break
			}
			if rs[t].c, rs[t].err = p.client(rs[t].s); rs[t].err == nil {
				rs[t].err = rs[t].c.Put(rs[t].k, pc.Off, b)
			}
		}
		switch err := rs[t].err; {
		case err == nil:
			ok++
		case errors.Is(err, errSkipped), errors.Is(err, transport.ErrNotCurrent):
		case p.failed(rs[t].s, err) && p.down(rs[t].s):
			skipped |= 1 << uint(rs[t].s)
			skipErr = err
			rs[t].err = errSkipped
		case unavailable(err):
			return p.noCopy(pc.Server, err)
		default:
			return err
		}
	}
	if ok == 0 {
		return p.noCopy(pc.Server, firstErr(rs[0].err, rs[1].err))
	}
	p.around(skipped, skipErr)
	// A copy being rebuilt gets the bytes now that the other holds them.
	for t := range rs {
		if errors.Is(rs[t].err, transport.ErrNotCurrent) {
			if _, err := rs[t].c.Raid(transport.RaidOrderedPut, rs[t].k, pc.Off, 0, 0, b, nil); err != nil && !p.failed(rs[t].s, err) {
				return err
			}
		}
	}
	return nil
}

var errSkipped = errors.New("copy skipped: its server is down")

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil && !errors.Is(e, errSkipped) {
			return e
		}
	}
	return nil
}

// raidRetries bounds the attempts of one piece as servers fail one after
// another.
const raidRetries = 4

// raidPatience bounds how long a piece waits for the membership to decide
// that a server which failed it is down (famd probes a reported server at
// once and decides within a few seconds).
const raidPatience = 60 * time.Second

// retryLater is called after server j failed a piece with err (it did not
// answer, or a memory server could not forward to it): it reports j and
// waits a little before the piece is tried again, with the down mask the
// membership gives then. It returns false once the piece has waited
// raidPatience since start. Survivors act without a server (execute its
// atomics, write around it, skip its forwards) only when the membership
// holds it down: a client that named a server down on its own suspicion
// (a timeout on a loaded machine, a forward that timed out) made the
// survivor diverge from a server that was alive, which other clients kept
// using and which nothing then rebuilt (lost and duplicated increments).
func (p *redundantPlane) retryLater(j int, err error, start time.Time, try int) bool {
	p.suspect(j, err)
	if time.Since(start) > raidPatience {
		return false
	}
	// Backoff while famd probes: 1 ms doubling to 100 ms.
	time.Sleep(min(time.Millisecond<<min(try, 7), 100*time.Millisecond))
	return true
}

func (p *redundantPlane) get5(key transport.Key, pc stripe.Piece, b []byte) error {
	j := pc.Server
	var extra uint64
	if !p.down(j) {
		c, err := p.client(j)
		if err == nil {
			err = c.Get(key, pc.Off, b)
		}
		if err == nil {
			return nil
		}
		if !p.failed(j, err) && !errors.Is(err, transport.ErrNotCurrent) {
			return err
		}
		if unavailable(err) {
			extra |= 1 << uint(j)
		}
	}
	_, err := p.degraded(key, pc, transport.RaidDegradedGet, uint64(j)|pc.Len<<8, extra, nil, b)
	return err
}

// rowParity is the parity server of the row holding piece pc.
func (p *redundantPlane) rowParity(pc stripe.Piece) int {
	so := p.starts[pc.Server] + pc.Off
	return p.par.ParityServer(p.par.RowOfData(pc.Server, so/p.par.Block))
}

// degraded makes a RAID5 request for a dead server's bytes at the row's
// parity server.
func (p *redundantPlane) degraded(key transport.Key, pc stripe.Piece, sub, a2, extra uint64, payload, dst []byte) ([]byte, error) {
	ps := p.rowParity(pc)
	start := time.Now()
	for try := 0; ; try++ {
		mask := p.mask(extra)
		if isDownIn(mask, ps) {
			break
		}
		c, err := p.client(ps)
		var out []byte
		if err == nil {
			out, err = c.Raid(sub, key, pc.Off, a2, mask, payload, dst)
		}
		var pd *transport.PeerDownError
		switch {
		case err == nil:
			return out, nil
		case errors.As(err, &pd) && pd.Peer >= 0 && pd.Peer < len(p.ids) && !isDownIn(mask, pd.Peer):
			// Another server of the row failed the parity server: tried
			// again once the membership decided (see retryLater).
			if p.retryLater(pd.Peer, err, start, try) {
				continue
			}
			return nil, err
		case p.failed(ps, err):
			return nil, fmt.Errorf("%w: memory server %d is down and so is %d, the parity server of its row: %v",
				transport.ErrUnavailable, p.ids[pc.Server], p.ids[ps], err)
		default:
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: the bytes of memory server %d cannot be reconstructed: a second server of their row is down",
		transport.ErrUnavailable, p.ids[pc.Server])
}

func (p *redundantPlane) put5(key transport.Key, pc stripe.Piece, b []byte) error {
	_, err := p.through5(key, pc, transport.RaidPut5, 0, b, transport.RaidDegradedPut, uint64(pc.Server), nil)
	return err
}

// through5 makes a RAID5 write (sub) at the data server, retrying without
// a parity server that failed it, and goes to the row's parity server
// (dsub, with a2) when the data server is down or not current.
func (p *redundantPlane) through5(key transport.Key, pc stripe.Piece, sub, a2 uint64, payload []byte, dsub, da2 uint64, dst []byte) ([]byte, error) {
	for round := 0; ; round++ {
		out, err := p.through5Once(key, pc, sub, a2, payload, dsub, da2, dst)
		// The parity server refuses to act for a data server that is
		// current again (its rebuild ended meanwhile): back to it.
		if err != nil && errors.Is(err, transport.ErrNotCurrent) && !p.down(pc.Server) && round < 2*raidRetries {
			continue
		}
		return out, err
	}
}

func (p *redundantPlane) through5Once(key transport.Key, pc stripe.Piece, sub, a2 uint64, payload []byte, dsub, da2 uint64, dst []byte) ([]byte, error) {
	j := pc.Server
	start := time.Now()
	for try := 0; !p.down(j); try++ {
		c, err := p.client(j)
		var out []byte
		if err == nil {
			out, err = c.Raid(sub, key, pc.Off, a2, p.mask(0), payload, dst)
		}
		var pd *transport.PeerDownError
		if err == nil {
			return out, nil
		}
		if errors.As(err, &pd) && pd.Peer >= 0 && pd.Peer < len(p.ids) {
			// The parity server failed the forward; nothing was applied.
			// Tried again, without it only once the membership holds it
			// down (see retryLater).
			if p.retryLater(pd.Peer, err, start, try) {
				continue
			}
			return nil, err
		}
		if errors.Is(err, transport.ErrNotCurrent) {
			break
		}
		if unavailable(err) {
			// The data server is written around (its bytes at the parity
			// server) only once the membership holds it down.
			if p.retryLater(j, err, start, try) {
				continue
			}
			return nil, p.noCopy5(j, err)
		}
		return nil, err
	}
	return p.degraded(key, pc, dsub, da2, 0, payload, dst)
}

// Atomic implements DataPlane.
func (p *redundantPlane) Atomic(key transport.Key, off uint64, kind amo.Kind, op amo.Op, v, cmp amo.Value, fetch bool) (amo.Value, error) {
	var pc stripe.Piece
	n := 0
	p.pieces(off, kind.Size(), func(x stripe.Piece) { pc = x; n++ })
	if n != 1 {
		return amo.Value{}, &transport.Error{Code: int32(CodeInvalid), Msg: fmt.Sprintf("the %d-byte word at offset %d straddles two interleave blocks", kind.Size(), off)}
	}
	// The operands, then a random id of this operation: a server that
	// already holds its effect (forwarded by a copy that died before
	// answering) answers a retry with its result instead of applying it
	// twice.
	var args [wire.AtomicArgsSize + 8]byte
	le := binary.LittleEndian
	le.PutUint64(args[0:], v.Lo)
	le.PutUint64(args[8:], v.Hi)
	le.PutUint64(args[16:], cmp.Lo)
	le.PutUint64(args[24:], cmp.Hi)
	le.PutUint64(args[32:], rand.Uint64()|1)
	arg := uint64(kind) | uint64(op)<<8
	if fetch {
		arg |= 1 << 16
	}
	var res [wire.AtomicResultSize]byte
	var out []byte
	var err error
	if p.level == RAID5 {
		// Copies: RAID5's requests keep their buffers (through5), which
		// would move args and res to the heap on RAID1's path too.
		a5, r5 := args, res
		out, err = p.through5(key, pc, transport.RaidAtomic, arg, a5[:], transport.RaidDegradedAtomic, uint64(pc.Server)|arg<<8, r5[:])
	} else {
		out, err = p.atomic1(key, pc, arg, args[:], res[:])
	}
	if err != nil {
		return amo.Value{}, err
	}
	if len(out) < wire.AtomicResultSize {
		return amo.Value{}, fmt.Errorf("%w: short atomic reply", transport.ErrUnavailable)
	}
	return amo.Value{Lo: le.Uint64(out[0:]), Hi: le.Uint64(out[8:])}, nil
}

// atomic1 executes a RAID1 atomic at the primary copy, or at the mirror
// when the primary is down or not current; the executing copy forwards
// the word to the other before answering. The result goes into dst;
// args and dst are copied to and from the request (RaidSmall), so that
// they stay on the caller's stack.
func (p *redundantPlane) atomic1(key transport.Key, pc stripe.Piece, arg uint64, args, dst []byte) ([]byte, error) {
	var extra uint64 // only bit 63: the primary answered not current
	bounces := 0
	var lastErr error
	start := time.Now()
	for try := 0; try < 2*raidRetries || time.Since(start) < raidPatience; try++ {
		// The down mask is the membership's alone (see retryLater): the
		// mirror executes for the primary only once famd holds it down.
		mask := p.mask(0)
		t := 0
		prim, _ := p.copyOf(key, pc.Server, 0)
		if isDownIn(mask, prim) || isDownIn(extra, 63) {
			t = 1 // bit 63: the primary is not current
		}
		s, k := p.copyOf(key, pc.Server, t)
		if isDownIn(mask, s) {
			break
		}
		c, err := p.client(s)
		n := 0
		if err == nil {
			n, err = c.RaidSmall(transport.RaidAtomic, k, pc.Off, arg, mask&^(1<<63), args, dst)
		}
		if err == nil {
			return dst[:n], nil
		}
		lastErr = err
		var pd *transport.PeerDownError
		switch {
		case errors.As(err, &pd) && pd.Peer >= 0 && pd.Peer < len(p.ids):
			if !p.retryLater(pd.Peer, err, start, try) {
				return nil, p.noCopy(pc.Server, err)
			}
		case errors.Is(err, transport.ErrNotCurrent) && t == 0:
			extra |= 1 << 63
		case errors.Is(err, transport.ErrNotCurrent) && t == 1 && !isDownIn(mask, prim) && time.Since(start) < raidPatience:
			// The mirror found the primary current again (its rebuild
			// ended): back to the primary. While the mirror hands the
			// primary its atomics back, both may refuse for a moment:
			// a short backoff after the first bounces.
			if bounces++; bounces > 2 {
				time.Sleep(min(time.Millisecond<<min(bounces-2, 4), 10*time.Millisecond))
			}
			extra &^= 1 << 63
		case unavailable(err):
			if !p.retryLater(s, err, start, try) {
				return nil, p.noCopy(pc.Server, err)
			}
		default:
			return nil, err
		}
	}
	return nil, p.noCopy(pc.Server, lastErr)
}

// AtomicAsync issues a non-fetching atomic (see transport.Client.AtomicAsync).
func (p *redundantPlane) AtomicAsync(key transport.Key, off uint64, kind amo.Kind, op amo.Op, v amo.Value) *transport.Call {
	_, err := p.Atomic(key, off, kind, op, v, amo.Value{}, false)
	return transport.DoneCall(err)
}

// CommitAsync makes the item's bytes durable on every copy (persistent
// regions): both RAID1 copies, or the RAID5 data servers.
func (p *redundantPlane) CommitAsync(key transport.Key, off, n uint64) *transport.Call {
	type span struct{ lo, hi uint64 }
	per := map[int]*span{}
	p.pieces(off, n, func(pc stripe.Piece) {
		if s := per[pc.Server]; s != nil {
			s.lo, s.hi = min(s.lo, pc.Off), max(s.hi, pc.Off+pc.Len)
		} else {
			per[pc.Server] = &span{pc.Off, pc.Off + pc.Len}
		}
	})
	var calls []*transport.Call
	for j, s := range per {
		for t := 0; t < 2; t++ {
			if t == 1 && p.level != RAID1 {
				break
			}
			sv, k := p.copyOf(key, j, t)
			if p.down(sv) {
				continue
			}
			c, err := p.client(sv)
			if err != nil {
				p.failed(sv, err)
				continue
			}
			calls = append(calls, c.CommitAsync(k, s.lo, s.hi-s.lo))
		}
	}
	return transport.Group(calls...)
}

var _ DataPlane = (*redundantPlane)(nil)

// redundant is the data plane of a placed item of a redundant region, on
// this client's memory-server clients and its view of their health.
func (r *remote) redundant(ii *pb.ItemInfo) (DataPlane, error) {
	ids := ii.GetServers()
	dp, err := NewRedundantPlane(Redundancy(ii.GetRedundancy()), ii.GetInterleaveSize(), ii.GetOffset(), ii.GetSize(), ids,
		// Redundant regions speak the project's own protocol (OpRaid) to
		// memory servers, also when a libfabric provider carries the
		// unredundant data plane: the plane's protocol client does it.
		func(j int) (*transport.Client, error) {
			dp, err := r.memClient(ids[j])
			if err != nil {
				return nil, err
			}
			if c := ctlClient(dp); c != nil {
				return c, nil
			}
			return nil, fmt.Errorf("%w: memory server %d has no protocol client for redundant regions", transport.ErrUnavailable, ids[j])
		},
		func(j int) bool { return r.srv.isDown(ids[j]) },
		func(j int, err error) {
			r.srv.suspect(ids[j], err)
			if errors.Is(err, transport.ErrUnavailable) {
				r.forgetMem(ids[j])
			}
		})
	if err != nil {
		return nil, Errorf(CodeRPC, "fam_lookup", "famd described an unusable redundant placement: %v", err)
	}
	dp.(*redundantPlane).OnWroteAround(func(j int, err error) { r.srv.wroteAround(ids[j], err) })
	return dp, nil
}

// forgetMem drops the cached data-plane client of memory server id after
// it failed, so that the next use asks the metadata service for its
// address again (a restarted memory famd may listen elsewhere). Calls in
// flight on the old client finish on it; it is closed once they must have
// (two timeouts later).
func (r *remote) forgetMem(id uint64) {
	r.mmu.Lock()
	c, ok := r.mems[id]
	if ok {
		delete(r.mems, id)
	}
	r.mmu.Unlock()
	if ok {
		time.AfterFunc(2*r.timeout, func() { c.Close() })
	}
}
