/*
 * fambench - measures the OpenFAM C API on this machine, each figure beside
 * a baseline taken in the same run:
 *
 *   fam_get_blocking / fam_put_blocking 4 MiB   vs  glibc memcpy 4 MiB (GB/s)
 *   fam_get_blocking 8 B                        vs  8-byte memcpy, an empty
 *   fam_fetch_add_int64                             call through a function
 *                                                   pointer, __atomic_fetch_add (ns/op)
 *   fam_allocate + fam_deallocate (named, unnamed)  (us/op)
 *
 * Each figure is the median of several repeats after a warm-up; every repeat
 * runs long enough (about 50 ms) for clock_gettime(CLOCK_MONOTONIC) to be
 * exact to well under 1%. Uses whatever store fam_initialize finds (the
 * embedded one unless OPENFAM_SERVER is set); the items live in a volatile
 * region made for the run and destroyed at the end.
 */
#define _GNU_SOURCE
#include <openfam.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The build stamps the version (make passes -DOPENFAM_VERSION="..."); a
 * compile by hand says so instead of pretending to be a release. */
#ifndef OPENFAM_VERSION
#define OPENFAM_VERSION "unknown"
#endif

extern char **environ;

enum { BIG = 4 << 20, TARGET_NS = 50 * 1000 * 1000 };

static int repeats = 7;

static void die(const char *what)
{
    fprintf(stderr, "fambench: %s failed: error %d: %s\n", what, fam_errcode(), fam_errmsg());
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A benchmark body runs its operation iters times. */
typedef void (*body_fn)(uint64_t iters);

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Returns how many iterations of body take about TARGET_NS. Doubling the
 * count until a run takes a tenth of that also warms up: it faults in
 * memory, fills caches and lets the library set up its fast paths. */
static uint64_t calibrate(body_fn body)
{
    uint64_t iters = 1, t = 0;
    for (;;) {
        uint64_t t0 = now_ns();
        body(iters);
        t = now_ns() - t0;
        if (t >= TARGET_NS / 10 || iters >= (1ULL << 40))
            break;
        iters *= 2;
    }
    double per = (double)t / (double)iters;
    uint64_t n = (uint64_t)(TARGET_NS / (per > 0 ? per : 1));
    return n < 1 ? 1 : n;
}

/* Measures n bodies and stores each one's median nanoseconds per operation
 * in out. The repeats of the bodies are interleaved (A B C A B C ...) so that
 * a figure and its baselines see the same machine conditions even when
 * other load comes and goes during the run. */
static void ns_per_op(const body_fn *bodies, int n, double *out)
{
    uint64_t iters[8];
    double samples[8][64];
    for (int b = 0; b < n; b++)
        iters[b] = calibrate(bodies[b]);
    for (int r = 0; r < repeats; r++) {
        for (int b = 0; b < n; b++) {
            uint64_t t0 = now_ns();
            bodies[b](iters[b]);
            samples[b][r] = (double)(now_ns() - t0) / (double)iters[b];
        }
    }
    for (int b = 0; b < n; b++) {
        qsort(samples[b], (size_t)repeats, sizeof samples[b][0], cmp_double);
        out[b] = samples[b][repeats / 2];
    }
}

/* ---- state shared by the bodies ---- */
static fam_region_t *region;
static fam_desc_t *big_item, *small_item;
static uint8_t *buf_a, *buf_b;
static uint64_t word_src[8], word_dst[8];
static int64_t plain_word;
static unsigned long name_seq;

#define CHECK(call)             \
    do {                        \
        if ((call) != 0)        \
            die(#call);         \
    } while (0)

/* Keeps the compiler from deleting or merging the baseline loops. */
#define BARRIER() __asm__ __volatile__("" ::: "memory")

static void body_memcpy_big(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        memcpy(buf_b, buf_a, BIG);
        BARRIER();
    }
}
static void body_get_big(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        CHECK(fam_get_blocking(buf_b, big_item, 0, BIG));
}
static void body_put_big(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        CHECK(fam_put_blocking(buf_a, big_item, 0, BIG));
}
static void body_memcpy_8(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        memcpy(&word_dst[i & 7], &word_src[i & 7], 8);
        BARRIER();
    }
}
static void body_get_8(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        CHECK(fam_get_blocking(&word_dst[i & 7], small_item, (i & 7) * 8, 8));
}
__attribute__((noinline)) static void empty_fn(void)
{
    BARRIER();
}
static void (*volatile empty_ptr)(void) = empty_fn;
static void body_call(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        empty_ptr();
}
static void body_atomic(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        __atomic_fetch_add(&plain_word, 1, __ATOMIC_SEQ_CST);
}
static void body_fetch_add(uint64_t n)
{
    int64_t old;
    for (uint64_t i = 0; i < n; i++)
        CHECK(fam_fetch_add_int64(small_item, 0, 1, &old));
}
static void body_alloc_named(uint64_t n)
{
    char name[OPENFAM_NAME_MAX + 1];
    for (uint64_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "b%lu", name_seq++);
        fam_desc_t *d = fam_allocate(name, 4096, 0600, region);
        if (d == NULL)
            die("fam_allocate (named)");
        CHECK(fam_deallocate(d));
    }
}
static void body_alloc_unnamed(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        fam_desc_t *d = fam_allocate(NULL, 4096, 0600, region);
        if (d == NULL)
            die("fam_allocate (unnamed)");
        CHECK(fam_deallocate(d));
    }
}

/* ---- reporting ---- */
static int json;
static int json_first = 1;

/* Prints one figure beside one or two baselines. "x time" is how many times
 * longer the FAM operation takes than the baseline (below 1: faster). */
static void report(const char *name, const char *unit, double value, const char *base_name,
                   double base_value, const char *base2_name, double base2_value, int throughput)
{
    double ratio = throughput ? base_value / value : value / base_value;
    double ratio2 = throughput ? base2_value / value : value / base2_value;
    if (json) {
        printf("%s\n  {\"name\": \"%s\", \"unit\": \"%s\", \"value\": %.4g, "
               "\"baseline\": {\"name\": \"%s\", \"value\": %.4g, \"time_ratio\": %.3g}",
               json_first ? "" : ",", name, unit, value, base_name, base_value, ratio);
        if (base2_name != NULL)
            printf(", \"baseline2\": {\"name\": \"%s\", \"value\": %.4g, \"time_ratio\": %.3g}",
                   base2_name, base2_value, ratio2);
        printf("}");
        json_first = 0;
        return;
    }
    printf("%-31s %9.3g %-6s | %-26s %9.3g %-6s | %7.2fx time\n", name, value, unit, base_name,
           base_value, unit, ratio);
    if (base2_name != NULL)
        printf("%-31s %16s | %-26s %9.3g %-6s | %7.2fx time\n", "", "", base2_name, base2_value, unit,
               ratio2);
}

/* ---- --get-mib: one large get from the store, for the multi-server series ---- */
static fam_desc_t *wide_item;
static uint64_t wide_size;
static uint8_t *wide_buf;

static void body_get_wide(uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++)
        CHECK(fam_get_blocking(wide_buf, wide_item, 0, wide_size));
}

/* Measures fam_get_blocking of one item of mib MiB in a region with the
 * default attributes (interleaved over every memory server famd has) and
 * prints the rate with the item's server count. The baseline is the same
 * run against one memory server: tests/stripe-bench.sh runs the series. */
static int get_wide(uint64_t mib)
{
    wide_size = mib << 20;
    if (fam_initialize("fambench", NULL) != 0)
        die("fam_initialize");
    char rname[OPENFAM_NAME_MAX + 1];
    snprintf(rname, sizeof rname, "fambench-wide-%ld", (long)getpid());
    region = fam_create_region(rname, wide_size + (1 << 20), 0600, NULL);
    if (region == NULL)
        die("fam_create_region");
    wide_item = fam_allocate("wide", wide_size, 0600, region);
    if (wide_item == NULL)
        die("fam_allocate");
    fam_stat_t st;
    if (fam_stat(wide_item, &st) != 0)
        die("fam_stat");
    wide_buf = aligned_alloc(4096, wide_size);
    if (wide_buf == NULL) {
        fprintf(stderr, "fambench: out of memory\n");
        return 1;
    }
    for (uint64_t i = 0; i < wide_size; i++)
        wide_buf[i] = (uint8_t)(i * 7);
    CHECK(fam_put_blocking(wide_buf, wide_item, 0, wide_size));
    double t[1];
    const body_fn bodies[1] = {body_get_wide};
    ns_per_op(bodies, 1, t);
    double gbs = (double)wide_size / t[0];
    if (json)
        printf("[{\"name\": \"fam_get_blocking %llu MiB\", \"unit\": \"GB/s\", \"value\": %.4g, "
               "\"memory_servers\": %llu, \"interleave_size\": %llu}]\n",
               (unsigned long long)mib, gbs, (unsigned long long)st.num_memservers,
               (unsigned long long)st.interleave_size);
    else
        printf("fam_get_blocking %llu MiB: %.3f GB/s (median of %d; item on %llu memory servers, "
               "interleave size %llu)\n",
               (unsigned long long)mib, gbs, repeats, (unsigned long long)st.num_memservers,
               (unsigned long long)st.interleave_size);
    if (fam_deallocate(wide_item) != 0 || fam_destroy_region(region) != 0)
        die("cleanup");
    free(wide_buf);
    fam_finalize("fambench");
    return 0;
}

/* ---- --net: the famd data plane against raw TCP, process to process ---- */
enum { SMALL_PUT = 4096, PIPE_SLOTS = 1024, QUIET_EVERY = 256, PING = 256 };
static fam_desc_t *net_item;
static uint8_t net_small[SMALL_PUT];
static uint64_t pipe_next;
static int raw_fd = -1;

static void full_write(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            perror("fambench: raw write");
            exit(1);
        }
        p += w, n -= (size_t)w;
    }
}

static void full_read(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r <= 0) {
            perror("fambench: raw read");
            exit(1);
        }
        p += r, n -= (size_t)r;
    }
}

/* The echo process (fambench --echo FD, started by --net): serves one
 * connection accepted on the inherited listening socket FD. Requests: 'E'
 * + 256 bytes -> the 256 bytes back; 'P' + 4 MiB -> one byte; 'G' -> 4 MiB. */
static int echo_server(int lfd)
{
    int c = accept(lfd, NULL, NULL);
    if (c < 0)
        return 1;
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    uint8_t *big = malloc(BIG);
    uint8_t op;
    for (;;) {
        ssize_t r = read(c, &op, 1);
        if (r <= 0)
            return 0;
        if (op == 'E') {
            full_read(c, big, PING);
            full_write(c, big, PING);
        } else if (op == 'P') {
            full_read(c, big, BIG);
            full_write(c, &op, 1);
        } else if (op == 'G') {
            full_write(c, big, BIG);
        } else {
            return 1;
        }
    }
}

/* start_echo spawns the echo process (exec, never a bare fork: the Go
 * runtime of libopenfam is already running) and connects to it. */
static pid_t start_echo(void)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 1) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &al) != 0) {
        perror("fambench: echo listener");
        exit(1);
    }
    char fdarg[16];
    snprintf(fdarg, sizeof fdarg, "%d", lfd);
    char *argv[] = {"fambench", "--echo", fdarg, NULL};
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) != 0) {
        perror("fambench: spawning the echo process");
        exit(1);
    }
    close(lfd);
    raw_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (raw_fd < 0 || connect(raw_fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("fambench: connecting to the echo process");
        exit(1);
    }
    int one = 1;
    setsockopt(raw_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return pid;
}

static void body_raw_ping(uint64_t iters)
{
    uint8_t m[1 + PING] = {'E'};
    for (uint64_t i = 0; i < iters; i++) {
        full_write(raw_fd, m, sizeof m);
        full_read(raw_fd, m + 1, PING);
    }
}

static void body_raw_put_big(uint64_t iters)
{
    uint8_t op = 'P';
    for (uint64_t i = 0; i < iters; i++) {
        full_write(raw_fd, &op, 1);
        full_write(raw_fd, buf_a, BIG);
        full_read(raw_fd, &op, 1);
    }
}

static void body_raw_get_big(uint64_t iters)
{
    uint8_t op = 'G';
    for (uint64_t i = 0; i < iters; i++) {
        full_write(raw_fd, &op, 1);
        full_read(raw_fd, buf_b, BIG);
    }
}

static void body_net_get_256(uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++)
        CHECK(fam_get_blocking(buf_b, net_item, 0, PING));
}

static void body_net_get_big(uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++)
        CHECK(fam_get_blocking(buf_b, net_item, 0, BIG));
}

static void body_net_put_big(uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++)
        CHECK(fam_put_blocking(buf_a, net_item, 0, BIG));
}

static void body_put_4k(uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++, pipe_next++)
        CHECK(fam_put_blocking(net_small, net_item, (pipe_next % PIPE_SLOTS) * SMALL_PUT, SMALL_PUT));
}

static void body_put_4k_nb(uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++, pipe_next++) {
        CHECK(fam_put_nonblocking(net_small, net_item, (pipe_next % PIPE_SLOTS) * SMALL_PUT, SMALL_PUT));
        if (i % QUIET_EVERY == QUIET_EVERY - 1)
            CHECK(fam_quiet());
    }
    CHECK(fam_quiet());
}

/* The data-plane figures of issue 3, each beside its baseline in the same
 * run, all process to process over loopback TCP: fam_get_blocking 256 B vs
 * a raw TCP ping-pong of 256 B with an echo process; fam_get/put_blocking
 * 4 MiB vs a raw single-stream transfer of 4 MiB to/from the echo process;
 * fam_put_nonblocking 4 KiB (fam_quiet every 256) vs fam_put_blocking 4 KiB.
 * Meant for OPENFAM_SERVER=HOST:PORT (famd over TCP); on a Unix socket items
 * are mapped and these are memcpy figures. */
static int net(void)
{
    pid_t echo = start_echo();
    if (fam_initialize("fambench", NULL) != 0)
        die("fam_initialize");
    char rname[OPENFAM_NAME_MAX + 1];
    snprintf(rname, sizeof rname, "fambench-net-%ld", (long)getpid());
    region = fam_create_region(rname, 8 << 20, 0600, NULL);
    if (region == NULL)
        die("fam_create_region");
    net_item = fam_allocate("net", BIG, 0600, region);
    if (net_item == NULL)
        die("fam_allocate");
    buf_a = aligned_alloc(4096, BIG);
    buf_b = aligned_alloc(4096, BIG);
    if (buf_a == NULL || buf_b == NULL) {
        fprintf(stderr, "fambench: out of memory\n");
        return 1;
    }
    memset(buf_a, 0x33, BIG);
    memset(net_small, 0x5a, sizeof net_small);
    if (json)
        printf("[");
    else
        printf("fambench --net: median of %d interleaved repeats, process to process; "
               "\"x time\" = FAM time / baseline time\n\n",
               repeats);
    double t[3];
    const body_fn lat[2] = {body_net_get_256, body_raw_ping};
    ns_per_op(lat, 2, t);
    report("fam_get_blocking 256 B", "us/op", t[0] / 1000, "raw TCP ping-pong 256 B", t[1] / 1000, NULL, 0, 0);
    const double bytes = (double)BIG;
    const body_fn get[2] = {body_net_get_big, body_raw_get_big};
    ns_per_op(get, 2, t);
    report("fam_get_blocking 4 MiB", "GB/s", bytes / t[0], "raw TCP stream 4 MiB in", bytes / t[1], NULL, 0, 1);
    const body_fn put[2] = {body_net_put_big, body_raw_put_big};
    ns_per_op(put, 2, t);
    report("fam_put_blocking 4 MiB", "GB/s", bytes / t[0], "raw TCP stream 4 MiB out", bytes / t[1], NULL, 0, 1);
    const body_fn pipe[2] = {body_put_4k_nb, body_put_4k};
    ns_per_op(pipe, 2, t);
    report("fam_put_nonblocking 4 KiB", "us/op", t[0] / 1000, "fam_put_blocking 4 KiB", t[1] / 1000, NULL, 0, 0);
    if (json)
        printf("\n]\n");
    close(raw_fd);
    waitpid(echo, NULL, 0);
    if (fam_deallocate(net_item) != 0 || fam_destroy_region(region) != 0)
        die("cleanup");
    fam_finalize("fambench");
    return 0;
}

/* ---- --persist (issue 20) ------------------------------------------------- */

enum { PPAGES = 4096, PPAGE = 4096 };
static fam_desc_t *p_small, *v_small, *p_big, *v_big4k;
static uint8_t p_page[PPAGE];

static void body_put_8_vol(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        CHECK(fam_put_blocking(word_src, v_small, 8, 8));
}
static void body_put_8_pers(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        CHECK(fam_put_blocking(word_src, p_small, 8, 8));
}
static void body_put4k_quiet_pers(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        CHECK(fam_put_blocking(p_page, p_big, (i % 64) * PPAGE, PPAGE));
        CHECK(fam_quiet());
    }
}
static void body_put4k_quiet_vol(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        CHECK(fam_put_blocking(p_page, v_big4k, (i % 64) * PPAGE, PPAGE));
        CHECK(fam_quiet());
    }
}

/* Median microseconds of one flush of n dirty pages, each kind: fam_quiet
 * after n 8-byte puts (one per page) to the persistent item; msync of the
 * same n pages of a plain shared file mapping after storing to them; and
 * fdatasync of that file after the same stores. */
static void flush_costs(int n, int reps, uint8_t *raw, int fd, double out[3])
{
    double s[3][64];
    uint64_t v = 1;
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < n; i++, v++)
            CHECK(fam_put_blocking(&v, p_big, (uint64_t)i * PPAGE, sizeof v));
        uint64_t t0 = now_ns();
        CHECK(fam_quiet());
        s[0][r] = (double)(now_ns() - t0) / 1000.0;

        for (int i = 0; i < n; i++, v++)
            memcpy(raw + (size_t)i * PPAGE, &v, sizeof v);
        t0 = now_ns();
        if (msync(raw, (size_t)n * PPAGE, MS_SYNC) != 0) {
            perror("fambench: msync");
            exit(1);
        }
        s[1][r] = (double)(now_ns() - t0) / 1000.0;

        for (int i = 0; i < n; i++, v++)
            memcpy(raw + (size_t)i * PPAGE, &v, sizeof v);
        t0 = now_ns();
        if (fdatasync(fd) != 0) {
            perror("fambench: fdatasync");
            exit(1);
        }
        s[2][r] = (double)(now_ns() - t0) / 1000.0;
    }
    for (int k = 0; k < 3; k++) {
        qsort(s[k], (size_t)reps, sizeof s[k][0], cmp_double);
        out[k] = s[k][reps / 2];
    }
}

static int persist_bench(void)
{
    if (fam_initialize("fambench", NULL) != 0)
        die("fam_initialize");
    const char *pol = getenv("OPENFAM_PERSIST");
    char pname[OPENFAM_NAME_MAX + 1], vname[OPENFAM_NAME_MAX + 1];
    snprintf(pname, sizeof pname, "fambench-p-%ld", (long)getpid());
    snprintf(vname, sizeof vname, "fambench-v-%ld", (long)getpid());
    fam_region_attr_t pattr = {FAM_REDUNDANCY_NONE, FAM_MEMORY_PERSISTENT, FAM_INTERLEAVE_DEFAULT,
                               FAM_PERMISSION_DEFAULT};
    fam_region_attr_t vattr = {FAM_REDUNDANCY_NONE, FAM_MEMORY_VOLATILE, FAM_INTERLEAVE_DEFAULT,
                               FAM_PERMISSION_DEFAULT};
    fam_region_t *pr = fam_create_region(pname, 32 << 20, 0600, &pattr);
    fam_region_t *vr = fam_create_region(vname, 32 << 20, 0600, &vattr);
    if (pr == NULL || vr == NULL)
        die("fam_create_region");
    p_small = fam_allocate("small", 64, 0600, pr);
    v_small = fam_allocate("small", 64, 0600, vr);
    p_big = fam_allocate("big", (uint64_t)PPAGES * PPAGE, 0600, pr);
    v_big4k = fam_allocate("big", (uint64_t)PPAGES * PPAGE, 0600, vr);
    if (p_small == NULL || v_small == NULL || p_big == NULL || v_big4k == NULL)
        die("fam_allocate");
    memset(p_page, 0x5a, sizeof p_page);

    printf("fambench --persist (OPENFAM_PERSIST=%s%s): medians of %d interleaved repeats\n\n",
           pol != NULL ? pol : "", pol != NULL ? "" : "unset, quiet", repeats);
    double t[4];
    const body_fn puts[3] = {body_put_8_vol, body_put_8_pers, body_memcpy_8};
    ns_per_op(puts, 3, t);
    printf("%-44s %9.3g ns/op\n", "fam_put_blocking 8 B, volatile item", t[0]);
    printf("%-44s %9.3g ns/op  (%.3fx volatile)\n", "fam_put_blocking 8 B, persistent item", t[1], t[1] / t[0]);
    printf("%-44s %9.3g ns/op\n\n", "memcpy 8 B", t[2]);

    const char *dir = getenv("FAMBENCH_RAW_DIR");
    if (dir == NULL)
        dir = getenv("OPENFAM_DATA_DIR");
    if (dir == NULL)
        dir = "/var/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/fambench-raw-%ld", dir, (long)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)PPAGES * PPAGE) != 0) {
        perror("fambench: raw file");
        return 1;
    }
    uint8_t *raw = mmap(NULL, (size_t)PPAGES * PPAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (raw == MAP_FAILED) {
        perror("fambench: mmap");
        return 1;
    }
    /* First writes allocate the file's blocks: do them outside the timing,
     * as the item's pages were allocated (zeroed) by fam_allocate. */
    memset(raw, 0, (size_t)PPAGES * PPAGE);
    if (fdatasync(fd) != 0)
        return 1;
    for (int i = 0; i < PPAGES; i++)
        CHECK(fam_put_blocking(p_page, p_big, (uint64_t)i * PPAGE, 8));
    CHECK(fam_quiet());

    printf("%-12s %16s %16s %16s\n", "dirty pages", "fam_quiet us", "msync us", "fdatasync us");
    const int ns[3] = {1, 64, PPAGES};
    for (int k = 0; k < 3; k++) {
        double c[3];
        flush_costs(ns[k], repeats, raw, fd, c);
        printf("%-12d %16.1f %16.1f %16.1f\n", ns[k], c[0], c[1], c[2]);
    }
    munmap(raw, (size_t)PPAGES * PPAGE);
    close(fd);
    unlink(path);

    const body_fn remote[2] = {body_put4k_quiet_vol, body_put4k_quiet_pers};
    ns_per_op(remote, 2, t);
    printf("\n%-44s %9.1f us/op\n", "fam_put_blocking 4 KiB + fam_quiet, volatile", t[0] / 1000.0);
    printf("%-44s %9.1f us/op  (%.2fx)\n", "fam_put_blocking 4 KiB + fam_quiet, persistent", t[1] / 1000.0,
           t[1] / t[0]);

    fam_destroy_region(pr);
    fam_destroy_region(vr);
    fam_finalize("fambench");
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fambench [--json] [--repeats N] [--net | --get-mib M | --persist] [--help] [--version]\n"
            "\n"
            "Measures the OpenFAM C API against plain-memory baselines in the same run:\n"
            "  fam_get_blocking / fam_put_blocking 4 MiB vs memcpy 4 MiB (GB/s),\n"
            "  fam_get_blocking 8 B and fam_fetch_add_int64 vs an 8-byte memcpy,\n"
            "  an empty call through a function pointer and __atomic_fetch_add (ns/op),\n"
            "  fam_allocate + fam_deallocate, named and unnamed (us/op).\n"
            "Each figure is the median of N repeats (default 7, at most 63) of about 50 ms.\n"
            "\n"
            "  --json        print the results as a JSON array\n"
            "  --repeats N   repeats per figure\n"
            "  --net         measure the famd data plane (OPENFAM_SERVER=HOST:PORT) against\n"
            "                raw TCP to an echo process: 256 B get vs ping-pong, 4 MiB\n"
            "                get/put vs a single stream, non-blocking vs blocking 4 KiB puts\n"
            "  --get-mib M   measure only fam_get_blocking of one M MiB item in a region\n"
            "                with default attributes (interleaved over every memory\n"
            "                server of the famd in OPENFAM_SERVER); see tests/stripe-bench.sh\n"
            "  --persist     persistence (issue 20): fam_put_blocking 8 B on a volatile and\n"
            "                a persistent item; fam_quiet after 1, 64 and 4096 dirty 4 KiB\n"
            "                pages of a persistent item vs msync(MS_SYNC) of the same pages\n"
            "                of a plain file mapping and vs fdatasync of that file (the\n"
            "                file lies in $FAMBENCH_RAW_DIR, else $OPENFAM_DATA_DIR, else\n"
            "                /var/tmp); fam_put_blocking 4 KiB + fam_quiet on a persistent\n"
            "                vs a volatile item (over the network with OPENFAM_SERVER)\n"
            "  --help        this text\n"
            "  --version     print fambench's version and exit\n"
            "\n"
            "The store is the one fam_initialize finds: the embedded store under\n"
            "OPENFAM_DATA_DIR / OPENFAM_SHM_DIR unless OPENFAM_SERVER is set.\n");
}

int main(int argc, char **argv)
{
    uint64_t get_mib = 0;
    int net_mode = 0, persist_mode = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("fambench %s\n", OPENFAM_VERSION);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
            if (repeats < 1 || repeats > 63) {
                fprintf(stderr, "fambench: --repeats must be 1..63\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--net") == 0) {
            net_mode = 1;
        } else if (strcmp(argv[i], "--persist") == 0) {
            persist_mode = 1;
        } else if (strcmp(argv[i], "--echo") == 0 && i + 1 < argc) {
            return echo_server(atoi(argv[i + 1]));
        } else if (strcmp(argv[i], "--get-mib") == 0 && i + 1 < argc) {
            get_mib = strtoull(argv[++i], NULL, 10);
            if (get_mib < 1 || get_mib > 4096) {
                fprintf(stderr, "fambench: --get-mib must be 1..4096\n");
                return 2;
            }
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (persist_mode)
        return persist_bench();
    if (get_mib > 0)
        return get_wide(get_mib);
    if (net_mode)
        return net();

    if (fam_initialize("fambench", NULL) != 0)
        die("fam_initialize");
    char rname[OPENFAM_NAME_MAX + 1];
    snprintf(rname, sizeof rname, "fambench-%ld", (long)getpid());
    fam_region_attr_t attr = {FAM_REDUNDANCY_NONE, FAM_MEMORY_VOLATILE, FAM_INTERLEAVE_DEFAULT,
                              FAM_PERMISSION_DEFAULT};
    region = fam_create_region(rname, 64 << 20, 0600, &attr);
    if (region == NULL)
        die("fam_create_region");
    big_item = fam_allocate("big", BIG, 0600, region);
    small_item = fam_allocate("small", 64, 0600, region);
    if (big_item == NULL || small_item == NULL)
        die("fam_allocate");
    buf_a = aligned_alloc(4096, BIG);
    buf_b = aligned_alloc(4096, BIG);
    if (buf_a == NULL || buf_b == NULL) {
        fprintf(stderr, "fambench: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < BIG; i++)
        buf_a[i] = (uint8_t)(i * 31);
    memset(buf_b, 0, BIG);
    CHECK(fam_put_blocking(buf_a, big_item, 0, BIG));

    if (json)
        printf("[");
    else
        printf("fambench: median of %d interleaved repeats; \"x time\" = FAM time / baseline time\n\n",
               repeats);

    const double bytes = (double)BIG; /* bytes per ns == GB/s (10^9 bytes/s) */
    double t[4];
    const body_fn big[3] = {body_memcpy_big, body_get_big, body_put_big};
    ns_per_op(big, 3, t);
    report("fam_get_blocking 4 MiB", "GB/s", bytes / t[1], "memcpy 4 MiB", bytes / t[0], NULL, 0, 1);
    report("fam_put_blocking 4 MiB", "GB/s", bytes / t[2], "memcpy 4 MiB", bytes / t[0], NULL, 0, 1);

    const body_fn small[3] = {body_get_8, body_memcpy_8, body_call};
    ns_per_op(small, 3, t);
    report("fam_get_blocking 8 B", "ns/op", t[0], "memcpy 8 B", t[1], "empty call via fn pointer", t[2], 0);
    const double call = t[2];

    const body_fn atomics[2] = {body_fetch_add, body_atomic};
    ns_per_op(atomics, 2, t);
    report("fam_fetch_add_int64", "ns/op", t[0], "__atomic_fetch_add", t[1], "empty call via fn pointer", call,
           0);

    const body_fn alloc[2] = {body_alloc_named, body_alloc_unnamed};
    ns_per_op(alloc, 2, t);
    double named = t[0] / 1000.0, unnamed = t[1] / 1000.0;
    if (json) {
        printf(",\n  {\"name\": \"fam_allocate+fam_deallocate named\", \"unit\": \"us/op\", \"value\": %.4g}",
               named);
        printf(",\n  {\"name\": \"fam_allocate+fam_deallocate unnamed\", \"unit\": \"us/op\", \"value\": %.4g}\n]\n",
               unnamed);
    } else {
        printf("%-31s %9.3g us/op\n", "fam_allocate+deallocate named", named);
        printf("%-31s %9.3g us/op\n", "fam_allocate+deallocate unnamed", unnamed);
    }

    free(buf_a);
    free(buf_b);
    CHECK(fam_deallocate(big_item));
    CHECK(fam_deallocate(small_item));
    CHECK(fam_destroy_region(region));
    CHECK(fam_finalize("fambench"));
    return 0;
}
