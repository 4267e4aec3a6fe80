#!/bin/sh
# bad_input.sh OSHRUN PROGRAM: runs each misuse of bad_input.c under
# oshrun -np 2 and checks that the job ends with the expected status and,
# for aborts, a message on stderr naming the call.
set -u
oshrun=$1
prog=$2
rc=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
# check MODE WANT_STATUS WANT_TEXT [ENV...]
check() {
  mode=$1 want=$2 text=$3
  shift 3
  env "$@" "$oshrun" -np 2 --timeout 60s "$prog" "$mode" > /dev/null 2> "$err"
  got=$?
  if [ "$got" -ne "$want" ]; then
    echo "bad_input $mode: exit status $got, want $want"; cat "$err"; rc=1; return
  fi
  if [ -n "$text" ] && ! grep -q -- "$text" "$err"; then
    echo "bad_input $mode: stderr does not say \"$text\":"; cat "$err"; rc=1; return
  fi
  echo "bad_input $mode: status $got OK"
}
check ok 0 ""
check pe 1 "shmem: shmem_long_p: PE 2 is out of range"
check sym 1 "shmem: shmem_putmem: address .* is not symmetric"
check thread 1 "shmem: shmem_init_thread: thread level 99"
check free 1 "shmem: shmem_free: .* is not a block of the symmetric heap"
check cmp 1 "shmem: shmem_int_wait_until: comparison 42"
check exit 7 ""
check exit0 0 ""
check fail 3 ""
check ok 1 "shmem: shmem_init: SHMEM_SYMMETRIC_SIZE=\"12Q\" is not a size" SHMEM_SYMMETRIC_SIZE=12Q
check ok 1 "shmem: shmem_init: SMA_SYMMETRIC_SIZE=\"-1M\" is not a size" SMA_SYMMETRIC_SIZE=-1M
exit $rc
