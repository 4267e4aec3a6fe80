/*
 * t_rma: every typed RMA routine (put, get, p, g, iput, iget, put_nbi,
 * get_nbi) on every standard RMA type, the sized forms (8/16/32/64/128 and
 * mem, blocking, strided, nbi), on global/static targets AND symmetric heap
 * targets, neighbour to neighbour (any PE count), plus a large putmem/getmem.
 * Spec: 1.4-compatible.
 */
#include "shtest.h"

#define LEN 48 /* a multiple of 3 and 2: strided counts below */
static int right, left;

/* A value no two (pe, i) pairs share for small i, exact in every type. */
#define V(T, pe, i) ((T)(((pe) * 13 + (i) * 7) % 97 + 1))

#define RMA_TYPES(X)                                                          \
    X(float, float) X(double, double) X(long double, longdouble)              \
    X(char, char) X(signed char, schar) X(short, short) X(int, int)           \
    X(long, long) X(long long, longlong) X(unsigned char, uchar)              \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)   \
    X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16)        \
    X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16) \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)                   \
    X(ptrdiff_t, ptrdiff)

#define RMA_TEST(T, N)                                                         \
    static T gdst_##N[LEN], gsrc_##N[LEN];                                     \
    static void rma_##N(T *dst, T *src, const char *where)                     \
    {                                                                          \
        T loc[LEN];                                                            \
        int i;                                                                 \
        for (i = 0; i < LEN; i++) {                                            \
            src[i] = V(T, sht_me, i);                                          \
            dst[i] = 0;                                                        \
        }                                                                      \
        shmem_barrier_all();                                                   \
        shmem_##N##_put(dst, src, LEN, right);                                 \
        shmem_barrier_all();                                                   \
        for (i = 0; i < LEN; i++)                                              \
            SHT_CHECK(dst[i] == V(T, left, i), "%s " #N "_put [%d]", where, i); \
        /* one-sided: only PE 0 puts, to the last PE; no one else's dst moves \
         * (with 2 PEs left == right, so this is what tells put from get) */  \
        shmem_barrier_all();                                                   \
        for (i = 0; i < LEN; i++)                                              \
            dst[i] = 0;                                                        \
        shmem_barrier_all();                                                   \
        if (sht_me == 0)                                                       \
            shmem_##N##_put(dst, src, LEN, sht_npes - 1);                      \
        shmem_barrier_all();                                                   \
        for (i = 0; i < LEN; i++)                                              \
            SHT_CHECK(dst[i] == (sht_me == sht_npes - 1 ? V(T, 0, i) : (T)0),  \
                      "%s " #N "_put from PE 0 only [%d]", where, i);          \
        memset(loc, 0, sizeof loc);                                            \
        shmem_##N##_get(loc, src, LEN, right);                                 \
        for (i = 0; i < LEN; i++)                                              \
            SHT_CHECK(loc[i] == V(T, right, i), "%s " #N "_get [%d]", where, i); \
        shmem_barrier_all();                                                   \
        shmem_##N##_p(&dst[5], V(T, sht_me, 90), right);                       \
        shmem_barrier_all();                                                   \
        SHT_CHECK(dst[5] == V(T, left, 90), "%s " #N "_p", where);             \
        T g = shmem_##N##_g(&src[7], right);                                   \
        SHT_CHECK(g == V(T, right, 7), "%s " #N "_g", where);                  \
        for (i = 0; i < LEN; i++)                                              \
            dst[i] = 0;                                                        \
        shmem_barrier_all();                                                   \
        /* dst stride 2, src stride 3, LEN/3 elements */                       \
        shmem_##N##_iput(dst, src, 2, 3, LEN / 3, right);                      \
        shmem_barrier_all();                                                   \
        for (i = 0; i < LEN; i++) {                                            \
            T want = (i % 2 == 0 && i / 2 < LEN / 3) ? V(T, left, 3 * (i / 2)) : (T)0; \
            SHT_CHECK(dst[i] == want, "%s " #N "_iput [%d]", where, i);        \
        }                                                                      \
        memset(loc, 0, sizeof loc);                                            \
        /* loc stride 3, src stride 2 */                                       \
        shmem_##N##_iget(loc, src, 3, 2, LEN / 3, right);                      \
        for (i = 0; i < LEN; i++) {                                            \
            T want = (i % 3 == 0) ? V(T, right, 2 * (i / 3)) : (T)0;           \
            SHT_CHECK(loc[i] == want, "%s " #N "_iget [%d]", where, i);        \
        }                                                                      \
        for (i = 0; i < LEN; i++)                                              \
            dst[i] = 0;                                                        \
        shmem_barrier_all();                                                   \
        shmem_##N##_put_nbi(dst, src, LEN, right);                             \
        shmem_quiet();                                                         \
        shmem_barrier_all();                                                   \
        for (i = 0; i < LEN; i++)                                              \
            SHT_CHECK(dst[i] == V(T, left, i), "%s " #N "_put_nbi [%d]", where, i); \
        memset(loc, 0, sizeof loc);                                            \
        shmem_##N##_get_nbi(loc, src, LEN, right);                             \
        shmem_quiet();                                                         \
        for (i = 0; i < LEN; i++)                                              \
            SHT_CHECK(loc[i] == V(T, right, i), "%s " #N "_get_nbi [%d]", where, i); \
        shmem_barrier_all();                                                   \
    }
RMA_TYPES(RMA_TEST)

/* The sized routines move elements of 1, 2, 4, 8 or 16 bytes. */
#define SIZED_TEST(BITS, T)                                                    \
    static T gs##BITS[LEN], gd##BITS[LEN];                                     \
    static void sized_##BITS(T *dst, T *src, const char *where)                \
    {                                                                          \
        T loc[LEN];                                                            \
        int i;                                                                 \
        for (i = 0; i < LEN; i++) {                                            \
            memset(&src[i], V(int, sht_me, i), sizeof(T));                     \
            memset(&dst[i], 0, sizeof(T));                                     \
        }                                                                      \
        shmem_barrier_all();                                                   \
        shmem_put##BITS(dst, src, LEN, right);                                 \
        shmem_barrier_all();                                                   \
        for (i = 0; i < LEN; i++)                                              \
            SHT_CHECK(((unsigned char *)&dst[i])[sizeof(T) - 1] == V(int, left, i), \
                      "%s put" #BITS " [%d]", where, i);                       \
        memset(loc, 0, sizeof loc);                                            \
        shmem_get##BITS(loc, src, LEN, right);                                 \
        for (i = 0; i < LEN; i++)                                              \
            SHT_CHECK(((unsigned char *)&loc[i])[0] == V(int, right, i),       \
                      "%s get" #BITS " [%d]", where, i);                       \
        memset(dst, 0, sizeof(T) * LEN);                                       \
        shmem_barrier_all();                                                   \
        shmem_iput##BITS(dst, src, 3, 2, LEN / 3, right);                      \
        shmem_barrier_all();                                                   \
        for (i = 0; i < LEN; i++) {                                            \
            int want = (i % 3 == 0) ? V(int, left, 2 * (i / 3)) : 0;           \
            SHT_CHECK(((unsigned char *)&dst[i])[0] == want, "%s iput" #BITS " [%d]", where, i); \
        }                                                                      \
        memset(loc, 0, sizeof loc);                                            \
        shmem_iget##BITS(loc, src, 2, 3, LEN / 3, right);                      \
        for (i = 0; i < LEN; i++) {                                            \
            int want = (i % 2 == 0 && i / 2 < LEN / 3) ? V(int, right, 3 * (i / 2)) : 0; \
            SHT_CHECK(((unsigned char *)&loc[i])[0] == want, "%s iget" #BITS " [%d]", where, i); \
        }                                                                      \
        memset(dst, 0, sizeof(T) * LEN);                                       \
        shmem_barrier_all();                                                   \
        shmem_put##BITS##_nbi(dst, src, LEN, right);                           \
        shmem_quiet();                                                         \
        shmem_barrier_all();                                                   \
        for (i = 0; i < LEN; i++)                                              \
            SHT_CHECK(((unsigned char *)&dst[i])[0] == V(int, left, i),        \
                      "%s put" #BITS "_nbi [%d]", where, i);                   \
        memset(loc, 0, sizeof loc);                                            \
        shmem_get##BITS##_nbi(loc, src, LEN, right);                           \
        shmem_quiet();                                                         \
        for (i = 0; i < LEN; i++)                                              \
            SHT_CHECK(((unsigned char *)&loc[i])[0] == V(int, right, i),       \
                      "%s get" #BITS "_nbi [%d]", where, i);                   \
        shmem_barrier_all();                                                   \
    }
typedef struct { uint64_t w[2]; } u128;
SIZED_TEST(8, uint8_t)
SIZED_TEST(16, uint16_t)
SIZED_TEST(32, uint32_t)
SIZED_TEST(64, uint64_t)
SIZED_TEST(128, u128)

static unsigned char gbig_src[1 << 20], gbig_dst[1 << 20];

static void mem_test(unsigned char *dst, unsigned char *src, size_t n, const char *where)
{
    unsigned char *loc = malloc(n);
    for (size_t i = 0; i < n; i++) {
        src[i] = (unsigned char)(sht_me + i * 3);
        dst[i] = 0;
    }
    shmem_barrier_all();
    shmem_putmem(dst, src, n, right);
    shmem_barrier_all();
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += dst[i] != (unsigned char)(left + i * 3);
    SHT_CHECK(bad == 0, "%s putmem %zu: %zu bad", where, n, bad);
    /* one-sided: only PE 0 puts, to the last PE */
    shmem_barrier_all();
    memset(dst, 0, n);
    shmem_barrier_all();
    if (sht_me == 0)
        shmem_putmem(dst, src, n, sht_npes - 1);
    shmem_barrier_all();
    bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += dst[i] != (sht_me == sht_npes - 1 ? (unsigned char)(0 + i * 3) : 0);
    SHT_CHECK(bad == 0, "%s putmem %zu from PE 0 only: %zu bad", where, n, bad);
    memset(loc, 0, n);
    shmem_getmem(loc, src, n, right);
    bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += loc[i] != (unsigned char)(right + i * 3);
    SHT_CHECK(bad == 0, "%s getmem %zu: %zu bad", where, n, bad);
    shmem_barrier_all();
    memset(dst, 0, n);
    shmem_barrier_all();
    /* unaligned offsets, nbi */
    shmem_putmem_nbi(dst + 3, src + 1, n - 5, right);
    shmem_quiet();
    shmem_barrier_all();
    bad = 0;
    for (size_t i = 0; i + 5 < n; i++)
        bad += dst[i + 3] != (unsigned char)(left + (i + 1) * 3);
    SHT_CHECK(bad == 0 && dst[0] == 0 && dst[n - 1] == 0, "%s putmem_nbi %zu: %zu bad", where,
              n, bad);
    memset(loc, 0, n);
    shmem_getmem_nbi(loc + 1, src + 3, n - 5, right);
    shmem_quiet();
    bad = 0;
    for (size_t i = 0; i + 5 < n; i++)
        bad += loc[i + 1] != (unsigned char)(right + (i + 3) * 3);
    SHT_CHECK(bad == 0, "%s getmem_nbi %zu: %zu bad", where, n, bad);
    /* a zero-length transfer is no operation */
    shmem_putmem(dst, src, 0, right);
    shmem_getmem(loc, src, 0, right);
    shmem_barrier_all();
    free(loc);
}

int main(void)
{
    sht_init("t_rma");
    right = (sht_me + 1) % sht_npes;
    left = (sht_me + sht_npes - 1) % sht_npes;

#define RUN(T, N)                                                              \
    rma_##N(gdst_##N, gsrc_##N, "global");                                     \
    {                                                                          \
        T *d = shmem_malloc(LEN * sizeof(T)), *s = shmem_malloc(LEN * sizeof(T)); \
        rma_##N(d, s, "heap");                                                 \
        rma_##N(d, gsrc_##N, "heap<-global");                                  \
        rma_##N(gdst_##N, s, "global<-heap");                                  \
        shmem_free(s);                                                         \
        shmem_free(d);                                                         \
    }
    RMA_TYPES(RUN)

#define RUNS(BITS, T)                                                          \
    sized_##BITS(gd##BITS, gs##BITS, "global");                                \
    {                                                                          \
        T *d = shmem_malloc(LEN * sizeof(T)), *s = shmem_malloc(LEN * sizeof(T)); \
        sized_##BITS(d, s, "heap");                                            \
        shmem_free(s);                                                         \
        shmem_free(d);                                                         \
    }
    RUNS(8, uint8_t)
    RUNS(16, uint16_t)
    RUNS(32, uint32_t)
    RUNS(64, uint64_t)
    RUNS(128, u128)

    size_t sizes[] = {1 << 20, 4099, 64, 9};
    unsigned char *hd = shmem_malloc(1 << 20), *hs = shmem_malloc(1 << 20);
    for (int k = 0; k < 4; k++) {
        if (sizes[k] < 6)
            continue;
        mem_test(gbig_dst, gbig_src, sizes[k], "global");
        mem_test(hd, hs, sizes[k], "heap");
        mem_test(hd, gbig_src, sizes[k], "heap<-global");
        mem_test(gbig_dst, hs, sizes[k], "global<-heap");
    }
    shmem_free(hs);
    shmem_free(hd);
    return sht_end();
}
