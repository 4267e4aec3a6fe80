/*
 * fam_c.c - OpenFAM 3.2's C API (include/fam/fam_c.h) over the native
 * functions of include/openfam.h. Plain C, compiled into libopenfam.so with
 * the rest of capi; only the c_fam_* functions are visible outside.
 *
 * A c_fam handle is a small malloc'd record: the default instance, or a
 * context (carrying its native fam_ctx_t). Region, item and wait handles are
 * the native handles themselves, so they can also be given to openfam.h.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fam/fam_c.h"
#include "openfam.h"

_Static_assert(sizeof(Fam_Options) == sizeof(fam_options_t), "Fam_Options layout");
_Static_assert(sizeof(Fam_Stat) == sizeof(fam_stat_t), "Fam_Stat layout");
_Static_assert(offsetof(Fam_Stat, memory_servers) == offsetof(fam_stat_t, memory_servers), "Fam_Stat layout");
_Static_assert(offsetof(Fam_Stat, region_attributes) == offsetof(fam_stat_t, region_attributes), "Fam_Stat layout");
_Static_assert(sizeof(Fam_Region_Attributes) == sizeof(fam_region_attr_t), "Fam_Region_Attributes layout");
_Static_assert(sizeof(Fam_Backup_Options) == sizeof(fam_backup_options_t), "Fam_Backup_Options layout");
_Static_assert(sizeof(int128_t) == sizeof(fam_int128_t), "int128_t");

/* Marks live c_fam records so a stray or freed pointer is rejected rather
 * than dereferenced further. */
#define C_FAM_MAGIC 0x4d41464fu
#define C_FAM_DEAD 0x44414544u

struct c_fam_rec {
    unsigned magic;
    int is_ctx;
    fam_ctx_t *ctx;
};

static _Thread_local int c_err;
static _Thread_local char c_msg[512];

static void set_err(int code, const char *msg) {
    c_err = code > 0 ? code : FAM_EUNKNOWN;
    strncpy(c_msg, msg ? msg : "", sizeof c_msg - 1);
    c_msg[sizeof c_msg - 1] = '\0';
}

/* For a NULL return from the native layer. */
static void capture(void) { set_err(fam_errcode(), fam_errmsg()); }

static int ret(int rc) {
    if (rc < 0) {
        set_err(-rc, fam_errmsg());
        return -1;
    }
    return 0;
}

static struct c_fam_rec *rec(c_fam *fam_obj, const char *fn) {
    struct c_fam_rec *r = (struct c_fam_rec *)fam_obj;
    if (r == NULL || r->magic != C_FAM_MAGIC) {
        char m[128];
        strcpy(m, fn);
        strncat(m, ": invalid fam handle", sizeof m - strlen(m) - 1);
        set_err(FAM_EINVAL, m);
        return NULL;
    }
    return r;
}

/* OpenFAM's fam_context hides the control-path methods and throws
 * FAM_ERR_NOPERM from them; a context handle gets the same here. */
static struct c_fam_rec *ctl(c_fam *fam_obj, const char *fn) {
    struct c_fam_rec *r = rec(fam_obj, fn);
    if (r != NULL && r->is_ctx) {
        char m[128];
        strcpy(m, fn);
        strncat(m, ": cannot be invoked from fam_context object", sizeof m - strlen(m) - 1);
        set_err(FAM_ENOPERM, m);
        return NULL;
    }
    return r;
}

int c_fam_error(void) { return c_err; }

const char *c_fam_error_msg(void) { return c_msg; }

/* ---- Life cycle ---- */

/* The once-per-process latch of OpenFAM's C API: 0 = not initialized,
 * 1 = initialized, -1 = the first call failed (kept, with its error, until
 * a successful c_fam_finalize; OpenFAM keeps it for good). */
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static int init_state;
static int init_err;
static char init_msg[512];

c_fam *c_fam_create(void) {
    struct c_fam_rec *r = calloc(1, sizeof *r);
    if (r == NULL) {
        set_err(FAM_EMEMORY, "c_fam_create: out of memory");
        return NULL;
    }
    r->magic = C_FAM_MAGIC;
    return r;
}

int c_fam_initialize(c_fam *fam_obj, const char *group_name, c_fam_options *fam_opts) {
    if (ctl(fam_obj, __func__) == NULL)
        return -1;
    pthread_mutex_lock(&init_mu);
    if (init_state == 0) {
        int rc = fam_initialize(group_name, (fam_options_t *)fam_opts);
        if (rc < 0) {
            init_state = -1;
            init_err = -rc;
            strncpy(init_msg, fam_errmsg(), sizeof init_msg - 1);
        } else {
            init_state = 1;
        }
    }
    int state = init_state;
    if (state < 0)
        set_err(init_err, init_msg);
    pthread_mutex_unlock(&init_mu);
    return state < 0 ? -1 : 0;
}

int c_fam_finalize(c_fam *fam_obj, const char *group_name) {
    if (ctl(fam_obj, __func__) == NULL)
        return -1;
    pthread_mutex_lock(&init_mu);
    int rc = ret(fam_finalize(group_name));
    if (rc == 0)
        init_state = 0;
    pthread_mutex_unlock(&init_mu);
    return rc;
}

void c_fam_delete(c_fam *fam_obj) {
    struct c_fam_rec *r = rec(fam_obj, __func__);
    if (r == NULL)
        return;
    if (r->is_ctx && r->ctx != NULL)
        (void)fam_context_close(r->ctx);
    r->magic = C_FAM_DEAD;
    free(r);
}

int c_fam_abort(c_fam *fam_obj, int status) {
    if (ctl(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_abort(status));
}

/* ---- Options ---- */

const char **c_fam_list_options(c_fam *fam_obj) {
    if (ctl(fam_obj, __func__) == NULL)
        return NULL;
    const char **r = fam_list_options();
    if (r == NULL)
        capture();
    return r;
}

const void *c_fam_get_option(c_fam *fam_obj, const char *option_name) {
    if (ctl(fam_obj, __func__) == NULL)
        return NULL;
    const void *r = fam_get_option(option_name);
    if (r == NULL)
        capture();
    return r;
}

/* ---- Regions ---- */

c_fam_region_desc *c_fam_create_region(c_fam *fam_obj, const char *region_name, size_t size, mode_t perm,
                                       c_fam_Region_Attributes *reg_att) {
    if (ctl(fam_obj, __func__) == NULL)
        return NULL;
    fam_region_t *r = fam_create_region(region_name, size, perm, (fam_region_attr_t *)reg_att);
    if (r == NULL)
        capture();
    return r;
}

c_fam_region_desc *c_fam_lookup_region(c_fam *fam_obj, const char *name) {
    if (ctl(fam_obj, __func__) == NULL)
        return NULL;
    fam_region_t *r = fam_lookup_region(name);
    if (r == NULL)
        capture();
    return r;
}

int c_fam_destroy_region(c_fam *fam_obj, c_fam_region_desc *region_desc) {
    if (ctl(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_destroy_region((fam_region_t *)region_desc));
}

int c_fam_resize_region(c_fam *fam_obj, c_fam_region_desc *region_desc, uint64_t size) {
    if (ctl(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_resize_region((fam_region_t *)region_desc, size));
}

/* ---- Data items ---- */

c_fam_desc *c_fam_allocate(c_fam *fam_obj, size_t size, mode_t perm, c_fam_region_desc *region_desc) {
    if (ctl(fam_obj, __func__) == NULL)
        return NULL;
    fam_desc_t *d = fam_allocate(NULL, size, perm, (fam_region_t *)region_desc);
    if (d == NULL)
        capture();
    return d;
}

c_fam_desc *c_fam_allocate_named(c_fam *fam_obj, const char *name, size_t size, mode_t perm,
                                 c_fam_region_desc *region_desc) {
    if (ctl(fam_obj, __func__) == NULL)
        return NULL;
    fam_desc_t *d = fam_allocate(name, size, perm, (fam_region_t *)region_desc);
    if (d == NULL)
        capture();
    return d;
}

c_fam_desc *c_fam_lookup(c_fam *fam_obj, const char *name, const char *region_name) {
    if (ctl(fam_obj, __func__) == NULL)
        return NULL;
    fam_desc_t *d = fam_lookup(name, region_name);
    if (d == NULL)
        capture();
    return d;
}

int c_fam_deallocate(c_fam *fam_obj, c_fam_desc *desc) {
    if (ctl(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_deallocate((fam_desc_t *)desc));
}

int c_fam_close(c_fam *fam_obj, c_fam_desc *desc) {
    if (ctl(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_close((fam_desc_t *)desc));
}

/* ---- Stat and permissions ---- */

int c_fam_stat_data(c_fam *fam_obj, c_fam_desc *desc, c_fam_stat *stat) {
    if (rec(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_stat((fam_desc_t *)desc, (fam_stat_t *)stat));
}

int c_fam_stat_region(c_fam *fam_obj, c_fam_region_desc *region_desc, c_fam_stat *stat) {
    if (rec(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_stat_region((fam_region_t *)region_desc, (fam_stat_t *)stat));
}

int c_fam_change_permissions_data(c_fam *fam_obj, c_fam_desc *desc, mode_t perm) {
    if (ctl(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_change_permissions((fam_desc_t *)desc, perm));
}

int c_fam_change_permissions_region(c_fam *fam_obj, c_fam_region_desc *region_desc, mode_t perm) {
    if (ctl(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_change_region_permissions((fam_region_t *)region_desc, perm));
}

/* ---- Data path ---- */

#define C_FAM_RW_(name)                                                                          \
    int c_fam_##name(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t offset, size_t size) { \
        struct c_fam_rec *r = rec(fam_obj, __func__);                                            \
        if (r == NULL)                                                                           \
            return -1;                                                                           \
        return ret(r->is_ctx ? fam_ctx_##name(r->ctx, local_addr, (fam_desc_t *)desc, offset, size) \
                             : fam_##name(local_addr, (fam_desc_t *)desc, offset, size));        \
    }
C_FAM_RW_(put_blocking)
C_FAM_RW_(put_nonblocking)
C_FAM_RW_(get_blocking)
C_FAM_RW_(get_nonblocking)

#define C_FAM_STRIDE_(op)                                                                        \
    int c_fam_##op##_stride(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t n_elements, \
                            uint64_t first_element, uint64_t stride, uint64_t element_size) {    \
        struct c_fam_rec *r = rec(fam_obj, __func__);                                            \
        if (r == NULL)                                                                           \
            return -1;                                                                           \
        return ret(r->is_ctx ? fam_ctx_##op##_strided(r->ctx, local_addr, (fam_desc_t *)desc, n_elements, \
                                                      first_element, stride, element_size)      \
                             : fam_##op##_strided(local_addr, (fam_desc_t *)desc, n_elements,    \
                                                  first_element, stride, element_size));        \
    }
#define C_FAM_INDEX_(op)                                                                         \
    int c_fam_##op##_index(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t n_elements, \
                           uint64_t *element_index, uint64_t element_size) {                     \
        struct c_fam_rec *r = rec(fam_obj, __func__);                                            \
        if (r == NULL)                                                                           \
            return -1;                                                                           \
        return ret(r->is_ctx ? fam_ctx_##op##_indexed(r->ctx, local_addr, (fam_desc_t *)desc, n_elements, \
                                                      element_index, element_size)               \
                             : fam_##op##_indexed(local_addr, (fam_desc_t *)desc, n_elements,    \
                                                  element_index, element_size));                 \
    }
C_FAM_STRIDE_(gather_blocking)
C_FAM_STRIDE_(gather_nonblocking)
C_FAM_STRIDE_(scatter_blocking)
C_FAM_STRIDE_(scatter_nonblocking)
C_FAM_INDEX_(gather_blocking)
C_FAM_INDEX_(gather_nonblocking)
C_FAM_INDEX_(scatter_blocking)
C_FAM_INDEX_(scatter_nonblocking)

void *c_fam_map(c_fam *fam_obj, c_fam_desc *desc) {
    if (rec(fam_obj, __func__) == NULL)
        return NULL;
    void *p = fam_map((fam_desc_t *)desc);
    if (p == NULL)
        capture();
    return p;
}

int c_fam_unmap(c_fam *fam_obj, void *local_ptr, c_fam_desc *desc) {
    if (rec(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_unmap(local_ptr, (fam_desc_t *)desc));
}

/* ---- Copy, backup, restore ---- */

static void *waitobj(fam_wait_t *w) {
    if (w == NULL)
        capture();
    return w;
}

void *c_fam_copy(c_fam *fam_obj, c_fam_desc *src_desc, uint64_t src_offset, c_fam_desc *dest_desc,
                 uint64_t dest_offset, size_t size) {
    struct c_fam_rec *r = rec(fam_obj, __func__);
    if (r == NULL)
        return NULL;
    return waitobj(r->is_ctx ? fam_ctx_copy(r->ctx, (fam_desc_t *)src_desc, src_offset, (fam_desc_t *)dest_desc,
                                            dest_offset, size)
                             : fam_copy((fam_desc_t *)src_desc, src_offset, (fam_desc_t *)dest_desc, dest_offset,
                                        size));
}

int c_fam_copy_wait(c_fam *fam_obj, void *wait_obj) {
    if (rec(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_copy_wait((fam_wait_t *)wait_obj));
}

void *c_fam_backup(c_fam *fam_obj, c_fam_desc *src_desc, const char *backup_name,
                   c_fam_backup_options *backup_options) {
    if (rec(fam_obj, __func__) == NULL)
        return NULL;
    return waitobj(fam_backup((fam_desc_t *)src_desc, backup_name, (fam_backup_options_t *)backup_options));
}

int c_fam_backup_wait(c_fam *fam_obj, void *wait_obj) {
    if (rec(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_backup_wait((fam_wait_t *)wait_obj));
}

void *c_fam_restore(c_fam *fam_obj, const char *backup_name, c_fam_desc *dest_desc) {
    if (rec(fam_obj, __func__) == NULL)
        return NULL;
    return waitobj(fam_restore(backup_name, (fam_desc_t *)dest_desc));
}

void *c_fam_restore_region(c_fam *fam_obj, const char *backup_name, c_fam_region_desc *dest_reg_desc,
                           const char *dataitem_name, mode_t perm, c_fam_desc **dest_desc) {
    if (rec(fam_obj, __func__) == NULL)
        return NULL;
    fam_desc_t *out = NULL;
    void *w = waitobj(fam_restore_region(backup_name, (fam_region_t *)dest_reg_desc, dataitem_name, perm, &out));
    if (dest_desc != NULL)
        *dest_desc = out;
    return w;
}

int c_fam_restore_wait(c_fam *fam_obj, void *wait_obj) {
    if (rec(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_restore_wait((fam_wait_t *)wait_obj));
}

void *c_fam_delete_backup(c_fam *fam_obj, const char *backup_name) {
    if (rec(fam_obj, __func__) == NULL)
        return NULL;
    return waitobj(fam_delete_backup(backup_name));
}

int c_fam_delete_backup_wait(c_fam *fam_obj, void *wait_obj) {
    if (rec(fam_obj, __func__) == NULL)
        return -1;
    return ret(fam_delete_backup_wait((fam_wait_t *)wait_obj));
}

/* ---- Ordering and contexts ---- */

int c_fam_quiet(c_fam *fam_obj) {
    struct c_fam_rec *r = rec(fam_obj, __func__);
    if (r == NULL)
        return -1;
    return ret(r->is_ctx ? fam_ctx_quiet(r->ctx) : fam_quiet());
}

int c_fam_fence(c_fam *fam_obj) {
    struct c_fam_rec *r = rec(fam_obj, __func__);
    if (r == NULL)
        return -1;
    return ret(r->is_ctx ? fam_ctx_fence(r->ctx) : fam_fence());
}

int c_fam_progress(c_fam *fam_obj, uint64_t *value) {
    struct c_fam_rec *r = rec(fam_obj, __func__);
    if (r == NULL)
        return -1;
    if (value == NULL) {
        set_err(FAM_EINVAL, "c_fam_progress: value is NULL");
        return -1;
    }
    *value = r->is_ctx ? fam_ctx_progress(r->ctx) : fam_progress();
    return 0;
}

c_fam_context *c_fam_context_open(c_fam *fam_obj) {
    if (ctl(fam_obj, __func__) == NULL)
        return NULL;
    struct c_fam_rec *r = calloc(1, sizeof *r);
    if (r == NULL) {
        set_err(FAM_EMEMORY, "c_fam_context_open: out of memory");
        return NULL;
    }
    r->ctx = fam_context_open();
    if (r->ctx == NULL) {
        capture();
        free(r);
        return NULL;
    }
    r->magic = C_FAM_MAGIC;
    r->is_ctx = 1;
    return r;
}

int c_fam_context_close(c_fam *fam_obj, c_fam_context *fam_cntxt) {
    if (ctl(fam_obj, __func__) == NULL)
        return -1;
    struct c_fam_rec *c = rec(fam_cntxt, __func__);
    if (c == NULL)
        return -1;
    if (!c->is_ctx) {
        set_err(FAM_EINVAL, "c_fam_context_close: not a context handle");
        return -1;
    }
    /* The native context is released even when closing reports an error
     * from its last operations, so the record goes either way. */
    int rc = ret(fam_context_close(c->ctx));
    c->magic = C_FAM_DEAD;
    free(c);
    return rc;
}

/* ---- Atomics ---- */

#define C_FAM_NONFETCH_(op, T, sfx)                                                              \
    int c_fam_##op##_##sfx(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, T value) {         \
        struct c_fam_rec *r = rec(fam_obj, __func__);                                            \
        if (r == NULL)                                                                           \
            return -1;                                                                           \
        return ret(r->is_ctx ? fam_ctx_##op##_##sfx(r->ctx, (fam_desc_t *)desc, offset, value)  \
                             : fam_##op##_##sfx((fam_desc_t *)desc, offset, value));             \
    }
#define C_FAM_FETCHOP_(op, T, sfx)                                                               \
    int c_fam_##op##_##sfx(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, T value, T *ret_val) { \
        struct c_fam_rec *r = rec(fam_obj, __func__);                                            \
        if (r == NULL)                                                                           \
            return -1;                                                                           \
        return ret(r->is_ctx ? fam_ctx_##op##_##sfx(r->ctx, (fam_desc_t *)desc, offset, value, ret_val) \
                             : fam_##op##_##sfx((fam_desc_t *)desc, offset, value, ret_val));    \
    }
#define C_FAM_READ_(T, sfx)                                                                      \
    int c_fam_fetch_##sfx(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, T *value) {         \
        struct c_fam_rec *r = rec(fam_obj, __func__);                                            \
        if (r == NULL)                                                                           \
            return -1;                                                                           \
        return ret(r->is_ctx ? fam_ctx_fetch_##sfx(r->ctx, (fam_desc_t *)desc, offset, value)   \
                             : fam_fetch_##sfx((fam_desc_t *)desc, offset, value));              \
    }
#define C_FAM_CAS_(T, sfx)                                                                       \
    int c_fam_compare_swap_##sfx(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, T old_val, T new_val, \
                                 T *ret_val) {                                                   \
        struct c_fam_rec *r = rec(fam_obj, __func__);                                            \
        if (r == NULL)                                                                           \
            return -1;                                                                           \
        return ret(r->is_ctx ? fam_ctx_compare_swap_##sfx(r->ctx, (fam_desc_t *)desc, offset, old_val, new_val, \
                                                          ret_val)                               \
                             : fam_compare_swap_##sfx((fam_desc_t *)desc, offset, old_val, new_val, ret_val)); \
    }

/* Every (op, type) pair of OpenFAM's C API. */
#define C_FAM_ARITH_(M, op)                                                                      \
    M(op, int32_t, int32) M(op, int64_t, int64) M(op, uint32_t, uint32) M(op, uint64_t, uint64)  \
    M(op, float, float) M(op, double, double)
#define C_FAM_LOGIC_(M, op) M(op, uint32_t, uint32) M(op, uint64_t, uint64)

C_FAM_ARITH_(C_FAM_NONFETCH_, set)
C_FAM_NONFETCH_(set, int128_t, int128)
C_FAM_ARITH_(C_FAM_NONFETCH_, add)
C_FAM_ARITH_(C_FAM_NONFETCH_, subtract)
C_FAM_ARITH_(C_FAM_NONFETCH_, min)
C_FAM_ARITH_(C_FAM_NONFETCH_, max)
C_FAM_LOGIC_(C_FAM_NONFETCH_, and)
C_FAM_LOGIC_(C_FAM_NONFETCH_, or)
C_FAM_LOGIC_(C_FAM_NONFETCH_, xor)

C_FAM_READ_(int32_t, int32)
C_FAM_READ_(int64_t, int64)
C_FAM_READ_(uint32_t, uint32)
C_FAM_READ_(uint64_t, uint64)
C_FAM_READ_(float, float)
C_FAM_READ_(double, double)
C_FAM_READ_(int128_t, int128)

C_FAM_ARITH_(C_FAM_FETCHOP_, swap)
C_FAM_ARITH_(C_FAM_FETCHOP_, fetch_add)
C_FAM_ARITH_(C_FAM_FETCHOP_, fetch_subtract)
C_FAM_ARITH_(C_FAM_FETCHOP_, fetch_min)
C_FAM_ARITH_(C_FAM_FETCHOP_, fetch_max)
C_FAM_LOGIC_(C_FAM_FETCHOP_, fetch_and)
C_FAM_LOGIC_(C_FAM_FETCHOP_, fetch_or)
C_FAM_LOGIC_(C_FAM_FETCHOP_, fetch_xor)

C_FAM_CAS_(int32_t, int32)
C_FAM_CAS_(int64_t, int64)
C_FAM_CAS_(uint32_t, uint32)
C_FAM_CAS_(uint64_t, uint64)
C_FAM_CAS_(int128_t, int128)
