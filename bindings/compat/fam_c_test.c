/*
 * fam_c_test.c - every function of OpenFAM's C API (fam/fam_c.h), written
 * the way OpenFAM C programs use it. Exits 0 when every check passes.
 *
 * Runs single-PE or under famrun -n N (names carry the PE id). The
 * once-per-process initialize latch is checked in a re-executed copy of
 * this program ("latch" argument), since a failed first call is kept.
 */
#include <fam/fam_c.h>

#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int failures;
static int checks;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s (last error %d: %s)\n", __FILE__, __LINE__, #cond, \
                    c_fam_error(), c_fam_error_msg());                                             \
        }                                                                                          \
    } while (0)

/* A call expected to fail with Fam_Error code. */
#define CHECK_FAILS(call, code)                                                                    \
    do {                                                                                           \
        CHECK((call) == -1);                                                                       \
        CHECK(c_fam_error() == (code));                                                            \
    } while (0)

static int pe_id, pe_count = 1, run_id;

static void name(char *buf, size_t n, const char *tag) { snprintf(buf, n, "cc%d_%d_%s", run_id, pe_id, tag); }

/* Non-fetching, fetching and compare-swap atomics of one arithmetic type on
 * one fam handle (a fam or a context). */
#define ARITH(T, sfx, f, d, off)                                                                   \
    do {                                                                                           \
        T v_, o_;                                                                                  \
        CHECK(c_fam_set_##sfx(f, d, off, (T)10) == 0);                                             \
        CHECK(c_fam_fetch_##sfx(f, d, off, &v_) == 0 && v_ == (T)10);                              \
        CHECK(c_fam_add_##sfx(f, d, off, (T)5) == 0);                                              \
        CHECK(c_fam_subtract_##sfx(f, d, off, (T)3) == 0);                                         \
        CHECK(c_fam_fetch_##sfx(f, d, off, &v_) == 0 && v_ == (T)12);                              \
        CHECK(c_fam_min_##sfx(f, d, off, (T)7) == 0);                                              \
        CHECK(c_fam_max_##sfx(f, d, off, (T)20) == 0);                                             \
        CHECK(c_fam_fetch_##sfx(f, d, off, &v_) == 0 && v_ == (T)20);                              \
        CHECK(c_fam_fetch_add_##sfx(f, d, off, (T)2, &o_) == 0 && o_ == (T)20);                    \
        CHECK(c_fam_fetch_subtract_##sfx(f, d, off, (T)4, &o_) == 0 && o_ == (T)22);               \
        CHECK(c_fam_fetch_min_##sfx(f, d, off, (T)1, &o_) == 0 && o_ == (T)18);                    \
        CHECK(c_fam_fetch_max_##sfx(f, d, off, (T)30, &o_) == 0 && o_ == (T)1);                    \
        CHECK(c_fam_swap_##sfx(f, d, off, (T)40, &o_) == 0 && o_ == (T)30);                        \
        CHECK(c_fam_fetch_##sfx(f, d, off, &v_) == 0 && v_ == (T)40);                              \
    } while (0)

#define CAS(T, sfx, f, d, off)                                                                     \
    do {                                                                                           \
        T v_, o_;                                                                                  \
        CHECK(c_fam_set_##sfx(f, d, off, (T)5) == 0);                                              \
        CHECK(c_fam_compare_swap_##sfx(f, d, off, (T)4, (T)9, &o_) == 0 && o_ == (T)5);            \
        CHECK(c_fam_compare_swap_##sfx(f, d, off, (T)5, (T)9, &o_) == 0 && o_ == (T)5);            \
        CHECK(c_fam_fetch_##sfx(f, d, off, &v_) == 0 && v_ == (T)9);                               \
    } while (0)

#define LOGIC(T, sfx, f, d, off)                                                                   \
    do {                                                                                           \
        T v_, o_;                                                                                  \
        CHECK(c_fam_set_##sfx(f, d, off, (T)0xC) == 0);                                            \
        CHECK(c_fam_and_##sfx(f, d, off, (T)0xA) == 0);                                            \
        CHECK(c_fam_or_##sfx(f, d, off, (T)0x1) == 0);                                             \
        CHECK(c_fam_xor_##sfx(f, d, off, (T)0xF) == 0);                                            \
        CHECK(c_fam_fetch_##sfx(f, d, off, &v_) == 0 && v_ == (T)0x6);                             \
        CHECK(c_fam_fetch_and_##sfx(f, d, off, (T)0x4, &o_) == 0 && o_ == (T)0x6);                 \
        CHECK(c_fam_fetch_or_##sfx(f, d, off, (T)0x3, &o_) == 0 && o_ == (T)0x4);                  \
        CHECK(c_fam_fetch_xor_##sfx(f, d, off, (T)0x7, &o_) == 0 && o_ == (T)0x7);                 \
        CHECK(c_fam_fetch_##sfx(f, d, off, &v_) == 0 && v_ == (T)0);                               \
    } while (0)

static void atomics(c_fam *f, c_fam_desc *d) {
    ARITH(int32_t, int32, f, d, 0);
    ARITH(int64_t, int64, f, d, 16);
    ARITH(uint32_t, uint32, f, d, 32);
    ARITH(uint64_t, uint64, f, d, 48);
    ARITH(float, float, f, d, 64);
    ARITH(double, double, f, d, 80);
    CAS(int32_t, int32, f, d, 96);
    CAS(int64_t, int64, f, d, 112);
    CAS(uint32_t, uint32, f, d, 128);
    CAS(uint64_t, uint64, f, d, 144);
    LOGIC(uint32_t, uint32, f, d, 160);
    LOGIC(uint64_t, uint64, f, d, 176);
    int128_t big = (int128_t)1 << 100, big2 = big + 77, v, o;
    CHECK(c_fam_set_int128(f, d, 192, big) == 0);
    CHECK(c_fam_fetch_int128(f, d, 192, &v) == 0 && v == big);
    CHECK(c_fam_compare_swap_int128(f, d, 192, big2, big, &o) == 0 && o == big);
    CHECK(c_fam_compare_swap_int128(f, d, 192, big, big2, &o) == 0 && o == big);
    CHECK(c_fam_fetch_int128(f, d, 192, &v) == 0 && v == big2);
    CHECK_FAILS(c_fam_set_uint64(f, d, 1 << 20, 1), 13);
}

/* The first c_fam_initialize fails on a bad option; the latch keeps that
 * result for a later, valid call in the same process. */
static int latch_main(void) {
    c_fam *f = c_fam_create();
    c_fam_options bad, good;
    memset(&bad, 0, sizeof bad);
    memset(&good, 0, sizeof good);
    bad.famThreadModel = (char *)"FAM_THREAD_BOGUS";
    CHECK(c_fam_initialize(f, "default", &bad) == -1);
    CHECK(c_fam_error() == 4);
    CHECK(c_fam_initialize(f, "default", &good) == -1);
    CHECK(c_fam_error() == 4);
    c_fam_delete(f);
    printf("latch: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}

/* c_fam_abort with no launcher ends this process with the status. */
static int abort_main(void) {
    c_fam *f = c_fam_create();
    if (c_fam_initialize(f, "default", NULL) != 0)
        return 100;
    c_fam_abort(f, 5);
    return 101;
}

/* Runs this program with argument mode and returns its exit status. */
static int run_child(const char *mode) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0)
        return -1;
    exe[n] = '\0';
    char *argv[] = {exe, (char *)mode, NULL};
    pid_t pid;
    if (posix_spawn(&pid, exe, NULL, NULL, argv, environ) != 0)
        return -1;
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "latch") == 0)
        return latch_main();
    if (argc > 1 && strcmp(argv[1], "abort") == 0)
        return abort_main();
    const char *rid = getenv("COMPAT_RUN_ID");
    run_id = rid ? atoi(rid) : (int)getppid();

    /* Errors before anything exists. */
    CHECK(c_fam_error() == 0);
    CHECK_FAILS(c_fam_quiet(NULL), 4);

    c_fam *f = c_fam_create();
    CHECK(f != NULL);
    c_fam_options opts;
    memset(&opts, 0, sizeof opts);
    opts.defaultRegionName = (char *)"cDefault";
    CHECK(c_fam_initialize(f, "default", &opts) == 0);
    CHECK(c_fam_initialize(f, "default", &opts) == 0);

    /* Options. */
    const char **names = c_fam_list_options(f);
    CHECK(names != NULL && strcmp(names[0], "VERSION") == 0 && strcmp(names[16], "LOC_BUF_SIZE") == 0 &&
          names[17] == NULL);
    free(names);
    char *version = (char *)c_fam_get_option(f, "VERSION");
    CHECK(version != NULL && strcmp(version, "3.2.0") == 0);
    free(version);
    char *defname = (char *)c_fam_get_option(f, "DEFAULT_REGION_NAME");
    CHECK(defname != NULL && strcmp(defname, "cDefault") == 0);
    free(defname);
    int *idp = (int *)c_fam_get_option(f, "PE_ID");
    int *cnt = (int *)c_fam_get_option(f, "PE_COUNT");
    CHECK(idp != NULL && cnt != NULL && *idp >= 0 && *idp < *cnt);
    pe_id = idp ? *idp : 0;
    pe_count = cnt ? *cnt : 1;
    free(idp);
    free(cnt);
    uint64_t *lbs = (uint64_t *)c_fam_get_option(f, "LOC_BUF_SIZE");
    CHECK(lbs != NULL && *lbs == 0);
    free(lbs);
    CHECK(c_fam_get_option(f, "NO_SUCH_OPTION") == NULL && c_fam_error() == 4);

    /* Regions. */
    char rn[64], rn2[64], bk[64];
    name(rn, sizeof rn, "reg");
    name(rn2, sizeof rn2, "reg2");
    name(bk, sizeof bk, "bk");
    c_fam_Region_Attributes attr;
    memset(&attr, 0, sizeof attr);
    attr.redundancyLevel = NONE;
    attr.memoryType = VOLATILE;
    attr.interleaveEnable = ENABLE;
    attr.permissionLevel = DATAITEM;
    c_fam_region_desc *r = c_fam_create_region(f, rn, 1 << 20, 0777, &attr);
    CHECK(r != NULL);
    CHECK(c_fam_create_region(f, rn, 1 << 20, 0777, &attr) == NULL && c_fam_error() == 9);
    c_fam_region_desc *r2 = c_fam_create_region(f, rn2, 8192, 0777, NULL);
    CHECK(r2 != NULL);
    c_fam_stat st;
    CHECK(c_fam_stat_region(f, r, &st) == 0 && st.size >= (1u << 20) && strcmp(st.name, rn) == 0);
    CHECK(c_fam_resize_region(f, r, 2 << 20) == 0);
    CHECK(c_fam_stat_region(f, r, &st) == 0 && st.size >= (2u << 20));
    CHECK(c_fam_change_permissions_region(f, r, 0770) == 0);
    CHECK(c_fam_stat_region(f, r, &st) == 0 && (st.perm & 0777) == 0770);
    c_fam_region_desc *rl = c_fam_lookup_region(f, rn);
    CHECK(rl != NULL);
    CHECK(c_fam_lookup_region(f, "cc_no_such_region") == NULL && c_fam_error() == 8);

    /* Items. */
    c_fam_desc *d = c_fam_allocate_named(f, "item", 4096, 0600, r);
    c_fam_desc *anon = c_fam_allocate(f, 4096, 0600, r);
    c_fam_desc *dst = c_fam_allocate_named(f, "dst", 4096, 0600, r);
    CHECK(d != NULL && anon != NULL && dst != NULL);
    CHECK(c_fam_allocate_named(f, "item", 64, 0600, r) == NULL && c_fam_error() == 9);
    CHECK(c_fam_stat_data(f, d, &st) == 0 && st.size >= 4096 && strcmp(st.name, "item") == 0 &&
          (st.perm & 0777) == 0600);
    CHECK(c_fam_stat_data(f, anon, &st) == 0 && st.name != NULL && st.name[0] == '\0');
    CHECK(c_fam_change_permissions_data(f, d, 0640) == 0);
    /* As in OpenFAM: an item of a region-level region (r2, NULL attributes)
     * takes the region's mode and cannot change its own. */
    c_fam_desc *rlitem = c_fam_allocate(f, 64, 0600, r2);
    CHECK(rlitem != NULL && c_fam_change_permissions_data(f, rlitem, 0640) != 0 && c_fam_error() == 2);
    CHECK(c_fam_deallocate(f, rlitem) == 0);
    c_fam_desc *dl = c_fam_lookup(f, "item", rn);
    CHECK(dl != NULL && c_fam_stat_data(f, dl, &st) == 0 && (st.perm & 0777) == 0640);
    CHECK(c_fam_close(f, dl) == 0);
    CHECK(c_fam_lookup(f, "nothing", rn) == NULL && c_fam_error() == 8);

    /* Data path. */
    char out[256], in[256];
    for (int i = 0; i < 256; i++)
        out[i] = (char)(i + pe_id);
    CHECK(c_fam_put_blocking(f, out, d, 0, 128) == 0);
    CHECK(c_fam_put_nonblocking(f, out + 128, d, 128, 128) == 0);
    CHECK(c_fam_quiet(f) == 0);
    memset(in, 0, sizeof in);
    CHECK(c_fam_get_blocking(f, in, d, 0, 64) == 0);
    CHECK(c_fam_get_nonblocking(f, in + 64, d, 64, 192) == 0);
    CHECK(c_fam_fence(f) == 0);
    CHECK(c_fam_quiet(f) == 0);
    CHECK(memcmp(in, out, sizeof in) == 0);
    uint64_t pending = 99;
    CHECK(c_fam_progress(f, &pending) == 0 && pending == 0);
    /* Out of bounds is FAM_ERR_OUTOFRANGE here (OpenFAM throws INVALID). */
    CHECK_FAILS(c_fam_put_blocking(f, out, d, 4000, 200), 13);

    /* Gather / scatter. */
    uint64_t src[4] = {11, 22, 33, 44}, got[4], idx[4] = {9, 2, 30, 5}, all[40];
    CHECK(c_fam_scatter_blocking_stride(f, src, anon, 4, 1, 3, 8) == 0);
    CHECK(c_fam_get_blocking(f, all, anon, 0, sizeof all) == 0 && all[1] == 11 && all[10] == 44);
    memset(got, 0, sizeof got);
    CHECK(c_fam_gather_blocking_stride(f, got, anon, 4, 1, 3, 8) == 0 && memcmp(got, src, sizeof got) == 0);
    CHECK(c_fam_scatter_blocking_index(f, src, anon, 4, idx, 8) == 0);
    memset(got, 0, sizeof got);
    CHECK(c_fam_gather_blocking_index(f, got, anon, 4, idx, 8) == 0 && memcmp(got, src, sizeof got) == 0);
    src[0] = 55;
    CHECK(c_fam_scatter_nonblocking_stride(f, src, anon, 4, 0, 2, 8) == 0);
    CHECK(c_fam_quiet(f) == 0);
    memset(got, 0, sizeof got);
    CHECK(c_fam_gather_nonblocking_stride(f, got, anon, 4, 0, 2, 8) == 0);
    CHECK(c_fam_quiet(f) == 0 && memcmp(got, src, sizeof got) == 0);
    src[1] = 66;
    CHECK(c_fam_scatter_nonblocking_index(f, src, anon, 4, idx, 8) == 0);
    CHECK(c_fam_quiet(f) == 0);
    memset(got, 0, sizeof got);
    CHECK(c_fam_gather_nonblocking_index(f, got, anon, 4, idx, 8) == 0);
    CHECK(c_fam_quiet(f) == 0 && memcmp(got, src, sizeof got) == 0);

    /* Map (or FAM_ERR_UNIMPL where the memory is remote). */
    void *p = c_fam_map(f, d);
    if (p != NULL) {
        CHECK(memcmp(p, out, 16) == 0);
        CHECK(c_fam_unmap(f, p, d) == 0);
    } else {
        CHECK(c_fam_error() == 16);
    }

    /* Copy, backup, restore. */
    void *w = c_fam_copy(f, d, 0, dst, 512, 256);
    CHECK(w != NULL && c_fam_copy_wait(f, w) == 0);
    memset(in, 0, sizeof in);
    CHECK(c_fam_get_blocking(f, in, dst, 512, 256) == 0 && memcmp(in, out, 256) == 0);
    c_fam_backup_options bo;
    memset(&bo, 0, sizeof bo);
    w = c_fam_backup(f, d, bk, &bo);
    CHECK(w != NULL && c_fam_backup_wait(f, w) == 0);
    char zero[256];
    memset(zero, 0, sizeof zero);
    CHECK(c_fam_put_blocking(f, zero, dst, 0, 256) == 0);
    w = c_fam_restore(f, bk, dst);
    CHECK(w != NULL && c_fam_restore_wait(f, w) == 0);
    CHECK(c_fam_get_blocking(f, in, dst, 0, 256) == 0 && memcmp(in, out, 256) == 0);
    c_fam_desc *rest = NULL;
    w = c_fam_restore_region(f, bk, r2, "restored", 0600, &rest);
    CHECK(w != NULL && c_fam_restore_wait(f, w) == 0 && rest != NULL);
    memset(in, 0, sizeof in);
    CHECK(c_fam_get_blocking(f, in, rest, 0, 256) == 0 && memcmp(in, out, 256) == 0);
    w = c_fam_delete_backup(f, bk);
    CHECK(w != NULL && c_fam_delete_backup_wait(f, w) == 0);
    CHECK(c_fam_restore(f, bk, dst) == NULL);

    /* Atomics on the fam and on a context; the context takes data-path
     * calls and refuses control-path ones. */
    atomics(f, dst);
    c_fam_context *ctx = c_fam_context_open(f);
    CHECK(ctx != NULL);
    atomics(ctx, anon);
    CHECK(c_fam_put_nonblocking(ctx, out, d, 0, 64) == 0);
    CHECK(c_fam_quiet(ctx) == 0 && c_fam_fence(ctx) == 0);
    CHECK(c_fam_progress(ctx, &pending) == 0 && pending == 0);
    CHECK(c_fam_gather_blocking_stride(ctx, got, anon, 2, 0, 1, 8) == 0);
    w = c_fam_copy(ctx, d, 0, dst, 0, 64);
    CHECK(w != NULL && c_fam_copy_wait(ctx, w) == 0);
    CHECK(c_fam_stat_data(ctx, d, &st) == 0);
    CHECK(c_fam_allocate(ctx, 64, 0600, r) == NULL && c_fam_error() == 2);
    CHECK_FAILS(c_fam_deallocate(ctx, d), 2);
    CHECK(c_fam_context_open(ctx) == NULL && c_fam_error() == 2);
    CHECK_FAILS(c_fam_finalize(ctx, "default"), 2);
    CHECK(c_fam_context_close(f, ctx) == 0);

    /* Error state is per thread and sticky across successes. */
    CHECK(c_fam_lookup(f, "nothing", rn) == NULL);
    CHECK(c_fam_quiet(f) == 0);
    CHECK(c_fam_error() == 8 && strlen(c_fam_error_msg()) > 0);

    /* Clean up. */
    CHECK(c_fam_deallocate(f, anon) == 0);
    CHECK_FAILS(c_fam_deallocate(f, anon), 4);
    CHECK(c_fam_close(f, rest) == 0);
    CHECK(c_fam_destroy_region(f, r2) == 0);
    CHECK(c_fam_destroy_region(f, r) == 0);
    CHECK(c_fam_lookup_region(f, rn) == NULL && c_fam_error() == 8);
    (void)rl;

    CHECK_FAILS(c_fam_abort(NULL, 3), 4);

    CHECK(c_fam_finalize(f, "default") == 0);
    c_fam_delete(f);

    if (pe_id == 0 && pe_count == 1) {
        CHECK(run_child("latch") == 0);
        CHECK(run_child("abort") == 5);
    }
    printf("fam_c_test PE %d: %d checks, %d failures\n", pe_id, checks, failures);
    return failures ? 1 : 0;
}
