#!/usr/bin/env bash
# Miri on the parts of terroir that need no system call: the slab pool (its
# free lists, magazines, thread caches, remote-free batching and fork-safe
# locks, over the stand-in kernel of src/numa/sys/heap.rs), NodeVec and
# NodeBox, the status handling of migrate, and the stand-in itself; the
# private-continuation list of `join`, the offer list of loops, and the
# latches (with plain threads as thieves and setters: a worker needs
# getcpu, which Miri lacks); the merge of the stable parallel sort (its
# bitwise copies, on one thread); and the C API's handle tables
# (capi/src/handle.rs, from plain threads). Tests of these modules that ask
# the real kernel something are #[ignore]d under Miri
# (cfg_attr(miri, ignore = "...")); the rest run with loops shortened.
#
#   scripts/miri.sh            # the subset below, with -Zmiri-strict-provenance
#   MIRIFLAGS=-Zmiri-seed=7 scripts/miri.sh   # flags are added to ours
#
# Installs nightly with Miri when it is missing. Only when that is
# impossible (no rustup, no network) does it print SKIPPED and exit 0; any
# Miri error fails.
set -euo pipefail
cd "$(dirname "$0")/.."

SUBSET=(pool::slab:: pool::placed:: pool::placement:: numa::migrate:: numa::sys::heap:: sched::latch:: sched::join::private:: sched::join::offer:: iter::slice::merge::)
CAPI_SUBSET=(handle::)

skip() {
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    echo "SKIPPED: miri (no nightly) -- $1"
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    exit 0
}

if ! cargo +nightly miri --version >/dev/null 2>&1; then
    command -v rustup >/dev/null || skip "rustup is not installed"
    echo "miri.sh: installing nightly with Miri"
    rustup toolchain install nightly --profile minimal --component miri \
        || skip "rustup toolchain install nightly --component miri failed"
fi
cargo +nightly miri setup
export MIRIFLAGS="-Zmiri-strict-provenance ${MIRIFLAGS:-}"
echo "miri.sh: MIRIFLAGS=$MIRIFLAGS, tests: ${SUBSET[*]}"
cargo +nightly miri test -p terroir --lib -- "${SUBSET[@]}"
echo "miri.sh: terroir-capi tests: ${CAPI_SUBSET[*]}"
cargo +nightly miri test -p terroir-capi --lib -- "${CAPI_SUBSET[@]}"
