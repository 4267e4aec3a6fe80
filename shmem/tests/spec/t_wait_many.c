/*
 * t_wait_many: the 1.5 multi-variable point-to-point synchronization:
 * wait_until_all/any/some, their _vector forms, test, test_all/any/some
 * and _vector, with status masks, on memory every PE writes (each PE owns
 * one slot in every PE's array), for every 1.5 sync type, global and heap.
 * Spec: 1.5 only.
 */
#include "shtest.h"

#define MAXPE 64

#define SYNC_TYPES(X)                                                        \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)   \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)                 \
    X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32)                  \
    X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

#define MANY_TEST(T, N)                                                        \
    static T g_##N[MAXPE];                                                     \
    static void many_##N(T *v, const char *where)                              \
    {                                                                          \
        int n = sht_npes, me = sht_me;                                         \
        int status[MAXPE];                                                     \
        size_t idx[MAXPE];                                                     \
        T cmpv[MAXPE];                                                         \
        /* all: every PE sets its slot to 1 everywhere */                      \
        for (int i = 0; i < n; i++)                                            \
            v[i] = 0;                                                          \
        shmem_barrier_all();                                                   \
        for (int pe = 0; pe < n; pe++)                                         \
            shmem_##N##_p(&v[me], (T)1, pe);                                   \
        shmem_##N##_wait_until_all(v, n, NULL, SHMEM_CMP_EQ, (T)1);            \
        for (int i = 0; i < n; i++)                                            \
            SHT_CHECK(v[i] == 1, "%s " #N "_wait_until_all [%d]", where, i);   \
        shmem_barrier_all();                                                   \
        /* any: returns an index whose condition holds and is not masked */    \
        for (int i = 0; i < n; i++)                                            \
            v[i] = 0;                                                          \
        shmem_barrier_all();                                                   \
        for (int pe = 0; pe < n; pe++)                                         \
            shmem_##N##_p(&v[me], (T)(me + 2), pe);                            \
        size_t a = shmem_##N##_wait_until_any(v, n, NULL, SHMEM_CMP_GT, (T)1); \
        SHT_CHECK(a < (size_t)n && v[a] == (T)(a + 2), "%s " #N "_wait_until_any -> %zu", where, a); \
        /* with a mask leaving only the last slot */                           \
        for (int i = 0; i < n; i++)                                            \
            status[i] = i != n - 1;                                            \
        a = shmem_##N##_wait_until_any(v, n, status, SHMEM_CMP_NE, (T)0);      \
        SHT_CHECK(a == (size_t)(n - 1), "%s " #N "_wait_until_any masked -> %zu", where, a); \
        /* all masked: SIZE_MAX, no wait */                                    \
        for (int i = 0; i < n; i++)                                            \
            status[i] = 1;                                                     \
        a = shmem_##N##_wait_until_any(v, n, status, SHMEM_CMP_EQ, (T)99);     \
        SHT_CHECK(a == SIZE_MAX, "%s " #N "_wait_until_any all masked -> %zu", where, a); \
        /* some: collect every index over repeated calls, masking found ones */ \
        for (int i = 0; i < n; i++)                                            \
            status[i] = 0;                                                     \
        int found = 0;                                                         \
        while (found < n) {                                                    \
            size_t c = shmem_##N##_wait_until_some(v, n, idx, status, SHMEM_CMP_GE, (T)2); \
            SHT_CHECK(c >= 1 && c <= (size_t)(n - found), "%s " #N "_wait_until_some count %zu", where, c); \
            if (c < 1 || c > (size_t)(n - found))                              \
                break;                                                         \
            for (size_t k = 0; k < c; k++) {                                   \
                SHT_CHECK(idx[k] < (size_t)n && !status[idx[k]] && v[idx[k]] == (T)(idx[k] + 2), \
                          "%s " #N "_wait_until_some index %zu", where, idx[k]); \
                if (idx[k] < (size_t)n && !status[idx[k]]) {                   \
                    status[idx[k]] = 1;                                        \
                    found++;                                                   \
                }                                                              \
            }                                                                  \
        }                                                                      \
        shmem_barrier_all();                                                   \
        /* vector forms: slot i must reach i + 10 */                           \
        for (int i = 0; i < n; i++) {                                          \
            v[i] = 0;                                                          \
            cmpv[i] = (T)(i + 10);                                             \
        }                                                                      \
        shmem_barrier_all();                                                   \
        for (int pe = 0; pe < n; pe++)                                         \
            shmem_##N##_atomic_set(&v[me], (T)(me + 10), pe);             \
        shmem_##N##_wait_until_all_vector(v, n, NULL, SHMEM_CMP_EQ, cmpv);     \
        for (int i = 0; i < n; i++)                                            \
            SHT_CHECK(v[i] == (T)(i + 10), "%s " #N "_wait_until_all_vector [%d]", where, i); \
        a = shmem_##N##_wait_until_any_vector(v, n, NULL, SHMEM_CMP_GE, cmpv); \
        SHT_CHECK(a < (size_t)n, "%s " #N "_wait_until_any_vector -> %zu", where, a); \
        size_t c = shmem_##N##_wait_until_some_vector(v, n, idx, NULL, SHMEM_CMP_LE, cmpv); \
        SHT_CHECK(c == (size_t)n, "%s " #N "_wait_until_some_vector -> %zu", where, c); \
        /* test forms: true now */                                             \
        SHT_CHECK(shmem_##N##_test(&v[0], SHMEM_CMP_EQ, (T)10) == 1, "%s " #N "_test", where); \
        SHT_CHECK(shmem_##N##_test_all(v, n, NULL, SHMEM_CMP_GE, (T)10) == 1, "%s " #N "_test_all", where); \
        SHT_CHECK(shmem_##N##_test_all_vector(v, n, NULL, SHMEM_CMP_EQ, cmpv) == 1, \
                  "%s " #N "_test_all_vector", where);                         \
        a = shmem_##N##_test_any(v, n, NULL, SHMEM_CMP_EQ, (T)(n + 9));        \
        SHT_CHECK(a == (size_t)(n - 1), "%s " #N "_test_any -> %zu", where, a); \
        a = shmem_##N##_test_any_vector(v, n, NULL, SHMEM_CMP_NE, cmpv);       \
        SHT_CHECK(a == SIZE_MAX, "%s " #N "_test_any_vector none -> %zu", where, a); \
        c = shmem_##N##_test_some(v, n, idx, NULL, SHMEM_CMP_LT, (T)11);       \
        SHT_CHECK(c == 1 && idx[0] == 0, "%s " #N "_test_some -> %zu", where, c); \
        c = shmem_##N##_test_some_vector(v, n, idx, NULL, SHMEM_CMP_EQ, cmpv); \
        SHT_CHECK(c == (size_t)n, "%s " #N "_test_some_vector -> %zu", where, c); \
        /* false now */                                                        \
        SHT_CHECK(shmem_##N##_test(&v[0], SHMEM_CMP_GT, (T)10) == 0, "%s " #N "_test false", where); \
        SHT_CHECK(shmem_##N##_test_all(v, n, NULL, SHMEM_CMP_GT, (T)10) == 0, "%s " #N "_test_all false", where); \
        SHT_CHECK(shmem_##N##_test_some(v, n, idx, NULL, SHMEM_CMP_GT, (T)200) == 0, \
                  "%s " #N "_test_some false", where);                         \
        shmem_barrier_all();                                                   \
        /* test_any polled until a peer's write lands */                       \
        for (int i = 0; i < n; i++)                                            \
            v[i] = 0;                                                          \
        shmem_barrier_all();                                                   \
        shmem_##N##_p(&v[me], (T)5, (me + 1) % n);                             \
        size_t got;                                                            \
        while ((got = shmem_##N##_test_any(v, n, NULL, SHMEM_CMP_EQ, (T)5)) == SIZE_MAX) \
            ;                                                                  \
        SHT_CHECK(got == (size_t)((me + n - 1) % n), "%s " #N "_test_any polled -> %zu", where, got); \
        while (!shmem_##N##_test_all(v, 1, NULL, SHMEM_CMP_GE, (T)0))          \
            ;                                                                  \
        shmem_barrier_all();                                                   \
    }
SYNC_TYPES(MANY_TEST)

int main(void)
{
    sht_init("t_wait_many");
    if (sht_npes > MAXPE) {
        sht_skip("everything", "more than 64 PEs");
        return sht_end();
    }
#define RUN(T, N)                                                              \
    many_##N(g_##N, "global");                                                 \
    {                                                                          \
        T *h = shmem_malloc(sizeof(T) * MAXPE);                                \
        many_##N(h, "heap");                                                   \
        shmem_free(h);                                                         \
    }
    SYNC_TYPES(RUN)
    return sht_end();
}
