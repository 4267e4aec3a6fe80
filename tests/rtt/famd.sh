# tests/rtt/famd.sh - sourced by tests/rtt-syscalls.sh and
# tests/rtt-instructions.sh: builds tests/rtt/oploop.c into $work and starts
# one famd on loopback TCP for it. Expects $root, $bindir, $work, $prog
# (the caller's name for errors) and $famd_args (extra famd flags, may be
# empty); sets $famd (its pid, for the caller's cleanup) and exports
# OPENFAM_TOKEN_FILE and OPENFAM_SERVER for the client.
export LD_LIBRARY_PATH="$bindir/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cc -O2 -I"$root/include" -o "$work/oploop" "$root/tests/rtt/oploop.c" -L"$bindir/../lib" -lopenfam
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/token"; chmod 600 "$work/token"
# shellcheck disable=SC2086
"$bindir/famd" --listen tcp://127.0.0.1:0 --socket "$work/famd.sock" --token-file "$work/token" \
  --tcp-identity "$(id -u):$(id -g)" --data-dir "$work/data" --shm-dir "$work/shm" $famd_args \
  >"$work/famd.log" 2>&1 &
famd=$!
for _ in $(seq 200); do grep -q serving "$work/famd.log" 2>/dev/null && break; sleep 0.05; done
port=$(grep -o 'tcp://127.0.0.1:[0-9]*' "$work/famd.log" | head -1 | sed 's/.*://')
[ -n "$port" ] || { echo "$prog: famd did not start:"; cat "$work/famd.log"; exit 1; }
export OPENFAM_TOKEN_FILE="$work/token" OPENFAM_SERVER=127.0.0.1:$port
