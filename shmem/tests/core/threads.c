/* threads: SHMEM_THREAD_MULTIPLE is provided as asked, and four threads
 * of every PE doing atomics and puts at once lose nothing. */
#include <pthread.h>
#include <shmem.h>
#include <stdio.h>

#define NT 4
#define ITER 2000
static long counter;
static long slots[NT][ITER];

static void *work(void *arg)
{
    long t = (long)arg;
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (long i = 0; i < ITER; i++) {
        shmem_long_atomic_inc(&counter, 0);
        shmem_long_p(&slots[t][i], me * 100000 + t * ITER + i, (me + 1) % n);
    }
    shmem_quiet();
    return NULL;
}

int main(void)
{
    int provided = -1;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    int q = -1;
    shmem_query_thread(&q);
    int me = shmem_my_pe(), n = shmem_n_pes(), left = (me + n - 1) % n, bad = 0;
    if (provided != SHMEM_THREAD_MULTIPLE || q != provided) {
        fprintf(stderr, "threads: provided %d, query %d\n", provided, q);
        return 1;
    }
    pthread_t th[NT];
    for (long t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, work, (void *)t);
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    shmem_barrier_all();
    if (me == 0 && counter != (long)n * NT * ITER) {
        fprintf(stderr, "threads: counter %ld, want %d\n", counter, n * NT * ITER);
        bad = 1;
    }
    for (int t = 0; t < NT; t++)
        for (int i = 0; i < ITER; i++)
            if (slots[t][i] != left * 100000 + t * ITER + i) {
                fprintf(stderr, "threads: PE %d slot [%d][%d] = %ld\n", me, t, i, slots[t][i]);
                bad = 1;
                t = NT;
                break;
            }
    if (me == 0 && !bad)
        printf("threads: %d PEs x %d threads OK\n", n, NT);
    shmem_finalize();
    return bad;
}
