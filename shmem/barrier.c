/*
 * barrier.c: shmem_barrier_all, shmem_sync_all, the 1.4 active-set
 * shmem_barrier and shmem_sync, and the layer's own shmemi_barrier_all
 * (init, malloc/free, finalize).
 *
 * Mapped mode (every PE maps every peer's heap): the dissemination barrier
 * of coll.c. In round k each PE adds 1 to a counter of PE me+2^k (mod n)
 * and waits for its own counter of that round: ceil(log2 n) rounds, and
 * with 2 PEs one cache line crosses each way, which is the least a barrier
 * can move. It replaces the core's first barrier, a sense-reversing
 * counter on PE 0 (every PE's locked add on one line, then every PE
 * reading the line PE 0 flips: a line that grows hotter with n). The world
 * team's per-round peer counters are resolved to mapped addresses once at
 * init, so a round is one locked add on the peer's line and a spin on our
 * own (shmemi_coll_spin). Barriers complete remote updates first
 * (shmemi_quiet); syncs do not.
 *
 * Private mode (shmemi_private_mode): the core's exchange around the FAM
 * job barrier (push local changes, fam_barrier_all, pull peers' changes),
 * for the whole world only.
 */
#include "openfam.h"
#include <shmem.h>

#include "coll.h"

static void private_world_barrier(const char *call)
{
    shmemi_quiet();
    shmemi_sync_push();
    if (fam_barrier_all() != 0)
        shmemi_abort(call, "job barrier: %s", fam_errmsg());
    shmemi_sync_pull();
}

void shmemi_coll_private_barrier(const struct shmemi_aset *a)
{
    int world = a->size == shmemi_n_pes && (a->stride == 1 || a->size == 1) && a->start == 0;
    if (!world)
        shmemi_abort(a->call, "a team or active set smaller than the world (%d of %d PEs) is not supported "
                              "where PEs cannot map each other's memory (famrun --servers)",
                     a->size, shmemi_n_pes);
    private_world_barrier(a->call);
}

static inline void world_barrier(const char *call)
{
    if (shmemi_n_pes == 1)
        return;
    if (shmemi_private_mode) {
        private_world_barrier(call);
        return;
    }
    const struct shmemi_team *w = &shmemi_team_world;
    const struct shmemi_coll_team *c = w->coll;
    struct shmemi_aset a = {
        .call = call,
        .start = 0,
        .stride = 1,
        .size = w->size,
        .me = w->my_pe,
        .psync = c->psync,
        .lstride = SHMEMI_SLOT_LSTRIDE,
        .mapped = c->mapped,
        .base = 0,
        .round_peer = (long **)c->round_peer,
    };
    shmemi_aset_barrier(&a);
}

void shmemi_barrier_all(void)
{
    shmemi_quiet();
    world_barrier("shmem_barrier_all");
}

void shmem_barrier_all(void)
{
    shmemi_check_init("shmem_barrier_all");
    shmemi_quiet();
    world_barrier("shmem_barrier_all");
}

void shmem_sync_all(void)
{
    shmemi_check_init("shmem_sync_all");
    world_barrier("shmem_sync_all");
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
