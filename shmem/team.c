/*
 * team.c: OpenSHMEM 1.5 teams (world, shared, split_strided, split_2d,
 * translate_pe, get_config, create_ctx, ptr, sync, destroy).
 *
 * A team is a strided set of world PEs (struct shmemi_team, shmemi.h). Its
 * collectives need a symmetric sync array on every member, but
 * shmemi_internal_alloc must be called identically on every PE, and a split
 * is made by a subset. So every PE carves a fixed pool of SHMEMI_TEAM_SLOTS
 * sync arrays once, in shmem_init (shmemi_coll_init), and a
 * split picks a slot that is free on every member of the parent: the
 * members OR-reduce their in-use masks over the parent and take the lowest
 * bit clear in all. Teams made by disjoint subsets may share a slot number;
 * they never share a PE, so they never share memory. The team structs live
 * in an array indexed by slot, which also lets every call check a handle.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <shmem.h>

#include "coll.h"

#define SHMEMI_TEAM_SLOTS 32 /* bits of the in-use mask; slots 0, 1: world, shared */

int shmemi_coll_ready;
static struct shmemi_team teams[SHMEMI_TEAM_SLOTS]; /* split teams, by slot */
static struct shmemi_coll_team colls[SHMEMI_TEAM_SLOTS];
static uint32_t slots_used;  /* slots this PE is a member of a team on */
static long *slot_base;      /* the pool: SLOTS * SLOT_LONGS longs */

#define SLOT_LONGS (SHMEMI_SYNC_WORDS * SHMEMI_SLOT_LSTRIDE)

/* Fills the collectives' state of team t on slot s. */
static void team_attach(struct shmemi_team *t, int s)
{
    struct shmemi_coll_team *c = &colls[s];
    memset(c, 0, sizeof(*c));
    c->slot = s;
    c->psync = slot_base + (size_t)s * SLOT_LONGS;
    c->mapped = 1;
    for (int i = 0; i < t->size; i++)
        if (shmemi_ptr(c->psync, shmemi_team_world_pe(t, i)) == NULL)
            c->mapped = 0;
    /* The peer each dissemination round signals, resolved once. */
    for (int k = 0, d = 1; d < t->size && k < SHMEMI_SYNC_ROUNDS; k++, d <<= 1) {
        int peer = shmemi_team_world_pe(t, (int)(((long)t->my_pe + d) % t->size));
        c->round_peer[k] = c->mapped ? shmemi_ptr(c->psync + k * SHMEMI_SLOT_LSTRIDE, peer) : NULL;
    }
    t->coll = c;
    slots_used |= 1u << s;
}

void shmemi_coll_init(void)
{
    if (shmemi_coll_ready)
        return;
    /* The reserve is zero (a new heap item), and must not be cleared here:
     * a faster peer may already have signalled a counter in it. */
    slot_base = shmemi_internal_alloc((size_t)SHMEMI_TEAM_SLOTS * SLOT_LONGS * sizeof(long));
    for (int s = 0; s < SHMEMI_TEAM_SLOTS; s++)
        teams[s].my_pe = -1;

    /* The core filled in the world and shared teams (shmem/core.c: the
     * shared team is every PE when all heaps are mapped here, else this PE
     * alone); they get slots 0 and 1. */
    team_attach(&shmemi_team_world, 0);
    team_attach(&shmemi_team_shared, 1);
    shmemi_coll_ready = 1;
}

void shmemi_coll_fini(void)
{
    shmemi_coll_ready = 0;
    slots_used = 0;
    slot_base = NULL;
    for (int s = 0; s < SHMEMI_TEAM_SLOTS; s++) {
        memset(&teams[s], 0, sizeof(teams[s]));
        teams[s].my_pe = -1;
    }
    memset(colls, 0, sizeof(colls));
    shmemi_team_world.coll = NULL;
    shmemi_team_shared.coll = NULL;
}

struct shmemi_team *shmemi_team_lookup(struct shmemi_team *team)
{
    /* Before shmem_init or after shmem_finalize no handle is a team. */
    if (team == NULL || !shmemi_coll_ready)
        return NULL;
    if (team == &shmemi_team_world || team == &shmemi_team_shared)
        return team;
    if (team >= teams && team < teams + SHMEMI_TEAM_SLOTS &&
        (slots_used & (1u << (team - teams))) && team->my_pe >= 0)
        return team;
    return NULL;
}

void shmemi_aset_team(struct shmemi_aset *a, const char *call, struct shmemi_team *team)
{
    shmemi_check_init(call);
    struct shmemi_team *t = shmemi_team_lookup(team);
    if (t == NULL)
        shmemi_abort(call, "team %p is not a valid team of this PE (SHMEM_TEAM_INVALID, destroyed, or never created)",
                     (void *)team);
    const struct shmemi_coll_team *c = t->coll;
    a->call = call;
    a->start = t->start;
    a->stride = t->stride;
    a->size = t->size;
    a->me = t->my_pe;
    a->psync = c->psync;
    a->lstride = SHMEMI_SLOT_LSTRIDE;
    a->mapped = c->mapped;
    a->base = 0;
    a->round_peer = (long **)c->round_peer;
}

/* ---- queries ---- */

int shmem_team_my_pe(shmem_team_t team)
{
    struct shmemi_team *t = shmemi_team_lookup(team);
    return t ? t->my_pe : -1;
}

int shmem_team_n_pes(shmem_team_t team)
{
    struct shmemi_team *t = shmemi_team_lookup(team);
    return t ? t->size : -1;
}

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)
{
    struct shmemi_team *t = shmemi_team_lookup(team);
    if (t == NULL || config == NULL)
        return -1;
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS)
        config->num_contexts = (int)t->config_num_contexts;
    return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)
{
    struct shmemi_team *s = shmemi_team_lookup(src_team);
    struct shmemi_team *d = shmemi_team_lookup(dest_team);
    if (s == NULL || d == NULL)
        return -1;
    int w = shmemi_team_world_pe(s, src_pe);
    if (w < 0)
        return -1;
    long off = (long)w - d->start;
    if (d->size == 1)
        return off == 0 ? 0 : -1;
    if (off % d->stride != 0)
        return -1;
    long idx = off / d->stride;
    return idx >= 0 && idx < d->size ? (int)idx : -1;
}

void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)
{
    struct shmemi_team *t = shmemi_team_lookup(team);
    if (t == NULL)
        return NULL;
    int w = shmemi_team_world_pe(t, pe);
    if (w < 0)
        return NULL;
    return shmemi_ptr(dest, w);
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)
{
    shmemi_check_init("shmem_team_create_ctx");
    struct shmemi_team *t = shmemi_team_lookup(team);
    if (ctx == NULL)
        shmemi_abort("shmem_team_create_ctx", "ctx is NULL");
    if (t == NULL) {
        *ctx = SHMEM_CTX_INVALID;
        return -1;
    }
    struct shmemi_ctx *c = NULL;
    if (shmemi_ctx_create(t, options, &c) != 0 || c == NULL) {
        *ctx = SHMEM_CTX_INVALID;
        return -1;
    }
    *ctx = c;
    return 0;
}

int shmem_team_sync(shmem_team_t team)
{
    struct shmemi_aset a;
    shmemi_aset_team(&a, "shmem_team_sync", team);
    shmemi_aset_barrier(&a);
    return 0;
}

/* shmem_sync(team): the header's shmem_sync macro picks this or the 1.4
 * active-set form by argument count; the parentheses keep it a function. */
int(shmem_sync)(shmem_team_t team)
{
    struct shmemi_aset a;
    shmemi_aset_team(&a, "shmem_sync", team);
    shmemi_aset_barrier(&a);
    return 0;
}

/* ---- splits ---- */

/* Collective over parent p: the lowest `want` slot numbers free on every
 * member of p, in out[]; -1 when the pool is exhausted (the same answer on
 * every member, since they all see the same reduced mask). */
static int agree_slots(const char *call, struct shmemi_team *p, int want, int out[2])
{
    struct shmemi_aset a;
    shmemi_aset_team(&a, call, p);
    long *mine = a.psync + SHMEMI_SYNC_MASK * a.lstride;
    *mine = (long)slots_used;
    unsigned long all = 0;
    shmemi_aset_reduce(&a, &all, mine, 1, SHMEMI_K_U64, SHMEMI_OP_OR);
    int got = 0;
    for (int s = 2; s < SHMEMI_TEAM_SLOTS && got < want; s++)
        if (!(all & (1ul << s)))
            out[got++] = s;
    return got == want ? 0 : -1;
}

static void team_init(int s, struct shmemi_team *parent, int start_world, int stride_world,
                      int size, int my_index, const shmem_team_config_t *config, long mask)
{
    struct shmemi_team *t = &teams[s];
    t->start = start_world;
    t->stride = stride_world;
    t->size = size;
    t->my_pe = my_index;
    t->parent = parent;
    t->config_num_contexts = (config && (mask & SHMEM_TEAM_NUM_CONTEXTS)) ? config->num_contexts : 0;
    team_attach(t, s);
}

static struct shmemi_team *split_parent(const char *call, shmem_team_t parent)
{
    shmemi_check_init(call);
    if (parent == SHMEM_TEAM_INVALID)
        return NULL;
    struct shmemi_team *p = shmemi_team_lookup(parent);
    if (p == NULL)
        shmemi_abort(call, "parent team %p is not a valid team of this PE", (void *)parent);
    return p;
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team)
{
    static const char call[] = "shmem_team_split_strided";
    if (new_team == NULL)
        shmemi_abort(call, "new_team is NULL");
    *new_team = SHMEM_TEAM_INVALID;
    struct shmemi_team *p = split_parent(call, parent_team);
    if (p == NULL)
        return -1;
    /* Arguments every member sees alike, so every member returns alike. */
    if (size < 1 || start < 0 || start >= p->size)
        return -1;
    if (size > 1) {
        long last = (long)start + (long)(size - 1) * stride;
        if (stride == 0 || last < 0 || last >= p->size)
            return -1;
    }
    int s[2];
    if (agree_slots(call, p, 1, s) != 0)
        return -1;
    long off = (long)p->my_pe - start;
    long k = size == 1 ? (off == 0 ? 0 : -1) : (off % stride == 0 ? off / stride : -1);
    if (k < 0 || k >= size)
        return 0; /* not a member: SHMEM_TEAM_INVALID, and success */
    team_init(s[0], p, shmemi_team_world_pe(p, start), p->stride * (size == 1 ? 1 : stride),
              size, (int)k, config, config_mask);
    *new_team = &teams[s[0]];
    return 0;
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team,
                        const shmem_team_config_t *yaxis_config, long yaxis_mask,
                        shmem_team_t *yaxis_team)
{
    static const char call[] = "shmem_team_split_2d";
    if (xaxis_team == NULL || yaxis_team == NULL)
        shmemi_abort(call, "xaxis_team or yaxis_team is NULL");
    *xaxis_team = SHMEM_TEAM_INVALID;
    *yaxis_team = SHMEM_TEAM_INVALID;
    struct shmemi_team *p = split_parent(call, parent_team);
    if (p == NULL || xrange < 1)
        return -1;
    if (xrange > p->size)
        xrange = p->size;
    int s[2];
    if (agree_slots(call, p, 2, s) != 0)
        return -1;
    int me = p->my_pe;
    int row = me / xrange, col = me % xrange;
    int xsize = p->size - row * xrange < xrange ? p->size - row * xrange : xrange;
    team_init(s[0], p, shmemi_team_world_pe(p, row * xrange), p->stride, xsize, col,
              xaxis_config, xaxis_mask);
    int ysize = (p->size - col + xrange - 1) / xrange;
    team_init(s[1], p, shmemi_team_world_pe(p, col), p->stride * xrange, ysize, row,
              yaxis_config, yaxis_mask);
    *xaxis_team = &teams[s[0]];
    *yaxis_team = &teams[s[1]];
    return 0;
}

void shmem_team_destroy(shmem_team_t team)
{
    static const char call[] = "shmem_team_destroy";
    shmemi_check_init(call);
    if (team == SHMEM_TEAM_INVALID)
        return;
    struct shmemi_team *t = shmemi_team_lookup(team);
    if (t == &shmemi_team_world || t == &shmemi_team_shared)
        shmemi_abort(call, "SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED cannot be destroyed");
    struct shmemi_aset a;
    shmemi_aset_team(&a, call, team);
    /* Every member is done with the slot (all its counters consumed)
     * before any member may hand it to a new team. */
    shmemi_aset_barrier(&a);
    int s = (int)(t - teams);
    slots_used &= ~(1u << s);
    memset(&teams[s], 0, sizeof(teams[s]));
    teams[s].my_pe = -1;
}
