/* ring: every PE puts its number into its right neighbour's heap and
 * static buffers (putmem, long_p), reads the left neighbour back (getmem,
 * long_g), counts itself into PE 0 with long_atomic_fetch_add, checks
 * shmem_ptr, malloc/free and quiet/barrier_all. Exit status 1 on any
 * mismatch. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

static long counter;          /* .bss: symmetric static data */
static long gbuf[4] = {-1, -1, -1, -1}; /* .data */

#define CHECK(c, ...)                                                                 \
    do {                                                                              \
        if (!(c)) {                                                                   \
            fprintf(stderr, "ring: PE %d: ", shmem_my_pe());                          \
            fprintf(stderr, __VA_ARGS__);                                             \
            fprintf(stderr, "\n");                                                    \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;

    long *heap = shmem_malloc(16 * sizeof(long));
    CHECK(heap != NULL, "shmem_malloc failed");
    for (int i = 0; i < 16; i++)
        heap[i] = -1;
    shmem_barrier_all();

    long src[16];
    for (int i = 0; i < 16; i++)
        src[i] = me * 100 + i;
    shmem_putmem(heap, src, sizeof src, right);
    shmem_long_p(&gbuf[1], me, right);
    shmem_quiet();
    long old = shmem_long_atomic_fetch_add(&counter, 1, 0);
    CHECK(old >= 0 && old < n, "fetch_add returned %ld", old);
    shmem_barrier_all();

    for (int i = 0; i < 16; i++)
        CHECK(heap[i] == left * 100 + i, "heap[%d] = %ld, want %d", i, heap[i], left * 100 + i);
    CHECK(gbuf[1] == left, "gbuf[1] = %ld, want %d", gbuf[1], left);
    CHECK(gbuf[0] == -1, "gbuf[0] = %ld, want -1", gbuf[0]);
    if (me == 0)
        CHECK(counter == n, "counter = %ld, want %d", counter, n);

    long back[16];
    shmem_getmem(back, heap, sizeof back, right);
    for (int i = 0; i < 16; i++)
        CHECK(back[i] == me * 100 + i, "getmem from %d: [%d] = %ld", right, i, back[i]);
    CHECK(shmem_long_g(&gbuf[1], right) == me, "long_g of gbuf[1] on PE %d", right);
    CHECK(shmem_long_g(&counter, 0) == n, "long_g of counter on PE 0");

    /* shmem_ptr: the peer's heap is mapped here unless the job runs on
     * memory servers, where NULL is the honest answer. */
    long *p = shmem_ptr(heap, right);
    if (p != NULL)
        CHECK(p[3] == me * 100 + 3, "shmem_ptr view of PE %d: %ld", right, p[3]);
    CHECK(shmem_ptr(heap, me) == NULL || shmem_ptr(heap, me) == heap, "shmem_ptr(heap, me) != heap");
    CHECK(shmem_ptr(src, right) == NULL, "shmem_ptr of a stack address is not NULL");

    shmem_barrier_all();
    shmem_free(heap);
    if (me == 0)
        printf("ring: %d PEs OK%s\n", n, p ? " (mapped)" : " (data path)");
    shmem_finalize();
    return 0;
}
