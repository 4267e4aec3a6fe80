#!/usr/bin/env bash
# Across a real network: three network namespaces ("hosts") each run a
# famd on their own veth address; the PEs run in a fourth namespace and
# reach each famd over TCP with the cluster token. Nothing is shared
# between the hosts but the links: no loopback, no files (each famd has its
# own data directory and the PEs map nothing: over TCP the data plane
# carries every byte).
#
# With STRIPEDPE given, the hosts then also form one cluster: a metadata
# famd on host 1 and memory famds on hosts 2 and 3 (listening on every
# interface, announcing their veth address, joining over TCP through the
# PE namespace, which routes between the hosts); the PEs' items are
# striped over hosts 2 and 3.
#
#   tests/netns.sh BINDIR PROGRAM [STRIPEDPE]     (needs root and iproute2)
set -euo pipefail
bindir=$(cd "$1" && pwd) prog=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
striped=
if [ $# -ge 3 ]; then striped=$(cd "$(dirname "$3")" && pwd)/$(basename "$3"); fi
tag=$$
pe=fampe$tag
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for k in 1 2 3; do ip netns del "fams$k$tag" 2>/dev/null || true; done
  ip netns del "$pe" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

if ! ip netns add "$pe" 2>/dev/null; then
  echo "netns: cannot create network namespaces here (needs root and iproute2)"; exit 1
fi
ip -n "$pe" link set lo up
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/token"; chmod 600 "$work/token"
# The memory famds' credential: only famds get it, never the PEs.
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/server-token"; chmod 600 "$work/server-token"
# famd runs as root here, and with token authentication every TCP client
# acts as one identity, which root must name: the PEs' own (root too).
ident="$(id -u):$(id -g)"

for k in 1 2 3; do
  s=fams$k$tag
  ip netns add "$s"
  ip link add "fv$k$tag" type veth peer name "fp$k$tag"
  ip link set "fv$k$tag" netns "$pe"
  ip link set "fp$k$tag" netns "$s"
  ip -n "$pe" addr add "10.77.$k.1/24" dev "fv$k$tag"
  ip -n "$s" addr add "10.77.$k.2/24" dev "fp$k$tag"
  ip -n "$pe" link set "fv$k$tag" up
  ip -n "$s" link set "fp$k$tag" up
  ip -n "$s" link set lo up
  ip netns exec "$s" "$bindir/famd" --listen "tcp://10.77.$k.2:7800" --token-file "$work/token" --tcp-identity "$ident" \
    --data-dir "$work/host$k/data" --shm-dir "$work/host$k/shm" >"$work/famd$k.log" 2>&1 &
  pids+=($!)
done
for k in 1 2 3; do
  for _ in $(seq 600); do grep -q serving "$work/famd$k.log" && break; sleep 0.1; done
  grep -q serving "$work/famd$k.log" || { echo "netns: famd on host $k did not start"; cat "$work/famd$k.log"; exit 1; }
  echo "netns: $(grep -o 'serving.*token required[^)]*)' "$work/famd$k.log") in namespace fams$k$tag"
done

for k in 1 2 3; do
  for n in 2 3; do
    echo "netns: famrun -n $n against famd at 10.77.$k.2:7800 from namespace $pe"
    ip netns exec "$pe" env OPENFAM_SERVER="10.77.$k.2:7800" OPENFAM_TOKEN_FILE="$work/token" \
      "$bindir/famrun" -n "$n" -- "$prog" "net$k-$n"
  done
done
# A host the PEs cannot reach from their namespace without the links: the
# loopback address of a server namespace is not reachable from the PEs.
if ip netns exec "$pe" env OPENFAM_SERVER=127.0.0.1:7800 OPENFAM_TOKEN_FILE="$work/token" OPENFAM_TIMEOUT=2s \
   "$prog" never >/dev/null 2>&1; then
  echo "netns: a PE reached a famd through loopback: the namespaces are not isolated"; exit 1
fi

if [ -n "$striped" ]; then
  ip netns exec "$pe" sysctl -qw net.ipv4.ip_forward=1
  for k in 1 2 3; do ip -n "fams$k$tag" route add 10.77.0.0/16 via "10.77.$k.1"; done
  ip netns exec "fams1$tag" "$bindir/famd" --role metadata --listen tcp://10.77.1.2:7900 --token-file "$work/token" \
    --tcp-identity "$ident" --server-token-file "$work/server-token" --interleave-size 64KiB --data-dir "$work/host1/meta" --shm-dir "$work/host1/meta-shm" >"$work/meta.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 600); do grep -q serving "$work/meta.log" && break; sleep 0.1; done
  for k in 2 3; do
    ip netns exec "fams$k$tag" "$bindir/famd" --role memory --join tcp://10.77.1.2:7900 --listen tcp://0.0.0.0:7900 \
      --advertise "10.77.$k.2" --token-file "$work/token" --server-token-file "$work/server-token" --data-dir "$work/host$k/mem" --shm-dir "$work/host$k/mem-shm" \
      >"$work/mem$k.log" 2>&1 &
    pids+=($!)
  done
  for k in 2 3; do
    for _ in $(seq 600); do grep -q "joined the metadata famd" "$work/mem$k.log" && break; sleep 0.1; done
    grep -q "joined the metadata famd" "$work/mem$k.log" || { echo "netns: memory famd on host $k did not join"; cat "$work/meta.log" "$work/mem$k.log"; exit 1; }
    echo "netns: host $k: $(grep -o 'joined the metadata famd.*' "$work/mem$k.log")"
  done
  echo "netns: famrun -n 3 against the metadata famd at 10.77.1.2:7900, items striped over hosts 2 and 3"
  ip netns exec "$pe" env OPENFAM_SERVER=10.77.1.2:7900 OPENFAM_TOKEN_FILE="$work/token" \
    "$bindir/famrun" -n 3 -- "$striped"
fi
echo "netns: ok (3 hosts, PEs in a fourth namespace)"
