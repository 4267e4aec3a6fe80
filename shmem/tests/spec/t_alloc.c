/*
 * t_alloc: shmem_malloc/calloc/align/realloc/free (and malloc_with_hints
 * under 1.5): symmetric results (a peer's put at the same address lands),
 * zeroing, alignment, realloc keeping contents, free(NULL), size 0, and
 * many allocate/free cycles.
 * Spec: 1.4-compatible (malloc_with_hints behind SHT_15; malloc(0) == NULL
 * skipped under Open MPI, which returns a pointer).
 */
#include "shtest.h"

static int right, left;

/* Every PE writes its number pattern into the right neighbour's block. */
static void check_symmetric(unsigned char *p, size_t n, const char *what)
{
    memset(p, 0, n);
    shmem_barrier_all();
    unsigned char *src = malloc(n);
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(sht_me * 7 + i * 13 + 1);
    shmem_putmem(p, src, n, right);
    shmem_barrier_all();
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(left * 7 + i * 13 + 1))
            bad++;
    SHT_CHECK(bad == 0, "%s: %zu of %zu bytes wrong after a peer's put", what, bad, n);
    free(src);
    shmem_barrier_all();
}

int main(void)
{
    sht_init("t_alloc");
    right = (sht_me + 1) % sht_npes;
    left = (sht_me + sht_npes - 1) % sht_npes;

    long *a = shmem_malloc(1000 * sizeof(long));
    SHT_CHECK(a != NULL, "malloc");
    check_symmetric((unsigned char *)a, 1000 * sizeof(long), "malloc");

    int *c = shmem_calloc(513, sizeof(int));
    SHT_CHECK(c != NULL, "calloc");
    int nz = 0;
    for (int i = 0; i < 513; i++)
        nz += c[i] != 0;
    SHT_CHECK(nz == 0, "calloc: %d non-zero ints", nz);
    check_symmetric((unsigned char *)c, 513 * sizeof(int), "calloc");

    size_t aligns[] = {8, 64, 256, 4096, 65536};
    void *al[5];
    for (int k = 0; k < 5; k++) {
        al[k] = shmem_align(aligns[k], 100 + k);
        SHT_CHECK(al[k] != NULL && ((uintptr_t)al[k] % aligns[k]) == 0,
                  "align(%zu) gave %p", aligns[k], al[k]);
        if (al[k])
            check_symmetric(al[k], 100 + k, "align");
    }

    /* realloc: grow keeps the old contents and stays symmetric. */
    char *r = shmem_malloc(100);
    for (int i = 0; i < 100; i++)
        r[i] = (char)(i + sht_me);
    shmem_barrier_all();
    char *r2 = shmem_realloc(r, 1 << 20);
    SHT_CHECK(r2 != NULL, "realloc grow");
    int kept = 1;
    for (int i = 0; i < 100 && r2; i++)
        kept &= r2[i] == (char)(i + sht_me);
    SHT_CHECK(kept, "realloc lost contents");
    if (r2)
        check_symmetric((unsigned char *)r2, 1 << 20, "realloc grow");
    char *r3 = shmem_realloc(r2, 50);
    SHT_CHECK(r3 != NULL, "realloc shrink");
    if (r3)
        check_symmetric((unsigned char *)r3, 50, "realloc shrink");
    /* realloc(NULL, n) is malloc */
    char *r4 = shmem_realloc(NULL, 300);
    SHT_CHECK(r4 != NULL, "realloc(NULL)");
    if (r4)
        check_symmetric((unsigned char *)r4, 300, "realloc(NULL)");

    shmem_free(NULL); /* no action */
#if SHT_OMPI
    sht_skip("malloc(0) == NULL", "Open MPI 4.1.4 returns a pointer");
#else
    SHT_CHECK(shmem_malloc(0) == NULL, "malloc(0) must be NULL");
    SHT_CHECK(shmem_calloc(0, 8) == NULL, "calloc(0, 8) must be NULL");
#endif

    /* Many cycles: allocation order identical on every PE keeps it symmetric. */
    void *blocks[16] = {0};
    for (int it = 0; it < 200; it++) {
        int k = (it * 7) % 16;
        if (blocks[k]) {
            shmem_free(blocks[k]);
            blocks[k] = NULL;
        } else {
            size_t n = 8 + (size_t)((it * 977) % 20000);
            blocks[k] = shmem_malloc(n);
            SHT_CHECK(blocks[k] != NULL, "cycle malloc %zu", n);
            if (blocks[k] && it % 20 == 0)
                check_symmetric(blocks[k], n, "cycle");
        }
    }
    for (int k = 0; k < 16; k++)
        shmem_free(blocks[k]);

    /* A large block: 8 MiB. */
    unsigned char *big = shmem_malloc(8 << 20);
    SHT_CHECK(big != NULL, "malloc 8 MiB");
    if (big)
        check_symmetric(big, 8 << 20, "8 MiB");
    shmem_free(big);

#if SHT_15
    long *h = shmem_malloc_with_hints(64 * sizeof(long), 0);
    SHT_CHECK(h != NULL, "malloc_with_hints(0)");
    if (h)
        check_symmetric((unsigned char *)h, 64 * sizeof(long), "malloc_with_hints(0)");
    long *h2 = shmem_malloc_with_hints(64 * sizeof(long),
                                       SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
    SHT_CHECK(h2 != NULL, "malloc_with_hints(ATOMICS|SIGNAL)");
    if (h2) {
        h2[0] = 0;
        shmem_barrier_all();
        shmem_long_atomic_add(&h2[0], sht_me + 1, 0);
        shmem_barrier_all();
        if (sht_me == 0)
            SHT_CHECK(h2[0] == (long)sht_npes * (sht_npes + 1) / 2, "hinted atomic %ld", h2[0]);
    }
    SHT_CHECK(shmem_malloc_with_hints(0, 0) == NULL, "malloc_with_hints(0 bytes)");
    shmem_free(h);
    shmem_free(h2);
#endif
    for (int k = 0; k < 5; k++)
        shmem_free(al[k]);
    shmem_free(r3);
    shmem_free(r4);
    shmem_free(c);
    shmem_free(a);
    return sht_end();
}
