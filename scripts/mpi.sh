#!/usr/bin/env bash
# Tests terroir-mpi (mpi/): its unit tests and one-rank test (MPI's
# singleton start-up), its docs, then its examples under mpirun, each
# output checked:
#   - heat with 1, 2 and 3 ranks (TERROIR_NUM_THREADS=1 each), verified
#     against the sequential computation; uneven splits; overlap off;
#     more ranks than rows refused with a clear error;
#   - the binding doctor: no warning for one rank per NUMA node nor for
#     unbound ranks that split their CPUs, and its warnings for a narrow
#     mask (bound to a core, 2 threads; taskset), for ranks whose pools
#     share CPUs (one unbound rank more than CPUs), and MULTIPLE threading.
#
#   scripts/mpi.sh
#
# Needs Open MPI, libclang and pkg-config (Debian: libopenmpi-dev
# openmpi-bin libclang-dev pkg-config). Exit status 1 when a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

mpirun=(mpirun --oversubscribe)
if [ "$(id -u)" = 0 ]; then
  mpirun+=(--allow-run-as-root)
fi
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
heat=$target/release/examples/heat
doctor=$target/release/examples/doctor
failed=0

fail() {
  echo "mpi.sh: FAIL: $*" >&2
  failed=1
}

# Runs "$@" (under a time limit), prints its output, and checks that it
# printed every pattern given after `--expect` (extended regexps).
expect() {
  local cmd=() pats=() out
  while [ $# -gt 0 ] && [ "$1" != --expect ]; do cmd+=("$1"); shift; done
  shift
  pats=("$@")
  echo "+ ${cmd[*]}"
  out=$(timeout 300 "${cmd[@]}" 2>&1) || true
  echo "$out"
  for p in "${pats[@]}"; do
    grep -Eq -- "$p" <<<"$out" || fail "'${cmd[*]}' did not print /$p/"
  done
}

echo "== terroir-mpi: unit tests, one-rank test, doctests"
cargo test -p terroir-mpi
echo "== terroir-mpi: docs"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p terroir-mpi
echo "== terroir-mpi: examples"
cargo build --release -p terroir-mpi --examples

echo "== heat: 1, 2, 3 ranks x 1 worker, default size, verified"
for n in 1 2 3; do
  expect env TERROIR_NUM_THREADS=1 "${mpirun[@]}" -np "$n" "$heat" \
    --expect "^heat ranks=$n threads=1 size=1024x1024 steps=100 overlap=on time_s=[0-9.]+ verified=true$"
done
echo "== heat: overlap off; uneven splits; one row per rank"
expect env TERROIR_NUM_THREADS=1 "${mpirun[@]}" -np 2 "$heat" --no-overlap \
  --expect "^heat ranks=2 .* overlap=off .* verified=true$"
expect env TERROIR_NUM_THREADS=1 "${mpirun[@]}" -np 3 "$heat" --rows 301 --cols 77 --steps 40 \
  --expect "^heat ranks=3 threads=1 size=301x77 steps=40 .* verified=true$"
expect env TERROIR_NUM_THREADS=1 "${mpirun[@]}" -np 3 "$heat" --rows 3 --cols 5 --steps 9 \
  --expect "^heat ranks=3 threads=1 size=3x5 steps=9 .* verified=true$"
echo "== heat: more ranks than rows is refused"
expect env TERROIR_NUM_THREADS=1 "${mpirun[@]}" -np 3 "$heat" --rows 2 \
  --expect "heat: 2 rows cannot be split across 3 ranks"

echo "== doctor"
# One rank over the whole machine: nothing to warn about.
expect "${mpirun[@]}" -np 1 --bind-to none "$doctor" \
  --expect "doctor: 1 rank\(s\), MPI threading Funneled" "^bindings: ok$"
# Open MPI's default for 2 ranks, made explicit: one core each; a pool
# of 2 threads on it is too narrow.
expect env TERROIR_NUM_THREADS=2 "${mpirun[@]}" -np 2 --bind-to core "$doctor" --multiple \
  --expect "MPI threading Multiple" \
  "warning: rank 0 may run on 1 CPU\(s\) for 2 thread\(s\)" \
  "--map-by ppr:1:numa --bind-to numa"
# A narrow mask from outside (taskset), more CPUs on the host than that.
if [ "$(nproc --all)" -gt 1 ]; then
  expect taskset -c 0 "${mpirun[@]}" -np 1 --bind-to none "$doctor" \
    --expect "warning: rank 0 may run on 1 CPU\(s\) for 1 thread\(s\)"
fi
# Unbound ranks with the same mask split it: as many ranks as CPUs, one
# CPU each, no warning; one rank more, and ranks 0 and <CPUs> share CPU 0.
cpus=$(nproc --all)
expect "${mpirun[@]}" -np "$cpus" --bind-to none "$doctor" --expect "^bindings: ok$"
if [ "$cpus" = 2 ]; then
  expect "${mpirun[@]}" -np 2 --bind-to none "$doctor" \
    --expect "^ +0 .* 0-1 +0 " "^ +1 .* 0-1 +1 "
fi
expect "${mpirun[@]}" -np $((cpus + 1)) --bind-to none "$doctor" \
  --expect "warning: ranks 0 and $cpus on .* both have CPUs 0 in their pools"
# --strict turns a warning into exit status 2.
echo "+ doctor --strict (warning expected: status 2)"
if "${mpirun[@]}" -np $((cpus + 1)) --bind-to none "$doctor" --strict >/dev/null 2>&1; then
  fail "doctor --strict exited 0 despite a warning"
fi

if [ "$failed" = 0 ]; then
  echo "mpi.sh: all checks passed"
fi
exit "$failed"
