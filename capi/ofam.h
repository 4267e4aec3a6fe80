/*
 * ofam.h - private to libopenfam's C layer (capi/): the handle slot table,
 * the instance state, the thread-local error and the enumerations shared with
 * the Go exports. Not installed; the public interface is include/openfam.h.
 *
 * Handles. A handle given to the user is not a pointer but an encoded integer
 * cast to the opaque pointer type:
 *
 *     (generation << 32) | (kind << 28) | index        index >= 1
 *
 * The index selects a slot in a table of fixed-size chunks that are allocated
 * once and never freed, so a lookup needs no lock and cannot touch freed
 * memory whatever value it is given. A handle is live while its slot holds the
 * same kind and generation; releasing a slot bumps its generation, so every
 * copy of a released handle is recognisably stale.
 *
 * A data item slot also caches where the item is mapped in this process (base,
 * size, rights) so the data path can run in C without entering Go. Writers
 * (all serialized by one mutex) publish slot changes under a per-slot sequence
 * counter (odd while a change is in progress); the fast path reads the fields
 * and accepts them only if the counter was even and unchanged (a seqlock).
 */
#ifndef OFAM_PRIVATE_H
#define OFAM_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "openfam.h"

/* Handle kinds; values occupy bits 28..31 of a handle. */
enum {
    OFAM_KIND_REGION = 1,
    OFAM_KIND_DESC = 2,
    OFAM_KIND_CTX = 3,
    OFAM_KIND_WAIT = 4
};

#define OFAM_INDEX_BITS 28
#define OFAM_INDEX_MASK ((1u << OFAM_INDEX_BITS) - 1)
#define OFAM_CHUNK_BITS 12
#define OFAM_CHUNK_SLOTS (1u << OFAM_CHUNK_BITS)
#define OFAM_NCHUNKS (1u << (OFAM_INDEX_BITS - OFAM_CHUNK_BITS))

/* Rights bits of a data item view; equal to core.RightRead/RightWrite.
 * OFAM_RIGHT_PERSIST is not a right: it marks the view of an item of a
 * persistent region, whose writes the fast path lists for the next flush
 * (capi/persist.c). */
enum { OFAM_RIGHT_READ = 1, OFAM_RIGHT_WRITE = 2, OFAM_RIGHT_PERSIST = 4 };

/* Operand kinds and operations of atomics; equal to core/amo's Kind and Op
 * (capi/enums.go checks this at compile time). */
enum {
    OFAM_K_INT32 = 1,
    OFAM_K_INT64 = 2,
    OFAM_K_UINT32 = 3,
    OFAM_K_UINT64 = 4,
    OFAM_K_FLOAT32 = 5,
    OFAM_K_FLOAT64 = 6,
    OFAM_K_INT128 = 7
};
enum {
    OFAM_OP_SET = 1,
    OFAM_OP_FETCH = 2,
    OFAM_OP_ADD = 3,
    OFAM_OP_SUBTRACT = 4,
    OFAM_OP_MIN = 5,
    OFAM_OP_MAX = 6,
    OFAM_OP_AND = 7,
    OFAM_OP_OR = 8,
    OFAM_OP_XOR = 9,
    OFAM_OP_SWAP = 10,
    OFAM_OP_COMPARE_SWAP = 11
};

/* Transfers of ofam_go_rw, ofam_go_strided and ofam_go_indexed. */
enum {
    OFAM_XFER_GET = 0,
    OFAM_XFER_PUT = 1,
    OFAM_XFER_GET_NB = 2,
    OFAM_XFER_PUT_NB = 3
};

/* Which *_wait call may complete a wait handle. */
enum {
    OFAM_WAIT_COPY = 1,
    OFAM_WAIT_BACKUP = 2,
    OFAM_WAIT_RESTORE = 3,
    OFAM_WAIT_DELETE_BACKUP = 4
};

/* Instance states. */
enum {
    OFAM_DOWN = 0,   /* not initialized, or finalized */
    OFAM_READY = 1,  /* between fam_initialize and fam_finalize */
    OFAM_FORKED = 2  /* a forked child (see ofam_check_forked): every call fails */
};

typedef struct ofam_name ofam_name;

/* One handle slot, a cache line. seq, gen, kind, rights, base and size are
 * accessed only with __atomic builtins; next_free and names only under the
 * writer mutex. */
typedef struct {
    uint32_t seq;
    uint32_t gen;
    uint32_t kind;      /* 0 while free */
    uint32_t rights;    /* OFAM_RIGHT_* of the cached view */
    char *base;         /* the item's first byte in this process, or NULL */
    uint64_t size;      /* bytes mapped at base */
    uint32_t next_free; /* free list link (index) */
    uint32_t dirty;     /* listed for the next persistence flush (persist.c) */
    ofam_name *names;   /* strings handed out by fam_stat, freed on release */
    char pad2_[16];
} ofam_slot;

extern ofam_slot *ofam_chunks[OFAM_NCHUNKS];
extern int ofam_state;

/* ---- used by the C wrappers ------------------------------------------------ */

/* The slot a handle of the given kind points to, or NULL when the handle's
 * kind bits differ or its index is out of range or was never allocated. Does
 * not check the generation. Lock-free; safe for any value of h. */
static inline ofam_slot *ofam_slot_of(uint64_t h, uint32_t kind)
{
    uint32_t idx = (uint32_t)h & OFAM_INDEX_MASK;
    if (((uint32_t)(h >> OFAM_INDEX_BITS) & 0xf) != kind || idx == 0)
        return NULL;
    ofam_slot *chunk = __atomic_load_n(&ofam_chunks[idx >> OFAM_CHUNK_BITS], __ATOMIC_ACQUIRE);
    if (chunk == NULL)
        return NULL;
    return &chunk[idx & (OFAM_CHUNK_SLOTS - 1)];
}

/* Reports whether h is a live handle of the given kind. Lock-free. */
static inline int ofam_handle_live(uint64_t h, uint32_t kind)
{
    ofam_slot *s = ofam_slot_of(h, kind);
    return s != NULL && __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == (uint32_t)(h >> 32) &&
           __atomic_load_n(&s->kind, __ATOMIC_RELAXED) == kind;
}

/* Sets the calling thread's error (code > 0, printf-style message) and returns
 * -code. */
int ofam_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Fails with FAM_EINVAL explaining why the instance cannot serve fn (not
 * initialized, or a forked child). Returns -FAM_EINVAL. */
int ofam_not_ready(const char *fn);
/* Reports whether this process is a child forked from the one that loaded
 * the library (then every call must fail: see handles.c), marking the
 * instance forked if a raw fork system call made it. */
int ofam_check_forked(void);

/* ---- called from Go (capi/ Go files) ---------------------------------------- */

/* Sets the calling thread's error from n bytes at msg (not NUL-terminated;
 * truncated to fit). */
void ofam_set_error(int code, const char *msg, size_t n);
/* Marks the instance ready (1) or down (0). A forked child stays forked. */
void ofam_set_ready(int ready);
/* Allocates a slot of the given kind and returns its handle, 0 when no slot
 * or memory is left. */
uint64_t ofam_slot_new(uint32_t kind);
/* Releases the slot of a live handle (bumps its generation, drops its view,
 * frees its names). Returns 1 if h was live, 0 otherwise. */
int ofam_slot_release(uint64_t h);
/* Releases every live slot; returns how many. */
uint32_t ofam_slot_release_all(void);
/* Publishes a data item's mapping (base NULL: none) if h is still live. */
void ofam_slot_set_view(uint64_t h, void *base, uint64_t size, uint32_t rights);
/* A NUL-terminated copy of n bytes at p owned by h's slot, stable until the
 * slot is released; NULL if h is not live or memory is short. */
const char *ofam_slot_name(uint64_t h, const char *p, size_t n);
/* Reports whether h is a live handle of the given kind (for Go). */
int ofam_slot_live(uint64_t h, uint32_t kind);

/* ---- persistence (persist.c; issue 20) ---------------------------------------- */

/* Persistence policies; equal to core.PersistPolicy. */
enum { OFAM_PERSIST_QUIET = 0, OFAM_PERSIST_EACH = 1, OFAM_PERSIST_LAZY = 2 };
/* Sets the policy the fast path follows (at fam_initialize). */
void ofam_set_persist_policy(int policy);
/* 1 under OFAM_PERSIST_EACH: the fast path then calls ofam_persist_wrote
 * after every write to a persistent item, not only the first after a
 * flush. Read relaxed; set before the instance is ready. */
extern int ofam_persist_each;
/* Called by the fast path after it wrote to a persistent item through slot
 * s: lists s for the next flush or, under the each policy for a blocking
 * call, makes the item's pages durable now. Returns 0 or -FAM_E*. */
int ofam_persist_wrote(ofam_slot *s, int blocking);
/* Makes every listed slot's pages durable (msync MS_SYNC) and empties the
 * list. Returns 0, or the errno of the first msync that failed. */
int ofam_persist_flush(void);

#endif /* OFAM_PRIVATE_H */
