/* stale: a singleton (no launcher) names its FAM region after its process
 * id; one left by a dead process that had the same id must not stop
 * shmem_init. The program plants such a region itself before
 * shmem_init (under a launcher the name is the job's and it just runs). */
#include <openfam.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    if (getenv("FAMRUN_JOB") == NULL) {
        char name[64];
        snprintf(name, sizeof name, "shmem.pid-%ld", (long)getpid());
        if (fam_initialize("default", NULL) != 0 || fam_create_region(name, 1 << 20, 0600, NULL) == NULL ||
            fam_finalize("default") != 0) {
            fprintf(stderr, "stale: planting %s: %s\n", name, fam_errmsg());
            return 1;
        }
    }
    shmem_init();
    long *p = shmem_malloc(8);
    *p = 1;
    shmem_barrier_all();
    if (shmem_my_pe() == 0)
        printf("stale: %d PEs OK\n", shmem_n_pes());
    shmem_free(p);
    shmem_finalize();
    return 0;
}
