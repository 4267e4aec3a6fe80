#!/bin/bash
# bench-scale: how metadata operations scale with the number of items, on
# the embedded store and through famd (Unix socket); famd's restart time
# with N items in its catalogue; many regions; many clients of one famd
# (famrun -n CONNS of the multi-PE counter-and-barrier check) and an
# oversubscribed famrun -n 64 job. A benchmark, not a test: it prints
# figures; it fails only when an operation fails.
#
#   tests/scale/scale-bench.sh BINDIR MULTIPE
#   ITEMS=1000,10000,100000,1000000 FAMD_ITEMS=... REGIONS=10000 CONNS=256 NPES=64
#   CPU=1: time operations in CPU time (famscale --cpu: the calling thread's
#   embedded; the program's and famd's through famd), which a machine busy
#   with other work does not inflate as it does wall time
set -u
BIN=${1:?bin directory}
MULTIPE=${2:?multipe program}
ITEMS=${ITEMS:-1000,10000,100000}
FAMD_ITEMS=${FAMD_ITEMS:-$ITEMS}
OPS=${OPS:-1000}
REGIONS=${REGIONS:-10000}
CONNS=${CONNS:-256}
NPES=${NPES:-64}
TIMING=
[ -n "${CPU:-}" ] && TIMING=--cpu
work=$(mktemp -d /tmp/famscale.XXXXXX)
# Volatile regions' heap files go where they go by default, on tmpfs
# (/dev/shm): on a disk file system a freed or allocated item's zeroing
# write-faults on every page writeback has cleaned, and the million-item
# figures measured ext4's page_mkwrite instead of the library.
shm=$(mktemp -d /dev/shm/famscale.XXXXXX 2>/dev/null) || shm=$work
famd_pid=
cleanup() {
	[ -n "$famd_pid" ] && kill "$famd_pid" 2>/dev/null && wait "$famd_pid" 2>/dev/null
	rm -rf "$work"
	[ "$shm" != "$work" ] && rm -rf "$shm"
}
trap cleanup EXIT
# elapsed T0: seconds since T0 (date +%s.%N), without bc.
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }
unset OPENFAM_SERVER

echo "== machine: $(nproc) cores, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); load $(cut -d' ' -f1-3 /proc/loadavg); volatile heaps in $shm"
echo "== embedded store, items per region: $ITEMS ($OPS timed operations of each kind)"
OPENFAM_DATA_DIR=$work/emb OPENFAM_SHM_DIR=$shm/emb \
	"$BIN/famscale" $TIMING --items "$ITEMS" --ops "$OPS" --data-dir "$work/emb" || exit 1

# start_famd: starts famd on $work/famd and waits for its "serving" line;
# sets famd_pid, and ready_s to how long that took. (Not in a subshell: the
# pid must reach stop_famd and cleanup.)
start_famd() {
	local t0
	t0=$(date +%s.%N)
	"$BIN/famd" --socket "$work/famd.sock" --data-dir "$work/famd" --shm-dir "$shm/famd" \
		>>"$work/famd.log" 2>&1 &
	famd_pid=$!
	for _ in $(seq 1 6000); do
		grep -q serving "$work/famd.log" 2>/dev/null && break
		kill -0 "$famd_pid" 2>/dev/null || { echo "famd died:"; cat "$work/famd.log"; exit 1; }
		sleep 0.01
	done
	ready_s=$(elapsed "$t0")
}
stop_famd() {
	kill -TERM "$famd_pid" && wait "$famd_pid"
	famd_pid=
	: >"$work/famd.log"
}

echo "== famd on a Unix socket, items per region: $FAMD_ITEMS (the last size kept for the restart)"
start_famd
OPENFAM_SERVER=unix:$work/famd.sock "$BIN/famscale" $TIMING --items "$FAMD_ITEMS" --ops "$OPS" \
	--data-dir "$work/famd" --famd-pid "$famd_pid" --keep || exit 1
last=${FAMD_ITEMS##*,}
stop_famd
start_famd
# CPU seconds famd used to get there (utime+stime, clock ticks), which a
# busy machine does not inflate as it does the wall time.
ready_cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$famd_pid/stat")
echo "famd restart with $last items in one region: $ready_s s until it serves ($ready_cpu s of CPU)"
OPENFAM_SERVER=unix:$work/famd.sock "$BIN/famscale" --check-keep "$last" --ops "$OPS" || exit 1

echo "== $REGIONS regions through famd"
OPENFAM_SERVER=unix:$work/famd.sock "$BIN/famscale" --regions "$REGIONS" --ops "$OPS" || exit 1

echo "== famrun -n $CONNS against one famd (each PE a client connection): counter and barrier"
t0=$(date +%s.%N)
OPENFAM_SERVER=unix:$work/famd.sock "$BIN/famrun" -n "$CONNS" --timeout 10m "$MULTIPE" "conns-$$" >"$work/conns.log" 2>&1
rc=$?
echo "rc=$rc in $(elapsed "$t0") s; $(grep -c . "$work/conns.log") output lines"
[ $rc -eq 0 ] || { tail -20 "$work/conns.log"; exit 1; }
stop_famd

echo "== famrun -n $NPES with its own famd (oversubscribed on $(nproc) cores): counter and barrier"
t0=$(date +%s.%N)
"$BIN/famrun" -n "$NPES" --timeout 10m "$MULTIPE" >"$work/npes.log" 2>&1
rc=$?
echo "rc=$rc in $(elapsed "$t0") s"
[ $rc -eq 0 ] || { tail -20 "$work/npes.log"; exit 1; }
