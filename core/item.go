package core

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/metadata"
	"github.com/gofam/openfam/core/transport"
)

// Item is a handle on a data item (fam_desc_t). Several handles may name one
// item; each is released by Close, Deallocate or Finalize.
type Item struct {
	f     *Fam
	g     GlobalDesc
	state atomic.Int32
	view  atomic.Pointer[itemView]
	// inc is the incarnation (metadata.Item.Gen) the handle is bound to,
	// set before the handle is published as open and never changed: a
	// new item at the same offset is another item (see handles.go).
	inc uint64
	// hprev and hnext link the open handles of one incarnation, the first
	// in Fam.items (see handles.go). Guarded by Fam.mu.
	hprev, hnext *Item

	// pdirty: the item is on the instance's dirty list (persist.go).
	pdirty atomic.Bool

	wmu   sync.Mutex // watch and maps
	watch func()
	maps  map[uintptr][]byte // fam_map mappings by item address -> whole mapping
}

// itemView is what the data path needs, replaced as a whole (never
// mutated) when rights or the region's mapping change.
type itemView struct {
	mem    []byte // the item's bytes mapped in this process; nil if only remote
	size   uint64
	rights Rights
	rs     *regionState // embedded only
	heap   *heapFile    // embedded, not placed: the class file mem lies in

	// Served by famd: the item's key, and the whole mapping mem lies in (to
	// unmap when the view is dropped) when famd passed the heap file.
	key     transport.Key
	mapping []byte
	// shared: mapping is the instance's, shared with other views of the
	// same pages (remote.mapShared), and is never unmapped with this view.
	shared bool
	// dp serves the bytes when mem is nil: famd's data plane, or a
	// stripedPlane over the memory servers of a placed region (striped
	// is then set). nil in the instance that only keeps a placed item's
	// catalogue (famd's metadata service).
	dp      DataPlane
	striped bool
	// persist: the item's region is persistent (see persist.go).
	persist bool
}

// plane returns the data plane serving v, or the error of an instance
// that cannot reach the item's bytes.
func (it *Item) plane(op string, v *itemView) (DataPlane, error) {
	if v.dp == nil {
		return nil, it.notHere(op)
	}
	return v.dp, nil
}

// effective returns the mode and owner that govern an item: its region's
// with region-level permissions, its own otherwise.
func effective(reg metadata.Region, it metadata.Item) (mode, uid, gid uint32) {
	if PermLevel(reg.PermLevel) == PermDataItem {
		return it.Mode, it.UID, it.GID
	}
	return reg.Mode, reg.UID, reg.GID
}

// Allocate makes a data item of n bytes in the region, owned by the caller
// with the given mode bits, and returns a handle on it. name "" makes an
// unnamed item, reachable only through its global descriptor. The bytes
// start zeroed. The caller needs write permission on the region. Errors:
// CodeInvalid (also a mode with bits outside 0777 or a path-like name),
// CodeNameTooLong, CodeExists (name taken in this region),
// CodeNoSpace (no free block large enough), CodeNoPerm.
func (r *Region) Allocate(name string, n uint64, mode uint32) (*Item, error) {
	const op = "fam_allocate"
	if err := checkMode(op, mode); err != nil {
		return nil, err
	}
	if name != "" {
		if err := checkName(op, "data item", name); err != nil {
			return nil, err
		}
	}
	if n == 0 {
		return nil, Errorf(CodeInvalid, op, "data item size is 0")
	}
	if err := r.usable(op); err != nil {
		return nil, err
	}
	// The backend checks the region and the caller's rights: famd does
	// it itself, and asking for the region's record first would cost a
	// round trip more.
	defer r.f.creation()()
	it, err := r.f.b.allocate(r.f, op, r, name, n, mode&0o777)
	if err == nil {
		r.state.CompareAndSwap(stateLazy, stateOpen)
	}
	return it, err
}

// Lookup returns a handle on the item called item in the region called
// region. The caller needs read or write permission on the item. Errors:
// CodeNotFound, CodeNoPerm, CodeInvalid, CodeNameTooLong.
func (f *Fam) Lookup(item, region string) (*Item, error) {
	const op = "fam_lookup"
	if err := f.check(op); err != nil {
		return nil, err
	}
	if err := checkName(op, "data item", item); err != nil {
		return nil, err
	}
	if err := checkName(op, "region", region); err != nil {
		return nil, err
	}
	defer f.creation()()
	return f.b.lookup(f, op, item, region)
}

// ItemFromGlobal returns a handle on the item named by g, possibly made by
// another process. It is resolved and permission-checked on first use, which
// fails with CodeNotFound or CodeNoPerm as Lookup would. It binds to the
// item at g when first resolved, and from then on to that item only: once
// that item is deallocated the handle is released, even if a new item takes
// its offset.
func (f *Fam) ItemFromGlobal(g GlobalDesc) (*Item, error) {
	const op = "fam_desc_from_global"
	if err := f.check(op); err != nil {
		return nil, err
	}
	if g.Offset == RegionOffset {
		return nil, Errorf(CodeInvalid, op, "global descriptor {%d, region} names a region, not a data item", g.RegionID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return nil, f.check(op)
	}
	it := &Item{f: f, g: g}
	it.state.Store(stateLazy)
	f.lazy[it] = struct{}{}
	return it, nil
}

// resolve turns a lazy handle into an open one.
func (it *Item) resolve(op string) error {
	f := it.f
	f.mu.Lock()
	defer f.mu.Unlock()
	switch it.state.Load() {
	case stateOpen:
		return nil
	case stateClosed:
		return Errorf(CodeInvalid, op, "data item handle was released (closed, deallocated or finalized)")
	}
	// Under f.mu, a call to famd included: resolving is rare and this
	// keeps two threads from resolving one handle twice.
	v, rec, err := f.b.resolveLocked(f, op, it.g)
	if err != nil {
		return err
	}
	if v.rights == 0 {
		return Errorf(CodeNoPerm, op, "no read or write permission on data item {%d, %d}", it.g.RegionID, it.g.Offset)
	}
	it.view.Store(v)
	delete(f.lazy, it)
	it.inc = rec.Gen
	f.bindLocked(it)
	it.state.Store(stateOpen)
	return nil
}

// use returns the handle's view after checking it is usable and has need.
// This is the data path's only gate, so it stays short.
func (it *Item) use(op string, need Rights) (*itemView, error) {
	if it == nil {
		return nil, Errorf(CodeInvalid, op, "data item handle is NULL")
	}
	for {
		switch it.state.Load() {
		case stateOpen:
			v := it.view.Load()
			// need == 0 (deallocate, chmod, ...) reads nothing of the
			// view: with a million handles it is one more cache miss.
			if need != 0 && v.rights&need != need {
				return nil, Errorf(CodeNoPerm, op, "%s permission denied on data item {%d, %d}", needWord(need), it.g.RegionID, it.g.Offset)
			}
			return v, nil
		case stateLazy:
			if err := it.f.check(op); err != nil {
				return nil, err
			}
			if err := it.resolve(op); err != nil {
				return nil, err
			}
		default:
			if err := it.f.check(op); err != nil {
				return nil, err
			}
			return nil, Errorf(CodeInvalid, op, "data item handle was released (closed, deallocated or finalized)")
		}
	}
}

func needWord(r Rights) string {
	switch r {
	case RightRead:
		return "read"
	case RightWrite:
		return "write"
	}
	return "read and write"
}

// record returns the item's metadata, resolving the handle.
func (it *Item) record(op string) (metadata.Item, error) {
	if _, err := it.use(op, 0); err != nil {
		return metadata.Item{}, err
	}
	return it.f.b.itemRecord(it, op)
}

// Global returns the item's global descriptor.
func (it *Item) Global() (GlobalDesc, error) {
	if it == nil {
		return GlobalDesc{}, Errorf(CodeInvalid, "fam_desc_global", "data item handle is NULL")
	}
	if err := it.f.check("fam_desc_global"); err != nil {
		return GlobalDesc{}, err
	}
	if it.state.Load() == stateClosed {
		return GlobalDesc{}, Errorf(CodeInvalid, "fam_desc_global", "data item handle was released")
	}
	return it.g, nil
}

// Stat describes the item (Attr is zero, as in OpenFAM).
func (it *Item) Stat() (Stat, error) {
	const op = "fam_stat"
	rec, err := it.record(op)
	if err != nil {
		return Stat{}, err
	}
	reg, err := it.f.b.regionRecord(it.f, op, rec.RegionID, false)
	if err != nil {
		return Stat{}, Errorf(CodeNotFound, op, "region %d no longer exists", rec.RegionID)
	}
	return Stat{Size: rec.Size, Mode: rec.Mode, Name: rec.Name, UID: rec.UID, GID: rec.GID,
		NumServers: uint64(len(reg.Servers)), InterleaveSize: interleaveOf(reg),
		Servers: append([]uint64(nil), reg.Servers...)}, nil
}

// Close releases this handle; the item stays.
func (it *Item) Close() error {
	const op = "fam_close"
	if it == nil {
		return Errorf(CodeInvalid, op, "data item handle is NULL")
	}
	if err := it.f.check(op); err != nil {
		return err
	}
	f := it.f
	f.mu.Lock()
	if it.state.Load() == stateClosed {
		f.mu.Unlock()
		return Errorf(CodeInvalid, op, "data item handle was already released")
	}
	if it.state.Swap(stateClosed) == stateOpen {
		f.unbindLocked(it)
	}
	delete(f.lazy, it)
	f.mu.Unlock()
	// Writes made through this handle stay due at the next quiet, which
	// cannot reach a famd-served item through a released key: now, then.
	it.flushOnRelease()
	if v := it.view.Load(); v != nil {
		f.b.closeView(v)
	}
	it.unmapAll()
	it.fire()
	return nil
}

// Deallocate frees the item's memory and name and releases every handle on
// it. The caller must own the item or have write permission on its region.
func (it *Item) Deallocate() error {
	const op = "fam_deallocate"
	if _, err := it.use(op, 0); err != nil {
		return err
	}
	f := it.f
	if err := f.b.deallocate(it, op); err != nil {
		return err
	}
	var buf [2]*Item // usually one handle: no allocation
	f.mu.Lock()
	notify := f.closeIncarnationIntoLocked(it.key(), buf[:0])
	f.mu.Unlock()
	release(notify)
	return nil
}

// ChangePermissions sets the item's mode bits. Only its owner may; bits
// outside 0777 fail with CodeInvalid. Every open handle on the item sees
// the new rights at once.
func (it *Item) ChangePermissions(mode uint32) error {
	const op = "fam_change_permissions"
	if err := checkMode(op, mode); err != nil {
		return err
	}
	if _, err := it.use(op, 0); err != nil {
		return err
	}
	// The backend checks ownership where the record is: through famd, a
	// record fetched here first would be a round trip famd's own check
	// makes redundant (issue 18).
	return it.f.b.changeItemPermissions(it, op, mode&0o777)
}

// renewHandles gives every open handle of it's incarnation a view with its
// new rights and mapping after a permission change, best effort: a handle
// that cannot be renewed finds out at its next use.
func (f *Fam) renewHandles(it *Item, op string) {
	f.mu.Lock()
	notify := f.incarnationItemsLocked(it.key())
	f.mu.Unlock()
	for _, h := range notify {
		_ = f.b.refresh(h, op, nil)
	}
}

// Watch registers fn to be called, with no library lock held, whenever what
// Local reports may have changed: rights, the region's mapping, or the
// handle's validity. One watcher per handle; the last one set wins.
func (it *Item) Watch(fn func()) {
	it.wmu.Lock()
	it.watch = fn
	it.wmu.Unlock()
}

func (it *Item) fire() {
	it.wmu.Lock()
	fn := it.watch
	it.wmu.Unlock()
	if fn != nil {
		fn()
	}
}

// Local reports where the item's bytes are mapped in this process, for
// callers (the C library) that access them directly. ok is false when the
// handle is released or cannot be resolved. The address stays valid until
// Finalize, but the answer changes (see Watch).
func (it *Item) Local() (base unsafe.Pointer, size uint64, rights Rights, ok bool) {
	if it == nil || it.state.Load() == stateClosed {
		// The C library asks this of every handle a deallocation
		// releases (see Watch): no error message to format for it.
		return nil, 0, 0, false
	}
	v, err := it.use("fam_local", 0)
	if err != nil || len(v.mem) == 0 {
		return nil, 0, 0, false
	}
	return unsafe.Pointer(unsafe.SliceData(v.mem)), uint64(len(v.mem)), v.rights, true
}

// Map maps the item into this process and returns its bytes: writable with
// write permission, read-only otherwise (writing then faults, as with
// mmap). The mapping lives until Unmap, Close, Deallocate or Finalize.
func (it *Item) Map() ([]byte, error) {
	const op = "fam_map"
	v, err := it.use(op, RightRead)
	if err != nil {
		return nil, err
	}
	m, b, err := it.f.b.mapItem(it, op, v)
	if err != nil {
		return nil, err
	}
	it.keepMap(b, m)
	it.f.trackMap(v, m)
	return b, nil
}

// mapRange maps size bytes at offset off of the file fd, MAP_SHARED and
// writable only with write rights. It returns the page-aligned mapping m
// (to unmap later) and the requested bytes b within it.
func mapRange(fd int, off, size uint64, rights Rights) (m, b []byte, err error) {
	const page = 4096
	lo := off &^ (page - 1)
	hi := (off + size + page - 1) &^ (page - 1)
	prot := unix.PROT_READ
	if rights&RightWrite != 0 {
		prot |= unix.PROT_WRITE
	}
	m, err = unix.Mmap(fd, int64(lo), int(hi-lo), prot, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return m, m[off-lo : off-lo+size : off-lo+size], nil
}

// keepMap records mapping m, whose item bytes b were handed out by Map, so
// that Unmap (by b's address), Close and Finalize can remove it.
func (it *Item) keepMap(b, m []byte) {
	it.wmu.Lock()
	if it.maps == nil {
		it.maps = map[uintptr][]byte{}
	}
	it.maps[uintptr(unsafe.Pointer(unsafe.SliceData(b)))] = m
	it.wmu.Unlock()
}

// Unmap removes a mapping made by Map; p is the address of its first byte.
// Errors: CodeInvalid if p is not a live mapping of this handle.
func (it *Item) Unmap(p unsafe.Pointer) error {
	const op = "fam_unmap"
	if it == nil {
		return Errorf(CodeInvalid, op, "data item handle is NULL")
	}
	if err := it.f.check(op); err != nil {
		return err
	}
	it.wmu.Lock()
	m, ok := it.maps[uintptr(p)]
	delete(it.maps, uintptr(p))
	it.wmu.Unlock()
	if !ok {
		return Errorf(CodeInvalid, op, "address %p is not a mapping of this data item made by fam_map", p)
	}
	it.f.untrackMap(m)
	if err := unix.Munmap(m); err != nil {
		return Errorf(CodeMemory, op, "%v", err)
	}
	return nil
}

func (it *Item) unmapAll() {
	it.wmu.Lock()
	maps := it.maps
	it.maps = nil
	it.wmu.Unlock()
	for _, m := range maps {
		it.f.untrackMap(m)
		_ = unix.Munmap(m)
	}
}

// File returns the path of the heap file holding the item and the item's
// byte offset in it, for servers that hand same-host clients a descriptor
// to map (famd). The file holds only items of the same owner, group and
// mode as this one (see storage.go), so a descriptor of it reaches nothing
// its holder may not access. Errors as for any use of the handle.
func (it *Item) File() (path string, offset uint64, err error) {
	v, err := it.use("fam_item_file", 0)
	if err != nil {
		return "", 0, err
	}
	if v.rs == nil {
		return "", 0, Errorf(CodeUnimplemented, "fam_item_file", "the item is served by famd, not this process")
	}
	if v.heap == nil {
		return "", 0, it.notHere("map")
	}
	v.rs.mu.Lock()
	defer v.rs.mu.Unlock()
	if v.heap.file == nil {
		return "", 0, it.notHere("map")
	}
	return v.heap.path, it.g.Offset, nil
}
