// Package hugeheap asks the kernel for transparent huge pages under the Go
// heap of a process whose metadata has grown large (issue 18: a random
// operation among a million items must cost about what it costs among a
// thousand).
//
// Why: with a million items, the objects an operation touches (records,
// handles, index entries, the names and structures they point to) lie
// scattered over a Go heap of hundreds of megabytes, and each random access
// is a TLB miss as well as a cache miss; in a virtual machine a TLB miss is
// a nested page walk of several more memory accesses. Backed by 2 MiB pages
// that heap needs 512 times fewer TLB entries, and a walk is one level
// shorter. Measured with famscale (tests/scale): a random-order
// deallocation among 1e6 items cost 1.6-1.8x its cost among 1e3 with 4 KiB
// pages, 1.2-1.3x with the whole system set to transparent_hugepage
// "always" (on a quiet host). The large tables already ask for huge pages themselves
// (internal/pages.AdviseHuge), but the per-item objects are ordinary Go
// allocations, and Go's runtime (since 1.21.1) never asks for huge pages on
// its heap arenas, so under the usual system setting ("madvise") they stay
// on 4 KiB pages.
//
// What: once one of the caller's tables (open handles, issued keys, a
// region's items: see Grew) reaches 2^15 entries, and again at each quarter
// step of each power of two after that (2^15, 1.25*2^15, 1.5*2^15, ...), a
// background goroutine (one at a time) finds the heap's mappings in
// /proc/self/maps, marks those it has not marked yet MADV_HUGEPAGE (so that
// memory faulted in there later comes as huge pages) and MADV_COLLAPSEs
// them (Linux 6.1+; so that what is already faulted becomes huge now, not
// when khugepaged gets there, at 16 MiB per 10 s by default). The quarter
// steps matter because the heap grows by new mappings: a mapping made
// after the last run is not marked, and with runs only at powers of two a
// table of 1e6 entries would last have run at 524288, with half the heap
// mapped since.
//
// The trade-off, and why it is limited to large processes: Go's scavenger
// returns free heap memory to the kernel with MADV_DONTNEED in pieces
// smaller than 2 MiB, which splits a huge page, and khugepaged, scanning
// marked mappings, collapses such a piece back into a huge page (filling
// the returned pages with zeros again) when any of its 512 pages is still
// in use; a heap that shrinks can thus keep more resident memory than with
// 4 KiB pages. That bloat is why Go stopped marking its heap. Here only the
// heap's mappings are marked (not stacks or runtime metadata), only in a
// process whose tables hold tens of thousands of entries, where the TLB
// cost is real and the heap mostly holds long-lived tables; a smaller
// process is never touched. OPENFAM_HUGEPAGES=0 turns it off.
//
// Harmless where it cannot help: with transparent_hugepage "never", with
// GODEBUG=disablethp=1, with THP disabled for the process (prctl
// PR_SET_THP_DISABLE) or on a kernel that refuses the advice, it does
// nothing (a refused advice is not an error anyone sees), and on systems
// other than Linux Grew is a counter check and nothing else.
//
// Measured on a busy 2-core VM (load 9-15; famscale --cpu, the run with
// OPENFAM_HUGEPAGES=0 beside it at the same time): at 1e6 items about 700
// of the process's 1050 MiB of anonymous memory is on huge pages (none
// without), resident memory per item is unchanged (about 1000 bytes either
// way), destroying the region is about 25% faster, and random-order
// deallocation is not measurably faster: the host's load swamps it. What
// stays on 4 KiB pages is outside the Go heap: the C library's handle
// slots, the volatile region's tmpfs file and the metadata database's file
// mapping.
package hugeheap

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// first is the table size at which the heap is first advised: below it the
// heap is small enough for the TLB to matter little (famscale's ratios
// only pass 1.5x somewhere above 1e5 items), and a small process keeps
// Go's default.
const first = 1 << 15

// next is the table size at which Grew starts the next run; MaxUint64
// once disabled.
var next atomic.Uint64

func init() { next.Store(first) }

// Grew tells the package that one of the caller's tables of per-item
// entries now holds n of them. It costs one atomic load and a comparison
// unless n has just passed the next step, when it starts a background run
// (see the package comment). Safe for concurrent use; callers may hold
// their own locks (it never blocks).
func Grew(n int) {
	if uint64(n) >= next.Load() {
		grew(uint64(n))
	}
}

// step returns the first step above n: quarter steps of each power of two
// from first on.
func step(n uint64) uint64 {
	if n < first {
		return first
	}
	p := uint64(first)
	for p*2 <= n {
		p *= 2
	}
	// n is in [p, 2p): the next quarter of p above it.
	q := p / 4
	return p + (n-p)/q*q + q
}

var (
	enableOnce sync.Once
	enabled    bool
	running    atomic.Bool // a run's goroutine exists
	again      atomic.Bool // another step was passed during a run
)

// grew is Grew past the threshold: it moves the threshold beyond n (only
// one caller wins a step) and starts or re-arms the background run.
func grew(n uint64) {
	for {
		cur := next.Load()
		if n < cur {
			return
		}
		if next.CompareAndSwap(cur, step(n)) {
			break
		}
	}
	enableOnce.Do(func() { enabled = wanted() })
	if !enabled {
		next.Store(^uint64(0))
		return
	}
	again.Store(true)
	if running.CompareAndSwap(false, true) {
		go loop()
	}
}

// loop runs Advise until no step was passed during the last run. The
// check after clearing running closes the race with a grew that saw
// running still set.
func loop() {
	for {
		for again.Swap(false) {
			_, _ = Advise()
		}
		running.Store(false)
		if !again.Load() || !running.CompareAndSwap(false, true) {
			return
		}
	}
}

// wanted reports whether the process allows the advice: not with
// OPENFAM_HUGEPAGES=0 (or "off", "false", "no"), nor with Go's own
// GODEBUG=disablethp=1, nor where the system cannot do it (see
// supported).
func wanted() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv("OPENFAM_HUGEPAGES"))) {
	case "0", "off", "false", "no":
		return false
	}
	for _, kv := range strings.Split(os.Getenv("GODEBUG"), ",") {
		if strings.TrimSpace(kv) == "disablethp=1" {
			return false
		}
	}
	return supported()
}

// Stats says what one Advise did.
type Stats struct {
	// Heap is the bytes of Go heap mappings found.
	Heap uint64
	// Advised is the bytes newly marked MADV_HUGEPAGE by this call
	// (mappings marked by an earlier call are not marked again).
	Advised uint64
	// Collapsed is the bytes of the newly marked mappings MADV_COLLAPSE
	// turned into huge pages, or already were (0 where the kernel lacks
	// MADV_COLLAPSE).
	Collapsed uint64
	// CollapseSupported reports whether the kernel knows MADV_COLLAPSE.
	CollapseSupported bool
}
