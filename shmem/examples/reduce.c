/*
 * reduce: each PE sums a slice of 1..N (N = 1000000), then one sum
 * reduction over every PE gives the total, which every PE checks against
 * N(N+1)/2. Uses the 1.5 team reduction where the library has it, else the
 * 1.4 active-set form with pWrk/pSync.
 *   oshcc -o reduce reduce.c && oshrun -np 4 ./reduce
 */
#include <shmem.h>
#include <stdio.h>

#define N 1000000L

static long part, total; /* symmetric: static data */
#if SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION < 105
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE > 2 ? SHMEM_REDUCE_MIN_WRKDATA_SIZE : 2];
static long psync[SHMEM_REDUCE_SYNC_SIZE];
#endif

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long lo = N * me / n + 1, hi = N * (me + 1) / n;
    part = 0;
    for (long i = lo; i <= hi; i++)
        part += i;
#if SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION >= 105
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &total, &part, 1);
#else
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    shmem_long_sum_to_all(&total, &part, 1, 0, 0, n, pwrk, psync);
#endif
    long want = N * (N + 1) / 2;
    if (me == 0)
        printf("reduce: sum of 1..%ld over %d PEs = %ld (want %ld)\n", N, n, total, want);
    int rc = total != want;
    if (rc)
        fprintf(stderr, "reduce: PE %d got %ld, want %ld\n", me, total, want);
    shmem_finalize();
    return rc;
}
