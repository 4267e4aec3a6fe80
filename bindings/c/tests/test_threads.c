/*
 * test_threads.c - the library under concurrent use from pthreads: exact
 * totals of atomics from many threads (also mixed across the default
 * context, explicit contexts and CPU atomics on a mapping), a CAS spinlock,
 * per-thread error state, and one context shared by several threads.
 */
#include "famtest.h"

#include <pthread.h>

enum { THREADS = 8, ITERS = 100000 };

static fam_region_t *g_region;

static int setup(void **state)
{
    (void)state;
    if (fam_initialize("threads", NULL) != 0) {
        fprintf(stderr, "fam_initialize: %s\n", fam_errmsg());
        return -1;
    }
    g_region = fam_create_region("threads", 16 << 20, 0600, NULL);
    return g_region != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return fam_destroy_region(g_region) == 0 && fam_finalize("threads") == 0 ? 0 : -1;
}

struct worker {
    pthread_t tid;
    int index;
    fam_desc_t *d;
    void *extra;
    int64_t *olds; /* ITERS results of this thread */
    int failures;
    int first_rc;
};

static void run_workers(struct worker *w, int n, void *(*fn)(void *))
{
    for (int i = 0; i < n; i++) {
        w[i].index = i;
        assert_int_equal(pthread_create(&w[i].tid, NULL, fn, &w[i]), 0);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_join(w[i].tid, NULL), 0);
    for (int i = 0; i < n; i++)
        if (w[i].failures != 0)
            fail_msg("thread %d: %d failed calls, first returned %d", i, w[i].failures, w[i].first_rc);
}

static void note(struct worker *w, int rc)
{
    if (rc != 0 && w->failures++ == 0)
        w->first_rc = rc;
}

static void *fetch_add_worker(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < ITERS; i++)
        note(w, fam_fetch_add_int64(w->d, 0, 1, &w->olds[i]));
    return NULL;
}

static void test_fetch_add_int64_8_threads(void **state)
{
    (void)state;
    fam_desc_t *d = fam_allocate(NULL, 64, 0600, g_region);
    assert_non_null(d);
    assert_fam_ok(fam_set_int64(d, 0, 0));
    int64_t *olds = calloc((size_t)THREADS * ITERS, sizeof *olds);
    uint8_t *seen = calloc((size_t)THREADS * ITERS, 1);
    assert_non_null(olds);
    assert_non_null(seen);
    struct worker w[THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < THREADS; i++) {
        w[i].d = d;
        w[i].olds = olds + (size_t)i * ITERS;
    }
    run_workers(w, THREADS, fetch_add_worker);

    int64_t total = -1;
    assert_fam_ok(fam_fetch_int64(d, 0, &total));
    assert_int_equal(total, (int64_t)THREADS * ITERS);
    /* Every increment saw a different previous value: each of 0..N-1 once. */
    for (size_t i = 0; i < (size_t)THREADS * ITERS; i++) {
        int64_t o = olds[i];
        if (o < 0 || o >= (int64_t)THREADS * ITERS || seen[o])
            fail_msg("fetch_add returned %lld twice or out of range", (long long)o);
        seen[o] = 1;
    }
    free(olds);
    free(seen);
    assert_fam_ok(fam_deallocate(d));
}

static void *add_double_worker(void *arg)
{
    struct worker *w = arg;
    const double v = (double)(w->index + 1);
    for (int i = 0; i < ITERS; i++)
        note(w, fam_add_double(w->d, 8, v));
    return NULL;
}

static void test_add_double_8_threads(void **state)
{
    (void)state;
    fam_desc_t *d = fam_allocate(NULL, 64, 0600, g_region);
    assert_non_null(d);
    assert_fam_ok(fam_set_double(d, 8, 0.0));
    struct worker w[THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < THREADS; i++)
        w[i].d = d;
    run_workers(w, THREADS, add_double_worker);
    double total = -1;
    assert_fam_ok(fam_fetch_double(d, 8, &total));
    /* Integer values stay exact in a double: 100000 * (1+2+...+8). */
    const double want = (double)ITERS * THREADS * (THREADS + 1) / 2;
    if (total != want)
        fail_msg("total is %.1f, want %.1f (lost updates)", total, want);
    assert_fam_ok(fam_deallocate(d));
}

/* Threads 0-2 use the default context, 3-5 their own context, 6-7 CPU
 * atomics on the item's mapping: all must be atomic with each other. */
static void *mixed_worker(void *arg)
{
    struct worker *w = arg;
    enum { N = ITERS / 4 };
    if (w->index < 3) {
        for (int i = 0; i < N; i++)
            note(w, fam_add_int64(w->d, 16, 1));
    } else if (w->index < 6) {
        fam_ctx_t *c = fam_context_open();
        if (c == NULL) {
            note(w, -fam_errcode());
            return NULL;
        }
        int64_t old;
        for (int i = 0; i < N; i++)
            note(w, i % 2 ? fam_ctx_add_int64(c, w->d, 16, 1) : fam_ctx_fetch_add_int64(c, w->d, 16, 1, &old));
        note(w, fam_context_close(c));
    } else {
        int64_t *p = w->extra;
        for (int i = 0; i < N; i++)
            __atomic_fetch_add(p, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static void test_mixed_paths_are_mutually_atomic(void **state)
{
    (void)state;
    fam_desc_t *d = fam_allocate(NULL, 64, 0600, g_region);
    assert_non_null(d);
    uint8_t *base = fam_map(d);
    if (base == NULL)
        fail_msg("fam_map: %s", fam_errmsg());
    assert_fam_ok(fam_set_int64(d, 16, 0));
    struct worker w[THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < THREADS; i++) {
        w[i].d = d;
        w[i].extra = base + 16;
    }
    run_workers(w, THREADS, mixed_worker);
    int64_t total = -1;
    assert_fam_ok(fam_fetch_int64(d, 16, &total));
    assert_int_equal(total, (int64_t)THREADS * (ITERS / 4));
    assert_fam_ok(fam_unmap(base, d));
    assert_fam_ok(fam_deallocate(d));
}

/* A lock word taken with compare_swap guards a counter updated with plain
 * get and put: no increment may be lost. */
static void *lock_worker(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 2000; i++) {
        int64_t old = 1;
        do {
            int rc = fam_compare_swap_int64(w->d, 0, 0, 1, &old);
            if (rc != 0) {
                note(w, rc);
                return NULL;
            }
        } while (old != 0);
        uint64_t c = 0;
        note(w, fam_get_blocking(&c, w->d, 8, 8));
        c++;
        note(w, fam_put_blocking(&c, w->d, 8, 8));
        note(w, fam_swap_int64(w->d, 0, 0, &old));
        if (old != 1)
            note(w, -999);
    }
    return NULL;
}

static void test_cas_spinlock(void **state)
{
    (void)state;
    fam_desc_t *d = fam_allocate(NULL, 64, 0600, g_region);
    assert_non_null(d);
    struct worker w[4];
    memset(w, 0, sizeof w);
    for (int i = 0; i < 4; i++)
        w[i].d = d;
    run_workers(w, 4, lock_worker);
    uint64_t c = 0;
    assert_fam_ok(fam_get_blocking(&c, d, 8, 8));
    assert_int_equal(c, 4 * 2000);
    assert_fam_ok(fam_deallocate(d));
}

/* Two threads fail differently, over and over, at the same time; each must
 * always see its own failure. */
static void *error_worker(void *arg)
{
    struct worker *w = arg;
    uint64_t v;
    for (int i = 0; i < 2000; i++) {
        if (w->index == 0) {
            int rc = fam_get_blocking(&v, w->d, 64, 8);
            if (rc != -FAM_ERANGE || fam_errcode() != FAM_ERANGE)
                note(w, rc == 0 ? -1000 : rc);
        } else {
            if (fam_lookup_region("no-such-region") != NULL || fam_errcode() != FAM_ENOTFOUND)
                note(w, -fam_errcode());
        }
    }
    return NULL;
}

static void test_errors_are_thread_local(void **state)
{
    (void)state;
    fam_desc_t *d = fam_allocate(NULL, 64, 0600, g_region);
    assert_non_null(d);
    struct worker w[2];
    memset(w, 0, sizeof w);
    w[0].d = w[1].d = d;
    run_workers(w, 2, error_worker);
    assert_fam_ok(fam_deallocate(d));
}

/* Several threads issue non-blocking puts on one shared context; one quiet
 * on that context completes them all. */
static void *shared_ctx_worker(void *arg)
{
    struct worker *w = arg;
    fam_ctx_t *c = w->extra;
    uint64_t *src = (uint64_t *)w->olds;
    for (int i = 0; i < 256; i++) {
        src[i] = ((uint64_t)w->index << 32) | (uint64_t)i;
        note(w, fam_ctx_put_nonblocking(c, &src[i], w->d, ((uint64_t)w->index * 256 + i) * 8, 8));
    }
    return NULL;
}

static void test_shared_context(void **state)
{
    (void)state;
    fam_desc_t *d = fam_allocate(NULL, THREADS * 256 * 8, 0600, g_region);
    assert_non_null(d);
    fam_ctx_t *c = fam_context_open();
    assert_non_null(c);
    static int64_t bufs[THREADS][256];
    struct worker w[THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < THREADS; i++) {
        w[i].d = d;
        w[i].extra = c;
        w[i].olds = bufs[i];
    }
    run_workers(w, THREADS, shared_ctx_worker);
    assert_fam_ok(fam_ctx_quiet(c));
    static uint64_t all[THREADS * 256];
    assert_fam_ok(fam_get_blocking(all, d, 0, sizeof all));
    for (int t = 0; t < THREADS; t++)
        for (int i = 0; i < 256; i++)
            if (all[t * 256 + i] != (((uint64_t)t << 32) | (uint64_t)i))
                fail_msg("word %d of thread %d is %#llx", i, t, (unsigned long long)all[t * 256 + i]);
    assert_fam_ok(fam_context_close(c));
    assert_fam_ok(fam_deallocate(d));
}

int main(int argc, char **argv)
{
    (void)argc;
    famtest_use_fresh_store("threads", argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fetch_add_int64_8_threads),
        cmocka_unit_test(test_add_double_8_threads),
        cmocka_unit_test(test_mixed_paths_are_mutually_atomic),
        cmocka_unit_test(test_cas_spinlock),
        cmocka_unit_test(test_errors_are_thread_local),
        cmocka_unit_test(test_shared_context),
    };
    int failed = cmocka_run_group_tests_name("threads", tests, setup, teardown);
    famtest_remove_store();
    return failed == 0 ? 0 : 1;
}
