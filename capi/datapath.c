/*
 * datapath.c - fam_get/put and the atomics, plain and on a context.
 *
 * When the item is mapped in this process (see the view cached in its handle
 * slot, ofam.h) and the request is plainly valid, the operation is a memcpy or
 * a CPU atomic done right here: a call into Go costs more than the operation.
 * Anything else (remote item, unresolved handle, missing rights, bad
 * arguments) goes to Go, which validates fully and reports the precise error.
 * Both paths use the same lock-prefixed instructions on the same memory, so
 * an atomic done here and one done by the Go core are atomic with respect to
 * each other. The typed atomic functions are generated from one type table.
 */
#include <math.h>
#include <string.h>

#include "_cgo_export.h"
#include "ofam.h"

/* The fast path is inlined whole into each public function, so that its
 * slot reads and out-parameters stay in registers. */
#define OFAM_INLINE static inline __attribute__((always_inline))

/* The address of [off, off+n) of item d when the fast path may serve a
 * request needing the given rights; NULL sends the request to Go. On success
 * *sp and *seqp say which slot state was read, for ofam_fast_held. */
OFAM_INLINE char *ofam_fast(fam_desc_t *d, uint64_t off, uint64_t n, uint32_t need, ofam_slot **sp,
                            uint32_t *seqp, uint32_t *rightsp)
{
    if (__builtin_expect(__atomic_load_n(&ofam_state, __ATOMIC_RELAXED) != OFAM_READY, 0))
        return NULL;
    uint64_t h = (uint64_t)(uintptr_t)d;
    ofam_slot *s = ofam_slot_of(h, OFAM_KIND_DESC);
    if (s == NULL)
        return NULL;
    uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    uint32_t gen = __atomic_load_n(&s->gen, __ATOMIC_RELAXED);
    uint32_t kind = __atomic_load_n(&s->kind, __ATOMIC_RELAXED);
    char *base = __atomic_load_n(&s->base, __ATOMIC_RELAXED);
    uint64_t size = __atomic_load_n(&s->size, __ATOMIC_RELAXED);
    uint32_t rights = __atomic_load_n(&s->rights, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if ((seq & 1) != 0 || __atomic_load_n(&s->seq, __ATOMIC_RELAXED) != seq)
        return NULL;
    if (gen != (uint32_t)(h >> 32) || kind != OFAM_KIND_DESC || base == NULL || (rights & need) != need)
        return NULL;
    if (n == 0 || off > size || n > size - off)
        return NULL;
    *sp = s;
    *seqp = seq;
    *rightsp = rights;
    return base + off;
}

/* Whether the slot still held the state the fast path read (seq) when the
 * memory access that follows the check returned: if not, the view was
 * dropped during the access, by a refresh or by fam_finalize, and the
 * access may have gone to the anonymous zero pages that replace a retired
 * mapping (core: regionState.retire, scrubMapping) instead of the item.
 * Finalize invalidates every slot before it retires any mapping, so an
 * unchanged seq proves the access reached the item.
 *
 * The fence orders the access before the re-read. After loads (get) an
 * acquire fence is enough. After stores (put, atomics) a full fence is
 * needed in general; on x86 it is not: a store takes its page from the TLB
 * before it retires, the re-read retires after it, and the TLB shootdown
 * that retiring a mapping requires interrupts this CPU, which discards the
 * unretired re-read, so an unchanged seq still proves the store went to the
 * item's page. A compiler barrier then keeps the fast path free. */
OFAM_INLINE int ofam_fast_held(ofam_slot *s, uint32_t seq, int stored)
{
#if defined(__x86_64__) || defined(__i386__)
    (void)stored;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
#else
    if (stored)
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    else
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
    return __builtin_expect(__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == seq, 1);
}

static inline int ofam_ctx_ok(fam_ctx_t *c)
{
    return ofam_handle_live((uint64_t)(uintptr_t)c, OFAM_KIND_CTX);
}

/* ---- get / put ---------------------------------------------------------------- */

static int ofam_slow_rw(const char *fn, int ctxcall, fam_ctx_t *c, int op, void *local, fam_desc_t *d,
                        uint64_t off, uint64_t n)
{
    if (__atomic_load_n(&ofam_state, __ATOMIC_ACQUIRE) != OFAM_READY)
        return ofam_not_ready(fn);
    if (ctxcall && c == NULL)
        return ofam_fail(FAM_EINVAL, "%s: context handle is NULL", fn);
    return ofam_go_rw((uint64_t)(uintptr_t)c, op, local, (uint64_t)(uintptr_t)d, off, n);
}

OFAM_INLINE int ofam_rw(const char *fn, int ctxcall, fam_ctx_t *c, int op, void *local, fam_desc_t *d,
                        uint64_t off, uint64_t n)
{
    int put = op == OFAM_XFER_PUT || op == OFAM_XFER_PUT_NB;
    char *p;
    ofam_slot *s;
    uint32_t seq, rights;
    if (local != NULL && (p = ofam_fast(d, off, n, put ? OFAM_RIGHT_WRITE : OFAM_RIGHT_READ, &s, &seq, &rights)) != NULL &&
        (!ctxcall || ofam_ctx_ok(c))) {
        /* A non-blocking transfer on mapped memory completes here, which
         * satisfies every later fence and quiet. */
        if (put)
            memcpy(p, local, n);
        else
            memcpy(local, p, n);
        if (ofam_fast_held(s, seq, put)) {
            /* A persistent item's write is listed for the next flush
             * (persist.c); the bit is already in a register. */
            if (__builtin_expect(put && (rights & OFAM_RIGHT_PERSIST) != 0, 0) &&
                (!__atomic_load_n(&s->dirty, __ATOMIC_RELAXED) || ofam_persist_each))
                return ofam_persist_wrote(s, op == OFAM_XFER_PUT);
            return 0;
        }
        /* The view changed under the copy (a refresh, or fam_finalize):
         * a transfer may be done again, so Go does it, or reports that
         * the instance is gone. */
    }
    return ofam_slow_rw(fn, ctxcall, c, op, local, d, off, n);
}

#define OFAM_XFERS(X)                      \
    X(get_blocking, OFAM_XFER_GET)         \
    X(put_blocking, OFAM_XFER_PUT)         \
    X(get_nonblocking, OFAM_XFER_GET_NB)   \
    X(put_nonblocking, OFAM_XFER_PUT_NB)

#define OFAM_DEFINE_XFER(name, op)                                                                \
    int fam_##name(void *local, fam_desc_t *d, uint64_t offset, uint64_t nbytes)                  \
    {                                                                                             \
        return ofam_rw(__func__, 0, NULL, op, local, d, offset, nbytes);                          \
    }                                                                                             \
    int fam_ctx_##name(fam_ctx_t *c, void *local, fam_desc_t *d, uint64_t offset, uint64_t nbytes) \
    {                                                                                             \
        return ofam_rw(__func__, 1, c, op, local, d, offset, nbytes);                             \
    }
OFAM_XFERS(OFAM_DEFINE_XFER)

/* ---- atomics --------------------------------------------------------------------- */

static int ofam_slow_amo(const char *fn, int ctxcall, fam_ctx_t *c, fam_desc_t *d, uint64_t off, int kind, int op,
                         int fetch, uint64_t vlo, uint64_t vhi, uint64_t clo, uint64_t chi, void *out)
{
    if (__atomic_load_n(&ofam_state, __ATOMIC_ACQUIRE) != OFAM_READY)
        return ofam_not_ready(fn);
    if (ctxcall && c == NULL)
        return ofam_fail(FAM_EINVAL, "%s: context handle is NULL", fn);
    if (fetch && out == NULL)
        return ofam_fail(FAM_EINVAL, "%s: result pointer is NULL", fn);
    return ofam_go_atomic((uint64_t)(uintptr_t)c, (uint64_t)(uintptr_t)d, off, kind, op, vlo, vhi, clo, chi,
                          fetch, out);
}

/* Called when an atomic's view changed under it (ofam_fast_held). An atomic
 * cannot be done again. If the handle is still live, the view was only
 * refreshed, and every mapping a refresh replaces stays mapped to the same
 * pages until finalize: the result stands (returns 0). If the handle was
 * released meanwhile (fam_close, fam_deallocate, fam_finalize), the word may
 * have been a retired mapping's zero page: the call fails (returns 1). */
static int ofam_amo_raced(const char *fn, ofam_slot *s, fam_desc_t *d)
{
    if (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == (uint32_t)((uint64_t)(uintptr_t)d >> 32))
        return 0;
    ofam_fail(FAM_EINVAL, "%s: the data item handle was released (or fam_finalize ran) during the call; "
                          "the operation may or may not have taken effect", fn);
    return 1;
}

/* Min/Max on floats, as core/amo: a NaN operand never replaces the word, a NaN
 * word is replaced by a number, and -0 orders below +0. */
static inline int ofam_take_operand(int min, double x, double y)
{
    if (y != y)
        return 0;
    if (x != x)
        return 1;
    if (x == 0 && y == 0) {
        int ys = signbit(y) != 0, xs = signbit(x) != 0;
        return min ? (ys && !xs) : (xs && !ys);
    }
    return min ? y < x : y > x;
}

/* x + y with the word x as the instruction's destination operand: when both
 * are NaN, SSE returns the destination's NaN, and Go's compiler puts x there;
 * a C compiler may swap the operands of a commutative +, so this pins them.
 * The integer versions are never used for Add (lock xadd is), only compiled. */
#if defined(__x86_64__) && defined(__SSE2__)
static inline float ofam_add_float(float x, float y)
{
    __asm__("addss %1, %0" : "+x"(x) : "x"(y));
    return x;
}

static inline double ofam_add_double(double x, double y)
{
    __asm__("addsd %1, %0" : "+x"(x) : "x"(y));
    return x;
}
#else
static inline float ofam_add_float(float x, float y)
{
    return x + y;
}

static inline double ofam_add_double(double x, double y)
{
    return x + y;
}
#endif
#define OFAM_INT_ADD(name, T)                           \
    static inline T ofam_add_##name(T x, T y)           \
    {                                                   \
        return (T)(x + y);                              \
    }
OFAM_INT_ADD(int32, int32_t)
OFAM_INT_ADD(int64, int64_t)
OFAM_INT_ADD(uint32, uint32_t)
OFAM_INT_ADD(uint64, uint64_t)

#define OFAM_IS_FLOAT_S 0
#define OFAM_IS_FLOAT_U 0
#define OFAM_IS_FLOAT_F 1

/* The type table: C name suffix, value type, same-size bits type, core kind,
 * class (S signed, U unsigned, F floating point). */
#define OFAM_TYPES(X)                                   \
    X(int32, int32_t, uint32_t, OFAM_K_INT32, S)        \
    X(int64, int64_t, uint64_t, OFAM_K_INT64, S)        \
    X(uint32, uint32_t, uint32_t, OFAM_K_UINT32, U)     \
    X(uint64, uint64_t, uint64_t, OFAM_K_UINT64, U)     \
    X(float, float, uint32_t, OFAM_K_FLOAT32, F)        \
    X(double, double, uint64_t, OFAM_K_FLOAT64, F)
#define OFAM_UNSIGNED_TYPES(X)                          \
    X(uint32, uint32_t, uint32_t, OFAM_K_UINT32, U)     \
    X(uint64, uint64_t, uint64_t, OFAM_K_UINT64, U)
#define OFAM_INTEGER_TYPES(X)                           \
    X(int32, int32_t, uint32_t, OFAM_K_INT32, S)        \
    X(int64, int64_t, uint64_t, OFAM_K_INT64, S)        \
    X(uint32, uint32_t, uint32_t, OFAM_K_UINT32, U)     \
    X(uint64, uint64_t, uint64_t, OFAM_K_UINT64, U)

/* Per type: ofam_next_T computes the word a CAS-loop op stores (Min, Max, and
 * float Add/Subtract), ofam_amo_T applies an op to the word at w and returns
 * its previous bits, ofam_do_T is the fast-or-slow dispatch. */
#define OFAM_DEFINE_CORE(name, T, B, K, CLS)                                                       \
    static inline B ofam_next_##name(int op, B ob, B vb)                                           \
    {                                                                                              \
        T x, y, r;                                                                                 \
        memcpy(&x, &ob, sizeof x);                                                                 \
        memcpy(&y, &vb, sizeof y);                                                                 \
        switch (op) {                                                                              \
        case OFAM_OP_ADD:                                                                          \
            r = ofam_add_##name(x, y);                                                             \
            break;                                                                                 \
        case OFAM_OP_SUBTRACT:                                                                     \
            r = x - y;                                                                             \
            break;                                                                                 \
        case OFAM_OP_MIN:                                                                          \
            if (OFAM_IS_FLOAT_##CLS)                                                               \
                return ofam_take_operand(1, (double)x, (double)y) ? vb : ob;                       \
            return y < x ? vb : ob;                                                                \
        case OFAM_OP_MAX:                                                                          \
            if (OFAM_IS_FLOAT_##CLS)                                                               \
                return ofam_take_operand(0, (double)x, (double)y) ? vb : ob;                       \
            return y > x ? vb : ob;                                                                \
        default:                                                                                   \
            return ob;                                                                             \
        }                                                                                          \
        B rb;                                                                                      \
        memcpy(&rb, &r, sizeof rb);                                                                \
        return rb;                                                                                 \
    }                                                                                              \
    OFAM_INLINE B ofam_amo_##name(B *w, int op, B v, B cmp)                                        \
    {                                                                                              \
        switch (op) {                                                                              \
        case OFAM_OP_FETCH:                                                                        \
            return __atomic_load_n(w, __ATOMIC_SEQ_CST);                                           \
        case OFAM_OP_SET:                                                                          \
            __atomic_store_n(w, v, __ATOMIC_SEQ_CST);                                              \
            return 0;                                                                              \
        case OFAM_OP_SWAP:                                                                         \
            return __atomic_exchange_n(w, v, __ATOMIC_SEQ_CST);                                    \
        case OFAM_OP_AND:                                                                          \
            return __atomic_fetch_and(w, v, __ATOMIC_SEQ_CST);                                     \
        case OFAM_OP_OR:                                                                           \
            return __atomic_fetch_or(w, v, __ATOMIC_SEQ_CST);                                      \
        case OFAM_OP_XOR:                                                                          \
            return __atomic_fetch_xor(w, v, __ATOMIC_SEQ_CST);                                     \
        case OFAM_OP_COMPARE_SWAP:                                                                 \
            __atomic_compare_exchange_n(w, &cmp, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);        \
            return cmp;                                                                            \
        }                                                                                          \
        if (!OFAM_IS_FLOAT_##CLS && op == OFAM_OP_ADD)                                             \
            return __atomic_fetch_add(w, v, __ATOMIC_SEQ_CST);                                     \
        if (!OFAM_IS_FLOAT_##CLS && op == OFAM_OP_SUBTRACT)                                        \
            return __atomic_fetch_sub(w, v, __ATOMIC_SEQ_CST);                                     \
        B old = __atomic_load_n(w, __ATOMIC_RELAXED);                                              \
        for (;;) {                                                                                 \
            /* Unchanged bits are not written back, as in core/amo. */                             \
            B nw = ofam_next_##name(op, old, v);                                                   \
            if (nw == old ||                                                                       \
                __atomic_compare_exchange_n(w, &old, nw, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))   \
                return old;                                                                        \
        }                                                                                          \
    }                                                                                              \
    OFAM_INLINE int ofam_do_##name(const char *fn, int ctxcall, fam_ctx_t *c, fam_desc_t *d,       \
                                   uint64_t off, int op, int fetch, T value, T expected, T *out)   \
    {                                                                                              \
        B vb = 0, cb = 0;                                                                          \
        memcpy(&vb, &value, sizeof value);                                                         \
        memcpy(&cb, &expected, sizeof expected);                                                   \
        uint32_t need = op == OFAM_OP_FETCH ? OFAM_RIGHT_READ                                      \
                        : fetch             ? OFAM_RIGHT_READ | OFAM_RIGHT_WRITE                   \
                                            : OFAM_RIGHT_WRITE;                                    \
        char *p;                                                                                   \
        ofam_slot *s;                                                                              \
        uint32_t seq, rights;                                                                      \
        if ((!fetch || out != NULL) &&                                                             \
            (p = ofam_fast(d, off, sizeof(T), need, &s, &seq, &rights)) != NULL &&                 \
            ((uintptr_t)p & (sizeof(T) - 1)) == 0 && (!ctxcall || ofam_ctx_ok(c))) {               \
            B old = ofam_amo_##name((B *)(void *)p, op, vb, cb);                                   \
            if (!ofam_fast_held(s, seq, 1) && ofam_amo_raced(fn, s, d))                            \
                return -FAM_EINVAL;                                                                \
            if (fetch)                                                                             \
                memcpy(out, &old, sizeof old);                                                     \
            if (__builtin_expect((rights & OFAM_RIGHT_PERSIST) != 0, 0) && op != OFAM_OP_FETCH &&  \
                (!__atomic_load_n(&s->dirty, __ATOMIC_RELAXED) || ofam_persist_each))              \
                return ofam_persist_wrote(s, 1);                                                   \
            return 0;                                                                              \
        }                                                                                          \
        return ofam_slow_amo(fn, ctxcall, c, d, off, K, op, fetch, vb, 0, cb, 0, out);             \
    }
OFAM_TYPES(OFAM_DEFINE_CORE)

/* Public names: fam_OP_T and fam_ctx_OP_T for a non-fetching op, a fetching
 * op, fetch itself and compare_swap. */
#define OFAM_NONFETCH(opname, OP, name, T)                                                         \
    int fam_##opname##_##name(fam_desc_t *d, uint64_t offset, T value)                             \
    {                                                                                              \
        return ofam_do_##name(__func__, 0, NULL, d, offset, OP, 0, value, 0, NULL);                \
    }                                                                                              \
    int fam_ctx_##opname##_##name(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, T value)           \
    {                                                                                              \
        return ofam_do_##name(__func__, 1, c, d, offset, OP, 0, value, 0, NULL);                   \
    }
#define OFAM_FETCHING(opname, OP, name, T)                                                         \
    int fam_##opname##_##name(fam_desc_t *d, uint64_t offset, T value, T *old_out)                 \
    {                                                                                              \
        return ofam_do_##name(__func__, 0, NULL, d, offset, OP, 1, value, 0, old_out);             \
    }                                                                                              \
    int fam_ctx_##opname##_##name(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, T value, T *old_out) \
    {                                                                                              \
        return ofam_do_##name(__func__, 1, c, d, offset, OP, 1, value, 0, old_out);                \
    }

#define OFAM_DEFINE_ALL_TYPES(name, T, B, K, CLS)                                                  \
    OFAM_NONFETCH(set, OFAM_OP_SET, name, T)                                                       \
    OFAM_NONFETCH(add, OFAM_OP_ADD, name, T)                                                       \
    OFAM_NONFETCH(subtract, OFAM_OP_SUBTRACT, name, T)                                             \
    OFAM_NONFETCH(min, OFAM_OP_MIN, name, T)                                                       \
    OFAM_NONFETCH(max, OFAM_OP_MAX, name, T)                                                       \
    OFAM_FETCHING(fetch_add, OFAM_OP_ADD, name, T)                                                 \
    OFAM_FETCHING(fetch_subtract, OFAM_OP_SUBTRACT, name, T)                                       \
    OFAM_FETCHING(fetch_min, OFAM_OP_MIN, name, T)                                                 \
    OFAM_FETCHING(fetch_max, OFAM_OP_MAX, name, T)                                                 \
    OFAM_FETCHING(swap, OFAM_OP_SWAP, name, T)                                                     \
    int fam_fetch_##name(fam_desc_t *d, uint64_t offset, T *value_out)                             \
    {                                                                                              \
        return ofam_do_##name(__func__, 0, NULL, d, offset, OFAM_OP_FETCH, 1, 0, 0, value_out);    \
    }                                                                                              \
    int fam_ctx_fetch_##name(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, T *value_out)           \
    {                                                                                              \
        return ofam_do_##name(__func__, 1, c, d, offset, OFAM_OP_FETCH, 1, 0, 0, value_out);       \
    }
OFAM_TYPES(OFAM_DEFINE_ALL_TYPES)

#define OFAM_DEFINE_UNSIGNED(name, T, B, K, CLS)                                                   \
    OFAM_NONFETCH(and, OFAM_OP_AND, name, T)                                                       \
    OFAM_NONFETCH(or, OFAM_OP_OR, name, T)                                                         \
    OFAM_NONFETCH(xor, OFAM_OP_XOR, name, T)                                                       \
    OFAM_FETCHING(fetch_and, OFAM_OP_AND, name, T)                                                 \
    OFAM_FETCHING(fetch_or, OFAM_OP_OR, name, T)                                                   \
    OFAM_FETCHING(fetch_xor, OFAM_OP_XOR, name, T)
OFAM_UNSIGNED_TYPES(OFAM_DEFINE_UNSIGNED)

#define OFAM_DEFINE_CSWAP(name, T, B, K, CLS)                                                      \
    int fam_compare_swap_##name(fam_desc_t *d, uint64_t offset, T expected, T desired, T *old_out) \
    {                                                                                              \
        return ofam_do_##name(__func__, 0, NULL, d, offset, OFAM_OP_COMPARE_SWAP, 1, desired,      \
                              expected, old_out);                                                  \
    }                                                                                              \
    int fam_ctx_compare_swap_##name(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, T expected,      \
                                    T desired, T *old_out)                                         \
    {                                                                                              \
        return ofam_do_##name(__func__, 1, c, d, offset, OFAM_OP_COMPARE_SWAP, 1, desired,         \
                              expected, old_out);                                                  \
    }
OFAM_INTEGER_TYPES(OFAM_DEFINE_CSWAP)

/* ---- 128-bit atomics: always through Go (cmpxchg16b lives there) ---------------- */

#ifdef __SIZEOF_INT128__
static inline uint64_t ofam_lo(fam_int128_t v)
{
    return (uint64_t)(unsigned __int128)v;
}

static inline uint64_t ofam_hi(fam_int128_t v)
{
    return (uint64_t)((unsigned __int128)v >> 64);
}

int fam_set_int128(fam_desc_t *d, uint64_t offset, fam_int128_t value)
{
    return ofam_slow_amo(__func__, 0, NULL, d, offset, OFAM_K_INT128, OFAM_OP_SET, 0, ofam_lo(value),
                         ofam_hi(value), 0, 0, NULL);
}

int fam_ctx_set_int128(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, fam_int128_t value)
{
    return ofam_slow_amo(__func__, 1, c, d, offset, OFAM_K_INT128, OFAM_OP_SET, 0, ofam_lo(value),
                         ofam_hi(value), 0, 0, NULL);
}

int fam_fetch_int128(fam_desc_t *d, uint64_t offset, fam_int128_t *value_out)
{
    return ofam_slow_amo(__func__, 0, NULL, d, offset, OFAM_K_INT128, OFAM_OP_FETCH, 1, 0, 0, 0, 0,
                         value_out);
}

int fam_ctx_fetch_int128(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, fam_int128_t *value_out)
{
    return ofam_slow_amo(__func__, 1, c, d, offset, OFAM_K_INT128, OFAM_OP_FETCH, 1, 0, 0, 0, 0,
                         value_out);
}

int fam_compare_swap_int128(fam_desc_t *d, uint64_t offset, fam_int128_t expected, fam_int128_t desired,
                            fam_int128_t *old_out)
{
    return ofam_slow_amo(__func__, 0, NULL, d, offset, OFAM_K_INT128, OFAM_OP_COMPARE_SWAP, 1,
                         ofam_lo(desired), ofam_hi(desired), ofam_lo(expected), ofam_hi(expected), old_out);
}

int fam_ctx_compare_swap_int128(fam_ctx_t *c, fam_desc_t *d, uint64_t offset, fam_int128_t expected,
                                fam_int128_t desired, fam_int128_t *old_out)
{
    return ofam_slow_amo(__func__, 1, c, d, offset, OFAM_K_INT128, OFAM_OP_COMPARE_SWAP, 1,
                         ofam_lo(desired), ofam_hi(desired), ofam_lo(expected), ofam_hi(expected), old_out);
}
#endif
