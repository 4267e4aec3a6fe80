/*
 * spmv - sparse matrix-vector product y = A x with A, x and y in FAM, the
 * application of the OpenFAM papers, run by famrun:
 *
 *   famrun -n 4 build/apps/spmv --scale 14 --edge-factor 16 --check
 *   famrun -n 2 --servers 2 build/apps/spmv --input graph.famcsr --interleave off
 *
 * PE 0 loads the matrix (a file in any format famapp.h reads, or a synthetic
 * R-MAT one) and stores it in CSR form in one region: indptr, indices and
 * values, the vector x (x[j] = 1 + (j % 17) / 16) and room for y. After a
 * barrier every PE reads all of x, then takes its block of rows, fetching
 * them a group at a time (the group's slice of indptr, then its indices and
 * values with two non-blocking gets completed together), and writes its
 * block of y back. Time spent in data-path calls and barriers counts as
 * communication, the arithmetic as compute; PE 0 prints the slowest PE's
 * figures, and with --check compares y with a serial product of its own.
 */
#include "famapp.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: spmv [--input FILE | --scale S --edge-factor E --seed N] [--group ROWS]\n"
            "            [--iters K] [--interleave on|off] [--region NAME] [--check]\n"
            "            [--output FILE] [--json]\n"
            "\n"
            "  --input FILE       matrix: FAMCSR (rmatgen), Matrix Market coordinate, or a\n"
            "                     text edge list \"SRC DST [WEIGHT]\" (0-based)\n"
            "  --scale S          R-MAT matrix of 2^S rows when no --input (default 10)\n"
            "  --edge-factor E    R-MAT entries per row before duplicates merge (default 8)\n"
            "  --seed N           R-MAT seed (default 1)\n"
            "  --group ROWS       rows fetched per group (default 256)\n"
            "  --iters K          products to run and time (default 1)\n"
            "  --interleave on|off  stripe the region over the memory servers (default on)\n"
            "  --region NAME      region name (default spmv-$FAMRUN_JOB)\n"
            "  --check            PE 0 compares y with a serial product (exit 1 on mismatch)\n"
            "  --output FILE      PE 0 writes y, one value per line\n"
            "  --json             PE 0 prints the figures as one JSON object\n");
}

int main(int argc, char **argv)
{
    app_opts_t o = app_opts_default();
    uint64_t iters = 1;
    app_name = "spmv";
    for (int i = 1; i < argc; i++) {
        if (app_option(&o, argc, argv, &i, usage))
            continue;
        const char *a = argv[i], *v = argv[i + 1];
        if (strcmp(a, "--iters") == 0) {
            iters = parse_u64(a, v), i++;
        } else {
            usage(stderr);
            return 2;
        }
    }
    app_opts_check(&o);
    if (o.group < 1 || iters < 1)
        usage_error("--group and --iters must be at least 1%s", "");
    const char *input = o.input, *output = o.output, *given_region = o.region;
    uint64_t scale = o.scale, edge_factor = o.edge_factor, seed = o.seed, group = o.group;
    int interleave = o.interleave, check = o.check, json = o.json;

    job_init("spmv");
    char rname[OPENFAM_NAME_MAX + 1];
    job_region_name(rname, sizeof rname, given_region);

    /* PE 0 loads the input and fills the region; the others only need the
     * region's name. */
    csr_t a = {0};
    fam_region_t *region = NULL;
    uint64_t setup_ns = 0;
    if (app_rank == 0) {
        if (input != NULL)
            read_matrix(input, &a);
        else
            rmat(&a, (unsigned)scale, edge_factor, seed);
        double *x = xmalloc(a.ncols * sizeof *x);
        for (uint64_t j = 0; j < a.ncols; j++)
            x[j] = spmv_x(j);
        uint64_t t0 = now_ns();
        uint64_t bytes = 24 + 8 * (a.nrows + 1) + 16 * a.nnz + 8 * a.ncols + 8 * a.nrows + 32 * (uint64_t)app_size;
        region = region_for(rname, bytes, 7, interleave);
        uint64_t meta[3] = {a.nrows, a.ncols, a.nnz};
        fam_close(item_put(region, "meta", meta, sizeof meta));
        fam_close(item_put(region, "indptr", a.indptr, 8 * (a.nrows + 1)));
        fam_close(item_put(region, "indices", a.indices, 8 * a.nnz));
        fam_close(item_put(region, "values", a.values, 8 * a.nnz));
        fam_close(item_put(region, "x", x, 8 * a.ncols));
        fam_close(item_put(region, "y", NULL, 8 * a.nrows));
        fam_close(item_put(region, "stats", NULL, 32 * (uint64_t)app_size));
        setup_ns = now_ns() - t0;
        free(x);
    }
    barrier("fam_barrier_all (after setup)");

    fam_desc_t *d_meta = item_lookup("meta", rname), *d_indptr = item_lookup("indptr", rname),
               *d_indices = item_lookup("indices", rname), *d_values = item_lookup("values", rname),
               *d_x = item_lookup("x", rname), *d_y = item_lookup("y", rname),
               *d_stats = item_lookup("stats", rname);
    uint64_t meta[3];
    if (fam_get_blocking(meta, d_meta, 0, sizeof meta) != 0)
        fail("fam_get_blocking (meta)");
    uint64_t nrows = meta[0], ncols = meta[1], nnz = meta[2];
    uint64_t lo, hi;
    row_block(nrows, app_rank, app_size, &lo, &hi);

    double *x = xmalloc(ncols * sizeof *x), *y = xmalloc((hi - lo) * sizeof *y);
    int64_t *ptr = xmalloc((group + 1) * sizeof *ptr);
    uint64_t room = 1024;
    int64_t *cols = xmalloc(room * sizeof *cols);
    double *vals = xmalloc(room * sizeof *vals);

    barrier("fam_barrier_all (before the product)");
    uint64_t t_start = now_ns();
    for (uint64_t it = 0; it < iters; it++) {
        tick();
        if (ncols > 0 && fam_get_blocking(x, d_x, 0, 8 * ncols) != 0)
            fail("fam_get_blocking (x)");
        tock_comm();
        for (uint64_t g0 = lo; g0 < hi; g0 += group) {
            uint64_t g1 = g0 + group < hi ? g0 + group : hi;
            if (fam_get_blocking(ptr, d_indptr, 8 * g0, 8 * (g1 - g0 + 1)) != 0)
                fail("fam_get_blocking (indptr)");
            uint64_t first = (uint64_t)ptr[0], n = (uint64_t)(ptr[g1 - g0] - ptr[0]);
            if (n > room) {
                tock_comm();
                while (room < n)
                    room *= 2;
                free(cols);
                free(vals);
                cols = xmalloc(room * sizeof *cols);
                vals = xmalloc(room * sizeof *vals);
                tick();
            }
            if (n > 0) {
                if (fam_get_nonblocking(cols, d_indices, 8 * first, 8 * n) != 0 ||
                    fam_get_nonblocking(vals, d_values, 8 * first, 8 * n) != 0 || fam_quiet() != 0)
                    fail("fetching a group of rows");
            }
            tock_comm();
            for (uint64_t r = g0; r < g1; r++) {
                double s = 0;
                for (int64_t k = ptr[r - g0] - ptr[0]; k < ptr[r - g0 + 1] - ptr[0]; k++) {
                    if (cols[k] < 0 || (uint64_t)cols[k] >= ncols) {
                        fprintf(stderr, "spmv PE %d: column %lld out of range in FAM\n", app_rank,
                                (long long)cols[k]);
                        return 1;
                    }
                    s += vals[k] * x[cols[k]];
                }
                y[r - lo] = s;
            }
            tock_compute();
        }
        if (hi > lo && fam_put_blocking(y, d_y, 8 * lo, 8 * (hi - lo)) != 0)
            fail("fam_put_blocking (y)");
        barrier("fam_barrier_all (after a product)");
        tock_comm();
    }
    double mine[4] = {(double)t_comm / 1e6, (double)t_compute / 1e6, (double)(now_ns() - t_start) / 1e6,
                      (double)(hi - lo)};
    if (fam_put_blocking(mine, d_stats, 32 * (uint64_t)app_rank, sizeof mine) != 0)
        fail("fam_put_blocking (stats)");
    barrier("fam_barrier_all (after stats)");

    int bad = 0;
    if (app_rank == 0) {
        double *all = xmalloc(32 * (size_t)app_size);
        if (fam_get_blocking(all, d_stats, 0, 32 * (uint64_t)app_size) != 0)
            fail("fam_get_blocking (stats)");
        /* The job takes as long as its slowest PE: report that one's split. */
        int slow = 0;
        for (int p = 1; p < app_size; p++)
            if (all[4 * p + 2] > all[4 * slow + 2])
                slow = p;
        double comm = all[4 * slow], compute = all[4 * slow + 1], total = all[4 * slow + 2];
        double gflops = total > 0 ? 2.0 * (double)nnz * (double)iters / (total * 1e6) : 0;
        double err = 0;
        if (check || output != NULL) {
            double *yf = xmalloc(nrows * sizeof *yf);
            if (nrows > 0 && fam_get_blocking(yf, d_y, 0, 8 * nrows) != 0)
                fail("fam_get_blocking (y)");
            if (output != NULL)
                write_vector(output, yf, nrows);
            if (check) {
                /* Serial: the same rows in the same order, so the sums round
                 * alike; the tolerance only guards against a compiler
                 * contracting one loop into fused multiply-adds. */
                for (uint64_t r = 0; r < nrows; r++) {
                    double s = 0, mag = 0;
                    for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; k++) {
                        s += a.values[k] * spmv_x((uint64_t)a.indices[k]);
                        mag += __builtin_fabs(a.values[k] * spmv_x((uint64_t)a.indices[k]));
                    }
                    double e = __builtin_fabs(yf[r] - s) / (mag > 0 ? mag : 1);
                    if (e > err)
                        err = e;
                }
                bad = !(err <= 1e-12);
            }
            free(yf);
        }
        if (json) {
            printf("{\"app\": \"spmv\", \"rows\": %llu, \"cols\": %llu, \"nnz\": %llu, \"pes\": %d, "
                   "\"group\": %llu, \"iters\": %llu, \"interleave\": %s, \"setup_ms\": %.3f, "
                   "\"total_ms\": %.3f, \"comm_ms\": %.3f, \"compute_ms\": %.3f, \"gflops\": %.4f",
                   (unsigned long long)nrows, (unsigned long long)ncols, (unsigned long long)nnz, app_size,
                   (unsigned long long)group, (unsigned long long)iters, interleave ? "true" : "false",
                   (double)setup_ns / 1e6, total, comm, compute, gflops);
            if (check)
                printf(", \"max_rel_error\": %.3g, \"ok\": %s", err, bad ? "false" : "true");
            printf("}\n");
        } else {
            printf("spmv: %llu x %llu, %llu nonzeros, %d PE(s), groups of %llu rows, interleave %s, %llu "
                   "product(s)\n",
                   (unsigned long long)nrows, (unsigned long long)ncols, (unsigned long long)nnz, app_size,
                   (unsigned long long)group, interleave ? "on" : "off", (unsigned long long)iters);
            printf("spmv: slowest PE (%d): %.3f ms = communication %.3f ms + compute %.3f ms; %.3f GFLOP/s; "
                   "setup (PE 0 storing the input) %.3f ms\n",
                   slow, total, comm, compute, gflops, (double)setup_ns / 1e6);
            if (check)
                printf("spmv: check against a serial product: max relative error %.3g (%s)\n", err,
                       bad ? "MISMATCH" : "ok");
        }
        free(all);
    }
    barrier("fam_barrier_all (before cleanup)");
    fam_close(d_meta);
    fam_close(d_indptr);
    fam_close(d_indices);
    fam_close(d_values);
    fam_close(d_x);
    fam_close(d_y);
    fam_close(d_stats);
    if (app_rank == 0 && fam_destroy_region(region) != 0)
        fail("fam_destroy_region");
    free(x);
    free(y);
    free(ptr);
    free(cols);
    free(vals);
    csr_free(&a);
    if (fam_finalize("default") != 0)
        fail("fam_finalize");
    return bad;
}
