#!/usr/bin/env bash
# Boots Linux in QEMU (TCG) with an emulated NUMA topology and runs terroir's
# multi-node tests (tests/numa_guest.rs) or a cargo example inside it.
# See tests/vm/README.md. The last line printed is always `N passed, M failed`.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: tests/vm/run.sh [--nodes 2|4] [--example NAME] [options] [-- ARGS...]

Boots a QEMU guest with 2 or 4 emulated NUMA nodes and runs the static
`numa_guest` test binary in it (or, with --example, the named cargo example).
ARGS after `--` go to the binary: for the tests, libtest's options (a name
filter, --nocapture, ...) after the default --test-threads=1.

options:
  --nodes N         2 (default: 4 CPUs, 2 x 1 GiB) or 4 (8 CPUs, 4 x 512 MiB)
  --example NAME    run `examples/NAME.rs` instead of the tests (release build)
  --cpus-per-node N 2 (default) or 1; 1 only with --example (the tests expect
                    the default layout). Fewer vCPUs share the host's cores,
                    so the emulated CPUs progress more evenly
  --release         build the tests in release mode too
  --timeout SECS    kill the guest after SECS seconds (default 300, or
                    $TERROIR_VM_TIMEOUT); a timeout counts as a failure
  --keep            keep the work directory (initramfs, console log)
  -v, --verbose     show the kernel's boot messages and the build commands
  -h, --help        this text

environment:
  TERROIR_VM_CACHE    download cache (default: $CARGO_TARGET_DIR/vm-cache,
                      else target/vm-cache)
  TERROIR_VM_KERNEL   use this kernel image instead of Debian's cloud kernel
  TERROIR_VM_TARGET   x86_64-unknown-linux-gnu (default, linked statically with
                      glibc) or x86_64-unknown-linux-musl (needs rustup's target
                      and musl-tools)
  CARGO_TARGET_DIR    as for cargo
EOF
}

NODES=2
CPN=2
EXAMPLE=""
RELEASE=0
TIMEOUT="${TERROIR_VM_TIMEOUT:-300}"
VERBOSE=0
EXTRA=()

# Everything that ends the run early goes through fail, so that the last line
# is still the count.
WORK=""
KEEP=0
cleanup() {
    if [ -z "$WORK" ]; then return 0; fi
    if [ "$KEEP" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
    WORK=""
}
trap cleanup EXIT
fail() {
    echo "run.sh: error: $*" >&2
    cleanup
    echo "0 passed, 1 failed"
    exit 1
}
log() { echo "run.sh: $*" >&2; }
vlog() { if [ "$VERBOSE" = 1 ]; then log "$@"; fi; }

while [ $# -gt 0 ]; do
    case "$1" in
        --nodes) [ $# -ge 2 ] || fail "--nodes needs a value"; NODES="$2"; shift 2 ;;
        --nodes=*) NODES="${1#*=}"; shift ;;
        --cpus-per-node) [ $# -ge 2 ] || fail "--cpus-per-node needs a value"; CPN="$2"; shift 2 ;;
        --cpus-per-node=*) CPN="${1#*=}"; shift ;;
        --example) [ $# -ge 2 ] || fail "--example needs a name"; EXAMPLE="$2"; shift 2 ;;
        --example=*) EXAMPLE="${1#*=}"; shift ;;
        --timeout) [ $# -ge 2 ] || fail "--timeout needs a value"; TIMEOUT="$2"; shift 2 ;;
        --timeout=*) TIMEOUT="${1#*=}"; shift ;;
        --release) RELEASE=1; shift ;;
        --keep) KEEP=1; shift ;;
        -v|--verbose) VERBOSE=1; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; EXTRA=("$@"); break ;;
        *) usage >&2; fail "unknown argument: $1" ;;
    esac
done
case "$NODES" in 2|4) ;; *) fail "--nodes must be 2 or 4 (got '$NODES')" ;; esac
case "$CPN" in 1|2) ;; *) fail "--cpus-per-node must be 1 or 2 (got '$CPN')" ;; esac
if [ "$CPN" != 2 ] && [ -z "$EXAMPLE" ]; then
    fail "--cpus-per-node $CPN needs --example: tests/numa_guest.rs expects 2 CPUs per node"
fi
case "$TIMEOUT" in ''|*[!0-9]*) fail "--timeout must be a number of seconds" ;; esac
if [ -n "$EXAMPLE" ]; then RELEASE=1; fi

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VM_DIR="$REPO/tests/vm"
if [ -n "$EXAMPLE" ] && [ ! -f "$REPO/examples/$EXAMPLE.rs" ] && [ ! -d "$REPO/examples/$EXAMPLE" ]; then
    fail "no example '$EXAMPLE' in examples/"
fi
TARGET_DIR="${CARGO_TARGET_DIR:-$REPO/target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$REPO/$TARGET_DIR" ;; esac
CACHE="${TERROIR_VM_CACHE:-$TARGET_DIR/vm-cache}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"
START=$SECONDS

[ "$(uname -s)" = Linux ] || fail "needs a Linux host"
[ "$(uname -m)" = x86_64 ] || fail "needs an x86_64 host (got $(uname -m))"

# ---------------------------------------------------------------- host tools

APT_UPDATED=0
apt_update() {
    if [ "$APT_UPDATED" = 0 ]; then
        log "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || fail "apt-get update failed"
        APT_UPDATED=1
    fi
}

# apt_install PKG...: installs Debian packages when we are root with apt,
# else explains what is missing.
apt_install() {
    if ! command -v apt-get >/dev/null; then
        fail "missing: $* (Debian package names); install them or put the tools on PATH"
    fi
    if [ "$(id -u)" != 0 ]; then
        fail "missing: $*; run as root so that this script can apt-get install them, or: sudo apt-get install -y --no-install-recommends $*"
    fi
    apt_update
    log "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 \
        || fail "apt-get install $* failed"
}

is_static() { ! ldd "$1" 2>&1 | grep -q '=>'; }

find_busybox() {
    local b
    for b in "${TERROIR_VM_BUSYBOX:-}" /usr/bin/busybox /bin/busybox "$(command -v busybox || true)"; do
        if [ -n "$b" ] && [ -x "$b" ] && is_static "$b"; then
            echo "$b"
            return 0
        fi
    done
    return 1
}

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
find_busybox >/dev/null || need+=(busybox-static)
command -v gzip >/dev/null || need+=(gzip)
command -v ldd >/dev/null || need+=(libc-bin)
if [ ${#need[@]} -gt 0 ]; then apt_install "${need[@]}"; fi
command -v qemu-system-x86_64 >/dev/null || fail "qemu-system-x86_64 not found after installing qemu-system-x86"
BUSYBOX="$(find_busybox)" || fail "no static busybox found (Debian: busybox-static; or set TERROIR_VM_BUSYBOX)"
command -v cargo >/dev/null || fail "cargo not found on PATH (install Rust with rustup)"
command -v timeout >/dev/null || fail "timeout (coreutils) not found"

# ------------------------------------------------------------------- kernel

# The options the guest needs built in (no modules in the initramfs).
KERNEL_NEEDS="CONFIG_NUMA CONFIG_ACPI_NUMA CONFIG_MIGRATION CONFIG_SMP CONFIG_BLK_DEV_INITRD \
CONFIG_RD_GZIP CONFIG_DEVTMPFS CONFIG_SERIAL_8250 CONFIG_SERIAL_8250_CONSOLE CONFIG_PROC_FS \
CONFIG_SYSFS CONFIG_TMPFS CONFIG_BINFMT_ELF CONFIG_BINFMT_SCRIPT"

# fetch_kernel META: downloads the kernel package META (e.g.
# linux-image-cloud-amd64) depends on into $CACHE/kernel; returns 1 when
# its config lacks one of KERNEL_NEEDS.
fetch_kernel() {
    local meta="$1" pkg tmp deb cfg opt
    pkg="$(apt-cache depends "$meta" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[^ ]*\)$/\1/p' | head -n1)"
    if [ -z "$pkg" ] && [ "$(id -u)" = 0 ]; then
        apt_update
        pkg="$(apt-cache depends "$meta" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[^ ]*\)$/\1/p' | head -n1)"
    fi
    [ -n "$pkg" ] || fail "apt-cache knows no $meta (run apt-get update, or set TERROIR_VM_KERNEL)"
    log "downloading kernel package $pkg"
    tmp="$CACHE/kernel.tmp"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    local opts=()
    # As root apt drops to the _apt user, who cannot write into our cache.
    if [ "$(id -u)" = 0 ]; then opts=(-o APT::Sandbox::User=root); fi
    (cd "$tmp" && apt-get download -qq "${opts[@]}" "$pkg" >&2) || fail "apt-get download $pkg failed"
    local found=("$tmp"/*.deb)
    deb="${found[0]}"
    dpkg -x "$deb" "$tmp/x" || fail "dpkg -x $deb failed"
    found=("$tmp"/x/boot/config-*)
    cfg="${found[0]}"
    [ -f "$cfg" ] || fail "$pkg has no /boot/config-*"
    for opt in $KERNEL_NEEDS; do
        if ! grep -q "^$opt=y" "$cfg"; then
            log "$pkg lacks $opt=y"
            rm -rf "$tmp"
            return 1
        fi
    done
    mkdir -p "$CACHE/kernel"
    found=("$tmp"/x/boot/vmlinuz-*)
    [ -f "${found[0]}" ] || fail "$pkg has no /boot/vmlinuz-*"
    cp "$cfg" "$CACHE/kernel/config"
    echo "$pkg" > "$CACHE/kernel/package"
    # vmlinuz last: its presence marks a complete cache entry.
    cp "${found[0]}" "$CACHE/kernel/vmlinuz.tmp"
    mv "$CACHE/kernel/vmlinuz.tmp" "$CACHE/kernel/vmlinuz"
    rm -rf "$tmp"
}

if [ -n "${TERROIR_VM_KERNEL:-}" ]; then
    KERNEL="$TERROIR_VM_KERNEL"
    [ -r "$KERNEL" ] || fail "TERROIR_VM_KERNEL=$KERNEL is not readable"
    KERNEL_PKG="$KERNEL"
else
    (
        # One download at a time when several runs share the cache.
        if command -v flock >/dev/null; then
            exec 9>"$CACHE/kernel.lock"
            flock 9
        fi
        if [ ! -s "$CACHE/kernel/vmlinuz" ]; then
            command -v dpkg >/dev/null && command -v apt-cache >/dev/null \
                || fail "no cached kernel and no apt/dpkg to fetch Debian's: set TERROIR_VM_KERNEL"
            fetch_kernel linux-image-cloud-amd64 || fetch_kernel linux-image-amd64 \
                || fail "neither Debian kernel has $KERNEL_NEEDS built in; set TERROIR_VM_KERNEL"
        fi
    ) || exit 1
    KERNEL="$CACHE/kernel/vmlinuz"
    KERNEL_PKG="$(cat "$CACHE/kernel/package")"
fi
vlog "kernel: $KERNEL_PKG"

# -------------------------------------------------------------- guest binary

GNU=x86_64-unknown-linux-gnu
MUSL=x86_64-unknown-linux-musl
TARGET="${TERROIR_VM_TARGET:-$GNU}"
rustflags="${RUSTFLAGS:-}"
case "$TARGET" in
    "$GNU")
        # A static glibc binary: needs only gcc and libc6-dev's libc.a, no
        # extra Rust target (C code of dependencies builds with plain gcc).
        if ! [ -e /usr/lib/x86_64-linux-gnu/libc.a ] && ! [ -e /usr/lib64/libc.a ]; then
            apt_install libc6-dev
        fi
        rustflags="$rustflags -C target-feature=+crt-static"
        ;;
    "$MUSL")
        # Needs the Rust target (downloaded by rustup) and musl-gcc for the C
        # code of dev-dependencies.
        command -v rustup >/dev/null || fail "TERROIR_VM_TARGET=$MUSL needs rustup"
        rustup target list --installed 2>/dev/null | grep -qx "$MUSL" \
            || timeout 300 rustup target add "$MUSL" >&2 \
            || fail "rustup target add $MUSL failed (offline?); use the default target"
        command -v musl-gcc >/dev/null || apt_install musl-tools
        ;;
    *) fail "TERROIR_VM_TARGET must be $GNU or $MUSL" ;;
esac

# --target keeps RUSTFLAGS off build scripts and proc macros.
cargo_args=(--target "$TARGET" --message-format=json-render-diagnostics)
if [ "$RELEASE" = 1 ]; then cargo_args+=(--release); fi
if [ -n "$EXAMPLE" ]; then
    cargo_cmd=(cargo build --example "$EXAMPLE" "${cargo_args[@]}")
    guest_args=("${EXTRA[@]}")
else
    cargo_cmd=(cargo test --no-run --test numa_guest "${cargo_args[@]}")
    guest_args=(--test-threads=1 "${EXTRA[@]}")
fi
log "building for $TARGET: ${cargo_cmd[*]}"
build_json="$(cd "$REPO" && CARGO_TARGET_DIR="$TARGET_DIR" RUSTFLAGS="$rustflags" "${cargo_cmd[@]}")" \
    || fail "cargo build failed"
# The artifact of our target is the last one with an executable.
BIN="$(printf '%s\n' "$build_json" | grep '"reason":"compiler-artifact"' \
    | grep -o '"executable":"[^"]*"' | tail -n1 | sed 's/^"executable":"\(.*\)"$/\1/')"
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    fail "could not find the built binary in cargo's output"
fi
is_static "$BIN" || fail "$BIN is dynamically linked; the guest has no shared libraries"
vlog "guest binary: $BIN"

# ---------------------------------------------------------------- initramfs

WORK="$(mktemp -d "${TMPDIR:-/tmp}/terroir-vm.XXXXXX")"

root="$WORK/root"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
cp "$BUSYBOX" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
install -m 0755 "$VM_DIR/init" "$root/init"
cp "$BIN" "$root/guest"
chmod 0755 "$root/guest"
: > "$root/guest.args"
for a in "${guest_args[@]}"; do printf '%s\n' "$a" >> "$root/guest.args"; done
(cd "$root" && find . | "$BUSYBOX" cpio -o -H newc 2>/dev/null | gzip -1) > "$WORK/initrd.gz" \
    || fail "building the initramfs failed"

# --------------------------------------------------------------------- QEMU

# Keep in step with expected_layout() in tests/numa_guest.rs.
node_cpus() {
    if [ "$CPN" = 1 ]; then echo "$1"; else echo "$((2 * $1))-$((2 * $1 + 1))"; fi
}
qemu_numa=()
case "$NODES" in
    2)
        # node n = CPUs 2n-2n+1 (one socket each; CPU n with
        # --cpus-per-node 1), 1 GiB each; no `-numa dist` (Linux then uses
        # 10 local / 20 remote).
        SMP="$((2 * CPN)),sockets=2,cores=$CPN,threads=1"
        MEM=2G
        for n in 0 1; do
            qemu_numa+=(-object "memory-backend-ram,id=m$n,size=1G"
                        -numa "node,nodeid=$n,cpus=$(node_cpus "$n"),memdev=m$n")
        done
        ;;
    4)
        # node n = CPUs 2n-2n+1 (one socket each; CPU n with
        # --cpus-per-node 1), 512 MiB each; nodes 0-1 and 2-3 are pairs at
        # distance 16, 32 across the pairs.
        SMP="$((4 * CPN)),sockets=4,cores=$CPN,threads=1"
        MEM=2G
        for n in 0 1 2 3; do
            qemu_numa+=(-object "memory-backend-ram,id=m$n,size=512M"
                        -numa "node,nodeid=$n,cpus=$(node_cpus "$n"),memdev=m$n")
        done
        for a in 0 1 2 3; do
            for b in 0 1 2 3; do
                [ "$a" -lt "$b" ] || continue
                if [ $((a / 2)) = $((b / 2)) ]; then d=16; else d=32; fi
                qemu_numa+=(-numa "dist,src=$a,dst=$b,val=$d")
            done
        done
        ;;
esac

append="console=ttyS0 panic=-1 terroir.nodes=$NODES"
if [ "$VERBOSE" = 1 ]; then append="$append loglevel=7"; else append="$append quiet"; fi

qemu=(qemu-system-x86_64 -accel tcg -machine q35 -m "$MEM" -smp "$SMP" "${qemu_numa[@]}"
      -kernel "$KERNEL" -initrd "$WORK/initrd.gz" -append "$append"
      -display none -monitor none -serial stdio -no-reboot -nodefaults)
vlog "${qemu[*]}"
log "booting $NODES-node guest, $CPN CPUs per node ($KERNEL_PKG, timeout ${TIMEOUT}s)"

CONSOLE="$WORK/console.log"
boot_start=$SECONDS
set +e
# --foreground: QEMU stays in our process group, so ^C reaches it.
timeout --foreground -k 10 "$TIMEOUT" "${qemu[@]}" < /dev/null 2>&1 | tr -d '\r' | tee "$CONSOLE"
qemu_status=${PIPESTATUS[0]}
set -e
guest_secs=$((SECONDS - boot_start))

# ------------------------------------------------------------------ verdict

passed=0
failed=0
exit_line="$(grep -a '^TERROIR-VM-EXIT [0-9]*$' "$CONSOLE" | tail -n1 || true)"
if [ -z "$exit_line" ]; then
    if [ "$qemu_status" = 124 ] || [ "$qemu_status" = 137 ]; then
        log "FAILED: the guest did not finish within ${TIMEOUT}s"
    else
        log "FAILED: the guest stopped without reporting an exit status (QEMU exit $qemu_status)"
    fi
    guest_status=none
else
    guest_status="${exit_line#TERROIR-VM-EXIT }"
fi

if [ -n "$EXAMPLE" ]; then
    if [ "$guest_status" = 0 ]; then passed=1; else failed=1; fi
else
    results="$(grep -a -o 'test result: [A-Za-z]*\. [0-9]* passed; [0-9]* failed' "$CONSOLE" || true)"
    if [ -n "$results" ]; then
        while read -r _ _ _ p _ f _; do
            passed=$((passed + p))
            failed=$((failed + f))
        done <<< "$results"
    else
        # No summary: the binary died (or the guest hung) mid-run; count what
        # it got through.
        passed="$(grep -a -c '^test .* \.\.\. ok$' "$CONSOLE" || true)"
        failed="$(grep -a -c '^test .* \.\.\. FAILED$' "$CONSOLE" || true)"
    fi
    if [ "$guest_status" != 0 ] && [ "$failed" = 0 ]; then
        failed=1
    fi
fi

cleanup
log "guest: $NODES nodes, $KERNEL_PKG, exit status $guest_status, ${guest_secs}s in QEMU, $((SECONDS - START))s in all"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
