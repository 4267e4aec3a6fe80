#!/usr/bin/env bash
# Tests of mk/setup.sh, the set-up step of make test/demo/verify, with fake
# go commands and package lists so that nothing is installed or downloaded:
#   - nothing missing: silent, status 0
#   - a missing Debian package without root: the one apt-get command, status 1
#   - Go older than go.mod's without root: how to get it, status 1
#   - go-path: the downloaded toolchain is chosen over an older go on PATH
#   - as root without a terminal: the toolchain is fetched through
#     `go mod download` of golang.org/toolchain (here a fake go) and then chosen
#
#   tests/setup_test.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
# A copy the other user can read (the checkout may be private).
setup=$work/setup.sh
cp "$top/mk/setup.sh" "$setup"
chmod 755 "$setup"
fail() { echo "setup_test: FAIL: $*"; exit 1; }

# A package every Debian system has, and one no system has.
have_pkg=dpkg
no_pkg=openfam-no-such-package

# run_as_user CMD...: runs CMD as a user other than root (nobody when
# root), with a HOME of its own.
run_as_user() {
  if [ "$(id -u)" = 0 ]; then
    mkdir -p "$work/home" && chown 65534 "$work/home"
    (cd "$work" && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$work/home" "$@")
  else
    env HOME="$work/home" "$@"
  fi
}

# An old go: reports 1.19 and does nothing else.
mkdir -p "$work/oldgo"
cat >"$work/oldgo/go" <<'EOF'
#!/bin/sh
case "$1 $2" in
  "env GOVERSION") echo go1.19.8 ;;
  "version "*) echo "go version go1.19.8 linux/amd64" ;;
  "mod download")
    # Stands in for the module proxy: unpacks a "toolchain" whose go
    # reports the release, under GOMODCACHE as go would.
    mod=$4; dir=$GOMODCACHE/$mod
    mkdir -p "$dir/bin"
    printf '#!/bin/sh\n[ "$1 $2" = "env GOVERSION" ] && echo go1.26.8\n' >"$dir/bin/go"
    chmod -x "$dir/bin/go" # module zips carry no modes
    echo "{\"Path\": \"${mod%@*}\", \"Dir\": \"$dir\"}"
    ;;
  *) exit 1 ;;
esac
EOF
chmod 755 "$work/oldgo/go"

# 1. Everything there: silent and quick.
command -v dpkg-query >/dev/null || { echo "setup_test: not a Debian system; skipped"; exit 0; }
out=$(DEPS_APT="$have_pkg" DEPS_TOOLS="sh:dash" GO_WANT=1.0 sh "$setup" check 2>&1) || fail "check with nothing missing: $out"
[ -z "$out" ] || fail "check with nothing missing said: $out"

# 2. A missing package, not root: the command to run, and status 1.
if out=$(run_as_user env DEPS_APT="$have_pkg $no_pkg" GO_WANT=1.0 sh "$setup" check 2>&1); then
  fail "check with a missing package succeeded: $out"
fi
grep -qx "setup:     sudo apt-get install -y $no_pkg" <<<"$out" || fail "no apt-get command for the missing package: $out"

# 3. Go too old, not root: what to do, and status 1.
if out=$(run_as_user env PATH="$work/oldgo:$PATH" GO=go GO_WANT=1.26 sh "$setup" check 2>&1); then
  fail "check with Go 1.19 succeeded: $out"
fi
grep -q "go.mod needs Go 1.26 or newer; found: go version go1.19.8" <<<"$out" || fail "no Go version message: $out"
grep -q "make setup-go" <<<"$out" || fail "the Go message does not say what to run: $out"

# 4. go-path prefers a downloaded toolchain to an older go on PATH.
export GOMODCACHE=$work/modcache
tc=$GOMODCACHE/golang.org/toolchain@v0.0.1-go1.26.8.linux-$(case $(uname -m) in aarch64) echo arm64 ;; *) echo amd64 ;; esac)
got=$(PATH="$work/oldgo:$PATH" GO_WANT=1.26 sh "$setup" go-path)
[ "$got" = go ] || fail "go-path without a toolchain: $got"

# 5. As root without a terminal, check downloads the toolchain; go-path
#    then names it.
if [ "$(id -u)" = 0 ]; then
  out=$(PATH="$work/oldgo:$PATH" GO=go GO_WANT=1.26 DEPS_APT="$have_pkg" sh "$setup" check 2>&1 </dev/null) ||
    fail "check as root did not set Go up: $out"
  grep -q "downloading golang.org/toolchain@" <<<"$out" || fail "no download: $out"
  [ -x "$tc/bin/go" ] || fail "the toolchain's go is not executable"
  got=$(PATH="$work/oldgo:$PATH" GO_WANT=1.26 sh "$setup" go-path)
  [ "$got" = "$tc/bin/go" ] || fail "go-path after the download: $got, want $tc/bin/go"
else
  echo "setup_test: not root; the toolchain download as root is not tested"
fi
echo "setup_test: ok"
