#!/usr/bin/env bash
# Installs terroir's C library into a fresh temporary prefix with
# scripts/install-c.sh and uses it as a C user would:
#
#  - readelf: the library's SONAME is libterroir.so.<abi>, the symlinks
#    resolve, and a program records the SONAME (not libterroir.so);
#  - pkg-config: examples/c/fib.c built with
#    `pkg-config --cflags --libs terroir` (shared) and with
#    `pkg-config --static --libs terroir` (libterroir.a) runs and checks its
#    answer; a program checks terroir_version() against the header's macros;
#  - CMake (when cmake is installed; prints SKIPPED otherwise):
#    examples/c/cmake/ (find_package(terroir 0.1), terroir::terroir and
#    terroir::terroir_static) builds and runs, and requests for 0.2 or 1.0
#    are refused (another ABI);
#  - DESTDIR: a staged install lands under DESTDIR and names the prefix.
#
#   scripts/test-install-c.sh                  # release build, as installed
#   scripts/test-install-c.sh --profile dev    # quicker: the dev build
#
# Arguments go to install-c.sh (e.g. --features hwloc). Exit status 1 on
# the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "test-install-c: FAILED: $*" >&2; exit 1; }

scripts/install-c.sh --prefix "$prefix" "$@"

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' capi/Cargo.toml | head -1)
major=${version%%.*}; rest=${version#*.}; minor=${rest%%.*}
if [ "$major" = 0 ]; then abi=0.$minor; else abi=$major; fi
lib=$prefix/lib

echo "== SONAME and symlinks"
soname=$(readelf -d "$lib/libterroir.so.$version" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[ "$soname" = "libterroir.so.$abi" ] || fail "SONAME '$soname', expected libterroir.so.$abi"
[ "$(readlink "$lib/libterroir.so")" = "libterroir.so.$abi" ] || fail "libterroir.so -> $(readlink "$lib/libterroir.so")"
[ "$(readlink -f "$lib/libterroir.so")" = "$(readlink -f "$lib/libterroir.so.$version")" ] || fail "the symlinks do not reach libterroir.so.$version"
echo "SONAME $soname; libterroir.so -> libterroir.so.$abi -> libterroir.so.$version"

echo "== pkg-config"
export PKG_CONFIG_PATH=$lib/pkgconfig
[ "$(pkg-config --modversion terroir)" = "$version" ] || fail "pkg-config --modversion terroir: $(pkg-config --modversion terroir)"
cflags_libs=$(pkg-config --cflags --libs terroir)
echo "pkg-config --cflags --libs terroir: $cflags_libs"
libdir=$(pkg-config --variable=libdir terroir)
CC=${CC:-cc}
# shellcheck disable=SC2086 # word splitting of pkg-config's flags is meant
$CC -O2 -Wall -Wextra examples/c/fib.c $cflags_libs -Wl,-rpath,"$libdir" -o "$tmp/fib"
readelf -d "$tmp/fib" | grep -q "NEEDED.*\[libterroir.so.$abi\]" || fail "fib does not record libterroir.so.$abi"
out=$(TERROIR_NUM_THREADS=2 "$tmp/fib" 20 1)
echo "$out"
case "$out" in *check=ok*) ;; *) fail "fib (shared): $out" ;; esac

cat >"$tmp/version.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <terroir.h>
int main(void) {
  char header[32];
  snprintf(header, sizeof header, "%d.%d.%d", TERROIR_VERSION_MAJOR, TERROIR_VERSION_MINOR,
           TERROIR_VERSION_PATCH);
  printf("header %s (%d), library %s (%u)\n", header, TERROIR_VERSION, terroir_version_string(),
         (unsigned)terroir_version());
  return terroir_version() == TERROIR_VERSION && strcmp(header, terroir_version_string()) == 0 ? 0 : 1;
}
C
# shellcheck disable=SC2086
$CC -Wall -Wextra "$tmp/version.c" $cflags_libs -Wl,-rpath,"$libdir" -o "$tmp/version"
"$tmp/version" || fail "the library's version is not the header's"

# Static: the same flags, with libterroir.a named (-l:) so that the linker
# does not take the shared library beside it; Libs.private brings the rest.
static_libs=$(pkg-config --static --libs terroir | sed 's/-lterroir\b/-l:libterroir.a/')
echo "static: $static_libs"
# shellcheck disable=SC2086
$CC -O2 -Wall -Wextra examples/c/fib.c $(pkg-config --cflags terroir) $static_libs -o "$tmp/fib_static"
if readelf -d "$tmp/fib_static" | grep -q "NEEDED.*libterroir"; then fail "fib_static needs libterroir.so"; fi
out=$(TERROIR_NUM_THREADS=2 "$tmp/fib_static" 20 1)
echo "$out"
case "$out" in *check=ok*) ;; *) fail "fib (static): $out" ;; esac

echo "== CMake"
if command -v cmake >/dev/null; then
  cmake -S examples/c/cmake -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$tmp/cmake.log" 2>&1 \
    || { cat "$tmp/cmake.log" >&2; fail "cmake configure"; }
  cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log" >&2; fail "cmake --build"; }
  for exe in fib fib_static; do
    out=$(TERROIR_NUM_THREADS=2 "$tmp/cmake/$exe" 20 1)
    echo "cmake $exe: $out"
    case "$out" in *check=ok*) ;; *) fail "cmake $exe: $out" ;; esac
  done
  if readelf -d "$tmp/cmake/fib_static" | grep -q "NEEDED.*libterroir"; then fail "cmake fib_static needs libterroir.so"; fi
  # The version file: another ABI is refused, an earlier patch accepted.
  for request in "$major.$minor:ok" "$major.$((minor + 1)):refused" "$((major + 1)).0:refused"; do
    want=${request#*:} v=${request%%:*}
    mkdir -p "$tmp/req-$v"
    printf 'cmake_minimum_required(VERSION 3.13)\nproject(req LANGUAGES NONE)\nfind_package(terroir %s REQUIRED)\n' "$v" \
      >"$tmp/req-$v/CMakeLists.txt"
    if cmake -S "$tmp/req-$v" -B "$tmp/req-$v/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null 2>&1; then got=ok; else got=refused; fi
    [ "$got" = "$want" ] || fail "find_package(terroir $v) $got, expected $want"
    echo "find_package(terroir $v): $got"
  done
else
  echo "SKIPPED: cmake (not installed)"
fi

echo "== DESTDIR"
DESTDIR=$tmp/stage scripts/install-c.sh --prefix /opt/terroir --no-build "$@"
for f in lib/libterroir.so.$version lib/libterroir.so.$abi lib/libterroir.so lib/libterroir.a \
         include/terroir.h lib/pkgconfig/terroir.pc lib/cmake/terroir/terroirConfig.cmake \
         lib/cmake/terroir/terroirConfigVersion.cmake; do
  [ -e "$tmp/stage/opt/terroir/$f" ] || fail "DESTDIR install: $f is missing"
done
grep -qx "prefix=/opt/terroir" "$tmp/stage/opt/terroir/lib/pkgconfig/terroir.pc" || fail "the staged terroir.pc names another prefix"
[ ! -e /opt/terroir ] || echo "(note: /opt/terroir exists on this machine; the staged install did not write it)"
echo "staged under DESTDIR, terroir.pc names /opt/terroir"

echo "test-install-c: ok"
