/*
 * t_init_thread: shmem_init_thread(SHMEM_THREAD_MULTIPLE) and
 * shmem_query_thread; when MULTIPLE is provided, four threads of every PE
 * put and fetch-add concurrently.
 * Spec: 1.4-compatible.
 */
#include "shtest.h"
#include <pthread.h>

#define NTHREADS 4
#define PER 200
static long slots[NTHREADS][PER];
static long counter;

static void *worker(void *arg)
{
    long t = (long)arg;
    int right = (sht_me + 1) % sht_npes;
    for (int i = 0; i < PER; i++) {
        shmem_long_p(&slots[t][i], sht_me * 100000 + t * 1000 + i, right);
        shmem_long_atomic_fetch_add(&counter, 1, 0);
    }
    shmem_quiet();
    return NULL;
}

int main(void)
{
    int provided = -1, queried = -2;
    int rc = shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    sht_started("t_init_thread");
    SHT_CHECK(rc == 0, "shmem_init_thread returned %d", rc);
    SHT_CHECK(provided == SHMEM_THREAD_SINGLE || provided == SHMEM_THREAD_FUNNELED ||
                  provided == SHMEM_THREAD_SERIALIZED || provided == SHMEM_THREAD_MULTIPLE,
              "provided %d", provided);
    shmem_query_thread(&queried);
    SHT_CHECK(queried == provided, "query_thread %d vs provided %d", queried, provided);
    if (provided != SHMEM_THREAD_MULTIPLE) {
        sht_skip("threads", "SHMEM_THREAD_MULTIPLE not provided");
        return sht_end();
    }
    shmem_barrier_all();
    pthread_t th[NTHREADS];
    for (long t = 0; t < NTHREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    shmem_barrier_all();
    int left = (sht_me + sht_npes - 1) % sht_npes;
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < PER; i++)
            SHT_CHECK(slots[t][i] == left * 100000 + t * 1000 + i, "slot[%d][%d] %ld", t,
                      i, slots[t][i]);
    if (sht_me == 0)
        SHT_CHECK(counter == (long)sht_npes * NTHREADS * PER, "counter %ld", counter);
    return sht_end();
}
