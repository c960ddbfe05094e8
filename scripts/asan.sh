#!/usr/bin/env bash
# AddressSanitizer and LeakSanitizer over the C API: the C examples
# (examples/c) and the C tests (capi/tests/c), the programs the Valgrind
# runs of capi/tests/ffi.rs cover, on the library built with
# `-Zsanitizer=address` (nightly) and the C code with `-fsanitize=address`.
# Any ASan or LSan report fails (exit 1); so does a wrong program output.
#
#   scripts/asan.sh
#
# How: terroir-capi's static library (libterroir.a; a staticlib carries no
# sanitizer runtime) is built with nightly rustc and -Zsanitizer=address
# into target/asan, each C program is compiled by clang -fsanitize=address
# and linked with it and with the nightly toolchain's own ASan runtime
# (librustc-nightly_rt.asan.a, LLVM's compiler-rt of rustc's LLVM): one
# runtime, matching rustc's instrumentation, and no need for clang's
# runtime package (libclang-rt-*-dev). The Rust standard library is not rebuilt
# (-Zbuild-std would instrument it too, at minutes of build time); its
# allocations still go through the intercepted malloc, so leaks and
# misuse of its memory by terroir are seen.
#
# capi/tests/c/two_plugins.c with plugin.c (the shared library's
# one-pool-per-process property, tests/ffi.rs) runs too, on shared
# objects: the instrumented libterroir.so (the same build's cdylib) under
# two plugins, and two plugins that each carry their own copy of the
# instrumented libterroir.a. A shared object gets no sanitizer runtime of
# its own (rustc and clang link it into executables only); here the
# executable carries it, linked as for the other programs and with its
# symbols exported (-rdynamic), so that the __asan_* references of
# libterroir.so and the plugins bind to it when they are loaded, and its
# malloc interposes everyone's. One runtime for the whole process, the
# one matching rustc's instrumentation, set up before any shared object's
# constructor runs (it is the executable's): the same result as
# LD_PRELOAD of a shared runtime, without needing one (clang's
# libclang_rt.asan-x86_64.so, of another LLVM than rustc's, is not
# installed).
#
# Leaks kept on purpose are suppressed in scripts/lsan.supp, one reason
# per entry. Without a nightly toolchain it prints SKIPPED loudly and
# exits 0; without clang it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

skip() {
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    echo "SKIPPED: asan (no nightly) -- $1"
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    exit 0
}

cargo +nightly --version >/dev/null 2>&1 || skip "cargo +nightly is not installed"
CLANG="${CLANG:-clang}"
command -v "$CLANG" >/dev/null || { echo "asan.sh: $CLANG not found (set CLANG)" >&2; exit 1; }

TARGET=x86_64-unknown-linux-gnu
TARGET_DIR="$ROOT/target/asan"
OUT="$TARGET_DIR/c"
mkdir -p "$OUT"

echo "== build libterroir.a with -Zsanitizer=address"
# --target: RUSTFLAGS then skip build scripts and proc macros (which the
# sanitizer must not instrument). Debug assertions on, optimised, for
# speed under ASan.
RUSTFLAGS="-Zsanitizer=address -Cforce-frame-pointers=yes -Cdebug-assertions=yes" \
    CARGO_TARGET_DIR="$TARGET_DIR" \
    cargo +nightly build -p terroir-capi --lib --release --target "$TARGET"
LIB="$TARGET_DIR/$TARGET/release/libterroir.a"
RT="$(rustc +nightly --print sysroot)/lib/rustlib/$TARGET/lib/librustc-nightly_rt.asan.a"
test -f "$LIB" || { echo "asan.sh: $LIB was not built" >&2; exit 1; }
test -f "$RT" || skip "the nightly toolchain has no ASan runtime ($RT)"

# ASan: abort on the first error with a non-zero status; LSan at exit.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=1:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1"
export LSAN_OPTIONS="suppressions=$ROOT/scripts/lsan.supp:print_suppressions=1"
export TERROIR_NUM_THREADS=2

FAILED=0
# build NAME SOURCE...: one C program linked with the instrumented library.
build() {
    local name=$1; shift
    local objs=() s
    for s in "$@"; do
        "$CLANG" -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address \
            -Wall -Wextra -I "$ROOT/capi/include" -c "$ROOT/$s" \
            -o "$OUT/$name.$(basename "$s" .c).o"
        objs+=("$OUT/$name.$(basename "$s" .c).o")
    done
    "$CLANG" -o "$OUT/$name" "${objs[@]}" "$LIB" \
        -Wl,--whole-archive "$RT" -Wl,--no-whole-archive \
        -lgcc_s -lutil -lrt -lpthread -lm -ldl -lstdc++
}
# check NAME EXPECT ARGS...: runs it; fails on a sanitizer report (exit
# status, or its text) or when the output lacks EXPECT.
check() {
    local name=$1 expect=$2; shift 2
    local log="$OUT/$name.log" start=$SECONDS status=0
    "$OUT/$name" "$@" >"$log" 2>&1 || status=$?
    if [ "$status" -ne 0 ] || grep -q "Sanitizer" "$log" || ! grep -q -- "$expect" "$log"; then
        echo "FAIL: $name $* (exit $status, $((SECONDS - start))s):"
        cat "$log"
        FAILED=1
    else
        echo "ok: $name $* ($((SECONDS - start))s)"
    fi
}

echo "== build the C programs with -fsanitize=address"
build errors examples/c/errors.c
build fib examples/c/fib.c
build nqueens examples/c/nqueens.c
build health examples/c/health.c
build report examples/c/report.c
build group_cost examples/c/group_cost.c
build group_race capi/tests/c/group_race.c
build group_waits capi/tests/c/group_waits.c

echo "== run them"
check errors ", 0 failed"
check fib "fib" 22 2
check nqueens "nqueens" 8 2
check health "health" 3 20 2
rm -rf "$OUT/report-out"
check report "report" "$OUT/report-out" 18 2
check group_cost "terroir" 2000 3 2
check group_race "group_race rounds=3 ok" 3
check group_waits " ok" 20

echo "== two plugins over the instrumented libterroir.so, and over two copies of libterroir.a"
# The shared library as installed: under its SONAME (libterroir.so.<abi>).
SO_DIR="$OUT/lib"
mkdir -p "$SO_DIR"
cp "$TARGET_DIR/$TARGET/release/libterroir.so" "$SO_DIR/libterroir.so"
SONAME=$(readelf -d "$SO_DIR/libterroir.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ -z "$SONAME" ] || ln -sf libterroir.so "$SO_DIR/$SONAME"
# plugin NAME LINK...: capi/tests/c/plugin.c as lib<NAME>.so (linked
# without -fsanitize, which would add clang's runtime pieces).
plugin() {
    local name=$1; shift
    "$CLANG" -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address -Wall -Wextra \
        -fPIC -I "$ROOT/capi/include" -DPLUGIN_NAME="plugin_$name" \
        -c "$ROOT/capi/tests/c/plugin.c" -o "$OUT/plugin_$name.o"
    "$CLANG" -shared -o "$OUT/lib$name.so" "$OUT/plugin_$name.o" "$@"
}
plugin dyn_a -L "$SO_DIR" -lterroir -Wl,-rpath,"$SO_DIR"
plugin dyn_b -L "$SO_DIR" -lterroir -Wl,-rpath,"$SO_DIR"
plugin static_a -Wl,--exclude-libs,ALL "$LIB" -lgcc_s -lutil -lrt -lpthread -lm -ldl
plugin static_b -Wl,--exclude-libs,ALL "$LIB" -lgcc_s -lutil -lrt -lpthread -lm -ldl
# two_plugins NAME A B: the program loading plugins A and B, carrying the
# runtime, exported.
two_plugins() {
    local name=$1 a=$2 b=$3
    "$CLANG" -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address -Wall -Wextra \
        -I "$ROOT/capi/include" -DFIRST="plugin_$a" -DSECOND="plugin_$b" \
        -c "$ROOT/capi/tests/c/two_plugins.c" -o "$OUT/$name.o"
    "$CLANG" -o "$OUT/$name" "$OUT/$name.o" -rdynamic \
        -Wl,--whole-archive "$RT" -Wl,--no-whole-archive \
        -L "$OUT" -l"$a" -l"$b" -Wl,-rpath,"$OUT" \
        -lgcc_s -lutil -lrt -lpthread -lm -ldl -lstdc++
}
two_plugins two_plugins_shared dyn_a dyn_b
two_plugins two_plugins_static static_a static_b
check two_plugins_shared "global pools: 1"
check two_plugins_static "global pools: 2"

if [ "$FAILED" -ne 0 ]; then
    echo "asan.sh: sanitizer reports or wrong output above"
    exit 1
fi
echo "asan.sh: no ASan or LSan report"
