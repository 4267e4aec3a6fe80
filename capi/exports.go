package capi

/*
#include <stdlib.h>
#include "ofam.h"
*/
import "C"

import (
	"fmt"
	"math/bits"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
)

// Each export below backs the openfam.h function named in its op constant
// (the C wrapper has already checked that the instance is ready and not a
// forked child). Exports return 0 / a handle / a pointer on success, and on
// failure set the thread's error and return -code / 0 / NULL. None lets a
// panic escape.

// maxBuffer bounds a local buffer length so that making a Go slice over it
// cannot fail; no data item is this large.
const maxBuffer = 1 << 47

// ---- life cycle ----------------------------------------------------------------

//export ofam_go_initialize
func ofam_go_initialize(group *C.char, opts *C.fam_options_t) (r C.int) {
	const op = "fam_initialize"
	defer recoverInt(op, &r)
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.fam.Load() != nil {
		return setError(errf(core.CodeInvalid, op, "already initialized (call fam_finalize first)"))
	}
	syncEnviron()
	o := core.DefaultOptions()
	if os.Getenv("OPENFAM_SPIN") == "" {
		// A C thread blocked in Go wakes through the poller and then
		// through cgo's hand-off to its own thread: polling for the reply
		// briefly halves a small remote call (see core.Options.Spin).
		o.Spin = cSpin
	}
	o.Group = goString(group)
	o.Settings = optionSettings(opts)
	f, err := core.Initialize(o)
	if err != nil {
		return setError(err)
	}
	inst.fam.Store(f)
	startPersist(f)
	C.ofam_set_ready(1)
	return 0
}

// cSpin is the C library's default of core.Options.Spin.
const cSpin = 100 * time.Microsecond

// optionSettings maps the non-NULL fields of fam_options_t to OpenFAM option
// names.
func optionSettings(opts *C.fam_options_t) map[string]string {
	s := map[string]string{}
	if opts == nil {
		return s
	}
	for _, f := range []struct {
		name string
		p    *C.char
	}{
		{"DEFAULT_REGION_NAME", opts.default_region_name},
		{"CIS_SERVER", opts.cis_server},
		{"GRPC_PORT", opts.grpc_port},
		{"LIBFABRIC_PROVIDER", opts.libfabric_provider},
		{"FAM_THREAD_MODEL", opts.fam_thread_model},
		{"CIS_INTERFACE_TYPE", opts.cis_interface_type},
		{"OPENFAM_MODEL", opts.openfam_model},
		{"FAM_CONTEXT_MODEL", opts.fam_context_model},
		{"NUM_CONSUMER", opts.num_consumer},
		{"RUNTIME", opts.runtime},
		{"FAM_DEFAULT_MEMORY_TYPE", opts.fam_default_memory_type},
		{"IF_DEVICE", opts.if_device},
	} {
		if f.p != nil {
			s[f.name] = C.GoString(f.p)
		}
	}
	if opts.local_buf_addr != nil {
		s["LOC_BUF_ADDR"] = fmt.Sprintf("%p", opts.local_buf_addr)
	}
	if opts.local_buf_size != 0 {
		s["LOC_BUF_SIZE"] = strconv.FormatUint(uint64(opts.local_buf_size), 10)
	}
	return s
}

//export ofam_go_finalize
func ofam_go_finalize(group *C.char) (r C.int) {
	const op = "fam_finalize"
	defer recoverInt(op, &r)
	_ = group // one instance per process: the group name selects nothing
	inst.mu.Lock()
	defer inst.mu.Unlock()
	f := inst.fam.Load()
	if f == nil {
		return setError(errNotInit(op))
	}
	// Stop the C fast path and new calls before the core unmaps anything.
	C.ofam_set_ready(0)
	inst.fam.Store(nil)
	releaseAll()
	return rc(f.Finalize())
}

//export ofam_go_abort
func ofam_go_abort(status C.int) (r C.int) {
	const op = "fam_abort"
	defer recoverInt(op, &r)
	f, err := instance(op)
	if err != nil {
		return setError(err)
	}
	return rc(f.Abort(int(status)))
}

//export ofam_go_barrier_all
func ofam_go_barrier_all() (r C.int) {
	const op = "fam_barrier_all"
	defer recoverInt(op, &r)
	f, err := instance(op)
	if err != nil {
		return setError(err)
	}
	return rc(f.Barrier())
}

//export ofam_go_list_options
func ofam_go_list_options() (p unsafe.Pointer) {
	const op = "fam_list_options"
	defer recoverPtr(op, &p)
	if _, err := instance(op); err != nil {
		setError(err)
		return nil
	}
	names := core.OptionNames()
	// One block: the NULL-terminated pointer array, then the strings, so the
	// caller releases everything with one free().
	ptrs := uintptr(len(names)+1) * unsafe.Sizeof(uintptr(0))
	total := ptrs
	for _, n := range names {
		total += uintptr(len(n) + 1)
	}
	p = C.malloc(C.size_t(total))
	if p == nil {
		setError(errNoMemory(op))
		return nil
	}
	arr := unsafe.Slice((**C.char)(p), len(names)+1)
	str := unsafe.Slice((*byte)(unsafe.Add(p, ptrs)), total-ptrs)
	at := 0
	for i, n := range names {
		copy(str[at:], n)
		str[at+len(n)] = 0
		arr[i] = (*C.char)(unsafe.Pointer(&str[at]))
		at += len(n) + 1
	}
	arr[len(names)] = nil
	return p
}

//export ofam_go_get_option
func ofam_go_get_option(name *C.char) (p unsafe.Pointer) {
	const op = "fam_get_option"
	defer recoverPtr(op, &p)
	f, err := instance(op)
	if err != nil {
		setError(err)
		return nil
	}
	n := C.GoString(name)
	v, err := f.Option(n)
	if err != nil {
		setError(err)
		return nil
	}
	// The C type follows the name, as in OpenFAM: int for PE*, uint64_t for
	// LOC_BUF_SIZE, a string otherwise.
	switch {
	case strings.HasPrefix(n, "PE"):
		i, err := optionInt(v)
		if err != nil {
			setError(errf(core.CodeInvalid, op, "option %s: %v", n, err))
			return nil
		}
		p = C.malloc(C.size_t(unsafe.Sizeof(C.int(0))))
		if p != nil {
			*(*C.int)(p) = C.int(i)
		}
	case n == "LOC_BUF_SIZE":
		i, err := optionInt(v)
		if err != nil {
			setError(errf(core.CodeInvalid, op, "option %s: %v", n, err))
			return nil
		}
		p = C.malloc(C.size_t(unsafe.Sizeof(C.uint64_t(0))))
		if p != nil {
			*(*C.uint64_t)(p) = C.uint64_t(i)
		}
	default:
		p = cStringMalloc(fmt.Sprint(v))
	}
	if p == nil {
		setError(errNoMemory(op))
	}
	return p
}

// optionInt reads an integer option value whatever Go type the core used.
func optionInt(v any) (uint64, error) {
	switch v := v.(type) {
	case int:
		return uint64(v), nil
	case uint64:
		return v, nil
	case string:
		return strconv.ParseUint(v, 0, 64)
	}
	return 0, fmt.Errorf("unexpected value %v (%T)", v, v)
}

// ---- regions --------------------------------------------------------------------

//export ofam_go_create_region
func ofam_go_create_region(name *C.char, size C.uint64_t, perm C.uint32_t, attr *C.fam_region_attr_t) (h C.uint64_t) {
	const op = "fam_create_region"
	defer recoverHandle(op, &h)
	f, err := instance(op)
	if err != nil {
		setError(err)
		return 0
	}
	if name == nil {
		setError(errf(core.CodeInvalid, op, "region name is NULL"))
		return 0
	}
	var a core.RegionAttr
	if attr != nil {
		// The enums are C ints; reject values a narrower Go type would wrap.
		if attr.redundancy_level > C.FAM_REDUNDANCY_RAID5 || attr.memory_type > C.FAM_MEMORY_PERSISTENT ||
			attr.interleave_enable > C.FAM_INTERLEAVE_DISABLE || attr.permission_level > C.FAM_PERMISSION_DATAITEM {
			setError(errf(core.CodeInvalid, op, "region attribute out of range (redundancy %d, memory %d, interleave %d, permission level %d)",
				attr.redundancy_level, attr.memory_type, attr.interleave_enable, attr.permission_level))
			return 0
		}
		a = core.RegionAttr{
			Redundancy: core.Redundancy(attr.redundancy_level),
			Memory:     core.MemoryType(attr.memory_type),
			Interleave: core.Interleave(attr.interleave_enable),
			PermLevel:  core.PermLevel(attr.permission_level),
		}
	}
	reg, err := f.CreateRegion(C.GoString(name), uint64(size), uint32(perm), a)
	if err != nil {
		setError(err)
		return 0
	}
	return regionHandle(op, reg)
}

// regionHandle registers reg; on failure it closes reg and returns 0.
func regionHandle(op string, reg *core.Region) C.uint64_t {
	e, err := newHandle(op, kindRegion, reg)
	if err != nil {
		reg.Close()
		setError(err)
		return 0
	}
	return C.uint64_t(e.h)
}

//export ofam_go_lookup_region
func ofam_go_lookup_region(name *C.char) (h C.uint64_t) {
	const op = "fam_lookup_region"
	defer recoverHandle(op, &h)
	f, err := instance(op)
	if err != nil {
		setError(err)
		return 0
	}
	if name == nil {
		setError(errf(core.CodeInvalid, op, "region name is NULL"))
		return 0
	}
	reg, err := f.LookupRegion(C.GoString(name))
	if err != nil {
		setError(err)
		return 0
	}
	return regionHandle(op, reg)
}

// region resolves a region handle.
func region(op string, h C.uint64_t) (*entry, *core.Region, error) {
	e, err := lookup(op, uint64(h), kindRegion)
	if err != nil {
		return nil, nil, err
	}
	return e, e.obj.(*core.Region), nil
}

//export ofam_go_destroy_region
func ofam_go_destroy_region(h C.uint64_t) (r C.int) {
	const op = "fam_destroy_region"
	defer recoverInt(op, &r)
	_, reg, err := region(op, h)
	if err != nil {
		return setError(err)
	}
	// The handle stays valid when the destroy fails (e.g. not the owner).
	if err := reg.Destroy(); err != nil {
		return setError(err)
	}
	release(uint64(h), kindRegion)
	return 0
}

//export ofam_go_close_region
func ofam_go_close_region(h C.uint64_t) (r C.int) {
	const op = "fam_close_region"
	defer recoverInt(op, &r)
	_, reg, err := region(op, h)
	if err != nil {
		return setError(err)
	}
	if err := reg.Close(); err != nil {
		return setError(err)
	}
	release(uint64(h), kindRegion)
	return 0
}

//export ofam_go_resize_region
func ofam_go_resize_region(h, n C.uint64_t) (r C.int) {
	const op = "fam_resize_region"
	defer recoverInt(op, &r)
	_, reg, err := region(op, h)
	if err != nil {
		return setError(err)
	}
	return rc(reg.Resize(uint64(n)))
}

// onEither resolves h as a region handle or a data item handle, as kind
// says, and applies the matching function: the exports that serve both
// (stat, global descriptor, permissions) differ only in the op name.
func onEither[T any](op string, h C.uint64_t, kind C.int, onRegion func(*core.Region) (T, error), onItem func(*core.Item) (T, error)) (T, error) {
	var zero T
	if kind == kindRegion {
		_, reg, err := region(op, h)
		if err != nil {
			return zero, err
		}
		return onRegion(reg)
	}
	_, it, err := item(op, h)
	if err != nil {
		return zero, err
	}
	return onItem(it)
}

// opFor names the call of an export serving regions and items.
func opFor(kind C.int, regionOp, itemOp string) string {
	if kind == kindRegion {
		return regionOp
	}
	return itemOp
}

//export ofam_go_change_permissions
func ofam_go_change_permissions(h C.uint64_t, kind C.int, perm C.uint32_t) (r C.int) {
	op := opFor(kind, "fam_change_region_permissions", "fam_change_permissions")
	defer recoverInt(op, &r)
	_, err := onEither(op, h, kind,
		func(reg *core.Region) (struct{}, error) { return struct{}{}, reg.ChangePermissions(uint32(perm)) },
		func(it *core.Item) (struct{}, error) { return struct{}{}, it.ChangePermissions(uint32(perm)) })
	return rc(err)
}

//export ofam_go_stat
func ofam_go_stat(h C.uint64_t, kind C.int, out *C.fam_stat_t) (r C.int) {
	op := opFor(kind, "fam_stat_region", "fam_stat")
	defer recoverInt(op, &r)
	st, err := onEither(op, h, kind, (*core.Region).Stat, (*core.Item).Stat)
	if err != nil {
		return setError(err)
	}
	if out == nil {
		return setError(errf(core.CodeInvalid, op, "out is NULL"))
	}
	// The name lives in the handle's slot, so the pointer stays valid until
	// the handle is released, as openfam.h promises.
	name := C.ofam_slot_name(C.uint64_t(h), (*C.char)(unsafe.Pointer(unsafe.StringData(st.Name))), C.size_t(len(st.Name)))
	if name == nil {
		return setError(errNoMemory(op))
	}
	*out = C.fam_stat_t{}
	out.size = C.uint64_t(st.Size)
	out.perm = C.mode_t(st.Mode)
	out.name = (*C.char)(unsafe.Pointer(name))
	out.uid = C.uint32_t(st.UID)
	out.gid = C.uint32_t(st.GID)
	out.region_attributes.redundancy_level = C.fam_redundancy_level_t(st.Attr.Redundancy)
	out.region_attributes.memory_type = C.fam_memory_type_t(st.Attr.Memory)
	out.region_attributes.interleave_enable = C.fam_interleave_t(st.Attr.Interleave)
	out.region_attributes.permission_level = C.fam_permission_level_t(st.Attr.PermLevel)
	out.num_memservers = C.uint64_t(st.NumServers)
	out.interleave_size = C.uint64_t(st.InterleaveSize)
	for i, s := range st.Servers {
		if i >= len(out.memory_servers) {
			break
		}
		out.memory_servers[i] = C.uint64_t(s)
	}
	return 0
}

//export ofam_go_global
func ofam_go_global(h C.uint64_t, kind C.int, out *C.fam_global_desc_t) (r C.int) {
	op := opFor(kind, "fam_region_global", "fam_desc_global")
	defer recoverInt(op, &r)
	g, err := onEither(op, h, kind, (*core.Region).Global, (*core.Item).Global)
	if err != nil {
		return setError(err)
	}
	if out == nil {
		return setError(errf(core.CodeInvalid, op, "out is NULL"))
	}
	out.region_id = C.uint64_t(g.RegionID)
	out.offset = C.uint64_t(g.Offset)
	return 0
}

//export ofam_go_from_global
func ofam_go_from_global(kind C.int, rid, off C.uint64_t) (h C.uint64_t) {
	op := opFor(kind, "fam_region_from_global", "fam_desc_from_global")
	defer recoverHandle(op, &h)
	f, err := instance(op)
	if err != nil {
		setError(err)
		return 0
	}
	g := core.GlobalDesc{RegionID: uint64(rid), Offset: uint64(off)}
	if kind == kindRegion {
		reg, err := f.RegionFromGlobal(g)
		if err != nil {
			setError(err)
			return 0
		}
		return regionHandle(op, reg)
	}
	it, err := f.ItemFromGlobal(g)
	if err != nil {
		setError(err)
		return 0
	}
	return itemHandle(op, it, true)
}

// ---- data items ---------------------------------------------------------------

// itemHandle registers it; on failure it closes it and returns 0.
func itemHandle(op string, it *core.Item, lazy bool) C.uint64_t {
	e, err := newItemHandle(op, it, lazy)
	if err != nil {
		it.Close()
		setError(err)
		return 0
	}
	return C.uint64_t(e.h)
}

// item resolves a data item handle.
func item(op string, h C.uint64_t) (*entry, *core.Item, error) {
	e, err := lookup(op, uint64(h), kindDesc)
	if err != nil {
		return nil, nil, err
	}
	return e, e.obj.(*core.Item), nil
}

//export ofam_go_allocate
func ofam_go_allocate(name *C.char, n C.uint64_t, perm C.uint32_t, rh C.uint64_t) (h C.uint64_t) {
	const op = "fam_allocate"
	defer recoverHandle(op, &h)
	_, reg, err := region(op, rh)
	if err != nil {
		setError(err)
		return 0
	}
	it, err := reg.Allocate(goString(name), uint64(n), uint32(perm))
	if err != nil {
		setError(err)
		return 0
	}
	return itemHandle(op, it, false)
}

//export ofam_go_lookup
func ofam_go_lookup(itemName, regionName *C.char) (h C.uint64_t) {
	const op = "fam_lookup"
	defer recoverHandle(op, &h)
	f, err := instance(op)
	if err != nil {
		setError(err)
		return 0
	}
	if itemName == nil || regionName == nil {
		setError(errf(core.CodeInvalid, op, "item or region name is NULL"))
		return 0
	}
	it, err := f.Lookup(C.GoString(itemName), C.GoString(regionName))
	if err != nil {
		setError(err)
		return 0
	}
	return itemHandle(op, it, false)
}

//export ofam_go_deallocate
func ofam_go_deallocate(h C.uint64_t) (r C.int) {
	const op = "fam_deallocate"
	defer recoverInt(op, &r)
	e, it, err := item(op, h)
	if err != nil {
		return setError(err)
	}
	// Route this handle's data path through Go while the memory goes away;
	// if the deallocation fails the handle stays valid and gets its view back.
	// Its watcher is unhooked meanwhile: the handle is released right after
	// a deallocation, so republishing its (empty) view from the watcher
	// would be a call into C and a cold closure for nothing (issue 18).
	e.clearView()
	it.Watch(nil)
	if err := it.Deallocate(); err != nil {
		e.watch(it)
		e.refresh()
		return setError(err)
	}
	release(uint64(h), kindDesc)
	return 0
}

//export ofam_go_close
func ofam_go_close(h C.uint64_t) (r C.int) {
	const op = "fam_close"
	defer recoverInt(op, &r)
	e := release(uint64(h), kindDesc)
	if e == nil {
		return setError(badHandleOrNull(op, uint64(h), kindDesc))
	}
	return rc(e.obj.(*core.Item).Close())
}

// badHandleOrNull is lookup's error for a handle that is not live.
func badHandleOrNull(op string, h uint64, kind uint32) error {
	_, err := lookup(op, h, kind)
	if err == nil {
		// Released by another thread between the two checks.
		return badHandle(op, h, kind)
	}
	return err
}

// ---- data path ------------------------------------------------------------------

var xferNames = [2][4]string{
	{"fam_get_blocking", "fam_put_blocking", "fam_get_nonblocking", "fam_put_nonblocking"},
	{"fam_ctx_get_blocking", "fam_ctx_put_blocking", "fam_ctx_get_nonblocking", "fam_ctx_put_nonblocking"},
}

// xferName names a transfer for messages.
func xferName(names *[2][4]string, ctx C.uint64_t, op C.int) string {
	i := 0
	if ctx != 0 {
		i = 1
	}
	if op < 0 || int(op) >= len(names[i]) {
		return "fam_transfer"
	}
	return names[i][op]
}

// context resolves a context handle; 0 is the default context.
func context(op string, f *core.Fam, h C.uint64_t) (*core.Context, error) {
	if h == 0 {
		return f.Default(), nil
	}
	e, err := lookup(op, uint64(h), kindCtx)
	if err != nil {
		return nil, err
	}
	return e.obj.(*core.Context), nil
}

// dataArgs resolves the instance, context and item of a data-path call.
func dataArgs(op string, ctx, h C.uint64_t) (*core.Context, *entry, *core.Item, error) {
	f, err := instance(op)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := context(op, f, ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	e, it, err := item(op, h)
	if err != nil {
		return nil, nil, nil, err
	}
	return c, e, it, nil
}

// localBuffer makes a Go slice over n bytes of C memory at p.
func localBuffer(op string, p unsafe.Pointer, n uint64) ([]byte, error) {
	if n == 0 {
		return []byte{}, nil
	}
	if p == nil {
		return nil, errf(core.CodeInvalid, op, "local buffer is NULL")
	}
	if n > maxBuffer {
		return nil, errf(core.CodeOutOfRange, op, "%d bytes is larger than any data item", n)
	}
	return unsafe.Slice((*byte)(p), n), nil
}

//export ofam_go_rw
func ofam_go_rw(ctx C.uint64_t, xfer C.int, local unsafe.Pointer, h, off, n C.uint64_t) (r C.int) {
	op := xferName(&xferNames, ctx, xfer)
	defer recoverInt(op, &r)
	c, e, it, err := dataArgs(op, ctx, h)
	if err != nil {
		return setError(err)
	}
	buf, err := localBuffer(op, local, uint64(n))
	if err != nil {
		return setError(err)
	}
	switch xfer {
	case C.OFAM_XFER_GET:
		err = c.Get(buf, it, uint64(off))
	case C.OFAM_XFER_PUT:
		err = c.Put(buf, it, uint64(off))
	case C.OFAM_XFER_GET_NB:
		err = c.GetNB(buf, it, uint64(off))
	default:
		err = c.PutNB(buf, it, uint64(off))
	}
	if err != nil {
		return setError(err)
	}
	e.afterSlowOp()
	return 0
}

var stridedNames = [2][4]string{
	{"fam_gather_blocking_strided", "fam_scatter_blocking_strided", "fam_gather_nonblocking_strided", "fam_scatter_nonblocking_strided"},
	{"fam_ctx_gather_blocking_strided", "fam_ctx_scatter_blocking_strided", "fam_ctx_gather_nonblocking_strided", "fam_ctx_scatter_nonblocking_strided"},
}

var indexedNames = [2][4]string{
	{"fam_gather_blocking_indexed", "fam_scatter_blocking_indexed", "fam_gather_nonblocking_indexed", "fam_scatter_nonblocking_indexed"},
	{"fam_ctx_gather_blocking_indexed", "fam_ctx_scatter_blocking_indexed", "fam_ctx_gather_nonblocking_indexed", "fam_ctx_scatter_nonblocking_indexed"},
}

// elementsBuffer makes the local buffer of n elements of esize bytes.
func elementsBuffer(op string, local unsafe.Pointer, n, esize uint64) ([]byte, error) {
	hi, total := bits.Mul64(n, esize)
	if hi != 0 {
		return nil, errf(core.CodeOutOfRange, op, "%d elements of %d bytes overflow", n, esize)
	}
	return localBuffer(op, local, total)
}

//export ofam_go_strided
func ofam_go_strided(ctx C.uint64_t, xfer C.int, local unsafe.Pointer, h, n, first, stride, esize C.uint64_t) (r C.int) {
	op := xferName(&stridedNames, ctx, xfer)
	defer recoverInt(op, &r)
	c, e, it, err := dataArgs(op, ctx, h)
	if err != nil {
		return setError(err)
	}
	buf, err := elementsBuffer(op, local, uint64(n), uint64(esize))
	if err != nil {
		return setError(err)
	}
	nb := xfer == C.OFAM_XFER_GET_NB || xfer == C.OFAM_XFER_PUT_NB
	if xfer == C.OFAM_XFER_GET || xfer == C.OFAM_XFER_GET_NB {
		err = c.GatherStrided(buf, it, uint64(n), uint64(first), uint64(stride), uint64(esize), nb)
	} else {
		err = c.ScatterStrided(buf, it, uint64(n), uint64(first), uint64(stride), uint64(esize), nb)
	}
	if err != nil {
		return setError(err)
	}
	e.afterSlowOp()
	return 0
}

//export ofam_go_indexed
func ofam_go_indexed(ctx C.uint64_t, xfer C.int, local unsafe.Pointer, h, n C.uint64_t, index *C.uint64_t, esize C.uint64_t) (r C.int) {
	op := xferName(&indexedNames, ctx, xfer)
	defer recoverInt(op, &r)
	c, e, it, err := dataArgs(op, ctx, h)
	if err != nil {
		return setError(err)
	}
	buf, err := elementsBuffer(op, local, uint64(n), uint64(esize))
	if err != nil {
		return setError(err)
	}
	if n > 0 && index == nil {
		return setError(errf(core.CodeInvalid, op, "index array is NULL"))
	}
	if uint64(n) > maxBuffer/8 {
		return setError(errf(core.CodeOutOfRange, op, "%d indexes is more than any data item holds", n))
	}
	// The index array is the caller's and is not retained: copy it, since a
	// non-blocking transfer may still read it after this call returns.
	idx := make([]uint64, n)
	if n > 0 {
		copy(idx, unsafe.Slice((*uint64)(unsafe.Pointer(index)), n))
	}
	nb := xfer == C.OFAM_XFER_GET_NB || xfer == C.OFAM_XFER_PUT_NB
	if xfer == C.OFAM_XFER_GET || xfer == C.OFAM_XFER_GET_NB {
		err = c.GatherIndexed(buf, it, idx, uint64(esize), nb)
	} else {
		err = c.ScatterIndexed(buf, it, idx, uint64(esize), nb)
	}
	if err != nil {
		return setError(err)
	}
	e.afterSlowOp()
	return 0
}

//export ofam_go_map
func ofam_go_map(h C.uint64_t) (p unsafe.Pointer) {
	const op = "fam_map"
	defer recoverPtr(op, &p)
	_, it, err := item(op, h)
	if err != nil {
		setError(err)
		return nil
	}
	b, err := it.Map()
	if err != nil {
		setError(err)
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

//export ofam_go_unmap
func ofam_go_unmap(p unsafe.Pointer, h C.uint64_t) (r C.int) {
	const op = "fam_unmap"
	defer recoverInt(op, &r)
	_, it, err := item(op, h)
	if err != nil {
		return setError(err)
	}
	if p == nil {
		return setError(errf(core.CodeInvalid, op, "address is NULL"))
	}
	return rc(it.Unmap(p))
}

// ---- copy, backup, waits ---------------------------------------------------------------

// waitHandle registers w as a wait handle completed by the given *_wait call.
func waitHandle(op string, w *core.Wait, which C.int) C.uint64_t {
	e, err := newHandle(op, kindWait, &waitObj{w: w, which: which})
	if err != nil {
		// Nobody can wait for it any more; let it finish on its own.
		go w.Wait()
		setError(err)
		return 0
	}
	return C.uint64_t(e.h)
}

//export ofam_go_copy
func ofam_go_copy(ctx, src, srcOff, dst, dstOff, n C.uint64_t) (h C.uint64_t) {
	op := "fam_copy"
	if ctx != 0 {
		op = "fam_ctx_copy"
	}
	defer recoverHandle(op, &h)
	c, _, s, err := dataArgs(op, ctx, src)
	if err != nil {
		setError(err)
		return 0
	}
	_, d, err := item(op, dst)
	if err != nil {
		setError(err)
		return 0
	}
	w, err := c.Copy(s, uint64(srcOff), d, uint64(dstOff), uint64(n))
	if err != nil {
		setError(err)
		return 0
	}
	return waitHandle(op, w, C.OFAM_WAIT_COPY)
}

var waitNames = map[C.int]string{
	C.OFAM_WAIT_COPY:          "fam_copy_wait",
	C.OFAM_WAIT_BACKUP:        "fam_backup_wait",
	C.OFAM_WAIT_RESTORE:       "fam_restore_wait",
	C.OFAM_WAIT_DELETE_BACKUP: "fam_delete_backup_wait",
}

var waitStarters = map[C.int]string{
	C.OFAM_WAIT_COPY:          "fam_copy",
	C.OFAM_WAIT_BACKUP:        "fam_backup",
	C.OFAM_WAIT_RESTORE:       "fam_restore",
	C.OFAM_WAIT_DELETE_BACKUP: "fam_delete_backup",
}

//export ofam_go_wait
func ofam_go_wait(h C.uint64_t, which C.int) (r C.int) {
	op := waitNames[which]
	defer recoverInt(op, &r)
	e, err := lookup(op, uint64(h), kindWait)
	if err != nil {
		return setError(err)
	}
	wo := e.obj.(*waitObj)
	if wo.which != which {
		return setError(errf(core.CodeInvalid, op, "wait handle comes from %s; complete it with %s",
			waitStarters[wo.which], waitNames[wo.which]))
	}
	// Releasing first claims the handle: a second wait on it fails cleanly.
	if release(uint64(h), kindWait) == nil {
		return setError(badHandleOrNull(op, uint64(h), kindWait))
	}
	return rc(wo.w.Wait())
}

//export ofam_go_backup
func ofam_go_backup(src C.uint64_t, name *C.char) (h C.uint64_t) {
	const op = "fam_backup"
	defer recoverHandle(op, &h)
	f, err := instance(op)
	if err != nil {
		setError(err)
		return 0
	}
	_, it, err := item(op, src)
	if err != nil {
		setError(err)
		return 0
	}
	if name == nil {
		setError(errf(core.CodeInvalid, op, "backup name is NULL"))
		return 0
	}
	w, err := f.Backup(it, C.GoString(name))
	if err != nil {
		setError(err)
		return 0
	}
	return waitHandle(op, w, C.OFAM_WAIT_BACKUP)
}

//export ofam_go_restore
func ofam_go_restore(name *C.char, dst C.uint64_t) (h C.uint64_t) {
	const op = "fam_restore"
	defer recoverHandle(op, &h)
	f, err := instance(op)
	if err != nil {
		setError(err)
		return 0
	}
	if name == nil {
		setError(errf(core.CodeInvalid, op, "backup name is NULL"))
		return 0
	}
	_, it, err := item(op, dst)
	if err != nil {
		setError(err)
		return 0
	}
	w, err := f.Restore(C.GoString(name), it)
	if err != nil {
		setError(err)
		return 0
	}
	return waitHandle(op, w, C.OFAM_WAIT_RESTORE)
}

//export ofam_go_restore_region
func ofam_go_restore_region(name *C.char, rh C.uint64_t, itemName *C.char, perm C.uint32_t, out *C.uint64_t) (h C.uint64_t) {
	const op = "fam_restore_region"
	defer recoverHandle(op, &h)
	f, err := instance(op)
	if err != nil {
		setError(err)
		return 0
	}
	if name == nil {
		setError(errf(core.CodeInvalid, op, "backup name is NULL"))
		return 0
	}
	_, reg, err := region(op, rh)
	if err != nil {
		setError(err)
		return 0
	}
	w, it, err := f.RestoreNew(C.GoString(name), reg, goString(itemName), uint32(perm))
	if err != nil {
		setError(err)
		return 0
	}
	ih := itemHandle(op, it, false)
	if ih == 0 {
		go w.Wait()
		return 0
	}
	wh := waitHandle(op, w, C.OFAM_WAIT_RESTORE)
	if wh == 0 {
		if e := release(uint64(ih), kindDesc); e != nil {
			it.Close()
		}
		return 0
	}
	*out = ih
	return wh
}

//export ofam_go_delete_backup
func ofam_go_delete_backup(name *C.char) (h C.uint64_t) {
	const op = "fam_delete_backup"
	defer recoverHandle(op, &h)
	f, err := instance(op)
	if err != nil {
		setError(err)
		return 0
	}
	if name == nil {
		setError(errf(core.CodeInvalid, op, "backup name is NULL"))
		return 0
	}
	w, err := f.DeleteBackup(C.GoString(name))
	if err != nil {
		setError(err)
		return 0
	}
	return waitHandle(op, w, C.OFAM_WAIT_DELETE_BACKUP)
}

//export ofam_go_list_backup
func ofam_go_list_backup(name *C.char) *C.char {
	const op = "fam_list_backup"
	return textResult(op, func() (string, error) {
		f, err := instance(op)
		if err != nil {
			return "", err
		}
		return f.ListBackups(goString(name))
	})
}

// ---- listing ------------------------------------------------------------------------------

// textResult runs fn and hands its text to C as one malloc'd string (the
// caller frees it); an error or a panic becomes the thread's error and
// NULL.
func textResult(op string, fn func() (string, error)) (p *C.char) {
	defer func() {
		if r := recover(); r != nil {
			setError(panicError(op, r))
			p = nil
		}
	}()
	s, err := fn()
	if err != nil {
		setError(err)
		return nil
	}
	m := cStringMalloc(s)
	if m == nil {
		setError(errNoMemory(op))
	}
	return (*C.char)(m)
}

// listingName returns name for a tab-separated listing line. Names cannot
// hold a tab, newline or other control character (the core refuses them
// when a region or item is made), so a line always splits into its fields;
// a name that somehow does is reported rather than listed ambiguously.
func listingName(op, what, name string) (string, error) {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f {
			return "", errf(core.CodeMetadata, op, "%s name %q holds a control character; it cannot be listed", what, name)
		}
	}
	return name, nil
}

//export ofam_go_list_regions
func ofam_go_list_regions() *C.char {
	const op = "fam_list_regions"
	return textResult(op, func() (string, error) {
		f, err := instance(op)
		if err != nil {
			return "", err
		}
		rs, err := f.Regions()
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, r := range rs {
			name, err := listingName(op, "region", r.Name)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "%s\t%d\t%04o\t%d\t%d\n", name, r.Size, r.Mode, r.UID, r.GID)
		}
		return b.String(), nil
	})
}

//export ofam_go_list_items
func ofam_go_list_items(h C.uint64_t) *C.char {
	const op = "fam_list_items"
	return textResult(op, func() (string, error) {
		_, reg, err := region(op, h)
		if err != nil {
			return "", err
		}
		items, err := reg.Items()
		if err != nil {
			return "", err
		}
		offs := make([]uint64, 0, len(items))
		for off := range items {
			offs = append(offs, off)
		}
		slices.Sort(offs)
		var b strings.Builder
		for _, off := range offs {
			it := items[off]
			name, err := listingName(op, "item", it.Name)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "%s\t%d\t%d\t%04o\t%d\t%d\n", name, off, it.Size, it.Mode, it.UID, it.GID)
		}
		return b.String(), nil
	})
}

// ---- ordering and contexts --------------------------------------------------------------

// contextOnly resolves the context of fence, quiet and progress.
func contextOnly(op string, ctx C.uint64_t) (*core.Context, error) {
	f, err := instance(op)
	if err != nil {
		return nil, err
	}
	return context(op, f, ctx)
}

// ctxOp picks the fam_ or fam_ctx_ name of an operation.
func ctxOp(ctx C.uint64_t, plain, withCtx string) string {
	if ctx != 0 {
		return withCtx
	}
	return plain
}

//export ofam_go_fence
func ofam_go_fence(ctx C.uint64_t) (r C.int) {
	op := ctxOp(ctx, "fam_fence", "fam_ctx_fence")
	defer recoverInt(op, &r)
	c, err := contextOnly(op, ctx)
	if err != nil {
		return setError(err)
	}
	return rc(c.Fence())
}

//export ofam_go_quiet
func ofam_go_quiet(ctx C.uint64_t) (r C.int) {
	op := ctxOp(ctx, "fam_quiet", "fam_ctx_quiet")
	defer recoverInt(op, &r)
	c, err := contextOnly(op, ctx)
	if err != nil {
		return setError(err)
	}
	return rc(c.Quiet())
}

//export ofam_go_progress
func ofam_go_progress(ctx C.uint64_t) (n C.uint64_t) {
	op := ctxOp(ctx, "fam_progress", "fam_ctx_progress")
	defer recoverU64(op, &n)
	c, err := contextOnly(op, ctx)
	if err != nil {
		setError(err)
		return 0
	}
	return C.uint64_t(c.Progress())
}

//export ofam_go_context_open
func ofam_go_context_open() (h C.uint64_t) {
	const op = "fam_context_open"
	defer recoverHandle(op, &h)
	f, err := instance(op)
	if err != nil {
		setError(err)
		return 0
	}
	c, err := f.OpenContext()
	if err != nil {
		setError(err)
		return 0
	}
	e, err := newHandle(op, kindCtx, c)
	if err != nil {
		c.Close()
		setError(err)
		return 0
	}
	return C.uint64_t(e.h)
}

//export ofam_go_context_close
func ofam_go_context_close(h C.uint64_t) (r C.int) {
	const op = "fam_context_close"
	defer recoverInt(op, &r)
	e := release(uint64(h), kindCtx)
	if e == nil {
		return setError(badHandleOrNull(op, uint64(h), kindCtx))
	}
	return rc(e.obj.(*core.Context).Close())
}

// ---- atomics ----------------------------------------------------------------------------

//export ofam_go_atomic
func ofam_go_atomic(ctx, h, off C.uint64_t, kind, opc C.int, vlo, vhi, clo, chi C.uint64_t, fetch C.int, out unsafe.Pointer) (r C.int) {
	op := atomicName(ctx, kind, opc, fetch)
	defer recoverInt(op, &r)
	c, e, it, err := dataArgs(op, ctx, h)
	if err != nil {
		return setError(err)
	}
	k := core.Kind(kind)
	old, err := c.Atomic(it, uint64(off), k, core.Op(opc),
		core.Value{Lo: uint64(vlo), Hi: uint64(vhi)}, core.Value{Lo: uint64(clo), Hi: uint64(chi)}, fetch != 0)
	if err != nil {
		return setError(err)
	}
	if fetch != 0 {
		switch k.Size() {
		case 4:
			*(*uint32)(out) = uint32(old.Lo)
		case 8:
			*(*uint64)(out) = old.Lo
		case 16:
			// The little-endian layout of __int128: low half first.
			w := (*[2]uint64)(out)
			w[0], w[1] = old.Lo, old.Hi
		}
	}
	e.afterSlowOp()
	return 0
}

// atomicName names the openfam.h function of an atomic for messages, e.g.
// fam_ctx_fetch_add_int64 (amo.FuncName, from
// internal/gentables/atomics.table).
func atomicName(ctx C.uint64_t, kind, opc, fetch C.int) string {
	var name string
	if opc >= 0 && opc <= 0xff && kind >= 0 && kind <= 0xff { // amo.Op and amo.Kind are uint8
		name = amo.FuncName(amo.Kind(kind), amo.Op(opc), fetch != 0)
	}
	if name == "" {
		return ctxOp(ctx, "fam_atomic", "fam_ctx_atomic")
	}
	if ctx != 0 {
		return "fam_ctx_" + strings.TrimPrefix(name, "fam_")
	}
	return name
}
