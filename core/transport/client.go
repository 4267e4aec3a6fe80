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
// by their ids, and a reader goroutine per connection delivers replies.
// Transfers larger than the chunk size are split and spread over the pool.
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
}

type slot struct {
	mu sync.Mutex
	cc *cconn
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
// error wrapping ErrUnavailable and later calls fail. It waits for the
// reader goroutines to end, so no buffer is written after it returns.
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
	if s.cc != nil && !s.cc.isDead() {
		return s.cc, nil
	}
	s.cc = nil
	nc, err := net.DialTimeout(c.network, c.addr, c.opts.Timeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %v", ErrUnavailable, c.network, c.addr, err)
	}
	cc := newCconn(nc, c)
	r := &req{op: wire.OpHello}
	cc.send(wire.Header{Op: wire.OpHello}, r, []byte(c.opts.Token))
	if err := r.wait(); err != nil {
		cc.fail(errClosed)
		var e *Error
		if errors.As(err, &e) {
			return nil, fmt.Errorf("transport: %s %s refused the connection: %w", c.network, c.addr, err)
		}
		return nil, err
	}
	s.cc = cc
	return cc, nil
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
}

// Wait blocks until every piece of the operation has been answered, failed,
// or timed out (ClientOptions.Timeout after it was sent), and returns the
// first error: an *Error or ErrStaleKey from the server, or an error
// wrapping ErrUnavailable. It can be called more than once and from any
// goroutine; later calls return the same result.
func (cl *Call) Wait() error {
	cl.once.Do(func() {
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
// large transfer keeps every connection of the pool busy.
func (c *Client) start(ps []piece) *Call {
	cl := &Call{reqs: make([]*req, len(ps))}
	for k := range ps {
		cl.reqs[k] = ps[k].r
	}
	if len(ps) == 1 {
		c.sendPieces(ps, 0, 1)
		return cl
	}
	n := min(len(ps), len(c.slots))
	cl.sending.Add(n)
	for j := 0; j < n; j++ {
		go func() {
			defer cl.sending.Done()
			c.sendPieces(ps, j, n)
		}()
	}
	return cl
}

// sendPieces sends ps[first], ps[first+step], ... in order. Once one fails
// to go out, the rest fail with the same error unsent, so that a dead
// server costs one timeout, not one per piece.
func (c *Client) sendPieces(ps []piece, first, step int) {
	var failed error
	for k := first; k < len(ps); k += step {
		p := &ps[k]
		if p.r.done != nil { // failed before sending (see strided)
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
		cc.send(p.h, p.r, p.payload...)
		select {
		case <-p.r.done:
			failed = p.r.err
		default:
		}
	}
}

// one sends a single-frame request on the next connection and waits.
func (c *Client) one(h wire.Header, r *req, payload ...[]byte) error {
	return c.start([]piece{{slot: c.pick(1), h: h, r: r, payload: payload}}).Wait()
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
func (c *Client) GetAsync(key Key, off uint64, dst []byte) *Call {
	parts := split(uint64(len(dst)), uint64(c.opts.ChunkSize))
	base := c.pick(len(parts))
	ps := make([]piece, len(parts))
	for k, b := range parts {
		h := wire.Header{Op: wire.OpGet, Key: key, Arg: [4]uint64{off + b[0], b[1] - b[0]}}
		ps[k] = piece{slot: base + k, h: h, r: &req{op: wire.OpGet, dst: dst[b[0]:b[1]]}}
	}
	return c.start(ps)
}

// PutAsync starts writing src at off in the item.
func (c *Client) PutAsync(key Key, off uint64, src []byte) *Call {
	parts := split(uint64(len(src)), uint64(c.opts.ChunkSize))
	base := c.pick(len(parts))
	ps := make([]piece, len(parts))
	for k, b := range parts {
		h := wire.Header{Op: wire.OpPut, Key: key, Arg: [4]uint64{off + b[0], b[1] - b[0]}}
		ps[k] = piece{slot: base + k, h: h, r: &req{op: wire.OpPut}, payload: [][]byte{src[b[0]:b[1]]}}
	}
	return c.start(ps)
}

// Get reads len(dst) bytes at off in the item into dst. Errors: *Error
// with Code 4 (empty dst), 13 (beyond the item), 2 (no read right);
// ErrStaleKey; ErrUnavailable.
func (c *Client) Get(key Key, off uint64, dst []byte) error { return c.GetAsync(key, off, dst).Wait() }

// Put writes src at off in the item; errors as Get (write right needed).
func (c *Client) Put(key Key, off uint64, src []byte) error { return c.PutAsync(key, off, src).Wait() }

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
	return c.start(ps).Wait()
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
	return c.start(ps).Wait()
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
	var args [wire.AtomicArgsSize]byte
	le := binary.LittleEndian
	le.PutUint64(args[0:], v.Lo)
	le.PutUint64(args[8:], v.Hi)
	le.PutUint64(args[16:], cmp.Lo)
	le.PutUint64(args[24:], cmp.Hi)
	h := wire.Header{Op: wire.OpAtomic, Key: key, Arg: [4]uint64{off, uint64(kind), uint64(op)}}
	if fetch {
		h.Flags = wire.FlagFetch
	}
	r := &req{op: wire.OpAtomic}
	if err := c.one(h, r, args[:]); err != nil {
		return amo.Value{}, err
	}
	return amo.Value{Lo: le.Uint64(r.res[0:]), Hi: le.Uint64(r.res[8:])}, nil
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

// Ping makes one round trip on one connection of the pool.
func (c *Client) Ping() error { return c.one(wire.Header{Op: wire.OpPing}, &req{op: wire.OpPing}) }

// req is one request frame awaiting its reply.
type req struct {
	op       wire.Op
	dst      []byte // where a Get or Gather reply's data goes
	res      [wire.AtomicResultSize]byte
	res64    [3]uint64 // OpenFD reply arguments
	fd       *os.File
	hdr      [wire.HeaderSize]byte
	cc       *cconn
	deadline time.Time
	err      error
	done     chan struct{}
}

// finish completes a request that was never sent.
func (r *req) finish(err error) {
	r.err = err
	r.done = make(chan struct{})
	close(r.done)
}

// wait returns the request's outcome, failing its connection when no reply
// came before the deadline.
func (r *req) wait() error {
	select {
	case <-r.done:
		return r.err
	default:
	}
	if r.cc == nil {
		panic("transport: waiting for a request that was neither sent nor finished")
	}
	t := time.NewTimer(time.Until(r.deadline))
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		r.cc.fail(fmt.Errorf("no reply within %v", r.cc.cl.opts.Timeout))
		<-r.done
	}
	return r.err
}

// cconn is one client connection and its reader goroutine.
type cconn struct {
	c  net.Conn
	cl *Client
	br *bufio.Reader

	wmu sync.Mutex // serialises frame writes

	mu      sync.Mutex
	pending map[uint64]*req
	nextID  uint64
	dead    bool
	cause   error
	fds     []*os.File // descriptors received and not yet matched to a reply

	done chan struct{} // closed when the reader has exited
}

func newCconn(nc net.Conn, cl *Client) *cconn {
	cc := &cconn{c: nc, cl: cl, pending: map[uint64]*req{}, done: make(chan struct{})}
	var r io.Reader = nc
	if uc, ok := nc.(*net.UnixConn); ok {
		r = &fdReader{uc: uc, cc: cc, oob: make([]byte, unix.CmsgSpace(4*4))}
	}
	cc.br = bufio.NewReaderSize(r, 64<<10)
	go cc.read()
	return cc
}

func (cc *cconn) isDead() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.dead
}

// send registers r and writes its frame. A write failure fails the whole
// connection, which completes r with the error.
func (cc *cconn) send(h wire.Header, r *req, payload ...[]byte) {
	r.cc = cc
	r.done = make(chan struct{})
	r.deadline = time.Now().Add(cc.cl.opts.Timeout)
	plen := 0
	for _, p := range payload {
		plen += len(p)
	}
	h.PayloadLen = uint32(plen)
	cc.mu.Lock()
	if cc.dead {
		r.err = cc.unavailable()
		cc.mu.Unlock()
		close(r.done)
		return
	}
	cc.nextID++
	h.ID = cc.nextID
	cc.pending[h.ID] = r
	cc.mu.Unlock()
	h.Encode(r.hdr[:])
	bufs := make(net.Buffers, 0, 1+len(payload))
	bufs = append(bufs, r.hdr[:])
	for _, p := range payload {
		if len(p) > 0 {
			bufs = append(bufs, p)
		}
	}
	cc.wmu.Lock()
	cc.c.SetWriteDeadline(r.deadline)
	_, err := bufs.WriteTo(cc.c)
	cc.wmu.Unlock()
	if err != nil {
		cc.fail(err)
	}
}

// fail closes the connection for cause (unless it already failed) and
// waits for the reader to complete every outstanding request. It must not
// be called from the reader goroutine.
func (cc *cconn) fail(cause error) {
	cc.mu.Lock()
	if cc.cause == nil {
		cc.cause = cause
	}
	cc.mu.Unlock()
	cc.c.Close()
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

// read delivers replies to their requests until the connection fails, then
// fails everything still outstanding.
func (cc *cconn) read() {
	err := cc.readLoop()
	cc.mu.Lock()
	cc.dead = true
	if cc.cause == nil {
		cc.cause = err
	}
	pending, fds := cc.pending, cc.fds
	cc.pending, cc.fds = nil, nil
	uerr := cc.unavailable()
	cc.mu.Unlock()
	cc.c.Close()
	for _, r := range pending {
		r.err = uerr
		close(r.done)
	}
	for _, f := range fds {
		f.Close()
	}
	close(cc.done)
}

func (cc *cconn) readLoop() error {
	var hb [wire.HeaderSize]byte
	for {
		h, err := wire.ReadHeader(cc.br, &hb)
		if err != nil {
			return err
		}
		if !h.IsReply() {
			return fmt.Errorf("%w: request frame from the server", wire.ErrMalformed)
		}
		cc.mu.Lock()
		r := cc.pending[h.ID]
		cc.mu.Unlock()
		if r == nil || r.op != h.Op {
			return fmt.Errorf("%w: %v reply to no outstanding request (id %d)", wire.ErrMalformed, h.Op, h.ID)
		}
		if err := cc.complete(h, r); err != nil {
			return err
		}
		cc.mu.Lock()
		delete(cc.pending, h.ID)
		cc.mu.Unlock()
		close(r.done)
	}
}

// complete reads r's reply payload into place.
func (cc *cconn) complete(h wire.Header, r *req) error {
	if h.Status != wire.StatusOK {
		var msg [wire.MaxMessage]byte
		if _, err := io.ReadFull(cc.br, msg[:h.PayloadLen]); err != nil {
			return err
		}
		if h.Status == wire.StatusStaleKey {
			r.err = ErrStaleKey
		} else {
			r.err = &Error{Code: int32(h.Status), Msg: string(msg[:h.PayloadLen])}
		}
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
	case wire.OpOpenFD:
		// The descriptor arrived with the reply's first byte, which the
		// buffered reader has consumed by now; descriptors and OpenFD
		// replies come in the same order.
		cc.mu.Lock()
		defer cc.mu.Unlock()
		if len(cc.fds) == 0 {
			return fmt.Errorf("%w: OpenFD reply without a descriptor", wire.ErrMalformed)
		}
		r.fd = cc.fds[0]
		cc.fds = cc.fds[1:]
		copy(r.res64[:], h.Arg[:3])
	}
	return nil
}

// fdReader reads a Unix connection keeping the descriptors that arrive in
// SCM_RIGHTS messages (a plain read would drop and close them).
type fdReader struct {
	uc  *net.UnixConn
	cc  *cconn
	oob []byte
}

func (f *fdReader) Read(p []byte) (int, error) {
	n, oobn, _, _, err := f.uc.ReadMsgUnix(p, f.oob)
	n = max(n, 0) // a failed recvmsg can report -1
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
	return n, err
}
