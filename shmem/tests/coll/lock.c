/*
 * lock: a counter on PE 0 updated with plain get then put (not atomic)
 * under shmem_set_lock / shmem_clear_lock, and under shmem_test_lock,
 * from every PE, on a global lock and a heap lock: the count is exact
 * only if the lock excludes. A holder word per lock checks that no two PEs are
 * inside at once; test_lock on a held lock says 1.
 */
#include "check.h"

#define ITERS 300
static long glock;    /* global lock word, 0 = free */
static long gcounter; /* on PE 0 */

static void critical(long *counter, long *holder)
{
    int me = shmem_my_pe();
    long h = shmem_long_atomic_swap(holder, me, 0);
    CHECK(h == -1, "PE %ld was inside the lock too", h);
    long v = shmem_long_g(counter, 0);
    shmem_long_p(counter, v + 1, 0);
    shmem_quiet();
    h = shmem_long_atomic_swap(holder, -1, 0);
    CHECK(h == me, "holder word changed under the lock (%ld)", h);
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *hlock = shmem_calloc(1, sizeof(long));
    long *hcounter = shmem_calloc(1, sizeof(long));
    long *holder = shmem_malloc(2 * sizeof(long)); /* one per lock */
    holder[0] = holder[1] = -1;
    shmem_barrier_all();

    for (int i = 0; i < ITERS; i++) {
        shmem_set_lock(&glock);
        critical(&gcounter, &holder[0]);
        shmem_clear_lock(&glock);
        shmem_set_lock(hlock);
        critical(hcounter, &holder[1]);
        shmem_clear_lock(hlock);
    }
    for (int i = 0; i < ITERS; i++) {
        while (shmem_test_lock(hlock) != 0)
            ;
        critical(hcounter, &holder[1]);
        shmem_clear_lock(hlock);
    }
    shmem_barrier_all();
    if (me == 0) {
        CHECK(gcounter == (long)n * ITERS, "global counter %ld want %ld", gcounter, (long)n * ITERS);
        CHECK(*hcounter == 2L * n * ITERS, "heap counter %ld want %ld", *hcounter, 2L * n * ITERS);
    }
    /* A held lock: test_lock from the others says 1. */
    if (me == 0)
        shmem_set_lock(hlock);
    shmem_barrier_all();
    if (me != 0)
        CHECK(shmem_test_lock(hlock) == 1, "test_lock took a held lock");
    shmem_barrier_all();
    if (me == 0)
        shmem_clear_lock(hlock);
    shmem_barrier_all();
    /* A free lock: test_lock takes it, PE by PE. */
    for (int p = 0; p < n; p++) {
        if (p == me) {
            CHECK(shmem_test_lock(&glock) == 0, "free lock not taken");
            shmem_clear_lock(&glock);
        }
        shmem_barrier_all();
    }

    shmem_barrier_all();
    shmem_free(holder);
    shmem_free(hcounter);
    shmem_free(hlock);
    passed("lock");
    shmem_finalize();
    return 0;
}
