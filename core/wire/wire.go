// Package wire codes the data-plane frames of spec/wire.md: a fixed
// 72-byte little-endian header followed by a payload whose length the
// header states. It only encodes and validates; package transport moves the
// bytes, so that payloads can be read from a socket straight into their
// final place (a mapped region on the server, the caller's buffer on the
// client) after the header has been checked.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// Frame constants (spec/wire.md, "Header").
const (
	// Magic is the first four bytes of every frame: "FAMW".
	Magic uint32 = 'F' | 'A'<<8 | 'M'<<16 | 'W'<<24
	// Version is the only protocol version this package speaks.
	Version = 1
	// HeaderSize is the length of the fixed header.
	HeaderSize = 72
	// MaxPayload is the largest payload of any frame (16 MiB).
	MaxPayload = 16 << 20
	// MaxMessage is the largest error message in a failed reply.
	MaxMessage = 1024
	// MaxToken is the largest token in a Hello request.
	MaxToken = 4096
	// AtomicArgsSize is the payload of an Atomic request: v.Lo, v.Hi,
	// cmp.Lo, cmp.Hi as four uint64.
	AtomicArgsSize = 32
	// AtomicResultSize is the payload of a successful Atomic reply: the
	// previous value's Lo and Hi.
	AtomicResultSize = 16
)

// Op is a frame's opcode.
type Op uint8

// Opcodes (spec/wire.md, "Operations").
const (
	OpHello          Op = 1
	OpPing           Op = 2
	OpGet            Op = 3
	OpPut            Op = 4
	OpGatherStrided  Op = 5
	OpScatterStrided Op = 6
	OpGatherIndexed  Op = 7
	OpScatterIndexed Op = 8
	OpAtomic         Op = 9
	OpOpenFD         Op = 10
	OpControl        Op = 11
	// OpCommit makes a range of the item durable (issue 20): the server
	// answers once its bytes are on stable storage.
	OpCommit Op = 12
	// OpFabricKey asks the server to expose the key's bytes on its
	// libfabric endpoint (issue 15); the reply carries the registration:
	// Arg[0] the remote key, Arg[1] the base address, Arg[2] the size,
	// Arg[3] the rights.
	OpFabricKey Op = 13
	// OpRaid carries the operations of redundant regions (issue 16,
	// spec/wire.md "Raid"): Arg[0] names the sub-operation, the payload
	// and the reply's payload are the sub-operation's.
	OpRaid Op = 14
	// opEnd is one past the last opcode: a new opcode goes above it, opEnd
	// moves up by one, and the name goes at the end of opNames (TestOpNames
	// fails on a forgotten name; a name too many does not compile).
	opEnd Op = 15
)

// opNames is indexed by opcode.
var opNames = [opEnd]string{"", "Hello", "Ping", "Get", "Put", "GatherStrided", "ScatterStrided",
	"GatherIndexed", "ScatterIndexed", "Atomic", "OpenFD", "Control", "Commit", "FabricKey", "Raid"}

// Features a server announces in its Hello reply's Arg[0] (a server that
// predates them announces none).
const (
	// FeatureControl: the server serves Control requests.
	FeatureControl uint64 = 1 << 0
	// FeatureFabric: the server has a libfabric endpoint and serves
	// FabricKey requests.
	FeatureFabric uint64 = 1 << 1
)

// MaxControl is the largest payload of a Control request (a control
// call's encoded request message).
const MaxControl = 64 << 10

// Known reports whether o is an opcode of this protocol version (what
// Check accepts): for tables indexed by opcode, which then grow with it.
func (o Op) Known() bool { return o > 0 && o < opEnd }

func (o Op) String() string {
	if o > 0 && o < opEnd {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Header flags.
const (
	FlagReply uint8 = 1 << 0 // set on replies, clear on requests
	FlagFetch uint8 = 1 << 1 // Atomic requests only: the caller reads the old value
	flagsAll        = FlagReply | FlagFetch
)

// Reply status values. 1..999 are OpenFAM FAM_E* numbers (2 no permission,
// 4 invalid, 13 out of range, 16 unimplemented ...).
const (
	StatusOK       uint32 = 0
	StatusStaleKey uint32 = 1000 // the key is unknown to the server: resolve the item again
	// Redundant regions (issue 16): the copy or block addressed is not
	// current here (its server restarted and is not rebuilt yet): use
	// another copy, or reconstruction.
	StatusNotCurrent uint32 = 1001
	// Redundant regions: a server-to-server forward this request needed
	// failed; nothing was applied. The message starts "peer N:" with the
	// failed server's index in the region.
	StatusPeerDown uint32 = 1002
	maxStatus             = StatusPeerDown
)

// Header is a decoded frame header. Arg holds the four operation arguments
// whose meaning depends on Op (spec/wire.md, "Operations"):
//
//	Get             Arg[0] offset, Arg[1] length
//	Put             Arg[0] offset, Arg[1] length (= PayloadLen)
//	GatherStrided   Arg[0] first, Arg[1] count, Arg[2] stride, Arg[3] element size
//	ScatterStrided  as GatherStrided; payload count*esize bytes
//	GatherIndexed   Arg[1] count, Arg[3] element size; payload count uint64 indexes
//	ScatterIndexed  as GatherIndexed; payload count indexes then count*esize bytes
//	Atomic          Arg[0] offset, Arg[1] kind, Arg[2] op; payload v and cmp
//	OpenFD reply    Arg[0] offset in the file, Arg[1] size, Arg[2] rights
//	Hello reply     Arg[0] the server's features (FeatureControl ...)
//	Control         Arg[0] method, Arg[1] session; payload the encoded request
//	Control reply   payload the encoded reply; Arg[3] 1 when a descriptor is
//	                attached, Arg[0..2] then as in the OpenFD reply
//	Commit          Arg[0] offset, Arg[1] length; no payload either way
//	FabricKey       no argument but the key; no payload either way
//	FabricKey reply Arg[0] remote key, Arg[1] base, Arg[2] size, Arg[3] rights
type Header struct {
	Op         Op
	Flags      uint8
	Status     uint32
	PayloadLen uint32
	ID         uint64
	Key        [16]byte
	Arg        [4]uint64
}

// IsReply reports whether the header is a reply's.
func (h *Header) IsReply() bool { return h.Flags&FlagReply != 0 }

// ErrMalformed is wrapped by every decoding error: the frame breaks
// spec/wire.md and the connection it came on must be closed.
var ErrMalformed = errors.New("wire: malformed frame")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// Encode writes h into b, which must hold HeaderSize bytes. It does not
// validate h; senders build headers that Check accepts.
func (h *Header) Encode(b []byte) {
	_ = b[HeaderSize-1]
	le := binary.LittleEndian
	le.PutUint32(b[0:], Magic)
	b[4] = Version
	b[5] = byte(h.Op)
	b[6] = h.Flags
	b[7] = 0
	le.PutUint32(b[8:], h.Status)
	le.PutUint32(b[12:], h.PayloadLen)
	le.PutUint64(b[16:], h.ID)
	copy(b[24:40], h.Key[:])
	for i, a := range h.Arg {
		le.PutUint64(b[40+8*i:], a)
	}
}

// Parse decodes and validates a header from b (at least HeaderSize bytes).
// Any error wraps ErrMalformed.
func Parse(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, malformed("header of %d bytes, want %d", len(b), HeaderSize)
	}
	le := binary.LittleEndian
	if m := le.Uint32(b[0:]); m != Magic {
		return h, malformed("bad magic %#08x", m)
	}
	if b[4] != Version {
		return h, malformed("unsupported version %d", b[4])
	}
	if b[7] != 0 {
		return h, malformed("reserved byte is %d", b[7])
	}
	h.Op = Op(b[5])
	h.Flags = b[6]
	h.Status = le.Uint32(b[8:])
	h.PayloadLen = le.Uint32(b[12:])
	h.ID = le.Uint64(b[16:])
	copy(h.Key[:], b[24:40])
	for i := range h.Arg {
		h.Arg[i] = le.Uint64(b[40+8*i:])
	}
	return h, h.Check()
}

// Check validates the fields of a header against spec/wire.md: known
// opcode and flags, a payload no longer than MaxPayload, and a payload
// length consistent with the opcode and arguments. It does not judge the
// arguments' meaning (a zero length or an offset beyond the item are
// answered with a status, not treated as malformed).
func (h *Header) Check() error {
	if h.Op == 0 || h.Op >= opEnd {
		return malformed("unknown opcode %d", uint8(h.Op))
	}
	if h.Flags&^flagsAll != 0 {
		return malformed("unknown flags %#x", h.Flags)
	}
	if h.Flags&FlagFetch != 0 && h.Op != OpAtomic {
		return malformed("fetch flag on %v", h.Op)
	}
	if h.PayloadLen > MaxPayload {
		return malformed("payload of %d bytes exceeds %d", h.PayloadLen, MaxPayload)
	}
	n := uint64(h.PayloadLen)
	if h.IsReply() {
		return h.checkReply(n)
	}
	if h.Status != StatusOK {
		return malformed("request with status %d", h.Status)
	}
	want, ok := uint64(0), true
	switch h.Op {
	case OpHello:
		if n > MaxToken {
			return malformed("token of %d bytes exceeds %d", n, MaxToken)
		}
		want = n
	case OpPut:
		want = h.Arg[1]
	case OpScatterStrided:
		want, ok = mul(h.Arg[1], h.Arg[3])
	case OpGatherIndexed:
		want, ok = mul(h.Arg[1], 8)
	case OpScatterIndexed:
		want, ok = mul(h.Arg[1], 8+h.Arg[3])
		ok = ok && h.Arg[3] <= MaxPayload
	case OpAtomic:
		want = AtomicArgsSize
	case OpControl:
		if n > MaxControl {
			return malformed("control request of %d bytes exceeds %d", n, MaxControl)
		}
		want = n
	case OpRaid:
		want = n
	}
	if !ok || want != n {
		return malformed("%v request with payload of %d bytes, arguments imply %d", h.Op, n, want)
	}
	return nil
}

func (h *Header) checkReply(n uint64) error {
	if h.Status != StatusOK {
		if h.Status > maxStatus {
			return malformed("unknown status %d", h.Status)
		}
		if n > MaxMessage {
			return malformed("error message of %d bytes exceeds %d", n, MaxMessage)
		}
		return nil
	}
	switch h.Op {
	case OpGet, OpGatherStrided, OpGatherIndexed, OpControl, OpRaid:
		return nil // the data asked for, a control reply; the requester checks it
	case OpAtomic:
		if n != AtomicResultSize {
			return malformed("Atomic reply with payload of %d bytes", n)
		}
		return nil
	}
	if n != 0 {
		return malformed("%v reply with payload of %d bytes", h.Op, n)
	}
	return nil
}

func mul(a, b uint64) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	return lo, hi == 0
}

// ReadHeader reads and validates one header from r into buf. It never
// reads the payload. An I/O error is returned as is (io.EOF at a clean
// frame boundary); a bad header wraps ErrMalformed.
func ReadHeader(r io.Reader, buf *[HeaderSize]byte) (Header, error) {
	if _, err := io.ReadFull(r, buf[:]); err != nil {
		return Header{}, err
	}
	return Parse(buf[:])
}

// Decode parses one whole frame at the start of b and returns its header,
// its payload (a subslice of b, not a copy) and the frame's length. A
// frame that is cut short returns io.ErrUnexpectedEOF; a bad one an error
// wrapping ErrMalformed.
func Decode(b []byte) (h Header, payload []byte, n int, err error) {
	if len(b) < HeaderSize {
		return Header{}, nil, 0, io.ErrUnexpectedEOF
	}
	if h, err = Parse(b); err != nil {
		return Header{}, nil, 0, err
	}
	end := HeaderSize + int(h.PayloadLen)
	if len(b) < end {
		return Header{}, nil, 0, io.ErrUnexpectedEOF
	}
	return h, b[HeaderSize:end:end], end, nil
}

// Append appends the frame h + payload to dst and returns the extended
// slice. h.PayloadLen is set from len(payload).
func Append(dst []byte, h Header, payload []byte) []byte {
	h.PayloadLen = uint32(len(payload))
	var hb [HeaderSize]byte
	h.Encode(hb[:])
	dst = append(dst, hb[:]...)
	return append(dst, payload...)
}
