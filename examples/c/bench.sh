#!/usr/bin/env bash
# Head-to-head of terroir's C API with OpenMP tasks (libgomp), in one run:
# builds the release libterroir (libterroir.so and libterroir.a, the
# terroir-capi crate in capi/) and the Rust
# fib_join example with cargo, compiles the C examples against libterroir
# and their OpenMP twins with gcc -fopenmp, runs each once (each program
# times its own `RUNS` runs and prints the best), and prints a summary.
#
#   examples/c/bench.sh
#   FIB_N=30 NQUEENS_N=12 HEALTH_LEVELS=6 HEALTH_STEPS=100 TRIAD_N=16777216 RUNS=5 examples/c/bench.sh
#
# The library is built with RUSTFLAGS="-C llvm-args=-enable-tlsdesc" (TLS
# descriptors: a thread-local read in libterroir.so is a short call that
# clobbers no register instead of a call to __tls_get_addr; group
# create and destroy read none; see examples/c/README.md),
# unless RUSTFLAGS is set. The Rust fib also runs written as fib.c is (tasks
# called through function pointers, arguments and results in memory), so
# that C and Rust differ only by the FFI. fib is also built against a join that only calls its
# two tasks (examples/c/noop_join.c), to separate what the C program costs
# from what terroir adds. group_cost.c and its twin time task groups on
# one worker (GROUP_REPS groups of GROUP_TASKS no-op tasks, and as many
# empty groups). triad.c (terroir_parallel_for, static schedule) and its
# twin (`#pragma omp parallel for schedule(static)`) time a STREAM triad
# over TRIAD_N doubles per array, first touched by the same schedule.
#
# Threads: TERROIR_NUM_THREADS and OMP_NUM_THREADS (default: one per CPU,
# for both). Honours CARGO_TARGET_DIR, CC (terroir builds) and OMP_CC
# (OpenMP builds, default gcc).
set -euo pipefail
cd "$(dirname "$0")/../.."

FIB_N=${FIB_N:-28}
NQUEENS_N=${NQUEENS_N:-11}
HEALTH_LEVELS=${HEALTH_LEVELS:-5}
HEALTH_STEPS=${HEALTH_STEPS:-100}
RUNS=${RUNS:-3}
GROUP_REPS=${GROUP_REPS:-1000000}
GROUP_TASKS=${GROUP_TASKS:-4}
TRIAD_N=${TRIAD_N:-16777216}
CC=${CC:-cc}
OMP_CC=${OMP_CC:-gcc}

TARGET=$(realpath -m "${CARGO_TARGET_DIR:-target}")
LIB=$TARGET/release
OUT=$TARGET/c-examples
mkdir -p "$OUT"

export RUSTFLAGS=${RUSTFLAGS--C llvm-args=-enable-tlsdesc}
echo "== RUSTFLAGS=\"$RUSTFLAGS\" cargo build --release -p terroir-capi; cargo build --release -p terroir --example fib_join"
cargo build --quiet --release -p terroir-capi
cargo build --quiet --release -p terroir --example fib_join
# The C programs link the library as installed (libterroir.so carries the
# SONAME libterroir.so.<abi>, which the install's symlink provides), from a
# prefix under the target directory.
CLIB=$OUT/prefix/lib
scripts/install-c.sh --prefix "$OUT/prefix" --no-build 2>/dev/null

echo "== compiling into $OUT"
for p in fib nqueens health group_cost triad; do
  "$CC" -O2 -Wall -Wextra -I capi/include "examples/c/$p.c" -L "$CLIB" -lterroir -Wl,-rpath,"$CLIB" -o "$OUT/$p"
  "$OMP_CC" -O2 -Wall -Wextra -fopenmp "examples/c/${p}_omp.c" -o "$OUT/${p}_omp"
done
# fib with no scheduler: the same calls into a shared library whose join
# runs the two tasks one after the other.
"$CC" -O2 -Wall -Wextra -shared -fPIC -I capi/include examples/c/noop_join.c -o "$OUT/libnoop_join.so"
"$CC" -O2 -Wall -Wextra -I capi/include -DFIB_JOIN=noop_join examples/c/fib.c -L "$OUT" -lnoop_join \
  -L "$CLIB" -lterroir -Wl,-rpath,"$OUT":"$CLIB" -o "$OUT/fib_noop"
# fib against the static library too: in an executable the linker turns
# terroir's thread-local accesses into plain %fs loads.
"$CC" -O2 -Wall -Wextra -I capi/include examples/c/fib.c "$LIB/libterroir.a" \
  -lgcc_s -lutil -lrt -lpthread -lm -ldl -o "$OUT/fib_static"

echo "== running (best of $RUNS each; $(nproc) CPUs)"
results=$(mktemp)
seqs=$(mktemp)
trap 'rm -f "$results" "$seqs"' EXIT
run() {
  local label=$1
  shift
  local line
  line=$("$@")
  echo "$line"
  echo "$label $(sed -n 's/.*best_s=\([0-9.]*\).*/\1/p' <<<"$line") $(sed -n 's/.*check=\([A-Za-z]*\).*/\1/p' <<<"$line")" >>"$results"
  sed -n "s/.*seq_s=\([0-9.]*\).*/$label \1/p" <<<"$line" >>"$seqs"
}
run fib_rust "$LIB/examples/fib_join" "$FIB_N" "$RUNS"
run fib_rust_c "$LIB/examples/fib_join" "$FIB_N" "$RUNS" c
run fib_c "$OUT/fib" "$FIB_N" "$RUNS"
run fib_c_static "$OUT/fib_static" "$FIB_N" "$RUNS"
run fib_noop "$OUT/fib_noop" "$FIB_N" "$RUNS"
run fib_rust_1 env TERROIR_NUM_THREADS=1 "$LIB/examples/fib_join" "$FIB_N" "$RUNS"
run fib_c_1 env TERROIR_NUM_THREADS=1 "$OUT/fib" "$FIB_N" "$RUNS"
run fib_omp "$OUT/fib_omp" "$FIB_N" "$RUNS"
run nqueens_c "$OUT/nqueens" "$NQUEENS_N" "$RUNS"
run nqueens_omp "$OUT/nqueens_omp" "$NQUEENS_N" "$RUNS"
run health_c "$OUT/health" "$HEALTH_LEVELS" "$HEALTH_STEPS" "$RUNS"
run health_omp "$OUT/health_omp" "$HEALTH_LEVELS" "$HEALTH_STEPS" "$RUNS"
run triad_c "$OUT/triad" "$TRIAD_N" "$RUNS"
run triad_omp "$OUT/triad_omp" "$TRIAD_N" "$RUNS"

if grep -qv ' ok$' "$results"; then
  echo "bench: a result differs from the sequential one:" >&2
  grep -v ' ok$' "$results" >&2
  exit 1
fi

t() { awk -v k="$1" '$1 == k { print $2 }' "$results"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo
echo "== summary (seconds, best of $RUNS; ratios > 1 favour the first named)"
printf '%-34s %10s %10s %s\n' workload terroir libgomp "libgomp/terroir"
printf '%-34s %10s %10s %s\n' "fib($FIB_N), task per call" "$(t fib_c)" "$(t fib_omp)" "$(ratio "$(t fib_omp)" "$(t fib_c)")x"
printf '%-34s %10s %10s %s\n' "nqueens($NQUEENS_N), task per column" "$(t nqueens_c)" "$(t nqueens_omp)" "$(ratio "$(t nqueens_omp)" "$(t nqueens_c)")x"
printf '%-34s %10s %10s %s\n' "health($HEALTH_LEVELS levels, $HEALTH_STEPS steps)" "$(t health_c)" "$(t health_omp)" "$(ratio "$(t health_omp)" "$(t health_c)")x"
printf '%-34s %10s %10s %s\n' "triad($TRIAD_N), parallel for static" "$(t triad_c)" "$(t triad_omp)" "$(ratio "$(t triad_omp)" "$(t triad_c)")x"
echo
echo "fib($FIB_N): terroir C (libterroir.so) / terroir Rust join = $(ratio "$(t fib_c)" "$(t fib_rust)")x" \
  "($(t fib_c) s vs $(t fib_rust) s)"
echo "fib($FIB_N): terroir C (libterroir.a)  / terroir Rust join = $(ratio "$(t fib_c_static)" "$(t fib_rust)")x" \
  "($(t fib_c_static) s vs $(t fib_rust) s)"
echo "fib($FIB_N): terroir C (libterroir.so) / Rust join written as fib.c is = $(ratio "$(t fib_c)" "$(t fib_rust_c)")x" \
  "($(t fib_c) s vs $(t fib_rust_c) s; tasks through function pointers, arguments in memory)"
joins=$(awk -v n="$FIB_N" 'BEGIN { a = 0; b = 1; for (i = 0; i < n + 1; i++) { c = a + b; a = b; b = c } print a - 1 }')
ns() { awk -v a="$1" -v b="$2" -v j="$joins" 'BEGIN { printf "%.2f", (a - b) * 1e9 / j }'; }
seq_rust=$(awk '$1 == "fib_rust_1" { print $2 }' "$seqs")
echo
echo "fib($FIB_N) on one worker ($joins joins; what a join costs, without parallelism):"
echo "  Rust join $(t fib_rust_1) s, its sequential fib $seq_rust s: the join adds $(ns "$(t fib_rust_1)" "$seq_rust") ns per join"
echo "  C through libterroir.so $(t fib_c_1) s, the same C with a join that only calls its tasks $(t fib_noop) s:" \
  "terroir_join adds $(ns "$(t fib_c_1)" "$(t fib_noop)") ns per join"
echo "  the C program with no scheduler at all / the Rust join program = $(ratio "$(t fib_noop)" "$(t fib_rust_1)")x"
echo
echo "task groups on one worker (ns; best of $RUNS; group = create, $GROUP_TASKS no-op tasks, wait/destroy):"
gc=$("$OUT/group_cost" "$GROUP_REPS" "$GROUP_TASKS" "$RUNS")
gco=$("$OUT/group_cost_omp" "$GROUP_REPS" "$GROUP_TASKS" "$RUNS")
echo "  $gc"
echo "  $gco"
gf() { sed -n "s/.* $2=\([0-9.]*\).*/\1/p" <<<"$1"; }
echo "  empty group: terroir $(gf "$gc" empty_ns), libgomp $(gf "$gco" empty_ns) (a taskwait with no task);" \
  "per task in a group of $GROUP_TASKS: terroir $(gf "$gc" per_task_ns), libgomp $(gf "$gco" per_task_ns)"
echo "  the two other ways to read 'empty': a group opened and closed, terroir $(gf "$gc" empty_ns)," \
  "libgomp's empty taskgroup $(gf "$gco" taskgroup_ns); a wait with no task, terroir $(gf "$gc" wait_ns)," \
  "libgomp's taskwait $(gf "$gco" empty_ns)"
echo "  the same in CPU time of the measuring thread (not inflated by other programs):" \
  "empty group: terroir $(gf "$gc" empty_cpu_ns), libgomp $(gf "$gco" empty_cpu_ns);" \
  "per task: terroir $(gf "$gc" per_task_cpu_ns), libgomp $(gf "$gco" per_task_cpu_ns)"
