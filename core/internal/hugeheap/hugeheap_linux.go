//go:build linux

package hugeheap

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

const hugePage = 2 << 20

// supported reports whether transparent huge pages can be had at all: the
// kernel has them, they are not "never" system-wide, and this process did
// not turn them off (prctl PR_SET_THP_DISABLE).
func supported() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || bytes.Contains(b, []byte("[never]")) {
		return false
	}
	if v, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0); err == nil && v != 0 {
		return false
	}
	return true
}

// collapseKnown reports whether the kernel knows MADV_COLLAPSE: an advice
// it does not know fails with EINVAL even on an empty range, which a known
// one accepts (madvise checks the advice before the range).
func collapseKnown() bool {
	_, _, e := unix.Syscall(unix.SYS_MADVISE, 0, 0, unix.MADV_COLLAPSE)
	return e == 0
}

// mu serialises Advise calls and guards done.
var mu sync.Mutex

// done holds the heap ranges already marked, sorted and disjoint: the Go
// heap never gives address space back, so a range once marked stays
// marked (the advice is a property of the mapping) and is skipped.
var done []span

type span struct{ lo, hi uintptr }

// sink keeps Advise's probe allocation on the heap.
var sink *[64]byte

// Advise marks the Go heap's mappings not marked yet MADV_HUGEPAGE and
// collapses them into huge pages now (see the package comment). It is what
// Grew's background run calls; callers need not call it themselves (tests
// do). It returns what it did, and an error only when the process's
// mappings cannot be read or the kernel refuses MADV_HUGEPAGE itself; a
// refused collapse only leaves Stats.Collapsed short.
func Advise() (Stats, error) {
	mu.Lock()
	defer mu.Unlock()
	st := Stats{CollapseSupported: collapseKnown()}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return st, fmt.Errorf("hugeheap: reading the process's mappings: %w", err)
	}
	// A fresh allocation lies in the heap: the mapping it is in, with the
	// anonymous read-write mappings next to it, is the heap where the
	// kernel does not name mappings (CONFIG_ANON_VMA_NAME).
	sink = new([64]byte)
	anchors := []uintptr{uintptr(unsafe.Pointer(sink))}
	for _, d := range done {
		anchors = append(anchors, d.lo)
	}
	heap := heapSpans(maps, anchors)
	sink = nil
	for _, h := range heap {
		st.Heap += uint64(h.hi - h.lo)
		for _, p := range subtract(h, done) {
			// By address: these are mappings, not Go objects.
			if _, _, e := unix.Syscall(unix.SYS_MADVISE, p.lo, p.hi-p.lo, unix.MADV_HUGEPAGE); e != 0 {
				return st, fmt.Errorf("hugeheap: MADV_HUGEPAGE on %d bytes of heap: %w", p.hi-p.lo, e)
			}
			st.Advised += uint64(p.hi - p.lo)
			done = addSpan(done, p)
			if st.CollapseSupported {
				st.Collapsed += collapse(p)
			}
		}
	}
	return st, nil
}

// collapse asks for the huge pages inside p one at a time, so that one
// the kernel refuses (EAGAIN on a page locked elsewhere, EINVAL on a range
// never faulted in, ENOMEM without a free huge page) does not end the
// others, and returns the bytes collapsed or already huge.
func collapse(p span) uint64 {
	var n uint64
	for a := (p.lo + hugePage - 1) &^ (hugePage - 1); a+hugePage <= p.hi; a += hugePage {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, a, hugePage, unix.MADV_COLLAPSE); e == 0 {
			n += hugePage
		}
	}
	return n
}

// heapSpans returns the Go heap's read-write mappings in maps (the text of
// /proc/self/maps), merged where adjacent: those the runtime named
// "[anon: Go: heap]" where the kernel shows names, else each run of
// adjacent anonymous read-write mappings holding one of the anchor
// addresses (known heap addresses).
func heapSpans(maps []byte, anchors []uintptr) []span {
	type vma struct {
		span
		anon  bool // anonymous, private, read-write, unnamed
		named bool // named Go heap
	}
	var vs []vma
	sc := bufio.NewScanner(bytes.NewReader(maps))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		l, err1 := strconv.ParseUint(string(lo), 16, 64)
		h, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		rw := string(f[1]) == "rw-p"
		name := ""
		if len(f) > 5 {
			name = string(bytes.Join(f[5:], []byte(" ")))
		}
		vs = append(vs, vma{span: span{uintptr(l), uintptr(h)}, anon: rw && string(f[4]) == "0" && name == "",
			named: rw && name == "[anon: Go: heap]"})
	}
	var out []span
	add := func(s span) {
		if n := len(out); n > 0 && out[n-1].hi == s.lo {
			out[n-1].hi = s.hi
			return
		}
		out = append(out, s)
	}
	for _, v := range vs {
		if v.named {
			add(v.span)
		}
	}
	if len(out) > 0 {
		return out
	}
	// Unnamed: the runs of adjacent anonymous read-write mappings.
	for i := 0; i < len(vs); {
		if !vs[i].anon {
			i++
			continue
		}
		run := vs[i].span
		j := i + 1
		for j < len(vs) && vs[j].anon && vs[j].lo == run.hi {
			run.hi = vs[j].hi
			j++
		}
		for _, a := range anchors {
			if run.lo <= a && a < run.hi {
				add(run)
				break
			}
		}
		i = j
	}
	return out
}

// subtract returns the parts of s not covered by the sorted, disjoint
// spans ds.
func subtract(s span, ds []span) []span {
	var out []span
	lo := s.lo
	for _, d := range ds {
		if d.hi <= lo || d.lo >= s.hi {
			continue
		}
		if d.lo > lo {
			out = append(out, span{lo, d.lo})
		}
		lo = max(lo, d.hi)
	}
	if lo < s.hi {
		out = append(out, span{lo, s.hi})
	}
	return out
}

// addSpan adds s to the sorted, disjoint spans ds, merging neighbours.
func addSpan(ds []span, s span) []span {
	ds = append(ds, s)
	sort.Slice(ds, func(i, j int) bool { return ds[i].lo < ds[j].lo })
	out := ds[:1]
	for _, d := range ds[1:] {
		if last := &out[len(out)-1]; d.lo <= last.hi {
			last.hi = max(last.hi, d.hi)
		} else {
			out = append(out, d)
		}
	}
	return out
}
