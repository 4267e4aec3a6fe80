/*
 * t_order: shmem_fence and shmem_quiet ordering. A PE puts a block, then
 * fence (or quiet), then a flag; the receiver waits for the flag with
 * wait_until and must then see the whole block. Also put-then-get to the
 * same peer sees the put after quiet, and nbi puts are complete after quiet.
 * Global and heap targets. Spec: 1.4-compatible.
 */
#include "shtest.h"

#define N 512
#define ROUNDS 50
static long gdata[N];
static long gflag;

static void run(long *data, long *flag, int use_quiet, const char *where)
{
    int right = (sht_me + 1) % sht_npes, left = (sht_me + sht_npes - 1) % sht_npes;
    long src[N];
    *flag = 0;
    memset(data, 0, sizeof(long) * N);
    shmem_barrier_all();
    for (long r = 1; r <= ROUNDS; r++) {
        for (int i = 0; i < N; i++)
            src[i] = r * 100000 + sht_me * 1000 + i;
        if (r % 2)
            shmem_long_put(data, src, N, right);
        else
            shmem_long_put_nbi(data, src, N, right);
        if (use_quiet)
            shmem_quiet();
        else
            shmem_fence();
        shmem_long_p(flag, r, right);
        /* wait for our left neighbour's round r, check its data */
        shmem_long_wait_until(flag, SHMEM_CMP_GE, r);
        SHT_CHECK(*flag == r, "%s round %ld: flag %ld", where, r, *flag);
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += data[i] != r * 100000 + left * 1000 + i;
        SHT_CHECK(bad == 0, "%s round %ld (%s): %d of %d elements stale", where, r,
                  use_quiet ? "quiet" : "fence", bad, N);
        /* the right neighbour may overwrite data only after we read it */
        shmem_barrier_all();
    }
    /* quiet: a get after a put to the same location sees the put */
    for (int i = 0; i < 8; i++) {
        shmem_barrier_all();
        long v = 7000 + sht_me * 10 + i, got = -1;
        shmem_long_put_nbi(&data[i], &v, 1, right);
        shmem_quiet();
        shmem_long_get(&got, &data[i], 1, right);
        SHT_CHECK(got == v, "%s put;quiet;get %ld vs %ld", where, got, v);
    }
    /* fence orders an atomic before a put */
    shmem_barrier_all();
    *flag = 0;
    data[0] = 0;
    shmem_barrier_all();
    shmem_long_atomic_add(&data[0], 5, right);
    shmem_fence();
    shmem_long_atomic_set(flag, 1, right);
    shmem_long_wait_until(flag, SHMEM_CMP_EQ, 1);
    SHT_CHECK(data[0] == 5, "%s add;fence;set: %ld", where, data[0]);
    shmem_barrier_all();
}

int main(void)
{
    sht_init("t_order");
    run(gdata, &gflag, 0, "global");
    run(gdata, &gflag, 1, "global");
    long *hd = shmem_malloc(sizeof(long) * N), *hf = shmem_malloc(sizeof(long));
    run(hd, hf, 0, "heap");
    run(hd, hf, 1, "heap");
    shmem_free(hf);
    shmem_free(hd);
    return sht_end();
}
