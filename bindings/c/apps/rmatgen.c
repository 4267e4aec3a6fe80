/*
 * rmatgen - writes a synthetic R-MAT matrix (or graph) in the FAMCSR format
 * that spmv, pagerank and the Python spmv example read (see famapp.h):
 *
 *   rmatgen --scale 12 --edge-factor 16 --seed 7 -o graph.famcsr
 *
 * 2^scale rows, edge_factor * 2^scale entries drawn before duplicates merge;
 * the same arguments give the same file on every machine. With --convert
 * FILE it instead reads a Matrix Market or edge-list file and writes it as
 * FAMCSR. Needs no FAM: it runs without a store or famd.
 */
#include "famapp.h"

int main(int argc, char **argv)
{
    const char *out = NULL, *convert = NULL;
    uint64_t scale = 10, edge_factor = 8, seed = 1;
    app_name = "rmatgen";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf("usage: rmatgen [--scale S] [--edge-factor E] [--seed N] -o FILE\n"
                   "       rmatgen --convert INPUT -o FILE\n\n"
                   "Writes an R-MAT matrix of 2^S rows and about E * 2^S entries (defaults\n"
                   "S 10, E 8, seed 1) in FAMCSR form, or converts a Matrix Market or edge-list\n"
                   "file to FAMCSR. Prints rows, columns and nonzeros.\n");
            return 0;
        } else if (v == NULL) {
            usage_error("%s needs a value (see --help)", a);
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            out = v, i++;
        } else if (strcmp(a, "--convert") == 0) {
            convert = v, i++;
        } else if (strcmp(a, "--scale") == 0) {
            scale = parse_u64(a, v), i++;
        } else if (strcmp(a, "--edge-factor") == 0) {
            edge_factor = parse_u64(a, v), i++;
        } else if (strcmp(a, "--seed") == 0) {
            seed = parse_u64(a, v), i++;
        } else {
            usage_error("unknown argument %s (see --help)", a);
        }
    }
    if (out == NULL)
        usage_error("-o FILE is required%s", "");
    if (scale < 1 || scale > 30)
        usage_error("--scale must be 1..30%s", "");
    if (edge_factor < 1 || edge_factor > 1024)
        usage_error("--edge-factor must be 1..1024%s", "");
    csr_t m;
    if (convert != NULL)
        read_matrix(convert, &m);
    else
        rmat(&m, (unsigned)scale, edge_factor, seed);
    if (write_famcsr(out, &m) != 0) {
        fprintf(stderr, "rmatgen: writing %s: %s\n", out, strerror(errno));
        return 1;
    }
    printf("rmatgen: %s: %llu x %llu, %llu nonzeros\n", out, (unsigned long long)m.nrows,
           (unsigned long long)m.ncols, (unsigned long long)m.nnz);
    csr_free(&m);
    return 0;
}
