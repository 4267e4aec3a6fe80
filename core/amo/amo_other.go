//go:build !amd64

package amo

import (
	"sync"
	"unsafe"
)

// stripes serialise 128-bit operations on architectures without a 16-byte
// compare-and-swap wired up here. The lock is chosen by address, so two
// callers in this process touching the same word always take the same lock.
var stripes [64]struct {
	sync.Mutex
	_ [56]byte // keep each lock on its own cache line
}

// cas128 compares the 16 bytes at p with oldHi:oldLo and, if equal, stores
// newHi:newLo, returning the bytes found and whether the store happened.
//
// Unlike the amd64 version this is atomic only among goroutines of this
// process that go through this package: other processes and C code sharing
// the memory do not take these locks.
func cas128(p unsafe.Pointer, oldLo, oldHi, newLo, newHi uint64) (prevLo, prevHi uint64, swapped bool) {
	s := &stripes[(uintptr(p)>>4)%uintptr(len(stripes))]
	s.Lock()
	defer s.Unlock()
	w := (*[2]uint64)(p)
	prevLo, prevHi = w[0], w[1]
	if prevLo == oldLo && prevHi == oldHi {
		w[0], w[1] = newLo, newHi
		swapped = true
	}
	return prevLo, prevHi, swapped
}
