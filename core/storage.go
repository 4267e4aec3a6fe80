package core

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/allocator"
	"github.com/gofam/openfam/core/internal/pages"
	"github.com/gofam/openfam/core/metadata"
)

// A region's bytes live in one heap file per access class: the items whose
// effective owner, group and mode are equal share a file, and items of
// different classes never do. An item keeps its region offset in every
// file (the files are sparse, each as large as the region), so global
// descriptors and the allocator are unaffected.
//
// Why: famd hands a same-host client a descriptor of the file holding an
// item, and a descriptor reaches its whole file. With one file per class,
// everything such a descriptor reaches is what its holder may access with
// the same rights anyway (two items of one class give every caller the
// same rights), so no other owner's item is ever exposed. A change of
// permissions moves the item's bytes to its new class's file and zeroes
// them in the old one, since a descriptor once passed cannot be taken
// back. The cost is a page per class in pages where items of several
// classes meet; items of one class pack as densely as before.

// accessClass is what decides who may do what with an item: its
// effective mode and owner (see effective).
type accessClass struct{ mode, uid, gid uint32 }

func classOf(reg metadata.Region, it metadata.Item) accessClass {
	mode, uid, gid := effective(reg, it)
	return accessClass{mode & 0o777, uid, gid}
}

// heapFile is one access class's file of a region, mapped whole and
// MAP_SHARED (so other processes mapping it see the same bytes, and a
// finished store survives a crash of this process).
type heapFile struct {
	path string
	file *os.File
	mem  []byte   // the current mapping, len == region size
	old  [][]byte // superseded mappings, kept until close (see remap)
	// reserved is which chunks of the file are backed (see pages).
	reserved pages.Reserved
	// dirOnce syncs the file's directory at its first flush (persist.go).
	dirOnce sync.Once
	dirErr  error
}

// regionState is a region opened in this process: its heap files and its
// allocator.
type regionState struct {
	mu  sync.Mutex // allocator, heap files and mapping changes
	rec metadata.Region
	// base is the region's marker file; class files are base.UID.GID.MODE.
	base  string
	heaps map[accessClass]*heapFile
	alloc *allocator.Allocator
	// itemBytes is the sum of the sizes of the region's items, kept so
	// that usage is known without listing them.
	itemBytes uint64
}

func (rs *regionState) classPath(c accessClass) string {
	return fmt.Sprintf("%s.%d.%d.%o", rs.base, c.uid, c.gid, c.mode)
}

// heapLocked returns the file of class c, opening or creating it on first
// use. Caller holds rs.mu.
func (rs *regionState) heapLocked(c accessClass) (*heapFile, error) {
	if h, ok := rs.heaps[c]; ok {
		if h.file == nil {
			return nil, fmt.Errorf("region %q was destroyed", rs.rec.Name)
		}
		return h, nil
	}
	path := rs.classPath(c)
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening region heap file %s: %w", path, err)
	}
	size := Capacity(rs.rec)
	if st, err := file.Stat(); err != nil || uint64(st.Size()) != size {
		// New, or left at another size by a crash during a resize.
		if err := file.Truncate(int64(size)); err != nil {
			file.Close()
			return nil, fmt.Errorf("sizing region heap file %s to %d bytes: %w", path, size, err)
		}
	}
	mem, err := unix.Mmap(int(file.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("mapping region heap file %s (%d bytes): %w", path, size, err)
	}
	h := &heapFile{path: path, file: file, mem: mem}
	rs.heaps[c] = h
	return h, nil
}

// openRegion opens region rec, creating its marker file when create is
// set, and rebuilds its allocator from the items recorded in the store.
// Heap files open as items need them.
func (l *local) openRegion(rec metadata.Region, create bool) (*regionState, error) {
	rs := &regionState{rec: rec, alloc: allocator.New(Capacity(rec)), heaps: map[accessClass]*heapFile{}}
	items := l.store.Items(rec.ID)
	for _, it := range items {
		if err := rs.alloc.Reserve(it.Offset, it.Size); err != nil {
			return nil, fmt.Errorf("region %q: item at offset %d (%d bytes) overlaps another: %w", rec.Name, it.Offset, it.Size, err)
		}
		rs.itemBytes += it.Size
	}
	if Placed(rec) {
		// The bytes are on memory servers: only the allocator lives here.
		return rs, nil
	}
	rs.base = l.regionPath(rec)
	flags := os.O_RDWR | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if create {
		flags |= os.O_CREATE | os.O_EXCL
	}
	marker, err := os.OpenFile(rs.base, flags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening region file %s: %w", rs.base, err)
	}
	defer marker.Close()
	if st, err := marker.Stat(); err == nil && st.Size() > 0 {
		if err := rs.migrate(marker, items); err != nil {
			rs.close()
			return nil, err
		}
	}
	return rs, nil
}

// migrate moves the items of a region written by an earlier version, which
// kept every item in the one file legacy, into their class files, then
// empties legacy. A crash part way leaves legacy intact, and the next open
// copies again.
func (rs *regionState) migrate(legacy *os.File, items []metadata.Item) error {
	st, err := legacy.Stat()
	if err != nil {
		return err
	}
	old, err := unix.Mmap(int(legacy.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping legacy region file %s: %w", rs.base, err)
	}
	defer unix.Munmap(old)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, it := range items {
		h, err := rs.heapLocked(classOf(rs.rec, it))
		if err != nil {
			return err
		}
		end := min(it.Offset+it.Size, uint64(len(old)))
		if it.Offset < end {
			copy(h.mem[it.Offset:end], old[it.Offset:end])
		}
	}
	for _, h := range rs.heaps {
		if err := unix.Msync(h.mem, unix.MS_SYNC); err != nil {
			return fmt.Errorf("writing region heap file %s: %w", h.path, err)
		}
	}
	if err := legacy.Truncate(0); err != nil {
		return fmt.Errorf("emptying legacy region file %s: %w", rs.base, err)
	}
	return legacy.Sync()
}

// regionLocked returns the open state of region id, opening it on first
// use. Caller holds f.mu.
func (l *local) regionLocked(id uint64) (*regionState, error) {
	if rs, ok := l.regions[id]; ok {
		return rs, nil
	}
	rec, err := l.store.RegionByID(id)
	if err != nil {
		return nil, err
	}
	rs, err := l.openRegion(rec, false)
	if err != nil {
		return nil, err
	}
	l.regions[id] = rs
	return rs, nil
}

// remap resizes every heap file and maps it again at its new size. The old
// mappings are not unmapped: another thread may still be copying through
// an address it read a moment ago, and both mappings show the same file
// pages, so the stale one stays valid until the region is closed. Caller
// holds rs.mu.
func (rs *regionState) remap(size uint64) error {
	for _, h := range rs.heaps {
		if h.file == nil {
			continue
		}
		if err := h.file.Truncate(int64(size)); err != nil {
			return fmt.Errorf("resizing region heap file %s: %w", h.path, err)
		}
		mem, err := unix.Mmap(int(h.file.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("mapping region heap file %s (%d bytes): %w", h.path, size, err)
		}
		h.old = append(h.old, h.mem)
		h.mem = mem
		// A shrink gave pages back: what was known backed may not be now.
		h.reserved = pages.Reserved{}
	}
	return nil
}

// move takes the bytes [off, off+n) from class from's file to class to's,
// and zeroes them in from's, whose descriptors may be held by clients
// that must no longer reach them. Caller holds rs.mu.
func (rs *regionState) move(from, to accessClass, off, n uint64) error {
	if from == to {
		return nil
	}
	src, err := rs.heapLocked(from)
	if err != nil {
		return err
	}
	dst, err := rs.heapLocked(to)
	if err != nil {
		return err
	}
	if err := pages.ZeroReserve(int(dst.file.Fd()), dst.mem, off, n, &dst.reserved); err != nil {
		return err
	}
	copy(dst.mem[off:off+n], src.mem[off:off+n])
	if MemoryType(rs.rec.MemoryType) == Persistent {
		// The item's bytes must be on disk in the new file before the
		// catalogue points there.
		if err := msyncRange(dst.mem, off, n); err != nil {
			return err
		}
	}
	pages.Release(int(src.file.Fd()), src.mem, off, n, &src.reserved)
	return nil
}

// release zeroes a freed item's bytes in its class file and gives whole
// pages of large items back to the file system. Caller holds rs.mu.
func (rs *regionState) release(c accessClass, off, n uint64) {
	if h, ok := rs.heaps[c]; ok && h.file != nil {
		pages.Release(int(h.file.Fd()), h.mem, off, n, &h.reserved)
	}
}

func msyncRange(mem []byte, off, n uint64) error {
	const page = 4096
	lo := off &^ (page - 1)
	hi := min((off+n+page-1)&^(page-1), uint64(len(mem)))
	if hi <= lo {
		return nil
	}
	return unix.Msync(mem[lo:hi], unix.MS_SYNC)
}

// scrub replaces every mapping with anonymous zero pages, so that a racing
// access through a stale address reads zeros instead of faulting, gives
// every page of the heap files back (even to clients still holding a
// descriptor) and closes them. Used when the region is destroyed.
func (rs *regionState) scrub() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, h := range rs.heaps {
		for _, m := range append(h.old, h.mem) {
			scrubMapping(m)
		}
		if h.file != nil {
			punchAll(h.file)
			h.file.Close()
			h.file = nil
		}
	}
}

// punchAll frees every page of f: holders of other descriptors of the file
// read zeros, and the space returns to the file system at once.
func punchAll(f *os.File) {
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		_ = unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, st.Size())
	}
}

// removeHeapFiles deletes a region's marker and every class file, freeing
// their pages first (a client may still hold a descriptor of one).
func removeHeapFiles(base string) {
	paths, _ := filepath.Glob(globQuote(base) + ".*")
	for _, p := range append(paths, base) {
		if f, err := os.OpenFile(p, os.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			punchAll(f)
			f.Close()
		}
		// A file already gone is fine; one that cannot be removed holds
		// no pages any more, which is what matters.
		_ = os.Remove(p)
	}
}

// globQuote escapes the glob metacharacters of a literal path.
func globQuote(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// retire is close for Finalize: a thread racing with fam_finalize may still
// copy through an address it read a moment ago, so the mappings are
// replaced by zero pages instead of unmapped, and their address ranges stay
// reserved (no memory behind them) for the life of the process. The files
// keep their bytes.
func (rs *regionState) retire() {
	rs.sync()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, h := range rs.heaps {
		for _, m := range append(h.old, h.mem) {
			scrubMapping(m)
		}
		h.mem, h.old = nil, nil
		if h.file != nil {
			h.file.Close()
			h.file = nil
		}
	}
}

// sync flushes a persistent region's dirty pages to its files.
func (rs *regionState) sync() {
	if MemoryType(rs.rec.MemoryType) != Persistent {
		return
	}
	// msync of a large region is slow: snapshot the mappings and flush
	// them without holding the lock allocations need.
	rs.mu.Lock()
	var mems [][]byte
	for _, h := range rs.heaps {
		if h.file != nil && len(h.mem) > 0 {
			mems = append(mems, h.mem)
		}
	}
	rs.mu.Unlock()
	for _, m := range mems {
		_ = unix.Msync(m, unix.MS_SYNC)
	}
}

// close unmaps every mapping and closes the files.
func (rs *regionState) close() {
	rs.sync()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, h := range rs.heaps {
		for _, m := range append(h.old, h.mem) {
			if len(m) > 0 {
				_ = unix.Munmap(m)
			}
		}
		h.mem, h.old = nil, nil
		if h.file != nil {
			h.file.Close()
			h.file = nil
		}
	}
}
