#!/usr/bin/env bash
# A memory server crashes and comes back: a metadata famd and two memory
# famds (separate processes, TCP on 127.0.0.1 with a cluster token, a
# data-plane Unix socket each); a first program writes a persistent item
# striped over both; one memory famd is killed with SIGKILL; a client
# started while it is down must fail within OPENFAM_TIMEOUT (not hang);
# the memory famd restarts on the same data directory and ports, rejoins
# with the same id, and a second program reads every byte back. The
# restarted famd serves no data-plane Unix socket, so that read reaches it
# over TCP with the token (and fails without it).
#
#   tests/memrestart.sh BINDIR STRIPEDPE
set -euo pipefail
bindir=$(cd "$1" && pwd) prog=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
work=$(mktemp -d /tmp/memrestart-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/token"; chmod 600 "$work/token"

# wait_log FILE TEXT: until FILE has a line with TEXT (60 s at most).
wait_log() {
  for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "memrestart: no \"$2\" in $1:"; cat "$1"; exit 1
}

"$bindir/famd" --role metadata --socket "$work/meta.sock" --data-dir "$work/meta" --shm-dir "$work/meta-shm" \
  --interleave-size 64KiB >"$work/meta.log" 2>&1 &
pids+=($!)
wait_log "$work/meta.log" serving

# start_mem K LOG [--listen ... --data-listen ...]: memory famd K.
start_mem() {
  local k=$1 log=$2; shift 2
  "$bindir/famd" --role memory --join "unix:$work/meta.sock" --token-file "$work/token" \
    --data-dir "$work/mem$k" --shm-dir "$work/mem$k-shm" "$@" >"$log" 2>&1 &
  mem_pid=$!
  pids+=($mem_pid)
  wait_log "$log" "joined the metadata famd"
}
start_mem 1 "$work/mem1.log" --listen tcp://127.0.0.1:0 --socket "$work/mem1.sock"; pid1=$mem_pid
start_mem 2 "$work/mem2.log" --listen tcp://127.0.0.1:0 --socket "$work/mem2.sock"; pid2=$mem_pid
id2=$(sed -n 's/.*as memory server \([0-9]*\).*/\1/p' "$work/mem2.log")
ctl2=$(sed -n 's/.*control gRPC on tcp:\/\/\([^,]*\),.*/\1/p' "$work/mem2.log")
data2=$(sed -n 's/.*data plane tcp:\/\/\([^ ]*\) .*/\1/p' "$work/mem2.log")
echo "memrestart: memory famds $pid1 and $pid2 joined; server $id2 serves control $ctl2, data $data2"

# A generous timeout for the runs that must succeed (a loaded machine is
# slow); the run with a memory server down gets a short one of its own.
export OPENFAM_SERVER="unix:$work/meta.sock" OPENFAM_TOKEN_FILE="$work/token" OPENFAM_TIMEOUT=60s
"$prog" write striped >"$work/write.log" 2>&1 || { cat "$work/write.log"; exit 1; }
echo "memrestart: $(cat "$work/write.log")"

echo "memrestart: kill -9 memory famd $pid2"
kill -9 "$pid2"; wait "$pid2" 2>/dev/null || true

start=$(date +%s)
if OPENFAM_TIMEOUT=3s "$prog" read striped >"$work/down.log" 2>&1; then echo "memrestart: a read succeeded with a memory server down"; exit 1; fi
took=$(( $(date +%s) - start ))
[ "$took" -le 15 ] || { echo "memrestart: the client took ${took}s to fail"; exit 1; }
echo "memrestart: a client with memory server $id2 down failed in ${took}s: $(head -n 1 "$work/down.log")"

start_mem 2 "$work/mem2-again.log" --listen "tcp://$ctl2" --data-listen "$data2"
again=$(sed -n 's/.*as memory server \([0-9]*\).*/\1/p' "$work/mem2-again.log")
[ "$again" = "$id2" ] || { echo "memrestart: rejoined as server $again, was $id2"; exit 1; }
echo "memrestart: memory famd restarted on $ctl2 and $data2 (no data socket), rejoined as server $again"

if env -u OPENFAM_TOKEN_FILE "$prog" read striped >"$work/notoken.log" 2>&1; then
  echo "memrestart: a read without the token reached memory server $id2 over TCP"; exit 1
fi
grep -qi token "$work/notoken.log" || { echo "memrestart: a read without the token failed unclearly:"; cat "$work/notoken.log"; exit 1; }
echo "memrestart: without the token: $(head -n 1 "$work/notoken.log")"

"$prog" read striped >"$work/read.log" 2>&1 || { cat "$work/read.log"; exit 1; }
echo "memrestart: $(cat "$work/read.log")"
"$bindir/famctl" servers | sed 's/^/memrestart: | /'
echo "memrestart: ok"
