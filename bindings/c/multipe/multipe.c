/*
 * A multi-PE check run under famrun: every PE adds to one shared counter
 * with fam_fetch_add_int64 and writes its rank into its own slot of a
 * shared item; after a barrier every PE checks the exact totals and every
 * other PE's slot. Exit status 0 means the job saw consistent memory.
 *
 *   famrun -n 3 build/multipe/multipe [region-name]
 */
#include <openfam.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADDS 2000

static int die(const char *what, int rank)
{
    fprintf(stderr, "multipe PE %d: %s failed: %s (code %d)\n", rank, what, fam_errmsg(), fam_errcode());
    return 1;
}

int main(int argc, char **argv)
{
    if (fam_initialize("default", NULL) != 0)
        return die("fam_initialize", -1);
    int *pid = (int *)fam_get_option("PE_ID"), *pcount = (int *)fam_get_option("PE_COUNT");
    if (!pid || !pcount)
        return die("fam_get_option", -1);
    int rank = *pid, size = *pcount;
    free(pid);
    free(pcount);
    const char *job = getenv("FAMRUN_JOB");
    char region[64];
    snprintf(region, sizeof region, "%s", argc > 1 ? argv[1] : "mp");
    if (job && argc <= 1)
        snprintf(region, sizeof region, "mp-%.30s", job);

    fam_region_t *r = NULL;
    fam_desc_t *d = NULL;
    uint64_t bytes = 8 * (uint64_t)(size + 1);
    if (rank == 0) {
        fam_region_attr_t attr = {FAM_REDUNDANCY_DEFAULT, FAM_MEMORY_VOLATILE, FAM_INTERLEAVE_DEFAULT, FAM_PERMISSION_REGION};
        r = fam_create_region(region, 1 << 20, 0600, &attr);
        if (!r)
            return die("fam_create_region", rank);
        d = fam_allocate("shared", bytes, 0600, r);
        if (!d)
            return die("fam_allocate", rank);
    }
    if (fam_barrier_all() != 0)
        return die("fam_barrier_all (after create)", rank);
    if (rank != 0) {
        d = fam_lookup("shared", region);
        if (!d)
            return die("fam_lookup", rank);
    }
    for (int i = 0; i < ADDS; i++) {
        int64_t old;
        if (fam_fetch_add_int64(d, 0, 1, &old) != 0)
            return die("fam_fetch_add_int64", rank);
    }
    int64_t mine = 1000 + rank;
    if (fam_put_blocking(&mine, d, 8 * (uint64_t)(rank + 1), sizeof mine) != 0)
        return die("fam_put_blocking", rank);
    if (fam_barrier_all() != 0)
        return die("fam_barrier_all (after adds)", rank);

    int64_t *all = calloc((size_t)size + 1, sizeof *all);
    if (fam_get_blocking(all, d, 0, bytes) != 0)
        return die("fam_get_blocking", rank);
    int bad = 0;
    if (all[0] != (int64_t)size * ADDS) {
        fprintf(stderr, "multipe PE %d: counter %lld, want %lld\n", rank, (long long)all[0], (long long)size * ADDS);
        bad = 1;
    }
    for (int p = 0; p < size; p++)
        if (all[p + 1] != 1000 + p) {
            fprintf(stderr, "multipe PE %d: slot of PE %d holds %lld, want %d\n", rank, p, (long long)all[p + 1], 1000 + p);
            bad = 1;
        }
    free(all);
    if (fam_barrier_all() != 0)
        return die("fam_barrier_all (after check)", rank);
    if (rank == 0) {
        if (fam_destroy_region(r) != 0)
            return die("fam_destroy_region", rank);
        if (!bad)
            printf("multipe: %d PEs, counter %d and every rank slot consistent\n", size, size * ADDS);
    }
    if (fam_finalize("default") != 0)
        return die("fam_finalize", rank);
    return bad;
}
