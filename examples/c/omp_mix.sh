#!/usr/bin/env bash
# terroir inside an OpenMP program (examples/c/omp_mix.c), timed with and
# without the settings examples/c/README.md recommends ("terroir inside an
# OpenMP program"): builds the release libterroir (the terroir-capi crate)
# and installs it under the target directory, compiles omp_mix.c with
# gcc -fopenmp, and runs each mode under each setting:
#
#   defaults     nothing set (OMP_WAIT_POLICY, TERROIR_PIN, thread counts
#                unset: each runtime one thread per CPU, terroir pinned)
#   active       OMP_WAIT_POLICY=active (OpenMP threads spin between
#                regions: what HPC sites often set for pure OpenMP codes)
#   passive      OMP_WAIT_POLICY=passive TERROIR_PIN=0
#   passive+half the same, and each runtime on half the CPUs
#                (OMP_NUM_THREADS and TERROIR_NUM_THREADS = nproc / 2)
#
#   examples/c/omp_mix.sh
#   ROUNDS=400 N=20000 RUNS=5 examples/c/omp_mix.sh
#
# Prints each run's line (omp_s, terroir_s: each runtime's phases summed;
# total_s: the run; cpu_s: the process's CPU time; work_s: the sequential
# work; best of RUNS) and a summary per setting and mode. Timings on a
# shared machine are noisy: compare the settings within one run (uptime
# prints the load first). Honours CARGO_TARGET_DIR, RUSTFLAGS and OMP_CC (default gcc).
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-200}
N=${N:-20000}
RUNS=${RUNS:-3}
OMP_CC=${OMP_CC:-gcc}

TARGET=$(realpath -m "${CARGO_TARGET_DIR:-target}")
OUT=$TARGET/c-examples
mkdir -p "$OUT"
echo "== cargo build --release -p terroir-capi"
cargo build --quiet --release -p terroir-capi
# Linked as installed (the SONAME's symlink), from a prefix under target/.
scripts/install-c.sh --prefix "$OUT/prefix" --no-build 2>/dev/null
CLIB=$OUT/prefix/lib
"$OMP_CC" -O2 -Wall -Wextra -fopenmp -I "$OUT/prefix/include" examples/c/omp_mix.c \
  -L "$CLIB" -lterroir -lpthread -Wl,-rpath,"$CLIB" -o "$OUT/omp_mix"

half=$(( $(nproc) / 2 ))
[ "$half" -ge 1 ] || half=1
clean=(env -u OMP_WAIT_POLICY -u TERROIR_PIN -u OMP_NUM_THREADS -u TERROIR_NUM_THREADS
       -u GOMP_SPINCOUNT -u OMP_PROC_BIND -u OMP_PLACES -u TERROIR_POLICY)
results=$(mktemp)
trap 'rm -f "$results"' EXIT
uptime
echo "== running ($(nproc) CPUs; rounds=$ROUNDS n=$N, best of $RUNS)"
for mode in alternate concurrent; do
  for setting in defaults active passive passive+half; do
    case $setting in
      defaults) vars=() ;;
      active) vars=(OMP_WAIT_POLICY=active) ;;
      passive) vars=(OMP_WAIT_POLICY=passive TERROIR_PIN=0) ;;
      passive+half) vars=(OMP_WAIT_POLICY=passive TERROIR_PIN=0 OMP_NUM_THREADS=$half
                          TERROIR_NUM_THREADS=$half) ;;
    esac
    line=$("${clean[@]}" "${vars[@]}" "$OUT/omp_mix" "$mode" "$ROUNDS" "$N" "$RUNS")
    echo "$setting: $line"
    case $line in *check=ok*) ;; *) echo "omp_mix: wrong result ($setting, $mode)" >&2; exit 1 ;; esac
    total=$(sed -n 's/.*total_s=\([0-9.]*\).*/\1/p' <<<"$line")
    cpu=$(sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p' <<<"$line")
    work=$(sed -n 's/.*work_s=\([0-9.]*\).*/\1/p' <<<"$line")
    echo "$mode $setting $total $cpu $work" >>"$results"
  done
done

echo
echo "== wall and CPU seconds (ratio: to defaults in the same mode; cpu/work: CPU time"
echo "   over the sequential work's, 1.00 = no CPU spent beyond the work)"
printf '%-12s %-14s %10s %7s %10s %9s\n' mode setting total_s ratio cpu_s cpu/work
awk '{ if ($2 == "defaults") base[$1] = $3; t[NR] = $0 }
     END { for (i = 1; i <= NR; i++) { split(t[i], f, " ");
           printf "%-12s %-14s %10s %6.2fx %10s %9.2f\n", f[1], f[2], f[3], f[3] / base[f[1]],
                  f[4], f[4] / f[5] } }' "$results"
