#!/usr/bin/env bash
# fambench smoke test (make test-fambench): every subcommand runs at the
# smallest settings on the embedded store and on a private famd over TCP
# (rtt, persist and get-loop over its Unix socket too), the interleave series under
# famrun --servers 2; the JSON parses, every
# figure and baseline is positive, the baselines follow the path (memcpy
# locally, raw TCP over TCP), CSV and the table have their columns, and bad
# arguments fail with status 2. Figures are not judged: the test machine is
# busy. Usage: cmd/fambench/smoke.sh BINDIR
set -euo pipefail
bindir=$1
work=$(mktemp -d)
famd_pid=""
cleanup() {
  if [ -n "$famd_pid" ]; then kill "$famd_pid" 2>/dev/null || true; wait "$famd_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "test-fambench: FAIL: $*" >&2; exit 1; }
tiny=(--time-ms 1 --repeats 1 --max 4K)

# check FILE WANT_SERIES... BASELINE_WORD: JSON rows well formed.
check() {
  python3 - "$@" <<'PY'
import json, sys
path, base_word, want = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = json.load(open(path))
assert rows, "no rows"
seen = {r["series"] for r in rows}
assert set(want) <= seen, "series missing: %s" % (set(want) - seen)
for r in rows:
    for k in ("path", "name", "size", "threads", "value", "unit", "baseline", "baseline_value", "ratio"):
        assert k in r, "row without %s: %r" % (k, r)
    assert r["value"] > 0 and r["baseline_value"] > 0 and r["ratio"] > 0, "non-positive figure: %r" % r
    if r["series"] == "persist":
        pass  # its baselines are its own (volatile twin, msync, fdatasync)
    elif r["series"] == "rtt":
        assert "ping-pong" in r["baseline"], "rtt baseline %r" % r["baseline"]
    elif r["series"] not in ("interleave",) and r["name"] != "fam_put_nonblocking (pipe)":
        assert base_word in r["baseline"] or (base_word == "memcpy" and r["series"] in ("atomics", "gather", "metadata")), \
            "baseline %r on %s" % (r["baseline"], r["path"])
print("  %d rows, series %s" % (len(rows), " ".join(sorted(seen))))
PY
}

export OPENFAM_DATA_DIR=$work/data OPENFAM_SHM_DIR=$work/shm OPENFAM_BACKUP_DIR=$work/backups
unset OPENFAM_SERVER OPENFAM_TOKEN_FILE

echo "== fambench --help lists the subcommands"
help=$("$bindir/fambench" --help)
for s in throughput latency threads atomics gather metadata interleave rtt persist all get-loop; do
  grep -q "^  $s " <<<"$help" || fail "--help does not list $s"
done

echo "== bad arguments: status 2"
for bad in "nosuch" "--repeats 0" "--max 65M" "--baseline udp" "--stat mean" "--json --csv latency" \
  "get-loop 0" "get-loop 2x" "get-loop 1 rtt" "--get-mib 1 --get-loop 1"; do
  rc=0; "$bindir/fambench" $bad >/dev/null 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "fambench $bad: status $rc, want 2"
done

echo "== local mapping, all subcommands, JSON"
"$bindir/fambench" "${tiny[@]}" --json all > "$work/local.json"
check "$work/local.json" memcpy throughput latency threads atomics gather metadata
! grep -Eq '"series": "(rtt|persist)"' "$work/local.json" || fail "all runs rtt or persist"

echo "== local mapping, persist (and its alias --persist)"
FAMBENCH_RAW_DIR=$work "$bindir/fambench" --time-ms 1 --repeats 1 --json persist > "$work/persist.json"
check "$work/persist.json" - persist
[ "$(grep -c '"series": "persist"' "$work/persist.json")" = 9 ] || fail "persist: want 9 rows"
FAMBENCH_RAW_DIR=$work "$bindir/fambench" --time-ms 1 --repeats 1 --persist | grep -q "fam_quiet, 4096 dirty pages" ||
  fail "--persist table"
[ -z "$(find "$work" -maxdepth 1 -name 'fambench-raw-*')" ] || fail "persist left its baseline file"

echo "== local mapping, rtt (and its alias --rtt)"
"$bindir/fambench" "${tiny[@]}" --json rtt > "$work/rtt-local.json"
check "$work/rtt-local.json" ping-pong rtt
python3 - "$work/rtt-local.json" <<'PY' || fail "rtt rows"
import json, sys
rows = json.load(open(sys.argv[1]))
names = [(r["name"], r["size"]) for r in rows]
want = [("fam_get_blocking", 8), ("fam_put_blocking", 8), ("fam_get_blocking", 256), ("fam_put_blocking", 256),
        ("fam_fetch_add_int64", 8), ("fam_add_int64 + fam_quiet", 8), ("lookup + close", 0),
        ("lookup_region + close", 0), ("allocate + deallocate", 1024), ("raw TCP ping-pong, blocking", 256)]
assert names == want, names
assert all(r["baseline"] == "raw TCP ping-pong, polling" for r in rows), rows
PY
"$bindir/fambench" --time-ms 1 --repeats 1 --rtt | grep -q "rtt goals" || fail "--rtt table without its goals line"

echo "== local mapping, CSV and table"
csv=$("$bindir/fambench" "${tiny[@]}" --csv latency)
[ "$(head -1 <<<"$csv")" = "path,series,name,size,threads,servers,value,unit,baseline,baseline_value,ratio" ] ||
  fail "CSV header: $(head -1 <<<"$csv")"
[ "$(wc -l <<<"$csv")" = 5 ] || fail "CSV: want 4 latency rows: $csv"
"$bindir/fambench" "${tiny[@]}" metadata | grep -q "vs base" || fail "table without its header"
"$bindir/fambench" "${tiny[@]}" --stat best --json gather > "$work/best.json"
check "$work/best.json" memcpy gather
grep -q '"stat": "best"' "$work/best.json" || fail "--stat best not recorded in the JSON"

echo "== progress line on a terminal only"
if command -v script >/dev/null; then
  tty_out=$(script -qec "$bindir/fambench --time-ms 1 --repeats 1 metadata" /dev/null)
  grep -q "\[0/3\] local mapping: metadata" <<<"$tty_out" || fail "no progress line on a terminal: $tty_out"
else
  echo "  (script(1) missing: terminal case not run)"
fi
"$bindir/fambench" --time-ms 1 --repeats 1 metadata 2>"$work/err" >/dev/null
[ ! -s "$work/err" ] || fail "progress written without a terminal: $(cat "$work/err")"

echo "== tcp famd"
"$bindir/famctl" token new "$work/token" >/dev/null
"$bindir/famd" --listen tcp://127.0.0.1:0 --socket "$work/famd.sock" --token-file "$work/token" --tcp-identity "$(id -u):$(id -g)" \
  --data-dir "$work/famd-data" --shm-dir "$work/famd-shm" --backup-dir "$work/famd-backups" >"$work/famd.log" 2>&1 &
famd_pid=$!
for _ in $(seq 600); do
  grep -qs "serving gRPC" "$work/famd.log" && break
  kill -0 "$famd_pid" 2>/dev/null || break
  sleep 0.05
done
addr=$(sed -n 's/.*gRPC on tcp:\/\/\([^ ]*\) .*/\1/p' "$work/famd.log" | head -1)
[ -n "$addr" ] || fail "famd did not start: $(cat "$work/famd.log")"
OPENFAM_SERVER=$addr OPENFAM_TOKEN_FILE=$work/token \
  "$bindir/fambench" "${tiny[@]}" --json throughput latency atomics gather metadata > "$work/tcp.json"
check "$work/tcp.json" "raw TCP" throughput latency atomics gather metadata
for srv in "$addr" "unix:$work/famd.sock"; do
  echo "== rtt, persist and get-loop, OPENFAM_SERVER=$srv"
  OPENFAM_SERVER=$srv OPENFAM_TOKEN_FILE=$work/token \
    "$bindir/fambench" --time-ms 1 --repeats 1 --json rtt > "$work/rtt.json"
  check "$work/rtt.json" ping-pong rtt
  OPENFAM_SERVER=$srv OPENFAM_TOKEN_FILE=$work/token FAMBENCH_RAW_DIR=$work \
    "$bindir/fambench" --time-ms 1 --repeats 1 --json persist > "$work/persist.json"
  check "$work/persist.json" - persist
  loop=$(OPENFAM_SERVER=$srv OPENFAM_TOKEN_FILE=$work/token "$bindir/fambench" get-loop 1)
  grep -Eq '^fambench get-loop: [1-9][0-9]* gets of 8 B in 1 s: [0-9.]+ us/op$' <<<"$loop" || fail "get-loop: $loop"
  OPENFAM_SERVER=$srv OPENFAM_TOKEN_FILE=$work/token "$bindir/fambench" --get-loop 1 --json |
    python3 -c 'import json,sys; r=json.load(sys.stdin)[0]; assert r["ops"] > 0 and r["value"] > 0, r' ||
    fail "get-loop --json"
done
kill "$famd_pid"; wait "$famd_pid" 2>/dev/null || true; famd_pid=""

echo "== interleave under famrun --servers 2"
env -u OPENFAM_SERVER "$bindir/famrun" -n 1 --servers 2 --timeout 120s \
  "$bindir/fambench" --time-ms 1 --repeats 1 --json interleave > "$work/il.json"
check "$work/il.json" - interleave
python3 -c 'import json,sys; rows=json.load(open(sys.argv[1])); assert all(r["servers"] == 2 for r in rows), rows' \
  "$work/il.json" || fail "interleaved items not on 2 memory servers"
echo "test-fambench: passed"
