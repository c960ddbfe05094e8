#!/usr/bin/env bash
# Builds terroir's C library (the terroir-capi crate, capi/) and installs it:
#
#   PREFIX/lib/libterroir.so.X.Y.Z       SONAME libterroir.so.<abi>
#   PREFIX/lib/libterroir.so.<abi>       -> libterroir.so.X.Y.Z
#   PREFIX/lib/libterroir.so             -> libterroir.so.<abi>
#   PREFIX/lib/libterroir.a
#   PREFIX/include/terroir.h
#   PREFIX/lib/pkgconfig/terroir.pc      pkg-config (Libs.private: the static case)
#   PREFIX/lib/cmake/terroir/terroirConfig.cmake, terroirConfigVersion.cmake
#                                        find_package(terroir): terroir::terroir,
#                                        terroir::terroir_static
#
# <abi> is the major version from 1.0 on and 0.<minor> before (capi/build.rs
# sets the SONAME; README, "Versions and ABI").
#
#   scripts/install-c.sh --prefix /usr/local
#   scripts/install-c.sh /usr/local                     # the same
#   DESTDIR=/tmp/stage scripts/install-c.sh --prefix /usr   # staged (packaging)
#   scripts/install-c.sh --prefix ~/.local --features hwloc
#
# Options:
#   --prefix DIR      where the files go (required; also the first argument)
#   --libdir DIR      libraries, pkgconfig/ and cmake/ (default PREFIX/lib)
#   --includedir DIR  the header (default PREFIX/include)
#   --destdir DIR     stage under DIR (default $DESTDIR): the files land in
#                     DIR/PREFIX/..., and name PREFIX, not DIR
#   --features LIST   terroir-capi features (hwloc)
#   --profile NAME    cargo profile (default release)
#   --no-build        install what the last build of that profile left
#
# Builds with cargo in the repository (honours CARGO_TARGET_DIR and
# RUSTFLAGS; examples/c/README.md says when TLS descriptors pay). Needs
# readelf (binutils), which checks the built library's SONAME.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

PREFIX="" LIBDIR="" INCLUDEDIR="" FEATURES="" PROFILE=release BUILD=1
DESTDIR=${DESTDIR:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) PREFIX=${2:?--prefix needs a directory}; shift 2 ;;
    --prefix=*) PREFIX=${1#*=}; shift ;;
    --libdir) LIBDIR=${2:?--libdir needs a directory}; shift 2 ;;
    --libdir=*) LIBDIR=${1#*=}; shift ;;
    --includedir) INCLUDEDIR=${2:?--includedir needs a directory}; shift 2 ;;
    --includedir=*) INCLUDEDIR=${1#*=}; shift ;;
    --destdir) DESTDIR=${2:?--destdir needs a directory}; shift 2 ;;
    --destdir=*) DESTDIR=${1#*=}; shift ;;
    --features) FEATURES=${2:?--features needs a list}; shift 2 ;;
    --features=*) FEATURES=${1#*=}; shift ;;
    --profile) PROFILE=${2:?--profile needs a name}; shift 2 ;;
    --profile=*) PROFILE=${1#*=}; shift ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) usage ;;
    -*) echo "install-c: unknown option $1" >&2; usage ;;
    *) if [ -z "$PREFIX" ]; then PREFIX=$1; shift; else echo "install-c: unexpected argument $1" >&2; usage; fi ;;
  esac
done
[ -n "$PREFIX" ] || { echo "install-c: --prefix DIR is required" >&2; usage; }
# Absolute paths: they are written into terroir.pc.
abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$PWD" "$1" ;; esac; }
PREFIX=$(abs "$PREFIX")
LIBDIR=$(abs "${LIBDIR:-$PREFIX/lib}")
INCLUDEDIR=$(abs "${INCLUDEDIR:-$PREFIX/include}")

# The version: the package's, which capi/build.rs and the header's
# TERROIR_VERSION_* macros follow.
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' capi/Cargo.toml | head -1)
MAJOR=${VERSION%%.*}; rest=${VERSION#*.}; MINOR=${rest%%.*}; PATCH=${rest#*.}
case "$MAJOR.$MINOR.$PATCH" in
  *[!0-9.]*|*..*) echo "install-c: cannot parse the version '$VERSION' of capi/Cargo.toml" >&2; exit 1 ;;
esac
if [ "$MAJOR" = 0 ]; then ABI=0.$MINOR; else ABI=$MAJOR; fi
for part in MAJOR MINOR PATCH; do
  if ! grep -q "^#define TERROIR_VERSION_$part ${!part}\$" capi/include/terroir.h; then
    echo "install-c: capi/include/terroir.h has another TERROIR_VERSION_$part than $VERSION" >&2
    echo "install-c: (capi/src/version.rs; scripts/check-header.sh --write)" >&2
    exit 1
  fi
done

TARGET=$(abs "${CARGO_TARGET_DIR:-target}")
case "$PROFILE" in dev|test) OUT=$TARGET/debug ;; *) OUT=$TARGET/$PROFILE ;; esac
if [ "$BUILD" = 1 ]; then
  echo "install-c: cargo build --profile $PROFILE -p terroir-capi${FEATURES:+ --features $FEATURES}" >&2
  cargo build --quiet --profile "$PROFILE" -p terroir-capi ${FEATURES:+--features "$FEATURES"}
fi
for f in libterroir.so libterroir.a; do
  [ -f "$OUT/$f" ] || { echo "install-c: $OUT/$f is missing (build it, or drop --no-build)" >&2; exit 1; }
done
soname=$(readelf -d "$OUT/libterroir.so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [ "$soname" != "libterroir.so.$ABI" ]; then
  echo "install-c: $OUT/libterroir.so has SONAME '$soname', expected libterroir.so.$ABI (capi/build.rs)" >&2
  exit 1
fi

# What a program linking libterroir.a needs besides it: the system libraries
# of Rust's standard library (rustc prints them for any staticlib; terroir's
# own dependencies link nothing else), and hwloc with the hwloc feature.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "" | rustc --crate-type staticlib --crate-name native_libs --print native-static-libs \
  -o "$tmp/libnative_libs.a" - 2>"$tmp/rustc.err" || { cat "$tmp/rustc.err" >&2; exit 1; }
STATIC_LIBS=$(sed -n 's/.*native-static-libs: //p' "$tmp/rustc.err" | head -1)
[ -n "$STATIC_LIBS" ] || { echo "install-c: rustc printed no native-static-libs" >&2; exit 1; }
PTR_BYTES=$(( $(rustc --print cfg | sed -n 's/^target_pointer_width="\(.*\)"$/\1/p') / 8 ))
REQUIRES_PRIVATE="" CMAKE_STATIC_DEPS=""
case ",$FEATURES," in
  *,hwloc,*)
    REQUIRES_PRIVATE="Requires.private: hwloc"
    CMAKE_STATIC_DEPS="$(pkg-config --static --libs-only-l hwloc) " ;;
esac
CMAKE_STATIC_DEPS="$CMAKE_STATIC_DEPS$STATIC_LIBS"
# -lfoo -lbar -> foo;bar for INTERFACE_LINK_LIBRARIES.
CMAKE_STATIC_DEPS=$(printf '%s\n' "$CMAKE_STATIC_DEPS" | tr ' ' '\n' | sed -n 's/^-l//p' | paste -sd ';' -)

D=$DESTDIR
CMAKEDIR=$LIBDIR/cmake/terroir
install -d "$D$LIBDIR" "$D$INCLUDEDIR" "$D$LIBDIR/pkgconfig" "$D$CMAKEDIR"
REAL=libterroir.so.$VERSION
install -m 755 "$OUT/libterroir.so" "$D$LIBDIR/$REAL"
ln -sfn "$REAL" "$D$LIBDIR/libterroir.so.$ABI"
ln -sfn "libterroir.so.$ABI" "$D$LIBDIR/libterroir.so"
install -m 644 "$OUT/libterroir.a" "$D$LIBDIR/libterroir.a"
install -m 644 capi/include/terroir.h "$D$INCLUDEDIR/terroir.h"

cat >"$D$LIBDIR/pkgconfig/terroir.pc" <<EOF
prefix=$PREFIX
exec_prefix=\${prefix}
libdir=$LIBDIR
includedir=$INCLUDEDIR

Name: terroir
Description: A NUMA-aware work-stealing runtime (C API)
URL: https://github.com/terroir-rs/terroir
Version: $VERSION${REQUIRES_PRIVATE:+
$REQUIRES_PRIVATE}
Libs: -L\${libdir} -lterroir
Libs.private: $STATIC_LIBS
Cflags: -I\${includedir}
EOF

# Relocatable: the package finds the library and the header from where its
# own file is.
rel_lib=$(realpath -m --relative-to="$CMAKEDIR" "$LIBDIR")
rel_inc=$(realpath -m --relative-to="$CMAKEDIR" "$INCLUDEDIR")
cat >"$D$CMAKEDIR/terroirConfig.cmake" <<EOF
# terroir $VERSION, the C API (written by terroir's scripts/install-c.sh).
#   find_package(terroir $MAJOR.$MINOR REQUIRED)
#   target_link_libraries(app PRIVATE terroir::terroir)          # libterroir.so
#   target_link_libraries(app PRIVATE terroir::terroir_static)   # libterroir.a
get_filename_component(_terroir_libdir "\${CMAKE_CURRENT_LIST_DIR}/$rel_lib" ABSOLUTE)
get_filename_component(_terroir_includedir "\${CMAKE_CURRENT_LIST_DIR}/$rel_inc" ABSOLUTE)
if(NOT TARGET terroir::terroir)
  add_library(terroir::terroir SHARED IMPORTED)
  set_target_properties(terroir::terroir PROPERTIES
    IMPORTED_LOCATION "\${_terroir_libdir}/$REAL"
    IMPORTED_SONAME "libterroir.so.$ABI"
    INTERFACE_INCLUDE_DIRECTORIES "\${_terroir_includedir}")
endif()
if(NOT TARGET terroir::terroir_static)
  add_library(terroir::terroir_static STATIC IMPORTED)
  set_target_properties(terroir::terroir_static PROPERTIES
    IMPORTED_LOCATION "\${_terroir_libdir}/libterroir.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "\${_terroir_includedir}"
    INTERFACE_LINK_LIBRARIES "$CMAKE_STATIC_DEPS")
endif()
set(terroir_INCLUDE_DIRS "\${_terroir_includedir}")
set(terroir_LIBRARIES terroir::terroir)
unset(_terroir_libdir)
unset(_terroir_includedir)
EOF

cat >"$D$CMAKEDIR/terroirConfigVersion.cmake" <<EOF
# terroir $VERSION: compatible with a request for an earlier version of the
# same ABI (the same major version; before 1.0, the same 0.minor).
set(PACKAGE_VERSION "$VERSION")
set(PACKAGE_VERSION_COMPATIBLE FALSE)
if(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION
       AND PACKAGE_FIND_VERSION_MAJOR EQUAL $MAJOR
       AND ($MAJOR GREATER 0 OR PACKAGE_FIND_VERSION_MINOR EQUAL $MINOR))
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
# Built for one pointer size.
if(CMAKE_SIZEOF_VOID_P AND NOT CMAKE_SIZEOF_VOID_P EQUAL $PTR_BYTES)
  math(EXPR _terroir_bits "$PTR_BYTES * 8")
  set(PACKAGE_VERSION "\${PACKAGE_VERSION} (\${_terroir_bits}-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
EOF

echo "install-c: installed terroir $VERSION (SONAME libterroir.so.$ABI) into ${D}$PREFIX" >&2
