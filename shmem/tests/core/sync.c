/* sync: point-to-point synchronization on memory peers write. Each PE
 * waits, with wait_until, for its left neighbour's put into a static
 * global and into a heap word; put_signal delivers data and a signal the
 * receiver waits for with signal_wait_until; wait_until_any/_some/_all
 * and test_* on arrays; strided iput/iget on globals; contexts; and the
 * pre-1.2 names. Exit status 1 on any mismatch. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

static long flag;            /* set by the left neighbour */
static int gdata[64];        /* strided target */
static uint64_t sig;         /* put_signal's signal word */
static long payload[8];
static long counter;
static int ivars[4];

static int fails;
#define CHECK(c, ...)                                                         \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "sync: PE %d line %d: ", shmem_my_pe(), __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
            fails++;                                                          \
        }                                                                     \
    } while (0)

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long *hflag = shmem_calloc(1, sizeof(long));
    CHECK(hflag != NULL && *hflag == 0, "shmem_calloc");

    /* Rounds of a token passed around the ring, through a global and a
     * heap word alternately: every PE waits on memory its neighbour
     * writes. */
    for (long round = 1; round <= 20; round++) {
        long *f = (round & 1) ? &flag : hflag;
        if (me == 0) {
            shmem_long_atomic_set(f, round, right);
            shmem_long_wait_until(f, SHMEM_CMP_EQ, round);
        } else {
            shmem_long_wait_until(f, SHMEM_CMP_GE, round);
            CHECK(*f == round, "round %ld: flag %ld", round, *f);
            shmem_long_p(f, round, right);
        }
    }
    shmem_barrier_all();

    /* put_signal: data then signal, waited for by the receiver. */
    long src[8];
    for (int i = 0; i < 8; i++)
        src[i] = me * 1000 + i;
    shmem_long_put_signal(payload, src, 8, &sig, 1, SHMEM_SIGNAL_ADD, right);
    uint64_t s = shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1);
    CHECK(s == 1, "signal %llu", (unsigned long long)s);
    for (int i = 0; i < 8; i++)
        CHECK(payload[i] == left * 1000 + i, "payload[%d] = %ld", i, payload[i]);
    CHECK(shmem_signal_fetch(&sig) == 1, "signal_fetch");
    shmem_barrier_all();

    /* wait_until_any/some/all on an int array the neighbour writes. */
    shmem_int_p(&ivars[2], 7, right);
    size_t idx = shmem_int_wait_until_any(ivars, 4, NULL, SHMEM_CMP_EQ, 7);
    CHECK(idx == 2, "wait_until_any index %zu", idx);
    size_t got[4];
    size_t k = shmem_int_test_some(ivars, 4, got, NULL, SHMEM_CMP_NE, 0);
    CHECK(k == 1 && got[0] == 2, "test_some %zu", k);
    int status[4] = {1, 1, 0, 1};
    shmem_int_wait_until_all(ivars, 4, status, SHMEM_CMP_EQ, 7);
    CHECK(shmem_int_test(&ivars[0], SHMEM_CMP_EQ, 0), "test ivars[0]");
    CHECK(shmem_int_test_any(ivars, 4, status, SHMEM_CMP_EQ, 1) == SIZE_MAX, "test_any none");
    shmem_barrier_all();

    /* Strided: every other int of gdata on the right neighbour. */
    int st[16];
    for (int i = 0; i < 16; i++)
        st[i] = me * 100 + i;
    shmem_int_iput(gdata, st, 2, 1, 16, right);
    shmem_barrier_all();
    for (int i = 0; i < 32; i++)
        CHECK(gdata[i] == ((i & 1) ? 0 : left * 100 + i / 2), "gdata[%d] = %d", i, gdata[i]);
    int back[16];
    shmem_int_iget(back, gdata, 1, 2, 16, right);
    for (int i = 0; i < 16; i++)
        CHECK(back[i] == me * 100 + i, "iget[%d] = %d", i, back[i]);

    /* Contexts, and the atomics on a global through one. */
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "ctx_create");
    shmem_ctx_long_atomic_add(ctx, &counter, me + 1, 0);
    shmem_ctx_quiet(ctx);
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    if (me == 0)
        CHECK(counter == (long)n * (n + 1) / 2, "counter %ld", counter);

    /* Pre-1.2 names. */
    CHECK(_my_pe() == me && _num_pes() == n, "_my_pe/_num_pes");
    long *old = shmalloc(64);
    CHECK(old != NULL, "shmalloc");
    shmem_long_finc(old, right);
    shmem_barrier_all();
    CHECK(*old == 1, "finc %ld", *old);
    shfree(old);

    /* The address of a global on a peer: non-NULL where memory is shared. */
    void *p = shmem_ptr(&flag, right);
    CHECK(p == NULL || shmem_addr_accessible(&flag, right), "shmem_ptr/addr_accessible");
    CHECK(shmem_ptr(&flag, me) == &flag, "shmem_ptr to self");

    shmem_free(hflag);
    if (me == 0 && fails == 0)
        printf("sync: %d PEs OK%s\n", n, p ? " (mapped)" : " (data path)");
    shmem_finalize();
    return fails != 0;
}
