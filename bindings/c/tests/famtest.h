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
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

extern char **environ;

/* Runs this executable again with args and returns its exit status (or
 * 128+signal). With store != NULL the child runs on that store instead of
 * this process's (which is locked while this process is initialized). */
static inline int famtest_run_self(char *const args[], const char *store)
{
    char *argv[8] = {"/proc/self/exe"};
    for (int i = 0; args[i] != NULL && i < 6; i++)
        argv[i + 1] = args[i];
    char *saved[3] = {NULL, NULL, NULL};
    static const char *const vars[3] = {"OPENFAM_DATA_DIR", "OPENFAM_SHM_DIR", "OPENFAM_BACKUP_DIR"};
    if (store != NULL) {
        for (int i = 0; i < 3; i++)
            saved[i] = strdup(getenv(vars[i]));
        famtest_set_store_env(store);
    }
    pid_t pid;
    int err = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ);
    if (store != NULL) {
        for (int i = 0; i < 3; i++) {
            setenv(vars[i], saved[i], 1);
            free(saved[i]);
        }
    }
    if (err != 0)
        fail_msg("posix_spawn failed: %s", strerror(err));
    int status;
    if (waitpid(pid, &status, 0) != pid)
        fail_msg("waitpid failed");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* FAMTEST_CHILD_CHECK fails a child mode (code run by famtest_run_self
 * outside cmocka) with a status naming the line, after saying why. */
#define FAMTEST_CHILD_CHECK(cond)                                                      \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "child: line %d: %s (%s)\n", __LINE__, #cond, fam_errmsg()); \
            return 10 + (__LINE__ % 200);                                              \
        }                                                                              \
    } while (0)

/* Child mode "--make-foreign": as user nobody (65534), on the store the
 * environment names, makes region "foreign" (0777, data item-level
 * permissions) with items that others may only read ("ro", 0644), only
 * write ("wo", 0622) or both ("rw", 0666), and region "foreign-rl" (0644,
 * region-level permissions) with item "doc" (0666). */
static inline int famtest_make_foreign(void)
{
    if (setgid(65534) != 0 || setuid(65534) != 0) {
        perror("child: setuid nobody");
        return 2;
    }
    FAMTEST_CHILD_CHECK(fam_initialize("child", NULL) == 0);
    fam_region_attr_t attr = {FAM_REDUNDANCY_NONE, FAM_MEMORY_VOLATILE, FAM_INTERLEAVE_DEFAULT,
                              FAM_PERMISSION_DATAITEM};
    fam_region_t *r = fam_create_region("foreign", 1 << 20, 0777, &attr);
    FAMTEST_CHILD_CHECK(r != NULL);
    FAMTEST_CHILD_CHECK(fam_allocate("ro", 4096, 0644, r) != NULL);
    FAMTEST_CHILD_CHECK(fam_allocate("wo", 4096, 0622, r) != NULL);
    FAMTEST_CHILD_CHECK(fam_allocate("rw", 4096, 0666, r) != NULL);
    fam_region_t *rl = fam_create_region("foreign-rl", 1 << 20, 0644, NULL);
    FAMTEST_CHILD_CHECK(rl != NULL);
    FAMTEST_CHILD_CHECK(fam_allocate("doc", 64, 0666, rl) != NULL);
    FAMTEST_CHILD_CHECK(fam_finalize("child") == 0);
    return 0;
}

/* Checks how mode bits bind a user who is not the owner: a child running
 * as nobody makes items on a store of their own ("--make-foreign"), and a
 * second child, as this process's uid (root: the others class, with no
 * bypass), runs the child mode check_flag on it (this process's store is
 * locked while it is initialized). The owner itself is bound by no mode
 * bits (as in OpenFAM), so only another user can show them. Skips unless
 * root, which running a child as nobody needs. */
static inline void famtest_with_foreign_store(const char *check_flag)
{
    if (geteuid() != 0) {
        print_message("skipped: needs root to make items as a second user (nobody)\n");
        skip();
    }
    char store[] = "/tmp/openfam-foreign-XXXXXX"; /* /tmp: nobody must reach it */
    assert_non_null(mkdtemp(store));
    assert_int_equal(chmod(store, 0777), 0);
    char *make[] = {"--make-foreign", NULL};
    char *check[] = {(char *)check_flag, NULL};
    int made = famtest_run_self(make, store);
    int checked = made == 0 ? famtest_run_self(check, store) : -1;
    famtest_remove_dir(store);
    assert_int_equal(made, 0);
    assert_int_equal(checked, 0);
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
