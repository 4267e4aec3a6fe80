/*
 * t_wait: shmem_TYPE_wait_until with every comparison and shmem_TYPE_test,
 * on memory the left neighbour writes (p, atomic set) while this PE spins;
 * a handshake through a second variable keeps writer and waiter in step.
 * Every point-to-point sync type of 1.5 (1.4's short/ushort too), global
 * and heap. Also a counter that every PE increments, waited for with GE.
 * Spec: 1.4-compatible.
 */
#include "shtest.h"

static int right, left;

#define WAIT_TYPES(X)                                                        \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)         \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)  \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)     \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

static int gack; /* handshake: the waiter's step count, written to the writer */

#define WAIT_TEST(T, N)                                                        \
    static T gv_##N;                                                           \
    static void wait_##N(T *v, const char *where)                              \
    {                                                                          \
        /* step k: the writer (left) stores val[k]; we wait with cmp[k]; no \
         * step's condition holds for the previous step's value */         \
        static const int cmps[] = {SHMEM_CMP_EQ, SHMEM_CMP_NE, SHMEM_CMP_GT,   \
                                   SHMEM_CMP_GE, SHMEM_CMP_LT, SHMEM_CMP_LE,   \
                                   SHMEM_CMP_EQ, SHMEM_CMP_GE};                \
        static const long vals[] = {5, 6, 10, 11, 3, 2, 9, 20};                \
        static const long cmpv[] = {5, 5, 9, 11, 4, 2, 9, 19};                 \
        *v = 0;                                                                \
        gack = 0;                                                              \
        shmem_barrier_all();                                                   \
        for (int k = 0; k < 8; k++) {                                          \
            /* as writer: wait until right has finished step k-1 */            \
            shmem_int_wait_until(&gack, SHMEM_CMP_GE, k);                      \
            if (k % 2)                                                         \
                shmem_##N##_p(v, (T)vals[k], right);                           \
            else                                                               \
                shmem_##N##_put(v, &(T){(T)vals[k]}, 1, right);                \
            /* as waiter */                                                    \
            if (k >= 6) {                                                      \
                while (!shmem_##N##_test(v, cmps[k], (T)cmpv[k]))              \
                    sht_test_progress();                                       \
            } else {                                                           \
                shmem_##N##_wait_until(v, cmps[k], (T)cmpv[k]);                \
            }                                                                  \
            SHT_CHECK(*v == (T)vals[k], "%s " #N " step %d: %lld", where, k, (long long)*v); \
            shmem_int_p(&gack, k + 1, left);                                   \
        }                                                                      \
        shmem_barrier_all();                                                   \
        /* test on a condition that is false returns 0 */                      \
        SHT_CHECK(shmem_##N##_test(v, SHMEM_CMP_EQ, (T)77) == 0, "%s " #N "_test false", where); \
        shmem_barrier_all();                                                   \
    }
WAIT_TYPES(WAIT_TEST)

static long gcount;

int main(void)
{
    sht_init("t_wait");
    right = (sht_me + 1) % sht_npes;
    left = (sht_me + sht_npes - 1) % sht_npes;
#define RUN(T, N)                                                              \
    wait_##N(&gv_##N, "global");                                               \
    {                                                                          \
        T *h = shmem_malloc(sizeof(T));                                        \
        wait_##N(h, "heap");                                                   \
        shmem_free(h);                                                         \
    }
    WAIT_TYPES(RUN)

    /* everyone increments everyone; each waits for n increments */
    long *hc = shmem_calloc(1, sizeof(long));
    shmem_barrier_all();
    for (int pe = 0; pe < sht_npes; pe++) {
        shmem_long_atomic_inc(&gcount, pe);
        shmem_long_atomic_inc(hc, pe);
    }
    shmem_long_wait_until(&gcount, SHMEM_CMP_GE, sht_npes);
    shmem_long_wait_until(hc, SHMEM_CMP_EQ, sht_npes);
    SHT_CHECK(gcount == sht_npes && *hc == sht_npes, "counters %ld %ld", gcount, *hc);
    shmem_barrier_all();
    shmem_free(hc);
    return sht_end();
}
