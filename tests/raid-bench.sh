#!/usr/bin/env bash
# Figures for redundant regions (issue 16), in one run on one set of
# servers: a metadata famd and 3 memory famds (processes on this host, the
# PEs reaching the memory famds on their data-plane Unix sockets; famd's
# default 1 MiB interleave blocks).
#
#  1. raidbench ops: put and get of 256 B and 4 MiB and fetch_add on NONE,
#     RAID1 and RAID5 regions, in turns, median of ROUNDS rounds, with the
#     ratios to NONE (the issue asks RAID1 put <= 1.3x, get <= 1.05x,
#     fetch_add <= 1.5x). The small operations stay on one server for 256
#     in a row; "fadd rot" moves to the next server on every fetch_add,
#     which then pays a sleeping server's wake-up (tests/raid/raidbench.c).
#  2. RAID5: fill a region (4 MiB put bandwidth), read it whole, kill -9
#     memory famd 3 and read it whole again (degraded-read bandwidth, by
#     reconstruction), restart memory famd 3 and time its rebuild.
#  3. A 1 GiB RAID1 region: fill it, kill -9 memory famd 2, restart it at
#     once and time the rebuild (restart to famctl servers --json showing
#     it up again), with famctl's rebuild byte counts when it gives them.
#
#   tests/raid-bench.sh BINDIR RAIDBENCH [ROUNDS] [REBUILD_MIB]
#   (RAIDBENCH_REBUILD_WAIT: seconds a rebuild may take, default 1800;
#   RAIDBENCH_OPS_ONLY=1: part 1 alone; RAIDBENCH_FAMD_ARGS: more flags for
#   the memory famds, e.g. --spin 0; RAIDBENCH_CMD: a shell command run
#   instead of the parts, with the servers up, OPENFAM_* set for it and
#   RAIDBENCH_PIDS naming the memory famds, e.g. tests/raid/raidtrace.sh)
#
# Part 1 prints the CPU time per operation beside the wall time: that of
# raidbench and the three memory famds together (RAIDBENCH_PIDS). A RAID1
# write is twice the servers' work of a NONE one; where the host has fewer
# free cores than busy processes that work, not the protocol, sets the
# wall time.
set -euo pipefail
bindir=$(cd "$1" && pwd) bench=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
rounds=${3:-9} rebuild_mib=${4:-1024}
command -v jq >/dev/null || { echo "raid-bench: needs jq"; exit 1; }
work=$(mktemp -d /tmp/raidbench-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work" /dev/shm/raidbench-"$$"
}
trap cleanup EXIT
# A signal ends the script through exit, so that cleanup runs.
trap 'exit 130' INT TERM HUP
say() { echo "raid-bench: $*"; }
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token"; chmod 600 "$work/token"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/server-token"; chmod 600 "$work/server-token"
shm=/dev/shm/raidbench-$$
[ -d /dev/shm ] && [ -w /dev/shm ] || shm=$work/shm

# wait_log SECONDS FILE TEXT
wait_log() {
  local end=$(( $(date +%s) + $1 ))
  until grep -q "$3" "$2" 2>/dev/null; do
    [ "$(date +%s)" -lt "$end" ] || { say "no \"$3\" in $2 within $1s:"; cat "$2"; exit 1; }
    sleep 0.1
  done
}

"$bindir/famd" --role metadata --socket "$work/meta.sock" --server-token-file "$work/server-token" \
  --data-dir "$work/meta" --shm-dir "$shm/meta" >"$work/meta.log" 2>&1 &
pids+=($!)
wait_log 120 "$work/meta.log" serving

declare -A mpid margs mid
start_mem() {
  local k=$1 log=$work/mem$1.$(date +%s%N).log
  "${margs_arr[@]}" >"$log" 2>&1 &
  mpid[$k]=$!
  pids+=($!)
  wait_log 120 "$log" "joined the metadata famd"
  mid[$k]=$(sed -n 's/.*as memory server \([0-9]*\).*/\1/p' "$log")
  lastlog=$log
}
for k in 1 2 3; do
  margs_arr=("$bindir/famd" --role memory --join "unix:$work/meta.sock" --listen tcp://127.0.0.1:0
    --token-file "$work/token" --server-token-file "$work/server-token" --socket "$work/mem$k.data.sock"
    --data-dir "$work/mem$k" --shm-dir "$shm/mem$k" ${RAIDBENCH_FAMD_ARGS:-})
  start_mem "$k"
  ctl=$(sed -n 's/.*control gRPC on tcp:\/\/\([^,]*\),.*/\1/p' "$lastlog")
  data=$(sed -n 's/.*data plane tcp:\/\/\([^ ]*\) .*/\1/p' "$lastlog")
  # The restart command: same data directory, ports and socket.
  margs[$k]=$(printf '%q ' "$bindir/famd" --role memory --join "unix:$work/meta.sock" --listen "tcp://$ctl" \
    --data-listen "$data" --token-file "$work/token" --server-token-file "$work/server-token" \
    --socket "$work/mem$k.data.sock" --data-dir "$work/mem$k" --shm-dir "$shm/mem$k" ${RAIDBENCH_FAMD_ARGS:-})
done
export OPENFAM_SERVER="unix:$work/meta.sock" OPENFAM_TOKEN_FILE="$work/token" OPENFAM_TIMEOUT=60s
say "metadata famd and 3 memory famds (servers ${mid[1]}, ${mid[2]}, ${mid[3]}); $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

restart_mem() {
  eval "margs_arr=(${margs[$1]})"
  start_mem "$1"
}
kill_mem() {
  kill -9 "${mpid[$1]}"
  wait "${mpid[$1]}" 2>/dev/null || true
}
server_json() { "$bindir/famctl" --json servers 2>/dev/null | jq -c --argjson id "$1" '.memory_servers[] | select(.id == $id)'; }
state_of() { server_json "$1" | jq -r '(.state // "") | ascii_downcase | sub("^server_"; "")'; }
# wait_state ID STATE SECONDS: poll famctl until server ID is in STATE.
wait_state() {
  local end=$(( $(date +%s) + $3 ))
  until [ "$(state_of "$1")" = "$2" ] && { [ "$2" != up ] || [ "$(server_json "$1" | jq -r .reachable)" = true ]; }; do
    [ "$(date +%s)" -lt "$end" ] || { say "server $1 not $2 within $3s: $(server_json "$1")"; return 1; }
    sleep 0.1
  done
}
# time_rebuild K: restart memory famd K and print how long until famctl
# shows it up (rebuilt), with the last rebuild progress seen.
time_rebuild() {
  local id=${mid[$1]} t0 last="" j
  t0=$(date +%s.%N)
  restart_mem "$1"
  local end=$(( $(date +%s) + ${RAIDBENCH_REBUILD_WAIT:-1800} ))
  while :; do
    j=$(server_json "$id")
    jq -e '.reachable == true and ((.state // "") | ascii_downcase | sub("^server_"; "")) == "up" and (.stale_regions // 0) == 0' <<<"$j" >/dev/null && break
    [ "$(date +%s)" -lt "$end" ] || { say "server $id not rebuilt within ${RAIDBENCH_REBUILD_WAIT:-1800}s: $j"; return 1; }
    [ "$(jq -r '.rebuild_total // 0' <<<"$j")" != 0 ] && last=$j
    sleep 0.1
  done
  printf 'raid-bench: memory famd %s (server %s) rebuilt %.1f s after its restart%s\n' "$1" "$id" \
    "$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN{print a-b}')" "${last:+ (last progress seen: $(jq -c '{rebuild_done, rebuild_total}' <<<"$last"))}"
}

if [ -n "${RAIDBENCH_CMD:-}" ]; then
  RAIDBENCH_PIDS="${mpid[1]} ${mpid[2]} ${mpid[3]}" bash -c "$RAIDBENCH_CMD"
  exit
fi

say "== 1. NONE vs RAID1 vs RAID5 on the same servers"
RAIDBENCH_PIDS="${mpid[1]} ${mpid[2]} ${mpid[3]}" "$bench" ops "$rounds" | sed 's/^/raid-bench: /'
say "load after part 1: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "${RAIDBENCH_OPS_ONLY:-}" = 1 ] && exit 0

say "== 2. RAID5: put bandwidth, healthy and degraded reads, rebuild"
"$bench" fill r5 raid5 256 | sed 's/^/raid-bench: /'
"$bench" read r5 | sed 's/^/raid-bench: healthy: /'
kill_mem 3
"$bench" read r5 | sed 's/^/raid-bench: degraded (memory famd 3 killed, famd not yet told): /'
wait_state "${mid[3]}" down 120 && "$bench" read r5 | sed 's/^/raid-bench: degraded (server declared down): /'
time_rebuild 3
"$bench" destroy r5

say "== 3. RAID1: a ${rebuild_mib} MiB region, memory famd 2 killed -9 and restarted at once"
"$bench" fill r1 raid1 "$rebuild_mib" | sed 's/^/raid-bench: /'
kill_mem 2
wait_state "${mid[2]}" down 120 || true
time_rebuild 2
"$bench" read r1 | sed 's/^/raid-bench: after the rebuild: /'
say "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
