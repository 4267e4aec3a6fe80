/*
 * One blocking operation in a loop on a NONE or a RAID1 region, for
 * tracing (issue 16): prints the wall time per operation and the CPU time
 * per operation of this process and of each process in RAIDBENCH_PIDS
 * (the memory famds), so that the work of an operation can be told from
 * its wait. Driven by tests/raid/raidtrace.sh under tests/raid-bench.sh.
 *
 *   raidtrace none|raid1 put|get|fetch_add [N] [SIZE] [WARMUP]
 */
#include <openfam.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static clockid_t ck[16];
static long pids[16];
static int nck;

static void cpus(double *out)
{
    for (int i = 0; i < nck; i++) {
        struct timespec t = {0, 0};
        clock_gettime(ck[i], &t);
        out[i] = t.tv_sec + t.tv_nsec / 1e9;
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: raidtrace none|raid1 put|get|fetch_add [N] [SIZE] [WARMUP]\n");
        return 2;
    }
    int raid1 = strcmp(argv[1], "raid1") == 0, op = 0;
    if (strcmp(argv[2], "get") == 0)
        op = 1;
    else if (strcmp(argv[2], "fetch_add") == 0)
        op = 2;
    int n = argc > 3 ? atoi(argv[3]) : 4000, size = argc > 4 ? atoi(argv[4]) : 256, warm = argc > 5 ? atoi(argv[5]) : 1000;
    if (n <= 0 || size <= 0 || size > 4096) {
        fprintf(stderr, "raidtrace: N > 0 and SIZE in 1..4096\n");
        return 2;
    }
    if (clock_getcpuclockid(0, &ck[nck]) == 0)
        pids[nck++] = getpid();
    const char *s = getenv("RAIDBENCH_PIDS");
    char *end;
    while (s && *s && nck < 16) {
        long p = strtol(s, &end, 10);
        if (end == s)
            break;
        s = end;
        if (clock_getcpuclockid((pid_t)p, &ck[nck]) == 0)
            pids[nck++] = p;
    }
    if (fam_initialize("default", NULL) != 0) {
        fprintf(stderr, "raidtrace: fam_initialize: %s\n", fam_errmsg());
        return 1;
    }
    fam_region_attr_t attr = {raid1 ? FAM_REDUNDANCY_RAID1 : FAM_REDUNDANCY_NONE, FAM_MEMORY_VOLATILE,
                              FAM_INTERLEAVE_ENABLE, FAM_PERMISSION_REGION};
    char name[64];
    snprintf(name, sizeof name, "raidtrace-%s-%d", argv[1], (int)getpid());
    fam_region_t *r = fam_create_region(name, 64 << 20, 0600, &attr);
    fam_desc_t *d = r ? fam_allocate("data", 32 << 20, 0600, r) : NULL;
    if (!d) {
        fprintf(stderr, "raidtrace: region: %s\n", fam_errmsg());
        return 1;
    }
    unsigned char buf[4096] = {0};
    double c0[16], c1[16], t0 = 0;
    for (int i = -warm; i < n; i++) {
        if (i == 0) {
            getppid(); /* a marker for syscall traces: the measured loop starts */
            cpus(c0);
            t0 = now();
        }
        /* Offsets within the first 1 MiB block: one primary and one mirror
         * server throughout. */
        uint64_t off = (uint64_t)((i + warm) % 256) * 4096;
        int64_t old;
        int rc = op == 1 ? fam_get_blocking(buf, d, off, size)
                 : op == 2 ? fam_fetch_add_int64(d, off, 1, &old)
                           : fam_put_blocking(buf, d, off, size);
        if (rc != 0) {
            fprintf(stderr, "raidtrace: %s failed: %s\n", argv[2], fam_errmsg());
            return 1;
        }
    }
    double dt = now() - t0;
    cpus(c1);
    getppid();
    printf("%-5s %-9s %4d B: %7.1f us/op wall; CPU us/op:", argv[1], argv[2], size, dt / n * 1e6);
    double tot = 0;
    for (int i = 0; i < nck; i++) {
        double c = (c1[i] - c0[i]) / n * 1e6;
        tot += c;
        printf(" %s%ld=%.1f", i == 0 ? "self/" : "", pids[i], c);
    }
    printf(" total=%.1f\n", tot);
    fam_destroy_region(r);
    fam_finalize("default");
    return 0;
}
