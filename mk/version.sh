#!/bin/sh
# Prints the version the build stamps into the tools (see OPENFAM_VERSION in
# the Makefile): the release in VERSION; in a git checkout followed by the
# commit ("3.2.0-gb01ac03", "-dirty" when the tree has uncommitted changes),
# or the tag's version alone when the commit carries a tag v3.2.0.
set -u
src=$(cd "$(dirname "$0")/.." && pwd -P)
base=$(cat "$src/VERSION") || exit 1
d=
# Only this tree's own repository: a release tarball unpacked inside some
# other git checkout must not take that checkout's commit.
top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null) || top=
if [ -n "$top" ] && [ "$(cd "$top" && pwd -P)" = "$src" ]; then
  d=$(git -C "$src" describe --tags --always --dirty --match 'v[0-9]*' 2>/dev/null) || d=
fi
case "$d" in
  v*) echo "${d#v}" ;;
  "") echo "$base" ;;
  *) echo "$base-g$d" ;;
esac
