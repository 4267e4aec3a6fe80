#!/usr/bin/env bash
# rtt-bench.sh - issue 19's figures for one famd on this host: fambench rtt
# over TCP and over the Unix socket (small operations and control calls, each
# beside raw 256 B TCP ping-pongs of the same run, one polling and one
# blocking), then famd's CPU while idle for 10 s and while one PE runs a
# get loop. Needs build/bin/famd and build/bin/fambench (make famd fambench).
#
#   tests/rtt-bench.sh [--repeats N] [--famd-args "ARGS"] [--bindir DIR] [--servers K]
#                      [--skip-unix] [--skip-cpu]
#
# --servers K runs a metadata famd with K memory famds on loopback instead
# of one famd: fambench's region is then interleaved over the K servers
# (the striped figures; only TCP, no CPU sample).
# --famd-args passes extra flags to famd (say "--spin 0" for the figures
# without its polling window); --bindir takes famd and fambench from DIR
# (default build/bin), with libopenfam.so.0 from DIR/../lib.
set -euo pipefail
repeats=5 famd_args="" unix=1 cpu=1 bindir="" servers=0
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) repeats=$2; shift 2 ;;
    --famd-args) famd_args=$2; shift 2 ;;
    --bindir) bindir=$(cd "$2" && pwd); shift 2 ;;
    --servers) servers=$2; unix=0; cpu=0; shift 2 ;;
    --skip-unix) unix=0; shift ;;
    --skip-cpu) cpu=0; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "rtt-bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$bindir" ] || bindir=$(cd "$(dirname "$0")/../build/bin" && pwd)
export LD_LIBRARY_PATH="$bindir/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=$(mktemp -d)
famd="" mems=()
cleanup() {
  for p in "${mems[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  if [ -n "$famd" ]; then kill "$famd" 2>/dev/null || true; wait "$famd" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/token"; chmod 600 "$work/token"
role=() 
if [ "$servers" -gt 0 ]; then
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/server-token"; chmod 600 "$work/server-token"
  role=(--role metadata --server-token-file "$work/server-token")
fi
# shellcheck disable=SC2086
"$bindir/famd" --listen tcp://127.0.0.1:0 --socket "$work/famd.sock" --token-file "$work/token" \
  --tcp-identity "$(id -u):$(id -g)" --data-dir "$work/data" --shm-dir "$work/shm" "${role[@]}" $famd_args \
  >"$work/famd.log" 2>&1 &
famd=$!
for _ in $(seq 200); do grep -q serving "$work/famd.log" 2>/dev/null && break; sleep 0.05; done
grep -q serving "$work/famd.log" || { echo "rtt-bench: famd did not start:"; cat "$work/famd.log"; exit 1; }
port=$(grep -o 'tcp://127.0.0.1:[0-9]*' "$work/famd.log" | head -1 | sed 's/.*://')
[ -n "$port" ] || { echo "rtt-bench: no TCP address in famd's log:"; cat "$work/famd.log"; exit 1; }
export OPENFAM_TOKEN_FILE="$work/token"
for i in $(seq "$servers"); do
  # shellcheck disable=SC2086
  "$bindir/famd" --role memory --join "unix:$work/famd.sock" --listen tcp://127.0.0.1:0 --advertise 127.0.0.1 \
    --token-file "$work/token" --server-token-file "$work/server-token" --data-dir "$work/mem$i" \
    --shm-dir "$work/mem$i-shm" $famd_args >"$work/mem$i.log" 2>&1 &
  mems+=($!)
  for _ in $(seq 200); do grep -q "joined" "$work/mem$i.log" 2>/dev/null && break; sleep 0.05; done
  grep -q joined "$work/mem$i.log" || { echo "rtt-bench: memory famd $i did not join:"; cat "$work/mem$i.log"; exit 1; }
done
[ "$servers" -gt 0 ] && echo "== regions interleaved over $servers memory famds"
echo "== famd over TCP (127.0.0.1:$port) ${famd_args:+with $famd_args}; load: $(cut -d' ' -f1-3 /proc/loadavg)"
OPENFAM_SERVER=127.0.0.1:$port "$bindir/fambench" rtt --repeats "$repeats"
if [ "$unix" = 1 ]; then
  echo "== famd over its Unix socket; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  OPENFAM_SERVER=unix:$work/famd.sock "$bindir/fambench" rtt --repeats "$repeats"
fi
if [ "$cpu" = 1 ]; then
  ticks() { awk '{print $14 + $15}' "/proc/$famd/stat"; }
  hz=$(getconf CLK_TCK)
  t0=$(ticks); sleep 10; t1=$(ticks)
  echo "== famd CPU idle over 10 s: $(awk -v d=$((t1 - t0)) -v hz="$hz" 'BEGIN { printf "%.1f%%", 100 * d / hz / 10 }')"
  OPENFAM_SERVER=127.0.0.1:$port "$bindir/fambench" get-loop 6 >"$work/loop.out" &
  pe=$!
  sleep 2
  t0=$(ticks); sleep 3; t1=$(ticks)
  wait "$pe"
  echo "== famd CPU while one PE runs an 8 B get loop over TCP (3 s sample): $(awk -v d=$((t1 - t0)) -v hz="$hz" 'BEGIN { printf "%.1f%%", 100 * d / hz / 3 }'); $(cat "$work/loop.out")"
fi
