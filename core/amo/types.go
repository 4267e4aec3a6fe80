// Package amo performs atomic memory operations on words of shared memory:
// memory mapped from region files, possibly shared with other processes and
// with C code using the same CPU instructions (lock xadd, lock cmpxchg,
// cmpxchg16b), so an operation here and one done in C on the same word are
// atomic with respect to each other.
package amo

import "errors"

// Kind is the operand type of an atomic operation.
type Kind uint8

const (
	Int32 Kind = iota + 1
	Int64
	Uint32
	Uint64
	Float32
	Float64
	Int128
)

// Op is an atomic operation. Every op yields the word's previous value.
type Op uint8

const (
	Set         Op = iota + 1 // store v
	Fetch                     // read only
	Add                       // word += v
	Subtract                  // word -= v
	Min                       // word = min(word, v)
	Max                       // word = max(word, v)
	And                       // word &= v (unsigned kinds only)
	Or                        // word |= v (unsigned kinds only)
	Xor                       // word ^= v (unsigned kinds only)
	Swap                      // store v
	CompareSwap               // if word == cmp { word = v } (integer kinds and Int128)
)

// Value holds an operand or result as raw bits: Lo has the low 64 bits (for
// 32-bit kinds, the low 32 bits of Lo; floats as IEEE-754 bits), Hi the high
// 64 bits of an Int128.
type Value struct{ Lo, Hi uint64 }

// Errors returned by Do.
var (
	// ErrInvalidOp: the op is not defined for the kind (e.g. And on Float64,
	// CompareSwap on floats, Add on Int128).
	ErrInvalidOp = errors.New("operation not defined for this operand type")
	// ErrMisaligned: the address is not a multiple of the operand size.
	ErrMisaligned = errors.New("address not aligned to the operand size")
)

// Size returns the operand size in bytes (0 for an unknown kind).
func (k Kind) Size() uint64 {
	switch k {
	case Int32, Uint32, Float32:
		return 4
	case Int64, Uint64, Float64:
		return 8
	case Int128:
		return 16
	}
	return 0
}

// Valid reports whether op is defined for kind k (OpenFAM 3.2's matrix).
func Valid(k Kind, op Op) bool {
	switch op {
	case Set, Fetch:
		return k >= Int32 && k <= Int128
	case Add, Subtract, Min, Max, Swap:
		return k >= Int32 && k <= Float64
	case And, Or, Xor:
		return k == Uint32 || k == Uint64
	case CompareSwap:
		return k == Int32 || k == Int64 || k == Uint32 || k == Uint64 || k == Int128
	}
	return false
}

// Modifies reports whether op may write the word.
func (op Op) Modifies() bool { return op != Fetch }
