/* hello: init, my_pe/n_pes, version and name, finalize. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int major, minor;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    if (me < 0 || me >= n || major != 1 || minor != 5 || strcmp(name, SHMEM_VENDOR_STRING) != 0) {
        fprintf(stderr, "hello: PE %d of %d, version %d.%d, name %s\n", me, n, major, minor, name);
        return 1;
    }
    printf("Hello from PE %d of %d (spec %d.%d, %s)\n", me, n, major, minor, name);
    shmem_finalize();
    return 0;
}
