// Package sigguard keeps a Go process's signal handlers across a call into
// a C library that installs its own. libfabric's providers, loaded when an
// endpoint opens, set handlers for SIGINT, SIGILL, SIGABRT, SIGBUS, SIGSEGV
// and SIGTERM: famd would then die on SIGTERM (exit status 1, without its
// graceful stop) and lose the Go runtime's handling of memory faults
// (debug.SetPanicOnFault in the data plane), and a PE's program its own
// handlers. Keep puts back whatever the call changed.
package sigguard

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// nsig is one past the highest Linux signal number.
const nsig = 65

// action is the kernel's struct sigaction, kept as opaque words: it is
// only read and written back, never interpreted (32 bytes hold it on every
// Linux architecture Go supports).
type action [4]uint64

// sigsetSize is the kernel's sigset_t size, which rt_sigaction checks.
const sigsetSize = 8

func get(sig int, a *action) bool {
	_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(a)), sigsetSize, 0, 0)
	return e == 0
}

func set(sig int, a *action) {
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(a)), 0, sigsetSize, 0, 0)
}

// Keep runs fn and then restores the disposition of every signal fn
// changed, and returns how many it restored.
func Keep(fn func()) (restored int) {
	var saved [nsig]action
	var ok [nsig]bool
	for s := 1; s < nsig; s++ {
		ok[s] = get(s, &saved[s])
	}
	fn()
	for s := 1; s < nsig; s++ {
		var now action
		if ok[s] && get(s, &now) && now != saved[s] {
			set(s, &saved[s])
			restored++
		}
	}
	return restored
}
