package fabric

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gofam/openfam/core/transport"
)

// Recovery from shm's silent refusals (libfabric 1.17).
//
// Where sockets answers a withdrawn key with FI_EACCES and tcp;ofi_rxm
// drops the connection, shm's target discards the command without a word
// (smr_progress_cmd_rma returns before it writes the response). The
// initiator's responses are read in order from one queue per endpoint, so
// the missing one holds every later operation of that endpoint, to any
// server, behind it: the endpoint is unusable for good. A server that
// dies (a killed or restarted memory famd) leaves the same hole.
//
// So on shm an endpoint watches its operations: one without a completion
// after probeAfter has its key checked with the server over the Plane's
// control path (FabricKey), then again at doubling intervals. When the
// server no longer stands by the registration (the key was revoked, or
// registered anew) or does not answer at all (it is gone), the operation
// can never complete, and the endpoint is reset: the fid_ep is closed (the
// provider lets go of every buffer), a new one is opened, bound to the
// same completion queue, address vector and counter, and enabled. The
// address vector keeps every server's entry, so Planes carry on; the
// new endpoint connects to each server again on first use. The operation
// that was refused fails with an error wrapping transport.ErrStaleKey; the
// others that were in flight fail with errReset, which Plane.sync retries
// (RMA reads and writes may be repeated) and asynchronous calls retry
// the same way. Only an endpoint that never exposed memory is reset (its
// address changes, which no client of a server may see); a server's
// endpoint keeps the old behaviour, the operation's timeout.
//
// What a reset costs elsewhere: the server keeps the old endpoint's name in
// its peer map (shm 1.17 has room for 256) and its mapping of the old
// region until it exits.

// Probing (see above).
const (
	probeAfter = 100 * time.Millisecond // no completion this long: ask the server
	probeMax   = time.Second            // the longest interval between probes of one op
	probeEvery = 50 * time.Millisecond  // how often the watchdog looks
)

// errReset marks the failure of the operations in flight on an endpoint
// that was reset; their errors wrap errCQ too, as a failure the completion
// queue reported, which the Plane checks with the server and retries.
var errReset = &marker{"reset"}

// watched is what the watchdog needs of an operation: whose key it uses,
// and when to look at it next.
type watched struct {
	p    *Plane
	k    transport.Key
	rk   remoteKey
	next time.Time     // the next probe (watchdog goroutine only)
	gap  time.Duration // the interval after it (watchdog goroutine only)
}

// recovery is the state of an endpoint that recovers from silent
// refusals (shm); the zero value is off.
type recovery struct {
	silent  bool        // the provider answers a refused key with nothing
	exposed atomic.Bool // the endpoint has served memory: never reset
	resetMu sync.Mutex  // one reset at a time
	resets  atomic.Int64
	idle    atomic.Bool   // the watchdog sleeps until an op is posted
	kick    chan struct{} // wakes it (one slot)
}

// Resets is how many times the endpoint was reset after a refused key or
// a vanished server (shm only; see recover.go), for diagnostics and tests.
func (e *Endpoint) Resets() int64 { return e.rec.resets.Load() }

// track registers o, an operation on k with registration rk, for the
// watchdog; it is called before o's first piece is posted. Nothing is
// done on providers that answer refusals.
func (p *Plane) track(o *op, k transport.Key, rk remoteKey) {
	if !p.e.rec.silent {
		return
	}
	o.watch = &watched{p: p, k: k, rk: rk, next: time.Now().Add(probeAfter), gap: 2 * probeAfter}
}

// watchdog looks at the endpoint's operations every probeEvery until the
// endpoint closes, and probes those due; while none is watched it sleeps
// until one is posted (watchPosted), so an idle endpoint costs nothing.
// It also rings the doorbells of the servers of those in flight (bell.go):
// one that went to sleep with a request it had not seen as work (a
// multi-step transfer) is woken within probeEvery.
func (e *Endpoint) watchdog() {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		var due []*op
		var bells []*bell
		watched := false
		e.mu.Lock()
		for _, o := range e.ops {
			w := o.watch
			if w == nil {
				continue
			}
			watched = true
			if o.bell != nil && (len(bells) == 0 || bells[len(bells)-1] != o.bell) {
				bells = append(bells, o.bell)
			}
			if now.Before(w.next) {
				continue // (an op of several pieces is due once)
			}
			w.next = now.Add(w.gap)
			w.gap = min(2*w.gap, probeMax)
			due = append(due, o)
		}
		e.mu.Unlock()
		if len(bells) > 0 {
			e.life.RLock()
			if !e.closed.Load() {
				for _, b := range bells {
					b.ring()
				}
			}
			e.life.RUnlock()
		}
		// An op past its deadline is probed too: its waiter has its
		// error, but the provider still holds it, and every later op of
		// the endpoint behind it.
		for _, o := range due {
			if !o.watch.p.closed.Load() {
				e.probe(o)
			}
		}
		if !watched {
			t.Stop()
			if !e.watchSleep() {
				return
			}
			t.Reset(probeEvery)
		}
	}
}

// watchSleep waits, with nothing watched in flight, until an operation
// is posted; false once the endpoint closes. idle is set before the look
// at e.ops, and a poster reads it after adding its op there (both under
// e.mu), so an op is either seen here or kicks.
func (e *Endpoint) watchSleep() bool {
	e.rec.idle.Store(true)
	e.mu.Lock()
	busy := false
	for _, o := range e.ops {
		if o.watch != nil {
			busy = true
			break
		}
	}
	e.mu.Unlock()
	if busy {
		if !e.rec.idle.CompareAndSwap(true, false) {
			<-e.rec.kick // a poster saw idle and kicked: take it
		}
		return true
	}
	select {
	case <-e.stop:
		return false
	case <-e.rec.kick:
		return true
	}
}

// watchPosted tells a sleeping watchdog that o, watched, was posted.
func (e *Endpoint) watchPosted(o *op) {
	if o.watch != nil && e.rec.idle.Load() && e.rec.idle.CompareAndSwap(true, false) {
		e.rec.kick <- struct{}{} // buffered, and only the CAS winner sends
	}
}

// probe asks the server behind o's Plane whether o's key still stands, and
// resets the endpoint when o cannot complete.
func (e *Endpoint) probe(o *op) {
	w := o.watch
	rkey, base, _, _, err := w.p.ctl.FabricKey(w.k)
	var why error
	var cause string
	switch {
	case errors.Is(err, transport.ErrStaleKey) || err == nil && (rkey != w.rk.rkey || base != w.rk.base):
		why = fmt.Errorf("%w: fabric %s: the server withdrew the registration; the provider dropped the operation without a word", transport.ErrStaleKey, e.prov)
		cause = "the server withdrew the key's registration"
	case err != nil:
		// The server's control path fails too: the server is gone and
		// will not answer; the Plane reports it (Plane.settle).
		cause = fmt.Sprintf("the server does not answer its control path either: %v", err)
	default:
		return // the key stands: the operation is only slow
	}
	e.reset(o, why, cause)
}

// reset replaces the endpoint's fid_ep (see the top of this file). culprit
// fails with why (when not nil); every other operation in flight fails with
// errReset. cause says why, for the log and the others' errors. Nothing
// happens when culprit is no longer in flight (it completed, or an earlier
// reset failed it); its deadline having passed does not count, as the
// provider still holds it.
func (e *Endpoint) reset(culprit *op, why error, cause string) {
	if e.rec.exposed.Load() {
		e.logf("fabric: %s: an operation cannot complete (%s), but this endpoint serves memory and keeps its address: the operation fails at its timeout", e.prov, cause)
		return
	}
	e.rec.resetMu.Lock()
	defer e.rec.resetMu.Unlock()
	e.life.Lock()
	if e.closed.Load() || e.ep == nil || e.rec.exposed.Load() || !e.opInFlight(culprit) {
		e.life.Unlock() // (exposed: set since the check above)
		return
	}
	closeFid(&e.ep.fid)
	e.ep = nil
	// What the provider completed (or cancelled while closing) before the
	// endpoint went completes as usual; nothing stale may stay in the CQ,
	// whose contexts are the addresses of ops released below.
	done := e.drainLocked()
	addr, err := e.openEPLocked()
	var failed []*op
	e.mu.Lock()
	type completion struct {
		o   *op
		err error
	}
	var completed []completion
	for _, d := range done {
		if o := e.ops[d.c]; o != nil {
			delete(e.ops, d.c)
			completed = append(completed, completion{o, d.err})
		}
	}
	seen := map[*op]bool{}
	for c, o := range e.ops {
		delete(e.ops, c)
		if !seen[o] {
			seen[o] = true
			if o == culprit && why != nil {
				o.fail(why)
			}
			o.fail(fmt.Errorf("%w: fabric %s: the endpoint was reset (an operation could not complete: %s)%w%w", transport.ErrUnavailable, e.prov, cause, errCQ, errReset))
			// Set under e.life: post sees it before posting another
			// piece of o on the new endpoint.
			o.fin.Store(true)
			failed = append(failed, o)
		}
	}
	e.mu.Unlock()
	// Without a new fid_ep (err) e.ep stays nil: posting then fails as on
	// a closed endpoint, and Close tears the rest down.
	e.life.Unlock()
	e.rec.resets.Add(1)
	if err != nil {
		e.logf("fabric: %s: reset failed (an operation could not complete: %s): %v; the endpoint can no longer post", e.prov, cause, err)
	} else {
		e.logf("fabric: %s: endpoint reset, an operation could not complete: %s; %d operations in flight failed for a retry; new address %x", e.prov, cause, len(failed), addr)
	}
	// Completions and failures are delivered without locks held: a
	// waiter's callback may start the next operation.
	for _, c := range completed {
		if c.err != nil {
			c.o.fail(c.err)
		}
		if c.o.left.Add(-1) == 0 {
			c.o.release()
			c.o.notify()
		}
	}
	// The provider has let go of their memory with the old endpoint.
	for _, o := range failed {
		o.release()
		o.notify()
	}
}

// opInFlight reports whether a piece of o is posted and not completed.
func (e *Endpoint) opInFlight(o *op) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range o.ctx {
		if e.ops[uintptr(unsafe.Pointer(&o.ctx[i]))] == o {
			return true
		}
	}
	return false
}

// drained is one completion read by drainLocked.
type drained struct {
	c   uintptr
	err error
}

// drainLocked reads the completion queue until it is empty and returns
// what it found; the caller holds e.life for writing.
func (e *Endpoint) drainLocked() []drained {
	var out []drained
	var buf [16]uintptr
	for i := 0; i < 1<<16; i++ {
		n := callSsize(e.cq.ops.read, uintptr(up(e.cq)), uintptr(up(&buf[0])), uintptr(len(buf)))
		switch {
		case n > 0:
			for _, c := range buf[:n] {
				out = append(out, drained{c: c})
			}
		case n == -fiEAVAIL:
			var ee fiCQErrEntry
			if callSsize(e.cq.ops.readerr, uintptr(up(e.cq)), uintptr(up(&ee)), 0) > 0 {
				out = append(out, drained{c: ee.opContext, err: e.cqError(&ee)})
			}
		default:
			return out
		}
	}
	return out
}

// openEPLocked opens, binds and enables a new fid_ep on the endpoint's
// domain, completion queue, address vector and counter, and reads its
// address; the caller holds e.life for writing.
func (e *Endpoint) openEPLocked() ([]byte, error) {
	if rc := callInt(e.dom.ops.endpoint, uintptr(up(e.dom)), uintptr(up(e.info)), uintptr(up(&e.ep)), 0); rc != 0 {
		e.ep = nil
		return nil, e.errorf("fi_endpoint", rc)
	}
	fail := func(what string, rc int) error {
		closeFid(&e.ep.fid)
		e.ep = nil
		return e.errorf(what, rc)
	}
	if rc := callInt(e.ep.fid.ops.bind, uintptr(up(e.ep)), uintptr(up(e.av)), 0); rc != 0 {
		return nil, fail("fi_ep_bind (AV)", rc)
	}
	if rc := callInt(e.ep.fid.ops.bind, uintptr(up(e.ep)), uintptr(up(e.cq)), fiTransmit|fiRecv); rc != 0 {
		return nil, fail("fi_ep_bind (CQ)", rc)
	}
	if e.cntr != nil {
		if rc := callInt(e.ep.fid.ops.bind, uintptr(up(e.ep)), uintptr(up(e.cntr)), fiRemoteRead|fiRemoteWrite); rc != 0 {
			return nil, fail("fi_ep_bind (remote counter)", rc)
		}
	}
	if rc := callInt(e.ep.fid.ops.control, uintptr(up(e.ep)), ctlEnable, 0); rc != 0 {
		return nil, fail("fi_enable", rc)
	}
	n := uintptr(4096)
	addr := make([]byte, n)
	if rc := callInt(e.ep.cm.getname, uintptr(up(e.ep)), uintptr(up(&addr[0])), uintptr(up(&n))); rc != 0 || n == 0 || n > 4096 {
		return nil, fail("fi_getname", rc)
	}
	// e.addr stays as it was: Addr is read without locks, and a client's
	// address is not announced anywhere.
	return addr[:n], nil
}
