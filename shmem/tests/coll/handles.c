/*
 * handles: the predefined handles SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED and
 * SHMEM_CTX_DEFAULT are the library's own in a program linked as an
 * executable (PIE here; also built as C++ by oshc++). They were once
 * addresses of library objects, of which such a program gets copies
 * (copy relocations, frozen at the initial one-PE contents) while the
 * library keeps its own: shmem_ctx_get_team(SHMEM_CTX_DEFAULT) then
 * returned a handle unequal to the program's SHMEM_TEAM_WORLD. Checks the
 * identities, then team operations on the world and shared teams and
 * context operations on the default context through those handles; and
 * that outside shmem_init..shmem_finalize team queries answer -1.
 */
#include "check.h"

static long target[8]; /* static data: symmetric */

int main(void)
{
    /* Outside shmem_init..shmem_finalize no handle is a team: the queries
     * answer -1 (the collectives' state is set up by shmem_init itself,
     * not by a first use, which here would have aborted). */
    if (shmem_team_n_pes(SHMEM_TEAM_WORLD) != -1 || shmem_team_my_pe(SHMEM_TEAM_SHARED) != -1) {
        fprintf(stderr, "handles: team queries before shmem_init do not answer -1\n");
        return 1;
    }
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();

    /* The handles are the ones the library hands out. */
    shmem_team_t t = SHMEM_TEAM_INVALID;
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t) == 0, "ctx_get_team(SHMEM_CTX_DEFAULT)");
    CHECK(t == SHMEM_TEAM_WORLD, "the default context's team %p is not SHMEM_TEAM_WORLD %p", (void *)t,
          (void *)SHMEM_TEAM_WORLD);
    shmem_ctx_t wctx = SHMEM_CTX_INVALID;
    CHECK(shmem_team_create_ctx(SHMEM_TEAM_WORLD, 0, &wctx) == 0, "team_create_ctx(SHMEM_TEAM_WORLD)");
    t = SHMEM_TEAM_INVALID;
    CHECK(shmem_ctx_get_team(wctx, &t) == 0 && t == SHMEM_TEAM_WORLD, "a world context's team is SHMEM_TEAM_WORLD");
    shmem_ctx_t sctx = SHMEM_CTX_INVALID;
    CHECK(shmem_team_create_ctx(SHMEM_TEAM_SHARED, 0, &sctx) == 0, "team_create_ctx(SHMEM_TEAM_SHARED)");
    t = SHMEM_TEAM_INVALID;
    CHECK(shmem_ctx_get_team(sctx, &t) == 0 && t == SHMEM_TEAM_SHARED, "a shared context's team is SHMEM_TEAM_SHARED");
    CHECK(SHMEM_TEAM_WORLD != SHMEM_TEAM_SHARED && SHMEM_TEAM_WORLD != SHMEM_TEAM_INVALID, "distinct handles");

    /* Team operations through the handles see the job, not one PE. */
    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "world my_pe %d", shmem_team_my_pe(SHMEM_TEAM_WORLD));
    CHECK(shmem_team_n_pes(SHMEM_TEAM_WORLD) == n, "world n_pes %d", shmem_team_n_pes(SHMEM_TEAM_WORLD));
    int shn = shmem_team_n_pes(SHMEM_TEAM_SHARED), shme = shmem_team_my_pe(SHMEM_TEAM_SHARED);
    CHECK(shn == n || shn == 1, "shared n_pes %d", shn);
    CHECK(shme >= 0 && shme < shn, "shared my_pe %d", shme);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_SHARED, shme, SHMEM_TEAM_WORLD) == me, "shared -> world");
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, SHMEM_TEAM_SHARED) == shme, "world -> shared");
    shmem_team_config_t cfg;
    CHECK(shmem_team_get_config(SHMEM_TEAM_WORLD, 0, &cfg) == 0, "get_config(SHMEM_TEAM_WORLD)");
    CHECK(shmem_team_sync(SHMEM_TEAM_WORLD) == 0, "team_sync(SHMEM_TEAM_WORLD)");
    CHECK(shmem_team_sync(SHMEM_TEAM_SHARED) == 0, "team_sync(SHMEM_TEAM_SHARED)");

    long *src = (long *)shmem_malloc(4 * sizeof(long));
    long *dst = (long *)shmem_malloc(4 * sizeof(long));
    CHECK(src != NULL && dst != NULL, "shmem_malloc");
    for (int i = 0; i < 4; i++) {
        src[i] = 100 * (me + 1) + i;
        dst[i] = -1;
    }
    shmem_barrier_all();
    CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 4, n - 1) == 0, "broadcast on SHMEM_TEAM_WORLD");
    for (int i = 0; i < 4; i++)
        CHECK(dst[i] == 100L * n + i, "broadcast dst[%d] = %ld", i, dst[i]);
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 1) == 0, "sum_reduce on SHMEM_TEAM_WORLD");
    CHECK(dst[0] == 50L * n * (n + 1), "world sum %ld", dst[0]);
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_SHARED, dst, src, 1) == 0, "sum_reduce on SHMEM_TEAM_SHARED");
    CHECK(dst[0] == (shn == n ? 50L * n * (n + 1) : src[0]), "shared sum %ld", dst[0]);

    /* A split of SHMEM_TEAM_WORLD: the evens. */
    shmem_team_t evens = SHMEM_TEAM_INVALID;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &evens) == 0, "split world");
    CHECK((me % 2 == 0) == (evens != SHMEM_TEAM_INVALID), "evens membership");
    if (evens != SHMEM_TEAM_INVALID) {
        CHECK(shmem_team_my_pe(evens) == me / 2, "evens my_pe");
        CHECK(shmem_team_translate_pe(evens, shmem_team_my_pe(evens), SHMEM_TEAM_WORLD) == me, "evens -> world");
        shmem_team_destroy(evens);
    }

    /* Context operations on SHMEM_CTX_DEFAULT: puts, gets, atomics to
     * the right neighbour, ordered by the default context's quiet. */
    int right = (me + 1) % n, left = (me + n - 1) % n;
    shmem_ctx_long_p(SHMEM_CTX_DEFAULT, &target[0], 1000 + me, right);
    long v = 7 + me;
    shmem_ctx_long_put(SHMEM_CTX_DEFAULT, &target[1], &v, 1, right);
    shmem_ctx_long_atomic_add(SHMEM_CTX_DEFAULT, &target[2], 1, right);
    shmem_ctx_fence(SHMEM_CTX_DEFAULT);
    shmem_ctx_long_atomic_add(SHMEM_CTX_DEFAULT, &target[2], 2, right);
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
    shmem_barrier_all();
    CHECK(target[0] == 1000 + left, "p via SHMEM_CTX_DEFAULT: %ld", target[0]);
    CHECK(target[1] == 7 + left, "put via SHMEM_CTX_DEFAULT: %ld", target[1]);
    CHECK(target[2] == 3, "atomic adds via SHMEM_CTX_DEFAULT: %ld", target[2]);
    CHECK(shmem_ctx_long_g(SHMEM_CTX_DEFAULT, &target[0], right) == 1000 + me, "g via SHMEM_CTX_DEFAULT");
    long got = 0;
    shmem_ctx_long_get(SHMEM_CTX_DEFAULT, &got, &target[1], 1, right);
    CHECK(got == 7 + me, "get via SHMEM_CTX_DEFAULT: %ld", got);
    CHECK(shmem_ctx_long_atomic_fetch(SHMEM_CTX_DEFAULT, &target[2], right) == 3, "atomic_fetch via SHMEM_CTX_DEFAULT");
    shmem_barrier_all();

    /* The same through the world context made above: same PE numbers. */
    shmem_ctx_long_atomic_inc(wctx, &target[3], right);
    shmem_ctx_quiet(wctx);
    shmem_barrier_all();
    CHECK(target[3] == 1, "atomic_inc via a world context: %ld", target[3]);
    shmem_ctx_destroy(wctx);
    shmem_ctx_destroy(sctx);

    shmem_free(src);
    shmem_free(dst);
    passed("handles");
    shmem_finalize();
    if (shmem_team_n_pes(SHMEM_TEAM_WORLD) != -1 || shmem_team_my_pe(SHMEM_TEAM_WORLD) != -1) {
        fprintf(stderr, "handles: team queries after shmem_finalize do not answer -1\n");
        return 1;
    }
    return 0;
}
