package transport

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// quietConn is a Unix-socket connection (a client's, or one famd
// serves: see Server.admitAndServe) kept out of the Go
// runtime's network poller: its reads and writes are non-blocking system
// calls, and a reader or writer with nothing to do waits in
// the network poller through a duplicate descriptor made for that wait
// (see wait).
//
// Why: the runtime registers every socket with its epoll instance, and
// whenever a goroutine of the process is parked in the poller (the gRPC
// session stream's reader always is) an idle runtime thread sleeps in
// epoll_wait. Every reply arriving on a connection registered there then
// wakes that thread, in famd's write, even while the caller is polling
// the socket for the reply itself and nobody waits in the poller for it:
// the thread finds nothing to run and sleeps again, two context switches
// per reply for nothing, which on a loaded host take a core from the
// caller and famd. Over TCP the receive low-water mark keeps epoll quiet
// while a caller polls (see pollLowat); a Unix socket has no such mark,
// so the connection leaves epoll instead. Measured per fam_allocate +
// fam_deallocate pair on famd's Unix socket: the client's epoll_wait
// calls went from 7.0 to 0 (load 10-11) and 5.8 to 0.04 (load 3.5)
// (tests/rtt-syscalls.sh --unix --ops alloc, issue 19).
//
// The descriptor is closed only once no system call is using it (refs),
// so that a Close racing with a read never lets the read reach a
// descriptor number the process has reused; Close shuts the socket down
// first, which ends a wait at once (the socket becomes readable).
type quietConn struct {
	fd           int
	laddr, raddr net.Addr

	mu      sync.Mutex
	refs    int  // system calls in progress on fd
	closing bool // Close was called; fd is closed when refs drops to 0

	rdl, wdl atomic.Int64 // read and write deadlines, Unix ns; 0: none
}

// newQuietConn moves uc's socket out of the network poller: it takes a
// duplicate of the descriptor (which shares the non-blocking mode) and
// closes uc, which removes uc's descriptor from epoll. On failure uc is
// returned unchanged.
func newQuietConn(uc *net.UnixConn) (net.Conn, error) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return uc, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) {
		fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return uc, err
	}
	if derr != nil {
		return uc, derr
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return uc, err
	}
	q := &quietConn{fd: fd, laddr: uc.LocalAddr(), raddr: uc.RemoteAddr()}
	uc.Close()
	return q, nil
}

// use reserves the descriptor for one system call; done releases it.
func (q *quietConn) use() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closing {
		return false
	}
	q.refs++
	return true
}

func (q *quietConn) done() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.refs--; q.refs == 0 && q.closing {
		unix.Close(q.fd)
		q.fd = -1
	}
}

// wait parks the caller until the descriptor is ready for events or the
// deadline (Unix ns, 0: none) passes. It parks in the network poller like
// any goroutine, through a duplicate of the descriptor registered for this
// wait only and closed after (which removes it from epoll again): a
// thread blocked in poll(2) instead would hold its P in a system call,
// and with every P so held nobody runs the process's timers or polls its
// other sockets until sysmon takes the Ps back (a reordering test of
// replies 100 ms apart saw them out of order). The registration costs a
// dup, an epoll_ctl each way and a close, only when a reply was not there
// within the caller's polling window or for a background reader.
func (q *quietConn) wait(events int16, deadline int64) error {
	nfd, err := unix.FcntlInt(uintptr(q.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("fcntl", err)
	}
	// The duplicate shares the non-blocking mode, so os.NewFile registers
	// it with the poller.
	f := os.NewFile(uintptr(nfd), "quietconn")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if deadline != 0 {
		t := time.Unix(0, deadline)
		if events == unix.POLLOUT {
			err = f.SetWriteDeadline(t)
		} else {
			err = f.SetReadDeadline(t)
		}
		if err != nil {
			return err
		}
	}
	// The first call, made after the runtime cleared the descriptor's
	// readiness, looks for itself (the poller reported the registration's
	// readiness before, and would not again: epoll is edge-triggered);
	// not ready, the runtime parks until the poller says otherwise, and
	// the second call ends the wait.
	first := true
	ready := func(fd uintptr) bool {
		if !first {
			return true
		}
		first = false
		for {
			fds := []unix.PollFd{{Fd: int32(fd), Events: events}}
			n, err := unix.Poll(fds, 0)
			if err == unix.EINTR {
				continue
			}
			return err != nil || n > 0
		}
	}
	if events == unix.POLLOUT {
		err = rc.Write(ready)
	} else {
		err = rc.Read(ready)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return os.ErrDeadlineExceeded
	}
	return err
}

// io runs f, a non-blocking system call on the descriptor, until it
// reports done, waiting in poll(2) for events between tries.
func (q *quietConn) io(events int16, dl *atomic.Int64, f func(fd uintptr) bool) error {
	if !q.use() {
		return net.ErrClosed
	}
	defer q.done()
	for {
		if f(uintptr(q.fd)) {
			return nil
		}
		if err := q.wait(events, dl.Load()); err != nil {
			return err
		}
		q.mu.Lock()
		closing := q.closing
		q.mu.Unlock()
		if closing {
			return net.ErrClosed
		}
	}
}

// Read implements net.Conn.
func (q *quietConn) Read(p []byte) (int, error) {
	var n int
	var rerr error
	err := q.io(unix.POLLIN, &q.rdl, func(fd uintptr) bool {
		n, rerr = rawRead(fd, p)
		if rerr == unix.EAGAIN || rerr == unix.EINTR {
			return false
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	if rerr != nil {
		return 0, os.NewSyscallError("read", rerr)
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// ReadMsgUnix reads like net.UnixConn's, keeping descriptors in oob (see
// fdReader).
func (q *quietConn) ReadMsgUnix(p, oob []byte) (n, oobn, flags int, addr *net.UnixAddr, err error) {
	var rerr error
	err = q.io(unix.POLLIN, &q.rdl, func(fd uintptr) bool {
		n, oobn, rerr = recvmsg(int(fd), p, oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN && rerr != unix.EINTR
	})
	if err == nil && rerr != nil {
		err = os.NewSyscallError("recvmsg", rerr)
	}
	if err == nil && n == 0 && len(p) > 0 && oobn == 0 {
		err = io.EOF
	}
	return max(n, 0), oobn, flags, nil, err
}

// WriteMsgUnix sends b with the control message oob (descriptors, see
// fdWriter) in one sendmsg, as net.UnixConn's does on a stream socket:
// it may send only part of b (n), the control message going with the
// first byte; addr must be nil.
func (q *quietConn) WriteMsgUnix(b, oob []byte, addr *net.UnixAddr) (n, oobn int, err error) {
	if addr != nil {
		return 0, 0, errors.New("transport: WriteMsgUnix with an address on a connected socket")
	}
	var werr error
	err = q.io(unix.POLLOUT, &q.wdl, func(fd uintptr) bool {
		n, werr = unix.SendmsgN(int(fd), b, oob, nil, unix.MSG_NOSIGNAL)
		return werr != unix.EAGAIN && werr != unix.EINTR
	})
	if err == nil && werr != nil {
		err = os.NewSyscallError("sendmsg", werr)
	}
	if err != nil {
		return 0, 0, err
	}
	return n, len(oob), nil
}

// Write implements net.Conn: all of p, or an error.
func (q *quietConn) Write(p []byte) (int, error) {
	done := 0
	var werr error
	err := q.io(unix.POLLOUT, &q.wdl, func(fd uintptr) bool {
		for done < len(p) {
			m, err := unix.SendmsgN(int(fd), p[done:], nil, nil, unix.MSG_NOSIGNAL)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return false
			case err != nil:
				werr = os.NewSyscallError("sendmsg", err)
				return true
			}
			done += m
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return done, err
}

// Close implements net.Conn. The shutdown ends the peer's reads and any
// wait here at once; the descriptor goes when its last user is done.
func (q *quietConn) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closing {
		return net.ErrClosed
	}
	q.closing = true
	unix.Shutdown(q.fd, unix.SHUT_RDWR)
	if q.refs == 0 {
		unix.Close(q.fd)
		q.fd = -1
	}
	return nil
}

// LocalAddr implements net.Conn.
func (q *quietConn) LocalAddr() net.Addr { return q.laddr }

// RemoteAddr implements net.Conn.
func (q *quietConn) RemoteAddr() net.Addr { return q.raddr }

// SetDeadline implements net.Conn.
func (q *quietConn) SetDeadline(t time.Time) error {
	q.SetReadDeadline(t)
	return q.SetWriteDeadline(t)
}

// SetReadDeadline implements net.Conn; it applies to the next wait.
func (q *quietConn) SetReadDeadline(t time.Time) error {
	q.rdl.Store(unixNano(t))
	return nil
}

// SetWriteDeadline implements net.Conn; it applies to the next wait.
func (q *quietConn) SetWriteDeadline(t time.Time) error {
	q.wdl.Store(unixNano(t))
	return nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixNano(), 1)
}

// SyscallConn implements syscall.Conn, for the raw writer, the polling
// reader and the liveness probe.
func (q *quietConn) SyscallConn() (syscall.RawConn, error) { return quietRaw{q}, nil }

// quietRaw is a quietConn's syscall.RawConn.
type quietRaw struct{ q *quietConn }

func (r quietRaw) Control(f func(fd uintptr)) error {
	if !r.q.use() {
		return net.ErrClosed
	}
	defer r.q.done()
	f(uintptr(r.q.fd))
	return nil
}

func (r quietRaw) Read(f func(fd uintptr) bool) error {
	return r.q.io(unix.POLLIN, &r.q.rdl, f)
}

func (r quietRaw) Write(f func(fd uintptr) bool) error {
	return r.q.io(unix.POLLOUT, &r.q.wdl, f)
}
