package amo

import "unsafe"

// cas128 atomically compares the 16 bytes at p (16-byte aligned) with
// oldHi:oldLo and, if equal, stores newHi:newLo, using LOCK CMPXCHG16B; the
// same instruction GCC emits for 16-byte __atomic compare-exchange, so it is
// atomic with respect to C code and other processes sharing the memory. It
// returns the bytes found at p and whether the store happened. The
// instruction always needs write access to p, even when the comparison fails.
//
//go:noescape
func cas128(p unsafe.Pointer, oldLo, oldHi, newLo, newHi uint64) (prevLo, prevHi uint64, swapped bool)
