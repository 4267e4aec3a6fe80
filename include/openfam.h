/*
 * openfam.h - the native C interface of libopenfam (OpenFAM in Go).
 *
 * One process-wide instance, like OpenSHMEM: call fam_initialize() once, then
 * any function from any thread, then fam_finalize(). Names follow the methods
 * of OpenFAM 3.2's openfam::fam class; overloads carry a suffix.
 *
 * Error model
 *   Functions returning int return 0 on success or a negative error code
 *   (-FAM_EINVAL, -FAM_ENOTFOUND, ...). Functions returning a handle or a
 *   pointer return NULL on failure. After any failure fam_errcode() gives the
 *   positive FAM_E* code and fam_errmsg() a message, both thread-local and kept
 *   until the next failure on that thread.
 *
 *   Each function below lists the errors particular to it. These apply to
 *   every function and are not repeated:
 *     - FAM_EINVAL: the library is not initialized (before fam_initialize,
 *       after fam_finalize, in a forked child), or a handle argument is
 *       NULL, released, or a handle of another type.
 *     - FAM_ENOTFOUND: the region or data item a handle names was destroyed
 *       or deallocated through another handle or by another process since
 *       it was opened (FAM_EINVAL instead once the library has released
 *       the handle on learning it).
 *     - FAM_ERPC or FAM_ETIMEOUT: with famd (OPENFAM_SERVER), famd or a
 *       memory server could not be reached or did not answer in time.
 *     - FAM_EUNKNOWN: a failure inside the library (it never crashes the
 *       host program).
 *
 * Handles
 *   fam_region_t, fam_desc_t, fam_ctx_t and fam_wait_t are opaque. They are
 *   owned by the library and released by the matching call (fam_close,
 *   fam_deallocate, fam_destroy_region, fam_context_close, the *_wait calls)
 *   or by fam_finalize. A released, NULL or foreign handle is rejected with
 *   FAM_EINVAL; it never crashes the program.
 *
 * Memory passed in ("local" buffers, index arrays, names) stays owned by the
 * caller and is not retained after the call returns, except that a
 * non-blocking call may read or write its local buffer until the next
 * fam_quiet() (or fam_ctx_quiet() on its context).
 *
 * Atomics require the offset to be a multiple of the operand size.
 */
#ifndef OPENFAM_H
#define OPENFAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OPENFAM_API_VERSION "3.2.0"   /* the OpenFAM API this library matches */
#define OPENFAM_NAME_MAX 255          /* longest region or data item name, bytes (OpenFAM: 40) */

/* Error codes: absolute values equal OpenFAM 3.2's Fam_Error numbers. */
/* BEGIN GENERATED from internal/gentables/errors.table; DO NOT EDIT */
#define FAM_EUNKNOWN 1
#define FAM_ENOPERM 2
#define FAM_ETIMEOUT 3
#define FAM_EINVAL 4
#define FAM_ELIBFABRIC 5
#define FAM_ESHM 6
#define FAM_ENOTCREATED 7
#define FAM_ENOTFOUND 8
#define FAM_EEXIST 9
#define FAM_EALLOCATOR 10
#define FAM_ERPC 11
#define FAM_EPMI 12
#define FAM_ERANGE 13
#define FAM_ENOSPACE 14
#define FAM_ENULLPTR 15
#define FAM_EUNIMPL 16
#define FAM_ERESOURCE 17
#define FAM_EINVALIDOP 18
#define FAM_ERPCCLIENTNOTFOUND 19
#define FAM_EMEMSERVLISTEMPTY 20
#define FAM_EMETADATA 21
#define FAM_EMEMORY 22
#define FAM_ENAMETOOLONG 23
#define FAM_EATLQUEUEFULL 24
#define FAM_EATLQUEUEINSERT 25
#define FAM_EATLNOTENABLED 26
#define FAM_EATL 27
#define FAM_EBACKUPNOTCREATED 28
#define FAM_EBACKUPNOTFOUND 29
#define FAM_EBACKUPINFONOTFOUND 30
#define FAM_ENOTPWRTWO 31
/* END GENERATED */

typedef enum {
    FAM_REDUNDANCY_DEFAULT = 0,
    FAM_REDUNDANCY_NONE,
    FAM_REDUNDANCY_RAID1,
    FAM_REDUNDANCY_RAID5
} fam_redundancy_level_t;

typedef enum {
    FAM_MEMORY_DEFAULT = 0,
    FAM_MEMORY_VOLATILE,
    FAM_MEMORY_PERSISTENT
} fam_memory_type_t;

typedef enum {
    FAM_INTERLEAVE_DEFAULT = 0,
    FAM_INTERLEAVE_ENABLE,
    FAM_INTERLEAVE_DISABLE
} fam_interleave_t;

typedef enum {
    FAM_PERMISSION_DEFAULT = 0,
    FAM_PERMISSION_REGION,
    FAM_PERMISSION_DATAITEM
} fam_permission_level_t;

/* Same layout as OpenFAM 3.2's Fam_Region_Attributes (16 bytes). */
typedef struct {
    fam_redundancy_level_t redundancy_level;
    fam_memory_type_t memory_type;
    fam_interleave_t interleave_enable;
    fam_permission_level_t permission_level;
} fam_region_attr_t;

/* Same layout as Fam_Global_Descriptor. A region's global descriptor has
 * offset == UINT64_MAX. */
typedef struct {
    uint64_t region_id;
    uint64_t offset;
} fam_global_desc_t;

/* Same layout as Fam_Stat. name points into library-owned storage, valid
 * until the handle is released; it is "" for unnamed items, never NULL. */
typedef struct {
    uint64_t size;
    mode_t perm;
    char *name;
    uint32_t uid;
    uint32_t gid;
    fam_region_attr_t region_attributes;
    uint64_t num_memservers;
    uint64_t interleave_size;
    uint64_t memory_servers[256];
} fam_stat_t;

/* Same layout as Fam_Options. A NULL field means "default or config file". */
typedef struct {
    char *default_region_name;
    char *cis_server;
    char *grpc_port;
    char *libfabric_provider;
    char *fam_thread_model;
    char *cis_interface_type;
    char *openfam_model;
    char *fam_context_model;
    char *num_consumer;
    char *runtime;
    char *fam_default_memory_type;
    char *if_device;
    void *local_buf_addr;
    uint64_t local_buf_size;
} fam_options_t;

/* Same layout as Fam_Backup_Options. */
typedef struct {
    uint32_t backup_option_reserved;
} fam_backup_options_t;

#ifdef __SIZEOF_INT128__
/* Value type of the 128-bit atomics (set, fetch, compare_swap). */
__extension__ typedef __int128 fam_int128_t;
#endif

typedef struct fam_region fam_region_t;
typedef struct fam_desc fam_desc_t;
typedef struct fam_ctx fam_ctx_t;
typedef struct fam_wait fam_wait_t;

#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(sizeof(fam_region_attr_t) == 16, "fam_region_attr_t layout");
static_assert(sizeof(fam_global_desc_t) == 16, "fam_global_desc_t layout");
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(fam_region_attr_t) == 16, "fam_region_attr_t layout");
_Static_assert(sizeof(fam_global_desc_t) == 16, "fam_global_desc_t layout");
#endif

/* ---- Errors ------------------------------------------------------------ */

/* Message of the calling thread's last failure ("" if none). Never NULL;
 * owned by the library, valid until the thread's next failing call. */
const char *fam_errmsg(void);
/* Positive FAM_E* code of the calling thread's last failure, 0 if none. */
int fam_errcode(void);

/* ---- Life cycle and runtime -------------------------------------------- */

/* Starts the process-wide instance. group must not be NULL; opts may be NULL.
 * With no configuration (no OPENFAM_SERVER, no config file) everything is
 * served inside the process from files under the per-user data directories.
 * A second call while initialized fails with FAM_EINVAL. In a child made by
 * fork() without exec from a process that has the library loaded (before or
 * after fam_initialize), this and every other call fail at once with
 * FAM_EINVAL: the library's runtime threads do not survive fork; exec a new
 * program in the child instead. Errors: FAM_EINVAL (NULL group, already
 * initialized, an unknown option or value), FAM_ERESOURCE (a data
 * directory cannot be made, or another process holds the embedded store),
 * FAM_EMETADATA (the metadata store cannot be opened), FAM_ERPC or
 * FAM_ETIMEOUT (famd unreachable). */
int fam_initialize(const char *group, fam_options_t *opts);
/* Waits for outstanding operations, releases every handle and stops the
 * instance. Handles used afterwards fail with FAM_EINVAL. Calls racing with
 * it on other threads finish or fail with FAM_EINVAL (an atomic that fails so
 * may or may not have taken effect); they never crash the program. Errors:
 * FAM_EINVAL (not initialized), or the first error of an operation that was
 * still outstanding (the instance is stopped all the same). */
int fam_finalize(const char *group);
/* Ends the job: with a launcher, every PE exits with status; alone, the
 * process exits with status. Returns only on error (the common errors). */
int fam_abort(int status);
/* Waits until every PE of the job has called it (returns at once alone).
 * Errors: the common ones (FAM_ERPC or FAM_ETIMEOUT when famd, which holds
 * the barrier, is lost). */
int fam_barrier_all(void);
/* NULL-terminated list of option names in OpenFAM's order, in one malloc'd
 * block the caller releases with free(). NULL on failure: FAM_EINVAL (not
 * initialized), FAM_EMEMORY (malloc failed). */
const char **fam_list_options(void);
/* A malloc'd copy of an option's value, released by the caller with free():
 * int* for PE_ID and PE_COUNT, uint64_t* for LOC_BUF_SIZE, char* otherwise.
 * NULL on failure: FAM_EINVAL (NULL or unknown name, not initialized),
 * FAM_EMEMORY (malloc failed). */
const void *fam_get_option(const char *name);

/* ---- Regions ------------------------------------------------------------ */

/* Names and modes, for every call below that takes them:
 *   - A region or item name is 1 to 255 bytes (FAM_ENAMETOOLONG beyond) and
 *     must not be path-like: no '/', not "." or "..", no NUL or other
 *     control character (bytes below 0x20, and 0x7f); UTF-8 is fine.
 *     Otherwise FAM_EINVAL. A backup name follows the same rules but may
 *     have up to 245 bytes (FAM_EINVAL beyond).
 *   - A mode (perm) holds permission bits only: any bit outside 0777
 *     (setuid, setgid, sticky, file-type bits) fails with FAM_EINVAL, and
 *     the message names the value; nothing is created or changed.
 *   - Permissions are POSIX-like for everyone but the owner: the group's
 *     bits apply to a caller of the owner's gid, the others' to anyone
 *     else; root gets no bypass. Read (r) and write (w) are used, x is
 *     kept. The owner is bound by no mode bits, as in OpenFAM (whose
 *     metadata service checks a mode only when the caller is not the
 *     owner): it may read, write, allocate in, resize and destroy its own
 *     regions and items whatever their mode, so a program may create a
 *     region 0444 and allocate in it, or change its own item to 0333 and
 *     read it. A mode change reaches other users' open handles at once. */

/* Creates a region of size bytes owned by the caller. attr may be NULL
 * (volatile unless configured otherwise, interleaved, region-level
 * permissions). Errors: FAM_EINVAL, FAM_ENAMETOOLONG, FAM_EEXIST,
 * FAM_ENOSPACE, FAM_ERESOURCE (the region's storage could not be made). */
fam_region_t *fam_create_region(const char *name, uint64_t size, mode_t perm, fam_region_attr_t *attr);
/* Opens the region called name. The caller needs read or write permission
 * on it. NULL on failure: FAM_EINVAL (NULL or malformed name),
 * FAM_ENAMETOOLONG, FAM_ENOTFOUND (no such region), FAM_ENOPERM. */
fam_region_t *fam_lookup_region(const char *name);
/* Destroys the region and every item in it; releases r. The owner may
 * always, whatever the mode (as in OpenFAM); anyone else needs write
 * permission on the region, not ownership: another user with w in the
 * region's mode may destroy it. Errors: FAM_ENOPERM (not the owner and no
 * write permission; r stays valid). */
int fam_destroy_region(fam_region_t *r);
/* Releases the handle r; the region stays. (Not in OpenFAM, whose region
 * descriptors are freed only by fam_destroy_region or finalize.) Errors:
 * the common ones only. */
int fam_close_region(fam_region_t *r);
/* Grows (or shrinks down to the end of its last item) the region in place;
 * item offsets do not change. The owner may always; anyone else needs write
 * permission on the region, not ownership (as in OpenFAM). Errors:
 * FAM_EINVAL (nbytes 0, or smaller than the end of the last item),
 * FAM_ENOPERM, FAM_ENOSPACE (beyond the 64 TiB limit), FAM_ERESOURCE (the
 * region's storage could not be resized). */
int fam_resize_region(fam_region_t *r, uint64_t nbytes);
/* Sets the region's mode (bits within 0777). Owner only. The new mode binds
 * other users at once, their open handles included; it never binds the
 * owner. Errors: FAM_EINVAL (bits outside 0777), FAM_ENOPERM (not the
 * owner). */
int fam_change_region_permissions(fam_region_t *r, mode_t perm);
/* Fills *out with the region's size, mode, owner, name, attributes and
 * memory servers; out->name stays valid until r is released. The caller
 * needs read or write permission on r. Errors: FAM_EINVAL (out NULL),
 * FAM_ENOPERM, FAM_EMEMORY. */
int fam_stat_region(fam_region_t *r, fam_stat_t *out);
/* Fills *out with the region's global descriptor (region id, offset 0),
 * which another process may pass to fam_region_from_global. Errors:
 * FAM_EINVAL (out NULL). */
int fam_region_global(fam_region_t *r, fam_global_desc_t *out);
/* A handle for a region named by its global descriptor; checked on first use
 * (a region that does not exist or that the caller may not use fails
 * there, with FAM_ENOTFOUND or FAM_ENOPERM). NULL on failure: FAM_EINVAL
 * (g names a data item: its offset is not 0). */
fam_region_t *fam_region_from_global(fam_global_desc_t g);

/* ---- Data items --------------------------------------------------------- */

/* Allocates nbytes in region r. name NULL makes an unnamed item, reachable
 * only through its global descriptor. The region's owner may always
 * allocate in it (as in OpenFAM, even in a region of mode 0444); anyone else
 * needs write permission on r. The bytes start zeroed. NULL on failure:
 * FAM_EINVAL (nbytes 0, malformed name, bits outside 0777 in perm),
 * FAM_ENAMETOOLONG, FAM_EEXIST (name taken in r), FAM_ENOPERM, FAM_ENOSPACE
 * (no free block of nbytes in r, or no room on the memory servers),
 * FAM_ERESOURCE (the region's storage failed). */
fam_desc_t *fam_allocate(const char *name, uint64_t nbytes, mode_t perm, fam_region_t *r);
/* Opens the item called item in the region called region. The caller needs
 * read or write permission on the item. NULL on failure: FAM_EINVAL (NULL or
 * malformed name), FAM_ENAMETOOLONG, FAM_ENOTFOUND (no such region or
 * item), FAM_ENOPERM. */
fam_desc_t *fam_lookup(const char *item, const char *region);
/* Frees the item's memory and name and releases d. The item's owner may
 * always; anyone else needs write permission on its region, as with
 * unlink(2). Errors: FAM_ENOPERM (d stays valid). */
int fam_deallocate(fam_desc_t *d);
/* Releases d; the item stays. Errors: the common ones only. */
int fam_close(fam_desc_t *d);
/* Sets the item's mode (bits within 0777). Owner only. The new mode binds
 * other users at once, their open handles included; it never binds the
 * owner. Errors: FAM_EINVAL (bits outside 0777), FAM_ENOPERM (not the
 * owner). */
int fam_change_permissions(fam_desc_t *d, mode_t perm);
/* Fills *out with the item's size, mode, owner and name (out->name valid
 * until d is released) and its region's memory servers; the region
 * attributes are zero, as in OpenFAM. Errors: FAM_EINVAL (out NULL),
 * FAM_EMEMORY. */
int fam_stat(fam_desc_t *d, fam_stat_t *out);
/* Fills *out with the item's global descriptor (region id, offset), which
 * another process may pass to fam_desc_from_global. Errors: FAM_EINVAL (out
 * NULL). */
int fam_desc_global(fam_desc_t *d, fam_global_desc_t *out);
/* A handle for an item named by its global descriptor (possibly made by
 * another process); resolved and permission-checked on first use, so a
 * descriptor naming no item, or one the caller may not use, fails there
 * (FAM_ENOTFOUND, FAM_ENOPERM). NULL on failure: the common errors only. */
fam_desc_t *fam_desc_from_global(fam_global_desc_t g);

/* ---- Data path ------------------------------------------------------------ */

/* Copy nbytes between local and the item at offset. Blocking calls return
 * when the bytes are read (get) or written (put). Errors: FAM_EINVAL (NULL
 * or released handle, NULL buffer, nbytes 0), FAM_ERANGE (offset + nbytes
 * past the item), FAM_ENOPERM (no read, resp. write, permission), FAM_ERPC
 * or FAM_ETIMEOUT (famd or a memory server unreachable).
 *
 * Non-blocking calls return once the transfer is issued; fam_quiet (or
 * fam_fence for ordering) completes it. As in OpenFAM, they refuse bad
 * arguments at once (FAM_EINVAL, FAM_ERANGE), but a failure of the transfer
 * itself (FAM_ENOPERM, FAM_ERPC, FAM_ETIMEOUT) is reported by the fam_quiet
 * that completes it. local must stay valid until then. */
int fam_get_blocking(void *local, fam_desc_t *d, uint64_t offset, uint64_t nbytes);
int fam_put_blocking(void *local, fam_desc_t *d, uint64_t offset, uint64_t nbytes);
int fam_get_nonblocking(void *local, fam_desc_t *d, uint64_t offset, uint64_t nbytes);
int fam_put_nonblocking(void *local, fam_desc_t *d, uint64_t offset, uint64_t nbytes);

/* Gather (item -> local) and scatter (local -> item) of n elements of
 * elem_size bytes. Every element is checked before any byte moves, so a bad
 * one (FAM_ERANGE) changes nothing; n or elem_size 0 is FAM_EINVAL; other
 * errors and the non-blocking rules as for get and put. Element i lives at byte (first + i*stride) * elem_size
 * of the item and at byte i*elem_size of local. */
int fam_gather_blocking_strided(void *local, fam_desc_t *d, uint64_t n, uint64_t first, uint64_t stride, uint64_t elem_size);
int fam_scatter_blocking_strided(void *local, fam_desc_t *d, uint64_t n, uint64_t first, uint64_t stride, uint64_t elem_size);
int fam_gather_nonblocking_strided(void *local, fam_desc_t *d, uint64_t n, uint64_t first, uint64_t stride, uint64_t elem_size);
int fam_scatter_nonblocking_strided(void *local, fam_desc_t *d, uint64_t n, uint64_t first, uint64_t stride, uint64_t elem_size);
/* Element i lives at byte index[i] * elem_size of the item. Errors as for
 * the strided calls, and FAM_EINVAL for a NULL index with n > 0. */
int fam_gather_blocking_indexed(void *local, fam_desc_t *d, uint64_t n, const uint64_t *index, uint64_t elem_size);
int fam_scatter_blocking_indexed(void *local, fam_desc_t *d, uint64_t n, const uint64_t *index, uint64_t elem_size);
int fam_gather_nonblocking_indexed(void *local, fam_desc_t *d, uint64_t n, const uint64_t *index, uint64_t elem_size);
int fam_scatter_nonblocking_indexed(void *local, fam_desc_t *d, uint64_t n, const uint64_t *index, uint64_t elem_size);

/* Maps the item into this process and returns its address: writable with
 * write permission on the item, read-only otherwise (writing then faults,
 * as with mmap). Valid until fam_unmap, fam_close/fam_deallocate of d, or
 * fam_finalize. NULL on failure: FAM_ENOPERM (no read permission),
 * FAM_EUNIMPL (the memory is not on this host: famd over TCP, memory
 * servers, an interleaved item), FAM_EMEMORY (mmap failed). */
void *fam_map(fam_desc_t *d);
/* Removes a mapping fam_map made of d; local is the address it returned.
 * Errors: FAM_EINVAL (local NULL or not a live mapping of d), FAM_EMEMORY
 * (munmap failed). */
int fam_unmap(void *local, fam_desc_t *d);

/* Starts copying nbytes from src at src_offset to dst at dst_offset and
 * returns at once (overlapping ranges of one item copy as memmove does).
 * The arguments are checked first: NULL on failure with FAM_EINVAL (nbytes
 * 0), FAM_ERANGE (a range past its item), FAM_ENOPERM (no read on src or no
 * write on dst). fam_copy_wait waits for the copy, releases w and returns
 * the copy's own error (a transport failure, or the common errors). Waiting
 * twice, or with a handle from another call, fails with FAM_EINVAL. */
fam_wait_t *fam_copy(fam_desc_t *src, uint64_t src_offset, fam_desc_t *dst, uint64_t dst_offset, uint64_t nbytes);
int fam_copy_wait(fam_wait_t *w);

/* ---- Backup and restore ---------------------------------------------------- */

/* Backups live in the archive directory (OPENFAM_BACKUP_DIR, default under
 * the per-user data directory; with famd, its own, a 0700 directory of 0600
 * files). opts may be NULL.
 *
 * A backup carries the owner (uid, gid) and mode that governed its source
 * item when it was taken: the region's with region-level permissions (the
 * default), the item's own with data item-level permissions. Those govern
 * the backup from then on, with the class rules above:
 *   - fam_backup needs read permission on the item. Backup names are one
 *     namespace shared by all users: a name in use, whoever owns that
 *     backup, fails with FAM_EEXIST, and the existing backup is kept.
 *   - fam_restore needs read on the backup and write on dst;
 *     fam_restore_region read on the backup and write on r. FAM_ENOPERM
 *     otherwise, with nothing written or allocated.
 *   - fam_delete_backup needs to own the backup or have write on it.
 *   - The backup's owner, like the owner of a region or item, is bound by
 *     none of its mode bits.
 *   - fam_list_backup shows only the backups the caller may read.
 * A backup written by a version whose header recorded no access (before
 * this rule) is treated as owned by the backup file's owner (famd's user,
 * or the embedded process's) with mode 0600.
 *
 * The calls that start an operation return a wait handle at once; the
 * matching *_wait call waits for it, releases the handle and returns the
 * operation's result. An error may come from either: the embedded store
 * checks names, permissions and existence before it returns the handle,
 * famd may report them at the wait. Every *_wait fails with FAM_EINVAL for
 * a handle already waited for or made by another kind of call. */

/* Writes a copy of the item src to the archive under backup_name. Errors:
 * FAM_EINVAL (malformed backup name, or longer than 245 bytes),
 * FAM_ENOPERM (no read permission on src), FAM_EEXIST (a backup of that
 * name exists), FAM_EBACKUPNOTCREATED (writing the archive file failed). */
fam_wait_t *fam_backup(fam_desc_t *src, const char *backup_name, fam_backup_options_t *opts);
int fam_backup_wait(fam_wait_t *w);
/* Restores a backup into an existing item at least as large as the backup.
 * Errors: FAM_EINVAL (malformed name), FAM_EBACKUPNOTFOUND (no such
 * backup, or it could not be read), FAM_ENOPERM (no read on the backup or
 * no write on dst), FAM_ERANGE (dst smaller than the backup). */
fam_wait_t *fam_restore(const char *backup_name, fam_desc_t *dst);
/* Allocates a new item (name may be NULL) in r and restores into it; *out
 * receives its handle once fam_restore_wait has succeeded (it is set when
 * fam_restore_region returns, usable after the wait). Errors: as for
 * fam_restore (write permission is needed on r), plus fam_allocate's
 * (FAM_EINVAL for out NULL or bits outside 0777, FAM_ENAMETOOLONG,
 * FAM_EEXIST, FAM_ENOSPACE). */
fam_wait_t *fam_restore_region(const char *backup_name, fam_region_t *r, const char *item_name, mode_t perm, fam_desc_t **out);
int fam_restore_wait(fam_wait_t *w);
/* Deletes a backup. The caller must own it or have write permission on it.
 * Errors: FAM_EINVAL (malformed name), FAM_EBACKUPNOTFOUND, FAM_ENOPERM. */
fam_wait_t *fam_delete_backup(const char *backup_name);
int fam_delete_backup_wait(fam_wait_t *w);
/* Describes the backups whose names start with backup_name (every backup for
 * "") and that the caller may read: one line each, "name size mode uid gid
 * time", with the backup's governing mode and owner. malloc'd; the caller
 * frees it. NULL on failure: FAM_EINVAL (NULL backup_name, as in OpenFAM),
 * FAM_ERESOURCE (the archive directory cannot be read), FAM_EMEMORY. */
char *fam_list_backup(const char *backup_name);

/* ---- Listing (not in OpenFAM) ---------------------------------------------- */

/* Both return one malloc'd, NUL-terminated string that the caller releases
 * with free(): one line per entry, each ended by '\n', fields separated by
 * a tab, numbers in decimal except the mode (octal, 4 digits, e.g. "0640").
 * No entry gives "" (not NULL). Names cannot hold a tab, newline or other
 * control character (see "Names and modes" above), so every line splits
 * into its fields; an unnamed item has an empty name field (should a stored
 * name ever hold one, the call fails with FAM_EMETADATA rather than list an
 * ambiguous line). NULL on failure. The listing is a snapshot: regions and
 * items made or removed meanwhile may or may not appear. */

/* Describes every region the caller may read or write (the rule of
 * fam_lookup_region), by ascending region id: "name\tsize\tmode\tuid\tgid\n"
 * per region, size in bytes, mode and owner the region's. Errors:
 * FAM_EINVAL (not initialized), FAM_ERPC or FAM_ETIMEOUT (famd
 * unreachable), FAM_EMEMORY. */
char *fam_list_regions(void);
/* Describes every data item of region r, by ascending offset:
 * "name\toffset\tsize\tmode\tuid\tgid\n" per item, offset as in the item's
 * global descriptor, mode and owner the item's own. The caller needs read
 * or write permission on r. Errors: FAM_EINVAL (NULL or released handle,
 * not initialized), FAM_ENOTFOUND (region destroyed), FAM_ENOPERM,
 * FAM_ERPC or FAM_ETIMEOUT, FAM_EMEMORY. */
char *fam_list_items(fam_region_t *r);

/* ---- Ordering and contexts ------------------------------------------------- */

/* Orders this instance's earlier non-blocking operations before later ones,
 * whichever memory servers they go to (it waits until they are applied;
 * their errors stay for fam_quiet). Errors: the common ones only. */
int fam_fence(void);
/* Waits until this instance's non-blocking operations are complete and
 * reports the first error among them (including a non-blocking call's
 * permission or transport failure, e.g. FAM_ENOPERM, FAM_ERPC), then
 * forgets them.
 *
 * Persistence: for a data item of a persistent region, when fam_quiet (or
 * fam_ctx_quiet) returns 0, every put, scatter, copy and atomic issued
 * before it on that context (blocking or not) is on stable storage at the
 * server that holds it, as with librpmem's rpmem_persist. A blocking put is
 * visible to others when it returns but durable only at the next quiet (or
 * fam_persist). A quiet may also make other contexts' writes durable. On
 * the same host the pages this process wrote are msynced (no call into
 * famd); through famd or memory servers a commit goes to each server that
 * holds written bytes, which answers once they are durable. Volatile
 * regions cost nothing more. Bytes written through a fam_map mapping of a
 * persistent item are made durable too. FAM_ERESOURCE: the write to stable
 * storage failed.
 *
 * $OPENFAM_PERSIST changes when that happens: "quiet" (default, as above),
 * "each" (every blocking call is durable when it returns), "lazy" (quiet
 * does not wait for stable storage; a background flush every
 * $OPENFAM_PERSIST_INTERVAL, default 5s, does). fam_persist flushes under
 * every policy. A persistent region's creation, an allocation in it and
 * their names are durable when the call returns (not under "lazy"). */
int fam_quiet(void);
/* Makes bytes [offset, offset+nbytes) of item d durable now, whatever the
 * policy, if d's region is persistent (for a volatile one it only checks its
 * arguments). Operations still in flight are not waited for (fam_quiet does
 * that). Needs read or write permission on d. Errors: FAM_EINVAL (NULL or
 * released handle, nbytes 0), FAM_ERANGE, FAM_ENOPERM, FAM_ERESOURCE
 * (the write to stable storage failed), FAM_ERPC or FAM_ETIMEOUT (a server
 * did not answer). */
int fam_persist(fam_desc_t *d, uint64_t offset, uint64_t nbytes);
/* Number of this instance's operations not yet complete; 0 on failure (the
 * common errors, readable with fam_errcode). */
uint64_t fam_progress(void);

/* A context has its own completion queue: fam_ctx_quiet(c) waits for c's
 * operations only. Contexts are safe to share between threads.
 * fam_context_open: NULL on failure, the common errors only.
 * fam_context_close waits for c's operations, releases c and returns the
 * first error among them, as fam_ctx_quiet does. */
fam_ctx_t *fam_context_open(void);
int fam_context_close(fam_ctx_t *c);

/* ---- Atomics on the default context ---------------------------------------- */

/* Each call applies one operation atomically to the word of the value's type
 * at offset in the item. Non-fetching calls need write permission on the
 * item; fetch needs read; the fetching forms of modifying operations
 * (fetch_*, swap, compare_swap) need read and write. Errors, for every
 * atomic: FAM_EINVAL (offset not a multiple of the value's size; a NULL
 * value_out or old_out), FAM_ERANGE (the word reaches past the item),
 * FAM_ENOPERM. A call refused for these reasons changes nothing. */

/* set: store v atomically */
int fam_set_int32(fam_desc_t *d, uint64_t offset, int32_t value);
int fam_set_int64(fam_desc_t *d, uint64_t offset, int64_t value);
int fam_set_uint32(fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_set_uint64(fam_desc_t *d, uint64_t offset, uint64_t value);
int fam_set_float(fam_desc_t *d, uint64_t offset, float value);
int fam_set_double(fam_desc_t *d, uint64_t offset, double value);
#ifdef __SIZEOF_INT128__
int fam_set_int128(fam_desc_t *d, uint64_t offset, fam_int128_t value);
#endif

/* add: non-fetching */
int fam_add_int32(fam_desc_t *d, uint64_t offset, int32_t value);
int fam_add_int64(fam_desc_t *d, uint64_t offset, int64_t value);
int fam_add_uint32(fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_add_uint64(fam_desc_t *d, uint64_t offset, uint64_t value);
int fam_add_float(fam_desc_t *d, uint64_t offset, float value);
int fam_add_double(fam_desc_t *d, uint64_t offset, double value);

/* subtract: non-fetching */
int fam_subtract_int32(fam_desc_t *d, uint64_t offset, int32_t value);
int fam_subtract_int64(fam_desc_t *d, uint64_t offset, int64_t value);
int fam_subtract_uint32(fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_subtract_uint64(fam_desc_t *d, uint64_t offset, uint64_t value);
int fam_subtract_float(fam_desc_t *d, uint64_t offset, float value);
int fam_subtract_double(fam_desc_t *d, uint64_t offset, double value);

/* min: non-fetching */
int fam_min_int32(fam_desc_t *d, uint64_t offset, int32_t value);
int fam_min_int64(fam_desc_t *d, uint64_t offset, int64_t value);
int fam_min_uint32(fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_min_uint64(fam_desc_t *d, uint64_t offset, uint64_t value);
int fam_min_float(fam_desc_t *d, uint64_t offset, float value);
int fam_min_double(fam_desc_t *d, uint64_t offset, double value);

/* max: non-fetching */
int fam_max_int32(fam_desc_t *d, uint64_t offset, int32_t value);
int fam_max_int64(fam_desc_t *d, uint64_t offset, int64_t value);
int fam_max_uint32(fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_max_uint64(fam_desc_t *d, uint64_t offset, uint64_t value);
int fam_max_float(fam_desc_t *d, uint64_t offset, float value);
int fam_max_double(fam_desc_t *d, uint64_t offset, double value);

/* and: non-fetching, unsigned only */
int fam_and_uint32(fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_and_uint64(fam_desc_t *d, uint64_t offset, uint64_t value);

/* or: non-fetching, unsigned only */
int fam_or_uint32(fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_or_uint64(fam_desc_t *d, uint64_t offset, uint64_t value);

/* xor: non-fetching, unsigned only */
int fam_xor_uint32(fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_xor_uint64(fam_desc_t *d, uint64_t offset, uint64_t value);

/* fetch: atomic read */
int fam_fetch_int32(fam_desc_t *d, uint64_t offset, int32_t *value_out);
int fam_fetch_int64(fam_desc_t *d, uint64_t offset, int64_t *value_out);
int fam_fetch_uint32(fam_desc_t *d, uint64_t offset, uint32_t *value_out);
int fam_fetch_uint64(fam_desc_t *d, uint64_t offset, uint64_t *value_out);
int fam_fetch_float(fam_desc_t *d, uint64_t offset, float *value_out);
int fam_fetch_double(fam_desc_t *d, uint64_t offset, double *value_out);
#ifdef __SIZEOF_INT128__
int fam_fetch_int128(fam_desc_t *d, uint64_t offset, fam_int128_t *value_out);
#endif

/* fetch_add: returns the previous value in *old_out */
int fam_fetch_add_int32(fam_desc_t *d, uint64_t offset, int32_t value, int32_t *old_out);
int fam_fetch_add_int64(fam_desc_t *d, uint64_t offset, int64_t value, int64_t *old_out);
int fam_fetch_add_uint32(fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_fetch_add_uint64(fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);
int fam_fetch_add_float(fam_desc_t *d, uint64_t offset, float value, float *old_out);
int fam_fetch_add_double(fam_desc_t *d, uint64_t offset, double value, double *old_out);

/* fetch_subtract: returns the previous value in *old_out */
int fam_fetch_subtract_int32(fam_desc_t *d, uint64_t offset, int32_t value, int32_t *old_out);
int fam_fetch_subtract_int64(fam_desc_t *d, uint64_t offset, int64_t value, int64_t *old_out);
int fam_fetch_subtract_uint32(fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_fetch_subtract_uint64(fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);
int fam_fetch_subtract_float(fam_desc_t *d, uint64_t offset, float value, float *old_out);
int fam_fetch_subtract_double(fam_desc_t *d, uint64_t offset, double value, double *old_out);

/* fetch_min: returns the previous value in *old_out */
int fam_fetch_min_int32(fam_desc_t *d, uint64_t offset, int32_t value, int32_t *old_out);
int fam_fetch_min_int64(fam_desc_t *d, uint64_t offset, int64_t value, int64_t *old_out);
int fam_fetch_min_uint32(fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_fetch_min_uint64(fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);
int fam_fetch_min_float(fam_desc_t *d, uint64_t offset, float value, float *old_out);
int fam_fetch_min_double(fam_desc_t *d, uint64_t offset, double value, double *old_out);

/* fetch_max: returns the previous value in *old_out */
int fam_fetch_max_int32(fam_desc_t *d, uint64_t offset, int32_t value, int32_t *old_out);
int fam_fetch_max_int64(fam_desc_t *d, uint64_t offset, int64_t value, int64_t *old_out);
int fam_fetch_max_uint32(fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_fetch_max_uint64(fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);
int fam_fetch_max_float(fam_desc_t *d, uint64_t offset, float value, float *old_out);
int fam_fetch_max_double(fam_desc_t *d, uint64_t offset, double value, double *old_out);

/* fetch_and: unsigned only */
int fam_fetch_and_uint32(fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_fetch_and_uint64(fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);

/* fetch_or: unsigned only */
int fam_fetch_or_uint32(fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_fetch_or_uint64(fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);

/* fetch_xor: unsigned only */
int fam_fetch_xor_uint32(fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_fetch_xor_uint64(fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);

/* swap: stores value, returns the previous value in *old_out */
int fam_swap_int32(fam_desc_t *d, uint64_t offset, int32_t value, int32_t *old_out);
int fam_swap_int64(fam_desc_t *d, uint64_t offset, int64_t value, int64_t *old_out);
int fam_swap_uint32(fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_swap_uint64(fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);
int fam_swap_float(fam_desc_t *d, uint64_t offset, float value, float *old_out);
int fam_swap_double(fam_desc_t *d, uint64_t offset, double value, double *old_out);

/* compare_swap: stores desired if the word equals expected; *old_out gets the previous value either way */
int fam_compare_swap_int32(fam_desc_t *d, uint64_t offset, int32_t expected, int32_t desired, int32_t *old_out);
int fam_compare_swap_int64(fam_desc_t *d, uint64_t offset, int64_t expected, int64_t desired, int64_t *old_out);
int fam_compare_swap_uint32(fam_desc_t *d, uint64_t offset, uint32_t expected, uint32_t desired, uint32_t *old_out);
int fam_compare_swap_uint64(fam_desc_t *d, uint64_t offset, uint64_t expected, uint64_t desired, uint64_t *old_out);
#ifdef __SIZEOF_INT128__
int fam_compare_swap_int128(fam_desc_t *d, uint64_t offset, fam_int128_t expected, fam_int128_t desired, fam_int128_t *old_out);
#endif

/* ---- The data path on a context ------------------------------------------- */

/* fam_ctx_X(c, ...) is fam_X(...) on context c instead of the instance's
 * default one: same arguments after c, same behaviour, same errors, plus
 * FAM_EINVAL for a NULL or closed c. Non-blocking operations issued on c
 * are completed by fam_ctx_quiet(c), ordered by fam_ctx_fence(c) and
 * counted by fam_ctx_progress(c) (0 on failure); fam_quiet, fam_fence and
 * fam_progress do not see them. */
int fam_ctx_get_blocking(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t offset, uint64_t nbytes);
int fam_ctx_put_blocking(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t offset, uint64_t nbytes);
int fam_ctx_get_nonblocking(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t offset, uint64_t nbytes);
int fam_ctx_put_nonblocking(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t offset, uint64_t nbytes);
int fam_ctx_gather_blocking_strided(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t n, uint64_t first, uint64_t stride, uint64_t elem_size);
int fam_ctx_scatter_blocking_strided(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t n, uint64_t first, uint64_t stride, uint64_t elem_size);
int fam_ctx_gather_nonblocking_strided(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t n, uint64_t first, uint64_t stride, uint64_t elem_size);
int fam_ctx_scatter_nonblocking_strided(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t n, uint64_t first, uint64_t stride, uint64_t elem_size);
int fam_ctx_gather_blocking_indexed(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t n, const uint64_t *index, uint64_t elem_size);
int fam_ctx_scatter_blocking_indexed(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t n, const uint64_t *index, uint64_t elem_size);
int fam_ctx_gather_nonblocking_indexed(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t n, const uint64_t *index, uint64_t elem_size);
int fam_ctx_scatter_nonblocking_indexed(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t n, const uint64_t *index, uint64_t elem_size);
fam_wait_t *fam_ctx_copy(fam_ctx_t *c, fam_desc_t *src, uint64_t src_offset, fam_desc_t *dst, uint64_t dst_offset, uint64_t nbytes);
int fam_ctx_fence(fam_ctx_t *c);
int fam_ctx_quiet(fam_ctx_t *c);
uint64_t fam_ctx_progress(fam_ctx_t *c);
int fam_ctx_persist(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t nbytes);

/* ---- Atomics on a context ---------------------------------------------------- */

/* The atomics above on context c, c first; errors as above, plus FAM_EINVAL
 * for a NULL or closed c. */

/* set: store v atomically */
int fam_ctx_set_int32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int32_t value);
int fam_ctx_set_int64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int64_t value);
int fam_ctx_set_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_ctx_set_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value);
int fam_ctx_set_float(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, float value);
int fam_ctx_set_double(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, double value);
#ifdef __SIZEOF_INT128__
int fam_ctx_set_int128(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, fam_int128_t value);
#endif

/* add: non-fetching */
int fam_ctx_add_int32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int32_t value);
int fam_ctx_add_int64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int64_t value);
int fam_ctx_add_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_ctx_add_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value);
int fam_ctx_add_float(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, float value);
int fam_ctx_add_double(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, double value);

/* subtract: non-fetching */
int fam_ctx_subtract_int32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int32_t value);
int fam_ctx_subtract_int64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int64_t value);
int fam_ctx_subtract_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_ctx_subtract_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value);
int fam_ctx_subtract_float(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, float value);
int fam_ctx_subtract_double(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, double value);

/* min: non-fetching */
int fam_ctx_min_int32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int32_t value);
int fam_ctx_min_int64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int64_t value);
int fam_ctx_min_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_ctx_min_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value);
int fam_ctx_min_float(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, float value);
int fam_ctx_min_double(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, double value);

/* max: non-fetching */
int fam_ctx_max_int32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int32_t value);
int fam_ctx_max_int64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int64_t value);
int fam_ctx_max_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_ctx_max_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value);
int fam_ctx_max_float(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, float value);
int fam_ctx_max_double(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, double value);

/* and: non-fetching, unsigned only */
int fam_ctx_and_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_ctx_and_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value);

/* or: non-fetching, unsigned only */
int fam_ctx_or_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_ctx_or_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value);

/* xor: non-fetching, unsigned only */
int fam_ctx_xor_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value);
int fam_ctx_xor_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value);

/* fetch: atomic read */
int fam_ctx_fetch_int32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int32_t *value_out);
int fam_ctx_fetch_int64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int64_t *value_out);
int fam_ctx_fetch_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t *value_out);
int fam_ctx_fetch_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t *value_out);
int fam_ctx_fetch_float(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, float *value_out);
int fam_ctx_fetch_double(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, double *value_out);
#ifdef __SIZEOF_INT128__
int fam_ctx_fetch_int128(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, fam_int128_t *value_out);
#endif

/* fetch_add: returns the previous value in *old_out */
int fam_ctx_fetch_add_int32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int32_t value, int32_t *old_out);
int fam_ctx_fetch_add_int64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int64_t value, int64_t *old_out);
int fam_ctx_fetch_add_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_ctx_fetch_add_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);
int fam_ctx_fetch_add_float(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, float value, float *old_out);
int fam_ctx_fetch_add_double(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, double value, double *old_out);

/* fetch_subtract: returns the previous value in *old_out */
int fam_ctx_fetch_subtract_int32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int32_t value, int32_t *old_out);
int fam_ctx_fetch_subtract_int64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int64_t value, int64_t *old_out);
int fam_ctx_fetch_subtract_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_ctx_fetch_subtract_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);
int fam_ctx_fetch_subtract_float(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, float value, float *old_out);
int fam_ctx_fetch_subtract_double(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, double value, double *old_out);

/* fetch_min: returns the previous value in *old_out */
int fam_ctx_fetch_min_int32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int32_t value, int32_t *old_out);
int fam_ctx_fetch_min_int64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int64_t value, int64_t *old_out);
int fam_ctx_fetch_min_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_ctx_fetch_min_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);
int fam_ctx_fetch_min_float(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, float value, float *old_out);
int fam_ctx_fetch_min_double(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, double value, double *old_out);

/* fetch_max: returns the previous value in *old_out */
int fam_ctx_fetch_max_int32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int32_t value, int32_t *old_out);
int fam_ctx_fetch_max_int64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int64_t value, int64_t *old_out);
int fam_ctx_fetch_max_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_ctx_fetch_max_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);
int fam_ctx_fetch_max_float(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, float value, float *old_out);
int fam_ctx_fetch_max_double(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, double value, double *old_out);

/* fetch_and: unsigned only */
int fam_ctx_fetch_and_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_ctx_fetch_and_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);

/* fetch_or: unsigned only */
int fam_ctx_fetch_or_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_ctx_fetch_or_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);

/* fetch_xor: unsigned only */
int fam_ctx_fetch_xor_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_ctx_fetch_xor_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);

/* swap: stores value, returns the previous value in *old_out */
int fam_ctx_swap_int32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int32_t value, int32_t *old_out);
int fam_ctx_swap_int64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int64_t value, int64_t *old_out);
int fam_ctx_swap_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t value, uint32_t *old_out);
int fam_ctx_swap_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t value, uint64_t *old_out);
int fam_ctx_swap_float(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, float value, float *old_out);
int fam_ctx_swap_double(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, double value, double *old_out);

/* compare_swap: stores desired if the word equals expected; *old_out gets the previous value either way */
int fam_ctx_compare_swap_int32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int32_t expected, int32_t desired, int32_t *old_out);
int fam_ctx_compare_swap_int64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, int64_t expected, int64_t desired, int64_t *old_out);
int fam_ctx_compare_swap_uint32(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint32_t expected, uint32_t desired, uint32_t *old_out);
int fam_ctx_compare_swap_uint64(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, uint64_t expected, uint64_t desired, uint64_t *old_out);
#ifdef __SIZEOF_INT128__
int fam_ctx_compare_swap_int128(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, fam_int128_t expected, fam_int128_t desired, fam_int128_t *old_out);
#endif

#ifdef __cplusplus
}
#endif

#endif /* OPENFAM_H */
