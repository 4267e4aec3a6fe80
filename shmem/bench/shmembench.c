/*
 * shmembench: OpenSHMEM micro-benchmark, one source built against any
 * OpenSHMEM 1.4 or later (make bench-shmem builds it against ours and Open
 * MPI's and compares). Needs 2 or more PEs; PE 0 drives the point-to-point
 * figures against PE 1, every PE takes part in the collectives.
 *
 * Figures (PE 0 prints "name<TAB>value<TAB>unit" lines):
 *   putmem/getmem latency, 8 B to 1 MiB, each call followed by quiet (put)
 *     - heap buffers (shmem_malloc), and global (static) buffers for some sizes
 *   put message rate, 8 B puts, one quiet per window of 256
 *   long atomic fetch_add and compare_swap latency (64-bit, heap)
 *   barrier_all, broadcast64 and long sum_to_all of 1 KiB (1.4 forms,
 *   available in both); the broadcast and reduction loops have a
 *   barrier_all after every call (pSync reuse rule), reported with it and
 *   with the measured barrier_all time taken off
 * Each figure is the median of TRIALS timed loops.
 *   usage: shmembench [scale]   (scale multiplies the iteration counts)
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXSZ (1 << 20)
#define TRIALS 5
#define NBC 128 /* 1 KiB of longs */

static char gsrc[MAXSZ], gdst[MAXSZ];
static long bc_src[NBC], bc_dst[NBC], red_src[NBC], red_dst[NBC];
static long pwrk[NBC / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long psync_b[SHMEM_BCAST_SYNC_SIZE], psync_r[SHMEM_REDUCE_SYNC_SIZE];
static double scale = 1.0;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v)
{
    qsort(v, TRIALS, sizeof(double), cmpd);
    return v[TRIALS / 2];
}

static long iters_for(size_t sz)
{
    long it = sz <= 4096 ? 20000 : sz <= 65536 ? 2000 : 200;
    it = (long)(it * scale);
    return it < 10 ? 10 : it;
}

static void report(const char *name, double v, const char *unit)
{
    printf("%s\t%.4f\t%s\n", name, v, unit);
    fflush(stdout);
}

/* kind 0 put, 1 get */
static double lat(int kind, char *dst, char *src, size_t sz)
{
    double t[TRIALS];
    long it = iters_for(sz);
    int me = shmem_my_pe();
    for (int k = 0; k < TRIALS; k++) {
        shmem_barrier_all();
        if (me == 0) {
            for (long i = 0; i < it / 10 + 1; i++) { /* warm-up */
                if (kind == 0) {
                    shmem_putmem(dst, src, sz, 1);
                    shmem_quiet();
                } else
                    shmem_getmem(dst, src, sz, 1);
            }
            double t0 = now_us();
            for (long i = 0; i < it; i++) {
                if (kind == 0) {
                    shmem_putmem(dst, src, sz, 1);
                    shmem_quiet();
                } else
                    shmem_getmem(dst, src, sz, 1);
            }
            t[k] = (now_us() - t0) / it;
        }
        shmem_barrier_all();
    }
    return me == 0 ? median(t) : 0;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        scale = atof(argv[1]);
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (n < 2) {
        if (me == 0)
            fprintf(stderr, "shmembench: needs at least 2 PEs\n");
        shmem_finalize();
        return 1;
    }
    char *hsrc = shmem_malloc(MAXSZ), *hdst = shmem_malloc(MAXSZ);
    long *ctr = shmem_calloc(1, sizeof(long));
    memset(hsrc, 1, MAXSZ);
    memset(hdst, 2, MAXSZ);
    memset(gsrc, 1, MAXSZ);
    memset(gdst, 2, MAXSZ);
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
        psync_b[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync_r[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < NBC; i++)
        bc_src[i] = red_src[i] = i + me;
    shmem_barrier_all();
    if (me == 0) {
        int major, minor;
        char name[SHMEM_MAX_NAME_LEN];
        shmem_info_get_version(&major, &minor);
        shmem_info_get_name(name);
        printf("# shmembench: %d PEs, OpenSHMEM %d.%d, %s\n", n, major, minor, name);
    }

    char nm[64];
    /* 8 B, 64 B, 512 B, 4 KiB, 32 KiB, 256 KiB, 1 MiB */
    size_t hs[] = {8, 64, 512, 4096, 32768, 262144, MAXSZ};
    for (int k = 0; k < 7; k++) {
        double v = lat(0, hdst, hsrc, hs[k]);
        snprintf(nm, sizeof nm, "putmem_heap_%zu", hs[k]);
        if (me == 0)
            report(nm, v, "us");
        v = lat(1, hdst, hsrc, hs[k]);
        snprintf(nm, sizeof nm, "getmem_heap_%zu", hs[k]);
        if (me == 0)
            report(nm, v, "us");
    }
    size_t gs[] = {8, 4096, MAXSZ};
    for (int k = 0; k < 3; k++) {
        double v = lat(0, gdst, gsrc, gs[k]);
        snprintf(nm, sizeof nm, "putmem_global_%zu", gs[k]);
        if (me == 0)
            report(nm, v, "us");
        v = lat(1, gdst, gsrc, gs[k]);
        snprintf(nm, sizeof nm, "getmem_global_%zu", gs[k]);
        if (me == 0)
            report(nm, v, "us");
    }

    /* message rate: windows of 256 8-byte puts, one quiet per window */
    {
        double t[TRIALS];
        long windows = (long)(400 * scale) + 1;
        for (int k = 0; k < TRIALS; k++) {
            shmem_barrier_all();
            if (me == 0) {
                double t0 = now_us();
                for (long w = 0; w < windows; w++) {
                    for (int i = 0; i < 256; i++)
                        shmem_putmem(hdst + 8 * i, hsrc + 8 * i, 8, 1);
                    shmem_quiet();
                }
                t[k] = windows * 256 / (now_us() - t0); /* messages per us */
            }
            shmem_barrier_all();
        }
        if (me == 0)
            report("put_rate_8", median(t), "Mmsg/s");
    }

    /* atomics (64-bit, heap) */
    for (int op = 0; op < 2; op++) {
        double t[TRIALS];
        long it = (long)(20000 * scale) + 10;
        for (int k = 0; k < TRIALS; k++) {
            shmem_barrier_all();
            if (me == 0) {
                long sink = 0;
                double t0 = now_us();
                for (long i = 0; i < it; i++) {
                    if (op == 0)
                        sink += shmem_long_atomic_fetch_add(ctr, 1, 1);
                    else
                        sink += shmem_long_atomic_compare_swap(ctr, i, i + 1, 1);
                }
                t[k] = (now_us() - t0) / it;
                if (sink == -1)
                    printf("#\n");
            }
            shmem_barrier_all();
        }
        if (me == 0)
            report(op == 0 ? "fetch_add_long" : "compare_swap_long", median(t), "us");
    }

    /* collectives: every PE (-DSHMEMBENCH_NO_COLL leaves out broadcast and
     * reduction, for a library that lacks them) */
    double tb[TRIALS], tc[TRIALS] = {0}, tr[TRIALS] = {0};
    long cit = (long)(2000 * scale) + 10;
    for (int k = 0; k < TRIALS; k++) {
        shmem_barrier_all();
        double t0 = now_us();
        for (long i = 0; i < cit; i++)
            shmem_barrier_all();
        tb[k] = (now_us() - t0) / cit;
#ifndef SHMEMBENCH_NO_COLL
        shmem_barrier_all();
        t0 = now_us();
        for (long i = 0; i < cit; i++) {
            shmem_broadcast64(bc_dst, bc_src, NBC, 0, 0, 0, n, psync_b);
            shmem_barrier_all();
        }
        tc[k] = (now_us() - t0) / cit;
        shmem_barrier_all();
        t0 = now_us();
        for (long i = 0; i < cit; i++) {
            shmem_long_sum_to_all(red_dst, red_src, NBC, 0, 0, n, pwrk, psync_r);
            shmem_barrier_all();
        }
        tr[k] = (now_us() - t0) / cit;
#endif
    }
    shmem_barrier_all();
    if (me == 0) {
        double b = median(tb), c = median(tc), r = median(tr);
        report("barrier_all", b, "us");
#ifndef SHMEMBENCH_NO_COLL
        report("broadcast64_1KiB+barrier", c, "us");
        report("broadcast64_1KiB", c - b, "us");
        report("long_sum_to_all_1KiB+barrier", r, "us");
        report("long_sum_to_all_1KiB", r - b, "us");
#else
        (void)c;
        (void)r;
#endif
    }
    /* check the collectives did their work */
    int bad = 0;
#ifndef SHMEMBENCH_NO_COLL
    for (int i = 0; i < NBC; i++) {
        if (me != 0 && bc_dst[i] != i)
            bad++;
        if (red_dst[i] != (long)i * n + (long)n * (n - 1) / 2)
            bad++;
    }
#endif
    if (bad)
        fprintf(stderr, "shmembench: PE %d: %d wrong collective results\n", me, bad);
    shmem_barrier_all();
    shmem_free(ctr);
    shmem_free(hdst);
    shmem_free(hsrc);
    shmem_finalize();
    return bad != 0;
}
