//go:build linux

package hugeheap

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"testing"
	"unsafe"
)

// anonHuge returns the AnonHugePages (bytes) of the mapping holding addr,
// from /proc/self/smaps, and whether one was found.
func anonHuge(t *testing.T, addr uintptr) (uint64, bool) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatalf("reading smaps: %v", err)
	}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		f := bytes.Fields([]byte(line))
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := bytes.Cut(f[0], []byte("-")); ok && len(f) >= 5 {
			l, e1 := strconv.ParseUint(string(lo), 16, 64)
			h, e2 := strconv.ParseUint(string(hi), 16, 64)
			if e1 == nil && e2 == nil {
				in = uintptr(l) <= addr && addr < uintptr(h)
				continue
			}
		}
		if in && string(f[0]) == "AnonHugePages:" && len(f) >= 2 {
			kb, err := strconv.ParseUint(string(f[1]), 10, 64)
			if err != nil {
				t.Fatalf("smaps line %q: %v", line, err)
			}
			return kb << 10, true
		}
	}
	return 0, false
}

// TestAdviseHugeHeap: a Go heap of 64 MiB, faulted in on 4 KiB pages, is
// backed by huge pages after Advise (which fails without Advise: with the
// usual transparent_hugepage "madvise" the Go heap gets none).
func TestAdviseHugeHeap(t *testing.T) {
	if !supported() {
		t.Skip("transparent huge pages are unavailable here (transparent_hugepage \"never\", " +
			"no THP in the kernel, or disabled for this process)")
	}
	if !collapseKnown() {
		t.Skip("the kernel lacks MADV_COLLAPSE (Linux 6.1+): only future faults would get huge pages")
	}
	// Pointer-free, so the collector never reads it; written through so
	// that every page is faulted in before the advice.
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	addr := uintptr(unsafe.Pointer(&buf[0]))
	before, ok := anonHuge(t, addr)
	if !ok {
		t.Fatalf("no mapping holds the heap buffer at %#x in smaps", addr)
	}
	st, err := Advise()
	if err != nil {
		t.Fatalf("Advise: %v", err)
	}
	after, _ := anonHuge(t, addr)
	t.Logf("heap %d MiB, newly advised %d MiB, collapsed %d MiB; AnonHugePages of the buffer's mapping "+
		"%d KiB before, %d KiB after", st.Heap>>20, st.Advised>>20, st.Collapsed>>20, before>>10, after>>10)
	if st.Heap < uint64(len(buf)) {
		t.Errorf("Advise found %d bytes of heap, less than the %d-byte buffer in it", st.Heap, len(buf))
	}
	if after == 0 {
		t.Fatalf("no huge pages under the Go heap after Advise (stats %+v)", st)
	}
	// A second call finds the same heap marked and marks nothing again.
	st2, err := Advise()
	if err != nil {
		t.Fatalf("second Advise: %v", err)
	}
	if st2.Advised >= st.Advised && st.Advised > 0 {
		t.Errorf("second Advise marked %d bytes again (first %d): marked mappings must be skipped",
			st2.Advised, st.Advised)
	}
	buf[0] = 2 // keep buf alive to here
}

func TestStep(t *testing.T) {
	for _, c := range []struct{ n, want uint64 }{
		{0, first}, {first - 1, first}, {first, first + first/4}, {first + first/4, first + first/2},
		{2*first - 1, 2 * first}, {2 * first, 2*first + first/2}, {1000000, 1 << 20},
		{917504, 917504 + 1<<17}, {917503, 917504},
	} {
		if got := step(c.n); got != c.want {
			t.Errorf("step(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestSpans(t *testing.T) {
	ds := addSpan(nil, span{10, 20})
	ds = addSpan(ds, span{30, 40})
	ds = addSpan(ds, span{20, 30})
	if len(ds) != 1 || ds[0] != (span{10, 40}) {
		t.Fatalf("addSpan merged to %v, want [{10 40}]", ds)
	}
	got := subtract(span{0, 50}, []span{{10, 20}, {30, 40}})
	want := []span{{0, 10}, {20, 30}, {40, 50}}
	if len(got) != len(want) {
		t.Fatalf("subtract = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("subtract = %v, want %v", got, want)
		}
	}
}

func TestHeapSpans(t *testing.T) {
	maps := []byte(`00400000-004ac000 r-xp 00000000 fe:00 10593700 /bin/x
c000000000-c000400000 rw-p 00000000 00:00 0
c000400000-c004000000 rw-p 00000000 00:00 0
c004000000-c008000000 ---p 00000000 00:00 0
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
7f0000100000-7f0000200000 rw-p 00000000 00:00 0 [stack:1]
`)
	got := heapSpans(maps, []uintptr{0xc000001000})
	if len(got) != 1 || got[0] != (span{0xc000000000, 0xc004000000}) {
		t.Fatalf("heapSpans by anchor = %#v, want the two adjacent heap mappings merged", got)
	}
	named := append([]byte("c010000000-c010400000 rw-p 00000000 00:00 0 [anon: Go: heap]\n"), maps...)
	got = heapSpans(named, []uintptr{0xc000001000})
	if len(got) != 1 || got[0] != (span{0xc010000000, 0xc010400000}) {
		t.Fatalf("heapSpans with names = %#v, want only the named heap", got)
	}
}

// TestWanted: the opt-outs are honoured.
func TestWanted(t *testing.T) {
	t.Setenv("OPENFAM_HUGEPAGES", "0")
	if wanted() {
		t.Error("OPENFAM_HUGEPAGES=0 must turn the advice off")
	}
	t.Setenv("OPENFAM_HUGEPAGES", "")
	t.Setenv("GODEBUG", "madvdontneed=1,disablethp=1")
	if wanted() {
		t.Error("GODEBUG=disablethp=1 must turn the advice off")
	}
}
