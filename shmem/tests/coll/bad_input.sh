#!/bin/sh
# bad_input.sh OSHRUN PROGRAM: runs each misuse of bad_input.c under
# oshrun -np 2 and checks that the job ends with status 1 and a message on
# stderr naming the call (the control "ok" must end with 0).
set -u
oshrun=$1
prog=$2
rc=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
# check MODE WANT_STATUS WANT_TEXT
check() {
  mode=$1 want=$2 text=$3
  "$oshrun" -np 2 --timeout 60s "$prog" "$mode" > /dev/null 2> "$err"
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
check root 1 "shmem: shmem_long_broadcast: PE_root 2 is not a PE of the team"
check sym 1 "shmem: shmem_long_sum_reduce: .*not symmetric"
check team 1 "shmem: shmem_team_sync: team .* is not a valid team"
check destroyed 1 "shmem: shmem_long_fcollect: team .* is not a valid team"
check invalid 1 "shmem: shmem_long_fcollect: team (nil) is not a valid team"
check aset 1 "shmem: shmem_barrier: active set (PE_start 0, logPE_stride 0, PE_size 3) reaches PE 2 of 2"
check psync 1 "shmem: shmem_barrier: .*not symmetric"
check lock 1 "shmem: shmem_set_lock: .*not symmetric"
check unlocked 1 "shmem: shmem_clear_lock: the lock is not held"
check world 1 "shmem: shmem_team_destroy: SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED cannot be destroyed"
exit $rc
