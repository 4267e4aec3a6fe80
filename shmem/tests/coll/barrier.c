/*
 * barrier: shmem_barrier_all orders puts before it (every PE sees the
 * value its left neighbour put before the barrier, round after round),
 * shmem_sync_all and shmem_sync(team) synchronise, and the 1.4
 * shmem_barrier over active sets (odd sets included) with pSync both a
 * global and a heap object, reused back to back; pSync is restored.
 */
#include "check.h"

static long gsync[SHMEM_BARRIER_SYNC_SIZE];
static long slot[2]; /* global target */

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long *hslot = shmem_calloc(2, sizeof(long));
    long *hsync = shmem_malloc(SHMEM_BARRIER_SYNC_SIZE * sizeof(long));
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++)
        hsync[i] = gsync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();

    for (long r = 1; r <= 200; r++) {
        shmem_long_p(&slot[r & 1], r * 1000 + me, right);
        shmem_long_p(&hslot[r & 1], r * 1000 + me, right);
        shmem_barrier_all();
        CHECK(slot[r & 1] == r * 1000 + left, "round %ld: global %ld", r, slot[r & 1]);
        CHECK(hslot[r & 1] == r * 1000 + left, "round %ld: heap %ld", r, hslot[r & 1]);
    }
    shmem_barrier_all(); /* everyone has checked before the slots are reused */

    /* sync_all / sync(team): a PE's store, made visible by quiet, is seen
     * after the sync. */
    for (long r = 1; r <= 50; r++) {
        shmem_long_p(&hslot[0], r, right);
        shmem_quiet();
        if (r & 1)
            shmem_sync_all();
        else
            shmem_sync(SHMEM_TEAM_WORLD);
        CHECK(hslot[0] == r, "sync round %ld: %ld", r, hslot[0]);
        shmem_sync_all(); /* nobody overwrites before everyone has read */
    }

    /* 1.4 active sets: all PEs; the even PEs (stride 2); the first n-1. */
    for (int r = 0; r < 20; r++) {
        shmem_barrier(0, 0, n, gsync);
        shmem_barrier(0, 0, n, hsync);
        if (me % 2 == 0)
            shmem_barrier(0, 1, (n + 1) / 2, (r & 1) ? gsync : hsync);
        if (n > 1 && me < n - 1)
            shmem_sync(0, 0, n - 1, hsync);
        shmem_barrier_all();
    }
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) {
        CHECK(gsync[i] == SHMEM_SYNC_VALUE, "global pSync[%d] = %ld after use", i, gsync[i]);
        CHECK(hsync[i] == SHMEM_SYNC_VALUE, "heap pSync[%d] = %ld after use", i, hsync[i]);
    }

    shmem_free(hsync);
    shmem_free(hslot);
    passed("barrier");
    shmem_finalize();
    return 0;
}
