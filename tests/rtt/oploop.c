/* oploop - N small operations of one kind on an item of a volatile region,
 * the client program of tests/rtt-syscalls.sh and tests/rtt-instructions.sh:
 * they run it for two values of N and divide the difference of what they
 * count by the difference of N, so set-up costs cancel.
 *
 *   oploop get8|put8|get256|put256|fadd|addq|alloc|lookup|lookupr N
 */
#include <openfam.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    const char *op = argv[1];
    long n = atol(argv[2]);
    if (fam_initialize("rtt-oploop", NULL) != 0)
        return 1;
    char rname[64];
    snprintf(rname, sizeof rname, "rtt-oploop-%ld", (long)getpid());
    fam_region_attr_t attr = {FAM_REDUNDANCY_NONE, FAM_MEMORY_VOLATILE, FAM_INTERLEAVE_DEFAULT,
                              FAM_PERMISSION_DEFAULT};
    fam_region_t *r = fam_create_region(rname, 1 << 20, 0600, &attr);
    fam_desc_t *d = r ? fam_allocate("x", 4096, 0600, r) : NULL;
    if (d == NULL)
        return 1;
    static uint8_t buf[256];
    int64_t old;
    char name[64];
    for (long i = 0; i < n; i++) {
        int rc;
        if (!strcmp(op, "alloc")) {
            snprintf(name, sizeof name, "a%ld", i);
            fam_desc_t *a = fam_allocate(name, 1024, 0600, r);
            rc = a == NULL || fam_deallocate(a);
        } else if (!strcmp(op, "lookup")) {
            fam_desc_t *l = fam_lookup("x", rname);
            rc = l == NULL || fam_close(l);
        } else if (!strcmp(op, "lookupr")) {
            fam_region_t *l = fam_lookup_region(rname);
            rc = l == NULL || fam_close_region(l);
        } else if (!strcmp(op, "get8"))
            rc = fam_get_blocking(buf, d, (i & 7) * 8, 8);
        else if (!strcmp(op, "put8"))
            rc = fam_put_blocking(buf, d, (i & 7) * 8, 8);
        else if (!strcmp(op, "get256"))
            rc = fam_get_blocking(buf, d, 256, 256);
        else if (!strcmp(op, "put256"))
            rc = fam_put_blocking(buf, d, 256, 256);
        else if (!strcmp(op, "fadd"))
            rc = fam_fetch_add_int64(d, 1024, 1, &old);
        else if (!strcmp(op, "addq"))
            rc = fam_add_int64(d, 1024, 1) || fam_quiet();
        else
            return 2;
        if (rc)
            return 1;
    }
    fam_deallocate(d);
    fam_destroy_region(r);
    fam_finalize("rtt-oploop");
    return 0;
}
