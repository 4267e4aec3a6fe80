/*
 * demo.c - OpenFAM on one machine, end to end, with no daemon.
 *
 * Run it twice against the same store (make demo does this):
 *   run 1: the item "demo-data" does not exist yet, so it creates a
 *          persistent region, allocates the named item, writes a table of
 *          values, reads it back with a strided gather, and has several
 *          pthreads bump shared counters with atomics;
 *   run 2: it finds the item by name, checks every value run 1 wrote
 *          (including the counters), and adds its own round of atomics.
 *          Later runs do the same, expecting one more round per run.
 * Any mismatch prints what differed and exits 1.
 *
 * Layout of the item (all little-endian 64-bit words):
 *   word 0      run counter (fetch_add by each run)
 *   word 1      atomic counter (fetch_add from THREADS threads)
 *   word 2      sum of thread ids (add)
 *   words 8..   TABLE words, table[i] = i*i + 7
 */
#include <openfam.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REGION "demo-region"
#define ITEM "demo-data"

enum {
    THREADS = 4,
    PER_THREAD = 50000,
    TABLE = 4096,
    TABLE_OFF = 64,
    ITEM_BYTES = TABLE_OFF + TABLE * 8,
};

static int failures;

static void die(const char *what)
{
    fprintf(stderr, "demo: %s failed: error %d: %s\n", what, fam_errcode(), fam_errmsg());
    exit(1);
}

static void check_u64(const char *what, uint64_t got, uint64_t want)
{
    if (got == want) {
        printf("  ok    %-44s %" PRIu64 "\n", what, got);
    } else {
        printf("  FAIL  %-44s got %" PRIu64 ", want %" PRIu64 "\n", what, got, want);
        failures++;
    }
}

static uint64_t table_value(uint64_t i)
{
    return i * i + 7;
}

struct worker {
    pthread_t tid;
    fam_desc_t *item;
    int id;
    int rc;
};

static void *bump(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < PER_THREAD && w->rc == 0; i++) {
        uint64_t old;
        w->rc = fam_fetch_add_uint64(w->item, 8, 1, &old);
    }
    if (w->rc == 0)
        w->rc = fam_add_uint64(w->item, 16, (uint64_t)w->id);
    return NULL;
}

/* Runs THREADS threads of atomics and checks the counters moved by exactly
 * their share on top of what was there before. */
static void atomics_round(fam_desc_t *item)
{
    uint64_t before = 0, sum_before = 0;
    if (fam_fetch_uint64(item, 8, &before) != 0 || fam_fetch_uint64(item, 16, &sum_before) != 0)
        die("fam_fetch_uint64");
    struct worker w[THREADS];
    for (int t = 0; t < THREADS; t++) {
        w[t] = (struct worker){.item = item, .id = t + 1};
        if (pthread_create(&w[t].tid, NULL, bump, &w[t]) != 0) {
            fprintf(stderr, "demo: pthread_create: %s\n", strerror(errno));
            exit(1);
        }
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(w[t].tid, NULL);
        if (w[t].rc != 0) {
            fprintf(stderr, "demo: thread %d: atomic failed: %d\n", t, w[t].rc);
            failures++;
        }
    }
    uint64_t after = 0, sum_after = 0;
    if (fam_fetch_uint64(item, 8, &after) != 0 || fam_fetch_uint64(item, 16, &sum_after) != 0)
        die("fam_fetch_uint64");
    printf("  %d threads x %d fam_fetch_add_uint64 on one word\n", THREADS, PER_THREAD);
    check_u64("counter grew by THREADS*PER_THREAD", after - before, (uint64_t)THREADS * PER_THREAD);
    check_u64("sum of thread ids grew by 1+..+THREADS", sum_after - sum_before,
              (uint64_t)THREADS * (THREADS + 1) / 2);
}

/* Reads the table with one strided gather (every 17th word) and checks it. */
static void strided_check(fam_desc_t *item)
{
    enum { STRIDE = 17, N = TABLE / STRIDE };
    uint64_t got[N];
    if (fam_gather_blocking_strided(got, item, N, TABLE_OFF / 8, STRIDE, 8) != 0)
        die("fam_gather_blocking_strided");
    int bad = 0;
    for (uint64_t i = 0; i < N; i++)
        bad += got[i] != table_value(i * STRIDE);
    if (bad == 0) {
        printf("  ok    strided gather of %d words (stride %d) matches\n", N, STRIDE);
    } else {
        printf("  FAIL  strided gather: %d of %d words differ\n", bad, N);
        failures++;
    }
}

static void full_check(fam_desc_t *item)
{
    static uint64_t got[TABLE];
    if (fam_get_blocking(got, item, TABLE_OFF, sizeof got) != 0)
        die("fam_get_blocking");
    int bad = 0;
    for (uint64_t i = 0; i < TABLE; i++) {
        if (got[i] != table_value(i)) {
            if (bad++ < 3)
                printf("  FAIL  table[%" PRIu64 "] = %" PRIu64 ", want %" PRIu64 "\n", i, got[i],
                       table_value(i));
        }
    }
    if (bad == 0) {
        printf("  ok    all %d table words read back with fam_get_blocking\n", TABLE);
    } else {
        printf("  FAIL  %d of %d table words differ\n", bad, TABLE);
        failures++;
    }
}

int main(void)
{
    const char *store = getenv("OPENFAM_DATA_DIR");
    printf("OpenFAM demo: embedded store in %s\n", store ? store : "the default data directory");
    if (fam_initialize("demo", NULL) != 0)
        die("fam_initialize");

    fam_desc_t *item = fam_lookup(ITEM, REGION);
    if (item == NULL && fam_errcode() != FAM_ENOTFOUND)
        die("fam_lookup");

    if (item == NULL) {
        printf("run 1: no item \"%s\" in region \"%s\" yet: creating it\n", ITEM, REGION);
        fam_region_attr_t attr = {FAM_REDUNDANCY_DEFAULT, FAM_MEMORY_PERSISTENT, FAM_INTERLEAVE_DEFAULT,
                                  FAM_PERMISSION_DEFAULT};
        fam_region_t *region = fam_create_region(REGION, 1 << 20, 0600, &attr);
        if (region == NULL)
            die("fam_create_region");
        printf("  created persistent region \"%s\" (1 MiB)\n", REGION);
        item = fam_allocate(ITEM, ITEM_BYTES, 0600, region);
        if (item == NULL)
            die("fam_allocate");
        printf("  allocated item \"%s\" (%d bytes)\n", ITEM, ITEM_BYTES);

        static uint64_t table[TABLE];
        for (uint64_t i = 0; i < TABLE; i++)
            table[i] = table_value(i);
        if (fam_put_blocking(table, item, TABLE_OFF, sizeof table) != 0)
            die("fam_put_blocking");
        printf("  wrote %d words with fam_put_blocking\n", TABLE);
        full_check(item);
        strided_check(item);
        atomics_round(item);
    } else {
        uint64_t runs = 0, counter = 0, sum = 0;
        if (fam_fetch_uint64(item, 0, &runs) != 0 || fam_fetch_uint64(item, 8, &counter) != 0 ||
            fam_fetch_uint64(item, 16, &sum) != 0)
            die("fam_fetch_uint64");
        printf("run %" PRIu64 ": found item \"%s\" in region \"%s\" by name: verifying what earlier runs wrote\n",
               runs + 1, ITEM, REGION);
        fam_stat_t st;
        if (fam_stat(item, &st) != 0)
            die("fam_stat");
        check_u64("item size", st.size, ITEM_BYTES);
        if (runs == 0) {
            printf("  FAIL  the item exists but no earlier run completed\n");
            failures++;
        }
        check_u64("counter left by earlier runs", counter, runs * THREADS * PER_THREAD);
        check_u64("thread-id sum left by earlier runs", sum, runs * THREADS * (THREADS + 1) / 2);
        full_check(item);
        strided_check(item);
        atomics_round(item);
    }

    uint64_t run = 0;
    if (fam_fetch_add_uint64(item, 0, 1, &run) != 0)
        die("fam_fetch_add_uint64");
    if (fam_close(item) != 0)
        die("fam_close");
    if (fam_finalize("demo") != 0)
        die("fam_finalize");
    if (failures != 0) {
        printf("demo run %" PRIu64 ": %d check(s) FAILED\n", run + 1, failures);
        return 1;
    }
    printf("demo run %" PRIu64 ": all checks passed%s\n", run + 1,
           run == 0 ? " (run again to check persistence)" : "");
    return 0;
}
