/*
 * t_generic_bitwise: the C11 generic bitwise atomics (shmem_atomic_and/or/
 * xor and their fetch_ forms) on the fixed-size types the 1.5 bitwise AMO
 * table lists: int32_t, int64_t, uint32_t, uint64_t (on LP64 the first two
 * are int and long, so the generic selection must accept int and long).
 * Spec: 1.5 only.
 */
#include "shtest.h"

static int32_t g32;
static int64_t g64;
static uint32_t gu32;
static uint64_t gu64;

#define BITWISE(T, G)                                                          \
    do {                                                                       \
        int right = (sht_me + 1) % sht_npes;                                   \
        G = 0;                                                                 \
        shmem_barrier_all();                                                   \
        shmem_atomic_or(&G, (T)5, right);                                      \
        shmem_barrier_all();                                                   \
        T old = shmem_atomic_fetch_and(&G, (T)4, right);                       \
        shmem_barrier_all();                                                   \
        SHT_CHECK(old == 5 && G == 4, #T " generic or/fetch_and %lld", (long long)G); \
        shmem_barrier_all();                                                   \
        old = shmem_atomic_fetch_xor(&G, (T)6, right);                         \
        shmem_barrier_all();                                                   \
        shmem_atomic_xor(&G, (T)1, right);                                     \
        shmem_atomic_and(&G, (T)7, right);                                     \
        old = shmem_atomic_fetch_or(&G, (T)8, right);                          \
        shmem_barrier_all();                                                   \
        SHT_CHECK(old == 3 && G == 11, #T " generic xor/and/fetch_or %lld", (long long)G); \
        shmem_barrier_all();                                                   \
    } while (0)

int main(void)
{
    sht_init("t_generic_bitwise");
    BITWISE(int32_t, g32);
    BITWISE(int64_t, g64);
    BITWISE(uint32_t, gu32);
    BITWISE(uint64_t, gu64);
    return sht_end();
}
