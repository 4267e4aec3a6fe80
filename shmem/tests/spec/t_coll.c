/*
 * t_coll: 1.5 team collectives on SHMEM_TEAM_WORLD and split teams (evens,
 * 1..n-1: odd sizes included): barrier_all, sync_all, team_sync, typed
 * broadcast/collect/fcollect/alltoall/alltoalls for several RMA types and
 * the *mem forms, each root, global and heap buffers.
 * Run with 2, 3 and 4 PEs. Spec: 1.5 only.
 */
#include "shtest.h"

#define MAXPE 64
#define NEL 6
#define DLEN (MAXPE * NEL * 2)

/* world PE of team index i for the team described by (start, stride) */
struct tdesc {
    shmem_team_t t;
    int start, stride, size;
    const char *name;
};

#define COLL_TYPES(X)                                                        \
    X(char, char) X(short, short) X(int, int) X(long, long)                  \
    X(double, double) X(uint8_t, uint8) X(int32_t, int32) X(uint64_t, uint64) \
    X(long double, longdouble) X(size_t, size)

#define VAL(T, w, i) ((T)(((w) * 10 + (i)) % 120 + 1))

#define COLL_TEST(T, N)                                                        \
    static T gs_##N[DLEN], gd_##N[DLEN];                                       \
    static void coll_##N(T *src, T *dst, const struct tdesc *d, const char *where) \
    {                                                                          \
        int idx = shmem_team_my_pe(d->t), sz = d->size;                        \
        if (idx < 0)                                                           \
            return;                                                            \
        _Pragma("GCC diagnostic push")                                         \
        _Pragma("GCC diagnostic ignored \"-Wtype-limits\"")                    \
        for (int root = 0; root < sz; root += (sz > 2 ? sz - 1 : 1)) {         \
            for (int i = 0; i < NEL; i++)                                      \
                src[i] = VAL(T, sht_me, i);                                    \
            for (int i = 0; i < DLEN; i++)                                     \
                dst[i] = 0;                                                    \
            shmem_team_sync(d->t);                                             \
            int rc = shmem_##N##_broadcast(d->t, dst, src, NEL, root);         \
            SHT_CHECK(rc == 0, "%s %s " #N "_broadcast rc %d", where, d->name, rc); \
            int wr = d->start + root * d->stride;                              \
            for (int i = 0; i < NEL; i++)                                      \
                SHT_CHECK(dst[i] == VAL(T, wr, i), "%s %s " #N "_broadcast root %d [%d]%s", \
                          where, d->name, root, i, idx == root ? " (1.5: the root's dest too)" : ""); \
            SHT_CHECK(dst[NEL] == 0, "%s %s " #N "_broadcast wrote past nelems", where, d->name); \
        }                                                                      \
        /* fcollect */                                                         \
        for (int i = 0; i < DLEN; i++)                                         \
            dst[i] = 0;                                                        \
        shmem_team_sync(d->t);                                                 \
        SHT_CHECK(shmem_##N##_fcollect(d->t, dst, src, NEL) == 0, "%s %s " #N "_fcollect rc", where, d->name); \
        for (int j = 0; j < sz; j++)                                           \
            for (int i = 0; i < NEL; i++)                                      \
                SHT_CHECK(dst[j * NEL + i] == VAL(T, d->start + j * d->stride, i), \
                          "%s %s " #N "_fcollect [%d][%d]", where, d->name, j, i); \
        /* collect: team index j gives (j % NEL) + 1 elements */               \
        for (int i = 0; i < DLEN; i++)                                         \
            dst[i] = 0;                                                        \
        shmem_team_sync(d->t);                                                 \
        SHT_CHECK(shmem_##N##_collect(d->t, dst, src, idx % NEL + 1) == 0, "%s %s " #N "_collect rc", \
                  where, d->name);                                             \
        {                                                                      \
            int off = 0;                                                       \
            for (int j = 0; j < sz; j++)                                       \
                for (int i = 0; i <= j % NEL; i++, off++)                      \
                    SHT_CHECK(dst[off] == VAL(T, d->start + j * d->stride, i), \
                              "%s %s " #N "_collect [%d][%d]", where, d->name, j, i); \
            SHT_CHECK(dst[off] == 0, "%s %s " #N "_collect wrote past the end", where, d->name); \
        }                                                                      \
        /* alltoall: block j of my source goes to team index j */             \
        for (int j = 0; j < sz; j++)                                           \
            for (int i = 0; i < 2; i++)                                        \
                src[j * 2 + i] = VAL(T, sht_me * 3 + j, i);                    \
        for (int i = 0; i < DLEN; i++)                                         \
            dst[i] = 0;                                                        \
        shmem_team_sync(d->t);                                                 \
        SHT_CHECK(shmem_##N##_alltoall(d->t, dst, src, 2) == 0, "%s %s " #N "_alltoall rc", where, d->name); \
        for (int j = 0; j < sz; j++)                                           \
            for (int i = 0; i < 2; i++)                                        \
                SHT_CHECK(dst[j * 2 + i] == VAL(T, (d->start + j * d->stride) * 3 + idx, i), \
                          "%s %s " #N "_alltoall [%d][%d]", where, d->name, j, i); \
        /* alltoalls: dest stride 3, source stride 2, 1 element per PE */      \
        for (int i = 0; i < DLEN; i++)                                         \
            dst[i] = 0;                                                        \
        shmem_team_sync(d->t);                                                 \
        SHT_CHECK(shmem_##N##_alltoalls(d->t, dst, src, 3, 2, 1) == 0, "%s %s " #N "_alltoalls rc", \
                  where, d->name);                                             \
        for (int j = 0; j < sz; j++) {                                         \
            /* element idx (stride 2: src[2*idx]) of PE j lands at dst[3*j] */ \
            int e = 2 * idx;                                                   \
            T want = VAL(T, (d->start + j * d->stride) * 3 + e / 2, e % 2);    \
            SHT_CHECK(dst[3 * j] == want && dst[3 * j + 1] == 0, "%s %s " #N "_alltoalls [%d]", \
                      where, d->name, j);                                      \
        }                                                                      \
        _Pragma("GCC diagnostic pop")                                          \
        shmem_team_sync(d->t);                                                 \
    }
COLL_TYPES(COLL_TEST)

static unsigned char gms[DLEN * 2], gmd[DLEN * 2]; /* 13 bytes x 64 PEs fit */

static void coll_mem(unsigned char *src, unsigned char *dst, const struct tdesc *d, const char *where)
{
    int idx = shmem_team_my_pe(d->t), sz = d->size;
    if (idx < 0)
        return;
    size_t nb = 13; /* odd byte counts */
    for (size_t i = 0; i < nb * MAXPE; i++)
        src[i] = (unsigned char)(sht_me * 17 + i);
    memset(dst, 0, DLEN * 2);
    shmem_team_sync(d->t);
    SHT_CHECK(shmem_broadcastmem(d->t, dst, src, nb, sz - 1) == 0, "broadcastmem rc");
    int wr = d->start + (sz - 1) * d->stride;
    for (size_t i = 0; i < nb; i++)
        SHT_CHECK(dst[i] == (unsigned char)(wr * 17 + i), "%s %s broadcastmem [%zu]", where, d->name, i);
    memset(dst, 0, DLEN * 2);
    shmem_team_sync(d->t);
    SHT_CHECK(shmem_fcollectmem(d->t, dst, src, nb) == 0, "fcollectmem rc");
    for (int j = 0; j < sz; j++)
        for (size_t i = 0; i < nb; i++)
            SHT_CHECK(dst[j * nb + i] == (unsigned char)((d->start + j * d->stride) * 17 + i),
                      "%s %s fcollectmem [%d][%zu]", where, d->name, j, i);
    memset(dst, 0, DLEN * 2);
    shmem_team_sync(d->t);
    SHT_CHECK(shmem_collectmem(d->t, dst, src, (size_t)idx + 1) == 0, "collectmem rc");
    size_t off = 0;
    for (int j = 0; j < sz; j++)
        for (int i = 0; i <= j; i++, off++)
            SHT_CHECK(dst[off] == (unsigned char)((d->start + j * d->stride) * 17 + i),
                      "%s %s collectmem [%d][%d]", where, d->name, j, i);
    memset(dst, 0, DLEN * 2);
    shmem_team_sync(d->t);
    SHT_CHECK(shmem_alltoallmem(d->t, dst, src, nb) == 0, "alltoallmem rc");
    for (int j = 0; j < sz; j++)
        for (size_t i = 0; i < nb; i++)
            SHT_CHECK(dst[j * nb + i] == (unsigned char)((d->start + j * d->stride) * 17 + idx * nb + i),
                      "%s %s alltoallmem [%d][%zu]", where, d->name, j, i);
    memset(dst, 0, DLEN * 2);
    shmem_team_sync(d->t);
    /* alltoallsmem: elements of nb bytes? no: dst/sst strides count elements of 1 byte */
    SHT_CHECK(shmem_alltoallsmem(d->t, dst, src, 2, 3, 1) == 0, "alltoallsmem rc");
    for (int j = 0; j < sz; j++)
        SHT_CHECK(dst[2 * j] == (unsigned char)((d->start + j * d->stride) * 17 + 3 * idx) &&
                      dst[2 * j + 1] == 0,
                  "%s %s alltoallsmem [%d]", where, d->name, j);
    shmem_team_sync(d->t);
}

int main(void)
{
    sht_init("t_coll");
    int n = sht_npes;
    if (n > MAXPE) {
        sht_skip("everything", "more than 64 PEs");
        return sht_end();
    }
    struct tdesc teams[3];
    int nt = 0;
    teams[nt++] = (struct tdesc){SHMEM_TEAM_WORLD, 0, 1, n, "world"};
    shmem_team_t ev, tail = SHMEM_TEAM_INVALID;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &ev);
    teams[nt++] = (struct tdesc){ev, 0, 2, (n + 1) / 2, "evens"};
    if (n >= 2) {
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, n - 1, NULL, 0, &tail);
        teams[nt++] = (struct tdesc){tail, 1, 1, n - 1, "1..n-1"};
    }
    for (int k = 0; k < nt; k++) {
#define RUN(T, N)                                                              \
    coll_##N(gs_##N, gd_##N, &teams[k], "global");                             \
    {                                                                          \
        T *s = shmem_malloc(sizeof(T) * DLEN), *d = shmem_malloc(sizeof(T) * DLEN); \
        coll_##N(s, d, &teams[k], "heap");                                     \
        shmem_free(d);                                                         \
        shmem_free(s);                                                         \
    }
        COLL_TYPES(RUN)
        coll_mem(gms, gmd, &teams[k], "global");
        unsigned char *s = shmem_malloc(DLEN * 2), *d = shmem_malloc(DLEN * 2);
        coll_mem(s, d, &teams[k], "heap");
        shmem_free(d);
        shmem_free(s);
        shmem_barrier_all();
    }
    /* barrier_all / sync_all order puts */
    static long w;
    for (int r = 0; r < 10; r++) {
        shmem_long_p(&w, r + 1, (sht_me + 1) % n);
        if (r % 2)
            shmem_barrier_all();
        else {
            shmem_quiet();
            shmem_sync_all();
        }
        SHT_CHECK(w == r + 1, "barrier/sync_all round %d: %ld", r, w);
        shmem_barrier_all();
    }
    if (tail != SHMEM_TEAM_INVALID)
        shmem_team_destroy(tail);
    if (ev != SHMEM_TEAM_INVALID)
        shmem_team_destroy(ev);
    return sht_end();
}
