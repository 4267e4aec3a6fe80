/*
 * coll_reduce.c: reductions over an active set (every operator of the
 * spec's tables: and, or, xor, max, min, sum, prod) for the 1.5 team
 * *_reduce and the 1.4 *_to_all forms; the typed wrappers are generated
 * (coll_typed.c).
 *
 * Algorithm: after an entry barrier every member reads every member's
 * source straight from its mapping and combines them itself, in team
 * order, chunk by chunk (a chunk of the result stays in cache while the n
 * sources stream past). Each member does n-1 passes over the data instead
 * of the 2 of a reduce-scatter/allgather, but on one host the peers'
 * memory is one memcpy away, there is no second exchange and no staging
 * copy, and for the small counts and PE numbers of one host the
 * synchronisation (two barriers) dominates. Combining in the same order
 * everywhere makes floating-point results bitwise identical on every PE,
 * which users comparing results across PEs rely on. When dest overlaps
 * source the result goes to a private buffer first: the peers are still
 * reading this PE's source until the exit barrier.
 */
#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include <shmem.h>

#include "coll.h"

size_t shmemi_kind_size(enum shmemi_kind k)
{
    static const size_t sizes[SHMEMI_K_COUNT] = {
        1, 2, 4, 8, 1, 2, 4, 8, sizeof(float), sizeof(double), sizeof(long double),
        sizeof(float _Complex), sizeof(double _Complex),
    };
    return sizes[k];
}

/* Integer operators; sums and products in the unsigned type U so that
 * overflow wraps (as every implementation's does) instead of being
 * undefined for signed types. */
#define INT_COMBINE(T, U)                                                         \
    do {                                                                          \
        T *x = acc;                                                               \
        const T *y = in;                                                          \
        switch (op) {                                                             \
        case SHMEMI_OP_AND: for (size_t i = 0; i < n; i++) x[i] &= y[i]; break;  \
        case SHMEMI_OP_OR: for (size_t i = 0; i < n; i++) x[i] |= y[i]; break;   \
        case SHMEMI_OP_XOR: for (size_t i = 0; i < n; i++) x[i] ^= y[i]; break;  \
        case SHMEMI_OP_MAX:                                                       \
            for (size_t i = 0; i < n; i++) x[i] = y[i] > x[i] ? y[i] : x[i];      \
            break;                                                                \
        case SHMEMI_OP_MIN:                                                       \
            for (size_t i = 0; i < n; i++) x[i] = y[i] < x[i] ? y[i] : x[i];      \
            break;                                                                \
        case SHMEMI_OP_SUM:                                                       \
            for (size_t i = 0; i < n; i++) x[i] = (T)((U)x[i] + (U)y[i]);         \
            break;                                                                \
        case SHMEMI_OP_PROD:                                                      \
            for (size_t i = 0; i < n; i++) x[i] = (T)((U)x[i] * (U)y[i]);         \
            break;                                                                \
        }                                                                         \
    } while (0)

#define FLOAT_COMBINE(T)                                                          \
    do {                                                                          \
        T *x = acc;                                                               \
        const T *y = in;                                                          \
        switch (op) {                                                             \
        case SHMEMI_OP_MAX:                                                       \
            for (size_t i = 0; i < n; i++) x[i] = y[i] > x[i] ? y[i] : x[i];      \
            break;                                                                \
        case SHMEMI_OP_MIN:                                                       \
            for (size_t i = 0; i < n; i++) x[i] = y[i] < x[i] ? y[i] : x[i];      \
            break;                                                                \
        case SHMEMI_OP_SUM: for (size_t i = 0; i < n; i++) x[i] += y[i]; break;  \
        case SHMEMI_OP_PROD: for (size_t i = 0; i < n; i++) x[i] *= y[i]; break; \
        default: bad_op(kind, op);                                                \
        }                                                                         \
    } while (0)

#define COMPLEX_COMBINE(T)                                                        \
    do {                                                                          \
        T *x = acc;                                                               \
        const T *y = in;                                                          \
        switch (op) {                                                             \
        case SHMEMI_OP_SUM: for (size_t i = 0; i < n; i++) x[i] += y[i]; break;  \
        case SHMEMI_OP_PROD: for (size_t i = 0; i < n; i++) x[i] *= y[i]; break; \
        default: bad_op(kind, op);                                                \
        }                                                                         \
    } while (0)

static void bad_op(enum shmemi_kind kind, enum shmemi_op op)
{
    /* Only a generator bug gets here: the public API has no such pair. */
    shmemi_abort("shmem reduction", "operator %d is not defined for element kind %d", (int)op,
                 (int)kind);
}

/* acc[i] = acc[i] op in[i] for n elements. */
static void combine(void *acc, const void *in, size_t n, enum shmemi_kind kind, enum shmemi_op op)
{
    switch (kind) {
    case SHMEMI_K_I8: INT_COMBINE(int8_t, uint8_t); break;
    case SHMEMI_K_I16: INT_COMBINE(int16_t, uint16_t); break;
    case SHMEMI_K_I32: INT_COMBINE(int32_t, uint32_t); break;
    case SHMEMI_K_I64: INT_COMBINE(int64_t, uint64_t); break;
    case SHMEMI_K_U8: INT_COMBINE(uint8_t, unsigned); break;
    case SHMEMI_K_U16: INT_COMBINE(uint16_t, unsigned); break;
    case SHMEMI_K_U32: INT_COMBINE(uint32_t, uint32_t); break;
    case SHMEMI_K_U64: INT_COMBINE(uint64_t, uint64_t); break;
    case SHMEMI_K_FLOAT: FLOAT_COMBINE(float); break;
    case SHMEMI_K_DOUBLE: FLOAT_COMBINE(double); break;
    case SHMEMI_K_LDOUBLE: FLOAT_COMBINE(long double); break;
    case SHMEMI_K_CFLOAT: COMPLEX_COMBINE(float _Complex); break;
    case SHMEMI_K_CDOUBLE: COMPLEX_COMBINE(double _Complex); break;
    default: bad_op(kind, op);
    }
}

#define CHUNK_BYTES 4096

void shmemi_aset_reduce(const struct shmemi_aset *a, void *dest, const void *src,
                        size_t nelems, enum shmemi_kind kind, enum shmemi_op op)
{
    size_t es = shmemi_kind_size(kind);
    size_t nbytes = nelems * es;
    const char *s = src;
    char *d = dest;
    int overlap = nbytes > 0 && d < s + nbytes && s < d + nbytes;
    char *out = d;
    if (overlap && a->size > 1) {
        out = malloc(nbytes);
        if (out == NULL)
            shmemi_abort(a->call, "out of memory for a %zu-byte reduction", nbytes);
    }
    shmemi_aset_barrier(a);

    /* Each member's mapping of the source, resolved once per call. */
    const char *stack_peers[16];
    const char **peer = a->size <= 16 ? stack_peers : malloc(sizeof(char *) * (size_t)a->size);
    if (peer == NULL)
        shmemi_abort(a->call, "out of memory");
    for (int m = 0; m < a->size; m++)
        peer[m] = m == a->me ? s : nbytes ? shmemi_ptr(s, shmemi_aset_pe(a, m)) : NULL;

    long double tmp_ld[CHUNK_BYTES / sizeof(long double)]; /* aligned for every kind */
    char *tmp = (char *)tmp_ld;
    size_t per = CHUNK_BYTES / es;
    for (size_t lo = 0; lo < nelems; lo += per) {
        size_t cnt = nelems - lo < per ? nelems - lo : per;
        size_t off = lo * es, len = cnt * es;
        for (int m = 0; m < a->size; m++) {
            const char *in = peer[m] ? peer[m] + off : NULL;
            if (in == NULL) {
                shmemi_get(tmp, s + off, len, shmemi_aset_pe(a, m));
                in = tmp;
            }
            if (m == 0) {
                if (out + off != in)
                    memmove(out + off, in, len);
            } else {
                combine(out + off, in, cnt, kind, op);
            }
        }
    }
    if (peer != stack_peers)
        free(peer);

    shmemi_aset_barrier(a);
    if (out != d) {
        memcpy(d, out, nbytes);
        free(out);
    }
}

int shmemi_team_reduce(const char *call, struct shmemi_team *team, void *dest,
                       const void *src, size_t nelems, enum shmemi_kind kind, enum shmemi_op op)
{
    struct shmemi_aset a;
    shmemi_aset_team(&a, call, team);
    size_t nbytes = nelems * shmemi_kind_size(kind);
    if (nbytes) {
        shmemi_check_sym(call, dest, nbytes);
        shmemi_check_sym(call, src, nbytes);
    }
    shmemi_aset_reduce(&a, dest, src, nelems, kind, op);
    return 0;
}

void shmemi_active_reduce(const char *call, void *dest, const void *src, int nreduce,
                          int PE_start, int logPE_stride, int PE_size, long *pSync,
                          enum shmemi_kind kind, enum shmemi_op op)
{
    struct shmemi_aset a;
    shmemi_aset_active(&a, call, PE_start, logPE_stride, PE_size, pSync);
    if (nreduce < 0)
        shmemi_abort(call, "nreduce is negative (%d)", nreduce);
    size_t nbytes = (size_t)nreduce * shmemi_kind_size(kind);
    if (nbytes) {
        shmemi_check_sym(call, dest, nbytes);
        shmemi_check_sym(call, src, nbytes);
    }
    shmemi_aset_reduce(&a, dest, src, (size_t)nreduce, kind, op);
}
