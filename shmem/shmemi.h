/*
 * shmemi.h: the internal contract between the parts of the OpenSHMEM layer
 * (shmem/). Not installed. Public names are shmem_* (include/shmem.h and
 * include/shmem-coll.h); everything shared between the layer's C files is
 * shmemi_* and declared here, so the core (init, heap, RMA, atomics:
 * shmem/core*.c, shmem/heap.c, shmem/rma*.c ...) and the collectives and
 * teams (shmem/coll*.c, shmem/team.c, shmem/lock.c, shmem/barrier.c) can be
 * written apart.
 *
 * Layering, as in Sandia OpenSHMEM: public shmem_* -> argument checks
 * (shmemi_check_*) and the local fast path (shmemi_ptr: a peer's memory
 * mapped in this process, so memcpy and CPU atomics) -> the FAM core
 * (fam_put_blocking/fam_get_blocking/fam_* atomics on the PE's heap item)
 * where the peer's memory is not mapped here.
 */
#ifndef OPENFAM_SHMEMI_H
#define OPENFAM_SHMEMI_H

#include <stddef.h>
#include <stdint.h>

/* ---- job ------------------------------------------------------------------ */

extern int shmemi_my_pe;       /* this PE's rank in the world team; valid after init */
extern int shmemi_n_pes;       /* number of PEs in the job */
extern int shmemi_initialized; /* 1 between shmem_init* and shmem_finalize */

/* Prints "shmem: CALL: message" (and the PE number) on stderr and ends the
 * whole job with exit status 1 (the launcher stops the other PEs). */
void shmemi_abort(const char *call, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));

/* Argument checks shared by every public call: each aborts the job with a
 * message naming call when the check fails. */
void shmemi_check_init(const char *call);                 /* shmem_init was called */
void shmemi_check_pe(const char *call, int pe);            /* 0 <= pe < n_pes */
void shmemi_check_sym(const char *call, const void *addr, size_t len); /* symmetric */

/* ---- symmetric memory -------------------------------------------------------- */

/* Whether [addr, addr+len) lies wholly in symmetric memory of this PE (its
 * heap, or its static/global data). */
int shmemi_is_symmetric(const void *addr, size_t len);

/* The address, in this process, of the symmetric object that is at local
 * address addr on this PE, as it lives on PE pe, when that memory is mapped
 * here (same host); NULL when it is not (other host, or not symmetric).
 * The fast path of every RMA, atomic and collective. */
void *shmemi_ptr(const void *addr, int pe);

/* Byte copies to or from a symmetric address on any PE: memcpy when mapped,
 * the FAM data path otherwise. Abort the job on a data-path error. */
void shmemi_put(void *dest, const void *src, size_t n, int pe);
void shmemi_get(void *dest, const void *src, size_t n, int pe);

/* Carves n bytes (aligned to 64) out of the part of the symmetric heap the
 * layer keeps for itself (barrier and collective scratch, lock words, team
 * pSync arrays). Every PE must call it with the same sizes in the same
 * order (it is symmetric by construction and needs no communication).
 * The memory is zero when first handed out: the reserve is the start of
 * a FAM item allocated for this job (fam_allocate returns zeroed memory),
 * or in private mode of anonymous mmap memory, and each byte is handed
 * out once per job (shmem_init may run once per program). Callers must
 * not clear it themselves: a faster peer may already have written to its
 * copy on this PE (a signalled counter). Aborts when the reserve is
 * exhausted. */
void *shmemi_internal_alloc(size_t n);

/* The collectives' setup (shmem/team.c): the world and shared teams' sync
 * state and the pool of team slots, carved by shmemi_internal_alloc. Called
 * once by shmem_init on every PE, after the heaps are set up and before
 * init's barrier (which uses it), so every PE makes the same internal
 * allocations in the same order. shmemi_coll_fini, called by
 * shmem_finalize after its barrier, forgets the split teams and the
 * pool: handles used after finalize are invalid teams, not stale memory. */
void shmemi_coll_init(void);
void shmemi_coll_fini(void);

/* 1 when this PE's symmetric memory is private memory rather than the
 * FAM items themselves (fam_map cannot map them: famrun --servers K, or
 * another host). Then shmemi_ptr returns NULL for every PE, this one
 * included; shmemi_put/shmemi_get to this PE copy to and from its local
 * memory; puts, gets and atomics to peers go to their items; and what
 * peers wrote becomes visible in local memory at the sync points below
 * (shmemi_barrier_all, and wait_until/test calls that succeed). */
extern int shmemi_private_mode;

/* Private mode's exchange with the items (no-ops otherwise): push sends
 * what the program stored locally since the last exchange to this PE's
 * items, pull copies the items back into local memory. A barrier does
 * push, then the rendezvous, then pull (shmemi_barrier_all does). */
void shmemi_sync_push(void);
void shmemi_sync_pull(void);

/* ---- synchronisation ------------------------------------------------------- */

/* A barrier over every PE with the memory ordering of shmem_barrier_all
 * (quiet first). Used by init, malloc/free and finalize; shmem/barrier.c. */
void shmemi_barrier_all(void);

/* Completes every outstanding put/atomic of the default context (mapped
 * stores are fenced; FAM non-blocking operations are waited for). */
void shmemi_quiet(void);

/* A polite pause inside spin loops on memory peers write. */
static inline void shmemi_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

/* To be called every so often (say every 64 pauses) in spin loops:
 * gives up the processor (oversubscribed jobs) and ends this PE with the
 * status another PE gave shmem_global_exit, so PEs blocked in a barrier or
 * a wait do not outlive it. */
void shmemi_yield(void);

/* ---- teams and contexts -------------------------------------------------------- */

/* A team: the world PEs start + i*stride for 0 <= i < size. shmem_team_t is
 * a pointer to one (include/shmem.h). coll is the collectives' own state
 * (shmem/team.c), opaque to the rest. */
struct shmemi_team {
    int start, stride, size;
    int my_pe;                /* this PE's index in the team, -1 if not a member */
    struct shmemi_team *parent;
    long config_num_contexts; /* from shmem_team_config_t */
    void *coll;
};

/* A context: ordering scope of puts/gets/atomics. shmem_ctx_t is a pointer
 * to one; the default context is &shmemi_ctx_default. PE numbers given to a
 * context's operations are indices in ctx->team. */
struct shmemi_ctx {
    struct shmemi_team *team;
    long options;
    int valid;
    void *priv; /* the core's per-context state (pending FAM operations) */
};

/* The predefined teams and context. Local to the library (the version
 * script exports only the constant pointers shmem.h's SHMEM_TEAM_WORLD,
 * SHMEM_TEAM_SHARED and SHMEM_CTX_DEFAULT are), so a program never gets a
 * copy of them and every handle it passes is one of these addresses. */
extern struct shmemi_team shmemi_team_world;
extern struct shmemi_team shmemi_team_shared;
extern struct shmemi_ctx shmemi_ctx_default;

/* World PE number of team member index pe (pe < team->size), or -1. */
static inline int shmemi_team_world_pe(const struct shmemi_team *t, int pe)
{
    if (pe < 0 || pe >= t->size)
        return -1;
    return t->start + pe * t->stride;
}

/* Context creation for shmem_team_create_ctx (shmem/team.c calls the
 * core's): returns 0 and sets *out, or non-zero. */
int shmemi_ctx_create(struct shmemi_team *team, long options, struct shmemi_ctx **out);

#endif /* OPENFAM_SHMEMI_H */
