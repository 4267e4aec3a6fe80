/*
 * bench_coll: a quick look at the collectives' latency (not a test, not
 * run by test-shmem-coll; shtest's make bench-shmem is the formal
 * benchmark): barrier_all, broadcast of 1 KiB and sum-reduce of 1 KiB of
 * int (as OSU's osu_oshm_reduce does), each the best mean of 50 runs of
 * ITERS calls, printed by PE 0 in microseconds.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <stdio.h>
#include <time.h>

#include <shmem.h>

#define ITERS 2000
#define RUNS 50

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    char *src = shmem_calloc(1024, 1), *dst = shmem_calloc(1024, 1);
    int *isrc = shmem_calloc(256, sizeof(int)), *idst = shmem_calloc(256, sizeof(int));
    const char *names[3] = {"barrier_all", "broadcast 1 KiB", "sum_reduce 1 KiB (int)"};
    for (int which = 0; which < 3; which++) {
        double best = 1e30;
        for (int r = 0; r < RUNS; r++) {
            shmem_barrier_all();
            double t0 = now_us();
            for (int i = 0; i < ITERS; i++) {
                if (which == 0)
                    shmem_barrier_all();
                else if (which == 1)
                    shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, 1024, 0);
                else
                    shmem_int_sum_reduce(SHMEM_TEAM_WORLD, idst, isrc, 256);
            }
            double t = (now_us() - t0) / ITERS;
            if (t < best)
                best = t;
        }
        if (me == 0)
            printf("%-24s %8.3f us (%d PEs)\n", names[which], best, shmem_n_pes());
    }
    shmem_finalize();
    return 0;
}
