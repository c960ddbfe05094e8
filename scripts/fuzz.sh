#!/usr/bin/env bash
# Runs each fuzz target of fuzz/ (cargo-fuzz, libFuzzer) for SECONDS
# (default 60) and fails on the first crash, panic, leak or timeout:
#
#   topology_sysfs  the sysfs topology parser on mutated fixture trees
#   slab_model      slab pool and NodeVec operations against a model
#   capi_calls      sequences of C API calls (pools, groups, places, joins,
#                   loops; NULL, stale and garbage handles), each code
#                   checked against the header's documented ones
#
#   scripts/fuzz.sh          # 60 s each
#   scripts/fuzz.sh 600      # 10 min each
#
# Builds with nightly, in release mode with debug assertions (overflow
# checks included) and AddressSanitizer, cargo-fuzz's default. Installs
# nightly and cargo-fuzz (cargo install cargo-fuzz --locked) when missing.
# Reads the committed seeds (fuzz/seeds/TARGET, written by fuzz/seeds.py)
# and keeps what it finds in fuzz/corpus/TARGET (not committed); a crash
# leaves its input in fuzz/artifacts/TARGET/ and the command to replay it
# (for capi_calls, CAPI_CALLS_DEBUG=1 prints the calls an input makes).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

SECONDS_EACH="${1:-60}"
case "$SECONDS_EACH" in
    ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2 ;;
esac

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing nightly"
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# Longest input per target: whole fixture trees for the parser, a few
# hundred operations for the model.
declare -A MAX_LEN=([topology_sysfs]=8192 [slab_model]=4096 [capi_calls]=2048)

# LeakSanitizer runs at exit: fuzz/lsan.supp says what it may not report.
export LSAN_OPTIONS="suppressions=$PWD/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

cargo +nightly fuzz build -O -a
for target in topology_sysfs slab_model capi_calls; do
    mkdir -p "corpus/$target"
    echo "== fuzz $target for ${SECONDS_EACH}s"
    cargo +nightly fuzz run -O -a "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$SECONDS_EACH" -max_len="${MAX_LEN[$target]}" \
        -timeout=10 -print_final_stats=1
done
echo "fuzz.sh: no crash in ${SECONDS_EACH}s per target"
