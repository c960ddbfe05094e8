#!/usr/bin/env bash
# Model-checks the sleep/wake hand-over and the latches with loom
# (src/sched/sleep/loom.rs): every interleaving of a few threads over the
# real `Sleep`, `LatchState` and `LockLatch` code, built on loom's primitives
# (src/sched/sync.rs). A lost wake-up is reported as a deadlock.
# Separate target dir: `--cfg loom` rebuilds everything.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}"
export CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-target/loom}"
exec cargo test --lib --release sched::sleep::loom "$@"
