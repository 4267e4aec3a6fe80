/*
 * pagerank - PageRank over a graph whose edges live in FAM, the second
 * application of the OpenFAM papers, run by famrun:
 *
 *   famrun -n 4 build/apps/pagerank --scale 14 --edge-factor 16 --check
 *   famrun -n 3 --servers 2 build/apps/pagerank --input graph.famcsr --tol 1e-10
 *
 * PE 0 loads the graph (any input famapp.h reads: an entry (r, c) is an
 * edge r -> c; values are ignored) and stores it in one region as its
 * incoming edges in CSR form (in_ptr, in_src), each vertex's out-degree, and
 * two rank vectors used in turn. Every iteration each PE reads the whole
 * current rank vector, computes the new ranks of its block of vertices,
 * fetching their incoming edges a group of vertices at a time, writes them
 * into the other vector and its share of the L1 change into its slot; after
 * a barrier every PE gathers the shares (a strided gather) and all stop
 * together once the sum falls below the tolerance.
 *
 *   rank'(v) = (1 - d) / N + d * (sum over u -> v of rank(u) / outdeg(u)
 *                                 + (sum of rank(u) over u with no out-edge) / N)
 *
 * The ranks start at 1/N. Communication (data path and barriers) and compute
 * are timed apart; PE 0 prints the slowest PE's figures and, with --check,
 * compares the result with a serial computation of its own.
 */
#include "famapp.h"

/* Per PE in the stats item: the L1 change of even and odd iterations (two
 * slots, so that a PE running ahead into the next iteration never
 * overwrites a share another PE has yet to read), then the timings. */
enum { ST_DIFF0, ST_DIFF1, ST_COMM, ST_COMPUTE, ST_TOTAL, ST_ITERS, ST_WORDS = 8 };

typedef struct {
    uint64_t n, e;
    int64_t *in_ptr, *in_src, *outdeg;
} graph_t;

/* graph_from builds the incoming-edge CSR of the square graph of m. Within
 * a vertex, sources come in ascending order (a counting sort over rows in
 * order), which fixes the order every sum is taken in. */
static void graph_from(graph_t *g, const csr_t *m)
{
    g->n = m->nrows > m->ncols ? m->nrows : m->ncols;
    g->e = m->nnz;
    g->in_ptr = xmalloc((g->n + 1) * sizeof *g->in_ptr);
    g->in_src = xmalloc(g->e * sizeof *g->in_src);
    g->outdeg = xmalloc(g->n * sizeof *g->outdeg);
    memset(g->in_ptr, 0, (g->n + 1) * sizeof *g->in_ptr);
    memset(g->outdeg, 0, g->n * sizeof *g->outdeg);
    for (uint64_t k = 0; k < m->nnz; k++)
        g->in_ptr[m->indices[k] + 1]++;
    for (uint64_t v = 0; v < g->n; v++)
        g->in_ptr[v + 1] += g->in_ptr[v];
    int64_t *fill = xmalloc((g->n + 1) * sizeof *fill);
    memcpy(fill, g->in_ptr, (g->n + 1) * sizeof *fill);
    for (uint64_t r = 0; r < m->nrows; r++) {
        g->outdeg[r] = m->indptr[r + 1] - m->indptr[r];
        for (int64_t k = m->indptr[r]; k < m->indptr[r + 1]; k++)
            g->in_src[fill[m->indices[k]]++] = (int64_t)r;
    }
    free(fill);
}

/* contributions fills contrib[u] = rank[u] / outdeg[u] and returns
 * (1 - d) / N + d * dangling / N, the part every vertex gets. Every PE
 * computes it from the whole vector in the same order, so all agree. */
static double contributions(const double *rank, const int64_t *outdeg, uint64_t n, double d, double *contrib)
{
    double dangling = 0;
    for (uint64_t u = 0; u < n; u++) {
        if (outdeg[u] > 0)
            contrib[u] = rank[u] / (double)outdeg[u];
        else {
            contrib[u] = 0;
            dangling += rank[u];
        }
    }
    return (1 - d) / (double)n + d * dangling / (double)n;
}

/* serial_pagerank: the same iteration on one process, for --check. */
static uint64_t serial_pagerank(const graph_t *g, double d, double tol, uint64_t max_iters, double *out)
{
    double *cur = xmalloc(g->n * sizeof *cur), *contrib = xmalloc(g->n * sizeof *contrib);
    for (uint64_t v = 0; v < g->n; v++)
        cur[v] = 1.0 / (double)g->n;
    uint64_t it = 0;
    while (it < max_iters) {
        double base = contributions(cur, g->outdeg, g->n, d, contrib), diff = 0;
        for (uint64_t v = 0; v < g->n; v++) {
            double s = 0;
            for (int64_t k = g->in_ptr[v]; k < g->in_ptr[v + 1]; k++)
                s += contrib[g->in_src[k]];
            out[v] = base + d * s;
            diff += __builtin_fabs(out[v] - cur[v]);
        }
        memcpy(cur, out, g->n * sizeof *cur);
        it++;
        if (diff < tol)
            break;
    }
    free(cur);
    free(contrib);
    return it;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pagerank [--input FILE | --scale S --edge-factor E --seed N]\n"
            "                [--damping D] [--tol T] [--max-iters K] [--group VERTICES]\n"
            "                [--interleave on|off] [--region NAME] [--check] [--output FILE] [--json]\n"
            "\n"
            "  --input FILE       graph: FAMCSR (rmatgen), Matrix Market coordinate, or a\n"
            "                     text edge list \"SRC DST\" (0-based); entry (r, c) = edge r -> c\n"
            "  --scale S          R-MAT graph of 2^S vertices when no --input (default 10)\n"
            "  --edge-factor E    R-MAT edges per vertex before duplicates merge (default 8)\n"
            "  --seed N           R-MAT seed (default 1)\n"
            "  --damping D        damping factor (default 0.85)\n"
            "  --tol T            stop once the L1 change of an iteration is below T (default 1e-8)\n"
            "  --max-iters K      stop after K iterations at most (default 200)\n"
            "  --group VERTICES   vertices whose edges are fetched per group (default 256)\n"
            "  --interleave on|off  stripe the region over the memory servers (default on)\n"
            "  --region NAME      region name (default pagerank-$FAMRUN_JOB)\n"
            "  --check            PE 0 compares with a serial computation (exit 1 on mismatch)\n"
            "  --output FILE      PE 0 writes the ranks, one value per line\n"
            "  --json             PE 0 prints the figures as one JSON object\n");
}

int main(int argc, char **argv)
{
    app_opts_t o = app_opts_default();
    uint64_t max_iters = 200;
    double damping = 0.85, tol = 1e-8;
    app_name = "pagerank";
    for (int i = 1; i < argc; i++) {
        if (app_option(&o, argc, argv, &i, usage))
            continue;
        const char *a = argv[i], *v = argv[i + 1];
        if (strcmp(a, "--max-iters") == 0) {
            max_iters = parse_u64(a, v), i++;
        } else if (strcmp(a, "--damping") == 0) {
            damping = parse_double(a, v), i++;
        } else if (strcmp(a, "--tol") == 0) {
            tol = parse_double(a, v), i++;
        } else {
            usage(stderr);
            return 2;
        }
    }
    app_opts_check(&o);
    if (o.group < 1 || max_iters < 1)
        usage_error("--group and --max-iters must be at least 1%s", "");
    const char *input = o.input, *output = o.output, *given_region = o.region;
    uint64_t scale = o.scale, edge_factor = o.edge_factor, seed = o.seed, group = o.group;
    int interleave = o.interleave, check = o.check, json = o.json;
    if (!(damping >= 0 && damping < 1))
        usage_error("--damping must be in [0, 1)%s", "");
    if (!(tol > 0))
        usage_error("--tol must be positive%s", "");

    job_init("pagerank");
    char rname[OPENFAM_NAME_MAX + 1];
    job_region_name(rname, sizeof rname, given_region);

    graph_t g = {0};
    fam_region_t *region = NULL;
    uint64_t setup_ns = 0;
    if (app_rank == 0) {
        csr_t m = {0};
        if (input != NULL)
            read_matrix(input, &m);
        else
            rmat(&m, (unsigned)scale, edge_factor, seed);
        graph_from(&g, &m);
        csr_free(&m);
        if (g.n == 0) {
            fprintf(stderr, "pagerank: the graph has no vertices\n");
            fam_abort(2);
        }
        double *r0 = xmalloc(g.n * sizeof *r0);
        for (uint64_t v = 0; v < g.n; v++)
            r0[v] = 1.0 / (double)g.n;
        uint64_t t0 = now_ns();
        uint64_t bytes = 16 + 8 * (g.n + 1) + 8 * g.e + 8 * g.n * 3 + 8 * ST_WORDS * (uint64_t)app_size;
        region = region_for(rname, bytes, 7, interleave);
        uint64_t meta[2] = {g.n, g.e};
        fam_close(item_put(region, "meta", meta, sizeof meta));
        fam_close(item_put(region, "in_ptr", g.in_ptr, 8 * (g.n + 1)));
        fam_close(item_put(region, "in_src", g.in_src, 8 * g.e));
        fam_close(item_put(region, "outdeg", g.outdeg, 8 * g.n));
        fam_close(item_put(region, "rank0", r0, 8 * g.n));
        fam_close(item_put(region, "rank1", NULL, 8 * g.n));
        fam_close(item_put(region, "stats", NULL, 8 * ST_WORDS * (uint64_t)app_size));
        setup_ns = now_ns() - t0;
        free(r0);
    }
    barrier("fam_barrier_all (after setup)");

    fam_desc_t *d_meta = item_lookup("meta", rname), *d_ptr = item_lookup("in_ptr", rname),
               *d_src = item_lookup("in_src", rname), *d_deg = item_lookup("outdeg", rname),
               *d_rank[2] = {item_lookup("rank0", rname), item_lookup("rank1", rname)},
               *d_stats = item_lookup("stats", rname);
    uint64_t meta[2];
    if (fam_get_blocking(meta, d_meta, 0, sizeof meta) != 0)
        fail("fam_get_blocking (meta)");
    uint64_t n = meta[0], lo, hi;
    row_block(n, app_rank, app_size, &lo, &hi);

    double *rank = xmalloc(n * sizeof *rank), *contrib = xmalloc(n * sizeof *contrib),
           *next = xmalloc((hi - lo + 1) * sizeof *next), *shares = xmalloc((size_t)app_size * sizeof *shares);
    int64_t *outdeg = xmalloc(n * sizeof *outdeg), *ptr = xmalloc((group + 1) * sizeof *ptr);
    uint64_t room = 1024;
    int64_t *src = xmalloc(room * sizeof *src);

    barrier("fam_barrier_all (before the iterations)");
    uint64_t t_start = now_ns(), iters = 0;
    double change = 0;
    tick();
    if (fam_get_blocking(outdeg, d_deg, 0, 8 * n) != 0)
        fail("fam_get_blocking (outdeg)");
    tock_comm();
    for (;;) {
        int cur = (int)(iters % 2);
        if (fam_get_blocking(rank, d_rank[cur], 0, 8 * n) != 0)
            fail("fam_get_blocking (rank)");
        tock_comm();
        double base = contributions(rank, outdeg, n, damping, contrib), diff = 0;
        tock_compute();
        for (uint64_t g0 = lo; g0 < hi; g0 += group) {
            uint64_t g1 = g0 + group < hi ? g0 + group : hi;
            if (fam_get_blocking(ptr, d_ptr, 8 * g0, 8 * (g1 - g0 + 1)) != 0)
                fail("fam_get_blocking (in_ptr)");
            uint64_t first = (uint64_t)ptr[0], cnt = (uint64_t)(ptr[g1 - g0] - ptr[0]);
            if (cnt > room) {
                while (room < cnt)
                    room *= 2;
                free(src);
                src = xmalloc(room * sizeof *src);
            }
            if (cnt > 0 && fam_get_blocking(src, d_src, 8 * first, 8 * cnt) != 0)
                fail("fam_get_blocking (in_src)");
            tock_comm();
            for (uint64_t v = g0; v < g1; v++) {
                double s = 0;
                for (int64_t k = ptr[v - g0] - ptr[0]; k < ptr[v - g0 + 1] - ptr[0]; k++) {
                    if (src[k] < 0 || (uint64_t)src[k] >= n) {
                        fprintf(stderr, "pagerank PE %d: vertex %lld out of range in FAM\n", app_rank,
                                (long long)src[k]);
                        return 1;
                    }
                    s += contrib[src[k]];
                }
                next[v - lo] = base + damping * s;
                diff += __builtin_fabs(next[v - lo] - rank[v]);
            }
            tock_compute();
        }
        if (hi > lo && fam_put_blocking(next, d_rank[1 - cur], 8 * lo, 8 * (hi - lo)) != 0)
            fail("fam_put_blocking (rank)");
        if (fam_put_blocking(&diff, d_stats, 8 * (ST_WORDS * (uint64_t)app_rank + (uint64_t)cur), 8) != 0)
            fail("fam_put_blocking (change)");
        barrier("fam_barrier_all (after an iteration)");
        /* Element p of the gather is word ST_WORDS * p + cur of the item. */
        if (fam_gather_blocking_strided(shares, d_stats, (uint64_t)app_size, (uint64_t)cur, ST_WORDS, 8) != 0)
            fail("fam_gather_blocking_strided (changes)");
        tock_comm();
        change = 0;
        for (int p = 0; p < app_size; p++)
            change += shares[p];
        iters++;
        if (change < tol || iters >= max_iters)
            break;
    }
    double mine[3] = {(double)t_comm / 1e6, (double)t_compute / 1e6, (double)(now_ns() - t_start) / 1e6};
    if (fam_put_blocking(mine, d_stats, 8 * (ST_WORDS * (uint64_t)app_rank + ST_COMM), sizeof mine) != 0)
        fail("fam_put_blocking (stats)");
    barrier("fam_barrier_all (after stats)");

    int bad = 0;
    if (app_rank == 0) {
        double *all = xmalloc(8 * ST_WORDS * (size_t)app_size);
        if (fam_get_blocking(all, d_stats, 0, 8 * ST_WORDS * (uint64_t)app_size) != 0)
            fail("fam_get_blocking (stats)");
        int slow = 0;
        for (int p = 1; p < app_size; p++)
            if (all[ST_WORDS * p + ST_TOTAL] > all[ST_WORDS * slow + ST_TOTAL])
                slow = p;
        double comm = all[ST_WORDS * slow + ST_COMM], compute = all[ST_WORDS * slow + ST_COMPUTE],
               total = all[ST_WORDS * slow + ST_TOTAL];
        double *final = xmalloc(n * sizeof *final), err = 0, sum = 0;
        uint64_t serial_iters = 0;
        if (fam_get_blocking(final, d_rank[iters % 2], 0, 8 * n) != 0)
            fail("fam_get_blocking (final ranks)");
        for (uint64_t v = 0; v < n; v++)
            sum += final[v];
        if (output != NULL)
            write_vector(output, final, n);
        if (check) {
            /* Each vertex's sum is taken in the same order as the serial
             * one, so equal iteration counts give equal bits; the shares of
             * the L1 change add up in another order, which could end the
             * loop one iteration apart only when the change sits within
             * rounding of the tolerance. The tolerance bounds that gap. */
            double *want = xmalloc(n * sizeof *want);
            serial_iters = serial_pagerank(&g, damping, tol, max_iters, want);
            for (uint64_t v = 0; v < n; v++) {
                double e = __builtin_fabs(final[v] - want[v]);
                if (e > err)
                    err = e;
            }
            bad = !(err <= tol);
            free(want);
        }
        if (json) {
            printf("{\"app\": \"pagerank\", \"vertices\": %llu, \"edges\": %llu, \"pes\": %d, \"group\": %llu, "
                   "\"interleave\": %s, \"iterations\": %llu, \"l1_change\": %.3g, \"rank_sum\": %.12g, "
                   "\"setup_ms\": %.3f, \"total_ms\": %.3f, \"comm_ms\": %.3f, \"compute_ms\": %.3f",
                   (unsigned long long)n, (unsigned long long)meta[1], app_size, (unsigned long long)group,
                   interleave ? "true" : "false", (unsigned long long)iters, change, sum, (double)setup_ns / 1e6,
                   total, comm, compute);
            if (check)
                printf(", \"serial_iterations\": %llu, \"max_abs_error\": %.3g, \"ok\": %s",
                       (unsigned long long)serial_iters, err, bad ? "false" : "true");
            printf("}\n");
        } else {
            printf("pagerank: %llu vertices, %llu edges, %d PE(s), groups of %llu vertices, interleave %s\n",
                   (unsigned long long)n, (unsigned long long)meta[1], app_size, (unsigned long long)group,
                   interleave ? "on" : "off");
            printf("pagerank: %llu iteration(s), last L1 change %.3g (tolerance %.3g), ranks sum to %.12g\n",
                   (unsigned long long)iters, change, tol, sum);
            printf("pagerank: slowest PE (%d): %.3f ms = communication %.3f ms + compute %.3f ms; setup (PE 0 "
                   "storing the graph) %.3f ms\n",
                   slow, total, comm, compute, (double)setup_ns / 1e6);
            if (check)
                printf("pagerank: check against a serial computation (%llu iterations): max abs error %.3g (%s)\n",
                       (unsigned long long)serial_iters, err, bad ? "MISMATCH" : "ok");
        }
        free(final);
        free(all);
    }
    barrier("fam_barrier_all (before cleanup)");
    fam_close(d_meta);
    fam_close(d_ptr);
    fam_close(d_src);
    fam_close(d_deg);
    fam_close(d_rank[0]);
    fam_close(d_rank[1]);
    fam_close(d_stats);
    if (app_rank == 0 && fam_destroy_region(region) != 0)
        fail("fam_destroy_region");
    free(g.in_ptr);
    free(g.in_src);
    free(g.outdeg);
    free(rank);
    free(contrib);
    free(next);
    free(shares);
    free(outdeg);
    free(ptr);
    free(src);
    if (fam_finalize("default") != 0)
        fail("fam_finalize");
    return bad;
}
