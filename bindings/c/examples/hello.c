/*
 * hello.c - the smallest complete OpenFAM program in C.
 *
 * Creates a region, allocates a named data item in it, writes a greeting with
 * fam_put_blocking, reads it back with fam_get_blocking, bumps a counter with
 * an atomic, then removes what it made. With no configuration it runs on the
 * embedded store (no daemon needed).
 *
 * Build: make examples-c   Run: build/examples/hello
 */
#include <openfam.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Prints the library's view of the last failure and exits: an example should
 * show where to look when something goes wrong. */
static void die(const char *what)
{
    fprintf(stderr, "hello: %s failed: error %d: %s\n", what, fam_errcode(), fam_errmsg());
    exit(1);
}

int main(void)
{
    if (fam_initialize("hello", NULL) != 0)
        die("fam_initialize");

    /* The pid keeps two concurrent runs against a shared store apart. */
    char region_name[OPENFAM_NAME_MAX + 1];
    snprintf(region_name, sizeof region_name, "hello-%ld", (long)getpid());

    fam_region_t *region = fam_create_region(region_name, 1 << 20, 0600, NULL);
    if (region == NULL)
        die("fam_create_region");

    /* Layout of the item: a 64-byte greeting, then a 64-bit counter. */
    enum { TEXT_BYTES = 64, COUNTER_OFF = 64, ITEM_BYTES = 128 };
    fam_desc_t *item = fam_allocate("greeting", ITEM_BYTES, 0600, region);
    if (item == NULL)
        die("fam_allocate");

    char out[TEXT_BYTES] = "Hello, fabric-attached memory!";
    if (fam_put_blocking(out, item, 0, sizeof out) != 0)
        die("fam_put_blocking");

    char in[TEXT_BYTES] = {0};
    if (fam_get_blocking(in, item, 0, sizeof in) != 0)
        die("fam_get_blocking");
    printf("read back: %s\n", in);

    if (fam_set_int64(item, COUNTER_OFF, 40) != 0)
        die("fam_set_int64");
    int64_t old = 0;
    if (fam_fetch_add_int64(item, COUNTER_OFF, 2, &old) != 0)
        die("fam_fetch_add_int64");
    int64_t now = 0;
    if (fam_fetch_int64(item, COUNTER_OFF, &now) != 0)
        die("fam_fetch_int64");
    printf("counter: %" PRId64 " -> %" PRId64 "\n", old, now);

    /* A second handle found by name sees the same bytes. */
    fam_desc_t *again = fam_lookup("greeting", region_name);
    if (again == NULL)
        die("fam_lookup");
    memset(in, 0, sizeof in);
    if (fam_get_blocking(in, again, 0, sizeof in) != 0)
        die("fam_get_blocking (lookup handle)");
    if (fam_close(again) != 0)
        die("fam_close");

    int ok = strcmp(in, out) == 0 && old == 40 && now == 42;
    if (fam_deallocate(item) != 0)
        die("fam_deallocate");
    if (fam_destroy_region(region) != 0)
        die("fam_destroy_region");
    if (fam_finalize("hello") != 0)
        die("fam_finalize");
    printf("%s\n", ok ? "hello: OK" : "hello: MISMATCH");
    return ok ? 0 : 1;
}
