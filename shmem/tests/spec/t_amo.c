/*
 * t_amo: every standard, extended and bitwise atomic on every type of the
 * 1.5 tables, fetching and not, on a global/static target and a heap
 * target; every PE operates on every PE at once (any PE count), so the
 * results check atomicity too. Also the 1.5 fetching _nbi forms (behind
 * SHT_15) and the deprecated 1.2 names (shmem_int_fadd ...) that older
 * benchmarks call.
 * Spec: 1.4-compatible. Under Open MPI 4.1.4 skipped: the 1.4 extended
 * types (int32/int64/uint32/uint64/size/ptrdiff) of standard and extended
 * ops, which it does not declare; 32-bit compare_swap (smashes the stack);
 * fetching bitwise ops on heap targets (return 0, do nothing).
 */
#include "shtest.h"

static int me, n;

/* Standard AMO types: fetch_inc/inc/fetch_add/add/compare_swap and the
 * extended fetch/set/swap. B: the type also has the bitwise ops. S: 1 if a
 * 32-bit type (Open MPI's compare_swap crashes on those). O: 1 if Open MPI
 * 4.1.4 declares the standard ops for it. */
#define STD_TYPES_OLD(X)                                                      \
    X(int, int, 0, 1, 1) X(long, long, 0, 0, 1)                               \
    X(long long, longlong, 0, 0, 1) X(unsigned int, uint, 1, 1, 1)            \
    X(unsigned long, ulong, 1, 0, 1) X(unsigned long long, ulonglong, 1, 0, 1)
#define STD_TYPES_NEW(X)                                                      \
    X(int32_t, int32, 1, 1, 0) X(int64_t, int64, 1, 0, 0)                     \
    X(uint32_t, uint32, 1, 1, 0) X(uint64_t, uint64, 1, 0, 0)                 \
    X(size_t, size, 0, 0, 0) X(ptrdiff_t, ptrdiff, 0, 0, 0)
#if SHT_OMPI
/* Open MPI 4.1.4 does not declare the standard/extended ops on these. */
#define STD_TYPES(X) STD_TYPES_OLD(X)
#else
#define STD_TYPES(X) STD_TYPES_OLD(X) STD_TYPES_NEW(X)
#endif

#define SUM1N ((long)n * (n + 1) / 2)

#define STD_TEST(T, N, B, S, O)                                                \
    static T g_##N, g2_##N;                                                    \
    static void std_##N(T *t, const char *where)                               \
    {                                                                          \
        *t = 0;                                                                \
        shmem_barrier_all();                                                   \
        for (int pe = 0; pe < n; pe++)                                         \
            shmem_##N##_atomic_add(t, (T)(me + 1), pe);                        \
        shmem_barrier_all();                                                   \
        SHT_CHECK(*t == (T)SUM1N, "%s " #N "_atomic_add: %lld", where, (long long)*t); \
        shmem_barrier_all();                                                   \
        for (int pe = 0; pe < n; pe++)                                         \
            shmem_##N##_atomic_inc(t, pe);                                     \
        shmem_barrier_all();                                                   \
        SHT_CHECK(*t == (T)(SUM1N + n), "%s " #N "_atomic_inc: %lld", where, (long long)*t); \
        shmem_barrier_all();                                                   \
        long base = SUM1N + n;                                                 \
        for (int pe = 0; pe < n; pe++) {                                       \
            T f = shmem_##N##_atomic_fetch_add(t, (T)2, pe);                   \
            SHT_CHECK((long)f >= base && (long)f < base + 2 * n && ((long)f - base) % 2 == 0, \
                      "%s " #N "_atomic_fetch_add fetched %lld", where, (long long)f); \
        }                                                                      \
        shmem_barrier_all();                                                   \
        base += 2 * n;                                                         \
        SHT_CHECK(*t == (T)base, "%s " #N "_atomic_fetch_add: %lld", where, (long long)*t); \
        shmem_barrier_all();                                                   \
        for (int pe = 0; pe < n; pe++) {                                       \
            T f = shmem_##N##_atomic_fetch_inc(t, pe);                         \
            SHT_CHECK((long)f >= base && (long)f < base + n, "%s " #N "_atomic_fetch_inc fetched %lld", \
                      where, (long long)f);                                    \
        }                                                                      \
        shmem_barrier_all();                                                   \
        base += n;                                                             \
        SHT_CHECK(*t == (T)base, "%s " #N "_atomic_fetch_inc: %lld", where, (long long)*t); \
        /* fetch and set */                                                    \
        T f0 = shmem_##N##_atomic_fetch(t, (me + 1) % n);                      \
        SHT_CHECK(f0 == (T)base, "%s " #N "_atomic_fetch: %lld", where, (long long)f0); \
        shmem_barrier_all();                                                   \
        shmem_##N##_atomic_set(t, (T)(100 + me), (me + 1) % n);                \
        shmem_barrier_all();                                                   \
        SHT_CHECK(*t == (T)(100 + (me + n - 1) % n), "%s " #N "_atomic_set: %lld", where, \
                  (long long)*t);                                              \
        shmem_barrier_all();                                                   \
        /* swap: each PE swaps into its right neighbour, which holds 100+me */ \
        T sw = shmem_##N##_atomic_swap(t, (T)(200 + me), (me + 1) % n);        \
        SHT_CHECK(sw == (T)(100 + me), "%s " #N "_atomic_swap fetched %lld", where, (long long)sw); \
        shmem_barrier_all();                                                   \
        SHT_CHECK(*t == (T)(200 + (me + n - 1) % n), "%s " #N "_atomic_swap: %lld", where, \
                  (long long)*t);                                              \
        shmem_barrier_all();                                                   \
        if (SHT_OMPI && S) {                                                   \
            sht_skip(#N "_atomic_compare_swap", "32-bit cswap smashes the stack in Open MPI 4.1.4"); \
        } else {                                                               \
            /* every PE races to swap 200+(pe-1) -> 300+me on every PE: one wins each */ \
            int won = 0;                                                       \
            for (int pe = 0; pe < n; pe++) {                                   \
                T cond = (T)(200 + (pe + n - 1) % n);                          \
                T old = shmem_##N##_atomic_compare_swap(t, cond, (T)(300 + me), pe); \
                SHT_CHECK(old == cond || ((long)old >= 300 && (long)old < 300 + n), \
                          "%s " #N "_atomic_compare_swap fetched %lld", where, (long long)old); \
                won += old == cond;                                            \
            }                                                                  \
            shmem_int_atomic_add(&cswap_wins, won, 0);                         \
            /* a failing compare leaves the value alone */                     \
            T old2 = shmem_##N##_atomic_compare_swap(t, (T)7777, (T)1, (me + 1) % n); \
            SHT_CHECK((long)old2 >= 300 && (long)old2 < 300 + n, "%s " #N " failing cswap fetched %lld", \
                      where, (long long)old2);                                 \
            shmem_barrier_all();                                               \
            SHT_CHECK((long)*t >= 300 && (long)*t < 300 + n, "%s " #N "_atomic_compare_swap: %lld", \
                      where, (long long)*t);                                   \
            if (me == 0)                                                       \
                SHT_CHECK(cswap_wins == n, "%s " #N " compare_swap winners %d, want %d", where, \
                          cswap_wins, n);                                      \
            shmem_barrier_all();                                               \
            cswap_wins = 0;                                                    \
        }                                                                      \
        shmem_barrier_all();                                                   \
    }

static int cswap_wins;
STD_TYPES(STD_TEST)

/* Extended types float/double: fetch, set, swap. */
#define EXT_TEST(T, N)                                                         \
    static T g_##N;                                                            \
    static void ext_##N(T *t, const char *where)                               \
    {                                                                          \
        *t = (T)0.5;                                                           \
        shmem_barrier_all();                                                   \
        T f = shmem_##N##_atomic_fetch(t, (me + 1) % n);                       \
        SHT_CHECK(f == (T)0.5, "%s " #N "_atomic_fetch %g", where, (double)f); \
        shmem_barrier_all();                                                   \
        shmem_##N##_atomic_set(t, (T)(me + 0.25), (me + 1) % n);               \
        shmem_barrier_all();                                                   \
        SHT_CHECK(*t == (T)((me + n - 1) % n + 0.25), "%s " #N "_atomic_set %g", where, (double)*t); \
        shmem_barrier_all();                                                   \
        T s = shmem_##N##_atomic_swap(t, (T)(me + 0.75), (me + 1) % n);        \
        SHT_CHECK(s == (T)(me + 0.25), "%s " #N "_atomic_swap fetched %g", where, (double)s); \
        shmem_barrier_all();                                                   \
        SHT_CHECK(*t == (T)((me + n - 1) % n + 0.75), "%s " #N "_atomic_swap %g", where, (double)*t); \
        shmem_barrier_all();                                                   \
    }
EXT_TEST(float, float)
EXT_TEST(double, double)

/* Bitwise types: and, or, xor, fetching and not. Each PE owns bit me%W. */
#define BIT_TYPES(X)                                                          \
    X(unsigned int, uint) X(unsigned long, ulong)                             \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)      \
    X(uint32_t, uint32) X(uint64_t, uint64)

#define BIT_TEST(T, N)                                                         \
    static T gb_##N;                                                           \
    static void bit_##N(T *t, const char *where, int heap)                     \
    {                                                                          \
        T all = 0;                                                             \
        for (int p = 0; p < n; p++)                                            \
            all |= (T)1 << (p % 31);                                           \
        T mine = (T)1 << (me % 31);                                            \
        *t = 0;                                                                \
        shmem_barrier_all();                                                   \
        for (int pe = 0; pe < n; pe++)                                         \
            shmem_##N##_atomic_or(t, mine, pe);                                \
        shmem_barrier_all();                                                   \
        SHT_CHECK(*t == all, "%s " #N "_atomic_or %llx", where, (unsigned long long)*t); \
        shmem_barrier_all();                                                   \
        *t = (T)~(T)0;                                                         \
        shmem_barrier_all();                                                   \
        for (int pe = 0; pe < n; pe++)                                         \
            shmem_##N##_atomic_and(t, (T)~mine, pe);                           \
        shmem_barrier_all();                                                   \
        SHT_CHECK(*t == (T)~all, "%s " #N "_atomic_and %llx", where, (unsigned long long)*t); \
        shmem_barrier_all();                                                   \
        *t = 0;                                                                \
        shmem_barrier_all();                                                   \
        for (int pe = 0; pe < n; pe++)                                         \
            shmem_##N##_atomic_xor(t, (T)((T)1 << 40 % (sizeof(T) * 8) | mine), pe); \
        shmem_barrier_all();                                                   \
        {                                                                      \
            T want = 0;                                                        \
            for (int p = 0; p < n; p++)                                        \
                want ^= (T)((T)1 << 40 % (sizeof(T) * 8) | (T)1 << (p % 31));  \
            SHT_CHECK(*t == want, "%s " #N "_atomic_xor %llx want %llx", where, \
                      (unsigned long long)*t, (unsigned long long)want);       \
        }                                                                      \
        shmem_barrier_all();                                                   \
        if (SHT_OMPI) {                                                        \
            (void)heap;                                                        \
            sht_skip(#N " fetching bitwise", "Open MPI 4.1.4 loses them (heap; own PE)"); \
            return;                                                            \
        }                                                                      \
        *t = 0;                                                                \
        shmem_barrier_all();                                                   \
        for (int pe = 0; pe < n; pe++) {                                       \
            T f = shmem_##N##_atomic_fetch_or(t, mine, pe);                    \
            SHT_CHECK((f & ~all) == 0, "%s " #N "_atomic_fetch_or fetched %llx", where, \
                      (unsigned long long)f);                                  \
        }                                                                      \
        shmem_barrier_all();                                                   \
        SHT_CHECK(*t == all, "%s " #N "_atomic_fetch_or %llx", where, (unsigned long long)*t); \
        shmem_barrier_all();                                                   \
        for (int pe = 0; pe < n; pe++) {                                       \
            T f = shmem_##N##_atomic_fetch_and(t, (T)~mine, pe);               \
            SHT_CHECK((f & ~all) == 0, "%s " #N "_atomic_fetch_and fetched %llx", where, \
                      (unsigned long long)f);                                  \
        }                                                                      \
        shmem_barrier_all();                                                   \
        SHT_CHECK(*t == 0, "%s " #N "_atomic_fetch_and %llx", where, (unsigned long long)*t); \
        shmem_barrier_all();                                                   \
        *t = (T)0x5a;                                                          \
        shmem_barrier_all();                                                   \
        T fx = shmem_##N##_atomic_fetch_xor(t, (T)0xff, (me + 1) % n);         \
        SHT_CHECK(fx == (T)0x5a, "%s " #N "_atomic_fetch_xor fetched %llx", where, \
                  (unsigned long long)fx);                                     \
        shmem_barrier_all();                                                   \
        SHT_CHECK(*t == (T)0xa5, "%s " #N "_atomic_fetch_xor %llx", where, (unsigned long long)*t); \
        shmem_barrier_all();                                                   \
    }
BIT_TYPES(BIT_TEST)

#if SHT_15
/* 1.5 non-blocking fetching AMOs: the fetched value lands at quiet. */
static long nbi_fetch[8];
#define NBI_TEST(T, N)                                                         \
    static void nbi_##N(T *t, const char *where)                               \
    {                                                                          \
        T f[8];                                                                \
        int right = (me + 1) % n;                                              \
        *t = 10;                                                               \
        shmem_barrier_all();                                                   \
        shmem_##N##_atomic_fetch_nbi(&f[0], t, right);                         \
        shmem_quiet();                                                         \
        SHT_CHECK(f[0] == 10, "%s " #N "_atomic_fetch_nbi %lld", where, (long long)f[0]); \
        shmem_barrier_all();                                                   \
        shmem_##N##_atomic_fetch_add_nbi(&f[1], t, (T)5, right);               \
        shmem_quiet();                                                         \
        shmem_barrier_all();                                                   \
        shmem_##N##_atomic_fetch_inc_nbi(&f[2], t, right);                     \
        shmem_quiet();                                                         \
        shmem_barrier_all();                                                   \
        shmem_##N##_atomic_swap_nbi(&f[3], t, (T)50, right);                   \
        shmem_quiet();                                                         \
        shmem_barrier_all();                                                   \
        shmem_##N##_atomic_compare_swap_nbi(&f[4], t, (T)50, (T)60, right);    \
        shmem_quiet();                                                         \
        shmem_barrier_all();                                                   \
        SHT_CHECK(f[1] == 10 && f[2] == 15 && f[3] == 16 && f[4] == 50 && *t == 60, \
                  "%s " #N " nbi: %lld %lld %lld %lld now %lld", where, (long long)f[1], \
                  (long long)f[2], (long long)f[3], (long long)f[4], (long long)*t); \
        shmem_barrier_all();                                                   \
    }
#define NBI_STD(T, N, B, S, O) NBI_TEST(T, N)
STD_TYPES(NBI_STD)
#endif

int main(void)
{
    sht_init("t_amo");
#if SHT_OMPI
    sht_skip("standard/extended AMOs on int32/int64/uint32/uint64/size/ptrdiff",
             "not declared by Open MPI 4.1.4");
#endif
    me = sht_me;
    n = sht_npes;

#define RUN_STD(T, N, B, S, O)                                                 \
    std_##N(&g_##N, "global");                                                 \
    {                                                                          \
        T *h = shmem_malloc(sizeof(T) * 4);                                    \
        std_##N(&h[1], "heap");                                                \
        shmem_free(h);                                                         \
    }
    STD_TYPES(RUN_STD)
    ext_float(&g_float, "global");
    ext_double(&g_double, "global");
    {
        float *hf = shmem_malloc(sizeof(float));
        double *hd = shmem_malloc(sizeof(double));
        ext_float(hf, "heap");
        ext_double(hd, "heap");
        shmem_free(hd);
        shmem_free(hf);
    }
#define RUN_STD_EXT(T, N, B, S, O) /* the extended ops ran inside std_ */
#define RUN_BIT(T, N)                                                          \
    bit_##N(&gb_##N, "global", 0);                                             \
    {                                                                          \
        T *h = shmem_malloc(sizeof(T) * 2);                                    \
        bit_##N(&h[1], "heap", 1);                                             \
        shmem_free(h);                                                         \
    }
    BIT_TYPES(RUN_BIT)
#if SHT_15
    (void)nbi_fetch;
#define RUN_NBI(T, N, B, S, O)                                                 \
    nbi_##N(&g2_##N, "global");                                                \
    {                                                                          \
        T *h = shmem_malloc(sizeof(T));                                        \
        nbi_##N(h, "heap");                                                    \
        shmem_free(h);                                                         \
    }
    STD_TYPES(RUN_NBI)
#else
#define UNUSED_G2(T, N, B, S, O) (void)g2_##N;
    STD_TYPES(UNUSED_G2)
#endif
    return sht_end();
}
