/*
 * bad_input: one misuse of the collectives per run (the mode is argv[1]);
 * bad_input.sh checks that each ends the job with status 1 and a message
 * naming the call. "ok" is the control: no misuse, status 0.
 */
#include <string.h>

#include <shmem.h>

static long gsync[SHMEM_SYNC_SIZE];

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    shmem_init();
    int n = shmem_n_pes();
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
        gsync[i] = SHMEM_SYNC_VALUE;
    long *heap = shmem_calloc(16, sizeof(long));
    long local[16] = {0}; /* on the stack: not symmetric */
    shmem_barrier_all();
    if (strcmp(mode, "root") == 0)
        shmem_long_broadcast(SHMEM_TEAM_WORLD, heap, heap + 8, 4, n); /* root out of range */
    else if (strcmp(mode, "sym") == 0)
        shmem_long_sum_reduce(SHMEM_TEAM_WORLD, local, heap, 4);
    else if (strcmp(mode, "team") == 0)
        shmem_team_sync((shmem_team_t)local); /* not a team */
    else if (strcmp(mode, "destroyed") == 0) {
        shmem_team_t t;
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t);
        shmem_team_destroy(t);
        shmem_long_fcollect(t, heap + 8, heap, 1);
    } else if (strcmp(mode, "invalid") == 0)
        shmem_long_fcollect(SHMEM_TEAM_INVALID, heap + 8, heap, 1);
    else if (strcmp(mode, "aset") == 0)
        shmem_barrier(0, 0, n + 1, gsync); /* reaches PE n */
    else if (strcmp(mode, "psync") == 0)
        shmem_barrier(0, 0, n, local);
    else if (strcmp(mode, "lock") == 0)
        shmem_set_lock(local);
    else if (strcmp(mode, "unlocked") == 0)
        shmem_clear_lock(heap);
    else if (strcmp(mode, "world") == 0)
        shmem_team_destroy(SHMEM_TEAM_WORLD);
    shmem_barrier_all();
    shmem_free(heap);
    shmem_finalize();
    return 0;
}
