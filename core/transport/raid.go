package transport

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gofam/openfam/core/wire"
)

// Redundant regions (issue 16): the data plane's side of RAID1 and RAID5.
// Plain gets and puts reach a copy as on any item; what needs a memory
// server to act on its peers (an atomic forwarded to the mirror, a RAID5
// write with its parity delta, a reconstruction) is one OpRaid request,
// whose sub-operation is in Arg[0] (see spec/wire.md "Raid" and package
// memserver).

// Raid sub-operations (Arg[0] of an OpRaid request). Those below 16 come
// from clients with an item key; the others from memory servers with
// their region's peer key.
const (
	RaidAtomic         uint64 = 1  // atomic at the primary copy, forwarded to the other copy (RAID1) or as a parity delta (RAID5)
	RaidPut5           uint64 = 2  // RAID5 write at the data server, parity delta forwarded
	RaidOrderedPut     uint64 = 3  // write to a copy that is not current yet, ordered with its rebuild
	RaidDegradedGet    uint64 = 4  // RAID5 read of a dead server's bytes, reconstructed by the row's parity server
	RaidDegradedPut    uint64 = 5  // RAID5 write of a dead server's bytes, at the row's parity server
	RaidDegradedAtomic uint64 = 6  // RAID5 atomic on a dead server's word, at the row's parity server
	RaidPeerRead       uint64 = 16 // server to server: read a segment range
	RaidPeerWrite      uint64 = 17 // server to server: write a segment range
	RaidPeerXor        uint64 = 18 // server to server: XOR a delta into a parity range
	RaidPeerRebuild    uint64 = 19 // server to server: reconstruct a data range (parity server)
	RaidPeerCurrent    uint64 = 20 // server to server: the sender is current again (rebuilt)
)

// MirrorKey is the key that reaches an item's share in a RAID1 mirror
// segment: the item's key with the top bit of its last byte flipped.
// Holding the item key is holding both; the metadata service grants and
// revokes them together.
func MirrorKey(k Key) Key {
	k[15] ^= 0x80
	return k
}

// RaidHandler is implemented by a Memory that serves redundant regions:
// it executes one OpRaid request (header and whole payload) and returns
// the reply's payload. Errors: *Error, ErrStaleKey, ErrNotCurrent,
// *PeerDownError.
//
// buf is scratch space of wire.AtomicResultSize bytes at least, the
// served connection's own, that the reply's payload may be made in: it is
// not used again until the reply has been written, so that answering an
// atomic allocates nothing.
type RaidHandler interface {
	Raid(h wire.Header, payload, buf []byte) ([]byte, error)
}

// Refuser is implemented by a Memory that may refuse a key for a reason
// other than not knowing it: asked after Resolve said no, so it costs
// nothing on the served path.
type Refuser interface {
	Refusal(key Key) (status uint32, msg string, refused bool)
}

// ErrNotCurrent means the copy addressed is not current on that server
// (it restarted and is not rebuilt yet): read another copy, or
// reconstruct; write in order (RaidOrderedPut) or through the parity
// server.
var ErrNotCurrent = errors.New("transport: the copy on this memory server is not current (rebuilding)")

// PeerDownError means a memory server could not reach the peer (its index
// in the region) that a request needed; nothing was applied.
type PeerDownError struct {
	Peer int
	Msg  string
}

// Error names the peer and the reason it gave.
func (e *PeerDownError) Error() string { return fmt.Sprintf("peer %d: %s", e.Peer, e.Msg) }

// statusError is the client's error for a failed reply's status and
// message.
func statusError(status uint32, msg string) error {
	switch status {
	case wire.StatusStaleKey:
		return ErrStaleKey
	case wire.StatusNotCurrent:
		return ErrNotCurrent
	case wire.StatusPeerDown:
		rest, ok := strings.CutPrefix(msg, "peer ")
		if ok {
			if i := strings.IndexByte(rest, ':'); i > 0 {
				if n, err := strconv.Atoi(rest[:i]); err == nil {
					return &PeerDownError{Peer: n, Msg: strings.TrimSpace(rest[i+1:])}
				}
			}
		}
		return &PeerDownError{Peer: -1, Msg: msg}
	}
	return &Error{Code: int32(status), Msg: msg}
}

// Raid makes one OpRaid request and returns its reply's payload (in dst
// when it has the reply's length, else in a new buffer).
func (c *Client) Raid(sub uint64, key Key, a1, a2, a3 uint64, payload, dst []byte) ([]byte, error) {
	h := wire.Header{Op: wire.OpRaid, Key: key, Arg: [4]uint64{sub, a1, a2, a3}}
	// A pooled request, as the blocking calls of the data path use:
	// RAID1 atomics and the servers' forwards make one per operation.
	r, err := c.call(h, wire.OpRaid, dst, payload)
	out := r.dst
	r.put()
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RaidSmallMax is the largest payload RaidSmall takes: a redundant
// atomic's operands and id (wire.AtomicArgsSize + 8), or a memory
// server's forward of a word of up to 16 bytes with its atomic's record
// (id and result, 8 + wire.AtomicResultSize).
const RaidSmallMax = wire.AtomicArgsSize + 8

// RaidSmall is Raid for the small requests made on every redundant
// atomic: a client's RaidAtomic and the executing server's forward of
// its word. The payload (at most RaidSmallMax bytes) is copied into the
// pooled request and a reply of up to wire.AtomicResultSize bytes out of
// it into dst, so that neither buffer escapes: callers keep them on
// their stacks and the call allocates nothing. It returns the reply's
// length (a longer reply is an error). Errors as Raid.
func (c *Client) RaidSmall(sub uint64, key Key, a1, a2, a3 uint64, payload, dst []byte) (int, error) {
	if len(payload) > RaidSmallMax {
		return 0, fmt.Errorf("transport: RaidSmall payload of %d bytes, at most %d", len(payload), RaidSmallMax)
	}
	h := wire.Header{Op: wire.OpRaid, Key: key, Arg: [4]uint64{sub, a1, a2, a3}}
	r := reqs.Get().(*req)
	defer r.put()
	n := copy(r.args[:], payload)
	// The reply goes into the request's own result buffer when it has
	// the length asked (completeRaid), else into a new one.
	r.op, r.dst, r.pay[0] = wire.OpRaid, r.res[:min(len(dst), len(r.res))], r.args[:n]
	if err := c.one(h, r, r.pay[:]...); err != nil {
		return 0, err
	}
	if len(r.dst) > len(dst) {
		return 0, fmt.Errorf("%w: OpRaid reply of %d bytes, %d expected", wire.ErrMalformed, len(r.dst), len(dst))
	}
	return copy(dst, r.dst), nil
}

// PutNow writes a put's frame(s) at once and returns its Call, which the
// caller waits for next: Wait then reads the reply on the caller's own
// goroutine as Put does, with no hand-over to the connection's reader.
// Puts to different servers started one after the other and then waited
// for overlap without a goroutine each (RAID1 writes its two copies so).
// Errors as Put.
func (c *Client) PutNow(key Key, off uint64, src []byte) *Call { return c.put(key, off, src, true) }

// Sent is a put that PutSend has written and that its caller must wait
// for, once, with Wait.
type Sent struct {
	r  *req  // a one-frame put's request, from the pool Put uses
	cl *Call // a chunked put's call
}

// PutSend is PutNow without an allocation for a put of one frame (up to
// the chunk size): its request comes from the pool of the blocking calls
// and goes back to it in Wait. A RAID1 put of a small piece makes one
// per copy. Errors (from Wait) as Put.
func (c *Client) PutSend(key Key, off uint64, src []byte) Sent {
	n := len(src)
	if n == 0 || n > c.opts.ChunkSize {
		return Sent{cl: c.put(key, off, src, true)}
	}
	h := wire.Header{Op: wire.OpPut, Key: key, Arg: [4]uint64{off, uint64(n)}}
	r := reqs.Get().(*req)
	r.op = wire.OpPut
	cc, err := c.syncConn()
	if err != nil {
		r.finish(err)
		return Sent{r: r}
	}
	r.pay[0] = src
	cc.send(h, r, waitNow, r.pay[:]...)
	return Sent{r: r}
}

// Wait blocks until the put has been answered, failed or timed out, as
// Call.Wait does, and returns its error. It must be called exactly once:
// a one-frame put's request goes back to the pool.
func (s Sent) Wait() error {
	if s.cl != nil {
		return s.cl.Wait()
	}
	if s.r == nil {
		return nil
	}
	err := s.r.wait()
	s.r.put()
	return err
}

// completeRaid reads an OpRaid reply's payload.
func (cc *cconn) completeRaid(h wire.Header, r *req) error {
	if int(h.PayloadLen) != len(r.dst) {
		r.dst = make([]byte, h.PayloadLen)
	}
	_, err := io.ReadFull(cc.br, r.dst)
	return err
}

// GoCall runs fn in a goroutine and returns the Call that reports its
// result: for data planes whose operations need more than one round trip
// (redundant regions), behind the same asynchronous surface.
func GoCall(fn func() error) *Call {
	cl := &Call{}
	r := &cl.one
	cl.onep[0] = r
	cl.reqs = cl.onep[:]
	cl.sending.Add(1)
	go func() {
		defer cl.sending.Done()
		r.finish(fn())
	}()
	return cl
}

// raid serves an OpRaid request with the Memory's RaidHandler.
func (sc *sconn) raid(h wire.Header) (*replyError, error) {
	payload, err := sc.payload(h.PayloadLen)
	if err != nil {
		return nil, err
	}
	rh, ok := sc.s.mem.(RaidHandler)
	if !ok {
		return fail(codeUnimpl, "this memory server serves no redundant regions"), nil
	}
	rep, herr := rh.Raid(h, payload, sc.ares[:])
	if herr != nil {
		var e *Error
		var pd *PeerDownError
		switch {
		case errors.Is(herr, ErrStaleKey):
			return &replyError{status: wire.StatusStaleKey, msg: "unknown or revoked item key"}, nil
		case errors.Is(herr, ErrNotCurrent):
			return &replyError{status: wire.StatusNotCurrent, msg: herr.Error()}, nil
		case errors.As(herr, &pd):
			return &replyError{status: wire.StatusPeerDown, msg: pd.Error()}, nil
		case errors.As(herr, &e):
			return fail(uint32(e.Code), "%s", e.Msg), nil
		}
		return fail(codeResource, "%v", herr), nil
	}
	return nil, sc.replyOK(h, rep)
}

// refusal is the reply to a key Resolve did not give: the Memory's own
// reason when it has one (a copy being rebuilt), else a stale key.
func (sc *sconn) refusal(key Key) *replyError {
	if rf, ok := sc.s.mem.(Refuser); ok {
		if st, msg, yes := rf.Refusal(key); yes {
			return &replyError{status: st, msg: msg}
		}
	}
	return &replyError{status: wire.StatusStaleKey, msg: "unknown or revoked item key"}
}
