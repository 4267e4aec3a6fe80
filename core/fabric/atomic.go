package fabric

import (
	"strings"
	"unsafe"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/transport"
)

// datatype is the fi_datatype of an amo kind.
func datatype(k amo.Kind) int {
	switch k {
	case amo.Int32:
		return dtInt32
	case amo.Uint32:
		return dtUint32
	case amo.Int64:
		return dtInt64
	case amo.Uint64:
		return dtUint64
	case amo.Float32:
		return dtFloat
	case amo.Float64:
		return dtDouble
	case amo.Int128:
		return dtInt128
	}
	return opInvalid
}

// fiOp is the fi_op of an amo op (Subtract is FI_SUM of the negated
// operand: libfabric has no difference).
func fiOp(op amo.Op) int {
	switch op {
	case amo.Set, amo.Swap:
		return opWrite
	case amo.Fetch:
		return opRead
	case amo.Add, amo.Subtract:
		return opSum
	case amo.Min:
		return opMin
	case amo.Max:
		return opMax
	case amo.And:
		return opBand
	case amo.Or:
		return opBor
	case amo.Xor:
		return opBxor
	case amo.CompareSwap:
		return opCswap
	}
	return opInvalid
}

// queryFlags lists the fi_query_atomic flags under which op is used: a
// non-fetching op may be called with or without fetching the old value.
func queryFlags(op amo.Op) []uint64 {
	switch op {
	case amo.CompareSwap:
		return []uint64{fiCompareAtomic}
	case amo.Fetch, amo.Swap:
		return []uint64{fiFetchAtomic}
	}
	return []uint64{0, fiFetchAtomic}
}

// atomicsComplete reports whether fi_query_atomic accepts every kind and
// op the API has (amo.Valid): only then do atomics go over the fabric,
// since a word reached both natively and through the server's protocol
// would not be updated atomically.
func (e *Endpoint) atomicsComplete() bool {
	if e.dom.ops.queryAtomic == 0 || e.dom.ops.size <= unsafe.Offsetof(fiOpsDomain{}.queryAtomic) {
		e.logf("fabric: %s: no fi_query_atomic; atomics go through the server's protocol", e.prov)
		return false
	}
	var missing []string
	for k := amo.Int32; k <= amo.Int128; k++ {
		for op := amo.Set; op <= amo.CompareSwap; op++ {
			if !amo.Valid(k, op) {
				continue
			}
			for _, f := range queryFlags(op) {
				var attr fiAtomicAttr
				rc := callInt(e.dom.ops.queryAtomic, uintptr(up(e.dom)), uintptr(datatype(k)), uintptr(fiOp(op)), uintptr(up(&attr)), uintptr(f))
				if rc != 0 || attr.count < 1 {
					missing = append(missing, amo.FuncName(k, op, f != 0))
				}
			}
		}
	}
	if len(missing) > 0 {
		e.missingAtomic = strings.Join(missing, " ")
		e.logf("fabric: %s lacks %d atomic operations (%s); all atomics go through the server's protocol", e.prov, len(missing), e.missingAtomic)
		return false
	}
	return true
}

// MissingAtomic lists (space-separated OpenFAM names) the atomic
// operations the provider lacks, why NativeAtomics is false; "" when it
// has them all or lacks FI_ATOMIC altogether.
func (e *Endpoint) MissingAtomic() string { return e.missingAtomic }

// Atomic performs op on the kind-sized word at off in the item and
// returns the word's previous value (see amo.Do and the transport's
// Client.Atomic, whose errors it gives). It goes over the fabric when the
// endpoint's atomics are native (NativeAtomics) and through the server's
// protocol (Control) otherwise, and also for requests the server must
// refuse (so that the refusal is the server's).
func (p *Plane) Atomic(key transport.Key, off uint64, kind amo.Kind, op amo.Op, v, cmp amo.Value, fetch bool) (amo.Value, error) {
	if p.closed.Load() {
		return amo.Value{}, errClosed
	}
	if !p.e.native || !amo.Valid(kind, op) {
		return p.ctl.Atomic(key, off, kind, op, v, cmp, fetch)
	}
	rk, err := p.key(key)
	if err != nil {
		return amo.Value{}, err
	}
	size := kind.Size()
	need := uint8(0)
	if op.Modifies() {
		need |= transport.RightWrite
	}
	if fetch || op == amo.Fetch {
		need |= transport.RightRead
	}
	// A registration without remote write is refused for every atomic by
	// some providers (sockets), atomic reads included, and reported like a
	// revoked key: a read-only holder's atomics go to the server's
	// protocol, which checks the rights itself.
	if off%size != 0 || (rk.base+off)%size != 0 || check(rk, off, size, need) != nil || rk.rights&transport.RightWrite == 0 {
		return p.ctl.Atomic(key, off, kind, op, v, cmp, fetch)
	}
	res, err := p.nativeAtomic(rk, off, kind, op, v, cmp, fetch)
	return res, p.settle(key, rk, err)
}

// nativeAtomic posts fi_atomic, fi_fetch_atomic or fi_compare_atomic.
func (p *Plane) nativeAtomic(rk remoteKey, off uint64, kind amo.Kind, op amo.Op, v, cmp amo.Value, fetch bool) (amo.Value, error) {
	e := p.e
	if op == amo.Subtract {
		v = negate(kind, v)
	}
	// operand, compare and result words, in Go memory pinned with o.
	words := make([]uint64, 6)
	words[0], words[1], words[2], words[3] = v.Lo, v.Hi, cmp.Lo, cmp.Hi
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 48)
	o := e.newOp(1, e.opts.Timeout)
	o.bell = p.bell
	o.hold(raw)
	d, err := e.desc(o, raw)
	if err != nil {
		o.fail(err)
		o.release()
		o.notify()
		return amo.Value{}, err
	}
	dt, fop := uintptr(datatype(kind)), uintptr(fiOp(op))
	addr := rk.base + off
	peer := p.peer.Load()
	err = e.post(o, 0, func(c uintptr) int {
		at := e.ep.atomic // under post's hold on e.life (see rma)
		switch {
		case op == amo.CompareSwap:
			return callSsize(at.compwrite, uintptr(up(e.ep)), uintptr(up(&words[0])), 1, d, uintptr(up(&words[2])), d,
				uintptr(up(&words[4])), d, uintptr(peer), uintptr(addr), uintptr(rk.rkey), dt, fop, c)
		case fetch || op == amo.Fetch || op == amo.Swap:
			return callSsize(at.readwrite, uintptr(up(e.ep)), uintptr(up(&words[0])), 1, d,
				uintptr(up(&words[4])), d, uintptr(peer), uintptr(addr), uintptr(rk.rkey), dt, fop, c)
		default:
			return callSsize(at.write, uintptr(up(e.ep)), uintptr(up(&words[0])), 1, d,
				uintptr(peer), uintptr(addr), uintptr(rk.rkey), dt, fop, c)
		}
	})
	if err != nil {
		e.abandon(o, 0, err)
	}
	if err := e.wait(o); err != nil {
		return amo.Value{}, err
	}
	res := amo.Value{Lo: words[4], Hi: words[5]}
	if kind.Size() == 4 {
		res.Lo &= 0xffffffff
	}
	if kind.Size() < 16 {
		res.Hi = 0
	}
	return res, nil
}

// negate turns a Subtract operand into the Add operand with the same
// effect: the two's complement for integers (wrapping as amo does), the
// sign flipped for floats (x - v == x + (-v) in IEEE-754).
func negate(k amo.Kind, v amo.Value) amo.Value {
	switch k {
	case amo.Int32, amo.Uint32:
		return amo.Value{Lo: uint64(-uint32(v.Lo))}
	case amo.Int64, amo.Uint64:
		return amo.Value{Lo: -v.Lo}
	case amo.Float32:
		return amo.Value{Lo: uint64(uint32(v.Lo) ^ 1<<31)}
	case amo.Float64:
		return amo.Value{Lo: v.Lo ^ 1<<63}
	}
	return v
}
