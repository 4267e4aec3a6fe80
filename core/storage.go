package core

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/allocator"
	"github.com/gofam/openfam/core/internal/pages"
	"github.com/gofam/openfam/core/metadata"
)

// regionState is a region opened in this process: its heap file mapped
// MAP_SHARED (so other processes mapping the same file see the same bytes,
// and a finished store survives a crash of this process) and its allocator.
type regionState struct {
	mu    sync.Mutex // allocator and mapping changes
	rec   metadata.Region
	path  string
	file  *os.File
	mem   []byte   // the current mapping, len == rec.Size
	old   [][]byte // superseded mappings, kept until close (see remap)
	alloc *allocator.Allocator
	// reserved is which chunks of the file are backed (see pages).
	reserved pages.Reserved
}

// openRegion maps region rec, creating its file when create is set, and
// rebuilds its allocator from the items recorded in the store.
func (f *Fam) openRegion(rec metadata.Region, create bool) (*regionState, error) {
	if Placed(rec) {
		// The bytes are on memory servers: only the allocator lives here.
		rs := &regionState{rec: rec, alloc: allocator.New(rec.Size)}
		for _, it := range f.store.Items(rec.ID) {
			if err := rs.alloc.Reserve(it.Offset, it.Size); err != nil {
				return nil, fmt.Errorf("region %q: item at offset %d (%d bytes) overlaps another: %w", rec.Name, it.Offset, it.Size, err)
			}
		}
		return rs, nil
	}
	path := f.regionPath(rec)
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE | os.O_EXCL
	}
	file, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening region file %s: %w", path, err)
	}
	if create {
		if err := file.Truncate(int64(rec.Size)); err != nil {
			file.Close()
			os.Remove(path)
			return nil, fmt.Errorf("sizing region file %s to %d bytes: %w", path, rec.Size, err)
		}
	} else if st, err := file.Stat(); err == nil && uint64(st.Size()) < rec.Size {
		// A crash between the metadata update and the truncate of a resize
		// leaves the file short; finish the resize.
		if err := file.Truncate(int64(rec.Size)); err != nil {
			file.Close()
			return nil, fmt.Errorf("sizing region file %s: %w", path, err)
		}
	}
	mem, err := unix.Mmap(int(file.Fd()), 0, int(rec.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("mapping region file %s (%d bytes): %w", path, rec.Size, err)
	}
	rs := &regionState{rec: rec, path: path, file: file, mem: mem, alloc: allocator.New(rec.Size)}
	for _, it := range f.store.Items(rec.ID) {
		if err := rs.alloc.Reserve(it.Offset, it.Size); err != nil {
			rs.close()
			return nil, fmt.Errorf("region %q: item at offset %d (%d bytes) overlaps another: %w", rec.Name, it.Offset, it.Size, err)
		}
	}
	return rs, nil
}

// region returns the open state of region id, opening it on first use.
// Caller holds f.mu.
func (f *Fam) regionLocked(id uint64) (*regionState, error) {
	if rs, ok := f.regions[id]; ok {
		return rs, nil
	}
	rec, err := f.store.RegionByID(id)
	if err != nil {
		return nil, err
	}
	rs, err := f.openRegion(rec, false)
	if err != nil {
		return nil, err
	}
	f.regions[id] = rs
	return rs, nil
}

// remap resizes the file and maps it again at its new size. The old
// mapping is not unmapped: another thread may still be copying through an
// address it read a moment ago, and both mappings show the same file pages,
// so the stale one stays valid until the region is closed.
func (rs *regionState) remap(size uint64) error {
	if err := rs.file.Truncate(int64(size)); err != nil {
		return fmt.Errorf("resizing region file %s: %w", rs.path, err)
	}
	mem, err := unix.Mmap(int(rs.file.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping region file %s (%d bytes): %w", rs.path, size, err)
	}
	rs.old = append(rs.old, rs.mem)
	rs.mem = mem
	// A shrink gave pages back: what was known backed may not be now.
	rs.reserved = pages.Reserved{}
	return nil
}

// scrub replaces the mapping with anonymous zero pages so that a racing
// access through a stale address reads zeros instead of faulting, and the
// file's pages are released. Used when the region is destroyed.
func (rs *regionState) scrub() {
	for _, m := range append(rs.old, rs.mem) {
		if len(m) == 0 {
			continue
		}
		_, _ = unix.MmapPtr(-1, 0, unsafe.Pointer(&m[0]), uintptr(len(m)),
			unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
	}
}

// retire is close for Finalize: a thread racing with fam_finalize may still
// copy through an address it read a moment ago, so the mappings are scrubbed
// instead of unmapped and their address ranges stay reserved (no memory
// behind them) for the life of the process.
func (rs *regionState) retire() {
	rs.sync()
	rs.scrub()
	rs.mem, rs.old = nil, nil
	if rs.file != nil {
		rs.file.Close()
		rs.file = nil
	}
}

// sync flushes a persistent region's dirty pages to its file.
func (rs *regionState) sync() {
	if MemoryType(rs.rec.MemoryType) == Persistent && len(rs.mem) > 0 {
		_ = unix.Msync(rs.mem, unix.MS_SYNC)
	}
}

// close unmaps every mapping and closes the file.
func (rs *regionState) close() {
	rs.sync()
	for _, m := range append(rs.old, rs.mem) {
		if len(m) > 0 {
			_ = unix.Munmap(m)
		}
	}
	rs.mem, rs.old = nil, nil
	if rs.file != nil {
		rs.file.Close()
		rs.file = nil
	}
}
