#!/usr/bin/env bash
# What nrpt-core costs in flash, RAM and time on a Cortex-M4F, and in bytes of WASM.
#
#   embedded/size-report.sh            build, measure, check the limits, and rewrite the
#                                      section of the book's embedded chapter
#                                      (docs/src/guide/embedded.md) between the
#                                      size-report markers
#   embedded/size-report.sh --check    the same without touching the book (CI)
#
# Builds the firmware (release) twice, with the sampler and without it (feature
# `baseline`: the same report code from an empty summary), runs it under QEMU for the
# stack high-water mark and the instruction count, builds the .wasm (release,
# stripped) and the web page that carries it (embedded/web/build.sh), and fails if the
# firmware's flash reaches 32 KiB, its RAM 8 KiB, the .wasm 64 KiB or the page 200 KiB.
# Needs: rustup's llvm-tools, qemu-system-arm (for the run-time numbers;
# without it they read "n/a" and RAM counts the statics only).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
source "$root/scripts/target-dir.sh" # target_dir DIR: cargo's target directory for DIR
write_page=1
[[ "${1:-}" == "--check" ]] && write_page=0

FLASH_LIMIT=$((32 * 1024))
RAM_LIMIT=$((8 * 1024))
WASM_LIMIT=$((64 * 1024))
PAGE_LIMIT=$((200 * 1024))

bindir="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
size_tool="$bindir/llvm-size"
nm_tool="$bindir/llvm-nm"
if [[ ! -x "$size_tool" ]]; then
    rustup component add llvm-tools >&2
fi

log() { printf '%s\n' "$*" >&2; }

# --- builds -------------------------------------------------------------------------
log "size-report: building the firmware (with and without the sampler) and the wasm"
# Each workspace's target directory, or the one they all share ($CARGO_TARGET_DIR): cargo
# says which. The baseline build gets a folder of its own in it.
firmware_target="$(target_dir "$here/firmware")"
wasm_target="$(target_dir "$here/wasm")"
(cd "$here/firmware" && cargo build --release -q)
(cd "$here/firmware" && cargo build --release -q --features baseline --target-dir "$firmware_target/baseline")
(cd "$here/wasm" && cargo build --release -q --target wasm32-unknown-unknown)
elf="$firmware_target/thumbv7em-none-eabihf/release/nrpt-firmware"
base_elf="$firmware_target/baseline/thumbv7em-none-eabihf/release/nrpt-firmware"
wasm="$wasm_target/wasm32-unknown-unknown/release/nrpt_wasm.wasm"

# section NAME of ELF, in bytes (0 if absent)
section() { "$size_tool" -A "$1" | awk -v s="$2" '$1 == s { print $2; found = 1 } END { if (!found) print 0 }'; }
flash_of() { echo $(($(section "$1" .vector_table) + $(section "$1" .text) + $(section "$1" .rodata) + $(section "$1" .data))); }

flash=$(flash_of "$elf")
base_flash=$(flash_of "$base_elf")
text=$(section "$elf" .text)
rodata=$(section "$elf" .rodata)
vectors=$(section "$elf" .vector_table)
statics=$(($(section "$elf" .data) + $(section "$elf" .bss) + $(section "$elf" .uninit)))
sampler=$((flash - base_flash))
wasm_size=$(stat -c %s "$wasm")
# The web page, built into a folder of its own (build.sh prints its sizes).
page_dir="$wasm_target/web-size-report"
page_line=$("$here/web/build.sh" "$page_dir")
page_size=$(sed -n 's/.*, page \([0-9]*\) B .*/\1/p' <<<"$page_line")
[[ -n "$page_size" ]] || { log "size-report: no page size in: $page_line"; exit 1; }

# --- run under QEMU: stack high-water mark and instructions ---------------------------
stack="n/a"
ticks="n/a"
wall="n/a"
if command -v qemu-system-arm >/dev/null; then
    err=$(mktemp)
    start=$(date +%s%N)
    timeout 60 qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic \
        -semihosting-config enable=on,target=native -icount shift=0 -kernel "$elf" \
        >/dev/null 2>"$err"
    end=$(date +%s%N)
    wall=$(awk -v ns=$((end - start)) 'BEGIN { printf "%.2f", ns / 1e9 }')
    stack=$(sed -n 's/^# stack high-water mark \([0-9]*\) bytes.*/\1/p' "$err")
    ticks=$(sed -n 's/^# systick ticks of the run: \([0-9]*\)$/\1/p' "$err")
    rm -f "$err"
    [[ -n "$stack" ]] || stack="n/a"
    [[ -n "$ticks" ]] || ticks="n/a"
else
    log "size-report: qemu-system-arm not found: no stack or time measurements"
fi
if [[ "$stack" == "n/a" ]]; then ram=$statics; else ram=$((statics + stack)); fi

# --- flash by crate, from the symbol table ---------------------------------------------
declare -A by_crate=()
while read -r _addr size kind name; do
    [[ "$kind" =~ ^[tTrR]$ ]] || continue
    bytes=$((16#$size))
    case "$name" in
        *nrpt_firmware*) crate="firmware main, with the sampler inlined" ;;
        *nrpt_core*) crate="nrpt-core (not inlined)" ;;
        *toyrun*) crate="toyrun (report formatting)" ;;
        *libm*) crate="libm" ;;
        *compiler_builtins* | __aeabi* | __*df* | __*sf* | __udiv* | __mem* | fmax | fmin) crate="compiler-builtins (soft f64, memcpy)" ;;
        .Lanon*) crate="constants (strings, tables)" ;;
        *cortex_m* | Reset | *Handler* | __INTERRUPTS | __RESET_VECTOR | __EXCEPTIONS) crate="cortex-m, cortex-m-rt, semihosting" ;;
        *core::* | *\<*\ as\ core::*) crate="core (formatting, panics)" ;;
        *) crate="other" ;;
    esac
    by_crate[$crate]=$((${by_crate[$crate]:-0} + bytes))
done < <("$nm_tool" --print-size --size-sort --demangle "$elf")

# --- the report ------------------------------------------------------------------------
kib() { awk -v b="$1" 'BEGIN { printf "%.1f KiB", b / 1024 }'; }
num() { sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta' <<<"$1"; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f %%", 100 * a / b }'; }

if [[ "$ticks" == "n/a" ]]; then
    time_line="n/a (needs qemu-system-arm)"
else
    instructions=$((ticks * 40))
    per_iter=$((instructions / 2000))
    time_line="$(num "$instructions") instructions, $(num "$per_iter") per iteration (QEMU \`-icount shift=0\`); at least $(awk -v i="$instructions" 'BEGIN { printf "%.2f", i / 1e8 }') s at 100 MHz; ${wall} s wall-clock under QEMU"
fi

# The machine the run-time numbers were measured on.
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1 || true)
report=$(
    cat <<EOF
Firmware: \`thumbv7em-none-eabihf\`, release (\`opt-level = "s"\`, LTO), P = 16, D = 2, f32,
the 25-mode target, Philox, 2,000 iterations; linked for 32 KiB of flash and 8 KiB of RAM.

| what | measured | limit |
|---|---|---|
| firmware flash: \`.vector_table\` + \`.text\` + \`.rodata\` + \`.data\` | $(num "$flash") B ($(kib "$flash")): $(num "$vectors") + $(num "$text") + $(num "$rodata") + $(num "$((flash - vectors - text - rodata))") | 32 KiB |
| of which the sampler: nrpt-core with libm and soft f64 (flash with it − without it) | $(num "$sampler") B ($(pct "$sampler" "$flash")) | |
| firmware RAM: statics (\`.data\` + \`.bss\`) + stack high-water mark | $(num "$statics") + $(num "$stack") = $(num "$ram") B ($(kib "$ram")) | 8 KiB |
| firmware run time, 2,000 iterations | ${time_line} | |
| \`.wasm\`: solver, toy run and the web page's live runs, release, stripped (\`opt-level = 2\`, LTO) | $(num "$wasm_size") B ($(kib "$wasm_size")) | 64 KiB |
| web page (\`embedded/web/build.sh\`): HTML, JS, CSS and the \`.wasm\` in base64 | $(num "$page_size") B ($(kib "$page_size")) | 200 KiB |

Firmware flash by symbol (LTO inlines most of nrpt-core into the firmware's main):

| code | bytes |
|---|---|
$(for crate in "${!by_crate[@]}"; do printf '%s\t%s\n' "${by_crate[$crate]}" "$crate"; done | sort -rn | while IFS=$'\t' read -r bytes crate; do printf '| %s | %s |\n' "$crate" "$(num "$bytes")"; done)

Measured $(date -u +%F) by \`embedded/size-report.sh\` ($(rustc --version | cut -d' ' -f1-2), $(nproc) cores of ${cpu:-an unrecorded processor}).
EOF
)
printf '%s\n' "$report"

if [[ $write_page == 1 ]]; then
    page="$root/docs/src/guide/embedded.md"
    if ! grep -q '<!-- size-report:begin -->' "$page" || ! grep -q '<!-- size-report:end -->' "$page"; then
        log "size-report: docs/src/guide/embedded.md lacks the size-report markers"
        exit 1
    fi
    tmp=$(mktemp)
    printf '%s\n' "$report" >"$tmp.body"
    awk -v body="$tmp.body" '
        /<!-- size-report:begin -->/ { print; while ((getline line < body) > 0) print line; skip = 1; next }
        /<!-- size-report:end -->/ { skip = 0 }
        !skip { print }
    ' "$page" >"$tmp"
    cat "$tmp" >"$page"
    rm -f "$tmp" "$tmp.body"
    log "size-report: docs/src/guide/embedded.md updated"
fi

# --- limits ------------------------------------------------------------------------------
status=0
check() { # NAME VALUE LIMIT
    if (($2 < $3)); then
        log "size-report: ok: $1 $2 B < $3 B"
    else
        log "size-report: FAIL: $1 $2 B is not under $3 B"
        status=1
    fi
}
check "firmware flash" "$flash" "$FLASH_LIMIT"
check "firmware RAM" "$ram" "$RAM_LIMIT"
check ".wasm" "$wasm_size" "$WASM_LIMIT"
# The page's limit is inclusive (≤ 200 KiB).
check "web page" "$page_size" "$((PAGE_LIMIT + 1))"
exit $status
