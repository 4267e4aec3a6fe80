package core

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/metadata"
	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// The methods here make remote the famd-served backend (see backend.go):
// famd checks permissions and keeps the catalogue; this side keeps the
// keys of its item handles and renews them when famd revokes one.

func attrToPB(a RegionAttr) *pb.RegionAttr {
	return &pb.RegionAttr{Redundancy: uint32(a.Redundancy), Memory: uint32(a.Memory),
		Interleave: uint32(a.Interleave), PermLevel: uint32(a.PermLevel)}
}

func (r *remote) createRegion(_ *Fam, op, name string, size uint64, mode uint32, attr RegionAttr) (uint64, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	rep, err := r.cl.CreateRegion(ctx, &pb.CreateRegionRequest{Name: name, Size: size, Mode: mode, Attr: attrToPB(attr)})
	if err := r.famErr(op, rep.GetErr(), err); err != nil {
		return 0, err
	}
	return rep.GetRegion().GetId(), nil
}

func (r *remote) lookupRegion(_ *Fam, op, name string) (uint64, error) {
	req := &pb.LookupRegionRequest{Name: name}
	rep, _, err := ctlCall(r, transport.CtlLookupRegion, req, &pb.RegionReply{}, true,
		func(ctx context.Context) (*pb.RegionReply, error) { return r.cl.LookupRegion(ctx, req) })
	if err := r.famErr(op, rep.GetErr(), err); err != nil {
		return 0, err
	}
	return rep.GetRegion().GetId(), nil
}

// regionRecord fetches a region's record; the permission check, lazy or
// not, is famd's.
func (r *remote) regionRecord(_ *Fam, op string, id uint64, _ bool) (metadata.Region, error) {
	req := &pb.RegionByIDRequest{Id: id}
	rep, _, err := ctlCall(r, transport.CtlRegionByID, req, &pb.RegionReply{}, true,
		func(ctx context.Context) (*pb.RegionReply, error) { return r.cl.RegionByID(ctx, req) })
	if err := r.famErr(op, rep.GetErr(), err); err != nil {
		return metadata.Region{}, err
	}
	return regionFromPB(rep.GetRegion()), nil
}

func (r *remote) reply(op string, rep interface{ GetErr() *pb.FamError }, err error) error {
	return r.famErr(op, rep.GetErr(), err)
}

// destroyRegion leaves nothing to free here: famd frees the memory.
func (r *remote) destroyRegion(_ *Fam, op string, rec metadata.Region) (func(), error) {
	ctx, cancel := r.ctx()
	defer cancel()
	rep, err := r.cl.DestroyRegion(ctx, &pb.RegionByIDRequest{Id: rec.ID})
	return nil, r.reply(op, rep, err)
}

// resizeRegion leaves the handles' views to famd's revocation events:
// famd revokes the keys of a resized region's items.
func (r *remote) resizeRegion(_ *Fam, op string, rec metadata.Region, n uint64) error {
	ctx, cancel := r.ctx()
	defer cancel()
	rep, err := r.cl.ResizeRegion(ctx, &pb.ResizeRegionRequest{Id: rec.ID, Size: n})
	return r.reply(op, rep, err)
}

func (r *remote) changeRegionPermissions(_ *Fam, op string, rec metadata.Region, mode uint32) error {
	ctx, cancel := r.ctx()
	defer cancel()
	rep, err := r.cl.ChangeRegionPermissions(ctx, &pb.ChangeRegionPermissionsRequest{Id: rec.ID, Mode: mode})
	return r.reply(op, rep, err)
}

func (r *remote) regionUsed(_ *Fam, op string, _ uint64) (uint64, error) {
	return 0, Errorf(CodeUnimplemented, op, "region usage is kept by famd")
}

// openView turns an item reply into a view: the key for the data plane
// and, when famd is on this host, a mapping of the item made from the heap
// file famd passes (read-only without write permission).
func (r *remote) openView(ii *pb.ItemInfo) (*itemView, metadata.Item, error) {
	return r.openViewFD(ii, nil)
}

// openViewFD is openView mapping the item from fd, the descriptor famd
// passed with the reply, when there is one (see ctlCall); it closes fd.
func (r *remote) openViewFD(ii *pb.ItemInfo, fd *ctlFD) (*itemView, metadata.Item, error) {
	defer fd.close()
	rec := itemFromPB(ii)
	key, ok := keyOf(ii.GetKey())
	if !ok {
		return nil, rec, Errorf(CodeRPC, "fam_lookup", "famd sent a malformed item key")
	}
	v := &itemView{size: rec.Size, rights: Rights(ii.GetRights()), key: key, dp: r.data(),
		persist: ii.GetMemoryType() == uint32(Persistent)}
	if srv := ii.GetServers(); len(srv) > 0 && srv[0] != 0 {
		sp, err := r.stripes(ii)
		if err != nil {
			return nil, rec, err
		}
		v.dp, v.striped = sp, true
		if ii.GetRedundancy() >= uint32(RAID1) {
			// raid.go: RAID1 and RAID5 items (issue 16).
			if v.dp, err = r.redundant(ii); err != nil {
				return nil, rec, err
			}
		}
		return v, rec, nil
	}
	if fd != nil && v.rights&RightRead != 0 && fd.size == v.size {
		if m, b, ok := r.mapShared(fd, v.rights); ok {
			v.mem, v.mapping, v.shared = b, m, true
		}
		return v, rec, nil
	}
	if !itemMaps.take() {
		// Served through the data plane instead (see itemMaps).
		return v, rec, nil
	}
	if r.unix && v.rights&RightRead != 0 {
		if m, b, err := r.mapKey(key, v.rights); err == nil {
			v.mem, v.mapping = b, m
		}
	}
	if v.mapping == nil {
		itemMaps.give()
	}
	return v, rec, nil
}

// itemMaps bounds the mappings of famd-served items this process keeps.
// Each is one kernel memory area, and they are never unmapped while
// another thread may copy through them (a closed handle's stays, scrubbed,
// for the life of the process: see closeView and scrubMapping). Past the
// kernel's limit (vm.max_map_count, 65530 by default) every mmap fails,
// the Go runtime's own included, which kills the program (issue 18: a
// client holding 30,000 items of famd died allocating its heap). Items
// beyond the budget are served through famd's data plane, as an item on
// another host is.
var itemMaps = newMapBudget(maxMapCount() / 2)

// mapBudget counts mappings against a limit.
type mapBudget struct {
	limit int64
	used  atomic.Int64
}

func newMapBudget(limit int64) *mapBudget { return &mapBudget{limit: limit} }

// take reserves one mapping; false when the budget is spent.
func (b *mapBudget) take() bool {
	if b.used.Add(1) > b.limit {
		b.used.Add(-1)
		return false
	}
	return true
}

// give returns a mapping reserved by take that was not made or was
// unmapped.
func (b *mapBudget) give() { b.used.Add(-1) }

// mapID names the pages of a file mapped with a protection: the file by
// device and inode (a mapping holds its inode, so no other file takes its
// number while the mapping lives), the pages by their byte range.
type mapID struct {
	dev, ino uint64
	lo, hi   uint64
	write    bool
}

// mapShared maps the item bytes famd passed the descriptor of, reusing the
// instance's mapping of the same pages of the same file with the same
// protection when there is one: such a mapping shows exactly what a new
// one would (both are shared mappings of the file), and mappings are kept
// until Finalize anyway (see closeView), so a program looking up and
// closing items in a loop made one more memory area per fam_lookup, and
// paid an mmap(2) for it, until the budget (itemMaps) ran out and later
// items were no longer mapped at all (issue 19). It returns the whole
// mapping and the item's bytes in it; ok is false when the item is not
// mapped (the budget is spent, or the mapping failed).
func (r *remote) mapShared(fd *ctlFD, rights Rights) (m, b []byte, ok bool) {
	var st unix.Stat_t
	if err := unix.Fstat(int(fd.f.Fd()), &st); err != nil {
		return nil, nil, false
	}
	const page = 4096
	id := mapID{dev: uint64(st.Dev), ino: st.Ino, lo: fd.off &^ (page - 1),
		hi: (fd.off + fd.size + page - 1) &^ (page - 1), write: rights&RightWrite != 0}
	item := func(m []byte) []byte { return m[fd.off-id.lo : fd.off-id.lo+fd.size : fd.off-id.lo+fd.size] }
	r.smu.Lock()
	m = r.shared[id]
	r.smu.Unlock()
	if m != nil {
		return m, item(m), true
	}
	if !itemMaps.take() {
		// Served through the data plane instead (see itemMaps).
		return nil, nil, false
	}
	m, _, err := mapRange(int(fd.f.Fd()), fd.off, fd.size, rights)
	if err != nil {
		itemMaps.give()
		return nil, nil, false
	}
	r.smu.Lock()
	if cur := r.shared[id]; cur != nil {
		// Another thread mapped the same pages meanwhile: use its
		// mapping; this one was never handed out.
		r.smu.Unlock()
		if unix.Munmap(m) == nil {
			itemMaps.give()
		}
		return cur, item(cur), true
	}
	if r.shared == nil {
		r.shared = map[mapID][]byte{}
	}
	r.shared[id] = m
	r.smu.Unlock()
	return m, item(m), true
}

// maxMapCount is the kernel's limit on a process's memory areas.
func maxMapCount() int64 {
	const dflt = 65530
	data, err := os.ReadFile("/proc/sys/vm/max_map_count")
	if err != nil {
		return dflt
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n <= 0 {
		return dflt
	}
	return n
}

// mapKey maps an item from the descriptor famd passes over the Unix
// socket. It returns the whole mapping and the item's bytes within it.
func (r *remote) mapKey(key transport.Key, rights Rights) (m, b []byte, err error) {
	fl, off, size, _, err := r.data().OpenFD(key)
	if err != nil {
		return nil, nil, err
	}
	defer fl.Close()
	return mapRange(int(fl.Fd()), off, size, rights)
}

// newItem binds a handle to the item famd answered with.
func (r *remote) newItem(f *Fam, op string, rep *pb.ItemReply, fd *ctlFD, err error) (*Item, error) {
	if err := r.famErr(op, rep.GetErr(), err); err != nil {
		fd.close()
		return nil, err
	}
	v, rec, err := r.openViewFD(rep.GetItem(), fd)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	it, err := f.bindItemLocked(op, rec, v)
	f.mu.Unlock()
	if err != nil {
		r.discard(v)
	}
	return it, err
}

func (r *remote) allocate(f *Fam, op string, reg *Region, name string, n uint64, mode uint32) (*Item, error) {
	req := &pb.AllocateRequest{RegionId: reg.id, Name: name, Size: n, Mode: mode}
	rep, fd, err := ctlCall(r, transport.CtlAllocate, req, &pb.ItemReply{}, false,
		func(ctx context.Context) (*pb.ItemReply, error) { return r.cl.Allocate(ctx, req) })
	return r.newItem(f, op, rep, fd, err)
}

func (r *remote) lookup(f *Fam, op, item, region string) (*Item, error) {
	req := &pb.LookupRequest{Item: item, Region: region}
	rep, fd, err := ctlCall(r, transport.CtlLookup, req, &pb.ItemReply{}, true,
		func(ctx context.Context) (*pb.ItemReply, error) { return r.cl.Lookup(ctx, req) })
	return r.newItem(f, op, rep, fd, err)
}

func (r *remote) resolveLocked(_ *Fam, op string, g GlobalDesc) (*itemView, metadata.Item, error) {
	return r.itemAt(op, g)
}

// itemAt resolves a lazy handle or renews a stale key through ItemAt. It
// returns whatever item is at g now, with its incarnation in the record;
// renewing callers check that it is theirs.
func (r *remote) itemAt(op string, g GlobalDesc) (*itemView, metadata.Item, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	rep, err := r.cl.ItemAt(ctx, &pb.ItemAtRequest{RegionId: g.RegionID, Offset: g.Offset})
	if err := r.famErr(op, rep.GetErr(), err); err != nil {
		return nil, metadata.Item{}, err
	}
	return r.openView(rep.GetItem())
}

// refresh replaces the handle's view by a new key's (famd restarted, or
// permissions changed). It fails with CodeNotFound when the handle's item
// is gone, even if another item now occupies its offset: a handle never
// moves to a different item. With stale set it renews only a handle that
// still uses that key: a thread of this program may have renewed it
// meanwhile (its own chmod does), and renewing again would withdraw the
// key that thread is about to use.
func (r *remote) refresh(it *Item, op string, stale *transport.Key) error {
	if it.state.Load() != stateOpen {
		return Errorf(CodeInvalid, op, "data item handle was released")
	}
	v, rec, err := r.itemAt(op, it.g)
	if err != nil {
		return err
	}
	f := it.f
	f.mu.Lock()
	// The handle may have been released while famd answered; the view is
	// published, and the key index updated, only for a handle still open.
	open := it.state.Load() == stateOpen
	if !open || rec.Gen != it.inc {
		f.mu.Unlock()
		r.discard(v)
		if !open {
			return Errorf(CodeInvalid, op, "data item handle was released")
		}
		return Errorf(CodeNotFound, op, "data item {%d, %d} was deallocated (another item now occupies its offset)", it.g.RegionID, it.g.Offset)
	}
	if cur := it.view.Load(); stale != nil && (cur == nil || cur.key != *stale) {
		f.mu.Unlock()
		r.discard(v)
		return nil
	}
	old := it.view.Swap(v)
	if old != nil {
		f.unindexKeyLocked(it, old.key)
	}
	f.indexKeyLocked(it, v.key)
	f.mu.Unlock()
	// The C fast path learns of the new view first: telling famd the old
	// key is done with is a round trip, during which the fast path would
	// still use the old mapping (whose bytes may have moved to another
	// heap file).
	it.fire()
	r.remapMaps(it, v)
	if old != nil {
		r.closeView(old)
	}
	return nil
}

// remapMaps points the handle's fam_map mappings, in place, at the file
// famd passes for view v: a permission change moves the item's bytes to
// another heap file (spec/wire.md section 9), and an address the program
// got from fam_map must keep showing the item. Without a descriptor (no
// read right any more) the old mappings stay, showing the zeroed bytes.
func (r *remote) remapMaps(it *Item, v *itemView) {
	it.wmu.Lock()
	n := len(it.maps)
	it.wmu.Unlock()
	if n == 0 || !r.unix || v.striped || v.rights&RightRead == 0 {
		return
	}
	fl, off, _, _, err := r.data().OpenFD(v.key)
	if err != nil {
		return
	}
	defer fl.Close()
	prot := unix.PROT_READ
	if v.rights&RightWrite != 0 {
		prot |= unix.PROT_WRITE
	}
	lo := off &^ (4096 - 1)
	it.wmu.Lock()
	defer it.wmu.Unlock()
	for _, m := range it.maps {
		_, _ = unix.MmapPtr(int(fl.Fd()), int64(lo), unsafe.Pointer(&m[0]), uintptr(len(m)), prot, unix.MAP_SHARED|unix.MAP_FIXED)
	}
}

// discard gives back a view that was never published: famd forgets its
// key, and its mapping, which no other thread can be using, goes at once.
func (r *remote) discard(v *itemView) {
	r.closeKey(v.key)
	if v.mapping != nil && !v.shared {
		if unix.Munmap(v.mapping) == nil {
			itemMaps.give()
		}
	}
}

// closeKey tells famd a key is no longer used, best effort: queued on the
// data plane to go out with the next call where famd serves control calls
// there (so fam_close does not wait), else one call.
func (r *remote) closeKey(key transport.Key) {
	if r.closeKeyAsync(key) {
		return
	}
	req := &pb.KeyRequest{Key: key[:]}
	_, _, _ = ctlCall(r, transport.CtlCloseItem, req, &pb.Reply{}, true,
		func(ctx context.Context) (*pb.Reply, error) { return r.cl.CloseItem(ctx, req) })
}

// closeView tells famd a key is no longer used, best effort. The mapping
// of the old view stays until Finalize: another thread may still be
// copying through it.
func (r *remote) closeView(v *itemView) {
	if v.size == 0 {
		return // never had a key of its own
	}
	r.closeKey(v.key)
	r.dropView(v)
}

// dropView keeps the mapping of a view famd has dropped already (its item
// or region is gone) for Finalize to retire.
func (r *remote) dropView(v *itemView) {
	if v.mapping != nil && !v.shared {
		r.smu.Lock()
		r.staleMaps = append(r.staleMaps, v.mapping)
		r.smu.Unlock()
	}
}

// remoteData runs a data-plane operation, renewing the key once if famd no
// longer knows it.
func (it *Item) remoteData(op string, fn func(v *itemView) error) error {
	err := fn(it.view.Load())
	if err == nil {
		// Every small get, put and atomic returns here: the checks
		// below are for failures.
		return nil
	}
	if errors.Is(err, transport.ErrStaleKey) {
		// Only a famd-served view has a key to go stale.
		if rerr := it.f.b.refresh(it, op, nil); rerr != nil {
			return rerr
		}
		// Even if the renewed view is mapped here, famd serves the same
		// bytes, so finishing this call remotely is correct.
		err = fn(it.view.Load())
	}
	if sp, ok := it.view.Load().dp.(*stripedPlane); ok && errors.Is(err, transport.ErrUnavailable) {
		// A memory server may have come back at a new address: the next
		// call asks the metadata service again.
		sp.r.forgetMems()
	} else if errors.Is(err, transport.ErrUnavailable) {
		renewFabric(it, op) // fabricplane.go
	}
	return dataErr(op, err)
}

// keyed makes a control call that names the item by its key. famd may have
// revoked the key since this handle got it (another program changed the
// permissions, famd restarted), which it answers like a denial: the key is
// then renewed once, re-running the permission check, and the call made
// again, as the data path does. A real denial is answered the same way
// twice.
func keyed[R interface{ GetErr() *pb.FamError }](r *remote, it *Item, op string, call func(key []byte) (R, error)) (R, error) {
	v := it.view.Load()
	rep, err := call(v.key[:])
	if err != nil || rep.GetErr().GetCode() != int32(CodeNoPerm) {
		return rep, err
	}
	if rerr := r.refresh(it, op, &v.key); rerr != nil {
		if CodeOf(rerr) == CodeNoPerm {
			return rep, err
		}
		var zero R
		return zero, rerr
	}
	return call(it.view.Load().key[:])
}

// famError returns err if it is a domain error (keyed's failure to renew a
// key), nil for a transport error, which famErr maps.
func famError(err error) *Error {
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	return nil
}

func (r *remote) itemRecord(it *Item, op string) (metadata.Item, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	rep, err := keyed(r, it, op, func(k []byte) (*pb.ItemReply, error) {
		return r.cl.StatItem(ctx, &pb.KeyRequest{Key: k})
	})
	if fe := famError(err); fe != nil {
		return metadata.Item{}, fe
	}
	if err := r.famErr(op, rep.GetErr(), err); err != nil {
		return metadata.Item{}, err
	}
	return itemFromPB(rep.GetItem()), nil
}

func (r *remote) deallocate(it *Item, op string) error {
	ik := it.key()
	r.beginDealloc(ik)
	rep, err := keyed(r, it, op, func(k []byte) (*pb.Reply, error) {
		req := &pb.KeyRequest{Key: k}
		rep, _, err := ctlCall(r, transport.CtlDeallocate, req, &pb.Reply{}, false,
			func(ctx context.Context) (*pb.Reply, error) { return r.cl.Deallocate(ctx, req) })
		return rep, err
	})
	if fe := famError(err); fe != nil {
		err = fe
	} else {
		err = r.reply(op, rep, err)
	}
	if err == nil {
		// The handles are released before the deallocation stops
		// deferring revocations (Item.Deallocate would release them just
		// after): an event handled in between would renew them.
		f := it.f
		f.mu.Lock()
		notify := f.closeIncarnationLocked(ik)
		f.mu.Unlock()
		release(notify)
	}
	deferred := r.endDealloc(ik)
	if err != nil {
		// The item may still be there (or this call may have failed
		// after famd freed it): the revocations famd reported meanwhile
		// are handled now, as the session loop would have.
		for _, k := range deferred {
			it.f.keyRevoked(k)
		}
	}
	return err
}

// deallocWait is one item incarnation being deallocated (or its
// permissions changed, see changeItemPermissions): how many calls are
// under way on it, and the keys of it famd reported revoked meanwhile.
type deallocWait struct {
	n    int
	keys []transport.Key
}

// beginDealloc marks incarnation ik as being deallocated by this instance.
func (r *remote) beginDealloc(ik itemKey) {
	r.dmu.Lock()
	defer r.dmu.Unlock()
	if r.dealloc == nil {
		r.dealloc = map[itemKey]*deallocWait{}
	}
	w := r.dealloc[ik]
	if w == nil {
		w = &deallocWait{}
		r.dealloc[ik] = w
	}
	w.n++
}

// endDealloc ends a deallocation of ik begun by beginDealloc and returns
// the revocations deferred meanwhile (see deferRevoke).
func (r *remote) endDealloc(ik itemKey) []transport.Key {
	r.dmu.Lock()
	defer r.dmu.Unlock()
	w := r.dealloc[ik]
	if w == nil {
		return nil
	}
	w.n--
	keys := w.keys
	w.keys = nil
	if w.n == 0 {
		delete(r.dealloc, ik)
	}
	return keys
}

// deferRevoke reports whether the revocation of key, a key of incarnation
// ik, waits for a deallocation of ik by this instance that is under way:
// famd revokes the item's keys, and tells the session, before it answers
// the deallocation, so the event usually arrived first and the session
// loop renewed the handle through an ItemAt call that could only find the
// item gone, a gRPC round trip on every fam_deallocate (issue 19). If the
// deallocation succeeds the handles are released with it; if it fails the
// deferred revocations are handled then. A permission change of ik under
// way defers them the same way (changeItemPermissions).
func (r *remote) deferRevoke(ik itemKey, key transport.Key) bool {
	r.dmu.Lock()
	defer r.dmu.Unlock()
	w := r.dealloc[ik]
	if w == nil {
		return false
	}
	w.keys = append(w.keys, key)
	return true
}

// changeItemPermissions asks famd, which checks ownership, and renews this
// instance's handles of the item: famd revoked their keys, and the item's
// bytes moved to another heap file. famd tells the session of the
// revocations before it answers, and the session loop would renew each
// handle too, racing with the renewal here: two ItemAt calls, two passed
// descriptors and a CloseItem instead of one ItemAt. So the revocations
// wait, as for a deallocation (deferRevoke), until the handles are renewed;
// the keys they name are then no longer in use, and handling them costs
// nothing, unless the change or a renewal failed.
func (r *remote) changeItemPermissions(it *Item, op string, mode uint32) error {
	ctx, cancel := r.ctx()
	defer cancel()
	ik := it.key()
	r.beginDealloc(ik)
	rep, err := keyed(r, it, op, func(k []byte) (*pb.Reply, error) {
		return r.cl.ChangeItemPermissions(ctx, &pb.ChangeItemPermissionsRequest{Key: k, Mode: mode})
	})
	if fe := famError(err); fe != nil {
		err = fe
	} else {
		err = r.reply(op, rep, err)
	}
	if err == nil {
		it.f.renewHandles(it, op)
	}
	for _, k := range r.endDealloc(ik) {
		it.f.keyRevoked(k)
	}
	return err
}

func (r *remote) mapItem(it *Item, op string, v *itemView) (m, b []byte, err error) {
	if v.striped {
		return nil, nil, Errorf(CodeUnimplemented, op, "fam_map needs the memory on this host; data item {%d, %d} is interleaved over memory servers", it.g.RegionID, it.g.Offset)
	}
	if !r.unix {
		return nil, nil, Errorf(CodeUnimplemented, op, "fam_map needs the memory on this host; famd at %s is reached over TCP", r.addr)
	}
	m, b, err = r.mapKey(v.key, v.rights)
	if err != nil {
		return nil, nil, Errorf(CodeMemory, op, "mapping data item {%d, %d}: %v", it.g.RegionID, it.g.Offset, err)
	}
	return m, b, nil
}

// copier has famd copy within its own storage.
func (r *remote) copier(op string, _ *Item, sv *itemView, srcOff uint64, _ *Item, dv *itemView, dstOff, n uint64) (func() error, error) {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout+copyTime(n))
		defer cancel()
		rep, err := r.cl.Copy(ctx, &pb.CopyRequest{SrcKey: sv.key[:], SrcOffset: srcOff, DstKey: dv.key[:], DstOffset: dstOff, Nbytes: n})
		return r.reply(op, rep, err)
	}, nil
}

// copyTime allows a large server-side operation time proportional to its
// size (1 byte per nanosecond: 1 GB/s, a pessimistic disk) on top of the
// call timeout.
func copyTime(n uint64) time.Duration { return time.Duration(n) }

// backup and restore have famd make its copy (one call that returns
// when it is done) as an operation of the default context (inBackground),
// so that they return at once, as on the embedded store, and their errors
// (a missing backup, a name in use) reach the caller through the Wait,
// never through a later fam_quiet.
func (r *remote) backup(f *Fam, op string, it *Item, v *itemView, name, _ string) (*Wait, error) {
	// A name in use is the call's error, as on the embedded store, not
	// only the Wait's: famd lists the backups the caller may read. One it
	// may not read still fails, with famd's CodeExists at the Wait.
	_, taken, err := r.backupVisible(op, name)
	if err != nil {
		return nil, err
	}
	if taken {
		return nil, Errorf(CodeExists, op, "backup %q already exists (backup names are shared by all users)", name)
	}
	if r.afterBackupCheck != nil {
		r.afterBackupCheck()
	}
	return f.inBackground(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout+copyTime(v.size))
		defer cancel()
		rep, err := keyed(r, it, op, func(k []byte) (*pb.Reply, error) {
			return r.cl.Backup(ctx, &pb.BackupRequest{Key: k, Name: name})
		})
		if fe := famError(err); fe != nil {
			return fe
		}
		return r.reply(op, rep, err)
	}), nil
}

// restore reports a backup that does not exist (or that the caller may
// not read) from the call itself, as on the embedded store and as OpenFAM
// programs expect: one that famd does not list is restored at once, so
// that famd's own answer (not found, no permission) is the call's error. A
// listed one is copied in the background.
func (r *remote) restore(f *Fam, op, name string, dst *Item, v *itemView) (*Wait, error) {
	// A backup that does not exist (or that the caller may not read) is
	// reported by the call itself, as on the embedded store and as OpenFAM
	// programs expect: one that famd does not list, or one larger than
	// dst, is restored at once, so that famd's own answer (not found, no
	// permission, out of range) is the call's error. A listed one that fits
	// is copied in the background.
	size, visible, err := r.backupVisible(op, name)
	if err != nil {
		return nil, err
	}
	if !visible || size > v.size {
		if err := r.restoreNow(op, name, dst); err != nil {
			return nil, err
		}
		return f.def.start(func() error { return nil }), nil
	}
	if r.afterBackupCheck != nil {
		r.afterBackupCheck()
	}
	return f.inBackground(func() error { return r.restoreNow(op, name, dst) }), nil
}

func (r *remote) restoreNow(op, name string, dst *Item) error {
	v := dst.view.Load()
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout+copyTime(v.size))
	defer cancel()
	rep, err := keyed(r, dst, op, func(k []byte) (*pb.Reply, error) {
		return r.cl.Restore(ctx, &pb.RestoreRequest{Name: name, Key: k})
	})
	if fe := famError(err); fe != nil {
		return fe
	}
	return r.reply(op, rep, err)
}

func (r *remote) restoreNew(f *Fam, op, name string, reg *Region, itemName string, mode uint32) (*Wait, *Item, error) {
	if _, err := f.backupPath(op, name); err != nil {
		return nil, nil, err
	}
	if _, err := reg.record(op); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*r.timeout)
	defer cancel()
	rep, err := r.cl.RestoreNew(ctx, &pb.RestoreNewRequest{Name: name, RegionId: reg.id, ItemName: itemName, Mode: mode})
	it, err := r.newItem(f, op, rep, nil, err)
	if err != nil {
		return nil, nil, err
	}
	return f.def.start(func() error { return nil }), it, nil
}

func (r *remote) deleteBackup(f *Fam, op, name, _ string) (*Wait, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	rep, err := r.cl.DeleteBackup(ctx, &pb.BackupNameRequest{Name: name})
	if err := r.reply(op, rep, err); err != nil {
		return nil, err
	}
	return f.def.start(func() error { return nil }), nil
}

func (r *remote) listBackups(_ *Fam, op, prefix string) (string, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	rep, err := r.cl.ListBackups(ctx, &pb.BackupNameRequest{Name: prefix})
	if err := r.reply(op, rep, err); err != nil {
		return "", err
	}
	return rep.GetText(), nil
}

// backupVisible reports whether famd lists backup name for the caller
// (a listing shows only what the caller may read), and its size then.
func (r *remote) backupVisible(op, name string) (size uint64, visible bool, err error) {
	text, err := r.listBackups(nil, op, name)
	if err != nil {
		return 0, false, err
	}
	// A line is "name size mode uid gid time"; a name may hold spaces, so
	// the five fields after it decide.
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			if fields := strings.Fields(rest); len(fields) == 5 {
				size, _ = strconv.ParseUint(fields[0], 10, 64) // unreadable: 0, famd checks the size anyway
				return size, true, nil
			}
		}
	}
	return 0, false, nil
}

// --- listings ---

func (r *remote) listRegions(_ *Fam, op string, _ bool) ([]metadata.Region, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	rep, err := r.cl.ListRegions(ctx, &pb.ListRegionsRequest{})
	if err := r.famErr(op, rep.GetErr(), err); err != nil {
		return nil, err
	}
	var recs []metadata.Region
	for _, ri := range rep.GetRegions() {
		recs = append(recs, regionFromPB(ri))
	}
	return recs, nil
}

func (r *remote) listItems(_ *Fam, op string, rec metadata.Region) (map[uint64]Stat, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	rep, err := r.cl.ListItems(ctx, &pb.ListItemsRequest{RegionId: rec.ID})
	if err := r.famErr(op, rep.GetErr(), err); err != nil {
		return nil, err
	}
	out := map[uint64]Stat{}
	for _, ii := range rep.GetItems() {
		out[ii.GetOffset()] = Stat{Size: ii.GetSize(), Mode: ii.GetMode(), Name: ii.GetName(), UID: ii.GetUid(), GID: ii.GetGid()}
	}
	return out, nil
}

// --- instance ---

func (r *remote) quiesce() {
	if r.endSession != nil {
		r.endSession()
	}
}

// close tells famd the open handles' keys are done with, retires every
// mapping famd passed (see scrubMapping) and closes the connections.
func (r *remote) close(_ *Fam, views []*itemView) error {
	for _, v := range views {
		r.closeView(v)
	}
	r.smu.Lock()
	for _, m := range r.staleMaps {
		scrubMapping(m)
	}
	r.staleMaps = nil
	for _, m := range r.shared {
		scrubMapping(m)
	}
	r.shared = nil
	r.smu.Unlock()
	r.shutdown()
	return nil
}

// sync has nothing to flush: famd keeps the memory.
func (r *remote) sync(*Fam) {}

// barrier waits at famd's barrier for this job. It has no deadline: PEs
// may legitimately arrive far apart; a famd that goes away ends it.
func (r *remote) barrier(f *Fam, op string) error {
	rep, err := r.cl.Barrier(context.Background(), &pb.BarrierRequest{Job: r.job, Size: uint32(f.peCount), Rank: uint32(f.peID)})
	return r.reply(op, rep, err)
}

// model is the model in use, whatever was asked: programs (and OpenFAM's
// own tests) run memory-server-only paths when they read this.
func (r *remote) model(string) string { return "memory_server" }

func (r *remote) localUsage(_ *Fam, op string) (int, uint64, uint64, error) {
	return 0, 0, 0, Errorf(CodeUnimplemented, op, "region usage is kept by famd")
}

func (r *remote) lostVolatile() []string { return nil }

// keyRevoked runs when famd reports that it revoked key: another program
// changed the item's permissions, deallocated it, or destroyed or resized
// its region (or this program closed a handle or renewed its key). The
// handle still using the key, if any, resolves the item again, which
// matters for items mapped here: their mapping gets the new rights (the C
// fast path follows through the watcher) instead of keeping the old ones
// until some data-plane call fails. If the handle's item is gone, every
// handle of that item (that incarnation) is released, and nothing else: the
// event may arrive after a new item took the offset, and that item's
// handles stay. A handle that lost all access keeps no rights.
func (f *Fam) keyRevoked(key transport.Key) {
	f.mu.Lock()
	it := f.keys.get(key)
	f.mu.Unlock()
	if it == nil {
		return // closed, renewed or released already
	}
	if r, ok := f.b.(*remote); ok && r.deferRevoke(it.key(), key) {
		return
	}
	const op = "fam_revoked"
	err := f.b.refresh(it, op, &key)
	switch CodeOf(err) {
	case CodeNotFound:
		f.mu.Lock()
		notify := f.closeIncarnationLocked(it.key())
		f.mu.Unlock()
		release(notify)
	case CodeNoPerm:
		f.mu.Lock()
		old := it.view.Load()
		if it.state.Load() != stateOpen || old == nil || old.key != key {
			f.mu.Unlock()
			return
		}
		// The key stays indexed: famd may still send events for it.
		nv := &itemView{size: old.size, key: old.key, dp: old.dp, striped: old.striped}
		it.view.Store(nv)
		f.b.dropView(old)
		f.mu.Unlock()
		it.fire()
	}
}
