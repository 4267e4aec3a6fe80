// Package pages zeroes and reserves ranges of mapped heap files, for the
// embedded core and memory servers alike.
package pages

import (
	"fmt"

	"golang.org/x/sys/unix"
)

const page = 4096

// ZeroReserve makes bytes [off, off+n) of the file fd, mapped shared at
// mem, read as zeros and backs every page they touch with storage. Large
// ranges have their whole pages punched out first (cheaper than writing
// zeros, and the old pages go back). Backing the pages now matters: a heap
// file is sparse, and a store through the mapping into a page that tmpfs
// or the disk can no longer provide kills the writer with SIGBUS, where an
// allocation can fail cleanly. It returns the fallocate error (ENOSPC,
// typically) with nothing zeroed.
func ZeroReserve(fd int, mem []byte, off, n uint64) error {
	if n == 0 {
		return nil
	}
	lo := off &^ (page - 1)
	hi := (off + n + page - 1) &^ (page - 1)
	if err := unix.Fallocate(fd, 0, int64(lo), int64(hi-lo)); err != nil && err != unix.EOPNOTSUPP {
		return fmt.Errorf("reserving %d bytes of the heap file: %w", hi-lo, err)
	}
	r := mem[off : off+n]
	if n >= 1<<20 {
		plo := (off + page - 1) &^ (page - 1)
		phi := (off + n) &^ (page - 1)
		if phi > plo && unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(plo), int64(phi-plo)) == nil {
			clear(r[:plo-off])
			clear(r[phi-off:])
			// Punched pages read as zeros; back them again.
			if err := unix.Fallocate(fd, 0, int64(plo), int64(phi-plo)); err != nil && err != unix.EOPNOTSUPP {
				return fmt.Errorf("reserving %d bytes of the heap file: %w", phi-plo, err)
			}
			return nil
		}
	}
	clear(r)
	return nil
}
