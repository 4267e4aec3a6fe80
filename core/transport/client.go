package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/wire"
)

// Client defaults.
const (
	DefaultConns     = 4
	DefaultTimeout   = 30 * time.Second
	DefaultChunkSize = 1 << 20
)

// errClosed is returned by calls made after Close and by those Close cut
// short.
var errClosed = fmt.Errorf("%w: client is closed", ErrUnavailable)

// Client is a pool of connections to one data-plane server. Requests are
// pipelined: each connection carries many outstanding requests told apart
// by their ids. A caller blocked on a request reads the connection's
// replies itself while nobody else does, so a lone blocking request costs
// what a raw round trip costs; a goroutine per connection reads replies
// of non-blocking requests, and small frames of these are written in
// batches. Transfers larger than the chunk size are split and spread over
// the pool.
//
// A connection that fails (reset, malformed reply, or no reply within the
// timeout) is closed, every request outstanding on it fails with an error
// wrapping ErrUnavailable, and the next call using that slot dials again.
// All methods are safe for concurrent use.
type Client struct {
	network, addr string
	opts          ClientOptions
	slots         []slot
	next          atomic.Uint64
	closed        atomic.Bool
	features      atomic.Uint64 // what the server announced in its Hello reply (wire.Feature*)
}

type slot struct {
	mu sync.Mutex
	cc *cconn
}

// live returns the slot's connection, nil when it has none.
func (s *slot) live() *cconn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cc
}

// Dial connects to the server at addr ("tcp" host:port or "unix" path),
// opening opts.Conns connections and introducing each with a Hello frame
// carrying opts.Token. It fails if any connection cannot be made within
// opts.Timeout (an error wrapping ErrUnavailable) or the server refuses the
// token (an *Error with Code 2).
func Dial(network, addr string, opts ClientOptions) (*Client, error) {
	if opts.Conns <= 0 {
		opts.Conns = DefaultConns
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	if opts.ChunkSize > wire.MaxPayload {
		opts.ChunkSize = wire.MaxPayload
	}
	if len(opts.Token) > wire.MaxToken {
		return nil, fmt.Errorf("transport: token of %d bytes exceeds %d", len(opts.Token), wire.MaxToken)
	}
	c := &Client{network: network, addr: addr, opts: opts, slots: make([]slot, opts.Conns)}
	for i := range c.slots {
		if _, err := c.conn(i); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Close closes every connection; requests still outstanding fail with an
// error wrapping ErrUnavailable and later calls fail. It waits until
// every connection's reader has stopped, so no buffer is written after it
// returns.
func (c *Client) Close() error {
	c.closed.Store(true)
	for i := range c.slots {
		s := &c.slots[i]
		s.mu.Lock()
		if s.cc != nil {
			s.cc.fail(errClosed)
			s.cc = nil
		}
		s.mu.Unlock()
	}
	return nil
}

// conn returns slot i's live connection, dialling a new one if it has none
// or the last one failed.
func (c *Client) conn(i int) (*cconn, error) {
	s := &c.slots[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.closed.Load() {
		return nil, errClosed
	}
	if s.cc != nil && !s.cc.isDead() && s.cc.alive() {
		return s.cc, nil
	}
	s.cc = nil
	nc, err := dialPatiently(c.network, c.addr, c.opts.Timeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %v", ErrUnavailable, c.network, c.addr, err)
	}
	if uc, ok := nc.(*net.UnixConn); ok {
		// Out of the network poller (see quietConn); failing that, the
		// connection works as it is.
		nc, _ = newQuietConn(uc)
	}
	cc := newCconn(nc, c)
	r := &req{op: wire.OpHello}
	cc.send(wire.Header{Op: wire.OpHello}, r, waitNow, []byte(c.opts.Token))
	if err := r.wait(); err != nil {
		cc.fail(errClosed)
		var e *Error
		if errors.As(err, &e) {
			return nil, fmt.Errorf("transport: %s %s refused the connection: %w", c.network, c.addr, err)
		}
		return nil, err
	}
	c.features.Store(r.res64[0])
	s.cc = cc
	return cc, nil
}

// dialPatiently is net.DialTimeout, but a Unix socket whose listen backlog
// is full (connect fails at once with EAGAIN, where TCP would queue the SYN)
// is tried again, with growing pauses, until timeout: a burst of other
// connections, say a flood from another user, must not make a well-behaved
// client fail while the server drains its backlog.
func dialPatiently(network, addr string, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for {
		nc, err := net.DialTimeout(network, addr, time.Until(deadline))
		if err == nil || !errors.Is(err, syscall.EAGAIN) || time.Now().Add(pause).After(deadline) {
			return nc, err
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// pick returns the first of n consecutive slot numbers for a request of n
// pieces, spreading successive requests over the pool.
func (c *Client) pick(n int) int {
	return int((c.next.Add(uint64(n)) - uint64(n)) % uint64(len(c.slots)))
}

// Call is an operation in flight, made of one request or, for a chunked
// transfer, several. The buffer passed to the method that returned it must
// be left alone until Wait returns.
type Call struct {
	reqs    []*req
	sending sync.WaitGroup // goroutines still sending pieces
	once    sync.Once
	res     error
	one     req     // the request of a one-frame operation
	onep    [1]*req // backs reqs for a one-frame operation
	subs    []*Call // the calls a Group waits for (see group.go)
}

// Wait blocks until every piece of the operation has been answered, failed,
// or timed out (ClientOptions.Timeout after it was sent), and returns the
// first error: an *Error or ErrStaleKey from the server, or an error
// wrapping ErrUnavailable. It can be called more than once and from any
// goroutine; later calls return the same result.
func (cl *Call) Wait() error {
	cl.once.Do(func() {
		for _, sc := range cl.subs {
			if err := sc.Wait(); err != nil && cl.res == nil {
				cl.res = err
			}
		}
		cl.sending.Wait()
		for _, r := range cl.reqs {
			if err := r.wait(); err != nil && cl.res == nil {
				cl.res = err
			}
		}
	})
	return cl.res
}

// piece is one request frame of an operation.
type piece struct {
	slot    int
	h       wire.Header
	r       *req
	payload [][]byte
}

// start sends the pieces of one operation. Pieces bound for different
// connections are sent in parallel, one goroutine per connection, so a
// large transfer keeps every connection of the pool busy. sync says that
// the caller waits for the call at once, so that it can read a lone
// piece's reply itself.
func (c *Client) start(ps []piece, sync bool) *Call {
	cl := &Call{reqs: make([]*req, len(ps))}
	for k := range ps {
		cl.reqs[k] = ps[k].r
	}
	if len(ps) == 1 {
		mode := direct
		if sync {
			mode = waitNow
		}
		c.sendPieces(ps, 0, 1, mode)
		return cl
	}
	n := min(len(ps), len(c.slots))
	cl.sending.Add(n)
	for j := 0; j < n; j++ {
		go func() {
			defer cl.sending.Done()
			c.sendPieces(ps, j, n, direct)
		}()
	}
	return cl
}

// sendPieces sends ps[first], ps[first+step], ... in order. Once one fails
// to go out, the rest fail with the same error unsent, so that a dead
// server costs one timeout, not one per piece.
func (c *Client) sendPieces(ps []piece, first, step int, mode sendMode) {
	var failed error
	for k := first; k < len(ps); k += step {
		p := &ps[k]
		if p.r.fin.Load() { // failed before sending (see strided)
			continue
		}
		if failed != nil {
			p.r.finish(failed)
			continue
		}
		cc, err := c.conn(p.slot % len(c.slots))
		if err != nil {
			failed = err
			p.r.finish(err)
			continue
		}
		cc.send(p.h, p.r, mode, p.payload...)
		if p.r.fin.Load() {
			failed = p.r.err
		}
	}
}

// pickSync returns the slot for a request its caller waits for at once:
// the first connection with nothing outstanding but lazy atomics, else the
// next in turn.
// A thread making blocking calls one after another thus keeps to one
// connection, whose server end is then still polling for its next request
// (ServerOptions.Spin) instead of asleep, as the others would be; callers
// running at the same time still spread over the pool.
func (c *Client) pickSync() int {
	for i := range c.slots {
		cc := c.slots[i].live()
		if cc == nil {
			continue
		}
		cc.mu.Lock()
		// Lazy atomics queued here do not make it busy: a blocking call
		// sent behind them on the same connection also sees their
		// effects, as the thread that issued them expects.
		idle := cc.pending.len() == cc.lazyOut && !cc.dead
		cc.mu.Unlock()
		if idle {
			return i
		}
	}
	return c.pick(1)
}

// reqs recycles the requests of blocking one-frame calls (Get, Put,
// Atomic), so that the small operations a PE makes in its inner loops
// allocate nothing.
var reqs = sync.Pool{New: func() any { return new(req) }}

// call is one for the blocking calls of the data path: a pooled request
// of op, its reply's data going to dst. The caller reads what it needs
// from the request and hands it back with put; nothing refers to a
// request once wait has returned (it is out of pending, and every
// reader is done with it before it is marked finished).
func (c *Client) call(h wire.Header, op wire.Op, dst, payload []byte) (*req, error) {
	r := reqs.Get().(*req)
	r.op, r.dst = op, dst
	n := 0
	if payload != nil {
		r.pay[0], n = payload, 1
	}
	err := c.one(h, r, r.pay[:n]...)
	return r, err
}

// put clears r and returns it to the pool.
func (r *req) put() {
	r.op, r.dst, r.fd, r.cc, r.id, r.err, r.wake, r.lazy = 0, nil, nil, nil, 0, nil, nil, false
	r.pay[0] = nil
	r.deadline = 0
	r.fin.Store(false)
	reqs.Put(r)
}

// syncConn returns the connection for a request its caller waits for at
// once, as conn(pickSync()) would, taking each lock once on the way: the
// first idle connection that is still alive, else the next in turn.
func (c *Client) syncConn() (*cconn, error) {
	if c.closed.Load() {
		return nil, errClosed
	}
	for i := range c.slots {
		cc := c.slots[i].live()
		if cc == nil {
			continue
		}
		cc.mu.Lock()
		idle := cc.pending.len() == cc.lazyOut && !cc.dead
		cc.mu.Unlock()
		if !idle {
			continue
		}
		if cc.alive() {
			return cc, nil
		}
		return c.conn(i) // closed by the server: dial this slot again
	}
	return c.conn(c.pick(1))
}

// one sends a single-frame request on an idle connection and waits.
func (c *Client) one(h wire.Header, r *req, payload ...[]byte) error {
	cc, err := c.syncConn()
	if err != nil {
		return err
	}
	cc.send(h, r, waitNow, payload...)
	return r.wait()
}

// single starts a one-frame operation with a single allocation: the Call
// holds its request.
func (c *Client) single(h wire.Header, dst, payload []byte, sync bool) *Call {
	cl := &Call{}
	r := &cl.one
	r.op, r.dst = h.Op, dst
	cl.onep[0] = r
	cl.reqs = cl.onep[:]
	slot := c.pick(1)
	if sync {
		slot = c.pickSync()
	}
	cc, err := c.conn(slot)
	if err != nil {
		r.finish(err)
		return cl
	}
	mode := queued
	if sync {
		mode = waitNow
	}
	if payload == nil {
		cc.send(h, r, mode)
	} else {
		r.pay[0] = payload
		cc.send(h, r, mode, r.pay[:]...)
	}
	return cl
}

// split cuts n units into pieces of at most size (one empty piece when n
// is 0, so that the server judges the empty request) and returns their
// bounds.
func split(n, size uint64) [][2]uint64 {
	if n == 0 {
		return [][2]uint64{{0, 0}}
	}
	out := make([][2]uint64, 0, (n+size-1)/size)
	for lo := uint64(0); lo < n; lo += size {
		out = append(out, [2]uint64{lo, min(lo+size, n)})
	}
	return out
}

// GetAsync starts reading len(dst) bytes at off in the item into dst.
func (c *Client) GetAsync(key Key, off uint64, dst []byte) *Call { return c.get(key, off, dst, false) }

func (c *Client) get(key Key, off uint64, dst []byte, sync bool) *Call {
	if n := len(dst); n > 0 && n <= c.opts.ChunkSize {
		h := wire.Header{Op: wire.OpGet, Key: key, Arg: [4]uint64{off, uint64(n)}}
		return c.single(h, dst, nil, sync)
	}
	parts := split(uint64(len(dst)), uint64(c.opts.ChunkSize))
	base := c.pick(len(parts))
	ps := make([]piece, len(parts))
	for k, b := range parts {
		h := wire.Header{Op: wire.OpGet, Key: key, Arg: [4]uint64{off + b[0], b[1] - b[0]}}
		ps[k] = piece{slot: base + k, h: h, r: &req{op: wire.OpGet, dst: dst[b[0]:b[1]]}}
	}
	return c.start(ps, sync)
}

// PutAsync starts writing src at off in the item.
func (c *Client) PutAsync(key Key, off uint64, src []byte) *Call { return c.put(key, off, src, false) }

func (c *Client) put(key Key, off uint64, src []byte, sync bool) *Call {
	if n := len(src); n > 0 && n <= c.opts.ChunkSize {
		h := wire.Header{Op: wire.OpPut, Key: key, Arg: [4]uint64{off, uint64(n)}}
		return c.single(h, nil, src, sync)
	}
	parts := split(uint64(len(src)), uint64(c.opts.ChunkSize))
	base := c.pick(len(parts))
	ps := make([]piece, len(parts))
	for k, b := range parts {
		h := wire.Header{Op: wire.OpPut, Key: key, Arg: [4]uint64{off + b[0], b[1] - b[0]}}
		ps[k] = piece{slot: base + k, h: h, r: &req{op: wire.OpPut}, payload: [][]byte{src[b[0]:b[1]]}}
	}
	return c.start(ps, sync)
}

// Get reads len(dst) bytes at off in the item into dst. Errors: *Error
// with Code 4 (empty dst), 13 (beyond the item), 2 (no read right);
// ErrStaleKey; ErrUnavailable.
func (c *Client) Get(key Key, off uint64, dst []byte) error {
	if n := len(dst); n > 0 && n <= c.opts.ChunkSize {
		h := wire.Header{Op: wire.OpGet, Key: key, Arg: [4]uint64{off, uint64(n)}}
		r, err := c.call(h, wire.OpGet, dst, nil)
		r.put()
		return err
	}
	return c.get(key, off, dst, true).Wait()
}

// Put writes src at off in the item; errors as Get (write right needed).
func (c *Client) Put(key Key, off uint64, src []byte) error {
	if n := len(src); n > 0 && n <= c.opts.ChunkSize {
		h := wire.Header{Op: wire.OpPut, Key: key, Arg: [4]uint64{off, uint64(n)}}
		r, err := c.call(h, wire.OpPut, nil, src)
		r.put()
		return err
	}
	return c.put(key, off, src, true).Wait()
}

// elemChunk is how many elements of esize bytes (plus per bytes of index
// each) one frame carries.
func (c *Client) elemChunk(esize, per uint64) uint64 {
	if m := uint64(c.opts.ChunkSize) / (esize + per); m > 0 {
		return m
	}
	return 1
}

func bufCheck(buf []byte, n, esize uint64) error {
	if hi, lo := bits.Mul64(n, esize); hi != 0 || lo > uint64(len(buf)) {
		return &Error{Code: codeInvalid, Msg: fmt.Sprintf("local buffer of %d bytes holds fewer than %d elements of %d bytes", len(buf), n, esize)}
	}
	return nil
}

func (c *Client) strided(op wire.Op, key Key, buf []byte, n, first, stride, esize uint64) error {
	if err := bufCheck(buf, n, esize); err != nil {
		return err
	}
	if esize > wire.MaxPayload {
		return &Error{Code: codeInvalid, Msg: fmt.Sprintf("element of %d bytes exceeds the frame limit", esize)}
	}
	m := n
	if esize > 0 {
		m = c.elemChunk(esize, 0)
	}
	parts := split(n, max(m, 1))
	base := c.pick(len(parts))
	ps := make([]piece, len(parts))
	for k, b := range parts {
		lo, hi := b[0], b[1]
		p := piece{slot: base + k, r: &req{op: op}}
		part := buf[lo*esize : hi*esize]
		if op == wire.OpGatherStrided {
			p.r.dst = part
		} else {
			p.payload = [][]byte{part}
		}
		if lo != 0 && stride > (^uint64(0)-first)/lo {
			// A piece whose first index overflows is out of range in any
			// item; the server checks the others.
			p.r.finish(&Error{Code: codeOutOfRange, Msg: fmt.Sprintf("element %d's index overflows", lo)})
		}
		p.h = wire.Header{Op: op, Key: key, Arg: [4]uint64{first + lo*stride, hi - lo, stride, esize}}
		ps[k] = p
	}
	return c.start(ps, true).Wait()
}

func (c *Client) indexed(op wire.Op, key Key, buf []byte, index []uint64, esize uint64) error {
	n := uint64(len(index))
	if err := bufCheck(buf, n, esize); err != nil {
		return err
	}
	if esize > wire.MaxPayload-8 {
		return &Error{Code: codeInvalid, Msg: fmt.Sprintf("element of %d bytes exceeds the frame limit", esize)}
	}
	parts := split(n, c.elemChunk(esize, 8))
	base := c.pick(len(parts))
	ps := make([]piece, len(parts))
	for k, b := range parts {
		lo, hi := b[0], b[1]
		idx := make([]byte, 8*(hi-lo))
		for i, e := range index[lo:hi] {
			binary.LittleEndian.PutUint64(idx[8*i:], e)
		}
		p := piece{slot: base + k, r: &req{op: op}, payload: [][]byte{idx},
			h: wire.Header{Op: op, Key: key, Arg: [4]uint64{0, hi - lo, 0, esize}}}
		part := buf[lo*esize : hi*esize]
		if op == wire.OpGatherIndexed {
			p.r.dst = part
		} else {
			p.payload = append(p.payload, part)
		}
		ps[k] = p
	}
	return c.start(ps, true).Wait()
}

// GatherStrided reads n elements of esize bytes, element i from item byte
// (first+i*stride)*esize, densely into dst (at least n*esize bytes). The
// server checks every element of a frame before reading any. Errors:
// *Error with Code 4 (n or esize zero, dst too small), 13 (an element
// beyond the item), 2; ErrStaleKey; ErrUnavailable.
func (c *Client) GatherStrided(key Key, dst []byte, n, first, stride, esize uint64) error {
	return c.strided(wire.OpGatherStrided, key, dst, n, first, stride, esize)
}

// ScatterStrided writes n dense elements of src to the item, element i at
// byte (first+i*stride)*esize. Nothing is written if any element is out of
// range, as long as the elements fit one frame (ChunkSize bytes); a larger
// scatter is split and each piece is checked on its own. Errors as
// GatherStrided (write right needed).
func (c *Client) ScatterStrided(key Key, src []byte, n, first, stride, esize uint64) error {
	return c.strided(wire.OpScatterStrided, key, src, n, first, stride, esize)
}

// GatherIndexed reads len(index) elements, element i from item byte
// index[i]*esize, densely into dst. Errors as GatherStrided.
func (c *Client) GatherIndexed(key Key, dst []byte, index []uint64, esize uint64) error {
	return c.indexed(wire.OpGatherIndexed, key, dst, index, esize)
}

// ScatterIndexed writes len(index) dense elements of src, element i to item
// byte index[i]*esize, with the all-or-nothing rule of ScatterStrided.
// Errors as ScatterStrided.
func (c *Client) ScatterIndexed(key Key, src []byte, index []uint64, esize uint64) error {
	return c.indexed(wire.OpScatterIndexed, key, src, index, esize)
}

// Atomic performs op on the kind-sized word at off in the item at the
// server and returns the word's previous value (see amo.Do). fetch says
// the caller reads that value, which then needs the read right too.
// Errors: *Error with Code 4 (op undefined for kind, misaligned), 13, 2;
// ErrStaleKey; ErrUnavailable.
func (c *Client) Atomic(key Key, off uint64, kind amo.Kind, op amo.Op, v, cmp amo.Value, fetch bool) (amo.Value, error) {
	r := reqs.Get().(*req)
	defer r.put()
	args := &r.args
	le := binary.LittleEndian
	le.PutUint64(args[0:], v.Lo)
	le.PutUint64(args[8:], v.Hi)
	le.PutUint64(args[16:], cmp.Lo)
	le.PutUint64(args[24:], cmp.Hi)
	h := wire.Header{Op: wire.OpAtomic, Key: key, Arg: [4]uint64{off, uint64(kind), uint64(op)}}
	if fetch {
		h.Flags = wire.FlagFetch
	}
	r.op, r.pay[0] = wire.OpAtomic, args[:wire.AtomicArgsSize]
	if err := c.one(h, r, r.pay[:]...); err != nil {
		return amo.Value{}, err
	}
	return amo.Value{Lo: le.Uint64(r.res[0:]), Hi: le.Uint64(r.res[8:])}, nil
}

// AtomicAsync starts a non-fetching atomic op (amo.Set, Add, Subtract,
// Min, Max, And, Or, Xor) on the kind-sized word at off in the item, as
// OpenFAM's fam_add and friends do: the request is queued, written in a
// batch with the requests queued next to it, and its reply collected
// when the Call is waited for (fam_quiet, fam_fence); the Call reports the
// server's error, if any. Nobody waits for the frame to be written: it
// goes out with the next blocking call on its connection, when the queue
// fills, when the Call is waited for, or after lazyDelay at the latest.
// Every such request goes on the pool's first connection, so that they
// apply in the order issued and a quiet collects them all from one
// connection.
func (c *Client) AtomicAsync(key Key, off uint64, kind amo.Kind, op amo.Op, v amo.Value) *Call {
	cl := &Call{}
	r := &cl.one
	// The arguments live in the request, which the Call holds anyway:
	// one allocation per atomic. They are copied into the write queue.
	args := &r.args
	le := binary.LittleEndian
	le.PutUint64(args[0:], v.Lo)
	le.PutUint64(args[8:], v.Hi)
	h := wire.Header{Op: wire.OpAtomic, Key: key, Arg: [4]uint64{off, uint64(kind), uint64(op)}}
	r.op = wire.OpAtomic
	cl.onep[0] = r
	cl.reqs = cl.onep[:]
	cc, err := c.conn(0)
	if err != nil {
		r.finish(err)
		return cl
	}
	r.pay[0] = args[:wire.AtomicArgsSize]
	cc.send(h, r, lazy, r.pay[:]...)
	return cl
}

// OpenFD asks the server for the file holding the item, to map it on this
// host: the file (the caller owns and closes it; opened read-only unless
// rights has RightWrite), the item's offset in it, its size and the
// rights. Only a server reached over a Unix socket with an FDSource
// answers; others give an *Error with Code 16.
func (c *Client) OpenFD(key Key) (f *os.File, offset, size uint64, rights uint8, err error) {
	r := &req{op: wire.OpOpenFD}
	if err := c.one(wire.Header{Op: wire.OpOpenFD, Key: key}, r); err != nil {
		return nil, 0, 0, 0, err
	}
	return r.fd, r.res64[0], r.res64[1], uint8(r.res64[2]), nil
}

// Control makes a control call over the data plane (see Controller):
// method and session as the server's Controller understands them, req the
// encoded request (msg). It returns the encoded reply and, when the server
// passed one (Unix sockets), the descriptor of the item the reply names
// with its offset in the file, size and rights; the caller owns it. A
// server that does not serve the call answers an *Error with Code 16:
// make it on the control plane.
func (c *Client) Control(method, session uint64, msg []byte) (rep []byte, fd *os.File, off, size uint64, rights uint8, err error) {
	if c.features.Load()&wire.FeatureControl == 0 {
		// An older server would take the request for a malformed frame
		// and close the connection.
		return nil, nil, 0, 0, 0, &Error{Code: codeUnimpl, Msg: "the server serves no control calls on its data plane"}
	}
	r := &req{op: wire.OpControl}
	h := wire.Header{Op: wire.OpControl, Arg: [4]uint64{method, session}}
	if err := c.one(h, r, msg); err != nil {
		return nil, nil, 0, 0, 0, err
	}
	return r.dst, r.fd, r.res64[0], r.res64[1], uint8(r.res64[2]), nil
}

// ControlAsync sends a control call whose reply nobody waits for at once
// (fam_close telling the server a key is no longer used): it is queued as
// non-fetching atomics are (see AtomicAsync), on the pool's first
// connection, and goes out with the next blocking call there, or soon
// after. The Call reports the outcome when waited for; the reply itself
// is dropped. A server that does not serve control calls gets nothing:
// an *Error with Code 16 is returned at once.
func (c *Client) ControlAsync(method, session uint64, msg []byte) (*Call, error) {
	if c.features.Load()&wire.FeatureControl == 0 {
		return nil, &Error{Code: codeUnimpl, Msg: "the server serves no control calls on its data plane"}
	}
	cl := &Call{}
	r := &cl.one
	r.op = wire.OpControl
	cl.onep[0] = r
	cl.reqs = cl.onep[:]
	cc, err := c.conn(0)
	if err != nil {
		r.finish(err)
		return cl, nil
	}
	cc.send(wire.Header{Op: wire.OpControl, Arg: [4]uint64{method, session}}, r, lazy, msg)
	return cl, nil
}

// Frames returns how many frames have been sent on each connection of the
// pool since it was dialled (its Hello included; 0 for a slot without a
// live connection): which connections a client's calls use, for tests and
// diagnostics.
func (c *Client) Frames() []uint64 {
	out := make([]uint64, len(c.slots))
	for i := range c.slots {
		cc := c.slots[i].live()
		if cc == nil {
			continue
		}
		cc.mu.Lock()
		out[i] = cc.nextID
		cc.mu.Unlock()
	}
	return out
}

// Ping makes one round trip on one connection of the pool.
func (c *Client) Ping() error { return c.one(wire.Header{Op: wire.OpPing}, &req{op: wire.OpPing}) }

// req is one request frame awaiting its reply.
type req struct {
	op       wire.Op
	dst      []byte // where a Get or Gather reply's data goes
	res      [wire.AtomicResultSize]byte
	res64    [4]uint64 // OpenFD, FabricKey reply arguments
	fd       *os.File
	cc       *cconn
	id       uint64
	deadline int64         // on monoNow's clock (see monoDeadline)
	err      error         // the outcome, final once fin is set
	fin      atomic.Bool   // completed
	wake     chan struct{} // made by a waiter that must block; cc.mu guards it
	lazy     bool          // sent lazy (see sendMode); cc.mu guards it

	// A one-frame request's payload, held here so that sending it
	// allocates nothing: an atomic's arguments (the first
	// wire.AtomicArgsSize bytes; a redundant atomic's, with its id, or a
	// memory server's forward of a word: RaidSmall), and the slice of
	// payloads send takes.
	args [RaidSmallMax]byte
	pay  [1][]byte
}

// finish completes a request that was never sent.
func (r *req) finish(err error) {
	r.err = err
	r.fin.Store(true)
}

// completeLocked completes r with err (nil keeps an error reply's) and
// returns the channel to close for its blocked waiter, if any; cc.mu must
// be held.
func (r *req) completeLocked(err error) chan struct{} {
	if err != nil {
		r.err = err
	}
	// Once fin is set the waiter may return and recycle r (see call):
	// nothing of r is touched after.
	w := r.wake
	r.fin.Store(true)
	return w
}

// wait returns the request's outcome, failing its connection when no reply
// came before the deadline. When nobody is reading the connection, the
// waiter reads it itself (see cconn.lead), so that a lone synchronous
// request costs no hand-over between goroutines.
func (r *req) wait() error {
	if r.fin.Load() {
		return r.err
	}
	cc := r.cc
	if cc == nil {
		panic("transport: waiting for a request that was neither sent nor finished")
	}
	if cc.queued.Load() {
		cc.flush() // r's frame may still be queued
	}
	cc.mu.Lock()
	if r.fin.Load() {
		cc.mu.Unlock()
		return r.err
	}
	if !cc.reading {
		cc.reading = true
		cc.mu.Unlock()
		return cc.lead(r)
	}
	if r.wake == nil {
		r.wake = make(chan struct{})
	}
	wake := r.wake
	cc.mu.Unlock()
	t := time.NewTimer(time.Duration(r.deadline - monoNow()))
	defer t.Stop()
	select {
	case <-wake:
	case <-t.C:
		cc.fail(fmt.Errorf("no reply within %v", cc.cl.opts.Timeout))
		<-wake
	}
	return r.err
}

// cconn is one client connection. Its replies are read by whoever holds
// the read role (reading): a waiter whose request is outstanding and finds
// the role free reads frames, delivering other requests' replies on the
// way, until its own arrives; the background goroutine reads when
// requests are outstanding that no waiter is reading for. Holding the role
// is the right to use br and to write into requests' buffers.
type cconn struct {
	c  net.Conn
	cl *Client
	br *bufio.Reader
	rw *rawWriter // writes small batches to c (see rawio.go); cc.wmu's holder uses it

	wmu    sync.Mutex            // serialises writes to the socket and guards the fields below
	wdl    int64                 // write deadline now set, on monoNow's clock; 0: none
	whdr   [wire.HeaderSize]byte // a large frame's header
	wv     net.Buffers           // a large frame's pieces
	wva    [3][]byte             // backs wv
	wspare batch                 // the queue's other batch, free while no batch is written

	qmu        sync.Mutex    // guards the write queue; taken after wmu
	wq         batch         // queued frames (see queue)
	wqDeadline int64         // deadline of the first queued frame (monoNow's clock)
	queued     atomic.Bool   // wq is not empty; read without locks
	flushKick  chan struct{} // asks the flusher to write the queue

	rdl int64 // read deadline now set, on monoNow's clock (0: none); the read role's holder owns it

	lastSend atomic.Int64 // when a frame was last sent, on monoNow's clock

	mu      sync.Mutex
	pending pendingSet
	lazyOut int // how many of pending were sent lazy
	nextID  uint64
	reading bool // someone holds the read role; stays set once dead
	dead    bool
	cause   error
	fds     []*os.File // descriptors received and not yet matched to a reply

	kick chan struct{} // asks the background reader to read outstanding replies
	// lazyKick asks the background reader to flush the queue and read
	// outstanding replies after lazyDelay, unless a waiter does first.
	lazyKick chan struct{}
	done     chan struct{} // closed once the connection is torn down

	spin *spinReader // polls for a waiting caller's reply; nil without Spin
}

func newCconn(nc net.Conn, cl *Client) *cconn {
	cc := &cconn{c: nc, cl: cl, rw: newRawWriter(nc), kick: make(chan struct{}, 1), lazyKick: make(chan struct{}, 1),
		flushKick: make(chan struct{}, 1), done: make(chan struct{})}
	var r io.Reader = nc
	var fr *fdReader
	if uc, ok := nc.(msgReader); ok {
		fr = &fdReader{uc: uc, cc: cc, oob: make([]byte, unix.CmsgSpace(4*4))}
		r = fr
	}
	if sr := newSpinReader(nc, cl.opts.Spin); sr != nil {
		sr.fdr = fr
		r = sr
		cc.spin = sr
	}
	cc.br = bufio.NewReaderSize(r, 64<<10)
	go cc.background()
	go cc.flusher()
	return cc
}

func (cc *cconn) isDead() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.dead
}

// idleProbe is how long a connection may go without sending before its
// next use checks that the server has not closed it.
const idleProbe = time.Millisecond

// alive reports whether a connection that has been idle may be reused.
// Nobody reads an idle connection (replies are read on demand), so a
// server that closed it or died would go unnoticed until the next request
// failed; a non-blocking peek finds that out first, and a closed
// connection is torn down so that the caller dials again.
func (cc *cconn) alive() bool {
	now := monoNow()
	if now-cc.lastSend.Load() < int64(idleProbe) {
		return true
	}
	sc, ok := cc.c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	var cause error
	rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := recvmsg(int(fd), b[:], nil, unix.MSG_PEEK|unix.MSG_DONTWAIT) // unix.Recvfrom allocates the address
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
		case err != nil:
			cause = err
		case n == 0:
			cause = io.EOF
		}
	})
	if cause == nil {
		cc.lastSend.Store(now)
		return true
	}
	cc.fail(cause)
	return false
}

// How a request is sent.
type sendMode uint8

const (
	// waitNow: the caller waits for the reply at once and reads it itself.
	waitNow sendMode = iota
	// direct: nobody waits yet, so the background reader is woken for
	// the reply; the frame is written before send returns.
	direct
	// queued: as direct, but a small frame may be queued and written in a
	// batch with others (see queue).
	queued
	// lazy: as queued, but neither the flusher nor the background reader
	// is woken at once: the caller will most likely wait soon (fam_quiet
	// after fam_add) and then write and read for itself, which saves two
	// goroutine hand-overs; if it does not, the background reader writes
	// and reads after lazyDelay.
	lazy
)

// A lazy atomic (fam_add and friends) sent on a connection with nothing
// else outstanding is written at once by its caller, still without
// waking anyone: the round trip then runs while the caller goes on to
// its fam_quiet, which finds the reply on its way or arrived instead of
// only starting it, and the write costs the same system call it would
// have cost there. Atomics issued while others are outstanding are
// queued and go out in one batch as before, so a burst of fam_add costs
// two writes (its first frame, then the rest), not one per frame. The
// connection is idle then, so the write does not wait for buffer space.
// Lazy control calls (fam_close) stay queued: they ride with the
// caller's next blocking call.

// lazyDelay bounds how long a lazy frame may wait unsent, or its reply
// unread, when its caller does not wait for it.
const lazyDelay = 200 * time.Microsecond

// send registers r and writes its frame as mode says. A write failure
// fails the whole connection, which completes r with the error.
func (cc *cconn) send(h wire.Header, r *req, mode sendMode, payload ...[]byte) {
	// One monotonic clock read dates the request and the send: time.Now
	// (two clocks) and time.Time's arithmetic cost more on every small
	// request.
	now := monoNow()
	r.cc = cc
	r.deadline = monoDeadline(now, cc.cl.opts.Timeout)
	cc.lastSend.Store(now)
	plen := 0
	for _, p := range payload {
		plen += len(p)
	}
	h.PayloadLen = uint32(plen)
	cc.mu.Lock()
	if cc.dead {
		r.completeLocked(cc.unavailable())
		cc.mu.Unlock()
		return
	}
	cc.nextID++
	h.ID = cc.nextID
	r.id = h.ID
	cc.pending.add(r)
	// A lazy atomic on a connection with nothing else outstanding goes
	// out at once (see the note above lazyDelay); behind others it is
	// queued.
	eager := false
	if mode == lazy {
		r.lazy = true
		cc.lazyOut++
		eager = h.Op == wire.OpAtomic && cc.pending.len() == 1 && !cc.reading
	}
	if mode == lazy && plen > maxQueued {
		mode = direct // too big to queue: written now, read by the background reader
	}
	wake := mode != waitNow && !cc.reading
	cc.mu.Unlock()
	if wake && mode != lazy {
		cc.wake()
	}
	if plen <= maxQueued {
		if mode == queued {
			cc.queue(&h, r, payload, true)
			return
		}
		if mode == lazy && eager {
			cc.wmu.Lock()
			cc.qmu.Lock()
			cc.appendLocked(&h, r, payload, false)
			cc.qmu.Unlock()
			err := cc.flushLocked()
			cc.wmu.Unlock()
			if err != nil {
				cc.fail(err)
				return
			}
		} else if mode == lazy {
			cc.queue(&h, r, payload, false)
		}
		if mode == lazy {
			// Only now that the frame is queued (or written) may
			// someone be asked to write it and read the reply: a reader
			// woken before would block on a reply to a request still in
			// the queue. One holding the read role already writes
			// nothing: the flusher does.
			cc.mu.Lock()
			reading := cc.reading
			cc.mu.Unlock()
			kick := cc.lazyKick
			if reading {
				kick = cc.flushKick
			}
			select {
			case kick <- struct{}{}:
			default:
			}
			return
		}
		// Copying a small payload behind the header (and any frames
		// queued before it) costs less than a gathering write.
		cc.wmu.Lock()
		var err error
		if !cc.queued.Load() {
			// Nothing queued to go first (frames this goroutine
			// queued earlier would show here): the frame goes out
			// alone, without the queue's lock and flags.
			err = cc.writeAlone(&h, r.deadline, payload)
		} else {
			cc.qmu.Lock()
			cc.appendLocked(&h, r, payload, false)
			cc.qmu.Unlock()
			err = cc.flushLocked()
		}
		cc.wmu.Unlock()
		if err != nil {
			cc.fail(err)
		}
		return
	}
	cc.wmu.Lock()
	// Frames queued before this one go first, to keep the order of sends.
	err := cc.flushLocked()
	if err == nil {
		h.Encode(cc.whdr[:])
		cc.wv = append(net.Buffers(cc.wva[:0]), cc.whdr[:])
		for _, p := range payload {
			if len(p) > 0 {
				cc.wv = append(cc.wv, p)
			}
		}
		cc.setWriteDeadline(r.deadline)
		_, err = cc.wv.WriteTo(cc.c)
		cc.wva = [3][]byte{} // drop the references to the caller's buffers
	}
	cc.wmu.Unlock()
	if err != nil {
		cc.fail(err)
	}
}

// Small frames of requests nobody waits for yet are queued and written in
// batches: a goroutine issuing many non-blocking operations then pays one
// system call per batch, not per frame, and the server one read and one
// reply write per batch. Successive frames still go to successive
// connections, so that independent requests run in parallel at the server
// and a slow one holds up only those behind it on its connection.
const (
	maxQueued = 16 << 10 // largest payload of a queued frame
	queueSize = 64 << 10 // a queue this long is written at once
	// minRef is the smallest payload of a non-blocking request that the
	// queue refers to instead of copying: its caller leaves the buffer
	// alone until the reply, and a gathering write of it costs less than
	// copying it into the batch.
	minRef = 1 << 10
)

// batch is a run of queued frames in the order they were queued: headers
// and small payloads copied into buf, and payloads that the batch refers
// to. parts holds the pieces to write, buf's bytes from mark on not yet
// among them; while it is empty the batch is buf alone.
type batch struct {
	buf   []byte
	parts net.Buffers
	mark  int
	size  int // bytes queued
}

// add appends a frame: h's encoding and the payload, referring to pieces
// of at least minRef bytes when ref is set.
func (q *batch) add(h *wire.Header, payload [][]byte, ref bool) {
	n := len(q.buf)
	// Extending by make does not allocate; the header is encoded in place.
	q.buf = append(q.buf, make([]byte, wire.HeaderSize)...)
	h.Encode(q.buf[n:])
	q.size += wire.HeaderSize
	for _, p := range payload {
		q.size += len(p)
		if !ref || len(p) < minRef {
			q.buf = append(q.buf, p...)
			continue
		}
		if len(q.buf) > q.mark {
			// Should buf grow later, this piece keeps the bytes it
			// covers: appends go to the new array.
			q.parts = append(q.parts, q.buf[q.mark:])
			q.mark = len(q.buf)
		}
		q.parts = append(q.parts, p)
	}
}

// writeTo writes the batch to w and empties it, keeping its storage unless
// one huge batch made it large and dropping its references to callers'
// buffers.
func (q *batch) writeTo(w *rawWriter) error {
	var err error
	if len(q.parts) == 0 {
		_, err = w.Write(q.buf)
	} else {
		if len(q.buf) > q.mark {
			q.parts = append(q.parts, q.buf[q.mark:])
		}
		v := q.parts             // WriteTo consumes its receiver
		_, err = v.WriteTo(w.nc) // writev(2)
		clear(q.parts)
	}
	if cap(q.buf) > 2*queueSize {
		q.buf = nil
	}
	q.buf, q.parts, q.mark, q.size = q.buf[:0], q.parts[:0], 0, 0
	return err
}

// queue appends r's frame (header h) to the write queue and has it
// written soon: by the flusher goroutine (when kick is set; else by the
// background reader after lazyDelay), by the next direct send, by a
// waiter, or here when the queue is full.
func (cc *cconn) queue(h *wire.Header, r *req, payload [][]byte, kick bool) {
	cc.qmu.Lock()
	first := cc.wq.size == 0
	cc.appendLocked(h, r, payload, true)
	full := cc.wq.size >= queueSize
	cc.qmu.Unlock()
	if full {
		cc.flush()
		return
	}
	if first && kick {
		select {
		case cc.flushKick <- struct{}{}:
		default:
		}
	}
}

// appendLocked adds r's frame (header h) to the write queue, referring to
// large payload pieces when ref is set (see minRef); cc.qmu must be held.
func (cc *cconn) appendLocked(h *wire.Header, r *req, payload [][]byte, ref bool) {
	if cc.wq.size == 0 {
		cc.wqDeadline = r.deadline
	}
	cc.wq.add(h, payload, ref)
	cc.queued.Store(true)
}

// flush writes the queued frames; a failure fails the connection.
func (cc *cconn) flush() {
	cc.wmu.Lock()
	err := cc.flushLocked()
	cc.wmu.Unlock()
	if err != nil {
		cc.fail(err)
	}
}

// flushLocked writes the queued frames; cc.wmu must be held. The queue
// is swapped for the spare buffer first, so that frames can be queued
// while the batch is being written.
func (cc *cconn) flushLocked() error {
	cc.qmu.Lock()
	if cc.wq.size == 0 {
		cc.qmu.Unlock()
		return nil
	}
	dl := cc.wqDeadline
	cc.wq, cc.wspare = cc.wspare, cc.wq
	cc.queued.Store(false)
	cc.qmu.Unlock()
	cc.setWriteDeadline(dl)
	return cc.wspare.writeTo(cc.rw)
}

// writeAlone writes one small frame (header h, payload copied behind it)
// built in the spare batch, which is free while cc.wmu is held outside
// flushLocked; cc.wmu must be held and the queue found empty. A blocking
// call's request thus skips the queue: two lock round trips and two
// stores of the queued flag fewer before it goes out.
func (cc *cconn) writeAlone(h *wire.Header, deadline int64, payload [][]byte) error {
	q := &cc.wspare
	q.add(h, payload, false)
	cc.setWriteDeadline(deadline)
	return q.writeTo(cc.rw)
}

// setWriteDeadline makes writes time out at n (monoNow's clock) or up to
// the slack before it; cc.wmu must be held.
func (cc *cconn) setWriteDeadline(n int64) {
	// Compared as nanoseconds: cheaper than time.Time's arithmetic on
	// every small request.
	if cc.wdl > n || cc.wdl < n-int64(cc.slack()) {
		cc.c.SetWriteDeadline(monoTime(n))
		cc.wdl = n
	}
}

// flusher writes queued frames soon after they are queued, until the
// connection is torn down.
func (cc *cconn) flusher() {
	for {
		select {
		case <-cc.flushKick:
			cc.flush()
		case <-cc.done:
			return
		}
	}
}

// wake asks the background reader to look for outstanding replies.
func (cc *cconn) wake() {
	select {
	case cc.kick <- struct{}{}:
	default: // a wake-up is already on its way
	}
}

// release gives the read role up and, when replies are still outstanding,
// hands it to the background reader, so that no reply waits unread.
func (cc *cconn) release() {
	cc.mu.Lock()
	if cc.cause != nil {
		// fail closed the connection counting on this holder to notice.
		cc.mu.Unlock()
		cc.teardown(nil)
		return
	}
	cc.reading = false
	more := cc.pending.len() > 0
	cc.mu.Unlock()
	if more {
		cc.wake()
	}
}

// slack is how much earlier than a request's deadline its connection may
// time out. Moving a socket deadline costs about as much as the rest of a
// small request, so a deadline already set is kept while it falls within
// the slack before the one wanted; it is never later, so a silent server
// is always caught within the timeout.
func (cc *cconn) slack() time.Duration { return cc.cl.opts.Timeout / 64 }

// setReadDeadline makes reads by the role's holder time out at n
// (monoNow's clock), or up to the slack before it (never, when n is 0).
func (cc *cconn) setReadDeadline(n int64) {
	if n == 0 {
		if cc.rdl != 0 {
			cc.c.SetReadDeadline(time.Time{})
			cc.rdl = 0
		}
		return
	}
	if cc.rdl == 0 || cc.rdl > n || cc.rdl < n-int64(cc.slack()) {
		cc.c.SetReadDeadline(monoTime(n))
		cc.rdl = n
	}
}

// lead reads replies, holding the read role, until r's has arrived or the
// connection fails; r's deadline bounds the reads.
func (cc *cconn) lead(r *req) error {
	cc.setReadDeadline(r.deadline)
	if cc.spin != nil {
		// The caller waits for this reply and nothing else: poll for it
		// briefly instead of parking (see spinReader).
		cc.spin.on.Store(true)
		defer cc.spin.on.Store(false)
	}
	for {
		got, err := cc.readFrame()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("no reply within %v", cc.cl.opts.Timeout)
			}
			cc.teardown(err)
			return r.err
		}
		if got == r {
			break
		}
	}
	cc.release()
	return r.err
}

// background reads replies that no waiter is reading for, until the
// connection is torn down.
func (cc *cconn) background() {
	delay := cc.cl.opts.lazyDelay
	if delay <= 0 {
		delay = lazyDelay
	}
	lazyTimer := time.NewTimer(delay)
	lazyTimer.Stop()
	for {
		select {
		case <-cc.kick:
		case <-cc.lazyKick:
			// Give the caller lazyDelay to wait for its lazy frames
			// itself; then write and read them here.
			lazyTimer.Reset(delay)
		hold:
			select {
			case <-lazyTimer.C:
				// The kick may be an earlier frame's, whose caller
				// has read its reply since: a frame sent later
				// gets its own lazyDelay, or the reader would take
				// the reply from under a fam_quiet about to read it
				// and hand it over instead.
				if d := cc.lazyHold(monoNow(), delay); d > 0 {
					lazyTimer.Reset(d)
					goto hold
				}
			case <-cc.kick:
				lazyTimer.Stop()
			case <-cc.done:
				return
			}
		case <-cc.done:
			return
		}
		cc.mu.Lock()
		if cc.reading || cc.pending.len() == 0 {
			cc.mu.Unlock()
			continue
		}
		cc.reading = true
		cc.mu.Unlock()
		if cc.queued.Load() {
			// Lazy frames may be queued still (see lazy): their replies
			// cannot come before they are written.
			cc.wmu.Lock()
			err := cc.flushLocked()
			cc.wmu.Unlock()
			if err != nil {
				cc.teardown(err)
				return
			}
		}
		cc.setReadDeadline(0) // the waiters time their requests out
		for {
			if _, err := cc.readFrame(); err != nil {
				cc.teardown(err)
				return
			}
			cc.mu.Lock()
			failing := cc.cause != nil
			idle := cc.pending.len() == 0 && !failing
			if idle {
				cc.reading = false
			}
			cc.mu.Unlock()
			if failing {
				// fail closed the connection counting on this holder.
				cc.teardown(nil)
				return
			}
			if idle {
				break
			}
		}
	}
}

// lazyHold returns how much longer the background reader should leave
// the connection's replies to their callers, as of now: while a lone lazy
// request is outstanding, unread, that was sent less than delay (the
// connection's lazyDelay) ago, what is left of its window; otherwise 0. Only a lone request is
// waited for, so that a burst of lazy frames whose callers never wait is
// still written and read within lazyDelay of its first kick.
func (cc *cconn) lazyHold(now int64, delay time.Duration) time.Duration {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.reading || cc.pending.len() != 1 {
		return 0
	}
	r := cc.pending.get(cc.nextID) // the lone request, if it is the newest
	if r == nil || !r.lazy {
		return 0
	}
	return lazyLeft(r.deadline-int64(cc.cl.opts.Timeout), now, delay)
}

// lazyLeft is what is left at now of the delay-long window of a lazy
// frame sent at sent (both on monoNow's clock), 0 once it has passed.
func lazyLeft(sent, now int64, delay time.Duration) time.Duration {
	if d := time.Duration(sent + int64(delay) - now); d > 0 {
		return d
	}
	return 0
}

// fail closes the connection for cause (unless it already failed) and
// waits until every outstanding request has been completed. It must not
// be called by the read role's holder.
func (cc *cconn) fail(cause error) {
	cc.mu.Lock()
	if cc.cause == nil {
		cc.cause = cause
	}
	// With nobody reading, nobody would notice the close: tear down here.
	mine := !cc.reading
	cc.reading = true
	cc.mu.Unlock()
	cc.c.Close()
	if mine {
		cc.teardown(cause)
	}
	<-cc.done
}

// unavailable is the error of requests lost with the connection; cc.mu
// must be held.
func (cc *cconn) unavailable() error {
	if cc.cause == errClosed {
		return errClosed
	}
	cause := cc.cause
	if cause == io.EOF {
		cause = errors.New("connection closed by the server")
	}
	return fmt.Errorf("%w: %s %s: %v", ErrUnavailable, cc.cl.network, cc.cl.addr, cause)
}

// teardown closes the connection after err and fails everything still
// outstanding. Only the read role's holder calls it, once; the role is
// never given back, so no buffer is written afterwards.
func (cc *cconn) teardown(err error) {
	cc.mu.Lock()
	cc.dead = true
	if cc.cause == nil {
		cc.cause = err
	}
	fds := cc.fds
	var wakes []chan struct{}
	uerr := cc.unavailable()
	cc.pending.drain(func(r *req) {
		if w := r.completeLocked(uerr); w != nil {
			wakes = append(wakes, w)
		}
	})
	cc.fds, cc.lazyOut = nil, 0
	cc.mu.Unlock()
	cc.c.Close()
	for _, w := range wakes {
		close(w)
	}
	for _, f := range fds {
		f.Close()
	}
	close(cc.done)
}

// readFrame reads one reply, delivers it to its request and returns that
// request. The caller holds the read role.
func (cc *cconn) readFrame() (*req, error) {
	h, err := readHeader(cc.br)
	if err != nil {
		return nil, err
	}
	if !h.IsReply() {
		return nil, fmt.Errorf("%w: request frame from the server", wire.ErrMalformed)
	}
	cc.mu.Lock()
	r := cc.pending.get(h.ID)
	cc.mu.Unlock()
	if r == nil || r.op != h.Op {
		return nil, fmt.Errorf("%w: %v reply to no outstanding request (id %d)", wire.ErrMalformed, h.Op, h.ID)
	}
	if err := cc.complete(h, r); err != nil {
		return nil, err
	}
	cc.mu.Lock()
	cc.pending.del(h.ID)
	if r.lazy {
		cc.lazyOut--
	}
	wake := r.completeLocked(nil)
	cc.mu.Unlock()
	if wake != nil {
		close(wake)
	}
	return r, nil
}

// complete reads r's reply payload into place.
func (cc *cconn) complete(h wire.Header, r *req) error {
	if h.Status != wire.StatusOK {
		var msg [wire.MaxMessage]byte
		if _, err := io.ReadFull(cc.br, msg[:h.PayloadLen]); err != nil {
			return err
		}
		r.err = statusError(h.Status, string(msg[:h.PayloadLen])) // raid.go
		return nil
	}
	switch h.Op {
	case wire.OpGet, wire.OpGatherStrided, wire.OpGatherIndexed:
		if int(h.PayloadLen) != len(r.dst) {
			return fmt.Errorf("%w: %v reply of %d bytes for %d asked", wire.ErrMalformed, h.Op, h.PayloadLen, len(r.dst))
		}
		_, err := io.ReadFull(cc.br, r.dst)
		return err
	case wire.OpAtomic:
		_, err := io.ReadFull(cc.br, r.res[:])
		return err
	case wire.OpRaid:
		return cc.completeRaid(h, r) // raid.go
	case wire.OpHello:
		r.res64[0] = h.Arg[0] // the server's features
	case wire.OpFabricKey:
		r.res64 = h.Arg // the registration (fabric.go)
	case wire.OpControl:
		r.dst = make([]byte, h.PayloadLen)
		if _, err := io.ReadFull(cc.br, r.dst); err != nil {
			return err
		}
		if h.Arg[3] == 0 {
			return nil
		}
		fallthrough
	case wire.OpOpenFD:
		// The descriptor arrived with the reply's first byte, which the
		// buffered reader has consumed by now; descriptors and replies
		// carrying one come in the same order.
		cc.mu.Lock()
		defer cc.mu.Unlock()
		if len(cc.fds) == 0 {
			return fmt.Errorf("%w: %v reply without a descriptor", wire.ErrMalformed, h.Op)
		}
		r.fd = cc.fds[0]
		cc.fds = cc.fds[1:]
		copy(r.res64[:], h.Arg[:3])
	}
	return nil
}

// msgReader is a Unix connection: a *net.UnixConn or a quietConn.
type msgReader interface {
	ReadMsgUnix(b, oob []byte) (n, oobn, flags int, addr *net.UnixAddr, err error)
}

// fdReader reads a Unix connection keeping the descriptors that arrive in
// SCM_RIGHTS messages (a plain read would drop and close them).
type fdReader struct {
	uc  msgReader
	cc  *cconn
	oob []byte
}

func (f *fdReader) Read(p []byte) (int, error) {
	n, oobn, _, _, err := f.uc.ReadMsgUnix(p, f.oob)
	n = max(n, 0) // a failed recvmsg can report -1
	f.take(oobn)
	return n, err
}

// take keeps the descriptors of the first oobn bytes of f.oob, as the
// last recvmsg filled it.
func (f *fdReader) take(oobn int) {
	if oobn > 0 {
		msgs, perr := unix.ParseSocketControlMessage(f.oob[:oobn])
		var got []*os.File
		for i := 0; perr == nil && i < len(msgs); i++ {
			fds, ferr := unix.ParseUnixRights(&msgs[i])
			if ferr != nil {
				continue
			}
			for _, fd := range fds {
				got = append(got, os.NewFile(uintptr(fd), "famd-region"))
			}
		}
		f.cc.mu.Lock()
		f.cc.fds = append(f.cc.fds, got...)
		f.cc.mu.Unlock()
	}
}

// spinReader reads a connection for bufio (a Unix one through its
// fdReader, so that passed descriptors are kept). While a caller waits for its
// own reply (the read role's holder in lead), it polls the socket with
// non-blocking reads for up to the spin time before letting the runtime
// park the goroutine until the socket is readable. A parked reader costs a
// wake-up through the network poller on the reply, and through cgo (a C
// thread calling fam_get_blocking, whose goroutine is locked to that
// thread) a second hand-off to the caller's thread: together more than the
// round trip of a small request on loopback. The background reader never
// spins.
type spinReader struct {
	fdr  *fdReader // on a Unix socket: reads with recvmsg, keeping descriptors
	nc   net.Conn
	rc   syscall.RawConn
	spin time.Duration
	on   atomic.Bool
	low  lowWater // keeps this process's poller asleep while a caller polls

	// The state of the polling read in progress, kept here rather than
	// captured by a closure so that a read allocates nothing (the read
	// role's holder is the only reader): pollFn is s.poll, bound once.
	pollFn func(fd uintptr) bool
	p      []byte
	n      int
	rerr   error
	until  int64 // monoNow at which polling gives up; 0: not started
	polled bool  // the window ran out: the next EAGAIN parks
}

func newSpinReader(nc net.Conn, spin time.Duration) *spinReader {
	if spin <= 0 {
		return nil
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	s := &spinReader{nc: nc, rc: rc, spin: spin, low: newLowWater(nc, rc)}
	s.pollFn = s.poll
	return s
}

func (s *spinReader) Read(p []byte) (int, error) {
	if !s.on.Load() || len(p) == 0 {
		// A parked reader must be woken by any byte.
		if err := s.low.lowerOn(s.rc); err != nil {
			return 0, err
		}
		if s.fdr != nil {
			return s.fdr.Read(p)
		}
		return s.nc.Read(p)
	}
	s.p, s.n, s.rerr, s.until, s.polled = p, 0, nil, 0, false
	err := s.rc.Read(s.pollFn)
	n, rerr := s.n, s.rerr
	s.p, s.rerr = nil, nil
	if err != nil {
		return n, err
	}
	return n, rerr
}

// poll is the RawConn.Read callback of a polling read: non-blocking reads
// until bytes come or the window runs out (see Read).
func (s *spinReader) poll(fd uintptr) bool {
	if !s.polled {
		// The mark stays up between calls: the next caller polls
		// again, and whoever parks lowers it first.
		s.low.raise(fd)
	}
	for {
		var m int
		var err error
		if s.fdr != nil {
			var oobn int
			m, oobn, err = recvmsg(int(fd), s.p, s.fdr.oob, unix.MSG_CMSG_CLOEXEC)
			if err == nil {
				s.fdr.take(oobn)
			}
		} else {
			m, err = rawRead(fd, s.p)
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if s.polled {
				// Woken by the poller: readable after all, or a
				// spurious wake-up; wait again.
				return false
			}
			now := monoNow()
			if s.until == 0 {
				s.until = now + int64(s.spin)
			} else if now > s.until {
				s.polled = true
				// Lowered, the mark lets the poller see the reply;
				// try once more before parking.
				if err := s.low.lower(fd); err != nil {
					s.rerr = err
					return true
				}
				continue
			}
			// The server may be waiting for this core (same host,
			// few cores): let it run between tries.
			osYield()
			continue
		case err != nil:
			s.rerr = err
			return true
		case m == 0:
			s.rerr = io.EOF
			return true
		}
		s.n = m
		return true
	}
}
