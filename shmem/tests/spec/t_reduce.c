/*
 * t_reduce: every 1.5 team reduction, shmem_<type>_<op>_reduce, for every
 * type its op has (and/or/xor: unsigned and fixed-size integers and size;
 * min/max: every integer and real type; sum/prod: those plus complexf and
 * complexd), on SHMEM_TEAM_WORLD and split teams (odd sizes included),
 * 1, 7 and 1000 elements, global and heap, and in place.
 * Run with 2, 3 and 4 PEs. Spec: 1.5 only.
 */
#include "shtest.h"
#include "reduce_vals.h"
#include <complex.h>

#define NR 1000

struct tdesc {
    shmem_team_t t;
    int start, stride, size;
    const char *name;
};

#define RED(T, N, OP, VAL, COMB)                                               \
    static T gs_##N##_##OP[NR], gd_##N##_##OP[NR];                             \
    static void red_##N##_##OP(T *src, T *dst, const struct tdesc *d, int nr, int inplace, \
                               const char *where)                              \
    {                                                                          \
        if (shmem_team_my_pe(d->t) < 0)                                        \
            return;                                                            \
        for (int i = 0; i < nr; i++) {                                         \
            src[i] = VAL(T, sht_me, i);                                        \
            dst[i] = (T)0;                                                     \
        }                                                                      \
        if (inplace)                                                           \
            dst = src;                                                         \
        shmem_team_sync(d->t);                                                 \
        int rc = shmem_##N##_##OP##_reduce(d->t, dst, src, nr);                \
        SHT_CHECK(rc == 0, "%s " #N "_" #OP "_reduce rc %d", where, rc);       \
        int bad = 0, first = -1;                                               \
        for (int i = 0; i < nr; i++) {                                         \
            T want = VAL(T, d->start, i);                                      \
            for (int j = 1; j < d->size; j++)                                  \
                want = COMB(want, VAL(T, d->start + j * d->stride, i));        \
            if (dst[i] != want) {                                              \
                bad++;                                                         \
                if (first < 0)                                                 \
                    first = i;                                                 \
            }                                                                  \
        }                                                                      \
        SHT_CHECK(bad == 0, "%s " #N "_" #OP "_reduce team %s nreduce %d%s: %d wrong from [%d]", \
                  where, d->name, nr, inplace ? " in place" : "", bad, first); \
        shmem_team_sync(d->t);                                                 \
    }

#define BIT_TYPES(X, OP, VAL, COMB)                                            \
    X(unsigned char, uchar, OP, VAL, COMB) X(unsigned short, ushort, OP, VAL, COMB) \
    X(unsigned int, uint, OP, VAL, COMB) X(unsigned long, ulong, OP, VAL, COMB) \
    X(unsigned long long, ulonglong, OP, VAL, COMB) X(int8_t, int8, OP, VAL, COMB) \
    X(int16_t, int16, OP, VAL, COMB) X(int32_t, int32, OP, VAL, COMB)          \
    X(int64_t, int64, OP, VAL, COMB) X(uint8_t, uint8, OP, VAL, COMB)          \
    X(uint16_t, uint16, OP, VAL, COMB) X(uint32_t, uint32, OP, VAL, COMB)      \
    X(uint64_t, uint64, OP, VAL, COMB) X(size_t, size, OP, VAL, COMB)
#define CMP_TYPES(X, OP, VAL, COMB)                                            \
    X(char, char, OP, VAL, COMB) X(signed char, schar, OP, VAL, COMB)          \
    X(short, short, OP, VAL, COMB) X(int, int, OP, VAL, COMB)                  \
    X(long, long, OP, VAL, COMB) X(long long, longlong, OP, VAL, COMB)         \
    X(ptrdiff_t, ptrdiff, OP, VAL, COMB) BIT_TYPES(X, OP, VAL, COMB)           \
    X(float, float, OP, VAL, COMB) X(double, double, OP, VAL, COMB)            \
    X(long double, longdouble, OP, VAL, COMB)
#define CPX_TYPES(X, OP, VAL, COMB)                                            \
    X(float _Complex, complexf, OP, VAL, COMB) X(double _Complex, complexd, OP, VAL, COMB)

#define ALL_REDUCTIONS(X)                                                      \
    BIT_TYPES(X, and, RV_AND, RC_AND) BIT_TYPES(X, or, RV_OR, RC_OR)           \
    BIT_TYPES(X, xor, RV_XOR, RC_XOR) CMP_TYPES(X, min, RV_MIN, RC_MIN)        \
    CMP_TYPES(X, max, RV_MAX, RC_MAX) CMP_TYPES(X, sum, RV_SUM, RC_SUM)        \
    CPX_TYPES(X, sum, RV_CSUM, RC_SUM) CMP_TYPES(X, prod, RV_PROD, RC_PROD)    \
    CPX_TYPES(X, prod, RV_CPROD, RC_PROD)

#pragma GCC diagnostic ignored "-Wtype-limits"
ALL_REDUCTIONS(RED)

int main(void)
{
    sht_init("t_reduce");
    int n = sht_npes;
    struct tdesc teams[3];
    int nt = 0;
    teams[nt++] = (struct tdesc){SHMEM_TEAM_WORLD, 0, 1, n, "world"};
    shmem_team_t ev, tail = SHMEM_TEAM_INVALID;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &ev);
    teams[nt++] = (struct tdesc){ev, 0, 2, (n + 1) / 2, "evens"};
    if (n >= 3) {
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, n - 1, NULL, 0, &tail);
        teams[nt++] = (struct tdesc){tail, 1, 1, n - 1, "1..n-1"};
    }
    const int sizes[] = {1, 7, NR};
    for (int k = 0; k < nt; k++)
        for (int z = 0; z < 3; z++) {
            int nr = sizes[z];
#define RUN(T, N, OP, VAL, COMB)                                               \
    red_##N##_##OP(gs_##N##_##OP, gd_##N##_##OP, &teams[k], nr, 0, "global");  \
    if (z == 1)                                                                \
        red_##N##_##OP(gs_##N##_##OP, gd_##N##_##OP, &teams[k], nr, 1, "global"); \
    if (z != 1) {                                                              \
        T *s = shmem_malloc(sizeof(T) * NR), *d = shmem_malloc(sizeof(T) * NR); \
        red_##N##_##OP(s, d, &teams[k], nr, 0, "heap");                        \
        shmem_free(d);                                                         \
        shmem_free(s);                                                         \
    }
            ALL_REDUCTIONS(RUN)
        }
    if (tail != SHMEM_TEAM_INVALID)
        shmem_team_destroy(tail);
    if (ev != SHMEM_TEAM_INVALID)
        shmem_team_destroy(ev);
    return sht_end();
}
