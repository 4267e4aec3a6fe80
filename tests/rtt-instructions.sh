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
work=$(mktemp -d)
famd=""
cleanup() {
  if [ -n "$famd" ]; then kill "$famd" 2>/dev/null || true; wait "$famd" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

famd_args=""
prog=rtt-instructions
# The client (tests/rtt/oploop.c) and one famd on loopback for it.
. "$root/tests/rtt/famd.sh"

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
