/*
 * check.h: what the collectives' test programs share. A failed check
 * prints where and what on stderr and ends the whole job with status 1
 * (shmem_global_exit), so a wrong result is never a hang or a pass.
 */
#ifndef SHMEM_COLL_TEST_CHECK_H
#define SHMEM_COLL_TEST_CHECK_H

#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", shmem_my_pe(),    \
                    __FILE__, __LINE__, #cond);                                   \
            fprintf(stderr, __VA_ARGS__);                                         \
            fprintf(stderr, "\n");                                                \
            fflush(stderr);                                                       \
            shmem_global_exit(1);                                                 \
        }                                                                         \
    } while (0)

/* Prints one line from PE 0 when a program has passed. */
static inline void passed(const char *name)
{
    shmem_barrier_all();
    if (shmem_my_pe() == 0)
        printf("%s: passed on %d PEs\n", name, shmem_n_pes());
}

#endif
