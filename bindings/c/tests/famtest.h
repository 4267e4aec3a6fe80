/*
 * famtest.h - helpers shared by the C test executables (cmocka).
 *
 * Each test executable calls famtest_use_fresh_store() first thing in main,
 * so that it runs against its own empty embedded store in a temporary
 * directory, and famtest_remove_store() when it is done.
 */
#ifndef FAMTEST_H
#define FAMTEST_H

#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openfam.h>

/* A pointer that was never returned by the library: handle checks must reject
 * it without dereferencing it. */
#define GARBAGE_PTR ((void *)0x12345)

/* Fails the test unless expr (an int-returning fam_* call) returns 0. */
#define assert_fam_ok(expr)                                                                   \
    do {                                                                                      \
        int rc_ = (expr);                                                                     \
        if (rc_ != 0)                                                                         \
            fail_msg("%s returned %d (errcode %d: %s)", #expr, rc_, fam_errcode(), fam_errmsg()); \
    } while (0)

/* Fails the test unless expr returns -code and fam_errcode() then says code. */
#define assert_fam_err(expr, code)                                                            \
    do {                                                                                      \
        int rc_ = (expr);                                                                     \
        if (rc_ != -(code))                                                                   \
            fail_msg("%s returned %d, want %d (%s) (msg: %s)", #expr, rc_, -(code), #code,    \
                     fam_errmsg());                                                           \
        if (fam_errcode() != (code))                                                          \
            fail_msg("%s: fam_errcode() is %d, want %d", #expr, fam_errcode(), (code));       \
        if (fam_errmsg() == NULL || fam_errmsg()[0] == '\0')                                  \
            fail_msg("%s: empty fam_errmsg() after a failure", #expr);                        \
    } while (0)

/* Fails the test unless expr (a pointer-returning call) returns non-NULL. */
#define assert_fam_ptr(expr)                                                                  \
    ({                                                                                        \
        __typeof__(expr) p_ = (expr);                                                         \
        if (p_ == NULL)                                                                       \
            fail_msg("%s returned NULL (errcode %d: %s)", #expr, fam_errcode(), fam_errmsg()); \
        p_;                                                                                   \
    })

/* Fails the test unless expr returns NULL with fam_errcode() == code. */
#define assert_fam_null(expr, code)                                                           \
    do {                                                                                      \
        const void *p_ = (const void *)(expr);                                                \
        if (p_ != NULL)                                                                       \
            fail_msg("%s returned %p, want NULL with %s", #expr, p_, #code);                  \
        if (fam_errcode() != (code))                                                          \
            fail_msg("%s: fam_errcode() is %d (%s), want %d (%s)", #expr, fam_errcode(),      \
                     fam_errmsg(), (code), #code);                                            \
    } while (0)

/* A non-blocking call's own failure (no permission, no server) is, as in
 * OpenFAM, reported by the quiet that completes it and never by the call. */
#define assert_nb_quiet_err(expr, quiet, code)                                                \
    do {                                                                                      \
        int rc_ = (expr);                                                                     \
        if (rc_ != 0)                                                                         \
            fail_msg("%s returned %d (msg: %s); its %s belongs to the quiet", #expr, rc_,     \
                     fam_errmsg(), #code);                                                    \
        assert_fam_err(quiet, code);                                                          \
        assert_fam_ok(quiet);                                                                 \
    } while (0)

/* A non-blocking call may report an argument error at once or at the next
 * quiet; either is allowed, but the error must surface exactly once and with
 * the right code. quiet is the call that completes the operation. */
#define assert_nb_err(expr, quiet, code)                                                      \
    do {                                                                                      \
        int rc_ = (expr);                                                                     \
        if (rc_ == 0) {                                                                       \
            assert_fam_err(quiet, code);                                                      \
        } else if (rc_ != -(code)) {                                                          \
            fail_msg("%s returned %d, want %d (%s) now or at quiet (msg: %s)", #expr, rc_,    \
                     -(code), #code, fam_errmsg());                                           \
        }                                                                                     \
        assert_fam_ok(quiet);                                                                 \
    } while (0)

static char famtest_dir[4096];

/* Sets OPENFAM_DATA_DIR, OPENFAM_SHM_DIR and OPENFAM_BACKUP_DIR in the
 * environment to dir, dir/shm and dir/backups, and drops OPENFAM_SERVER so
 * the embedded store is used. */
static inline void famtest_set_store_env(const char *dir)
{
    char path[4200];
    setenv("OPENFAM_DATA_DIR", dir, 1);
    snprintf(path, sizeof path, "%s/shm", dir);
    setenv("OPENFAM_SHM_DIR", path, 1);
    snprintf(path, sizeof path, "%s/backups", dir);
    setenv("OPENFAM_BACKUP_DIR", path, 1);
    unsetenv("OPENFAM_SERVER");
}

/* Makes a new empty directory under $TMPDIR (or /tmp) in buf. */
static inline void famtest_mkdtemp(char *buf, size_t size, const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, size, "%s/openfam-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    if (mkdtemp(buf) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
}

/* Makes this process run on its own new, empty embedded store: creates a
 * temporary directory, points the OPENFAM_*_DIR variables at it and
 * re-executes the program (argv) once. The re-execution is needed because
 * libopenfam reads its environment when it is loaded (the Go runtime copies
 * environ at start-up), so a setenv() in main would come too late. Returns
 * the directory, after the re-execution. */
static inline const char *famtest_use_fresh_store(const char *tag, char **argv)
{
    const char *have = getenv("FAMTEST_STORE");
    if (have != NULL && *have != '\0') {
        snprintf(famtest_dir, sizeof famtest_dir, "%s", have);
        return famtest_dir;
    }
    famtest_mkdtemp(famtest_dir, sizeof famtest_dir, tag);
    famtest_set_store_env(famtest_dir);
    setenv("FAMTEST_STORE", famtest_dir, 1);
    char pid[32];
    snprintf(pid, sizeof pid, "%ld", (long)getpid()); /* exec keeps the pid */
    setenv("FAMTEST_OWNER_PID", pid, 1);
    execv("/proc/self/exe", argv);
    perror("execv /proc/self/exe");
    exit(2);
}

static inline int famtest_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* Removes a directory tree, unless OPENFAM_TEST_KEEP is set (to look at a
 * store after a failure). */
static inline void famtest_remove_dir(const char *dir)
{
    if (getenv("OPENFAM_TEST_KEEP") != NULL) {
        fprintf(stderr, "keeping test store %s\n", dir);
        return;
    }
    nftw(dir, famtest_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Removes the store made by famtest_use_fresh_store; only the process that
 * made it does (child processes share it). */
static inline void famtest_remove_store(void)
{
    const char *owner = getenv("FAMTEST_OWNER_PID");
    if (famtest_dir[0] == '\0' || owner == NULL || atol(owner) != (long)getpid())
        return;
    famtest_remove_dir(famtest_dir);
}

/* Unique, valid names within one run, so tests do not depend on each other. */
static inline const char *famtest_name(const char *prefix)
{
    static __thread char buf[OPENFAM_NAME_MAX + 1];
    static int seq;
    snprintf(buf, sizeof buf, "%s-%d", prefix, __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
    return buf;
}

#endif /* FAMTEST_H */
