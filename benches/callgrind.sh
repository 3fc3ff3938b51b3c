#!/usr/bin/env bash
# Instructions per chain-step of the CPU engine, counted by callgrind (repeatable where
# times are not). Two runs that differ only in the number of iterations are counted and
# subtracted, so that start-up, the warm-up run and thread-pool costs cancel:
#   instructions per chain-step = (Ir(2N) − Ir(N)) / (E · P · N).
# Usage: benches/callgrind.sh [E] [P] [N] [MATH]   (defaults 64 16 500 exact; one thread;
#        MATH = exact or fast, the engine's --math)
# valgrind does not emulate AVX-512, so this counts the AVX2 build of the vectorized
# path (the processor-independent measure the project tracks).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/target-dir.sh # target_dir: cargo's target directory ($CARGO_TARGET_DIR or target/)
e=${1:-64}
p=${2:-16}
n=${3:-500}
math=${4:-exact}
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed" >&2; exit 1; }
cargo build --profile profiling -p nrpt-host -q
bin="$(target_dir)/profiling/nrpt"
count() {
    local out
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" bench -e "$e" -p "$p" -n "$1" \
        --threads 1 --quiet --backend cpu --math "$math" >/dev/null 2>"$out.log"
    grep -oE 'refs: +[0-9,]+' "$out.log" | tr -dc '0-9'
    rm -f "$out" "$out.log"
}
a=$(count "$n")
b=$(count $((2 * n)))
python3 -c "print(f'instructions per chain-step: {($b - $a) / ($e * $p * $n):.1f}  (E = $e, P = $p, N = $n, math $math; Ir {$a} and {$b})')"
