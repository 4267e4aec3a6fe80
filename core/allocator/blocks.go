package allocator

import (
	"unsafe"

	"github.com/gofam/openfam/core/internal/pages"
)

// blockTable records the allocated blocks, offset -> rounded size, for
// Free's exactness check: an open-addressing hash table of (offset, size)
// pairs with linear probing, the pair in one 16-byte entry. A Go map of a
// million blocks costs a probe of its control word and then of the slot,
// often in another cache line; here one entry is one line, and the table
// holds no pointers for the collector to scan. A size is never 0, so size 0
// marks an empty entry (offset 0 is a real block). Deletion shifts the
// entries after it back (no tombstones), so probes stay short however many
// blocks come and go.
type blockTable struct {
	e    []block
	mask uint64
	n    int
}

type block struct{ off, size uint64 }

// home is where the probe for off starts: offsets are multiples of Align,
// mixed (MurmurHash3's finaliser) so that any run of them spreads out.
func (t *blockTable) home(off uint64) uint64 {
	off ^= off >> 33
	off *= 0xff51afd7ed558ccd
	off ^= off >> 33
	return off & t.mask
}

// get returns the size of the block at off, ok false if none.
func (t *blockTable) get(off uint64) (size uint64, ok bool) {
	if t.n == 0 {
		return 0, false
	}
	for i := t.home(off); t.e[i].size != 0; i = (i + 1) & t.mask {
		if t.e[i].off == off {
			return t.e[i].size, true
		}
	}
	return 0, false
}

// set records the block [off, off+size); size > 0, and off is not recorded.
func (t *blockTable) set(off, size uint64) {
	if (t.n+1)*4 > len(t.e)*3 {
		t.grow()
	}
	t.place(block{off, size})
	t.n++
}

func (t *blockTable) place(b block) {
	i := t.home(b.off)
	for t.e[i].size != 0 {
		i = (i + 1) & t.mask
	}
	t.e[i] = b
}

func (t *blockTable) grow() {
	old := t.e
	n := max(16, 2*len(old))
	t.e, t.mask = make([]block, n), uint64(n-1)
	pages.AdviseHuge(unsafe.Pointer(&t.e[0]), uintptr(n)*unsafe.Sizeof(t.e[0]))
	for _, b := range old {
		if b.size != 0 {
			t.place(b)
		}
	}
}

// del forgets the block at off, if recorded.
func (t *blockTable) del(off uint64) {
	if t.n == 0 {
		return
	}
	i := t.home(off)
	for t.e[i].off != off || t.e[i].size == 0 {
		if t.e[i].size == 0 {
			return
		}
		i = (i + 1) & t.mask
	}
	t.n--
	for {
		t.e[i] = block{}
		j := i
		for {
			j = (j + 1) & t.mask
			b := t.e[j]
			if b.size == 0 {
				return
			}
			// b may fill the hole at i unless its home lies cyclically
			// in (i, j].
			h := t.home(b.off)
			var stays bool
			if i <= j {
				stays = i < h && h <= j
			} else {
				stays = i < h || h <= j
			}
			if !stays {
				t.e[i] = b
				i = j
				break
			}
		}
	}
}
