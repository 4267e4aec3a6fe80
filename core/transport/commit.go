package transport

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/wire"
)

// Commit (issue 20): a client asks the server to make a range of an item
// durable, and the server answers only once the range is on stable
// storage. The request needs a valid key, no particular right: making
// bytes durable changes nothing anyone can read.

// CommitAsync starts making bytes [off, off+n) of the item durable on the
// server; the Call ends when they are (or with the server's error: an
// *Error with Code 13 beyond the item, 4 for n 0, 17 (FAM_ERESOURCE) when the write to
// stable storage failed; ErrStaleKey; ErrUnavailable). Writes whose calls
// completed before it was sent are covered, on any connection.
func (c *Client) CommitAsync(key Key, off, n uint64) *Call {
	h := wire.Header{Op: wire.OpCommit, Key: key, Arg: [4]uint64{off, n}}
	return c.single(h, nil, nil, false)
}

// Commit is CommitAsync and Wait.
func (c *Client) Commit(key Key, off, n uint64) error {
	return c.one(wire.Header{Op: wire.OpCommit, Key: key, Arg: [4]uint64{off, n}}, &req{op: wire.OpCommit})
}

func (sc *sconn) commit(h wire.Header) (*replyError, error) {
	mem, r := sc.resolve(h, 0)
	if r == nil {
		r = span(h.Arg[0], h.Arg[1], uint64(len(mem)))
	}
	if r != nil {
		return r, nil
	}
	// The replies of earlier requests may still sit in the write buffer:
	// send them first, so that a slow flush does not hold them back.
	if err := sc.bw.Flush(); err != nil {
		return nil, err
	}
	if err := MsyncRange(mem[h.Arg[0] : h.Arg[0]+h.Arg[1]]); err != nil {
		return fail(codeResource, "writing the range to stable storage: %v", err), nil
	}
	return nil, sc.replyOK(h, nil)
}

// MsyncRange writes the pages holding b, part of a MAP_SHARED file
// mapping, to stable storage (msync MS_SYNC). b need not be page-aligned:
// the range is widened to whole pages, which lie in the same mapping.
func MsyncRange(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	page := uintptr(unix.Getpagesize())
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	hi := lo + uintptr(len(b))
	lo &^= page - 1
	hi = (hi + page - 1) &^ (page - 1)
	for {
		_, _, e := unix.Syscall(unix.SYS_MSYNC, lo, hi-lo, unix.MS_SYNC)
		if e != unix.EINTR {
			if e != 0 {
				return e
			}
			return nil
		}
	}
}
