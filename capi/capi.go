// Package capi implements libopenfam's native C interface (include/openfam.h)
// over the Go core.
//
// The public fam_* functions are defined in C (api.c, datapath.c), which
// includes openfam.h so the compiler checks every definition against the
// header. They call the Go exports of this package, named ofam_go_*, which the
// shared library's version script keeps private. Handles are integers
// encoded by the C slot table (handles.c, ofam.h); the Go side maps them to
// core objects (table.go). The data path on memory mapped in this process runs
// in C without entering Go.
//
// capi is a plain cgo package: capi/lib links it into libopenfam.so.0, and Go
// test programs may link it statically by importing it.
package capi

/*
#cgo CFLAGS: -I${SRCDIR}/../include -std=gnu11 -Wall
#include <stdlib.h>
#include "ofam.h"
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gofam/openfam/core"
)

// inst is the process-wide instance between fam_initialize and fam_finalize.
var inst struct {
	mu  sync.Mutex // serializes initialize and finalize
	fam atomic.Pointer[core.Fam]
}

// errNotInit reports a call that raced with fam_finalize (the C wrappers catch
// the ordinary case before entering Go).
func errNotInit(op string) error {
	return core.Errorf(core.CodeInvalid, op, "not initialized (call fam_initialize first)")
}

// instance returns the live instance or the not-initialized error.
func instance(op string) (*core.Fam, error) {
	if f := inst.fam.Load(); f != nil {
		return f, nil
	}
	return nil, errNotInit(op)
}

// setError records err as the calling thread's error and returns its code,
// negated, as the C functions return it.
func setError(err error) C.int {
	code := core.CodeOf(err)
	if code == 0 {
		code = core.CodeUnknown
	}
	msg := err.Error()
	C.ofam_set_error(C.int(code), (*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
	return -C.int(code)
}

// rc converts a core result to a C return code.
func rc(err error) C.int {
	if err == nil {
		return 0
	}
	return setError(err)
}

// panicError turns a recovered panic into FAM_EUNKNOWN: a panic must never
// unwind into the C caller, where it would kill the host program.
func panicError(op string, r any) error {
	return core.Errorf(core.CodeUnknown, op, "internal error (a bug in libopenfam): %v", r)
}

// recoverInt is deferred by every export returning int.
func recoverInt(op string, out *C.int) {
	if r := recover(); r != nil {
		*out = setError(panicError(op, r))
	}
}

// recoverHandle is deferred by every export returning a handle.
func recoverHandle(op string, out *C.uint64_t) {
	if r := recover(); r != nil {
		setError(panicError(op, r))
		*out = 0
	}
}

// recoverPtr is deferred by every export returning a pointer.
func recoverPtr(op string, out *unsafe.Pointer) {
	if r := recover(); r != nil {
		setError(panicError(op, r))
		*out = nil
	}
}

// recoverU64 is deferred by exports returning a count (0 on error).
func recoverU64(op string, out *C.uint64_t) {
	if r := recover(); r != nil {
		setError(panicError(op, r))
		*out = 0
	}
}

// goString copies a C string; NULL becomes "".
func goString(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

// cStringMalloc returns a malloc'd NUL-terminated copy of s that the C caller
// frees with free().
func cStringMalloc(s string) unsafe.Pointer {
	p := C.malloc(C.size_t(len(s) + 1))
	if p == nil {
		return nil
	}
	b := unsafe.Slice((*byte)(p), len(s)+1)
	copy(b, s)
	b[len(s)] = 0
	return p
}

// errNoMemory reports a failed C allocation.
func errNoMemory(op string) error {
	return core.Errorf(core.CodeMemory, op, "out of memory")
}

// errf is core.Errorf for capi's own checks.
func errf(code core.Code, op, format string, args ...any) error {
	return core.Errorf(code, op, format, args...)
}
