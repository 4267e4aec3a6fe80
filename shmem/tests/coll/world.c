/*
 * world: the collectives over the whole world only (every form: 1.5 team
 * and 1.4 active set), few calls: the program test-shmem-coll also runs on
 * memory servers (oshrun --servers 2, the core's private mode), where
 * collectives work over the world through the core's exchange barrier and
 * smaller teams and active sets are refused.
 */
#include <string.h>

#include "check.h"

#define K 5
static long gsync[SHMEM_SYNC_SIZE];
static long gsrc[64 * K], gdst[64 * K];

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n <= 64, "at most 64 PEs");
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
        gsync[i] = SHMEM_SYNC_VALUE;
    long *src = shmem_malloc(64 * K * sizeof(long)), *dst = shmem_malloc(64 * K * sizeof(long));

    for (int round = 0; round < 3; round++) {
        int root = round % n;
        for (int i = 0; i < 64 * K; i++)
            src[i] = gsrc[i] = me * 1000L + i + round, dst[i] = gdst[i] = -1;
        shmem_barrier_all();
        shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, K, root);
        shmem_broadcast64(gdst, gsrc, K, root, 0, 0, n, gsync);
        for (int i = 0; i < K; i++) {
            CHECK(dst[i] == root * 1000L + i + round, "broadcast [%d] = %ld", i, dst[i]);
            CHECK(gdst[i] == (me == root ? -1 : root * 1000L + i + round), "broadcast64 [%d] = %ld", i, gdst[i]);
        }
        shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, K);
        shmem_collect64(gdst, gsrc, (size_t)me + 1, 0, 0, n, gsync);
        size_t off = 0;
        for (int p = 0; p < n; p++)
            for (int i = 0; i < K; i++)
                CHECK(dst[p * K + i] == p * 1000L + i + round, "fcollect [%d]", p * K + i);
        for (int p = 0; p < n; p++)
            for (int i = 0; i <= p; i++, off++)
                CHECK(gdst[off] == p * 1000L + i + round, "collect64 [%zu] = %ld", off, gdst[off]);
        shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, 2);
        for (int p = 0; p < n; p++)
            for (int i = 0; i < 2; i++)
                CHECK(dst[p * 2 + i] == p * 1000L + me * 2 + i + round, "alltoall [%d]", p * 2 + i);
        shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 7);
        shmem_long_max_to_all(gdst, gsrc, 7, 0, 0, n, gdst + 32, gsync);
        for (int i = 0; i < 7; i++) {
            long sum = 0;
            for (int p = 0; p < n; p++)
                sum += p * 1000L + i + round;
            CHECK(dst[i] == sum, "sum_reduce [%d] = %ld want %ld", i, dst[i], sum);
            CHECK(gdst[i] == (n - 1) * 1000L + i + round, "max_to_all [%d]", i);
        }
        shmem_sync_all();
        shmem_barrier(0, 0, n, gsync);
        shmem_team_sync(SHMEM_TEAM_WORLD);
    }
    /* A split: slot agreement is a reduction over the world. */
    shmem_team_t t;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t) == 0, "split");
    CHECK(shmem_team_n_pes(t) == n && shmem_team_my_pe(t) == me, "split team");
    shmem_team_destroy(t);
    shmem_barrier_all();
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
        CHECK(gsync[i] == SHMEM_SYNC_VALUE, "pSync[%d] = %ld after use", i, gsync[i]);
    shmem_free(dst);
    shmem_free(src);
    passed("world");
    shmem_finalize();
    return 0;
}
