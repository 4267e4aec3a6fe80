/*
 * t_generic: the C11 _Generic forms of 1.5: shmem_put/get/p/g/iput/iget/
 * put_nbi/get_nbi, with and without a context, the generic atomics
 * (fetch_add, add, inc, fetch_inc, compare_swap, fetch, set, swap,
 * fetch_or/and/xor, or/and/xor), shmem_wait_until and shmem_test, on long,
 * int, double and unsigned long long targets, global and heap.
 * Spec: 1.5 only (compile with -std=c11 or later).
 */
#include "shtest.h"

static long gl[8];
static int gi[8];
static double gd[8];
static unsigned long long gu[8];

#define GEN_TEST(T, N)                                                         \
    static void gen_##N(T *d, const char *where)                               \
    {                                                                          \
        int right = (sht_me + 1) % sht_npes, left = (sht_me + sht_npes - 1) % sht_npes; \
        T src[8], loc[8];                                                      \
        for (int i = 0; i < 8; i++) {                                          \
            src[i] = (T)(sht_me * 10 + i);                                     \
            d[i] = 0;                                                          \
        }                                                                      \
        shmem_barrier_all();                                                   \
        shmem_put(d, src, 4, right);                                           \
        shmem_put(SHMEM_CTX_DEFAULT, d + 4, src + 4, 4, right);                \
        shmem_barrier_all();                                                   \
        for (int i = 0; i < 8; i++)                                            \
            SHT_CHECK(d[i] == (T)(left * 10 + i), "%s " #N " generic put [%d]", where, i); \
        shmem_get(loc, d, 8, right);                                           \
        SHT_CHECK(loc[7] == (T)(sht_me * 10 + 7), "%s " #N " generic get", where); \
        SHT_CHECK(shmem_g(&d[2], right) == (T)(sht_me * 10 + 2), "%s " #N " generic g", where); \
        shmem_barrier_all();                                                   \
        shmem_p(&d[0], (T)77, right);                                          \
        shmem_barrier_all();                                                   \
        SHT_CHECK(d[0] == (T)77, "%s " #N " generic p", where);                \
        shmem_barrier_all();                                                   \
        shmem_iput(d, src, 2, 1, 4, right);                                    \
        shmem_barrier_all();                                                   \
        SHT_CHECK(d[6] == (T)(left * 10 + 3), "%s " #N " generic iput", where); \
        shmem_iget(loc, d, 1, 2, 4, right);                                    \
        SHT_CHECK(loc[3] == (T)(sht_me * 10 + 3), "%s " #N " generic iget", where); \
        shmem_barrier_all();                                                   \
        shmem_put_nbi(d, src, 8, right);                                       \
        shmem_quiet();                                                         \
        shmem_barrier_all();                                                   \
        shmem_get_nbi(loc, d, 8, right);                                       \
        shmem_quiet();                                                         \
        SHT_CHECK(d[1] == (T)(left * 10 + 1) && loc[1] == (T)(sht_me * 10 + 1), \
                  "%s " #N " generic nbi", where);                             \
        shmem_barrier_all();                                                   \
    }
GEN_TEST(long, long)
GEN_TEST(int, int)
GEN_TEST(double, double)
GEN_TEST(unsigned long long, ulonglong)

#define AMO_TEST(T, N, BITWISE)                                                       \
    static void amo_##N(T *t, const char *where)                               \
    {                                                                          \
        int n = sht_npes, right = (sht_me + 1) % n;                            \
        *t = 0;                                                                \
        shmem_barrier_all();                                                   \
        for (int pe = 0; pe < n; pe++) {                                       \
            shmem_atomic_add(t, (T)1, pe);                                     \
            shmem_atomic_inc(t, pe);                                           \
            (void)shmem_atomic_fetch_add(t, (T)1, pe);                         \
            (void)shmem_atomic_fetch_inc(SHMEM_CTX_DEFAULT, t, pe);            \
        }                                                                      \
        shmem_barrier_all();                                                   \
        SHT_CHECK(*t == (T)(4 * n), "%s " #N " generic add/inc: %lld", where, (long long)*t); \
        SHT_CHECK(shmem_atomic_fetch(t, right) == (T)(4 * n), "%s " #N " generic fetch", where); \
        shmem_barrier_all();                                                   \
        shmem_atomic_set(t, (T)(sht_me + 1), right);                           \
        shmem_barrier_all();                                                   \
        T old = shmem_atomic_swap(t, (T)100, right);                           \
        SHT_CHECK(old == (T)(sht_me + 1), "%s " #N " generic swap %lld", where, (long long)old); \
        shmem_barrier_all();                                                   \
        old = shmem_atomic_compare_swap(t, (T)100, (T)3, right);               \
        SHT_CHECK(old == (T)100, "%s " #N " generic compare_swap", where);     \
        shmem_barrier_all();                                                   \
        BITWISE(T, N)                                                          \
        /* wait_until / test on a peer's write */                             \
        *t = 0;                                                                \
        shmem_barrier_all();                                                   \
        shmem_atomic_set(t, (T)9, right);                                      \
        shmem_wait_until(t, SHMEM_CMP_EQ, (T)9);                               \
        SHT_CHECK(shmem_test(t, SHMEM_CMP_GE, (T)9) == 1, "%s " #N " generic test", where); \
        shmem_barrier_all();                                                   \
    }
/* the generic bitwise ops (unsigned types here; t_generic_bitwise takes
 * int32_t/int64_t, which are int and long on LP64) */
#define BITS(T, N)                                                             \
    shmem_atomic_or(t, (T)4, right);                                           \
    shmem_barrier_all();                                                       \
    SHT_CHECK(*t == (T)7, "%s " #N " generic or %lld", where, (long long)*t);  \
    shmem_barrier_all();                                                       \
    old = shmem_atomic_fetch_and(t, (T)6, right);                              \
    shmem_barrier_all();                                                       \
    SHT_CHECK(old == (T)7 && *t == (T)6, "%s " #N " generic fetch_and", where); \
    shmem_barrier_all();                                                       \
    old = shmem_atomic_fetch_xor(t, (T)5, right);                              \
    shmem_atomic_and(t, (T)0xff, right);                                       \
    shmem_atomic_xor(t, (T)0, right);                                          \
    (void)shmem_atomic_fetch_or(t, (T)0, right);                               \
    shmem_barrier_all();                                                       \
    SHT_CHECK(old == (T)6 && *t == (T)3, "%s " #N " generic fetch_xor", where); \
    shmem_barrier_all();
#define NOBITS(T, N)                                                           \
    shmem_atomic_set(t, (T)3, right);                                          \
    shmem_barrier_all();
AMO_TEST(unsigned long long, ulonglong, BITS)
AMO_TEST(long, long, NOBITS)
AMO_TEST(int, int, NOBITS)

int main(void)
{
    sht_init("t_generic");
    gen_long(gl, "global");
    gen_int(gi, "global");
    gen_double(gd, "global");
    gen_ulonglong(gu, "global");
    long *hl = shmem_malloc(8 * sizeof(long));
    double *hd = shmem_malloc(8 * sizeof(double));
    gen_long(hl, "heap");
    gen_double(hd, "heap");
    amo_long(&gl[0], "global");
    amo_int(&gi[0], "global");
    amo_ulonglong(&gu[0], "global");
    amo_long(&hl[3], "heap");
    shmem_free(hd);
    shmem_free(hl);
    return sht_end();
}
