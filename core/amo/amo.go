package amo

import (
	"math"
	"sync/atomic"
	"unsafe"
)

// Do atomically applies op to the word of kind k at p and returns the word's
// previous value.
//
// p must point to at least k.Size() bytes of readable memory (writable unless
// op is Fetch on a kind other than Int128) that stays mapped for the duration
// of the call; Do keeps no reference to it. The memory is typically a
// MAP_SHARED mapping of a region file: the operation is atomic with respect to
// other goroutines, other processes mapping the same file, and C code using
// GCC __atomic builtins (lock-prefixed instructions) on the same word. On
// architectures other than amd64, Int128 operations are atomic only among
// callers of this package in the current process (see amo_other.go).
//
// Operands are raw bits in a Value (see Value). Bits of v and cmp above the
// operand width are ignored; the returned value has them zero, so for 32-bit
// kinds old.Lo holds the previous word zero-extended (convert with int32() or
// uint32() to read it back). Integer Add and Subtract wrap around on overflow.
//
// Float Min and Max follow C fmin/fmax for NaN: when exactly one of the word
// and v is NaN, the result is the other one; when both are NaN the word is
// left as it is. Signed zeros are ordered -0 < +0, so Min(+0, -0) is -0 and
// Max(-0, +0) is +0. Float Add and Subtract use Go (IEEE-754, round to
// nearest even) arithmetic.
//
// CompareSwap stores v only when the word equals cmp bit for bit; the caller
// tells whether it happened by comparing the result with cmp.
//
// Do is safe for concurrent use. It returns ErrInvalidOp when op is not
// defined for k (see Valid) and ErrMisaligned when p is not a multiple of
// k.Size(); in both cases the memory is not touched.
func Do(p unsafe.Pointer, k Kind, op Op, v, cmp Value) (old Value, err error) {
	if !Valid(k, op) {
		return Value{}, ErrInvalidOp
	}
	if uintptr(p)%uintptr(k.Size()) != 0 {
		return Value{}, ErrMisaligned
	}
	switch k {
	case Int32, Uint32, Float32:
		return Value{Lo: uint64(do32(p, k, op, uint32(v.Lo), uint32(cmp.Lo)))}, nil
	case Int64, Uint64, Float64:
		return Value{Lo: do64(p, k, op, v.Lo, cmp.Lo)}, nil
	default: // Int128: Valid already limited op to Set, Fetch, CompareSwap.
		return do128(p, op, v, cmp), nil
	}
}

func do32(p unsafe.Pointer, k Kind, op Op, v, cmp uint32) uint32 {
	w := (*uint32)(p)
	// Add, Subtract and the bitwise ops are the same on the raw bits for
	// signed and unsigned integers; floats never reach them (Valid, and the
	// float branches below come first).
	switch {
	case op == Fetch:
		return atomic.LoadUint32(w)
	case op == Set || op == Swap:
		return atomic.SwapUint32(w, v)
	case k == Float32:
		y := math.Float32frombits(v)
		return update32(w, func(old uint32) uint32 {
			x := math.Float32frombits(old)
			switch op {
			case Add:
				return math.Float32bits(x + y)
			case Subtract:
				return math.Float32bits(x - y)
			}
			// Min and Max copy the chosen operand's bits untouched so that
			// NaN payloads and zero signs survive.
			if takeOperand(op, float64(x), float64(y)) {
				return v
			}
			return old
		})
	case op == Add:
		return atomic.AddUint32(w, v) - v
	case op == Subtract:
		return atomic.AddUint32(w, -v) + v
	case op == And:
		return atomic.AndUint32(w, v)
	case op == Or:
		return atomic.OrUint32(w, v)
	case op == Xor:
		return update32(w, func(old uint32) uint32 { return old ^ v })
	case op == CompareSwap:
		for {
			old := atomic.LoadUint32(w)
			// A failed comparison on a value read atomically is a valid
			// outcome on its own: the CAS would have failed at that instant.
			if old != cmp || atomic.CompareAndSwapUint32(w, old, v) {
				return old
			}
		}
	case op == Min || op == Max:
		less := func(a, b uint32) bool { return a < b }
		if k == Int32 {
			less = func(a, b uint32) bool { return int32(a) < int32(b) }
		}
		return update32(w, func(old uint32) uint32 {
			if (op == Min) == less(v, old) && v != old {
				return v
			}
			return old
		})
	}
	panic("amo: unreachable 32-bit op")
}

func do64(p unsafe.Pointer, k Kind, op Op, v, cmp uint64) uint64 {
	w := (*uint64)(p)
	switch {
	case op == Fetch:
		return atomic.LoadUint64(w)
	case op == Set || op == Swap:
		return atomic.SwapUint64(w, v)
	case k == Float64:
		y := math.Float64frombits(v)
		return update64(w, func(old uint64) uint64 {
			x := math.Float64frombits(old)
			switch op {
			case Add:
				return math.Float64bits(x + y)
			case Subtract:
				return math.Float64bits(x - y)
			}
			if takeOperand(op, x, y) {
				return v
			}
			return old
		})
	case op == Add:
		return atomic.AddUint64(w, v) - v
	case op == Subtract:
		return atomic.AddUint64(w, -v) + v
	case op == And:
		return atomic.AndUint64(w, v)
	case op == Or:
		return atomic.OrUint64(w, v)
	case op == Xor:
		return update64(w, func(old uint64) uint64 { return old ^ v })
	case op == CompareSwap:
		for {
			old := atomic.LoadUint64(w)
			if old != cmp || atomic.CompareAndSwapUint64(w, old, v) {
				return old
			}
		}
	case op == Min || op == Max:
		less := func(a, b uint64) bool { return a < b }
		if k == Int64 {
			less = func(a, b uint64) bool { return int64(a) < int64(b) }
		}
		return update64(w, func(old uint64) uint64 {
			if (op == Min) == less(v, old) && v != old {
				return v
			}
			return old
		})
	}
	panic("amo: unreachable 64-bit op")
}

// update32 replaces the word with f(word) in a CAS loop and returns the word
// it replaced. f must be pure: it may run several times under contention.
// When f leaves the bits unchanged nothing is written, which is equivalent to
// writing them back at the instant of the load.
func update32(w *uint32, f func(uint32) uint32) uint32 {
	for {
		old := atomic.LoadUint32(w)
		nw := f(old)
		if nw == old || atomic.CompareAndSwapUint32(w, old, nw) {
			return old
		}
	}
}

// update64 is update32 for 64-bit words.
func update64(w *uint64, f func(uint64) uint64) uint64 {
	for {
		old := atomic.LoadUint64(w)
		nw := f(old)
		if nw == old || atomic.CompareAndSwapUint64(w, old, nw) {
			return old
		}
	}
}

// takeOperand reports whether Min or Max on a float word x with operand y
// stores y. NaN handling follows C fmin/fmax: a NaN operand loses to a number,
// and when both are NaN the word stays. Zeros are ordered -0 < +0.
func takeOperand(op Op, x, y float64) bool {
	switch {
	case y != y:
		return false
	case x != x:
		return true
	case x == 0 && y == 0:
		ys, xs := math.Signbit(y), math.Signbit(x)
		if op == Min {
			return ys && !xs
		}
		return xs && !ys
	case op == Min:
		return y < x
	default:
		return y > x
	}
}

// do128 performs Set, Fetch or CompareSwap on a 16-byte word: Lo at p, Hi at
// p+8, the layout of a little-endian unsigned __int128.
func do128(p unsafe.Pointer, op Op, v, cmp Value) Value {
	switch op {
	case Fetch:
		// A compare-and-swap of 0 with 0 reads the word atomically; when the
		// word is 0 it rewrites the same bits, so the memory must be
		// writable even for a read.
		lo, hi, _ := cas128(p, 0, 0, 0, 0)
		return Value{Lo: lo, Hi: hi}
	case CompareSwap:
		lo, hi, _ := cas128(p, cmp.Lo, cmp.Hi, v.Lo, v.Hi)
		return Value{Lo: lo, Hi: hi}
	default: // Set
		// A failed cas128 returns the current word, which becomes the next
		// guess, so the loop needs no separate read.
		var gl, gh uint64
		for {
			lo, hi, ok := cas128(p, gl, gh, v.Lo, v.Hi)
			if ok {
				return Value{Lo: lo, Hi: hi}
			}
			gl, gh = lo, hi
		}
	}
}
