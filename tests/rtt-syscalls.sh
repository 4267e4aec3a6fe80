#!/usr/bin/env bash
# rtt-syscalls.sh - issue 19's deterministic figures: system calls, thread
# wake-ups and context switches per small operation, on the client (a C
# program calling libopenfam) and on famd, over TCP on loopback. Each
# figure is the difference of two runs of N1 and N2 operations divided by
# N2-N1, so set-up costs cancel. Unlike wall-clock latency, these hardly
# move with the host's load: the useful evidence on a shared machine.
# Needs perf (tracepoints readable: root or perf_event_paranoid <= 1), cc,
# build/bin/famd and build/lib/libopenfam.so.0.
#
#   tests/rtt-syscalls.sh [--bindir DIR] [--ops "get8 put8 get256 put256 fadd addq"]
#                         [--n1 N] [--n2 N] [--famd-args "ARGS"] [--unix]
#
# Ops besides the small data operations: alloc (fam_allocate + fam_deallocate
# of 1 KiB), lookup (fam_lookup + fam_close), lookupr (fam_lookup_region +
# fam_close_region), the control calls issue 19 times. --unix talks to famd
# on its Unix socket instead of TCP.
#
# Polling reads that find nothing (read/recvfrom returning EAGAIN, with a
# sched_yield each) are counted too: they grow with the time a reply
# takes, the rest does not. --bindir takes famd from DIR and the library
# from DIR/../lib (default build/bin).
set -euo pipefail
bindir="" ops="get8 put8 get256 put256 fadd addq" n1=2000 n2=12000 famd_args="" unix=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bindir) bindir=$(cd "$2" && pwd); shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --n1) n1=$2; shift 2 ;;
    --n2) n2=$2; shift 2 ;;
    --famd-args) famd_args=$2; shift 2 ;;
    --unix) unix=1; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "rtt-syscalls: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
[ -n "$bindir" ] || bindir=$root/build/bin
command -v perf >/dev/null || { echo "rtt-syscalls: needs perf" >&2; exit 1; }
work=$(mktemp -d)
famd=""
cleanup() {
  if [ -n "$famd" ]; then kill "$famd" 2>/dev/null || true; wait "$famd" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

prog=rtt-syscalls
# The client (tests/rtt/oploop.c) and one famd on loopback for it.
. "$root/tests/rtt/famd.sh"
how="over TCP"
if [ "$unix" = 1 ]; then
  OPENFAM_SERVER=unix:$work/famd.sock how="on famd's Unix socket"
fi

ev=raw_syscalls:sys_enter,syscalls:sys_enter_write,syscalls:sys_enter_sendto,syscalls:sys_enter_read,syscalls:sys_enter_recvfrom
ev=$ev,syscalls:sys_enter_sched_yield,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_futex
ev=$ev,syscalls:sys_enter_setsockopt,syscalls:sys_enter_recvmsg,syscalls:sys_enter_sendmsg,sched:sched_wakeup,context-switches
echo "== per operation $how (famd ${famd_args:-default flags}; client OPENFAM_SPIN ${OPENFAM_SPIN:-default});" \
  "difference of $n1 and $n2 operations; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for op in $ops; do
  for n in "$n1" "$n2"; do
    perf stat -x, -e "$ev" -p "$famd" -o "$work/srv.$n" 2>/dev/null &
    pp=$!
    sleep 0.3 # perf attaching; the counts are differences, so its start adds nothing
    perf stat -x, -e "$ev" -o "$work/cli.$n" "$work/oploop" "$op" "$n" ||
      { echo "rtt-syscalls: $op failed"; exit 1; }
    kill -INT "$pp"; wait "$pp" || true
  done
  python3 - "$work" "$op" "$n1" "$n2" <<'PY'
import sys
w, op, n1, n2 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def counts(f):
    d = {}
    for line in open(f):
        p = line.strip().split(',')
        if len(p) > 3 and p[0][:1].isdigit():
            d[p[2].replace('raw_syscalls:sys_enter', 'syscalls').replace('syscalls:sys_enter_', '')
                  .replace('sched:sched_', '')] = int(p[0])
    return d
for side in ('client', 'famd'):
    a = counts(f'{w}/{"cli" if side == "client" else "srv"}.{n1}')
    b = counts(f'{w}/{"cli" if side == "client" else "srv"}.{n2}')
    print(f'{op:7} {side:6}', '  '.join(f'{k}={(b[k] - a[k]) / (n2 - n1):.2f}' for k in a if k in b))
PY
done
