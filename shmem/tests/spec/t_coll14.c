/*
 * t_coll14: the 1.4 active-set collectives: shmem_barrier, shmem_sync,
 * broadcast32/64, collect32/64, fcollect32/64, alltoall32/64,
 * alltoalls32/64, over several active sets (all, even, 1..n-1, odd: odd
 * sizes included) with pSync arrays, plus barrier_all and sync_all.
 * Run with 2, 3 and 4 PEs. Spec: 1.4-compatible.
 */
#include "shtest.h"
#include "sets.h"

#define MAXN 64
#define NEL 5
static long psync[4][SHMEM_REDUCE_SYNC_SIZE > SHMEM_ALLTOALL_SYNC_SIZE ? SHMEM_REDUCE_SYNC_SIZE * 2 : SHMEM_ALLTOALL_SYNC_SIZE * 2];
static int which;
static long *next_psync(void)
{
    /* rotate pSync arrays; a barrier_all between uses also makes reuse safe */
    which = (which + 1) % 4;
    return psync[which];
}

static uint32_t g32src[MAXN * NEL * 2], g32dst[MAXN * NEL * 4];
static uint64_t g64src[MAXN * NEL * 2], g64dst[MAXN * NEL * 4];
static long gcount;

#define COLL_TEST(BITS, T)                                                     \
    static void coll##BITS(T *src, T *dst, const struct sht_set *s)            \
    {                                                                          \
        int me = sht_me, idx = sht_set_index(s, me);                           \
        long *ps;                                                              \
        size_t dlen = MAXN * NEL * 4;                                          \
        /* broadcast from each root index 0 and size-1 */                      \
        for (int r = 0; r < 2; r++) {                                          \
            int root = r == 0 ? 0 : s->size - 1;                               \
            for (int i = 0; i < NEL; i++)                                      \
                src[i] = (T)(1000 * me + i + 1);                               \
            for (size_t i = 0; i < dlen; i++)                                  \
                dst[i] = (T)0;                                                 \
            shmem_barrier_all();                                               \
            ps = next_psync(); /* every PE, member or not: same array */       \
            if (idx >= 0)                                                      \
                shmem_broadcast##BITS(dst, src, NEL, root, s->start, s->logstride, s->size, ps); \
            shmem_barrier_all();                                               \
            if (idx >= 0 && idx != root)                                       \
                for (int i = 0; i < NEL; i++)                                  \
                    SHT_CHECK(dst[i] == (T)(1000 * sht_set_pe(s, root) + i + 1), \
                              "broadcast" #BITS " set %s root %d [%d] %lld", s->name, root, i, \
                              (long long)dst[i]);                              \
            if (idx < 0)                                                       \
                SHT_CHECK(dst[0] == 0, "broadcast" #BITS " wrote a non-member"); \
        }                                                                      \
        /* fcollect: NEL each */                                               \
        for (size_t i = 0; i < dlen; i++)                                      \
            dst[i] = (T)0;                                                     \
        shmem_barrier_all();                                                   \
        ps = next_psync();                                                     \
        if (idx >= 0)                                                          \
            shmem_fcollect##BITS(dst, src, NEL, s->start, s->logstride, s->size, ps); \
        shmem_barrier_all();                                                   \
        if (idx >= 0)                                                          \
            for (int j = 0; j < s->size; j++)                                  \
                for (int i = 0; i < NEL; i++)                                  \
                    SHT_CHECK(dst[j * NEL + i] == (T)(1000 * sht_set_pe(s, j) + i + 1), \
                              "fcollect" #BITS " set %s [%d][%d]", s->name, j, i); \
        /* collect: index j gives j+1 elements */                              \
        for (size_t i = 0; i < dlen; i++)                                      \
            dst[i] = (T)0;                                                     \
        shmem_barrier_all();                                                   \
        ps = next_psync();                                                     \
        if (idx >= 0)                                                          \
            shmem_collect##BITS(dst, src, idx + 1, s->start, s->logstride, s->size, ps); \
        shmem_barrier_all();                                                   \
        if (idx >= 0) {                                                        \
            int off = 0;                                                       \
            for (int j = 0; j < s->size; j++)                                  \
                for (int i = 0; i <= j; i++, off++)                            \
                    SHT_CHECK(dst[off] == (T)(1000 * sht_set_pe(s, j) + i + 1), \
                              "collect" #BITS " set %s [%d][%d]", s->name, j, i); \
            SHT_CHECK(dst[off] == 0, "collect" #BITS " wrote past the end");   \
        }                                                                      \
        /* alltoall: block j of my source goes to index j */                   \
        for (int j = 0; j < s->size; j++)                                      \
            for (int i = 0; i < NEL; i++)                                      \
                src[j * NEL + i] = (T)(100000 * me + 100 * j + i);             \
        for (size_t i = 0; i < dlen; i++)                                      \
            dst[i] = (T)0;                                                     \
        shmem_barrier_all();                                                   \
        ps = next_psync();                                                     \
        if (idx >= 0)                                                          \
            shmem_alltoall##BITS(dst, src, NEL, s->start, s->logstride, s->size, ps); \
        shmem_barrier_all();                                                   \
        if (idx >= 0)                                                          \
            for (int j = 0; j < s->size; j++)                                  \
                for (int i = 0; i < NEL; i++)                                  \
                    SHT_CHECK(dst[j * NEL + i] == (T)(100000 * sht_set_pe(s, j) + 100 * idx + i), \
                              "alltoall" #BITS " set %s [%d][%d]", s->name, j, i); \
        /* alltoalls: dst stride 2, src stride 1 ... uses 2 elements per block */ \
        for (size_t i = 0; i < dlen; i++)                                      \
            dst[i] = (T)0;                                                     \
        shmem_barrier_all();                                                   \
        ps = next_psync();                                                     \
        if (idx >= 0)                                                          \
            shmem_alltoalls##BITS(dst, src, 2, 1, 2, s->start, s->logstride, s->size, ps); \
        shmem_barrier_all();                                                   \
        if (idx >= 0)                                                          \
            for (int j = 0; j < s->size; j++)                                  \
                for (int k = 0; k < 2; k++) {                                  \
                    /* source element idx*2+k of PE j lands at 2*(j*2+k) */    \
                    int se = idx * 2 + k;                                      \
                    T want = (T)(100000 * sht_set_pe(s, j) + 100 * (se / NEL) + se % NEL); \
                    SHT_CHECK(dst[2 * (j * 2 + k)] == want && dst[2 * (j * 2 + k) + 1] == 0, \
                              "alltoalls" #BITS " set %s [%d][%d] %lld want %lld", s->name, j, k, \
                              (long long)dst[2 * (j * 2 + k)], (long long)want); \
                }                                                              \
        shmem_barrier_all();                                                   \
    }
COLL_TEST(32, uint32_t)
COLL_TEST(64, uint64_t)

int main(void)
{
    sht_init("t_coll14");
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < (int)(sizeof psync[0] / sizeof(long)); i++)
            psync[k][i] = SHMEM_SYNC_VALUE;
    if (sht_npes > MAXN) {
        sht_skip("everything", "more than 64 PEs");
        return sht_end();
    }
    shmem_barrier_all();
    struct sht_set sets[4];
    int ns = sht_sets(sets, sht_npes);
    uint32_t *h32s = shmem_malloc(sizeof g32src), *h32d = shmem_malloc(sizeof g32dst);
    uint64_t *h64s = shmem_malloc(sizeof g64src), *h64d = shmem_malloc(sizeof g64dst);
    for (int k = 0; k < ns; k++) {
        const struct sht_set *s = &sets[k];
        int idx = sht_set_index(s, sht_me);
        /* barrier over the set: the set's count of arrivals is visible after */
        gcount = 0;
        shmem_barrier_all();
        long *pb = next_psync(), *ps = next_psync(); /* every PE advances */
        if (idx >= 0) {
            for (int j = 0; j < s->size; j++)
                shmem_long_atomic_inc(&gcount, sht_set_pe(s, j));
            shmem_barrier(s->start, s->logstride, s->size, pb);
            SHT_CHECK(gcount == s->size, "barrier set %s: %ld arrivals of %d", s->name, gcount,
                      s->size);
            shmem_sync(s->start, s->logstride, s->size, ps);
        }
        shmem_barrier_all();
        coll32(g32src, g32dst, s);
        coll64(g64src, g64dst, s);
        coll32(h32s, h32d, s);
        coll64(h64s, h64d, s);
    }
    /* barrier_all orders: a put before it is visible after it */
    for (int r = 0; r < 10; r++) {
        shmem_long_p(&gcount, 500 + r, (sht_me + 1) % sht_npes);
        shmem_barrier_all();
        SHT_CHECK(gcount == 500 + r, "barrier_all round %d: %ld", r, gcount);
        shmem_barrier_all();
    }
    shmem_long_p(&gcount, 900, (sht_me + 1) % sht_npes);
    shmem_quiet();
    shmem_sync_all();
    SHT_CHECK(gcount == 900, "quiet+sync_all: %ld", gcount);
    shmem_barrier_all();
    shmem_free(h32s);
    shmem_free(h32d);
    shmem_free(h64s);
    shmem_free(h64d);
    return sht_end();
}
