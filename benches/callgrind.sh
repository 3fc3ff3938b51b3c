#!/usr/bin/env bash
# Instructions per chain-step of the CPU engine, counted by callgrind (repeatable where
# times are not), in all and by part of the iteration. Two runs that differ only in the
# number of iterations are counted and subtracted, so that start-up and the warm-up
# cancel:
#   instructions per chain-step = (Ir(2N) − Ir(N)) / (E · P · N).
# Usage: benches/callgrind.sh [E] [P] [N] [MATH]   (defaults 64 16 500 exact; one thread;
#        MATH = exact or fast, the engine's --math)
# It counts `lockstep_steps` (nrpt-sampling's example: the CPU engine on the paper's 2D
# experiment with the configuration of `nrpt bench`, nothing recorded), which builds in a
# fraction of the time of the `nrpt` command. valgrind does not emulate AVX-512, so this
# counts the AVX2 build of the vectorized path (the processor-independent measure the
# project tracks). The breakdown (benches/callgrind_parts.py) charges each instruction
# to the function it was inlined from, by the binary's debug information.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/target-dir.sh # target_dir: cargo's target directory ($CARGO_TARGET_DIR or target/)
e=${1:-64}
p=${2:-16}
n=${3:-500}
math=${4:-exact}
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed" >&2; exit 1; }
command -v addr2line >/dev/null || { echo "callgrind.sh: addr2line (binutils) is not installed" >&2; exit 1; }
cargo build --profile profiling -p nrpt-sampling --example lockstep_steps -q
bin="$(target_dir)/profiling/examples/lockstep_steps"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
count() {
    valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$work/$1.out" \
        "$bin" "$e" "$p" "$1" "$math" avx2 >/dev/null 2>"$work/$1.log"
    grep -oE 'refs: +[0-9,]+' "$work/$1.log" | tr -dc '0-9'
}
a=$(count "$n")
b=$(count $((2 * n)))
python3 -c "print(f'instructions per chain-step: {($b - $a) / ($e * $p * $n):.1f}  (E = $e, P = $p, N = $n, math $math, AVX2; Ir {$a} and {$b})')"
echo
python3 benches/callgrind_parts.py "$bin" "$work/$n.out" "$work/$((2 * n)).out" $((e * p * n))
