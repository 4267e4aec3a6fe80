/*
 * t_reduce14: every 1.4 reduction, shmem_<type>_<op>_to_all, for every
 * type its op has (and/or/xor: short int long longlong; min/max: + float
 * double longdouble; sum/prod: + complexf complexd), over several active
 * sets (odd sizes included), with 1, 7 and 300 elements (pWrk sized as
 * the spec says), global and heap, and in place (dest == source).
 * Run with 2, 3 and 4 PEs. Spec: 1.4-compatible.
 */
#include "shtest.h"
#include "sets.h"
#include "reduce_vals.h"
#include <complex.h>

#define NR 300
static long psync[2][SHMEM_REDUCE_SYNC_SIZE];
static int which;

#define WRK(n) ((n) / 2 + 1 > SHMEM_REDUCE_MIN_WRKDATA_SIZE ? (n) / 2 + 1 : SHMEM_REDUCE_MIN_WRKDATA_SIZE)

#define RED14(T, N, OP, VAL, COMB)                                             \
    static T gs_##N##_##OP[NR], gd_##N##_##OP[NR], gw_##N##_##OP[WRK(NR)];     \
    static void red_##N##_##OP(T *src, T *dst, T *wrk, const struct sht_set *s, int nr, \
                               int inplace, const char *where)                 \
    {                                                                          \
        int idx = sht_set_index(s, sht_me);                                    \
        for (int i = 0; i < nr; i++) {                                         \
            src[i] = VAL(T, sht_me, i);                                        \
            dst[i] = (T)0;                                                     \
        }                                                                      \
        if (inplace)                                                           \
            dst = src;                                                         \
        shmem_barrier_all();                                                   \
        which ^= 1; /* every PE, member or not: all use the same pSync */      \
        if (idx >= 0) {                                                        \
            shmem_##N##_##OP##_to_all(dst, src, nr, s->start, s->logstride, s->size, wrk, \
                                      psync[which]);                           \
            int bad = 0, first = -1;                                           \
            for (int i = 0; i < nr; i++) {                                     \
                T want = VAL(T, sht_set_pe(s, 0), i);                          \
                for (int j = 1; j < s->size; j++)                              \
                    want = COMB(want, VAL(T, sht_set_pe(s, j), i));            \
                if (dst[i] != want) {                                          \
                    bad++;                                                     \
                    if (first < 0)                                             \
                        first = i;                                             \
                }                                                              \
            }                                                                  \
            SHT_CHECK(bad == 0, "%s " #N "_" #OP "_to_all set %s nreduce %d%s: %d wrong from [%d]", \
                      where, s->name, nr, inplace ? " in place" : "", bad, first); \
        }                                                                      \
        shmem_barrier_all();                                                   \
    }

#define INT_TYPES(X, OP, VAL, COMB)                                            \
    X(short, short, OP, VAL, COMB) X(int, int, OP, VAL, COMB)                  \
    X(long, long, OP, VAL, COMB) X(long long, longlong, OP, VAL, COMB)
#define FLT_TYPES(X, OP, VAL, COMB)                                            \
    X(float, float, OP, VAL, COMB) X(double, double, OP, VAL, COMB)            \
    X(long double, longdouble, OP, VAL, COMB)
#define CPX_TYPES(X, OP, VAL, COMB)                                            \
    X(float _Complex, complexf, OP, VAL, COMB) X(double _Complex, complexd, OP, VAL, COMB)

#define ALL_REDUCTIONS(X)                                                      \
    INT_TYPES(X, and, RV_AND, RC_AND) INT_TYPES(X, or, RV_OR, RC_OR)           \
    INT_TYPES(X, xor, RV_XOR, RC_XOR)                                          \
    INT_TYPES(X, min, RV_MIN, RC_MIN) FLT_TYPES(X, min, RV_MIN, RC_MIN)        \
    INT_TYPES(X, max, RV_MAX, RC_MAX) FLT_TYPES(X, max, RV_MAX, RC_MAX)        \
    INT_TYPES(X, sum, RV_SUM, RC_SUM) FLT_TYPES(X, sum, RV_SUM, RC_SUM)        \
    CPX_TYPES(X, sum, RV_CSUM, RC_SUM)                                         \
    INT_TYPES(X, prod, RV_PROD, RC_PROD) FLT_TYPES(X, prod, RV_PROD, RC_PROD)  \
    CPX_TYPES(X, prod, RV_CPROD, RC_PROD)

ALL_REDUCTIONS(RED14)

int main(void)
{
    sht_init("t_reduce14");
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
            psync[k][i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    struct sht_set sets[4];
    int ns = sht_sets(sets, sht_npes);
    const int sizes[] = {1, 7, NR};
    for (int k = 0; k < ns; k++)
        for (int z = 0; z < 3; z++) {
            int nr = sizes[z];
#define RUN(T, N, OP, VAL, COMB)                                               \
    red_##N##_##OP(gs_##N##_##OP, gd_##N##_##OP, gw_##N##_##OP, &sets[k], nr, 0, "global"); \
    if (z == 1)                                                                \
        red_##N##_##OP(gs_##N##_##OP, gd_##N##_##OP, gw_##N##_##OP, &sets[k], nr, 1, "global"); \
    {                                                                          \
        T *s = shmem_malloc(sizeof(T) * NR), *d = shmem_malloc(sizeof(T) * NR); \
        T *w = shmem_malloc(sizeof(T) * WRK(NR));                              \
        red_##N##_##OP(s, d, w, &sets[k], nr, 0, "heap");                      \
        shmem_free(w);                                                         \
        shmem_free(d);                                                         \
        shmem_free(s);                                                         \
    }
            ALL_REDUCTIONS(RUN)
        }
    return sht_end();
}
