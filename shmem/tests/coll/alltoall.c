/*
 * alltoall: shmem_alltoall (typed, mem, generic) and shmem_alltoalls with
 * strides, on heap and global buffers, and the 1.4 alltoall32/64 and
 * alltoalls32/64: block j of PE i's source lands as block i of PE j's dest.
 */
#include "check.h"

#define MAXPE 64
#define K 3
static int gsrc[MAXPE * K * 3], gdst[MAXPE * K * 3];
static long gsync[SHMEM_ALLTOALL_SYNC_SIZE];

static long val(int from, int to, int i)
{
    return from * 10000L + to * 100L + i;
}

int main(void)
{
    shmem_init();
    for (int i = 0; i < SHMEM_ALLTOALL_SYNC_SIZE; i++)
        gsync[i] = SHMEM_SYNC_VALUE; /* before first use, then a barrier */
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n <= MAXPE, "at most %d PEs", MAXPE);
    long *src = shmem_malloc(MAXPE * K * 3 * sizeof(long));
    long *dst = shmem_malloc(MAXPE * K * 3 * sizeof(long));

    for (int form = 0; form < 3; form++) {
        for (int j = 0; j < n; j++)
            for (int i = 0; i < K; i++) {
                src[j * K + i] = val(me, j, i);
                gsrc[j * K + i] = (int)val(me, j, i);
            }
        for (int i = 0; i < MAXPE * K * 3; i++)
            dst[i] = -1, gdst[i] = -1;
        shmem_barrier_all();
        if (form == 0) {
            shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, K);
            shmem_alltoall(SHMEM_TEAM_WORLD, gdst, gsrc, K);
        } else if (form == 1) {
            shmem_alltoallmem(SHMEM_TEAM_WORLD, dst, src, K * sizeof(long));
            shmem_alltoall32(gdst, gsrc, K, 0, 0, n, gsync);
        } else {
            shmem_alltoall64(dst, src, K, 0, 0, n, gsync);
            shmem_int_alltoall(SHMEM_TEAM_WORLD, gdst, gsrc, K);
        }
        for (int j = 0; j < n; j++)
            for (int i = 0; i < K; i++) {
                CHECK(dst[j * K + i] == val(j, me, i), "form %d: dst[%d] = %ld", form, j * K + i, dst[j * K + i]);
                CHECK(gdst[j * K + i] == (int)val(j, me, i), "form %d: gdst[%d]", form, j * K + i);
            }
        CHECK(dst[n * K] == -1, "form %d wrote past the end", form);
    }

    /* alltoalls: source stride 3, dest stride 2. */
    for (int form = 0; form < 2; form++) {
        for (int j = 0; j < n; j++)
            for (int i = 0; i < K; i++) {
                src[(j * K + i) * 3] = val(me, j, i);
                gsrc[(j * K + i) * 3] = (int)val(me, j, i);
            }
        for (int i = 0; i < MAXPE * K * 3; i++)
            dst[i] = -1, gdst[i] = -1;
        shmem_barrier_all();
        if (form == 0) {
            shmem_long_alltoalls(SHMEM_TEAM_WORLD, dst, src, 2, 3, K);
            shmem_alltoalls(SHMEM_TEAM_WORLD, gdst, gsrc, 2, 3, K);
        } else {
            shmem_alltoalls64(dst, src, 2, 3, K, 0, 0, n, gsync);
            shmem_alltoalls32(gdst, gsrc, 2, 3, K, 0, 0, n, gsync);
        }
        for (int j = 0; j < n; j++)
            for (int i = 0; i < K; i++) {
                int at = (j * K + i) * 2;
                CHECK(dst[at] == val(j, me, i), "alltoalls form %d: dst[%d] = %ld", form, at, dst[at]);
                CHECK(dst[at + 1] == -1, "alltoalls form %d: gap dst[%d] written", form, at + 1);
                CHECK(gdst[at] == (int)val(j, me, i), "alltoalls form %d: gdst[%d]", form, at);
            }
    }
    shmem_barrier_all();
    for (int i = 0; i < SHMEM_ALLTOALL_SYNC_SIZE; i++)
        CHECK(gsync[i] == SHMEM_SYNC_VALUE, "pSync[%d] = %ld after use", i, gsync[i]);

    shmem_free(dst);
    shmem_free(src);
    passed("alltoall");
    shmem_finalize();
    return 0;
}
