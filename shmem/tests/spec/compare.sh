#!/bin/sh
# compare.sh OURS_RESULTS OPENMPI_RESULTS: the differential run's table,
# one line per program run (program, args, PE count), our verdict and Open
# MPI's; a "differs" mark where they disagree.
ours=$1 ompi=$2
printf '%-16s %-11s %3s  %-5s %-7s\n' program args np ours openmpi
awk 'NR == FNR { o[$1 " " $2 " " $3] = $4; next }
     { k = $1 " " $2 " " $3; v = (k in o) ? o[k] : "-";
       printf "%-16s %-11s %3s  %-5s %-7s%s\n", $1, $2, $3, $4, v, (v != $4 ? "  differs" : "") }' \
  "$ompi" "$ours"
printf 'ours: %s passed of %s; openmpi: %s passed of %s\n' \
  "$(grep -c ' PASS ' "$ours")" "$(wc -l < "$ours")" "$(grep -c ' PASS ' "$ompi")" "$(wc -l < "$ompi")"
