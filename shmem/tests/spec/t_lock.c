/*
 * t_lock: shmem_set_lock/clear_lock/test_lock. Every PE increments a
 * counter on PE 0 by get-then-put inside the lock (only mutual exclusion
 * makes the total right), with set_lock and with a test_lock loop, on a
 * global lock and a heap lock, and two locks held at once.
 * Spec: 1.4-compatible.
 */
#include "shtest.h"

#define ITERS 50
static long glock;
static long gcounter, gcounter2;

static void crit(long *lock, long *counter, int use_test, const char *where)
{
    if (SHT_OMPI && use_test) {
        sht_skip("shmem_test_lock loops", "hang in Open MPI 4.1.4 (measured)");
        return;
    }
    for (int i = 0; i < ITERS; i++) {
        if (use_test) {
            while (shmem_test_lock(lock) != 0)
                sht_test_progress();
        } else {
            shmem_set_lock(lock);
        }
        long v = shmem_long_g(counter, 0);
        shmem_long_p(counter, v + 1, 0);
        shmem_quiet();
        shmem_clear_lock(lock);
    }
    shmem_barrier_all();
    if (sht_me == 0)
        SHT_CHECK(*counter == (long)ITERS * sht_npes, "%s %s: counter %ld want %ld", where,
                  use_test ? "test_lock" : "set_lock", *counter, (long)ITERS * sht_npes);
    shmem_barrier_all();
    *counter = 0;
    shmem_barrier_all();
}

int main(void)
{
    sht_init("t_lock");
    crit(&glock, &gcounter, 0, "global lock");
    crit(&glock, &gcounter, 1, "global lock");
    long *hl = shmem_calloc(2, sizeof(long));
    long *hc = shmem_calloc(1, sizeof(long));
    crit(&hl[0], hc, 0, "heap lock");
    crit(&hl[1], &gcounter, 1, "heap lock");
    /* two locks nested in one order on every PE */
    for (int i = 0; i < ITERS; i++) {
        shmem_set_lock(&glock);
        shmem_set_lock(&hl[0]);
        long a = shmem_long_g(&gcounter, 0), b = shmem_long_g(&gcounter2, sht_npes - 1);
        shmem_long_p(&gcounter, a + 1, 0);
        shmem_long_p(&gcounter2, b + 2, sht_npes - 1);
        shmem_quiet();
        shmem_clear_lock(&hl[0]);
        shmem_clear_lock(&glock);
    }
    shmem_barrier_all();
    if (sht_me == 0)
        SHT_CHECK(gcounter == (long)ITERS * sht_npes, "nested: %ld", gcounter);
    if (sht_me == sht_npes - 1)
        SHT_CHECK(gcounter2 == 2L * ITERS * sht_npes, "nested 2: %ld", gcounter2);
    /* a free lock: test_lock takes it (returns 0), a second test fails */
    shmem_barrier_all();
    if (sht_me == 0 && !SHT_OMPI) {
        SHT_CHECK(shmem_test_lock(&hl[1]) == 0, "test_lock on a free lock");
        shmem_clear_lock(&hl[1]);
    }
    shmem_barrier_all();
    shmem_free(hc);
    shmem_free(hl);
    return sht_end();
}
