package core

import (
	"math"

	"github.com/gofam/openfam/core/amo"
)

// Number is an operand type of the typed atomic helpers.
type Number interface {
	~int32 | ~int64 | ~uint32 | ~uint64 | ~float32 | ~float64
}

func kindOf[T Number]() amo.Kind {
	var z T
	switch any(z).(type) {
	case int32:
		return amo.Int32
	case int64:
		return amo.Int64
	case uint32:
		return amo.Uint32
	case uint64:
		return amo.Uint64
	case float32:
		return amo.Float32
	case float64:
		return amo.Float64
	}
	return 0
}

func toValue[T Number](v T) amo.Value {
	switch x := any(v).(type) {
	case int32:
		return amo.Value{Lo: uint64(uint32(x))}
	case int64:
		return amo.Value{Lo: uint64(x)}
	case uint32:
		return amo.Value{Lo: uint64(x)}
	case uint64:
		return amo.Value{Lo: x}
	case float32:
		return amo.Value{Lo: uint64(math.Float32bits(x))}
	case float64:
		return amo.Value{Lo: math.Float64bits(x)}
	}
	return amo.Value{}
}

func fromValue[T Number](v amo.Value) T {
	var z T
	switch any(z).(type) {
	case int32:
		return T(int32(uint32(v.Lo)))
	case int64:
		return T(int64(v.Lo))
	case uint32:
		return T(uint32(v.Lo))
	case uint64:
		return T(v.Lo)
	case float32:
		return T(math.Float32frombits(uint32(v.Lo)))
	case float64:
		return T(math.Float64frombits(v.Lo))
	}
	return z
}

// AtomicDo performs a non-fetching atomic op (amo.Set, Add, Subtract, Min,
// Max, And, Or, Xor) on the T at off in the item: fam_add_int64 and friends.
func AtomicDo[T Number](c *Context, it *Item, off uint64, op amo.Op, v T) error {
	_, err := c.Atomic(it, off, kindOf[T](), op, toValue(v), amo.Value{}, false)
	return err
}

// AtomicFetch performs op and returns the previous value: fam_fetch_add_int64
// and friends; with amo.Fetch it is an atomic read (v is ignored), with
// amo.Swap a swap.
func AtomicFetch[T Number](c *Context, it *Item, off uint64, op amo.Op, v T) (T, error) {
	old, err := c.Atomic(it, off, kindOf[T](), op, toValue(v), amo.Value{}, true)
	return fromValue[T](old), err
}

// CompareSwap stores desired at off if the word equals expected, and returns
// the previous value either way (integer types only).
func CompareSwap[T ~int32 | ~int64 | ~uint32 | ~uint64](c *Context, it *Item, off uint64, expected, desired T) (T, error) {
	old, err := c.Atomic(it, off, kindOf[T](), amo.CompareSwap, toValue(desired), toValue(expected), true)
	return fromValue[T](old), err
}
