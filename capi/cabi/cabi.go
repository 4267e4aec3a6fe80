// Package cabi calls the C functions of include/openfam.h from Go, for tests
// that must exercise the C ABI itself (the executable specifications in
// features/) rather than the Go core behind it.
//
// Importing cabi links package capi, and with it the C implementation of
// libopenfam, statically into the program: the calls below run the same C
// code a C program linked with libopenfam.so runs, without a second Go
// runtime (loading libopenfam.so into a Go process with dlopen would start
// one, and two Go runtimes in one process hang).
//
// Handles are the opaque C pointers of openfam.h carried as uintptr (0 is
// NULL). Functions returning int return what the C function returned: 0 or
// a negative FAM_E* code; Err reports the calling thread's fam_errcode and
// fam_errmsg. fam_errcode is thread-local in C, so a caller that checks it
// must stay on one OS thread (runtime.LockOSThread) across the call and Err.
//
// Buffers passed as unsafe.Pointer must be C memory (Malloc) whenever the C
// library may use them after the call returns (non-blocking transfers until
// the next quiet): Go memory may not be retained by C.
package cabi

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -std=gnu11 -Wall
#include <stdlib.h>
#include <string.h>
#include "openfam.h"

typedef int32_t cabi_int32;
typedef int64_t cabi_int64;
typedef uint32_t cabi_uint32;
typedef uint64_t cabi_uint64;
typedef float cabi_float;
typedef double cabi_double;
typedef fam_int128_t cabi_int128;

// Operands cross as two 64-bit words of raw bits (core/amo's Value).
static inline cabi_int32 in_int32(uint64_t lo, uint64_t hi) { (void)hi; return (int32_t)(uint32_t)lo; }
static inline cabi_int64 in_int64(uint64_t lo, uint64_t hi) { (void)hi; return (int64_t)lo; }
static inline cabi_uint32 in_uint32(uint64_t lo, uint64_t hi) { (void)hi; return (uint32_t)lo; }
static inline cabi_uint64 in_uint64(uint64_t lo, uint64_t hi) { (void)hi; return lo; }
static inline cabi_float in_float(uint64_t lo, uint64_t hi) { (void)hi; uint32_t b = (uint32_t)lo; float f; memcpy(&f, &b, 4); return f; }
static inline cabi_double in_double(uint64_t lo, uint64_t hi) { (void)hi; double d; memcpy(&d, &lo, 8); return d; }
static inline cabi_int128 in_int128(uint64_t lo, uint64_t hi) { return (cabi_int128)(((unsigned __int128)hi << 64) | lo); }

static inline void out_int32(cabi_int32 v, uint64_t *o) { o[0] = (uint32_t)v; o[1] = 0; }
static inline void out_int64(cabi_int64 v, uint64_t *o) { o[0] = (uint64_t)v; o[1] = 0; }
static inline void out_uint32(cabi_uint32 v, uint64_t *o) { o[0] = v; o[1] = 0; }
static inline void out_uint64(cabi_uint64 v, uint64_t *o) { o[0] = v; o[1] = 0; }
static inline void out_float(cabi_float v, uint64_t *o) { uint32_t b; memcpy(&b, &v, 4); o[0] = b; o[1] = 0; }
static inline void out_double(cabi_double v, uint64_t *o) { memcpy(&o[0], &v, 8); o[1] = 0; }
static inline void out_int128(cabi_int128 v, uint64_t *o) { o[0] = (uint64_t)v; o[1] = (uint64_t)((unsigned __int128)v >> 64); }

// Kind and operation numbers are core/amo's (checked against capi's enums
// by capi/enums.go, whose ofam.h values equal these).
enum { K_int32 = 1, K_int64, K_uint32, K_uint64, K_float, K_double, K_int128 };
enum { OP_SET = 1, OP_FETCH, OP_ADD, OP_SUBTRACT, OP_MIN, OP_MAX, OP_AND, OP_OR, OP_XOR, OP_SWAP, OP_CSWAP };

// No openfam.h function exists for this (kind, op, fetch).
#define CABI_NOFUNC 1000

#define D ((fam_desc_t *)(uintptr_t)d)
#define C ((fam_ctx_t *)(uintptr_t)c)
#define V(T) in_##T(vlo, vhi)

#define NF(name, T) case K_##T: return onctx ? fam_ctx_##name##_##T(C, D, off, V(T)) : fam_##name##_##T(D, off, V(T));
#define FE(name, T) case K_##T: { cabi_##T o = 0; int rc = onctx ? fam_ctx_##name##_##T(C, D, off, V(T), &o) : fam_##name##_##T(D, off, V(T), &o); out_##T(o, out); return rc; }
#define RD(T) case K_##T: { cabi_##T o = 0; int rc = onctx ? fam_ctx_fetch_##T(C, D, off, &o) : fam_fetch_##T(D, off, &o); out_##T(o, out); return rc; }
#define CS(T) case K_##T: { cabi_##T o = 0; int rc = onctx ? fam_ctx_compare_swap_##T(C, D, off, in_##T(clo, chi), V(T), &o) : fam_compare_swap_##T(D, off, in_##T(clo, chi), V(T), &o); out_##T(o, out); return rc; }
#define NUM6(M, name) M(name, int32) M(name, int64) M(name, uint32) M(name, uint64) M(name, float) M(name, double)
#define UNS2(M, name) M(name, uint32) M(name, uint64)

static int cabi_nonfetch(uint64_t c, int onctx, uint64_t d, uint64_t off, int kind, int op, uint64_t vlo, uint64_t vhi)
{
    switch (op) {
    case OP_SET: switch (kind) { NUM6(NF, set) NF(set, int128) } break;
    case OP_ADD: switch (kind) { NUM6(NF, add) } break;
    case OP_SUBTRACT: switch (kind) { NUM6(NF, subtract) } break;
    case OP_MIN: switch (kind) { NUM6(NF, min) } break;
    case OP_MAX: switch (kind) { NUM6(NF, max) } break;
    case OP_AND: switch (kind) { UNS2(NF, and) } break;
    case OP_OR: switch (kind) { UNS2(NF, or) } break;
    case OP_XOR: switch (kind) { UNS2(NF, xor) } break;
    }
    return CABI_NOFUNC;
}

static int cabi_fetch(uint64_t c, int onctx, uint64_t d, uint64_t off, int kind, int op, uint64_t vlo, uint64_t vhi,
                      uint64_t clo, uint64_t chi, uint64_t *out)
{
    switch (op) {
    case OP_FETCH: switch (kind) { RD(int32) RD(int64) RD(uint32) RD(uint64) RD(float) RD(double) RD(int128) } break;
    case OP_ADD: switch (kind) { NUM6(FE, fetch_add) } break;
    case OP_SUBTRACT: switch (kind) { NUM6(FE, fetch_subtract) } break;
    case OP_MIN: switch (kind) { NUM6(FE, fetch_min) } break;
    case OP_MAX: switch (kind) { NUM6(FE, fetch_max) } break;
    case OP_AND: switch (kind) { UNS2(FE, fetch_and) } break;
    case OP_OR: switch (kind) { UNS2(FE, fetch_or) } break;
    case OP_XOR: switch (kind) { UNS2(FE, fetch_xor) } break;
    case OP_SWAP: switch (kind) { NUM6(FE, swap) } break;
    case OP_CSWAP: switch (kind) { CS(int32) CS(int64) CS(uint32) CS(uint64) CS(int128) } break;
    }
    return CABI_NOFUNC;
}

enum { X_GET, X_PUT, X_GET_NB, X_PUT_NB };

static int cabi_rw(uint64_t c, int onctx, int x, void *local, uint64_t d, uint64_t off, uint64_t n)
{
    switch (x) {
    case X_GET: return onctx ? fam_ctx_get_blocking(C, local, D, off, n) : fam_get_blocking(local, D, off, n);
    case X_PUT: return onctx ? fam_ctx_put_blocking(C, local, D, off, n) : fam_put_blocking(local, D, off, n);
    case X_GET_NB: return onctx ? fam_ctx_get_nonblocking(C, local, D, off, n) : fam_get_nonblocking(local, D, off, n);
    case X_PUT_NB: return onctx ? fam_ctx_put_nonblocking(C, local, D, off, n) : fam_put_nonblocking(local, D, off, n);
    }
    return CABI_NOFUNC;
}

static int cabi_strided(uint64_t c, int onctx, int x, void *local, uint64_t d, uint64_t n, uint64_t first,
                        uint64_t stride, uint64_t es)
{
    switch (x) {
    case X_GET: return onctx ? fam_ctx_gather_blocking_strided(C, local, D, n, first, stride, es) : fam_gather_blocking_strided(local, D, n, first, stride, es);
    case X_PUT: return onctx ? fam_ctx_scatter_blocking_strided(C, local, D, n, first, stride, es) : fam_scatter_blocking_strided(local, D, n, first, stride, es);
    case X_GET_NB: return onctx ? fam_ctx_gather_nonblocking_strided(C, local, D, n, first, stride, es) : fam_gather_nonblocking_strided(local, D, n, first, stride, es);
    case X_PUT_NB: return onctx ? fam_ctx_scatter_nonblocking_strided(C, local, D, n, first, stride, es) : fam_scatter_nonblocking_strided(local, D, n, first, stride, es);
    }
    return CABI_NOFUNC;
}

static int cabi_indexed(uint64_t c, int onctx, int x, void *local, uint64_t d, uint64_t n, const uint64_t *idx,
                        uint64_t es)
{
    switch (x) {
    case X_GET: return onctx ? fam_ctx_gather_blocking_indexed(C, local, D, n, idx, es) : fam_gather_blocking_indexed(local, D, n, idx, es);
    case X_PUT: return onctx ? fam_ctx_scatter_blocking_indexed(C, local, D, n, idx, es) : fam_scatter_blocking_indexed(local, D, n, idx, es);
    case X_GET_NB: return onctx ? fam_ctx_gather_nonblocking_indexed(C, local, D, n, idx, es) : fam_gather_nonblocking_indexed(local, D, n, idx, es);
    case X_PUT_NB: return onctx ? fam_ctx_scatter_nonblocking_indexed(C, local, D, n, idx, es) : fam_scatter_nonblocking_indexed(local, D, n, idx, es);
    }
    return CABI_NOFUNC;
}

static int cabi_option_int(const char *name, int *out)
{
    const int *p = fam_get_option(name);
    if (p == NULL)
        return -fam_errcode();
    *out = *p;
    free((void *)p);
    return 0;
}


// Handles cross into Go as integers only: they are encoded slot numbers,
// not addresses, and must never sit in a Go pointer variable.
#define R(h) ((fam_region_t *)(uintptr_t)(h))
#define DD(h) ((fam_desc_t *)(uintptr_t)(h))
#define CC(h) ((fam_ctx_t *)(uintptr_t)(h))
#define W(h) ((fam_wait_t *)(uintptr_t)(h))
#define U(p) ((uint64_t)(uintptr_t)(p))
static uint64_t s_create_region(const char *n, uint64_t size, mode_t m, fam_region_attr_t *a) { return U(fam_create_region(n, size, m, a)); }
static uint64_t s_lookup_region(const char *n) { return U(fam_lookup_region(n)); }
static int s_destroy_region(uint64_t r) { return fam_destroy_region(R(r)); }
static int s_close_region(uint64_t r) { return fam_close_region(R(r)); }
static int s_resize_region(uint64_t r, uint64_t n) { return fam_resize_region(R(r), n); }
static int s_change_region_permissions(uint64_t r, mode_t m) { return fam_change_region_permissions(R(r), m); }
static int s_stat_region(uint64_t r, fam_stat_t *o) { return fam_stat_region(R(r), o); }
static int s_region_global(uint64_t r, fam_global_desc_t *o) { return fam_region_global(R(r), o); }
static char *s_list_items(uint64_t r) { return fam_list_items(R(r)); }
static uint64_t s_region_from_global(uint64_t id, uint64_t off) { fam_global_desc_t g = {id, off}; return U(fam_region_from_global(g)); }
static uint64_t s_allocate(const char *n, uint64_t size, mode_t m, uint64_t r) { return U(fam_allocate(n, size, m, R(r))); }
static uint64_t s_lookup(const char *i, const char *r) { return U(fam_lookup(i, r)); }
static int s_deallocate(uint64_t d) { return fam_deallocate(DD(d)); }
static int s_close(uint64_t d) { return fam_close(DD(d)); }
static int s_change_permissions(uint64_t d, mode_t m) { return fam_change_permissions(DD(d), m); }
static int s_stat(uint64_t d, fam_stat_t *o) { return fam_stat(DD(d), o); }
static int s_desc_global(uint64_t d, fam_global_desc_t *o) { return fam_desc_global(DD(d), o); }
static uint64_t s_desc_from_global(uint64_t id, uint64_t off) { fam_global_desc_t g = {id, off}; return U(fam_desc_from_global(g)); }
static void *s_map(uint64_t d) { return fam_map(DD(d)); }
static int s_unmap(void *p, uint64_t d) { return fam_unmap(p, DD(d)); }
static uint64_t s_copy(uint64_t c, int onctx, uint64_t s, uint64_t so, uint64_t d, uint64_t dof, uint64_t n) { return U(onctx ? fam_ctx_copy(CC(c), DD(s), so, DD(d), dof, n) : fam_copy(DD(s), so, DD(d), dof, n)); }
static int s_copy_wait(uint64_t w) { return fam_copy_wait(W(w)); }
static uint64_t s_backup(uint64_t d, const char *n) { return U(fam_backup(DD(d), n, NULL)); }
static int s_backup_wait(uint64_t w) { return fam_backup_wait(W(w)); }
static uint64_t s_restore(const char *n, uint64_t d) { return U(fam_restore(n, DD(d))); }
static uint64_t s_restore_region(const char *n, uint64_t r, const char *i, mode_t m, uint64_t *out) { fam_desc_t *d = NULL; uint64_t w = U(fam_restore_region(n, R(r), i, m, &d)); *out = U(d); return w; }
static int s_restore_wait(uint64_t w) { return fam_restore_wait(W(w)); }
static uint64_t s_delete_backup(const char *n) { return U(fam_delete_backup(n)); }
static int s_delete_backup_wait(uint64_t w) { return fam_delete_backup_wait(W(w)); }
static uint64_t s_context_open(void) { return U(fam_context_open()); }
static int s_context_close(uint64_t c) { return fam_context_close(CC(c)); }
static int s_fence(uint64_t c, int onctx) { return onctx ? fam_ctx_fence(CC(c)) : fam_fence(); }
static int s_quiet(uint64_t c, int onctx) { return onctx ? fam_ctx_quiet(CC(c)) : fam_quiet(); }
static uint64_t s_progress(uint64_t c, int onctx) { return onctx ? fam_ctx_progress(CC(c)) : fam_progress(); }
static int s_persist(uint64_t c, int onctx, uint64_t d, uint64_t off, uint64_t n) { return onctx ? fam_ctx_persist(CC(c), D, off, n) : fam_persist(D, off, n); }

#undef D
#undef C
*/
import "C"

import (
	"unsafe"

	_ "github.com/gofam/openfam/capi" // the C implementation these calls run
)

// NoFunc is returned (positive, unlike any FAM_E* result) when openfam.h has
// no function for the requested atomic kind and operation.
const NoFunc = int(C.CABI_NOFUNC)

// Transfer directions of RW, Strided and Indexed: get/gather, put/scatter,
// and their non-blocking forms.
const (
	Get   = int(C.X_GET)
	Put   = int(C.X_PUT)
	GetNB = int(C.X_GET_NB)
	PutNB = int(C.X_PUT_NB)
)

// Stat is fam_stat_t in Go types; Attr holds the four enumerators of
// region_attributes in declaration order.
type Stat struct {
	Size       uint64
	Mode       uint32
	Name       string
	UID, GID   uint32
	Attr       [4]int
	NumServers uint64
	// InterleaveSize is fam_stat_t.interleave_size.
	InterleaveSize uint64
}

// cstr returns a C copy of s, or NULL when null is set; free it with free.
func cstr(s string, null bool) *C.char {
	if null {
		return nil
	}
	return C.CString(s)
}

func free(p *C.char) {
	if p != nil {
		C.free(unsafe.Pointer(p))
	}
}

func b2i(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Err returns fam_errcode() and fam_errmsg() of the calling thread.
func Err() (int, string) { return int(C.fam_errcode()), C.GoString(C.fam_errmsg()) }

// Malloc returns n bytes of zeroed C memory (at least one byte), released
// by Free.
func Malloc(n uint64) unsafe.Pointer { return C.calloc(C.size_t(max(n, 1)), 1) }

// Free releases memory from Malloc.
func Free(p unsafe.Pointer) { C.free(p) }

// Initialize calls fam_initialize(group, NULL).
func Initialize(group string) int {
	g := C.CString(group)
	defer free(g)
	return int(C.fam_initialize(g, nil))
}

// Finalize calls fam_finalize(group).
func Finalize(group string) int {
	g := C.CString(group)
	defer free(g)
	return int(C.fam_finalize(g))
}

// Barrier calls fam_barrier_all.
func Barrier() int { return int(C.fam_barrier_all()) }

// OptionInt returns the int option name (PE_ID, PE_COUNT) by
// fam_get_option, freeing the value as OpenFAM's callers do.
func OptionInt(name string) (int, int) {
	n := C.CString(name)
	defer free(n)
	var v C.int
	rc := C.cabi_option_int(n, &v)
	return int(v), int(rc)
}

// CreateRegion calls fam_create_region with attr (NULL when attr is nil).
func CreateRegion(name string, size uint64, mode uint32, attr *[4]int) uintptr {
	n := C.CString(name)
	defer free(n)
	var a *C.fam_region_attr_t
	if attr != nil {
		a = &C.fam_region_attr_t{redundancy_level: C.fam_redundancy_level_t(attr[0]), memory_type: C.fam_memory_type_t(attr[1]),
			interleave_enable: C.fam_interleave_t(attr[2]), permission_level: C.fam_permission_level_t(attr[3])}
	}
	return uintptr(C.s_create_region(n, C.uint64_t(size), C.mode_t(mode), a))
}

func h(x uintptr) C.uint64_t { return C.uint64_t(x) }

// LookupRegion calls fam_lookup_region.
func LookupRegion(name string) uintptr {
	n := C.CString(name)
	defer free(n)
	return uintptr(C.s_lookup_region(n))
}

// DestroyRegion calls fam_destroy_region.
func DestroyRegion(r uintptr) int { return int(C.s_destroy_region(h(r))) }

// CloseRegion calls fam_close_region.
func CloseRegion(r uintptr) int { return int(C.s_close_region(h(r))) }

// ResizeRegion calls fam_resize_region.
func ResizeRegion(r uintptr, n uint64) int { return int(C.s_resize_region(h(r), C.uint64_t(n))) }

// ChangeRegionPermissions calls fam_change_region_permissions.
func ChangeRegionPermissions(r uintptr, mode uint32) int {
	return int(C.s_change_region_permissions(h(r), C.mode_t(mode)))
}

func goStat(s *C.fam_stat_t) Stat {
	a := s.region_attributes
	return Stat{Size: uint64(s.size), Mode: uint32(s.perm), Name: C.GoString(s.name), UID: uint32(s.uid), GID: uint32(s.gid),
		Attr:       [4]int{int(a.redundancy_level), int(a.memory_type), int(a.interleave_enable), int(a.permission_level)},
		NumServers: uint64(s.num_memservers), InterleaveSize: uint64(s.interleave_size)}
}

// StatRegion calls fam_stat_region.
func StatRegion(r uintptr) (Stat, int) {
	var s C.fam_stat_t
	if rc := C.s_stat_region(h(r), &s); rc != 0 {
		return Stat{}, int(rc)
	}
	return goStat(&s), 0
}

// RegionGlobal calls fam_region_global.
func RegionGlobal(r uintptr) (id, off uint64, rc int) {
	var g C.fam_global_desc_t
	rc = int(C.s_region_global(h(r), &g))
	return uint64(g.region_id), uint64(g.offset), rc
}

// RegionFromGlobal calls fam_region_from_global.
func RegionFromGlobal(id, off uint64) uintptr {
	return uintptr(C.s_region_from_global(C.uint64_t(id), C.uint64_t(off)))
}

// Allocate calls fam_allocate; null passes a NULL name (an unnamed item).
func Allocate(name string, null bool, n uint64, mode uint32, r uintptr) uintptr {
	p := cstr(name, null)
	defer free(p)
	return uintptr(C.s_allocate(p, C.uint64_t(n), C.mode_t(mode), h(r)))
}

// Lookup calls fam_lookup.
func Lookup(item, region string) uintptr {
	i, r := C.CString(item), C.CString(region)
	defer free(i)
	defer free(r)
	return uintptr(C.s_lookup(i, r))
}

// Deallocate calls fam_deallocate.
func Deallocate(d uintptr) int { return int(C.s_deallocate(h(d))) }

// Close calls fam_close.
func Close(d uintptr) int { return int(C.s_close(h(d))) }

// ChangePermissions calls fam_change_permissions.
func ChangePermissions(d uintptr, mode uint32) int {
	return int(C.s_change_permissions(h(d), C.mode_t(mode)))
}

// StatItem calls fam_stat.
func StatItem(d uintptr) (Stat, int) {
	var s C.fam_stat_t
	if rc := C.s_stat(h(d), &s); rc != 0 {
		return Stat{}, int(rc)
	}
	return goStat(&s), 0
}

// DescGlobal calls fam_desc_global.
func DescGlobal(d uintptr) (id, off uint64, rc int) {
	var g C.fam_global_desc_t
	rc = int(C.s_desc_global(h(d), &g))
	return uint64(g.region_id), uint64(g.offset), rc
}

// DescFromGlobal calls fam_desc_from_global.
func DescFromGlobal(id, off uint64) uintptr {
	return uintptr(C.s_desc_from_global(C.uint64_t(id), C.uint64_t(off)))
}

// RW calls fam_{get,put}_{blocking,nonblocking} (x: Get, Put, GetNB,
// PutNB), or its fam_ctx_ form on c when onCtx is set.
func RW(c uintptr, onCtx bool, x int, local unsafe.Pointer, d uintptr, off, n uint64) int {
	return int(C.cabi_rw(C.uint64_t(c), b2i(onCtx), C.int(x), local, C.uint64_t(d), C.uint64_t(off), C.uint64_t(n)))
}

// Strided calls the strided fam_gather/fam_scatter function selected as
// for RW.
func Strided(c uintptr, onCtx bool, x int, local unsafe.Pointer, d uintptr, n, first, stride, esize uint64) int {
	return int(C.cabi_strided(C.uint64_t(c), b2i(onCtx), C.int(x), local, C.uint64_t(d), C.uint64_t(n), C.uint64_t(first),
		C.uint64_t(stride), C.uint64_t(esize)))
}

// Indexed calls the indexed fam_gather/fam_scatter function selected as for
// RW. index is read during the call only.
func Indexed(c uintptr, onCtx bool, x int, local unsafe.Pointer, d uintptr, index []uint64, esize uint64) int {
	var p *C.uint64_t
	if len(index) > 0 {
		p = (*C.uint64_t)(unsafe.Pointer(&index[0]))
	}
	return int(C.cabi_indexed(C.uint64_t(c), b2i(onCtx), C.int(x), local, C.uint64_t(d), C.uint64_t(len(index)), p, C.uint64_t(esize)))
}

// Atomic calls the typed atomic function of openfam.h for kind and op
// (core/amo's numbers): the fetching form (fam_fetch_*, fam_swap_*,
// fam_compare_swap_*) when fetch is set, else the non-fetching one; on c
// when onCtx is set. Operands and the returned previous value are raw bits
// (lo, hi) as in amo.Value; cmp is compare_swap's expected value. It
// returns NoFunc when openfam.h has no such function.
func Atomic(c uintptr, onCtx bool, d uintptr, off uint64, kind, op int, fetch bool, vlo, vhi, clo, chi uint64) (olo, ohi uint64, rc int) {
	if !fetch {
		return 0, 0, int(C.cabi_nonfetch(C.uint64_t(c), b2i(onCtx), C.uint64_t(d), C.uint64_t(off), C.int(kind), C.int(op),
			C.uint64_t(vlo), C.uint64_t(vhi)))
	}
	var out [2]C.uint64_t
	r := C.cabi_fetch(C.uint64_t(c), b2i(onCtx), C.uint64_t(d), C.uint64_t(off), C.int(kind), C.int(op),
		C.uint64_t(vlo), C.uint64_t(vhi), C.uint64_t(clo), C.uint64_t(chi), &out[0])
	return uint64(out[0]), uint64(out[1]), int(r)
}

// Map calls fam_map; the mapping is C memory, not Go's.
func Map(d uintptr) unsafe.Pointer { return C.s_map(h(d)) }

// Unmap calls fam_unmap.
func Unmap(p unsafe.Pointer, d uintptr) int { return int(C.s_unmap(p, h(d))) }

// Copy calls fam_copy, or fam_ctx_copy on c when onCtx is set.
func Copy(c uintptr, onCtx bool, src uintptr, srcOff uint64, dst uintptr, dstOff, n uint64) uintptr {
	return uintptr(C.s_copy(h(c), b2i(onCtx), h(src), C.uint64_t(srcOff), h(dst), C.uint64_t(dstOff), C.uint64_t(n)))
}

// CopyWait calls fam_copy_wait.
func CopyWait(w uintptr) int { return int(C.s_copy_wait(h(w))) }

// Backup calls fam_backup(d, name, NULL).
func Backup(d uintptr, name string) uintptr {
	n := C.CString(name)
	defer free(n)
	return uintptr(C.s_backup(h(d), n))
}

// BackupWait calls fam_backup_wait.
func BackupWait(w uintptr) int { return int(C.s_backup_wait(h(w))) }

// Restore calls fam_restore.
func Restore(name string, d uintptr) uintptr {
	n := C.CString(name)
	defer free(n)
	return uintptr(C.s_restore(n, h(d)))
}

// RestoreRegion calls fam_restore_region; the returned item handle is
// usable once RestoreWait has succeeded.
func RestoreRegion(name string, r uintptr, item string, mode uint32) (w, d uintptr) {
	n, i := C.CString(name), C.CString(item)
	defer free(n)
	defer free(i)
	var out C.uint64_t
	w = uintptr(C.s_restore_region(n, h(r), i, C.mode_t(mode), &out))
	return w, uintptr(out)
}

// RestoreWait calls fam_restore_wait.
func RestoreWait(w uintptr) int { return int(C.s_restore_wait(h(w))) }

// DeleteBackup calls fam_delete_backup.
func DeleteBackup(name string) uintptr {
	n := C.CString(name)
	defer free(n)
	return uintptr(C.s_delete_backup(n))
}

// DeleteBackupWait calls fam_delete_backup_wait.
func DeleteBackupWait(w uintptr) int { return int(C.s_delete_backup_wait(h(w))) }

// ListBackup calls fam_list_backup and frees its result; ok is false when
// it returned NULL.
func ListBackup(prefix string) (s string, ok bool) {
	n := C.CString(prefix)
	defer free(n)
	p := C.fam_list_backup(n)
	if p == nil {
		return "", false
	}
	defer free(p)
	return C.GoString(p), true
}

// ListRegions calls fam_list_regions and frees its result; ok is false
// when it returned NULL.
func ListRegions() (s string, ok bool) {
	p := C.fam_list_regions()
	if p == nil {
		return "", false
	}
	defer free(p)
	return C.GoString(p), true
}

// ListItems calls fam_list_items(r) and frees its result; ok is false when
// it returned NULL.
func ListItems(r uintptr) (s string, ok bool) {
	p := C.s_list_items(h(r))
	if p == nil {
		return "", false
	}
	defer free(p)
	return C.GoString(p), true
}

// ContextOpen calls fam_context_open.
func ContextOpen() uintptr { return uintptr(C.s_context_open()) }

// ContextClose calls fam_context_close.
func ContextClose(c uintptr) int { return int(C.s_context_close(h(c))) }

// Fence calls fam_fence, or fam_ctx_fence(c) when onCtx is set.
func Fence(c uintptr, onCtx bool) int { return int(C.s_fence(h(c), b2i(onCtx))) }

// Quiet calls fam_quiet, or fam_ctx_quiet(c) when onCtx is set.
func Quiet(c uintptr, onCtx bool) int { return int(C.s_quiet(h(c), b2i(onCtx))) }

// Progress calls fam_progress, or fam_ctx_progress(c) when onCtx is set.
func Progress(c uintptr, onCtx bool) uint64 { return uint64(C.s_progress(h(c), b2i(onCtx))) }

// Persist calls fam_persist(d, off, n), or fam_ctx_persist(c, d, off, n)
// when onCtx is set.
func Persist(c uintptr, onCtx bool, d uintptr, off, n uint64) int {
	return int(C.s_persist(h(c), b2i(onCtx), h(d), C.uint64_t(off), C.uint64_t(n)))
}
