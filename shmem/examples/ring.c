/*
 * ring: a token goes once round the ring of PEs. PE 0 starts it; each PE
 * waits for the token in its symmetric variable, adds its number and puts
 * it to the next PE; PE 0 checks that the token came back as the sum of all
 * PE numbers. Exit status 1 on a wrong token.
 *   oshcc -o ring ring.c && oshrun -np 4 ./ring
 */
#include <shmem.h>
#include <stdio.h>

static long token = -1; /* symmetric: static data */

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), next = (me + 1) % n;
    int rc = 0;

    if (me == 0) {
        shmem_long_p(&token, 0, next);
        if (n > 1) {
            shmem_long_wait_until(&token, SHMEM_CMP_NE, -1);
        }
        long want = (long)n * (n - 1) / 2;
        printf("ring: token came back to PE 0 as %ld (want %ld) after %d PEs\n", token, want, n);
        rc = token != want;
    } else {
        shmem_long_wait_until(&token, SHMEM_CMP_NE, -1);
        shmem_long_p(&token, token + me, next);
    }
    shmem_barrier_all();
    shmem_finalize();
    return rc;
}
