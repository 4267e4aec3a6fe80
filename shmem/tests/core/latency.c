/* latency: a quick look at the fast path, not a test (test-shmem-core does
 * not run it; shmem/bench is the benchmark). PE 0 times, against PE 1:
 * 8-byte putmem/long_p/getmem/long_g, fetch_add, compare_swap, long_p to a
 * global, 1 MiB putmem/getmem next to a local 1 MiB memcpy; then every PE
 * times barrier_all. Three rounds.
 *   make build/shmem-core/latency && build/bin/oshrun -np 2 build/shmem-core/latency */
#define _POSIX_C_SOURCE 199309L
#include <shmem.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

#define MIB (1 << 20)
static long g;
static char lbig[MIB], l2[MIB];

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    long *x = shmem_malloc(64);
    char *big = shmem_malloc(MIB);
    shmem_barrier_all();
    if (me == 0 && shmem_n_pes() > 1) {
        const int n = 2000000;
        long v = 0;
        double t;
        for (int r = 0; r < 3; r++) {
            t = now();
            for (int i = 0; i < n; i++)
                shmem_putmem(x, &v, 8, 1);
            shmem_quiet();
            printf("putmem 8 B        %.4f us\n", (now() - t) / n);
            t = now();
            for (int i = 0; i < n; i++)
                shmem_long_p(x, i, 1);
            printf("long_p            %.4f us\n", (now() - t) / n);
            t = now();
            for (int i = 0; i < n; i++)
                shmem_getmem(&v, x, 8, 1);
            printf("getmem 8 B        %.4f us\n", (now() - t) / n);
            t = now();
            for (int i = 0; i < n; i++)
                v += shmem_long_g(x, 1);
            printf("long_g            %.4f us\n", (now() - t) / n);
            t = now();
            for (int i = 0; i < n; i++)
                v += shmem_long_atomic_fetch_add(x, 1, 1);
            printf("fetch_add         %.4f us\n", (now() - t) / n);
            t = now();
            for (int i = 0; i < n; i++)
                v += shmem_long_atomic_compare_swap(x, i, i + 1, 1);
            printf("compare_swap      %.4f us\n", (now() - t) / n);
            t = now();
            for (int i = 0; i < n; i++)
                shmem_long_p(&g, i, 1);
            printf("long_p (global)   %.4f us\n", (now() - t) / n);
            t = now();
            for (int i = 0; i < 200; i++)
                shmem_putmem(big, lbig, MIB, 1);
            printf("putmem 1 MiB      %.2f us\n", (now() - t) / 200);
            t = now();
            for (int i = 0; i < 200; i++)
                shmem_getmem(lbig, big, MIB, 1);
            printf("getmem 1 MiB      %.2f us\n", (now() - t) / 200);
            t = now();
            for (int i = 0; i < 200; i++) {
                memcpy(l2, lbig, MIB);
                __asm__ __volatile__("" ::"r"(l2) : "memory");
            }
            printf("local memcpy 1 MiB %.2f us\n", (now() - t) / 200);
        }
        if (v == 42)
            printf(" \n");
    }
    shmem_barrier_all();
    double t = now();
    for (int i = 0; i < 20000; i++)
        shmem_barrier_all();
    if (me == 0)
        printf("barrier_all       %.3f us\n", (now() - t) / 20000);
    shmem_free(big);
    shmem_free(x);
    shmem_finalize();
    return 0;
}
