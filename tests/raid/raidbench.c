/*
 * Figures for redundant regions (issue 16), through the C API, against a
 * running metadata famd with memory servers (OPENFAM_SERVER). Driven by
 * tests/raid-bench.sh.
 *
 *   raidbench ops [ROUNDS]
 *       NONE, RAID1 and RAID5 regions on the same servers, measured in
 *       turns within each round (so drift hits all three alike): blocking
 *       put and get of 256 B and 4 MiB, fam_fetch_add_int64. Prints the
 *       median over the rounds per operation and level, and each level's
 *       ratio to NONE.
 *   raidbench fill REGION LEVEL SIZE
 *       creates REGION (LEVEL none|raid1|raid5, volatile, interleaved) with
 *       an item "data" of SIZE MiB and fills it with 4 MiB puts of a
 *       pattern; prints the put bandwidth.
 *   raidbench read REGION
 *       reads the item whole in 4 MiB gets, checks every byte, prints the
 *       bandwidth (run with a memory server down: degraded reads).
 *   raidbench destroy REGION
 */
#include <openfam.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB (1ull << 20)
#define BIG (4 * MIB)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int die(const char *what)
{
    fprintf(stderr, "raidbench: %s failed: %s (code %d)\n", what, fam_errmsg(), fam_errcode());
    return 1;
}

static fam_redundancy_level_t level(const char *s)
{
    if (strcmp(s, "raid1") == 0)
        return FAM_REDUNDANCY_RAID1;
    if (strcmp(s, "raid5") == 0)
        return FAM_REDUNDANCY_RAID5;
    return FAM_REDUNDANCY_NONE;
}

/* fill_pattern writes the pattern of item bytes [off, off+n) into b. */
static void fill_pattern(unsigned char *b, uint64_t off, uint64_t n)
{
    for (uint64_t i = 0; i < n; i += 8) {
        uint64_t w = (off + i) * 0x9e3779b97f4a7c15ull ^ 0x5bd1e995;
        memcpy(b + i, &w, 8);
    }
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The small operations walk the item 4 KiB at a time, 256 in each 1 MiB
 * interleave block (one server) before the next: fetch_add as the 256 B
 * put and get, so that the three compare. "fadd rot" is fetch_add on a
 * word of the next block (the next server) every time: each server then
 * sees a request every third operation, too late for its polling window,
 * and every request pays the wake-up of a server that went to sleep
 * (fetch_add measured so before cost ~3x a get; a get so costs the same). */
enum { PUT_S, PUT_L, GET_S, GET_L, FADD, FADD_R, NOPS };
static const char *opname[NOPS] = {"put 256 B", "put 4 MiB", "get 256 B", "get 4 MiB", "fetch_add", "fadd rot"};

/* print_row prints one operation's medians for NONE, RAID1 and RAID5 (s),
 * the 4 MiB ones in ms, the others in us, and the two ratios to NONE. */
static void print_row(int op, const double med[3])
{
    char cell[3][32];
    for (int l = 0; l < 3; l++) {
        if (op == PUT_L || op == GET_L)
            snprintf(cell[l], sizeof cell[l], "%.2f ms", med[l] * 1e3);
        else
            snprintf(cell[l], sizeof cell[l], "%.1f us", med[l] * 1e6);
    }
    printf("%-10s %12s %12s %12s %7.2fx %7.2fx\n", opname[op], cell[0], cell[1], cell[2], med[1] / med[0],
           med[2] / med[0]);
}
static const int opiters[NOPS] = {4000, 32, 4000, 32, 4000, 4000};

/* The processes whose CPU time is counted with this one's
 * (RAIDBENCH_PIDS: the memory famds), read through their CPU-time clocks. */
static clockid_t cpuclk[16];
static int ncpuclk;

static void cpu_clocks(void)
{
    const char *s = getenv("RAIDBENCH_PIDS");
    char *end;
    clockid_t c;
    if (clock_getcpuclockid(0, &c) == 0)
        cpuclk[ncpuclk++] = c;
    while (s && *s && ncpuclk < 16) {
        long pid = strtol(s, &end, 10);
        if (end == s)
            break;
        s = end;
        if (pid > 0 && clock_getcpuclockid((pid_t)pid, &c) == 0)
            cpuclk[ncpuclk++] = c;
        else
            fprintf(stderr, "raidbench: no CPU clock for process %ld: not counted\n", pid);
    }
}

/* cpu_now is the CPU time of this process and RAIDBENCH_PIDS's, in seconds. */
static double cpu_now(void)
{
    double sum = 0;
    struct timespec t;
    for (int i = 0; i < ncpuclk; i++)
        if (clock_gettime(cpuclk[i], &t) == 0)
            sum += t.tv_sec + t.tv_nsec / 1e9;
    return sum;
}

/* measure runs op iters times on d and returns seconds per call; *cpu
 * gets the CPU seconds per call of the processes counted (see cpu_now). */
static double measure(int op, fam_desc_t *d, unsigned char *buf, double *cpu)
{
    int n = opiters[op];
    double c0 = cpu_now();
    double t0 = now();
    for (int i = 0; i < n; i++) {
        int rc = 0;
        int64_t old;
        switch (op) {
        case PUT_S:
            rc = fam_put_blocking(buf, d, (uint64_t)(i % 4096) * 4096, 256);
            break;
        case PUT_L:
            rc = fam_put_blocking(buf, d, (uint64_t)(i % 4) * BIG, BIG);
            break;
        case GET_S:
            rc = fam_get_blocking(buf, d, (uint64_t)(i % 4096) * 4096, 256);
            break;
        case GET_L:
            rc = fam_get_blocking(buf, d, (uint64_t)(i % 4) * BIG, BIG);
            break;
        case FADD:
            rc = fam_fetch_add_int64(d, (uint64_t)(i % 4096) * 4096, 1, &old);
            break;
        case FADD_R:
            rc = fam_fetch_add_int64(d, (uint64_t)(i % 16) * MIB + 8, 1, &old);
            break;
        }
        if (rc != 0) {
            die(opname[op]);
            exit(1);
        }
    }
    double dt = now() - t0;
    *cpu = (cpu_now() - c0) / n;
    return dt / n;
}

static int ops(int rounds)
{
    const char *names[3] = {"NONE", "RAID1", "RAID5"};
    fam_redundancy_level_t lv[3] = {FAM_REDUNDANCY_NONE, FAM_REDUNDANCY_RAID1, FAM_REDUNDANCY_RAID5};
    fam_desc_t *d[3];
    fam_region_t *r[3];
    char name[64];
    for (int l = 0; l < 3; l++) {
        fam_region_attr_t attr = {lv[l], FAM_MEMORY_VOLATILE, FAM_INTERLEAVE_ENABLE, FAM_PERMISSION_REGION};
        snprintf(name, sizeof name, "raidbench-ops-%s-%d", names[l], (int)getpid());
        if (!(r[l] = fam_create_region(name, 64 * MIB, 0600, &attr)))
            return die("fam_create_region");
        if (!(d[l] = fam_allocate("data", 32 * MIB, 0600, r[l])))
            return die("fam_allocate");
    }
    unsigned char *buf = malloc(BIG);
    if (!buf)
        return 1;
    fill_pattern(buf, 0, BIG);
    double *t = calloc((size_t)rounds * 3 * NOPS, sizeof *t), *ct = calloc((size_t)rounds * 3 * NOPS, sizeof *ct);
    cpu_clocks();
    for (int l = 0; l < 3; l++) /* warm up: connections, first touch of every page */
        for (int i = 0; i < 8; i++)
            if (fam_put_blocking(buf, d[l], (uint64_t)i * BIG, BIG) != 0)
                return die("fam_put_blocking (warm-up)");
    for (int k = 0; k < rounds; k++)
        for (int op = 0; op < NOPS; op++)
            for (int l = 0; l < 3; l++)
                t[(op * 3 + l) * rounds + k] = measure(op, d[l], buf, &ct[(op * 3 + l) * rounds + k]);
    printf("%-10s %12s %12s %12s %8s %8s\n", "operation", "NONE", "RAID1", "RAID5", "RAID1/x", "RAID5/x");
    double putl[3] = {0, 0, 0};
    for (int op = 0; op < NOPS; op++) {
        double med[3];
        for (int l = 0; l < 3; l++) {
            double *s = t + (op * 3 + l) * rounds;
            qsort(s, rounds, sizeof *s, cmpd);
            med[l] = s[rounds / 2];
            if (op == PUT_L)
                putl[l] = med[l];
        }
        print_row(op, med);
    }
    printf("(median of %d rounds; 4 MiB put bandwidth: NONE %.0f, RAID1 %.0f, RAID5 %.0f MiB/s)\n", rounds, 4 / putl[0],
           4 / putl[1], 4 / putl[2]);
    /* CPU time per operation, of this process and the memory famds: the
     * work the operation costs, which on a host with fewer free cores than
     * busy processes bounds its wall time from below. */
    printf("CPU time per operation (this process%s):\n", ncpuclk > 1 ? " and RAIDBENCH_PIDS" : " alone");
    for (int op = 0; op < NOPS; op++) {
        double med[3];
        for (int l = 0; l < 3; l++) {
            double *s = ct + (op * 3 + l) * rounds;
            qsort(s, rounds, sizeof *s, cmpd);
            med[l] = s[rounds / 2];
        }
        print_row(op, med);
    }
    for (int l = 0; l < 3; l++)
        if (fam_destroy_region(r[l]) != 0)
            return die("fam_destroy_region");
    free(t);
    free(ct);
    free(buf);
    return 0;
}

static int fill(const char *region, const char *lvname, uint64_t mib)
{
    fam_region_attr_t attr = {level(lvname), FAM_MEMORY_VOLATILE, FAM_INTERLEAVE_ENABLE, FAM_PERMISSION_REGION};
    fam_region_t *r = fam_create_region(region, mib * MIB + 64 * MIB, 0600, &attr);
    if (!r)
        return die("fam_create_region");
    fam_desc_t *d = fam_allocate("data", mib * MIB, 0600, r);
    if (!d)
        return die("fam_allocate");
    unsigned char *buf = malloc(BIG);
    if (!buf)
        return 1;
    double t0 = now();
    for (uint64_t off = 0; off < mib * MIB; off += BIG) {
        fill_pattern(buf, off, BIG);
        if (fam_put_blocking(buf, d, off, BIG) != 0)
            return die("fam_put_blocking");
    }
    double dt = now() - t0;
    printf("raidbench: filled %llu MiB of %s region %s in %.2f s: %.0f MiB/s put (4 MiB puts)\n",
           (unsigned long long)mib, lvname, region, dt, mib / dt);
    free(buf);
    return 0;
}

static int readall(const char *region)
{
    fam_desc_t *d = fam_lookup("data", region);
    if (!d)
        return die("fam_lookup");
    fam_stat_t st;
    if (fam_stat(d, &st) != 0)
        return die("fam_stat");
    unsigned char *buf = malloc(BIG), *want = malloc(BIG);
    if (!buf || !want)
        return 1;
    double t0 = now(), io = 0;
    for (uint64_t off = 0; off < st.size; off += BIG) {
        double a = now();
        if (fam_get_blocking(buf, d, off, BIG) != 0)
            return die("fam_get_blocking");
        io += now() - a;
        fill_pattern(want, off, BIG);
        if (memcmp(buf, want, BIG) != 0) {
            fprintf(stderr, "raidbench: region %s: bytes at %llu..+4 MiB differ\n", region, (unsigned long long)off);
            return 1;
        }
    }
    printf("raidbench: read %llu MiB of region %s back exactly in %.2f s: %.0f MiB/s get (4 MiB gets)\n",
           (unsigned long long)(st.size / MIB), region, now() - t0, st.size / MIB / io);
    free(buf);
    free(want);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: raidbench ops [ROUNDS] | fill REGION LEVEL MIB | read REGION | destroy REGION\n");
        return 2;
    }
    if (fam_initialize("default", NULL) != 0)
        return die("fam_initialize");
    int rc = 2;
    if (strcmp(argv[1], "ops") == 0)
        rc = ops(argc > 2 ? atoi(argv[2]) : 9);
    else if (strcmp(argv[1], "fill") == 0 && argc == 5)
        rc = fill(argv[2], argv[3], strtoull(argv[4], NULL, 10));
    else if (strcmp(argv[1], "read") == 0 && argc == 3)
        rc = readall(argv[2]);
    else if (strcmp(argv[1], "destroy") == 0 && argc == 3) {
        fam_region_t *r = fam_lookup_region(argv[2]);
        rc = (!r || fam_destroy_region(r) != 0) ? die("fam_destroy_region") : 0;
    } else
        fprintf(stderr, "raidbench: bad arguments\n");
    if (fam_finalize("default") != 0)
        return die("fam_finalize");
    return rc;
}
