/*
 * handles.c - torture test of libopenfam's handle table through openfam.h:
 * garbage, NULL, wrong-kind and released handles must fail with FAM_EINVAL
 * (never crash); a reused slot must not revive an old handle; handles stay
 * correct under concurrent use, creation and release; more handles than one
 * table chunk; fork without exec is refused in the child; finalize releases
 * every handle for good. Run it on a scratch store; exits non-zero on the
 * first failed check.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Every function taking a handle rejects h cleanly. */
static void expect_rejected(uint64_t h)
{
    char buf[16];
    int64_t v;
    fam_stat_t st;
    fam_global_desc_t g;
    fam_desc_t *d = (fam_desc_t *)(uintptr_t)h;
    fam_region_t *r = (fam_region_t *)(uintptr_t)h;
    fam_ctx_t *c = (fam_ctx_t *)(uintptr_t)h;
    fam_wait_t *w = (fam_wait_t *)(uintptr_t)h;
    CHECK(fam_get_blocking(buf, d, 0, 8) == -FAM_EINVAL);
    CHECK(fam_put_nonblocking(buf, d, 0, 8) == -FAM_EINVAL);
    CHECK(fam_fetch_add_int64(d, 0, 1, &v) == -FAM_EINVAL);
    CHECK(fam_set_double(d, 0, 1.0) == -FAM_EINVAL);
    CHECK(fam_stat(d, &st) == -FAM_EINVAL);
    CHECK(fam_desc_global(d, &g) == -FAM_EINVAL);
    CHECK(fam_close(d) == -FAM_EINVAL);
    CHECK(fam_map(d) == NULL && fam_errcode() == FAM_EINVAL);
    CHECK(fam_stat_region(r, &st) == -FAM_EINVAL);
    CHECK(fam_resize_region(r, 1 << 20) == -FAM_EINVAL);
    CHECK(fam_allocate("x", 64, 0600, r) == NULL && fam_errcode() == FAM_EINVAL);
    CHECK(fam_ctx_quiet(c) == -FAM_EINVAL);
    CHECK(fam_ctx_progress(c) == 0 && fam_errcode() == FAM_EINVAL);
    CHECK(fam_context_close(c) == -FAM_EINVAL);
    CHECK(fam_copy_wait(w) == -FAM_EINVAL);
    CHECK(fam_restore_wait(w) == -FAM_EINVAL);
}

enum { THREADS = 4, ITERS = 200000, CHURN = 3000 };

static fam_desc_t *counter;
static volatile int churn_failed;

static void *adder(void *arg)
{
    fam_ctx_t *c = arg;
    for (int i = 0; i < ITERS; i++) {
        int rc = c != NULL ? fam_ctx_add_uint64(c, counter, 0, 1) : fam_add_uint64(counter, 0, 1);
        if (rc != 0) {
            fprintf(stderr, "add failed: %s\n", fam_errmsg());
            exit(1);
        }
    }
    return NULL;
}

/* Creates, uses and releases handles while the adders run, checking that a
 * released handle never works again even once its slot is reused. */
static void *churner(void *arg)
{
    (void)arg;
    fam_desc_t *prev = NULL;
    char buf[8];
    for (int i = 0; i < CHURN; i++) {
        fam_desc_t *d = fam_lookup("churn", "handles");
        fam_ctx_t *c = fam_context_open();
        if (d == NULL || c == NULL || fam_ctx_put_blocking(c, &i, d, 0, sizeof i) != 0 ||
            fam_get_blocking(buf, d, 0, sizeof i) != 0 || fam_context_close(c) != 0) {
            fprintf(stderr, "churn %d: %s\n", i, fam_errmsg());
            churn_failed = 1;
            return NULL;
        }
        if (prev != NULL && (fam_get_blocking(buf, prev, 0, 4) != -FAM_EINVAL || fam_ctx_quiet(c) != -FAM_EINVAL)) {
            fprintf(stderr, "churn %d: released handle still works\n", i);
            churn_failed = 1;
            return NULL;
        }
        if (fam_close(d) != 0) {
            churn_failed = 1;
            return NULL;
        }
        prev = d;
    }
    return NULL;
}

int main(void)
{
    CHECK(fam_initialize("default", NULL) == 0);
    fam_region_t *r = fam_create_region("handles", 1 << 20, 0600, NULL);
    CHECK(r != NULL);
    counter = fam_allocate("counter", 64, 0600, r);
    CHECK(counter != NULL);
    fam_desc_t *churn = fam_allocate("churn", 64, 0600, r);
    CHECK(churn != NULL);
    fam_ctx_t *ctx = fam_context_open();
    CHECK(ctx != NULL);

    /* NULL and garbage */
    expect_rejected(0);
    for (int i = 0; i < 20000; i++)
        expect_rejected(next_random());
    /* plausible-looking values: every kind, small indexes, generation 0 and 1 */
    for (uint64_t kind = 0; kind < 16; kind++)
        for (uint64_t idx = 0; idx < 8; idx++)
            for (uint64_t gen = 0; gen < 2; gen++) {
                uint64_t h = (gen << 32) | (kind << 28) | idx;
                if (h != (uintptr_t)r && h != (uintptr_t)counter && h != (uintptr_t)churn && h != (uintptr_t)ctx)
                    expect_rejected(h);
            }

    /* wrong kinds */
    char buf[8];
    fam_stat_t st;
    CHECK(fam_get_blocking(buf, (fam_desc_t *)r, 0, 8) == -FAM_EINVAL);
    CHECK(fam_stat_region((fam_region_t *)counter, &st) == -FAM_EINVAL);
    CHECK(strstr(fam_errmsg(), "data item") != NULL);
    CHECK(fam_ctx_quiet((fam_ctx_t *)counter) == -FAM_EINVAL);
    CHECK(fam_copy_wait((fam_wait_t *)ctx) == -FAM_EINVAL);
    CHECK(fam_close((fam_desc_t *)ctx) == -FAM_EINVAL);
    CHECK(fam_ctx_get_blocking(ctx, buf, counter, 0, 8) == 0); /* both still live */

    /* a wait handle completes only through its own *_wait call, once */
    fam_wait_t *w = fam_copy(counter, 0, churn, 8, 8);
    CHECK(w != NULL);
    CHECK(fam_backup_wait(w) == -FAM_EINVAL && strstr(fam_errmsg(), "fam_copy_wait") != NULL);
    CHECK(fam_copy_wait(w) == 0);
    CHECK(fam_copy_wait(w) == -FAM_EINVAL);

    /* a reused slot does not revive the old handle */
    fam_desc_t *a = fam_lookup("churn", "handles");
    CHECK(a != NULL && fam_close(a) == 0);
    fam_desc_t *b = fam_lookup("churn", "handles");
    CHECK(b != NULL && b != a);
    CHECK(((uintptr_t)a & 0x0fffffff) == ((uintptr_t)b & 0x0fffffff)); /* same slot */
    expect_rejected((uintptr_t)a);
    CHECK(fam_get_blocking(buf, b, 0, 8) == 0 && fam_close(b) == 0);

    /* more handles than one chunk of the table */
    enum { MANY = 5000 };
    static fam_desc_t *many[MANY];
    for (int i = 0; i < MANY; i++) {
        many[i] = fam_lookup("counter", "handles");
        CHECK(many[i] != NULL);
    }
    for (int i = 0; i < MANY; i++)
        CHECK(fam_add_uint64(many[i], 8, 1) == 0);
    uint64_t v = 0;
    CHECK(fam_fetch_uint64(counter, 8, &v) == 0 && v == MANY);
    for (int i = 0; i < MANY; i++)
        CHECK(fam_close(many[i]) == 0);
    CHECK(fam_fetch_uint64(many[MANY - 1], 8, &v) == -FAM_EINVAL);

    /* concurrency: atomics from several threads while others churn handles */
    pthread_t t[THREADS + 2];
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, adder, i % 2 ? ctx : NULL) == 0);
    for (int i = THREADS; i < THREADS + 2; i++)
        CHECK(pthread_create(&t[i], NULL, churner, NULL) == 0);
    for (int i = 0; i < THREADS + 2; i++)
        pthread_join(t[i], NULL);
    CHECK(!churn_failed);
    CHECK(fam_fetch_uint64(counter, 0, &v) == 0 && v == (uint64_t)THREADS * ITERS);

    /* fork without exec: the child is refused, the parent goes on */
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int ok = fam_get_blocking(buf, counter, 0, 8) == -FAM_EINVAL && fam_errcode() == FAM_EINVAL &&
                 strstr(fam_errmsg(), "forked") != NULL && fam_lookup_region("handles") == NULL &&
                 fam_finalize("default") == -FAM_EINVAL && fam_initialize("default", NULL) == -FAM_EINVAL;
        if (!ok)
            fprintf(stderr, "child: %s\n", fam_errmsg());
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(fam_fetch_uint64(counter, 0, &v) == 0 && v == (uint64_t)THREADS * ITERS);

    /* finalize releases every handle for good */
    CHECK(fam_finalize("default") == 0);
    CHECK(fam_initialize("default", NULL) == 0);
    expect_rejected((uintptr_t)counter);
    expect_rejected((uintptr_t)r);
    CHECK(fam_ctx_quiet(ctx) == -FAM_EINVAL);
    r = fam_lookup_region("handles");
    CHECK(r != NULL && fam_destroy_region(r) == 0);
    CHECK(fam_finalize("default") == 0);

    printf("handles: all checks passed\n");
    return 0;
}
