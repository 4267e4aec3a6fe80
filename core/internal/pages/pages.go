// Package pages zeroes and reserves ranges of mapped heap files, for the
// embedded core and memory servers alike, and asks for huge pages under
// large tables (AdviseHuge).
package pages

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

const page = 4096

// Chunk is the granularity of reservations: a chunk once backed stays
// backed (pages punched out to zero them are backed again at once), so
// later allocations in it need no system call.
const Chunk = 2 << 20

// Reserved records the chunks of one heap file known to be backed. The
// zero value is empty; it is not safe for concurrent use (callers hold the
// heap's lock).
type Reserved struct {
	chunks map[uint64]struct{}
}

// reserve backs [lo, hi) of fd with storage.
func reserve(fd int, lo, hi uint64) error {
	if err := unix.Fallocate(fd, 0, int64(lo), int64(hi-lo)); err != nil && err != unix.EOPNOTSUPP {
		return fmt.Errorf("reserving %d bytes of the heap file: %w", hi-lo, err)
	}
	return nil
}

// ensure backs every page of [off, off+n) of a file of size bytes:
// whole chunks where it can (and remembers them), else just the pages of
// the range, so that a nearly full filesystem fails only what does not
// fit.
func (r *Reserved) ensure(fd int, size, off, n uint64) error {
	if r.chunks == nil {
		r.chunks = map[uint64]struct{}{}
	}
	first, last := off/Chunk, (off+n-1)/Chunk
	// What this call backs, to give back if a later part does not fit:
	// a failed allocation must not keep space.
	var took [][2]uint64
	for c := first; c <= last; c++ {
		if _, ok := r.chunks[c]; ok {
			continue
		}
		lo, hi := c*Chunk, min((c+1)*Chunk, size)
		if reserve(fd, lo, hi) == nil {
			r.chunks[c] = struct{}{}
			took = append(took, [2]uint64{lo, hi})
			continue
		}
		plo := max(lo, off&^(page-1))
		phi := min(hi, (off+n+page-1)&^(page-1))
		if err := reserve(fd, plo, phi); err != nil {
			for _, t := range took {
				// Only the pages of the range itself: the rest of a
				// chunk may hold other items' bytes.
				if a, b := max(t[0], (off+page-1)&^(page-1)), min(t[1], (off+n)&^(page-1)); b > a {
					_ = punch(fd, a, b)
				}
				delete(r.chunks, t[0]/Chunk)
			}
			return err
		}
		took = append(took, [2]uint64{plo, phi})
	}
	return nil
}

func punch(fd int, lo, hi uint64) error {
	return unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(lo), int64(hi-lo))
}

// releaseMin is the size from which Release gives an item's whole pages
// back to the file system; smaller items are only zeroed, so that their
// pages (and their chunk's reservation) serve the next allocations without
// a system call.
const releaseMin = 64 << 10

// Release zeroes bytes [off, off+n) of the file fd, mapped shared at mem
// (the whole file), because the item there was freed: a holder of another
// descriptor of the file must not read them, and the next item there
// starts zeroed. For large ranges the whole pages are punched out, which
// returns their space to tmpfs or the disk, and the chunks they were in
// are no longer counted as backed.
func Release(fd int, mem []byte, off, n uint64, res *Reserved) {
	if n == 0 {
		return
	}
	r := mem[off : off+n]
	plo := (off + page - 1) &^ (page - 1)
	phi := (off + n) &^ (page - 1)
	if phi >= plo+releaseMin && punch(fd, plo, phi) == nil {
		clear(r[:plo-off])
		clear(r[phi-off:])
		for c := plo / Chunk; c <= (phi-1)/Chunk; c++ {
			delete(res.chunks, c)
		}
		return
	}
	clear(r)
}

// ZeroReserve makes bytes [off, off+n) of the file fd, mapped shared at
// mem (the whole file), read as zeros and backs every page they touch with
// storage. Large ranges have their whole pages punched out (cheaper than
// writing zeros, and the old pages go back) and backed again. Backing
// matters: a heap file is sparse, and a store through the mapping into a
// page that tmpfs or the disk can no longer provide kills the writer with
// SIGBUS, where an allocation can fail cleanly. It returns the fallocate
// error (ENOSPC, typically) with nothing zeroed.
func ZeroReserve(fd int, mem []byte, off, n uint64, res *Reserved) error {
	if n == 0 {
		return nil
	}
	if err := res.ensure(fd, uint64(len(mem)), off, n); err != nil {
		return err
	}
	r := mem[off : off+n]
	if n >= 1<<20 {
		plo := (off + page - 1) &^ (page - 1)
		phi := (off + n) &^ (page - 1)
		if phi > plo && punch(fd, plo, phi) == nil {
			clear(r[:plo-off])
			clear(r[phi-off:])
			// Punched pages read as zeros; back them again.
			return reserve(fd, plo, phi)
		}
	}
	clear(r)
	return nil
}

// AdviseHuge asks the kernel to back the 2 MiB pages inside [p, p+n) with
// huge pages where it is configured to on request (transparent_hugepage
// "madvise", the usual default). A million-item index or record array
// spans thousands of 4 KiB pages, so each random probe is also a TLB miss,
// and in a virtual machine a page walk costs several memory accesses more;
// a few huge pages cover it (the item tables of core/metadata, the
// allocator's block table, core's index of open handles). Best effort:
// advice the kernel ignores changes nothing. Called on fresh allocations,
// before their pages are touched.
func AdviseHuge(p unsafe.Pointer, n uintptr) {
	const huge = 2 << 20
	lo := (uintptr(p) + huge - 1) &^ (huge - 1)
	hi := (uintptr(p) + n) &^ (huge - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, lo-uintptr(p))), hi-lo), unix.MADV_HUGEPAGE)
}
