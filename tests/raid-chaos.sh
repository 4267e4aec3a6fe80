#!/usr/bin/env bash
# Redundant regions under fire (issue 16): famrun -n 3 --servers 3 runs
# tests/raid/raidpe, whose PEs loop on fam_fetch_add and sequence-numbered
# puts into a RAID1 and a RAID5 region, logging every acknowledged call.
# Meanwhile this script kills a memory famd with SIGKILL and restarts it
# (famd --role memory with famrun's restart command: same data directory,
# ports and id), three times, a different one each time: each round waits
# until famctl servers --json shows the server down, until the PEs made
# progress while it was down, then restarts it and waits until famctl shows
# it up again (rebuilt) before the next kill. Then the PEs stop and rank 0
# checks that every acknowledged increment is counted and every
# acknowledged record is present with its exact bytes; before that, one
# last memory famd is killed and left down, so that the job ends (and the
# check reads) with a server missing. ROUNDS 0: only that last kill.
#
# Synchronisation is by polling with deadlines (generous: both cores may
# be busy), never by sleeping a fixed time.
#
# With RAID_NETNS=1 the famds are hosts of their own instead: network
# namespaces, a metadata famd on host 1 and memory famds on hosts 2, 3 and
# 4, each on its veth address over TCP with the cluster token; the PEs
# (famrun -n 3 with OPENFAM_SERVER) and famctl run in a fifth namespace
# that routes between the hosts. Needs root and iproute2.
#
#   tests/raid-chaos.sh BINDIR RAIDPE [ROUNDS]
#   RAID_NETNS=1 tests/raid-chaos.sh BINDIR RAIDPE [ROUNDS]
set -euo pipefail
bindir=$(cd "$1" && pwd) prog=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
rounds=${3:-3}
command -v jq >/dev/null || { echo "raid-chaos: needs jq"; exit 1; }
work=$(mktemp -d /tmp/raidchaos-XXXXXX)
state=$work/state.json
famrun_pid=
restarted=()
netns=${RAID_NETNS:-}
tag=$$
namespaces=()
say() { echo "raid-chaos: $*"; }
cleanup() {
  touch "$work/stop"
  for p in "${restarted[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "$famrun_pid" ]; then kill "$famrun_pid" 2>/dev/null || true; wait "$famrun_pid" 2>/dev/null || true; fi
  for p in "${restarted[@]}"; do wait "$p" 2>/dev/null || true; done
  for n in "${namespaces[@]}"; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
# A signal ends the script through exit, so that cleanup runs.
trap 'exit 130' INT TERM HUP

fail() {
  say "FAILED: $*"
  say "the PEs' complaints:"; grep '^raidpe' "$work/famrun.err" | sed 's/^/  | /' | head -40
  say "famrun stderr:"; sed 's/^/  | /' "$work/famrun.err" | tail -40
  say "famrun stdout:"; sed 's/^/  | /' "$work/famrun.out" | tail -20
  for f in "$work"/mem*.log; do [ -e "$f" ] && { say "$f:"; tail -20 "$f" | sed 's/^/  | /'; }; done
  exit 1
}

# alive: famrun still runs (the job has not ended early).
alive() { kill -0 "$famrun_pid" 2>/dev/null; }

# poll SECONDS WHAT CMD...: run CMD every 0.2 s until it succeeds, at most
# SECONDS; fails the test naming WHAT (and famrun's output) otherwise.
poll() {
  local secs=$1 what=$2; shift 2
  local end=$(( $(date +%s) + secs ))
  until "$@"; do
    alive || fail "the job ended while waiting for $what"
    [ "$(date +%s)" -lt "$end" ] || fail "no $what within ${secs}s"
    sleep 0.2
  done
}

# acks: acknowledged calls logged so far (every line; failed calls are
# rare lines of their own, counted by errors).
acks() { cat "$work"/ack.* 2>/dev/null | wc -l; }
errors() { cat "$work"/ack.* 2>/dev/null | grep -c '^e' || true; }
acks_beyond() { [ "$(acks)" -ge "$1" ]; }

# server_json ID: famctl's view of memory server ID (one JSON object).
server_json() { "${ctl[@]}" --json servers 2>/dev/null | jq -c --argjson id "$1" '.memory_servers[] | select(.id == $id)'; }
# server_state ID: its state, lower case ("up", "down", "rebuilding"...).
server_state() { server_json "$1" | jq -r '(.state // "") | ascii_downcase | sub("^server_"; "")'; }
is_down() { [ "$(server_state "$1")" = down ]; }
# is_rebuilt ID: up, answering, and no redundant region stale on it.
is_rebuilt() {
  server_json "$1" | jq -e '.reachable == true and ((.state // "") | ascii_downcase | sub("^server_"; "")) == "up" and (.stale_regions // 0) == 0' >/dev/null
}
gone() { ! kill -0 "$1" 2>/dev/null; }

# wait_file SECONDS FILE TEXT: until FILE has TEXT (before the job runs).
wait_file() {
  local end=$(( $(date +%s) + $1 ))
  until grep -q "$3" "$2" 2>/dev/null; do
    [ "$(date +%s)" -lt "$end" ] || { say "FAILED: no \"$3\" in $2 within $1s:"; cat "$2"; exit 1; }
    sleep 0.1
  done
}

# start_hosts: the famds in network namespaces (RAID_NETNS=1), and a state
# file in famrun's FAMRUN_STATE format describing them.
start_hosts() {
  local pe=rpe$tag k s ident="$(id -u):$(id -g)"
  ip netns add "$pe" || { say "cannot create network namespaces (needs root and iproute2)"; exit 1; }
  namespaces+=("$pe")
  ip -n "$pe" link set lo up
  ip netns exec "$pe" sysctl -qw net.ipv4.ip_forward=1
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token"; chmod 600 "$work/token"
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/server-token"; chmod 600 "$work/server-token"
  for k in 1 2 3 4; do
    s=rh$k$tag
    ip netns add "$s"; namespaces+=("$s")
    ip link add "rv$k$tag" type veth peer name "rp$k$tag"
    ip link set "rv$k$tag" netns "$pe"
    ip link set "rp$k$tag" netns "$s"
    ip -n "$pe" addr add "10.78.$k.1/24" dev "rv$k$tag"
    ip -n "$s" addr add "10.78.$k.2/24" dev "rp$k$tag"
    ip -n "$pe" link set "rv$k$tag" up
    ip -n "$s" link set "rp$k$tag" up
    ip -n "$s" link set lo up
    ip -n "$s" route add 10.78.0.0/16 via "10.78.$k.1"
  done
  ip netns exec "rh1$tag" "$bindir/famd" --role metadata --listen tcp://10.78.1.2:7900 --token-file "$work/token" \
    --tcp-identity "$ident" --server-token-file "$work/server-token" --interleave-size 64KiB \
    --data-dir "$work/host1/meta" --shm-dir "$work/host1/meta-shm" >"$work/meta.log" 2>&1 &
  restarted+=($!)
  wait_file 120 "$work/meta.log" serving
  local mems=()
  for k in 2 3 4; do
    local argv=(ip netns exec "rh$k$tag" "$bindir/famd" --role memory --join tcp://10.78.1.2:7900
      --listen "tcp://10.78.$k.2:7900" --token-file "$work/token" --server-token-file "$work/server-token"
      --data-dir "$work/host$k/mem" --shm-dir "$work/host$k/mem-shm")
    "${argv[@]}" >"$work/mem$((k-1)).0.log" 2>&1 &
    restarted+=($!)
    wait_file 120 "$work/mem$((k-1)).0.log" "joined the metadata famd"
    local id; id=$(sed -n 's/.*as memory server \([0-9]*\).*/\1/p' "$work/mem$((k-1)).0.log")
    local pid=$! restart; restart=$(printf '%s\n' "${argv[@]}" | jq -R . | jq -sc .)
    mems+=("$(jq -nc --argjson k $((k-1)) --argjson pid "$pid" --argjson id "$id" --argjson restart "$restart" '{k: $k, pid: $pid, id: $id, restart: $restart}')")
  done
  printf '%s\n' "${mems[@]}" | jq -s --arg tok "$work/token" '{server: "10.78.1.2:7900", token_file: $tok, memory_famds: .}' >"$state"
  say "metadata famd on host 1, memory famds on hosts 2-4 (10.78.K.2:7900), PEs in namespace $pe"
  ctl=(ip netns exec "$pe" "$bindir/famctl")
  export OPENFAM_SERVER=10.78.1.2:7900 OPENFAM_TOKEN_FILE="$work/token" RAIDPE_SECONDS=1500
  ip netns exec "$pe" "$bindir/famrun" -n 3 --timeout 1800s "$prog" "$work" >"$work/famrun.out" 2>"$work/famrun.err" &
  famrun_pid=$!
}

ctl=("$bindir/famctl")
if [ -n "$netns" ]; then
  say "famrun -n 3 $(basename "$prog") over network namespaces, in $work"
  start_hosts
else
  say "famrun -n 3 --servers 3 $(basename "$prog") in $work"
  env -u OPENFAM_SERVER -u OPENFAM_TOKEN_FILE FAMRUN_STATE="$state" RAIDPE_SECONDS=1500 \
    "$bindir/famrun" -n 3 --servers 3 --startup 180s --timeout 1800s "$prog" "$work" \
    >"$work/famrun.out" 2>"$work/famrun.err" &
  famrun_pid=$!
  poll 240 "famrun state file" test -s "$state"
fi
export OPENFAM_SERVER OPENFAM_TOKEN_FILE
OPENFAM_SERVER=$(jq -r .server "$state") OPENFAM_TOKEN_FILE=$(jq -r .token_file "$state")
export OPENFAM_TIMEOUT=30s
poll 300 "first acknowledgements from the PEs" acks_beyond 300

for round in $(seq "$rounds"); do
  k=$(( (round - 1) % 3 + 1 ))
  id=$(jq -r ".memory_famds[$((k-1))].id" "$state")
  pid_var="pid_$k"
  pid=${!pid_var:-$(jq -r ".memory_famds[$((k-1))].pid" "$state")}
  before=$(acks)
  say "round $round: kill -9 memory famd $k (server $id, pid $pid) at $before acknowledgements"
  kill -9 "$pid"
  poll 60 "exit of memory famd $k" gone "$pid"
  poll 120 "famctl servers showing server $id down" is_down "$id"
  at_down=$(acks)
  poll 300 "progress of the PEs while server $id is down" acks_beyond $(( at_down + 300 ))
  say "round $round: server $id down; the PEs went on from $before to $(acks) acknowledgements ($(errors) calls failed so far)"
  mapfile -t argv < <(jq -r ".memory_famds[$((k-1))].restart[]" "$state")
  "${argv[@]}" >"$work/mem$k.$round.log" 2>&1 &
  newpid=$!
  restarted+=("$newpid")
  printf -v "$pid_var" %s "$newpid"
  poll 120 "memory famd $k rejoining" grep -q "as memory server $id" "$work/mem$k.$round.log"
  t0=$(date +%s)
  poll 900 "famctl servers showing server $id rebuilt (state up)" is_rebuilt "$id"
  say "round $round: memory famd $k restarted (pid $newpid), rejoined as server $id and rebuilt in $(( $(date +%s) - t0 ))s: $(server_json "$id")"
  after=$(acks)
  poll 300 "progress of the PEs after the rebuild" acks_beyond $(( after + 300 ))
done

# Last, the shape of a job that ends with a server down: one more memory
# famd killed and left down, the PEs going on and the check reading
# through the survivors.
k=$(( rounds % 3 + 1 ))
id=$(jq -r ".memory_famds[$((k-1))].id" "$state")
pid_var="pid_$k"
pid=${!pid_var:-$(jq -r ".memory_famds[$((k-1))].pid" "$state")}
say "last: kill -9 memory famd $k (server $id, pid $pid) and leave it down"
kill -9 "$pid"
poll 60 "exit of memory famd $k" gone "$pid"
at_kill=$(acks)
poll 300 "progress of the PEs with server $id killed" acks_beyond $(( at_kill + 300 ))
poll 120 "famctl servers showing server $id down" is_down "$id"

say "stopping the PEs at $(acks) acknowledgements ($(errors) calls failed)"
touch "$work/stop"
end=$(( $(date +%s) + 600 ))
while alive; do
  [ "$(date +%s)" -lt "$end" ] || fail "the job did not finish within 600s of the stop file"
  sleep 0.2
done
set +e; wait "$famrun_pid"; status=$?; set -e
famrun_pid=
grep '^raidpe' "$work/famrun.out" | sed 's/^/raid-chaos: /' || true
[ "$status" = 0 ] || fail "famrun exited $status"
[ "$(grep -c '^raidpe: RAID[15]: .*, 0 lost or wrong$' "$work/famrun.out")" = 2 ] || fail "the check did not report both regions whole"
say "ok: $rounds kill -9 and restart rounds and a last kill -9, every acknowledged increment and record present"
