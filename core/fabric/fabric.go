// Package fabric is the libfabric data plane (issue 15): one-sided RMA
// (fi_read/fi_write, fi_atomic) between PEs and memory servers over the
// providers HPC sites run (verbs, cxi, efa) and libfabric's software ones
// (tcp;ofi_rxm, sockets, shm). libfabric.so.1 is loaded at run time, so
// libopenfam.so.0 loads and works where it is absent; the project's own
// TCP protocol (package transport) stays the default data plane.
//
// One Endpoint serves both sides: a memory server Exposes the bytes of
// each key it was granted (one memory registration per key, closed when
// the key is withdrawn, so revocation holds on the fabric too), and a
// client opens a Plane per server, which implements core.DataPlane.
//
// How it works. libfabric is reached with purego: fi_getinfo, fi_fabric,
// fi_freeinfo, fi_dupinfo and fi_strerror by name, everything else (the
// static inline calls of the headers) through the ops tables of the
// descriptors, whose layouts abi.go mirrors and abi_test.go checks against
// the installed headers. Each operation carries a context (struct
// fi_context2 space) pinned with its buffers until the provider completes
// it; a progress goroutine polls the CQ for a short adaptive window after
// work and otherwise blocks on the CQ's wait fd (where the CQ has none, as
// on shm, it polls with a backoff and, once idle, sleeps on a doorbell in
// shared memory that initiators ring: bell.go), and a caller waiting for its own
// operation polls the CQ itself first (see progress.go). Every
// operation has a deadline (Options.Timeout): past it the caller gets an
// error wrapping transport.ErrUnavailable, never a hang. A key the fabric
// refuses gives an error wrapping transport.ErrStaleKey (the client then
// resolves the item again); so does a failure the provider reports without
// naming the key (tcp;ofi_rxm drops the connection, shm stays silent) when
// the server, asked through Control, no longer stands by the registration.
// shm's silence also leaves the initiator's endpoint holding every later
// operation, so on shm a watchdog asks the server about operations still
// waiting after 100 ms and resets the endpoint when one cannot complete
// (recover.go). Options.Device picks the fabric domain (OpenFAM's
// if_device).
//
// What the software providers of libfabric 1.17 (Debian 12) do here:
//
//	provider     atomics                         fence  progress             mr_mode    fam_map
//	sockets      native (every op and type)      yes    auto                 offsets    no
//	tcp;ofi_rxm  through Control (lacks int128)  no     manual (CQ fd)       offsets    no
//	shm          through Control (lacks int128)  no     manual (CQ polled,   virt addr  no
//	                                                    doorbell when idle)
//
// Atomics are native only where fi_query_atomic accepts every kind and op
// of the API: a word updated both over the fabric and through the server's
// protocol would not be updated atomically.
//
// THIS FILE IS THE AGREED SURFACE (lead, 2026-11-25). The implementation
// (endpoint.go, plane.go, atomic.go, lib.go, abi.go) fills the bodies; the
// signatures are what package core, famd and the memory server call.
package fabric

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/transport"
)

// ErrNoLibfabric is returned (wrapped, with the loader's message) when
// libfabric.so.1 cannot be loaded.
var ErrNoLibfabric = errors.New("fabric: libfabric.so.1 is not installed")

// TCP is the name of the project's own data plane, the default: a
// provider string equal to it (or "") means "no libfabric".
const TCP = "tcp"

// Options configure Open.
type Options struct {
	// Node and Service bind a listening endpoint (a memory server) to an
	// address; "" lets the provider choose (FI_SOURCE semantics). shm
	// ignores them: its "address" is the name of a shared-memory region,
	// which shm derives from the node when given one (every famd listening
	// on 127.0.0.1 would then ask for the same region, and all but the
	// first fail with EBUSY) and from the process id otherwise.
	Node, Service string
	// Device is the fabric domain to open, OpenFAM's if_device: the name
	// fi_getinfo's hints carry in domain_attr->name, which libfabric
	// matches against each provider's domains (`fi_info -p PROVIDER`
	// lists them): a network interface for tcp;ofi_rxm and sockets
	// ("eth0", "lo"), a NIC for verbs ("mlx5_0"), cxi ("cxi0") and efa.
	// "" lets the provider choose. A name the provider has no domain of
	// fails Open with the domains it has.
	Device string
	// Logf receives one line per notable event; nil is silent.
	Logf func(format string, args ...any)
	// Timeout bounds every operation, from posting to completion; an
	// operation without a completion by then fails with an error wrapping
	// transport.ErrUnavailable. 0 means transport.DefaultTimeout.
	Timeout time.Duration
	// Spin is how long a caller waiting for its own operation polls the
	// completion queue at least before parking until the progress
	// goroutine wakes it (a wake-up costs latency, polling costs CPU
	// while waiting; an idle endpoint polls nothing); where operations
	// take longer and the caller's polling drives them (manual progress,
	// as on tcp;ofi_rxm), it polls for up to twice their recent time, at
	// most 40 times Spin, and for up to 40 times Spin where its post woke
	// the server's progress from its doorbell (shm after an idle spell).
	// 0 means DefaultSpin, negative never.
	Spin time.Duration
	// ProgressSpin bounds the window for which the progress goroutine
	// keeps polling the completion queue after the last sign of work
	// before it blocks on the queue's wait fd (the window adapts below
	// it to the gaps between requests), which saves a thread wake-up per
	// operation, on a memory server's endpoint above all where the
	// provider has manual progress (tcp;ofi_rxm), at the cost of up to
	// that much CPU after each burst; an idle endpoint blocks. 0 means
	// DefaultProgressSpin, negative never polls.
	ProgressSpin time.Duration
	// ChunkSize is the largest piece of a transfer posted as one fi_read
	// or fi_write (at most the provider's max_msg_size); larger ones go as
	// several pieces in flight at once. 0 means DefaultChunk.
	ChunkSize int
	// EmulateAtomics routes every atomic through Control even where the
	// provider could do them natively (for comparison and tests).
	EmulateAtomics bool
}

// Endpoint is one libfabric RDM endpoint on one provider, with its
// completion queue, address vector and progress (FI_PROGRESS_AUTO where
// offered, otherwise a progress goroutine that blocks, never spins while
// idle). Safe for concurrent use.
type Endpoint struct {
	prov string
	endpointState
}

// Open loads libfabric and opens an RDM endpoint on provider prov (a
// libfabric provider string such as "tcp;ofi_rxm", "sockets", "shm",
// "verbs;ofi_rxm"). Errors name the provider and libfabric's message.
func Open(prov string, opts Options) (*Endpoint, error) {
	return open(prov, opts)
}

// Provider is the provider string the endpoint runs on, as asked.
func (e *Endpoint) Provider() string { return e.prov }

// Domain is the name of the fabric domain the endpoint opened (the
// interface or NIC: see Options.Device).
func (e *Endpoint) Domain() string { return e.domain }

// Addr is the endpoint's fabric address (fi_getname), what a memory
// server advertises through Join and clients insert into their AV.
func (e *Endpoint) Addr() []byte { return append([]byte(nil), e.addr...) }

// Close closes the endpoint and every registration; operations in flight
// fail with an error wrapping transport.ErrUnavailable. Planes opened on
// it fail from then on.
func (e *Endpoint) Close() error { return e.close() }

// Expose registers mem, the bytes key reaches, for remote read (and write
// when rights has transport.RightWrite) with an unguessable remote key,
// and returns that key and the base address clients add item offsets to
// (0 unless the provider needs virtual addresses, FI_MR_VIRT_ADDR).
// Exposing a key already exposed returns its existing registration.
func (e *Endpoint) Expose(key transport.Key, mem []byte, rights uint8) (rkey, base uint64, err error) {
	return e.expose(key, mem, rights)
}

// Withdraw closes key's registration, so that the fabric refuses it from
// now on (revocation, deallocation, a session's end). Unknown keys are
// ignored.
func (e *Endpoint) Withdraw(key transport.Key) { e.withdraw(key) }

// Control is what a Plane needs from the server's own protocol: the
// fabric descriptor of a key, and the operations a provider lacks
// (atomics it cannot do natively, fd passing). *transport.Client
// implements it.
type Control interface {
	// FabricKey asks the server to expose key on its fabric endpoint and
	// returns the registration (wire OpFabricKey).
	FabricKey(key transport.Key) (rkey, base, size uint64, rights uint8, err error)
	Atomic(key transport.Key, off uint64, kind amo.Kind, op amo.Op, v, cmp amo.Value, fetch bool) (amo.Value, error)
	GatherIndexed(key transport.Key, dst []byte, index []uint64, esize uint64) error
	ScatterIndexed(key transport.Key, src []byte, index []uint64, esize uint64) error
	Close() error
}

// Plane is the data plane to one server over the fabric. It implements
// core.DataPlane (see core/interfaces.go).
type Plane struct {
	e      *Endpoint
	ctl    Control
	addr   []byte        // the server's fabric address
	peer   atomic.Uint64 // its fi_addr_t in e's AV (replaced by reconnect)
	mu     sync.Mutex
	keys   map[transport.Key]remoteKey
	closed atomic.Bool
	bell   *bell // the server's doorbell, nil where it has none (bell.go)
}

// Plane opens the data plane to the server at fabric address addr,
// reached for control through ctl (which the Plane closes with itself).
func (e *Endpoint) Plane(addr []byte, ctl Control) (*Plane, error) {
	return e.plane(addr, ctl)
}
