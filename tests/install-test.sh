#!/bin/sh
# make test-install: installs into a temporary PREFIX and checks what a user
# of the install gets (see mk/install.mk):
#  - famd, famrun, famctl and fambench answer --version with the stamped
#    version ($OPENFAM_VERSION from make), never "(devel)";
#  - the man pages are installed where man looks and render without
#    warnings (groff -ww), each with a .TH header;
#  - a C program builds with pkg-config and with a CMake project using
#    find_package(OpenFAM) and OpenFAM::openfam (with a C++ one using
#    OpenFAM 3.2's fam/fam.h), and runs fam_initialize ..
#    fam_finalize on the installed library (a copy of the installed tree
#    moved elsewhere works too: the CMake files use no absolute path);
#  - uninstall leaves nothing but the files that were there before, and a
#    DESTDIR install and uninstall stay inside DESTDIR.
set -eu
: "${MAKE:=make}" "${CC:=cc}" "${CXX:=c++}" "${OPENFAM_VERSION:?run through make test-install}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "test-install: FAIL: $*" >&2; exit 1; }

# Something that was under PREFIX before must survive uninstall.
mkdir -p "$prefix/bin" "$prefix/share/man/man1"
echo keep > "$prefix/bin/other-tool"

# Twice: installing over an install must still uninstall cleanly.
for i in 1 2; do
  $MAKE -s --no-print-directory install PREFIX="$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "make install ($i)"; }
done

# --version.
for t in famd famrun famctl fambench; do
  out=$(env -u LD_LIBRARY_PATH "$prefix/bin/$t" --version) || fail "$t --version exited $?"
  [ "$out" = "$t $OPENFAM_VERSION" ] || fail "$t --version printed '$out', want '$t $OPENFAM_VERSION'"
  case "$out" in *devel*|*unknown*) fail "$t --version is not stamped: $out" ;; esac
done
echo "test-install: --version of famd famrun famctl fambench: $OPENFAM_VERSION"
# The installed famd announces the same version to the installed famctl.
mkdir -p "$tmp/famd"
"$prefix/bin/famd" --socket "$tmp/famd/sock" --data-dir "$tmp/famd/data" --shm-dir "$tmp/famd/shm" \
  --backup-dir "$tmp/famd/backups" 2> "$tmp/famd/log" &
famd_pid=$!
trap 'kill "$famd_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
# Polled with a generous deadline: famd is ready when it answers.
deadline=$(($(date +%s) + 60))
until servers=$("$prefix/bin/famctl" --server "unix:$tmp/famd/sock" --json servers 2>&1); do
  kill -0 "$famd_pid" 2>/dev/null || { cat "$tmp/famd/log"; fail "installed famd exited"; }
  [ "$(date +%s)" -lt "$deadline" ] || fail "installed famd did not answer within 60s: $servers"
  sleep 0.1
done
kill "$famd_pid" && wait "$famd_pid" || fail "famd did not stop cleanly on SIGTERM: $(cat "$tmp/famd/log")"
trap 'rm -rf "$tmp"' EXIT
echo "$servers" | grep -q "\"server_version\": \"$OPENFAM_VERSION\"" ||
  fail "famctl servers does not report famd $OPENFAM_VERSION: $servers"
echo "test-install: the installed famd reports $OPENFAM_VERSION to famctl servers"

# The installed fambench uses the library beside it, not the build tree's.
ldd "$prefix/bin/fambench" | grep -q "=> $prefix/bin/../lib/libopenfam.so.0" ||
  fail "installed fambench does not load $prefix/lib/libopenfam.so.0: $(ldd "$prefix/bin/fambench" | grep openfam)"

# Man pages.
for p in man1/famd.1 man1/famrun.1 man1/famctl.1 man1/fambench.1 man3/openfam.3; do
  f=$prefix/share/man/$p
  [ -f "$f" ] || fail "$f not installed"
  head -n 1 "$f" | grep -q '^\.TH ' || fail "$f has no .TH header"
  grep -q "OpenFAM $OPENFAM_VERSION" "$f" || fail "$f does not carry the version"
  if command -v groff > /dev/null; then
    warn=$(groff -man -Tutf8 -ww -z "$f" 2>&1) || fail "groff failed on $f: $warn"
    [ -z "$warn" ] || fail "groff warns on $f: $warn"
  fi
done
if command -v man > /dev/null; then
  for n in famd famrun famctl fambench openfam; do
    got=$(MANPATH=$prefix/share/man man -w "$n" 2>/dev/null) || fail "man -w $n does not find the installed page"
    case "$got" in "$prefix"/*) ;; *) fail "man -w $n found $got, not the installed page" ;; esac
  done
  MANPATH=$prefix/share/man MANWIDTH=80 man famd 2>&1 | grep -q -- '--data-dir' || fail "man famd does not render the options"
  echo "test-install: man pages found by man and rendered without warnings"
else
  echo "test-install: man not installed: checked the pages' .TH headers (and groff, if present) only"
fi

# A program that uses the installed library.
store=$tmp/store
mkdir -p "$tmp/app"
cat > "$tmp/app/app.c" <<'C'
#include <openfam.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    if (fam_initialize("default", NULL) != 0) {
        fprintf(stderr, "fam_initialize: %s\n", fam_errmsg());
        return 1;
    }
    fam_region_t *r = fam_create_region("install-test", 1 << 20, 0600, NULL);
    fam_desc_t *d = r ? fam_allocate("item", 64, 0600, r) : NULL;
    char in[] = "installed", out[sizeof in] = {0};
    if (!d || fam_put_blocking(in, d, 0, sizeof in) != 0 || fam_get_blocking(out, d, 0, sizeof in) != 0 ||
        strcmp(in, out) != 0 || fam_destroy_region(r) != 0) {
        fprintf(stderr, "fam calls: %s\n", fam_errmsg());
        return 1;
    }
    if (fam_finalize("default") != 0) {
        fprintf(stderr, "fam_finalize: %s\n", fam_errmsg());
        return 1;
    }
    printf("ok %s\n", OPENFAM_API_VERSION);
    return 0;
}
C
# run_app BINARY WHERE [env...]: runs the program on a private embedded store.
run_app() {
  bin=$1 where=$2; shift 2
  rm -rf "$store"
  out=$(env -u OPENFAM_SERVER "$@" OPENFAM_DATA_DIR="$store" OPENFAM_SHM_DIR="$store/shm" \
    OPENFAM_BACKUP_DIR="$store/backups" "$bin" 2>&1) || fail "$where: the program failed: $out"
  [ "$out" = "ok 3.2.0" ] || fail "$where: the program printed '$out'"
}

PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --exists openfam || fail "pkg-config does not find openfam under $prefix"
# shellcheck disable=SC2046 # the flags are words
$CC -Wall -Werror -o "$tmp/app/app-pc" "$tmp/app/app.c" $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs openfam) ||
  fail "building with pkg-config"
LD_LIBRARY_PATH=$prefix/lib ldd "$tmp/app/app-pc" | grep -q "=> $prefix/lib/libopenfam.so.0" || fail "app-pc does not load the installed library"
run_app "$tmp/app/app-pc" pkg-config LD_LIBRARY_PATH="$prefix/lib"
echo "test-install: pkg-config build runs fam_initialize .. fam_finalize on the installed library"

command -v cmake > /dev/null || fail "cmake is not installed (make setup installs it)"
# The same in C++ through OpenFAM 3.2's own interface (fam/fam.h, header
# only over the library), as OpenFAM's CMake users write it.
cat > "$tmp/app/app.cpp" <<'CXX'
#include <fam/fam.h>
#include <cstring>
#include <iostream>

using namespace openfam;

int main()
{
    fam *f = new fam();
    Fam_Options opts;
    memset(&opts, 0, sizeof opts);
    try {
        f->fam_initialize("default", &opts);
        Fam_Region_Descriptor *r = f->fam_create_region("install-test-cxx", 1 << 20, 0600, NULL);
        Fam_Descriptor *d = f->fam_allocate("item", 64, 0600, r);
        char in[] = "installed", out[sizeof in] = {0};
        f->fam_put_blocking(in, d, 0, sizeof in);
        f->fam_get_blocking(out, d, 0, sizeof in);
        if (strcmp(in, out) != 0) {
            std::cerr << "read back '" << out << "'" << std::endl;
            return 1;
        }
        f->fam_destroy_region(r);
        f->fam_finalize("default");
    } catch (Fam_Exception &e) {
        std::cerr << "Fam_Exception " << e.fam_error() << ": " << e.fam_error_msg() << std::endl;
        return 1;
    }
    delete f;
    std::cout << "ok " << OPENFAM_API_VERSION << std::endl;
    return 0;
}
CXX
cat > "$tmp/app/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.13)
project(openfam_install_test C CXX)
find_package(OpenFAM 3.2 REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE OpenFAM::openfam)
add_executable(app_cxx app.cpp)
target_link_libraries(app_cxx PRIVATE OpenFAM::openfam)
CMAKE
# cmake_build PREFIX BUILDDIR: configures and builds the project against PREFIX.
cmake_build() {
  cmake -S "$tmp/app" -B "$2" -DCMAKE_PREFIX_PATH="$1" -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" > "$2.log" 2>&1 &&
    cmake --build "$2" >> "$2.log" 2>&1 || { cat "$2.log"; fail "CMake build against $1"; }
}
cmake_build "$prefix" "$tmp/b1"
LD_LIBRARY_PATH=$prefix/lib ldd "$tmp/b1/app" | grep -q "=> $prefix/lib/libopenfam.so.0" || fail "the CMake build does not load the installed library"
run_app "$tmp/b1/app" cmake LD_LIBRARY_PATH="$prefix/lib"
run_app "$tmp/b1/app_cxx" "cmake, C++ fam/fam.h" LD_LIBRARY_PATH="$prefix/lib"
# A version the install cannot satisfy is refused.
sed 's/OpenFAM 3.2 REQUIRED/OpenFAM 4.0 REQUIRED/' "$tmp/app/CMakeLists.txt" > "$tmp/cm4" && mkdir -p "$tmp/app4" &&
  cp "$tmp/app/app.c" "$tmp/app4/" && mv "$tmp/cm4" "$tmp/app4/CMakeLists.txt"
if cmake -S "$tmp/app4" -B "$tmp/b4" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/b4.log" 2>&1; then
  fail "find_package(OpenFAM 4.0) accepted version 3.2"
fi
# A copy of the tree, built against once the original is uninstalled.
cp -a "$prefix" "$tmp/moved"
echo "test-install: find_package(OpenFAM) + OpenFAM::openfam builds (C, and C++ with fam/fam.h) run too; OpenFAM 4.0 is refused"

# Uninstall: nothing of ours is left; what was there before is.
$MAKE -s --no-print-directory uninstall PREFIX="$prefix" > "$tmp/uninstall.log" || { cat "$tmp/uninstall.log"; fail "make uninstall"; }
left=$(cd "$prefix" && find . ! -type d ! -path ./bin/other-tool)
[ -z "$left" ] || fail "uninstall left files: $left"
[ "$(cat "$prefix/bin/other-tool")" = keep ] || fail "uninstall removed a file it did not install"
[ -d "$prefix/share/man/man1" ] || fail "uninstall removed a directory it did not create"
[ ! -e "$prefix/lib/cmake" ] && [ ! -e "$prefix/include" ] || fail "uninstall left directories it created"
echo "test-install: uninstall removed every installed file and directory, and nothing else"

# The CMake files hold no absolute path: the copy made before uninstall
# works on its own, with the original gone (a path into it would fail),
# and the program finds the copy's library by the run path CMake gives it.
# Without a version this time: any version is accepted.
sed -i 's/OpenFAM 3.2 REQUIRED/OpenFAM REQUIRED/' "$tmp/app/CMakeLists.txt"
cmake_build "$tmp/moved" "$tmp/b2"
env -u LD_LIBRARY_PATH ldd "$tmp/b2/app" | grep -q "=> $tmp/moved/lib/libopenfam.so.0" || fail "the moved tree's CMake build does not use the moved library"
run_app "$tmp/b2/app" "cmake, moved tree" -u LD_LIBRARY_PATH
run_app "$tmp/b2/app_cxx" "cmake C++, moved tree" -u LD_LIBRARY_PATH
echo "test-install: find_package(OpenFAM) works from a copy of the install moved elsewhere"

# DESTDIR: staged under DESTDIR, pointing at PREFIX.
stage=$tmp/stage
$MAKE -s --no-print-directory install DESTDIR="$stage" PREFIX=/opt/openfam-test > /dev/null || fail "make install DESTDIR"
[ ! -e /opt/openfam-test ] || fail "install with DESTDIR wrote to /opt/openfam-test"
grep -qx 'prefix=/opt/openfam-test' "$stage/opt/openfam-test/lib/pkgconfig/openfam.pc" || fail "staged openfam.pc does not name PREFIX"
$MAKE -s --no-print-directory uninstall DESTDIR="$stage" PREFIX=/opt/openfam-test > /dev/null || fail "make uninstall DESTDIR"
left=$(find "$stage" ! -type d)
[ -z "$left" ] || fail "uninstall with DESTDIR left: $left"
echo "test-install: DESTDIR install and uninstall stay inside DESTDIR"
# The version stamp (mk/version.sh): VERSION alone outside git, even when
# the tree sits inside another checkout; the commit after it in git; a
# tag's version on a tagged commit.
src=$(pwd)
mkdir -p "$tmp/v/outer/tree/mk"
cp "$src/mk/version.sh" "$tmp/v/outer/tree/mk/" && echo 7.1.0 > "$tmp/v/outer/tree/VERSION"
git -C "$tmp/v/outer" init -q && git -C "$tmp/v/outer" -c user.name=t -c user.email=t@t commit -q --allow-empty -m outer
got=$(sh "$tmp/v/outer/tree/mk/version.sh")
[ "$got" = 7.1.0 ] || fail "version.sh in a tree inside another checkout printed $got, want 7.1.0"
g() { git -C "$tmp/v/outer/tree" -c user.name=t -c user.email=t@t "$@"; }
g init -q && g add -A && g commit -q -m one
rev=$(g rev-parse --short HEAD)
got=$(sh "$tmp/v/outer/tree/mk/version.sh")
[ "$got" = "7.1.0-g$rev" ] || fail "version.sh in git printed $got, want 7.1.0-g$rev"
echo 7.1.1 > "$tmp/v/outer/tree/VERSION"
got=$(sh "$tmp/v/outer/tree/mk/version.sh")
[ "$got" = "7.1.1-g$rev-dirty" ] || fail "version.sh with a change printed $got, want 7.1.1-g$rev-dirty"
g commit -q -am two && g tag v7.1.1
got=$(sh "$tmp/v/outer/tree/mk/version.sh")
[ "$got" = 7.1.1 ] || fail "version.sh on tag v7.1.1 printed $got"
echo "test-install: version stamps: VERSION outside git, -gREV in git, -dirty with changes, the tag's version on a tag"
echo "test-install: PASS"
