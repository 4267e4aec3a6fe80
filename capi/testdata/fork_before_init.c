/*
 * fork_before_init.c - a child forked before fam_initialize, from a process
 * that has libopenfam loaded (and with it the Go runtime and its threads,
 * which do not survive fork), must get a clear error at once, never hang:
 * the old library's fam_initialize in such a child blocked forever. Checked
 * for a child, a grandchild and a child made by a raw fork system call
 * (which runs no pthread_atfork handler). The parent is unaffected, and a
 * child that execs a new program (what the error tells one to do) can use
 * the library.
 *
 * Each child has an alarm, so a regression fails (killed by SIGALRM) instead
 * of hanging the test run. Run it on a scratch store; exits non-zero on the
 * first failed check.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "openfam.h"

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: check failed: %s (errcode %d: %s)\n", __FILE__, __LINE__, \
                    #cond, fam_errcode(), fam_errmsg());                                      \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

/* Seconds a child may take; its calls should fail in microseconds. */
#define CHILD_LIMIT 30

extern char **environ;

/* In a forked child: every call fails at once with FAM_EINVAL and a
 * message saying why and what to do. Returns the child's exit status. */
static int child_checks(const char *who)
{
    alarm(CHILD_LIMIT);
    int rc = fam_initialize("default", NULL);
    if (rc != -FAM_EINVAL || fam_errcode() != FAM_EINVAL) {
        fprintf(stderr, "%s: fam_initialize returned %d (%s), want %d\n", who, rc, fam_errmsg(), -FAM_EINVAL);
        return 1;
    }
    const char *msg = fam_errmsg();
    if (strstr(msg, "fork") == NULL || strstr(msg, "exec") == NULL) {
        fprintf(stderr, "%s: message does not say fork and exec: %s\n", who, msg);
        return 1;
    }
    /* Still refused the second time, and other calls too. */
    if (fam_initialize("default", NULL) != -FAM_EINVAL || fam_lookup_region("x") != NULL ||
        fam_errcode() != FAM_EINVAL || strstr(fam_errmsg(), "fork") == NULL ||
        fam_finalize("default") != -FAM_EINVAL) {
        fprintf(stderr, "%s: a later call was not refused: %s\n", who, fam_errmsg());
        return 1;
    }
    return 0;
}

/* Waits for child pid and checks that it exited 0 (not killed by the
 * alarm: that is a hang). */
static void expect_child_ok(pid_t pid, const char *who)
{
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "%s: killed by signal %d%s\n", who, WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? " (it hung)" : "");
        exit(1);
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv)
{
    alarm(4 * CHILD_LIMIT);
    if (argc > 1 && strcmp(argv[1], "exec-child") == 0) {
        /* A fresh program: the library works. */
        CHECK(fam_initialize("default", NULL) == 0);
        fam_region_t *r = fam_create_region("fork_exec", 1 << 20, 0600, NULL);
        CHECK(r != NULL && fam_destroy_region(r) == 0);
        CHECK(fam_finalize("default") == 0);
        return 0;
    }

    /* fork() before fam_initialize */
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(child_checks("child"));
    expect_child_ok(pid, "child");

    /* a grandchild: the child forks again before calling anything */
    fflush(NULL);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(CHILD_LIMIT);
        pid_t g = fork();
        if (g < 0)
            _exit(1);
        if (g == 0)
            _exit(child_checks("grandchild"));
        int status = 0;
        if (waitpid(g, &status, 0) != g || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            _exit(1);
        _exit(0);
    }
    expect_child_ok(pid, "grandchild");

    /* a raw fork system call, which runs no pthread_atfork handler */
    fflush(NULL);
    pid = (pid_t)syscall(SYS_fork);
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(child_checks("raw-fork child"));
    expect_child_ok(pid, "raw-fork child");

    /* fork then exec: the new program uses the library */
    char *cargv[] = {"/proc/self/exe", "exec-child", NULL};
    CHECK(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, cargv, environ) == 0);
    expect_child_ok(pid, "exec child");

    /* the parent is unaffected */
    CHECK(fam_initialize("default", NULL) == 0);
    fam_region_t *r = fam_create_region("fork_parent", 1 << 20, 0600, NULL);
    CHECK(r != NULL && fam_destroy_region(r) == 0);
    CHECK(fam_finalize("default") == 0);

    printf("fork_before_init: forked children are refused at once; exec and the parent work\n");
    return 0;
}
