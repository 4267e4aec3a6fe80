#!/usr/bin/env bash
# The 1/2/4/8-memory-server series: one PE's fam_get_blocking of a 64 MiB
# item interleaved over K memory servers, each memory server in its own
# network namespace behind a link of its own, shaped to RATE (tc tbf on the
# server's side, so every get's bytes leave the server through it), the
# metadata famd and the PE in namespaces of their own, all joined by a
# bridge. Shaping stands in for the per-server NIC of a real cluster: on
# an unshaped loopback every server and the PE share the same few cores,
# and the series would measure CPU contention instead of the data path.
# The baseline is the same run's one-server figure.
#
#   tests/stripe-bench.sh [--rate 1gbit|none] [--mib 64] [--servers "1 2 4 8"] [--repeats 5]
#   (needs root, iproute2 and build/bin/{famd,fambench}: `make bench-stripe`)
set -euo pipefail
rate=1gbit mib=64 series="1 2 4 8" repeats=5
bindir=$(cd "$(dirname "$0")/../build/bin" && pwd)
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --mib) mib=$2; shift 2 ;;
    --servers) series=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "stripe-bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
tag=$$
hub=sbhub$tag
work=$(mktemp -d)
pids=()
spaces=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  for s in "${spaces[@]}"; do ip netns del "$s" 2>/dev/null || true; done
  spaces=()
}
trap 'cleanup; rm -rf "$work"' EXIT

# attach NS N: a namespace with address 10.79.0.N on the hub's bridge.
attach() {
  local ns=$1 n=$2
  ip netns add "$ns"; spaces+=("$ns")
  ip link add "sb$n-$tag" type veth peer name "sh$n-$tag"
  ip link set "sb$n-$tag" netns "$ns"
  ip link set "sh$n-$tag" netns "$hub"
  ip -n "$hub" link set "sh$n-$tag" master br0 up
  ip -n "$ns" addr add "10.79.0.$n/24" dev "sb$n-$tag"
  ip -n "$ns" link set "sb$n-$tag" up
  ip -n "$ns" link set lo up
}

waitlog() {
  local file=$1 pat=$2 what=$3
  for _ in $(seq 200); do grep -q "$pat" "$file" && return 0; sleep 0.05; done
  echo "stripe-bench: $what did not start:"; cat "$file"; exit 1
}

head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/token"; chmod 600 "$work/token"
# The memory famds join with the server token; the PE never gets it.
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/server-token"; chmod 600 "$work/server-token"
declare -A result
for k in $series; do
  ip netns add "$hub"; spaces+=("$hub")
  ip -n "$hub" link add br0 type bridge
  ip -n "$hub" link set br0 up
  attach "sbmeta$tag" 1
  attach "sbpe$tag" 2
  run="$work/k$k"; mkdir -p "$run"
  ip netns exec "sbmeta$tag" "$bindir/famd" --role metadata --listen tcp://10.79.0.1:7000 \
    --token-file "$work/token" --server-token-file "$work/server-token" --tcp-identity "$(id -u):$(id -g)" \
    --data-dir "$run/meta" --shm-dir "$run/meta-shm" >"$run/meta.log" 2>&1 &
  pids+=($!)
  waitlog "$run/meta.log" serving "the metadata famd"
  for i in $(seq "$k"); do
    n=$((10 + i))
    attach "sbm$i-$tag" "$n"
    ip -n "sbm$i-$tag" link set "sb$n-$tag" qlen 1000
    if [ "$rate" != none ]; then
      tc -n "sbm$i-$tag" qdisc add dev "sb$n-$tag" root tbf rate "$rate" burst 512kb latency 100ms
    fi
    ip netns exec "sbm$i-$tag" "$bindir/famd" --role memory --join tcp://10.79.0.1:7000 \
      --listen "tcp://10.79.0.$n:7100" --token-file "$work/token" --server-token-file "$work/server-token" \
      --data-dir "$run/mem$i" --shm-dir "$run/mem$i-shm" >"$run/mem$i.log" 2>&1 &
    pids+=($!)
  done
  for i in $(seq "$k"); do waitlog "$run/mem$i.log" "joined" "memory server $i"; done
  out=$(ip netns exec "sbpe$tag" env OPENFAM_SERVER=10.79.0.1:7000 OPENFAM_TOKEN_FILE="$work/token" \
    "$bindir/fambench" --get-mib "$mib" --repeats "$repeats")
  echo "stripe-bench: $k server(s) at $rate each: $out"
  result[$k]=$(sed -n 's/.*: \([0-9.]*\) GB\/s.*/\1/p' <<<"$out")
  cleanup
done
base=${result[$(set -- $series; echo "$1")]}
echo
printf '%-8s %-12s %s\n' servers "GB/s" "vs $(set -- $series; echo "$1") server(s)"
for k in $series; do
  awk -v k="$k" -v v="${result[$k]}" -v b="$base" 'BEGIN { printf "%-8s %-12s %.2fx\n", k, v, v / b }'
done
