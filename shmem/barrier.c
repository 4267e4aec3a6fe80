/*
 * barrier.c: shmem_barrier_all, shmem_sync_all, the 1.4 active-set
 * shmem_barrier and shmem_sync, and the layer's own shmemi_barrier_all.
 *
 * All of them are the dissemination barrier of coll.c: in round k each PE
 * adds 1 to a counter of PE me+2^k (mod n) and waits for its own counter of
 * that round, so ceil(log2 n) rounds; with 2 PEs one cache line crosses
 * each way. The world team's per-round peer counters are resolved to
 * mapped addresses once at init, so a round is one locked add on the
 * peer's line and a spin on our own (shmemi_coll_spin: pause, then yield
 * when the wait is long, as under oversubscription). Barriers
 * add shmemi_quiet first (remote updates complete); syncs do not.
 */
#include <shmem.h>

#include "coll.h"

static inline void world_barrier(void)
{
    shmemi_coll_lazy_init();
    const struct shmemi_team *w = &shmemi_team_world;
    const struct shmemi_coll_team *c = w->coll;
    struct shmemi_aset a = {
        .call = "shmem_barrier_all",
        .start = 0,
        .stride = 1,
        .size = w->size,
        .me = w->my_pe,
        .psync = c->psync,
        .lstride = SHMEMI_SLOT_LSTRIDE,
        .mapped = c->mapped,
        .round_peer = (long **)c->round_peer,
    };
    shmemi_aset_barrier(&a);
}

void shmemi_barrier_all(void)
{
    shmemi_quiet();
    world_barrier();
}

void shmem_barrier_all(void)
{
    shmemi_check_init("shmem_barrier_all");
    shmemi_quiet();
    world_barrier();
}

void shmem_sync_all(void)
{
    shmemi_check_init("shmem_sync_all");
    world_barrier();
}

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    struct shmemi_aset a;
    shmemi_aset_active(&a, "shmem_barrier", PE_start, logPE_stride, PE_size, pSync);
    shmemi_quiet();
    shmemi_aset_barrier(&a);
}

void shmem_sync_active_set(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    struct shmemi_aset a;
    shmemi_aset_active(&a, "shmem_sync", PE_start, logPE_stride, PE_size, pSync);
    shmemi_aset_barrier(&a);
}
