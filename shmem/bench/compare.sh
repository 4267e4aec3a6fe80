#!/bin/sh
# compare.sh OURS OPENMPI: shmembench's two outputs side by side with the
# ratio ours/Open MPI. For times (us) below 1.0 means ours is faster; for
# the message rate (Mmsg/s) above 1.0 means ours is faster.
ours=$1 ompi=$2
grep '^#' "$ours" | sed 's/^# /ours:    /'
grep '^#' "$ompi" | sed 's/^# /openmpi: /'
printf '%-30s %12s %12s %8s  %s\n' figure ours openmpi ratio unit
awk -F'\t' 'NR == FNR { if ($1 !~ /^#/) o[$1] = $2; next }
  $1 !~ /^#/ { r = ($1 in o && o[$1] > 0) ? sprintf("%.2f", $2 / o[$1]) : "-";
               better = ($3 ~ /msg/) ? "(higher is better)" : "";
               printf "%-30s %12.3f %12s %8s  %s %s\n", $1, $2, ($1 in o) ? sprintf("%.3f", o[$1]) : "-", r, $3, better }' \
  "$ompi" "$ours"
