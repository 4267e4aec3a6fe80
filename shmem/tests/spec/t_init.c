/*
 * t_init: shmem_init/finalize, my_pe/n_pes, info_get_version/name,
 * pe_accessible, addr_accessible, ptr, query_thread.
 * Spec: 1.4-compatible (the 1.5 parts are behind SHT_15).
 */
#include "shtest.h"

static long g_word = 42;         /* .data */
static long g_arr[8];            /* .bss */

int main(void)
{
    int major = -1, minor = -1;
    char name[SHMEM_MAX_NAME_LEN];
    long local = 0;

    sht_init("t_init");
    SHT_CHECK(sht_npes >= 1, "n_pes %d", sht_npes);
    SHT_CHECK(sht_me >= 0 && sht_me < sht_npes, "my_pe %d of %d", sht_me, sht_npes);

    shmem_info_get_version(&major, &minor);
    SHT_CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION,
              "info_get_version %d.%d, header %d.%d", major, minor,
              SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
    SHT_CHECK(major == 1 && minor >= 4, "version %d.%d", major, minor);
#if !SHT_OMPI
    SHT_CHECK(SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION == 5,
              "our header must say 1.5, says %d.%d", SHMEM_MAJOR_VERSION,
              SHMEM_MINOR_VERSION);
#endif
    memset(name, 0x7f, sizeof name);
    shmem_info_get_name(name);
    SHT_CHECK(memchr(name, 0, sizeof name) != NULL, "info_get_name not terminated");
    if (memchr(name, 0, sizeof name)) {
        SHT_CHECK(strlen(name) > 0, "info_get_name empty");
        SHT_CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0,
                  "info_get_name '%s' vs SHMEM_VENDOR_STRING '%s'", name,
                  SHMEM_VENDOR_STRING);
    }

    for (int pe = 0; pe < sht_npes; pe++)
        SHT_CHECK(shmem_pe_accessible(pe) == 1, "pe_accessible(%d)", pe);
    SHT_CHECK(shmem_pe_accessible(-1) == 0, "pe_accessible(-1)");
    SHT_CHECK(shmem_pe_accessible(sht_npes) == 0, "pe_accessible(n_pes)");

    long *heap = shmem_malloc(16 * sizeof(long));
    SHT_CHECK(heap != NULL, "shmem_malloc");
    for (int pe = 0; pe < sht_npes; pe++) {
        SHT_CHECK(shmem_addr_accessible(heap, pe) == 1, "addr_accessible(heap, %d)", pe);
        SHT_CHECK(shmem_addr_accessible(&g_word, pe) == 1, "addr_accessible(.data, %d)", pe);
        SHT_CHECK(shmem_addr_accessible(&g_arr[3], pe) == 1, "addr_accessible(.bss, %d)", pe);
    }
    /* A stack variable is not symmetric: not accessible, and no abort. */
    SHT_CHECK(shmem_addr_accessible(&local, (sht_me + 1) % sht_npes) == 0,
              "addr_accessible(stack) must be 0");

    /* shmem_ptr to oneself is the local address. */
    SHT_CHECK(shmem_ptr(heap, sht_me) == heap, "shmem_ptr(heap, me) %p vs %p",
              shmem_ptr(heap, sht_me), (void *)heap);
    /* A peer's heap on this host: when shmem_ptr gives an address, stores
     * through it are the peer's memory. Our implementation maps peers on
     * one host, so it must give one. */
    int right = (sht_me + 1) % sht_npes, left = (sht_me + sht_npes - 1) % sht_npes;
    heap[0] = -1;
    g_arr[0] = -1;
    shmem_barrier_all();
    long *rp = shmem_ptr(heap, right);
#if !SHT_OMPI
    /* (not when run.sh put the heaps on memory servers: no mapping then) */
    if (!getenv("SHTEST_DATAPATH") || !*getenv("SHTEST_DATAPATH"))
        SHT_CHECK(rp != NULL, "shmem_ptr(heap, right) NULL on one host");
#endif
    if (rp) {
        rp[0] = 1000 + sht_me;
        rp[1] = 2000 + sht_me;
    } else {
        shmem_long_p(&heap[0], 1000 + sht_me, right);
        shmem_long_p(&heap[1], 2000 + sht_me, right);
    }
    long *gp = shmem_ptr(&g_arr[0], right);
    if (gp)
        gp[0] = 3000 + sht_me;
    else
        shmem_long_p(&g_arr[0], 3000 + sht_me, right);
    shmem_barrier_all();
    SHT_CHECK(heap[0] == 1000 + left && heap[1] == 2000 + left,
              "store through shmem_ptr: %ld %ld", heap[0], heap[1]);
    SHT_CHECK(g_arr[0] == 3000 + left, "store through shmem_ptr(global): %ld", g_arr[0]);
    SHT_CHECK(g_word == 42, "g_word %ld", g_word);

    int level = -1;
    shmem_query_thread(&level);
    SHT_CHECK(level == SHMEM_THREAD_SINGLE || level == SHMEM_THREAD_FUNNELED ||
                  level == SHMEM_THREAD_SERIALIZED || level == SHMEM_THREAD_MULTIPLE,
              "query_thread %d", level);
    shmem_free(heap);
    return sht_end();
}
