/*
 * t_team: 1.5 teams: SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED (one host:
 * every PE), team_my_pe/n_pes, split_strided (evens, odds, 1..n-1, a
 * single PE, a split of a split), split_2d (several x ranges), translate_pe
 * both ways and to a team the PE is not in, get_config with
 * SHMEM_TEAM_NUM_CONTEXTS, team_sync, team_create_ctx with RMA and AMO in
 * team PE numbers, destroy; SHMEM_TEAM_INVALID handling.
 * Run with 2, 3 and 4 PEs. Spec: 1.5 only.
 */
#include "shtest.h"

static long gword[64];

/* Checks a team that should hold world PEs start + i*stride, i < size. */
static void check_team_body(shmem_team_t t, int start, int stride, int size, const char *what)
{
    int me = sht_me;
    int d = me - start;
    int idx = (d >= 0 && d % stride == 0 && d / stride < size) ? d / stride : -1;
    if (idx < 0) {
        SHT_CHECK(t == SHMEM_TEAM_INVALID, "%s: a non-member got a team", what);
        SHT_CHECK(shmem_team_my_pe(t) == -1 && shmem_team_n_pes(t) == -1,
                  "%s: my_pe/n_pes of SHMEM_TEAM_INVALID must be -1", what);
        return;
    }
    SHT_CHECK(t != SHMEM_TEAM_INVALID, "%s: a member got SHMEM_TEAM_INVALID", what);
    if (t == SHMEM_TEAM_INVALID)
        return;
    SHT_CHECK(shmem_team_my_pe(t) == idx, "%s: team_my_pe %d want %d", what,
              shmem_team_my_pe(t), idx);
    SHT_CHECK(shmem_team_n_pes(t) == size, "%s: team_n_pes %d want %d", what,
              shmem_team_n_pes(t), size);
    for (int i = 0; i < size; i++) {
        int w = shmem_team_translate_pe(t, i, SHMEM_TEAM_WORLD);
        SHT_CHECK(w == start + i * stride, "%s: translate %d -> world %d want %d", what, i, w,
                  start + i * stride);
        SHT_CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, start + i * stride, t) == i,
                  "%s: translate world %d back", what, start + i * stride);
    }
    SHT_CHECK(shmem_team_translate_pe(t, size, SHMEM_TEAM_WORLD) == -1,
              "%s: translate of an index past the team must be -1", what);
    /* a world PE outside the team translates to -1 */
    for (int w = 0; w < sht_npes; w++) {
        int dd = w - start;
        int in = dd >= 0 && dd % stride == 0 && dd / stride < size;
        if (!in)
            SHT_CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, w, t) == -1,
                      "%s: world %d is not in the team", what, w);
    }
    SHT_CHECK(shmem_team_sync(t) == 0, "%s: team_sync", what);

    /* a context on the team: PE numbers are team indices */
    shmem_ctx_t ctx;
    if (shmem_team_create_ctx(t, 0, &ctx) == 0) {
        int right = (idx + 1) % size, left = (idx + size - 1) % size;
        gword[0] = -1;
        gword[1] = 0;
        shmem_team_sync(t);
        shmem_ctx_long_p(ctx, &gword[0], 1000 + idx, right);
        shmem_ctx_long_atomic_add(ctx, &gword[1], idx + 1, 0);
        shmem_ctx_quiet(ctx);
        shmem_team_sync(t);
        SHT_CHECK(gword[0] == 1000 + left, "%s: team ctx p: %ld want %d", what, gword[0],
                  1000 + left);
        if (idx == 0)
            SHT_CHECK(gword[1] == (long)size * (size + 1) / 2, "%s: team ctx add: %ld", what,
                      gword[1]);
        shmem_team_t back = SHMEM_TEAM_INVALID;
        SHT_CHECK(shmem_ctx_get_team(ctx, &back) == 0 && back == t, "%s: ctx_get_team", what);
        shmem_team_sync(t);
        shmem_ctx_destroy(ctx);
    } else {
        SHT_CHECK(0, "%s: team_create_ctx failed", what);
    }
}

/* Every PE calls it: the barriers keep one team's checks (which write
 * gword on members) apart from the next team's. */
static void check_team(shmem_team_t t, int start, int stride, int size, const char *what)
{
    shmem_barrier_all();
    check_team_body(t, start, stride, size, what);
    shmem_barrier_all();
}

int main(void)
{
    sht_init("t_team");
    int n = sht_npes, me = sht_me;
    SHT_CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == n,
              "world team");
    /* every PE of this run is on one host */
    SHT_CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) == n && shmem_team_my_pe(SHMEM_TEAM_SHARED) == me,
              "shared team %d/%d", shmem_team_my_pe(SHMEM_TEAM_SHARED),
              shmem_team_n_pes(SHMEM_TEAM_SHARED));
    SHT_CHECK(shmem_team_translate_pe(SHMEM_TEAM_SHARED, me, SHMEM_TEAM_WORLD) == me,
              "translate shared -> world");
    shmem_team_config_t cfg;
    memset(&cfg, 0x55, sizeof cfg);
    SHT_CHECK(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &cfg) == 0,
              "get_config(world)");
    SHT_CHECK(shmem_team_sync(SHMEM_TEAM_WORLD) == 0, "team_sync(world)");
    check_team(SHMEM_TEAM_WORLD, 0, 1, n, "world");

    /* evens */
    shmem_team_config_t want = {.num_contexts = 2};
    shmem_team_t ev;
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, &want,
                                      SHMEM_TEAM_NUM_CONTEXTS, &ev);
    SHT_CHECK(rc == 0, "split_strided evens rc %d", rc);
    check_team(ev, 0, 2, (n + 1) / 2, "evens");
    if (ev != SHMEM_TEAM_INVALID) {
        shmem_team_config_t got = {.num_contexts = -1};
        SHT_CHECK(shmem_team_get_config(ev, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 &&
                      got.num_contexts == 2,
                  "get_config(evens).num_contexts %d", got.num_contexts);
    }
    /* odds */
    shmem_team_t od = SHMEM_TEAM_INVALID;
    if (n >= 2) {
        rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &od);
        SHT_CHECK(rc == 0, "split_strided odds rc %d", rc);
        check_team(od, 1, 2, n / 2, "odds");
    }
    /* 1..n-1 (odd size when n is even) */
    shmem_team_t tail = SHMEM_TEAM_INVALID;
    if (n >= 2) {
        rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, n - 1, NULL, 0, &tail);
        SHT_CHECK(rc == 0, "split_strided 1..n-1 rc %d", rc);
        check_team(tail, 1, 1, n - 1, "1..n-1");
    }
    /* a single PE: the last */
    shmem_team_t one;
    rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, 1, 1, NULL, 0, &one);
    SHT_CHECK(rc == 0, "split_strided single rc %d", rc);
    check_team(one, n - 1, 1, 1, "single");
    /* a split of the evens team: its members 1.. (world 2, 4, ...) */
    if ((n + 1) / 2 >= 2) {
        /* only the evens take part in the split (it is collective over
         * evens); every PE runs check_team, which has barriers */
        shmem_team_t sub = SHMEM_TEAM_INVALID;
        if (ev != SHMEM_TEAM_INVALID) {
            rc = shmem_team_split_strided(ev, 1, 1, (n + 1) / 2 - 1, NULL, 0, &sub);
            SHT_CHECK(rc == 0, "split of evens rc %d", rc);
        }
        check_team(sub, 2, 2, (n + 1) / 2 - 1, "evens[1..]");
        if (sub != SHMEM_TEAM_INVALID) {
            /* translate between two split teams: sub index 0 is evens index 1 */
            SHT_CHECK(shmem_team_translate_pe(sub, 0, ev) == 1, "translate sub -> evens");
            shmem_team_destroy(sub);
        }
    }
    shmem_barrier_all();

    /* split_2d with several x ranges */
    int xr[] = {1, 2, 3, n + 2};
    for (int k = 0; k < 4; k++) {
        int x = xr[k] > n ? n : xr[k];
        shmem_team_t xt, yt;
        rc = shmem_team_split_2d(SHMEM_TEAM_WORLD, xr[k], NULL, 0, &xt, NULL, 0, &yt);
        SHT_CHECK(rc == 0, "split_2d(%d) rc %d", xr[k], rc);
        if (rc != 0)
            continue;
        int row = me / x, col = me % x;
        int rowlen = (row + 1) * x <= n ? x : n - row * x;
        int collen = (n - col + x - 1) / x;
        char what[64];
        snprintf(what, sizeof what, "split_2d(%d) x", xr[k]);
        check_team(xt, row * x, 1, rowlen, what);
        snprintf(what, sizeof what, "split_2d(%d) y", xr[k]);
        check_team(yt, col, x, collen, what);
        shmem_team_destroy(xt);
        shmem_team_destroy(yt);
        shmem_barrier_all();
    }

    /* destroy; splitting SHMEM_TEAM_INVALID gives SHMEM_TEAM_INVALID */
    if (one != SHMEM_TEAM_INVALID)
        shmem_team_destroy(one);
    if (tail != SHMEM_TEAM_INVALID)
        shmem_team_destroy(tail);
    if (od != SHMEM_TEAM_INVALID)
        shmem_team_destroy(od);
    if (ev != SHMEM_TEAM_INVALID)
        shmem_team_destroy(ev);
    shmem_barrier_all();
    /* many create/destroy cycles must not exhaust the library */
    for (int i = 0; i < 100; i++) {
        shmem_team_t t;
        rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t);
        if (rc != 0) {
            SHT_CHECK(0, "split cycle %d rc %d", i, rc);
            break;
        }
        shmem_team_sync(t);
        shmem_team_destroy(t);
    }
    return sht_end();
}
