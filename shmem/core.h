/*
 * core.h: private to the core of the OpenSHMEM layer (shmem/core.c,
 * heap.c, rma.c and the generated typed routines). The symmetric segments
 * and the inline address translation every RMA and atomic starts with.
 * The collectives use the functions of shmemi.h instead.
 */
#ifndef OPENFAM_SHMEM_CORE_H
#define OPENFAM_SHMEM_CORE_H

#include <stdint.h>
#include <string.h>

#include "openfam.h"
#include "shmemi.h"

/* One kind of symmetric memory: the heap, or the program's static and
 * global data. Every PE has one FAM data item per segment; base/size is
 * this PE's copy in this process, peer[pe] where PE pe's copy is mapped
 * here (NULL where it is not: another host, or items fam_map refuses) and
 * desc[pe] its FAM descriptor for the data path. */
typedef struct {
    uintptr_t base;
    size_t size;
    char **peer;
    fam_desc_t **desc;
    const char *what; /* "symmetric heap" or "static/global data" */
    /* Private mode (shmemi_private_mode): this PE's copy at base is
     * private memory, its item the shared copy; twin holds the bytes last
     * exchanged with the item, to find what the program changed since. */
    int priv;
    char *twin;
} shmemi_seg;

/* Byte offset, past the internal reserve, of the end of the highest block
 * the allocator ever handed out (heap.c): what private mode exchanges. */
extern size_t shmemi_heap_hwm;

extern shmemi_seg shmemi_heap_seg, shmemi_data_seg;

/* Thread level given by shmem_init_thread. */
extern int shmemi_thread_level;

/* Where an access of len bytes at local symmetric address addr lands on
 * world PE pe. Returns the address in this process where that memory is
 * mapped, or NULL with *seg and *off set for the data path. Aborts the job
 * (naming call) when pe is out of range or the range is not symmetric. */
char *shmemi_xlate_slow(const char *call, const void *addr, size_t len, int pe, shmemi_seg **seg, size_t *off);

static inline __attribute__((always_inline)) char *shmemi_xlate(const char *call, const void *addr, size_t len,
                                                               int pe, shmemi_seg **seg, size_t *off)
{
    /* The fast path: a mapped peer's heap. Everything else (static data,
     * the data path, bad arguments) is out of line. */
    size_t o = (uintptr_t)addr - shmemi_heap_seg.base;
    if (__builtin_expect((unsigned)pe < (unsigned)shmemi_n_pes && o < shmemi_heap_seg.size &&
                             len <= shmemi_heap_seg.size - o,
                         1)) {
        char *p = shmemi_heap_seg.peer[pe];
        if (__builtin_expect(p != NULL, 1))
            return p + o;
    }
    return shmemi_xlate_slow(call, addr, len, pe, seg, off);
}

/* The data path (peer memory not mapped here): blocking transfers and
 * atomics on PE pe's item of seg at byte off. Abort the job naming call on
 * an error. */
void shmemi_slow_put(const char *call, shmemi_seg *seg, size_t off, const void *src, size_t n, int pe);
void shmemi_slow_get(const char *call, shmemi_seg *seg, size_t off, void *dst, size_t n, int pe);

/* Atomic operations of shmemi_amo32/64. */
enum {
    SHMEMI_AMO_FETCH,
    SHMEMI_AMO_SET,
    SHMEMI_AMO_SWAP,
    SHMEMI_AMO_CSWAP,
    SHMEMI_AMO_ADD,
    SHMEMI_AMO_AND,
    SHMEMI_AMO_OR,
    SHMEMI_AMO_XOR
};

/* Reads n bytes of this PE's symmetric variable ivar where peers' writes
 * land (its item in private mode, else ivar itself). */
void shmemi_wait_read(const void *ivar, void *out, size_t n);

uint32_t shmemi_slow_amo32(const char *call, shmemi_seg *seg, size_t off, int op, uint32_t v, uint32_t cmp, int pe);
uint64_t shmemi_slow_amo64(const char *call, shmemi_seg *seg, size_t off, int op, uint64_t v, uint64_t cmp, int pe);

/* Byte copy to and from PE pe with the checks of call. */
static inline __attribute__((always_inline)) void shmemi_put_c(const char *call, void *dest, const void *src, size_t n, int pe)
{
    shmemi_seg *seg;
    size_t off;
    if (n == 0)
        return;
    char *p = shmemi_xlate(call, dest, n, pe, &seg, &off);
    if (__builtin_expect(p != NULL, 1))
        memcpy(p, src, n);
    else
        shmemi_slow_put(call, seg, off, src, n, pe);
}

static inline __attribute__((always_inline)) void shmemi_get_c(const char *call, void *dest, const void *src, size_t n, int pe)
{
    shmemi_seg *seg;
    size_t off;
    if (n == 0)
        return;
    char *p = shmemi_xlate(call, src, n, pe, &seg, &off);
    if (__builtin_expect(p != NULL, 1))
        memcpy(dest, p, n);
    else
        shmemi_slow_get(call, seg, off, dest, n, pe);
}

/* Strided copies: nelems elements of size bytes, tst/sst elements apart
 * at the target and source. */
void shmemi_iput_c(const char *call, void *dest, const void *src, ptrdiff_t tst, ptrdiff_t sst, size_t nelems,
                   size_t size, int pe);
void shmemi_iget_c(const char *call, void *dest, const void *src, ptrdiff_t tst, ptrdiff_t sst, size_t nelems,
                   size_t size, int pe);

/* Atomics by operand width (every OpenSHMEM AMO type is 4 or 8 bytes; the
 * signed, unsigned and floating-point forms are the same bit operations:
 * add is two's complement, float/double only fetch/set/swap/cswap).
 * Returns the previous value (FETCH: the value). */
static inline __attribute__((always_inline)) uint32_t shmemi_amo32(const char *call, void *dest, int op, uint32_t v, uint32_t cmp, int pe)
{
    shmemi_seg *seg;
    size_t off;
    uint32_t *p = (uint32_t *)shmemi_xlate(call, dest, 4, pe, &seg, &off);
    if (__builtin_expect(p == NULL, 0))
        return shmemi_slow_amo32(call, seg, off, op, v, cmp, pe);
    switch (op) {
    case SHMEMI_AMO_FETCH: return __atomic_load_n(p, __ATOMIC_SEQ_CST);
    case SHMEMI_AMO_SET: __atomic_store_n(p, v, __ATOMIC_SEQ_CST); return 0;
    case SHMEMI_AMO_SWAP: return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
    case SHMEMI_AMO_CSWAP:
        __atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return cmp;
    case SHMEMI_AMO_ADD: return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
    case SHMEMI_AMO_AND: return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);
    case SHMEMI_AMO_OR: return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
    default: return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);
    }
}

static inline __attribute__((always_inline)) uint64_t shmemi_amo64(const char *call, void *dest, int op, uint64_t v, uint64_t cmp, int pe)
{
    shmemi_seg *seg;
    size_t off;
    uint64_t *p = (uint64_t *)shmemi_xlate(call, dest, 8, pe, &seg, &off);
    if (__builtin_expect(p == NULL, 0))
        return shmemi_slow_amo64(call, seg, off, op, v, cmp, pe);
    switch (op) {
    case SHMEMI_AMO_FETCH: return __atomic_load_n(p, __ATOMIC_SEQ_CST);
    case SHMEMI_AMO_SET: __atomic_store_n(p, v, __ATOMIC_SEQ_CST); return 0;
    case SHMEMI_AMO_SWAP: return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
    case SHMEMI_AMO_CSWAP:
        __atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return cmp;
    case SHMEMI_AMO_ADD: return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
    case SHMEMI_AMO_AND: return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);
    case SHMEMI_AMO_OR: return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
    default: return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);
    }
}

/* World PE of PE pe of ctx's team, aborting naming call when out of range. */
static inline __attribute__((always_inline)) int shmemi_ctx_pe(const char *call, const struct shmemi_ctx *ctx, int pe)
{
    if (__builtin_expect(ctx == &shmemi_ctx_default, 1))
        return pe;
    if (ctx == NULL || !ctx->valid)
        shmemi_abort(call, "invalid context (SHMEM_CTX_INVALID or destroyed)");
    int w = shmemi_team_world_pe(ctx->team, pe);
    if (w < 0)
        shmemi_abort(call, "PE %d is not in the context's team of %d PEs", pe, ctx->team->size);
    return w;
}

/* Spin-wait step: a pause, and every so many steps shmemi_yield (gives
 * up the processor, so a PE spinning on a core another PE needs does not
 * starve it in oversubscribed jobs, and ends this PE when another called
 * shmem_global_exit). */
static inline void shmemi_spin(unsigned *n)
{
    if ((++*n & 63) == 0)
        shmemi_yield();
    else
        shmemi_pause();
}

#endif
