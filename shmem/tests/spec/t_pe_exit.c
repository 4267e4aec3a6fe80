/*
 * t_pe_exit: one PE ends abnormally (_exit(5) after init, no finalize)
 * while the others wait forever: the job must end, with a non-zero status
 * (ours: 5, the failing PE's). It leaves with _exit, skipping atexit
 * handlers: a plain exit() runs the implicit shmem_finalize, which is
 * collective and may wait for the others. argv[1] "signal" makes it die
 * of SIGKILL instead.
 * Spec: 1.4-compatible (the status itself is implementation-defined).
 */
#include "shtest.h"
#include <signal.h>
#include <unistd.h>

static long never;

int main(int argc, char **argv)
{
    sht_init("t_pe_exit");
    shmem_barrier_all();
    if (sht_me == sht_npes - 1) {
        if (argc > 1 && strcmp(argv[1], "signal") == 0)
            raise(SIGKILL);
        fprintf(stderr, "PE %d: _exit(5) without shmem_finalize\n", sht_me);
        _exit(5);
    }
    shmem_long_wait_until(&never, SHMEM_CMP_NE, 0);
    return 98;
}
