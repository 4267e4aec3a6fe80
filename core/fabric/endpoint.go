package fabric

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/gofam/openfam/core/transport"
)

// sweepMillis bounds each blocking CQ read of the progress goroutine, so
// that it notices Close where the provider cannot be signalled; an idle
// endpoint wakes this often and does nothing else.
const sweepMillis = 100

// DefaultSpin is how long a caller waiting for its own operation polls the
// completion queue before parking (see Options.Spin).
const DefaultSpin = 50 * time.Microsecond

// DefaultChunk is the largest piece one fi_read or fi_write moves (see
// Options.ChunkSize).
const DefaultChunk = 1 << 20

// fiCtx is the provider's per-operation scratch space, struct fi_context2
// (eight pointers; FI_CONTEXT needs four): its address is the operation
// context passed with each fi_read, fi_write or atomic and returned in the
// completion.
type fiCtx [8]uintptr

// op is one operation of the data plane: one or more fabric operations
// (pieces) posted together and completed as one, with the Go memory the
// provider uses pinned until every piece has completed.
type op struct {
	ctx      []fiCtx // one per piece
	left     atomic.Int32
	fin      atomic.Bool   // the waiter has its result (set before done closes)
	done     chan struct{} // closed when fin is set
	errMu    sync.Mutex
	err      error
	notified atomic.Bool // done was closed (completion or deadline)
	deadline time.Time
	pin      runtime.Pinner
	mrs      []*fidMR // local registrations (FI_MR_LOCAL), closed at release
	keep     []any    // Go memory the provider reads or writes (kept alive)
	onDone   func(error)
	timer    atomic.Pointer[time.Timer] // fails the op at its deadline
	released atomic.Bool
	watch    *watched    // set where refusals are silent (recover.go)
	bell     *bell       // the target's doorbell, rung after each post (bell.go)
	rang     atomic.Bool // a post woke the target from its sleep
}

// fail records err as the op's error unless one is recorded.
func (o *op) fail(err error) {
	o.errMu.Lock()
	if o.err == nil {
		o.err = err
	}
	o.errMu.Unlock()
}

// result returns the op's error.
func (o *op) result() error {
	o.errMu.Lock()
	defer o.errMu.Unlock()
	return o.err
}

// notify gives the waiter its result, once.
func (o *op) notify() {
	if o.notified.Swap(true) {
		return
	}
	if t := o.timer.Load(); t != nil {
		t.Stop()
	}
	o.fin.Store(true)
	close(o.done)
	if o.onDone != nil {
		o.onDone(o.result())
	}
}

// Endpoint state beyond the agreed fields is kept in endpointState, which
// Endpoint embeds (see fabric.go).
type endpointState struct {
	l     *lib
	opts  Options
	info  *fiInfo
	fab   *fidFabric
	dom   *fidDomain
	cq    *fidCQ
	av    *fidAV
	ep    *fidEP
	addr  []byte
	local bool // FI_MR_LOCAL: local buffers need registering

	// domain is the fabric domain opened (fi_domain_attr.name).
	domain string
	// rec recovers from refusals the provider does not answer (shm).
	rec recovery

	mrMode        int32
	keySize       uintptr
	maxMsg        uint64
	chunk         uint64
	caps          uint64
	auto          bool     // FI_PROGRESS_AUTO data progress
	pollOnly      bool     // the CQ has no wait object: progress polls
	delivery      bool     // the provider offers FI_DELIVERY_COMPLETE
	rmaEvent      bool     // FI_RMA_EVENT: remote operations can be counted
	cntr          *fidCntr // counts remote reads and writes (polling progress only)
	native        bool     // atomics go through fi_atomic
	hasAtomic     bool     // the provider offers FI_ATOMIC
	missingAtomic string   // the first atomic op the provider lacks

	// life orders operations against Close: posting and polling hold it
	// for reading, Close for writing.
	life   sync.RWMutex
	closed atomic.Bool

	mu   sync.Mutex
	ops  map[uintptr]*op // by the address of each posted piece's fiCtx
	mrs  map[transport.Key]*exposure
	stop chan struct{}
	gone chan struct{} // closed when the progress goroutine has returned

	// Progress and completion waits (progress.go).
	waitFD   int           // the CQ's wait fd (FI_GETWAIT), -1 where none
	pollers  atomic.Int32  // callers polling the CQ in wait
	lastPoll atomic.Int64  // when a caller last stopped polling (monotonic ns)
	kick     chan struct{} // a caller parked: the progress goroutine resumes
	opTime   atomic.Int64  // recent time an op took in wait (ns, moving average)
	crowded  atomic.Int64  // when a polling thread was last preempted (monotonic ns)
	cqFids   *[1]uintptr   // the CQ, as fi_trywait takes it
	blocks   atomic.Int64  // times the progress goroutine blocked on the wait fd (benchmarks)
	parks    atomic.Int64  // times a caller parked with its op in flight (benchmarks)

	// Doorbells (bell.go): the endpoint's own, where its progress polls
	// (nil elsewhere, or where it could not be made), and its peers',
	// by address, mapped until Close.
	bell         *bell
	peerBells    map[string]*bell
	sleeps       atomic.Int64 // times the polling progress goroutine slept on its doorbell (tests)
	postRings    atomic.Int64 // posts that woke their target from its doorbell (tests)
	lastRing     atomic.Int64 // when ringInFlight last rang (monotonic ns)
	hasPeerBells atomic.Bool  // peerBells holds one: operations may have targets to ring
}

// exposure is one key's memory registration on a server endpoint.
type exposure struct {
	mr     *fidMR
	rkey   uint64
	base   uint64
	rights uint8
	mem    []byte
	pin    runtime.Pinner
}

// errCQ marks failures the completion queue reported (rather than a
// timeout or a closed endpoint): some providers answer a withdrawn key by
// dropping the connection (tcp;ofi_rxm: FI_ECANCELED), so the Plane asks
// the server whether the registration still stands (see Plane.settle).
var errCQ = &marker{"completion error"}

// errTimeout marks operations that had no completion in time: a provider
// may also stay silent on a withdrawn key (shm), so the Plane asks the
// server too.
var errTimeout = &marker{"timeout"}

// marker is an error that adds nothing to a message it is wrapped in.
type marker struct{ name string }

func (*marker) Error() string { return "" }

var errClosed = fmt.Errorf("%w: fabric endpoint is closed", transport.ErrUnavailable)

// open is Open's body.
func open(prov string, opts Options) (*Endpoint, error) {
	if prov == "" || prov == TCP {
		return nil, fmt.Errorf("fabric: provider %q is the project's own TCP data plane, not a libfabric provider", prov)
	}
	l, err := load()
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = transport.DefaultTimeout
	}
	if opts.Spin == 0 {
		opts.Spin = DefaultSpin
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunk
	}
	e := &Endpoint{prov: prov}
	e.waitFD = -1
	e.l, e.opts = l, opts
	e.ops = make(map[uintptr]*op)
	e.mrs = make(map[transport.Key]*exposure)
	if err := e.getinfo(); err != nil {
		return nil, err
	}
	if err := e.setup(); err != nil {
		e.teardown()
		return nil, err
	}
	e.stop, e.gone = make(chan struct{}), make(chan struct{})
	e.kick = make(chan struct{}, 1)
	if e.pollOnly {
		b, err := createBell(e.addr)
		if err != nil {
			// Without one the progress goroutine polls with a backoff.
			e.logf("fabric: %s: no doorbell (%v): an idle endpoint polls its completion queue with a backoff", prov, err)
		}
		e.bell = b
	}
	go e.progress()
	if e.rec.silent = isShm(prov); e.rec.silent {
		e.rec.kick = make(chan struct{}, 1)
		go e.watchdog()
	}
	e.logf("fabric: %s endpoint open on domain %s, address %x, mr_mode %#x, data progress %s, max message %d, atomics %s",
		prov, e.domain, e.addr, e.mrMode, map[bool]string{true: "auto", false: "manual"}[e.auto], e.maxMsg,
		map[bool]string{true: "native", false: "through the server's protocol"}[e.native])
	return e, nil
}

func (e *Endpoint) logf(format string, args ...any) {
	if e.opts.Logf != nil {
		e.opts.Logf(format, args...)
	}
}

// getinfo finds the provider's RDM endpoint: first with the capabilities
// the data plane needs, then again with FI_ATOMIC where the provider
// offers it; it keeps the answer in e.info.
func (e *Endpoint) getinfo() error {
	base := uint64(fiRMA | fiRead | fiWrite | fiRemoteRead | fiRemoteWrite)
	info, err := e.query(base)
	if err != nil {
		return err
	}
	if withAtomic, aerr := e.query(base | fiAtomic); aerr == nil {
		callInt(e.l.freeinfo, uintptr(up(info)))
		info = withAtomic
		e.hasAtomic = true
		base |= fiAtomic
	}
	if info.domainAttr.dataProgress != progressAuto && info.caps&fiRMAEvent == 0 {
		// With manual progress a server's endpoint must be driven for the
		// target side of RMA, which leaves nothing in its CQ; where the
		// provider counts remote operations (FI_RMA_EVENT: shm, not
		// tcp;ofi_rxm, which must not be asked for it), a counter tells a
		// polling progress loop that it is serving and should keep at it.
		if withEvents, qerr := e.query(base | fiRMAEvent); qerr == nil {
			callInt(e.l.freeinfo, uintptr(up(info)))
			info = withEvents
		}
	}
	e.rmaEvent = info.caps&fiRMAEvent != 0
	e.domain = goString(info.domainAttr.name)
	e.info = info
	return nil
}

// isShm reports whether prov is libfabric's shm provider, which names its
// endpoints after the node given (see Options.Node) and answers a refused
// key with silence (see recover.go).
func isShm(prov string) bool {
	p, _, _ := strings.Cut(prov, ";")
	return strings.EqualFold(strings.TrimSpace(p), "shm")
}

// domains lists the names of the domains the provider offers with caps
// when no device is asked for, for the error of a device it lacks.
func (e *Endpoint) domains(caps uint64) string {
	o := &Endpoint{prov: e.prov}
	o.l, o.opts = e.l, e.opts
	o.opts.Device = ""
	info, err := o.query(caps)
	if err != nil {
		return "none"
	}
	defer callInt(e.l.freeinfo, uintptr(up(info)))
	var names []string
	seen := map[string]bool{}
	for i := info; i != nil; i = i.next {
		if n := goString(i.domainAttr.name); n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// query runs fi_getinfo for the provider with caps and returns the first
// answer (the caller frees it), or an error naming the provider.
func (e *Endpoint) query(caps uint64) (*fiInfo, error) {
	hints := (*fiInfo)(callPtr(e.l.dupinfo, 0))
	if hints == nil {
		return nil, fmt.Errorf("fabric: %s: fi_allocinfo failed", e.prov)
	}
	defer func() {
		hints.fabricAttr.provName = nil // Go memory: not for fi_freeinfo
		hints.domainAttr.name = nil
		callInt(e.l.freeinfo, uintptr(up(hints)))
	}()
	hints.caps = caps
	hints.mode = fiContext | fiContext2
	hints.epAttr.typ = epRDM
	hints.domainAttr.threading = 1 // FI_THREAD_SAFE: any goroutine posts
	hints.domainAttr.mrMode = mrVirtAddr | mrAllocd | mrProvKey | mrEndpoint | mrLocal
	hints.txAttr.opFlags = fiDeliveryComp
	name := cstr(e.prov)
	hints.fabricAttr.provName = unsafe.Pointer(&name[0])
	var device []byte
	if e.opts.Device != "" {
		// OpenFAM's if_device: libfabric keeps the answers whose domain
		// has this name.
		device = cstr(e.opts.Device)
		hints.domainAttr.name = unsafe.Pointer(&device[0])
	}
	var node, service []byte
	var nodep, servp uintptr
	var flags uint64
	if (e.opts.Node != "" || e.opts.Service != "") && !isShm(e.prov) {
		flags = fiSource
		if e.opts.Node != "" {
			node = cstr(e.opts.Node)
			nodep = uintptr(unsafe.Pointer(&node[0]))
		}
		if e.opts.Service != "" {
			service = cstr(e.opts.Service)
			servp = uintptr(unsafe.Pointer(&service[0]))
		}
	}
	var info *fiInfo
	rc := callInt(e.l.getinfo, apiVersion, nodep, servp, uintptr(flags), uintptr(up(hints)), uintptr(up(&info)))
	if rc == -fiENODATA && hints.txAttr.opFlags != 0 {
		// A provider without FI_DELIVERY_COMPLETE: its default completion
		// is then what a write's completion means.
		hints.txAttr.opFlags = 0
		rc = callInt(e.l.getinfo, apiVersion, nodep, servp, uintptr(flags), uintptr(up(hints)), uintptr(up(&info)))
	}
	runtime.KeepAlive(name)
	runtime.KeepAlive(device)
	runtime.KeepAlive(node)
	runtime.KeepAlive(service)
	if rc != 0 {
		if rc == -fiENODATA && e.opts.Device != "" {
			return nil, fmt.Errorf("fabric: provider %q has no domain %q with an RDM endpoint and RMA here (the if_device; its domains here: %s; fi_getinfo: %s)",
				e.prov, e.opts.Device, e.domains(caps), e.l.errstr(rc))
		}
		if rc == -fiENODATA {
			return nil, fmt.Errorf("fabric: provider %q offers no RDM endpoint with RMA here (fi_getinfo: %s)", e.prov, e.l.errstr(rc))
		}
		return nil, fmt.Errorf("fabric: provider %q: fi_getinfo: %s", e.prov, e.l.errstr(rc))
	}
	if e.opts.Device != "" {
		// Not every provider filters on the hint (tcp;ofi_rxm and sockets
		// of libfabric 1.17 answer with every interface): the first
		// answer on the device is taken here.
		return e.onDevice(info)
	}
	return info, nil
}

// onDevice returns a copy of the first of the answers in list whose domain
// is Options.Device, and frees list; an error names the device and the
// domains the answers have.
func (e *Endpoint) onDevice(list *fiInfo) (*fiInfo, error) {
	defer callInt(e.l.freeinfo, uintptr(up(list)))
	var names []string
	seen := map[string]bool{}
	for i := list; i != nil; i = i.next {
		n := goString(i.domainAttr.name)
		if n == e.opts.Device {
			dup := (*fiInfo)(callPtr(e.l.dupinfo, uintptr(up(i))))
			if dup == nil {
				return nil, fmt.Errorf("fabric: %s: fi_dupinfo failed", e.prov)
			}
			return dup, nil
		}
		if n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return nil, fmt.Errorf("fabric: provider %q has no domain %q with an RDM endpoint and RMA here (the if_device; its domains here: %s)",
		e.prov, e.opts.Device, strings.Join(names, ", "))
}

// setup opens the fabric, domain, completion queue, address vector and
// endpoint described by e.info, binds and enables the endpoint and reads
// its address.
func (e *Endpoint) setup() error {
	info := e.info
	e.caps = info.caps
	// Every operation completes on delivery (FI_DELIVERY_COMPLETE as the
	// default op flag) where the provider offers it: a completed put is
	// then visible to every reader, as fam_quiet promises, and a read is
	// checked by the target (shm's same-host fast path, taken otherwise,
	// reads the target's memory without checking the key, so a withdrawn
	// registration would still be readable).
	e.delivery = info.txAttr.opFlags&fiDeliveryComp != 0
	e.mrMode = info.domainAttr.mrMode
	if e.mrMode&mrBasic != 0 {
		e.mrMode |= mrVirtAddr | mrAllocd | mrProvKey
	}
	e.local = e.mrMode&mrLocal != 0
	e.keySize = info.domainAttr.mrKeySize
	e.maxMsg = uint64(info.epAttr.maxMsgSize)
	e.chunk = uint64(e.opts.ChunkSize)
	if e.maxMsg > 0 && e.chunk > e.maxMsg {
		e.chunk = e.maxMsg
	}
	e.auto = info.domainAttr.dataProgress == progressAuto
	if rc := callInt(e.l.fabric, uintptr(up(info.fabricAttr)), uintptr(up(&e.fab)), 0); rc != 0 {
		return e.errorf("fi_fabric", rc)
	}
	if rc := callInt(e.fab.ops.domain, uintptr(up(e.fab)), uintptr(up(info)), uintptr(up(&e.dom)), 0); rc != 0 {
		return e.errorf("fi_domain", rc)
	}
	cqa := fiCQAttr{format: cqFormatContext, waitObj: waitFD}
	if rc := callInt(e.dom.ops.cqOpen, uintptr(up(e.dom)), uintptr(up(&cqa)), uintptr(up(&e.cq)), 0); rc != 0 {
		// No fd to wait on (shm): the provider's other wait objects
		// either spin or ignore fi_cq_sread's timeout (shm 1.17 never
		// returns), so the progress goroutine polls with a backoff.
		cqa.waitObj = waitNone
		if rc := callInt(e.dom.ops.cqOpen, uintptr(up(e.dom)), uintptr(up(&cqa)), uintptr(up(&e.cq)), 0); rc != 0 {
			return e.errorf("fi_cq_open", rc)
		}
		e.pollOnly = true
	}
	e.waitFD = e.cqWaitFD()
	ava := fiAVAttr{typ: avTable}
	if rc := callInt(e.dom.ops.avOpen, uintptr(up(e.dom)), uintptr(up(&ava)), uintptr(up(&e.av)), 0); rc != 0 {
		return e.errorf("fi_av_open", rc)
	}
	if rc := callInt(e.dom.ops.endpoint, uintptr(up(e.dom)), uintptr(up(info)), uintptr(up(&e.ep)), 0); rc != 0 {
		return e.errorf("fi_endpoint", rc)
	}
	if rc := callInt(e.ep.fid.ops.bind, uintptr(up(e.ep)), uintptr(up(e.av)), 0); rc != 0 {
		return e.errorf("fi_ep_bind (AV)", rc)
	}
	if rc := callInt(e.ep.fid.ops.bind, uintptr(up(e.ep)), uintptr(up(e.cq)), fiTransmit|fiRecv); rc != 0 {
		return e.errorf("fi_ep_bind (CQ)", rc)
	}
	if e.rmaEvent && e.pollOnly {
		cta := fiCntrAttr{waitObj: waitNone}
		if rc := callInt(e.dom.ops.cntrOpen, uintptr(up(e.dom)), uintptr(up(&cta)), uintptr(up(&e.cntr)), 0); rc != 0 {
			return e.errorf("fi_cntr_open", rc)
		}
		if rc := callInt(e.ep.fid.ops.bind, uintptr(up(e.ep)), uintptr(up(e.cntr)), fiRemoteRead|fiRemoteWrite); rc != 0 {
			return e.errorf("fi_ep_bind (remote counter)", rc)
		}
	}
	if rc := callInt(e.ep.fid.ops.control, uintptr(up(e.ep)), ctlEnable, 0); rc != 0 {
		return e.errorf("fi_enable", rc)
	}
	var n uintptr
	callInt(e.ep.cm.getname, uintptr(up(e.ep)), 0, uintptr(up(&n)))
	if n == 0 || n > 4096 {
		return fmt.Errorf("fabric: %s: fi_getname gave an address of %d bytes", e.prov, n)
	}
	e.addr = make([]byte, n)
	if rc := callInt(e.ep.cm.getname, uintptr(up(e.ep)), uintptr(up(&e.addr[0])), uintptr(up(&n))); rc != 0 {
		return e.errorf("fi_getname", rc)
	}
	e.addr = e.addr[:n]
	e.native = e.hasAtomic && !e.opts.EmulateAtomics && e.atomicsComplete()
	return nil
}

func (e *Endpoint) errorf(what string, rc int) error {
	return fmt.Errorf("fabric: provider %q: %s: %s", e.prov, what, e.l.errstr(rc))
}

// closeFid closes a descriptor (fi_close).
func closeFid(f *fid) int {
	return callInt(f.ops.close, uintptr(up(f)))
}

// teardown closes whatever setup opened, endpoint first.
func (e *Endpoint) teardown() {
	if e.ep != nil {
		closeFid(&e.ep.fid)
		e.ep = nil
	}
	e.mu.Lock()
	mrs := e.mrs
	e.mrs = map[transport.Key]*exposure{}
	e.mu.Unlock()
	for _, x := range mrs {
		closeFid(&x.mr.fid)
		x.pin.Unpin()
	}
	if e.cntr != nil {
		closeFid(&e.cntr.fid)
		e.cntr = nil
	}
	if e.av != nil {
		closeFid(&e.av.fid)
		e.av = nil
	}
	if e.cq != nil {
		closeFid(&e.cq.fid)
		e.cq = nil
	}
	if e.dom != nil {
		closeFid(&e.dom.fid)
		e.dom = nil
	}
	if e.fab != nil {
		closeFid(&e.fab.fid)
		e.fab = nil
	}
	if e.info != nil {
		callInt(e.l.freeinfo, uintptr(up(e.info)))
		e.info = nil
	}
}

// close is Close's body: the progress goroutine stops, the endpoint and
// every registration close, and operations still in flight fail.
func (e *Endpoint) close() error {
	if e.closed.Swap(true) {
		return nil
	}
	close(e.stop) // out of standAside
	if !e.pollOnly && e.cq.ops.signal != 0 {
		callInt(e.cq.ops.signal, uintptr(up(e.cq)))
	}
	if e.bell != nil {
		e.bell.ring() // off its doorbell (unmapped below, after it has gone)
	}
	<-e.gone
	e.life.Lock()
	e.teardown()
	// Rings happen under e.life held for reading: none is under way.
	e.bell.close()
	e.mu.Lock()
	for _, b := range e.peerBells {
		b.close()
	}
	e.peerBells = nil
	e.mu.Unlock()
	e.life.Unlock()
	e.mu.Lock()
	ops := e.ops
	e.ops = map[uintptr]*op{}
	e.mu.Unlock()
	// The provider has let go of every buffer with the endpoint closed.
	seen := map[*op]bool{}
	for _, o := range ops {
		if !seen[o] {
			seen[o] = true
			o.fail(errClosed)
			o.release()
			o.notify()
		}
	}
	return nil
}

// remoteOps reports whether the remote-operation counter moved since
// *seen, and updates *seen.
func (e *Endpoint) remoteOps(seen *uint64) bool {
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed.Load() {
		return false
	}
	r, _, _ := purego.SyscallN(e.cntr.ops.read, uintptr(up(e.cntr)))
	n := uint64(r)
	moved := n != *seen
	*seen = n
	return moved
}

// cqBuf receives completions (FI_CQ_FORMAT_CONTEXT entries). Its address
// goes to the provider, so it lives on the heap: pollers keep one for all
// their polls rather than allocate one per poll.
type cqBuf [16]uintptr

// poll reads what the completion queue holds now, without blocking, and
// returns whether it found anything.
func (e *Endpoint) poll() bool { return e.pollInto(new(cqBuf)) }

// pollInto is poll with the poller's buffer.
func (e *Endpoint) pollInto(buf *cqBuf) bool {
	e.life.RLock()
	if e.closed.Load() {
		e.life.RUnlock()
		return false
	}
	n := callSsize(e.cq.ops.read, uintptr(up(e.cq)), uintptr(up(&buf[0])), uintptr(len(buf)))
	e.life.RUnlock()
	return e.reap(n, buf[:])
}

// reap dispatches n completions read into buf, or reads the error entry
// when n says one is waiting; the caller holds no lock.
func (e *Endpoint) reap(n int, buf []uintptr) bool {
	switch {
	case n > 0:
		for _, c := range buf[:n] {
			e.complete(c, nil)
		}
		return true
	case n == -fiEAVAIL:
		var ee fiCQErrEntry
		e.life.RLock()
		if e.closed.Load() {
			e.life.RUnlock()
			return false
		}
		rc := callSsize(e.cq.ops.readerr, uintptr(up(e.cq)), uintptr(up(&ee)), 0)
		e.life.RUnlock()
		if rc > 0 {
			e.complete(ee.opContext, e.cqError(&ee))
		}
		return true
	}
	return false
}

// cqError maps a completion error to the transport's errors: a key the
// target refuses (withdrawn, or a right it lacks) is ErrStaleKey, so that
// the client resolves the item again; anything else means the server is
// unreachable.
func (e *Endpoint) cqError(ee *fiCQErrEntry) error {
	code := int(ee.err)
	msg := e.l.errstr(code)
	switch code {
	case fiEACCES, fiEINVAL, fiEKEYREJECTED, fiENOKEY, fiEPERM, fiEREMOTEIO, fiEOPNOTSUPP:
		return fmt.Errorf("%w: fabric %s refused the key: %s (provider error %d)", transport.ErrStaleKey, e.prov, msg, ee.provErrno)
	}
	return fmt.Errorf("%w: fabric %s: %s (provider error %d)%w", transport.ErrUnavailable, e.prov, msg, ee.provErrno, errCQ)
}

// complete ends the piece whose context is at c.
func (e *Endpoint) complete(c uintptr, err error) {
	e.mu.Lock()
	o := e.ops[c]
	delete(e.ops, c)
	e.mu.Unlock()
	if o == nil {
		return // an operation failed by Close
	}
	if err != nil {
		o.fail(err)
	}
	if o.left.Add(-1) == 0 {
		o.release()
		o.notify()
	}
}

// release lets go of the op's memory once the provider has (its last
// piece completed or failed to post, or the endpoint closed), once.
func (o *op) release() {
	if o.released.Swap(true) {
		return
	}
	for _, mr := range o.mrs {
		closeFid(&mr.fid)
	}
	o.mrs = nil
	o.pin.Unpin()
	o.keep = nil
}

// newOp makes an op of n pieces, its memory pinned, that fails after
// timeout once armed (arm: wait does before it parks, so that an op
// completed while its caller polls costs no timer).
func (e *Endpoint) newOp(n int, timeout time.Duration) *op {
	o := &op{ctx: make([]fiCtx, n), done: make(chan struct{}), deadline: time.Now().Add(timeout)}
	o.left.Store(int32(n))
	o.pin.Pin(&o.ctx[0])
	return o
}

// arm starts o's deadline timer, once. At the deadline the waiter gets an
// error; the pieces stay registered (and their memory pinned) until the
// provider completes them or the endpoint closes, since the provider may
// still touch it.
func (e *Endpoint) arm(o *op) {
	if o.timer.Load() != nil || o.notified.Load() {
		return
	}
	t := time.AfterFunc(time.Until(o.deadline), func() {
		o.fail(fmt.Errorf("%w: fabric %s: no completion within %v%w", transport.ErrUnavailable, e.prov, e.opts.Timeout, errTimeout))
		o.notify()
	})
	if !o.timer.CompareAndSwap(nil, t) || o.notified.Load() {
		// Armed already, or notified before the timer was stored (notify
		// stops only a stored one).
		t.Stop()
	}
}

// hold pins b (when not empty) until o is released.
func (o *op) hold(b []byte) {
	if len(b) > 0 {
		o.pin.Pin(&b[0])
		o.keep = append(o.keep, b)
	}
}

// desc is the local descriptor of b for an operation: nil unless the
// provider needs local registrations (FI_MR_LOCAL), then a registration
// o closes at release.
func (e *Endpoint) desc(o *op, b []byte) (uintptr, error) {
	if !e.local || len(b) == 0 {
		return 0, nil
	}
	var mr *fidMR
	e.life.RLock()
	if e.closed.Load() {
		e.life.RUnlock()
		return 0, errClosed
	}
	rc := callInt(e.dom.mr.reg, uintptr(up(e.dom)), uintptr(up(&b[0])), uintptr(len(b)), fiRead|fiWrite, 0, 0, 0, uintptr(up(&mr)), 0)
	e.life.RUnlock()
	if rc != 0 {
		return 0, e.errorf("fi_mr_reg (local buffer)", rc)
	}
	o.mrs = append(o.mrs, mr)
	return uintptr(mr.memDesc), nil
}

// post posts piece i of o with f (given the piece's context), retrying
// while the transmit queue is full (progressing the CQ meanwhile) until
// o's deadline.
func (e *Endpoint) post(o *op, i int, f func(ctx uintptr) int) error {
	c := uintptr(unsafe.Pointer(&o.ctx[i]))
	e.mu.Lock()
	e.ops[c] = o
	e.mu.Unlock()
	e.watchPosted(o)
	for {
		e.life.RLock()
		if e.closed.Load() || e.ep == nil {
			e.life.RUnlock()
			e.unpost(c)
			return errClosed
		}
		if o.fin.Load() {
			// The op has its result (its deadline passed, or an endpoint
			// reset failed it and let go of its memory): nothing more
			// of it is posted.
			e.life.RUnlock()
			e.unpost(c)
			return fmt.Errorf("%w: fabric %s: operation abandoned%w", transport.ErrUnavailable, e.prov, errReset)
		}
		rc := f(c)
		if (rc == 0 || rc == -fiEAGAIN) && o.bell != nil {
			// The target may sleep on its doorbell (bell.go); a full
			// queue is also work it has to be awake for.
			if o.bell.ring() {
				o.rang.Store(true)
				e.postRings.Add(1)
			}
		}
		e.life.RUnlock()
		if rc == 0 {
			return nil
		}
		if rc != -fiEAGAIN {
			// The provider refuses to start it: the peer is gone or the
			// endpoint broken (sockets answers a killed server's address
			// with -FI_ENOENT).
			e.unpost(c)
			return fmt.Errorf("%w: fabric %s: posting an operation: %s", transport.ErrUnavailable, e.prov, e.l.errstr(rc))
		}
		if !e.poll() {
			if time.Now().After(o.deadline) {
				e.unpost(c)
				return fmt.Errorf("%w: fabric %s: transmit queue full for %v", transport.ErrUnavailable, e.prov, e.opts.Timeout)
			}
			runtime.Gosched()
		}
	}
}

// unpost forgets a piece that was never posted.
func (e *Endpoint) unpost(c uintptr) {
	e.mu.Lock()
	delete(e.ops, c)
	e.mu.Unlock()
}

// abandon ends o after posting piece i failed with err: pieces posted
// before it complete as usual, the others count as done.
func (e *Endpoint) abandon(o *op, i int, err error) {
	o.fail(err)
	rest := int32(len(o.ctx) - i)
	if o.left.Add(-rest) == 0 {
		o.release()
		o.notify()
	}
}

// expose is Expose's body.
func (e *Endpoint) expose(key transport.Key, mem []byte, rights uint8) (rkey, base uint64, err error) {
	if len(mem) == 0 {
		return 0, 0, fmt.Errorf("fabric: %s: cannot expose an empty item", e.prov)
	}
	// e.life before e.mu, the order of Close and of an endpoint reset
	// (recover.go), which take e.mu while they hold e.life.
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed.Load() {
		return 0, 0, errClosed
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.mrs[key]; ok {
		return x.rkey, x.base, nil
	}
	access := uint64(fiRemoteRead)
	if rights&transport.RightWrite != 0 {
		access |= fiRemoteWrite
	}
	e.rec.exposed.Store(true) // a serving endpoint keeps its address (recover.go)
	x := &exposure{rights: rights, mem: mem}
	x.pin.Pin(&mem[0])
	var rc int
	for try := 0; try < 8; try++ {
		var req uint64
		if e.mrMode&mrProvKey == 0 {
			req = randomKey(e.keySize)
		}
		rc = callInt(e.dom.mr.reg, uintptr(up(e.dom)), uintptr(up(&mem[0])), uintptr(len(mem)), uintptr(access), 0, uintptr(req), 0, uintptr(up(&x.mr)), 0)
		if rc != -fiENOKEY || e.mrMode&mrProvKey != 0 {
			break // FI_ENOKEY: the random key is taken, draw again
		}
	}
	if rc != 0 {
		x.pin.Unpin()
		return 0, 0, e.errorf("fi_mr_reg", rc)
	}
	if e.mrMode&mrEndpoint != 0 {
		if rc := callInt(x.mr.fid.ops.bind, uintptr(up(x.mr)), uintptr(up(e.ep)), 0); rc != 0 {
			closeFid(&x.mr.fid)
			x.pin.Unpin()
			return 0, 0, e.errorf("fi_mr_bind", rc)
		}
		if rc := callInt(x.mr.fid.ops.control, uintptr(up(x.mr)), ctlEnable, 0); rc != 0 {
			closeFid(&x.mr.fid)
			x.pin.Unpin()
			return 0, 0, e.errorf("fi_mr_enable", rc)
		}
	}
	x.rkey = x.mr.key
	if e.mrMode&mrVirtAddr != 0 {
		x.base = uint64(uintptr(unsafe.Pointer(&mem[0])))
	}
	e.mrs[key] = x
	return x.rkey, x.base, nil
}

// withdraw is Withdraw's body.
func (e *Endpoint) withdraw(key transport.Key) {
	e.mu.Lock()
	x, ok := e.mrs[key]
	delete(e.mrs, key)
	e.mu.Unlock()
	if !ok {
		return
	}
	e.life.RLock()
	if !e.closed.Load() {
		closeFid(&x.mr.fid)
	}
	e.life.RUnlock()
	x.pin.Unpin()
}

// randomKey draws a requested key of size bytes (at most 8) from
// crypto/rand, so that keys cannot be guessed.
func randomKey(size uintptr) uint64 {
	var b [8]byte
	// Since Go 1.24 crypto/rand.Read never returns an error (it ends the
	// program itself if the kernel's generator fails), so there is
	// nothing to handle here.
	_, _ = rand.Read(b[:])
	k := binary.LittleEndian.Uint64(b[:])
	if size > 0 && size < 8 {
		k &= 1<<(8*size) - 1
	}
	return k
}

// errIsStale reports whether err says the key was refused.
func errIsStale(err error) bool { return errors.Is(err, transport.ErrStaleKey) }
