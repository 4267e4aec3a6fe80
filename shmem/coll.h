/*
 * coll.h: what the collectives' own files (shmem/team.c, shmem/coll*.c,
 * shmem/barrier.c, shmem/lock.c) share. Not installed; the rest of the
 * layer sees only shmemi.h.
 *
 * Every collective runs over an "active set": the world PEs
 * start + i*stride, 0 <= i < size, and a symmetric array of long counters
 * (the sync array) that the members signal each other through. A team's
 * sync array is its slot in a pool carved from the internal heap reserve at
 * init (team.c); a 1.4 active-set call uses the caller's pSync.
 *
 * Synchronisation is by counters, never by values written once: a signal
 * is an atomic add of 1 to a counter in the receiver's sync array; a wait
 * spins until its own counter reaches n and takes n away again. So every
 * counter is back at its resting value (0 in a team slot, SHMEM_SYNC_VALUE
 * in a pSync) when a call returns, as 1.4 asks
 * of pSync, and a signal that arrives early (a fast peer already in the
 * next call) is kept, not lost.
 */
#ifndef OPENFAM_SHMEM_COLL_INTERNAL_H
#define OPENFAM_SHMEM_COLL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "shmemi.h"

/* Counter indices in a sync array: one per dissemination-barrier round
 * (a round's counter has exactly one sender, which is what makes repeated
 * barriers on one array safe), then DONE (non-roots tell the root of a
 * broadcast they have read its source), COUNT (a PE's own contribution
 * size for collect, read by the others) and MASK (team slot agreement). */
#define SHMEMI_SYNC_ROUNDS 32
#define SHMEMI_SYNC_DONE   32
#define SHMEMI_SYNC_COUNT  33
#define SHMEMI_SYNC_MASK   34
#define SHMEMI_SYNC_WORDS  35 /* longs a 1.4 pSync needs (SHMEM_*_SYNC_SIZE) */

/* Longs between the counters of a team slot: one 64-byte line each, so a
 * signal for one round does not disturb a PE spinning on another. */
#define SHMEMI_SLOT_LSTRIDE 8

/* An active set with its sync array, built for one call. */
struct shmemi_aset {
    const char *call; /* public name, for error messages */
    int start, stride, size;
    int me;           /* this PE's index in the set */
    long *psync;      /* symmetric sync array */
    int lstride;      /* longs between counters: 8 (a cache line each) for a
                         team slot, 1 for a user's pSync */
    int mapped;       /* every member's sync array is mapped here (CPU atomics) */
    long base;        /* a counter's resting value: 0 in a team slot,
                         SHMEM_SYNC_VALUE in a user's pSync */
    long **round_peer; /* team slots: mapped address of the counter each
                          barrier round signals, or NULL (computed at init) */
};

/* World PE of set member i. */
static inline int shmemi_aset_pe(const struct shmemi_aset *a, int i)
{
    return a->start + i * a->stride;
}

/* The collectives' state of a team (struct shmemi_team.coll). */
struct shmemi_coll_team {
    int slot;                                /* index in the pool */
    long *psync;                             /* the slot's sync array */
    int mapped;
    long *round_peer[SHMEMI_SYNC_ROUNDS];
};

/* One step of a wait loop on memory a peer writes: a CPU pause, and every
 * 64 steps shmemi_yield (gives the processor to the PE being waited for
 * when there are more PEs than free cores, and ends this PE when another
 * called shmem_global_exit), as the core's own waits do. */
static inline void shmemi_coll_spin(unsigned *spins)
{
    if ((++*spins & 63) == 0)
        shmemi_yield();
    else
        shmemi_pause();
}

/* Private mode (shmemi_private_mode: famrun --servers K) has no shared
 * memory to signal through: peers' writes reach this PE's local memory
 * only at the core's sync points. There a barrier over the whole world is
 * the core's job barrier with its exchange (push, fam_barrier_all, pull),
 * and a set smaller than the world aborts naming the call (barrier.c). */
void shmemi_coll_private_barrier(const struct shmemi_aset *a);

/* Reduction element kinds and operators (coll_reduce.c). */
enum shmemi_kind {
    SHMEMI_K_I8, SHMEMI_K_I16, SHMEMI_K_I32, SHMEMI_K_I64,
    SHMEMI_K_U8, SHMEMI_K_U16, SHMEMI_K_U32, SHMEMI_K_U64,
    SHMEMI_K_FLOAT, SHMEMI_K_DOUBLE, SHMEMI_K_LDOUBLE,
    SHMEMI_K_CFLOAT, SHMEMI_K_CDOUBLE,
    SHMEMI_K_COUNT
};
enum shmemi_op {
    SHMEMI_OP_AND, SHMEMI_OP_OR, SHMEMI_OP_XOR, SHMEMI_OP_MAX, SHMEMI_OP_MIN,
    SHMEMI_OP_SUM, SHMEMI_OP_PROD
};

/* The kind of an integer type from its size and signedness. */
#define SHMEMI_KIND_INT(T)                                                      \
    ((T)-1 < (T)1 ? (sizeof(T) == 1 ? SHMEMI_K_I8 : sizeof(T) == 2 ? SHMEMI_K_I16 \
                     : sizeof(T) == 4 ? SHMEMI_K_I32 : SHMEMI_K_I64)             \
                  : (sizeof(T) == 1 ? SHMEMI_K_U8 : sizeof(T) == 2 ? SHMEMI_K_U16 \
                     : sizeof(T) == 4 ? SHMEMI_K_U32 : SHMEMI_K_U64))

size_t shmemi_kind_size(enum shmemi_kind k);

/* ---- building sets ---- */

/* The set of a team handle; aborts naming call when the handle is not a
 * team this PE belongs to. */
void shmemi_aset_team(struct shmemi_aset *a, const char *call, struct shmemi_team *team);

/* The set of a 1.4 active-set call; aborts naming call on a bad PE_start,
 * stride or size, when this PE is not in the set, or when pSync is not
 * symmetric. */
void shmemi_aset_active(struct shmemi_aset *a, const char *call, int PE_start,
                        int logPE_stride, int PE_size, long *pSync);

/* The team with a given handle, or NULL when it is not a valid team. */
struct shmemi_team *shmemi_team_lookup(struct shmemi_team *team);

/* 1 from shmemi_coll_init (in shmem_init) to shmemi_coll_fini (in
 * shmem_finalize): the teams' collective state exists. */
extern int shmemi_coll_ready;

/* ---- algorithms (coll.c, coll_reduce.c) ---- */

void shmemi_aset_signal(const struct shmemi_aset *a, int idx, int member);
void shmemi_aset_wait(const struct shmemi_aset *a, int idx, long count);
void shmemi_aset_barrier(const struct shmemi_aset *a);
void shmemi_aset_broadcast(const struct shmemi_aset *a, void *dest, const void *src,
                           size_t nbytes, int root, int root_copies);
void shmemi_aset_fcollect(const struct shmemi_aset *a, void *dest, const void *src, size_t nbytes);
void shmemi_aset_collect(const struct shmemi_aset *a, void *dest, const void *src, size_t nbytes);
void shmemi_aset_alltoall(const struct shmemi_aset *a, void *dest, const void *src, size_t nbytes);
void shmemi_aset_alltoalls(const struct shmemi_aset *a, void *dest, const void *src,
                           ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t esize);
/* dest need not be symmetric (team slot agreement reduces into a local);
 * src must be. */
void shmemi_aset_reduce(const struct shmemi_aset *a, void *dest, const void *src,
                        size_t nelems, enum shmemi_kind kind, enum shmemi_op op);

/* Entry points the generated typed wrappers (coll_typed.c) call: argument
 * checks, then the algorithm. */
int shmemi_team_broadcast(const char *call, struct shmemi_team *team, void *dest,
                          const void *src, size_t nelems, size_t esize, int root);
int shmemi_team_collect(const char *call, struct shmemi_team *team, void *dest,
                        const void *src, size_t nelems, size_t esize, int fixed);
int shmemi_team_alltoall(const char *call, struct shmemi_team *team, void *dest,
                         const void *src, size_t nelems, size_t esize);
int shmemi_team_alltoalls(const char *call, struct shmemi_team *team, void *dest,
                          const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                          size_t esize);
int shmemi_team_reduce(const char *call, struct shmemi_team *team, void *dest,
                       const void *src, size_t nelems, enum shmemi_kind kind, enum shmemi_op op);
void shmemi_active_reduce(const char *call, void *dest, const void *src, int nreduce,
                          int PE_start, int logPE_stride, int PE_size, long *pSync,
                          enum shmemi_kind kind, enum shmemi_op op);

#endif /* OPENFAM_SHMEM_COLL_INTERNAL_H */
