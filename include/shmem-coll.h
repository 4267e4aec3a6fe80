/*
 * shmem-coll.h: OpenSHMEM 1.5 teams, collectives, locks and the 1.4
 * active-set collectives. Included by shmem.h (after its types:
 * shmem_team_t, shmem_ctx_t); not meant to be included on its own.
 */
#ifndef OPENFAM_SHMEM_COLL_H
#define OPENFAM_SHMEM_COLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The pSync sizes and SHMEM_SYNC_VALUE, shmem_team_config_t,
 * SHMEM_TEAM_NUM_CONTEXTS and the team handles SHMEM_TEAM_WORLD,
 * SHMEM_TEAM_SHARED and SHMEM_TEAM_INVALID are in shmem.h. A pSync array
 * needs at least 35 longs (every SHMEM_*_SYNC_SIZE is larger); pWrk is not
 * used by this implementation. */

/* ---- teams ---- */

/* This PE's number in team, or -1 for SHMEM_TEAM_INVALID. */
int shmem_team_my_pe(shmem_team_t team);
/* The number of PEs in team, or -1 for SHMEM_TEAM_INVALID. */
int shmem_team_n_pes(shmem_team_t team);
/* Fills the fields of *config that config_mask names; 0, or -1 for an
 * invalid team. */
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
/* The number in dest_team of PE src_pe of src_team, or -1 when it is not
 * a member or a team is invalid. */
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
/* Collective over parent_team: the PEs start + i*stride (i < size) of the
 * parent form *new_team; the others get SHMEM_TEAM_INVALID. 0 on success,
 * non-zero (and SHMEM_TEAM_INVALID everywhere) for a bad triplet, an
 * invalid parent, or when no team slot is free. */
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team);
/* Collective over parent_team: the parent seen as a grid xrange wide, its
 * rows (*xaxis_team) and columns (*yaxis_team). */
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
/* Collective over team: releases it. The predefined teams cannot be. */
void shmem_team_destroy(shmem_team_t team);
/* A context whose PE numbers are team's; non-zero (and SHMEM_CTX_INVALID)
 * when it cannot be made. */
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
/* The address of dest on team member pe when it is mapped here, or NULL. */
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);
/* Synchronises team's PEs (no completion of remote updates). 0. */
int shmem_team_sync(shmem_team_t team);

/* ---- barriers and syncs ---- */

/* Completes this PE's updates, then waits for every PE to arrive. */
void shmem_barrier_all(void);
/* Waits for every PE to arrive (updates not completed). */
void shmem_sync_all(void);
/* 1.4: shmem_barrier_all over an active set, with its pSync. */
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
/* shmem_sync(team) (1.5) and shmem_sync(PE_start, logPE_stride, PE_size,
 * pSync) (1.4): one name, chosen by the number of arguments. */
int shmem_sync(shmem_team_t team);
void shmem_sync_active_set(int PE_start, int logPE_stride, int PE_size, long *pSync);
#define SHMEMI_SYNC_PICK(_1, _2, _3, _4, NAME, ...) NAME
#define shmem_sync(...)                                                           \
    SHMEMI_SYNC_PICK(__VA_ARGS__, shmem_sync_active_set, shmem_sync_bad_arity,    \
                     shmem_sync_bad_arity, shmem_sync, _)(__VA_ARGS__)

/* ---- 1.5 team collectives, untyped (nelems in bytes) ---- */

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems);

/* ---- 1.4 active-set collectives ---- */

void shmem_broadcast32(void *dest, const void *source, size_t nelems, int PE_root,
                       int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_broadcast64(void *dest, const void *source, size_t nelems, int PE_root,
                       int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_collect32(void *dest, const void *source, size_t nelems, int PE_start,
                     int logPE_stride, int PE_size, long *pSync);
void shmem_collect64(void *dest, const void *source, size_t nelems, int PE_start,
                     int logPE_stride, int PE_size, long *pSync);
void shmem_fcollect32(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync);
void shmem_fcollect64(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync);
void shmem_alltoall32(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync);
void shmem_alltoall64(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync);
void shmem_alltoalls32(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_alltoalls64(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);

/* ---- locks (a symmetric long, zero before first use) ---- */

/* Waits until this PE holds the lock (granted in arrival order). */
void shmem_set_lock(long *lock);
/* Takes the lock if it is free: 0 when taken, 1 when it was not free. */
int shmem_test_lock(long *lock);
/* Completes this PE's updates, then releases the lock. */
void shmem_clear_lock(long *lock);

#ifdef __cplusplus
}
#endif

/* Typed collectives and reductions (generated). */
#include "shmem-coll-typed.h"

#endif /* OPENFAM_SHMEM_COLL_H */
