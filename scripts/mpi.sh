#!/usr/bin/env bash
# Tests terroir-mpi (mpi/): its unit tests and one-rank test (MPI's
# singleton start-up), its docs, then its examples under mpirun, each
# output checked:
#   - heat with 1, 2 and 3 ranks (TERROIR_NUM_THREADS=1 each), verified
#     against the sequential computation; uneven splits; overlap off;
#     more ranks than rows refused with a clear error;
#   - heat with --report: one inflation report and one Chrome trace for
#     the job, a process per rank (feature `report`);
#   - the binding doctor: no warning for one rank per NUMA node nor for
#     unbound ranks that split their CPUs, and its warnings for a narrow
#     mask (bound to a core, 2 threads; taskset), for ranks whose pools
#     share CPUs (one unbound rank more than CPUs), and MULTIPLE threading.
#
#   scripts/mpi.sh
#
# Needs Open MPI, libclang and pkg-config (Debian: libopenmpi-dev
# openmpi-bin libclang-dev pkg-config), and python3 (to read the report's
# JSON). Exit status 1 when a check fails.
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

echo "== terroir-mpi: unit tests, one-rank test, doctests (feature report)"
cargo test -p terroir-mpi --features report
echo "== terroir-mpi: without the report feature"
cargo check -p terroir-mpi --examples
echo "== terroir-mpi: docs"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p terroir-mpi --features report
echo "== terroir-mpi: examples"
cargo build --release -p terroir-mpi --features report --examples

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

echo "== heat --report: one report and one trace for the job, a process per rank"
report_dir=$(mktemp -d)
expect env TERROIR_NUM_THREADS=1 "${mpirun[@]}" -np 2 "$heat" --steps 20 --report "$report_dir" \
  --expect "^report: ranks=2 tasks=[1-9][0-9]* dir=" "^heat ranks=2 .* verified=true$"
echo "+ check $report_dir/trace.json and report.json"
python3 - "$report_dir" <<'PY' || fail "the job's trace or report is not as expected"
import json, sys
d = sys.argv[1]
events = json.load(open(f"{d}/trace.json"))["traceEvents"]
pids = {e["pid"] for e in events if e.get("ph") == "X"}
names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
assert pids == {0, 1}, f"task events on pids {pids}, not 0 and 1"
assert names == {0: "rank 0 (1 worker)", 1: "rank 1 (1 worker)"}, names
report = json.load(open(f"{d}/report.json"))
assert report["threads"] == 2, report["threads"]
assert len(report["parallel_run"]["workers"]) == 2
print(f"trace: {len(events)} events, task events on pids {sorted(pids)}; report: {report['threads']} workers")
PY
rm -rf "$report_dir"

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
