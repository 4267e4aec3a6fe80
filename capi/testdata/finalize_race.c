/*
 * finalize_race.c - fam_finalize while other threads make data calls must
 * never crash the host program: every racing call returns 0 (it finished
 * before the instance went down) or -FAM_EINVAL (it did not run), never a
 * fault. Each round starts THREADS threads doing fam_get_blocking,
 * fam_put_blocking and fam_fetch_add_int64 on items mapped in this process
 * (the C fast path) and fam_fetch_int128 (always through the Go core),
 * waits until every thread has completed calls, and then finalizes under
 * them. The old library unmapped the region while a thread
 * was copying through an address it had just validated: SIGSEGV in about
 * half the rounds. A get that returns 0 must also have read the item's bytes,
 * not the zero pages that replace a retired mapping.
 *
 * Bounded: ROUNDS rounds or DEADLINE seconds, whichever comes first, and an
 * alarm fails a hang. Run it on a scratch store; exits non-zero on the first
 * failed check.
 *
 * Usage: finalize_race [FAMD]. With the path of a famd binary, the program
 * starts that famd on a scratch directory and runs against it, where items
 * are mapped from descriptors famd passes (a different set of mappings).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
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

#define THREADS 4
#define ROUNDS 200
#define DEADLINE 30  /* seconds of rounds; the alarm is far beyond */
#define ITEM (256u << 10)
#define XFER (64u << 10)

static fam_desc_t *items[THREADS];
static int started;   /* threads that have completed a call this round */

struct result {
    long ok, einval;
    int bad;      /* a return that is neither 0 nor -FAM_EINVAL */
    char msg[256];
};

static struct result results[THREADS];

/* Every chunk of item id holds id+1 in each byte, but for its first 8 bytes,
 * which fam_fetch_add_int64 changes. */
static int pattern_ok(const char *buf, int id)
{
    for (size_t k = 8; k < XFER; k++)
        if (buf[k] != (char)(id + 1))
            return 0;
    return 1;
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    struct result *res = &results[id];
    char *buf = malloc(XFER);
    CHECK(buf != NULL);
    memset(buf, id + 1, XFER);
    fam_desc_t *d = items[id];
    int counted = 0;
    for (uint64_t i = 0;; i++) {
        uint64_t off = (i * XFER) % ITEM;
        int64_t old;
        fam_int128_t wide;
        int rc, which = (int)((i + (uint64_t)id) % 4);
        switch (which) {
        case 0:
            rc = fam_get_blocking(buf, d, off, XFER);
            break;
        case 1:
            rc = fam_put_blocking(buf, d, off, XFER);
            break;
        case 2:
            rc = fam_fetch_add_int64(d, off, 1, &old);
            break;
        default:
            /* Always through Go: finalize races with the Go core too. */
            rc = fam_fetch_int128(d, off + 16, &wide);
            break;
        }
        if (rc == 0 && which == 0 && !pattern_ok(buf, id)) {
            /* A get that succeeded must have read the item, not the zero
             * pages a retired mapping leaves behind. */
            res->bad = 1;
            snprintf(res->msg, sizeof res->msg, "fam_get_blocking returned 0 but not the item's bytes");
            break;
        }
        if (rc == 0) {
            res->ok++;
            if (!counted) {
                counted = 1;
                __atomic_add_fetch(&started, 1, __ATOMIC_RELEASE);
            }
            continue;
        }
        if (rc == -FAM_EINVAL) {
            /* The instance is down: every later call fails the same way. */
            res->einval++;
            break;
        }
        res->bad = rc;
        snprintf(res->msg, sizeof res->msg, "%s", fam_errmsg());
        break;
    }
    free(buf);
    return NULL;
}

extern char **environ;

static char famd_dir[] = "/tmp/finalize_race.XXXXXX";
static pid_t famd_pid;

/* Starts famd on a scratch directory and points fam_initialize at it. */
static void start_famd(const char *famd)
{
    CHECK(mkdtemp(famd_dir) != NULL);
    char data[128], shm[128], sock[128], ready[160], server[160];
    snprintf(data, sizeof data, "%s/data", famd_dir);
    snprintf(shm, sizeof shm, "%s/shm", famd_dir);
    snprintf(sock, sizeof sock, "%s/famd.sock", famd_dir);
    snprintf(ready, sizeof ready, "%s.data", sock);
    snprintf(server, sizeof server, "unix:%s", sock);
    char *argv[] = {(char *)famd, "--data-dir", data, "--shm-dir", shm, "--socket", sock,
                    "--log-level", "warn", NULL};
    CHECK(posix_spawn(&famd_pid, famd, NULL, NULL, argv, environ) == 0);
    /* famd creates the data socket last: poll for it (bounded). */
    for (int i = 0; access(ready, F_OK) != 0; i++) {
        int status;
        CHECK(waitpid(famd_pid, &status, WNOHANG) == 0);
        CHECK(i < 3000);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(setenv("OPENFAM_SERVER", server, 1) == 0);
}

/* Stops famd and removes its directory; at exit too, so a failed check
 * leaves nothing running. */
static void stop_famd(void)
{
    if (famd_pid <= 0)
        return;
    int status;
    kill(famd_pid, SIGTERM);
    waitpid(famd_pid, &status, 0);
    famd_pid = 0;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", famd_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "finalize_race: could not remove %s\n", famd_dir);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "finalize_race: timed out (a call or fam_finalize hangs)\n";
    if (famd_pid > 0)
        kill(famd_pid, SIGKILL);
    if (write(2, msg, sizeof msg - 1) < 0) {
    }
    _exit(1);
}

int main(int argc, char **argv)
{
    /* A hang (a racing call that never returns) fails instead of blocking
     * the test run. */
    signal(SIGALRM, on_alarm);
    alarm(240);
    if (argc > 1) {
        atexit(stop_famd);
        start_famd(argv[1]);
    }
    time_t stop = time(NULL) + DEADLINE;
    int rounds = 0;
    long ok = 0, einval = 0;
    for (; rounds < ROUNDS && time(NULL) < stop; rounds++) {
        CHECK(fam_initialize("default", NULL) == 0);
        fam_region_t *r = fam_create_region("finalize_race", 8u << 20, 0600, NULL);
        CHECK(r != NULL);
        for (int t = 0; t < THREADS; t++) {
            char name[32];
            snprintf(name, sizeof name, "item%d", t);
            items[t] = fam_allocate(name, ITEM, 0600, r);
            CHECK(items[t] != NULL);
            char *fill = malloc(ITEM);
            CHECK(fill != NULL);
            memset(fill, t + 1, ITEM);
            CHECK(fam_put_blocking(fill, items[t], 0, ITEM) == 0);
            free(fill);
        }
        __atomic_store_n(&started, 0, __ATOMIC_RELAXED);
        memset(results, 0, sizeof results);
        pthread_t th[THREADS];
        for (int t = 0; t < THREADS; t++)
            CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
        /* Finalize only once every thread is inside its loop, so the
         * finalize lands among running calls. */
        while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < THREADS)
            sched_yield();
        CHECK(fam_finalize("default") == 0);
        for (int t = 0; t < THREADS; t++) {
            CHECK(pthread_join(th[t], NULL) == 0);
            if (results[t].bad != 0) {
                fprintf(stderr, "round %d thread %d: call returned %d (%s), want 0 or %d\n", rounds, t,
                        results[t].bad, results[t].msg, -FAM_EINVAL);
                return 1;
            }
            CHECK(results[t].einval == 1);
            ok += results[t].ok;
            einval += results[t].einval;
        }
        /* Clean up for the next round. */
        CHECK(fam_initialize("default", NULL) == 0);
        r = fam_lookup_region("finalize_race");
        CHECK(r != NULL && fam_destroy_region(r) == 0);
        CHECK(fam_finalize("default") == 0);
    }
    CHECK(rounds > 0);
    if (argc > 1)
        stop_famd();
    printf("finalize_race%s: %d rounds, %ld calls succeeded, %ld refused after finalize, no crash\n",
           argc > 1 ? " (famd)" : "", rounds, ok, einval);
    return 0;
}
