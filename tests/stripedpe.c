/*
 * Items striped over several memory servers, through the C API.
 *
 *   famrun -n N --servers K tests/stripedpe            (multi-PE job)
 *   tests/stripedpe write REGION | read REGION         (one process)
 *
 * Job mode: rank 0 creates a volatile, interleaved region and one item two
 * interleave blocks long, so that block 0 and block 1 live on different
 * memory servers. Every PE adds to a counter in block 0 and to another in
 * block 1 (fam_fetch_add_int64) and writes its rank into its slot in block
 * 1; after fam_barrier_all every PE reads the counters and, with one get
 * that crosses the block boundary, every slot, and checks exact values.
 *
 * write/read: write fills a persistent item of 3 blocks and a bit with a
 * pattern; read (another process, later) finds it by name and checks every
 * byte. Used by tests/memrestart.sh around a memory server crash.
 *
 * Both modes check that fam_stat reports STRIPEDPE_SERVERS memory servers
 * (default 2), all distinct. Exit status 0 means every check held.
 */
#include <openfam.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADDS 1000

static int rank = -1;

static int die(const char *what)
{
    fprintf(stderr, "stripedpe PE %d: %s failed: %s (code %d)\n", rank, what, fam_errmsg(), fam_errcode());
    return 1;
}

/* check_servers verifies what fam_stat says about d's placement and
 * returns the interleave size (0 after reporting a mismatch). */
static uint64_t check_servers(fam_desc_t *d)
{
    const char *e = getenv("STRIPEDPE_SERVERS");
    uint64_t want = e ? strtoull(e, NULL, 10) : 2;
    fam_stat_t st;
    if (fam_stat(d, &st) != 0) {
        die("fam_stat");
        return 0;
    }
    if (st.num_memservers != want || st.interleave_size == 0 || st.interleave_size % 4096 != 0) {
        fprintf(stderr, "stripedpe PE %d: item on %llu memory servers with interleave size %llu, want %llu servers\n",
                rank, (unsigned long long)st.num_memservers, (unsigned long long)st.interleave_size,
                (unsigned long long)want);
        return 0;
    }
    for (uint64_t i = 0; i < st.num_memservers; i++)
        for (uint64_t j = 0; j < i; j++)
            if (st.memory_servers[i] == st.memory_servers[j]) {
                fprintf(stderr, "stripedpe PE %d: memory server %llu listed twice\n", rank,
                        (unsigned long long)st.memory_servers[i]);
                return 0;
            }
    return st.interleave_size;
}

static int job(void)
{
    int *pid = (int *)fam_get_option("PE_ID"), *pcount = (int *)fam_get_option("PE_COUNT");
    if (!pid || !pcount)
        return die("fam_get_option");
    rank = *pid;
    int size = *pcount;
    free(pid);
    free(pcount);
    const char *jobid = getenv("FAMRUN_JOB");
    char region[64];
    snprintf(region, sizeof region, "striped-%.40s", jobid ? jobid : "solo");

    fam_region_t *r = NULL;
    fam_desc_t *d = NULL;
    if (rank == 0) {
        fam_region_attr_t attr = {FAM_REDUNDANCY_DEFAULT, FAM_MEMORY_VOLATILE, FAM_INTERLEAVE_ENABLE,
                                  FAM_PERMISSION_REGION};
        r = fam_create_region(region, 64 << 20, 0600, &attr);
        if (!r)
            return die("fam_create_region");
        fam_stat_t rs;
        if (fam_stat_region(r, &rs) != 0)
            return die("fam_stat_region");
        /* A famd without memory servers reports no block size; the item
         * then fails check_servers below instead of fam_allocate here. */
        d = fam_allocate("shared", 2 * (rs.interleave_size ? rs.interleave_size : 1 << 20), 0600, r);
        if (!d)
            return die("fam_allocate");
    }
    if (fam_barrier_all() != 0)
        return die("fam_barrier_all (after create)");
    if (rank != 0 && !(d = fam_lookup("shared", region)))
        return die("fam_lookup");
    uint64_t block = check_servers(d);
    if (block == 0)
        return 1;
    if (block < 8 * ((uint64_t)size + 2)) {
        fprintf(stderr, "stripedpe PE %d: interleave size %llu too small for %d slots\n", rank,
                (unsigned long long)block, size);
        return 1;
    }
    /* Block 0: counter c0 at 0. Block 1: the slots, then counter c1. */
    uint64_t c0 = 0, slots = block, c1 = block + 8 * (uint64_t)size;
    for (int i = 0; i < ADDS; i++) {
        int64_t old;
        if (fam_fetch_add_int64(d, c0, 1, &old) != 0)
            return die("fam_fetch_add_int64 (block 0)");
        if (fam_fetch_add_int64(d, c1, rank + 1, &old) != 0)
            return die("fam_fetch_add_int64 (block 1)");
    }
    int64_t mine = 1000 + rank;
    if (fam_put_blocking(&mine, d, slots + 8 * (uint64_t)rank, sizeof mine) != 0)
        return die("fam_put_blocking");
    if (fam_barrier_all() != 0)
        return die("fam_barrier_all (after adds)");

    int bad = 0;
    int64_t v0, v1;
    if (fam_get_blocking(&v0, d, c0, 8) != 0 || fam_get_blocking(&v1, d, c1, 8) != 0)
        return die("fam_get_blocking (counters)");
    int64_t want0 = (int64_t)size * ADDS, want1 = (int64_t)ADDS * size * (size + 1) / 2;
    if (v0 != want0 || v1 != want1) {
        fprintf(stderr, "stripedpe PE %d: counters %lld and %lld, want %lld and %lld\n", rank, (long long)v0,
                (long long)v1, (long long)want0, (long long)want1);
        bad = 1;
    }
    /* One get across the block boundary: the last word of block 0 (still
     * zero) and every slot in block 1. */
    int64_t *span = calloc((size_t)size + 1, sizeof *span);
    if (!span || fam_get_blocking(span, d, block - 8, 8 * ((uint64_t)size + 1)) != 0)
        return die("fam_get_blocking (across blocks)");
    if (span[0] != 0) {
        fprintf(stderr, "stripedpe PE %d: last word of block 0 holds %lld, want 0\n", rank, (long long)span[0]);
        bad = 1;
    }
    for (int p = 0; p < size; p++)
        if (span[p + 1] != 1000 + p) {
            fprintf(stderr, "stripedpe PE %d: slot of PE %d holds %lld, want %d\n", rank, p, (long long)span[p + 1],
                    1000 + p);
            bad = 1;
        }
    free(span);
    if (fam_barrier_all() != 0)
        return die("fam_barrier_all (after check)");
    if (rank == 0) {
        if (fam_destroy_region(r) != 0)
            return die("fam_destroy_region");
        if (!bad)
            printf("stripedpe: %d PEs, item over 2 blocks of %llu bytes on distinct memory servers, counters %lld "
                   "and %lld and every slot consistent\n",
                   size, (unsigned long long)block, (long long)want0, (long long)want1);
    }
    return bad;
}

/* pattern is the byte write puts at offset i. */
static unsigned char pattern(uint64_t i) { return (unsigned char)(i * 131 + (i >> 12) * 7 + 1); }

static int write_or_read(int writing, const char *region)
{
    rank = 0;
    fam_desc_t *d;
    uint64_t block, n;
    if (writing) {
        fam_region_attr_t attr = {FAM_REDUNDANCY_DEFAULT, FAM_MEMORY_PERSISTENT, FAM_INTERLEAVE_ENABLE,
                                  FAM_PERMISSION_REGION};
        fam_region_t *r = fam_create_region(region, 64 << 20, 0600, &attr);
        if (!r)
            return die("fam_create_region");
        fam_stat_t rs;
        if (fam_stat_region(r, &rs) != 0)
            return die("fam_stat_region");
        n = 3 * (rs.interleave_size ? rs.interleave_size : 1 << 20) + 123;
        if (!(d = fam_allocate("data", n, 0600, r)))
            return die("fam_allocate");
        if (fam_close_region(r) != 0)
            return die("fam_close_region");
    } else {
        if (!(d = fam_lookup("data", region)))
            return die("fam_lookup");
        fam_stat_t st;
        if (fam_stat(d, &st) != 0)
            return die("fam_stat");
        n = st.size;
    }
    if ((block = check_servers(d)) == 0)
        return 1;
    unsigned char *buf = malloc(n);
    if (!buf)
        return 1;
    if (writing) {
        for (uint64_t i = 0; i < n; i++)
            buf[i] = pattern(i);
        if (fam_put_blocking(buf, d, 0, n) != 0)
            return die("fam_put_blocking");
    }
    memset(buf, 0, n);
    if (fam_get_blocking(buf, d, 0, n) != 0)
        return die("fam_get_blocking");
    for (uint64_t i = 0; i < n; i++)
        if (buf[i] != pattern(i)) {
            fprintf(stderr, "stripedpe: byte %llu (block %llu) is %u, want %u\n", (unsigned long long)i,
                    (unsigned long long)(i / block), buf[i], pattern(i));
            free(buf);
            return 1;
        }
    free(buf);
    printf("stripedpe: %s %llu bytes in %llu-byte blocks over the memory servers\n", writing ? "wrote" : "read back",
           (unsigned long long)n, (unsigned long long)block);
    return 0;
}

int main(int argc, char **argv)
{
    if (fam_initialize("default", NULL) != 0)
        return die("fam_initialize");
    int status;
    if (argc == 3 && (strcmp(argv[1], "write") == 0 || strcmp(argv[1], "read") == 0)) {
        status = write_or_read(argv[1][0] == 'w', argv[2]);
    } else if (argc == 1) {
        status = job();
    } else {
        fprintf(stderr, "usage: stripedpe | stripedpe write REGION | stripedpe read REGION\n");
        fam_finalize("default");
        return 2;
    }
    if (fam_finalize("default") != 0)
        return die("fam_finalize");
    return status;
}
