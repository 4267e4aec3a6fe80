/*
 * persist.c - persistence through the C library (issue 20): after fam_quiet
 * no page of a persistent region's files is dirty in this process's
 * mappings (smaps), for writes made by the C fast path (put, atomics), by
 * Go (scatter, non-blocking put, copy) and on a context; fam_persist flushes
 * a range; under OPENFAM_PERSIST=lazy quiet leaves pages dirty, under each a
 * blocking put leaves none. Run on a scratch store on a disk file system
 * (OPENFAM_DATA_DIR); exits non-zero on the first failed check.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "openfam.h"

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: check failed: %s (errcode %d: %s)\n", __FILE__, __LINE__, \
                    #cond, fam_errcode(), fam_errmsg());                                      \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

static char regions_dir[4096];

/* kB of Shared_Dirty + Private_Dirty in this process's mappings of files
 * under regions_dir. */
static long dirty_kb(void)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    CHECK(f != NULL);
    char line[8192];
    long total = 0;
    int in = 0;
    size_t dl = strlen(regions_dir);
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long lo, hi;
        char path[4096];
        path[0] = '\0';
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &lo, &hi, path) >= 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = strncmp(path, regions_dir, dl) == 0;
            continue;
        }
        long kb;
        if (in && (sscanf(line, "Shared_Dirty: %ld kB", &kb) == 1 || sscanf(line, "Private_Dirty: %ld kB", &kb) == 1))
            total += kb;
    }
    fclose(f);
    return total;
}

static fam_desc_t *setup(const char *rname, fam_memory_type_t mt, uint64_t size)
{
    fam_region_attr_t attr = {0};
    attr.memory_type = mt;
    fam_region_t *r = fam_create_region(rname, 8 << 20, 0600, &attr);
    CHECK(r != NULL);
    fam_desc_t *d = fam_allocate("x", size, 0600, r);
    CHECK(d != NULL);
    return d;
}

static void dirty_pages(fam_desc_t *d, int n, uint64_t first)
{
    for (int i = 0; i < n; i++) {
        uint64_t v = (uint64_t)i + 1;
        CHECK(fam_put_blocking(&v, d, first + (uint64_t)i * 4096, sizeof v) == 0);
    }
}

int main(void)
{
    const char *data = getenv("OPENFAM_DATA_DIR");
    CHECK(data != NULL);
    snprintf(regions_dir, sizeof regions_dir, "%s/regions/", data);

    /* quiet (default) */
    unsetenv("OPENFAM_PERSIST");
    CHECK(fam_initialize("default", NULL) == 0);
    fam_desc_t *d = setup("p1", FAM_MEMORY_PERSISTENT, 4 << 20);
    dirty_pages(d, 64, 0);
    CHECK(dirty_kb() > 0);
    CHECK(fam_quiet() == 0);
    CHECK(dirty_kb() == 0);
    /* atomics on the fast path */
    CHECK(fam_add_int64(d, 1 << 20, 5) == 0);
    int64_t old = 0;
    CHECK(fam_fetch_add_int64(d, (1 << 20) + 8192, 1, &old) == 0);
    CHECK(dirty_kb() > 0);
    CHECK(fam_quiet() == 0);
    CHECK(dirty_kb() == 0);
    /* through Go: scatter, non-blocking put, copy; on a context */
    fam_ctx_t *c = fam_context_open();
    CHECK(c != NULL);
    uint64_t idx[2] = {1000, 200000};
    uint64_t vals[2] = {1, 2};
    CHECK(fam_ctx_scatter_blocking_indexed(c, vals, d, 2, idx, 8) == 0);
    char page[4096];
    memset(page, 7, sizeof page);
    CHECK(fam_ctx_put_nonblocking(c, page, d, 3 << 20, sizeof page) == 0);
    fam_wait_t *w = fam_ctx_copy(c, d, 0, d, 2 << 20, 64 << 10);
    CHECK(w != NULL && fam_copy_wait(w) == 0);
    CHECK(dirty_kb() > 0);
    CHECK(fam_ctx_quiet(c) == 0);
    CHECK(dirty_kb() == 0);
    /* fam_persist of a range */
    dirty_pages(d, 8, 0);
    CHECK(fam_persist(d, 0, 8 * 4096) == 0);
    CHECK(dirty_kb() == 0);
    dirty_pages(d, 8, 0);
    CHECK(fam_ctx_persist(c, d, 0, 8 * 4096) == 0);
    CHECK(dirty_kb() == 0);
    CHECK(fam_persist(d, 0, 0) == -FAM_EINVAL);
    CHECK(fam_persist(d, 4 << 20, 1) == -FAM_ERANGE);
    CHECK(fam_persist(NULL, 0, 1) == -FAM_EINVAL);
    CHECK(fam_ctx_persist(NULL, d, 0, 1) == -FAM_EINVAL);
    CHECK(fam_context_close(c) == 0);
    /* a volatile item: quiet and persist succeed */
    fam_desc_t *v = setup("v1", FAM_MEMORY_VOLATILE, 1 << 20);
    dirty_pages(v, 4, 0);
    CHECK(fam_quiet() == 0 && fam_persist(v, 0, 4096) == 0);
    CHECK(fam_finalize("default") == 0);

    /* lazy: quiet leaves the pages to the periodic flush (an hour here) */
    setenv("OPENFAM_PERSIST", "lazy", 1);
    setenv("OPENFAM_PERSIST_INTERVAL", "1h", 1);
    CHECK(fam_initialize("default", NULL) == 0);
    d = setup("p2", FAM_MEMORY_PERSISTENT, 1 << 20);
    dirty_pages(d, 16, 0);
    CHECK(fam_quiet() == 0);
    CHECK(dirty_kb() > 0);
    CHECK(fam_persist(d, 0, 1 << 20) == 0);
    CHECK(dirty_kb() == 0);
    CHECK(fam_finalize("default") == 0);

    /* lazy with a short interval: the timer flushes what the fast path
     * wrote (polled for). The deadline, 400 intervals, stays below the
     * kernel's own writeback of dirty pages (dirty_expire_centisecs, 30 s
     * by default), which would otherwise pass the check without the timer. */
    setenv("OPENFAM_PERSIST_INTERVAL", "50ms", 1);
    CHECK(fam_initialize("default", NULL) == 0);
    d = setup("p4", FAM_MEMORY_PERSISTENT, 1 << 20);
    dirty_pages(d, 16, 0);
    time_t deadline = time(NULL) + 20;
    while (dirty_kb() != 0) {
        CHECK(time(NULL) < deadline);
        usleep(10000);
    }
    CHECK(fam_finalize("default") == 0);
    unsetenv("OPENFAM_PERSIST_INTERVAL");

    /* each: a blocking put is durable when it returns */
    setenv("OPENFAM_PERSIST", "each", 1);
    CHECK(fam_initialize("default", NULL) == 0);
    d = setup("p3", FAM_MEMORY_PERSISTENT, 1 << 20);
    dirty_pages(d, 16, 0);
    CHECK(dirty_kb() == 0);
    CHECK(fam_finalize("default") == 0);

    /* a bad policy is refused */
    setenv("OPENFAM_PERSIST", "sometimes", 1);
    CHECK(fam_initialize("default", NULL) == -FAM_EINVAL);
    unsetenv("OPENFAM_PERSIST");
    printf("persist: ok\n");
    return 0;
}
