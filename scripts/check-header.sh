#!/usr/bin/env bash
# Checks that capi/include/terroir.h (the header the terroir-capi crate
# ships) is what cbindgen generates from capi/src/ (with
# capi/cbindgen.toml): regenerates it into a temporary file and diffs.
# Exit status 1 (and the diff) when they differ.
#
#   scripts/check-header.sh           # check (CI)
#   scripts/check-header.sh --write   # regenerate capi/include/terroir.h
#
# cbindgen's output can change between its versions, so the header is
# generated with the pinned version below, installed with `cargo install`
# when missing (into cargo's bin directory).
set -euo pipefail
cd "$(dirname "$0")/.."

CBINDGEN_VERSION=0.29.4
HEADER=capi/include/terroir.h

if ! command -v cbindgen >/dev/null || [ "$(cbindgen --version | awk '{print $2}')" != "$CBINDGEN_VERSION" ]; then
  echo "check-header: installing cbindgen $CBINDGEN_VERSION" >&2
  cargo install --locked --quiet cbindgen --version "$CBINDGEN_VERSION"
fi

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# cbindgen warns about every crate item it skips (not `pub`, not
# `no_mangle`): keep its stderr only on failure.
if ! (cd capi && cbindgen --quiet --config cbindgen.toml --crate terroir-capi --output "$tmp") 2>"$tmp.err"; then
  cat "$tmp.err" >&2
  rm -f "$tmp.err"
  exit 2
fi
rm -f "$tmp.err"

if [ "${1:-}" = "--write" ]; then
  cp "$tmp" "$HEADER"
  echo "check-header: wrote $HEADER"
  exit 0
fi

if ! diff -u "$HEADER" "$tmp"; then
  echo "check-header: $HEADER differs from what cbindgen generates from capi/src/;" >&2
  echo "check-header: run scripts/check-header.sh --write and commit the header" >&2
  exit 1
fi
echo "check-header: $HEADER is up to date"
