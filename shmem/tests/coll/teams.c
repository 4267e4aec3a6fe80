/*
 * teams: SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED queries; split_strided
 * (evens, odds, a single PE with stride 0, a nested split) with members
 * and non-members checked, bad triplets refused alike on every PE;
 * split_2d rows and columns; translate_pe both ways and across sibling
 * teams; get_config; create_ctx; team_ptr; collectives (sync, broadcast,
 * fcollect, reduce) on the new teams; and destroy/re-create many more
 * times than there are team slots (slots come back).
 */
#include "check.h"

static long gbuf[64];

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_team_t W = SHMEM_TEAM_WORLD;

    CHECK(shmem_team_my_pe(W) == me, "world my_pe");
    CHECK(shmem_team_n_pes(W) == n, "world n_pes");
    CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1, "invalid my_pe");
    CHECK(shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1, "invalid n_pes");
    int shn = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    CHECK(shn == n || shn == 1, "shared n_pes %d", shn);
    int shme = shmem_team_my_pe(SHMEM_TEAM_SHARED);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_SHARED, shme, W) == me, "shared -> world");
    long *heap = shmem_malloc(64 * sizeof(long));
    if (shn == n)
        for (int p = 0; p < n; p++)
            CHECK(shmem_team_ptr(SHMEM_TEAM_SHARED, heap, p) != NULL, "team_ptr shared %d", p);
    CHECK(shmem_team_ptr(W, heap, me) == heap, "team_ptr self");
    CHECK(shmem_team_ptr(W, heap, n) == NULL, "team_ptr out of range");

    /* Evens and odds. */
    shmem_team_config_t cfg = {.num_contexts = 3};
    shmem_team_t evens, odds;
    CHECK(shmem_team_split_strided(W, 0, 2, (n + 1) / 2, &cfg, SHMEM_TEAM_NUM_CONTEXTS, &evens) == 0, "split evens");
    int rc = shmem_team_split_strided(W, 1, 2, n / 2, NULL, 0, &odds);
    if (n == 1)
        CHECK(rc != 0 && odds == SHMEM_TEAM_INVALID, "size-0 split must fail");
    else
        CHECK(rc == 0, "split odds");
    if (me % 2 == 0) {
        CHECK(evens != SHMEM_TEAM_INVALID, "even PE got no team");
        CHECK(odds == SHMEM_TEAM_INVALID, "even PE in odds");
        CHECK(shmem_team_my_pe(evens) == me / 2, "evens my_pe %d", shmem_team_my_pe(evens));
        CHECK(shmem_team_n_pes(evens) == (n + 1) / 2, "evens n_pes");
        shmem_team_config_t got = {0};
        CHECK(shmem_team_get_config(evens, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 3,
              "get_config %d", got.num_contexts);
        for (int k = 0; k < shmem_team_n_pes(evens); k++) {
            CHECK(shmem_team_translate_pe(evens, k, W) == 2 * k, "evens %d -> world", k);
            CHECK(shmem_team_translate_pe(W, 2 * k, evens) == k, "world -> evens %d", k);
        }
        CHECK(shmem_team_translate_pe(W, 1, evens) == -1, "odd PE is not in evens");
        CHECK(shmem_team_translate_pe(evens, n, W) == -1, "evens index out of range");
        shmem_ctx_t ctx;
        CHECK(shmem_team_create_ctx(evens, 0, &ctx) == 0, "create_ctx");
        shmem_ctx_destroy(ctx);
        /* A collective on the team: broadcast from its last member. */
        int root = shmem_team_n_pes(evens) - 1;
        for (int i = 0; i < 64; i++)
            heap[i] = me * 100 + i, gbuf[i] = -1;
        shmem_team_sync(evens);
        shmem_long_broadcast(evens, gbuf, heap, 64, root);
        for (int i = 0; i < 64; i++)
            CHECK(gbuf[i] == 2 * root * 100 + i, "evens broadcast [%d] = %ld", i, gbuf[i]);
        /* Nested: every other member of evens (world PEs 0, 4, 8, ...). */
        shmem_team_t quarter;
        int qsize = (shmem_team_n_pes(evens) + 1) / 2;
        CHECK(shmem_team_split_strided(evens, 0, 2, qsize, NULL, 0, &quarter) == 0, "nested split");
        if (me % 4 == 0) {
            CHECK(shmem_team_my_pe(quarter) == me / 4, "quarter my_pe");
            CHECK(shmem_team_translate_pe(quarter, qsize - 1, W) == 4 * (qsize - 1), "quarter -> world");
            long v = me + 1, sum = 0;
            heap[0] = v;
            shmem_team_sync(quarter);
            shmem_long_sum_reduce(quarter, &heap[1], &heap[0], 1);
            for (int k = 0; k < qsize; k++)
                sum += 4 * k + 1;
            CHECK(heap[1] == sum, "quarter sum %ld want %ld", heap[1], sum);
            shmem_team_destroy(quarter);
        } else {
            CHECK(quarter == SHMEM_TEAM_INVALID, "not in quarter");
        }
        shmem_team_destroy(evens);
    } else {
        CHECK(evens == SHMEM_TEAM_INVALID, "odd PE in evens");
        CHECK(shmem_team_my_pe(odds) == me / 2, "odds my_pe");
        CHECK(shmem_team_translate_pe(odds, 0, W) == 1, "odds 0 -> world");
        for (int i = 0; i < 64; i++)
            heap[i] = me;
        shmem_team_sync(odds);
        shmem_long_fcollect(odds, gbuf, heap, 1);
        for (int k = 0; k < n / 2; k++)
            CHECK(gbuf[k] == 2 * k + 1, "odds fcollect [%d] = %ld", k, gbuf[k]);
        shmem_team_destroy(odds);
    }
    shmem_barrier_all();

    /* Bad triplets: the same non-zero answer everywhere, no team. */
    shmem_team_t bad = W;
    CHECK(shmem_team_split_strided(W, 0, 1, n + 1, NULL, 0, &bad) != 0 && bad == SHMEM_TEAM_INVALID, "size > n");
    bad = W;
    CHECK(shmem_team_split_strided(W, n, 1, 1, NULL, 0, &bad) != 0 && bad == SHMEM_TEAM_INVALID, "start = n");
    bad = W;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &bad) != 0 && bad == SHMEM_TEAM_INVALID,
          "invalid parent");
    /* A team of one PE, stride 0. */
    shmem_team_t last;
    CHECK(shmem_team_split_strided(W, n - 1, 0, 1, NULL, 0, &last) == 0, "single");
    CHECK((me == n - 1) == (last != SHMEM_TEAM_INVALID), "single membership");
    if (last != SHMEM_TEAM_INVALID) {
        CHECK(shmem_team_n_pes(last) == 1 && shmem_team_my_pe(last) == 0, "single team");
        shmem_team_sync(last);
        shmem_team_destroy(last);
    }

    /* 2-D: rows of 2 (x) and columns (y). */
    shmem_team_t xt, yt;
    int xr = n >= 2 ? 2 : 1;
    CHECK(shmem_team_split_2d(W, xr, NULL, 0, &xt, NULL, 0, &yt) == 0, "split_2d");
    int row = me / xr, col = me % xr;
    int xsize = (n - row * xr) < xr ? n - row * xr : xr;
    int ysize = (n - col + xr - 1) / xr;
    CHECK(shmem_team_my_pe(xt) == col && shmem_team_n_pes(xt) == xsize, "x team %d/%d", shmem_team_my_pe(xt),
          shmem_team_n_pes(xt));
    CHECK(shmem_team_my_pe(yt) == row && shmem_team_n_pes(yt) == ysize, "y team %d/%d", shmem_team_my_pe(yt),
          shmem_team_n_pes(yt));
    CHECK(shmem_team_translate_pe(xt, 0, W) == row * xr, "x 0 -> world");
    CHECK(shmem_team_translate_pe(yt, ysize - 1, W) == (ysize - 1) * xr + col, "y last -> world");
    CHECK(shmem_team_translate_pe(xt, col, yt) == row, "x -> y (self)");
    heap[0] = me;
    shmem_team_sync(yt);
    shmem_long_fcollect(yt, &heap[1], &heap[0], 1);
    for (int k = 0; k < ysize; k++)
        CHECK(heap[1 + k] == k * xr + col, "y fcollect [%d] = %ld", k, heap[1 + k]);
    shmem_team_sync(xt);
    long mx = 0;
    heap[40] = me;
    shmem_team_sync(xt);
    shmem_long_max_reduce(xt, &heap[41], &heap[40], 1);
    mx = row * xr + xsize - 1;
    CHECK(heap[41] == mx, "x max %ld want %ld", heap[41], mx);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);

    /* Slots come back: many more create/destroy rounds than slots. */
    for (int r = 0; r < 100; r++) {
        shmem_team_t t;
        CHECK(shmem_team_split_strided(W, 0, 1, n, NULL, 0, &t) == 0, "round %d split", r);
        heap[0] = r;
        shmem_team_sync(t);
        shmem_long_broadcast(t, &heap[2], &heap[0], 1, r % n);
        CHECK(heap[2] == r, "round %d broadcast", r);
        shmem_team_destroy(t);
    }

    shmem_free(heap);
    passed("teams");
    shmem_finalize();
    return 0;
}
