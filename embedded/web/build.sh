#!/usr/bin/env bash
# Builds the browser page of the paper's 2D experiment (embedded/web) into a folder:
#
#   embedded/web/build.sh [--check] [OUT]
#
# OUT (default: "web" in the target directory of embedded/wasm, or $CARGO_TARGET_DIR)
# receives index.html, page.js, page.css and nrpt-module.js, which holds the WASM module
# of embedded/wasm (release, stripped) in base64, so that the page runs from a static
# server and from a file:// URL alike: no framework, no server code, nothing fetched.
#
# OUT must be a new or empty folder, or one this script wrote before (it leaves the
# marker .nrpt-web there); it writes only its own files and removes nothing. Prints the
# size of the module and of the whole page; --check fails when the page reaches
# 200 KiB or the module 64 KiB.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$(dirname "$here")")"
source "$root/scripts/target-dir.sh" # target_dir DIR: cargo's target directory for DIR

check=0
out=""
for arg in "$@"; do
    case "$arg" in
        --check) check=1 ;;
        -h | --help)
            sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        -*)
            echo "build.sh: unknown option '$arg' (--check, --help)" >&2
            exit 2
            ;;
        *)
            [[ -z "$out" ]] || { echo "build.sh: one output folder, not '$out' and '$arg'" >&2; exit 2; }
            out="$arg"
            ;;
    esac
done

PAGE_LIMIT=$((200 * 1024))
WASM_LIMIT=$((64 * 1024))
files=(index.html page.js page.css)

wasm_target="$(target_dir "$root/embedded/wasm")"
[[ -n "$out" ]] || out="$wasm_target/web"
marker="$out/.nrpt-web"
if [[ -e "$out" && ! -d "$out" ]]; then
    echo "build.sh: $out exists and is not a folder; give another one" >&2
    exit 1
fi
if [[ -d "$out" && ! -e "$marker" ]] && [[ -n "$(ls -A "$out")" ]]; then
    echo "build.sh: $out is not empty and was not written by this script (no .nrpt-web in it): give a new or empty folder" >&2
    exit 1
fi

if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    rustup target add wasm32-unknown-unknown >&2
fi
(cd "$root/embedded/wasm" && cargo build --release -q --target wasm32-unknown-unknown)
wasm="$wasm_target/wasm32-unknown-unknown/release/nrpt_wasm.wasm"

mkdir -p "$out"
printf 'written by embedded/web/build.sh; it rewrites index.html, page.js, page.css and nrpt-module.js here\n' >"$marker"
for f in "${files[@]}"; do
    cp "$here/$f" "$out/$f.tmp" && mv -f "$out/$f.tmp" "$out/$f"
done
{
    printf '// The nrpt WebAssembly module (embedded/wasm), base64: written by embedded/web/build.sh.\n'
    printf 'var NRPT_WASM_BASE64 =\n  "'
    base64 -w 0 "$wasm"
    printf '";\n'
} >"$out/nrpt-module.js.tmp"
mv -f "$out/nrpt-module.js.tmp" "$out/nrpt-module.js"

wasm_size=$(stat -c %s "$wasm")
page_size=0
for f in "${files[@]}" nrpt-module.js; do
    page_size=$((page_size + $(stat -c %s "$out/$f")))
done
kib() { awk -v b="$1" 'BEGIN { printf "%.1f KiB", b / 1024 }'; }
echo "web: module $wasm_size B ($(kib "$wasm_size")), page $page_size B ($(kib "$page_size"): ${files[*]} nrpt-module.js) in $out"
if ((check)); then
    status=0
    ((page_size <= PAGE_LIMIT)) || { echo "web: FAIL: the page's $page_size B exceed 200 KiB" >&2; status=1; }
    ((wasm_size < WASM_LIMIT)) || { echo "web: FAIL: the module's $wasm_size B are not under 64 KiB" >&2; status=1; }
    exit $status
fi
