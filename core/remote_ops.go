package core

import (
	"context"
	"errors"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/metadata"
	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// The methods here are the famd-served counterparts of the embedded code;
// each public method branches to them when f.remote is set.

func attrToPB(a RegionAttr) *pb.RegionAttr {
	return &pb.RegionAttr{Redundancy: uint32(a.Redundancy), Memory: uint32(a.Memory),
		Interleave: uint32(a.Interleave), PermLevel: uint32(a.PermLevel)}
}

func (f *Fam) rCreateRegion(op, name string, size uint64, mode uint32, attr RegionAttr) (*Region, error) {
	ctx, cancel := f.remote.ctx()
	defer cancel()
	rep, err := f.remote.cl.CreateRegion(ctx, &pb.CreateRegionRequest{Name: name, Size: size, Mode: mode, Attr: attrToPB(attr)})
	if err := f.remote.famErr(op, rep.GetErr(), err); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.newRegionLocked(rep.GetRegion().GetId(), stateOpen), nil
}

func (f *Fam) rLookupRegion(op, name string) (*Region, error) {
	ctx, cancel := f.remote.ctx()
	defer cancel()
	rep, err := f.remote.cl.LookupRegion(ctx, &pb.LookupRegionRequest{Name: name})
	if err := f.remote.famErr(op, rep.GetErr(), err); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.newRegionLocked(rep.GetRegion().GetId(), stateOpen), nil
}

// rRegion fetches a region's record (the permission check is famd's).
func (f *Fam) rRegion(op string, id uint64) (metadata.Region, error) {
	ctx, cancel := f.remote.ctx()
	defer cancel()
	rep, err := f.remote.cl.RegionByID(ctx, &pb.RegionByIDRequest{Id: id})
	if err := f.remote.famErr(op, rep.GetErr(), err); err != nil {
		return metadata.Region{}, err
	}
	return regionFromPB(rep.GetRegion()), nil
}

func (f *Fam) rReply(op string, rep interface{ GetErr() *pb.FamError }, err error) error {
	return f.remote.famErr(op, rep.GetErr(), err)
}

func (r *Region) rDestroy(op string) error {
	f := r.f
	ctx, cancel := f.remote.ctx()
	defer cancel()
	rep, err := f.remote.cl.DestroyRegion(ctx, &pb.RegionByIDRequest{Id: r.id})
	if err := f.rReply(op, rep, err); err != nil {
		return err
	}
	f.mu.Lock()
	notify := f.closeItemsLocked(func(g GlobalDesc) bool { return g.RegionID == r.id })
	for h := range f.rhandles[r.id] {
		h.state.Store(stateClosed)
	}
	delete(f.rhandles, r.id)
	f.mu.Unlock()
	release(notify)
	return nil
}

func (r *Region) rResize(op string, n uint64) error {
	ctx, cancel := r.f.remote.ctx()
	defer cancel()
	rep, err := r.f.remote.cl.ResizeRegion(ctx, &pb.ResizeRegionRequest{Id: r.id, Size: n})
	return r.f.rReply(op, rep, err)
}

func (r *Region) rChangePermissions(op string, mode uint32) error {
	f := r.f
	ctx, cancel := f.remote.ctx()
	defer cancel()
	rep, err := f.remote.cl.ChangeRegionPermissions(ctx, &pb.ChangeRegionPermissionsRequest{Id: r.id, Mode: mode})
	if err := f.rReply(op, rep, err); err != nil {
		return err
	}
	f.refreshRegionItems(r.id)
	return nil
}

func (f *Fam) refreshRegionItems(id uint64) {
	f.mu.Lock()
	notify := f.regionItemsLocked(id)
	f.mu.Unlock()
	for _, it := range notify {
		_ = it.reresolve("fam_change_permissions")
	}
}

// openView turns an item reply into a view: the key for the data plane
// and, when famd is on this host, a mapping of the item made from the heap
// file famd passes (read-only without write permission).
func (f *Fam) openView(ii *pb.ItemInfo) (*itemView, metadata.Item, error) {
	rec := itemFromPB(ii)
	key, ok := keyOf(ii.GetKey())
	if !ok {
		return nil, rec, Errorf(CodeRPC, "fam_lookup", "famd sent a malformed item key")
	}
	v := &itemView{size: rec.Size, rights: Rights(ii.GetRights()), key: key, dp: f.remote.data,
		persist: ii.GetMemoryType() == uint32(Persistent)}
	if srv := ii.GetServers(); len(srv) > 0 && srv[0] != 0 {
		sp, err := f.remote.stripes(ii)
		if err != nil {
			return nil, rec, err
		}
		v.dp, v.striped = sp, true
		return v, rec, nil
	}
	if f.remote.unix && v.rights&RightRead != 0 {
		if m, b, err := f.remote.mapItem(key, v.rights); err == nil {
			v.mem, v.mapping = b, m
		}
	}
	return v, rec, nil
}

// mapItem maps an item from the descriptor famd passes over the Unix
// socket. It returns the whole mapping and the item's bytes within it.
func (r *remote) mapItem(key transport.Key, rights Rights) (m, b []byte, err error) {
	fl, off, size, _, err := r.data.OpenFD(key)
	if err != nil {
		return nil, nil, err
	}
	defer fl.Close()
	return mapRange(int(fl.Fd()), off, size, rights)
}

func (f *Fam) rNewItem(op string, rep *pb.ItemReply, err error) (*Item, error) {
	if err := f.remote.famErr(op, rep.GetErr(), err); err != nil {
		return nil, err
	}
	v, rec, err := f.openView(rep.GetItem())
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return nil, f.check(op)
	}
	return f.newItemLocked(rec, v), nil
}

func (r *Region) rAllocate(op, name string, n uint64, mode uint32) (*Item, error) {
	ctx, cancel := r.f.remote.ctx()
	defer cancel()
	rep, err := r.f.remote.cl.Allocate(ctx, &pb.AllocateRequest{RegionId: r.id, Name: name, Size: n, Mode: mode})
	return r.f.rNewItem(op, rep, err)
}

func (f *Fam) rLookup(op, item, region string) (*Item, error) {
	ctx, cancel := f.remote.ctx()
	defer cancel()
	rep, err := f.remote.cl.Lookup(ctx, &pb.LookupRequest{Item: item, Region: region})
	return f.rNewItem(op, rep, err)
}

// rResolve resolves a lazy handle or renews a stale key through ItemAt. It
// returns whatever item is at the handle's descriptor now, with its
// incarnation in the record; renewing callers check that it is theirs.
func (it *Item) rResolve(op string) (*itemView, metadata.Item, error) {
	f := it.f
	ctx, cancel := f.remote.ctx()
	defer cancel()
	rep, err := f.remote.cl.ItemAt(ctx, &pb.ItemAtRequest{RegionId: it.g.RegionID, Offset: it.g.Offset})
	if err := f.remote.famErr(op, rep.GetErr(), err); err != nil {
		return nil, metadata.Item{}, err
	}
	return f.openView(rep.GetItem())
}

// reresolve replaces the handle's view after its key went stale (famd
// restarted, or permissions changed) and tells the watcher. It fails with
// CodeNotFound when the handle's item is gone, even if another item now
// occupies its offset: a handle never moves to a different item.
func (it *Item) reresolve(op string) error { return it.renew(op, nil) }

// renew is reresolve; with stale set it renews only a handle that still
// uses that key: a thread of this program may have renewed it meanwhile
// (its own chmod does), and renewing again would withdraw the key that
// thread is about to use.
func (it *Item) renew(op string, stale *transport.Key) error {
	if it.state.Load() != stateOpen {
		return Errorf(CodeInvalid, op, "data item handle was released")
	}
	v, rec, err := it.rResolve(op)
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
		f.rDiscard(v)
		if !open {
			return Errorf(CodeInvalid, op, "data item handle was released")
		}
		return Errorf(CodeNotFound, op, "data item {%d, %d} was deallocated (another item now occupies its offset)", it.g.RegionID, it.g.Offset)
	}
	if cur := it.view.Load(); stale != nil && (cur == nil || cur.key != *stale) {
		f.mu.Unlock()
		f.rDiscard(v)
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
	it.rRemapMaps(v)
	if old != nil {
		f.rForget(old)
	}
	return nil
}

// rRemapMaps points the handle's fam_map mappings, in place, at the file
// famd passes for view v: a permission change moves the item's bytes to
// another heap file (spec/wire.md section 9), and an address the program
// got from fam_map must keep showing the item. Without a descriptor (no
// read right any more) the old mappings stay, showing the zeroed bytes.
func (it *Item) rRemapMaps(v *itemView) {
	it.wmu.Lock()
	n := len(it.maps)
	it.wmu.Unlock()
	if n == 0 || !it.f.remote.unix || v.striped || v.rights&RightRead == 0 {
		return
	}
	fl, off, _, _, err := it.f.remote.data.OpenFD(v.key)
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

// rDiscard gives back a view that was never published: famd forgets its
// key, and its mapping, which no other thread can be using, goes at once.
func (f *Fam) rDiscard(v *itemView) {
	ctx, cancel := f.remote.ctx()
	defer cancel()
	_, _ = f.remote.cl.CloseItem(ctx, &pb.KeyRequest{Key: v.key[:]})
	if v.mapping != nil {
		_ = unix.Munmap(v.mapping)
	}
}

// rForget tells famd a key is no longer used, best effort. The mapping of
// the old view stays until the handle is released: another thread may
// still be copying through it.
func (f *Fam) rForget(v *itemView) {
	ctx, cancel := f.remote.ctx()
	defer cancel()
	_, _ = f.remote.cl.CloseItem(ctx, &pb.KeyRequest{Key: v.key[:]})
	if v.mapping != nil {
		f.mu.Lock()
		f.staleMaps = append(f.staleMaps, v.mapping)
		f.mu.Unlock()
	}
}

// remoteData runs a data-plane operation, renewing the key once if famd no
// longer knows it.
func (it *Item) remoteData(op string, fn func(v *itemView) error) error {
	err := fn(it.view.Load())
	if errors.Is(err, transport.ErrStaleKey) {
		if rerr := it.reresolve(op); rerr != nil {
			return rerr
		}
		// Even if the renewed view is mapped here, famd serves the same
		// bytes, so finishing this call remotely is correct.
		err = fn(it.view.Load())
	}
	if errors.Is(err, transport.ErrUnavailable) && it.view.Load().striped {
		// A memory server may have come back at a new address: the next
		// call asks the metadata service again.
		it.f.remote.forgetMems()
	}
	return it.f.remote.dataErr(op, err)
}

// keyed makes a control call that names the item by its key. famd may have
// revoked the key since this handle got it (another program changed the
// permissions, famd restarted), which it answers like a denial: the key is
// then renewed once, re-running the permission check, and the call made
// again, as the data path does. A real denial is answered the same way
// twice.
func keyed[R interface{ GetErr() *pb.FamError }](it *Item, op string, ctx context.Context, call func(key []byte) (R, error)) (R, error) {
	v := it.view.Load()
	rep, err := call(v.key[:])
	if err != nil || rep.GetErr().GetCode() != int32(CodeNoPerm) {
		return rep, err
	}
	if rerr := it.renew(op, &v.key); rerr != nil {
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

func (it *Item) rRecord(op string) (metadata.Item, error) {
	f := it.f
	ctx, cancel := f.remote.ctx()
	defer cancel()
	rep, err := keyed(it, op, ctx, func(k []byte) (*pb.ItemReply, error) {
		return f.remote.cl.StatItem(ctx, &pb.KeyRequest{Key: k})
	})
	if fe := famError(err); fe != nil {
		return metadata.Item{}, fe
	}
	if err := f.remote.famErr(op, rep.GetErr(), err); err != nil {
		return metadata.Item{}, err
	}
	return itemFromPB(rep.GetItem()), nil
}

func (it *Item) rClose() {
	if v := it.view.Load(); v != nil && v.size > 0 {
		it.f.rForget(v)
	}
}

func (it *Item) rDeallocate(op string) error {
	f := it.f
	ctx, cancel := f.remote.ctx()
	defer cancel()
	rep, err := keyed(it, op, ctx, func(k []byte) (*pb.Reply, error) {
		return f.remote.cl.Deallocate(ctx, &pb.KeyRequest{Key: k})
	})
	if fe := famError(err); fe != nil {
		return fe
	}
	if err := f.rReply(op, rep, err); err != nil {
		return err
	}
	f.mu.Lock()
	notify := f.closeIncarnationLocked(it.key())
	f.mu.Unlock()
	release(notify)
	return nil
}

func (it *Item) rChangePermissions(op string, mode uint32) error {
	f := it.f
	ctx, cancel := f.remote.ctx()
	defer cancel()
	rep, err := keyed(it, op, ctx, func(k []byte) (*pb.Reply, error) {
		return f.remote.cl.ChangeItemPermissions(ctx, &pb.ChangeItemPermissionsRequest{Key: k, Mode: mode})
	})
	if fe := famError(err); fe != nil {
		return fe
	}
	if err := f.rReply(op, rep, err); err != nil {
		return err
	}
	f.mu.Lock()
	hs := f.incarnationItemsLocked(it.key())
	f.mu.Unlock()
	for _, h := range hs {
		_ = h.reresolve(op)
	}
	return nil
}

// dropView unmaps a released handle's mapping.
func (it *Item) dropView() {
	if v := it.view.Load(); v != nil && v.mapping != nil {
		it.f.mu.Lock()
		it.f.staleMaps = append(it.f.staleMaps, v.mapping)
		it.f.mu.Unlock()
	}
	it.unmapAll()
}

func (f *Fam) remoteCopy(op string, src *Item, srcOff uint64, dst *Item, dstOff, n uint64) error {
	sv, dv := src.view.Load(), dst.view.Load()
	ctx, cancel := context.WithTimeout(context.Background(), f.remote.timeout+copyTime(n))
	defer cancel()
	rep, err := f.remote.cl.Copy(ctx, &pb.CopyRequest{SrcKey: sv.key[:], SrcOffset: srcOff, DstKey: dv.key[:], DstOffset: dstOff, Nbytes: n})
	return f.rReply(op, rep, err)
}

// copyTime allows a large server-side operation time proportional to its
// size (1 byte per nanosecond: 1 GB/s, a pessimistic disk) on top of the
// call timeout.
func copyTime(n uint64) time.Duration { return time.Duration(n) }

// rBackup and rRestore make famd's copy and return when it is done; Backup
// and Restore run them in the background (inBackground), so their errors (a
// missing backup, a name in use) reach the caller through the Wait, never
// through a later fam_quiet.
func (f *Fam) rBackup(op string, it *Item, name string) (*Wait, error) {
	v := it.view.Load()
	ctx, cancel := context.WithTimeout(context.Background(), f.remote.timeout+copyTime(v.size))
	defer cancel()
	rep, err := keyed(it, op, ctx, func(k []byte) (*pb.Reply, error) {
		return f.remote.cl.Backup(ctx, &pb.BackupRequest{Key: k, Name: name})
	})
	if fe := famError(err); fe != nil {
		return nil, fe
	}
	if err := f.rReply(op, rep, err); err != nil {
		return nil, err
	}
	return f.def.start(func() error { return nil }), nil
}

func (f *Fam) rRestore(op, name string, dst *Item) (*Wait, error) {
	v := dst.view.Load()
	ctx, cancel := context.WithTimeout(context.Background(), f.remote.timeout+copyTime(v.size))
	defer cancel()
	rep, err := keyed(dst, op, ctx, func(k []byte) (*pb.Reply, error) {
		return f.remote.cl.Restore(ctx, &pb.RestoreRequest{Name: name, Key: k})
	})
	if fe := famError(err); fe != nil {
		return nil, fe
	}
	if err := f.rReply(op, rep, err); err != nil {
		return nil, err
	}
	return f.def.start(func() error { return nil }), nil
}

func (f *Fam) rRestoreNew(op, name string, r *Region, itemName string, mode uint32) (*Wait, *Item, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*f.remote.timeout)
	defer cancel()
	rep, err := f.remote.cl.RestoreNew(ctx, &pb.RestoreNewRequest{Name: name, RegionId: r.id, ItemName: itemName, Mode: mode})
	it, err := f.rNewItem(op, rep, err)
	if err != nil {
		return nil, nil, err
	}
	return f.def.start(func() error { return nil }), it, nil
}

func (f *Fam) rDeleteBackup(op, name string) (*Wait, error) {
	ctx, cancel := f.remote.ctx()
	defer cancel()
	rep, err := f.remote.cl.DeleteBackup(ctx, &pb.BackupNameRequest{Name: name})
	if err := f.rReply(op, rep, err); err != nil {
		return nil, err
	}
	return f.def.start(func() error { return nil }), nil
}

func (f *Fam) rListBackups(op, prefix string) (string, error) {
	ctx, cancel := f.remote.ctx()
	defer cancel()
	rep, err := f.remote.cl.ListBackups(ctx, &pb.BackupNameRequest{Name: prefix})
	if err := f.rReply(op, rep, err); err != nil {
		return "", err
	}
	return rep.GetText(), nil
}

// rBackupVisible reports whether famd lists backup name for the caller
// (a listing shows only what the caller may read).
func (f *Fam) rBackupVisible(op, name string) (bool, error) {
	text, err := f.rListBackups(op, name)
	if err != nil {
		return false, err
	}
	// A line is "name size mode uid gid time"; a name may hold spaces, so
	// the five fields after it decide.
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok && len(strings.Fields(rest)) == 5 {
			return true, nil
		}
	}
	return false, nil
}

// rBarrier waits at famd's barrier for this job. It has no deadline: PEs
// may legitimately arrive far apart; a famd that goes away ends it.
func (f *Fam) rBarrier(op string) error {
	rep, err := f.remote.cl.Barrier(context.Background(), &pb.BarrierRequest{Job: f.remote.job, Size: uint32(f.peCount), Rank: uint32(f.peID)})
	return f.rReply(op, rep, err)
}

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
	it := f.keys[key]
	f.mu.Unlock()
	if it == nil {
		return // closed, renewed or released already
	}
	const op = "fam_revoked"
	err := it.renew(op, &key)
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
		if old.mapping != nil {
			f.staleMaps = append(f.staleMaps, old.mapping)
		}
		f.mu.Unlock()
		it.fire()
	}
}
