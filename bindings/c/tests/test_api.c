/*
 * test_api.c - every non-atomic function of openfam.h: success paths and
 * error paths (NULL and garbage pointers, zero and huge sizes, bounds and
 * overflow, permissions, stale handles, calls before fam_initialize and after
 * fam_finalize), contexts, copy, backup/restore, global descriptors, options,
 * fam_abort (in a child process) and persistence across processes.
 *
 * Groups run in order in one process: "before initialize", "initialized"
 * (initializes in its setup; its last test finalizes), "after finalize".
 */
#include "famtest.h"

#include <pthread.h>

static fam_region_t *g_region; /* region-level permissions, 0600, 32 MiB */

/* Handles kept alive until fam_finalize, used afterwards to check that
 * finalize released them. */
static fam_region_t *g_stale_region;
static fam_desc_t *g_stale_desc;
static fam_ctx_t *g_stale_ctx;

enum { REGION_BYTES = 32 << 20, PERSIST_BYTES = 4096 };

/* The longest name (OPENFAM_NAME_MAX bytes) and one byte more; main fills
 * them. */
static char NAME_LONGEST[OPENFAM_NAME_MAX + 1];
static char NAME_TOO_LONG[OPENFAM_NAME_MAX + 2];

static void fill(uint8_t *buf, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)(i * 131u + seed * 7u + (i >> 8));
}

static fam_desc_t *new_item(uint64_t nbytes)
{
    return assert_fam_ptr(fam_allocate(famtest_name("item"), nbytes, 0600, g_region));
}

/* ---- before fam_initialize ------------------------------------------------ */

static void test_error_state_starts_clear(void **state)
{
    (void)state;
    assert_int_equal(fam_errcode(), 0);
    assert_non_null(fam_errmsg());
    assert_string_equal(fam_errmsg(), "");
}

static void test_calls_before_initialize(void **state)
{
    (void)state;
    uint64_t buf = 0;
    fam_global_desc_t g = {1, 0};
    assert_fam_null(fam_create_region("early", 4096, 0600, NULL), FAM_EINVAL);
    assert_fam_null(fam_lookup_region("early"), FAM_EINVAL);
    assert_fam_null(fam_lookup("item", "early"), FAM_EINVAL);
    assert_fam_null(fam_context_open(), FAM_EINVAL);
    assert_fam_null(fam_list_options(), FAM_EINVAL);
    assert_fam_null(fam_get_option("VERSION"), FAM_EINVAL);
    assert_fam_null(fam_delete_backup("b"), FAM_EINVAL);
    assert_fam_null(fam_list_backup(NULL), FAM_EINVAL);
    assert_fam_null(fam_list_regions(), FAM_EINVAL);
    assert_fam_null(fam_list_items(GARBAGE_PTR), FAM_EINVAL);
    assert_fam_null(fam_desc_from_global(g), FAM_EINVAL);
    assert_fam_null(fam_region_from_global(g), FAM_EINVAL);
    assert_fam_err(fam_quiet(), FAM_EINVAL);
    assert_fam_err(fam_fence(), FAM_EINVAL);
    assert_fam_err(fam_barrier_all(), FAM_EINVAL);
    assert_fam_err(fam_finalize("test"), FAM_EINVAL);
    assert_fam_err(fam_get_blocking(&buf, GARBAGE_PTR, 0, 8), FAM_EINVAL);
    assert_int_equal(fam_progress(), 0);
}

static void test_initialize_rejects_bad_arguments(void **state)
{
    (void)state;
    assert_fam_err(fam_initialize(NULL, NULL), FAM_EINVAL);

    fam_options_t opts;
    memset(&opts, 0, sizeof opts);
    opts.fam_thread_model = "FAM_THREAD_BOGUS";
    assert_fam_err(fam_initialize("test", &opts), FAM_EINVAL);
    memset(&opts, 0, sizeof opts);
    opts.runtime = "NOT_A_RUNTIME";
    assert_fam_err(fam_initialize("test", &opts), FAM_EINVAL);
    /* A failed initialize leaves nothing running. */
    assert_fam_err(fam_quiet(), FAM_EINVAL);
}

/* ---- initialized ------------------------------------------------------------ */

static int setup_initialized(void **state)
{
    (void)state;
    fam_options_t opts;
    memset(&opts, 0, sizeof opts);
    opts.fam_thread_model = "FAM_THREAD_MULTIPLE";
    opts.runtime = "NONE";
    if (fam_initialize("test", &opts) != 0) {
        fprintf(stderr, "fam_initialize: %s\n", fam_errmsg());
        return -1;
    }
    g_region = fam_create_region("api", REGION_BYTES, 0600, NULL);
    if (g_region == NULL) {
        fprintf(stderr, "fam_create_region: %s\n", fam_errmsg());
        return -1;
    }
    return 0;
}

static void test_initialize_twice(void **state)
{
    (void)state;
    assert_fam_err(fam_initialize("test", NULL), FAM_EINVAL);
    assert_fam_ok(fam_barrier_all());
}

static void test_options(void **state)
{
    (void)state;
    static const char *const want[] = {
        "VERSION", "DEFAULT_REGION_NAME", "CIS_SERVER", "GRPC_PORT", "LIBFABRIC_PROVIDER",
        "FAM_THREAD_MODEL", "CIS_INTERFACE_TYPE", "OPENFAM_MODEL", "FAM_CONTEXT_MODEL",
        "PE_COUNT", "PE_ID", "RUNTIME", "NUM_CONSUMER", "FAM_DEFAULT_MEMORY_TYPE",
        "IF_DEVICE", "LOC_BUF_ADDR", "LOC_BUF_SIZE",
    };
    const size_t nwant = sizeof want / sizeof want[0];
    const char **names = assert_fam_ptr(fam_list_options());
    size_t n = 0;
    while (names[n] != NULL)
        n++;
    assert_int_equal(n, nwant);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(names[i], want[i]);
        const void *v = fam_get_option(names[i]);
        if (v == NULL)
            fail_msg("fam_get_option(%s): %s", names[i], fam_errmsg());
        free((void *)v);
    }
    free(names);

    char *version = (char *)assert_fam_ptr(fam_get_option("VERSION"));
    assert_string_equal(version, OPENFAM_API_VERSION);
    free(version);
    int *count = (int *)assert_fam_ptr(fam_get_option("PE_COUNT"));
    int *id = (int *)assert_fam_ptr(fam_get_option("PE_ID"));
    assert_int_equal(*count, 1);
    assert_int_equal(*id, 0);
    free(count);
    free(id);
    uint64_t *lbs = (uint64_t *)assert_fam_ptr(fam_get_option("LOC_BUF_SIZE"));
    assert_int_equal(*lbs, 0);
    free(lbs);
    /* The options given to fam_initialize are reported back. */
    char *tm = (char *)assert_fam_ptr(fam_get_option("FAM_THREAD_MODEL"));
    assert_string_equal(tm, "FAM_THREAD_MULTIPLE");
    free(tm);

    assert_fam_null(fam_get_option("NO_SUCH_OPTION"), FAM_EINVAL);
    assert_fam_null(fam_get_option(NULL), FAM_EINVAL);
}

static void *errcode_in_thread(void *arg)
{
    int *out = arg;
    out[0] = fam_errcode();
    out[1] = fam_errmsg() != NULL && fam_errmsg()[0] == '\0';
    fam_lookup_region("no-such-region-thread");
    out[2] = fam_errcode();
    return NULL;
}

static void test_errors_are_kept_per_thread(void **state)
{
    (void)state;
    assert_fam_null(fam_lookup_region("no-such-region"), FAM_ENOTFOUND);
    char saved[512];
    snprintf(saved, sizeof saved, "%s", fam_errmsg());
    /* A success does not clear the last failure. */
    fam_stat_t st;
    assert_fam_ok(fam_stat_region(g_region, &st));
    assert_int_equal(fam_errcode(), FAM_ENOTFOUND);

    int seen[3] = {-1, -1, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, errcode_in_thread, seen), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(seen[0], 0);
    assert_int_equal(seen[1], 1);
    assert_int_equal(seen[2], FAM_ENOTFOUND);
    /* The other thread's failure did not touch this thread's state... */
    assert_int_equal(fam_errcode(), FAM_ENOTFOUND);
    assert_string_equal(fam_errmsg(), saved);
    /* ...and a new failure replaces the old one. */
    assert_fam_null(fam_create_region(NULL, 4096, 0600, NULL), FAM_EINVAL);
}

/* ---- regions ---------------------------------------------------------------- */

static void test_region_create_and_stat(void **state)
{
    (void)state;
    fam_region_t *r = assert_fam_ptr(fam_create_region("stat-me", 1 << 20, 0640, NULL));
    fam_stat_t st;
    memset(&st, 0xa5, sizeof st);
    assert_fam_ok(fam_stat_region(r, &st));
    assert_true(st.size >= (1 << 20));
    assert_int_equal(st.perm & 0777, 0640);
    assert_non_null(st.name);
    assert_string_equal(st.name, "stat-me");
    assert_int_equal(st.uid, getuid());
    assert_int_equal(st.gid, getgid());
    /* NULL attributes: volatile, region-level permissions. */
    assert_int_equal(st.region_attributes.memory_type, FAM_MEMORY_VOLATILE);
    assert_int_equal(st.region_attributes.permission_level, FAM_PERMISSION_REGION);
    assert_true(st.num_memservers >= 1);

    fam_region_attr_t attr = {FAM_REDUNDANCY_NONE, FAM_MEMORY_PERSISTENT, FAM_INTERLEAVE_DISABLE,
                              FAM_PERMISSION_DATAITEM};
    fam_region_t *p = assert_fam_ptr(fam_create_region("stat-persistent", 1 << 20, 0600, &attr));
    assert_fam_ok(fam_stat_region(p, &st));
    assert_int_equal(st.region_attributes.memory_type, FAM_MEMORY_PERSISTENT);
    assert_int_equal(st.region_attributes.permission_level, FAM_PERMISSION_DATAITEM);
    assert_int_equal(st.region_attributes.interleave_enable, FAM_INTERLEAVE_DISABLE);

    assert_fam_err(fam_stat_region(r, NULL), FAM_EINVAL);
    assert_fam_err(fam_stat_region(NULL, &st), FAM_EINVAL);
    assert_fam_err(fam_stat_region(GARBAGE_PTR, &st), FAM_EINVAL);
    assert_fam_ok(fam_destroy_region(r));
    assert_fam_ok(fam_destroy_region(p));
}

static void test_region_create_errors(void **state)
{
    (void)state;
    assert_fam_null(fam_create_region(NULL, 4096, 0600, NULL), FAM_EINVAL);
    assert_fam_null(fam_create_region("", 4096, 0600, NULL), FAM_EINVAL);
    assert_fam_null(fam_create_region(NAME_TOO_LONG, 4096, 0600, NULL), FAM_ENAMETOOLONG);
    assert_fam_null(fam_create_region("zero-size", 0, 0600, NULL), FAM_EINVAL);
    assert_fam_null(fam_create_region("api", 4096, 0600, NULL), FAM_EEXIST);

    fam_region_t *huge = fam_create_region("huge", UINT64_MAX, 0600, NULL);
    assert_null(huge);
    if (fam_errcode() != FAM_ENOSPACE && fam_errcode() != FAM_EINVAL)
        fail_msg("UINT64_MAX region: errcode %d (%s)", fam_errcode(), fam_errmsg());

    fam_region_attr_t bad = {FAM_REDUNDANCY_NONE, (fam_memory_type_t)7, FAM_INTERLEAVE_DEFAULT,
                             FAM_PERMISSION_DEFAULT};
    assert_fam_null(fam_create_region("bad-attr", 4096, 0600, &bad), FAM_EINVAL);
    fam_region_attr_t bad2 = {FAM_REDUNDANCY_NONE, FAM_MEMORY_VOLATILE, FAM_INTERLEAVE_DEFAULT,
                              (fam_permission_level_t)9};
    assert_fam_null(fam_create_region("bad-attr", 4096, 0600, &bad2), FAM_EINVAL);

    /* The longest legal name works, and failed creations left nothing behind. */
    fam_region_t *r = assert_fam_ptr(fam_create_region(NAME_LONGEST, 4096, 0600, NULL));
    assert_fam_ok(fam_destroy_region(r));
    assert_fam_null(fam_lookup_region("zero-size"), FAM_ENOTFOUND);
    assert_fam_null(fam_lookup_region("bad-attr"), FAM_ENOTFOUND);
}

static void test_region_lookup(void **state)
{
    (void)state;
    fam_region_t *r = assert_fam_ptr(fam_lookup_region("api"));
    fam_stat_t a, b;
    assert_fam_ok(fam_stat_region(r, &a));
    assert_fam_ok(fam_stat_region(g_region, &b));
    assert_string_equal(a.name, "api");
    assert_int_equal(a.size, b.size);

    /* An item made through one region handle is visible through the other. */
    fam_desc_t *d = assert_fam_ptr(fam_allocate("via-lookup", 64, 0600, r));
    fam_desc_t *d2 = assert_fam_ptr(fam_lookup("via-lookup", "api"));
    assert_fam_ok(fam_close(d2));
    assert_fam_ok(fam_deallocate(d));

    assert_fam_null(fam_lookup_region("missing"), FAM_ENOTFOUND);
    assert_fam_null(fam_lookup_region(NULL), FAM_EINVAL);
    assert_fam_null(fam_lookup_region(""), FAM_EINVAL);
    assert_fam_null(fam_lookup_region(NAME_TOO_LONG), FAM_ENAMETOOLONG);
}

static void test_region_resize(void **state)
{
    (void)state;
    /* As in OpenFAM a region holds at least 1 MiB whatever its size; stat
     * reports the size asked for. */
    fam_region_t *r = assert_fam_ptr(fam_create_region("resize", 64 * 1024, 0600, NULL));
    fam_desc_t *d = assert_fam_ptr(fam_allocate("first", 512 * 1024, 0600, r));
    uint8_t in[4096], out[4096];
    fill(out, sizeof out, 3);
    assert_fam_ok(fam_put_blocking(out, d, 1024, sizeof out));
    fam_stat_t st;
    assert_fam_ok(fam_stat_region(r, &st));
    assert_int_equal(st.size, 64 * 1024);
    /* Before growing, a large item does not fit. */
    assert_fam_null(fam_allocate("big", 768 * 1024, 0600, r), FAM_ENOSPACE);

    assert_fam_ok(fam_resize_region(r, 2 << 20));
    assert_fam_ok(fam_stat_region(r, &st));
    assert_true(st.size >= (2 << 20));
    fam_desc_t *big = assert_fam_ptr(fam_allocate("big", 768 * 1024, 0600, r));
    assert_fam_ok(fam_get_blocking(in, d, 1024, sizeof in));
    assert_memory_equal(in, out, sizeof in);

    /* Shrinking below the end of a live item fails and changes nothing. */
    int rc = fam_resize_region(r, 4096);
    assert_true(rc < 0);
    assert_int_equal(fam_errcode(), -rc);
    assert_fam_ok(fam_stat_region(r, &st));
    assert_true(st.size >= (2 << 20));

    assert_fam_err(fam_resize_region(r, 0), FAM_EINVAL);
    assert_fam_err(fam_resize_region(NULL, 1 << 20), FAM_EINVAL);
    assert_fam_err(fam_resize_region(GARBAGE_PTR, 1 << 20), FAM_EINVAL);
    assert_fam_ok(fam_deallocate(big));
    assert_fam_ok(fam_deallocate(d));
    assert_fam_ok(fam_destroy_region(r));
    assert_fam_err(fam_resize_region(r, 1 << 21), FAM_EINVAL);
}

static void test_region_permissions(void **state)
{
    (void)state;
    fam_region_t *r = assert_fam_ptr(fam_create_region("perm-region", 1 << 20, 0600, NULL));
    fam_desc_t *d = assert_fam_ptr(fam_allocate("x", 64, 0600, r));
    uint64_t v = 42, got = 0;
    assert_fam_ok(fam_put_blocking(&v, d, 0, 8));

    assert_fam_ok(fam_change_region_permissions(r, 0400));
    fam_stat_t st;
    assert_fam_ok(fam_stat_region(r, &st));
    assert_int_equal(st.perm & 0777, 0400);
    /* The owner is bound by no mode bits, as in OpenFAM: it still allocates
     * in its read-only region and writes its items through descriptors
     * already open. (How the region's mode binds another user is checked in
     * test_item_permissions_other_user and the Gherkin scenarios.) */
    fam_desc_t *y = assert_fam_ptr(fam_allocate("y", 64, 0600, r));
    assert_fam_ok(fam_put_blocking(&v, d, 0, 8));
    assert_fam_ok(fam_set_int64(d, 0, 43));
    assert_fam_ok(fam_get_blocking(&got, d, 0, 8));
    assert_int_equal(got, 43);

    assert_fam_ok(fam_change_region_permissions(r, 0600));
    v = 43;
    assert_fam_ok(fam_put_blocking(&v, d, 0, 8));

    /* In a region-level region an item's own mode does not restrict it. */
    fam_desc_t *ro = assert_fam_ptr(fam_allocate("ro", 64, 0400, r));
    assert_fam_ok(fam_put_blocking(&v, ro, 0, 8));

    assert_fam_err(fam_change_region_permissions(NULL, 0600), FAM_EINVAL);
    assert_fam_err(fam_change_region_permissions(GARBAGE_PTR, 0600), FAM_EINVAL);
    assert_fam_ok(fam_deallocate(ro));
    assert_fam_ok(fam_deallocate(y));
    assert_fam_ok(fam_deallocate(d));
    assert_fam_ok(fam_destroy_region(r));
}

static void test_region_destroy_and_stale(void **state)
{
    (void)state;
    fam_region_t *r = assert_fam_ptr(fam_create_region("doomed", 1 << 20, 0600, NULL));
    fam_desc_t *d = assert_fam_ptr(fam_allocate("inside", 64, 0600, r));
    fam_region_t *other = assert_fam_ptr(fam_lookup_region("doomed"));
    assert_fam_ok(fam_destroy_region(r));

    fam_stat_t st;
    uint64_t v = 0;
    assert_fam_null(fam_lookup_region("doomed"), FAM_ENOTFOUND);
    assert_fam_null(fam_lookup("inside", "doomed"), FAM_ENOTFOUND);
    assert_fam_err(fam_stat_region(r, &st), FAM_EINVAL);
    assert_fam_err(fam_destroy_region(r), FAM_EINVAL);
    assert_fam_null(fam_allocate("again", 64, 0600, r), FAM_EINVAL);
    /* Another handle to the destroyed region and a descriptor of an item in
     * it are not released, but reach nothing. */
    int rc = fam_get_blocking(&v, d, 0, 8);
    if (rc != -FAM_ENOTFOUND && rc != -FAM_EINVAL)
        fail_msg("get from an item of a destroyed region returned %d (%s)", rc, fam_errmsg());
    rc = fam_stat_region(other, &st);
    if (rc != -FAM_ENOTFOUND && rc != -FAM_EINVAL)
        fail_msg("stat of a destroyed region via another handle returned %d (%s)", rc, fam_errmsg());
    fam_close(d);

    /* The name is free again. */
    fam_region_t *again = assert_fam_ptr(fam_create_region("doomed", 4096, 0600, NULL));
    assert_fam_ok(fam_destroy_region(again));
    assert_fam_err(fam_destroy_region(NULL), FAM_EINVAL);
    assert_fam_err(fam_destroy_region(GARBAGE_PTR), FAM_EINVAL);
}

static void test_region_global(void **state)
{
    (void)state;
    fam_global_desc_t g;
    assert_fam_ok(fam_region_global(g_region, &g));
    assert_true(g.offset == UINT64_MAX);
    fam_region_t *r = assert_fam_ptr(fam_region_from_global(g));
    fam_stat_t st;
    assert_fam_ok(fam_stat_region(r, &st));
    assert_string_equal(st.name, "api");
    fam_global_desc_t g2;
    assert_fam_ok(fam_region_global(r, &g2));
    assert_memory_equal(&g, &g2, sizeof g);

    fam_desc_t *d = assert_fam_ptr(fam_allocate("via-global", 64, 0600, r));
    fam_desc_t *d2 = assert_fam_ptr(fam_lookup("via-global", "api"));
    assert_fam_ok(fam_close(d2));
    assert_fam_ok(fam_deallocate(d));

    assert_fam_err(fam_region_global(g_region, NULL), FAM_EINVAL);
    assert_fam_err(fam_region_global(NULL, &g), FAM_EINVAL);
    assert_fam_err(fam_region_global(GARBAGE_PTR, &g), FAM_EINVAL);
}

/* ---- data items ------------------------------------------------------------- */

static void test_item_allocate_and_stat(void **state)
{
    (void)state;
    fam_desc_t *d = assert_fam_ptr(fam_allocate("stat-item", 1000, 0640, g_region));
    fam_stat_t st;
    memset(&st, 0x5a, sizeof st);
    assert_fam_ok(fam_stat(d, &st));
    assert_int_equal(st.size, 1000);
    assert_int_equal(st.perm & 0777, 0640);
    assert_string_equal(st.name, "stat-item");
    assert_int_equal(st.uid, getuid());
    assert_int_equal(st.gid, getgid());

    fam_desc_t *u = assert_fam_ptr(fam_allocate(NULL, 128, 0600, g_region));
    assert_fam_ok(fam_stat(u, &st));
    assert_non_null(st.name);
    assert_string_equal(st.name, "");
    assert_int_equal(st.size, 128);

    /* A new item reads as zeros. */
    uint8_t zero[128], got[128];
    memset(zero, 0, sizeof zero);
    memset(got, 0xff, sizeof got);
    assert_fam_ok(fam_get_blocking(got, u, 0, sizeof got));
    assert_memory_equal(got, zero, sizeof got);

    assert_fam_err(fam_stat(d, NULL), FAM_EINVAL);
    assert_fam_err(fam_stat(NULL, &st), FAM_EINVAL);
    assert_fam_ok(fam_deallocate(u));
    assert_fam_ok(fam_deallocate(d));
}

static void test_item_allocate_errors(void **state)
{
    (void)state;
    fam_desc_t *d = assert_fam_ptr(fam_allocate("dup", 64, 0600, g_region));
    assert_fam_null(fam_allocate("dup", 64, 0600, g_region), FAM_EEXIST);
    assert_fam_null(fam_allocate(NAME_TOO_LONG, 64, 0600, g_region), FAM_ENAMETOOLONG);
    assert_fam_null(fam_allocate("zero", 0, 0600, g_region), FAM_EINVAL);
    assert_fam_null(fam_allocate("noregion", 64, 0600, NULL), FAM_EINVAL);
    assert_fam_null(fam_allocate("garbage", 64, 0600, GARBAGE_PTR), FAM_EINVAL);
    assert_fam_null(fam_allocate("too-big", (uint64_t)REGION_BYTES * 2, 0600, g_region), FAM_ENOSPACE);
    fam_desc_t *huge = fam_allocate("huge", UINT64_MAX, 0600, g_region);
    assert_null(huge);
    if (fam_errcode() != FAM_ENOSPACE && fam_errcode() != FAM_EINVAL)
        fail_msg("UINT64_MAX item: errcode %d (%s)", fam_errcode(), fam_errmsg());

    fam_desc_t *longest = assert_fam_ptr(fam_allocate(NAME_LONGEST, 64, 0600, g_region));
    assert_fam_ok(fam_deallocate(longest));
    assert_fam_null(fam_lookup("zero", "api"), FAM_ENOTFOUND);
    assert_fam_ok(fam_deallocate(d));
}

static void test_item_lookup(void **state)
{
    (void)state;
    fam_desc_t *d = assert_fam_ptr(fam_allocate("findme", 256, 0600, g_region));
    uint8_t out[256], in[256];
    fill(out, sizeof out, 9);
    assert_fam_ok(fam_put_blocking(out, d, 0, sizeof out));

    fam_desc_t *d2 = assert_fam_ptr(fam_lookup("findme", "api"));
    fam_stat_t st;
    assert_fam_ok(fam_stat(d2, &st));
    assert_int_equal(st.size, 256);
    assert_string_equal(st.name, "findme");
    assert_fam_ok(fam_get_blocking(in, d2, 0, sizeof in));
    assert_memory_equal(in, out, sizeof in);

    assert_fam_null(fam_lookup("nothere", "api"), FAM_ENOTFOUND);
    assert_fam_null(fam_lookup("findme", "noregion"), FAM_ENOTFOUND);
    assert_fam_null(fam_lookup(NULL, "api"), FAM_EINVAL);
    assert_fam_null(fam_lookup("findme", NULL), FAM_EINVAL);
    assert_fam_null(fam_lookup(NAME_TOO_LONG, "api"), FAM_ENAMETOOLONG);
    assert_fam_ok(fam_close(d2));
    assert_fam_ok(fam_deallocate(d));
}

static void test_item_close_and_stale(void **state)
{
    (void)state;
    fam_desc_t *d = assert_fam_ptr(fam_allocate("closeme", 64, 0600, g_region));
    uint64_t v = 77, got = 0;
    assert_fam_ok(fam_put_blocking(&v, d, 0, 8));
    assert_fam_ok(fam_close(d));

    fam_stat_t st;
    fam_global_desc_t g;
    assert_fam_err(fam_get_blocking(&got, d, 0, 8), FAM_EINVAL);
    assert_fam_err(fam_put_blocking(&v, d, 0, 8), FAM_EINVAL);
    assert_fam_err(fam_stat(d, &st), FAM_EINVAL);
    assert_fam_err(fam_desc_global(d, &g), FAM_EINVAL);
    assert_fam_err(fam_fetch_uint64(d, 0, &got), FAM_EINVAL);
    assert_fam_err(fam_change_permissions(d, 0600), FAM_EINVAL);
    assert_fam_err(fam_close(d), FAM_EINVAL);
    assert_fam_err(fam_deallocate(d), FAM_EINVAL);
    assert_fam_null(fam_map(d), FAM_EINVAL);

    /* Closing released the handle, not the item. */
    fam_desc_t *d2 = assert_fam_ptr(fam_lookup("closeme", "api"));
    assert_fam_ok(fam_get_blocking(&got, d2, 0, 8));
    assert_int_equal(got, 77);
    assert_fam_ok(fam_deallocate(d2));
}

static void test_item_deallocate_and_stale(void **state)
{
    (void)state;
    fam_desc_t *d = assert_fam_ptr(fam_allocate("freeme", 64, 0600, g_region));
    fam_desc_t *other = assert_fam_ptr(fam_lookup("freeme", "api"));
    assert_fam_ok(fam_deallocate(d));
    uint64_t v = 0;
    assert_fam_null(fam_lookup("freeme", "api"), FAM_ENOTFOUND);
    assert_fam_err(fam_get_blocking(&v, d, 0, 8), FAM_EINVAL);
    assert_fam_err(fam_set_uint64(d, 0, 1), FAM_EINVAL);
    assert_fam_err(fam_deallocate(d), FAM_EINVAL);
    assert_fam_err(fam_close(d), FAM_EINVAL);
    /* A second handle to the freed item stays valid as a handle but reaches
     * no memory. */
    int rc = fam_get_blocking(&v, other, 0, 8);
    if (rc != -FAM_ENOTFOUND && rc != -FAM_EINVAL)
        fail_msg("get through a handle of a freed item returned %d (%s)", rc, fam_errmsg());
    fam_close(other);

    /* The name can be used again, and the new item starts zeroed. */
    fam_desc_t *again = assert_fam_ptr(fam_allocate("freeme", 64, 0600, g_region));
    assert_fam_ok(fam_get_blocking(&v, again, 0, 8));
    assert_int_equal(v, 0);
    assert_fam_ok(fam_deallocate(again));
}

static void test_garbage_and_null_handles(void **state)
{
    (void)state;
    fam_desc_t *bad[2] = {NULL, GARBAGE_PTR};
    fam_desc_t *good = new_item(64);
    uint64_t buf[4] = {0}, idx[1] = {0};
    fam_stat_t st;
    fam_global_desc_t g;
    for (int i = 0; i < 2; i++) {
        fam_desc_t *d = bad[i];
        assert_fam_err(fam_get_blocking(buf, d, 0, 8), FAM_EINVAL);
        assert_fam_err(fam_put_blocking(buf, d, 0, 8), FAM_EINVAL);
        assert_nb_err(fam_get_nonblocking(buf, d, 0, 8), fam_quiet(), FAM_EINVAL);
        assert_nb_err(fam_put_nonblocking(buf, d, 0, 8), fam_quiet(), FAM_EINVAL);
        assert_fam_err(fam_gather_blocking_strided(buf, d, 1, 0, 1, 8), FAM_EINVAL);
        assert_fam_err(fam_scatter_blocking_strided(buf, d, 1, 0, 1, 8), FAM_EINVAL);
        assert_nb_err(fam_gather_nonblocking_strided(buf, d, 1, 0, 1, 8), fam_quiet(), FAM_EINVAL);
        assert_nb_err(fam_scatter_nonblocking_strided(buf, d, 1, 0, 1, 8), fam_quiet(), FAM_EINVAL);
        assert_fam_err(fam_gather_blocking_indexed(buf, d, 1, idx, 8), FAM_EINVAL);
        assert_fam_err(fam_scatter_blocking_indexed(buf, d, 1, idx, 8), FAM_EINVAL);
        assert_nb_err(fam_gather_nonblocking_indexed(buf, d, 1, idx, 8), fam_quiet(), FAM_EINVAL);
        assert_nb_err(fam_scatter_nonblocking_indexed(buf, d, 1, idx, 8), fam_quiet(), FAM_EINVAL);
        assert_fam_err(fam_stat(d, &st), FAM_EINVAL);
        assert_fam_err(fam_close(d), FAM_EINVAL);
        assert_fam_err(fam_deallocate(d), FAM_EINVAL);
        assert_fam_err(fam_change_permissions(d, 0600), FAM_EINVAL);
        assert_fam_err(fam_desc_global(d, &g), FAM_EINVAL);
        assert_fam_null(fam_map(d), FAM_EINVAL);
        assert_fam_err(fam_unmap(buf, d), FAM_EINVAL);
        assert_fam_null(fam_copy(d, 0, good, 0, 8), FAM_EINVAL);
        assert_fam_null(fam_copy(good, 0, d, 0, 8), FAM_EINVAL);
        assert_fam_null(fam_backup(d, "never", NULL), FAM_EINVAL);
        assert_fam_null(fam_restore("never", d), FAM_EINVAL);
    }
    fam_region_t *rbad[2] = {NULL, GARBAGE_PTR};
    for (int i = 0; i < 2; i++) {
        fam_desc_t *out = GARBAGE_PTR;
        assert_fam_null(fam_restore_region("never", rbad[i], "x", 0600, &out), FAM_EINVAL);
    }
    fam_wait_t *wbad[2] = {NULL, GARBAGE_PTR};
    for (int i = 0; i < 2; i++) {
        assert_fam_err(fam_copy_wait(wbad[i]), FAM_EINVAL);
        assert_fam_err(fam_backup_wait(wbad[i]), FAM_EINVAL);
        assert_fam_err(fam_restore_wait(wbad[i]), FAM_EINVAL);
        assert_fam_err(fam_delete_backup_wait(wbad[i]), FAM_EINVAL);
    }
    fam_ctx_t *cbad[2] = {NULL, GARBAGE_PTR};
    for (int i = 0; i < 2; i++) {
        fam_ctx_t *c = cbad[i];
        assert_fam_err(fam_context_close(c), FAM_EINVAL);
        assert_fam_err(fam_ctx_quiet(c), FAM_EINVAL);
        assert_fam_err(fam_ctx_fence(c), FAM_EINVAL);
        assert_fam_err(fam_ctx_get_blocking(c, buf, good, 0, 8), FAM_EINVAL);
        assert_fam_err(fam_ctx_put_blocking(c, buf, good, 0, 8), FAM_EINVAL);
        assert_fam_null(fam_ctx_copy(c, good, 0, good, 8, 8), FAM_EINVAL);
        assert_int_equal(fam_ctx_progress(c), 0);
    }
    assert_fam_ok(fam_deallocate(good));
}

/* The owner is bound by no mode bits, as in OpenFAM: its own read-only,
 * write-only and mode-0 items are read, written and mapped read-write. */
static void test_item_permissions_dataitem_level(void **state)
{
    (void)state;
    fam_region_attr_t attr = {FAM_REDUNDANCY_NONE, FAM_MEMORY_VOLATILE, FAM_INTERLEAVE_DEFAULT,
                              FAM_PERMISSION_DATAITEM};
    fam_region_t *r = assert_fam_ptr(fam_create_region("perm-items", 1 << 20, 0700, &attr));
    fam_desc_t *ro = assert_fam_ptr(fam_allocate("ro", 4096, 0400, r));
    fam_desc_t *wo = assert_fam_ptr(fam_allocate("wo", 4096, 0200, r));
    uint64_t v = 5, got = 1;

    assert_fam_ok(fam_put_blocking(&v, ro, 0, 8));
    assert_fam_ok(fam_set_uint64(ro, 8, 9));
    assert_fam_ok(fam_get_blocking(&got, wo, 0, 8));
    assert_int_equal(got, 0);
    assert_fam_ok(fam_put_blocking(&v, wo, 0, 8));
    assert_fam_ok(fam_fetch_uint64(wo, 0, &got));
    assert_int_equal(got, 5);
    uint64_t *mapped = assert_fam_ptr((uint64_t *)fam_map(wo));
    mapped[1] = 11;
    assert_fam_ok(fam_unmap(mapped, wo));
    assert_fam_ok(fam_get_blocking(&got, wo, 8, 8));
    assert_int_equal(got, 11);

    /* A change of its own item's mode, 0333 or 0, binds the owner to
     * nothing, on the open descriptor and on one found again by name. */
    assert_fam_ok(fam_change_permissions(ro, 0333));
    fam_stat_t st;
    assert_fam_ok(fam_stat(ro, &st));
    assert_int_equal(st.perm & 0777, 0333);
    assert_fam_ok(fam_get_blocking(&got, ro, 0, 8));
    assert_int_equal(got, 5);
    assert_fam_ok(fam_change_permissions(ro, 0));
    v = 6;
    assert_fam_ok(fam_put_blocking(&v, ro, 0, 8));
    fam_desc_t *ro2 = assert_fam_ptr(fam_lookup("ro", "perm-items"));
    assert_fam_ok(fam_get_blocking(&got, ro2, 0, 8));
    assert_int_equal(got, 6);
    assert_fam_ok(fam_close(ro2));

    assert_fam_ok(fam_deallocate(ro));
    assert_fam_ok(fam_deallocate(wo));
    assert_fam_ok(fam_change_region_permissions(r, 0));
    assert_fam_ok(fam_destroy_region(r));
}

/* Mode bits bind a user who is not the owner: items of user nobody (65534)
 * checked by this process's uid (root, in the others class; root has no
 * bypass). A child running as nobody makes them on a store of their own,
 * and a second child checks them there (this process's store is locked
 * while it is initialized). Needs root to run the first child as nobody. */
static void test_item_permissions_other_user(void **state)
{
    (void)state;
    famtest_with_foreign_store("--check-foreign");
}

static void test_item_global(void **state)
{
    (void)state;
    fam_desc_t *d = assert_fam_ptr(fam_allocate("global-item", 512, 0600, g_region));
    uint8_t out[512], in[512];
    fill(out, sizeof out, 21);
    assert_fam_ok(fam_put_blocking(out, d, 0, sizeof out));

    fam_global_desc_t g;
    assert_fam_ok(fam_desc_global(d, &g));
    fam_global_desc_t rg;
    assert_fam_ok(fam_region_global(g_region, &rg));
    assert_true(g.region_id == rg.region_id);
    assert_true(g.offset != UINT64_MAX);

    fam_desc_t *d2 = assert_fam_ptr(fam_desc_from_global(g));
    assert_fam_ok(fam_get_blocking(in, d2, 0, sizeof in));
    assert_memory_equal(in, out, sizeof in);
    uint64_t v = 0x1122334455667788ULL, got = 0;
    assert_fam_ok(fam_put_blocking(&v, d2, 8, 8));
    assert_fam_ok(fam_get_blocking(&got, d, 8, 8));
    assert_true(got == v);
    fam_stat_t st;
    assert_fam_ok(fam_stat(d2, &st));
    assert_int_equal(st.size, 512);
    fam_global_desc_t g2;
    assert_fam_ok(fam_desc_global(d2, &g2));
    assert_memory_equal(&g, &g2, sizeof g);
    assert_fam_ok(fam_close(d2));

    assert_fam_err(fam_desc_global(d, NULL), FAM_EINVAL);
    assert_fam_ok(fam_deallocate(d));
}

static void test_item_global_unnamed(void **state)
{
    (void)state;
    fam_desc_t *d = assert_fam_ptr(fam_allocate(NULL, 256, 0600, g_region));
    uint8_t out[256], in[256];
    fill(out, sizeof out, 33);
    assert_fam_ok(fam_put_blocking(out, d, 0, sizeof out));
    fam_global_desc_t g;
    assert_fam_ok(fam_desc_global(d, &g));
    assert_fam_ok(fam_close(d));

    /* The global descriptor is the only way back to an unnamed item. */
    fam_desc_t *d2 = assert_fam_ptr(fam_desc_from_global(g));
    assert_fam_ok(fam_get_blocking(in, d2, 0, sizeof in));
    assert_memory_equal(in, out, sizeof in);
    fam_stat_t st;
    assert_fam_ok(fam_stat(d2, &st));
    assert_string_equal(st.name, "");
    assert_fam_ok(fam_deallocate(d2));

    /* Once freed, the same global descriptor reaches nothing. */
    fam_desc_t *d3 = fam_desc_from_global(g);
    if (d3 == NULL) {
        assert_true(fam_errcode() == FAM_ENOTFOUND || fam_errcode() == FAM_EINVAL);
    } else {
        int rc = fam_get_blocking(in, d3, 0, 8);
        if (rc != -FAM_ENOTFOUND && rc != -FAM_EINVAL)
            fail_msg("get through a global of a freed item returned %d (%s)", rc, fam_errmsg());
        fam_close(d3);
    }
}

static void test_item_global_bogus(void **state)
{
    (void)state;
    fam_global_desc_t g = {0x7fffffff, 0x1000};
    uint64_t v;
    fam_desc_t *d = fam_desc_from_global(g);
    if (d == NULL) {
        assert_true(fam_errcode() == FAM_ENOTFOUND || fam_errcode() == FAM_EINVAL);
    } else {
        int rc = fam_get_blocking(&v, d, 0, 8);
        if (rc != -FAM_ENOTFOUND && rc != -FAM_EINVAL)
            fail_msg("get through a bogus global returned %d (%s)", rc, fam_errmsg());
        fam_close(d);
    }
    fam_region_t *r = fam_region_from_global(g);
    if (r == NULL) {
        assert_true(fam_errcode() == FAM_ENOTFOUND || fam_errcode() == FAM_EINVAL);
    } else {
        fam_stat_t st;
        int rc = fam_stat_region(r, &st);
        if (rc != -FAM_ENOTFOUND && rc != -FAM_EINVAL)
            fail_msg("stat through a bogus region global returned %d (%s)", rc, fam_errmsg());
    }
}

/* ---- data path --------------------------------------------------------------- */

static void test_put_get_blocking(void **state)
{
    (void)state;
    enum { SIZE = 64 * 1024 };
    fam_desc_t *d = new_item(SIZE);
    static uint8_t out[SIZE], in[SIZE];
    fill(out, SIZE, 1);
    assert_fam_ok(fam_put_blocking(out, d, 0, SIZE));
    memset(in, 0, SIZE);
    assert_fam_ok(fam_get_blocking(in, d, 0, SIZE));
    assert_memory_equal(in, out, SIZE);

    /* Partial writes land exactly where asked. */
    uint8_t patch[37];
    memset(patch, 0xee, sizeof patch);
    assert_fam_ok(fam_put_blocking(patch, d, 1001, sizeof patch));
    memcpy(out + 1001, patch, sizeof patch);
    assert_fam_ok(fam_put_blocking(patch, d, SIZE - 1, 1));
    out[SIZE - 1] = 0xee;
    assert_fam_ok(fam_get_blocking(in, d, 0, SIZE));
    assert_memory_equal(in, out, SIZE);
    uint8_t small[3];
    assert_fam_ok(fam_get_blocking(small, d, 1000, 3));
    assert_memory_equal(small, out + 1000, 3);
    assert_fam_ok(fam_deallocate(d));
}

typedef int (*xfer_fn)(void *, fam_desc_t *, uint64_t, uint64_t);

static fam_ctx_t *g_bounds_ctx;

/* Adapters that run the context variants through the same checks. */
static int ctx_get_b(void *l, fam_desc_t *d, uint64_t o, uint64_t n) { return fam_ctx_get_blocking(g_bounds_ctx, l, d, o, n); }
static int ctx_put_b(void *l, fam_desc_t *d, uint64_t o, uint64_t n) { return fam_ctx_put_blocking(g_bounds_ctx, l, d, o, n); }
static int ctx_get_nb(void *l, fam_desc_t *d, uint64_t o, uint64_t n) { return fam_ctx_get_nonblocking(g_bounds_ctx, l, d, o, n); }
static int ctx_put_nb(void *l, fam_desc_t *d, uint64_t o, uint64_t n) { return fam_ctx_put_nonblocking(g_bounds_ctx, l, d, o, n); }
static int ctx_quiet_bounds(void) { return fam_ctx_quiet(g_bounds_ctx); }

static void check_xfer_errors(const char *name, xfer_fn f, int nonblocking, int (*quiet)(void))
{
    enum { SIZE = 4096 };
    fam_desc_t *d = new_item(SIZE);
    static uint8_t buf[SIZE + 16];
    struct { uint64_t off, n; int code; } cases[] = {
        {SIZE, 1, FAM_ERANGE},
        {SIZE - 4, 8, FAM_ERANGE},
        {0, SIZE + 1, FAM_ERANGE},
        {UINT64_MAX - 3, 8, FAM_ERANGE},
        {8, UINT64_MAX, FAM_ERANGE},
        {UINT64_MAX, UINT64_MAX, FAM_ERANGE},
        {0, 0, FAM_EINVAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = f(buf, d, cases[i].off, cases[i].n);
        if (rc == 0 && nonblocking)
            rc = quiet();
        if (rc != -cases[i].code || fam_errcode() != cases[i].code)
            fail_msg("%s(off=%llu, n=%llu) returned %d errcode %d, want %d (%s)", name,
                     (unsigned long long)cases[i].off, (unsigned long long)cases[i].n, rc,
                     fam_errcode(), -cases[i].code, fam_errmsg());
        assert_fam_ok(quiet());
    }
    int rc = f(NULL, d, 0, 8);
    if (rc == 0 && nonblocking)
        rc = quiet();
    if (rc != -FAM_EINVAL)
        fail_msg("%s(NULL local) returned %d, want %d", name, rc, -FAM_EINVAL);
    /* The last byte is in range. */
    assert_fam_ok(f(buf, d, SIZE - 1, 1));
    assert_fam_ok(quiet());
    assert_fam_ok(fam_deallocate(d));
}

static void test_transfer_bounds(void **state)
{
    (void)state;
    check_xfer_errors("fam_get_blocking", fam_get_blocking, 0, fam_quiet);
    check_xfer_errors("fam_put_blocking", fam_put_blocking, 0, fam_quiet);
    check_xfer_errors("fam_get_nonblocking", fam_get_nonblocking, 1, fam_quiet);
    check_xfer_errors("fam_put_nonblocking", fam_put_nonblocking, 1, fam_quiet);
    g_bounds_ctx = assert_fam_ptr(fam_context_open());
    check_xfer_errors("fam_ctx_get_blocking", ctx_get_b, 0, ctx_quiet_bounds);
    check_xfer_errors("fam_ctx_put_blocking", ctx_put_b, 0, ctx_quiet_bounds);
    check_xfer_errors("fam_ctx_get_nonblocking", ctx_get_nb, 1, ctx_quiet_bounds);
    check_xfer_errors("fam_ctx_put_nonblocking", ctx_put_nb, 1, ctx_quiet_bounds);
    assert_fam_ok(fam_context_close(g_bounds_ctx));
}

static void test_nonblocking_and_quiet(void **state)
{
    (void)state;
    enum { CHUNK = 1024, CHUNKS = 64 };
    fam_desc_t *d = new_item(CHUNK * CHUNKS);
    static uint8_t out[CHUNKS][CHUNK], in[CHUNKS][CHUNK];
    for (int i = 0; i < CHUNKS; i++) {
        fill(out[i], CHUNK, 100 + i);
        assert_fam_ok(fam_put_nonblocking(out[i], d, (uint64_t)i * CHUNK, CHUNK));
    }
    assert_fam_ok(fam_quiet());
    assert_int_equal(fam_progress(), 0);
    for (int i = 0; i < CHUNKS; i++) {
        memset(in[i], 0, CHUNK);
        assert_fam_ok(fam_get_blocking(in[i], d, (uint64_t)i * CHUNK, CHUNK));
        assert_memory_equal(in[i], out[i], CHUNK);
    }
    memset(in, 0, sizeof in);
    for (int i = CHUNKS - 1; i >= 0; i--)
        assert_fam_ok(fam_get_nonblocking(in[i], d, (uint64_t)i * CHUNK, CHUNK));
    assert_fam_ok(fam_quiet());
    assert_int_equal(fam_progress(), 0);
    assert_memory_equal(in, out, sizeof in);
    /* Quiet with nothing outstanding is a no-op. */
    assert_fam_ok(fam_quiet());
    assert_fam_ok(fam_deallocate(d));
}

static void test_fence_orders_puts(void **state)
{
    (void)state;
    fam_desc_t *d = new_item(64);
    static uint64_t vals[200];
    for (int round = 0; round < 100; round++) {
        vals[2 * round] = 1000 + round;
        vals[2 * round + 1] = 2000 + round;
        assert_fam_ok(fam_put_nonblocking(&vals[2 * round], d, 0, 8));
        assert_fam_ok(fam_fence());
        assert_fam_ok(fam_put_nonblocking(&vals[2 * round + 1], d, 0, 8));
        assert_fam_ok(fam_quiet());
        uint64_t got = 0;
        assert_fam_ok(fam_get_blocking(&got, d, 0, 8));
        assert_int_equal(got, 2000 + round);
    }
    assert_fam_ok(fam_deallocate(d));
}

static void test_strided(void **state)
{
    (void)state;
    enum { ELEMS = 256 };
    fam_desc_t *d = new_item(ELEMS * 8);
    uint64_t background[ELEMS], all[ELEMS], src[10], dst[10];
    for (int i = 0; i < ELEMS; i++)
        background[i] = 0xb0b0000000000000ULL + i;
    assert_fam_ok(fam_put_blocking(background, d, 0, sizeof background));
    for (int i = 0; i < 10; i++)
        src[i] = 0xaaaa0000 + i;

    /* Blocking: elements 3, 10, 17, ... 66. */
    assert_fam_ok(fam_scatter_blocking_strided(src, d, 10, 3, 7, 8));
    assert_fam_ok(fam_get_blocking(all, d, 0, sizeof all));
    for (int i = 0; i < ELEMS; i++) {
        uint64_t want = (i >= 3 && (i - 3) % 7 == 0 && (i - 3) / 7 < 10) ? src[(i - 3) / 7] : background[i];
        if (all[i] != want)
            fail_msg("element %d is %#llx, want %#llx", i, (unsigned long long)all[i], (unsigned long long)want);
    }
    memset(dst, 0, sizeof dst);
    assert_fam_ok(fam_gather_blocking_strided(dst, d, 10, 3, 7, 8));
    assert_memory_equal(dst, src, sizeof src);

    /* Non-blocking, 4-byte elements, ending on the item's last element. */
    uint32_t s4[4] = {11, 22, 33, 44}, g4[4] = {0};
    const uint64_t first = 2 * ELEMS - 1 - 3 * 100;
    assert_fam_ok(fam_scatter_nonblocking_strided(s4, d, 4, first, 100, 4));
    assert_fam_ok(fam_quiet());
    assert_fam_ok(fam_gather_nonblocking_strided(g4, d, 4, first, 100, 4));
    assert_fam_ok(fam_quiet());
    assert_memory_equal(g4, s4, sizeof s4);
    uint32_t last = 0;
    assert_fam_ok(fam_get_blocking(&last, d, ELEMS * 8 - 4, 4));
    assert_int_equal(last, 44);

    /* elem_size larger than the stride step is allowed: the whole element. */
    uint8_t wide[2][16], wback[2][16];
    memset(wide[0], 0x11, 16);
    memset(wide[1], 0x22, 16);
    assert_fam_ok(fam_scatter_blocking_strided(wide, d, 2, 1, 3, 16));
    assert_fam_ok(fam_gather_blocking_strided(wback, d, 2, 1, 3, 16));
    assert_memory_equal(wback, wide, sizeof wide);
    assert_fam_ok(fam_deallocate(d));
}

typedef int (*strided_fn)(void *, fam_desc_t *, uint64_t, uint64_t, uint64_t, uint64_t);

static void check_strided_errors(const char *name, strided_fn f)
{
    enum { ELEMS = 64 };
    fam_desc_t *d = new_item(ELEMS * 8);
    uint64_t buf[ELEMS];
    memset(buf, 0, sizeof buf);
    struct { uint64_t n, first, stride, es; int code; } cases[] = {
        {0, 0, 1, 8, FAM_EINVAL},
        {1, 0, 1, 0, FAM_EINVAL},
        {1, ELEMS, 1, 8, FAM_ERANGE},
        {9, 0, 8, 8, FAM_ERANGE}, /* elements 0, 8, ... 64: the last is one past the end */
        {2, 0, UINT64_MAX / 8, 8, FAM_ERANGE},
        {2, 0, UINT64_MAX, 8, FAM_ERANGE},
        {1, UINT64_MAX, 1, 8, FAM_ERANGE},
        {1, 0, 1, ELEMS * 8 + 8, FAM_ERANGE},
        {UINT64_MAX, 0, 1, 8, FAM_ERANGE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = f(buf, d, cases[i].n, cases[i].first, cases[i].stride, cases[i].es);
        if (rc == 0)
            rc = fam_quiet();
        if (rc != -cases[i].code || fam_errcode() != cases[i].code)
            fail_msg("%s case %zu returned %d errcode %d, want %d (%s)", name, i, rc, fam_errcode(),
                     -cases[i].code, fam_errmsg());
        assert_fam_ok(fam_quiet());
    }
    int rc = f(NULL, d, 1, 0, 1, 8);
    if (rc == 0)
        rc = fam_quiet();
    assert_int_equal(rc, -FAM_EINVAL);
    assert_fam_ok(f(buf, d, 7, 0, 9, 8));
    assert_fam_ok(fam_quiet());
    assert_fam_ok(fam_deallocate(d));
}

static void test_strided_errors(void **state)
{
    (void)state;
    check_strided_errors("fam_gather_blocking_strided", fam_gather_blocking_strided);
    check_strided_errors("fam_scatter_blocking_strided", fam_scatter_blocking_strided);
    check_strided_errors("fam_gather_nonblocking_strided", fam_gather_nonblocking_strided);
    check_strided_errors("fam_scatter_nonblocking_strided", fam_scatter_nonblocking_strided);
}

static void test_indexed(void **state)
{
    (void)state;
    enum { ELEMS = 256 };
    fam_desc_t *d = new_item(ELEMS * 8);
    uint64_t all[ELEMS], src[6], dst[6];
    const uint64_t index[6] = {5, 0, 255, 17, 100, 6};
    for (int i = 0; i < 6; i++)
        src[i] = 0xc0de0000 + i;
    assert_fam_ok(fam_scatter_blocking_indexed(src, d, 6, index, 8));
    assert_fam_ok(fam_get_blocking(all, d, 0, sizeof all));
    for (int i = 0; i < ELEMS; i++) {
        uint64_t want = 0;
        for (int k = 0; k < 6; k++)
            if (index[k] == (uint64_t)i)
                want = src[k];
        if (all[i] != want)
            fail_msg("element %d is %#llx, want %#llx", i, (unsigned long long)all[i], (unsigned long long)want);
    }
    memset(dst, 0, sizeof dst);
    assert_fam_ok(fam_gather_blocking_indexed(dst, d, 6, index, 8));
    assert_memory_equal(dst, src, sizeof src);

    /* Non-blocking with 2-byte elements; repeated indices read the same element. */
    uint16_t s2[3] = {0x1111, 0x2222, 0x3333}, g2[5] = {0};
    const uint64_t i2[3] = {1023, 0, 512};
    const uint64_t r2[5] = {512, 1023, 0, 0, 512};
    assert_fam_ok(fam_scatter_nonblocking_indexed(s2, d, 3, i2, 2));
    assert_fam_ok(fam_quiet());
    assert_fam_ok(fam_gather_nonblocking_indexed(g2, d, 5, r2, 2));
    assert_fam_ok(fam_quiet());
    assert_int_equal(g2[0], 0x3333);
    assert_int_equal(g2[1], 0x1111);
    assert_int_equal(g2[2], 0x2222);
    assert_int_equal(g2[3], 0x2222);
    assert_int_equal(g2[4], 0x3333);
    assert_fam_ok(fam_deallocate(d));
}

typedef int (*indexed_fn)(void *, fam_desc_t *, uint64_t, const uint64_t *, uint64_t);

static void check_indexed_errors(const char *name, indexed_fn f)
{
    enum { ELEMS = 64 };
    fam_desc_t *d = new_item(ELEMS * 8);
    uint64_t buf[4] = {0};
    const uint64_t ok_idx[2] = {0, ELEMS - 1};
    const uint64_t out_idx[2] = {0, ELEMS};
    const uint64_t ovf_idx[2] = {UINT64_MAX / 8 + 1, 0};
    const uint64_t max_idx[1] = {UINT64_MAX};
    struct { uint64_t n; const uint64_t *idx; uint64_t es; int code; } cases[] = {
        {0, ok_idx, 8, FAM_EINVAL},
        {2, ok_idx, 0, FAM_EINVAL},
        {2, NULL, 8, FAM_EINVAL},
        {2, out_idx, 8, FAM_ERANGE},
        {2, ovf_idx, 8, FAM_ERANGE},
        {1, max_idx, 8, FAM_ERANGE},
        {2, ok_idx, 16, FAM_ERANGE}, /* element 63 of 16 bytes ends past the item */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = f(buf, d, cases[i].n, cases[i].idx, cases[i].es);
        if (rc == 0)
            rc = fam_quiet();
        if (rc != -cases[i].code || fam_errcode() != cases[i].code)
            fail_msg("%s case %zu returned %d errcode %d, want %d (%s)", name, i, rc, fam_errcode(),
                     -cases[i].code, fam_errmsg());
        assert_fam_ok(fam_quiet());
    }
    int rc = f(NULL, d, 2, ok_idx, 8);
    if (rc == 0)
        rc = fam_quiet();
    assert_int_equal(rc, -FAM_EINVAL);
    assert_fam_ok(f(buf, d, 2, ok_idx, 8));
    assert_fam_ok(fam_quiet());
    assert_fam_ok(fam_deallocate(d));
}

static void test_indexed_errors(void **state)
{
    (void)state;
    check_indexed_errors("fam_gather_blocking_indexed", fam_gather_blocking_indexed);
    check_indexed_errors("fam_scatter_blocking_indexed", fam_scatter_blocking_indexed);
    check_indexed_errors("fam_gather_nonblocking_indexed", fam_gather_nonblocking_indexed);
    check_indexed_errors("fam_scatter_nonblocking_indexed", fam_scatter_nonblocking_indexed);
}

static void test_map_unmap(void **state)
{
    (void)state;
    enum { SIZE = 8192 };
    fam_desc_t *d = new_item(SIZE);
    uint8_t *p = assert_fam_ptr((uint8_t *)fam_map(d));
    uint8_t out[SIZE], in[SIZE];

    fill(out, SIZE, 44);
    memcpy(p, out, SIZE);
    assert_fam_ok(fam_get_blocking(in, d, 0, SIZE));
    assert_memory_equal(in, out, SIZE);

    fill(out, SIZE, 45);
    assert_fam_ok(fam_put_blocking(out, d, 0, SIZE));
    assert_memory_equal(p, out, SIZE);

    /* CPU atomics on the mapping and library atomics agree. */
    assert_fam_ok(fam_set_uint64(d, 64, 10));
    __atomic_fetch_add((uint64_t *)(p + 64), 5, __ATOMIC_SEQ_CST);
    uint64_t v = 0;
    assert_fam_ok(fam_fetch_add_uint64(d, 64, 1, &v));
    assert_int_equal(v, 15);
    assert_int_equal(__atomic_load_n((uint64_t *)(p + 64), __ATOMIC_SEQ_CST), 16);

    assert_fam_ok(fam_unmap(p, d));
    assert_fam_err(fam_unmap(NULL, d), FAM_EINVAL);
    assert_fam_ok(fam_deallocate(d));
}

static void test_map_two_handles(void **state)
{
    (void)state;
    fam_desc_t *d = assert_fam_ptr(fam_allocate("mapped", 4096, 0600, g_region));
    fam_desc_t *d2 = assert_fam_ptr(fam_lookup("mapped", "api"));
    uint64_t *a = assert_fam_ptr((uint64_t *)fam_map(d));
    uint64_t *b = assert_fam_ptr((uint64_t *)fam_map(d2));
    a[7] = 0xfeedface;
    assert_int_equal(b[7], 0xfeedface);
    assert_fam_ok(fam_unmap(b, d2));
    assert_fam_ok(fam_unmap(a, d));
    assert_fam_ok(fam_close(d2));
    assert_fam_ok(fam_deallocate(d));
}

/* A wait-returning call may fail at once (NULL) or in its wait; either way
 * exactly the expected code. */
#define assert_wait_err(call, waitfn, code)                                                   \
    do {                                                                                      \
        fam_wait_t *w_ = (call);                                                              \
        if (w_ == NULL) {                                                                     \
            if (fam_errcode() != (code))                                                      \
                fail_msg("%s: NULL with errcode %d (%s), want %d", #call, fam_errcode(),      \
                         fam_errmsg(), (code));                                               \
        } else {                                                                              \
            assert_fam_err(waitfn(w_), code);                                                 \
        }                                                                                     \
    } while (0)

static void test_copy(void **state)
{
    (void)state;
    enum { SIZE = 4096 };
    fam_desc_t *src = new_item(SIZE);
    fam_desc_t *dst = new_item(SIZE);
    uint8_t out[SIZE], in[SIZE], want[SIZE];
    fill(out, SIZE, 55);
    assert_fam_ok(fam_put_blocking(out, src, 0, SIZE));

    fam_wait_t *w = assert_fam_ptr(fam_copy(src, 8, dst, 16, 1000));
    assert_fam_ok(fam_copy_wait(w));
    assert_fam_err(fam_copy_wait(w), FAM_EINVAL);
    memset(want, 0, SIZE);
    memcpy(want + 16, out + 8, 1000);
    assert_fam_ok(fam_get_blocking(in, dst, 0, SIZE));
    assert_memory_equal(in, want, SIZE);

    /* Several copies in flight at once, then waited in reverse order. */
    fam_wait_t *ws[4];
    for (int i = 0; i < 4; i++)
        ws[i] = assert_fam_ptr(fam_copy(src, (uint64_t)i * 1024, dst, (uint64_t)(3 - i) * 1024, 1024));
    for (int i = 3; i >= 0; i--)
        assert_fam_ok(fam_copy_wait(ws[i]));
    for (int i = 0; i < 4; i++)
        memcpy(want + (3 - i) * 1024, out + i * 1024, 1024);
    assert_fam_ok(fam_get_blocking(in, dst, 0, SIZE));
    assert_memory_equal(in, want, SIZE);

    assert_wait_err(fam_copy(src, SIZE - 4, dst, 0, 8), fam_copy_wait, FAM_ERANGE);
    assert_wait_err(fam_copy(src, 0, dst, SIZE - 4, 8), fam_copy_wait, FAM_ERANGE);
    assert_wait_err(fam_copy(src, UINT64_MAX - 3, dst, 0, 8), fam_copy_wait, FAM_ERANGE);
    assert_wait_err(fam_copy(src, 0, dst, UINT64_MAX - 3, 8), fam_copy_wait, FAM_ERANGE);
    assert_wait_err(fam_copy(src, 0, dst, 0, SIZE + 1), fam_copy_wait, FAM_ERANGE);
    assert_wait_err(fam_copy(src, 0, dst, 0, 0), fam_copy_wait, FAM_EINVAL);
    assert_fam_ok(fam_deallocate(src));
    assert_fam_ok(fam_deallocate(dst));
}

static int list_has(const char *list, const char *name, uint64_t *size_out)
{
    const char *p = list;
    size_t len = strlen(name);
    while (p != NULL && *p != '\0') {
        if (strncmp(p, name, len) == 0 && p[len] == ' ') {
            if (size_out != NULL)
                *size_out = strtoull(p + len + 1, NULL, 10);
            return 1;
        }
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return 0;
}

static void test_backup_restore(void **state)
{
    (void)state;
    enum { SIZE = 4096 };
    fam_desc_t *d = new_item(SIZE);
    uint8_t out[SIZE], in[SIZE];
    fill(out, SIZE, 66);
    assert_fam_ok(fam_put_blocking(out, d, 0, SIZE));

    fam_wait_t *w = assert_fam_ptr(fam_backup(d, "bk-one", NULL));
    assert_fam_ok(fam_backup_wait(w));
    assert_fam_err(fam_backup_wait(w), FAM_EINVAL);
    fam_backup_options_t bopts = {0};
    w = assert_fam_ptr(fam_backup(d, "bk-two", &bopts));
    assert_fam_ok(fam_backup_wait(w));

    char *list = assert_fam_ptr(fam_list_backup("bk-one"));
    uint64_t size = 0;
    assert_true(list_has(list, "bk-one", &size));
    assert_int_equal(size, SIZE);
    assert_false(list_has(list, "bk-two", NULL));
    free(list);
    /* As in OpenFAM, a NULL name is an error; "" lists every backup. */
    assert_fam_null(fam_list_backup(NULL), FAM_EINVAL);
    list = assert_fam_ptr(fam_list_backup(""));
    assert_true(list_has(list, "bk-one", NULL));
    assert_true(list_has(list, "bk-two", NULL));
    free(list);
    list = assert_fam_ptr(fam_list_backup("bk-"));
    assert_true(list_has(list, "bk-one", NULL) && list_has(list, "bk-two", NULL));
    free(list);
    list = assert_fam_ptr(fam_list_backup(""));
    assert_true(list_has(list, "bk-two", NULL));
    free(list);

    /* Restore into the (changed) original item. */
    memset(in, 0, SIZE);
    assert_fam_ok(fam_put_blocking(in, d, 0, SIZE));
    w = assert_fam_ptr(fam_restore("bk-one", d));
    assert_fam_ok(fam_restore_wait(w));
    assert_fam_ok(fam_get_blocking(in, d, 0, SIZE));
    assert_memory_equal(in, out, SIZE);

    /* Restore into a new named item. */
    fam_desc_t *r = NULL;
    w = assert_fam_ptr(fam_restore_region("bk-two", g_region, "restored", 0640, &r));
    assert_fam_ok(fam_restore_wait(w));
    assert_non_null(r);
    memset(in, 0, SIZE);
    assert_fam_ok(fam_get_blocking(in, r, 0, SIZE));
    assert_memory_equal(in, out, SIZE);
    fam_stat_t st;
    assert_fam_ok(fam_stat(r, &st));
    assert_string_equal(st.name, "restored");
    assert_int_equal(st.perm & 0777, 0640);
    assert_true(st.size >= SIZE);
    fam_desc_t *again = assert_fam_ptr(fam_lookup("restored", "api"));
    assert_fam_ok(fam_close(again));

    /* And into an unnamed one. */
    fam_desc_t *u = NULL;
    w = assert_fam_ptr(fam_restore_region("bk-two", g_region, NULL, 0600, &u));
    assert_fam_ok(fam_restore_wait(w));
    assert_non_null(u);
    assert_fam_ok(fam_get_blocking(in, u, 0, SIZE));
    assert_memory_equal(in, out, SIZE);

    /* Restoring into an item smaller than the backup fails. */
    fam_desc_t *small = new_item(64);
    w = fam_restore("bk-one", small);
    if (w != NULL) {
        int rc = fam_restore_wait(w);
        assert_true(rc < 0);
        assert_int_equal(fam_errcode(), -rc);
    } else {
        assert_true(fam_errcode() != 0);
    }

    /* Delete, then the backup is gone. */
    w = assert_fam_ptr(fam_delete_backup("bk-one"));
    assert_fam_ok(fam_delete_backup_wait(w));
    assert_fam_err(fam_delete_backup_wait(w), FAM_EINVAL);
    list = assert_fam_ptr(fam_list_backup(""));
    assert_false(list_has(list, "bk-one", NULL));
    assert_true(list_has(list, "bk-two", NULL));
    free(list);
    list = assert_fam_ptr(fam_list_backup("bk-one"));
    assert_string_equal(list, "");
    free(list);
    assert_wait_err(fam_restore("bk-one", d), fam_restore_wait, FAM_EBACKUPNOTFOUND);
    assert_wait_err(fam_delete_backup("bk-one"), fam_delete_backup_wait, FAM_EBACKUPNOTFOUND);

    w = assert_fam_ptr(fam_delete_backup("bk-two"));
    assert_fam_ok(fam_delete_backup_wait(w));
    assert_fam_ok(fam_deallocate(small));
    assert_fam_ok(fam_deallocate(u));
    assert_fam_ok(fam_deallocate(r));
    assert_fam_ok(fam_deallocate(d));
}

static void test_backup_errors(void **state)
{
    (void)state;
    fam_desc_t *d = new_item(128);
    assert_fam_null(fam_backup(d, NULL, NULL), FAM_EINVAL);
    assert_fam_null(fam_backup(d, "", NULL), FAM_EINVAL);
    assert_fam_null(fam_restore(NULL, d), FAM_EINVAL);
    assert_fam_null(fam_delete_backup(NULL), FAM_EINVAL);
    fam_desc_t *out = NULL;
    assert_fam_null(fam_restore_region("x", g_region, "y", 0600, NULL), FAM_EINVAL);
    assert_wait_err(fam_restore_region("never-made", g_region, "y", 0600, &out), fam_restore_wait,
                    FAM_EBACKUPNOTFOUND);
    assert_fam_null(fam_lookup("y", "api"), FAM_ENOTFOUND);

    /* A second backup under a used name is refused, the first one is kept. */
    fam_wait_t *w = assert_fam_ptr(fam_backup(d, "bk-dup", NULL));
    assert_fam_ok(fam_backup_wait(w));
    w = fam_backup(d, "bk-dup", NULL);
    int code = w == NULL ? fam_errcode() : -fam_backup_wait(w);
    if (code != FAM_EEXIST && code != FAM_EBACKUPNOTCREATED)
        fail_msg("second backup named bk-dup: error %d (%s), want FAM_EEXIST or FAM_EBACKUPNOTCREATED",
                 code, fam_errmsg());
    w = assert_fam_ptr(fam_delete_backup("bk-dup"));
    assert_fam_ok(fam_delete_backup_wait(w));
    assert_fam_ok(fam_deallocate(d));
}

/* Counts the lines of listing that equal line (which ends in '\n'). */
static int count_lines(const char *listing, const char *line)
{
    int n = 0;
    size_t len = strlen(line);
    for (const char *p = listing; *p != '\0';) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl); /* every line, the last included, ends in '\n' */
        if ((size_t)(nl + 1 - p) == len && memcmp(p, line, len) == 0)
            n++;
        p = nl + 1;
    }
    return n;
}

/* The line fam_list_regions should give for r, from fam_stat_region. */
static void region_line(fam_region_t *r, char *out, size_t n)
{
    fam_stat_t st;
    assert_fam_ok(fam_stat_region(r, &st));
    snprintf(out, n, "%s\t%llu\t%04o\t%u\t%u\n", st.name, (unsigned long long)st.size, (unsigned)st.perm & 0777,
             st.uid, st.gid);
}

/* The line fam_list_items should give for d, from fam_stat and its global
 * descriptor. */
static void item_line(fam_desc_t *d, char *out, size_t n)
{
    fam_stat_t st;
    fam_global_desc_t g;
    assert_fam_ok(fam_stat(d, &st));
    assert_fam_ok(fam_desc_global(d, &g));
    snprintf(out, n, "%s\t%llu\t%llu\t%04o\t%u\t%u\n", st.name, (unsigned long long)g.offset,
             (unsigned long long)st.size, (unsigned)st.perm & 0777, st.uid, st.gid);
}

/* fam_list_regions and fam_list_items describe what exists, one
 * tab-separated line each, and follow destruction and deallocation. */
static void test_list_regions_and_items(void **state)
{
    (void)state;
    char la[512], lb[512], l1[512], l2[512], l3[512];
    fam_region_attr_t dataitem = {FAM_REDUNDANCY_DEFAULT, FAM_MEMORY_DEFAULT, FAM_INTERLEAVE_DEFAULT,
                                  FAM_PERMISSION_DATAITEM};
    /* A name with a space and UTF-8: only control characters are refused,
     * so tabs and newlines cannot appear in a name. */
    fam_region_t *a = assert_fam_ptr(fam_create_region("list a \xc3\xa9", 1 << 20, 0640, NULL));
    /* The owner sees its own region whatever the mode. */
    fam_region_t *b = assert_fam_ptr(fam_create_region("list-b", 2 << 20, 0000, &dataitem));
    region_line(a, la, sizeof la);
    region_line(b, lb, sizeof lb);
    assert_non_null(strstr(la, "list a \xc3\xa9\t"));
    assert_non_null(strstr(lb, "\t0000\t"));

    char *s = assert_fam_ptr(fam_list_regions());
    assert_int_equal(count_lines(s, la), 1);
    assert_int_equal(count_lines(s, lb), 1);
    free(s);

    /* An empty region lists no items: "", not NULL. */
    s = assert_fam_ptr(fam_list_items(a));
    assert_string_equal(s, "");
    free(s);

    fam_desc_t *d1 = assert_fam_ptr(fam_allocate("first", 1000, 0640, a));
    fam_desc_t *d2 = assert_fam_ptr(fam_allocate(NULL, 4096, 0600, a));
    fam_desc_t *d3 = assert_fam_ptr(fam_allocate("own-mode", 64, 0444, b));
    item_line(d1, l1, sizeof l1);
    item_line(d2, l2, sizeof l2);
    item_line(d3, l3, sizeof l3);
    assert_int_equal(strncmp(l2, "\t", 1), 0); /* unnamed: empty name field */

    s = assert_fam_ptr(fam_list_items(a));
    assert_int_equal(count_lines(s, l1), 1);
    assert_int_equal(count_lines(s, l2), 1);
    assert_int_equal(count_lines(s, l3), 0);
    /* Ascending offsets: first was allocated before the unnamed item. */
    fam_global_desc_t g1, g2;
    assert_fam_ok(fam_desc_global(d1, &g1));
    assert_fam_ok(fam_desc_global(d2, &g2));
    assert_true((g1.offset < g2.offset) == (strstr(s, l1) < strstr(s, l2)));
    free(s);

    /* With data item-level permissions, an item's own mode is listed. */
    s = assert_fam_ptr(fam_list_items(b));
    assert_string_equal(s, l3);
    assert_non_null(strstr(l3, "\t0444\t"));
    free(s);

    /* Deallocated items and destroyed regions leave the listings. */
    assert_fam_ok(fam_deallocate(d1));
    s = assert_fam_ptr(fam_list_items(a));
    assert_string_equal(s, l2);
    free(s);
    assert_fam_ok(fam_deallocate(d2));
    assert_fam_ok(fam_deallocate(d3));
    assert_fam_ok(fam_destroy_region(b));
    s = assert_fam_ptr(fam_list_regions());
    assert_int_equal(count_lines(s, la), 1);
    assert_int_equal(count_lines(s, lb), 0);
    free(s);

    /* Bad handles are refused; a released one too. */
    assert_fam_null(fam_list_items(NULL), FAM_EINVAL);
    assert_fam_null(fam_list_items(GARBAGE_PTR), FAM_EINVAL);
    assert_fam_null(fam_list_items(b), FAM_EINVAL);
    assert_fam_ok(fam_destroy_region(a));
}

/* Mode bits outside 0777 and path-like names are refused with FAM_EINVAL, with
 * a message naming the value, and change nothing. */
static void test_mode_and_name_errors(void **state)
{
    (void)state;
    static const mode_t bad_modes[] = {01777, 04600, 0100600, (mode_t)-1};
    for (size_t i = 0; i < sizeof bad_modes / sizeof bad_modes[0]; i++) {
        mode_t m = bad_modes[i];
        char want[32];
        snprintf(want, sizeof want, "%#o", (unsigned)m);
        assert_fam_null(fam_create_region("bad-mode", 4096, m, NULL), FAM_EINVAL);
        if (strstr(fam_errmsg(), want) == NULL)
            fail_msg("mode %s: message %s does not name it", want, fam_errmsg());
        assert_fam_null(fam_lookup_region("bad-mode"), FAM_ENOTFOUND);
        assert_fam_null(fam_allocate("bad-mode", 64, m, g_region), FAM_EINVAL);
        assert_fam_null(fam_lookup("bad-mode", "api"), FAM_ENOTFOUND);
        assert_fam_err(fam_change_region_permissions(g_region, m), FAM_EINVAL);
        fam_desc_t *d = new_item(64);
        assert_fam_err(fam_change_permissions(d, m), FAM_EINVAL);
        fam_stat_t st;
        assert_fam_ok(fam_stat(d, &st));
        assert_int_equal(st.perm, 0600);

        fam_wait_t *w = assert_fam_ptr(fam_backup(d, "bk-mode", NULL));
        assert_fam_ok(fam_backup_wait(w));
        fam_desc_t *out = NULL;
        assert_fam_null(fam_restore_region("bk-mode", g_region, "bad-mode", m, &out), FAM_EINVAL);
        assert_null(out);
        assert_fam_null(fam_lookup("bad-mode", "api"), FAM_ENOTFOUND);
        w = assert_fam_ptr(fam_delete_backup("bk-mode"));
        assert_fam_ok(fam_delete_backup_wait(w));
        assert_fam_ok(fam_deallocate(d));
    }
    fam_stat_t rs;
    assert_fam_ok(fam_stat_region(g_region, &rs));
    assert_int_equal(rs.perm & ~0777u, 0);

    static const char *bad_names[] = {".", "..", "a/b", "/", "tab\tname", "nl\n", "del\x7f", "\x1b[31m"};
    fam_desc_t *d = new_item(64);
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        const char *n = bad_names[i];
        assert_fam_null(fam_create_region(n, 4096, 0600, NULL), FAM_EINVAL);
        assert_fam_null(fam_lookup_region(n), FAM_EINVAL);
        assert_fam_null(fam_allocate(n, 64, 0600, g_region), FAM_EINVAL);
        assert_fam_null(fam_lookup(n, "api"), FAM_EINVAL);
        assert_fam_null(fam_backup(d, n, NULL), FAM_EINVAL);
        assert_fam_null(fam_restore(n, d), FAM_EINVAL);
        assert_fam_null(fam_delete_backup(n), FAM_EINVAL);
    }
    /* Dots inside a name and UTF-8 are names, not paths. */
    fam_region_t *r = assert_fam_ptr(fam_create_region("...", 4096, 0600, NULL));
    assert_fam_ok(fam_destroy_region(r));
    r = assert_fam_ptr(fam_create_region("r\xc3\xa9gion.v2", 4096, 0777, NULL));
    assert_fam_ok(fam_destroy_region(r));
    assert_fam_ok(fam_deallocate(d));
}

/* ---- contexts ------------------------------------------------------------------ */

static void test_context_data_path(void **state)
{
    (void)state;
    enum { ELEMS = 512 };
    fam_ctx_t *c = assert_fam_ptr(fam_context_open());
    fam_desc_t *d = new_item(ELEMS * 8);
    fam_desc_t *d2 = new_item(ELEMS * 8);
    uint64_t out[ELEMS], in[ELEMS];
    for (int i = 0; i < ELEMS; i++)
        out[i] = 0x5000 + i;

    assert_fam_ok(fam_ctx_put_blocking(c, out, d, 0, sizeof out));
    memset(in, 0, sizeof in);
    assert_fam_ok(fam_ctx_get_blocking(c, in, d, 0, sizeof in));
    assert_memory_equal(in, out, sizeof in);

    for (int i = 0; i < ELEMS; i++)
        out[i] = 0x6000 + i;
    for (int k = 0; k < 8; k++)
        assert_fam_ok(fam_ctx_put_nonblocking(c, out + k * 64, d, (uint64_t)k * 512, 512));
    assert_fam_ok(fam_ctx_quiet(c));
    assert_int_equal(fam_ctx_progress(c), 0);
    memset(in, 0, sizeof in);
    assert_fam_ok(fam_ctx_get_nonblocking(c, in, d, 0, sizeof in));
    assert_fam_ok(fam_ctx_quiet(c));
    assert_memory_equal(in, out, sizeof in);

    uint64_t s[4] = {1, 2, 3, 4}, g[4] = {0};
    assert_fam_ok(fam_ctx_scatter_blocking_strided(c, s, d, 4, 1, 10, 8));
    assert_fam_ok(fam_ctx_gather_blocking_strided(c, g, d, 4, 1, 10, 8));
    assert_memory_equal(g, s, sizeof s);
    for (int i = 0; i < 4; i++)
        s[i] += 100;
    assert_fam_ok(fam_ctx_scatter_nonblocking_strided(c, s, d, 4, 2, 10, 8));
    assert_fam_ok(fam_ctx_fence(c));
    assert_fam_ok(fam_ctx_gather_nonblocking_strided(c, g, d, 4, 2, 10, 8));
    assert_fam_ok(fam_ctx_quiet(c));
    assert_memory_equal(g, s, sizeof s);

    const uint64_t idx[4] = {500, 3, 77, 1};
    for (int i = 0; i < 4; i++)
        s[i] += 100;
    assert_fam_ok(fam_ctx_scatter_blocking_indexed(c, s, d, 4, idx, 8));
    memset(g, 0, sizeof g);
    assert_fam_ok(fam_ctx_gather_blocking_indexed(c, g, d, 4, idx, 8));
    assert_memory_equal(g, s, sizeof s);
    for (int i = 0; i < 4; i++)
        s[i] += 100;
    assert_fam_ok(fam_ctx_scatter_nonblocking_indexed(c, s, d, 4, idx, 8));
    assert_fam_ok(fam_ctx_quiet(c));
    memset(g, 0, sizeof g);
    assert_fam_ok(fam_ctx_gather_nonblocking_indexed(c, g, d, 4, idx, 8));
    assert_fam_ok(fam_ctx_quiet(c));
    assert_memory_equal(g, s, sizeof s);
    /* The data written through the context is what the default context sees. */
    uint64_t v = 0;
    assert_fam_ok(fam_get_blocking(&v, d, 500 * 8, 8));
    assert_int_equal(v, s[0]);

    fam_wait_t *w = assert_fam_ptr(fam_ctx_copy(c, d, 0, d2, 8, 64));
    assert_fam_ok(fam_copy_wait(w));
    assert_fam_ok(fam_get_blocking(in, d, 0, 64));
    uint64_t cp[8];
    assert_fam_ok(fam_get_blocking(cp, d2, 8, 64));
    assert_memory_equal(cp, in, 64);

    /* Context argument errors. */
    assert_fam_err(fam_ctx_gather_blocking_strided(c, g, d, 1, ELEMS, 1, 8), FAM_ERANGE);
    assert_fam_err(fam_ctx_scatter_blocking_indexed(c, s, d, 1, NULL, 8), FAM_EINVAL);
    assert_nb_err(fam_ctx_gather_nonblocking_indexed(c, g, d, 1, (const uint64_t[]){ELEMS}, 8),
                  fam_ctx_quiet(c), FAM_ERANGE);
    assert_nb_err(fam_ctx_scatter_nonblocking_strided(c, s, d, 2, 0, UINT64_MAX, 8),
                  fam_ctx_quiet(c), FAM_ERANGE);
    assert_wait_err(fam_ctx_copy(c, d, UINT64_MAX - 3, d2, 0, 8), fam_copy_wait, FAM_ERANGE);

    assert_fam_ok(fam_context_close(c));
    assert_fam_ok(fam_deallocate(d));
    assert_fam_ok(fam_deallocate(d2));
}

static void test_context_quiet_is_per_context(void **state)
{
    (void)state;
    fam_ctx_t *c1 = assert_fam_ptr(fam_context_open());
    fam_ctx_t *c2 = assert_fam_ptr(fam_context_open());
    assert_ptr_not_equal(c1, c2);
    fam_desc_t *d = new_item(4096);
    uint64_t v = 1;

    /* An error of c1's operation is reported by c1's quiet only. */
    int rc = fam_ctx_put_nonblocking(c1, &v, d, 4096, 8);
    if (rc == 0) {
        assert_fam_ok(fam_ctx_quiet(c2));
        assert_fam_ok(fam_quiet());
        assert_fam_err(fam_ctx_quiet(c1), FAM_ERANGE);
    } else {
        assert_int_equal(rc, -FAM_ERANGE);
    }
    assert_fam_ok(fam_ctx_quiet(c1));

    /* Work on both contexts completes independently. */
    static uint64_t a[256], b[256], in[256];
    for (int i = 0; i < 256; i++) {
        a[i] = 0xa000 + i;
        b[i] = 0xb000 + i;
    }
    assert_fam_ok(fam_ctx_put_nonblocking(c1, a, d, 0, 1024));
    assert_fam_ok(fam_ctx_put_nonblocking(c2, b, d, 1024, 1024));
    assert_fam_ok(fam_ctx_quiet(c1));
    assert_fam_ok(fam_ctx_get_blocking(c2, in, d, 0, 1024));
    assert_memory_equal(in, a, 1024);
    assert_fam_ok(fam_ctx_quiet(c2));
    assert_fam_ok(fam_ctx_get_blocking(c1, in, d, 1024, 1024));
    assert_memory_equal(in, b, 1024);

    assert_fam_ok(fam_context_close(c2));
    /* c1 still works after c2 is closed. */
    assert_fam_ok(fam_ctx_put_blocking(c1, &v, d, 0, 8));
    assert_fam_ok(fam_context_close(c1));

    /* Closed contexts are stale handles. */
    int64_t old;
    assert_fam_err(fam_context_close(c1), FAM_EINVAL);
    assert_fam_err(fam_ctx_quiet(c1), FAM_EINVAL);
    assert_fam_err(fam_ctx_fence(c2), FAM_EINVAL);
    assert_fam_err(fam_ctx_get_blocking(c1, &v, d, 0, 8), FAM_EINVAL);
    assert_fam_err(fam_ctx_fetch_add_int64(c1, d, 0, 1, &old), FAM_EINVAL);
    assert_fam_null(fam_ctx_copy(c2, d, 0, d, 8, 8), FAM_EINVAL);
    assert_int_equal(fam_ctx_progress(c1), 0);
    assert_fam_ok(fam_deallocate(d));
}

/* ---- fam_abort, finalize, persistence ---------------------------------------- */

static void test_abort_ends_the_process(void **state)
{
    (void)state;
    char store[4096];
    famtest_mkdtemp(store, sizeof store, "abort");
    char *args[] = {"--abort-child", NULL};
    int status = famtest_run_self(args, store);
    famtest_remove_dir(store);
    assert_int_equal(status, 7);
}

static void test_prepare_persistent_data(void **state)
{
    (void)state;
    fam_region_attr_t attr = {FAM_REDUNDANCY_DEFAULT, FAM_MEMORY_PERSISTENT, FAM_INTERLEAVE_DEFAULT,
                              FAM_PERMISSION_DEFAULT};
    fam_region_t *r = assert_fam_ptr(fam_create_region("persist", 1 << 20, 0600, &attr));
    fam_desc_t *d = assert_fam_ptr(fam_allocate("kept", PERSIST_BYTES, 0600, r));
    uint8_t out[PERSIST_BYTES];
    fill(out, PERSIST_BYTES, 77);
    assert_fam_ok(fam_put_blocking(out, d, 0, PERSIST_BYTES / 2));
    /* The second half goes out non-blocking and is left for fam_finalize to
     * complete: the child process checks it arrived. */
    static uint8_t tail[PERSIST_BYTES / 2];
    memcpy(tail, out + PERSIST_BYTES / 2, sizeof tail);
    assert_fam_ok(fam_put_nonblocking(tail, d, PERSIST_BYTES / 2, sizeof tail));
    g_stale_region = r;
    g_stale_desc = d;
    g_stale_ctx = assert_fam_ptr(fam_context_open());
}

static void test_finalize(void **state)
{
    (void)state;
    /* As in OpenFAM, the group name may be NULL: it selects nothing. */
    assert_fam_ok(fam_finalize(NULL));
}

/* ---- after fam_finalize -------------------------------------------------------- */

static void test_calls_after_finalize(void **state)
{
    (void)state;
    uint64_t v = 0;
    int64_t old;
    fam_stat_t st;
    assert_fam_err(fam_get_blocking(&v, g_stale_desc, 0, 8), FAM_EINVAL);
    assert_fam_err(fam_put_blocking(&v, g_stale_desc, 0, 8), FAM_EINVAL);
    assert_fam_err(fam_fetch_add_int64(g_stale_desc, 0, 1, &old), FAM_EINVAL);
    assert_fam_err(fam_stat(g_stale_desc, &st), FAM_EINVAL);
    assert_fam_err(fam_close(g_stale_desc), FAM_EINVAL);
    assert_fam_err(fam_stat_region(g_stale_region, &st), FAM_EINVAL);
    assert_fam_err(fam_destroy_region(g_stale_region), FAM_EINVAL);
    assert_fam_err(fam_ctx_quiet(g_stale_ctx), FAM_EINVAL);
    assert_fam_err(fam_context_close(g_stale_ctx), FAM_EINVAL);
    assert_fam_err(fam_finalize("test"), FAM_EINVAL);
    assert_fam_err(fam_quiet(), FAM_EINVAL);
    assert_fam_err(fam_barrier_all(), FAM_EINVAL);
    assert_fam_null(fam_create_region("late", 4096, 0600, NULL), FAM_EINVAL);
    assert_fam_null(fam_lookup("kept", "persist"), FAM_EINVAL);
    assert_fam_null(fam_context_open(), FAM_EINVAL);
    assert_fam_null(fam_get_option("VERSION"), FAM_EINVAL);
    assert_fam_null(fam_list_regions(), FAM_EINVAL);
    assert_fam_null(fam_list_items(g_stale_region), FAM_EINVAL);
}

static void test_persistence_across_processes(void **state)
{
    (void)state;
    char *args[] = {"--check-persist", NULL};
    assert_int_equal(famtest_run_self(args, NULL), 0);
}

/* ---- child modes ------------------------------------------------------------------ */

/* Runs in a new process on a store of its own (see famtest_run_self). */
static int child_abort(void)
{
    if (fam_initialize("child", NULL) != 0)
        return 90;
    fam_abort(7);
    return 91; /* fam_abort returned: a failure the parent reports as 91 */
}

/* As this process's uid, on nobody's store: the others' bits bind every
 * data path. */
static int child_check_foreign(void)
{
    FAMTEST_CHILD_CHECK(fam_initialize("child", NULL) == 0);
    fam_desc_t *ro = fam_lookup("ro", "foreign");
    fam_desc_t *wo = fam_lookup("wo", "foreign");
    fam_desc_t *rw = fam_lookup("rw", "foreign");
    FAMTEST_CHILD_CHECK(ro != NULL && wo != NULL && rw != NULL);
    fam_stat_t st;
    FAMTEST_CHILD_CHECK(fam_stat(ro, &st) == 0 && st.uid == 65534);
    uint64_t v = 5, got = 1, idx[1] = {0};

    /* Read-only item: every write path refuses, reads work. */
    FAMTEST_CHILD_CHECK(fam_put_blocking(&v, ro, 0, 8) == -FAM_ENOPERM);
    /* A non-blocking transfer's error belongs to the quiet, as in OpenFAM. */
    FAMTEST_CHILD_CHECK(fam_put_nonblocking(&v, ro, 0, 8) == 0 && fam_quiet() == -FAM_ENOPERM && fam_quiet() == 0);
    FAMTEST_CHILD_CHECK(fam_scatter_blocking_strided(&v, ro, 1, 0, 1, 8) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_scatter_blocking_indexed(&v, ro, 1, idx, 8) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_set_uint64(ro, 0, 1) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_fetch_add_uint64(ro, 0, 1, &got) == -FAM_ENOPERM);
    fam_wait_t *w = fam_copy(rw, 0, ro, 0, 8);
    FAMTEST_CHILD_CHECK(w == NULL ? fam_errcode() == FAM_ENOPERM : fam_copy_wait(w) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_get_blocking(&got, ro, 0, 8) == 0 && got == 0);
    FAMTEST_CHILD_CHECK(fam_fetch_uint64(ro, 0, &got) == 0);
    const uint64_t *mapped = fam_map(ro);
    FAMTEST_CHILD_CHECK(mapped != NULL && mapped[0] == 0);
    FAMTEST_CHILD_CHECK(fam_unmap((void *)mapped, ro) == 0);

    /* Write-only item: every read path refuses, writes work. */
    FAMTEST_CHILD_CHECK(fam_get_blocking(&got, wo, 0, 8) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_get_nonblocking(&got, wo, 0, 8) == 0 && fam_quiet() == -FAM_ENOPERM && fam_quiet() == 0);
    FAMTEST_CHILD_CHECK(fam_gather_blocking_strided(&got, wo, 1, 0, 1, 8) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_gather_blocking_indexed(&got, wo, 1, idx, 8) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_fetch_uint64(wo, 0, &got) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_map(wo) == NULL && fam_errcode() == FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_put_blocking(&v, wo, 0, 8) == 0);

    /* Nor may a user who is not the owner change a mode, deallocate in a
     * region it cannot write, or destroy it. */
    FAMTEST_CHILD_CHECK(fam_change_permissions(ro, 0666) == -FAM_ENOPERM);
    fam_region_t *r = fam_lookup_region("foreign");
    FAMTEST_CHILD_CHECK(r != NULL);
    FAMTEST_CHILD_CHECK(fam_change_region_permissions(r, 0700) == -FAM_ENOPERM);

    /* Region-level permissions: the region's 0644 governs its item "doc",
     * whatever the item's own 0666, and refuses allocation and destruction. */
    fam_region_t *rl = fam_lookup_region("foreign-rl");
    fam_desc_t *doc = fam_lookup("doc", "foreign-rl");
    FAMTEST_CHILD_CHECK(rl != NULL && doc != NULL);
    FAMTEST_CHILD_CHECK(fam_put_blocking(&v, doc, 0, 8) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_set_int64(doc, 0, 7) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_get_blocking(&got, doc, 0, 8) == 0 && got == 0);
    FAMTEST_CHILD_CHECK(fam_allocate("y", 64, 0600, rl) == NULL && fam_errcode() == FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_destroy_region(rl) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_finalize("child") == 0);
    return 0;
}

/* Runs in a new process on the parent's store, after the parent finalized. */
static int child_check_persist(void)
{
    if (fam_initialize("child", NULL) != 0) {
        fprintf(stderr, "child: fam_initialize: %s\n", fam_errmsg());
        return 2;
    }
    fam_region_t *r = fam_lookup_region("persist");
    fam_desc_t *d = fam_lookup("kept", "persist");
    if (r == NULL || d == NULL) {
        fprintf(stderr, "child: lookup: %s\n", fam_errmsg());
        return 3;
    }
    fam_stat_t st;
    if (fam_stat_region(r, &st) != 0 || st.region_attributes.memory_type != FAM_MEMORY_PERSISTENT) {
        fprintf(stderr, "child: region is not reported persistent\n");
        return 4;
    }
    uint8_t want[PERSIST_BYTES], got[PERSIST_BYTES];
    fill(want, PERSIST_BYTES, 77);
    if (fam_get_blocking(got, d, 0, PERSIST_BYTES) != 0) {
        fprintf(stderr, "child: get: %s\n", fam_errmsg());
        return 5;
    }
    if (memcmp(got, want, PERSIST_BYTES / 2) != 0) {
        fprintf(stderr, "child: blocking half differs\n");
        return 6;
    }
    if (memcmp(got + PERSIST_BYTES / 2, want + PERSIST_BYTES / 2, PERSIST_BYTES / 2) != 0) {
        fprintf(stderr, "child: non-blocking half (completed by fam_finalize) differs\n");
        return 7;
    }
    /* The volatile test region is not part of the persistent store check;
     * only the named persistent data must be there. */
    if (fam_finalize("child") != 0)
        return 8;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--abort-child") == 0)
        return child_abort();
    if (argc > 1 && strcmp(argv[1], "--check-persist") == 0)
        return child_check_persist();
    if (argc > 1 && strcmp(argv[1], "--make-foreign") == 0)
        return famtest_make_foreign();
    if (argc > 1 && strcmp(argv[1], "--check-foreign") == 0)
        return child_check_foreign();

    memset(NAME_LONGEST, 'n', OPENFAM_NAME_MAX);
    memset(NAME_TOO_LONG, 'n', OPENFAM_NAME_MAX + 1);
    famtest_use_fresh_store("capi", argv);
    const struct CMUnitTest before[] = {
        cmocka_unit_test(test_error_state_starts_clear),
        cmocka_unit_test(test_calls_before_initialize),
        cmocka_unit_test(test_initialize_rejects_bad_arguments),
    };
    const struct CMUnitTest initialized[] = {
        cmocka_unit_test(test_initialize_twice),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_errors_are_kept_per_thread),
        cmocka_unit_test(test_region_create_and_stat),
        cmocka_unit_test(test_region_create_errors),
        cmocka_unit_test(test_region_lookup),
        cmocka_unit_test(test_region_resize),
        cmocka_unit_test(test_region_permissions),
        cmocka_unit_test(test_region_destroy_and_stale),
        cmocka_unit_test(test_region_global),
        cmocka_unit_test(test_item_allocate_and_stat),
        cmocka_unit_test(test_item_allocate_errors),
        cmocka_unit_test(test_item_lookup),
        cmocka_unit_test(test_item_close_and_stale),
        cmocka_unit_test(test_item_deallocate_and_stale),
        cmocka_unit_test(test_garbage_and_null_handles),
        cmocka_unit_test(test_item_permissions_dataitem_level),
        cmocka_unit_test(test_item_permissions_other_user),
        cmocka_unit_test(test_item_global),
        cmocka_unit_test(test_item_global_unnamed),
        cmocka_unit_test(test_item_global_bogus),
        cmocka_unit_test(test_put_get_blocking),
        cmocka_unit_test(test_transfer_bounds),
        cmocka_unit_test(test_nonblocking_and_quiet),
        cmocka_unit_test(test_fence_orders_puts),
        cmocka_unit_test(test_strided),
        cmocka_unit_test(test_strided_errors),
        cmocka_unit_test(test_indexed),
        cmocka_unit_test(test_indexed_errors),
        cmocka_unit_test(test_map_unmap),
        cmocka_unit_test(test_map_two_handles),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_backup_restore),
        cmocka_unit_test(test_backup_errors),
        cmocka_unit_test(test_list_regions_and_items),
        cmocka_unit_test(test_mode_and_name_errors),
        cmocka_unit_test(test_context_data_path),
        cmocka_unit_test(test_context_quiet_is_per_context),
        cmocka_unit_test(test_abort_ends_the_process),
        cmocka_unit_test(test_prepare_persistent_data),
        cmocka_unit_test(test_finalize),
    };
    const struct CMUnitTest after[] = {
        cmocka_unit_test(test_calls_after_finalize),
        cmocka_unit_test(test_persistence_across_processes),
    };
    int failed = cmocka_run_group_tests_name("before initialize", before, NULL, NULL);
    failed += cmocka_run_group_tests_name("initialized", initialized, setup_initialized, NULL);
    failed += cmocka_run_group_tests_name("after finalize", after, NULL, NULL);
    famtest_remove_store();
    return failed == 0 ? 0 : 1;
}
