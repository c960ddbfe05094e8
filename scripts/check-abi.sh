#!/usr/bin/env bash
# The C ABI check. Within one ABI (the same major version; before 1.0 the
# same 0.minor: README, "Versions and ABI") a release may add to the C API
# but not remove or change anything. Two checks:
#
#  1. The exported terroir_* functions of the built libterroir.so against
#     capi/abi/symbols.txt (the functions of the ABI named in its first
#     line): a missing one fails, unless the package version names another
#     ABI; a new one fails until the list names it.
#  2. The declarations of capi/include/terroir.h against capi/abi/terroir.abi
#     (capi/tests/abi.rs: removed or changed functions, structs, enums and
#     typedefs fail; fields appended to a struct with a leading size field,
#     and new enum values, are compatible).
#
#   scripts/check-abi.sh                 # check (CI): builds the dev library
#   scripts/check-abi.sh --lib PATH      # check that library (e.g. an installed one)
#   scripts/check-abi.sh --write         # rewrite both lists from the build
#
# Needs nm (binutils).
set -euo pipefail
cd "$(dirname "$0")/.."

LIST=capi/abi/symbols.txt
LIB="" WRITE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --lib) LIB=${2:?--lib needs a path}; shift 2 ;;
    --write) WRITE=1; shift ;;
    *) echo "check-abi: unknown argument $1 (--lib PATH, --write)" >&2; exit 2 ;;
  esac
done

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' capi/Cargo.toml | head -1)
major=${version%%.*}; rest=${version#*.}; minor=${rest%%.*}
if [ "$major" = 0 ]; then abi=0.$minor; else abi=$major; fi

if [ -z "$LIB" ]; then
  cargo build --quiet -p terroir-capi
  LIB=${CARGO_TARGET_DIR:-target}/debug/libterroir.so
fi
[ -f "$LIB" ] || { echo "check-abi: $LIB is missing" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$LIB" | awk '$2 == "T" && $3 ~ /^terroir_/ { print $3 }' | sort -u >"$tmp/now"
[ -s "$tmp/now" ] || { echo "check-abi: $LIB exports no terroir_* function" >&2; exit 1; }

if [ "$WRITE" = 1 ]; then
  {
    echo "# The C functions libterroir.so exports in ABI $abi (scripts/check-abi.sh"
    echo "# compares the built library with this list; --write rewrites it)."
    echo "abi $abi"
    cat "$tmp/now"
  } >"$LIST"
  echo "check-abi: wrote $LIST ($(wc -l <"$tmp/now") functions)"
  TERROIR_ABI_WRITE=1 cargo test --quiet -p terroir-capi --test abi >/dev/null
  echo "check-abi: wrote capi/abi/terroir.abi"
  exit 0
fi

list_abi=$(sed -n 's/^abi //p' "$LIST")
grep -v -e '^#' -e '^abi ' "$LIST" | sort -u >"$tmp/listed"
removed=$(comm -23 "$tmp/listed" "$tmp/now")
added=$(comm -13 "$tmp/listed" "$tmp/now")
status=0
if [ -n "$removed" ]; then
  if [ "$list_abi" = "$abi" ]; then
    echo "check-abi: $LIB no longer exports these functions of ABI $abi (an ABI break):" >&2
    printf '  %s\n' $removed >&2
    echo "check-abi: restore them, or bump the version to a new ABI and run scripts/check-abi.sh --write" >&2
    status=1
  else
    echo "check-abi: ABI $list_abi -> $abi: removed $(echo $removed); run scripts/check-abi.sh --write" >&2
    status=1
  fi
fi
if [ -n "$added" ]; then
  echo "check-abi: new functions not in $LIST (compatible; list them with scripts/check-abi.sh --write):" >&2
  printf '  %s\n' $added >&2
  status=1
fi
[ "$status" = 0 ] && echo "check-abi: $LIB exports the $(wc -l <"$tmp/now") functions of $LIST (ABI $abi)"

if ! cargo test --quiet -p terroir-capi --test abi >"$tmp/test.log" 2>&1; then
  cat "$tmp/test.log" >&2
  status=1
else
  echo "check-abi: capi/include/terroir.h keeps the declarations of capi/abi/terroir.abi (ABI $abi)"
fi
exit $status
