/*
 * barrier.c: shmemi_barrier_all, a sense-reversing counter barrier on
 * PE 0's internal heap area (CPU atomics on the mapping every PE has of
 * PE 0's heap). Where PE 0's heap is not mapped here (memory servers,
 * another host) the FAM job barrier (fam_barrier_all) serves instead.
 */
#include "openfam.h"
#include "core.h"

struct shmemi_barrier_state {
    uint64_t count;
    char pad_[56];
    uint64_t sense;
};

static struct shmemi_barrier_state *shmemi_bar; /* local address (symmetric) */
static uint64_t shmemi_bar_sense;

void shmemi_barrier_all(void)
{
    shmemi_quiet();
    if (shmemi_n_pes == 1)
        return;
    if (shmemi_private_mode) {
        shmemi_sync_push();
        if (fam_barrier_all() != 0)
            shmemi_abort("shmem_barrier_all", "job barrier: %s", fam_errmsg());
        shmemi_sync_pull();
        return;
    }
    /* The first barrier is the one at the end of shmem_init, where every
     * PE takes the same internal allocation. */
    if (shmemi_bar == NULL)
        shmemi_bar = shmemi_internal_alloc(sizeof *shmemi_bar);
    struct shmemi_barrier_state *b = shmemi_ptr(shmemi_bar, 0);
    if (b == NULL) {
        if (fam_barrier_all() != 0)
            shmemi_abort("shmem_barrier_all", "job barrier: %s", fam_errmsg());
        return;
    }
    uint64_t sense = shmemi_bar_sense ^ 1;
    shmemi_bar_sense = sense;
    if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == (uint64_t)shmemi_n_pes) {
        __atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&b->sense, sense, __ATOMIC_RELEASE);
    } else {
        unsigned n = 0;
        while (__atomic_load_n(&b->sense, __ATOMIC_ACQUIRE) != sense)
            shmemi_spin(&n);
    }
}

void shmem_barrier_all(void)
{
    shmemi_check_init("shmem_barrier_all");
    shmemi_barrier_all();
}

void shmem_sync_all(void)
{
    shmemi_check_init("shmem_sync_all");
    shmemi_barrier_all();
}
