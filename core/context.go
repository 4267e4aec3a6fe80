package core

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/transport"
)

// Context is an independent stream of data-path operations with its own
// completion tracking (fam_ctx_t): Quiet on a context waits for that
// context's operations only. The instance's default context is
// Fam.Default. Contexts are safe for concurrent use.
//
// On memory mapped in this process get, put, gather and scatter complete
// before they return, non-blocking or not; copies run in the background.
type Context struct {
	f       *Fam
	closed  atomic.Bool
	pending sync.WaitGroup
	npend   atomic.Int64

	// Non-blocking transfers in flight to a memory server, waited for by
	// Quiet, which reports the first failure among them.
	cmu   sync.Mutex
	calls []pendingCall
	// spare is the array of a list a Quiet has waited through, kept for
	// the next list so that fam_add + fam_quiet in a loop allocates no
	// list; nil while a Quiet holds it.
	spare []pendingCall
	// fenced is how many of calls a Fence has already waited for.
	fenced int
	// deferred is the first failure of a non-blocking operation that
	// ended before reaching the wire; Quiet reports it.
	deferred error
}

// nbResult is what a non-blocking call returns for err: as in OpenFAM,
// failures of the operation itself (no permission, an unreachable
// server) are reported by the fam_quiet that completes it, not by the
// call that issued it; bad arguments are still refused at once.
func (c *Context) nbResult(nb bool, err error) error {
	if !nb || err == nil {
		return err
	}
	switch CodeOf(err) {
	case CodeNoPerm, CodeRPC, CodeTimeout, CodeResource, CodeMemory:
		c.cmu.Lock()
		if c.deferred == nil {
			c.deferred = err
		}
		c.cmu.Unlock()
		return nil
	}
	return err
}

type pendingCall struct {
	call *transport.Call
	op   string
}

// Default returns the instance's default context.
func (f *Fam) Default() *Context { return f.def }

// OpenContext opens a new context.
func (f *Fam) OpenContext() (*Context, error) {
	if err := f.check("fam_context_open"); err != nil {
		return nil, err
	}
	c := &Context{f: f}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return nil, f.check("fam_context_open")
	}
	f.contexts[c] = struct{}{}
	return c, nil
}

// Close waits for the context's operations and releases it. The default
// context cannot be closed.
func (c *Context) Close() error {
	const op = "fam_context_close"
	if err := c.check(op); err != nil {
		return err
	}
	if c == c.f.def {
		return Errorf(CodeInvalid, op, "the default context cannot be closed")
	}
	err := c.Quiet()
	if !c.closed.CompareAndSwap(false, true) {
		return Errorf(CodeInvalid, op, "context already closed")
	}
	c.f.mu.Lock()
	delete(c.f.contexts, c)
	c.f.mu.Unlock()
	return err
}

func (c *Context) check(op string) error {
	if c == nil {
		return Errorf(CodeInvalid, op, "context handle is NULL")
	}
	if err := c.f.check(op); err != nil {
		return err
	}
	if c.closed.Load() {
		return Errorf(CodeInvalid, op, "context was closed")
	}
	return nil
}

// span checks that [off, off+n) lies in an item of size bytes.
func span(op string, it *Item, off, n, size uint64) error {
	if n == 0 {
		return Errorf(CodeInvalid, op, "transfer size is 0")
	}
	if off > size || n > size-off {
		return Errorf(CodeOutOfRange, op, "offset %d + %d bytes exceeds data item {%d, %d} of %d bytes", off, n, it.g.RegionID, it.g.Offset, size)
	}
	return nil
}

func (c *Context) transfer(op string, buf []byte, it *Item, off uint64, write bool) error {
	return c.transferNB(op, buf, it, off, write, false)
}

func (c *Context) transferNB(op string, buf []byte, it *Item, off uint64, write, nb bool) error {
	if err := c.check(op); err != nil {
		return err
	}
	need := RightRead
	if write {
		need = RightWrite
	}
	v, err := it.use(op, need)
	if err != nil {
		return c.nbResult(nb, err)
	}
	if buf == nil {
		return Errorf(CodeInvalid, op, "local buffer is NULL")
	}
	if err := span(op, it, off, uint64(len(buf)), v.size); err != nil {
		return err
	}
	if v.mem == nil && nb {
		// Pipelined: the request is on the wire when this returns; Quiet
		// collects the reply.
		d, err := it.plane(op, v)
		if err != nil {
			return c.nbResult(nb, err)
		}
		var call *transport.Call
		if write {
			call = d.PutAsync(v.key, off, buf)
		} else {
			call = d.GetAsync(v.key, off, buf)
		}
		c.cmu.Lock()
		c.calls = append(c.calls, pendingCall{call: call, op: op})
		c.cmu.Unlock()
		if write {
			// Listed now; Quiet waits for the put before it flushes.
			return c.f.wrote(it, v, true)
		}
		return nil
	}
	if v.mem == nil {
		if _, err := it.plane(op, v); err != nil {
			return c.nbResult(nb, err)
		}
		err := it.remoteData(op, func(v *itemView) error {
			if write {
				return v.dp.Put(v.key, off, buf)
			}
			return v.dp.Get(v.key, off, buf)
		})
		if err == nil && write {
			err = c.f.wrote(it, v, nb)
		}
		return c.nbResult(nb, err)
	}
	if write {
		copy(v.mem[off:], buf)
		return c.f.wrote(it, v, nb)
	}
	copy(buf, v.mem[off:])
	return nil
}

// Get copies len(dst) bytes from the item at off into dst. Errors:
// CodeInvalid (bad handle, empty dst), CodeOutOfRange, CodeNoPerm.
func (c *Context) Get(dst []byte, it *Item, off uint64) error {
	return c.transfer("fam_get_blocking", dst, it, off, false)
}

// Put copies src into the item at off. Errors as Get.
func (c *Context) Put(src []byte, it *Item, off uint64) error {
	return c.transfer("fam_put_blocking", src, it, off, true)
}

// GetNB starts a Get; dst must stay untouched until Quiet returns.
func (c *Context) GetNB(dst []byte, it *Item, off uint64) error {
	return c.transferNB("fam_get_nonblocking", dst, it, off, false, true)
}

// PutNB starts a Put; src must stay untouched until Quiet returns.
func (c *Context) PutNB(src []byte, it *Item, off uint64) error {
	return c.transferNB("fam_put_nonblocking", src, it, off, true, true)
}

func gsName(gather, nb bool, kind string) string {
	s := "fam_scatter_"
	if gather {
		s = "fam_gather_"
	}
	if nb {
		s += "nonblocking_"
	} else {
		s += "blocking_"
	}
	return s + kind
}

// elements checks a gather/scatter element list and returns the item
// offset of each element: esize bytes at offs[i] in the item, esize bytes
// at i*esize in the dense local buffer.
func elements(op string, it *Item, size uint64, buf []byte, n, esize uint64, at func(i uint64) (uint64, bool)) ([]uint64, error) {
	if n == 0 || esize == 0 {
		return nil, Errorf(CodeInvalid, op, "element count and element size must be > 0 (got %d, %d)", n, esize)
	}
	if buf == nil {
		return nil, Errorf(CodeInvalid, op, "local buffer is NULL")
	}
	if n > uint64(len(buf))/esize {
		return nil, Errorf(CodeInvalid, op, "local buffer of %d bytes holds fewer than %d elements of %d bytes", len(buf), n, esize)
	}
	offs := make([]uint64, n)
	for i := uint64(0); i < n; i++ {
		e, ok := at(i)
		if !ok || e > (^uint64(0))/esize {
			return nil, Errorf(CodeOutOfRange, op, "element %d's index overflows", i)
		}
		o := e * esize
		if o > size || esize > size-o {
			return nil, Errorf(CodeOutOfRange, op, "element %d at byte %d (+%d) is beyond data item {%d, %d} of %d bytes", i, o, esize, it.g.RegionID, it.g.Offset, size)
		}
		offs[i] = o
	}
	return offs, nil
}

func (c *Context) gs(op string, nb bool, buf []byte, it *Item, n, esize uint64, gather bool, at func(i uint64) (uint64, bool)) error {
	if err := c.check(op); err != nil {
		return err
	}
	need := RightWrite
	if gather {
		need = RightRead
	}
	v, err := it.use(op, need)
	if err != nil {
		return c.nbResult(nb, err)
	}
	offs, err := elements(op, it, v.size, buf, n, esize, at)
	if err != nil {
		return err
	}
	if v.mem == nil {
		// One round trip: the server applies the whole element list.
		idx := make([]uint64, len(offs))
		for i, o := range offs {
			idx[i] = o / esize
		}
		if _, err := it.plane(op, v); err != nil {
			return c.nbResult(nb, err)
		}
		err := it.remoteData(op, func(v *itemView) error {
			d := v.dp
			if gather {
				return d.GatherIndexed(v.key, buf[:n*esize], idx, esize)
			}
			return d.ScatterIndexed(v.key, buf[:n*esize], idx, esize)
		})
		if err == nil && !gather {
			err = c.f.wrote(it, v, nb)
		}
		return c.nbResult(nb, err)
	}
	// Validate everything first so that a bad element leaves the item
	// untouched rather than half scattered.
	for i, o := range offs {
		l := uint64(i) * esize
		if gather {
			copy(buf[l:l+esize], v.mem[o:o+esize])
		} else {
			copy(v.mem[o:o+esize], buf[l:l+esize])
		}
	}
	if !gather {
		return c.f.wrote(it, v, nb)
	}
	return nil
}

// GatherStrided reads n elements of esize bytes, element i from item byte
// (first + i*stride)*esize, into dst densely. nb marks the non-blocking
// form (dst must then stay untouched until Quiet). Nothing is read if any
// element is out of range (CodeOutOfRange).
func (c *Context) GatherStrided(dst []byte, it *Item, n, first, stride, esize uint64, nb bool) error {
	return c.gs(gsName(true, nb, "strided"), nb, dst, it, n, esize, true, stridedAt(first, stride))
}

// ScatterStrided writes n dense elements of src to the item, element i at
// byte (first + i*stride)*esize. Nothing is written if any element is out
// of range.
func (c *Context) ScatterStrided(src []byte, it *Item, n, first, stride, esize uint64, nb bool) error {
	return c.gs(gsName(false, nb, "strided"), nb, src, it, n, esize, false, stridedAt(first, stride))
}

// GatherIndexed reads len(index) elements, element i from item byte
// index[i]*esize, into dst densely.
func (c *Context) GatherIndexed(dst []byte, it *Item, index []uint64, esize uint64, nb bool) error {
	return c.gs(gsName(true, nb, "indexed"), nb, dst, it, uint64(len(index)), esize, true, indexedAt(index))
}

// ScatterIndexed writes len(index) dense elements of src, element i to item
// byte index[i]*esize.
func (c *Context) ScatterIndexed(src []byte, it *Item, index []uint64, esize uint64, nb bool) error {
	return c.gs(gsName(false, nb, "indexed"), nb, src, it, uint64(len(index)), esize, false, indexedAt(index))
}

func stridedAt(first, stride uint64) func(uint64) (uint64, bool) {
	return func(i uint64) (uint64, bool) {
		if i != 0 && stride > (^uint64(0)-first)/i {
			return 0, false
		}
		return first + i*stride, true
	}
}

func indexedAt(index []uint64) func(uint64) (uint64, bool) {
	return func(i uint64) (uint64, bool) { return index[i], true }
}

// Wait is an operation running in the background (fam_wait_t).
type Wait struct {
	done   chan struct{}
	err    error
	waited atomic.Bool
}

func (c *Context) start(fn func() error) *Wait {
	w := &Wait{done: make(chan struct{})}
	c.pending.Add(1)
	c.npend.Add(1)
	go func() {
		defer c.pending.Done()
		defer c.npend.Add(-1)
		// The error belongs to the Wait alone: reporting it again at the
		// next Quiet would blame an unrelated later call.
		w.err = fn()
		close(w.done)
	}()
	return w
}

// Wait blocks until the operation ends and returns its error. A Wait can be
// waited once; a second call fails with CodeInvalid.
func (w *Wait) Wait() error {
	if w == nil {
		return Errorf(CodeInvalid, "fam_wait", "wait handle is NULL")
	}
	if !w.waited.CompareAndSwap(false, true) {
		return Errorf(CodeInvalid, "fam_wait", "already waited for")
	}
	<-w.done
	return w.err
}

// Copy starts copying n bytes from src at srcOff to dst at dstOff and
// returns at once; the Wait reports the result. The ranges are checked
// before it starts (CodeOutOfRange, CodeNoPerm, CodeInvalid). Overlapping
// ranges in one item copy as memmove does.
func (c *Context) Copy(src *Item, srcOff uint64, dst *Item, dstOff, n uint64) (*Wait, error) {
	const op = "fam_copy"
	if err := c.check(op); err != nil {
		return nil, err
	}
	sv, err := src.use(op, RightRead)
	if err != nil {
		return nil, err
	}
	dv, err := dst.use(op, RightWrite)
	if err != nil {
		return nil, err
	}
	if err := span(op, src, srcOff, n, sv.size); err != nil {
		return nil, err
	}
	if err := span(op, dst, dstOff, n, dv.size); err != nil {
		return nil, err
	}
	// A copy is listed for durability when it ends (non-blocking: the
	// Quiet after it, which waits for it, flushes it).
	copied := func(err error) error {
		if err == nil {
			err = c.f.wrote(dst, dv, true)
		}
		return err
	}
	if sv.striped || dv.striped {
		// famd copies only within its own storage; bytes on memory
		// servers travel through this client.
		return c.start(func() error { return copied(c.relayCopy(op, src, srcOff, dst, dstOff, n)) }), nil
	}
	work, err := c.f.b.copier(op, src, sv, srcOff, dst, dv, dstOff, n)
	if err != nil {
		return nil, err
	}
	// A copy is listed for durability when it ends (non-blocking: the
	// Quiet after it, which waits for it, flushes it).
	return c.start(func() error {
		err := work()
		if err == nil {
			err = c.f.wrote(dst, dv, true)
		}
		return err
	}), nil
}

// Fence orders the context's earlier operations before its later ones.
// Local operations complete in order already; the fence also orders this
// thread's memory accesses. Non-blocking transfers to famd or memory
// servers travel on several connections, to several servers, none of
// which orders them against the others: the fence waits until those issued
// so far are applied. Their failures stay for Quiet to report.
func (c *Context) Fence() error {
	if err := c.check("fam_fence"); err != nil {
		return err
	}
	c.cmu.Lock()
	earlier := append([]pendingCall(nil), c.calls[min(c.fenced, len(c.calls)):]...)
	c.fenced = len(c.calls)
	c.cmu.Unlock()
	for _, pc := range earlier {
		_ = pc.call.Wait()
	}
	var x atomic.Int64
	x.Add(1) // a locked instruction: a full barrier on every architecture Go supports
	return nil
}

// Quiet waits until every operation started on this context is complete
// and returns the first failure among its non-blocking transfers to a
// memory server (local ones complete, and report, before returning;
// background copies report through their Wait).
func (c *Context) Quiet() error {
	if err := c.check("fam_quiet"); err != nil {
		return err
	}
	c.pending.Wait()
	c.cmu.Lock()
	calls := c.calls
	c.calls, c.spare, c.fenced = c.spare, nil, 0
	first := c.deferred
	c.deferred = nil
	c.cmu.Unlock()
	for _, pc := range calls {
		if err := pc.call.Wait(); err != nil && first == nil {
			first = dataErr(pc.op, err)
		}
	}
	if cap(calls) <= 1024 {
		// Nobody else holds this list now: it is the next one's array.
		clear(calls)
		c.cmu.Lock()
		if cap(c.calls) == 0 {
			c.calls = calls[:0]
		} else if c.spare == nil {
			c.spare = calls[:0]
		}
		c.cmu.Unlock()
	}
	// Everything issued is applied: now make it durable (persist.go).
	if err := c.f.quietFlush("fam_quiet"); err != nil && first == nil {
		first = err
	}
	return first
}

// Progress returns the number of the context's operations not yet complete.
func (c *Context) Progress() uint64 {
	if c == nil {
		return 0
	}
	n := c.npend.Load()
	c.cmu.Lock()
	n += int64(len(c.calls))
	c.cmu.Unlock()
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// Kind, Op and Value describe atomic operations; see package amo.
type (
	Kind  = amo.Kind
	Op    = amo.Op
	Value = amo.Value
)

// atomicName names the openfam.h function of an atomic for messages
// (amo.FuncName, from internal/gentables/atomics.table).
func atomicName(k Kind, op Op, fetch bool) string {
	if name := amo.FuncName(k, op, fetch); name != "" {
		return name
	}
	return "fam_atomic"
}

// asyncAtomics is a data plane that can issue a non-fetching atomic
// without waiting for it (transport.Client.AtomicAsync).
type asyncAtomics interface {
	AtomicAsync(key transport.Key, off uint64, kind amo.Kind, op amo.Op, v amo.Value) *transport.Call
}

// Atomic performs op on the k-sized word at off in the item and returns the
// word's previous value. fetch says the caller reads that value (fam_fetch_*,
// swap, compare_swap): it then needs read permission as well as write for
// modifying ops. The word must be aligned to its size. Errors: CodeInvalid
// (op undefined for k, misaligned), CodeOutOfRange, CodeNoPerm.
func (c *Context) Atomic(it *Item, off uint64, k Kind, op Op, v, cmp Value, fetch bool) (Value, error) {
	name := atomicName(k, op, fetch)
	if err := c.check(name); err != nil {
		return Value{}, err
	}
	if !amo.Valid(k, op) {
		return Value{}, Errorf(CodeInvalid, name, "operation not defined for this operand type")
	}
	var need Rights
	if op.Modifies() {
		need |= RightWrite
	}
	if fetch || op == amo.Fetch {
		need |= RightRead
	}
	iv, err := it.use(name, need)
	if err != nil {
		return Value{}, err
	}
	size := k.Size()
	if err := span(name, it, off, size, iv.size); err != nil {
		return Value{}, err
	}
	if off%size != 0 {
		return Value{}, Errorf(CodeInvalid, name, "offset %d is not a multiple of the operand size %d", off, size)
	}
	if iv.mem == nil || (k == amo.Int128 && iv.mapping != nil && iv.rights&RightWrite == 0) {
		// cmpxchg16b writes even to read, so a read-only mapping (one
		// famd passed: an embedded instance maps every region read-write)
		// cannot serve a 128-bit fetch: the server does it.
		d, err := it.plane(name, iv)
		if err != nil {
			return Value{}, err
		}
		if a, ok := d.(asyncAtomics); ok && !fetch && op != amo.Fetch {
			// Non-fetching atomics complete at Quiet, as OpenFAM's do:
			// issued without waiting, batched on the wire, their
			// replies (and errors) collected by Quiet or Fence.
			// Listed for durability now (due at the next quiet, which
			// waits for the atomic before it commits).
			if err := c.f.wrote(it, iv, true); err != nil {
				return Value{}, err
			}
			call := a.AtomicAsync(iv.key, off, k, op, v)
			c.cmu.Lock()
			c.calls = append(c.calls, pendingCall{call: call, op: name})
			c.cmu.Unlock()
			return Value{}, nil
		}
		var old Value
		err = it.remoteData(name, func(rv *itemView) (err error) {
			old, err = rv.dp.Atomic(rv.key, off, k, op, v, cmp, fetch)
			return err
		})
		if err == nil && op.Modifies() {
			err = c.f.wrote(it, iv, false)
		}
		return old, err
	}
	old, err := amo.Do(unsafe.Pointer(&iv.mem[off]), k, op, v, cmp)
	if err != nil {
		return Value{}, Errorf(CodeInvalid, name, "%v", err)
	}
	if op.Modifies() {
		if err := c.f.wrote(it, iv, false); err != nil {
			return old, err
		}
	}
	return old, nil
}
