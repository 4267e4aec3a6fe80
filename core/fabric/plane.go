package fabric

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/transport"
)

// FAM error codes the Plane answers itself, as the server would (see the
// transport's Client.Get and Atomic).
const (
	codeNoPerm     = 2
	codeInvalid    = 4
	codeOutOfRange = 13
	codeNoFD       = 16
)

// remoteKey is a key's fabric registration as the server reported it.
type remoteKey struct {
	rkey, base, size uint64
	rights           uint8
}

var _ interface {
	Get(key transport.Key, off uint64, dst []byte) error
	Put(key transport.Key, off uint64, src []byte) error
	GetAsync(key transport.Key, off uint64, dst []byte) *transport.Call
	PutAsync(key transport.Key, off uint64, src []byte) *transport.Call
	GatherIndexed(key transport.Key, dst []byte, index []uint64, esize uint64) error
	ScatterIndexed(key transport.Key, src []byte, index []uint64, esize uint64) error
	Atomic(key transport.Key, off uint64, kind amo.Kind, op amo.Op, v, cmp amo.Value, fetch bool) (amo.Value, error)
	OpenFD(key transport.Key) (f *os.File, offset, size uint64, rights uint8, err error)
	Close() error
} = (*Plane)(nil)

// plane is Endpoint.Plane's body: the server's address goes into the AV.
func (e *Endpoint) plane(addr []byte, ctl Control) (*Plane, error) {
	if len(addr) == 0 {
		return nil, fmt.Errorf("fabric: %s: empty server address", e.prov)
	}
	if ctl == nil {
		return nil, fmt.Errorf("fabric: %s: a Plane needs the server's control path", e.prov)
	}
	p := &Plane{e: e, ctl: ctl, keys: map[transport.Key]remoteKey{}}
	a := append([]byte(nil), addr...)
	p.addr = a
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed.Load() {
		return nil, errClosed
	}
	var peer uint64
	n := callInt(e.av.ops.insert, uintptr(up(e.av)), uintptr(up(&a[0])), 1, uintptr(up(&peer)), 0, 0)
	p.peer.Store(peer)
	if n != 1 {
		return nil, fmt.Errorf("fabric: %s: fi_av_insert of server address %x failed (%d)", e.prov, addr, n)
	}
	if e.pollOnly {
		p.bell = e.peerBell(a)
	}
	return p, nil
}

// peerBell maps the doorbell of the server at addr (bell.go), once per
// address for the endpoint's life; nil where the server has none. The
// caller holds e.life for reading.
func (e *Endpoint) peerBell(addr []byte) *bell {
	e.mu.Lock()
	defer e.mu.Unlock()
	if b, ok := e.peerBells[string(addr)]; ok && b != nil {
		return b
	}
	b := openBell(addr)
	if b == nil {
		e.logf("fabric: %s: the server at %x has no doorbell: it is not rung (it may serve the first operation after an idle spell late)", e.prov, addr)
		return nil
	}
	if e.peerBells == nil {
		e.peerBells = map[string]*bell{}
	}
	e.peerBells[string(addr)] = b
	e.hasPeerBells.Store(true)
	return b
}

// NativeAtomics reports whether atomics go over the fabric (fi_atomic and
// friends: the provider offers every operation and type the API has, see
// fi_query_atomic) rather than through the server's protocol. It holds
// for every Plane of the endpoint: one word is never reached both ways.
func (e *Endpoint) NativeAtomics() bool { return e.native }

// Fence reports whether the provider orders operations with FI_FENCE
// (fam_fence); elsewhere ordering comes from waiting for completions.
func (e *Endpoint) Fence() bool { return e.caps&fiFence != 0 }

// ProgressAuto reports whether the provider progresses data transfers on
// its own (FI_PROGRESS_AUTO); otherwise the endpoint's progress goroutine
// and callers waiting for their operations do (see progress.go).
func (e *Endpoint) ProgressAuto() bool { return e.auto }

// MRMode is the memory registration mode the provider asked for (FI_MR_*
// bits of fi_domain_attr.mr_mode), for diagnostics.
func (e *Endpoint) MRMode() int { return int(e.mrMode) }

// key returns key's registration, asking the server on first use.
func (p *Plane) key(k transport.Key) (remoteKey, error) {
	p.mu.Lock()
	rk, ok := p.keys[k]
	p.mu.Unlock()
	if ok {
		return rk, nil
	}
	rkey, base, size, rights, err := p.ctl.FabricKey(k)
	if err != nil {
		return remoteKey{}, err
	}
	rk = remoteKey{rkey: rkey, base: base, size: size, rights: rights}
	p.mu.Lock()
	p.keys[k] = rk
	p.mu.Unlock()
	return rk, nil
}

// forget drops k's registration after the fabric refused it, so that the
// next use asks the server again.
func (p *Plane) forget(k transport.Key) {
	p.mu.Lock()
	delete(p.keys, k)
	p.mu.Unlock()
}

// settle forgets k when err says the fabric refused rk, and returns err.
// A failure the completion queue reported without naming the key (some
// providers drop the connection on a bad key) is checked with the
// server: when it no longer knows the key, or registered it anew, the
// error becomes one wrapping transport.ErrStaleKey, so that the caller
// resolves the item again rather than taking the server for dead.
func (p *Plane) settle(k transport.Key, rk remoteKey, err error) error {
	switch {
	case err == nil:
		return nil
	case errIsStale(err):
		p.forget(k)
	case errors.Is(err, errCQ) || errors.Is(err, errTimeout):
		if errors.Is(err, errCQ) {
			p.reconnect()
		}
		rkey, base, _, _, cerr := p.ctl.FabricKey(k)
		switch {
		case errors.Is(cerr, transport.ErrStaleKey) || cerr == nil && (rkey != rk.rkey || base != rk.base):
			p.forget(k)
			return fmt.Errorf("%w: fabric %s: the server withdrew the registration (%v)", transport.ErrStaleKey, p.e.prov, err)
		case cerr != nil:
			// The server does not answer on its control path either: it
			// is gone (and the error no longer invites a retry).
			msg := strings.TrimPrefix(err.Error(), transport.ErrUnavailable.Error()+": ")
			return fmt.Errorf("%w: %s; control path: %v", transport.ErrUnavailable, msg, cerr)
		}
	}
	return err
}

// reconnect replaces the server's AV entry after the completion queue
// reported a failure: connection-based providers (tcp;ofi_rxm) leave a
// connection they dropped unusable under the old address, and the next
// operation on a new entry connects afresh.
func (p *Plane) reconnect() {
	e := p.e
	if e.rec.silent {
		// shm has no connections; its endpoint is reset instead
		// (recover.go), and a second AV entry for one address would
		// share the first's peer.
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed.Load() || p.closed.Load() {
		return
	}
	old := p.peer.Load()
	var peer uint64
	if n := callInt(e.av.ops.insert, uintptr(up(e.av)), uintptr(up(&p.addr[0])), 1, uintptr(up(&peer)), 0, 0); n != 1 {
		return
	}
	p.peer.Store(peer)
	callInt(e.av.ops.remove, uintptr(up(e.av)), uintptr(up(&old)), 1, 0)
}

// check validates n bytes at off against rk with the server's codes.
func check(rk remoteKey, off, n uint64, need uint8) error {
	if n == 0 {
		return &transport.Error{Code: codeInvalid, Msg: "transfer size is 0"}
	}
	if off > rk.size || n > rk.size-off {
		return &transport.Error{Code: codeOutOfRange, Msg: fmt.Sprintf("offset %d + %d bytes exceeds the data item of %d bytes", off, n, rk.size)}
	}
	if rk.rights&need != need {
		what := "read"
		if need == transport.RightWrite {
			what = "write"
		}
		return &transport.Error{Code: codeNoPerm, Msg: fmt.Sprintf("the operation needs %s permission on the data item", what)}
	}
	return nil
}

// transfer starts a read into buf (or a write from it) of the item's
// bytes at off, cut into pieces of at most the endpoint's chunk size, all
// in flight at once. An error before anything was posted is returned;
// later ones come through the op (and onDone, when set).
func (p *Plane) transfer(k transport.Key, off uint64, buf []byte, write bool, timeout time.Duration, onDone func(remoteKey, error)) (*op, remoteKey, error) {
	if p.closed.Load() {
		return nil, remoteKey{}, errClosed
	}
	need := transport.RightRead
	if write {
		need = transport.RightWrite
	}
	rk, err := p.key(k)
	if err != nil {
		return nil, rk, err
	}
	n := uint64(len(buf))
	if err := check(rk, off, n, need); err != nil {
		return nil, rk, err
	}
	e := p.e
	chunk := e.chunk
	pieces := int((n + chunk - 1) / chunk)
	o := e.newOp(pieces, timeout)
	o.bell = p.bell
	p.track(o, k, rk)
	if onDone != nil {
		// Nobody waits for it: its deadline runs from now.
		o.onDone = func(err error) { onDone(rk, err) }
		e.arm(o)
	}
	o.hold(buf)
	d, err := e.desc(o, buf)
	if err != nil {
		o.fail(err)
		o.release()
		o.notify()
		return nil, rk, err
	}
	peer := p.peer.Load()
	for i := 0; i < pieces; i++ {
		lo := uint64(i) * chunk
		if err := e.rma(o, i, write, buf[lo:min(lo+chunk, n)], d, peer, rk.base+off+lo, rk.rkey); err != nil {
			e.abandon(o, i, err)
			break
		}
	}
	if onDone != nil {
		e.wake() // nobody waits for it: the progress goroutine completes it
	}
	return o, rk, nil
}

// rma posts piece i of o: a read into b or a write from it (desc d) of
// the remote bytes at addr under key.
func (e *Endpoint) rma(o *op, i int, write bool, b []byte, d uintptr, peer, addr, key uint64) error {
	return e.post(o, i, func(c uintptr) int {
		// e.ep is read here, under post's hold on e.life: Close may
		// have cleared it before.
		fn := e.ep.rma.read
		if write {
			fn = e.ep.rma.write
		}
		return callSsize(fn, uintptr(up(e.ep)), uintptr(up(&b[0])), uintptr(len(b)), d, uintptr(peer), uintptr(addr), uintptr(key), c)
	})
}

// Get reads len(dst) bytes at off in the item into dst with fi_read.
// Errors: *transport.Error with Code 4 (empty dst), 13 (beyond the item),
// 2 (no read right); an error wrapping transport.ErrStaleKey when the
// fabric refuses the key (withdrawn: resolve the item again); one
// wrapping transport.ErrUnavailable when the server does not answer
// within the timeout or the endpoint is closed.
func (p *Plane) Get(key transport.Key, off uint64, dst []byte) error {
	return p.sync(key, off, dst, false)
}

// sync runs a transfer and waits for it. A failure the completion queue
// reported while the server still stands by the key is tried again, with
// a backoff, a few times within the timeout: a connection-based provider
// (tcp;ofi_rxm) drops the connection a bad key arrived on, failing the
// other operations on it too, and connects afresh once the old one is
// gone. RMA reads and writes may be repeated.
func (p *Plane) sync(key transport.Key, off uint64, buf []byte, write bool) error {
	// Retries share the one timeout: the caller hears within it.
	deadline := time.Now().Add(p.e.opts.Timeout)
	for try := 0; ; try++ {
		o, rk, err := p.transfer(key, off, buf, write, time.Until(deadline), nil)
		if err != nil {
			return err
		}
		err = p.settle(key, rk, p.e.wait(o))
		if !errors.Is(err, errCQ) || errIsStale(err) || try == retries {
			return err
		}
		nap := min(time.Millisecond<<try, 200*time.Millisecond)
		if time.Until(deadline) < nap+10*time.Millisecond {
			return err
		}
		time.Sleep(nap)
	}
}

// retries bounds the repeats of a transfer after connection failures.
const retries = 8

// Put writes src at off in the item with fi_write; errors as Get (write
// right needed).
func (p *Plane) Put(key transport.Key, off uint64, src []byte) error {
	return p.sync(key, off, src, true)
}

// GetAsync starts Get; the Call reports its outcome (the core waits for
// it at fam_quiet). dst must be left alone until then.
func (p *Plane) GetAsync(key transport.Key, off uint64, dst []byte) *transport.Call {
	return p.async(key, off, dst, false)
}

// PutAsync starts Put; the Call reports its outcome. src must be left
// alone until then.
func (p *Plane) PutAsync(key transport.Key, off uint64, src []byte) *transport.Call {
	return p.async(key, off, src, true)
}

func (p *Plane) async(key transport.Key, off uint64, buf []byte, write bool) *transport.Call {
	call, done := transport.NewPending()
	_, _, err := p.transfer(key, off, buf, write, p.e.opts.Timeout, func(rk remoteKey, err error) {
		if errors.Is(err, errCQ) {
			// Checking with the server takes a round trip: not on the
			// goroutine that reads completions.
			go func() {
				if err = p.settle(key, rk, err); errors.Is(err, errCQ) && !errIsStale(err) {
					err = p.sync(key, off, buf, write) // as sync does
				}
				done(err)
			}()
			return
		}
		done(p.settle(key, rk, err))
	})
	if err != nil {
		return transport.DoneCall(err)
	}
	return call
}

// GatherIndexed reads len(index) elements of esize bytes, element i from
// item byte index[i]*esize, densely into dst: one fi_read per element,
// all in flight at once. Errors as Get; nothing is read when an element
// is out of range.
func (p *Plane) GatherIndexed(key transport.Key, dst []byte, index []uint64, esize uint64) error {
	return p.indexed(key, dst, index, esize, false)
}

// ScatterIndexed writes len(index) elements of esize bytes from src,
// element i to item byte index[i]*esize: one fi_write per element.
// Errors as Put; nothing is written when an element is out of range.
func (p *Plane) ScatterIndexed(key transport.Key, src []byte, index []uint64, esize uint64) error {
	return p.indexed(key, src, index, esize, true)
}

func (p *Plane) indexed(k transport.Key, buf []byte, index []uint64, esize uint64, write bool) error {
	if p.closed.Load() {
		return errClosed
	}
	if esize == 0 || len(index) == 0 {
		return &transport.Error{Code: codeInvalid, Msg: "gather or scatter of no elements or zero-sized elements"}
	}
	n := uint64(len(index))
	if uint64(len(buf))/esize < n {
		return &transport.Error{Code: codeInvalid, Msg: fmt.Sprintf("buffer of %d bytes is short of %d elements of %d bytes", len(buf), n, esize)}
	}
	need := transport.RightRead
	if write {
		need = transport.RightWrite
	}
	rk, err := p.key(k)
	if err != nil {
		return err
	}
	for _, x := range index {
		if x > rk.size/esize {
			return &transport.Error{Code: codeOutOfRange, Msg: fmt.Sprintf("element %d of %d bytes is beyond the data item of %d bytes", x, esize, rk.size)}
		}
		if err := check(rk, x*esize, esize, need); err != nil {
			return err
		}
	}
	e := p.e
	if esize > e.chunk {
		// Elements larger than a piece: one transfer each.
		for i, x := range index {
			var err error
			if write {
				err = p.Put(k, x*esize, buf[uint64(i)*esize:][:esize])
			} else {
				err = p.Get(k, x*esize, buf[uint64(i)*esize:][:esize])
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	buf = buf[:n*esize]
	o := e.newOp(len(index), e.opts.Timeout)
	o.bell = p.bell
	p.track(o, k, rk)
	o.hold(buf)
	d, err := e.desc(o, buf)
	if err != nil {
		o.fail(err)
		o.release()
		o.notify()
		return err
	}
	peer := p.peer.Load()
	for i, x := range index {
		if err := e.rma(o, i, write, buf[uint64(i)*esize:][:esize], d, peer, rk.base+x*esize, rk.rkey); err != nil {
			e.abandon(o, i, err)
			break
		}
	}
	return p.settle(k, rk, e.wait(o))
}

// OpenFD always fails (Code 16, as the TCP protocol answers a server off
// this host): memory behind a fabric is not mapped; the caller uses the
// data path.
func (p *Plane) OpenFD(key transport.Key) (f *os.File, offset, size uint64, rights uint8, err error) {
	return nil, 0, 0, 0, &transport.Error{Code: codeNoFD, Msg: "no descriptor passing over a libfabric data plane"}
}

// Close closes the Plane and its control path; operations started on it
// are not waited for (the endpoint completes or fails them).
func (p *Plane) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	return p.ctl.Close()
}
