package transport

import (
	"bufio"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"github.com/gofam/openfam/core/wire"
	"golang.org/x/sys/unix"
)

// The small frames of the data path go through write(2) and read(2)
// called as raw system calls on the socket's descriptor: a non-blocking
// socket answers at once (or with EAGAIN), so the call need not tell the
// Go scheduler that the thread may block (entersyscall and exitsyscall,
// which net.Conn's Write and unix.Read pay on every call). On a small
// request that bookkeeping is a noticeable part of what each end adds to
// the bare round trip, and the polling loops pay it on every try.

// maxRawWrite is the largest write made raw: the kernel copies it
// quickly; larger writes (bulk transfers) go through net.Conn, whose
// scheduler bookkeeping costs nothing next to the copy.
const maxRawWrite = 64 << 10

// rawWriter writes a connection's small frames with raw send(2) calls
// through its RawConn, so that deadlines and the descriptor's lifetime
// are still managed by the net package; writes it cannot make raw (no
// descriptor, or large ones) go to the connection itself. One goroutine
// writes at a time (the client's cc.wmu holder, the server's connection
// goroutine); a write allocates nothing unless it fails.
type rawWriter struct {
	nc net.Conn
	rc syscall.RawConn // nil: every write goes to nc

	// The write in progress, kept here rather than captured by a
	// closure: fn is w.write, bound once.
	fn  func(fd uintptr) bool
	p   []byte
	n   int
	err error

	waits int // writes that found the buffer full and waited, for tests
}

func newRawWriter(nc net.Conn) *rawWriter {
	w := &rawWriter{nc: nc}
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			w.rc = rc
			w.fn = w.write
		}
	}
	return w
}

// Write implements io.Writer: all of p, or an error.
func (w *rawWriter) Write(p []byte) (int, error) {
	if w.rc == nil || len(p) == 0 || len(p) > maxRawWrite {
		return w.nc.Write(p)
	}
	w.p, w.n, w.err = p, 0, nil
	err := w.rc.Write(w.fn)
	n, werr := w.n, w.err
	w.p, w.err = nil, nil
	if err == nil && werr != nil {
		if e, ok := werr.(syscall.Errno); ok {
			werr = os.NewSyscallError("write", e)
		}
		err = &net.OpError{Op: "write", Net: w.nc.LocalAddr().Network(), Source: w.nc.LocalAddr(),
			Addr: w.nc.RemoteAddr(), Err: werr}
	}
	return n, err
}

// write is the RawConn.Write callback: sends until p is out, asking to
// wait (false) while the socket's buffer is full. MSG_NOSIGNAL: a peer
// gone is an EPIPE error, never a signal, whatever the host program does
// about SIGPIPE.
func (w *rawWriter) write(fd uintptr) bool {
	for w.n < len(w.p) {
		m, e := rawSend(fd, w.p[w.n:])
		switch e {
		case 0:
			if m == 0 {
				// Not done by a stream socket; stops a loop that would
				// never end.
				w.err = io.ErrShortWrite
				return true
			}
			w.n += int(m)
		case unix.EINTR:
		case unix.EAGAIN:
			w.waits++
			return false
		default:
			w.err = e
			return true
		}
	}
	return true
}

// readHeader reads one frame header from br, as wire.ReadHeader does (the
// same errors: io.EOF before any byte, io.ErrUnexpectedEOF after some),
// but parses it in br's buffer instead of copying it out through
// io.ReadFull: the header of every small request and reply passes here.
func readHeader(br *bufio.Reader) (wire.Header, error) {
	b, err := br.Peek(wire.HeaderSize)
	if err != nil {
		if err == io.EOF && len(b) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return wire.Header{}, err
	}
	h, err := wire.Parse(b)
	br.Discard(wire.HeaderSize) // buffered: cannot fail
	return h, err
}

// recvmsg is recvmsg(2) of one buffer and its control messages on a
// connected, non-blocking socket (a RawConn callback's descriptor), as a
// raw system call that does not ask for the sender's address: unix.Recvmsg
// does, and allocates it and the Sockaddr it makes of it on every call,
// which on a Unix connection was two allocations per reply read.
func recvmsg(fd int, p, oob []byte, flags int) (n, oobn int, err error) {
	var msg unix.Msghdr
	var iov unix.Iovec
	if len(p) > 0 {
		iov.Base = &p[0]
		iov.SetLen(len(p))
	}
	msg.Iov = &iov
	msg.SetIovlen(1)
	if len(oob) > 0 {
		msg.Control = &oob[0]
		msg.SetControllen(len(oob))
	}
	r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags))
	if e != 0 {
		return -1, 0, e
	}
	return int(r), int(msg.Controllen), nil
}
