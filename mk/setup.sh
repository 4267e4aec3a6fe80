#!/bin/sh
# The set-up step `make test`, `make demo` and `make verify` run first (see
# mk/setup.mk): checks the Go version go.mod needs and installs the Debian
# and PyPI packages the build and the tests use. Quick and silent when
# everything is there.
#
#   mk/setup.sh go-path     print the go command to use: `go` from PATH when
#                           it is new enough, else the toolchain setup-go
#                           downloaded, else `go`
#   mk/setup.sh check       check Go and the packages; as root install what
#                           is missing, otherwise say what to run and fail
#   mk/setup.sh setup-go    download the Go toolchain from the module proxy
#
# Settings come from the environment (mk/setup.mk passes them): GO_WANT
# (minimum version, e.g. 1.26), GO_TOOLCHAIN (release downloaded by
# setup-go, e.g. go1.26.8), DEPS_APT, DEPS_PIP, DEPS_TOOLS (command:package
# pairs, e.g. g++:g++), GO (the go command make chose).
set -eu

GO_WANT=${GO_WANT:-1.26}
GO_TOOLCHAIN=${GO_TOOLCHAIN:-go1.26.8}

say() { echo "setup: $*" >&2; }

# go_ok CMD: CMD runs and reports GO_WANT or newer.
go_ok() {
  v=$("$1" env GOVERSION 2>/dev/null | sed -n 's/^go\([0-9][0-9.]*\).*/\1/p') || return 1
  [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$GO_WANT" "$v" | sort -V | head -n1)" = "$GO_WANT" ]
}

goarch() {
  case $(uname -m) in
    x86_64 | amd64) echo amd64 ;;
    aarch64 | arm64) echo arm64 ;;
    i?86) echo 386 ;;
    *) uname -m ;;
  esac
}

# The module the Go project publishes each release as, and where `go mod
# download` unpacks it (the module cache, found without running go).
tc_module() { echo "golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN.linux-$(goarch)"; }
tc_dir() {
  cache=${GOMODCACHE:-}
  if [ -z "$cache" ]; then cache=${GOPATH:-$HOME/go}; cache=${cache%%:*}/pkg/mod; fi
  echo "$cache/$(tc_module)"
}

go_path() {
  if command -v go >/dev/null 2>&1 && go_ok go; then echo go; return; fi
  if [ -x "$(tc_dir)/bin/go" ] && go_ok "$(tc_dir)/bin/go"; then echo "$(tc_dir)/bin/go"; return; fi
  echo go
}

is_root() { [ "$(id -u)" = 0 ]; }

# apt_install PKG...: apt-get update, then install (as root).
apt_install() {
  say "installing Debian packages: $*"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2
}

# The toolchain comes as a module from the Go module proxy, checked against
# the checksum database, with any older go (Debian's golang-go) doing the
# download; it is then used in place of the go on PATH (mk/setup.mk).
setup_go() {
  if ! command -v go >/dev/null 2>&1; then
    if is_root; then
      apt_install golang-go
    else
      say "no go command to download Go ${GO_TOOLCHAIN#go} with; run"
      say "    sudo apt-get install -y golang-go && make setup-go"
      say "or install Go $GO_WANT or newer from https://go.dev/dl/ and put it on PATH"
      return 1
    fi
  fi
  say "downloading $(tc_module) from the Go module proxy"
  dir=$(cd / && GOFLAGS=-mod=mod GO111MODULE=on GOTOOLCHAIN=local go mod download -json "$(tc_module)" |
    sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$dir" ] && [ -d "$dir" ] || { say "go mod download $(tc_module) failed"; return 1; }
  # Module zips carry no file modes.
  chmod +x "$dir/bin/"* "$dir/pkg/tool/"*/* 2>/dev/null || true
  go_ok "$dir/bin/go" || { say "$dir/bin/go does not run"; return 1; }
  say "Go ${GO_TOOLCHAIN#go} is in $dir; make uses it from now on"
}

check_go() {
  go=${GO:-$(go_path)}
  if go_ok "$go"; then return 0; fi
  have="no go command on PATH"
  if command -v "$go" >/dev/null 2>&1; then have="$("$go" version 2>/dev/null || echo "$go does not run")"; fi
  # Unattended (a CI job, no terminal) as root: set up what is needed.
  if is_root && { [ -n "${CI:-}" ] || ! [ -t 0 ]; }; then
    say "go.mod needs Go $GO_WANT or newer; found: $have"
    setup_go
    return
  fi
  say "go.mod needs Go $GO_WANT or newer; found: $have."
  say "Run"
  say "    make setup-go"
  say "which downloads Go ${GO_TOOLCHAIN#go} from the Go module proxy into the module cache"
  say "(needs an older go, e.g. Debian's golang-go), or install Go $GO_WANT or newer"
  say "from https://go.dev/dl/ and put it first on PATH. Then run make again."
  return 1
}

installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }

check_packages() {
  missing=""
  for t in ${DEPS_TOOLS:-}; do
    cmd=${t%%:*} pkg=${t#*:}
    case $cmd in
      ensurepip) python3 -c 'import ensurepip' >/dev/null 2>&1 || missing="$missing $pkg" ;;
      *) command -v "$cmd" >/dev/null 2>&1 || missing="$missing $pkg" ;;
    esac
  done
  if command -v dpkg-query >/dev/null 2>&1; then
    for p in ${DEPS_APT:-}; do installed "$p" || missing="$missing $p"; done
  elif [ -n "${DEPS_APT:-}" ]; then
    say "not a Debian system: make sure the equivalents of these are installed: ${DEPS_APT}"
  fi
  pipmissing=""
  for p in ${DEPS_PIP:-}; do
    python3 -c 'import importlib.metadata as m, sys; m.version(sys.argv[1])' "${p%%[=<>]*}" >/dev/null 2>&1 ||
      pipmissing="$pipmissing $p"
  done
  missing=$(echo $missing | tr ' ' '\n' | awk 'NF && !seen[$0]++' | tr '\n' ' ' | sed 's/ $//')
  pipmissing=${pipmissing# }
  [ -z "$missing" ] && [ -z "$pipmissing" ] && return 0
  if is_root; then
    [ -z "$missing" ] || apt_install $missing
    if [ -n "$pipmissing" ]; then
      say "installing PyPI packages: $pipmissing"
      python3 -m pip install -q --disable-pip-version-check $pipmissing >&2
    fi
    return 0
  fi
  cmd=""
  [ -z "$missing" ] || cmd="sudo apt-get install -y $missing"
  if [ -n "$pipmissing" ]; then
    cmd="${cmd:+$cmd && }python3 -m pip install --user $pipmissing"
  fi
  say "the build and tests need packages that are not installed:${missing:+ $missing}${pipmissing:+ (PyPI) $pipmissing}"
  say "run this (it needs root), then make again:"
  say "    $cmd"
  return 1
}

case ${1:-} in
  go-path) go_path ;;
  setup-go) setup_go ;;
  check)
    # Both checks run, so that a user without root learns everything
    # missing at once.
    rc=0
    check_packages || rc=1
    check_go || rc=1
    exit $rc
    ;;
  *) echo "usage: $0 go-path|check|setup-go" >&2; exit 2 ;;
esac
