package fabric

import (
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// How completions are found and manual progress is driven.
//
// Two parties read an endpoint's completion queue: a caller waiting in
// wait for its own operation, and the endpoint's progress goroutine, which
// completes everything else (asynchronous operations, callers that gave up
// polling) and, on providers with manual progress (tcp;ofi_rxm, shm),
// drives the target side of RMA: a memory server's endpoint serves a read
// only while something calls into its CQ.
//
// A thread blocked in the kernel costs a wake-up (tens of microseconds on
// a busy host) for every operation it serves, which is what made a
// 256-byte get over tcp;ofi_rxm take 3.5 times fi_pingpong's round trip
// (fi_pingpong polls both ends). So both parties poll for a bounded window
// after work and block only when it has stopped:
//
//   - a caller polls its own operation for Options.Spin, or where its
//     polling drives the transfer (manual progress with a wait fd) for
//     about twice what recent operations took in wait (at most
//     maxSpinFactor times Options.Spin), then parks;
//   - the progress goroutine stands aside while callers poll, and for
//     asideGrace after the last one stopped, so that a stream of
//     synchronous operations keeps one thread on the CQ (two threads in
//     one provider contend for its locks, which cost tcp;ofi_rxm reads 2
//     to 5 times their latency here); a caller that parks with its
//     operation still in flight kicks it back at once;
//   - the progress goroutine then polls (fi_cq_read) for a window after
//     the last sign of work, and only then blocks: fi_trywait and poll(2)
//     on the CQ's wait fd (FI_GETWAIT), the wait fi_cq_sread does inside,
//     done here so that the goroutine sees every wake-up. A wake-up is
//     work (a completion, or a request for the target side, which leaves
//     nothing in the CQ), and so is the fd turning readable while it
//     polls. The window is adaptive, between minProgressSpin and
//     Options.ProgressSpin: it grows to twice the gap of a request that
//     arrived just after a window ended, and halves after a longer quiet
//     spell, so a busy stream is served at polling latency and an idle
//     endpoint blocks (no CPU);
//   - polling pays only while the poller keeps its CPU: on a host with
//     more runnable threads than cores a poller is preempted (a gap of
//     preemptGap between two of its polls tells), the peer it waits for
//     may be the one it keeps off the CPU, and a blocked thread is woken
//     ahead of the others. A gap can also be Go's own doing (a garbage
//     collection takes the poller's P for a while, and polling allocates:
//     purego's call arguments escape), which says nothing about the
//     host, so a gap counts only where the kernel's CPU pressure
//     (/proc/pressure/cpu, "some" over 10 s) is at least crowdedPressure
//     percent, or cannot be read. So after such a preemption, for
//     crowdedHold, a
//     caller polls only for Options.Spin and the progress goroutine not
//     at all: at load 12 on 2 cores a 256-byte get over tcp;ofi_rxm took
//     about twice as long with the server's goroutine polling even 20 us
//     windows as with it blocking at once, while the caller's polling
//     still halved it against parking at once.
//
// Where the CQ has no wait fd the progress goroutine polls with a backoff
// and sleeps on the endpoint's doorbell once idle (progressPolled,
// bell.go), and where the provider has no fi_trywait it blocks in
// fi_cq_sread as before (progressSread), which cannot tell target-side
// work from idleness and so never polls.

// DefaultProgressSpin is the longest window the progress goroutine polls
// for after work before it blocks (see Options.ProgressSpin).
const DefaultProgressSpin = 200 * time.Microsecond

const (
	// minProgressSpin is the shortest polling window after work.
	minProgressSpin = 20 * time.Microsecond
	// asideGrace is how long the progress goroutine leaves the CQ to
	// callers after the last one stopped polling, where nothing else is
	// in flight: long enough to span the gap between synchronous
	// operations of a stream, short enough for the target side of an
	// endpoint that is also a server.
	asideGrace = 200 * time.Microsecond
	// asideCheck is how often the progress goroutine looks whether
	// callers still poll.
	asideCheck = time.Millisecond
	// crowdedHold is how long polling stays short after a preemption.
	crowdedHold = 100 * time.Millisecond
	// maxSpinFactor bounds a caller's adaptive polling, in Options.Spin.
	maxSpinFactor = 40
)

// preemptGap between two polls of one poller means it lost its CPU (a
// variable so that tests can turn the detection off).
var preemptGap = 100 * time.Microsecond

// crowdedPressure is the share of time (percent, over 10 s) in which
// some thread of the host waited for a CPU at or above which a poller's
// gap counts as a preemption: well above what two pollers and the odd
// daemon cause on an otherwise idle host.
const crowdedPressure = 40

// pressureFile is the kernel's CPU pressure (PSI), read by hostCrowded.
var pressureFile = "/proc/pressure/cpu"

// The last answer of hostCrowded and when it was read (monotonic ns): it
// is read at most every 100 ms, and only when a poller saw a gap.
var (
	pressureAt      atomic.Int64
	pressureCrowded atomic.Bool
)

// hostCrowded reports whether the host's threads wait for CPUs much of
// the time (see crowdedPressure), true where the kernel does not say.
func hostCrowded() bool {
	now := monotonic()
	if at := pressureAt.Load(); at != 0 && now-at < int64(100*time.Millisecond) {
		return pressureCrowded.Load()
	}
	pressureAt.Store(now)
	crowded := true
	if b, err := os.ReadFile(pressureFile); err == nil {
		// "some avg10=94.00 avg60=95.38 avg300=96.54 total=2662184149"
		if _, rest, ok := strings.Cut(string(b), "some avg10="); ok {
			if v, _, ok := strings.Cut(rest, " "); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					crowded = f >= crowdedPressure
				}
			}
		}
	}
	pressureCrowded.Store(crowded)
	return crowded
}

// Polling progress (CQs without a wait object): see progressPolled.
const (
	pollBusy    = 2 * time.Millisecond
	pollNapMin  = 20 * time.Microsecond
	pollNapMax  = 2 * time.Millisecond  // in the first second of idleness
	pollIdleMax = 20 * time.Millisecond // after it (without a doorbell)
	// parkAfter is how long an endpoint with a doorbell must have been
	// idle, with nothing in flight, before it sleeps until rung.
	parkAfter = 10 * time.Millisecond
	// ringEvery is how often a poller rings the targets of operations in
	// flight (ringInFlight).
	ringEvery = 100 * time.Microsecond
)

// cqWaitFD returns the CQ's wait fd (FI_GETWAIT), or -1 where it has none
// or the provider cannot try a wait (fi_trywait), which blocking on the
// fd directly needs.
func (e *Endpoint) cqWaitFD() int {
	if e.pollOnly || e.fab.ops.trywait == 0 || e.cq.fid.ops.control == 0 {
		return -1
	}
	fd := int32(-1)
	if rc := callInt(e.cq.fid.ops.control, uintptr(up(e.cq)), ctlGetWait, uintptr(up(&fd))); rc != 0 || fd < 0 {
		return -1
	}
	e.cqFids = &[1]uintptr{uintptr(up(e.cq))}
	return int(fd)
}

// progress reads the completion queue and drives manual progress until
// Close (see the top of this file).
func (e *Endpoint) progress() {
	defer close(e.gone)
	switch {
	case e.pollOnly:
		e.progressPolled()
	case e.waitFD >= 0:
		e.progressFD()
	default:
		e.progressSread()
	}
}

// progressSpin is the longest polling window after work, 0 for none.
func (e *Endpoint) progressSpin() time.Duration {
	switch {
	case e.opts.ProgressSpin < 0:
		return 0
	case e.opts.ProgressSpin == 0:
		return DefaultProgressSpin
	}
	return e.opts.ProgressSpin
}

// progressFD polls after work for an adaptive window and blocks on the
// CQ's wait fd otherwise.
func (e *Endpoint) progressFD() {
	maxW := e.progressSpin()
	w := min(minProgressSpin, maxW)
	buf := new(cqBuf)
	active := false    // work was seen since the goroutine last blocked
	last := time.Now() // the last sign of work
	for !e.closed.Load() {
		if e.standAside() {
			active, last = true, time.Now()
		}
		if active && maxW > 0 && !e.isCrowded() {
			last = e.spin(buf, last, w)
			if e.pollers.Load() > 0 {
				continue // a caller polls: stand aside
			}
		}
		active = false
		woke, ok := e.block()
		if !ok {
			// No fi_trywait after all: block in fi_cq_sread.
			e.progressSread()
			return
		}
		if !woke {
			continue // the sweep's timeout: look at Close, block again
		}
		e.pollInto(buf)
		// Work came gap after the last before the goroutine blocked: a
		// window of twice that would have caught it polling.
		if gap := time.Since(last); gap < maxW {
			w = min(maxW, max(w, 2*gap))
		} else {
			w = max(min(minProgressSpin, maxW), w/2)
		}
		active, last = true, time.Now()
	}
}

// spin polls the CQ while work goes on: until it has been quiet for w
// since last (the last sign of work, which it returns updated), a caller
// starts polling, or Close. A sign of work is a completion or the wait fd
// turning readable (a request the next fi_cq_read serves); fi_trywait
// clears the CQ's own signal, which would otherwise keep the fd readable.
//
// A preemption while polling ends it (see the top of this file).
func (e *Endpoint) spin(buf *cqBuf, last time.Time, w time.Duration) time.Time {
	prev := time.Now()
	for i := 1; !e.closed.Load() && e.pollers.Load() == 0; i++ {
		ready := e.fdReady()
		if ready {
			e.trywait()
		}
		work := e.pollInto(buf) || ready
		now := time.Now()
		if now.Sub(prev) > preemptGap && hostCrowded() {
			e.crowded.Store(monotonic())
			if work {
				last = now
			}
			break
		}
		prev = now
		if work {
			last = now
		} else if now.Sub(last) > w {
			break
		}
		if i&15 == 0 {
			runtime.Gosched()
		}
	}
	return last
}

// isCrowded reports whether a poller of the endpoint was preempted less
// than crowdedHold ago.
func (e *Endpoint) isCrowded() bool {
	c := e.crowded.Load()
	return c != 0 && monotonic()-c < int64(crowdedHold)
}

// fdReady reports whether the CQ's wait fd is readable now.
func (e *Endpoint) fdReady() bool {
	fds := [1]unix.PollFd{{Fd: int32(e.waitFD), Events: unix.POLLIN}}
	n, _ := unix.Poll(fds[:], 0)
	return n > 0
}

// trywait is fi_trywait on the CQ: 0 when blocking on its wait fd is
// safe, -FI_EAGAIN when the CQ must be read first, another error where
// the provider cannot tell.
func (e *Endpoint) trywait() int {
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed.Load() {
		return -fiEAGAIN
	}
	return callInt(e.fab.ops.trywait, uintptr(up(e.fab)), uintptr(up(&e.cqFids[0])), 1)
}

// block waits for work on the CQ's wait fd for up to sweepMillis; woke
// says whether work came (or the CQ must be read), ok is false where the
// provider has no working fi_trywait. The fd stays open until the
// goroutine has returned (Close waits for it), and Close signals the CQ,
// which wakes it.
func (e *Endpoint) block() (woke, ok bool) {
	switch rc := e.trywait(); rc {
	case 0:
	case -fiEAGAIN:
		return true, true
	default:
		e.logf("fabric: %s: fi_trywait: %s; the progress goroutine blocks in fi_cq_sread instead", e.prov, e.l.errstr(rc))
		return false, false
	}
	e.blocks.Add(1)
	fds := [1]unix.PollFd{{Fd: int32(e.waitFD), Events: unix.POLLIN}}
	n, err := unix.Poll(fds[:], sweepMillis)
	if err != nil && !errors.Is(err, unix.EINTR) {
		// Not expected of a descriptor libfabric keeps open; blocking in
		// the provider still works.
		e.logf("fabric: %s: poll on the CQ's wait fd: %v; the progress goroutine blocks in fi_cq_sread instead", e.prov, err)
		return false, false
	}
	return n > 0, true
}

// progressSread blocks in fi_cq_sread, which also drives manual progress
// (the target side of RMA included) but returns only on completions.
func (e *Endpoint) progressSread() {
	var buf [16]uintptr
	for !e.closed.Load() {
		e.standAside()
		e.life.RLock()
		if e.closed.Load() {
			e.life.RUnlock()
			break
		}
		n := callSsize(e.cq.ops.sread, uintptr(up(e.cq)), uintptr(up(&buf[0])), uintptr(len(buf)), 0, sweepMillis)
		e.life.RUnlock()
		e.reap(n, buf[:])
	}
}

// progressPolled polls a CQ without a wait object: continuously for
// pollBusy after the last completion (or remote operation, where a
// counter tells), then with naps doubling up to pollNapMax. Where the
// endpoint has a doorbell (bell.go), once it has been idle for parkAfter
// with nothing of its own in flight it sleeps until rung (at most
// bellSweep): an idle endpoint costs (near) nothing, and the first
// operation after idleness rings. Without one the naps grow to
// pollIdleMax after a second of idleness (50 wake-ups a second, and up
// to pollIdleMax of latency for the first operation after a long idle
// spell).
func (e *Endpoint) progressPolled() {
	last := time.Now()
	nap := pollNapMin
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var served uint64
	buf := new(cqBuf)
	work := func() bool { return e.pollInto(buf) || e.cntr != nil && e.remoteOps(&served) }
	for !e.closed.Load() {
		e.standAside()
		if work() {
			last, nap = time.Now(), pollNapMin
			continue
		}
		idle := time.Since(last)
		if idle < pollBusy {
			e.ringInFlight()
			runtime.Gosched()
			continue
		}
		if b := e.bell; b != nil && idle >= parkAfter && !e.inFlight() {
			// Parked, then one more look (see bell.go): work that
			// came before the mark is found here, work after it rings.
			b.park()
			if work() || e.closed.Load() || e.inFlight() {
				b.unpark()
				last, nap = time.Now(), pollNapMin
				continue
			}
			e.sleeps.Add(1)
			if b.sleep(bellSweep) {
				// Rung: the first request after idleness is served at
				// once, and those after it by polling.
				last, nap = time.Now(), pollNapMin
			}
			continue
		}
		e.ringInFlight()
		timer.Reset(nap)
		select {
		case <-e.stop:
		case <-e.kick: // a caller parked, or an asynchronous op (wake)
			nap = pollNapMin
			continue
		case <-timer.C:
		}
		limit := pollNapMax
		if idle > time.Second {
			limit = pollIdleMax
		}
		nap = min(2*nap, limit)
	}
}

// ringInFlight rings, at most every ringEvery, the doorbells of the
// targets of operations in flight: a target sleeps once it has seen no
// work for a while, and a transfer in several steps (shm's SAR protocol,
// taken where the kernel refuses cross-memory attach, or with
// FI_SHM_DISABLE_CMA) leaves it nothing it can see as work between them,
// while each step waits for it. A ring on an awake target is a load.
func (e *Endpoint) ringInFlight() {
	if !e.hasPeerBells.Load() {
		return
	}
	now := monotonic()
	if now-e.lastRing.Load() < int64(ringEvery) {
		return
	}
	e.lastRing.Store(now)
	var bells []*bell
	e.mu.Lock()
	for _, o := range e.ops {
		if o.bell != nil && !slices.Contains(bells, o.bell) {
			bells = append(bells, o.bell)
		}
	}
	e.mu.Unlock()
	if len(bells) == 0 {
		return
	}
	e.life.RLock()
	if !e.closed.Load() {
		for _, b := range bells {
			b.ring()
		}
	}
	e.life.RUnlock()
}

// wake rings the endpoint's own doorbell, where it has one, and kicks its
// progress goroutine: if it sleeps or naps, it takes over operations
// nobody polls for at once.
func (e *Endpoint) wake() {
	if e.bell == nil {
		return
	}
	select { // where it naps on a timer
	case e.kick <- struct{}{}:
	default:
	}
	// Close unmaps the bell under e.life held for writing.
	e.life.RLock()
	if !e.closed.Load() {
		e.bell.ring()
	}
	e.life.RUnlock()
}

// monotonic is a monotonic clock reading in nanoseconds.
func monotonic() int64 { return int64(time.Since(epoch)) }

var epoch = time.Now()

// wait waits for o: it polls the CQ itself (reaping every completion, not
// only its own, and driving manual progress) for an adaptive spell, then
// parks until the progress goroutine completes o or its deadline passes.
func (e *Endpoint) wait(o *op) error {
	if o.fin.Load() || e.opts.Spin <= 0 {
		e.arm(o)
		if !o.fin.Load() {
			e.wake() // where its progress goroutine sleeps on its doorbell (shm)
		}
		<-o.done
		return o.result()
	}
	start := time.Now()
	limit := e.opts.Spin
	if t := time.Duration(e.opTime.Load()); 2*t > limit && e.pollDrives() && !e.isCrowded() {
		limit = min(2*t, maxSpinFactor*e.opts.Spin)
	}
	if o.rang.Load() && !e.isCrowded() {
		// The post woke the target from its doorbell (bell.go): it is
		// served after a thread wake-up, and parking here would add a
		// second one (this endpoint's progress goroutine sleeps too),
		// milliseconds each on a busy host.
		limit = max(limit, maxSpinFactor*e.opts.Spin)
	}
	e.pollers.Add(1)
	prev := start
	buf := new(cqBuf)
	for i := 1; !o.fin.Load(); i++ {
		if e.pollInto(buf) || i&7 != 0 {
			continue
		}
		now := time.Now()
		if now.Sub(prev) > preemptGap && hostCrowded() {
			e.crowded.Store(monotonic())
			limit = min(limit, e.opts.Spin)
		}
		prev = now
		if o.bell != nil && now.Sub(start) > ringEvery {
			e.ringInFlight() // a target between the steps of a transfer
		}
		if now.Sub(start) > limit {
			break
		}
	}
	e.lastPoll.Store(monotonic())
	if !o.fin.Load() {
		e.parks.Add(1)
		e.arm(o)
	}
	if e.pollers.Add(-1) == 0 && (!o.fin.Load() || e.inFlight()) {
		// Nobody polls now and o (or another caller's op, or an
		// asynchronous one) is still in flight: the progress goroutine
		// takes over at once rather than after asideCheck.
		select {
		case e.kick <- struct{}{}:
		default:
		}
		e.wake() // where it sleeps on its doorbell (shm)
	}
	<-o.done
	// A moving average of what operations take, which sizes the next
	// caller's polling: a stream of 4 MiB transfers polls through each.
	t := e.opTime.Load()
	e.opTime.Store(t + (int64(time.Since(start))-t)/8)
	return o.result()
}

// pollDrives reports whether a caller's polling moves its transfer on
// where the progress goroutine would block: manual progress with a wait
// fd (tcp;ofi_rxm). Elsewhere the provider's own thread (sockets) or the
// polling progress goroutine (shm) moves it, and a caller polling longer
// than Options.Spin would only compete with them for the CPU (except
// after waking a target from its doorbell: see wait).
func (e *Endpoint) pollDrives() bool { return !e.auto && !e.pollOnly }

// standAside keeps the progress goroutine off the CQ while callers poll
// it, and for asideGrace after the last one stopped unless operations it
// must complete are in flight; it returns whether it stood aside (callers
// had work) once the goroutine should go on, a caller kicked it, or the
// endpoint closes.
func (e *Endpoint) standAside() bool {
	if !e.shouldStandAside() {
		return false
	}
	timer := time.NewTimer(e.asideFor())
	defer timer.Stop()
	for !e.closed.Load() {
		select {
		case <-e.kick:
			return true
		case <-e.stop:
			return true
		case <-timer.C:
		}
		if !e.shouldStandAside() {
			return true
		}
		timer.Reset(e.asideFor())
	}
	return true
}

// asideFor is how long the progress goroutine sleeps standing aside
// before it looks again: the rest of asideGrace, or asideCheck while
// callers poll (they reap every completion, and one that parks with its
// operation in flight kicks the goroutine, so nothing waits for this;
// waking more often would cost a wake-up every few operations).
func (e *Endpoint) asideFor() time.Duration {
	if e.pollers.Load() > 0 {
		return asideCheck
	}
	return max(asideGrace-time.Duration(monotonic()-e.lastPoll.Load()), time.Microsecond)
}

// shouldStandAside reports whether a caller polls the CQ, or stopped
// polling less than asideGrace ago and no operation is in flight (one
// would be a caller's that parked, or an asynchronous one, both the
// progress goroutine's to complete).
func (e *Endpoint) shouldStandAside() bool {
	if e.pollers.Load() > 0 {
		return true
	}
	if lp := e.lastPoll.Load(); lp == 0 || monotonic()-lp >= int64(asideGrace) {
		return false // 0: no caller has polled yet
	}
	return !e.inFlight()
}

// inFlight reports whether any operation is in flight.
func (e *Endpoint) inFlight() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.ops) > 0
}
