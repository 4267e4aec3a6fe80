package features

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"github.com/gofam/openfam/capi/cabi"
	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
)

// Handle kinds as encoded in bits 28..31 of a C handle (capi/ofam.h): a
// handle of the right kind proves it came from the C slot table.
const (
	kindRegion = 1
	kindDesc   = 2
	kindCtx    = 3
	kindWait   = 4
)

// cBackend drives the C functions of include/openfam.h, compiled into this
// test binary by package cabi.
type cBackend struct {
	last      string
	violation error
	bufs      []unsafe.Pointer
}

func newCBackend() *cBackend { return &cBackend{} }

func (b *cBackend) Name() string { return "capi" }

// call runs fn on one OS thread, so that fam_errcode/fam_errmsg (thread-local
// in C) describe its failure, and checks that they agree with its result.
func (b *cBackend) call(op string, fn func() int) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rc := fn()
	if rc >= 0 {
		return 0
	}
	code, msg := cabi.Err()
	b.last = msg
	if code != -rc && b.violation == nil {
		b.violation = fmt.Errorf("%s returned %d but fam_errcode() is %d (%q)", op, rc, code, msg)
	}
	if msg == "" && b.violation == nil {
		b.violation = fmt.Errorf("%s failed with %d and an empty fam_errmsg()", op, rc)
	}
	return -rc
}

// handle runs fn, which returns a C handle, on one OS thread; a NULL result
// is a failure described by fam_errcode. A live result must carry kind.
func (b *cBackend) handle(op string, kind uint64, fn func() uintptr) (Handle, int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := fn()
	if h != 0 {
		if (uint64(h)>>28)&0xf != kind && b.violation == nil {
			b.violation = fmt.Errorf("%s returned handle %#x, not of kind %d", op, h, kind)
		}
		return h, 0
	}
	code, msg := cabi.Err()
	b.last = msg
	if code <= 0 && b.violation == nil {
		b.violation = fmt.Errorf("%s returned NULL but fam_errcode() is %d", op, code)
	}
	return uintptr(0), code
}

func (b *cBackend) LastError() string { return b.last }
func (b *cBackend) Violation() error  { return b.violation }
func (b *cBackend) Null() Handle      { return uintptr(0) }

func (b *cBackend) Buffer(n uint64) []byte {
	p := cabi.Malloc(n)
	b.bufs = append(b.bufs, p)
	return unsafe.Slice((*byte)(p), n)
}

func (b *cBackend) Teardown() {
	for _, p := range b.bufs {
		cabi.Free(p)
	}
	b.bufs = nil
}

func h(x Handle) uintptr {
	v, _ := x.(uintptr)
	return v
}

// ptr is the C address of buf (NULL for nil); buf comes from Buffer.
func ptr(buf []byte) unsafe.Pointer {
	if buf == nil {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(buf))
}

var cx = map[Xfer]int{Get: cabi.Get, Put: cabi.Put, GetNB: cabi.GetNB, PutNB: cabi.PutNB}

func (b *cBackend) Initialize() int {
	return b.call("fam_initialize", func() int { return cabi.Initialize("default") })
}

func (b *cBackend) Finalize() int {
	return b.call("fam_finalize", func() int { return cabi.Finalize("default") })
}

func (b *cBackend) CreateRegion(name string, size uint64, mode uint32, attr *core.RegionAttr) (Handle, int) {
	var a *[4]int
	if attr != nil {
		a = &[4]int{int(attr.Redundancy), int(attr.Memory), int(attr.Interleave), int(attr.PermLevel)}
	}
	return b.handle("fam_create_region", kindRegion, func() uintptr { return cabi.CreateRegion(name, size, mode, a) })
}

func (b *cBackend) LookupRegion(name string) (Handle, int) {
	return b.handle("fam_lookup_region", kindRegion, func() uintptr { return cabi.LookupRegion(name) })
}

func (b *cBackend) DestroyRegion(r Handle) int {
	return b.call("fam_destroy_region", func() int { return cabi.DestroyRegion(h(r)) })
}

func (b *cBackend) CloseRegion(r Handle) int {
	return b.call("fam_close_region", func() int { return cabi.CloseRegion(h(r)) })
}

func (b *cBackend) ResizeRegion(r Handle, n uint64) int {
	return b.call("fam_resize_region", func() int { return cabi.ResizeRegion(h(r), n) })
}

func (b *cBackend) ChangeRegionPermissions(r Handle, mode uint32) int {
	return b.call("fam_change_region_permissions", func() int { return cabi.ChangeRegionPermissions(h(r), mode) })
}

func cstat(s cabi.Stat) Stat {
	return Stat{Size: s.Size, Mode: s.Mode, Name: s.Name, UID: s.UID, GID: s.GID, NumServers: s.NumServers, InterleaveSize: s.InterleaveSize,
		Attr: core.RegionAttr{Redundancy: core.Redundancy(s.Attr[0]), Memory: core.MemoryType(s.Attr[1]),
			Interleave: core.Interleave(s.Attr[2]), PermLevel: core.PermLevel(s.Attr[3])}}
}

func (b *cBackend) StatRegion(r Handle) (Stat, int) {
	var s cabi.Stat
	code := b.call("fam_stat_region", func() (rc int) { s, rc = cabi.StatRegion(h(r)); return })
	return cstat(s), code
}

func (b *cBackend) RegionGlobal(r Handle) (core.GlobalDesc, int) {
	var g core.GlobalDesc
	code := b.call("fam_region_global", func() (rc int) { g.RegionID, g.Offset, rc = cabi.RegionGlobal(h(r)); return })
	return g, code
}

func (b *cBackend) RegionFromGlobal(g core.GlobalDesc) (Handle, int) {
	return b.handle("fam_region_from_global", kindRegion, func() uintptr { return cabi.RegionFromGlobal(g.RegionID, g.Offset) })
}

func (b *cBackend) Allocate(r Handle, name string, unnamed bool, n uint64, mode uint32) (Handle, int) {
	return b.handle("fam_allocate", kindDesc, func() uintptr { return cabi.Allocate(name, unnamed, n, mode, h(r)) })
}

func (b *cBackend) Lookup(it, region string) (Handle, int) {
	return b.handle("fam_lookup", kindDesc, func() uintptr { return cabi.Lookup(it, region) })
}

func (b *cBackend) Deallocate(d Handle) int {
	return b.call("fam_deallocate", func() int { return cabi.Deallocate(h(d)) })
}

func (b *cBackend) Close(d Handle) int {
	return b.call("fam_close", func() int { return cabi.Close(h(d)) })
}

func (b *cBackend) ChangePermissions(d Handle, mode uint32) int {
	return b.call("fam_change_permissions", func() int { return cabi.ChangePermissions(h(d), mode) })
}

func (b *cBackend) Stat(d Handle) (Stat, int) {
	var s cabi.Stat
	code := b.call("fam_stat", func() (rc int) { s, rc = cabi.StatItem(h(d)); return })
	return cstat(s), code
}

func (b *cBackend) DescGlobal(d Handle) (core.GlobalDesc, int) {
	var g core.GlobalDesc
	code := b.call("fam_desc_global", func() (rc int) { g.RegionID, g.Offset, rc = cabi.DescGlobal(h(d)); return })
	return g, code
}

func (b *cBackend) DescFromGlobal(g core.GlobalDesc) (Handle, int) {
	return b.handle("fam_desc_from_global", kindDesc, func() uintptr { return cabi.DescFromGlobal(g.RegionID, g.Offset) })
}

func (b *cBackend) RW(c Ctx, x Xfer, buf []byte, n uint64, d Handle, off uint64) int {
	return b.call("fam_get/put", func() int { return cabi.RW(h(c.H), c.On, cx[x], ptr(buf), h(d), off, n) })
}

func (b *cBackend) Strided(c Ctx, x Xfer, buf []byte, d Handle, n, first, stride, esize uint64) int {
	return b.call("strided", func() int { return cabi.Strided(h(c.H), c.On, cx[x], ptr(buf), h(d), n, first, stride, esize) })
}

func (b *cBackend) Indexed(c Ctx, x Xfer, buf []byte, d Handle, index []uint64, esize uint64) int {
	return b.call("indexed", func() int { return cabi.Indexed(h(c.H), c.On, cx[x], ptr(buf), h(d), index, esize) })
}

func (b *cBackend) Atomic(c Ctx, d Handle, off uint64, k amo.Kind, op amo.Op, fetch bool, v, cmp amo.Value) (amo.Value, int) {
	var old amo.Value
	code := b.call("atomic", func() int {
		lo, hi, rc := cabi.Atomic(h(c.H), c.On, h(d), off, int(k), int(op), fetch, v.Lo, v.Hi, cmp.Lo, cmp.Hi)
		if rc == cabi.NoFunc {
			// Not an openfam.h function: the scenario asked for something
			// the C API cannot express, which is the scenario's bug.
			panic(fmt.Sprintf("openfam.h has no atomic for kind %d, op %d, fetch %v", k, op, fetch))
		}
		old = amo.Value{Lo: lo, Hi: hi}
		return rc
	})
	return old, code
}

func (b *cBackend) Map(d Handle, size uint64) ([]byte, int) {
	var p unsafe.Pointer
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if p = cabi.Map(h(d)); p == nil {
		code, msg := cabi.Err()
		b.last = msg
		return nil, code
	}
	return unsafe.Slice((*byte)(p), size), 0
}

func (b *cBackend) Unmap(m []byte, d Handle) int {
	return b.call("fam_unmap", func() int { return cabi.Unmap(ptr(m), h(d)) })
}

func (b *cBackend) Copy(c Ctx, src Handle, srcOff uint64, dst Handle, dstOff, n uint64) (Handle, int) {
	return b.handle("fam_copy", kindWait, func() uintptr { return cabi.Copy(h(c.H), c.On, h(src), srcOff, h(dst), dstOff, n) })
}

func (b *cBackend) Wait(what string, w Handle) int {
	fn := map[string]func(uintptr) int{"copy": cabi.CopyWait, "backup": cabi.BackupWait,
		"restore": cabi.RestoreWait, "delete": cabi.DeleteBackupWait}[what]
	return b.call("fam_"+what+"_wait", func() int { return fn(h(w)) })
}

func (b *cBackend) Backup(d Handle, name string) (Handle, int) {
	return b.handle("fam_backup", kindWait, func() uintptr { return cabi.Backup(h(d), name) })
}

func (b *cBackend) Restore(name string, d Handle) (Handle, int) {
	return b.handle("fam_restore", kindWait, func() uintptr { return cabi.Restore(name, h(d)) })
}

func (b *cBackend) RestoreRegion(name string, r Handle, it string, mode uint32) (Handle, Handle, int) {
	var d uintptr
	w, code := b.handle("fam_restore_region", kindWait, func() (w uintptr) { w, d = cabi.RestoreRegion(name, h(r), it, mode); return })
	return w, d, code
}

func (b *cBackend) DeleteBackup(name string) (Handle, int) {
	return b.handle("fam_delete_backup", kindWait, func() uintptr { return cabi.DeleteBackup(name) })
}

func (b *cBackend) ListBackup(prefix string) (string, int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s, ok := cabi.ListBackup(prefix)
	if !ok {
		code, msg := cabi.Err()
		b.last = msg
		return "", code
	}
	return s, 0
}

func (b *cBackend) ListRegions() ([]Listed, int) {
	return b.listing("fam_list_regions", 5, cabi.ListRegions)
}

func (b *cBackend) ListItems(r Handle) ([]Listed, int) {
	return b.listing("fam_list_items", 6, func() (string, bool) { return cabi.ListItems(h(r)) })
}

// listing runs a fam_list_* call and parses its lines strictly: each ends
// in '\n' and holds that many tab-separated fields, numbers in decimal but the
// mode (octal). A malformed listing is recorded as a contract violation.
func (b *cBackend) listing(op string, fields int, fn func() (string, bool)) ([]Listed, int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s, ok := fn()
	if !ok {
		code, msg := cabi.Err()
		b.last = msg
		return nil, code
	}
	out := []Listed{}
	bad := func(l string) ([]Listed, int) {
		if b.violation == nil {
			b.violation = fmt.Errorf("%s: malformed line %q in %q", op, l, s)
		}
		return out, 0
	}
	if s == "" {
		return out, 0
	}
	if !strings.HasSuffix(s, "\n") {
		return bad(s)
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != fields {
			return bad(l)
		}
		nums := f[1:]
		var e Listed
		if fields == 6 {
			off, err := strconv.ParseUint(nums[0], 10, 64)
			if err != nil {
				return bad(l)
			}
			e.Offset, nums = off, nums[1:]
		}
		size, err1 := strconv.ParseUint(nums[0], 10, 64)
		mode, err2 := strconv.ParseUint(nums[1], 8, 32)
		uid, err3 := strconv.ParseUint(nums[2], 10, 32)
		gid, err4 := strconv.ParseUint(nums[3], 10, 32)
		if err := errors.Join(err1, err2, err3, err4); err != nil || len(nums[1]) != 4 {
			return bad(l)
		}
		e.Name, e.Size, e.Mode, e.UID, e.GID = f[0], size, uint32(mode), uint32(uid), uint32(gid)
		out = append(out, e)
	}
	return out, 0
}

func (b *cBackend) ContextOpen() (Handle, int) {
	return b.handle("fam_context_open", kindCtx, cabi.ContextOpen)
}

func (b *cBackend) ContextClose(c Handle) int {
	return b.call("fam_context_close", func() int { return cabi.ContextClose(h(c)) })
}

func (b *cBackend) Fence(c Ctx) int {
	return b.call("fam_fence", func() int { return cabi.Fence(h(c.H), c.On) })
}

func (b *cBackend) Quiet(c Ctx) int {
	return b.call("fam_quiet", func() int { return cabi.Quiet(h(c.H), c.On) })
}

func (b *cBackend) Progress(c Ctx) uint64 { return cabi.Progress(h(c.H), c.On) }

func (b *cBackend) Barrier() int {
	return b.call("fam_barrier_all", cabi.Barrier)
}

func (b *cBackend) PE() (int, int, int) {
	var id, n int
	code := b.call("fam_get_option", func() (rc int) {
		if id, rc = cabi.OptionInt("PE_ID"); rc != 0 {
			return rc
		}
		n, rc = cabi.OptionInt("PE_COUNT")
		return rc
	})
	return id, n, code
}
