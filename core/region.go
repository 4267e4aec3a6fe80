package core

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/gofam/openfam/core/allocator"
	"github.com/gofam/openfam/core/metadata"
)

// Handle states shared by Region and Item.
const (
	stateOpen   int32 = 0
	stateLazy   int32 = 1 // made from a global descriptor, not resolved yet
	stateClosed int32 = 2
)

// Region is a handle on a region (fam_region_t). Several handles may name
// one region; each is released by Close, Destroy or Finalize.
type Region struct {
	f     *Fam
	id    uint64
	state atomic.Int32
}

// CreateRegion creates a region of size bytes owned by the caller with the
// given mode bits. Zero attribute fields take defaults: the instance's
// memory type, interleaving enabled, region-level permissions, no
// redundancy. Errors: CodeInvalid (size 0, bad attributes, a mode with bits
// outside 0777, a path-like name: see checkName), CodeNameTooLong,
// CodeExists, CodeResource (the file could not be made).
func (f *Fam) CreateRegion(name string, size uint64, mode uint32, attr RegionAttr) (*Region, error) {
	const op = "fam_create_region"
	if err := f.check(op); err != nil {
		return nil, err
	}
	if err := checkName(op, "region", name); err != nil {
		return nil, err
	}
	if err := checkMode(op, mode); err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, Errorf(CodeInvalid, op, "region size is 0")
	}
	if size > 1<<46 {
		return nil, Errorf(CodeNoSpace, op, "region size %d exceeds the 64 TiB limit", size)
	}
	if attr.Redundancy > RAID5 || attr.Memory > Persistent || attr.Interleave > InterleaveDisable || attr.PermLevel > PermDataItem {
		return nil, Errorf(CodeInvalid, op, "region attributes out of range: %+v", attr)
	}
	if attr.Memory == MemoryDefault {
		attr.Memory = f.opts.DefaultMemoryType
	}
	if attr.Redundancy == RedundancyDefault {
		attr.Redundancy = RedundancyNone
	}
	if attr.Interleave == InterleaveDefault {
		attr.Interleave = InterleaveEnable
	}
	if attr.PermLevel == PermDefault {
		attr.PermLevel = PermRegion
	}
	if f.remote != nil {
		return f.rCreateRegion(op, name, size, mode&0o777, attr)
	}
	size = (size + allocator.Align - 1) / allocator.Align * allocator.Align
	servers, block := []uint64{0}, uint64(0)
	if f.opts.Placer != nil {
		s, b, err := f.opts.Placer.Place(name, size, attr)
		if err != nil {
			return nil, Errorf(CodeResource, op, "%v", err)
		}
		if s != nil {
			servers = s
		}
		block = b
	}
	if block == 0 {
		// Reported by fam_stat even for a region on one server: OpenFAM
		// programs divide by it to stripe their own work.
		block = DefaultInterleaveSize
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return nil, f.check(op)
	}
	rec, err := f.store.CreateRegion(metadata.Region{
		Name: name, Size: size, Mode: mode & 0o777, UID: f.uid, GID: f.gid,
		Redundancy: uint8(attr.Redundancy), MemoryType: uint8(attr.Memory),
		Interleave: uint8(attr.Interleave), PermLevel: uint8(attr.PermLevel),
		Servers: servers, InterleaveSize: block, Created: time.Now().UnixNano(),
	})
	if err != nil {
		return nil, storeErr(op, "region", name, err)
	}
	if Placed(rec) {
		// The name is taken in the catalogue first so that two creators of
		// one name cannot both make segments.
		if err := f.opts.Placer.Create(rec); err != nil {
			_ = f.store.DeleteRegion(rec.ID)
			return nil, Errorf(CodeRPC, op, "%v", err)
		}
	}
	rs, err := f.openRegion(rec, true)
	if err != nil {
		_ = f.store.DeleteRegion(rec.ID)
		return nil, Errorf(CodeResource, op, "%v", err)
	}
	if err := f.regionDurable(op, rs); err != nil {
		rs.close()
		removeHeapFiles(rs.base)
		_ = f.store.DeleteRegion(rec.ID)
		return nil, err
	}
	f.regions[rec.ID] = rs
	return f.newRegionLocked(rec.ID, stateOpen), nil
}

func (f *Fam) newRegionLocked(id uint64, state int32) *Region {
	r := &Region{f: f, id: id}
	r.state.Store(state)
	set := f.rhandles[id]
	if set == nil {
		set = map[*Region]struct{}{}
		f.rhandles[id] = set
	}
	set[r] = struct{}{}
	return r
}

// LookupRegion returns a handle on the region called name. The caller needs
// read or write permission on it. Errors: CodeNotFound, CodeNoPerm.
func (f *Fam) LookupRegion(name string) (*Region, error) {
	const op = "fam_lookup_region"
	if err := f.check(op); err != nil {
		return nil, err
	}
	if err := checkName(op, "region", name); err != nil {
		return nil, err
	}
	if f.remote != nil {
		return f.rLookupRegion(op, name)
	}
	rec, err := f.store.RegionByName(name)
	if err != nil {
		return nil, storeErr(op, "region", name, err)
	}
	if rightsFor(rec.Mode, rec.UID, rec.GID, f.uid, f.gid) == 0 {
		return nil, Errorf(CodeNoPerm, op, "no read or write permission on region %q (mode %#o)", name, rec.Mode)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return nil, f.check(op)
	}
	return f.newRegionLocked(rec.ID, stateOpen), nil
}

// RegionFromGlobal returns a handle on the region named by g. It is not
// checked until its first use, which fails with CodeNotFound if there is no
// such region.
func (f *Fam) RegionFromGlobal(g GlobalDesc) (*Region, error) {
	const op = "fam_region_from_global"
	if err := f.check(op); err != nil {
		return nil, err
	}
	if g.Offset != RegionOffset {
		return nil, Errorf(CodeInvalid, op, "global descriptor {%d, %d} names a data item, not a region", g.RegionID, g.Offset)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return nil, f.check(op)
	}
	return f.newRegionLocked(g.RegionID, stateLazy), nil
}

// record returns the region's current metadata, checking the handle.
// usable checks the handle itself: not NULL, not released, the instance
// initialized.
func (r *Region) usable(op string) error {
	if r == nil {
		return Errorf(CodeInvalid, op, "region handle is NULL")
	}
	if err := r.f.check(op); err != nil {
		return err
	}
	if r.state.Load() == stateClosed {
		return Errorf(CodeInvalid, op, "region handle was released (closed, destroyed or finalized)")
	}
	return nil
}

func (r *Region) record(op string) (metadata.Region, error) {
	if err := r.usable(op); err != nil {
		return metadata.Region{}, err
	}
	if r.f.remote != nil {
		rec, err := r.f.rRegion(op, r.id)
		if err == nil {
			r.state.CompareAndSwap(stateLazy, stateOpen)
		}
		return rec, err
	}
	rec, err := r.f.store.RegionByID(r.id)
	if err != nil {
		return metadata.Region{}, Errorf(CodeNotFound, op, "region %d no longer exists", r.id)
	}
	if r.state.Load() == stateLazy {
		if rightsFor(rec.Mode, rec.UID, rec.GID, r.f.uid, r.f.gid) == 0 {
			return rec, Errorf(CodeNoPerm, op, "no read or write permission on region %q", rec.Name)
		}
		r.state.CompareAndSwap(stateLazy, stateOpen)
	}
	return rec, nil
}

// Name returns the region's name ("" if the handle is not usable).
func (r *Region) Name() string {
	rec, err := r.record("fam_region_name")
	if err != nil {
		return ""
	}
	return rec.Name
}

// Global returns the region's global descriptor.
func (r *Region) Global() (GlobalDesc, error) {
	if _, err := r.record("fam_region_global"); err != nil {
		return GlobalDesc{}, err
	}
	return GlobalDesc{RegionID: r.id, Offset: RegionOffset}, nil
}

// Stat describes the region.
func (r *Region) Stat() (Stat, error) {
	rec, err := r.record("fam_stat_region")
	if err != nil {
		return Stat{}, err
	}
	return Stat{
		Size: rec.Size, Mode: rec.Mode, Name: rec.Name, UID: rec.UID, GID: rec.GID,
		Attr: RegionAttr{Redundancy: Redundancy(rec.Redundancy), Memory: MemoryType(rec.MemoryType),
			Interleave: Interleave(rec.Interleave), PermLevel: PermLevel(rec.PermLevel)},
		NumServers: uint64(len(rec.Servers)), InterleaveSize: interleaveOf(rec),
		Servers: append([]uint64(nil), rec.Servers...),
	}, nil
}

// Close releases this handle; the region stays.
func (r *Region) Close() error {
	if _, err := r.record("fam_close_region"); err != nil && CodeOf(err) == CodeInvalid {
		return err
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.state.Store(stateClosed)
	if set := r.f.rhandles[r.id]; set != nil {
		delete(set, r)
	}
	return nil
}

// Destroy deletes the region with every item in it and releases every
// handle on it and its items. The caller needs write permission on the
// region.
func (r *Region) Destroy() error {
	const op = "fam_destroy_region"
	rec, err := r.record(op)
	if err != nil {
		return err
	}
	f := r.f
	if f.remote != nil {
		return r.rDestroy(op)
	}
	if rightsFor(rec.Mode, rec.UID, rec.GID, f.uid, f.gid)&RightWrite == 0 {
		return Errorf(CodeNoPerm, op, "no write permission on region %q (mode %#o)", rec.Name, rec.Mode)
	}
	f.mu.Lock()
	if err := f.store.DeleteRegion(r.id); err != nil {
		f.mu.Unlock()
		return storeErr(op, "region", rec.Name, err)
	}
	notify := f.closeItemsLocked(func(g GlobalDesc) bool { return g.RegionID == r.id })
	for h := range f.rhandles[r.id] {
		h.state.Store(stateClosed)
	}
	delete(f.rhandles, r.id)
	rs := f.regions[r.id]
	delete(f.regions, r.id)
	f.mu.Unlock()
	release(notify)
	if Placed(rec) {
		f.opts.Placer.Destroy(rec)
		return nil
	}
	if rs != nil {
		rs.scrub()
		// The scrubbed address ranges stay reserved (for the life of the
		// process, see retire) so that no new mapping can appear where a
		// racing thread still writes.
		f.mu.Lock()
		if f.closed.Load() {
			rs.retire()
		} else {
			f.graveyard = append(f.graveyard, rs)
		}
		f.mu.Unlock()
	}
	// The heap files' pages are freed even while a client still holds a
	// descriptor of one: destroying a region gives its space back.
	removeHeapFiles(f.regionPath(rec))
	return nil
}

// Resize changes the region's size. It may grow freely and shrink down to
// the end of its last item; item offsets never change. The caller needs
// write permission. Errors: CodeInvalid (0, or would cut an item).
func (r *Region) Resize(n uint64) error {
	const op = "fam_resize_region"
	rec, err := r.record(op)
	if err != nil {
		return err
	}
	f := r.f
	if rightsFor(rec.Mode, rec.UID, rec.GID, f.uid, f.gid)&RightWrite == 0 {
		return Errorf(CodeNoPerm, op, "no write permission on region %q (mode %#o)", rec.Name, rec.Mode)
	}
	if n == 0 {
		return Errorf(CodeInvalid, op, "new size is 0")
	}
	if n > 1<<46 {
		return Errorf(CodeNoSpace, op, "region size %d exceeds the 64 TiB limit", n)
	}
	if f.remote != nil {
		return r.rResize(op, n)
	}
	n = (n + allocator.Align - 1) / allocator.Align * allocator.Align
	f.mu.Lock()
	rs, err := f.regionLocked(r.id)
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
		if err := f.opts.Placer.Resize(rec); err != nil {
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
	if err := f.store.UpdateRegion(rec); err != nil {
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
	notify := f.regionItemsLocked(r.id)
	f.mu.Unlock()
	for _, it := range notify {
		it.refresh()
	}
	return nil
}

// ChangePermissions sets the region's mode bits. Only the owner may; bits
// outside 0777 fail with CodeInvalid.
// Open item handles of a region-level region see the new rights at once.
func (r *Region) ChangePermissions(mode uint32) error {
	const op = "fam_change_region_permissions"
	if err := checkMode(op, mode); err != nil {
		return err
	}
	rec, err := r.record(op)
	if err != nil {
		return err
	}
	f := r.f
	if f.remote != nil {
		return r.rChangePermissions(op, mode&0o777)
	}
	if rec.UID != f.uid {
		return Errorf(CodeNoPerm, op, "only the owner (uid %d) may change region %q's permissions", rec.UID, rec.Name)
	}
	old := rec
	rec.Mode = mode & 0o777
	f.mu.Lock()
	rs, err := f.regionLocked(r.id)
	if err != nil {
		f.mu.Unlock()
		return Errorf(CodeResource, op, "%v", err)
	}
	rs.mu.Lock()
	// With region-level permissions every item's access class changes:
	// its bytes move to the new class's heap file (see storage.go).
	var moved []metadata.Item
	if !Placed(rs.rec) && PermLevel(rec.PermLevel) != PermDataItem {
		for _, it := range f.store.Items(r.id) {
			if err := rs.move(classOf(old, it), classOf(rec, it), it.Offset, it.Size); err != nil {
				for _, m := range moved {
					_ = rs.move(classOf(rec, m), classOf(old, m), m.Offset, m.Size)
				}
				rs.mu.Unlock()
				f.mu.Unlock()
				return Errorf(CodeNoSpace, op, "moving the items of region %q to its new permissions' heap file: %v", rec.Name, err)
			}
			moved = append(moved, it)
		}
	}
	if err := f.store.UpdateRegion(rec); err != nil {
		for _, m := range moved {
			_ = rs.move(classOf(rec, m), classOf(old, m), m.Offset, m.Size)
		}
		rs.mu.Unlock()
		f.mu.Unlock()
		return storeErr(op, "region", rec.Name, err)
	}
	rs.rec = rec
	rs.mu.Unlock()
	notify := f.regionItemsLocked(r.id)
	f.mu.Unlock()
	for _, it := range notify {
		it.refresh()
	}
	return nil
}

// Used returns the bytes of the region's items (the sum of their sizes),
// kept up to date by allocation and deallocation so that servers report
// usage without listing every item. It needs no permission beyond a usable
// handle (famd answers for regions the caller may see). An instance served
// by famd does not track it: CodeUnimplemented.
func (r *Region) Used() (uint64, error) {
	const op = "fam_region_used"
	if err := r.usable(op); err != nil {
		return 0, err
	}
	f := r.f
	if f.remote != nil {
		return 0, Errorf(CodeUnimplemented, op, "region usage is kept by famd")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rs, err := f.regionLocked(r.id)
	if err != nil {
		return 0, Errorf(CodeNotFound, op, "region %d: %v", r.id, err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.itemBytes, nil
}

// storeErr turns a metadata error into an *Error with the right code.
func storeErr(op, what, name string, err error) error {
	switch {
	case errors.Is(err, metadata.ErrNotFound):
		return Errorf(CodeNotFound, op, "%s %q not found", what, name)
	case errors.Is(err, metadata.ErrExists):
		return Errorf(CodeExists, op, "%s %q already exists", what, name)
	case errors.Is(err, metadata.ErrClosed):
		return Errorf(CodeInvalid, op, "OpenFAM is not initialized")
	}
	return Errorf(CodeMetadata, op, "%s %q: %v", what, name, err)
}
