"""Summarises a perf script of sched_switch and sendto tracepoints (see
raidtrace.sh): for each RAID1 put of the client (two sendto calls on two
sockets, back to back in its code), whether the client thread was switched
out between entering the first and entering the second, to which process,
and the time from the first's exit to the second's entry.

    perf script -F comm,tid,cpu,time,event,trace | sched-gap.py COMM FAMD_PID...
"""
import collections
import os
import re
import sys

comm, famds = sys.argv[1], [int(p) for p in sys.argv[2:]]
# The memory famds' threads, read while they still run.
famd_tids = set()
for p in famds:
    try:
        famd_tids.update(int(t) for t in os.listdir("/proc/%d/task" % p))
    except OSError:
        famd_tids.add(p)
line_re = re.compile(r"^\s*(\S+)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$")
switch_re = re.compile(r"prev_pid=(\d+).*prev_state=(\S+) ==> next_comm=(\S+) next_pid=(\d+)")


seq = []  # (kind, time us, tid, detail)
for line in sys.stdin:
    m = line_re.match(line)
    if not m:
        continue
    c, tid, t, ev, rest = m.group(1), int(m.group(2)), float(m.group(4)) * 1e6, m.group(5), m.group(6)
    if ev == "sched:sched_switch":
        s = switch_re.search(rest)
        if s:
            seq.append(("sw", t, int(s.group(1)), (s.group(2), s.group(3), int(s.group(4)))))
    elif c == comm and ev == "syscalls:sys_enter_sendto":
        seq.append(("enter", t, tid, re.search(r"fd: (\S+),", rest).group(1)))
    elif c == comm and ev == "syscalls:sys_exit_sendto":
        seq.append(("exit", t, tid, None))

pairs = []  # (gap us, switches)
k = 0
while k < len(seq):
    if seq[k][0] != "enter":
        k += 1
        continue
    tid, fd_a, t_enter = seq[k][2], seq[k][3], seq[k][1]
    j, sws = k + 1, []
    while j < len(seq) and not (seq[j][0] == "exit" and seq[j][2] == tid):
        if seq[j][0] == "sw" and seq[j][2] == tid:
            sws.append(seq[j])
        j += 1
    if j >= len(seq):
        break
    t_exit = seq[j][1]
    j += 1
    while j < len(seq) and not (seq[j][0] == "enter" and seq[j][2] == tid):
        if seq[j][0] == "sw" and seq[j][2] == tid:
            sws.append(seq[j])
        j += 1
    if j >= len(seq):
        break
    if seq[j][3] == fd_a:  # not a two-copy pair
        k = j
        continue
    pairs.append((seq[j][1] - t_exit, sws))
    k = j + 1
    while k < len(seq) and not (seq[k][0] == "exit" and seq[k][2] == tid):
        k += 1
    k += 1

if not pairs:
    sys.exit("sched-gap: no pair of sendto calls found")


def pct(v, p):
    v = sorted(v)
    return v[min(int(len(v) * p), len(v) - 1)] if v else float("nan")


out = [p for p in pairs if p[1]]
gaps = [p[0] for p in pairs]
print("raid-trace: %d RAID1 puts; the client lost its CPU between its two writes in %d (%.0f%%)"
      % (len(pairs), len(out), 100.0 * len(out) / len(pairs)))
print("raid-trace: first write's exit to second write's entry: median %.0f us, p90 %.0f us; without a switch: median %.0f us"
      % (pct(gaps, 0.5), pct(gaps, 0.9), pct([p[0] for p in pairs if not p[1]], 0.5)))
to = collections.Counter()
for _, sws in out:
    for _, _, _, (state, nc, np) in sws:
        to[("preempted" if state == "R" else "slept", "a memory famd of the bench" if np in famd_tids else nc)] += 1
print("raid-trace: switched to:", ", ".join("%s %s x%d" % (a, b, n) for (a, b), n in to.most_common(5)))
