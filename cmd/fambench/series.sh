#!/usr/bin/env bash
# The standard benchmark series: fambench on every path, each figure beside
# its baseline, then the interleave series under famrun with 1, 2 and 4
# memory servers.
#
#   cmd/fambench/series.sh [--quick] [--out DIR] [--paths "local unix tcp"]
#                          [--servers "1 2 4"] [--pes "1 2 4"] [--scale S]
#                          [--stat median|best] [--bindir DIR] [SUBCOMMAND...]
#
# Paths: local = the embedded store (the local mapping), unix = a private
# famd on a Unix socket, tcp = a private famd over TCP on 127.0.0.1 with a
# cluster token made for the run. Each famd has its own temporary data and
# shm directories, removed at the end. Subcommands default to
# `throughput latency threads atomics gather metadata`. Then SpMV and
# PageRank (build/apps) on an R-MAT input of 2^S rows (default 16, 12 with
# --quick) under famrun -n P for each P of --pes, and with --servers 2,
# interleaving on and off ("--pes none" skips them). --stat best reports
# each figure's fastest repeat instead of the median (for a shared machine).
#
# Without --out, fambench's tables go to stdout (make bench). With --out DIR,
# each run's JSON goes to DIR/<path>.json and DIR/interleave-<K>.json, and
# DIR/machine.txt describes the machine (make bench-report renders them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bindir=$here/../../build/bin
stat=median quick="" out="" paths="local unix tcp" servers="1 2 4" pes="1 2 4" scale="" subs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=--quick; shift ;;
    --out) out=$2; shift 2 ;;
    --paths) paths=$2; shift 2 ;;
    --servers) servers=$2; shift 2 ;;
    --pes) pes=$2; shift 2 ;;
    --stat) stat=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --bindir) bindir=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "series: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) subs+=("$1"); shift ;;
  esac
done
[ ${#subs[@]} -gt 0 ] || subs=(throughput latency threads atomics gather metadata)
for b in fambench famd famrun famctl; do
  [ -x "$bindir/$b" ] || { echo "series: $bindir/$b is missing (make famd famrun famctl fambench)" >&2; exit 2; }
done
fmt=()
if [ -n "$out" ]; then mkdir -p "$out"; fmt=(--json); fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fambench-series.XXXXXX")
# Volatile regions on tmpfs, as a default install has them.
shm=$work/shm
if [ -d /dev/shm ] && [ -w /dev/shm ]; then shm=$(mktemp -d /dev/shm/fambench-series.XXXXXX); fi
famd_pid=""
stop_famd() {
  if [ -n "$famd_pid" ]; then
    kill "$famd_pid" 2>/dev/null || true
    wait "$famd_pid" 2>/dev/null || true
    famd_pid=""
  fi
}
trap 'stop_famd; rm -rf "$work" "$shm"' EXIT

# wait_serving LOG: until famd's log says it serves (it logs one line once
# its listeners are open), or it exits, or 30 s pass.
wait_serving() {
  local log=$1 i
  for i in $(seq 300); do
    grep -qs "serving gRPC" "$log" && return 0
    kill -0 "$famd_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "series: famd did not start:" >&2; cat "$log" >&2; exit 1
}

# run LABEL NAME: fambench with the environment the caller set.
run() {
  local label=$1 name=$2
  if [ -n "$out" ]; then
    echo "== $label" >&2
    "$bindir/fambench" $quick --stat "$stat" --label "$label" "${fmt[@]}" "${subs[@]}" > "$out/$name.json"
  else
    echo "== $label"
    "$bindir/fambench" $quick --stat "$stat" --label "$label" "${subs[@]}"
    echo
  fi
}

for p in $paths; do
  d=$work/$p
  mkdir -p "$d"
  case "$p" in
    local)
      ( export OPENFAM_DATA_DIR=$d/data OPENFAM_SHM_DIR=$shm/$p OPENFAM_BACKUP_DIR=$d/backups
        unset OPENFAM_SERVER OPENFAM_TOKEN_FILE
        run "local mapping" local )
      ;;
    unix)
      "$bindir/famd" --socket "$d/famd.sock" --data-dir "$d/data" --shm-dir "$shm/$p" --backup-dir "$d/backups" \
        >"$d/famd.log" 2>&1 &
      famd_pid=$!
      wait_serving "$d/famd.log"
      ( export OPENFAM_SERVER=unix:$d/famd.sock; unset OPENFAM_TOKEN_FILE; run "unix famd" unix )
      stop_famd
      ;;
    tcp)
      "$bindir/famctl" token new "$d/token" >/dev/null
      "$bindir/famd" --listen tcp://127.0.0.1:0 --token-file "$d/token" --tcp-identity "$(id -u):$(id -g)" \
        --data-dir "$d/data" --shm-dir "$shm/$p" --backup-dir "$d/backups" >"$d/famd.log" 2>&1 &
      famd_pid=$!
      wait_serving "$d/famd.log"
      addr=$(sed -n 's/.*serving gRPC on tcp:\/\/\([^ ]*\) .*/\1/p' "$d/famd.log" | head -1)
      ( export OPENFAM_SERVER=$addr OPENFAM_TOKEN_FILE=$d/token; run "tcp famd" tcp )
      stop_famd
      ;;
    *) echo "series: unknown path $p (local, unix, tcp)" >&2; exit 2 ;;
  esac
done

# Interleaving on and off with K memory servers: famrun starts the famd
# set (K = 1: one famd holding metadata and memory).
for k in $servers; do
  label="famrun --servers $k"
  sv=()
  [ "$k" -gt 1 ] && sv=(--servers "$k")
  if [ -n "$out" ]; then
    echo "== $label (interleave)" >&2
    env -u OPENFAM_SERVER -u OPENFAM_TOKEN_FILE "$bindir/famrun" -n 1 "${sv[@]}" --timeout 600s \
      "$bindir/fambench" $quick --stat "$stat" --label "$label" --json interleave > "$out/interleave-$k.json"
  else
    echo "== $label (interleave)"
    env -u OPENFAM_SERVER -u OPENFAM_TOKEN_FILE "$bindir/famrun" -n 1 "${sv[@]}" --timeout 600s \
      "$bindir/fambench" $quick --stat "$stat" --label "$label" interleave
    echo
  fi
done

# The applications: one R-MAT input, every PE count, then two memory
# servers with interleaving on and off.
appdir=$bindir/../apps
if [ "$pes" != none ]; then
  [ -n "$scale" ] || { if [ -n "$quick" ]; then scale=12; else scale=16; fi; }
  for b in spmv pagerank rmatgen; do
    [ -x "$appdir/$b" ] || { echo "series: $appdir/$b is missing (make apps)" >&2; exit 2; }
  done
  "$appdir/rmatgen" --scale "$scale" --edge-factor 16 --seed 1 -o "$work/rmat.famcsr" >&2
  [ -z "$out" ] || : > "$out/apps.json"
  runs=()
  for p in $pes; do runs+=("-n $p|on"); done
  runs+=("-n 2 --servers 2|on" "-n 2 --servers 2|off")
  for app in spmv pagerank; do
    extra=()
    [ "$app" = spmv ] && extra=(--iters 5)
    for r in "${runs[@]}"; do
      fr=${r%%|*} il=${r#*|}
      if [ -n "$out" ]; then
        echo "== famrun $fr $app (interleave $il)" >&2
        env -u OPENFAM_SERVER -u OPENFAM_TOKEN_FILE "$bindir/famrun" $fr --timeout 600s \
          "$appdir/$app" --input "$work/rmat.famcsr" --interleave "$il" "${extra[@]}" --json |
          sed "s/^{/{\"famrun\": \"$fr\", /" >> "$out/apps.json"
      else
        echo "== famrun $fr $app (interleave $il)"
        env -u OPENFAM_SERVER -u OPENFAM_TOKEN_FILE "$bindir/famrun" $fr --timeout 600s \
          "$appdir/$app" --input "$work/rmat.famcsr" --interleave "$il" "${extra[@]}"
        echo
      fi
    done
  done
fi

if [ -n "$out" ]; then
  {
    echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
    echo "cores: $(nproc) online ($(grep -c ^processor /proc/cpuinfo) in /proc/cpuinfo)"
    echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
    echo "kernel: $(uname -srm)"
    echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min, at the end of the run)"
    echo "fambench: $("$bindir/fambench" --version), statistic: $stat${quick:+, --quick}"
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  } > "$out/machine.txt"
fi
