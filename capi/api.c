/*
 * api.c - the control-path functions of openfam.h: life cycle, regions, data
 * items, gather/scatter, map, copy, backup, ordering and contexts.
 *
 * Each checks here that the instance is usable (so a forked child never enters
 * Go) and hands the call to its Go export (capi/exports.go), which does the
 * work and reports errors. Handles cross to Go as integers, never as pointers.
 */
#include <stdint.h>

#include "_cgo_export.h"
#include "ofam.h"

#define OFAM_H(p) ((uint64_t)(uintptr_t)(p))

static inline int ofam_ready(void)
{
    return __atomic_load_n(&ofam_state, __ATOMIC_ACQUIRE) == OFAM_READY;
}

/* Fails int-returning function fn unless the instance is ready. */
#define OFAM_REQUIRE_READY_INT()            \
    do {                                    \
        if (!ofam_ready())                  \
            return ofam_not_ready(__func__); \
    } while (0)

/* Fails pointer-returning function fn (NULL) unless the instance is ready. */
#define OFAM_REQUIRE_READY_PTR()     \
    do {                             \
        if (!ofam_ready()) {         \
            ofam_not_ready(__func__); \
            return NULL;             \
        }                            \
    } while (0)

#define OFAM_HANDLE(T, h) ((T *)(uintptr_t)(h))

/* ---- life cycle ---------------------------------------------------------------- */

int fam_initialize(const char *group, fam_options_t *opts)
{
    if (ofam_check_forked())
        return ofam_not_ready(__func__);
    if (__atomic_load_n(&ofam_state, __ATOMIC_ACQUIRE) == OFAM_READY)
        return ofam_fail(FAM_EINVAL, "%s: already initialized (call fam_finalize first)", __func__);
    if (group == NULL)
        return ofam_fail(FAM_EINVAL, "%s: group name is NULL", __func__);
    return ofam_go_initialize((char *)group, opts);
}

int fam_finalize(const char *group)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_finalize((char *)group);
}

int fam_abort(int status)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_abort(status);
}

int fam_barrier_all(void)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_barrier_all();
}

const char **fam_list_options(void)
{
    OFAM_REQUIRE_READY_PTR();
    return (const char **)ofam_go_list_options();
}

const void *fam_get_option(const char *name)
{
    OFAM_REQUIRE_READY_PTR();
    if (name == NULL) {
        ofam_fail(FAM_EINVAL, "%s: option name is NULL", __func__);
        return NULL;
    }
    return ofam_go_get_option((char *)name);
}

/* ---- regions ------------------------------------------------------------------- */

fam_region_t *fam_create_region(const char *name, uint64_t size, mode_t perm, fam_region_attr_t *attr)
{
    OFAM_REQUIRE_READY_PTR();
    return OFAM_HANDLE(fam_region_t, ofam_go_create_region((char *)name, size, (uint32_t)perm, attr));
}

fam_region_t *fam_lookup_region(const char *name)
{
    OFAM_REQUIRE_READY_PTR();
    return OFAM_HANDLE(fam_region_t, ofam_go_lookup_region((char *)name));
}

int fam_destroy_region(fam_region_t *r)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_destroy_region(OFAM_H(r));
}

int fam_close_region(fam_region_t *r)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_close_region(OFAM_H(r));
}

int fam_resize_region(fam_region_t *r, uint64_t nbytes)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_resize_region(OFAM_H(r), nbytes);
}

int fam_change_region_permissions(fam_region_t *r, mode_t perm)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_change_permissions(OFAM_H(r), OFAM_KIND_REGION, (uint32_t)perm);
}

int fam_stat_region(fam_region_t *r, fam_stat_t *out)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_stat(OFAM_H(r), OFAM_KIND_REGION, out);
}

int fam_region_global(fam_region_t *r, fam_global_desc_t *out)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_global(OFAM_H(r), OFAM_KIND_REGION, out);
}

fam_region_t *fam_region_from_global(fam_global_desc_t g)
{
    OFAM_REQUIRE_READY_PTR();
    return OFAM_HANDLE(fam_region_t, ofam_go_from_global(OFAM_KIND_REGION, g.region_id, g.offset));
}

/* ---- data items --------------------------------------------------------------- */

fam_desc_t *fam_allocate(const char *name, uint64_t nbytes, mode_t perm, fam_region_t *r)
{
    OFAM_REQUIRE_READY_PTR();
    return OFAM_HANDLE(fam_desc_t, ofam_go_allocate((char *)name, nbytes, (uint32_t)perm, OFAM_H(r)));
}

fam_desc_t *fam_lookup(const char *item, const char *region)
{
    OFAM_REQUIRE_READY_PTR();
    return OFAM_HANDLE(fam_desc_t, ofam_go_lookup((char *)item, (char *)region));
}

int fam_deallocate(fam_desc_t *d)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_deallocate(OFAM_H(d));
}

int fam_close(fam_desc_t *d)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_close(OFAM_H(d));
}

int fam_change_permissions(fam_desc_t *d, mode_t perm)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_change_permissions(OFAM_H(d), OFAM_KIND_DESC, (uint32_t)perm);
}

int fam_stat(fam_desc_t *d, fam_stat_t *out)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_stat(OFAM_H(d), OFAM_KIND_DESC, out);
}

int fam_desc_global(fam_desc_t *d, fam_global_desc_t *out)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_global(OFAM_H(d), OFAM_KIND_DESC, out);
}

fam_desc_t *fam_desc_from_global(fam_global_desc_t g)
{
    OFAM_REQUIRE_READY_PTR();
    return OFAM_HANDLE(fam_desc_t, ofam_go_from_global(OFAM_KIND_DESC, g.region_id, g.offset));
}

/* ---- gather / scatter ------------------------------------------------------------ */

static int ofam_strided(const char *fn, int ctxcall, fam_ctx_t *c, int op, void *local, fam_desc_t *d,
                        uint64_t n, uint64_t first, uint64_t stride, uint64_t esize)
{
    if (!ofam_ready())
        return ofam_not_ready(fn);
    if (ctxcall && c == NULL)
        return ofam_fail(FAM_EINVAL, "%s: context handle is NULL", fn);
    return ofam_go_strided(OFAM_H(c), op, local, OFAM_H(d), n, first, stride, esize);
}

static int ofam_indexed(const char *fn, int ctxcall, fam_ctx_t *c, int op, void *local, fam_desc_t *d,
                        uint64_t n, const uint64_t *index, uint64_t esize)
{
    if (!ofam_ready())
        return ofam_not_ready(fn);
    if (ctxcall && c == NULL)
        return ofam_fail(FAM_EINVAL, "%s: context handle is NULL", fn);
    return ofam_go_indexed(OFAM_H(c), op, local, OFAM_H(d), n, (uint64_t *)index, esize);
}

#define OFAM_GATHER_SCATTER(X)                          \
    X(gather_blocking, OFAM_XFER_GET)                   \
    X(scatter_blocking, OFAM_XFER_PUT)                  \
    X(gather_nonblocking, OFAM_XFER_GET_NB)             \
    X(scatter_nonblocking, OFAM_XFER_PUT_NB)

#define OFAM_DEFINE_GS(name, op)                                                                    \
    int fam_##name##_strided(void *local, fam_desc_t *d, uint64_t n, uint64_t first, uint64_t stride, \
                             uint64_t elem_size)                                                    \
    {                                                                                               \
        return ofam_strided(__func__, 0, NULL, op, local, d, n, first, stride, elem_size);          \
    }                                                                                               \
    int fam_ctx_##name##_strided(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t n, uint64_t first, \
                                 uint64_t stride, uint64_t elem_size)                               \
    {                                                                                               \
        return ofam_strided(__func__, 1, c, op, local, d, n, first, stride, elem_size);             \
    }                                                                                               \
    int fam_##name##_indexed(void *local, fam_desc_t *d, uint64_t n, const uint64_t *index,          \
                             uint64_t elem_size)                                                    \
    {                                                                                               \
        return ofam_indexed(__func__, 0, NULL, op, local, d, n, index, elem_size);                  \
    }                                                                                               \
    int fam_ctx_##name##_indexed(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t n,               \
                                 const uint64_t *index, uint64_t elem_size)                         \
    {                                                                                               \
        return ofam_indexed(__func__, 1, c, op, local, d, n, index, elem_size);                     \
    }
OFAM_GATHER_SCATTER(OFAM_DEFINE_GS)

/* ---- map, copy --------------------------------------------------------------------- */

void *fam_map(fam_desc_t *d)
{
    OFAM_REQUIRE_READY_PTR();
    return ofam_go_map(OFAM_H(d));
}

int fam_unmap(void *local, fam_desc_t *d)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_unmap(local, OFAM_H(d));
}

static fam_wait_t *ofam_copy(const char *fn, int ctxcall, fam_ctx_t *c, fam_desc_t *src, uint64_t src_offset,
                             fam_desc_t *dst, uint64_t dst_offset, uint64_t nbytes)
{
    if (!ofam_ready()) {
        ofam_not_ready(fn);
        return NULL;
    }
    if (ctxcall && c == NULL) {
        ofam_fail(FAM_EINVAL, "%s: context handle is NULL", fn);
        return NULL;
    }
    return OFAM_HANDLE(fam_wait_t, ofam_go_copy(OFAM_H(c), OFAM_H(src), src_offset, OFAM_H(dst), dst_offset, nbytes));
}

fam_wait_t *fam_copy(fam_desc_t *src, uint64_t src_offset, fam_desc_t *dst, uint64_t dst_offset, uint64_t nbytes)
{
    return ofam_copy(__func__, 0, NULL, src, src_offset, dst, dst_offset, nbytes);
}

fam_wait_t *fam_ctx_copy(fam_ctx_t *c, fam_desc_t *src, uint64_t src_offset, fam_desc_t *dst, uint64_t dst_offset,
                         uint64_t nbytes)
{
    return ofam_copy(__func__, 1, c, src, src_offset, dst, dst_offset, nbytes);
}

int fam_copy_wait(fam_wait_t *w)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_wait(OFAM_H(w), OFAM_WAIT_COPY);
}

/* ---- backup and restore -------------------------------------------------------------- */

fam_wait_t *fam_backup(fam_desc_t *src, const char *backup_name, fam_backup_options_t *opts)
{
    OFAM_REQUIRE_READY_PTR();
    (void)opts; /* its only field is reserved */
    return OFAM_HANDLE(fam_wait_t, ofam_go_backup(OFAM_H(src), (char *)backup_name));
}

int fam_backup_wait(fam_wait_t *w)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_wait(OFAM_H(w), OFAM_WAIT_BACKUP);
}

fam_wait_t *fam_restore(const char *backup_name, fam_desc_t *dst)
{
    OFAM_REQUIRE_READY_PTR();
    return OFAM_HANDLE(fam_wait_t, ofam_go_restore((char *)backup_name, OFAM_H(dst)));
}

fam_wait_t *fam_restore_region(const char *backup_name, fam_region_t *r, const char *item_name, mode_t perm,
                               fam_desc_t **out)
{
    OFAM_REQUIRE_READY_PTR();
    if (out == NULL) {
        ofam_fail(FAM_EINVAL, "%s: out is NULL", __func__);
        return NULL;
    }
    uint64_t item = 0;
    uint64_t w = ofam_go_restore_region((char *)backup_name, OFAM_H(r), (char *)item_name, (uint32_t)perm, &item);
    if (w != 0)
        *out = OFAM_HANDLE(fam_desc_t, item);
    return OFAM_HANDLE(fam_wait_t, w);
}

int fam_restore_wait(fam_wait_t *w)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_wait(OFAM_H(w), OFAM_WAIT_RESTORE);
}

fam_wait_t *fam_delete_backup(const char *backup_name)
{
    OFAM_REQUIRE_READY_PTR();
    return OFAM_HANDLE(fam_wait_t, ofam_go_delete_backup((char *)backup_name));
}

int fam_delete_backup_wait(fam_wait_t *w)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_wait(OFAM_H(w), OFAM_WAIT_DELETE_BACKUP);
}

char *fam_list_backup(const char *backup_name)
{
    OFAM_REQUIRE_READY_PTR();
    if (backup_name == NULL) {
        /* As in OpenFAM; "" lists every backup the caller may read. */
        ofam_fail(FAM_EINVAL, "%s: backup name is NULL (pass \"\" to list every backup)", __func__);
        return NULL;
    }
    return ofam_go_list_backup((char *)backup_name);
}

/* ---- listing ------------------------------------------------------------------------------ */

char *fam_list_regions(void)
{
    OFAM_REQUIRE_READY_PTR();
    return ofam_go_list_regions();
}

char *fam_list_items(fam_region_t *r)
{
    OFAM_REQUIRE_READY_PTR();
    return ofam_go_list_items(OFAM_H(r));
}

/* ---- ordering and contexts --------------------------------------------------------------- */

int fam_fence(void)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_fence(0);
}

int fam_quiet(void)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_quiet(0);
}

uint64_t fam_progress(void)
{
    if (!ofam_ready()) {
        ofam_not_ready(__func__);
        return 0;
    }
    return ofam_go_progress(0);
}

fam_ctx_t *fam_context_open(void)
{
    OFAM_REQUIRE_READY_PTR();
    return OFAM_HANDLE(fam_ctx_t, ofam_go_context_open());
}

int fam_context_close(fam_ctx_t *c)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_context_close(OFAM_H(c));
}

int fam_ctx_fence(fam_ctx_t *c)
{
    OFAM_REQUIRE_READY_INT();
    if (c == NULL)
        return ofam_fail(FAM_EINVAL, "%s: context handle is NULL", __func__);
    return ofam_go_fence(OFAM_H(c));
}

int fam_ctx_quiet(fam_ctx_t *c)
{
    OFAM_REQUIRE_READY_INT();
    if (c == NULL)
        return ofam_fail(FAM_EINVAL, "%s: context handle is NULL", __func__);
    return ofam_go_quiet(OFAM_H(c));
}

/* fam_persist: the range made durable now (core: Item.Persist). */
int fam_persist(fam_desc_t *d, uint64_t offset, uint64_t nbytes)
{
    OFAM_REQUIRE_READY_INT();
    return ofam_go_persist(0, OFAM_H(d), offset, nbytes);
}

int fam_ctx_persist(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t nbytes)
{
    OFAM_REQUIRE_READY_INT();
    if (c == NULL)
        return ofam_fail(FAM_EINVAL, "%s: context handle is NULL", __func__);
    return ofam_go_persist(OFAM_H(c), OFAM_H(d), offset, nbytes);
}

uint64_t fam_ctx_progress(fam_ctx_t *c)
{
    if (!ofam_ready()) {
        ofam_not_ready(__func__);
        return 0;
    }
    if (c == NULL) {
        ofam_fail(FAM_EINVAL, "%s: context handle is NULL", __func__);
        return 0;
    }
    return ofam_go_progress(OFAM_H(c));
}
