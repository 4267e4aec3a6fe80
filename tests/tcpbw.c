/*
 * tcpbw: the most one-way streaming TCP carries over loopback on this
 * host, the ceiling for any TCP-based libfabric provider's bulk transfers
 * (tests/fabric-bench.sh, issue 15). No protocol: a sender writes 4 MiB
 * buffers back to back (pipelined, nothing waits for an answer) and a
 * receiver reads them, in two processes.
 *
 *   tcpbw [conns [bufsize [seconds]]]
 *   tcpbw memcpy
 *   tcpbw rr [late]
 *
 * conns connections at once (default 1; sender i and receiver i each run
 * in their own process), bufsize sets SO_SNDBUF and SO_RCVBUF (0, the
 * default, leaves the kernel's autotuning). Prints one line: GB/s over all
 * connections, and the CPU time (both ends, user + system) per MiB moved,
 * which says what the kernel's copies cost per byte.
 *
 * Started from the lead's /tmp/tcpbw.c (2.7-3.8 GB/s on a quiet host).
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SZ (4 << 20)

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu(int who)
{
	struct rusage r;
	getrusage(who, &r);
	return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/*
 * tcpbw memcpy: what one core copies in user space (a 4 MiB memcpy in a
 * loop for a second), then two processes at once, each: whether the two
 * cores copy twice as much together, which overlapping a transfer's two
 * copies (sender's and receiver's) relies on.
 */
static double copyrate(void)
{
	char *a = malloc(SZ), *b = malloc(SZ);
	memset(a, 1, SZ);
	memset(b, 2, SZ);
	double t0 = now(), dt;
	long n = 0;
	while ((dt = now() - t0) < 1) {
		memcpy(b, a, SZ);
		__asm__ volatile("" ::: "memory"); /* keep every copy */
		n++;
	}
	return n * (double)SZ / dt / 1e9;
}

static int memcpymode(void)
{
	printf("tcpbw memcpy: one process %.2f GB/s", copyrate());
	int fds[2][2];
	for (int i = 0; i < 2; i++) {
		if (pipe(fds[i]))
			die("pipe");
		if (fork() == 0) {
			double r = copyrate();
			if (write(fds[i][1], &r, sizeof r) != sizeof r)
				die("pipe write");
			_exit(0);
		}
	}
	double r[2];
	for (int i = 0; i < 2; i++)
		if (read(fds[i][0], &r[i], sizeof r[i]) != sizeof r[i])
			die("pipe read");
	while (wait(0) > 0)
		;
	printf("; two at once %.2f + %.2f = %.2f GB/s\n", r[0], r[1], r[0] + r[1]);
	return 0;
}

/*
 * tcpbw rr [late]: request/response, as a 4 MiB get: the client sends 16
 * bytes, the server answers 4 MiB, for 2 s, both sockets with 16 MiB
 * buffers. With "late" the client reads the answer only once the server
 * has written all of it (the server says so over a pipe): the two copies
 * never overlap, to compare their CPU cost with overlapping ones.
 */
static int rrmode(int late)
{
	int bufsz = 16 << 20;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
	socklen_t al = sizeof a;
	if (l < 0 || bind(l, (void *)&a, sizeof a) || listen(l, 1) || getsockname(l, (void *)&a, &al))
		die("listen");
	int done[2];
	if (pipe(done))
		die("pipe");
	char req[16] = {0};
	if (fork() == 0) { /* server */
		int c = accept(l, 0, 0);
		if (c < 0)
			die("accept");
		setsockopt(c, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof bufsz);
		char *b = malloc(SZ);
		memset(b, 1, SZ);
		while (read(c, req, sizeof req) == sizeof req) {
			for (size_t o = 0; o < SZ;) {
				ssize_t n = write(c, b + o, SZ - o);
				if (n <= 0)
					die("write");
				o += n;
			}
			if (late && write(done[1], "x", 1) != 1)
				die("pipe write");
		}
		_exit(0);
	}
	int s = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof bufsz);
	if (s < 0 || connect(s, (void *)&a, sizeof a))
		die("connect");
	char *b = malloc(SZ);
	memset(b, 2, SZ);
	double t0 = now(), c0 = cpu(RUSAGE_SELF);
	long k = 0;
	while (now() - t0 < 2) {
		if (write(s, req, sizeof req) != sizeof req)
			die("request");
		char x;
		if (late && read(done[0], &x, 1) != 1)
			die("pipe read");
		for (size_t o = 0; o < SZ;) {
			ssize_t n = read(s, b + o, SZ - o);
			if (n <= 0)
				die("read");
			o += n;
		}
		k++;
	}
	double dt = now() - t0, cc = cpu(RUSAGE_SELF) - c0;
	close(s);
	while (wait(0) > 0)
		;
	double c = cc + cpu(RUSAGE_CHILDREN);
	printf("tcpbw rr%s: %.2f GB/s request/response 4 MiB, %.0f us CPU per MiB (both ends), %.2f s\n",
	       late ? " late" : "", k * (double)SZ / dt / 1e9, c / (k * 4.0) * 1e6, dt);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "memcpy") == 0)
		return memcpymode();
	if (argc > 1 && strcmp(argv[1], "rr") == 0)
		return rrmode(argc > 2 && strcmp(argv[2], "late") == 0);
	int conns = argc > 1 ? atoi(argv[1]) : 1;
	int bufsz = argc > 2 ? atoi(argv[2]) : 0;
	double secs = argc > 3 ? atof(argv[3]) : 2;
	if (conns < 1 || conns > 64 || secs <= 0) {
		fprintf(stderr, "usage: tcpbw [conns [bufsize [seconds]]]\n");
		return 2;
	}
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
	socklen_t al = sizeof a;
	if (l < 0 || bind(l, (void *)&a, sizeof a) || listen(l, conns) || getsockname(l, (void *)&a, &al))
		die("listen");
	/* One pipe per sender for its byte count: int64 bytes, then done. */
	int fds[64][2];
	for (int i = 0; i < conns; i++) {
		if (pipe(fds[i]))
			die("pipe");
		if (fork() == 0) { /* receiver */
			int c = accept(l, 0, 0);
			if (c < 0)
				die("accept");
			if (bufsz)
				setsockopt(c, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof bufsz);
			char *b = malloc(SZ);
			memset(b, 1, SZ);
			while (read(c, b, SZ) > 0)
				;
			_exit(0);
		}
	}
	double t0 = now();
	for (int i = 0; i < conns; i++) {
		if (fork() == 0) { /* sender */
			int s = socket(AF_INET, SOCK_STREAM, 0);
			if (bufsz)
				setsockopt(s, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof bufsz);
			if (s < 0 || connect(s, (void *)&a, sizeof a))
				die("connect");
			char *b = malloc(SZ);
			memset(b, 2, SZ);
			long long tot = 0;
			while (now() - t0 < secs) {
				for (size_t o = 0; o < SZ;) {
					ssize_t n = write(s, b + o, SZ - o);
					if (n <= 0)
						die("write");
					o += n;
				}
				tot += SZ;
			}
			if (write(fds[i][1], &tot, sizeof tot) != sizeof tot)
				die("pipe write");
			_exit(0);
		}
	}
	long long tot = 0;
	for (int i = 0; i < conns; i++) {
		long long n = 0;
		if (read(fds[i][0], &n, sizeof n) != sizeof n)
			die("pipe read");
		tot += n;
	}
	double dt = now() - t0;
	while (wait(0) > 0)
		;
	double c = cpu(RUSAGE_CHILDREN);
	printf("tcpbw: %d connection(s), SO_SNDBUF/SO_RCVBUF %s%d: %.2f GB/s streaming 4 MiB writes one way, %.0f us CPU per MiB (both ends), %.2f s\n",
	       conns, bufsz ? "" : "default ", bufsz, tot / dt / 1e9, c / (tot / 1048576.0) * 1e6, dt);
	return 0;
}
