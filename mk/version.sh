#!/bin/sh
# Prints the version the build stamps into the tools (see OPENFAM_VERSION in
# the Makefile): the release in VERSION; in a git checkout followed by the
# commit ("3.2.0-gb01ac03", "-dirty" when the tree has uncommitted changes),
# or the tag's version alone when the commit carries a tag v3.2.0.
set -u
base=$(cat "$(dirname "$0")/../VERSION") || exit 1
d=$(git -C "$(dirname "$0")/.." describe --always --dirty --match 'v[0-9]*' 2>/dev/null) || d=
case "$d" in
  v*) echo "${d#v}" ;;
  "") echo "$base" ;;
  *) echo "$base-g$d" ;;
esac
