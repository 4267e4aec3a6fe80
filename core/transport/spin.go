package transport

import (
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultServerSpin is the polling window famd gives its data-plane
// connections (famd --spin): long enough to catch the next request of a PE
// issuing small operations back to back, short enough that an idle server
// is idle again within a fraction of a millisecond.
const DefaultServerSpin = 50 * time.Microsecond

// spinners counts the served connections polling right now, in every
// Server of this process: they share the process's cores (see spinCap).
var spinners atomic.Int32

// spinCap is how many connections may poll at once: one core fewer than
// the Go scheduler runs, so that polling never takes every core from the
// requests being served, the control plane and the clients on the same
// host; none on a single core. ServerOptions.MaxSpinners overrides it.
func spinCap(opts *ServerOptions) int32 {
	if opts.MaxSpinners != 0 {
		return int32(max(opts.MaxSpinners, 0))
	}
	return int32(runtime.GOMAXPROCS(0) - 1)
}

// sched_yield(2): a poller lets whatever else wants its core run (the
// client it waits for, when both share the core) between tries.
func osYield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// spinConn reads a served connection for its bufio.Reader. After a reply
// has gone out (armed), the next read polls the socket with non-blocking
// reads for up to the connection's window before parking the goroutine in
// the network poller: a PE issuing a stream of small requests then gets
// its next one answered without the wake-up a parked reader costs (tens
// of microseconds on a busy host, more than the rest of the round trip).
//
// The window adapts: it halves each time polling ran it out without a
// request (down to nothing, at which point the connection just parks), and
// comes back to the full spin when a request arrives within the full spin
// of the last reply, polling or not. So a connection whose client pauses
// between requests stops spending CPU after a few misses, and an idle
// server parks every connection within one window. At most spinCap
// connections of the process poll at once; the others park.
type spinConn struct {
	nc    net.Conn
	rc    syscall.RawConn
	full  time.Duration // the configured window
	win   time.Duration // the current window; 0: do not poll
	limit int32         // spinCap

	armed   bool     // a reply just went out: the next read may poll
	replied int64    // when it went out (monoNow)
	low     lowWater // keeps the poller asleep while the connection polls

	// The state of the polling read in progress, kept here rather than
	// captured by a closure so that a read allocates nothing: pollFn is
	// s.poll, bound once.
	pollFn func(fd uintptr) bool
	p      []byte
	n      int
	rerr   error
	until  int64 // monoNow at which polling gives up
	held   bool  // the polling slot
	hit    bool

	// polls and hits count the reads that polled and those that polling
	// answered, for tests.
	polls, hits atomic.Int64
}

// monoBase anchors monoNow.
var monoBase = time.Now()

// monoNow is the monotonic clock in nanoseconds since monoBase: what the
// polling loops time their windows with. It reads one clock (time.Now
// reads the wall clock too) and needs none of time.Time's arithmetic;
// the polling reads and the server's reply path call it on every small
// request.
func monoNow() int64 { return int64(time.Since(monoBase)) }

// monoDeadline is the instant d after now on monoNow's clock, saturating
// rather than wrapping for a timeout too long to add.
func monoDeadline(now int64, d time.Duration) int64 {
	if int64(d) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(d)
}

// monoTime is the time.Time of n on monoNow's clock, for the socket
// deadlines: monoBase carries a monotonic reading, so the net package
// times the deadline on the monotonic clock, as one from time.Now would
// be.
func monoTime(n int64) time.Time { return monoBase.Add(time.Duration(n)) }

// minSpin is the window below which polling stops until a request comes
// back quickly.
const minSpin = 2 * time.Microsecond

// newSpinConn wraps nc for polling reads, or returns nil when spin is off
// or nc has no descriptor to poll.
func newSpinConn(nc net.Conn, spin time.Duration, limit int32) *spinConn {
	if spin <= 0 || limit <= 0 {
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
	s := &spinConn{nc: nc, rc: rc, full: spin, win: spin, limit: limit, low: newLowWater(nc, rc)}
	s.pollFn = s.poll
	return s
}

// arm says a reply has just been written and the connection has nothing
// buffered: the next read waits for a new request.
func (s *spinConn) arm() {
	s.armed = true
	s.replied = monoNow()
}

// Read implements io.Reader for the connection's bufio.Reader.
func (s *spinConn) Read(p []byte) (int, error) {
	armed := s.armed
	s.armed = false
	if !armed || len(p) == 0 {
		return s.block(p)
	}
	if s.win < minSpin || !s.takeSlot() {
		n, err := s.block(p)
		s.adapt(n)
		return n, err
	}
	s.polls.Add(1)
	s.p, s.n, s.rerr, s.until, s.held, s.hit = p, 0, nil, s.replied+int64(s.win), true, false
	err := s.rc.Read(s.pollFn)
	n, rerr := s.n, s.rerr
	s.p, s.rerr = nil, nil
	if s.held {
		spinners.Add(-1)
	}
	if s.hit {
		s.hits.Add(1)
	}
	// Judged by the clock even when polling caught the request: a poller
	// descheduled past the window (a busy host) finds a late request
	// waiting and must not take it for one within the window
	// (TestServerSpinAdapts saw 22 of 20 requests polled for).
	s.adapt(n)
	if err != nil {
		return n, err
	}
	return n, rerr
}

// poll is the RawConn.Read callback of a polling read: non-blocking reads
// until a request comes or the window runs out (see Read).
func (s *spinConn) poll(fd uintptr) bool {
	if s.held {
		s.low.raise(fd)
	}
	for {
		m, err := rawRead(fd, s.p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if !s.held {
				// Woken by the poller: readable after all, or a
				// spurious wake-up; wait again.
				return false
			}
			if monoNow() > s.until {
				s.held = false
				spinners.Add(-1)
				// The poller must see the next request: with the
				// mark lowered, try once more before parking
				// (bytes that came meanwhile are read here).
				if err := s.low.lower(fd); err != nil {
					s.rerr = err
					return true
				}
				continue
			}
			osYield()
			continue
		case err != nil:
			s.rerr = err
		case m == 0:
			s.rerr = io.EOF
		default:
			s.n, s.hit = m, s.held
		}
		return true
	}
}

// block reads p the ordinary way, parking in the network poller until
// the connection is readable; the low-water mark comes down first, so
// that any byte wakes it.
func (s *spinConn) block(p []byte) (int, error) {
	if err := s.low.lowerOn(s.rc); err != nil {
		return 0, err
	}
	return s.nc.Read(p)
}

// adapt sets the window after a read of n bytes that waited for a new
// request: the full spin if the request came within it of the last reply
// (polling catches such a client), else half the window, so that polling
// stops once it has missed a few times.
func (s *spinConn) adapt(n int) {
	if n <= 0 {
		return
	}
	if monoNow()-s.replied < int64(s.full) {
		s.win = s.full
	} else {
		s.win /= 2
	}
}

// takeSlot claims one of the process's polling slots.
func (s *spinConn) takeSlot() bool {
	for {
		k := spinners.Load()
		if k >= s.limit {
			return false
		}
		if spinners.CompareAndSwap(k, k+1) {
			return true
		}
	}
}

// pollLowat is the receive low-water mark (SO_RCVLOWAT) of a TCP
// connection while one of its ends polls it.
//
// The Go runtime registers every socket with its network poller
// (edge-triggered epoll), and a runtime thread with nothing to run sleeps
// in epoll_wait whenever a goroutine is parked there (a listener, the
// control plane). Each segment arriving on a polled connection then wakes
// that thread, in the sender's write(2), for nothing: the poller finds
// nobody waiting on the connection and sleeps again. Measured on
// loopback, that is one wake-up and two context switches per request on
// each side, more than the rest of a small request costs, and on a
// loaded host the woken thread takes a core from the pollers. A TCP
// socket signals readability only once lowat bytes are waiting, so while
// the mark is above what a small request or reply carries, polling runs
// undisturbed; it is lowered (which signals at once if bytes are
// waiting) before anyone parks on the connection. Non-blocking reads
// return what is there whatever the mark.
const pollLowat = 16 << 10

// lowWater raises and lowers a polled TCP connection's SO_RCVLOWAT (see
// pollLowat). Its methods are called by the connection's reader only
// (one goroutine at a time), raise and lower with the descriptor from a
// RawConn callback, so the socket is open.
type lowWater struct {
	high   int  // the mark while polling; 0: never raised (not TCP)
	raised bool // the mark is high now

	// lowerFn, made once, lowers the mark from a RawConn.Control
	// callback, leaving its error in lerr: lowerOn allocates nothing.
	lowerFn func(fd uintptr)
	lerr    error
}

// newLowWater returns the lowWater of nc: inert unless nc is TCP. The
// mark stays at or below an eighth of the socket's receive buffer, since
// Linux grows the buffer (and clamps the window to the mark) for a mark
// that the buffer could not hold.
func newLowWater(nc net.Conn, rc syscall.RawConn) lowWater {
	if _, ok := nc.(*net.TCPConn); !ok {
		return lowWater{}
	}
	rcvbuf := 0
	if err := rc.Control(func(fd uintptr) {
		rcvbuf, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	}); err != nil {
		return lowWater{}
	}
	high := min(pollLowat, rcvbuf/8)
	if high < 2<<10 {
		return lowWater{}
	}
	return lowWater{high: high}
}

// raise sets the high mark, once per polling stretch. A failure leaves
// the mark low (polling then merely wakes the poller), so it is no error.
func (l *lowWater) raise(fd uintptr) {
	if l.high == 0 || l.raised {
		return
	}
	if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, l.high) == nil {
		l.raised = true
	}
}

// lowerOn lowers the mark, if up, through rc (outside a RawConn
// callback).
func (l *lowWater) lowerOn(rc syscall.RawConn) error {
	if !l.raised {
		return nil
	}
	if l.lowerFn == nil {
		l.lowerFn = func(fd uintptr) { l.lerr = l.lower(fd) }
	}
	if err := rc.Control(l.lowerFn); err != nil {
		return err
	}
	err := l.lerr
	l.lerr = nil
	return err
}

// lower restores the mark of 1 byte before a reader parks. Failing, the
// connection cannot be waited on safely: the error ends it.
func (l *lowWater) lower(fd uintptr) error {
	if !l.raised {
		return nil
	}
	if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, 1); err != nil {
		return fmt.Errorf("transport: lowering the receive low-water mark: %w", err)
	}
	l.raised = false
	return nil
}
