/*
 * A multi-PE job on redundant regions (issue 16), through the C API, for
 * tests/raid-chaos.sh: memory famds are killed with SIGKILL and restarted
 * while it runs, and at the end every acknowledged value must be there.
 *
 *   famrun -n N --servers K tests/raid/raidpe DIR
 *
 * Rank 0 creates a RAID1 region (persistent) and a RAID5 region (volatile),
 * each with a shared counter item and a records item several interleave
 * blocks long, so that they span every memory server. Then every PE loops
 * until the file DIR/stop appears (or RAIDPE_SECONDS, default 900, pass):
 * fam_fetch_add_int64 of 1 on each region's counter, and a put of its next
 * sequence-numbered 64-byte record into each region's records item (its
 * own slots: record s of PE r lives at slot (s mod S) * N + r, S the
 * slots per PE, so a long run reuses them). Each call that
 * returns success is logged, after it returned, to DIR/ack.RANK:
 *
 *   c1 OLD / c5 OLD    an acknowledged increment and the value it fetched
 *   r1 SEQ / r5 SEQ    an acknowledged record
 *   e1 ... / e5 ...    a call that failed (code and message); it may or
 *                      may not have taken effect
 *
 * The log is flushed every few iterations, so that the script sees
 * progress (its line count), and at the end. After a barrier, rank 0 reads
 * every PE's log and checks, for each region: the values fetched by the
 * acknowledged increments are pairwise distinct (an increment lost or
 * repeated on failover would repeat one); the counter is at least the
 * number of acknowledged increments, and equal when no increment failed;
 * every slot holds, with its exact 64 bytes, the last record acknowledged
 * there (or a later one whose put failed: it may have taken effect). Exit 0
 * only when every check held; rank 0 prints a summary line per region.
 */
#include <errno.h>
#include <openfam.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REC 64
#define FLUSH_EVERY 16

static int rank = -1, npes = 0;

static int die(const char *what)
{
    fprintf(stderr, "raidpe PE %d: %s failed: %s (code %d)\n", rank, what, fam_errmsg(), fam_errcode());
    return 1;
}

/* record fills the 64 bytes of record seq of PE r for level lv: a header
 * naming them, then bytes that depend on all three. */
static void record(unsigned char *b, int lv, int r, uint64_t seq)
{
    uint64_t x = 0x9e3779b97f4a7c15ull * (seq + 1) ^ ((uint64_t)r << 48) ^ ((uint64_t)lv << 56);
    memcpy(b, "RAID", 4);
    b[4] = (unsigned char)lv;
    b[5] = (unsigned char)r;
    b[6] = b[7] = 0;
    memcpy(b + 8, &seq, 8);
    for (int i = 16; i < REC; i++) {
        x ^= x >> 31;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 29;
        b[i] = (unsigned char)x;
    }
}

struct level {
    int lv; /* 1 or 5 */
    fam_redundancy_level_t red;
    fam_memory_type_t mem;
    fam_region_t *r;
    fam_desc_t *counter, *records;
    uint64_t slots; /* records item size / REC */
};

static int setup(struct level *L, const char *job)
{
    char name[96];
    snprintf(name, sizeof name, "raidpe%d-%.40s", L->lv, job);
    if (rank == 0) {
        fam_region_attr_t attr = {L->red, L->mem, FAM_INTERLEAVE_ENABLE, FAM_PERMISSION_REGION};
        L->r = fam_create_region(name, 32ull << 20, 0600, &attr);
        if (!L->r)
            return die(L->lv == 1 ? "fam_create_region (RAID1)" : "fam_create_region (RAID5)");
        fam_stat_t rs;
        if (fam_stat_region(L->r, &rs) != 0)
            return die("fam_stat_region");
        if ((int)rs.region_attributes.redundancy_level != (int)L->red) {
            fprintf(stderr, "raidpe: region %s reports redundancy %d, want %d\n", name,
                    (int)rs.region_attributes.redundancy_level, (int)L->red);
            return 1;
        }
        uint64_t block = rs.interleave_size ? rs.interleave_size : 1 << 20;
        /* Eight blocks: every memory server holds several of them. */
        if (!(L->records = fam_allocate("records", 8 * block, 0600, L->r)))
            return die("fam_allocate (records)");
        if (!(L->counter = fam_allocate("counter", 8, 0600, L->r)))
            return die("fam_allocate (counter)");
    }
    if (fam_barrier_all() != 0)
        return die("fam_barrier_all (after create)");
    if (rank != 0) {
        if (!(L->records = fam_lookup("records", name)) || !(L->counter = fam_lookup("counter", name)))
            return die("fam_lookup");
    }
    fam_stat_t st;
    if (fam_stat(L->records, &st) != 0)
        return die("fam_stat");
    L->slots = st.size / REC;
    return 0;
}

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* slot_of is where record seq of PE r lives: the PE's slots are every
 * npes-th one, reused round robin once they are all written, so that a
 * long run keeps writing (and the checker keeps checking) records. */
static uint64_t slot_of(const struct level *L, int r, uint64_t seq)
{
    uint64_t per = L->slots / (uint64_t)npes;
    return (seq % per) * (uint64_t)npes + (uint64_t)r;
}

static int has(const uint64_t *v, uint64_t n, uint64_t x)
{
    for (uint64_t lo = 0, hi = n; lo < hi;) {
        uint64_t mid = (lo + hi) / 2;
        if (v[mid] == x)
            return 1;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static int cmpu(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* check_records checks PE p's slots of L: each holds, byte for byte, the
 * last record acknowledged there, or a later record whose put failed (a
 * failed call may or may not have taken effect). */
static uint64_t check_records(struct level *L, int p, const unsigned char *all, const int64_t *last,
                              const uint64_t *errs, uint64_t nerrs)
{
    uint64_t per = L->slots / (uint64_t)npes, bad = 0;
    for (uint64_t j = 0; j < per; j++) {
        if (last[j] < 0)
            continue;
        const unsigned char *got = all + slot_of(L, p, j) * REC;
        uint64_t seq;
        memcpy(&seq, got + 8, 8);
        unsigned char want[REC];
        record(want, L->lv, p, seq);
        int intact = memcmp(got, want, REC) == 0;
        int ok = intact && seq % per == j &&
                 (seq == (uint64_t)last[j] || (seq > (uint64_t)last[j] && has(errs, nerrs, seq)));
        if (!ok && bad++ < 5)
            fprintf(stderr, "raidpe: RAID%d: PE %d's slot %llu should hold its record %lld, holds %s %llu\n", L->lv, p,
                    (unsigned long long)j, (long long)last[j],
                    intact ? "its intact record" : "bytes that are no record of it, seq field", (unsigned long long)seq);
    }
    return bad;
}

static int check(struct level *L, const char *dir)
{
    uint64_t acked = 0, failed = 0, records = 0, rfailed = 0, cap = 1 << 16, bad = 0, rbad = 0, checked = 0;
    uint64_t per = L->slots / (uint64_t)npes;
    int64_t *olds = malloc(cap * sizeof *olds), *last = malloc(per * sizeof *last);
    unsigned char *all = malloc(L->slots * REC);
    if (!olds || !all || !last)
        return 1;
    if (fam_get_blocking(all, L->records, 0, L->slots * REC) != 0)
        return die("fam_get_blocking (records)");
    for (int p = 0; p < npes; p++) {
        char path[4096], line[512];
        uint64_t nerrs = 0, errcap = 16;
        uint64_t *errs = malloc(errcap * sizeof *errs);
        if (!errs)
            return 1;
        for (uint64_t j = 0; j < per; j++)
            last[j] = -1;
        snprintf(path, sizeof path, "%s/ack.%d", dir, p);
        FILE *f = fopen(path, "r");
        if (!f) {
            fprintf(stderr, "raidpe: %s: %s\n", path, strerror(errno));
            return 1;
        }
        while (fgets(line, sizeof line, f)) {
            if (line[1] - '0' != L->lv)
                continue;
            long long v;
            if (line[0] == 'c' && sscanf(line + 2, "%lld", &v) == 1) {
                if (acked == cap && !(olds = realloc(olds, (cap *= 2) * sizeof *olds)))
                    return 1;
                olds[acked++] = v;
            } else if (line[0] == 'r' && sscanf(line + 2, "%lld", &v) == 1) {
                records++;
                last[(uint64_t)v % per] = v; /* the log is in seq order */
            } else if (line[0] == 'e') {
                unsigned long long seq;
                if (line[3] == 'c') {
                    failed++;
                } else if (sscanf(line + 4, "%llu", &seq) == 1) {
                    rfailed++;
                    if (nerrs == errcap && !(errs = realloc(errs, (errcap *= 2) * sizeof *errs)))
                        return 1;
                    errs[nerrs++] = seq;
                }
            }
        }
        fclose(f);
        for (uint64_t j = 0; j < per; j++)
            checked += last[j] >= 0;
        qsort(errs, nerrs, sizeof *errs, cmpu);
        rbad += check_records(L, p, all, last, errs, nerrs);
        free(errs);
    }
    int64_t counter;
    if (fam_get_blocking(&counter, L->counter, 0, 8) != 0)
        return die("fam_get_blocking (counter)");
    /* Distinct fetched values: sort and look for neighbours. */
    qsort(olds, acked, sizeof *olds, cmp);
    uint64_t dups = 0;
    for (uint64_t i = 1; i < acked; i++)
        if (olds[i] == olds[i - 1] && dups++ < 5)
            fprintf(stderr, "raidpe: RAID%d: two acknowledged increments fetched %lld\n", L->lv, (long long)olds[i]);
    if (acked && (olds[0] < 0 || olds[acked - 1] >= counter)) {
        fprintf(stderr, "raidpe: RAID%d: fetched values span %lld..%lld, counter %lld\n", L->lv, (long long)olds[0],
                (long long)olds[acked - 1], (long long)counter);
        bad++;
    }
    if ((uint64_t)counter < acked || (failed == 0 && (uint64_t)counter != acked)) {
        fprintf(stderr, "raidpe: RAID%d: counter %lld, %llu increments acknowledged, %llu failed\n", L->lv,
                (long long)counter, (unsigned long long)acked, (unsigned long long)failed);
        bad++;
    }
    printf("raidpe: RAID%d: %llu increments acknowledged (%llu failed), counter %lld, fetched values distinct: %s; "
           "%llu records acknowledged (%llu failed), %llu slots checked, %llu lost or wrong%s\n",
           L->lv, (unsigned long long)acked, (unsigned long long)failed, (long long)counter, dups ? "NO" : "yes",
           (unsigned long long)records, (unsigned long long)rfailed, (unsigned long long)checked,
           (unsigned long long)rbad, bad ? "; COUNTER WRONG" : "");
    free(olds);
    free(last);
    free(all);
    return bad || rbad || dups || acked == 0 || records == 0;
}

static int stopped(const char *stopfile, time_t deadline)
{
    return access(stopfile, F_OK) == 0 || time(NULL) >= deadline;
}

static void logerr(FILE *log, const char *what, uint64_t seq)
{
    fprintf(log, "%s %llu code %d: %s\n", what, (unsigned long long)seq, fam_errcode(), fam_errmsg());
    fflush(log);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: raidpe DIR (under famrun --servers K, K >= 3)\n");
        return 2;
    }
    const char *dir = argv[1];
    if (fam_initialize("default", NULL) != 0)
        return die("fam_initialize");
    int *pid = (int *)fam_get_option("PE_ID"), *pcount = (int *)fam_get_option("PE_COUNT");
    if (!pid || !pcount)
        return die("fam_get_option");
    rank = *pid;
    npes = *pcount;
    free(pid);
    free(pcount);
    const char *job = getenv("FAMRUN_JOB");
    const char *secs = getenv("RAIDPE_SECONDS");
    time_t deadline = time(NULL) + (secs ? atol(secs) : 900);

    struct level L[2] = {{1, FAM_REDUNDANCY_RAID1, FAM_MEMORY_PERSISTENT, 0, 0, 0, 0},
                         {5, FAM_REDUNDANCY_RAID5, FAM_MEMORY_VOLATILE, 0, 0, 0, 0}};
    for (int i = 0; i < 2; i++)
        if (setup(&L[i], job ? job : "solo") != 0)
            return 1;

    char path[4096], stopfile[4096];
    snprintf(path, sizeof path, "%s/ack.%d", dir, rank);
    snprintf(stopfile, sizeof stopfile, "%s/stop", dir);
    FILE *log = fopen(path, "w");
    if (!log) {
        fprintf(stderr, "raidpe PE %d: %s: %s\n", rank, path, strerror(errno));
        return 1;
    }
    uint64_t seq = 0, iters = 0;
    while (!stopped(stopfile, deadline)) {
        for (int i = 0; i < 2; i++) {
            int64_t old;
            if (fam_fetch_add_int64(L[i].counter, 0, 1, &old) == 0)
                fprintf(log, "c%d %lld\n", L[i].lv, (long long)old);
            else
                logerr(log, L[i].lv == 1 ? "e1 c" : "e5 c", seq);
            unsigned char b[REC];
            record(b, L[i].lv, rank, seq);
            if (fam_put_blocking(b, L[i].records, slot_of(&L[i], rank, seq) * REC, REC) == 0)
                fprintf(log, "r%d %llu\n", L[i].lv, (unsigned long long)seq);
            else
                logerr(log, L[i].lv == 1 ? "e1 r" : "e5 r", seq);
        }
        seq++;
        if (++iters % FLUSH_EVERY == 0)
            fflush(log);
    }
    if (fclose(log) != 0) {
        fprintf(stderr, "raidpe PE %d: writing %s failed\n", rank, path);
        return 1;
    }
    if (fam_barrier_all() != 0)
        return die("fam_barrier_all (after the loop)");
    int status = 0;
    if (rank == 0) {
        for (int i = 0; i < 2; i++)
            status |= check(&L[i], dir);
    }
    if (fam_barrier_all() != 0)
        return die("fam_barrier_all (after the check)");
    if (rank == 0)
        for (int i = 0; i < 2; i++)
            if (fam_destroy_region(L[i].r) != 0)
                status |= die("fam_destroy_region");
    if (fam_finalize("default") != 0)
        return die("fam_finalize");
    return status;
}
