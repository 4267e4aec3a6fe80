/*
 * t_ctx: communication contexts: shmem_ctx_create (each option),
 * SHMEM_CTX_DEFAULT, ctx put/get/p/g/iput/iget/nbi, ctx atomics, ctx_fence,
 * ctx_quiet, destroy; many contexts at once. Under 1.5 also
 * SHMEM_CTX_INVALID (get_team, destroy), shmem_ctx_get_team,
 * shmem_team_create_ctx.
 * Spec: 1.4-compatible (the 1.5 parts behind SHT_15).
 */
#include "shtest.h"

#define N 64
static long gdst[N], gflag, gctr;

static void use_ctx(shmem_ctx_t ctx, long *dst, long *flag, long *ctr, const char *where)
{
    int right = (sht_me + 1) % sht_npes, left = (sht_me + sht_npes - 1) % sht_npes;
    long src[N], loc[N];
    for (int i = 0; i < N; i++)
        src[i] = sht_me * 1000 + i;
    memset(dst, 0, sizeof(long) * N);
    *flag = 0;
    *ctr = 0;
    shmem_barrier_all();
    shmem_ctx_long_put(ctx, dst, src, N / 2, right);
    shmem_ctx_long_put_nbi(ctx, dst + N / 2, src + N / 2, N / 2, right);
    shmem_ctx_fence(ctx);
    shmem_ctx_long_p(ctx, flag, 1, right);
    shmem_ctx_quiet(ctx);
    shmem_long_wait_until(flag, SHMEM_CMP_EQ, 1);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += dst[i] != left * 1000 + i;
    SHT_CHECK(bad == 0, "%s: ctx put/put_nbi+fence: %d bad", where, bad);
    memset(loc, 0, sizeof loc);
    shmem_ctx_long_get(ctx, loc, dst, N, right);
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += loc[i] != sht_me * 1000 + i;
    SHT_CHECK(bad == 0, "%s: ctx get: %d bad", where, bad);
    memset(loc, 0, sizeof loc);
    shmem_ctx_long_get_nbi(ctx, loc, dst, N, right);
    shmem_ctx_quiet(ctx);
    SHT_CHECK(loc[N - 1] == sht_me * 1000 + N - 1, "%s: ctx get_nbi", where);
    SHT_CHECK(shmem_ctx_long_g(ctx, &dst[3], right) == sht_me * 1000 + 3, "%s: ctx g", where);
    memset(loc, 0, sizeof loc);
    shmem_ctx_long_iget(ctx, loc, dst, 2, 3, N / 3, right);
    SHT_CHECK(loc[2] == sht_me * 1000 + 3 && loc[1] == 0, "%s: ctx iget", where);
    shmem_barrier_all();
    shmem_ctx_long_iput(ctx, dst, src, 2, 1, N / 2, right);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    SHT_CHECK(dst[4] == left * 1000 + 2 && dst[5] == left * 1000 + 5, "%s: ctx iput %ld %ld",
              where, dst[4], dst[5]);
    /* atomics through the context */
    for (int pe = 0; pe < sht_npes; pe++) {
        shmem_ctx_long_atomic_add(ctx, ctr, 2, pe);
        shmem_ctx_long_atomic_inc(ctx, ctr, pe);
        (void)shmem_ctx_long_atomic_fetch_add(ctx, ctr, 1, pe);
        (void)shmem_ctx_long_atomic_fetch_inc(ctx, ctr, pe);
    }
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    SHT_CHECK(*ctr == 5L * sht_npes, "%s: ctx atomics %ld", where, *ctr);
    shmem_barrier_all();
    long old = shmem_ctx_long_atomic_swap(ctx, ctr, 1, right);
    shmem_barrier_all();
    SHT_CHECK(old == 5L * sht_npes && *ctr == 1, "%s: ctx swap %ld %ld", where, old, *ctr);
    shmem_barrier_all();
    old = shmem_ctx_long_atomic_compare_swap(ctx, ctr, 1, 9, right);
    shmem_ctx_long_atomic_set(ctx, flag, 7, right);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    SHT_CHECK(old == 1 && *ctr == 9 && shmem_ctx_long_atomic_fetch(ctx, flag, sht_me) == 7,
              "%s: ctx cswap/set/fetch %ld %ld %ld", where, old, *ctr, *flag);
    shmem_barrier_all();
}

int main(void)
{
    sht_init("t_ctx");
    use_ctx(SHMEM_CTX_DEFAULT, gdst, &gflag, &gctr, "default ctx, global");
    long *hd = shmem_malloc(sizeof(long) * N), *hf = shmem_malloc(sizeof(long)),
         *hc = shmem_malloc(sizeof(long));
    use_ctx(SHMEM_CTX_DEFAULT, hd, hf, hc, "default ctx, heap");

    long opts[] = {0, SHMEM_CTX_PRIVATE, SHMEM_CTX_SERIALIZED, SHMEM_CTX_NOSTORE,
                   SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED};
    for (int k = 0; k < 5; k++) {
        shmem_ctx_t ctx;
        int rc = shmem_ctx_create(opts[k], &ctx);
        SHT_CHECK(rc == 0, "ctx_create(%ld) = %d", opts[k], rc);
        if (rc != 0)
            continue;
        use_ctx(ctx, gdst, &gflag, &gctr, "created ctx, global");
        use_ctx(ctx, hd, hf, hc, "created ctx, heap");
        shmem_ctx_destroy(ctx);
    }
    /* sixteen at once */
    shmem_ctx_t many[16];
    int made = 0;
    for (int k = 0; k < 16; k++)
        if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &many[made]) == 0)
            made++;
    SHT_CHECK(made >= 1, "no context could be made");
    for (int k = 0; k < made; k++)
        shmem_ctx_long_atomic_inc(many[k], hc, 0);
    for (int k = 0; k < made; k++)
        shmem_ctx_quiet(many[k]);
    shmem_barrier_all();
    shmem_barrier_all();
    for (int k = 0; k < made; k++)
        shmem_ctx_destroy(many[k]);
    shmem_barrier_all();
#if SHT_15
    {
        shmem_team_t team = SHMEM_TEAM_INVALID;
        SHT_CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &team) == 0 && team == SHMEM_TEAM_WORLD,
                  "ctx_get_team(default) is world");
        SHT_CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &team) != 0 && team == SHMEM_TEAM_INVALID,
                  "ctx_get_team(invalid)");
        shmem_ctx_t tc;
        SHT_CHECK(shmem_team_create_ctx(SHMEM_TEAM_WORLD, 0, &tc) == 0, "team_create_ctx(world)");
        use_ctx(tc, hd, hf, hc, "world team ctx, heap");
        team = SHMEM_TEAM_INVALID;
        SHT_CHECK(shmem_ctx_get_team(tc, &team) == 0 && team == SHMEM_TEAM_WORLD,
                  "ctx_get_team(team ctx)");
        shmem_ctx_destroy(tc);
        /* destroying SHMEM_CTX_INVALID is no operation */
        shmem_ctx_destroy(SHMEM_CTX_INVALID);
    }
#endif
    shmem_free(hc);
    shmem_free(hf);
    shmem_free(hd);
    return sht_end();
}
