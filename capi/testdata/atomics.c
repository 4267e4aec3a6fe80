/*
 * atomics.c - the C fast path and the Go core must compute every atomic the
 * same way. For each type, op and pair of operands (NaNs, signed zeros,
 * infinities and integer extremes included) the op runs once through a
 * resolved handle (C fast path) and once through a fresh handle made from the
 * global descriptor, whose first use goes through Go; the returned old value
 * and the resulting word must be bit-identical. Exits non-zero on the first
 * difference.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openfam.h"

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: check failed: %s (errcode %d: %s)\n", __FILE__, __LINE__, \
                    #cond, fam_errcode(), fam_errmsg());                                      \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

/* The openfam.h type suffixes as type names, for the macros below. */
typedef int32_t int32;
typedef int64_t int64;
typedef uint32_t uint32;
typedef uint64_t uint64;

static fam_desc_t *fast;
static fam_global_desc_t global;
static long cases;

/* A handle whose next operation goes through Go. */
static fam_desc_t *slow(void)
{
    fam_desc_t *d = fam_desc_from_global(global);
    CHECK(d != NULL);
    return d;
}

static const int32_t v_int32[] = {0, 1, -1, 7, INT32_MAX, INT32_MIN, 12345};
static const int64_t v_int64[] = {0, 1, -1, 7, INT64_MAX, INT64_MIN, 1234567890123LL};
static const uint32_t v_uint32[] = {0, 1, 7, 0x80000000u, UINT32_MAX, 0xf0f0f0f0u};
static const uint64_t v_uint64[] = {0, 1, 7, 0x8000000000000000ull, UINT64_MAX, 0xf0f0f0f0f0f0f0f0ull};
static float v_float[9];
static double v_double[9];

static void init_floats(void)
{
    const double d[9] = {0.0, -0.0, 1.5, -2.25, NAN, -NAN, INFINITY, -INFINITY, 3e38};
    for (int i = 0; i < 9; i++) {
        v_float[i] = (float)d[i];
        v_double[i] = i == 8 ? DBL_MAX : d[i];
    }
}

#define NVALS(a) (sizeof(a) / sizeof((a)[0]))

/* Compares a fetching op through both paths. */
#define CROSS_FETCH(opname, T)                                                                 \
    for (size_t i = 0; i < NVALS(v_##T); i++)                                                  \
        for (size_t j = 0; j < NVALS(v_##T); j++) {                                            \
            T old1, old2, res1, res2;                                                          \
            CHECK(fam_set_##T(fast, 0, v_##T[i]) == 0);                                        \
            CHECK(fam_##opname##_##T(fast, 0, v_##T[j], &old1) == 0);                          \
            CHECK(fam_fetch_##T(fast, 0, &res1) == 0);                                         \
            CHECK(fam_set_##T(fast, 0, v_##T[i]) == 0);                                        \
            fam_desc_t *s = slow();                                                            \
            CHECK(fam_##opname##_##T(s, 0, v_##T[j], &old2) == 0);                             \
            CHECK(fam_close(s) == 0);                                                          \
            CHECK(fam_fetch_##T(fast, 0, &res2) == 0);                                         \
            if (memcmp(&old1, &old2, sizeof old1) != 0 || memcmp(&res1, &res2, sizeof res1) != 0) { \
                fprintf(stderr, "fam_%s_%s(word #%zu, operand #%zu): C and Go differ\n", #opname, \
                        #T, i, j);                                                             \
                exit(1);                                                                       \
            }                                                                                  \
            cases++;                                                                           \
        }

/* Compares a non-fetching op through both paths. */
#define CROSS_PLAIN(opname, T)                                                                 \
    for (size_t i = 0; i < NVALS(v_##T); i++)                                                  \
        for (size_t j = 0; j < NVALS(v_##T); j++) {                                            \
            T res1, res2;                                                                      \
            CHECK(fam_set_##T(fast, 0, v_##T[i]) == 0);                                        \
            CHECK(fam_##opname##_##T(fast, 0, v_##T[j]) == 0);                                 \
            CHECK(fam_fetch_##T(fast, 0, &res1) == 0);                                         \
            CHECK(fam_set_##T(fast, 0, v_##T[i]) == 0);                                        \
            fam_desc_t *s = slow();                                                            \
            CHECK(fam_##opname##_##T(s, 0, v_##T[j]) == 0);                                    \
            CHECK(fam_close(s) == 0);                                                          \
            CHECK(fam_fetch_##T(fast, 0, &res2) == 0);                                         \
            if (memcmp(&res1, &res2, sizeof res1) != 0) {                                      \
                fprintf(stderr, "fam_%s_%s(word #%zu, operand #%zu): C and Go differ\n", #opname, \
                        #T, i, j);                                                             \
                exit(1);                                                                       \
            }                                                                                  \
            cases++;                                                                           \
        }

/* compare_swap with expected = word (succeeds) and = operand (mostly fails). */
#define CROSS_CSWAP(T)                                                                         \
    for (size_t i = 0; i < NVALS(v_##T); i++)                                                  \
        for (size_t j = 0; j < NVALS(v_##T); j++) {                                            \
            T old1, old2, res1, res2;                                                          \
            T exp = (i + j) % 2 ? v_##T[i] : v_##T[j];                                         \
            CHECK(fam_set_##T(fast, 0, v_##T[i]) == 0);                                        \
            CHECK(fam_compare_swap_##T(fast, 0, exp, v_##T[j], &old1) == 0);                   \
            CHECK(fam_fetch_##T(fast, 0, &res1) == 0);                                         \
            CHECK(fam_set_##T(fast, 0, v_##T[i]) == 0);                                        \
            fam_desc_t *s = slow();                                                            \
            CHECK(fam_compare_swap_##T(s, 0, exp, v_##T[j], &old2) == 0);                      \
            CHECK(fam_close(s) == 0);                                                          \
            CHECK(fam_fetch_##T(fast, 0, &res2) == 0);                                         \
            CHECK(old1 == old2 && res1 == res2);                                               \
            cases++;                                                                           \
        }

#define CROSS_ALL_TYPES(T)                                                                     \
    CROSS_FETCH(fetch_add, T)                                                                  \
    CROSS_FETCH(fetch_subtract, T)                                                             \
    CROSS_FETCH(fetch_min, T)                                                                  \
    CROSS_FETCH(fetch_max, T)                                                                  \
    CROSS_FETCH(swap, T)                                                                       \
    CROSS_PLAIN(add, T)                                                                        \
    CROSS_PLAIN(subtract, T)                                                                   \
    CROSS_PLAIN(min, T)                                                                        \
    CROSS_PLAIN(max, T)                                                                        \
    CROSS_PLAIN(set, T)

#define CROSS_UNSIGNED(T)                                                                      \
    CROSS_FETCH(fetch_and, T)                                                                  \
    CROSS_FETCH(fetch_or, T)                                                                   \
    CROSS_FETCH(fetch_xor, T)                                                                  \
    CROSS_PLAIN(and, T)                                                                        \
    CROSS_PLAIN(or, T)                                                                         \
    CROSS_PLAIN(xor, T)

int main(void)
{
    init_floats();
    CHECK(fam_initialize("default", NULL) == 0);
    fam_region_t *r = fam_create_region("atomics", 1 << 20, 0600, NULL);
    CHECK(r != NULL);
    fast = fam_allocate("word", 64, 0600, r);
    CHECK(fast != NULL && fam_desc_global(fast, &global) == 0);

    CROSS_ALL_TYPES(int32)
    CROSS_ALL_TYPES(int64)
    CROSS_ALL_TYPES(uint32)
    CROSS_ALL_TYPES(uint64)
    CROSS_ALL_TYPES(float)
    CROSS_ALL_TYPES(double)
    CROSS_UNSIGNED(uint32)
    CROSS_UNSIGNED(uint64)
    CROSS_CSWAP(int32)
    CROSS_CSWAP(int64)
    CROSS_CSWAP(uint32)
    CROSS_CSWAP(uint64)

    CHECK(fam_destroy_region(r) == 0);
    CHECK(fam_finalize("default") == 0);
    printf("atomics: C fast path and Go agree on %ld cases\n", cases);
    return 0;
}
