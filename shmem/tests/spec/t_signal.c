/*
 * t_signal: 1.5 put-with-signal: shmem_putmem_signal, typed
 * shmem_TYPE_put_signal and the sized forms, their _nbi, ctx forms, with
 * SHMEM_SIGNAL_SET and SHMEM_SIGNAL_ADD; shmem_signal_wait_until (every
 * comparison) and shmem_signal_fetch; data must be in place when the
 * signal is seen. Global and heap data and signal words.
 * Spec: 1.5 only.
 */
#include "shtest.h"

#define N 1024
#define MAXPE 64
static long gdata[MAXPE * 4];
static uint64_t gsig;
static unsigned char gbytes[N];

static void run(long *data, uint64_t *sig, unsigned char *bytes, const char *where)
{
    int n = sht_npes, me = sht_me, right = (me + 1) % n, left = (me + n - 1) % n;
    unsigned char src[N];
    for (int i = 0; i < N; i++)
        src[i] = (unsigned char)(me * 5 + i);
    *sig = 0;
    memset(bytes, 0, N);
    shmem_barrier_all();
    /* SET: putmem_signal to the right; wait for ours from the left */
    shmem_putmem_signal(bytes, src, N, sig, 1, SHMEM_SIGNAL_SET, right);
    uint64_t s = shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 1);
    SHT_CHECK(s == 1, "%s signal_wait_until returned %llu", where, (unsigned long long)s);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += bytes[i] != (unsigned char)(left * 5 + i);
    SHT_CHECK(bad == 0, "%s putmem_signal SET: %d bytes stale", where, bad);
    SHT_CHECK(shmem_signal_fetch(sig) == 1, "%s signal_fetch", where);
    shmem_barrier_all();

    /* ADD: every PE puts its slot into every PE and adds 1; wait for n */
    *sig = 0;
    for (int i = 0; i < n; i++)
        data[i] = -1;
    shmem_barrier_all();
    for (int pe = 0; pe < n; pe++) {
        long v = 100 + me;
        if (pe % 2)
            shmem_long_put_signal(&data[me], &v, 1, sig, 1, SHMEM_SIGNAL_ADD, pe);
        else
            shmem_long_put_signal_nbi(&data[me], &v, 1, sig, 1, SHMEM_SIGNAL_ADD, pe);
    }
    shmem_quiet();
    s = shmem_signal_wait_until(sig, SHMEM_CMP_GE, (uint64_t)n);
    SHT_CHECK(s == (uint64_t)n, "%s ADD signal %llu", where, (unsigned long long)s);
    for (int i = 0; i < n; i++)
        SHT_CHECK(data[i] == 100 + i, "%s put_signal ADD data[%d] %ld", where, i, data[i]);
    shmem_barrier_all();

    /* every comparison: the left PE raises the signal step by step, we ack */
    static const int cmps[] = {SHMEM_CMP_NE, SHMEM_CMP_GT, SHMEM_CMP_GE, SHMEM_CMP_LT,
                               SHMEM_CMP_LE, SHMEM_CMP_EQ};
    /* no step's condition holds for the previous step's value */
    static const uint64_t vals[] = {5, 9, 10, 2, 1, 40};
    static const uint64_t cv[] = {0, 8, 10, 3, 1, 40};
    static int ack;
    *sig = 0;
    ack = 0;
    shmem_barrier_all();
    for (int k = 0; k < 6; k++) {
        shmem_int_wait_until(&ack, SHMEM_CMP_GE, k);
        uint32_t word = (uint32_t)(k * 1000 + me);
        if (k % 2)
            shmem_uint32_put_signal((uint32_t *)&data[2 * MAXPE], &word, 1, sig, vals[k],
                                    SHMEM_SIGNAL_SET, right);
        else
            shmem_put32_signal_nbi(&data[2 * MAXPE], &word, 1, sig, vals[k], SHMEM_SIGNAL_SET,
                                   right);
        s = shmem_signal_wait_until(sig, cmps[k], cv[k]);
        SHT_CHECK(s == vals[k], "%s step %d: signal %llu", where, k, (unsigned long long)s);
        SHT_CHECK(*(uint32_t *)&data[2 * MAXPE] == (uint32_t)(k * 1000 + left),
                  "%s step %d: data %u", where, k, *(uint32_t *)&data[2 * MAXPE]);
        shmem_int_p(&ack, k + 1, left);
    }
    shmem_barrier_all();

    /* a context's put_signal */
    shmem_ctx_t ctx;
    if (shmem_ctx_create(0, &ctx) == 0) {
        *sig = 0;
        shmem_barrier_all();
        long v = 7 + me;
        shmem_ctx_long_put_signal(ctx, &data[0], &v, 1, sig, 3, SHMEM_SIGNAL_SET, right);
        shmem_ctx_quiet(ctx);
        shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 3);
        SHT_CHECK(data[0] == 7 + left, "%s ctx put_signal %ld", where, data[0]);
        shmem_barrier_all();
        shmem_ctx_destroy(ctx);
    }
    shmem_barrier_all();
}

int main(void)
{
    sht_init("t_signal");
    if (sht_npes > MAXPE) {
        sht_skip("everything", "more than 64 PEs");
        return sht_end();
    }
    run(gdata, &gsig, gbytes, "global");
    long *hd = shmem_malloc(sizeof gdata);
    uint64_t *hs = shmem_malloc(sizeof(uint64_t));
    unsigned char *hb = shmem_malloc(N);
    run(hd, hs, hb, "heap");
    run(gdata, hs, hb, "heap signal, global data");
    shmem_free(hb);
    shmem_free(hs);
    shmem_free(hd);
    return sht_end();
}
