# shellcheck shell=bash
# The verdicts of scripts/gpu-check.sh, as functions of what a step left behind (its
# exit status, its log), so that scripts/test-gpu-check.sh can check them on captured
# outputs without a GPU. Each prints one line: VERDICT<TAB>DETAIL, where VERDICT is
# ok, FAILED, warning or "not run". Sourced; defines functions only.

# budget MAX RESERVE: seconds a step may take: at most MAX, and no more than what is
# left before $deadline (seconds since the start, $SECONDS) minus RESERVE (kept for the
# later steps), but always half of what is left (the earlier steps matter more); 0 when
# fewer than 5 seconds are left.
budget() {
    # shellcheck disable=SC2154 # deadline: set by the caller (gpu-check.sh, the tests)
    local left=$((deadline - SECONDS - 5)) b
    b=$((left - $2))
    [ "$b" -lt $((left / 2)) ] && b=$((left / 2))
    [ "$b" -gt "$1" ] && b=$1
    [ "$b" -lt 5 ] && b=0
    echo "$b"
}

# timed_out RC: whether RC is what `timeout` (or its -k kill) gives.
timed_out() { [ "$1" = 124 ] || [ "$1" = 137 ]; }

# What compute-sanitizer prints when it cannot run on this machine (a sandbox without
# its debugger interface, gVisor, a GPU it does not know), rather than a finding: its
# own "not supported" messages, and error 999 (CUDA_ERROR_UNKNOWN, "unknown error"),
# which the application then meets at its first CUDA call.
SANITIZER_UNSUPPORTED='[Nn]ot [Ss]upported|error 999|\(999\)|CUDA_ERROR_UNKNOWN|cudaErrorUnknown|[Uu]nknown error|[Ff]ailed to (initialize|attach|launch)|Internal [Ee]rror'
# A finding of memcheck or racecheck (a real error of the kernels).
SANITIZER_FINDING='^========= +(Invalid |(Error|Warning): [A-Za-z ]*[Rr]ace |.*[Hh]azard|Uninitialized|Misaligned|Out-of-range|Address 0x[0-9a-f]+ is out of bounds|Leaked )'

# sanitizer_verdict LOG RC: the verdict of `compute-sanitizer --error-exitcode 86
# gpu_bench --tiny` from its output LOG and exit status RC. A finding is FAILED; then
# the sanitizer's "cannot run here" messages are "not run" whatever the exit status
# (they are matched before it); then a timeout is "not run"; a clean run of every case
# is ok; anything else (the program failed under it) is FAILED.
sanitizer_verdict() {
    local f=$1 rc=$2 errors line
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$f" | tail -n 1)
    line=$(grep -m1 -E "$SANITIZER_FINDING" "$f" | cut -c1-160 || true)
    if [ -n "$line" ]; then
        printf 'FAILED\t%s errors: %s\n' "${errors:-some}" "$line"
        return
    fi
    line=$(grep -m1 -E "$SANITIZER_UNSUPPORTED" "$f" | cut -c1-160 || true)
    if [ -n "$line" ]; then
        printf 'not run\tthe sanitizer cannot run here (exit %s): %s\n' "$rc" "$line"
        return
    fi
    if timed_out "$rc"; then
        printf 'not run\ttimed out (exit %s)\n' "$rc"
    elif [ "$rc" = 0 ] && [ "${errors:-0}" = 0 ] && grep -q 'every case ok' "$f"; then
        printf 'ok\tno errors%s\n' "${errors:+ (ERROR SUMMARY: $errors errors)}"
    elif [ "$rc" = 86 ] || [ "${errors:-0}" != 0 ]; then
        printf 'FAILED\t%s errors (exit %s): %s\n' "${errors:-some}" "$rc" \
            "$(grep -m1 '^=========' "$f" | cut -c1-160)"
    else
        printf 'FAILED\tgpu_bench --tiny failed under it (exit %s): %s\n' "$rc" \
            "$(grep -m1 -iE 'error|panicked' "$f" | cut -c1-160)"
    fi
}

# exit_words RC: "exit N", or "killed by signal S" for 128 + S.
exit_words() {
    if [ "$1" -gt 128 ] 2>/dev/null && [ "$1" -lt 160 ]; then
        echo "killed by signal $(($1 - 128)) (exit $1)"
    else
        echo "exit $1"
    fi
}

# bench_verdict RC BUDGET OUTPUT_OK FIRST_ERROR: a bench step (gpu_bench, nrpt bench)
# from its exit status, its time budget, whether it wrote what it should (1/0) and the
# first error line of its log. A bench that crashes, fails, times out or writes nothing
# is FAILED: the figures are what the check is for.
bench_verdict() {
    local rc=$1 b=$2 ok=$3 first=$4
    if [ "$rc" = 0 ] && [ "$ok" = 1 ]; then
        printf 'ok\t\n'
    elif timed_out "$rc"; then
        printf 'FAILED\ttimed out after %s s\n' "$b"
    elif [ "$rc" = 0 ]; then
        printf 'FAILED\texit 0 but no output: %s\n' "$first"
    else
        printf 'FAILED\t%s: %s\n' "$(exit_words "$rc")" "$first"
    fi
}

# json_field NAME: the value of the JSON field NAME in the one-line JSON on stdin (a
# string without its quotes, a number, true/false/null; the last one when the line has
# several), or nothing.
json_field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p" | head -n 1; }

# precision_verdict RC BUDGET PRECISION LINE FIRST_ERROR: a run with half-precision
# states, `nrpt --json run --precision PRECISION --backend cuda`, from its exit status,
# its time budget, the JSON line it printed (empty when none) and the first line of its
# stderr. ok when it ran on the GPU, its configuration says PRECISION and its round-trip
# rate is a number; a warning when energies were not finite (f16's range is ±65504);
# FAILED when it crashed, failed, timed out, printed nothing, ran on another engine or
# stored its states otherwise.
precision_verdict() {
    local rc=$1 b=$2 p=$3 line=$4 first=$5 v backend stored rate speed nonfinite
    v=$(bench_verdict "$rc" "$b" "$([ -n "$line" ] && echo 1 || echo 0)" "$first")
    if [ "${v%%$'\t'*}" != ok ]; then
        printf '%s\n' "$v"
        return
    fi
    backend=$(json_field backend <<<"$line")
    stored=$(json_field precision <<<"$line")
    rate=$(json_field round_trips_per_1000 <<<"$line")
    speed=$(json_field chain_steps_per_sec <<<"$line")
    nonfinite=$(json_field nonfinite_energies <<<"$line")
    if [ "$backend" != cuda ]; then
        printf 'FAILED\t--backend cuda ran on %s\n' "${backend:-an unnamed engine}"
    elif [ "$stored" != "$p" ]; then
        printf 'FAILED\tthe run stored %s states, not %s\n' "${stored:-f32}" "$p"
    elif ! [[ $rate =~ ^[0-9] ]]; then
        printf 'FAILED\tno round-trip rate (%s)\n' "${rate:-missing}"
    elif [ "${nonfinite:-0}" != 0 ]; then
        printf 'warning\t%s energies were not finite (%s round trips per 1000 iterations)\n' "$nonfinite" "$rate"
    else
        printf 'ok\t%s states on the GPU: %s round trips per 1000 iterations, %s chain-steps/s\n' "$p" "$rate" "$speed"
    fi
}

# test_verdict RC BUDGET PASSED FAILED SKIPPED SECONDS FIRST_PANIC FIRST_SKIP: one test
# executable run under NRPT_REQUIRE_GPU=1. A skip on a machine where the GPU works is
# a warning (every GPU test must run there).
test_verdict() {
    local rc=$1 b=$2 passed=$3 failed=$4 skipped=$5 secs=$6 panic=$7 skip=$8
    if timed_out "$rc"; then
        printf 'FAILED\ttimed out after %s s (%s passed before)\n' "$b" "$passed"
    elif [ "$rc" != 0 ]; then
        printf 'FAILED\t%s, %s failed, %s passed: %s\n' "$(exit_words "$rc")" "$failed" "$passed" "$panic"
    elif [ "$passed" = 0 ]; then
        printf 'FAILED\tno test ran (exit 0)\n'
    elif [ "$skipped" != 0 ]; then
        printf 'warning\t%s passed, but %s skipped: %s\n' "$passed" "$skipped" "$skip"
    else
        printf 'ok\t%s passed in %s s\n' "$passed" "$secs"
    fi
}

# ver_le A B: version A <= version B.
ver_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]; }

# kernels_choice MODE PTX_COMPILER DRIVER_CUDA: where the kernels come from for
# --kernels MODE before any NVRTC is looked for: "ptx" (the carried PTX, complete,
# written by NVRTC PTX_COMPILER, e.g. "NVRTC 13.0", no newer than the driver's CUDA),
# "nvrtc" (look for NVRTC) or "ptx-or-nvrtc" (auto, but the PTX does not fit: look
# for NVRTC, and fail without one). PTX_COMPILER is empty when the carried PTX is
# missing or incomplete.
kernels_choice() {
    local mode=$1 compiler=$2 driver=$3 v
    case $mode in
    nvrtc) echo nvrtc; return ;;
    ptx) echo ptx; return ;;
    esac
    if [ -n "$compiler" ]; then
        v=${compiler#NVRTC }
        if [ -z "$driver" ] || [ "$v" = "$compiler" ] || ver_le "$v" "$driver"; then
            echo ptx
            return
        fi
    fi
    echo ptx-or-nvrtc
}
