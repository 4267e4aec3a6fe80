// Package transport is the data plane between PEs and memory servers: get,
// put, gather/scatter and atomics on data items named by keys, over any
// stream connection (TCP between hosts, a Unix socket on one host). The
// frame format is specified in spec/wire.md and coded by package wire.
//
// The Client and Server here are the sockets provider; the Provider-neutral
// surface (Key, Memory, Error) is what a future RDMA provider implements too.
package transport

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gofam/openfam/core/wire"
)

// Key is an item capability: 16 random bytes issued by the server after the
// permission check, revoked when the item's permissions change or it is
// deallocated.
type Key [16]byte

// Rights bits carried with a key.
const (
	RightRead  uint8 = 1
	RightWrite uint8 = 2
)

// Memory is what a Server serves: it maps a key to the item's bytes (a
// slice of the server's mapping of the region heap; Put payloads are read
// from the socket straight into it) and the key holder's rights. ok is
// false for an unknown or revoked key. Safe for concurrent use.
type Memory interface {
	Resolve(key Key) (mem []byte, rights uint8, ok bool)
}

// FDSource, when a Server has one, lets same-host clients map items
// themselves: OpenFD returns the region heap file (opened read-only unless
// the key grants write), the item's offset in it, its size and the rights.
// The Server passes the descriptor with SCM_RIGHTS on Unix sockets only.
type FDSource interface {
	OpenFD(key Key) (f *os.File, offset, size uint64, rights uint8, err error)
}

// Peer is who a data-plane connection comes from, as far as the
// transport knows: on a Unix socket the uid and gid the kernel reports
// (SO_PEERCRED); on TCP nothing but that it presented the token.
type Peer struct {
	Unix     bool
	UID, GID uint32
}

// Controller serves control calls made over the data plane (wire
// OpControl): the calls a PE makes in its inner loops (lookups,
// allocations) then cost one data-plane round trip, on the same host
// with the descriptor of a looked-up item in the same exchange, instead
// of control-plane round trips. method and the encoded request and reply
// are the Controller's business. fd, when not nil, is passed to the
// client (Unix sockets only; the server closes it), with the item's offset
// in the file, its size and the rights. An error with ErrUnsupported
// tells the client to make the call on the control plane instead.
type Controller interface {
	Control(p Peer, method, session uint64, req []byte) (rep []byte, fd *os.File, off, size uint64, rights uint8, err error)
}

// Control methods famd's Controller serves: each carries the protobuf
// request of the gRPC method of the same name (spec/proto) and answers
// its reply; Lookup and Allocate replies come with the item's descriptor
// on a Unix socket when the caller may map it.
const (
	CtlLookup uint64 = 1 + iota
	CtlLookupRegion
	CtlAllocate
	CtlDeallocate
	CtlCloseItem
	CtlRegionByID
)

// ErrUnsupported is a Controller's answer to a call it does not serve over
// the data plane; the client makes it on the control plane.
var ErrUnsupported = errors.New("transport: control call not served on the data plane")

// ServerOptions configure a Server.
type ServerOptions struct {
	// Token, when not empty, must be presented in the Hello frame before any
	// other request on a connection (used on TCP listeners).
	Token string
	// FDs answers OpenFD requests on Unix connections; nil refuses them.
	FDs FDSource
	// Logf receives one line per connection-level event; nil is silent.
	Logf func(format string, args ...any)
	// MaxConnsPerPeer caps the connections one peer may hold open at once,
	// so that one user cannot starve the others of connections: a peer is
	// a uid on a Unix socket (SO_PEERCRED), a source IP address on TCP. A
	// connection over the cap is refused (its first request is answered
	// with FAM_ERESOURCE and why) and a warning logged. 0 means
	// DefaultMaxConnsPerPeer, or a quarter of the process's open-file
	// limit if that is lower; negative, no cap.
	MaxConnsPerPeer int
	// Warnf receives the events an operator should see (connections
	// refused over the cap, Accept failing and retried); nil means Logf.
	Warnf func(format string, args ...any)
	// Observer, when set, is told of every request answered (famd's
	// metrics); nil costs nothing.
	Observer Observer
	// Spin is how long after answering a connection's requests the server
	// polls it for the next one (non-blocking reads) before parking its
	// reader in the network poller; the window adapts (see spinConn), so
	// an idle server polls nothing. 0 never polls (every request then pays
	// a wake-up); famd uses DefaultServerSpin unless told otherwise.
	Spin time.Duration
	// Control, when set, serves control calls made over the data plane;
	// nil refuses them (clients use the control plane).
	Control Controller
	// MaxSpinners caps the connections of this process polling at once
	// (all its Servers together); 0 means one fewer than GOMAXPROCS (none
	// on one core), negative none.
	MaxSpinners int
	// Fabric, when set, is the server's libfabric endpoint: the server
	// announces it in its Hello reply and answers FabricKey requests by
	// exposing keys there (see fabric.go). nil: the tcp data plane only.
	Fabric FabricServer
}

// Observer counts a Server's work for monitoring. Request is called once
// for every request answered, on the goroutine serving its connection,
// with the reply's status (wire.StatusOK, a FAM_E* number or
// wire.StatusStaleKey), the item bytes the reply carried (gets and
// gathers) and the item bytes the request wrote (puts and scatters). It
// sits on the data path: it must be cheap (atomic adds) and safe for
// concurrent use.
type Observer interface {
	Request(op wire.Op, status uint32, read, written uint64)
}

// ClientOptions configure a Client.
type ClientOptions struct {
	Conns     int           // connections in the pool; default 4
	Token     string        // sent in the Hello frame
	Timeout   time.Duration // per operation; default 30s (a stalled socket may fail up to Timeout/64 early: deadlines are reused)
	ChunkSize int           // largest payload per frame; default 1 MiB
	// Spin is how long a caller waiting for its reply on a TCP connection
	// polls the socket before parking (see spinReader); 0 never polls.
	// Worth it when the caller's thread is a C thread (cgo) and cores are
	// not oversubscribed; it costs up to Spin of CPU per blocking call.
	Spin time.Duration
	// lazyDelay overrides the package's lazyDelay, for tests that need a
	// window long enough to time against on a loaded host; 0: lazyDelay.
	lazyDelay time.Duration
}

// Error is a failure reported by the server: Code is an OpenFAM FAM_E*
// number (13 out of range, 2 no permission, 4 invalid, ...).
type Error struct {
	Code int32
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s (FAM error %d)", e.Msg, e.Code) }

// ErrStaleKey means the server does not know the key (revoked, or the
// server restarted): the client should resolve the item again.
var ErrStaleKey = errors.New("transport: unknown or revoked item key")

// ErrUnavailable wraps connection failures and timeouts: the server is
// unreachable or did not answer within the timeout.
var ErrUnavailable = errors.New("transport: memory server unavailable")

// DoneCall returns a Call that has already finished with err: for
// providers and test doubles that complete an operation at once.
func DoneCall(err error) *Call {
	c := &Call{}
	c.once.Do(func() { c.res = err })
	return c
}
