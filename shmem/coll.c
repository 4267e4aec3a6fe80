/*
 * coll.c: the collectives' synchronisation and data movement over an
 * active set (coll.h), and the untyped public forms: the 1.5 team
 * broadcastmem/collectmem/fcollectmem/alltoallmem/alltoallsmem and the 1.4
 * active-set broadcast/collect/fcollect/alltoall/alltoalls 32/64.
 *
 * Algorithms. Every PE of a host maps every peer's symmetric memory, so the
 * cheapest data movement is a pull: each member copies what it needs
 * straight out of the peers' source objects (memcpy through shmemi_ptr;
 * shmemi_get where a peer is not mapped), all members at once, no staging
 * copy and no second hop. A pull needs two facts: every source is ready
 * (entry: a barrier), and nobody changes a source before every reader is
 * done (exit: a barrier, or for broadcast, whose only source is the
 * root's, a DONE count at the root alone). The barrier is a dissemination
 * barrier (ceil(log2 n) rounds, one signal out and one in per round): for 2
 * PEs a single exchange of cache lines, and no PE is a hot spot.
 */
#include <stdlib.h>
#include <string.h>

#include <shmem.h>

#include "coll.h"

_Static_assert(SHMEM_BARRIER_SYNC_SIZE >= SHMEMI_SYNC_WORDS, "pSync too small");
_Static_assert(SHMEM_BCAST_SYNC_SIZE >= SHMEMI_SYNC_WORDS, "pSync too small");
_Static_assert(SHMEM_COLLECT_SYNC_SIZE >= SHMEMI_SYNC_WORDS, "pSync too small");
_Static_assert(SHMEM_REDUCE_SYNC_SIZE >= SHMEMI_SYNC_WORDS, "pSync too small");
_Static_assert(SHMEM_ALLTOALL_SYNC_SIZE >= SHMEMI_SYNC_WORDS, "pSync too small");
_Static_assert(SHMEM_ALLTOALLS_SYNC_SIZE >= SHMEMI_SYNC_WORDS, "pSync too small");

/* ---- building a 1.4 active set ---- */

void shmemi_aset_active(struct shmemi_aset *a, const char *call, int PE_start,
                        int logPE_stride, int PE_size, long *pSync)
{
    shmemi_check_init(call);
    if (PE_size < 1 || PE_start < 0 || logPE_stride < 0 || logPE_stride > 30)
        shmemi_abort(call, "bad active set (PE_start %d, logPE_stride %d, PE_size %d)",
                     PE_start, logPE_stride, PE_size);
    long stride = 1L << logPE_stride;
    long last = PE_start + (long)(PE_size - 1) * stride;
    if (last >= shmemi_n_pes)
        shmemi_abort(call, "active set (PE_start %d, logPE_stride %d, PE_size %d) reaches PE %ld of %d",
                     PE_start, logPE_stride, PE_size, last, shmemi_n_pes);
    long off = shmemi_my_pe - PE_start;
    if (off < 0 || off % stride != 0 || off / stride >= PE_size)
        shmemi_abort(call, "PE %d is not in the active set (PE_start %d, logPE_stride %d, PE_size %d)",
                     shmemi_my_pe, PE_start, logPE_stride, PE_size);
    if (pSync == NULL)
        shmemi_abort(call, "pSync is NULL");
    shmemi_check_sym(call, pSync, SHMEMI_SYNC_WORDS * sizeof(long));
    a->call = call;
    a->start = PE_start;
    a->stride = (int)stride;
    a->size = PE_size;
    a->me = (int)(off / stride);
    a->psync = pSync;
    a->lstride = 1;
    a->base = SHMEM_SYNC_VALUE;
    a->round_peer = NULL;
    a->mapped = 1;
    for (int i = 0; i < PE_size && a->mapped; i++)
        if (shmemi_ptr(pSync, shmemi_aset_pe(a, i)) == NULL)
            a->mapped = 0;
}

/* ---- counters ---- */

void shmemi_aset_signal(const struct shmemi_aset *a, int idx, int member)
{
    long *p = a->psync + (size_t)idx * a->lstride;
    int pe = shmemi_aset_pe(a, member);
    long *r = a->mapped ? shmemi_ptr(p, pe) : NULL;
    if (r != NULL)
        __atomic_fetch_add(r, 1, __ATOMIC_RELEASE);
    else
        shmem_long_atomic_add(p, 1, pe); /* through the core: FAM atomics */
}

void shmemi_aset_wait(const struct shmemi_aset *a, int idx, long count)
{
    long *p = a->psync + (size_t)idx * a->lstride;
    long want = a->base + count;
    unsigned spins = 0;
    if (a->mapped) {
        while (__atomic_load_n(p, __ATOMIC_ACQUIRE) < want)
            shmemi_coll_spin(&spins);
        __atomic_fetch_sub(p, count, __ATOMIC_RELAXED);
        return;
    }
    /* Some member reaches this array through the core's atomics, so this
     * PE's own update goes the same way (one agent for the word). */
    int me = shmemi_aset_pe(a, a->me);
    volatile long *local = shmemi_ptr(p, me);
    if (local != NULL) {
        while (__atomic_load_n(local, __ATOMIC_ACQUIRE) < want)
            shmemi_coll_spin(&spins);
    } else {
        while (shmem_long_atomic_fetch(p, me) < want)
            shmemi_coll_spin(&spins);
    }
    shmem_long_atomic_add(p, -count, me);
}

void shmemi_aset_barrier(const struct shmemi_aset *a)
{
    int n = a->size;
    if (n > 1 && shmemi_private_mode) {
        shmemi_coll_private_barrier(a);
        return;
    }
    for (int k = 0, d = 1; d < n; k++, d <<= 1) {
        long *r = a->round_peer ? a->round_peer[k] : NULL;
        if (r != NULL) {
            __atomic_fetch_add(r, 1, __ATOMIC_RELEASE);
            long *own = a->psync + (size_t)k * a->lstride;
            unsigned spins = 0;
            while (__atomic_load_n(own, __ATOMIC_ACQUIRE) < a->base + 1)
                shmemi_coll_spin(&spins);
            __atomic_fetch_sub(own, 1, __ATOMIC_RELAXED);
        } else {
            shmemi_aset_signal(a, k, (int)(((long)a->me + d) % n));
            shmemi_aset_wait(a, k, 1);
        }
    }
}

/* ---- data movement ---- */

/* Copies n bytes of the symmetric object src as it is on member m into
 * local memory dest. */
static inline void pull(const struct shmemi_aset *a, void *dest, const void *src, size_t n, int m)
{
    if (n == 0)
        return;
    if (m == a->me) {
        if (dest != src)
            memmove(dest, src, n);
        return;
    }
    int pe = shmemi_aset_pe(a, m);
    const void *p = shmemi_ptr(src, pe);
    if (p != NULL)
        memcpy(dest, p, n);
    else
        shmemi_get(dest, src, n, pe);
}

void shmemi_aset_broadcast(const struct shmemi_aset *a, void *dest, const void *src,
                           size_t nbytes, int root, int root_copies)
{
    if (a->size > 1)
        shmemi_aset_barrier(a);
    if (a->me == root) {
        if (root_copies && dest != src && nbytes)
            memmove(dest, src, nbytes);
    } else {
        pull(a, dest, src, nbytes, root);
    }
    if (a->size == 1)
        return;
    if (shmemi_private_mode) {
        shmemi_aset_barrier(a); /* no counters: the exchange barrier */
        return;
    }
    if (a->me == root)
        shmemi_aset_wait(a, SHMEMI_SYNC_DONE, a->size - 1);
    else
        shmemi_aset_signal(a, SHMEMI_SYNC_DONE, root);
}

void shmemi_aset_fcollect(const struct shmemi_aset *a, void *dest, const void *src, size_t nbytes)
{
    shmemi_aset_barrier(a);
    /* Start at this PE's own block so the members read different peers. */
    for (int k = 0; k < a->size; k++) {
        int m = (a->me + k) % a->size;
        pull(a, (char *)dest + (size_t)m * nbytes, src, nbytes, m);
    }
    shmemi_aset_barrier(a);
}

void shmemi_aset_collect(const struct shmemi_aset *a, void *dest, const void *src, size_t nbytes)
{
    long *count = a->psync + (size_t)SHMEMI_SYNC_COUNT * a->lstride;
    /* Publish this PE's size where the others read it; the entry barrier
     * orders it before their reads. */
    if (a->mapped || shmemi_private_mode)
        __atomic_store_n(count, (long)nbytes, __ATOMIC_RELAXED); /* private: pushed by the barrier */
    else
        shmem_long_atomic_set(count, (long)nbytes, shmemi_aset_pe(a, a->me));
    shmemi_aset_barrier(a);
    size_t off = 0;
    for (int m = 0; m < a->size; m++) {
        long len;
        if (m == a->me)
            len = (long)nbytes;
        else
            pull(a, &len, count, sizeof(len), m);
        pull(a, (char *)dest + off, src, (size_t)len, m);
        off += (size_t)len;
    }
    shmemi_aset_barrier(a);
    /* Nobody reads it after the exit barrier: back to SHMEM_SYNC_VALUE. */
    if (a->mapped || shmemi_private_mode)
        __atomic_store_n(count, a->base, __ATOMIC_RELAXED);
    else
        shmem_long_atomic_set(count, a->base, shmemi_aset_pe(a, a->me));
}

void shmemi_aset_alltoall(const struct shmemi_aset *a, void *dest, const void *src, size_t nbytes)
{
    shmemi_aset_barrier(a);
    for (int k = 0; k < a->size; k++) {
        int m = (a->me + k) % a->size;
        pull(a, (char *)dest + (size_t)m * nbytes, (const char *)src + (size_t)a->me * nbytes,
             nbytes, m);
    }
    shmemi_aset_barrier(a);
}

void shmemi_aset_alltoalls(const struct shmemi_aset *a, void *dest, const void *src,
                           ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t esize)
{
    shmemi_aset_barrier(a);
    for (int k = 0; k < a->size; k++) {
        int m = (a->me + k) % a->size;
        int pe = shmemi_aset_pe(a, m);
        const char *base = (const char *)src + (size_t)a->me * nelems * sst * esize;
        const char *mapped = m == a->me ? base : shmemi_ptr(base, pe);
        char *out = (char *)dest + (size_t)m * nelems * dst * esize;
        for (size_t i = 0; i < nelems; i++) {
            char *d = out + i * dst * esize;
            if (mapped != NULL)
                memcpy(d, mapped + i * sst * esize, esize);
            else
                shmemi_get(d, base + i * sst * esize, esize, pe);
        }
    }
    shmemi_aset_barrier(a);
}

/* ---- 1.5 team entry points ---- */

static void check_sym_len(const char *call, const void *addr, size_t len)
{
    if (len > 0)
        shmemi_check_sym(call, addr, len);
}

int shmemi_team_broadcast(const char *call, struct shmemi_team *team, void *dest,
                          const void *src, size_t nelems, size_t esize, int root)
{
    struct shmemi_aset a;
    shmemi_aset_team(&a, call, team);
    if (root < 0 || root >= a.size)
        shmemi_abort(call, "PE_root %d is not a PE of the team (size %d)", root, a.size);
    check_sym_len(call, dest, nelems * esize);
    check_sym_len(call, src, nelems * esize);
    shmemi_aset_broadcast(&a, dest, src, nelems * esize, root, 1);
    return 0;
}

int shmemi_team_collect(const char *call, struct shmemi_team *team, void *dest,
                        const void *src, size_t nelems, size_t esize, int fixed)
{
    struct shmemi_aset a;
    shmemi_aset_team(&a, call, team);
    check_sym_len(call, src, nelems * esize);
    check_sym_len(call, dest, fixed ? nelems * esize * a.size : nelems * esize);
    if (fixed)
        shmemi_aset_fcollect(&a, dest, src, nelems * esize);
    else
        shmemi_aset_collect(&a, dest, src, nelems * esize);
    return 0;
}

int shmemi_team_alltoall(const char *call, struct shmemi_team *team, void *dest,
                         const void *src, size_t nelems, size_t esize)
{
    struct shmemi_aset a;
    shmemi_aset_team(&a, call, team);
    check_sym_len(call, src, nelems * esize * a.size);
    check_sym_len(call, dest, nelems * esize * a.size);
    shmemi_aset_alltoall(&a, dest, src, nelems * esize);
    return 0;
}

/* Bytes an alltoalls array spans: the last element of the last block. */
static size_t strided_extent(int npes, size_t nelems, ptrdiff_t stride, size_t esize)
{
    if (nelems == 0)
        return 0;
    return (((size_t)npes * nelems - 1) * (size_t)stride + 1) * esize;
}

int shmemi_team_alltoalls(const char *call, struct shmemi_team *team, void *dest,
                          const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                          size_t esize)
{
    struct shmemi_aset a;
    shmemi_aset_team(&a, call, team);
    if (dst < 1 || sst < 1)
        shmemi_abort(call, "strides must be at least 1 (dst %td, sst %td)", dst, sst);
    check_sym_len(call, src, strided_extent(a.size, nelems, sst, esize));
    check_sym_len(call, dest, strided_extent(a.size, nelems, dst, esize));
    shmemi_aset_alltoalls(&a, dest, src, dst, sst, nelems, esize);
    return 0;
}

/* ---- 1.5 untyped (mem) forms ---- */

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root)
{
    return shmemi_team_broadcast("shmem_broadcastmem", team, dest, source, nelems, 1, PE_root);
}

int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return shmemi_team_collect("shmem_collectmem", team, dest, source, nelems, 1, 0);
}

int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return shmemi_team_collect("shmem_fcollectmem", team, dest, source, nelems, 1, 1);
}

int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return shmemi_team_alltoall("shmem_alltoallmem", team, dest, source, nelems, 1);
}

int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems)
{
    return shmemi_team_alltoalls("shmem_alltoallsmem", team, dest, source, dst, sst, nelems, 1);
}

/* ---- 1.4 active-set forms ---- */

static void active_broadcast(const char *call, void *dest, const void *source, size_t nbytes,
                             int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    struct shmemi_aset a;
    shmemi_aset_active(&a, call, PE_start, logPE_stride, PE_size, pSync);
    if (PE_root < 0 || PE_root >= PE_size)
        shmemi_abort(call, "PE_root %d is not in the active set (size %d)", PE_root, PE_size);
    check_sym_len(call, dest, nbytes);
    check_sym_len(call, source, nbytes);
    /* 1.4: the root's target is not written. */
    shmemi_aset_broadcast(&a, dest, source, nbytes, PE_root, 0);
}

void shmem_broadcast32(void *dest, const void *source, size_t nelems, int PE_root,
                       int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    active_broadcast("shmem_broadcast32", dest, source, nelems * 4, PE_root, PE_start,
                     logPE_stride, PE_size, pSync);
}

void shmem_broadcast64(void *dest, const void *source, size_t nelems, int PE_root,
                       int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    active_broadcast("shmem_broadcast64", dest, source, nelems * 8, PE_root, PE_start,
                     logPE_stride, PE_size, pSync);
}

static void active_collect(const char *call, void *dest, const void *source, size_t nbytes,
                           int PE_start, int logPE_stride, int PE_size, long *pSync, int fixed)
{
    struct shmemi_aset a;
    shmemi_aset_active(&a, call, PE_start, logPE_stride, PE_size, pSync);
    check_sym_len(call, source, nbytes);
    check_sym_len(call, dest, fixed ? nbytes * PE_size : nbytes);
    if (fixed)
        shmemi_aset_fcollect(&a, dest, source, nbytes);
    else
        shmemi_aset_collect(&a, dest, source, nbytes);
}

void shmem_collect32(void *dest, const void *source, size_t nelems, int PE_start,
                     int logPE_stride, int PE_size, long *pSync)
{
    active_collect("shmem_collect32", dest, source, nelems * 4, PE_start, logPE_stride, PE_size,
                   pSync, 0);
}

void shmem_collect64(void *dest, const void *source, size_t nelems, int PE_start,
                     int logPE_stride, int PE_size, long *pSync)
{
    active_collect("shmem_collect64", dest, source, nelems * 8, PE_start, logPE_stride, PE_size,
                   pSync, 0);
}

void shmem_fcollect32(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync)
{
    active_collect("shmem_fcollect32", dest, source, nelems * 4, PE_start, logPE_stride, PE_size,
                   pSync, 1);
}

void shmem_fcollect64(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync)
{
    active_collect("shmem_fcollect64", dest, source, nelems * 8, PE_start, logPE_stride, PE_size,
                   pSync, 1);
}

static void active_alltoall(const char *call, void *dest, const void *source, size_t nbytes,
                            int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    struct shmemi_aset a;
    shmemi_aset_active(&a, call, PE_start, logPE_stride, PE_size, pSync);
    check_sym_len(call, source, nbytes * PE_size);
    check_sym_len(call, dest, nbytes * PE_size);
    shmemi_aset_alltoall(&a, dest, source, nbytes);
}

void shmem_alltoall32(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync)
{
    active_alltoall("shmem_alltoall32", dest, source, nelems * 4, PE_start, logPE_stride, PE_size,
                    pSync);
}

void shmem_alltoall64(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync)
{
    active_alltoall("shmem_alltoall64", dest, source, nelems * 8, PE_start, logPE_stride, PE_size,
                    pSync);
}

static void active_alltoalls(const char *call, void *dest, const void *source, ptrdiff_t dst,
                             ptrdiff_t sst, size_t nelems, size_t esize, int PE_start,
                             int logPE_stride, int PE_size, long *pSync)
{
    struct shmemi_aset a;
    shmemi_aset_active(&a, call, PE_start, logPE_stride, PE_size, pSync);
    if (dst < 1 || sst < 1)
        shmemi_abort(call, "strides must be at least 1 (dst %td, sst %td)", dst, sst);
    check_sym_len(call, source, strided_extent(PE_size, nelems, sst, esize));
    check_sym_len(call, dest, strided_extent(PE_size, nelems, dst, esize));
    shmemi_aset_alltoalls(&a, dest, source, dst, sst, nelems, esize);
}

void shmem_alltoalls32(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    active_alltoalls("shmem_alltoalls32", dest, source, dst, sst, nelems, 4, PE_start,
                     logPE_stride, PE_size, pSync);
}

void shmem_alltoalls64(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    active_alltoalls("shmem_alltoalls64", dest, source, dst, sst, nelems, 8, PE_start,
                     logPE_stride, PE_size, pSync);
}
