/*
 * t_global_exit: shmem_global_exit(status) from one PE ends the whole job
 * with that status while the other PEs are blocked in a wait that never
 * completes. The harness expects the job's exit status to be 7 (argv[1]
 * overrides) and "t_global_exit: PASS" never to be printed.
 * Spec: 1.4-compatible.
 */
#include "shtest.h"

static long never;

int main(int argc, char **argv)
{
    int status = argc > 1 ? atoi(argv[1]) : 7;
    sht_init("t_global_exit");
    shmem_barrier_all();
    if (sht_me == sht_npes - 1) {
        fprintf(stderr, "PE %d: calling shmem_global_exit(%d)\n", sht_me, status);
        shmem_global_exit(status);
        fprintf(stderr, "PE %d: shmem_global_exit returned\n", sht_me);
        return 99;
    }
    shmem_long_wait_until(&never, SHMEM_CMP_NE, 0);
    printf("t_global_exit: PASS should never print\n");
    return 98;
}
