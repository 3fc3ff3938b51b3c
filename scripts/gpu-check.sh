#!/usr/bin/env bash
# The whole GPU check in one device call (under 8 minutes): finds NVRTC, runs the
# prebuilt GPU tests of nrpt-cuda (parity with the CPU engine) and of the host's CUDA
# backend (a CPU run and a CUDA run of the same job, bit for bit), the CPU-side kernel
# checks, the throughput bench, then `nrpt bench --backend cuda` for a few E, writing
# logs and JSON to $OUT and printing a short table last.
# Build the binaries first, on a machine with Rust: scripts/gpu-build.sh (gpu-bin/).
# Usage (repository root): scripts/gpu-check.sh [BIN_DIR]   (default gpu-bin)
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
# Everything must be over by then (seconds from start), leaving the device call's
# 8-minute budget some slack for the start and the transfers.
deadline=430

bin=${1:-${GPU_BIN:-gpu-bin}}
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
log="$out/gpu-check.log"
: >"$log"
say() { printf '%s\n' "$*" | tee -a "$log"; }
elapsed() { echo $(($(date +%s) - start)); }
# Seconds a step may take: at most $1, and never past the deadline minus $2 (the time
# kept for the later steps); at least 10.
budget() {
    local left=$((deadline - $(elapsed) - $2))
    [ "$left" -gt "$1" ] && left=$1
    [ "$left" -lt 10 ] && left=10
    echo "$left"
}

if [ ! -x "$bin/gpu_bench" ]; then
    say "error: $bin/gpu_bench not found: run scripts/gpu-build.sh and carry $bin/"
    exit 2
fi

# NVRTC: the toolkit's or a Python wheel's; cudarc loads libnvrtc.so.13 by name.
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so\.13'; then
    nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt / -name 'libnvrtc.so.13*' \
        -not -path '/proc/*' 2>/dev/null | head -n 1)
    if [ -z "$nvrtc" ]; then
        nvrtc=$(find / -name 'libnvrtc.so*' -not -path '/proc/*' 2>/dev/null | head -n 1)
    fi
    if [ -n "$nvrtc" ]; then
        export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    say "NVRTC: ${nvrtc:-not found}"
fi
ptxas_bin=$(command -v ptxas || find /usr/local/cuda*/bin -name ptxas 2>/dev/null | head -n 1)
[ -n "${ptxas_bin:-}" ] && export PATH="$(dirname "$ptxas_bin"):$PATH"
nvidia-smi -L 2>&1 | tee -a "$log" || true

status=0
# GPU parity first (the point of the call), then the CPU-side checks, then ptxas.
# Time kept back for what follows each test: the benches (about 3 minutes).
for t in gpu cuda_backend host_parity nvrtc; do
    exe="$bin/tests/$t"
    [ -x "$exe" ] || { say "missing test executable $exe"; status=1; continue; }
    say "==> test $t"
    if ! timeout "$(budget 150 180)" "$exe" --test-threads=1 --nocapture \
        >"$out/test-$t.log" 2>&1; then
        say "FAILED: $t (see $out/test-$t.log)"
        status=1
    fi
    grep -E 'parity ok|skipped|on NVIDIA|as expected|test result|panicked|registers' \
        "$out/test-$t.log" | tee -a "$log"
done

say "==> bench (gpu_bench)"
if ! timeout "$(budget 300 90)" "$bin/gpu_bench" --out "$out" >"$out/bench.log" 2>&1; then
    say "bench failed or timed out (see $out/bench.log)"
    status=1
fi

# `nrpt bench --backend cuda`: the host engine end to end. The flag is new; if this
# binary does not have it yet, the failure is reported and does not fail the check.
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }
nrpt_rows=()
if [ -x "$bin/nrpt" ]; then
    for spec in "256 2000" "4096 2000" "65536 1000"; do
        read -r e n <<<"$spec"
        say "==> nrpt bench --backend cuda --ensembles $e --chains 16 --iters $n --json"
        f="$out/nrpt-bench-E$e.json"
        if timeout "$(budget 40 0)" "$bin/nrpt" bench --backend cuda --ensembles "$e" \
            --chains 16 --iters "$n" --json >"$f" 2>"$out/nrpt-bench-E$e.err"; then
            line=$(grep -m1 '^{' "$f")
            nrpt_rows+=("$(printf '%-8s %8s %4s %6s %9s %14s' \
                "$(field backend <<<"$line")" "$e" 16 "$n" \
                "$(field seconds <<<"$line")" "$(field chain_steps_per_sec <<<"$line")")")
        else
            why=$(head -n 1 "$out/nrpt-bench-E$e.err")
            say "nrpt bench (E = $e) failed (tolerated): ${why:-no message}"
            nrpt_rows+=("$(printf '%-8s %8s %4s %6s %s' cuda "$e" 16 "$n" \
                "failed: ${why:0:60}")")
        fi
    done
else
    say "no $bin/nrpt: nrpt bench skipped (rebuild with scripts/gpu-build.sh)"
fi

say "elapsed $(elapsed) s, status $status"
# The short tables last.
sed -n '/^kernel /,$p' "$out/bench.log"
if [ "${#nrpt_rows[@]}" -gt 0 ]; then
    echo
    printf '%-8s %8s %4s %6s %9s %14s\n' backend E P iters seconds chain-steps/s
    printf '%s\n' "${nrpt_rows[@]}"
fi
exit "$status"
