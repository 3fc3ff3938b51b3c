#!/usr/bin/env bash
# nrpt-core where embedded and WASM users run it, checked end to end:
#
#   1. the firmware (embedded/firmware) runs the P = 16, D = 2 toy for 2,000 iterations
#      on an emulated Cortex-M4F (QEMU, machine mps2-an386) and exits 0;
#   2. its semihosting output equals, line for line, the reference report checked in
#      as tests/expected/toyrun.txt (round trips, swap counts, ladder bits, sample
#      checksum), which the host prints too (embedded/toyrun) and which the workspace's
#      tests compare with nrpt-core and every host engine (tests/tests/it/embedded.rs);
#   3. the WASM module (embedded/wasm) gives, in Node, the native solver results and
#      the same toy run (the host's report, itself the reference), to the bit;
#   4. flash < 32 KiB, RAM < 8 KiB, .wasm < 64 KiB, the web page ≤ 200 KiB
#      (embedded/size-report.sh --check);
#   5. the web page of the 2D experiment (embedded/web) in headless Chromium: its counts
#      equal `nrpt run`'s on the same settings, and more (embedded/web/ci.sh).
#
# Installs what it needs (qemu-system-arm and chromium through apt when missing; the
# Rust targets and llvm-tools through rustup; the browser test's npm packages). Usage: embedded/ci.sh   Ends with
# "embedded: N passed, M failed" and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")"
source ../scripts/target-dir.sh # target_dir DIR: cargo's target directory for DIR
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

passed=0
failed=0
step() { printf '\n==> embedded: %s\n' "$*"; }
# check NAME COMMAND...: runs the command, counts it as passed or failed.
check() {
    local name="$1"
    shift
    if "$@"; then
        echo "ok: $name"
        passed=$((passed + 1))
    else
        echo "FAIL: $name"
        failed=$((failed + 1))
    fi
}

step "tools: qemu-system-arm, Rust targets, llvm-tools, node"
if ! command -v qemu-system-arm >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-system-arm) >/dev/null
fi
rustup target add thumbv7em-none-eabihf wasm32-unknown-unknown
rustup component add llvm-tools clippy rustfmt
qemu-system-arm --version | head -n 1
node --version

step "format and lints of the three embedded workspaces"
lint() {
    local ws="$1"
    shift
    (cd "$ws" && cargo fmt --check && cargo clippy -q --all-targets "$@" -- -D warnings)
}
check "toyrun: fmt, clippy" lint toyrun
check "firmware: fmt, clippy" lint firmware
check "wasm: fmt, clippy (host)" lint wasm
check "wasm: clippy (wasm32)" lint wasm --target wasm32-unknown-unknown

step "host: the reference run"
# The three workspaces have a target directory each, or all share $CARGO_TARGET_DIR:
# cargo says which (the firmware and the .wasm are under their target triple).
toyrun_exe="$(target_dir toyrun)/release/toyrun"
firmware_elf="$(target_dir firmware)/thumbv7em-none-eabihf/release/nrpt-firmware"
wasm_module="$(target_dir wasm)/wasm32-unknown-unknown/release/nrpt_wasm.wasm"
check "toyrun builds" bash -c '(cd toyrun && cargo build --release -q)'
check "host report" bash -c '"$1" >"$2"' - "$toyrun_exe" "$out/host.txt"
check "host json" bash -c '"$1" json >"$2"' - "$toyrun_exe" "$out/native.json"
# The one file that holds the reference numbers.
expected=../tests/expected/toyrun.txt
check "host output = tests/expected/toyrun.txt, line for line" \
    diff -u --label expected "$expected" --label host "$out/host.txt"

step "firmware: build, then run under qemu-system-arm (mps2-an386, Cortex-M4F)"
check "firmware builds" bash -c '(cd firmware && cargo build --release -q)'
run_firmware() {
    local start end rc
    start=$(date +%s%N)
    timeout 60 qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic \
        -semihosting-config enable=on,target=native -icount shift=0 \
        -kernel "$firmware_elf" \
        >"$out/firmware.txt" 2>"$out/firmware.err"
    rc=$?
    end=$(date +%s%N)
    cat "$out/firmware.err"
    echo "firmware: exit status $rc after $(((end - start) / 1000000)) ms under QEMU"
    return $rc
}
check "firmware runs and exits 0" run_firmware
check "firmware output = tests/expected/toyrun.txt, line for line" \
    diff -u --label expected "$expected" --label firmware "$out/firmware.txt"

step "host tests"
check "toyrun tests" bash -c '(cd toyrun && cargo test -q)'

step "wasm: native tests, module build, Node test"
check "wasm tests (native)" bash -c '(cd wasm && cargo test -q)'
check "wasm builds" bash -c '(cd wasm && cargo build --release -q --target wasm32-unknown-unknown)'
check "node test: wasm = native" \
    node wasm/test.mjs "$wasm_module" "$out/native.json"

step "sizes: flash < 32 KiB, RAM < 8 KiB, .wasm < 64 KiB, web page ≤ 200 KiB"
check "size limits" ./size-report.sh --check

step "web page: built, then run in headless Chromium against the native command"
check "browser test (embedded/web/ci.sh)" web/ci.sh

echo
echo "embedded: $passed passed, $failed failed"
((failed == 0))
