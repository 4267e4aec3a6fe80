package core

import (
	"errors"
	"sync/atomic"

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
	id, err := f.b.createRegion(f, op, name, size, mode&0o777, attr)
	if err != nil {
		return nil, err
	}
	return f.bindRegion(op, id, stateOpen)
}

// bindRegion registers a new region handle.
func (f *Fam) bindRegion(op string, id uint64, state int32) (*Region, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return nil, f.check(op)
	}
	return f.newRegionLocked(id, state), nil
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
	id, err := f.b.lookupRegion(f, op, name)
	if err != nil {
		return nil, err
	}
	return f.bindRegion(op, id, stateOpen)
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
	return f.bindRegion(op, g.RegionID, stateLazy)
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
	rec, err := r.f.b.regionRecord(r.f, op, r.id, r.state.Load() == stateLazy)
	if err == nil {
		// The backends act on rec.ID: the handle's, whatever a server
		// echoed.
		rec.ID = r.id
		r.state.CompareAndSwap(stateLazy, stateOpen)
	}
	return rec, err
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
	done, err := f.b.destroyRegion(f, op, rec)
	if err != nil {
		return err
	}
	f.mu.Lock()
	notify := f.closeItemsLocked(func(g GlobalDesc) bool { return g.RegionID == r.id })
	for h := range f.rhandles[r.id] {
		h.state.Store(stateClosed)
	}
	delete(f.rhandles, r.id)
	f.doomLocked(r.id)
	f.mu.Unlock()
	release(notify)
	if done != nil {
		done()
	}
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
	return f.b.resizeRegion(f, op, rec, n)
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
	if err := f.b.changeRegionPermissions(f, op, rec, mode&0o777); err != nil {
		return err
	}
	f.refreshRegionItems(op, r.id)
	return nil
}

// refreshRegionItems gives every open item handle of region id a new view
// (see itemBackend.refresh), after a change to the region.
func (f *Fam) refreshRegionItems(op string, id uint64) {
	f.mu.Lock()
	notify := f.regionItemsLocked(id)
	f.mu.Unlock()
	for _, it := range notify {
		_ = f.b.refresh(it, op, nil)
	}
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
	return r.f.b.regionUsed(r.f, op, r.id)
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
