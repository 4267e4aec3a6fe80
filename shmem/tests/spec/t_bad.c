/*
 * t_bad: erroneous input must abort the job with a message on stderr that
 * names the call (never a silent wrong result). argv[1] picks the case;
 * the harness expects a non-zero job status and the call's name on
 * stderr:
 *   put-pe        shmem_long_put to PE n_pes             -> shmem_long_put
 *   p-negpe       shmem_int_p to PE -1                   -> shmem_int_p
 *   get-pe        shmem_getmem from PE n_pes + 5         -> shmem_getmem
 *   amo-pe        shmem_long_atomic_fetch_add to n_pes   -> shmem_long_atomic_fetch_add
 *   put-nonsym    shmem_putmem to a stack address        -> shmem_putmem
 *   get-nonsym    shmem_long_get from a malloc'ed block  -> shmem_long_get
 *   amo-nonsym    shmem_int_atomic_inc on a stack int    -> shmem_int_atomic_inc
 * Spec: 1.4-compatible (the message text is implementation-defined).
 */
#include "shtest.h"

static long gbuf[8];

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "put-pe";
    long stackbuf[8] = {0};
    int stackint = 0;
    long *heapbuf = malloc(64);
    sht_init("t_bad");
    shmem_barrier_all();
    /* only PE 0 errs; the others wait in a barrier the job never passes */
    if (sht_me == 0) {
        if (!strcmp(c, "put-pe"))
            shmem_long_put(gbuf, stackbuf, 4, sht_npes);
        else if (!strcmp(c, "p-negpe"))
            shmem_int_p(&sht_total_failures, 1, -1);
        else if (!strcmp(c, "get-pe"))
            shmem_getmem(stackbuf, gbuf, 8, sht_npes + 5);
        else if (!strcmp(c, "amo-pe"))
            (void)shmem_long_atomic_fetch_add(gbuf, 1, sht_npes);
        else if (!strcmp(c, "put-nonsym"))
            shmem_putmem(stackbuf, gbuf, 16, (sht_me + 1) % sht_npes);
        else if (!strcmp(c, "get-nonsym"))
            shmem_long_get(stackbuf, heapbuf, 4, (sht_me + 1) % sht_npes);
        else if (!strcmp(c, "amo-nonsym"))
            shmem_int_atomic_inc(&stackint, (sht_me + 1) % sht_npes);
        else {
            fprintf(stderr, "t_bad: unknown case %s\n", c);
            shmem_global_exit(2);
        }
        shmem_quiet();
        printf("t_bad: %s returned without an error\n", c);
        fflush(stdout);
        /* a wrong answer must still fail the job */
        shmem_global_exit(3);
    }
    shmem_barrier_all();
    free(heapbuf);
    return 0;
}
