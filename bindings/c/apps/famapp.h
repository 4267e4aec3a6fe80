/*
 * famapp.h - what the SpMV and PageRank applications (and rmatgen) share:
 * clocks, the job's PE rank and size, sparse matrices in CSR form, the
 * synthetic R-MAT generator and the input formats.
 *
 * Input formats (read_matrix picks one by the file's first bytes):
 *
 *   FAMCSR (written by rmatgen, read by the Python spmv example too), all
 *   little-endian:
 *       char     magic[8]   "FAMCSR1\0"
 *       uint64   nrows, ncols, nnz
 *       int64    indptr[nrows + 1]   row r holds entries indptr[r] .. indptr[r+1]-1
 *       int64    indices[nnz]        column of each entry, ascending within a row
 *       float64  values[nnz]
 *   Matrix Market coordinate ("%%MatrixMarket matrix coordinate
 *   real|integer|pattern general|symmetric"), 1-based.
 *   Anything else: a text edge list, one "SRC DST [WEIGHT]" per line,
 *   0-based, '#' or '%' starting a comment line; weight 1 when absent.
 *
 * Whatever the format, entries are sorted by (row, column) and duplicates
 * summed, so every reader of one input sees the same matrix. For PageRank the
 * matrix is a directed graph: an entry (r, c) is an edge r -> c.
 *
 * The vector SpMV multiplies by is fixed, so that any reader of an input can
 * repeat the product: x[j] = 1 + (j % 17) / 16.
 *
 * Header-only (static inline functions, so that a program need not use
 * them all): each program is one C file plus this.
 */
#ifndef FAMAPP_H
#define FAMAPP_H

#define _GNU_SOURCE
#include <openfam.h>

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *app_name = "famapp";
static int app_rank __attribute__((unused)) = 0, app_size __attribute__((unused)) = 1;

/* fail prints what failed with the library's last error and exits. Every PE
 * exits on its own failure; famrun then stops the others. */
static inline void fail(const char *what)
{
    fprintf(stderr, "%s PE %d: %s failed: %s (code %d)\n", app_name, app_rank, what, fam_errmsg(), fam_errcode());
    exit(1);
}

/* usage_error prints a message about bad input and exits with status 2. */
static inline void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", app_name);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(2);
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* parse_u64 reads a whole decimal argument or exits naming the option. */
static inline uint64_t parse_u64(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
        usage_error("%s needs a non-negative integer", opt);
    return (uint64_t)v;
}

static inline double parse_double(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0')
        usage_error("%s needs a number", opt);
    return v;
}

/* The options SpMV and PageRank share (see their --help), with their
 * defaults. */
typedef struct {
    const char *input, *output, *region;
    uint64_t scale, edge_factor, seed, group;
    int interleave, check, json;
} app_opts_t;

static inline app_opts_t app_opts_default(void)
{
    return (app_opts_t){.scale = 10, .edge_factor = 8, .seed = 1, .group = 256, .interleave = 1};
}

/* app_option parses argv[*i] when it is a shared option, taking its value
 * from argv[*i + 1] (and advancing *i past it): 1 when it was one, 0 when
 * the application should look at it (its value, if it takes one, is then
 * argv[*i + 1], never NULL). --help prints usage and exits 0; an option
 * without its value prints usage and exits 2. */
static inline int app_option(app_opts_t *o, int argc, char **argv, int *i, void (*usage)(FILE *))
{
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
        usage(stdout);
        exit(0);
    }
    if (strcmp(a, "--check") == 0) {
        o->check = 1;
        return 1;
    }
    if (strcmp(a, "--json") == 0) {
        o->json = 1;
        return 1;
    }
    if (v == NULL) {
        usage(stderr);
        exit(2);
    }
    if (strcmp(a, "--input") == 0)
        o->input = v;
    else if (strcmp(a, "--output") == 0)
        o->output = v;
    else if (strcmp(a, "--region") == 0)
        o->region = v;
    else if (strcmp(a, "--scale") == 0)
        o->scale = parse_u64(a, v);
    else if (strcmp(a, "--edge-factor") == 0)
        o->edge_factor = parse_u64(a, v);
    else if (strcmp(a, "--seed") == 0)
        o->seed = parse_u64(a, v);
    else if (strcmp(a, "--group") == 0)
        o->group = parse_u64(a, v);
    else if (strcmp(a, "--interleave") == 0) {
        if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
            usage_error("--interleave takes on or off, not %s", v);
        o->interleave = strcmp(v, "on") == 0;
    } else
        return 0;
    (*i)++;
    return 1;
}

/* app_opts_check refuses shared option values out of range (exit 2). */
static inline void app_opts_check(const app_opts_t *o)
{
    if (o->scale < 1 || o->scale > 30)
        usage_error("--scale must be 1..30%s", "");
    if (o->edge_factor < 1 || o->edge_factor > 1024)
        usage_error("--edge-factor must be 1..1024%s", "");
}

static inline void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "%s: out of memory (%zu bytes)\n", app_name, n);
        exit(1);
    }
    return p;
}

/* ---- the job: rank, size, a region name every PE agrees on ---- */

/* job_init initializes the library and learns this PE's rank and the job's
 * size (1 and 0 without a launcher). */
static inline void job_init(const char *name)
{
    app_name = name;
    if (fam_initialize("default", NULL) != 0)
        fail("fam_initialize");
    int *r = (int *)fam_get_option("PE_ID"), *s = (int *)fam_get_option("PE_COUNT");
    if (r == NULL || s == NULL)
        fail("fam_get_option");
    app_rank = *r;
    app_size = *s;
    free(r);
    free(s);
}

/* job_region_name: --region NAME if given, else "<app>-<FAMRUN_JOB>" (famrun
 * gives every PE the same job id), else "<app>-<pid>" for a lone process. A
 * multi-PE job without either cannot agree on a name: say so. */
static inline void job_region_name(char *out, size_t n, const char *given)
{
    const char *job = getenv("FAMRUN_JOB");
    if (given != NULL)
        snprintf(out, n, "%s", given);
    else if (job != NULL && job[0] != '\0')
        snprintf(out, n, "%s-%.40s", app_name, job);
    else if (app_size == 1)
        snprintf(out, n, "%s-%ld", app_name, (long)getpid());
    else {
        fprintf(stderr, "%s: %d PEs but no FAMRUN_JOB to name the shared region; pass --region NAME\n", app_name,
                app_size);
        exit(2);
    }
}

/* row_block gives the rows [lo, hi) of PE rank: ceil(n / size) each, the
 * last ones possibly fewer or none. */
static inline void row_block(uint64_t n, int rank, int size, uint64_t *lo, uint64_t *hi)
{
    uint64_t per = (n + (uint64_t)size - 1) / (uint64_t)size;
    *lo = per * (uint64_t)rank < n ? per * (uint64_t)rank : n;
    *hi = per * (uint64_t)(rank + 1) < n ? per * (uint64_t)(rank + 1) : n;
}

/* ---- CSR matrices ---- */

typedef struct {
    uint64_t nrows, ncols, nnz;
    int64_t *indptr;  /* nrows + 1 */
    int64_t *indices; /* nnz */
    double *values;   /* nnz */
} csr_t;

static inline void csr_free(csr_t *m)
{
    free(m->indptr);
    free(m->indices);
    free(m->values);
    memset(m, 0, sizeof *m);
}

/* A coordinate entry, the form every reader collects before csr_from_coo. */
typedef struct {
    uint64_t r, c;
    double v;
} coo_t;

static inline int cmp_coo(const void *a, const void *b)
{
    const coo_t *x = a, *y = b;
    if (x->r != y->r)
        return x->r < y->r ? -1 : 1;
    if (x->c != y->c)
        return x->c < y->c ? -1 : 1;
    return 0;
}

/* csr_from_coo sorts e (n entries) by (row, column), sums duplicates and
 * builds m. Takes ownership of e. (Only one process builds a matrix, and
 * every later reader, serial checks included, uses what it built.) */
static inline void csr_from_coo(csr_t *m, uint64_t nrows, uint64_t ncols, coo_t *e, uint64_t n)
{
    qsort(e, n, sizeof *e, cmp_coo);
    m->nrows = nrows;
    m->ncols = ncols;
    m->indptr = xmalloc((nrows + 1) * sizeof *m->indptr);
    m->indices = xmalloc(n * sizeof *m->indices);
    m->values = xmalloc(n * sizeof *m->values);
    uint64_t k = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (k > 0 && e[i].r == e[i - 1].r && e[i].c == (uint64_t)m->indices[k - 1]) {
            m->values[k - 1] += e[i].v;
            continue;
        }
        m->indices[k] = (int64_t)e[i].c;
        m->values[k] = e[i].v;
        k++;
        e[k - 1].r = e[i].r; /* row of compacted entry k-1, for indptr below */
    }
    m->nnz = k;
    memset(m->indptr, 0, (nrows + 1) * sizeof *m->indptr);
    for (uint64_t i = 0; i < k; i++)
        m->indptr[e[i].r + 1]++;
    for (uint64_t r = 0; r < nrows; r++)
        m->indptr[r + 1] += m->indptr[r];
    free(e);
}

/* ---- R-MAT ---- */

/* splitmix64: a small, well-mixed generator; the same seed gives the same
 * graph on every machine. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * 0x1p-53;
}

/* rmat builds an R-MAT graph (Chakrabarti et al.) with 2^scale vertices and
 * edge_factor * 2^scale edges before duplicates merge, with the Graph500
 * quadrant probabilities a = 0.57, b = c = 0.19, d = 0.05. Entry values
 * are uniform in [0.5, 1.5) (the SpMV weights; PageRank ignores them). */
static inline void rmat(csr_t *m, unsigned scale, uint64_t edge_factor, uint64_t seed)
{
    uint64_t n = 1ULL << scale, edges = edge_factor * n, s = seed;
    coo_t *e = xmalloc(edges * sizeof *e);
    for (uint64_t i = 0; i < edges; i++) {
        uint64_t r = 0, c = 0;
        for (unsigned bit = 0; bit < scale; bit++) {
            double p = rng_unit(&s);
            r <<= 1;
            c <<= 1;
            if (p < 0.57) {
            } else if (p < 0.76) {
                c |= 1;
            } else if (p < 0.95) {
                r |= 1;
            } else {
                r |= 1;
                c |= 1;
            }
        }
        e[i].r = r;
        e[i].c = c;
        e[i].v = 0.5 + rng_unit(&s);
    }
    csr_from_coo(m, n, n, e, edges);
}

/* ---- files ---- */

static const char famcsr_magic[8] = "FAMCSR1";

static inline int write_famcsr(const char *path, const csr_t *m)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    uint64_t hdr[3] = {m->nrows, m->ncols, m->nnz};
    int ok = fwrite(famcsr_magic, 8, 1, f) == 1 && fwrite(hdr, sizeof hdr, 1, f) == 1 &&
             fwrite(m->indptr, 8, m->nrows + 1, f) == m->nrows + 1 &&
             fwrite(m->indices, 8, m->nnz, f) == m->nnz && fwrite(m->values, 8, m->nnz, f) == m->nnz;
    if (fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

static inline void bad_input(const char *path, const char *why)
{
    fprintf(stderr, "%s: %s: %s\n", app_name, path, why);
    exit(2);
}

/* bad_line names the line (1-based) a text input went wrong on. */
static inline void bad_line(const char *path, uint64_t line, const char *why)
{
    fprintf(stderr, "%s: %s: line %llu: %s\n", app_name, path, (unsigned long long)line, why);
    exit(2);
}

/* read_famcsr checks every field (sizes against the file length, indptr
 * monotone, columns in range) so that a damaged file is refused with a
 * reason instead of sending the program out of bounds. */
static inline void read_famcsr(const char *path, FILE *f, csr_t *m)
{
    uint64_t hdr[3];
    if (fread(hdr, sizeof hdr, 1, f) != 1)
        bad_input(path, "FAMCSR header cut short");
    m->nrows = hdr[0];
    m->ncols = hdr[1];
    m->nnz = hdr[2];
    if (fseeko(f, 0, SEEK_END) != 0)
        bad_input(path, "cannot seek");
    uint64_t len = (uint64_t)ftello(f);
    if (m->nrows >= (1ULL << 40) || m->ncols >= (1ULL << 40) || m->nnz >= (1ULL << 40) ||
        len != 32 + 8 * (m->nrows + 1) + 16 * m->nnz)
        bad_input(path, "FAMCSR sizes do not match the file's length");
    fseeko(f, 32, SEEK_SET);
    m->indptr = xmalloc((m->nrows + 1) * 8);
    m->indices = xmalloc(m->nnz * 8);
    m->values = xmalloc(m->nnz * 8);
    if (fread(m->indptr, 8, m->nrows + 1, f) != m->nrows + 1 || fread(m->indices, 8, m->nnz, f) != m->nnz ||
        fread(m->values, 8, m->nnz, f) != m->nnz)
        bad_input(path, "FAMCSR body cut short");
    if (m->indptr[0] != 0 || (uint64_t)m->indptr[m->nrows] != m->nnz)
        bad_input(path, "FAMCSR indptr must start at 0 and end at nnz");
    for (uint64_t r = 0; r < m->nrows; r++)
        if (m->indptr[r + 1] < m->indptr[r])
            bad_input(path, "FAMCSR indptr decreases");
    for (uint64_t k = 0; k < m->nnz; k++)
        if (m->indices[k] < 0 || (uint64_t)m->indices[k] >= m->ncols)
            bad_input(path, "FAMCSR column index out of range");
}

/* next_line reads one line into buf (growing it); 0 at end of file. */
static inline int next_line(FILE *f, char **buf, size_t *cap)
{
    return getline(buf, cap, f) >= 0;
}

static inline int blank_or_comment(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return *s == '\0' || *s == '%' || *s == '#';
}

static inline void read_mtx(const char *path, FILE *f, csr_t *m)
{
    char *line = NULL;
    size_t cap = 0;
    uint64_t lineno = 1;
    if (!next_line(f, &line, &cap))
        bad_input(path, "empty file");
    for (char *p = line; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    if (strstr(line, "coordinate") == NULL)
        bad_input(path, "only Matrix Market coordinate matrices are read");
    int pattern = strstr(line, "pattern") != NULL, symmetric = strstr(line, "symmetric") != NULL;
    if (strstr(line, "complex") != NULL || strstr(line, "hermitian") != NULL || strstr(line, "skew") != NULL)
        bad_input(path, "complex, hermitian and skew-symmetric Matrix Market files are not read");
    unsigned long long nr, nc, nz;
    do {
        if (!next_line(f, &line, &cap))
            bad_input(path, "no size line");
        lineno++;
    } while (blank_or_comment(line));
    if (sscanf(line, "%llu %llu %llu", &nr, &nc, &nz) != 3 || nr >= (1ULL << 40) || nc >= (1ULL << 40) ||
        nz >= (1ULL << 36))
        bad_line(path, lineno, "bad size line (want \"ROWS COLUMNS ENTRIES\")");
    coo_t *e = xmalloc((symmetric ? 2 : 1) * nz * sizeof *e);
    uint64_t n = 0;
    for (uint64_t i = 0; i < nz; i++) {
        do {
            if (!next_line(f, &line, &cap))
                bad_input(path, "fewer entries than the size line says");
            lineno++;
        } while (blank_or_comment(line));
        unsigned long long r, c;
        double v = 1;
        int got = sscanf(line, "%llu %llu %lf", &r, &c, &v);
        if (got < 2 || (!pattern && got < 3))
            bad_line(path, lineno, pattern ? "bad entry (want \"ROW COLUMN\")" : "bad entry (want \"ROW COLUMN VALUE\")");
        if (r < 1 || c < 1 || r > nr || c > nc)
            bad_line(path, lineno, "entry outside the matrix the size line gives (indices are 1-based)");
        e[n++] = (coo_t){r - 1, c - 1, v};
        if (symmetric && r != c)
            e[n++] = (coo_t){c - 1, r - 1, v};
    }
    free(line);
    csr_from_coo(m, nr, nc, e, n);
}

static inline void read_edges(const char *path, FILE *f, csr_t *m)
{
    char *line = NULL;
    size_t cap = 0;
    uint64_t n = 0, room = 1024, maxv = 0;
    coo_t *e = xmalloc(room * sizeof *e);
    int any = 0;
    uint64_t lineno = 0;
    while (next_line(f, &line, &cap)) {
        lineno++;
        if (blank_or_comment(line))
            continue;
        long long r, c;
        double v = 1;
        if (sscanf(line, "%lld %lld %lf", &r, &c, &v) < 2 || r < 0 || c < 0 || r >= (1LL << 40) ||
            c >= (1LL << 40))
            bad_line(path, lineno, "bad edge (want \"SRC DST [WEIGHT]\", 0-based)");
        if (n == room) {
            room *= 2;
            e = realloc(e, room * sizeof *e);
            if (e == NULL)
                bad_input(path, "out of memory");
        }
        e[n++] = (coo_t){(uint64_t)r, (uint64_t)c, v};
        if ((uint64_t)r > maxv)
            maxv = (uint64_t)r;
        if ((uint64_t)c > maxv)
            maxv = (uint64_t)c;
        any = 1;
    }
    free(line);
    if (!any)
        bad_input(path, "no edges");
    csr_from_coo(m, maxv + 1, maxv + 1, e, n);
}

/* read_matrix loads path in whichever format it is (see the top). */
static inline void read_matrix(const char *path, csr_t *m)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "%s: %s: %s\n", app_name, path, strerror(errno));
        exit(2);
    }
    char head[15] = {0};
    size_t got = fread(head, 1, sizeof head, f);
    if (got >= 8 && memcmp(head, famcsr_magic, 8) == 0) {
        fseeko(f, 8, SEEK_SET);
        read_famcsr(path, f, m);
    } else {
        rewind(f);
        if (got >= 14 && strncmp(head, "%%MatrixMarket", 14) == 0)
            read_mtx(path, f, m);
        else
            read_edges(path, f, m);
    }
    fclose(f);
}

/* spmv_x is the fixed vector SpMV multiplies by (see the top). */
static inline double spmv_x(uint64_t j)
{
    return 1.0 + (double)(j % 17) / 16.0;
}

/* ---- FAM helpers ---- */

/* region_for creates the job's region sized for bytes of items, interleaved
 * or not. Items are placed on page boundaries, so each gets a page of
 * slack. */
static inline fam_region_t *region_for(const char *name, uint64_t bytes, int nitems, int interleave)
{
    fam_region_attr_t attr = {FAM_REDUNDANCY_DEFAULT, FAM_MEMORY_VOLATILE,
                              interleave ? FAM_INTERLEAVE_ENABLE : FAM_INTERLEAVE_DISABLE, FAM_PERMISSION_REGION};
    uint64_t size = bytes + (uint64_t)(nitems + 1) * (64 << 10) + (1 << 20);
    fam_region_t *r = fam_create_region(name, size, 0600, &attr);
    if (r == NULL)
        fail("fam_create_region");
    return r;
}

/* item_put allocates a named item holding n bytes of src (at least 8 bytes,
 * since an item cannot be empty). */
static inline fam_desc_t *item_put(fam_region_t *r, const char *name, const void *src, uint64_t n)
{
    fam_desc_t *d = fam_allocate(name, n ? n : 8, 0600, r);
    if (d == NULL)
        fail("fam_allocate");
    if (n > 0 && src != NULL && fam_put_blocking((void *)src, d, 0, n) != 0)
        fail("fam_put_blocking");
    return d;
}

static inline fam_desc_t *item_lookup(const char *item, const char *region)
{
    fam_desc_t *d = fam_lookup(item, region);
    if (d == NULL)
        fail("fam_lookup");
    return d;
}

/* Timers: every data-path call and barrier counts as communication, local
 * arithmetic as compute. */
static uint64_t t_comm __attribute__((unused)), t_compute __attribute__((unused)),
    t_mark __attribute__((unused));

static inline void tick(void)
{
    t_mark = now_ns();
}
static inline void tock_comm(void)
{
    uint64_t t = now_ns();
    t_comm += t - t_mark;
    t_mark = t;
}
static inline void tock_compute(void)
{
    uint64_t t = now_ns();
    t_compute += t - t_mark;
    t_mark = t;
}

static inline void barrier(const char *when)
{
    if (fam_barrier_all() != 0)
        fail(when);
}

/* write_vector writes v as text, one "%.17g" value per line (exact round
 * trip), for checks by other programs. */
static inline void write_vector(const char *path, const double *v, uint64_t n)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "%s: %s: %s\n", app_name, path, strerror(errno));
        exit(1);
    }
    for (uint64_t i = 0; i < n; i++)
        fprintf(f, "%.17g\n", v[i]);
    if (fclose(f) != 0) {
        fprintf(stderr, "%s: writing %s: %s\n", app_name, path, strerror(errno));
        exit(1);
    }
}

#endif
