/*
 * fam/fam_c.h - OpenFAM 3.2's C API (c_fam_*), exported by libopenfam.so.
 *
 * Source compatible with OpenFAM's fam/fam_c.h: the same handle types,
 * function names, parameters and error model, so C programs written for
 * OpenFAM's libopenfam_c compile unchanged and link with -lopenfam.
 *
 * Handles: c_fam, c_fam_context, c_fam_region_desc and c_fam_desc are
 * opaque (void). A c_fam_context * may be passed wherever a c_fam * is; data
 * path, atomics, fence, quiet, progress and copy then act on the context's
 * own queue, and control-path calls fail with FAM_ERR_NOPERM (2).
 *
 * Errors: int functions return 0 on success and -1 on failure; pointer
 * functions return NULL. After a failure c_fam_error() gives the Fam_Error
 * number and c_fam_error_msg() the message, both per thread and kept until
 * the next failure on that thread (success does not clear them).
 *
 * Instances: libopenfam has one process-wide instance. The first
 * c_fam_initialize starts it; later and concurrent calls return that first
 * call's result without initializing again, until c_fam_finalize succeeds.
 *
 * Ownership: region and item descriptors are released by c_fam_destroy_region
 * / c_fam_deallocate / c_fam_close, or by c_fam_finalize; wait objects by the
 * matching *_wait call. c_fam_list_options and c_fam_get_option results are
 * malloc'd and freed by the caller with free().
 */
#ifndef OPENFAM_COMPAT_FAM_C_H
#define OPENFAM_COMPAT_FAM_C_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fam.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __SIZEOF_INT128__
__extension__ typedef __int128 int128_t;
#else
typedef long long int128_t;
#endif

typedef void c_fam;
typedef void c_fam_region_desc;
typedef void c_fam_desc;
typedef void c_fam_context;

typedef Fam_Options c_fam_options;
typedef Fam_Interleave_Enable c_fam_Interleave_Enable;
typedef Fam_Memory_Type c_fam_Memory_Type;
typedef Fam_Redundancy_Level c_fam_Redundancy_Level;
typedef Fam_Region_Attributes c_fam_Region_Attributes;
typedef Fam_Stat c_fam_stat;
typedef Fam_Backup_Options c_fam_backup_options;

/* ---- Life cycle ---- */

/* A new fam handle (malloc'd; release with c_fam_delete). NULL on OOM. */
c_fam *c_fam_create(void);
/* Starts the library (see "Instances" above). fam_opts may be NULL. */
int c_fam_initialize(c_fam *fam_obj, const char *group_name, c_fam_options *fam_opts);
/* Stops the library; every descriptor and context becomes invalid. */
int c_fam_finalize(c_fam *fam_obj, const char *group_name);
/* Frees a handle from c_fam_create (does not finalize). NULL is ignored. */
void c_fam_delete(c_fam *fam_obj);
/* Terminates the job with status; returns -1 only if that is impossible. */
int c_fam_abort(c_fam *fam_obj, int status);

/* ---- Options ---- */

/* NULL-terminated option names, one malloc'd block the caller free()s. */
const char **c_fam_list_options(c_fam *fam_obj);
/* malloc'd value the caller free()s: int* for PE_ID/PE_COUNT, uint64_t* for
 * LOC_BUF_SIZE, char* otherwise; NULL for an unknown name. */
const void *c_fam_get_option(c_fam *fam_obj, const char *option_name);

/* ---- Regions ---- */

c_fam_region_desc *c_fam_create_region(c_fam *fam_obj, const char *region_name, size_t size,
                                       mode_t perm, c_fam_Region_Attributes *reg_att);
c_fam_region_desc *c_fam_lookup_region(c_fam *fam_obj, const char *name);
/* Destroys the region and its items; releases region_desc. */
int c_fam_destroy_region(c_fam *fam_obj, c_fam_region_desc *region_desc);
int c_fam_resize_region(c_fam *fam_obj, c_fam_region_desc *region_desc, uint64_t size);

/* ---- Data items ---- */

c_fam_desc *c_fam_allocate(c_fam *fam_obj, size_t size, mode_t perm, c_fam_region_desc *region_desc);
c_fam_desc *c_fam_allocate_named(c_fam *fam_obj, const char *name, size_t size, mode_t perm,
                                 c_fam_region_desc *region_desc);
c_fam_desc *c_fam_lookup(c_fam *fam_obj, const char *name, const char *region_name);
/* Frees the item; releases desc. */
int c_fam_deallocate(c_fam *fam_obj, c_fam_desc *desc);
/* Releases desc; the item stays. */
int c_fam_close(c_fam *fam_obj, c_fam_desc *desc);

/* ---- Stat and permissions ---- */

/* stat->name is library-owned, valid until desc is released. */
int c_fam_stat_data(c_fam *fam_obj, c_fam_desc *desc, c_fam_stat *stat);
int c_fam_stat_region(c_fam *fam_obj, c_fam_region_desc *region_desc, c_fam_stat *stat);
int c_fam_change_permissions_data(c_fam *fam_obj, c_fam_desc *desc, mode_t perm);
int c_fam_change_permissions_region(c_fam *fam_obj, c_fam_region_desc *region_desc, mode_t perm);

/* ---- Data path (non-blocking buffers stay in use until c_fam_quiet) ---- */

int c_fam_put_blocking(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t offset, size_t size);
int c_fam_put_nonblocking(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t offset, size_t size);
int c_fam_get_blocking(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t offset, size_t size);
int c_fam_get_nonblocking(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t offset, size_t size);

/* Element i at byte (first_element + i*stride) * element_size of the item. */
int c_fam_gather_blocking_stride(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t n_elements,
                                 uint64_t first_element, uint64_t stride, uint64_t element_size);
int c_fam_gather_nonblocking_stride(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t n_elements,
                                    uint64_t first_element, uint64_t stride, uint64_t element_size);
int c_fam_scatter_blocking_stride(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t n_elements,
                                  uint64_t first_element, uint64_t stride, uint64_t element_size);
int c_fam_scatter_nonblocking_stride(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t n_elements,
                                     uint64_t first_element, uint64_t stride, uint64_t element_size);
/* Element i at byte element_index[i] * element_size of the item. */
int c_fam_gather_blocking_index(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t n_elements,
                                uint64_t *element_index, uint64_t element_size);
int c_fam_gather_nonblocking_index(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t n_elements,
                                   uint64_t *element_index, uint64_t element_size);
int c_fam_scatter_blocking_index(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t n_elements,
                                 uint64_t *element_index, uint64_t element_size);
int c_fam_scatter_nonblocking_index(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t n_elements,
                                    uint64_t *element_index, uint64_t element_size);

/* NULL with FAM_ERR_UNIMPL where the item's memory is not on this host. */
void *c_fam_map(c_fam *fam_obj, c_fam_desc *desc);
int c_fam_unmap(c_fam *fam_obj, void *local_ptr, c_fam_desc *desc);

/* ---- Copy, backup, restore (each wait object is waited for once) ---- */

void *c_fam_copy(c_fam *fam_obj, c_fam_desc *src_desc, uint64_t src_offset, c_fam_desc *dest_desc,
                 uint64_t dest_offset, size_t size);
int c_fam_copy_wait(c_fam *fam_obj, void *wait_obj);
void *c_fam_backup(c_fam *fam_obj, c_fam_desc *src_desc, const char *backup_name,
                   c_fam_backup_options *backup_options);
int c_fam_backup_wait(c_fam *fam_obj, void *wait_obj);
void *c_fam_restore(c_fam *fam_obj, const char *backup_name, c_fam_desc *dest_desc);
/* *dest_desc receives the new item's descriptor, usable after the wait. */
void *c_fam_restore_region(c_fam *fam_obj, const char *backup_name, c_fam_region_desc *dest_reg_desc,
                           const char *dataitem_name, mode_t perm, c_fam_desc **dest_desc);
int c_fam_restore_wait(c_fam *fam_obj, void *wait_obj);
void *c_fam_delete_backup(c_fam *fam_obj, const char *backup_name);
int c_fam_delete_backup_wait(c_fam *fam_obj, void *wait_obj);

/* ---- Ordering and contexts ---- */

int c_fam_quiet(c_fam *fam_obj);
int c_fam_fence(c_fam *fam_obj);
/* *value = number of operations of fam_obj not yet complete. */
int c_fam_progress(c_fam *fam_obj, uint64_t *value);
/* A context handle, released by c_fam_context_close (which frees it). */
c_fam_context *c_fam_context_open(c_fam *fam_obj);
int c_fam_context_close(c_fam *fam_obj, c_fam_context *fam_cntxt);

/* ---- Errors ---- */

/* Fam_Error number of this thread's last failure (0 if none). */
int c_fam_error(void);
/* Message of this thread's last failure ("" if none); valid until the
 * thread's next failure. */
const char *c_fam_error_msg(void);

/* ---- Atomics: 0 / -1; fetching forms return the old value in *ret_val ---- */

int c_fam_set_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value);
int c_fam_set_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value);
int c_fam_set_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_set_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_set_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value);
int c_fam_set_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value);
int c_fam_set_int128(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int128_t value);

int c_fam_fetch_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t *value);
int c_fam_fetch_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t *value);
int c_fam_fetch_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t *value);
int c_fam_fetch_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t *value);
int c_fam_fetch_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float *value);
int c_fam_fetch_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double *value);
int c_fam_fetch_int128(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int128_t *value);

int c_fam_add_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value);
int c_fam_add_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value);
int c_fam_add_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_add_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_add_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value);
int c_fam_add_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value);

int c_fam_subtract_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value);
int c_fam_subtract_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value);
int c_fam_subtract_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_subtract_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_subtract_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value);
int c_fam_subtract_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value);

int c_fam_min_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value);
int c_fam_min_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value);
int c_fam_min_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_min_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_min_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value);
int c_fam_min_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value);

int c_fam_max_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value);
int c_fam_max_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value);
int c_fam_max_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_max_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_max_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value);
int c_fam_max_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value);

int c_fam_and_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_and_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_or_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_or_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_xor_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_xor_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);

int c_fam_swap_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value, int32_t *ret_val);
int c_fam_swap_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value, int64_t *ret_val);
int c_fam_swap_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value, uint32_t *ret_val);
int c_fam_swap_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value, uint64_t *ret_val);
int c_fam_swap_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value, float *ret_val);
int c_fam_swap_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value, double *ret_val);

/* Stores new_val if the word equals old_val; *ret_val gets the previous value. */
int c_fam_compare_swap_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t old_val, int32_t new_val,
                             int32_t *ret_val);
int c_fam_compare_swap_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t old_val, int64_t new_val,
                             int64_t *ret_val);
int c_fam_compare_swap_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t old_val,
                              uint32_t new_val, uint32_t *ret_val);
int c_fam_compare_swap_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t old_val,
                              uint64_t new_val, uint64_t *ret_val);
int c_fam_compare_swap_int128(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int128_t old_val,
                              int128_t new_val, int128_t *ret_val);

int c_fam_fetch_add_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value, int32_t *ret_val);
int c_fam_fetch_add_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value, int64_t *ret_val);
int c_fam_fetch_add_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value, uint32_t *ret_val);
int c_fam_fetch_add_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value, uint64_t *ret_val);
int c_fam_fetch_add_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value, float *ret_val);
int c_fam_fetch_add_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value, double *ret_val);

int c_fam_fetch_subtract_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value, int32_t *ret_val);
int c_fam_fetch_subtract_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value, int64_t *ret_val);
int c_fam_fetch_subtract_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value,
                                uint32_t *ret_val);
int c_fam_fetch_subtract_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value,
                                uint64_t *ret_val);
int c_fam_fetch_subtract_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value, float *ret_val);
int c_fam_fetch_subtract_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value, double *ret_val);

int c_fam_fetch_min_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value, int32_t *ret_val);
int c_fam_fetch_min_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value, int64_t *ret_val);
int c_fam_fetch_min_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value, uint32_t *ret_val);
int c_fam_fetch_min_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value, uint64_t *ret_val);
int c_fam_fetch_min_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value, float *ret_val);
int c_fam_fetch_min_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value, double *ret_val);

int c_fam_fetch_max_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value, int32_t *ret_val);
int c_fam_fetch_max_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value, int64_t *ret_val);
int c_fam_fetch_max_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value, uint32_t *ret_val);
int c_fam_fetch_max_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value, uint64_t *ret_val);
int c_fam_fetch_max_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value, float *ret_val);
int c_fam_fetch_max_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value, double *ret_val);

int c_fam_fetch_and_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value, uint32_t *ret_val);
int c_fam_fetch_and_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value, uint64_t *ret_val);
int c_fam_fetch_or_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value, uint32_t *ret_val);
int c_fam_fetch_or_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value, uint64_t *ret_val);
int c_fam_fetch_xor_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value, uint32_t *ret_val);
int c_fam_fetch_xor_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value, uint64_t *ret_val);

#ifdef __cplusplus
}
#endif

#endif /* OPENFAM_COMPAT_FAM_C_H */
