#!/bin/sh
# run.sh: builds the OpenSHMEM specification test programs and examples
# listed in shmem/tests/spec/PROGRAMS with one implementation's compiler
# wrapper and runs each under its launcher with every PE count its row
# names, with a per-run timeout; prints one line per run and a summary, and
# writes the results ("program args np verdict detail") to OUT/results.
#
#   run.sh --cc OSHCC --run 'LAUNCHER WORDS' --out DIR [--timeout SECONDS]
#          [--spec14] [--name LABEL]
#
# --spec14 keeps the rows marked 1.4 (the differential run against a 1.4
# implementation). SHTEST_NO_DATAPATH=1 in the environment leaves out the
# data-path runs (np "2s"). Exit status: 0 when every run met its expectation.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cc= run= out= timeout=180 spec14=0 name=ours
while [ $# -gt 0 ]; do
  case "$1" in
    --cc) cc=$2; shift 2 ;;
    --run) run=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --spec14) spec14=1; shift ;;
    --name) name=$2; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$cc" ] && [ -n "$run" ] && [ -n "$out" ] || { echo "usage: run.sh --cc OSHCC --run LAUNCHER --out DIR" >&2; exit 2; }
mkdir -p "$out/bin" "$out/log"
: > "$out/results"

rows=$(grep -v '^#' "$here/PROGRAMS" | grep -v '^[[:space:]]*$')
if [ $spec14 = 1 ]; then rows=$(printf '%s\n' "$rows" | awk '$2 == "1.4"'); fi

# Build each program once.
built=" "
for prog in $(printf '%s\n' "$rows" | awk '{print $1}' | sort -u); do
  src=$here/$prog.c
  [ -f "$src" ] || src=$root/shmem/examples/$prog.c
  if $cc -O2 -g -Wall -I"$here" -o "$out/bin/$prog" "$src" -lpthread -lm > "$out/log/$prog.build" 2>&1; then
    built="$built$prog "
  else
    echo "BUILD FAILED $prog ($name): $(grep -m1 -i error "$out/log/$prog.build")"
  fi
done

pass=0 fail=0 failed=
printf '%s\n' "$rows" | {
while read -r prog spec nps expect args; do
  for np in $(echo "$nps" | tr ',' ' '); do
    # "2s": 2 PEs whose heaps live on 2 memory servers (our oshrun's
    # --servers): no mapping, every access takes the FAM data path. Ours only.
    extra= dp=
    case "$np" in
      *s) { [ $spec14 = 1 ] || [ -n "${SHTEST_NO_DATAPATH:-}" ]; } && continue
          np=${np%s}; extra="--servers 2"; dp=1 ;;
    esac
    tag="$prog${args:+ $args} -np $np${extra:+ $extra}"
    log=$out/log/$prog${args:+-$args}-np$np${dp:+-servers}
    if [ "${built#* $prog }" = "$built" ]; then
      verdict=FAIL detail="did not build (see $out/log/$prog.build)"
    else
      start=$(date +%s)
      # shellcheck disable=SC2086
      SHTEST_DATAPATH=$dp timeout -k 10 "$timeout" $run -np "$np" $extra "$out/bin/$prog" $args > "$log.out" 2> "$log.err" < /dev/null
      rc=$?
      secs=$(( $(date +%s) - start ))
      verdict=PASS detail="rc $rc, ${secs}s"
      # timeout(1) ended it (its 124, or 137 after -k): never a pass
      timedout=0
      if [ "$secs" -ge "$timeout" ]; then timedout=1; detail="$detail, timed out after ${timeout}s"; fi
      case "$expect" in
        pass) { [ $rc = 0 ] && grep -q "^$prog: PASS" "$log.out"; } || verdict=FAIL ;;
        ok) [ $rc = 0 ] || verdict=FAIL ;;
        fail) { [ $rc != 0 ] && [ $timedout = 0 ]; } || verdict=FAIL ;;
        exit=*) { [ $rc = "${expect#exit=}" ] && [ $timedout = 0 ]; } || verdict=FAIL ;;
        abort=*) { [ $rc != 0 ] && [ $timedout = 0 ] && grep -q "${expect#abort=}" "$log.err"; } || verdict=FAIL ;;
      esac
      if [ $verdict = FAIL ]; then
        detail="$detail, expected $expect; stderr: $(grep -v '^\s*$' "$log.err" | head -3 | tr '\n' ' ' | cut -c1-300)"
      fi
    fi
    if [ $verdict = PASS ]; then pass=$((pass + 1)); else fail=$((fail + 1)); failed="$failed
  $tag"; fi
    echo "$verdict $tag ($name): $detail"
    echo "$prog ${args:--} $np${dp:+s} $verdict $detail" >> "$out/results"
  done
done
echo "== $name: $pass passed, $fail failed${failed:+:$failed}"
[ $fail = 0 ]
}
