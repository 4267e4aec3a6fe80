#!/usr/bin/env bash
# Loopback figures of the libfabric data plane (core/fabric, issue 15), in
# one run beside fi_pingpong: 256-byte get over tcp;ofi_rxm against the
# pingpong round trip (goal <= 1.1x), 4 MiB get and put (goal >= 4 GB/s)
# against fi_pingpong's 4 MiB rate, against the same transfers over one
# plain TCP connection without libfabric, and against one-way streaming TCP
# with no protocol (tests/tcpbw.c, the kernel's ceiling here), and
# over two endpoint pairs at once (what several connections could give),
# fetch_add against the 256-byte get (goal <= 1.1x), the shm provider's
# 8-byte get, and the idle CPU of an open endpoint pair over 10 s (in one
# process, then server and client in two, each measured).
# Needs libfabric1 and libfabric-bin (fi_pingpong); says SKIP otherwise.
# BENCHTIME (default 2s) is go test's -benchtime.
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime=${BENCHTIME:-2s}
if ! command -v fi_pingpong >/dev/null; then
	echo "SKIP fabric-bench: fi_pingpong is not installed (apt-get install libfabric-bin)"
	exit 0
fi
tmp=$(mktemp -d)
spid=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
echo "machine: $(nproc) cores, load average $(loadavg) at the start"

# fi_pingpong: the server takes no address, the client 127.0.0.1. The
# client is retried until the server listens (it exits at once if not).
pp() {
	local prov=$1 size=$2 iters=$3 out=$tmp/pp-client
	timeout 300 fi_pingpong -p "$prov" -e rdm -S "$size" -I "$iters" >"$tmp/pp-server" 2>&1 &
	spid=$!
	for _ in $(seq 50); do
		if timeout 300 fi_pingpong -p "$prov" -e rdm -S "$size" -I "$iters" 127.0.0.1 >"$out" 2>&1; then
			wait "$spid" || true
			spid=
			# usec/xfer ($7), or MB/sec ($6) where PP_COL says so, of
			# the data line: its #ack column reads "=200" (the sizes
			# and counts read "4m", "20k").
			awk -v c="${PP_COL:-7}" '$3 ~ /^=/ { print $c }' "$out" | tail -1
			return
		fi
		sleep 0.2
	done
	echo "fi_pingpong failed:" >&2
	cat "$out" >&2
	return 1
}
echo "== fi_pingpong -p \"tcp;ofi_rxm\" -e rdm -S 256 -I 20000 (server + client on 127.0.0.1)"
oneway=$(pp "tcp;ofi_rxm" 256 20000)
echo "   ${oneway} us per transfer one way"
echo "== fi_pingpong -p \"tcp;ofi_rxm\" -e rdm -S 4194304 -I 200"
ppbw=$(PP_COL=6 pp "tcp;ofi_rxm" 4194304 200)
echo "   ${ppbw} MB/s"

# The ceiling: one-way streaming TCP over loopback with no protocol at all
# (tests/tcpbw.c: 4 MiB write()s back to back, two processes), on one
# connection, on two at once, and on one with 16 MiB socket buffers. Every
# TCP-based provider moves its bytes through the same two kernel copies,
# so none can beat the best of these on this host.
tcpbw= tcpcpu= rrcpu=
if command -v cc >/dev/null && cc -O2 -o "$tmp/tcpbw" tests/tcpbw.c; then
	echo "== tests/tcpbw.c: streaming TCP on loopback, one way, 4 MiB writes, 2 s each"
	"$tmp/tcpbw" 1 0 2 | tee "$tmp/tcpbw.out"
	"$tmp/tcpbw" 2 0 2 | tee -a "$tmp/tcpbw.out"
	"$tmp/tcpbw" 1 16777216 2 | tee -a "$tmp/tcpbw.out"
	# What one core copies in user space, and two at once (whether
	# overlapping the sender's and the receiver's copies can pay here).
	"$tmp/tcpbw" memcpy
	# Request/response in C (the 4 MiB get's pattern without Go or
	# libfabric), with the two copies overlapping and, "late", not.
	"$tmp/tcpbw" rr | tee "$tmp/rr.out"
	"$tmp/tcpbw" rr late | tee -a "$tmp/rr.out"
	tcpbw=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "GB/s") print $(i-1) }' "$tmp/tcpbw.out" | sort -g | tail -1)
	# The least CPU time per MiB (both ends) of the three.
	tcpcpu=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "us" && $(i+1) == "CPU") print $(i-1) }' "$tmp/tcpbw.out" | sort -g | head -1)
	# CPU time per MiB of C request/response, overlapping and not.
	rrcpu=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "us" && $(i+1) == "CPU") print $(i-1) }' "$tmp/rr.out" | paste -sd/)
else
	echo "== tests/tcpbw.c: no C compiler, the streaming-TCP ceiling is not measured"
fi

echo "== go test -bench (core/fabric, -benchtime $benchtime)"
go test -c -o "$tmp/fabric.test" ./core/fabric/
"$tmp/fabric.test" -test.run '^$' -test.bench 'Get256|Get8|Get4M|Put4M|TCPGet4M|TCPPut4M|FetchAdd' \
	-test.benchtime "$benchtime" 2>&1 | grep -E '^Benchmark|SKIP' | tee "$tmp/bench"
# The same 256 B get with the progress goroutines never polling after work
# (Options.ProgressSpin < 0: they block at once, as before issue 15's
# polling), for comparison in the same run.
FABRIC_BENCH_PROGRESS_SPIN=-1ns "$tmp/fabric.test" -test.run '^$' -test.bench 'Get256/tcp' \
	-test.benchtime "$benchtime" 2>&1 | grep -E '^Benchmark' | sed 's/^BenchmarkGet256/BenchmarkGet256block/' | tee -a "$tmp/bench"
ns() { awk -v n="$1" '$1 ~ "^"n"-" { print $3 }' "$tmp/bench"; }
mbs() { awk -v n="$1" '$1 ~ "^"n"-" { print $5 }' "$tmp/bench"; }

echo "== idle CPU of an open server + client endpoint pair in one process, then of each in its own process (with the first 8 B get after 200 ms idle), 10 s per provider"
FABRIC_IDLE_SECONDS=10 "$tmp/fabric.test" -test.run 'TestIdleCPU' -test.v 2>&1 |
	grep -E 'idle endpoint pair|idle over|SKIP|FAIL' | sed 's/^ *//'

echo "== figures"
awk -v get="$(ns 'BenchmarkGet256/tcp;ofi_rxm')" -v pp="$oneway" 'BEGIN {
	if (get == "" || pp == "") { print "256 B get over tcp;ofi_rxm: missing"; exit }
	printf "256 B get over tcp;ofi_rxm: %.1f us; fi_pingpong round trip %.1f us (2 x %.2f): %.2fx (goal <= 1.1x)\n", get/1000, 2*pp, pp, get/1000/(2*pp) }'
awk -v get="$(ns 'BenchmarkGet256block/tcp;ofi_rxm')" -v pp="$oneway" 'BEGIN {
	if (get == "" || pp == "") exit
	printf "  with the progress goroutines blocking at once (ProgressSpin < 0): %.1f us: %.2fx\n", get/1000, get/1000/(2*pp) }'
awk -v g="$(mbs 'BenchmarkGet4M/tcp;ofi_rxm')" -v p="$(mbs 'BenchmarkPut4M/tcp;ofi_rxm')" -v pp="$ppbw" \
	-v tg="$(mbs 'BenchmarkTCPGet4M')" -v tp="$(mbs 'BenchmarkTCPPut4M')" \
	-v g2="$(mbs 'BenchmarkGet4MPairs/tcp;ofi_rxm')" -v p2="$(mbs 'BenchmarkPut4MPairs/tcp;ofi_rxm')" 'BEGIN {
	if (g == "" || pp == "") { print "4 MiB over tcp;ofi_rxm against fi_pingpong: missing"; exit }
	printf "4 MiB over tcp;ofi_rxm against fi_pingpong'"'"'s %.2f GB/s: get %.2fx, put %.2fx\n", pp/1000, g/pp, p/pp
	if (tg != "") printf "  plain TCP on loopback (one connection, no libfabric): get %.2f GB/s, put %.2f GB/s: the fabric has %.2fx, %.2fx of it\n", tg/1000, tp/1000, g/tg, p/tp
	if (g2 != "") printf "  split over two endpoint pairs at once: get %.2f GB/s, put %.2f GB/s\n", g2/1000, p2/1000 }'
awk -v bw="$tcpbw" -v tg="$(mbs 'BenchmarkTCPGet4M')" -v g="$(mbs 'BenchmarkGet4M/tcp;ofi_rxm')" 'BEGIN {
	if (bw == "") exit
	printf "the goal'"'"'s 4 GB/s against the ceiling, streaming TCP one way with no protocol (best of tests/tcpbw.c'"'"'s three): %.2f GB/s", bw
	if (bw < 4) printf ": 4 GB/s is beyond any TCP-based provider on this host now\n"; else printf ": 4 GB/s is within it\n"
	if (tg != "") printf "  request/response over one plain TCP connection has %.2fx of the streaming figure", tg/1000/bw
	if (tg != "" && g != "") printf ", the fabric'"'"'s get %.2fx", g/1000/bw
	if (tg != "") printf "\n" }'
# CPU time per MiB moved (both ends): what 4 GB/s would need in cores.
cpu() { awk -v n="$1" '$1 ~ "^"n"-" { for (i = 1; i <= NF; i++) if ($i == "cpu-us/op") print $(i-1) }' "$tmp/bench"; }
awk -v c="$tcpcpu" -v rr="$rrcpu" -v n="$(nproc)" -v tg="$(cpu 'BenchmarkTCPGet4M')" -v g="$(cpu 'BenchmarkGet4M/tcp;ofi_rxm')" -v p="$(cpu 'BenchmarkPut4M/tcp;ofi_rxm')" 'BEGIN {
	if (c == "") exit
	printf "CPU per MiB moved (both ends): streaming TCP %.0f us (%.2f ns a byte for each of the two copies, TCP included): 4 GB/s needs %.1f cores at that, the host has %d\n", c, c*1000/1048576/2, 4e9/1048576*c/1e6, n
	if (tg != "" && g != "") printf "  request/response over plain TCP %.0f us (in C: %s us, the second with the copies never overlapping), the fabric'"'"'s get %.0f us, put %.0f us\n", tg/4, rr, g/4, p/4 }'
for prov in "tcp;ofi_rxm" sockets shm; do
	awk -v prov="$prov" -v g="$(mbs "BenchmarkGet4M/$prov")" -v p="$(mbs "BenchmarkPut4M/$prov")" 'BEGIN {
		if (g == "") { printf "4 MiB over %s: not measured (provider absent)\n", prov; exit }
		printf "4 MiB over %s: get %.2f GB/s, put %.2f GB/s (goal >= 4)\n", prov, g/1000, p/1000 }'
	awk -v prov="$prov" -v fa="$(ns "BenchmarkFetchAdd/$prov")" -v get="$(ns "BenchmarkGet256/$prov")" 'BEGIN {
		if (fa == "" || get == "") exit
		printf "fetch_add over %s: %.1f us, 256 B get %.1f us: %.2fx (goal <= 1.1x)\n", prov, fa/1000, get/1000, fa/get }'
done
awk -v g="$(ns 'BenchmarkGet8/shm')" 'BEGIN { if (g != "") printf "8 B get over shm: %.1f us\n", g/1000 }'
echo "machine: $(nproc) cores, load average $(loadavg) at the end"
