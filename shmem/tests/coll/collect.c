/*
 * collect: shmem_collect with a different count on every PE (PE i gives
 * i+1 elements; PE 0 also runs with zero), fcollect with an odd count,
 * typed, mem and C11 generic forms, heap and global buffers; the 1.4
 * collect32/64 and fcollect32/64 on the world and on an odd active set.
 */
#include <string.h>

#include "check.h"

#define MAXPE 64
#define K 5
static int gsrc[MAXPE];
static int gdst[MAXPE * MAXPE];
static long gsync[SHMEM_COLLECT_SYNC_SIZE];

int main(void)
{
    shmem_init();
    for (int i = 0; i < SHMEM_COLLECT_SYNC_SIZE; i++)
        gsync[i] = SHMEM_SYNC_VALUE; /* before first use, then a barrier */
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n <= MAXPE, "at most %d PEs", MAXPE);
    long *src = shmem_malloc(MAXPE * sizeof(long));
    long *dst = shmem_malloc(MAXPE * MAXPE * sizeof(long));

    /* collect: PE i contributes i+1 elements, or none when skip0 and i==0. */
    for (int skip0 = 0; skip0 < 2; skip0++) {
        size_t mine = (skip0 && me == 0) ? 0 : (size_t)me + 1;
        for (int i = 0; i < MAXPE; i++)
            src[i] = me * 1000L + i, gsrc[i] = me * 1000 + i;
        for (int i = 0; i < MAXPE * MAXPE; i++)
            dst[i] = -1, gdst[i] = -1;
        shmem_barrier_all();
        CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, dst, src, mine) == 0, "rc");
        shmem_collect(SHMEM_TEAM_WORLD, gdst, gsrc, mine);
        size_t off = 0;
        for (int p = 0; p < n; p++) {
            size_t cnt = (skip0 && p == 0) ? 0 : (size_t)p + 1;
            for (size_t i = 0; i < cnt; i++, off++) {
                CHECK(dst[off] == p * 1000L + (long)i, "collect: dst[%zu] = %ld", off, dst[off]);
                CHECK(gdst[off] == p * 1000 + (int)i, "collect: gdst[%zu] = %d", off, gdst[off]);
            }
        }
        CHECK(dst[off] == -1, "collect wrote past the end");
    }

    /* fcollect, K (odd) elements each; mem form with 3 bytes. */
    for (int i = 0; i < K; i++)
        src[i] = me * 1000L + i, gsrc[i] = me * 1000 + i;
    shmem_barrier_all();
    shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, K);
    shmem_fcollect(SHMEM_TEAM_WORLD, gdst, gsrc, K);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < K; i++) {
            CHECK(dst[p * K + i] == p * 1000L + i, "fcollect dst[%d]", p * K + i);
            CHECK(gdst[p * K + i] == p * 1000 + i, "fcollect gdst[%d]", p * K + i);
        }
    char *cs = shmem_malloc(3), *cd = shmem_malloc(3 * MAXPE);
    memset(cs, 'A' + me, 3);
    shmem_barrier_all();
    shmem_fcollectmem(SHMEM_TEAM_WORLD, cd, cs, 3);
    for (int i = 0; i < 3 * n; i++)
        CHECK(cd[i] == 'A' + i / 3, "fcollectmem cd[%d] = %c", i, cd[i]);

    /* 1.4 forms. */
    for (int i = 0; i < MAXPE * MAXPE; i++)
        dst[i] = -1, gdst[i] = -1;
    shmem_barrier_all();
    shmem_collect64(dst, src, (size_t)me + 1, 0, 0, n, gsync);
    shmem_fcollect32(gdst, gsrc, K, 0, 0, n, gsync);
    size_t off = 0;
    for (int p = 0; p < n; p++)
        for (int i = 0; i <= p; i++, off++)
            CHECK(dst[off] == p * 1000L + i, "collect64 dst[%zu] = %ld", off, dst[off]);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < K; i++)
            CHECK(gdst[p * K + i] == p * 1000 + i, "fcollect32 gdst[%d]", p * K + i);
    /* Odd active set: PEs 1, 3, 5, ... */
    if (me % 2 == 1) {
        int size = n / 2;
        shmem_fcollect64(dst, src, K, 1, 1, size, gsync);
        for (int q = 0; q < size; q++)
            for (int i = 0; i < K; i++)
                CHECK(dst[q * K + i] == (2 * q + 1) * 1000L + i, "strided fcollect64 [%d]", q * K + i);
        shmem_collect32(gdst, gsrc, 2, 1, 1, size, gsync);
        for (int q = 0; q < size; q++)
            for (int i = 0; i < 2; i++)
                CHECK(gdst[q * 2 + i] == (2 * q + 1) * 1000 + i, "strided collect32 [%d]", q * 2 + i);
    }
    shmem_barrier_all();
    for (int i = 0; i < SHMEM_COLLECT_SYNC_SIZE; i++)
        CHECK(gsync[i] == SHMEM_SYNC_VALUE, "pSync[%d] = %ld after use", i, gsync[i]);

    shmem_free(cd);
    shmem_free(cs);
    shmem_free(dst);
    shmem_free(src);
    passed("collect");
    shmem_finalize();
    return 0;
}
