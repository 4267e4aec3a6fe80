#!/bin/sh
# Installs and uninstalls OpenFAM under a prefix, keeping a manifest so that
# uninstall removes exactly what install put there (see mk/install.mk).
#
#   install.sh install ROOT < LIST    ROOT is $(DESTDIR)$(PREFIX)
#   install.sh uninstall ROOT
#
# LIST has one entry a line, paths relative to ROOT:
#   MODE SRC DEST     copy the file SRC to ROOT/DEST with MODE
#   link TARGET DEST  a symbolic link ROOT/DEST -> TARGET
#
# The manifest (ROOT/share/openfam/install-manifest) names every file and
# link installed ("f DEST") and every directory install had to create
# ("d DEST"); uninstall removes those files, then those directories if they
# are empty, and never anything else.
set -eu

manifest_rel=share/openfam/install-manifest
cmd=${1:?usage: install.sh install|uninstall ROOT}
root=${2:?usage: install.sh install|uninstall ROOT}
manifest=$root/$manifest_rel

# mkdirs REL: creates ROOT/REL and its missing parents, recording each
# directory made (parents first) in $new.
mkdirs() {
  [ -d "$root/$1" ] && return 0
  case "$1" in */*) mkdirs "${1%/*}" ;; esac
  mkdir "$root/$1"
  echo "d $1" >> "$new"
}

case "$cmd" in
install)
  mkdir -p "$root"
  new=$(mktemp)
  trap 'rm -f "$new"' EXIT
  # What an earlier install put here stays recorded (the directories it
  # created, files this install may no longer have), so that uninstall after
  # installing twice still removes all of it.
  if [ -f "$manifest" ]; then
    cat "$manifest" >> "$new"
  fi
  while read -r a b c; do
    [ -n "$a" ] || continue
    case "$c" in /*|*..*) echo "install.sh: bad destination $c" >&2; exit 1 ;; esac
    case "$c" in */*) mkdirs "${c%/*}" ;; esac
    if [ "$a" = link ]; then
      rm -f "$root/$c"
      ln -s "$b" "$root/$c"
    else
      # Through a temporary name, so a program running from the old file
      # keeps its inode and a failed copy leaves the old file in place.
      install -m "$a" "$b" "$root/$c.tmp.$$"
      mv -f "$root/$c.tmp.$$" "$root/$c"
    fi
    echo "f $c" >> "$new"
    echo "  $root/$c"
  done
  mkdirs "${manifest_rel%/*}"
  echo "f $manifest_rel" >> "$new"
  sort -u "$new" > "$manifest"
  echo "install: $(grep -c '^f ' "$manifest") files under $root (manifest: $manifest)"
  ;;
uninstall)
  if [ ! -f "$manifest" ]; then
    echo "uninstall: no OpenFAM install under $root ($manifest is missing)" >&2
    exit 1
  fi
  list=$(mktemp)
  trap 'rm -f "$list"' EXIT
  cp "$manifest" "$list"
  n=0
  while read -r kind rel; do
    [ "$kind" = f ] || continue
    case "$rel" in /*|*..*) echo "uninstall: bad manifest entry $rel" >&2; exit 1 ;; esac
    if [ -f "$root/$rel" ] || [ -L "$root/$rel" ]; then
      rm -f "$root/$rel"
      n=$((n + 1))
    fi
  done < "$list"
  # Deepest first, so a directory's subdirectories go before it.
  grep '^d ' "$list" | cut -c3- | sort -r | while read -r rel; do
    case "$rel" in /*|*..*) continue ;; esac
    rmdir "$root/$rel" 2>/dev/null || true
  done
  echo "uninstall: removed $n files under $root"
  ;;
*)
  echo "usage: install.sh install|uninstall ROOT" >&2
  exit 2
  ;;
esac
