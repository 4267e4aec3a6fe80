/*
 * shtest.h: the small harness every OpenSHMEM specification test program
 * here shares. Written from the OpenSHMEM 1.5 specification.
 *
 * A program checks with SHT_CHECK, then ends with `return sht_end();`,
 * which sums the failures of every PE on PE 0, prints one line, finalizes
 * and returns non-zero on the PE that saw a mismatch (the launcher turns a
 * non-zero PE exit into a non-zero job exit).
 *
 * The same sources build against Open MPI's OpenSHMEM (spec 1.4) for the
 * differential run: SHT_15 is 1 when the header is 1.5 or later (parts
 * that need 1.5 API sit behind it), and SHT_OMPI is 1 under Open MPI
 * (OSHMEM_MAJOR_VERSION is its own macro), where calls known to be broken
 * in Debian's 4.1.4 are skipped with a printed reason.
 */
#ifndef SHTEST_H
#define SHTEST_H

#include <shmem.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if (SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION) >= 105
#define SHT_15 1
#else
#define SHT_15 0
#endif

#ifdef OSHMEM_MAJOR_VERSION
#define SHT_OMPI 1
#else
#define SHT_OMPI 0
#endif

static int sht_me, sht_npes;
static int sht_failures;
static int sht_total_failures; /* symmetric: summed on PE 0 by sht_end */
static const char *sht_prog = "test";

#define SHT_CHECK(cond, ...)                                                  \
    do {                                                                      \
        if (!(cond)) {                                                        \
            sht_failures++;                                                   \
            if (sht_failures <= 40) {                                         \
                fprintf(stderr, "PE %d: %s:%d: FAILED %s: ", sht_me,          \
                        __FILE__, __LINE__, #cond);                           \
                fprintf(stderr, __VA_ARGS__);                                 \
                fputc('\n', stderr);                                          \
            }                                                                 \
        }                                                                     \
    } while (0)

/* shmem_init and the globals every test uses. */
static inline void sht_init(const char *prog)
{
    sht_prog = prog;
    shmem_init();
    sht_me = shmem_my_pe();
    sht_npes = shmem_n_pes();
    setvbuf(stdout, NULL, _IOLBF, 0);
}

/* For programs that initialize some other way (init_thread, start_pes). */
static inline void sht_started(const char *prog)
{
    sht_prog = prog;
    sht_me = shmem_my_pe();
    sht_npes = shmem_n_pes();
    setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline void sht_skip(const char *what, const char *why)
{
    if (sht_me == 0)
        printf("%s: skipped %s: %s\n", sht_prog, what, why);
}

static inline void sht_section(const char *what)
{
    if (sht_me == 0 && getenv("SHTEST_VERBOSE"))
        printf("%s: %s\n", sht_prog, what);
}

/* Open MPI 4.1.4's shmem_test and shmem_test_lock make no progress (a
 * loop of them hangs: measured), so under it polling loops also call
 * shmem_quiet, which progresses. Ours must not need it. */
static inline void sht_test_progress(void)
{
#if SHT_OMPI
    shmem_quiet();
#endif
}

/* Sums the failures of all PEs on PE 0, prints the verdict, finalizes. */
static inline int sht_end(void)
{
    shmem_barrier_all();
    if (sht_failures)
        shmem_int_atomic_add(&sht_total_failures, sht_failures, 0);
    shmem_barrier_all();
    if (sht_me == 0) {
        if (sht_total_failures)
            printf("%s: FAIL (%d failed checks over %d PEs)\n", sht_prog,
                   sht_total_failures, sht_npes);
        else
            printf("%s: PASS (%d PEs)\n", sht_prog, sht_npes);
    }
    shmem_finalize();
    return sht_failures ? 1 : 0;
}

#endif /* SHTEST_H */
