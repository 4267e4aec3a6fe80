/* heap: the symmetric heap's allocator with SHMEM_SYMMETRIC_SIZE=1.5M (set
 * by the test target): same addresses on every PE, malloc(0) is NULL,
 * exhaustion gives NULL on every PE (not an abort), free makes room
 * again, calloc zeroes, align aligns, realloc keeps the contents and
 * malloc_with_hints works. Exit status 1 on any mismatch. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;
#define CHECK(c, ...)                                                         \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "heap: PE %d line %d: ", shmem_my_pe(), __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
            fails++;                                                          \
        }                                                                     \
    } while (0)

/* The same address on every PE: PE 0's value, read by everyone. */
static uintptr_t where;
static void same_everywhere(void *p, const char *what)
{
    if (shmem_my_pe() == 0)
        where = (uintptr_t)p;
    shmem_barrier_all();
    uintptr_t w = (uintptr_t)shmem_long_g((long *)&where, 0);
    CHECK(w == (uintptr_t)p, "%s: %p here, %p on PE 0", what, p, (void *)w);
    shmem_barrier_all();
}

int main(void)
{
    const char *env = getenv("SHMEM_SYMMETRIC_SIZE");
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(shmem_malloc(0) == NULL, "malloc(0) is not NULL");

    char *a = shmem_malloc(1000);
    same_everywhere(a, "malloc");
    char *b = shmem_align(4096, 100);
    same_everywhere(b, "align");
    CHECK(((uintptr_t)b & 4095) == 0, "align(4096): %p", (void *)b);
    CHECK(shmem_align(3, 8) == NULL, "align(3) is not NULL");

    if (env != NULL && strcmp(env, "1.5M") == 0) {
        /* 1.5 MiB: a 1 MiB block fits once, a second does not. */
        char *big = shmem_malloc(1 << 20);
        CHECK(big != NULL, "1 MiB of a 1.5 MiB heap");
        char *more = shmem_malloc(1 << 20);
        CHECK(more == NULL, "a second 1 MiB block in a 1.5 MiB heap");
        shmem_free(big);
        big = shmem_malloc(1 << 20);
        CHECK(big != NULL, "1 MiB again after free");
        shmem_free(big);
    }

    long *c = shmem_calloc(100, sizeof(long));
    same_everywhere(c, "calloc");
    for (int i = 0; i < 100; i++)
        CHECK(c[i] == 0, "calloc[%d] = %ld", i, c[i]);
    for (int i = 0; i < 100; i++)
        c[i] = me * 1000 + i;
    shmem_barrier_all();
    long *r = shmem_realloc(c, 5000 * sizeof(long));
    same_everywhere(r, "realloc");
    for (int i = 0; i < 100; i++)
        CHECK(r[i] == me * 1000 + i, "realloc kept [%d] = %ld", i, r[i]);
    /* The moved block is symmetric: a peer's copy holds the peer's data. */
    CHECK(shmem_long_g(&r[7], (me + 1) % n) == ((me + 1) % n) * 1000 + 7, "realloc'd block on a peer");

    void *hint = shmem_malloc_with_hints(256, SHMEM_MALLOC_ATOMICS_REMOTE);
    same_everywhere(hint, "malloc_with_hints");
    shmem_free(hint);
    shmem_free(r);
    shmem_free(b);
    shmem_free(a);
    shmem_free(NULL);
    if (me == 0 && fails == 0)
        printf("heap: %d PEs OK\n", n);
    shmem_finalize();
    return fails != 0;
}
