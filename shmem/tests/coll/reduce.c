/*
 * reduce: every reduction operator (and, or, xor, max, min, sum, prod) of
 * the 1.5 team API on a spread of types (signed and unsigned, 8 to 64
 * bits, float, double, long double, both complex types), C11 generic
 * forms, odd counts and counts spanning several internal chunks, in place
 * (dest == source), on a strided sub-team, on heap and global buffers; and
 * the 1.4 *_to_all forms over the world and an odd active set. Every
 * expected value is computed here from the formula each PE used.
 */
#include <complex.h>
#include <string.h>

#include "check.h"

#define BIG 1501 /* > 4096 bytes for every type: several chunks */
static long gsync[SHMEM_REDUCE_SYNC_SIZE];
static double gd_src[BIG], gd_dst[BIG];
static long gl_pwrk[BIG];
static int me, npes;

/* The value PE p contributes at index i: small, so products do not
 * overflow even the 8-bit types, and different per PE and index. */
static long gen(int p, size_t i)
{
    return (long)((p * 3 + i) % 4) + 1;
}
static unsigned long genbits(int p, size_t i)
{
    return (1UL << ((p + i) % 7)) | (i & 0x70) | (p == 0 ? 0x80 : 0);
}

#define OP_and(a, b) ((a) & (b))
#define OP_or(a, b) ((a) | (b))
#define OP_xor(a, b) ((a) ^ (b))
#define OP_max(a, b) ((a) > (b) ? (a) : (b))
#define OP_min(a, b) ((a) < (b) ? (a) : (b))
#define OP_sum(a, b) ((a) + (b))
#define OP_prod(a, b) ((a) * (b))

/* Runs shmem_<name>_<op>_reduce on the team t (members are world PEs
 * start + k*stride) with n elements, out of place and in place. */
#define TEST_REDUCE(T, name, op, GEN, t, start, stride, size, n)                                \
    do {                                                                                        \
        T *s = shmem_malloc(sizeof(T) * (n));                                                   \
        T *d = shmem_malloc(sizeof(T) * (n));                                                   \
        for (int inplace = 0; inplace < 2; inplace++) {                                         \
            if ((t) != SHMEM_TEAM_INVALID) {                                                    \
                for (size_t i = 0; i < (n); i++)                                                \
                    s[i] = (T)GEN(me, i), d[i] = (T)0;                                          \
                T *out = inplace ? s : d;                                                       \
                CHECK(shmem_##name##_##op##_reduce(t, out, s, n) == 0, "rc");                   \
                for (size_t i = 0; i < (n); i++) {                                              \
                    T want = (T)GEN(start, i);                                                  \
                    for (int k = 1; k < (size); k++)                                            \
                        want = OP_##op(want, (T)GEN((start) + k * (stride), i));                \
                    CHECK(out[i] == want, #name "_" #op "_reduce%s n=%d [%zu]",                 \
                          inplace ? " in place" : "", (int)(n), i);                             \
                }                                                                               \
            }                                                                                   \
            shmem_barrier_all();                                                                \
        }                                                                                       \
        shmem_free(d);                                                                          \
        shmem_free(s);                                                                          \
    } while (0)

#define ALL_OPS_INT(T, name, t, start, stride, size, n)                                         \
    do {                                                                                        \
        TEST_REDUCE(T, name, max, gen, t, start, stride, size, n);                              \
        TEST_REDUCE(T, name, min, gen, t, start, stride, size, n);                              \
        TEST_REDUCE(T, name, sum, gen, t, start, stride, size, n);                              \
        TEST_REDUCE(T, name, prod, gen, t, start, stride, size, n);                             \
    } while (0)

#define BIT_OPS(T, name, t, start, stride, size, n)                                             \
    do {                                                                                        \
        TEST_REDUCE(T, name, and, genbits, t, start, stride, size, n);                          \
        TEST_REDUCE(T, name, or, genbits, t, start, stride, size, n);                           \
        TEST_REDUCE(T, name, xor, genbits, t, start, stride, size, n);                          \
    } while (0)

static void complex_tests(void)
{
    double _Complex *s = shmem_malloc(sizeof(double _Complex) * 7);
    double _Complex *d = shmem_malloc(sizeof(double _Complex) * 7);
    float _Complex *fs = shmem_malloc(sizeof(float _Complex) * 7);
    float _Complex *fd = shmem_malloc(sizeof(float _Complex) * 7);
    for (int i = 0; i < 7; i++) {
        s[i] = gen(me, i) + gen(me, i + 1) * I;
        fs[i] = (float)gen(me, i) - (float)gen(me, i + 2) * I;
    }
    shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, d, s, 7);
    shmem_complexf_prod_reduce(SHMEM_TEAM_WORLD, fd, fs, 7);
    for (int i = 0; i < 7; i++) {
        double _Complex w = 0;
        float _Complex fw = 1;
        for (int p = 0; p < npes; p++) {
            w += gen(p, i) + gen(p, i + 1) * I;
            fw *= (float)gen(p, i) - (float)gen(p, i + 2) * I;
        }
        CHECK(d[i] == w, "complexd_sum [%d]", i);
        CHECK(fd[i] == fw, "complexf_prod [%d]", i);
    }
    shmem_complexd_prod_reduce(SHMEM_TEAM_WORLD, d, s, 7);
    shmem_complexf_sum_reduce(SHMEM_TEAM_WORLD, fd, fs, 7);
    for (int i = 0; i < 7; i++) {
        double _Complex w = 1;
        float _Complex fw = 0;
        for (int p = 0; p < npes; p++) {
            w *= gen(p, i) + gen(p, i + 1) * I;
            fw += (float)gen(p, i) - (float)gen(p, i + 2) * I;
        }
        CHECK(d[i] == w, "complexd_prod [%d]", i);
        CHECK(fd[i] == fw, "complexf_sum [%d]", i);
    }
    shmem_barrier_all();
    shmem_free(fd);
    shmem_free(fs);
    shmem_free(d);
    shmem_free(s);
}

int main(void)
{
    shmem_init();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        gsync[i] = SHMEM_SYNC_VALUE; /* before first use, then a barrier */
    me = shmem_my_pe();
    npes = shmem_n_pes();
    shmem_team_t W = SHMEM_TEAM_WORLD;

    /* The world, odd and chunk-spanning counts. */
    size_t counts[] = {1, 7, BIG};
    for (int c = 0; c < 3; c++) {
        size_t n = counts[c];
        ALL_OPS_INT(int, int, W, 0, 1, npes, n);
        ALL_OPS_INT(long, long, W, 0, 1, npes, n);
        ALL_OPS_INT(int8_t, int8, W, 0, 1, npes, n);
        ALL_OPS_INT(unsigned short, ushort, W, 0, 1, npes, n);
        ALL_OPS_INT(double, double, W, 0, 1, npes, n);
        BIT_OPS(unsigned int, uint, W, 0, 1, npes, n);
        BIT_OPS(uint64_t, uint64, W, 0, 1, npes, n);
        BIT_OPS(int16_t, int16, W, 0, 1, npes, n);
    }
    ALL_OPS_INT(float, float, W, 0, 1, npes, 9);
    ALL_OPS_INT(long double, longdouble, W, 0, 1, npes, 9);
    ALL_OPS_INT(char, char, W, 0, 1, npes, 9);
    ALL_OPS_INT(size_t, size, W, 0, 1, npes, 9);
    ALL_OPS_INT(ptrdiff_t, ptrdiff, W, 0, 1, npes, 9);
    ALL_OPS_INT(unsigned long long, ulonglong, W, 0, 1, npes, 9);
    BIT_OPS(unsigned char, uchar, W, 0, 1, npes, 9);
    BIT_OPS(size_t, size, W, 0, 1, npes, 9);
    complex_tests();

    /* A strided sub-team: the odd world PEs (none when npes == 1). */
    shmem_team_t odd = SHMEM_TEAM_INVALID;
    if (npes > 1)
        CHECK(shmem_team_split_strided(W, 1, 2, npes / 2, NULL, 0, &odd) == 0, "split");
    if (npes > 1) {
        ALL_OPS_INT(long, long, odd, 1, 2, npes / 2, 11);
        BIT_OPS(uint32_t, uint32, odd, 1, 2, npes / 2, 11);
        shmem_team_destroy(odd);
    }

    /* C11 generic form on global buffers. */
    for (int i = 0; i < BIG; i++)
        gd_src[i] = (double)gen(me, i) / 4;
    shmem_barrier_all();
    shmem_sum_reduce(W, gd_dst, gd_src, BIG);
    for (int i = 0; i < BIG; i++) {
        double w = 0;
        for (int p = 0; p < npes; p++)
            w += (double)gen(p, i) / 4;
        CHECK(gd_dst[i] == w, "generic sum on globals [%d] = %g want %g", i, gd_dst[i], w);
    }

    /* 1.4 to_all: world, then the even PEs; pSync (global) restored. */
    long *ls = shmem_malloc(sizeof(long) * BIG), *ld = shmem_malloc(sizeof(long) * BIG);
    for (int i = 0; i < BIG; i++)
        ls[i] = gen(me, i);
    shmem_barrier_all();
    shmem_long_sum_to_all(ld, ls, BIG, 0, 0, npes, gl_pwrk, gsync);
    for (int i = 0; i < BIG; i++) {
        long w = 0;
        for (int p = 0; p < npes; p++)
            w += gen(p, i);
        CHECK(ld[i] == w, "long_sum_to_all [%d] = %ld want %ld", i, ld[i], w);
    }
    shmem_long_max_to_all(ls, ls, 5, 0, 0, npes, gl_pwrk, gsync); /* in place */
    for (int i = 0; i < 5; i++) {
        long w = gen(0, i);
        for (int p = 1; p < npes; p++)
            w = OP_max(w, gen(p, i));
        CHECK(ls[i] == w, "long_max_to_all in place [%d]", i);
    }
    if (me % 2 == 0) {
        int size = (npes + 1) / 2;
        for (int i = 0; i < BIG; i++)
            gd_src[i] = (double)gen(me, i);
        shmem_double_prod_to_all(gd_dst, gd_src, 13, 0, 1, size, (double *)gl_pwrk, gsync);
        for (int i = 0; i < 13; i++) {
            double w = 1;
            for (int k = 0; k < size; k++)
                w *= (double)gen(2 * k, i);
            CHECK(gd_dst[i] == w, "double_prod_to_all strided [%d]", i);
        }
    }
    short *ssrc = shmem_malloc(sizeof(short) * 3), *sdst = shmem_malloc(sizeof(short) * 3);
    double _Complex *csrc = shmem_malloc(sizeof(double _Complex) * 3);
    double _Complex *cdst = shmem_malloc(sizeof(double _Complex) * 3);
    for (int i = 0; i < 3; i++) {
        ssrc[i] = (short)genbits(me, i);
        csrc[i] = gen(me, i) - 2.0 * I;
    }
    shmem_barrier_all();
    shmem_short_and_to_all(sdst, ssrc, 3, 0, 0, npes, (short *)gl_pwrk, gsync);
    shmem_complexd_sum_to_all(cdst, csrc, 3, 0, 0, npes, (double _Complex *)gl_pwrk, gsync);
    for (int i = 0; i < 3; i++) {
        short w = (short)genbits(0, i);
        double _Complex cw = 0;
        for (int p = 0; p < npes; p++) {
            w &= (short)genbits(p, i);
            cw += gen(p, i) - 2.0 * I;
        }
        CHECK(sdst[i] == w, "short_and_to_all [%d]", i);
        CHECK(cdst[i] == cw, "complexd_sum_to_all [%d]", i);
    }
    shmem_barrier_all();
    shmem_free(cdst);
    shmem_free(csrc);
    shmem_free(sdst);
    shmem_free(ssrc);
    shmem_barrier_all();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        CHECK(gsync[i] == SHMEM_SYNC_VALUE, "pSync[%d] = %ld after use", i, gsync[i]);
    shmem_free(ld);
    shmem_free(ls);
    passed("reduce");
    shmem_finalize();
    return 0;
}
