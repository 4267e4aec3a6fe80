package core

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/allocator"
	"github.com/gofam/openfam/core/internal/pages"
	"github.com/gofam/openfam/core/metadata"
	"github.com/gofam/openfam/core/transport"
)

// local is the embedded backend: the instance serves everything itself,
// metadata in a catalogue (a bbolt store under Options.DataDir), each
// region's bytes in heap files mapped into this process (storage.go), or,
// for a region the Placer puts on memory servers, on those servers with
// only the catalogue and the allocator here (famd's metadata service).
//
// Its maps are guarded by the instance's f.mu, which also guards the
// handles: a region's life cycle and the registration of handles on it
// are one critical section (see allocate and Region.Destroy).
type local struct {
	opts    Options
	storeID string // distinguishes this store's volatile files from other stores'
	store   Catalog
	// lost names the volatile regions dropped when the store was opened
	// (see dropLostVolatileRegions), for famd's log.
	lost []string

	regions map[uint64]*regionState // opened regions
	// graveyard holds destroyed regions whose scrubbed address ranges
	// stay reserved until Finalize.
	graveyard []*regionState
}

// newLocal opens the embedded store of opts (see Initialize).
func newLocal(op string, opts Options) (*local, error) {
	l := &local{opts: opts, regions: map[uint64]*regionState{}}
	for _, d := range []string{opts.DataDir, opts.ShmDir, filepath.Join(opts.DataDir, "regions")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, Errorf(CodeResource, op, "cannot create directory %s: %v", d, err)
		}
	}
	id, err := loadStoreID(opts.DataDir)
	if err != nil {
		return nil, Errorf(CodeResource, op, "%v", err)
	}
	l.storeID = id
	st, err := metadata.Open(filepath.Join(opts.DataDir, "meta"), metadata.Options{NoSync: true})
	if err != nil {
		if errors.Is(err, metadata.ErrLocked) {
			return nil, Errorf(CodeResource, op, "%v (another process is using the embedded store in %s; start famd and set OPENFAM_SERVER to share regions between processes, or point OPENFAM_DATA_DIR elsewhere)", err, opts.DataDir)
		}
		return nil, Errorf(CodeMetadata, op, "opening the metadata store: %v", err)
	}
	l.store = st
	l.dropLostVolatileRegions()
	return l, nil
}

// dropLostVolatileRegions forgets volatile regions whose tmpfs file is gone
// (the machine rebooted): their contents no longer exist.
func (l *local) dropLostVolatileRegions() {
	for _, r := range l.store.Regions() {
		if MemoryType(r.MemoryType) != Volatile || Placed(r) {
			continue
		}
		if _, err := os.Stat(l.regionPath(r)); errors.Is(err, os.ErrNotExist) {
			if l.store.DeleteRegion(r.ID) == nil {
				l.lost = append(l.lost, r.Name)
			}
		}
	}
}

func (l *local) regionPath(r metadata.Region) string {
	if MemoryType(r.MemoryType) == Persistent {
		return filepath.Join(l.opts.DataDir, "regions", fmt.Sprintf("%d.heap", r.ID))
	}
	return filepath.Join(l.opts.ShmDir, fmt.Sprintf("%s-%d.heap", l.storeID, r.ID))
}

// --- instance ---

func (l *local) quiesce() {}

func (l *local) close(f *Fam, _ []*itemView) error {
	// Mappings are retired, not unmapped: a C fast-path call that read an
	// item's address before capi invalidated its handle may still copy
	// through it, and must find harmless memory, not a hole (SIGSEGV).
	f.mu.Lock()
	for _, rs := range l.regions {
		rs.retire()
	}
	for _, rs := range l.graveyard {
		rs.retire()
	}
	l.regions, l.graveyard = nil, nil
	// Closed under f.mu: a call that passed its check before Finalize
	// and opens a region now finds the store closed, not a nil map.
	err := l.store.Close()
	f.mu.Unlock()
	if err != nil {
		return Errorf(CodeMetadata, "fam_finalize", "closing the metadata store: %v", err)
	}
	return nil
}

func (l *local) sync(f *Fam) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rs := range l.regions {
		rs.sync()
	}
}

// barrier: an embedded store is one process's, so PEs of a larger job have
// no common party to meet at; famd is that party (famrun starts one).
func (l *local) barrier(f *Fam, op string) error {
	return Errorf(CodeUnimplemented, op, "a barrier across %d PEs needs famd: start the job with famrun (it starts one) or set OPENFAM_SERVER", f.peCount)
}

func (l *local) model(configured string) string { return configured }

func (l *local) lostVolatile() []string { return l.lost }

func (l *local) localUsage(f *Fam, op string) (regions int, size, used uint64, err error) {
	for _, rec := range l.store.Regions() {
		if Placed(rec) {
			continue
		}
		f.mu.Lock()
		if f.closed.Load() {
			// Finalized meanwhile: open nothing more.
			f.mu.Unlock()
			return 0, 0, 0, f.check(op)
		}
		rs, rerr := l.regionLocked(rec.ID)
		f.mu.Unlock()
		if rerr != nil {
			// Destroyed since the listing.
			continue
		}
		regions++
		size += rec.Size
		rs.mu.Lock()
		used += rs.itemBytes
		rs.mu.Unlock()
	}
	return regions, size, used, nil
}

// --- regions ---

func (l *local) createRegion(f *Fam, op, name string, size uint64, mode uint32, attr RegionAttr) (uint64, error) {
	size = (size + allocator.Align - 1) / allocator.Align * allocator.Align
	servers, block := []uint64{0}, uint64(0)
	if l.opts.Placer != nil {
		s, b, err := l.opts.Placer.Place(name, size, attr)
		if err != nil {
			return 0, Errorf(CodeResource, op, "%v", err)
		}
		if s != nil {
			servers = s
		}
		block = b
	}
	if err := redundancyHere(op, attr, servers); err != nil { // raid_local.go
		return 0, err
	}
	if block == 0 {
		// Reported by fam_stat even for a region on one server: OpenFAM
		// programs divide by it to stripe their own work.
		block = DefaultInterleaveSize
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return 0, f.check(op)
	}
	rec, err := l.store.CreateRegion(metadata.Region{
		Name: name, Size: size, Mode: mode, UID: f.uid, GID: f.gid,
		Redundancy: uint8(attr.Redundancy), MemoryType: uint8(attr.Memory),
		Interleave: uint8(attr.Interleave), PermLevel: uint8(attr.PermLevel),
		Servers: servers, InterleaveSize: block, Created: time.Now().UnixNano(),
	})
	if err != nil {
		return 0, storeErr(op, "region", name, err)
	}
	if Placed(rec) {
		// The name is taken in the catalogue first so that two creators of
		// one name cannot both make segments.
		if err := l.opts.Placer.Create(rec); err != nil {
			_ = l.store.DeleteRegion(rec.ID)
			return 0, Errorf(CodeRPC, op, "%v", err)
		}
	}
	rs, err := l.openRegion(rec, true)
	if err != nil {
		_ = l.store.DeleteRegion(rec.ID)
		return 0, Errorf(CodeResource, op, "%v", err)
	}
	if err := l.regionDurable(f, op, rs); err != nil {
		rs.close()
		removeHeapFiles(rs.base)
		_ = l.store.DeleteRegion(rec.ID)
		return 0, err
	}
	l.regions[rec.ID] = rs
	return rec.ID, nil
}

func (l *local) lookupRegion(f *Fam, op, name string) (uint64, error) {
	rec, err := l.store.RegionByName(name)
	if err != nil {
		return 0, storeErr(op, "region", name, err)
	}
	if rightsFor(rec.Mode, rec.UID, rec.GID, f.uid, f.gid) == 0 {
		return 0, Errorf(CodeNoPerm, op, "no read or write permission on region %q (mode %#o)", name, rec.Mode)
	}
	return rec.ID, nil
}

func (l *local) regionRecord(f *Fam, op string, id uint64, lazy bool) (metadata.Region, error) {
	rec, err := l.store.RegionByID(id)
	if err != nil {
		return metadata.Region{}, Errorf(CodeNotFound, op, "region %d no longer exists", id)
	}
	if lazy && rightsFor(rec.Mode, rec.UID, rec.GID, f.uid, f.gid) == 0 {
		return rec, Errorf(CodeNoPerm, op, "no read or write permission on region %q", rec.Name)
	}
	return rec, nil
}

func (l *local) destroyRegion(f *Fam, op string, rec metadata.Region) (func(), error) {
	if rightsFor(rec.Mode, rec.UID, rec.GID, f.uid, f.gid)&RightWrite == 0 {
		return nil, Errorf(CodeNoPerm, op, "no write permission on region %q (mode %#o)", rec.Name, rec.Mode)
	}
	f.mu.Lock()
	if err := l.store.DeleteRegion(rec.ID); err != nil {
		f.mu.Unlock()
		return nil, storeErr(op, "region", rec.Name, err)
	}
	// Gone from the catalogue and from the open regions in one critical
	// section: an allocation in it either finished before (its handle is
	// released with the others) or finds no region.
	rs := l.regions[rec.ID]
	delete(l.regions, rec.ID)
	f.mu.Unlock()
	return func() {
		if Placed(rec) {
			l.opts.Placer.Destroy(rec)
			return
		}
		if rs != nil {
			rs.scrub()
			// The scrubbed address ranges stay reserved (for the life of
			// the process, see retire) so that no new mapping can appear
			// where a racing thread still writes.
			f.mu.Lock()
			if f.closed.Load() {
				rs.retire()
			} else {
				l.graveyard = append(l.graveyard, rs)
			}
			f.mu.Unlock()
		}
		// The heap files' pages are freed even while a client still holds
		// a descriptor of one: destroying a region gives its space back.
		removeHeapFiles(l.regionPath(rec))
	}, nil
}

func (l *local) resizeRegion(f *Fam, op string, rec metadata.Region, n uint64) error {
	n = (n + allocator.Align - 1) / allocator.Align * allocator.Align
	f.mu.Lock()
	rs, err := l.regionLocked(rec.ID)
	if err != nil {
		f.mu.Unlock()
		return Errorf(CodeResource, op, "%v", err)
	}
	rs.mu.Lock()
	// The allocator and the heap files follow the capacity (at least
	// MinRegionSize); the record keeps the size asked for.
	oldCap := Capacity(rec)
	rec.Size = n
	newCap := Capacity(rec)
	if newCap < oldCap {
		if err := rs.alloc.Shrink(newCap); err != nil {
			rs.mu.Unlock()
			f.mu.Unlock()
			return Errorf(CodeInvalid, op, "cannot shrink region %q to %d bytes: items end at %d", rec.Name, n, rs.alloc.End())
		}
	} else if err := rs.alloc.Grow(newCap); err != nil {
		rs.mu.Unlock()
		f.mu.Unlock()
		return Errorf(CodeInvalid, op, "%v", err)
	}
	if Placed(rs.rec) {
		// Segments first: a region recorded larger than its segments
		// would hand out blocks no server holds.
		if err := l.opts.Placer.Resize(rec); err != nil {
			if newCap < oldCap {
				_ = rs.alloc.Grow(oldCap)
			} else {
				_ = rs.alloc.Shrink(oldCap)
			}
			rs.mu.Unlock()
			f.mu.Unlock()
			return Errorf(CodeRPC, op, "%v", err)
		}
	}
	if err := l.store.UpdateRegion(rec); err != nil {
		rs.mu.Unlock()
		f.mu.Unlock()
		return storeErr(op, "region", rec.Name, err)
	}
	if !Placed(rs.rec) {
		if err := rs.remap(newCap); err != nil {
			rs.mu.Unlock()
			f.mu.Unlock()
			return Errorf(CodeResource, op, "%v", err)
		}
	}
	rs.rec = rec
	rs.mu.Unlock()
	f.mu.Unlock()
	// The views of the region's items point into the old mappings.
	f.refreshRegionItems(op, rec.ID)
	return nil
}

func (l *local) changeRegionPermissions(f *Fam, op string, rec metadata.Region, mode uint32) error {
	if rec.UID != f.uid {
		return Errorf(CodeNoPerm, op, "only the owner (uid %d) may change region %q's permissions", rec.UID, rec.Name)
	}
	old := rec
	rec.Mode = mode
	f.mu.Lock()
	defer f.mu.Unlock()
	rs, err := l.regionLocked(rec.ID)
	if err != nil {
		return Errorf(CodeResource, op, "%v", err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	// With region-level permissions every item's access class changes:
	// its bytes move to the new class's heap file (see storage.go).
	var moved []metadata.Item
	if !Placed(rs.rec) && PermLevel(rec.PermLevel) != PermDataItem {
		for _, it := range l.store.Items(rec.ID) {
			if err := rs.move(classOf(old, it), classOf(rec, it), it.Offset, it.Size); err != nil {
				for _, m := range moved {
					_ = rs.move(classOf(rec, m), classOf(old, m), m.Offset, m.Size)
				}
				return Errorf(CodeNoSpace, op, "moving the items of region %q to its new permissions' heap file: %v", rec.Name, err)
			}
			moved = append(moved, it)
		}
	}
	if err := l.store.UpdateRegion(rec); err != nil {
		for _, m := range moved {
			_ = rs.move(classOf(rec, m), classOf(old, m), m.Offset, m.Size)
		}
		return storeErr(op, "region", rec.Name, err)
	}
	rs.rec = rec
	return nil
}

func (l *local) regionUsed(f *Fam, op string, id uint64) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs, err := l.regionLocked(id)
	if err != nil {
		return 0, Errorf(CodeNotFound, op, "region %d: %v", id, err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.itemBytes, nil
}

// --- items ---

// makeViewLocked computes f's view of item rec. Caller holds f.mu.
func (l *local) makeViewLocked(f *Fam, rec metadata.Item) (*itemView, error) {
	rs, err := l.regionLocked(rec.RegionID)
	if err != nil {
		return nil, err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	c := classOf(rs.rec, rec)
	rights := rightsFor(c.mode, c.uid, c.gid, f.uid, f.gid)
	end := rec.Offset + rec.Size
	persist := MemoryType(rs.rec.MemoryType) == Persistent
	if Placed(rs.rec) {
		return &itemView{size: rec.Size, rights: rights, rs: rs, persist: persist}, nil
	}
	h, err := rs.heapLocked(c)
	if err != nil {
		return nil, err
	}
	return &itemView{mem: h.mem[rec.Offset:end:end], size: rec.Size, rights: rights, rs: rs, heap: h,
		persist: persist}, nil
}

// allocate holds f.mu from the catalogue write to the handle's
// registration (but for a placed region's zeroing, after which it checks
// the region again): a region destroyed, or an item deallocated, by
// another thread meanwhile cannot miss the new handle.
func (l *local) allocate(f *Fam, op string, r *Region, name string, n uint64, mode uint32) (*Item, error) {
	rec, err := r.record(op)
	if err != nil {
		return nil, err
	}
	if rightsFor(rec.Mode, rec.UID, rec.GID, f.uid, f.gid)&RightWrite == 0 {
		return nil, Errorf(CodeNoPerm, op, "no write permission on region %q (mode %#o)", rec.Name, rec.Mode)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return nil, f.check(op)
	}
	rs, err := l.regionLocked(r.id)
	if err != nil {
		return nil, Errorf(CodeResource, op, "%v", err)
	}
	rs.mu.Lock()
	off, err := rs.alloc.Alloc(n)
	if err != nil {
		rs.mu.Unlock()
		return nil, Errorf(CodeNoSpace, op, "region %q has no free block of %d bytes (%d of %d bytes free, possibly fragmented)", rec.Name, n, rs.alloc.FreeBytes(), rs.alloc.Size())
	}
	irec := metadata.Item{RegionID: r.id, Offset: off, Size: n, Name: name, Mode: mode,
		UID: f.uid, GID: f.gid, Created: time.Now().UnixNano()}
	if Placed(rs.rec) {
		// The block is reserved; zeroing it on the memory servers is a
		// network call, made without the locks so that a slow server
		// stalls only this allocation, and before the item exists so
		// that a failure leaves nothing to undo but the block.
		prec := rs.rec
		rs.mu.Unlock()
		f.mu.Unlock()
		zerr := l.opts.Placer.Zero(prec, off, n)
		f.mu.Lock()
		rs.mu.Lock()
		if zerr == nil && (f.closed.Load() || l.regions[r.id] != rs) {
			zerr = Errorf(CodeNotFound, op, "region %q was destroyed during the allocation", rec.Name)
		}
		if zerr != nil {
			_ = rs.alloc.Free(off, n)
			rs.mu.Unlock()
			switch CodeOf(zerr) {
			case CodeNotFound:
				return nil, zerr
			case CodeNoSpace:
				return nil, Errorf(CodeNoSpace, op, "region %q: %v", rec.Name, zerr)
			}
			return nil, Errorf(CodeRPC, op, "%v", zerr)
		}
	}
	if !Placed(rs.rec) {
		h, err := rs.heapLocked(classOf(rs.rec, irec))
		if err == nil {
			err = pages.ZeroReserve(int(h.file.Fd()), h.mem, off, n, &h.reserved)
		}
		if err != nil {
			_ = rs.alloc.Free(off, n)
			rs.mu.Unlock()
			return nil, Errorf(CodeNoSpace, op, "region %q: %v", rec.Name, err)
		}
	}
	if err := l.store.PutItem(irec); err != nil {
		_ = rs.alloc.Free(off, n)
		rs.mu.Unlock()
		return nil, storeErr(op, "data item", name+" in region "+rec.Name, err)
	}
	if err := l.metaDurable(f, op, rs.rec.MemoryType); err != nil {
		_ = l.store.DeleteItem(r.id, off)
		_ = rs.alloc.Free(off, n)
		rs.mu.Unlock()
		return nil, err
	}
	// The store gave the item its incarnation, which the handle binds to.
	if stored, err := l.store.ItemAt(r.id, off); err == nil {
		irec.Gen = stored.Gen
	}
	rs.itemBytes += n
	rs.mu.Unlock()
	v, err := l.makeViewLocked(f, irec)
	if err != nil {
		return nil, Errorf(CodeResource, op, "%v", err)
	}
	return f.bindItemLocked(op, irec, v)
}

func (l *local) lookup(f *Fam, op, item, region string) (*Item, error) {
	reg, err := l.store.RegionByName(region)
	if err != nil {
		return nil, storeErr(op, "region", region, err)
	}
	rec, err := l.store.ItemByName(reg.ID, item)
	if err != nil {
		return nil, storeErr(op, "data item", item+" in region "+region, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return nil, f.check(op)
	}
	v, err := l.makeViewLocked(f, rec)
	if err != nil {
		return nil, Errorf(CodeResource, op, "%v", err)
	}
	if v.rights == 0 {
		return nil, Errorf(CodeNoPerm, op, "no read or write permission on data item %q in region %q", item, region)
	}
	return f.bindItemLocked(op, rec, v)
}

func (l *local) resolveLocked(f *Fam, op string, g GlobalDesc) (*itemView, metadata.Item, error) {
	rec, err := l.store.ItemAt(g.RegionID, g.Offset)
	if err != nil {
		return nil, rec, Errorf(CodeNotFound, op, "no data item at global descriptor {%d, %d}", g.RegionID, g.Offset)
	}
	v, err := l.makeViewLocked(f, rec)
	if err != nil {
		return nil, rec, Errorf(CodeResource, op, "%v", err)
	}
	return v, rec, nil
}

func (l *local) itemRecord(it *Item, op string) (metadata.Item, error) {
	rec, err := l.store.ItemAt(it.g.RegionID, it.g.Offset)
	if err != nil || rec.Gen != it.inc {
		// A new item at the offset is not this handle's.
		return metadata.Item{}, Errorf(CodeNotFound, op, "data item {%d, %d} no longer exists", it.g.RegionID, it.g.Offset)
	}
	return rec, nil
}

// unnamedItems is implemented by *metadata.Store (not by every Catalog,
// the mocks for instance): ItemAt without the item's name.
type unnamedItems interface {
	ItemAtUnnamed(regionID, offset uint64) (metadata.Item, error)
}

// itemAtUnnamed is the catalogue's ItemAt, without the name where the
// catalogue can leave it out.
func (l *local) itemAtUnnamed(regionID, offset uint64) (metadata.Item, error) {
	if u, ok := l.store.(unnamedItems); ok {
		return u.ItemAtUnnamed(regionID, offset)
	}
	return l.store.ItemAt(regionID, offset)
}

func (l *local) deallocate(it *Item, op string) error {
	f := it.f
	f.mu.Lock()
	defer f.mu.Unlock()
	// Another thread may have deallocated the item since use, and a new
	// item may have taken its offset: only this handle's incarnation may
	// be freed.
	if it.state.Load() != stateOpen {
		return Errorf(CodeInvalid, op, "data item handle was released (closed, deallocated or finalized)")
	}
	// The record without its name: the name is needed only to explain a
	// failure, and copying it is the lookup's one allocation (issue 18).
	rec, err := l.itemAtUnnamed(it.g.RegionID, it.g.Offset)
	if err != nil || rec.Gen != it.inc {
		return Errorf(CodeNotFound, op, "data item {%d, %d} no longer exists", it.g.RegionID, it.g.Offset)
	}
	// As with unlink(2), freeing is a change to the container: the item's
	// owner may always free it, anyone else needs write permission on the
	// region (its own bits, whatever the permission level). The region's
	// record is read only for someone else's item: its copy is an
	// allocation (see ItemAtUnnamed); for the owner, a region gone
	// meanwhile fails DeleteItem below.
	if rec.UID != f.uid {
		if reg, err := l.store.RegionByID(rec.RegionID); err != nil ||
			rightsFor(reg.Mode, reg.UID, reg.GID, f.uid, f.gid)&RightWrite == 0 {
			return Errorf(CodeNoPerm, op, "only the owner of data item {%d, %d} or a writer of its region may deallocate it", rec.RegionID, rec.Offset)
		}
	}
	if err := l.store.DeleteItem(rec.RegionID, rec.Offset); err != nil {
		if named, nerr := l.store.ItemAt(rec.RegionID, rec.Offset); nerr == nil {
			rec.Name = named.Name
		}
		return storeErr(op, "data item", rec.Name, err)
	}
	if rs := l.regions[rec.RegionID]; rs != nil {
		rs.mu.Lock()
		if !Placed(rs.rec) {
			rs.release(classOf(rs.rec, rec), rec.Offset, rec.Size)
		}
		_ = rs.alloc.Free(rec.Offset, rec.Size)
		rs.itemBytes -= min(rs.itemBytes, rec.Size)
		rs.mu.Unlock()
	}
	return nil
}

func (l *local) changeItemPermissions(it *Item, op string, mode uint32) error {
	rec, err := l.itemRecord(it, op)
	if err != nil {
		return err
	}
	if err := l.changeMode(it, op, rec, mode); err != nil {
		return err
	}
	it.f.renewHandles(it, op)
	return nil
}

// changeMode is changeItemPermissions on the item whose record is rec.
func (l *local) changeMode(it *Item, op string, rec metadata.Item, mode uint32) error {
	f := it.f
	if rec.UID != f.uid {
		return Errorf(CodeNoPerm, op, "only the owner (uid %d) may change the permissions of data item {%d, %d}", rec.UID, rec.RegionID, rec.Offset)
	}
	if reg, err := l.store.RegionByID(rec.RegionID); err == nil && PermLevel(reg.PermLevel) != PermDataItem {
		// As in OpenFAM: the item's permissions are its region's.
		return Errorf(CodeNoPerm, op, "region %q has region-level permissions: its items take the region's mode (change it with fam_change_region_permissions)", reg.Name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Checked again under the lock: the item may have been deallocated
	// and its offset reused since record.
	if cur, err := l.store.ItemAt(rec.RegionID, rec.Offset); err != nil || cur.Gen != it.inc {
		return Errorf(CodeNotFound, op, "data item {%d, %d} no longer exists", rec.RegionID, rec.Offset)
	}
	old := rec
	rec.Mode = mode
	rs, err := l.regionLocked(rec.RegionID)
	if err != nil {
		return Errorf(CodeResource, op, "%v", err)
	}
	// The bytes move to the new class's heap file first (see storage.go):
	// the old one may be mapped by clients that lose access now.
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !Placed(rs.rec) {
		if err := rs.move(classOf(rs.rec, old), classOf(rs.rec, rec), rec.Offset, rec.Size); err != nil {
			return Errorf(CodeNoSpace, op, "moving data item {%d, %d} to its new permissions' heap file: %v", rec.RegionID, rec.Offset, err)
		}
	}
	if err := l.store.UpdateItem(rec); err != nil {
		if !Placed(rs.rec) {
			_ = rs.move(classOf(rs.rec, rec), classOf(rs.rec, old), rec.Offset, rec.Size)
		}
		return storeErr(op, "data item", rec.Name, err)
	}
	return nil
}

// refresh recomputes the view from the catalogue in one critical section,
// so that two racing refreshes cannot publish their views out of order.
// Embedded views have no key; stale is ignored.
func (l *local) refresh(it *Item, op string, _ *transport.Key) error {
	f := it.f
	f.mu.Lock()
	var err error
	if it.state.Load() != stateOpen {
		err = Errorf(CodeInvalid, op, "data item handle was released")
	} else if rec, rerr := l.store.ItemAt(it.g.RegionID, it.g.Offset); rerr != nil || rec.Gen != it.inc {
		err = Errorf(CodeNotFound, op, "data item {%d, %d} no longer exists", it.g.RegionID, it.g.Offset)
	} else if v, verr := l.makeViewLocked(f, rec); verr != nil {
		err = Errorf(CodeResource, op, "%v", verr)
	} else {
		it.view.Store(v)
		l.remapMaps(it, v)
	}
	f.mu.Unlock()
	it.fire()
	return err
}

// remapMaps points the handle's fam_map mappings at the heap file of view
// v, in place and with v's rights: a permission change moves the item's
// bytes to another file (see storage.go), and an address the program got
// from fam_map must keep showing the item. Caller holds f.mu.
func (l *local) remapMaps(it *Item, v *itemView) {
	if v.heap == nil {
		return
	}
	v.rs.mu.Lock()
	defer v.rs.mu.Unlock()
	if v.heap.file == nil {
		return
	}
	prot := unix.PROT_READ
	if v.rights&RightWrite != 0 {
		prot |= unix.PROT_WRITE
	}
	lo := it.g.Offset &^ (4096 - 1)
	it.wmu.Lock()
	defer it.wmu.Unlock()
	for _, m := range it.maps {
		_, _ = unix.MmapPtr(int(v.heap.file.Fd()), int64(lo), unsafe.Pointer(&m[0]), uintptr(len(m)),
			prot, unix.MAP_SHARED|unix.MAP_FIXED)
	}
}

// closeView and dropView: embedded views hold nothing of their own (the
// region's mappings live until Finalize).
func (l *local) closeView(*itemView) {}
func (l *local) dropView(*itemView)  {}

func (l *local) mapItem(it *Item, op string, v *itemView) (m, b []byte, err error) {
	off := it.g.Offset
	if v.heap == nil {
		return nil, nil, Errorf(CodeUnimplemented, op, "fam_map needs the memory on this host; data item {%d, %d} is on memory servers", it.g.RegionID, off)
	}
	v.rs.mu.Lock()
	if v.heap.file == nil {
		err = unix.EBADF
	} else {
		m, b, err = mapRange(int(v.heap.file.Fd()), off, v.size, v.rights)
	}
	v.rs.mu.Unlock()
	if err != nil {
		return nil, nil, Errorf(CodeMemory, op, "mapping data item {%d, %d}: %v", it.g.RegionID, off, err)
	}
	return m, b, nil
}

func (l *local) copier(op string, src *Item, sv *itemView, srcOff uint64, dst *Item, dv *itemView, dstOff, n uint64) (func() error, error) {
	if sv.mem == nil {
		return nil, src.notHere(op)
	}
	if dv.mem == nil {
		return nil, dst.notHere(op)
	}
	return func() error {
		copy(dv.mem[dstOff:dstOff+n], sv.mem[srcOff:srcOff+n])
		return nil
	}, nil
}

// --- backups ---

func (l *local) backup(f *Fam, op string, it *Item, v *itemView, name, path string) (*Wait, error) {
	src, err := it.contents(op, v)
	if err != nil {
		return nil, err
	}
	rec, err := it.record(op)
	if err != nil {
		return nil, err
	}
	reg, err := l.store.RegionByID(rec.RegionID)
	if err != nil {
		return nil, Errorf(CodeNotFound, op, "region %d of the data item no longer exists", rec.RegionID)
	}
	mode, uid, gid := effective(reg, rec)
	if _, err := os.Lstat(path); err == nil {
		return nil, Errorf(CodeExists, op, "backup %q already exists (backup names are shared by all users)", name)
	}
	h := backupHeader{Version: backupVersion, Name: name, Size: rec.Size, Mode: mode, UID: uid, GID: gid,
		Item: rec.Name, Created: time.Now().UnixNano()}
	return f.def.start(func() error {
		if err := writeBackup(path, h, src); err != nil {
			if errors.Is(err, os.ErrExist) {
				return Errorf(CodeExists, op, "backup %q already exists (it appeared meanwhile)", name)
			}
			return Errorf(CodeBackupNotCreated, op, "backup %q: %v", name, err)
		}
		return nil
	}), nil
}

func (l *local) restore(f *Fam, op, name string, dst *Item, v *itemView) (*Wait, error) {
	if v.mem == nil && !v.placed() {
		return nil, dst.notHere("restore")
	}
	fl, h, err := f.readableBackup(op, name)
	if err != nil {
		return nil, err
	}
	if h.Size > v.size {
		fl.Close()
		return nil, Errorf(CodeOutOfRange, op, "backup %q holds %d bytes; the data item has only %d", name, h.Size, v.size)
	}
	return f.def.start(func() error {
		defer fl.Close()
		if err := dst.fill(v, fl, h.Size); err != nil {
			return Errorf(CodeBackupNotFound, op, "reading backup %q: %v", name, err)
		}
		return nil
	}), nil
}

func (l *local) restoreNew(f *Fam, op, name string, r *Region, itemName string, mode uint32) (*Wait, *Item, error) {
	fl, h, err := f.readableBackup(op, name)
	if err != nil {
		return nil, nil, err
	}
	it, err := r.Allocate(itemName, h.Size, mode)
	if err != nil {
		fl.Close()
		return nil, nil, err
	}
	// The restore writes the bytes whatever the new item's mode: its
	// creator put them there, as fam_allocate's zeroes are.
	v := it.view.Load()
	if v.mem == nil && !v.placed() {
		fl.Close()
		_ = it.Deallocate()
		return nil, nil, it.notHere("restore")
	}
	w := f.def.start(func() error {
		defer fl.Close()
		if err := it.fill(v, fl, h.Size); err != nil {
			return Errorf(CodeBackupNotFound, op, "reading backup %q: %v", name, err)
		}
		return nil
	})
	return w, it, nil
}

func (l *local) deleteBackup(f *Fam, op, name, path string) (*Wait, error) {
	backupMu.Lock()
	defer backupMu.Unlock()
	fl, h, err := f.openBackup(op, name)
	if err != nil {
		return nil, err
	}
	defer fl.Close()
	if h.UID != f.uid && f.backupRights(h)&RightWrite == 0 {
		return nil, Errorf(CodeNoPerm, op, "only the owner (uid %d) or a writer of backup %q may delete it (mode %#o)", h.UID, name, h.Mode)
	}
	// The file checked is the file removed: names are only ever removed
	// under backupMu, and link never replaces one.
	if err := os.Remove(path); err != nil {
		return nil, Errorf(CodeBackupNotFound, op, "deleting backup %q: %v", name, err)
	}
	return f.def.start(func() error { return nil }), nil
}

func (l *local) listBackups(f *Fam, op, prefix string) (string, error) {
	ents, err := os.ReadDir(l.opts.BackupDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", Errorf(CodeResource, op, "%v", err)
	}
	var lines []string
	for _, e := range ents {
		n, ok := strings.CutSuffix(e.Name(), backupSuffix)
		if !ok || !strings.HasPrefix(n, prefix) || !e.Type().IsRegular() {
			continue
		}
		fl, h, err := readBackupHeader(filepath.Join(l.opts.BackupDir, e.Name()))
		if err != nil {
			continue
		}
		fl.Close()
		if f.backupRights(h)&RightRead == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %d %#o %d %d %s", n, h.Size, h.Mode, h.UID, h.GID,
			time.Unix(0, h.Created).UTC().Format(time.RFC3339)))
	}
	sort.Strings(lines)
	if len(lines) == 0 {
		return "", nil
	}
	return strings.Join(lines, "\n") + "\n", nil
}

// --- listings ---

func (l *local) listRegions(f *Fam, _ string, visible bool) ([]metadata.Region, error) {
	var recs []metadata.Region
	for _, rec := range l.store.Regions() {
		if !visible || rightsFor(rec.Mode, rec.UID, rec.GID, f.uid, f.gid) != 0 {
			recs = append(recs, rec)
		}
	}
	return recs, nil
}

func (l *local) listItems(f *Fam, op string, rec metadata.Region) (map[uint64]Stat, error) {
	if rightsFor(rec.Mode, rec.UID, rec.GID, f.uid, f.gid) == 0 {
		return nil, Errorf(CodeNoPerm, op, "no read or write permission on region %q", rec.Name)
	}
	out := map[uint64]Stat{}
	for _, it := range l.store.Items(rec.ID) {
		out[it.Offset] = Stat{Size: it.Size, Mode: it.Mode, Name: it.Name, UID: it.UID, GID: it.GID,
			NumServers: uint64(len(rec.Servers)), InterleaveSize: interleaveOf(rec), Servers: append([]uint64(nil), rec.Servers...)}
	}
	return out, nil
}
