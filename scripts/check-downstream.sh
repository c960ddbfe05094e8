#!/usr/bin/env bash
# Builds tests/downstream/ (a crate that depends on terroir with its default
# features, as a user's crate does) in its own target directory, runs it,
# and checks that neither its binary nor the terroir rlib it links carries
# a `terroir_*` C symbol: the C API is the terroir-capi crate, and a Rust
# program must not get its symbols (two versions of terroir in one
# dependency graph would clash on them).
#
#   scripts/check-downstream.sh
#
# Honours CARGO_TARGET_DIR (the crate builds in $CARGO_TARGET_DIR/downstream,
# default target/downstream). Exit status 1 when a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

target=$(realpath -m "${CARGO_TARGET_DIR:-target}")/downstream
manifest=tests/downstream/Cargo.toml

echo "check-downstream: cargo build (default features) into $target"
# No terroir rlib of an earlier build may stay (its symbols are checked
# below); --locked: the crate's own Cargo.lock, as a user's crate has.
CARGO_TARGET_DIR=$target cargo clean --quiet --manifest-path "$manifest" -p terroir
CARGO_TARGET_DIR=$target cargo build --quiet --locked --manifest-path "$manifest"
"$target/debug/terroir-downstream"

status=0
# The binary, linked keeping every function (the linker's garbage
# collection would hide symbols a library defines but the program never
# calls), and the terroir rlib itself.
CARGO_TARGET_DIR=$target cargo rustc --quiet --locked --manifest-path "$manifest" --bin terroir-downstream -- -C link-dead-code
for f in "$target/debug/terroir-downstream" "$target"/debug/deps/libterroir-*.rlib; do
  found=$(nm --defined-only "$f" 2>/dev/null | awk '$3 ~ /^terroir_/ { print $3 }' | sort -u)
  if [ -n "$found" ]; then
    echo "check-downstream: $f defines C symbols of the C API:" >&2
    echo "$found" | head -20 >&2
    status=1
  else
    echo "check-downstream: $(basename "$f"): no terroir_* symbols"
  fi
done
exit $status
