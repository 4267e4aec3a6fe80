/* The library must read OPENFAM_* variables set by the host with setenv()
 * after it was loaded (Go's runtime copies the environment at load time). */
#include <openfam.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    char dir[] = "/tmp/ofam-environ-XXXXXX";
    char shm[300], meta[300];
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    snprintf(shm, sizeof shm, "%s/shm", dir);
    snprintf(meta, sizeof meta, "%s/meta", dir);
    setenv("OPENFAM_DATA_DIR", dir, 1);
    setenv("OPENFAM_SHM_DIR", shm, 1);
    if (fam_initialize("default", NULL) != 0) {
        fprintf(stderr, "environ: fam_initialize: %s\n", fam_errmsg());
        return 1;
    }
    fam_region_t *r = fam_create_region("environ", 4096, 0600, NULL);
    int ok = r != NULL && access(meta, F_OK) == 0 && access(shm, F_OK) == 0;
    fam_finalize("default");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) { /* best effort */ }
    if (!ok) {
        fprintf(stderr, "environ: the store was not made where setenv() pointed (%s)\n", dir);
        return 1;
    }
    printf("environ: setenv() before fam_initialize is honoured\n");
    return 0;
}
