/*
 * t_deprecated: the pre-1.2 names benchmarks still use (start_pes,
 * _my_pe, _num_pes, shmalloc, shfree, shmemalign, shrealloc) and the
 * deprecated 1.2 atomics OSU's osu_oshm_atomics calls
 * ({int,long,longlong}_{add,inc,fadd,finc,swap,cswap,fetch,set}).
 * They are declared unless SHMEM_NO_DEPRECATED is defined (ours); Open MPI
 * declares them in shmem-compat.h.
 * Spec: 1.4-compatible (int cswap skipped under Open MPI 4.1.4).
 */
#include "shtest.h"
#if SHT_OMPI
#include <shmem-compat.h>
#endif

static long gl;
static int gi;
static long long gll;

int main(void)
{
    start_pes(0);
    sht_started("t_deprecated");
    SHT_CHECK(_my_pe() == shmem_my_pe() && _num_pes() == shmem_n_pes(), "_my_pe/_num_pes");
    int n = _num_pes(), me = _my_pe();
    long *a = shmalloc(100 * sizeof(long));
    SHT_CHECK(a != NULL, "shmalloc");
    a[0] = 0;
    shmem_barrier_all();
    shmem_long_p(&a[0], me + 1, (me + 1) % n);
    shmem_barrier_all();
    SHT_CHECK(a[0] == (me + n - 1) % n + 1, "put into shmalloc'ed %ld", a[0]);
    long *al = shmemalign(256, 64);
    SHT_CHECK(al && (uintptr_t)al % 256 == 0, "shmemalign");
    a = shrealloc(a, 1000 * sizeof(long));
    SHT_CHECK(a && a[0] == (me + n - 1) % n + 1, "shrealloc kept contents");
    shmem_barrier_all();

#define OLD_AMO(T, N, G, SKIPCSWAP)                                            \
    G = 0;                                                                     \
    shmem_barrier_all();                                                       \
    for (int pe = 0; pe < n; pe++) {                                           \
        shmem_##N##_add(&G, 2, pe);                                            \
        shmem_##N##_inc(&G, pe);                                               \
        (void)shmem_##N##_fadd(&G, 1, pe);                                     \
        (void)shmem_##N##_finc(&G, pe);                                        \
    }                                                                          \
    shmem_barrier_all();                                                       \
    SHT_CHECK(G == (T)5 * n, #N " add/inc/fadd/finc: %lld", (long long)G);     \
    SHT_CHECK(shmem_##N##_fetch(&G, (me + 1) % n) == (T)5 * n, #N "_fetch");   \
    shmem_barrier_all();                                                       \
    shmem_##N##_set(&G, (T)me, (me + 1) % n);                                  \
    shmem_barrier_all();                                                       \
    SHT_CHECK(G == (T)((me + n - 1) % n), #N "_set");                          \
    shmem_barrier_all();                                                       \
    SHT_CHECK(shmem_##N##_swap(&G, (T)50, (me + 1) % n) == (T)me, #N "_swap"); \
    shmem_barrier_all();                                                       \
    if (SKIPCSWAP) {                                                           \
        sht_skip(#N "_cswap", "32-bit cswap smashes the stack in Open MPI 4.1.4"); \
    } else {                                                                   \
        SHT_CHECK(shmem_##N##_cswap(&G, (T)50, (T)60, (me + 1) % n) == (T)50, #N "_cswap"); \
        shmem_barrier_all();                                                   \
        SHT_CHECK(G == 60, #N "_cswap result %lld", (long long)G);             \
    }                                                                          \
    shmem_barrier_all();

    OLD_AMO(int, int, gi, SHT_OMPI)
    OLD_AMO(long, long, gl, 0)
    OLD_AMO(long long, longlong, gll, 0)
    shfree(al);
    shfree(a);
    return sht_end();
}
