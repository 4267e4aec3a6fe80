/* atomics: every OpenSHMEM 1.5 atomic on every type of its table, on a
 * static global and on a heap object of PE 0, from every PE at once;
 * fetching and non-fetching, _nbi and ctx forms, and the deprecated
 * names. Exit status 1 on any mismatch. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

static int fails;
#define CHECK(c, ...)                                                            \
    do {                                                                         \
        if (!(c)) {                                                              \
            fprintf(stderr, "atomics: PE %d line %d: ", shmem_my_pe(), __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                        \
            fprintf(stderr, "\n");                                               \
            fails++;                                                             \
        }                                                                        \
    } while (0)

/* Standard AMO: inc, add, fetch_inc, fetch_add (+ _nbi, ctx) from every
 * PE, then compare_swap races (one winner), then set/fetch/swap. */
#define STD(T, N)                                                                                 \
    static T g_##N[3];                                                                            \
    static void test_##N(T *h)                                                                    \
    {                                                                                             \
        int me = shmem_my_pe(), n = shmem_n_pes();                                                \
        T *ts[2] = {g_##N, h};                                                                    \
        for (int w = 0; w < 2; w++) {                                                             \
            T *t = ts[w], f;                                                                      \
            shmem_##N##_atomic_inc(&t[0], 0);                                                     \
            shmem_##N##_atomic_add(&t[0], (T)2, 0);                                               \
            T a = shmem_##N##_atomic_fetch_inc(&t[0], 0);                                         \
            T b = shmem_##N##_atomic_fetch_add(&t[0], (T)3, 0);                                   \
            shmem_##N##_atomic_fetch_add_nbi(&f, &t[0], (T)1, 0);                                 \
            shmem_ctx_##N##_atomic_add(SHMEM_CTX_DEFAULT, &t[0], (T)1, 0);                        \
            shmem_quiet();                                                                        \
            CHECK(a < (T)(9 * n) && b < (T)(9 * n) && f < (T)(9 * n), #N " fetches %lld %lld %lld", \
                  (long long)a, (long long)b, (long long)f);                                      \
            T old = shmem_##N##_atomic_compare_swap(&t[1], (T)0, (T)(me + 1), 0);                \
            shmem_barrier_all();                                                                  \
            T v = shmem_##N##_atomic_fetch(&t[0], 0);                                             \
            CHECK(v == (T)(9 * n), #N " sum %lld, want %d", (long long)v, 9 * n);                 \
            T won = shmem_##N##_atomic_fetch(&t[1], 0);                                           \
            CHECK(won >= 1 && won <= (T)n, #N " cswap winner %lld", (long long)won);              \
            CHECK((old == 0) == (won == (T)(me + 1)), #N " cswap old %lld", (long long)old);      \
            shmem_barrier_all();                                                                  \
            if (me == 0) {                                                                        \
                shmem_##N##_atomic_set(&t[2], (T)5, n - 1);                                       \
                T s = shmem_##N##_atomic_swap(&t[2], (T)6, n - 1);                                \
                CHECK(s == 5, #N " swap old %lld", (long long)s);                                 \
                shmem_##N##_atomic_compare_swap_nbi(&f, &t[2], (T)6, (T)7, n - 1);                \
                shmem_quiet();                                                                    \
                CHECK(f == 6 && shmem_##N##_atomic_fetch(&t[2], n - 1) == 7, #N " cswap_nbi");    \
            }                                                                                     \
            shmem_barrier_all();                                                                  \
            if (me == n - 1)                                                                      \
                CHECK(t[2] == 7, #N " local view %lld", (long long)t[2]);                         \
        }                                                                                         \
    }

/* Bitwise AMO: each PE sets its bit with fetch_or, clears with and, flips
 * a second word with xor. */
#define BIT(T, N)                                                                               \
    static T gb_##N[2];                                                                         \
    static void testbit_##N(T *h)                                                               \
    {                                                                                           \
        int me = shmem_my_pe(), n = shmem_n_pes();                                              \
        T *ts[2] = {gb_##N, h};                                                                 \
        for (int w = 0; w < 2; w++) {                                                           \
            T *t = ts[w], f;                                                                    \
            T bit = (T)1 << me;                                                                 \
            (void)shmem_##N##_atomic_fetch_or(&t[0], bit, 0);                                   \
            shmem_##N##_atomic_xor(&t[1], bit, 0);                                              \
            shmem_##N##_atomic_fetch_xor_nbi(&f, &t[1], (T)0, 0);                               \
            shmem_barrier_all();                                                                \
            T all = (T)(((T)1 << n) - 1);                                                       \
            CHECK(shmem_##N##_atomic_fetch(&t[0], 0) == all, #N " or");                         \
            CHECK(shmem_##N##_atomic_fetch(&t[1], 0) == all, #N " xor");                        \
            shmem_barrier_all();                                                                \
            shmem_##N##_atomic_and(&t[0], (T)~bit, 0);                                          \
            T o = shmem_ctx_##N##_atomic_fetch_and(SHMEM_CTX_DEFAULT, &t[1], (T)~bit, 0);       \
            CHECK((o & bit) == bit, #N " fetch_and old");                                       \
            shmem_barrier_all();                                                                \
            CHECK(shmem_##N##_atomic_fetch(&t[0], 0) == 0 && shmem_##N##_atomic_fetch(&t[1], 0) == 0, \
                  #N " and");                                                                   \
            shmem_barrier_all();                                                                \
        }                                                                                       \
    }

/* Extended AMO on floating point: set, fetch, swap. */
#define EXT(T, N)                                                                      \
    static T ge_##N;                                                                   \
    static void testext_##N(T *h)                                                      \
    {                                                                                  \
        int me = shmem_my_pe(), n = shmem_n_pes();                                     \
        T *ts[2] = {&ge_##N, h};                                                       \
        for (int w = 0; w < 2; w++) {                                                  \
            T *t = ts[w];                                                              \
            if (me == 0)                                                               \
                shmem_##N##_atomic_set(t, (T)0.5, n - 1);                              \
            shmem_barrier_all();                                                       \
            if (me == 0) {                                                             \
                T o = shmem_##N##_atomic_swap(t, (T)1.25, n - 1);                      \
                CHECK(o == (T)0.5, #N " swap %g", (double)o);                          \
                CHECK(shmem_##N##_atomic_fetch(t, n - 1) == (T)1.25, #N " fetch");     \
                CHECK(shmem_##N##_fetch(t, n - 1) == (T)1.25, #N " deprecated fetch"); \
            }                                                                          \
            shmem_barrier_all();                                                       \
        }                                                                              \
    }

STD(int, int)
STD(long, long)
STD(long long, longlong)
STD(unsigned int, uint)
STD(unsigned long, ulong)
STD(unsigned long long, ulonglong)
STD(int32_t, int32)
STD(int64_t, int64)
STD(uint32_t, uint32)
STD(uint64_t, uint64)
STD(size_t, size)
STD(ptrdiff_t, ptrdiff)
BIT(unsigned int, uint)
BIT(unsigned long, ulong)
BIT(unsigned long long, ulonglong)
BIT(int32_t, int32)
BIT(int64_t, int64)
BIT(uint32_t, uint32)
BIT(uint64_t, uint64)
EXT(float, float)
EXT(double, double)

static int dep;

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    char *h = shmem_calloc(64, 64);
    int k = 0;
#define H(T) ((T *)(h + 64 * k++))
    test_int(H(int));
    test_long(H(long));
    test_longlong(H(long long));
    test_uint(H(unsigned));
    test_ulong(H(unsigned long));
    test_ulonglong(H(unsigned long long));
    test_int32(H(int32_t));
    test_int64(H(int64_t));
    test_uint32(H(uint32_t));
    test_uint64(H(uint64_t));
    test_size(H(size_t));
    test_ptrdiff(H(ptrdiff_t));
    testbit_uint(H(unsigned));
    testbit_ulong(H(unsigned long));
    testbit_ulonglong(H(unsigned long long));
    testbit_int32(H(int32_t));
    testbit_int64(H(int64_t));
    testbit_uint32(H(uint32_t));
    testbit_uint64(H(uint64_t));
    testext_float(H(float));
    testext_double(H(double));

    /* Deprecated names on int. */
    shmem_int_add(&dep, 2, 0);
    shmem_int_inc(&dep, 0);
    (void)shmem_int_fadd(&dep, 1, 0);
    (void)shmem_int_finc(&dep, 0);
    shmem_barrier_all();
    CHECK(shmem_int_g(&dep, 0) == 5 * n, "deprecated int atomics: %d", shmem_int_g(&dep, 0));
    shmem_barrier_all();
    if (me == 0) {
        CHECK(shmem_int_cswap(&dep, 5 * n, -1, 0) == 5 * n, "int_cswap");
        CHECK(shmem_int_swap(&dep, 3, 0) == -1, "int_swap");
    }
    shmem_barrier_all();
    shmem_free(h);
    if (me == 0 && fails == 0)
        printf("atomics: %d PEs OK\n", n);
    shmem_finalize();
    return fails != 0;
}
