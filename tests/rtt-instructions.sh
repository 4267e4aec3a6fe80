#!/usr/bin/env bash
# rtt-instructions.sh - issue 19's client-side work per small operation in
# instructions, counted by valgrind's callgrind in a C program calling
# libopenfam against famd over TCP on loopback: the Go side of a call
# (everything under the cgo callback), the transport's send and wait, and
# the polling for the reply, which depends on how long the reply took and
# so is shown apart (wait excludes it); the client polls long enough
# (OPENFAM_SPIN=50ms) that no call parks. Each figure is the difference of
# runs of N1 and N2 operations divided by N2-N1, so set-up costs cancel.
# Instructions move far less than time with the host's load: compare two
# builds with --bindir, alternating and taking medians of a few runs (a
# call whose thread lost its P to sysmon while callgrind slowed it takes
# the scheduler's slow path: runs vary by some hundreds of instructions,
# more for the pre-raw-I/O builds whose reads and writes released the P).
# famd itself does not run under callgrind (the tool fails on its signal
# handling). Needs valgrind, callgrind_annotate, cc, DIR/famd and
# DIR/../lib/libopenfam.so.0.
#
#   tests/rtt-instructions.sh [--bindir DIR] [--ops "get8 put8 get256 put256 fadd addq"]
#                             [--n1 N] [--n2 N]
set -euo pipefail
bindir="" ops="get8 put8 get256 put256 fadd addq" n1=2000 n2=6000
while [ $# -gt 0 ]; do
  case "$1" in
    --bindir) bindir=$(cd "$2" && pwd); shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --n1) n1=$2; shift 2 ;;
    --n2) n2=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "rtt-instructions: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
[ -n "$bindir" ] || bindir=$root/build/bin
for t in valgrind callgrind_annotate cc; do
  command -v $t >/dev/null || { echo "rtt-instructions: needs $t" >&2; exit 1; }
done
export LD_LIBRARY_PATH="$bindir/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=$(mktemp -d)
famd=""
cleanup() {
  if [ -n "$famd" ]; then kill "$famd" 2>/dev/null || true; wait "$famd" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The client: N operations of one kind (the program of rtt-syscalls.sh).
cat > "$work/oploop.c" <<'EOF'
#include <openfam.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    const char *op = argv[1];
    long n = atol(argv[2]);
    if (fam_initialize("rtt-syscalls", NULL) != 0)
        return 1;
    char rname[64];
    snprintf(rname, sizeof rname, "rtt-syscalls-%ld", (long)getpid());
    fam_region_attr_t attr = {FAM_REDUNDANCY_NONE, FAM_MEMORY_VOLATILE, FAM_INTERLEAVE_DEFAULT,
                              FAM_PERMISSION_DEFAULT};
    fam_region_t *r = fam_create_region(rname, 1 << 20, 0600, &attr);
    fam_desc_t *d = r ? fam_allocate("x", 4096, 0600, r) : NULL;
    if (d == NULL)
        return 1;
    static uint8_t buf[256];
    int64_t old;
    for (long i = 0; i < n; i++) {
        int rc;
        if (!strcmp(op, "get8"))
            rc = fam_get_blocking(buf, d, (i & 7) * 8, 8);
        else if (!strcmp(op, "put8"))
            rc = fam_put_blocking(buf, d, (i & 7) * 8, 8);
        else if (!strcmp(op, "get256"))
            rc = fam_get_blocking(buf, d, 256, 256);
        else if (!strcmp(op, "put256"))
            rc = fam_put_blocking(buf, d, 256, 256);
        else if (!strcmp(op, "fadd"))
            rc = fam_fetch_add_int64(d, 1024, 1, &old);
        else if (!strcmp(op, "addq"))
            rc = fam_add_int64(d, 1024, 1) || fam_quiet();
        else
            return 2;
        if (rc)
            return 1;
    }
    fam_deallocate(d);
    fam_destroy_region(r);
    fam_finalize("rtt-syscalls");
    return 0;
}
EOF

cc -O2 -I"$root/include" -o "$work/oploop" "$work/oploop.c" -L"$bindir/../lib" -lopenfam

head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/token"; chmod 600 "$work/token"
"$bindir/famd" --listen tcp://127.0.0.1:0 --socket "$work/famd.sock" --token-file "$work/token" \
  --tcp-identity "$(id -u):$(id -g)" --data-dir "$work/data" --shm-dir "$work/shm" >"$work/famd.log" 2>&1 &
famd=$!
for _ in $(seq 200); do grep -q serving "$work/famd.log" 2>/dev/null && break; sleep 0.05; done
port=$(grep -o 'tcp://127.0.0.1:[0-9]*' "$work/famd.log" | head -1 | sed 's/.*://')
[ -n "$port" ] || { echo "rtt-instructions: famd did not start:"; cat "$work/famd.log"; exit 1; }
export OPENFAM_TOKEN_FILE="$work/token" OPENFAM_SERVER=127.0.0.1:$port

echo "== client instructions per operation over TCP ($bindir); difference of $n1 and $n2 operations"
for op in $ops; do
  for n in "$n1" "$n2"; do
    # Asynchronous preemption signals upset callgrind; they change no
    # instruction of the path measured. The client polls for its reply
    # for as long as callgrind's slowness needs, so that no call parks:
    # a parked call's scheduling work would blur the comparison.
    OPENFAM_SPIN=50ms GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$work/cg.$n" \
      "$work/oploop" "$op" "$n" >"$work/vg.$n" 2>&1 || { echo "rtt-instructions: $op under callgrind failed:"; tail "$work/vg.$n"; exit 1; }
    callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$work/cg.$n" >"$work/an.$n" 2>/dev/null
  done
  python3 - "$work" "$op" "$n1" "$n2" <<'PY'
import re, sys
w, op, n1, n2 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
figs = {'go': 'runtime.cgocallbackg [', 'send': 'transport.(*cconn).send [',
        'wait': 'transport.(*req).wait [', 'poll': 'transport.(*spinReader).poll ['}
def counts(f):
    d = {}
    for line in open(f):
        for k, pat in figs.items():
            if k not in d and pat in line:
                d[k] = int(line.split()[0].replace(',', ''))
    return d
a, b = counts(f'{w}/an.{n1}'), counts(f'{w}/an.{n2}')
per = {k: (b.get(k, 0) - a.get(k, 0)) / (n2 - n1) for k in figs}
print(f"{op:7} go={per['go'] - per['poll']:.0f}  send={per['send']:.0f}  wait={per['wait'] - per['poll']:.0f}"
      f"  poll={per['poll']:.0f}  (go, wait: without poll)")
PY
done
