#!/usr/bin/env bash
# Traces RAID1 256 B puts against NONE ones (issue 16), run by
# tests/raid-bench.sh with the servers up (make raid-trace):
#
#  1. ROUNDS alternations of NONE and RAID1 put loops: wall and CPU time per
#     put of raidtrace and of each memory famd.
#  2. With perf (root): the scheduler's switches around the client's two
#     sendto(2) of each RAID1 put (perf record of sched_switch and the
#     sendto tracepoints, all CPUs), summarised by sched-gap.py: how often
#     the client lost its CPU between writing the first copy's frame and
#     the second's, to whom, and the gap between the two writes.
#
#   tests/raid/raidtrace.sh RAIDTRACE [ROUNDS]
set -euo pipefail
tr=$1 rounds=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
echo "raid-trace: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); memory famds $RAIDBENCH_PIDS"
for ((k = 0; k < rounds; k++)); do
  for l in none raid1; do "$tr" "$l" put 4000 256 1000; done
done
if command -v perf >/dev/null && [ "$(id -u)" = 0 ]; then
  data=$(mktemp /tmp/raidtrace-XXXXXX.data)
  trap 'rm -f "$data"' EXIT
  perf record -q -a -e sched:sched_switch -e syscalls:sys_enter_sendto -e syscalls:sys_exit_sendto -o "$data" \
    -- "$tr" raid1 put 4000 256 1000
  perf script -i "$data" -F comm,tid,cpu,time,event,trace 2>/dev/null |
    python3 "$here/sched-gap.py" "$(basename "$tr")" $RAIDBENCH_PIDS
else
  echo "raid-trace: no perf, or not root: no scheduler trace"
fi
echo "raid-trace: load $(cut -d' ' -f1-3 /proc/loadavg)"
