/* bad_input MODE: one misuse per run, each of which must end the whole
 * job with a message naming the call (run by bad_input.sh, which checks
 * the exit status and the message):
 *   pe      shmem_long_p to a PE out of range
 *   sym     shmem_putmem to a stack address (not symmetric)
 *   thread  shmem_init_thread with a level that does not exist
 *   free    shmem_free of a pointer not from shmem_malloc
 *   cmp     shmem_int_wait_until with an unknown comparison
 *   exit    shmem_global_exit(7) from the last PE while the others wait
 *           in a barrier: the job's status is 7
 *   exit0   shmem_global_exit(0) from the last PE while the others wait
 *           in a barrier: they end too (status 0, not the 5 they return
 *           if the barrier lets them through)
 *   fail    the last PE returns 3 from main while the others wait in a
 *           barrier: the job's status is 3
 *   ok      nothing wrong (the run must succeed) */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

static long x;
static int iv;

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    if (strcmp(mode, "thread") == 0) {
        int provided;
        shmem_init_thread(99, &provided);
        return 0;
    }
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long local[4] = {0};
    if (strcmp(mode, "pe") == 0 && me == 0)
        shmem_long_p(&x, 1, n);
    if (strcmp(mode, "sym") == 0 && me == 0)
        shmem_putmem(local, &x, sizeof x, n - 1);
    if (strcmp(mode, "free") == 0)
        shmem_free(local);
    if (strcmp(mode, "cmp") == 0)
        shmem_int_wait_until(&iv, 42, 0);
    if (strcmp(mode, "exit") == 0 && me == n - 1)
        shmem_global_exit(7);
    if (strcmp(mode, "fail") == 0 && me == n - 1)
        return 3;
    if (strcmp(mode, "exit0") == 0) {
        if (me == n - 1)
            shmem_global_exit(0);
        shmem_barrier_all();
        fprintf(stderr, "bad_input exit0: PE %d passed a barrier PE %d left by global_exit\n", me, n - 1);
        return 5;
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
