/*
 * hello: every PE says hello with its number, the PE count and the
 * library's version and name.
 *   oshcc -o hello hello.c && oshrun -np 4 ./hello
 */
#include <shmem.h>
#include <stdio.h>

int main(void)
{
    char name[SHMEM_MAX_NAME_LEN];
    int major, minor;

    shmem_init();
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    printf("Hello from PE %d of %d (OpenSHMEM %d.%d, %s)\n", shmem_my_pe(), shmem_n_pes(),
           major, minor, name);
    shmem_finalize();
    return 0;
}
