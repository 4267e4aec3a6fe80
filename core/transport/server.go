package transport

import (
	"bufio"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/wire"
)

// OpenFAM error numbers the server answers with (include/openfam.h).
const (
	codeNoPerm     = 2
	codeInvalid    = 4
	codeOutOfRange = 13
	codeUnimpl     = 16
	codeResource   = 17
)

// DefaultMaxConnsPerPeer is ServerOptions.MaxConnsPerPeer's default, or a
// quarter of the process's open-file limit if that is lower (see
// defaultConnCap). A client process opens DefaultConns connections to each
// server it uses, so this lets one user run a few hundred processes on one
// host (or one remote host hold as many) while bounding the descriptors,
// goroutines and buffers (about 200 KiB a connection) one peer can tie up.
const DefaultMaxConnsPerPeer = 1024

// defaultConnCap is the cap used when ServerOptions.MaxConnsPerPeer is 0:
// DefaultMaxConnsPerPeer, lowered to a quarter of the open-file limit so
// that one peer cannot take most of the server's descriptors (at least 16).
func defaultConnCap() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil && rl.Cur/4 < DefaultMaxConnsPerPeer {
		return max(int(rl.Cur/4), 16)
	}
	return DefaultMaxConnsPerPeer
}

// Bounds of the work spent on refused connections, so that a flood of them
// costs little: the refusal is answered to a first request that arrives
// within refuseWait, and at most maxRefusing connections wait for theirs
// at once (beyond that a refused connection is closed unanswered).
const (
	refuseWait  = 2 * time.Second
	maxRefusing = 64
	// refuseLogEvery spaces the warnings about one peer's refusals.
	refuseLogEvery = 10 * time.Second
)

// Server serves the data plane of spec/wire.md over stream listeners.
// Each connection is served by one goroutine that executes its requests in
// arrival order and answers each with a reply carrying the request id.
type Server struct {
	mem  Memory
	opts ServerOptions

	mu       sync.Mutex
	closed   bool
	lns      map[net.Listener]struct{}
	conns    map[net.Conn]struct{}
	spins    map[net.Conn]*spinConn   // connections that may poll (see spinConn)
	peers    map[string]int           // open connections by peer (see peerOf)
	refused  map[string]*refusalState // peers refused lately, for the log
	refusing int                      // refused connections waiting to be answered
	wg       sync.WaitGroup
}

// refusalState rate-limits the warnings about one peer's refusals.
type refusalState struct {
	logged     time.Time
	suppressed int
}

// NewServer returns a Server answering requests on the items mem resolves.
// It serves nothing until Serve is called.
func NewServer(mem Memory, opts ServerOptions) *Server {
	if opts.MaxConnsPerPeer == 0 {
		opts.MaxConnsPerPeer = defaultConnCap()
	}
	return &Server{mem: mem, opts: opts, lns: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{},
		spins: map[net.Conn]*spinConn{}, peers: map[string]int{}, refused: map[string]*refusalState{}}
}

// Serve accepts connections on l and serves them until Close; it may be
// called for several listeners at once (say TCP and Unix). It returns nil
// after Close, else the error that stopped Accept. The Server owns l and
// closes it.
//
// The accept loop only accepts: everything else about a connection (who the
// peer is, whether it is over its cap) is done by the connection's own
// goroutine, so a flood of connections drains from the listen backlog as
// fast as it comes. An Accept failing for want of descriptors or memory
// (which a flood can cause) is retried after a pause instead of stopping
// the listener.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return nil
	}
	s.lns[l] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	var pause time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			if closed || !acceptRetryable(err) {
				delete(s.lns, l)
			}
			s.mu.Unlock()
			if !closed && acceptRetryable(err) {
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				s.warnf("data plane: accepting on %v: %v; retrying in %v", l.Addr(), err, pause)
				time.Sleep(pause)
				continue
			}
			l.Close()
			if closed {
				return nil
			}
			return err
		}
		pause = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.admitAndServe(c)
		}()
	}
}

// acceptRetryable reports whether an Accept error is a shortage that
// passes (descriptors, buffers, memory) or a connection that went away
// before it was accepted, rather than a dead listener.
func acceptRetryable(err error) bool {
	for _, e := range []error{unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM, unix.ECONNABORTED, unix.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// peerOf names the peer a connection counts against: the uid the kernel
// reports for a Unix socket (SO_PEERCRED, read once by the caller into
// cred, whose known says whether the kernel answered), the source IP
// address on TCP.
func peerOf(c net.Conn, cred Peer, known bool) string {
	switch c := c.(type) {
	case *net.UnixConn:
		if !known {
			return "unix peer (unknown uid)"
		}
		return "uid " + strconv.FormatUint(uint64(cred.UID), 10)
	case *net.TCPConn:
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			return "address " + a.IP.String()
		}
	}
	return "peer " + c.RemoteAddr().String()
}

// admitAndServe serves c unless its peer already holds
// opts.MaxConnsPerPeer connections, in which case c is refused, and
// removes c from the server's connections once done.
//
// A Unix connection leaves the network poller first (quietConn): famd's
// polling reader (spinConn) reads it with non-blocking reads, and a Unix
// socket has no receive low-water mark to keep epoll quiet meanwhile (see
// pollLowat), so in the poller every request would wake an idle runtime
// thread sleeping in epoll_wait for nothing, several per control call
// (issue 19). Its peer's credentials are read before, from the
// *net.UnixConn (they are fixed at connect time).
func (s *Server) admitAndServe(c net.Conn) {
	p, known := peerCred(c)
	peer := peerOf(c, p, known)
	var cred *Peer
	if uc, ok := c.(*net.UnixConn); ok {
		cred = &p
		if q, err := newQuietConn(uc); err == nil {
			// Close must find the connection that now holds the socket.
			s.mu.Lock()
			delete(s.conns, c)
			c = q
			closed := s.closed
			if !closed {
				s.conns[c] = struct{}{}
			}
			s.mu.Unlock()
			if closed {
				c.Close()
				return
			}
		}
		// On failure (uc closed by Close meanwhile, or no descriptor
		// left for the duplicate) uc is served as it is.
	}
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	limit := s.opts.MaxConnsPerPeer
	s.mu.Lock()
	if limit > 0 && s.peers[peer] >= limit {
		s.mu.Unlock()
		s.refuse(c, peer, limit)
		return
	}
	s.peers[peer]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.peers[peer]--; s.peers[peer] <= 0 {
			delete(s.peers, peer)
		}
		s.mu.Unlock()
	}()
	s.serveConn(c, cred)
}

// refuse answers the first request of a connection over its peer's cap
// with FAM_ERESOURCE and a message saying why (clients send Hello first, so
// Dial fails with it), then closes the connection, and logs a warning
// (at most one per peer per refuseLogEvery).
func (s *Server) refuse(c net.Conn, peer string, limit int) {
	defer c.Close()
	now := time.Now()
	s.mu.Lock()
	r := s.refused[peer]
	if r == nil {
		if len(s.refused) >= 4096 {
			// Many peers refused lately: forget them rather than grow.
			s.refused = map[string]*refusalState{}
		}
		r = &refusalState{}
		s.refused[peer] = r
	}
	logIt := now.Sub(r.logged) >= refuseLogEvery
	suppressed := r.suppressed
	if logIt {
		r.logged, r.suppressed = now, 0
	} else {
		r.suppressed++
	}
	answer := s.refusing < maxRefusing
	if answer {
		s.refusing++
	}
	s.mu.Unlock()
	if logIt {
		more := ""
		if suppressed > 0 {
			more = fmt.Sprintf(" (%d more refused since the last warning)", suppressed)
		}
		s.warnf("data plane: refusing a connection from %s: it holds %d, the most one peer may "+
			"(famd --max-conns-per-peer)%s", peer, limit, more)
	}
	if !answer {
		return
	}
	defer func() {
		s.mu.Lock()
		s.refusing--
		s.mu.Unlock()
	}()
	c.SetDeadline(now.Add(refuseWait))
	br := bufio.NewReaderSize(c, wire.HeaderSize)
	var hb [wire.HeaderSize]byte
	h, err := wire.ReadHeader(br, &hb)
	if err != nil || h.IsReply() || h.PayloadLen > wire.MaxToken {
		return
	}
	if _, err := br.Discard(int(h.PayloadLen)); err != nil {
		return
	}
	msg := fmt.Sprintf("too many data-plane connections from %s: it holds %d, the most one peer may "+
		"(famd --max-conns-per-peer); close some", peer, limit)
	rh := wire.Header{Op: h.Op, Flags: wire.FlagReply, Status: codeResource, PayloadLen: uint32(len(msg)), ID: h.ID}
	var out [wire.HeaderSize]byte
	rh.Encode(out[:])
	c.Write(append(out[:], msg...))
}

// SpinStats returns how many reads of the connections now open waited for
// a new request by polling (ServerOptions.Spin), and how many of those the
// polling answered; both 0 when polling is off.
func (s *Server) SpinStats() (polls, hits int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range s.spins {
		polls += sp.polls.Load()
		hits += sp.hits.Load()
	}
	return polls, hits
}

// Close stops every Serve, closes every connection (requests in flight get
// no reply) and waits until all handlers have returned. It is safe to call
// more than once and from any goroutine.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for l := range s.lns {
		l.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// warnf logs an event an operator should see (opts.Warnf, else Logf).
func (s *Server) warnf(format string, args ...any) {
	if s.opts.Warnf != nil {
		s.opts.Warnf(format, args...)
	} else {
		s.logf(format, args...)
	}
}

// sconn is one served connection.
type sconn struct {
	s       *Server
	c       net.Conn
	br      *bufio.Reader
	bw      *bufio.Writer
	rhdr    [wire.HeaderSize]byte       // reply header being encoded; on the heap with sc, so no allocation per reply
	scratch []byte                      // index arrays and small payloads, reused across requests
	ares    [wire.AtomicResultSize]byte // an atomic's reply, with sc so that it allocates nothing
	authed  bool
	peer    *Peer // who the connection comes from: a Unix peer's, read when accepted (admitAndServe); else read on the first control call
	// fdw is bw's writer on a Unix socket (nil on TCP): it sends a control
	// reply's descriptor with the buffered bytes (see control).
	fdw *fdWriter
}

// fdWriter writes a Unix connection for its bufio.Writer. A descriptor set
// in fd goes out with the next write, attached to its first byte, in the
// same sendmsg(2): a control reply carrying one then leaves with the
// replies buffered before it and its own payload in one system call and
// one message, which the client reads in one recvmsg, instead of a flush,
// a sendmsg of the header and a write of the payload, between which a
// loaded famd could be descheduled while the client waited (issue 19).
// The descriptor reaching the client with bytes before its reply's header
// is as good as with the header: the client queues descriptors in arrival
// order and gives each to the next reply announcing one.
type fdWriter struct {
	uc    unixMsgWriter
	plain io.Writer // the connection's writer for bytes without a descriptor
	fd    *os.File  // owned; closed once sent or when the connection ends
}

func (w *fdWriter) Write(p []byte) (int, error) {
	if w.fd == nil || len(p) == 0 {
		return w.plain.Write(p)
	}
	n, _, err := w.uc.WriteMsgUnix(p, unix.UnixRights(int(w.fd.Fd())), nil)
	if n > 0 || err == nil {
		// The kernel took the descriptor with the first bytes.
		w.fd.Close()
		w.fd = nil
	}
	if err == nil && n < len(p) {
		m, werr := w.plain.Write(p[n:])
		return n + m, werr
	}
	return max(n, 0), err
}

// unixMsgWriter is a Unix connection that can send descriptors: a
// *net.UnixConn, or the quietConn famd serves one through.
type unixMsgWriter interface {
	WriteMsgUnix(b, oob []byte, addr *net.UnixAddr) (n, oobn int, err error)
}

// close releases a descriptor that never went out.
func (w *fdWriter) close() {
	if w != nil && w.fd != nil {
		w.fd.Close()
		w.fd = nil
	}
}

// replyError is a request failure answered with a status; anything else
// returned while serving a request ends the connection.
type replyError struct {
	status uint32
	msg    string
}

func fail(code uint32, format string, args ...any) *replyError {
	return &replyError{status: code, msg: fmt.Sprintf(format, args...)}
}

// readBuffer is a served connection's read buffer. It holds a whole batch
// of small frames as the client writes them (queueSize plus one frame), so
// that one read(2) brings in the batch and its replies go out in one write.
const readBuffer = 128 << 10

// serveConn serves c until it ends. cred, when not nil, is the Unix
// peer's identity read when c was accepted (see admitAndServe).
func (s *Server) serveConn(c net.Conn, cred *Peer) {
	defer c.Close()
	// The served memory is a shared mapping of a sparse file: if its
	// filesystem cannot provide a page (tmpfs full, disk full or gone),
	// touching it raises SIGBUS. Allocation reserves items' pages so this
	// should not happen; if it does, only this connection ends, not famd.
	debug.SetPanicOnFault(true)
	defer func() {
		if p := recover(); p != nil {
			s.logf("data plane: connection from %v: memory fault serving a request (%v); closing it", c.RemoteAddr(), p)
		}
	}()
	var r io.Reader = c
	spin := newSpinConn(c, s.opts.Spin, spinCap(&s.opts))
	if spin != nil {
		r = spin
	}
	// Small replies go out through the raw writer (no scheduler
	// bookkeeping per write); on a Unix socket, a reply carrying a
	// descriptor goes out with it in one sendmsg (fdWriter).
	var w io.Writer = newRawWriter(c)
	var fdw *fdWriter
	if uc, ok := c.(unixMsgWriter); ok {
		fdw = &fdWriter{uc: uc, plain: w}
		w = fdw
	}
	sc := &sconn{s: s, c: c, br: bufio.NewReaderSize(r, readBuffer), bw: bufio.NewWriterSize(w, 64<<10),
		authed: s.opts.Token == "", fdw: fdw, peer: cred}
	defer fdw.close()
	s.mu.Lock()
	if spin != nil {
		s.spins[c] = spin
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.spins, c)
		s.mu.Unlock()
	}()
	for {
		h, err := readHeader(sc.br)
		if err == nil && h.IsReply() {
			err = fmt.Errorf("%w: reply frame sent to the server", wire.ErrMalformed)
		}
		if err != nil {
			if errors.Is(err, wire.ErrMalformed) {
				s.logf("data plane: closing connection from %v: %v", c.RemoteAddr(), err)
			}
			return
		}
		if !sc.authed && h.Op != wire.OpHello {
			sc.discard(h.PayloadLen)
			sc.replyErr(h, fail(codeNoPerm, "the first request must be Hello with the cluster token"))
			sc.bw.Flush()
			s.logf("data plane: closing unauthenticated connection from %v", c.RemoteAddr())
			return
		}
		if err := sc.serve(h); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.logf("data plane: connection from %v: %v", c.RemoteAddr(), err)
			}
			return
		}
		// Replies are batched while more pipelined requests are already
		// buffered, and flushed once the client has nothing else queued.
		if sc.br.Buffered() == 0 {
			if err := sc.bw.Flush(); err != nil {
				return
			}
			if spin != nil {
				spin.arm()
			}
		}
	}
}

// serve executes one request whose header has been read; the payload is
// still on the socket. A non-nil result ends the connection.
func (sc *sconn) serve(h wire.Header) error {
	var (
		rerr *replyError
		err  error
	)
	switch h.Op {
	case wire.OpHello:
		rerr, err = sc.hello(h)
	case wire.OpPing:
		return sc.replyOK(h, nil)
	case wire.OpGet:
		mem, r := sc.resolve(h, RightRead)
		if r == nil && h.Arg[1] > wire.MaxPayload {
			r = fail(codeInvalid, "get of %d bytes exceeds the frame limit of %d", h.Arg[1], wire.MaxPayload)
		}
		if r == nil {
			r = span(h.Arg[0], h.Arg[1], uint64(len(mem)))
		}
		if r != nil {
			return sc.replyErr(h, r)
		}
		return sc.replyOK(h, mem[h.Arg[0]:h.Arg[0]+h.Arg[1]])
	case wire.OpPut:
		mem, r := sc.resolve(h, RightWrite)
		if r == nil {
			r = span(h.Arg[0], h.Arg[1], uint64(len(mem)))
		}
		if r != nil {
			if err := sc.discard(h.PayloadLen); err != nil {
				return err
			}
			return sc.replyErr(h, r)
		}
		// The payload goes from the socket straight into the item.
		if _, err := io.ReadFull(sc.br, mem[h.Arg[0]:h.Arg[0]+h.Arg[1]]); err != nil {
			return err
		}
		return sc.replyOK(h, nil)
	case wire.OpGatherStrided, wire.OpScatterStrided, wire.OpGatherIndexed, wire.OpScatterIndexed:
		rerr, err = sc.gatherScatter(h)
	case wire.OpAtomic:
		rerr, err = sc.atomic(h)
	case wire.OpOpenFD:
		rerr, err = sc.openFD(h)
	case wire.OpControl:
		rerr, err = sc.control(h)
	case wire.OpCommit:
		rerr, err = sc.commit(h)
	case wire.OpRaid:
		rerr, err = sc.raid(h) // raid.go
	case wire.OpFabricKey:
		rerr, err = sc.fabricKey(h) // fabric.go
	}
	if err != nil {
		return err
	}
	if rerr != nil {
		return sc.replyErr(h, rerr)
	}
	return nil
}

func (sc *sconn) hello(h wire.Header) (*replyError, error) {
	tok, err := sc.payload(h.PayloadLen)
	if err != nil {
		return nil, err
	}
	want := sc.s.opts.Token
	if want != "" && subtle.ConstantTimeCompare(tok, []byte(want)) != 1 {
		sc.replyErr(h, fail(codeNoPerm, "wrong cluster token"))
		sc.bw.Flush()
		sc.s.logf("data plane: wrong token from %v, closing", sc.c.RemoteAddr())
		return nil, io.EOF
	}
	sc.authed = true
	// The reply announces what this server serves beyond the basic
	// operations, so that a client never sends a request an older
	// server would take for a malformed frame.
	var features uint64
	if sc.s.opts.Control != nil {
		features |= wire.FeatureControl
	}
	if sc.s.opts.Fabric != nil {
		features |= wire.FeatureFabric
	}
	if o := sc.s.opts.Observer; o != nil {
		observe(o, h, wire.StatusOK, 0)
	}
	rh := wire.Header{Op: h.Op, Flags: wire.FlagReply, ID: h.ID, Arg: [4]uint64{features}}
	rh.Encode(sc.rhdr[:])
	_, err = sc.bw.Write(sc.rhdr[:])
	return nil, err
}

// resolve looks the key up and checks that it grants need.
func (sc *sconn) resolve(h wire.Header, need uint8) ([]byte, *replyError) {
	mem, rights, ok := sc.s.mem.Resolve(Key(h.Key))
	if !ok {
		return nil, sc.refusal(Key(h.Key)) // raid.go
	}
	if rights&need != need {
		return nil, fail(codeNoPerm, "%v needs %s permission on the data item", h.Op, rightsName(need))
	}
	return mem, nil
}

func rightsName(r uint8) string {
	switch r {
	case RightRead:
		return "read"
	case RightWrite:
		return "write"
	}
	return "read and write"
}

// span checks n bytes at off against an item of size bytes, with the
// core's codes: zero length is invalid, anything past the end out of range.
func span(off, n, size uint64) *replyError {
	if n == 0 {
		return fail(codeInvalid, "transfer size is 0")
	}
	if off > size || n > size-off {
		return fail(codeOutOfRange, "offset %d + %d bytes exceeds the data item of %d bytes", off, n, size)
	}
	return nil
}

func (sc *sconn) gatherScatter(h wire.Header) (*replyError, error) {
	gather := h.Op == wire.OpGatherStrided || h.Op == wire.OpGatherIndexed
	indexed := h.Op == wire.OpGatherIndexed || h.Op == wire.OpScatterIndexed
	n, esize := h.Arg[1], h.Arg[3]
	need := RightWrite
	if gather {
		need = RightRead
	}
	// The index array comes first in an indexed request's payload.
	var index []byte
	if indexed {
		var err error
		if index, err = sc.payload(uint32(n * 8)); err != nil {
			return nil, err
		}
	}
	dataLen := uint32(h.PayloadLen) - uint32(len(index)) // scatter data still on the socket
	mem, r := sc.resolve(h, need)
	if r == nil && (n == 0 || esize == 0) {
		r = fail(codeInvalid, "element count and element size must be > 0 (got %d, %d)", n, esize)
	}
	if hi, lo := bits.Mul64(n, esize); r == nil && gather && (hi != 0 || lo > wire.MaxPayload) {
		// Indexed and scatter requests already fit a frame (wire.Check);
		// a strided gather's reply must too.
		r = fail(codeInvalid, "gather of %d elements of %d bytes exceeds the frame limit of %d", n, esize, wire.MaxPayload)
	}
	size := uint64(len(mem))
	// Validate every element before touching memory, so that a bad one
	// leaves the item unchanged.
	at := func(i uint64) uint64 { return binary.LittleEndian.Uint64(index[8*i:]) * esize }
	if r == nil && indexed {
		for i := uint64(0); i < n; i++ {
			e := binary.LittleEndian.Uint64(index[8*i:])
			if r = element(i, e, esize, size); r != nil {
				break
			}
		}
	} else if r == nil {
		first, stride := h.Arg[0], h.Arg[2]
		// Elements ascend with i, so the last one bounds them all.
		last := first
		if n > 1 && stride > (^uint64(0)-first)/(n-1) {
			r = fail(codeOutOfRange, "element %d's index overflows", n-1)
		} else {
			last = first + (n-1)*stride
			r = element(n-1, last, esize, size)
		}
		at = func(i uint64) uint64 { return (first + i*stride) * esize }
	}
	if r != nil {
		return r, sc.discard(dataLen)
	}
	if !gather {
		for i := uint64(0); i < n; i++ {
			o := at(i)
			if _, err := io.ReadFull(sc.br, mem[o:o+esize]); err != nil {
				return nil, err
			}
		}
		return nil, sc.replyOK(h, nil)
	}
	if err := sc.header(h, wire.StatusOK, uint32(n*esize)); err != nil {
		return nil, err
	}
	for i := uint64(0); i < n; i++ {
		o := at(i)
		if _, err := sc.bw.Write(mem[o : o+esize]); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// element checks element i with item index e (in elements) against size.
func element(i, e, esize, size uint64) *replyError {
	if e > (^uint64(0))/esize {
		return fail(codeOutOfRange, "element %d's index overflows", i)
	}
	o := e * esize
	if o > size || esize > size-o {
		return fail(codeOutOfRange, "element %d at byte %d (+%d) is beyond the data item of %d bytes", i, o, esize, size)
	}
	return nil
}

func (sc *sconn) atomic(h wire.Header) (*replyError, error) {
	args, err := sc.payload(wire.AtomicArgsSize)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	v := amo.Value{Lo: le.Uint64(args[0:]), Hi: le.Uint64(args[8:])}
	cmp := amo.Value{Lo: le.Uint64(args[16:]), Hi: le.Uint64(args[24:])}
	off := h.Arg[0]
	if h.Arg[1] > 255 || h.Arg[2] > 255 || !amo.Valid(amo.Kind(h.Arg[1]), amo.Op(h.Arg[2])) {
		return fail(codeInvalid, "atomic op %d not defined for operand type %d", h.Arg[2], h.Arg[1]), nil
	}
	k, op := amo.Kind(h.Arg[1]), amo.Op(h.Arg[2])
	var need uint8
	if op.Modifies() {
		need |= RightWrite
	}
	if h.Flags&wire.FlagFetch != 0 || op == amo.Fetch {
		need |= RightRead
	}
	mem, r := sc.resolve(h, need)
	if r != nil {
		return r, nil
	}
	size := k.Size()
	if r := span(off, size, uint64(len(mem))); r != nil {
		return r, nil
	}
	if off%size != 0 {
		return fail(codeInvalid, "offset %d is not a multiple of the operand size %d", off, size), nil
	}
	old, err := amo.Do(unsafe.Pointer(&mem[off]), k, op, v, cmp)
	if err != nil {
		// The item itself is misaligned in the mapping.
		return fail(codeInvalid, "%v", err), nil
	}
	res := &sc.ares
	le.PutUint64(res[0:], old.Lo)
	le.PutUint64(res[8:], old.Hi)
	return nil, sc.replyOK(h, res[:])
}

func (sc *sconn) openFD(h wire.Header) (*replyError, error) {
	uc, ok := sc.c.(unixMsgWriter)
	if !ok || sc.s.opts.FDs == nil {
		return fail(codeUnimpl, "OpenFD is served on the Unix socket of a server that shares its files"), nil
	}
	f, off, size, rights, err := sc.s.opts.FDs.OpenFD(Key(h.Key))
	if err != nil {
		var e *Error
		switch {
		case errors.Is(err, ErrStaleKey):
			return &replyError{status: wire.StatusStaleKey, msg: "unknown or revoked item key"}, nil
		case errors.As(err, &e):
			return fail(uint32(e.Code), "%s", e.Msg), nil
		}
		return fail(codeInvalid, "%v", err), nil
	}
	defer f.Close()
	// The descriptor rides on the reply header's bytes, so everything
	// before it must be on the socket first.
	if err := sc.bw.Flush(); err != nil {
		return nil, err
	}
	rh := wire.Header{Op: h.Op, Flags: wire.FlagReply, ID: h.ID, Arg: [4]uint64{off, size, uint64(rights)}}
	if o := sc.s.opts.Observer; o != nil {
		o.Request(h.Op, wire.StatusOK, 0, 0)
	}
	var b [wire.HeaderSize]byte
	rh.Encode(b[:])
	n, _, err := uc.WriteMsgUnix(b[:], unix.UnixRights(int(f.Fd())), nil)
	if err == nil && n < len(b) {
		_, err = sc.bw.Write(b[n:])
	}
	return nil, err
}

// control serves a control call made over the data plane (see
// Controller), passing the descriptor the Controller gives on a Unix
// socket with the reply, as OpenFD does.
func (sc *sconn) control(h wire.Header) (*replyError, error) {
	req, err := sc.payload(h.PayloadLen)
	if err != nil {
		return nil, err
	}
	ctl := sc.s.opts.Control
	if ctl == nil {
		return fail(codeUnimpl, "this server serves no control calls on its data plane"), nil
	}
	if sc.peer == nil {
		p, _ := peerCred(sc.c)
		sc.peer = &p
	}
	rep, f, off, size, rights, cerr := ctl.Control(*sc.peer, h.Arg[0], h.Arg[1], req)
	if cerr != nil {
		var e *Error
		switch {
		case errors.Is(cerr, ErrUnsupported):
			return fail(codeUnimpl, "%v", cerr), nil
		case errors.As(cerr, &e):
			return fail(uint32(e.Code), "%s", e.Msg), nil
		}
		return fail(codeInvalid, "%v", cerr), nil
	}
	if len(rep) > wire.MaxPayload {
		if f != nil {
			f.Close()
		}
		return fail(codeResource, "control reply of %d bytes exceeds the frame limit", len(rep)), nil
	}
	if f == nil || sc.fdw == nil {
		if f != nil {
			f.Close()
		}
		return nil, sc.replyOK(h, rep)
	}
	if sc.fdw.fd != nil {
		// An earlier reply's descriptor still waits in the buffer: it
		// goes out first, with the bytes before this reply.
		if err := sc.bw.Flush(); err != nil {
			f.Close()
			return nil, err
		}
	}
	// The descriptor goes with the next write of the buffer (fdWriter):
	// the replies buffered before this one, this reply's header and its
	// payload, in one sendmsg when they fit the buffer, as control
	// replies do.
	sc.fdw.fd = f
	rh := wire.Header{Op: h.Op, Flags: wire.FlagReply, ID: h.ID, PayloadLen: uint32(len(rep)),
		Arg: [4]uint64{off, size, uint64(rights), 1}}
	if o := sc.s.opts.Observer; o != nil {
		o.Request(h.Op, wire.StatusOK, 0, 0)
	}
	rh.Encode(sc.rhdr[:])
	if _, err := sc.bw.Write(sc.rhdr[:]); err != nil {
		return nil, err
	}
	_, err = sc.bw.Write(rep)
	return nil, err
}

// peerCred says who c comes from: the kernel's uid and gid of a Unix
// peer; on TCP only that it is not one. known is false when c is a Unix
// connection whose credentials could not be read: p is then an identity
// that owns nothing.
func peerCred(c net.Conn) (p Peer, known bool) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, false
	}
	p = Peer{Unix: true, UID: 1<<32 - 2, GID: 1<<32 - 2}
	rc, err := uc.SyscallConn()
	if err != nil {
		return p, false
	}
	rc.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			p.UID, p.GID = cred.Uid, cred.Gid
			known = true
		}
	})
	return p, known
}

// observe tells o of the request h answered with status and a reply
// payload of plen bytes: every reply but OpenFD's goes through header.
func observe(o Observer, h wire.Header, status, plen uint32) {
	var read, written uint64
	if status == wire.StatusOK {
		switch h.Op {
		case wire.OpGet, wire.OpGatherStrided, wire.OpGatherIndexed:
			read = uint64(plen)
		case wire.OpPut:
			written = h.Arg[1]
		case wire.OpScatterStrided, wire.OpScatterIndexed:
			written = h.Arg[1] * h.Arg[3]
		}
	}
	o.Request(h.Op, status, read, written)
}

// payload reads a request payload of n bytes into the scratch buffer.
func (sc *sconn) payload(n uint32) ([]byte, error) {
	if cap(sc.scratch) < int(n) {
		sc.scratch = make([]byte, n)
	}
	b := sc.scratch[:n]
	_, err := io.ReadFull(sc.br, b)
	return b, err
}

// discard skips n payload bytes so the stream stays in step after a
// refused request.
func (sc *sconn) discard(n uint32) error {
	_, err := sc.br.Discard(int(n))
	return err
}

func (sc *sconn) header(h wire.Header, status, plen uint32) error {
	if o := sc.s.opts.Observer; o != nil {
		observe(o, h, status, plen)
	}
	rh := wire.Header{Op: h.Op, Flags: wire.FlagReply, Status: status, PayloadLen: plen, ID: h.ID}
	rh.Encode(sc.rhdr[:])
	_, err := sc.bw.Write(sc.rhdr[:])
	return err
}

func (sc *sconn) replyOK(h wire.Header, payload []byte) error {
	if err := sc.header(h, wire.StatusOK, uint32(len(payload))); err != nil {
		return err
	}
	_, err := sc.bw.Write(payload)
	return err
}

func (sc *sconn) replyErr(h wire.Header, r *replyError) error {
	msg := r.msg
	if len(msg) > wire.MaxMessage {
		msg = msg[:wire.MaxMessage]
	}
	if err := sc.header(h, r.status, uint32(len(msg))); err != nil {
		return err
	}
	_, err := sc.bw.WriteString(msg)
	return err
}
