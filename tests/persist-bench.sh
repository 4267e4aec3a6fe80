#!/bin/sh
# persist-bench.sh - the persistence figures of issue 20 in one run:
# fambench --persist on the embedded store (mapped: the C fast path and
# msync), then through a famd over TCP on this host (commit frames).
# Usage: tests/persist-bench.sh [BINDIR] [REPEATS]   (after make famd fambench)
set -eu
bindir=${1:-build/bin}
reps=${2:-9}
dir=$(mktemp -d /var/tmp/persist-bench.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
echo "== embedded store ($dir, $(df -T "$dir" | awk 'NR==2{print $2}'))"
OPENFAM_DATA_DIR=$dir/embedded OPENFAM_SHM_DIR=$dir/embedded-shm env -u OPENFAM_SERVER \
  "$bindir/fambench" --persist --repeats "$reps"
printf 'persist-bench-token-%s\n' "$$" > "$dir/token"
chmod 600 "$dir/token"
port=$((20000 + $$ % 20000))
"$bindir/famd" --data-dir "$dir/famd" --shm-dir "$dir/famd-shm" --socket "$dir/famd.sock" \
  --listen "tcp://127.0.0.1:$port" --token-file "$dir/token" --tcp-identity "$(id -u):$(id -g)" \
  --log-level error &
pid=$!
i=0
until [ -S "$dir/famd.sock" ]; do
  i=$((i + 1)); [ $i -lt 600 ] && kill -0 "$pid" 2>/dev/null || { echo "famd did not start" >&2; exit 1; }
  sleep 0.1
done
echo
echo "== famd over TCP (127.0.0.1:$port)"
OPENFAM_SERVER=127.0.0.1:$port OPENFAM_TOKEN_FILE=$dir/token "$bindir/fambench" --persist --repeats "$reps"
