/*
 * test_atomics.c - every atomic of openfam.h, on the default context and on
 * an explicit one: results of each type x operation, and their error paths
 * (misaligned and out-of-range offsets, offset overflow, NULL and garbage
 * handles, NULL result pointers, NULL and closed contexts).
 *
 * The typed tests are generated from one type table (ALL_TYPES) so that a
 * new operation or type is covered for every combination at once.
 */
#include "famtest.h"

static fam_region_t *g_region;
static fam_ctx_t *g_ctx;
static fam_ctx_t *g_closed_ctx; /* opened and closed: a stale context handle */

enum { ITEM = 64, SENTINEL = 0xab };

/* name suffix, C type, is floating point */
#define ALL_TYPES(X)            \
    X(int32, int32_t, 0)        \
    X(int64, int64_t, 0)        \
    X(uint32, uint32_t, 0)      \
    X(uint64, uint64_t, 0)      \
    X(float, float, 1)          \
    X(double, double, 1)
#define INT_TYPES(X)            \
    X(int32, int32_t, 0)        \
    X(int64, int64_t, 0)        \
    X(uint32, uint32_t, 0)      \
    X(uint64, uint64_t, 0)
#define UNSIGNED_TYPES(X)       \
    X(uint32, uint32_t, 0)      \
    X(uint64, uint64_t, 0)

/* The two ways to reach an atomic: the default context, or CTX_ (a variable
 * in scope so the error checks can swap in NULL and closed contexts). */
#define CALL_def(op, T, ...) fam_##op##_##T(__VA_ARGS__)
#define CALL_ctx(op, T, ...) fam_ctx_##op##_##T(CTX_, __VA_ARGS__)
#define IS_CTX_def 0
#define IS_CTX_ctx 1

static int setup(void **state)
{
    (void)state;
    if (fam_initialize("atomics", NULL) != 0) {
        fprintf(stderr, "fam_initialize: %s\n", fam_errmsg());
        return -1;
    }
    g_region = fam_create_region("atomics", 1 << 20, 0600, NULL);
    g_ctx = fam_context_open();
    g_closed_ctx = fam_context_open();
    if (g_closed_ctx == NULL || fam_context_close(g_closed_ctx) != 0)
        return -1;
    return g_region != NULL && g_ctx != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return fam_context_close(g_ctx) == 0 && fam_destroy_region(g_region) == 0 &&
                   fam_finalize("atomics") == 0
               ? 0
               : -1;
}

/* An ITEM-byte item filled with SENTINEL bytes, so that tests can check an
 * atomic touched only its own operand. */
static fam_desc_t *sentinel_item(void)
{
    fam_desc_t *d = fam_allocate(NULL, ITEM, 0600, g_region);
    if (d == NULL)
        fail_msg("fam_allocate: %s", fam_errmsg());
    uint8_t fillb[ITEM];
    memset(fillb, SENTINEL, ITEM);
    assert_fam_ok(fam_put_blocking(fillb, d, 0, ITEM));
    return d;
}

/* Checks that only bytes [off, off+size) differ from SENTINEL, then frees d. */
static void check_sentinels_and_free(fam_desc_t *d, uint64_t off, size_t size)
{
    uint8_t got[ITEM];
    assert_fam_ok(fam_get_blocking(got, d, 0, ITEM));
    for (size_t i = 0; i < ITEM; i++)
        if ((i < off || i >= off + size) && got[i] != SENTINEL)
            fail_msg("byte %zu outside the operand changed to %#x", i, got[i]);
    assert_fam_ok(fam_deallocate(d));
}

static void expect_rc(int rc, int code, const char *call, const char *what)
{
    if (rc != -code || (code != 0 && fam_errcode() != code))
        fail_msg("%s with %s returned %d (errcode %d: %s), want %d", call, what, rc, fam_errcode(),
                 fam_errmsg(), -code);
}

/* Runs EXPR (an atomic call written in terms of D_, OFF_, OUT_ and CTX_)
 * through every error case, then once at the item's last valid offset. */
#define CHECK_ERRORS(CT, IS_CTX, HAS_OUT, EXPR)                                             \
    do {                                                                                     \
        CT out_;                                                                             \
        CT *OUT_ = &out_;                                                                    \
        fam_desc_t *D_ = d;                                                                  \
        fam_ctx_t *CTX_ = g_ctx;                                                             \
        uint64_t OFF_ = sizeof(CT) / 2;                                                      \
        (void)OUT_, (void)CTX_;                                                              \
        expect_rc(EXPR, FAM_EINVAL, #EXPR, "a misaligned offset");                           \
        OFF_ = ITEM;                                                                         \
        expect_rc(EXPR, FAM_ERANGE, #EXPR, "offset == item size");                           \
        OFF_ = ITEM + 4 * sizeof(CT);                                                        \
        expect_rc(EXPR, FAM_ERANGE, #EXPR, "an offset past the item");                       \
        OFF_ = UINT64_MAX - (sizeof(CT) - 1);                                                \
        expect_rc(EXPR, FAM_ERANGE, #EXPR, "an aligned offset that overflows");              \
        OFF_ = 0;                                                                            \
        D_ = NULL;                                                                           \
        expect_rc(EXPR, FAM_EINVAL, #EXPR, "a NULL descriptor");                             \
        D_ = GARBAGE_PTR;                                                                    \
        expect_rc(EXPR, FAM_EINVAL, #EXPR, "a garbage descriptor");                          \
        D_ = d;                                                                              \
        if (HAS_OUT) {                                                                       \
            OUT_ = NULL;                                                                     \
            expect_rc(EXPR, FAM_EINVAL, #EXPR, "a NULL result pointer");                     \
            OUT_ = &out_;                                                                    \
        }                                                                                    \
        if (IS_CTX) {                                                                        \
            CTX_ = NULL;                                                                     \
            expect_rc(EXPR, FAM_EINVAL, #EXPR, "a NULL context");                            \
            CTX_ = GARBAGE_PTR;                                                              \
            expect_rc(EXPR, FAM_EINVAL, #EXPR, "a garbage context");                         \
            CTX_ = g_closed_ctx;                                                             \
            expect_rc(EXPR, FAM_EINVAL, #EXPR, "a closed context");                          \
            CTX_ = g_ctx;                                                                    \
        }                                                                                    \
        OFF_ = ITEM - sizeof(CT);                                                            \
        expect_rc(EXPR, 0, #EXPR, "the last aligned offset");                                \
    } while (0)

/* ---- set / fetch / add / subtract / min / max / fetch_* / swap: all types ---- */

#define DEFINE_ARITH(T, CT, ISF, V)                                                          \
    static void test_arith_##T##_##V(void **state)                                           \
    {                                                                                        \
        (void)state;                                                                         \
        fam_ctx_t *CTX_ = g_ctx;                                                             \
        (void)CTX_;                                                                          \
        fam_desc_t *d = sentinel_item();                                                     \
        const uint64_t off = 16;                                                             \
        CT v = 0, old = 0;                                                                   \
        const CT neg = (CT)-3; /* huge for unsigned types: checks the comparison */          \
        assert_fam_ok(CALL_##V(set, T, d, off, (CT)5));                                      \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (CT)5);                                                             \
        assert_fam_ok(CALL_##V(add, T, d, off, (CT)7));                                      \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (CT)12);                                                            \
        assert_fam_ok(CALL_##V(subtract, T, d, off, (CT)2));                                 \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (CT)10);                                                            \
        assert_fam_ok(CALL_##V(min, T, d, off, neg));                                        \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (neg < (CT)10 ? neg : (CT)10));                                     \
        assert_fam_ok(CALL_##V(set, T, d, off, (CT)10));                                     \
        assert_fam_ok(CALL_##V(max, T, d, off, neg));                                        \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (neg > (CT)10 ? neg : (CT)10));                                     \
        assert_fam_ok(CALL_##V(set, T, d, off, (CT)10));                                     \
        assert_fam_ok(CALL_##V(min, T, d, off, (CT)20));                                     \
        assert_fam_ok(CALL_##V(max, T, d, off, (CT)4));                                      \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (CT)10);                                                            \
                                                                                             \
        assert_fam_ok(CALL_##V(fetch_add, T, d, off, (CT)5, &old));                          \
        assert_true(old == (CT)10);                                                          \
        assert_fam_ok(CALL_##V(fetch_subtract, T, d, off, (CT)4, &old));                     \
        assert_true(old == (CT)15);                                                          \
        assert_fam_ok(CALL_##V(fetch_min, T, d, off, (CT)3, &old));                          \
        assert_true(old == (CT)11);                                                          \
        assert_fam_ok(CALL_##V(fetch_min, T, d, off, (CT)8, &old));                          \
        assert_true(old == (CT)3);                                                           \
        assert_fam_ok(CALL_##V(fetch_max, T, d, off, (CT)20, &old));                         \
        assert_true(old == (CT)3);                                                           \
        assert_fam_ok(CALL_##V(fetch_max, T, d, off, (CT)1, &old));                          \
        assert_true(old == (CT)20);                                                          \
        assert_fam_ok(CALL_##V(fetch_min, T, d, off, neg, &old));                            \
        assert_true(old == (CT)20);                                                          \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (neg < (CT)20 ? neg : (CT)20));                                     \
        assert_fam_ok(CALL_##V(set, T, d, off, (CT)10));                                     \
        assert_fam_ok(CALL_##V(fetch_max, T, d, off, neg, &old));                            \
        assert_true(old == (CT)10);                                                          \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (neg > (CT)10 ? neg : (CT)10));                                     \
        assert_fam_ok(CALL_##V(swap, T, d, off, (CT)42, &old));                              \
        assert_true(old == v);                                                               \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (CT)42);                                                            \
        if (ISF) {                                                                           \
            /* Fractions that are exact in binary floating point. */                        \
            assert_fam_ok(CALL_##V(set, T, d, off, (CT)1.5));                                \
            assert_fam_ok(CALL_##V(add, T, d, off, (CT)2.25));                               \
            assert_fam_ok(CALL_##V(fetch_subtract, T, d, off, (CT)0.125, &old));             \
            assert_true(old == (CT)3.75);                                                    \
            assert_fam_ok(CALL_##V(fetch_min, T, d, off, (CT)-0.5, &old));                   \
            assert_true(old == (CT)3.625);                                                   \
            assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                   \
            assert_true(v == (CT)-0.5);                                                      \
        }                                                                                    \
        check_sentinels_and_free(d, off, sizeof(CT));                                        \
    }                                                                                        \
                                                                                             \
    static void test_arith_errors_##T##_##V(void **state)                                    \
    {                                                                                        \
        (void)state;                                                                         \
        fam_desc_t *d = sentinel_item();                                                     \
        CHECK_ERRORS(CT, IS_CTX_##V, 0, CALL_##V(set, T, D_, OFF_, (CT)1));                  \
        CHECK_ERRORS(CT, IS_CTX_##V, 0, CALL_##V(add, T, D_, OFF_, (CT)1));                  \
        CHECK_ERRORS(CT, IS_CTX_##V, 0, CALL_##V(subtract, T, D_, OFF_, (CT)1));             \
        CHECK_ERRORS(CT, IS_CTX_##V, 0, CALL_##V(min, T, D_, OFF_, (CT)1));                  \
        CHECK_ERRORS(CT, IS_CTX_##V, 0, CALL_##V(max, T, D_, OFF_, (CT)1));                  \
        CHECK_ERRORS(CT, IS_CTX_##V, 1, CALL_##V(fetch, T, D_, OFF_, OUT_));                 \
        CHECK_ERRORS(CT, IS_CTX_##V, 1, CALL_##V(fetch_add, T, D_, OFF_, (CT)1, OUT_));      \
        CHECK_ERRORS(CT, IS_CTX_##V, 1, CALL_##V(fetch_subtract, T, D_, OFF_, (CT)1, OUT_)); \
        CHECK_ERRORS(CT, IS_CTX_##V, 1, CALL_##V(fetch_min, T, D_, OFF_, (CT)1, OUT_));      \
        CHECK_ERRORS(CT, IS_CTX_##V, 1, CALL_##V(fetch_max, T, D_, OFF_, (CT)1, OUT_));      \
        CHECK_ERRORS(CT, IS_CTX_##V, 1, CALL_##V(swap, T, D_, OFF_, (CT)1, OUT_));           \
        assert_fam_ok(fam_deallocate(d));                                                    \
    }

/* ---- compare_swap: integer types ------------------------------------------------ */

#define DEFINE_CAS(T, CT, ISF, V)                                                            \
    static void test_cas_##T##_##V(void **state)                                             \
    {                                                                                        \
        (void)state;                                                                         \
        fam_ctx_t *CTX_ = g_ctx;                                                             \
        (void)CTX_;                                                                          \
        fam_desc_t *d = sentinel_item();                                                     \
        const uint64_t off = 32;                                                             \
        CT old = 0, v = 0;                                                                   \
        assert_fam_ok(CALL_##V(set, T, d, off, (CT)10));                                     \
        assert_fam_ok(CALL_##V(compare_swap, T, d, off, (CT)10, (CT)20, &old));              \
        assert_true(old == (CT)10);                                                          \
        assert_fam_ok(CALL_##V(compare_swap, T, d, off, (CT)10, (CT)30, &old));              \
        assert_true(old == (CT)20);                                                          \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (CT)20);                                                            \
        assert_fam_ok(CALL_##V(compare_swap, T, d, off, (CT)20, (CT)-1, &old));              \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (CT)-1);                                                            \
        check_sentinels_and_free(d, off, sizeof(CT));                                        \
        d = sentinel_item();                                                                 \
        CHECK_ERRORS(CT, IS_CTX_##V, 1,                                                      \
                     CALL_##V(compare_swap, T, D_, OFF_, (CT)0, (CT)1, OUT_));               \
        assert_fam_ok(fam_deallocate(d));                                                    \
    }

/* ---- and / or / xor and their fetching forms: unsigned types ------------------------ */

#define DEFINE_BITS(T, CT, ISF, V)                                                           \
    static void test_bits_##T##_##V(void **state)                                            \
    {                                                                                        \
        (void)state;                                                                         \
        fam_ctx_t *CTX_ = g_ctx;                                                             \
        (void)CTX_;                                                                          \
        fam_desc_t *d = sentinel_item();                                                     \
        const uint64_t off = 8;                                                              \
        const CT ones = (CT)~(CT)0;                                                          \
        const CT a = (CT)(0xf0f0f0f0f0f0f0f0ULL & ones), m = (CT)(0xff00ff00ff00ff00ULL & ones); \
        CT v = 0, old = 0;                                                                   \
        assert_fam_ok(CALL_##V(set, T, d, off, a));                                          \
        assert_fam_ok(CALL_##V(and, T, d, off, m));                                          \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (CT)(a & m));                                                       \
        assert_fam_ok(CALL_##V(or, T, d, off, (CT)0x0f));                                    \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (CT)((a & m) | 0x0f));                                              \
        assert_fam_ok(CALL_##V(xor, T, d, off, ones));                                       \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (CT) ~((a & m) | 0x0f));                                            \
        assert_fam_ok(CALL_##V(set, T, d, off, a));                                          \
        assert_fam_ok(CALL_##V(fetch_and, T, d, off, m, &old));                              \
        assert_true(old == a);                                                               \
        assert_fam_ok(CALL_##V(fetch_or, T, d, off, (CT)1, &old));                           \
        assert_true(old == (CT)(a & m));                                                     \
        assert_fam_ok(CALL_##V(fetch_xor, T, d, off, m, &old));                              \
        assert_true(old == (CT)((a & m) | 1));                                               \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (CT)(((a & m) | 1) ^ m));                                           \
        /* Unsigned arithmetic wraps. */                                                     \
        assert_fam_ok(CALL_##V(set, T, d, off, (CT)0));                                      \
        assert_fam_ok(CALL_##V(subtract, T, d, off, (CT)1));                                 \
        assert_fam_ok(CALL_##V(fetch_add, T, d, off, (CT)2, &old));                          \
        assert_true(old == ones);                                                            \
        assert_fam_ok(CALL_##V(fetch, T, d, off, &v));                                       \
        assert_true(v == (CT)1);                                                             \
        check_sentinels_and_free(d, off, sizeof(CT));                                        \
        d = sentinel_item();                                                                 \
        CHECK_ERRORS(CT, IS_CTX_##V, 0, CALL_##V(and, T, D_, OFF_, (CT)1));                  \
        CHECK_ERRORS(CT, IS_CTX_##V, 0, CALL_##V(or, T, D_, OFF_, (CT)1));                   \
        CHECK_ERRORS(CT, IS_CTX_##V, 0, CALL_##V(xor, T, D_, OFF_, (CT)1));                  \
        CHECK_ERRORS(CT, IS_CTX_##V, 1, CALL_##V(fetch_and, T, D_, OFF_, (CT)1, OUT_));      \
        CHECK_ERRORS(CT, IS_CTX_##V, 1, CALL_##V(fetch_or, T, D_, OFF_, (CT)1, OUT_));       \
        CHECK_ERRORS(CT, IS_CTX_##V, 1, CALL_##V(fetch_xor, T, D_, OFF_, (CT)1, OUT_));      \
        assert_fam_ok(fam_deallocate(d));                                                    \
    }

/* ---- int128: set, fetch, compare_swap ------------------------------------------------ */

#define DEFINE_INT128(V)                                                                     \
    static void test_int128_##V(void **state)                                                \
    {                                                                                        \
        (void)state;                                                                         \
        fam_ctx_t *CTX_ = g_ctx;                                                             \
        (void)CTX_;                                                                          \
        fam_desc_t *d = sentinel_item();                                                     \
        const uint64_t off = 16;                                                             \
        const fam_int128_t big = ((fam_int128_t)0x0123456789abcdefLL << 64) | 0xfedcba9876543210ULL; \
        fam_int128_t v = 0, old = 0;                                                         \
        assert_fam_ok(CALL_##V(set, int128, d, off, big));                                   \
        assert_fam_ok(CALL_##V(fetch, int128, d, off, &v));                                  \
        assert_true(v == big);                                                               \
        /* Both halves take part in the comparison. */                                      \
        assert_fam_ok(CALL_##V(compare_swap, int128, d, off, big ^ 1, (fam_int128_t)7, &old)); \
        assert_true(old == big);                                                             \
        assert_fam_ok(CALL_##V(compare_swap, int128, d, off, big ^ ((fam_int128_t)1 << 100), \
                               (fam_int128_t)7, &old));                                      \
        assert_true(old == big);                                                             \
        assert_fam_ok(CALL_##V(compare_swap, int128, d, off, big, -big, &old));              \
        assert_true(old == big);                                                             \
        assert_fam_ok(CALL_##V(fetch, int128, d, off, &v));                                  \
        assert_true(v == -big);                                                              \
        uint64_t halves[2];                                                                  \
        assert_fam_ok(fam_get_blocking(halves, d, off, 16));                                 \
        fam_int128_t raw;                                                                    \
        memcpy(&raw, halves, 16);                                                            \
        assert_true(raw == -big); /* native byte order in memory */                         \
        check_sentinels_and_free(d, off, 16);                                                \
        d = sentinel_item();                                                                 \
        CHECK_ERRORS(fam_int128_t, IS_CTX_##V, 0, CALL_##V(set, int128, D_, OFF_, 1));       \
        CHECK_ERRORS(fam_int128_t, IS_CTX_##V, 1, CALL_##V(fetch, int128, D_, OFF_, OUT_));  \
        CHECK_ERRORS(fam_int128_t, IS_CTX_##V, 1,                                            \
                     CALL_##V(compare_swap, int128, D_, OFF_, 0, 1, OUT_));                  \
        assert_fam_ok(fam_deallocate(d));                                                    \
    }

#define ARITH_BOTH(T, CT, ISF) DEFINE_ARITH(T, CT, ISF, def) DEFINE_ARITH(T, CT, ISF, ctx)
#define CAS_BOTH(T, CT, ISF) DEFINE_CAS(T, CT, ISF, def) DEFINE_CAS(T, CT, ISF, ctx)
#define BITS_BOTH(T, CT, ISF) DEFINE_BITS(T, CT, ISF, def) DEFINE_BITS(T, CT, ISF, ctx)
ALL_TYPES(ARITH_BOTH)
INT_TYPES(CAS_BOTH)
UNSIGNED_TYPES(BITS_BOTH)
DEFINE_INT128(def)
DEFINE_INT128(ctx)

/* Mixed sizes on neighbouring words do not disturb each other. */
static void test_neighbouring_words(void **state)
{
    (void)state;
    fam_desc_t *d = sentinel_item();
    assert_fam_ok(fam_set_uint32(d, 0, 0xffffffffu));
    assert_fam_ok(fam_add_uint32(d, 0, 1)); /* wraps; must not carry into byte 4 */
    assert_fam_ok(fam_set_int32(d, 4, -1));
    assert_fam_ok(fam_add_uint64(d, 8, 1));
    uint32_t lo = 1;
    int32_t hi = 0;
    uint64_t w = 0;
    assert_fam_ok(fam_fetch_uint32(d, 0, &lo));
    assert_fam_ok(fam_fetch_int32(d, 4, &hi));
    assert_fam_ok(fam_fetch_uint64(d, 8, &w));
    assert_int_equal(lo, 0);
    assert_int_equal(hi, -1);
    assert_true(w == 0xababababababababULL + 1);
    assert_fam_ok(fam_deallocate(d));
}

/* The owner is bound by no mode bits (as in OpenFAM): atomics on its own
 * read-only and write-only items work. */
static void test_atomics_owner_ignores_mode(void **state)
{
    (void)state;
    fam_region_attr_t attr = {FAM_REDUNDANCY_NONE, FAM_MEMORY_VOLATILE, FAM_INTERLEAVE_DEFAULT,
                              FAM_PERMISSION_DATAITEM};
    fam_region_t *r = fam_create_region("atomic-perm", 1 << 20, 0700, &attr);
    assert_non_null(r);
    fam_desc_t *ro = fam_allocate("ro", 64, 0400, r);
    fam_desc_t *wo = fam_allocate("wo", 64, 0200, r);
    assert_non_null(ro);
    assert_non_null(wo);
    int64_t v;
    assert_fam_ok(fam_set_int64(ro, 0, 1));
    assert_fam_ok(fam_ctx_fetch_add_int64(g_ctx, ro, 0, 1, &v));
    assert_int_equal(v, 1);
    assert_fam_ok(fam_set_int64(wo, 0, 3));
    assert_fam_ok(fam_fetch_add_int64(wo, 0, 1, &v));
    assert_int_equal(v, 3);
    assert_fam_ok(fam_change_permissions(wo, 0));
    assert_fam_ok(fam_fetch_int64(wo, 0, &v));
    assert_int_equal(v, 4);
    assert_fam_ok(fam_deallocate(ro));
    assert_fam_ok(fam_deallocate(wo));
    assert_fam_ok(fam_destroy_region(r));
}

/* Child mode "--check-foreign-atomics", as a user the mode bits bind (see
 * famtest_with_foreign_store): atomics through a read-only item fail and
 * reads are allowed; fetching atomics need read permission as well. */
static int child_check_foreign_atomics(void)
{
    FAMTEST_CHILD_CHECK(fam_initialize("child", NULL) == 0);
    fam_desc_t *ro = fam_lookup("ro", "foreign");
    fam_desc_t *wo = fam_lookup("wo", "foreign");
    fam_ctx_t *ctx = fam_context_open();
    FAMTEST_CHILD_CHECK(ro != NULL && wo != NULL && ctx != NULL);
    int64_t v;
    double dv;
    FAMTEST_CHILD_CHECK(fam_set_int64(ro, 0, 1) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_add_double(ro, 8, 1.0) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_ctx_fetch_add_int64(ctx, ro, 0, 1, &v) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_compare_swap_int64(ro, 0, 0, 1, &v) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_fetch_int64(ro, 0, &v) == 0);
    FAMTEST_CHILD_CHECK(fam_ctx_fetch_double(ctx, ro, 8, &dv) == 0);
    /* Fetching operations read, so write permission alone is not enough. */
    FAMTEST_CHILD_CHECK(fam_fetch_int64(wo, 0, &v) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_fetch_add_int64(wo, 0, 1, &v) == -FAM_ENOPERM);
    FAMTEST_CHILD_CHECK(fam_set_int64(wo, 0, 1) == 0);
    FAMTEST_CHILD_CHECK(fam_context_close(ctx) == 0);
    FAMTEST_CHILD_CHECK(fam_finalize("child") == 0);
    return 0;
}

/* Atomics through another user's read-only item fail; reads are allowed. */
static void test_atomics_need_permission(void **state)
{
    (void)state;
    famtest_with_foreign_store("--check-foreign-atomics");
}

#define REG_ARITH(T, CT, ISF)                                                             \
    cmocka_unit_test(test_arith_##T##_def), cmocka_unit_test(test_arith_##T##_ctx),       \
        cmocka_unit_test(test_arith_errors_##T##_def), cmocka_unit_test(test_arith_errors_##T##_ctx),
#define REG_CAS(T, CT, ISF) cmocka_unit_test(test_cas_##T##_def), cmocka_unit_test(test_cas_##T##_ctx),
#define REG_BITS(T, CT, ISF) cmocka_unit_test(test_bits_##T##_def), cmocka_unit_test(test_bits_##T##_ctx),

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--make-foreign") == 0)
        return famtest_make_foreign();
    if (argc > 1 && strcmp(argv[1], "--check-foreign-atomics") == 0)
        return child_check_foreign_atomics();
    famtest_use_fresh_store("atomics", argv);
    const struct CMUnitTest tests[] = {
        ALL_TYPES(REG_ARITH)
        INT_TYPES(REG_CAS)
        UNSIGNED_TYPES(REG_BITS)
        cmocka_unit_test(test_int128_def),
        cmocka_unit_test(test_int128_ctx),
        cmocka_unit_test(test_neighbouring_words),
        cmocka_unit_test(test_atomics_owner_ignores_mode),
        cmocka_unit_test(test_atomics_need_permission),
    };
    int failed = cmocka_run_group_tests_name("atomics", tests, setup, teardown);
    famtest_remove_store();
    return failed == 0 ? 0 : 1;
}
