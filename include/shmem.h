/*
 * shmem.h: OpenSHMEM 1.5 on OpenFAM (libopenfam.so.0). Compile with oshcc,
 * run with oshrun. The typed routines (RMA, atomics, wait/test, signals)
 * are declared in shmem-typed.h, generated from one type table
 * (shmem/gen); teams, collectives and locks in shmem-coll.h.
 *
 * The pre-1.2 names (start_pes, _my_pe, _num_pes, shmalloc, shfree,
 * shmemalign, shrealloc) are declared unless SHMEM_NO_DEPRECATED is defined
 * before including this header: benchmarks such as OSU's still use them.
 */
#ifndef OPENFAM_SHMEM_H
#define OPENFAM_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define SHMEM_MAX_NAME_LEN 256
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define SHMEM_VENDOR_STRING "OpenFAM-Go OpenSHMEM"
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING
/* This implementation's own version macros, for feature tests. */
#define OPENFAM_SHMEM 1

/* Thread levels. */
#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

/* Comparisons of wait_until and test. */
#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_LE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_GE 5
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_LE SHMEM_CMP_LE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_GE SHMEM_CMP_GE

/* Signal operations of put_signal. */
#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* Context options. */
#define SHMEM_CTX_PRIVATE (1L << 0)
#define SHMEM_CTX_SERIALIZED (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)

/* Hints of shmem_malloc_with_hints. */
#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)

/* Team configuration mask bits. */
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* Sizes of the 1.4 active-set collectives' work arrays. */
#define SHMEM_SYNC_VALUE (-1L)
#define SHMEM_BCAST_SYNC_SIZE 128
#define SHMEM_SYNC_SIZE 128
#define SHMEM_REDUCE_SYNC_SIZE 128
#define SHMEM_BARRIER_SYNC_SIZE 128
#define SHMEM_COLLECT_SYNC_SIZE 128
#define SHMEM_ALLTOALL_SYNC_SIZE 128
#define SHMEM_ALLTOALLS_SYNC_SIZE 128
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 64
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_SYNC_SIZE SHMEM_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* Teams and contexts are pointers to the layer's own structures. */
struct shmemi_team;
struct shmemi_ctx;
typedef struct shmemi_team *shmem_team_t;
typedef struct shmemi_ctx *shmem_ctx_t;

typedef struct {
    int num_contexts;
} shmem_team_config_t;

/* The predefined handles are constant pointers the library exports, not
 * the addresses of objects it exports: a program built as a (PIE or
 * position-dependent) executable gets its own copy, made at load time, of
 * every library object it names directly (a copy relocation), while the
 * library keeps using the original. A copy of a pointer is harmless: it
 * holds the already-relocated address of the library's one object, so
 * the program and the library see the same handle. */
extern struct shmemi_team *const shmemi_team_world_ptr;
extern struct shmemi_team *const shmemi_team_shared_ptr;
extern struct shmemi_ctx *const shmemi_ctx_default_ptr;
#define SHMEM_TEAM_WORLD (shmemi_team_world_ptr)
#define SHMEM_TEAM_SHARED (shmemi_team_shared_ptr)
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_CTX_DEFAULT (shmemi_ctx_default_ptr)
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)

/* ---- library setup, query, exit ---------------------------------------------- */

void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
void shmem_global_exit(int status) __attribute__((noreturn));
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);

/* ---- symmetric heap ---------------------------------------------------------------- */

void *shmem_malloc(size_t size);
void *shmem_malloc_with_hints(size_t size, long hints);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);

/* ---- contexts, ordering ------------------------------------------------------------ */

int shmem_ctx_create(long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);
void shmem_fence(void);
void shmem_quiet(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_ctx_quiet(shmem_ctx_t ctx);
void shmem_barrier_all(void);
void shmem_sync_all(void);

/* ---- untyped RMA and signals -------------------------------------------------------- */

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                         int sig_op, int pe);
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                             int sig_op, int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                                 uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* Profiling control (accepted, no effect). */
void shmem_pcontrol(const int level, ...);

#ifdef __cplusplus
}
#endif

#include "shmem-typed.h"
#include "shmem-coll.h"

#if !defined(SHMEM_NO_DEPRECATED)
#ifdef __cplusplus
extern "C" {
#endif
/* Pre-1.2 names, deprecated by the specification. */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shmemalign(size_t alignment, size_t size);
void *shrealloc(void *ptr, size_t size);
void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);
#ifdef __cplusplus
}
#endif
#endif

#endif /* OPENFAM_SHMEM_H */
