#!/usr/bin/env bash
# Tests of scripts/gpu-check.sh that need no GPU (seconds): its verdicts
# (scripts/gpu-check-lib.sh) on captured outputs, its summary
# (scripts/gpu-check-summary.py) on made-up step logs, and the check itself on this
# machine, where it must fail loudly within seconds. scripts/test.sh runs it.
# Usage: scripts/test-gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu-check-lib.sh

failures=0
checks=0
# expect NAME WANTED ACTUAL: ACTUAL's verdict (before the tab) must be WANTED.
expect() {
    checks=$((checks + 1))
    local got=${3%%$'\t'*}
    if [ "$got" != "$2" ]; then
        printf 'FAIL %s: wanted %s, got %s (%s)\n' "$1" "$2" "$got" "${3#*$'\t'}" >&2
        failures=$((failures + 1))
    fi
}
work=$(mktemp -d "${TMPDIR:-/tmp}/nrpt-test-gpu-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
# log NAME: a captured output on stdin into $work/NAME, whose path it prints.
log() { cat >"$work/$1"; echo "$work/$1"; }

# ---------------------------------------------------------------- sanitizer
# The device machine's sandbox: the sanitizer refuses the device, the program meets
# error 999, and the sanitizer exits non-zero (here 1, and 86 under --error-exitcode).
f=$(log sandbox-1 <<'EOF'
========= COMPUTE-SANITIZER
========= Error: Device not supported. Please refer to the "Supported Devices" section of the sanitizer documentation
Error: the CUDA driver failed while creating a context: DriverError(CUDA_ERROR_UNKNOWN, "unknown error")
========= Target application returned an error
========= ERROR SUMMARY: 1 error
EOF
)
expect "sandbox: not supported, exit 86" "not run" "$(sanitizer_verdict "$f" 86)"
expect "sandbox: not supported, exit 1" "not run" "$(sanitizer_verdict "$f" 1)"
f=$(log sandbox-2 <<'EOF'
========= COMPUTE-SANITIZER
========= Program hit CUDA_ERROR_UNKNOWN (error 999) due to "unknown error" on CUDA API call to cuInit.
Error: no CUDA driver: the driver reports no CUDA device
========= ERROR SUMMARY: 1 error
EOF
)
expect "sandbox: error 999" "not run" "$(sanitizer_verdict "$f" 86)"
f=$(log sandbox-3 <<'EOF'
========= Internal Sanitizer Error: The Sanitizer failed to initialize
EOF
)
expect "sandbox: failed to initialize, exit 255" "not run" "$(sanitizer_verdict "$f" 255)"
# A clean run.
f=$(log clean <<'EOF'
========= COMPUTE-SANITIZER
device: NVIDIA H200 (cc 9.0, 132 SMs, 143771 MiB), driver CUDA 13.0, kernels: precompiled PTX
tiny: 2d persistent                      E = 4, P = 8, 20 iterations: ok (persistent kernel: true)
tiny: every case ok
========= ERROR SUMMARY: 0 errors
EOF
)
expect "clean run" ok "$(sanitizer_verdict "$f" 0)"
# Findings are failures, whatever else the log says.
f=$(log invalid <<'EOF'
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at step_2d+0x1a0
=========     by thread (3,0,0) in block (0,0,0)
========= ERROR SUMMARY: 1 error
EOF
)
expect "memcheck finding" FAILED "$(sanitizer_verdict "$f" 86)"
f=$(log race <<'EOF'
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at persistent_2d+0x200
=========     and Read access at persistent_2d+0x210 [16 hazards]
tiny: every case ok
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
EOF
)
expect "racecheck finding" FAILED "$(sanitizer_verdict "$f" 86)"
f=$(log crash <<'EOF'
========= COMPUTE-SANITIZER
thread 'main' panicked at cuda/examples/gpu_bench.rs:10:5:
index out of bounds
========= Target application returned an error
========= ERROR SUMMARY: 0 errors
EOF
)
expect "the program fails under it" FAILED "$(sanitizer_verdict "$f" 101)"
f=$(log slow <<'EOF'
========= COMPUTE-SANITIZER
tiny: 2d persistent                      E = 4, P = 8, 20 iterations: ok (persistent kernel: true)
EOF
)
expect "timed out" "not run" "$(sanitizer_verdict "$f" 124)"
f=$(log no-ok <<'EOF'
========= COMPUTE-SANITIZER
========= ERROR SUMMARY: 0 errors
EOF
)
expect "exit 0 without every case ok" FAILED "$(sanitizer_verdict "$f" 0)"

# ---------------------------------------------------------------- benches
expect "bench ok" ok "$(bench_verdict 0 100 1 '')"
expect "bench crashes (SIGSEGV)" FAILED "$(bench_verdict 139 100 0 'Segmentation fault')"
expect "bench fails" FAILED "$(bench_verdict 1 100 0 'Error: launching persistent_2d')"
expect "bench times out" FAILED "$(bench_verdict 124 100 0 '')"
expect "bench writes nothing" FAILED "$(bench_verdict 0 100 0 '')"
checks=$((checks + 1))
[ "$(exit_words 139)" = "killed by signal 11 (exit 139)" ] ||
    { echo "FAIL exit_words 139: $(exit_words 139)" >&2; failures=$((failures + 1)); }

# ---------------------------------------------------------------- half-precision runs
# `nrpt --json run --target sum-modes --dim 256 -e 256 -p 8 -n 2000 --thin 0 --precision P
# --backend cuda` lines: an f32 run's line as the command prints it (captured on the CPU),
# with the engine and the precision a GPU run has.
run_line() { # BACKEND PRECISION ROUND_TRIPS NONFINITE
    local p=''
    [ "$2" != f32 ] && p="\"precision\":\"$2\","
    printf '{"config":{"target":"sum-modes","dim":256,"chains":8,"auto_chains":false,"ensembles":256,"iterations":2000,"window":"opt","rule":"buffered","swap_rate":0.4,"eta_min":0.003,"eta_max":0.6,"explorer":"sgd","explorer_steps":1,"leapfrog_steps":10,"momentum":0.9,"buffer":4.0,"noise":2.0,"adapt_ladder":true,"adapt_buffer":true,"gamma_a":50.0,"gamma_alpha":0.8,"gamma_b":500.0,"buffer_scale":1.0,"seed":0,"preset":"paper","hidden":[64],"batch":64,"prior_sigma":1.0,%s"thin":0,"warmup":100,"out":"/tmp/run"},"backend":"%s","math":"exact","window":5,"iterations_run":2000,"round_trips_per_1000":%s,"round_trips_per_1000_authors":2.5,"restarts_per_1000":0.0,"model_round_trips_per_1000":93.0232558139535,"nonfinite_energies":%s,"final_buffer_mean":0.0,"accuracy":null,"classifier":null,"warnings":[],"seconds":0.41,"chain_steps_per_sec":9.98e9,"memory_estimate_bytes":16931040,"peak_memory_bytes":19357696}\n' \
        "$p" "$1" "$3" "$4"
}
expect "bf16 on the GPU" ok "$(precision_verdict 0 15 bf16 "$(run_line cuda bf16 12.25 0)" '')"
expect "f16 on the GPU" ok "$(precision_verdict 0 15 f16 "$(run_line cuda f16 11.5 0)" '')"
expect "f16 overflows" warning "$(precision_verdict 0 15 f16 "$(run_line cuda f16 3.0 512)" '')"
expect "ran on the CPU" FAILED "$(precision_verdict 0 15 bf16 "$(run_line cpu bf16 12.25 0)" '')"
expect "stored f32" FAILED "$(precision_verdict 0 15 bf16 "$(run_line cuda f32 12.25 0)" '')"
expect "the other half" FAILED "$(precision_verdict 0 15 bf16 "$(run_line cuda f16 12.25 0)" '')"
expect "no round-trip rate" FAILED "$(precision_verdict 0 15 f16 "$(run_line cuda f16 '"NaN"' 0)" '')"
expect "refused" FAILED "$(precision_verdict 2 15 bf16 '' 'error: precision (--precision): bf16/f16 state storage is a GPU option; the CPU engine keeps f32 states')"
expect "crashed" FAILED "$(precision_verdict 139 15 f16 '' 'Segmentation fault')"
expect "timed out" FAILED "$(precision_verdict 124 15 f16 '' '')"
expect "printed nothing" FAILED "$(precision_verdict 0 15 bf16 '' '')"
checks=$((checks + 1))
[ "$(json_field backend <<<"$(run_line cuda bf16 1 0)")" = cuda ] &&
    [ "$(json_field precision <<<"$(run_line cuda bf16 1 0)")" = bf16 ] &&
    [ -z "$(json_field precision <<<"$(run_line cuda f32 1 0)")" ] ||
    { echo "FAIL json_field on a run line" >&2; failures=$((failures + 1)); }

# ---------------------------------------------------------------- tests
expect "tests pass" ok "$(test_verdict 0 60 12 0 0 9 '' '')"
expect "a test skips on the GPU" warning "$(test_verdict 0 60 12 0 1 9 '' 'x: skipped: y')"
expect "a test fails" FAILED "$(test_verdict 101 60 11 1 0 9 'assertion failed' '')"
expect "tests time out" FAILED "$(test_verdict 124 60 3 0 0 60 '' '')"
expect "no test ran" FAILED "$(test_verdict 0 60 0 0 0 1 '' '')"

# ---------------------------------------------------------------- kernels
k() {
    checks=$((checks + 1))
    local got
    got=$(kernels_choice "$2" "$3" "$4")
    [ "$got" = "$1" ] || { printf 'FAIL kernels_choice %s %s %s: %s, not %s\n' "$2" "$3" "$4" "$got" "$1" >&2; failures=$((failures + 1)); }
}
k ptx auto "NVRTC 13.0" 13.0
k ptx auto "NVRTC 12.8" 13.0
k ptx-or-nvrtc auto "NVRTC 13.1" 13.0
k ptx-or-nvrtc auto "" 13.0
k ptx auto "NVRTC 13.0" ""
k nvrtc nvrtc "NVRTC 13.0" 13.0
k ptx ptx "" 13.0

# b DEADLINE ELAPSED MAX RESERVE WANTED
b() {
    checks=$((checks + 1))
    local got
    got=$(deadline=$1 SECONDS=$2 budget "$3" "$4")
    [ "$got" = "$5" ] || { printf 'FAIL budget (deadline %s, at %s s, max %s, reserve %s): %s, not %s\n' "$@" "$got" >&2; failures=$((failures + 1)); }
}
b 300 0 60 200 60
b 300 100 120 150 97
b 300 200 60 50 47
b 300 294 60 0 0

# ---------------------------------------------------------------- summary
# Made-up step logs as gpu-check.sh leaves them; the summary must carry every mode's
# figure with its own target, the sanitizer as run / not run, and no "best of modes".
tmp=$work/summary
mkdir -p "$tmp/logs"
printf 'driver\tok\tNVIDIA H200\nsanitizer memcheck\tnot run\tthe sanitizer cannot run here (exit 86): Device not supported\nsanitizer racecheck\tok\tno errors\ntest gpu\tok\t12 passed in 9 s\nprecision bf16\tok\tbf16 states on the GPU\nprecision f16\twarning\t512 energies were not finite\n' >"$tmp/steps.tsv"
run_line cuda bf16 12.25 0 >"$tmp/logs/run-bf16.json"
run_line cuda f16 3.0 512 >"$tmp/logs/run-f16.json"
printf 'machine.gpu\tNVIDIA H200\nkernels.origin\tprecompiled PTX\n' >"$tmp/facts.tsv"
printf 'test philox ... ok\ntest timing ... ok\n' >"$tmp/logs/test-gpu.log"
cat >"$tmp/logs/gpu_bench.json" <<'JSON'
{"limits": {"copy_memcpy_d2d_gbs": 4000.0, "fp32_measured_gflops": 60000.0},
 "timing": "CUDA events",
 "figures": [
  {"name": "persistent_2d_exact_chain_steps_per_s", "math": "exact", "what": "2D exact", "value": 1.5e10, "target": 2e10, "ratio_to_target": 0.75, "met": false, "note": ""},
  {"name": "persistent_2d_fast_chain_steps_per_s", "math": "fast", "what": "2D fast", "value": 3e10, "target": 6e10, "ratio_to_target": 0.5, "met": false, "note": ""}]}
JSON
cat >"$tmp/logs/mlp.json" <<'JSON'
{"backend": "cuda", "gflops": 12000.0, "math": "exact", "modes": [
 {"backend": "cuda", "math": "exact", "gflops": 12000.0, "efficiency": 0.2, "repetitions": 3, "iterations": 300, "device_seconds": 0.1, "end_to_end_seconds": 2.0, "machine_gflops": 60000.0},
 {"backend": "cuda", "math": "fast", "gflops": 21000.0, "efficiency": 0.35, "target_share_of_peak": 0.3, "ratio_to_target": 1.1667, "repetitions": 3, "iterations": 300, "device_seconds": 0.06, "end_to_end_seconds": 1.9, "machine_gflops": 60000.0}]}
JSON
python3 scripts/gpu-check-summary.py "$tmp" "$tmp/gpu-check.json" ok 42 300 "$tmp" >"$tmp/table.txt"
checks=$((checks + 1))
if ! python3 - "$tmp/gpu-check.json" "$tmp/table.txt" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read()
by = {f["name"]: f for f in s["figures"]}
assert by["persistent_2d_exact_chain_steps_per_s"]["target"] == 2e10, by
assert by["persistent_2d_fast_chain_steps_per_s"]["target"] == 6e10, by
assert by["mlp_exact_share_of_fp32_peak"]["target"] is None, by
fast = by["mlp_fast_share_of_fp32_peak"]
assert fast["target"] == 0.3 and fast["met"] is True, fast
assert abs(fast["ratio_to_target"] - 0.35 / 0.3) < 1e-9, fast
assert s["sanitizer"]["memcheck"]["run"] is False, s["sanitizer"]
assert s["sanitizer"]["memcheck"]["verdict"] == "not run", s["sanitizer"]
assert s["sanitizer"]["racecheck"]["run"] is True, s["sanitizer"]
assert s["tests"]["gpu"]["passed"] == 2 and s["tests"]["gpu"]["verdict"] == "ok", s["tests"]
assert "memcheck not run" in table and "racecheck run, ok" in table, table
prec = s["precision"]
assert prec["bf16"]["verdict"] == "ok" and prec["bf16"]["backend"] == "cuda", prec
assert prec["bf16"]["chain_steps_per_sec"] == 9.98e9 and prec["bf16"]["round_trips_per_1000"] == 12.25, prec
assert prec["f16"]["verdict"] == "warning" and prec["f16"]["nonfinite_energies"] == 512, prec
assert "states: bf16 ok (9.980e+09 chain-steps/s), f16 warning" in table, table
PY
    echo "FAIL the summary of made-up logs (above)" >&2
    failures=$((failures + 1))
fi
# Nothing measured: a placeholder for every mode, unmeasured.
rm -f "$tmp/logs/gpu_bench.json" "$tmp/logs/mlp.json" "$tmp/logs/run-bf16.json" "$tmp/logs/run-f16.json"
python3 scripts/gpu-check-summary.py "$tmp" "$tmp/empty.json" failed 3 300 "$tmp" >/dev/null
checks=$((checks + 1))
if ! python3 - "$tmp/empty.json" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))
names = [f["name"] for f in s["figures"]]
for m in ("exact", "fast"):
    assert "persistent_2d_%s_chain_steps_per_s" % m in names, names
    assert "mlp_%s_share_of_fp32_peak" % m in names, names
assert all(f["value"] is None for f in s["figures"]), s["figures"]
assert s["precision"]["bf16"]["chain_steps_per_sec"] is None, s["precision"]
PY
    echo "FAIL the summary without figures (above)" >&2
    failures=$((failures + 1))
fi

# ---------------------------------------------------------------- the check, here
# No GPU here (or no bundle): it must fail, loudly, within seconds, and still write
# its summary.
checks=$((checks + 1))
out=$work/check-out
start=$SECONDS
rc=0
OUT=$out timeout 60 scripts/gpu-check.sh "$work/no-such-bundle" >"$work/check.txt" 2>&1 || rc=$?
took=$((SECONDS - start))
if [ "$rc" != 1 ] || [ "$took" -gt 20 ] || ! grep -q '"status": "failed"' "$out/gpu-check.json" ||
    ! grep -q 'FAILED' "$work/check.txt"; then
    echo "FAIL gpu-check.sh without a bundle: exit $rc after $took s (wanted 1 within 20 s):" >&2
    tail -n 20 "$work/check.txt" >&2
    failures=$((failures + 1))
fi

if [ "$failures" != 0 ]; then
    echo "test-gpu-check: $failures of $checks checks failed" >&2
    exit 1
fi
echo "test-gpu-check: $checks checks passed"
