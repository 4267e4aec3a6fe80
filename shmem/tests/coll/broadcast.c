/*
 * broadcast: 1.5 team broadcast (typed, mem, C11 generic) from every root,
 * odd element counts, heap and global targets; the root's dest is written
 * (1.5). 1.4 broadcast32/64 from every root with pSync a global: the
 * root's target is left alone (1.4), and pSync is restored.
 */
#include <string.h>

#include "check.h"

#define N 37
static int gsrc[N], gdst[N];
static long gsync[SHMEM_BCAST_SYNC_SIZE];

int main(void)
{
    shmem_init();
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
        gsync[i] = SHMEM_SYNC_VALUE; /* before first use, then a barrier */
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *src = shmem_malloc(N * sizeof(long));
    long *dst = shmem_malloc(N * sizeof(long));
    char *csrc = shmem_malloc(1001), *cdst = shmem_malloc(1001);

    for (int root = 0; root < n; root++) {
        for (int i = 0; i < N; i++) {
            src[i] = me * 100000L + root * 1000 + i;
            dst[i] = -1;
            gsrc[i] = me * 1000 + i;
            gdst[i] = -1;
        }
        memset(csrc, 'a' + me, 1001);
        memset(cdst, 0, 1001);
        shmem_barrier_all();
        CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, N, root) == 0, "rc");
        shmem_broadcast(SHMEM_TEAM_WORLD, gdst, gsrc, N - 2, root);
        shmem_broadcastmem(SHMEM_TEAM_WORLD, cdst, csrc, 1001, root);
        for (int i = 0; i < N; i++)
            CHECK(dst[i] == root * 100000L + root * 1000 + i, "root %d: dst[%d] = %ld", root, i, dst[i]);
        for (int i = 0; i < N - 2; i++)
            CHECK(gdst[i] == root * 1000 + i, "root %d: global dst[%d] = %d", root, i, gdst[i]);
        CHECK(gdst[N - 2] == -1 && gdst[N - 1] == -1, "wrote past nelems");
        for (int i = 0; i < 1001; i++)
            CHECK(cdst[i] == 'a' + root, "root %d: mem dst[%d] = %d", root, i, cdst[i]);
    }

    /* 1.4: the same, the root's dest untouched. */
    for (int root = 0; root < n; root++) {
        for (int i = 0; i < N; i++) {
            src[i] = me * 100L + i;
            dst[i] = -7;
            gsrc[i] = me * 1000 + i;
            gdst[i] = -7;
        }
        shmem_barrier_all();
        shmem_broadcast64(dst, src, N, root, 0, 0, n, gsync);
        shmem_broadcast32(gdst, gsrc, N, root, 0, 0, n, gsync);
        for (int i = 0; i < N; i++) {
            long want = me == root ? -7 : root * 100L + i;
            CHECK(dst[i] == want, "1.4 root %d: dst[%d] = %ld want %ld", root, i, dst[i], want);
            int gwant = me == root ? -7 : root * 1000 + i;
            CHECK(gdst[i] == gwant, "1.4 root %d: gdst[%d] = %d want %d", root, i, gdst[i], gwant);
        }
    }
    /* An odd active set: every other PE, root index 1 when there is one. */
    if (me % 2 == 0) {
        int size = (n + 1) / 2, root = size > 1 ? 1 : 0;
        for (int i = 0; i < N; i++)
            src[i] = me * 10L + i, dst[i] = 0;
        shmem_broadcast64(dst, src, N, root, 0, 1, size, gsync);
        if (me != 2 * root)
            for (int i = 0; i < N; i++)
                CHECK(dst[i] == 2 * root * 10L + i, "strided: dst[%d] = %ld", i, dst[i]);
    }
    shmem_barrier_all();
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
        CHECK(gsync[i] == SHMEM_SYNC_VALUE, "pSync[%d] = %ld after use", i, gsync[i]);

    shmem_free(cdst);
    shmem_free(csrc);
    shmem_free(dst);
    shmem_free(src);
    passed("broadcast");
    shmem_finalize();
    return 0;
}
