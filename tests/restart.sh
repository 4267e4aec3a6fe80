#!/usr/bin/env bash
# Crash and restart: a PE writes persistent items through famd, famd is
# killed with SIGKILL, a client started while it is down must fail with a
# clear error within OPENFAM_TIMEOUT (not hang), and after famd restarts on
# the same data directory a second run of the demo finds every item with
# its data.
#
#   tests/restart.sh BINDIR DEMO
set -euo pipefail
bindir=$1 demo=$2
work=$(mktemp -d)
famd_pid=
cleanup() { if [ -n "$famd_pid" ]; then kill -9 "$famd_pid" 2>/dev/null || true; wait "$famd_pid" 2>/dev/null || true; fi; rm -rf "$work"; }
trap cleanup EXIT

# Each start logs to a file of its own: the killed famd's "serving" line and
# its socket file are still there, so waiting on a shared log let run 2 start
# before the new famd listened.
starts=0
start_famd() {
  starts=$((starts + 1))
  local log=$work/famd.$starts.log
  "$bindir/famd" --socket "$work/famd.sock" --data-dir "$work/data" --shm-dir "$work/shm" \
    >"$log" 2>&1 &
  famd_pid=$!
  for _ in $(seq 600); do
    grep -q serving "$log" 2>/dev/null && [ -S "$work/famd.sock" ] && return 0
    kill -0 "$famd_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "restart: famd did not start"; cat "$log"; exit 1
}

# A generous timeout for the runs that must succeed (a loaded machine is
# slow); the run against a dead famd gets a short one of its own.
export OPENFAM_SERVER="unix:$work/famd.sock" OPENFAM_TIMEOUT=60s
start_famd
echo "restart: run 1 writes persistent items through famd"
"$demo" >"$work/run1.log" 2>&1 || { cat "$work/run1.log"; exit 1; }

echo "restart: kill -9 famd (pid $famd_pid)"
kill -9 "$famd_pid"; wait "$famd_pid" 2>/dev/null || true; famd_pid=

echo "restart: a client while famd is down must fail fast"
start=$(date +%s)
if OPENFAM_TIMEOUT=3s "$demo" >"$work/down.log" 2>&1; then echo "restart: client succeeded with famd down"; exit 1; fi
took=$(( $(date +%s) - start ))
grep -qiE "unavailable|did not answer|famd" "$work/down.log" || { echo "restart: unclear error:"; cat "$work/down.log"; exit 1; }
[ "$took" -le 15 ] || { echo "restart: client took ${took}s to fail"; exit 1; }
echo "restart: failed in ${took}s with: $(grep -iE 'unavailable|did not answer|famd' "$work/down.log" | head -1)"

start_famd
echo "restart: run 2 after restart must find run 1's items and data"
"$demo" >"$work/run2.log" 2>&1 || { cat "$work/run2.log"; exit 1; }
grep -q "found item" "$work/run2.log" || { echo "restart: run 2 did not find the item"; cat "$work/run2.log"; exit 1; }
echo "restart: ok"
