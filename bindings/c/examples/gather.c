/*
 * gather.c - strided and indexed gather/scatter.
 *
 * An item holds a 16x16 matrix of doubles in row-major order. The program
 * scatters a column into it with one strided call, gathers a row and the
 * column back, and uses an index list to read the diagonal, checking every
 * value. Element i of a strided call lives at element first + i*stride of the
 * item; element i of an indexed call at element index[i].
 *
 * Build: make examples-c   Run: build/examples/gather
 */
#include <openfam.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { N = 16 };

static void die(const char *what)
{
    fprintf(stderr, "gather: %s failed: error %d: %s\n", what, fam_errcode(), fam_errmsg());
    exit(1);
}

static int check(const char *what, const double *got, const double *want, int n)
{
    for (int i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fprintf(stderr, "gather: %s: element %d is %g, want %g\n", what, i, got[i], want[i]);
            return 0;
        }
    }
    printf("%-32s %d elements OK\n", what, n);
    return 1;
}

int main(void)
{
    if (fam_initialize("gather", NULL) != 0)
        die("fam_initialize");
    char region_name[OPENFAM_NAME_MAX + 1];
    snprintf(region_name, sizeof region_name, "gather-%ld", (long)getpid());
    fam_region_t *region = fam_create_region(region_name, 1 << 20, 0600, NULL);
    if (region == NULL)
        die("fam_create_region");
    fam_desc_t *m = fam_allocate("matrix", sizeof(double) * N * N, 0600, region);
    if (m == NULL)
        die("fam_allocate");

    /* m[r][c] = r*100 + c, written with one contiguous put. */
    static double full[N * N];
    for (int r = 0; r < N; r++)
        for (int c = 0; c < N; c++)
            full[r * N + c] = r * 100.0 + c;
    if (fam_put_blocking(full, m, 0, sizeof full) != 0)
        die("fam_put_blocking");

    int ok = 1;
    double row[N], col[N], want[N];

    /* Row 3: N consecutive elements starting at element 3*N. */
    if (fam_gather_blocking_strided(row, m, N, 3 * N, 1, sizeof(double)) != 0)
        die("fam_gather_blocking_strided (row)");
    for (int c = 0; c < N; c++)
        want[c] = 300.0 + c;
    ok &= check("gather row 3 (stride 1)", row, want, N);

    /* Column 5: one element per row, so the stride is the row length. */
    for (int r = 0; r < N; r++)
        col[r] = -1.0 - r;
    if (fam_scatter_blocking_strided(col, m, N, 5, N, sizeof(double)) != 0)
        die("fam_scatter_blocking_strided (column)");
    double back[N];
    if (fam_gather_blocking_strided(back, m, N, 5, N, sizeof(double)) != 0)
        die("fam_gather_blocking_strided (column)");
    ok &= check("scatter+gather column 5", back, col, N);

    /* The diagonal through an index list, fetched non-blocking. */
    uint64_t diag[N];
    for (int i = 0; i < N; i++) {
        diag[i] = (uint64_t)i * N + i;
        want[i] = i == 5 ? -1.0 - i : i * 100.0 + i;
    }
    double d[N];
    if (fam_gather_nonblocking_indexed(d, m, N, diag, sizeof(double)) != 0)
        die("fam_gather_nonblocking_indexed");
    if (fam_quiet() != 0)
        die("fam_quiet");
    ok &= check("indexed gather diagonal", d, want, N);

    /* Zero the diagonal with an indexed scatter and check the whole matrix. */
    double zeros[N] = {0};
    if (fam_scatter_blocking_indexed(zeros, m, N, diag, sizeof(double)) != 0)
        die("fam_scatter_blocking_indexed");
    if (fam_get_blocking(full, m, 0, sizeof full) != 0)
        die("fam_get_blocking");
    for (int r = 0; r < N; r++) {
        for (int c = 0; c < N; c++) {
            double w = r == c ? 0.0 : c == 5 ? -1.0 - r : r * 100.0 + c;
            if (full[r * N + c] != w) {
                fprintf(stderr, "gather: m[%d][%d] is %g, want %g\n", r, c, full[r * N + c], w);
                ok = 0;
            }
        }
    }
    if (ok)
        printf("%-32s %d elements OK\n", "indexed scatter + full read", N * N);

    if (fam_deallocate(m) != 0 || fam_destroy_region(region) != 0)
        die("cleanup");
    if (fam_finalize("gather") != 0)
        die("fam_finalize");
    printf("%s\n", ok ? "gather: OK" : "gather: MISMATCH");
    return ok ? 0 : 1;
}
