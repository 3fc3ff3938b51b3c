#!/usr/bin/env bash
# The whole GPU check in one device call, done within 300 s of wall time (a 6-minute
# window with slack; each step has a budget, printed with it): checks the carried
# binaries (files, executable bits, `ldd`), the driver and the device (nvidia-smi;
# every external probe under `timeout`), takes the kernels from the carried PTX (or
# NVRTC, when asked or when no carried PTX fits), runs the GPU parity tests of nrpt-cuda and of the host's CUDA backend
# (2D toy and classifier) with NRPT_REQUIRE_GPU=1 (a missing driver, device or NVRTC
# fails them, never a skip), the throughput bench with the device's own limits (copy
# bandwidth, FP32 peak; every figure timed by CUDA events, the median of 3 runs of at
# least 300 iterations, each math mode against its own target), compute-sanitizer
# memcheck and racecheck on a tiny case (run, or "not run" where the machine has no
# sanitizer or the sandbox refuses it), `nrpt bench --backend cuda` (the 2D toy and
# the MLP), a run with bf16 and one with f16 states (`--precision`), and last the
# CPU-side checks. It writes three files to
# $OUT (default ./gpu-out):
#   gpu-check.json          the summary: status, every step's verdict, each test's
#                           verdict, the figures with their targets and ratios
#   gpu-check.log           the full log (this script's lines and every step's output)
#   gpu-check-logs.tar.gz   each step's log and JSON separately
# and prints a short table last.
#
# Build the binaries first, here: scripts/gpu-build.sh (gpu-bin/), carry gpu-bin/.
# Usage (repository root): scripts/gpu-check.sh [BIN_DIR] [--kernels auto|nvrtc|ptx]
#   BIN_DIR      default gpu-bin
#   --kernels    auto (default): the carried PTX (BIN_DIR/ptx, through
#                NRPT_CUDA_PTX_DIR) when it is complete and its NVRTC is no newer than
#                the driver, else NVRTC; nvrtc: NVRTC or fail (slower: every process
#                compiles every module); ptx: the carried PTX, NVRTC never used
# Exit status: 0 when every step passed, 1 when one failed, 2 for a usage error.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS=0
deadline=${NRPT_GPU_CHECK_DEADLINE:-300}
# The verdicts (budget, sanitizer_verdict, bench_verdict, precision_verdict,
# test_verdict, kernels_choice), tested without a GPU by scripts/test-gpu-check.sh.
source scripts/gpu-check-lib.sh

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
bin=gpu-bin
kernels_mode=auto
while [ $# -gt 0 ]; do
    case $1 in
    --kernels) kernels_mode=${2:-}; shift 2 || shift ;;
    --kernels=*) kernels_mode=${1#--kernels=}; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
    *) bin=$1; shift ;;
    esac
done
case $kernels_mode in
auto | nvrtc | ptx) ;;
*) echo "gpu-check: --kernels takes auto, nvrtc or ptx (not '$kernels_mode')" >&2; exit 2 ;;
esac

out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/gpu-check.log
summary=$out/gpu-check.json
archive=$out/gpu-check-logs.tar.gz
rm -f "$log" "$summary" "$archive"
: >"$log"
# The shell's own complaints go to the full log too.
exec 2> >(tee -a "$log" >&2)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nrpt-gpu-check.XXXXXX")
logs=$tmp/logs # per-step logs and JSON: archived at the end
mkdir -p "$logs" "$tmp/nvrtc-lib"
steps=$tmp/steps.tsv # step <TAB> verdict <TAB> detail
facts=$tmp/facts.tsv # key <TAB> value
: >"$steps"
: >"$facts"
py=$(command -v python3 || true)

say() { printf '%s\n' "$*" | tee -a "$log"; }
fact() { printf '%s\t%s\n' "$1" "$2" >>"$facts"; }
# record STEP VERDICT DETAIL: VERDICT is ok, FAILED, warning, n/a or "not run".
record() {
    printf '%s\t%s\t%s\n' "$1" "$2" "$(printf '%s' "$3" | tr '\t\n' '  ')" >>"$steps"
    say "    $1: $2${3:+ — $3}"
}
# attach NAME FILE: the step's full output into the full log.
attach() {
    {
        printf -- '----- %s (%s) -----\n' "$1" "${2#"$tmp"/}"
        cat "$2" 2>/dev/null || true
        printf -- '----- end of %s -----\n' "$1"
    } >>"$log"
}
# First panic message of a libtest log, shortened.
first_panic() {
    awk '/panicked at/ { getline; print; exit }' "$1" | cut -c1-220
}

# The summary JSON and the table, from steps.tsv, facts.tsv and the step logs (Python);
# without Python, a smaller JSON and the steps alone. (It and finish run from the EXIT
# trap, which shellcheck does not follow.)
# shellcheck disable=SC2317
summarize() {
    local status=$1
    if [ -n "$py" ]; then
        "$py" scripts/gpu-check-summary.py "$tmp" "$summary" "$status" "$SECONDS" "$deadline" "$out" && return 0
        echo "gpu-check: the Python summary failed; a plain one follows" | tee -a "$log" >&2
    fi
    # Without Python (or if it failed): the steps as JSON strings, escaped by sed.
    local first=1
    esc() { sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'; }
    {
        printf '{\n "status": "%s",\n "elapsed_s": %s,\n "deadline_s": %s,\n "steps": [\n' \
            "$status" "$SECONDS" "$deadline"
        while IFS=$'\t' read -r s v d; do
            [ "$first" = 1 ] || printf ',\n'
            first=0
            printf '  {"step": "%s", "verdict": "%s", "detail": "%s"}' \
                "$(esc <<<"$s")" "$(esc <<<"$v")" "$(esc <<<"$d")"
        done <"$steps"
        printf '\n ],\n "note": "no python3 here: test verdicts and figures are in the log"\n}\n'
    } >"$summary"
    echo
    echo "======== nrpt GPU check: ${status^^} ($SECONDS s of $deadline s) ========"
    while IFS=$'\t' read -r s v d; do printf '%-24s %-8s %s\n' "$s" "$v" "${d:0:110}"; done <"$steps"
    echo "in $out: gpu-check.json (summary), gpu-check.log (full log), gpu-check-logs.tar.gz (step logs)"
}

finished=0
completed=0 # set where the script ends on purpose; anything else is a failure of its own
# shellcheck disable=SC2317
finish() {
    local rc=$?
    [ "$finished" = 1 ] && return
    finished=1
    set +e
    if [ "$completed" != 1 ]; then
        record script FAILED "stopped early (exit $rc${err_line:+, at line $err_line}); see gpu-check.log"
    fi
    local status=ok
    grep -q $'\tFAILED\t' "$steps" && status=failed
    say "elapsed ${SECONDS} s (deadline ${deadline} s), status $status"
    cp "$steps" "$facts" "$logs/" 2>/dev/null
    tar -czf "$archive" -C "$logs" . 2>>"$log" || say "could not write $archive"
    summarize "$status" 2>&1 | tee -a "$log"
    rm -rf "$tmp"
    [ "$status" = ok ] && exit 0 || exit 1
}
err_line=
trap 'err_line=$LINENO' ERR
trap finish EXIT
trap 'exit 143' TERM INT # killed from outside: the summary is still written

say "nrpt GPU check: $(date -u +%Y-%m-%dT%H:%M:%SZ), bundle $bin, kernels $kernels_mode, deadline ${deadline} s"
say "output: $out (3 files)"

# ---------------------------------------------------------------- carried binaries
say "==> carried binaries ($bin)"
if [ ! -d "$bin" ]; then
    record binaries FAILED "$bin/ is not here: build it with scripts/gpu-build.sh on the Rust machine and name \"$bin\" in the device call's carry"
    completed=1
    exit 1
fi
problems=()
for f in gpu_bench nrpt tests/gpu tests/cuda_backend tests/cuda_classifier tests/host_parity tests/nvrtc; do
    p=$bin/$f
    if [ ! -f "$p" ]; then
        problems+=("$f missing")
        continue
    fi
    if [ ! -x "$p" ]; then
        if chmod u+x "$p" 2>/dev/null; then
            say "    $f had lost its executable bit (restored)"
        else
            problems+=("$f is not executable")
        fi
    fi
    lddout=
    if [ "$(head -c 4 "$p" | od -An -c | tr -d ' ')" != '177ELF' ]; then
        problems+=("$f is not an ELF executable")
    elif ! lddout=$(timeout 10 ldd "$p" 2>&1); then
        grep -q 'not a dynamic executable' <<<"$lddout" ||
            problems+=("$f: ldd: $(head -n 1 <<<"$lddout")")
    elif grep -q 'not found' <<<"$lddout"; then
        problems+=("$f: $(grep 'not found' <<<"$lddout" | sed 's/^[[:space:]]*//' | tr '\n' ';')")
    fi
    printf '%s:\n%s\n' "$f" "$lddout" >>"$logs/ldd.txt"
done
attach "ldd of the binaries" "$logs/ldd.txt"
# The precompiled PTX: each manifest with its PTX file (gpu-build.sh writes every
# program nrpt-cuda loads); the kernels of kernels/ at least.
ptx_dir=
ptx_have=0
ptx_note="no $bin/ptx/"
if [ -d "$bin/ptx" ]; then
    ptx_bad=()
    for m in "$bin"/ptx/*.ptx.manifest; do
        [ -e "$m" ] || continue
        if [ -f "${m%.manifest}" ]; then
            ptx_have=$((ptx_have + 1))
        else
            ptx_bad+=("$(basename "${m%.manifest}") missing")
        fi
    done
    [ -f "$bin/ptx/nrpt_kernels.compute_90.exact.ptx.manifest" ] ||
        ptx_bad+=("nrpt_kernels.compute_90.exact missing")
    if [ "${#ptx_bad[@]}" = 0 ]; then
        ptx_dir=$(cd "$bin/ptx" && pwd)
        ptx_note="$ptx_have programs"
    else
        ptx_note="$ptx_have programs, incomplete: ${ptx_bad[*]}"
    fi
fi
if [ -f "$bin/BUILD-INFO" ]; then
    sed 's/^/    /' "$bin/BUILD-INFO" | tee -a "$log"
    fact bundle.commit "$(sed -n 's/^commit: //p' "$bin/BUILD-INFO")"
    fact bundle.built "$(sed -n 's/^built: //p' "$bin/BUILD-INFO")"
    built_sha=$(sed -n 's/^kernels sha256: //p' "$bin/BUILD-INFO")
    if [ -d kernels ] && command -v sha256sum >/dev/null; then
        here_sha=$(cd kernels && find . -maxdepth 1 -type f \( -name '*.cu' -o -name '*.cuh' \) |
            LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
        if [ -n "$built_sha" ] && [ "$here_sha" != "$built_sha" ]; then
            record "bundle vs kernels/" warning "the binaries were built from other kernel sources than this checkout's kernels/: rebuild with scripts/gpu-build.sh (the binaries run the kernels they embed)"
        fi
    fi
else
    problems+=("BUILD-INFO missing (an old bundle? rebuild with scripts/gpu-build.sh)")
fi
if [ "${#problems[@]}" -gt 0 ]; then
    record binaries FAILED "$(printf '%s; ' "${problems[@]}" | sed 's/; $//')"
else
    record binaries ok "7 executables link (ldd); PTX: $ptx_note"
fi

# ---------------------------------------------------------------- driver and device
say "==> driver and device (probes: 15-20 s each at most)"
# Python's ctypes answers without any of our binaries: the driver's CUDA version, and
# an NVRTC library's version.
probe() {
    [ -n "$py" ] || return 1
    timeout 15 "$py" - "$@" <<'PY' 2>/dev/null
import ctypes, sys
what = sys.argv[1]
if what == "driver":
    lib = ctypes.CDLL("libcuda.so.1")
    v = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(v)) != 0:
        sys.exit(1)
    print("%d.%d" % (v.value // 1000, v.value % 1000 // 10))
else:
    lib = ctypes.CDLL(sys.argv[2])
    a, b = ctypes.c_int(0), ctypes.c_int(0)
    if lib.nvrtcVersion(ctypes.byref(a), ctypes.byref(b)) != 0:
        sys.exit(1)
    print("%d.%d" % (a.value, b.value))
PY
}
driver_cuda=$(probe driver || true)
gpu_name='' driver='' cc=
if command -v nvidia-smi >/dev/null; then
    timeout -k 5 20 nvidia-smi >"$logs/nvidia-smi.txt" 2>&1 ||
        echo "(nvidia-smi failed or timed out: exit $?)" >>"$logs/nvidia-smi.txt"
    attach nvidia-smi "$logs/nvidia-smi.txt"
    q=$(timeout -k 5 15 nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader 2>/dev/null | head -n 1 || true)
    IFS=',' read -r gpu_name driver cc mem <<<"$q" || true
    trim() { sed 's/^[[:space:]]*//; s/[[:space:]]*$//' <<<"$1"; }
    gpu_name=$(trim "$gpu_name") driver=$(trim "$driver") cc=$(trim "$cc")
    [ -n "$driver_cuda" ] || driver_cuda=$(grep -o 'CUDA Version: *[0-9.]*' "$logs/nvidia-smi.txt" | grep -o '[0-9.]*$' || true)
    fact machine.memory "$(trim "${mem:-}")"
fi
fact machine.gpu "${gpu_name:-none}"
fact machine.driver "${driver:-none}"
fact machine.driver_cuda "${driver_cuda:-none}"
fact machine.compute_capability "${cc:-none}"
have_driver=0
if [ -n "$driver_cuda" ]; then
    have_driver=1
    record driver ok "${gpu_name:-a GPU} (cc ${cc:-?}), driver ${driver:-?}, CUDA $driver_cuda"
else
    record driver FAILED "no CUDA driver: libcuda.so.1 cannot be loaded$(command -v nvidia-smi >/dev/null || echo ' and nvidia-smi is absent') (is this the GPU machine?)"
fi

# ---------------------------------------------------------------- kernels: NVRTC or PTX
say "==> kernels ($kernels_mode)"
# The NVRTC library of a lib folder: libnvrtc.so.13, else libnvrtc.so, else the newest
# libnvrtc.so.N (never the .alt or builtins variants).
nvrtc_in() {
    local d=$1 f
    for f in "$d/libnvrtc.so.13" "$d/libnvrtc.so"; do
        [ -e "$f" ] && { echo "$f"; return 0; }
    done
    find "$d" -maxdepth 1 -name 'libnvrtc.so.[0-9]*' 2>/dev/null | sort -V | tail -n 1
}
nvrtc_version_of() {
    probe nvrtc "$1" && return 0
    # No Python: the version from the real file name (libnvrtc.so.13.0.88 -> 13.0).
    readlink -f "$1" | sed -n 's/.*libnvrtc\.so\.\([0-9]*\.[0-9]*\).*/\1/p' | grep . || echo unknown
}
nvrtc=
nvrtc_version=
examined=0
# try FILE: takes it if its NVRTC is no newer than the driver's CUDA.
try_nvrtc() {
    local f=$1 v
    [ -n "$f" ] && [ -e "$f" ] || return 1
    examined=$((examined + 1))
    v=$(nvrtc_version_of "$f")
    if [ -n "$driver_cuda" ] && [ "$v" != unknown ] && ! ver_le "$v" "$driver_cuda"; then
        say "    $f: NVRTC $v is newer than the driver's CUDA $driver_cuda (its PTX would be refused): passed over"
        return 1
    fi
    nvrtc=$f nvrtc_version=$v
    say "    NVRTC $v: $f"
}
find_nvrtc() {
    local d sub sp
    # 1. The toolkit: 13.0 first, then the generic links, then every other version.
    for d in /usr/local/cuda-13.0 /usr/local/cuda-13 /usr/local/cuda \
        $(timeout 10 find /usr/local -maxdepth 1 -name 'cuda-[0-9]*' 2>/dev/null | sort -V); do
        for sub in lib64 lib targets/x86_64-linux/lib; do
            [ -d "$d/$sub" ] && try_nvrtc "$(nvrtc_in "$d/$sub")" && return 0
        done
    done
    # 2. Python's NVIDIA wheels, in the site-packages python3 names.
    if [ -n "$py" ]; then
        for sp in $(timeout 15 "$py" -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null); do
            for sub in nvidia/cu13/lib nvidia/cuda_nvrtc/lib; do
                [ -d "$sp/$sub" ] && try_nvrtc "$(nvrtc_in "$sp/$sub")" && return 0
            done
        done
    fi
    # 3. A bounded search: a few roots, a few levels, the first hit.
    local hit
    hit=$(timeout 20 find /usr/local /opt /usr/lib /usr/lib64 -maxdepth 7 \
        \( -name 'libnvrtc.so.13' -o -name 'libnvrtc.so' \) -print -quit 2>/dev/null || true)
    try_nvrtc "$hit" && return 0
    return 1
}
unset NRPT_CUDA_PTX_DIR
origin=
ptx_compiler=
if [ -n "$ptx_dir" ]; then
    ptx_compiler=$(sed -n 's/^compiler: //p' "$ptx_dir/nrpt_kernels.compute_90.exact.ptx.manifest")
    [ -n "$ptx_compiler" ] || ptx_compiler=NVRTC
fi
choice=$(kernels_choice "$kernels_mode" "$ptx_compiler" "$driver_cuda")
if [ "$choice" = ptx ] && [ -n "$ptx_dir" ]; then
    # The carried PTX: no process compiles anything (the driver JIT-compiles the PTX
    # once per module and caches it).
    export NRPT_CUDA_PTX_DIR=$ptx_dir
    origin="precompiled PTX ($ptx_dir, $ptx_compiler)"
    fact kernels.mode ptx
    fact kernels.ptx_dir "$ptx_dir"
    record kernels ok "$origin"
elif [ "$choice" != ptx ] && find_nvrtc; then
    # cudarc asks the loader for libnvrtc.so first, then libnvrtc.so.13: links to the
    # chosen file in a private folder at the head of LD_LIBRARY_PATH make both names
    # this one, whatever else the loader's cache holds.
    ln -sf "$nvrtc" "$tmp/nvrtc-lib/libnvrtc.so"
    ln -sf "$nvrtc" "$tmp/nvrtc-lib/libnvrtc.so.13"
    LD_LIBRARY_PATH="$tmp/nvrtc-lib:$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
    origin="NVRTC $nvrtc_version ($nvrtc)"
    fact kernels.mode nvrtc
    fact kernels.nvrtc_library "$nvrtc"
    fact kernels.nvrtc_version "$nvrtc_version"
    if [ "$choice" = ptx-or-nvrtc ]; then
        record kernels warning "the carried PTX does not fit ($ptx_note${ptx_compiler:+, $ptx_compiler for a driver of CUDA ${driver_cuda:-?}}): $origin, which every process runs (slower)"
    else
        record kernels ok "$origin"
    fi
else
    no_ptx="no usable precompiled PTX ($ptx_note${ptx_compiler:+, $ptx_compiler for a driver of CUDA ${driver_cuda:-?}}; rebuild with scripts/gpu-build.sh)"
    case $kernels_mode in
    ptx) why=$no_ptx ;;
    nvrtc) why="no NVRTC no newer than the driver found ($examined examined: toolkit, Python wheels, bounded search)" ;;
    *) why="$no_ptx, and no NVRTC no newer than the driver found ($examined examined)" ;;
    esac
    origin="none"
    fact kernels.mode none
    record kernels FAILED "$why"
fi
fact kernels.origin "$origin"
# ptxas, for the spill report of the nvrtc test: beside NVRTC, on PATH, in the toolkit.
ptxas=
for c in ${nvrtc:+"$(dirname "$nvrtc")/../bin/ptxas"} "$(command -v ptxas || true)" \
    /usr/local/cuda-13.0/bin/ptxas /usr/local/cuda/bin/ptxas; do
    [ -n "$c" ] && [ -x "$c" ] && { ptxas=$(readlink -f "$c"); break; }
done
if [ -n "$ptxas" ]; then
    PATH="$(dirname "$ptxas"):$PATH"
    export PATH
fi
fact kernels.ptxas "${ptxas:-none}"

# ---------------------------------------------------------------- tests
export NRPT_REQUIRE_GPU=1
# run_test NAME MAX RESERVE [ENV=VALUE...]: one test executable, every test.
run_test() {
    local t=$1 max=$2 reserve=$3
    shift 3
    local exe=$bin/tests/$t f=$logs/test-$t.log ferr=$logs/test-$t.err b rc=0 t0=$SECONDS
    b=$(budget "$max" "$reserve")
    say "==> test $t (budget $b s)"
    if [ ! -x "$exe" ]; then
        record "test $t" FAILED "$exe is missing"
        return
    fi
    if [ "$b" = 0 ]; then
        record "test $t" FAILED "not run: out of time"
        return
    fi
    # libtest's lines ("test NAME ... ok") on stdout, clean: the tests' own output is
    # captured and shown after them (--show-output); what tests write to stderr
    # directly (skips, NVRTC timings) goes to its own file.
    env "$@" timeout -k 5 "$b" "$exe" --test-threads=1 --show-output >"$f" 2>"$ferr" || rc=$?
    attach "test $t" "$f"
    attach "test $t (stderr)" "$ferr"
    grep -hE 'parity ok|: on |skipped' "$f" "$ferr" | cut -c1-200 | sed 's/^/    /' | tee -a "$log" || true
    local passed failed skipped v
    passed=$(grep -c '^test .* \.\.\. ok$' "$f" || true)
    failed=$(grep -c '^test .* \.\.\. FAILED$' "$f" || true)
    skipped=$(cat "$f" "$ferr" | grep -c ': skipped:' || true)
    v=$(test_verdict "$rc" "$b" "$passed" "$failed" "$skipped" "$((SECONDS - t0))" \
        "$(first_panic "$f")" "$(cat "$f" "$ferr" | grep -m1 ': skipped:' | cut -c1-160)")
    record "test $t" "${v%%$'\t'*}" "${v#*$'\t'}"
}

# Without a driver the GPU tests still run: they must fail at once, naming it.
run_test gpu 60 200
run_test cuda_backend 60 170
run_test cuda_classifier 60 150

if [ "$have_driver" = 1 ]; then
    # ------------------------------------------------------------ bench
    b=$(budget 110 90)
    say "==> bench (gpu_bench; budget $b s)"
    quick=()
    [ "$b" -lt 80 ] && quick=(--quick)
    rc=0
    if [ "$b" = 0 ]; then
        record bench FAILED "not run: out of time"
    else
        timeout -k 5 "$b" "$bin/gpu_bench" --out "$logs" "${quick[@]}" >"$logs/bench.log" 2>&1 || rc=$?
        attach "gpu_bench${quick:+ --quick}" "$logs/bench.log"
        sed -n '/^device:/p;/^FP32 peak/p;/cudaMemcpy/p' "$logs/bench.log" | sed 's/^/    /' | tee -a "$log"
        wrote=0
        [ -s "$logs/gpu_bench.json" ] && wrote=1
        v=$(bench_verdict "$rc" "$b" "$wrote" "$(grep -m1 -iE 'error|panicked' "$logs/bench.log" | cut -c1-160)")
        [ "${v%%$'\t'*}" = ok ] &&
            v=$'ok\t'"${quick:+quick, }$(grep -c '"kernel":' "$logs/gpu_bench.json") rows, event-timed medians, limits measured"
        record bench "${v%%$'\t'*}" "${v#*$'\t'}"
    fi

    # ------------------------------------------------------------ compute-sanitizer
    sanitizer=$(command -v compute-sanitizer || true)
    if [ -z "$sanitizer" ]; then
        for c in /usr/local/cuda-13.0/bin/compute-sanitizer /usr/local/cuda/bin/compute-sanitizer \
            $(timeout 10 find /usr/local -maxdepth 3 -path '/usr/local/cuda-[0-9]*/bin/compute-sanitizer' 2>/dev/null | sort -V); do
            [ -x "$c" ] && { sanitizer=$c; break; }
        done
    fi
    if [ -z "$sanitizer" ]; then
        sanitizer=$(timeout 15 find /usr/local /opt -maxdepth 5 -name compute-sanitizer -type f -perm -u+x -print -quit 2>/dev/null || true)
    fi
    fact machine.compute_sanitizer "${sanitizer:-none}"
    for tool in memcheck racecheck; do
        b=$(budget 45 40)
        say "==> compute-sanitizer $tool (gpu_bench --tiny; budget $b s)"
        if [ -z "$sanitizer" ]; then
            record "sanitizer $tool" "not run" "no compute-sanitizer on this machine (looked on PATH, in /usr/local/cuda*/bin, under /usr/local and /opt)"
            continue
        fi
        if [ "$b" = 0 ]; then
            record "sanitizer $tool" "not run" "out of time"
            continue
        fi
        f=$logs/sanitizer-$tool.log
        rc=0
        timeout -k 5 "$b" "$sanitizer" --tool "$tool" --error-exitcode 86 --print-limit 20 \
            "$bin/gpu_bench" --tiny >"$f" 2>&1 || rc=$?
        attach "compute-sanitizer $tool" "$f"
        v=$(sanitizer_verdict "$f" "$rc")
        record "sanitizer $tool" "${v%%$'\t'*}" "${v#*$'\t'} ($sanitizer)"
    done

    # ------------------------------------------------------------ nrpt bench
    # Each: both math modes, a warm-up and 3 device-timed runs of at least 300
    # iterations (host/src/commands/bench.rs).
    for spec in "256 2000" "4096 2000" "65536 1000"; do
        read -r e n <<<"$spec"
        b=$(budget 25 60)
        say "==> nrpt bench --backend cuda -e $e -p 16 -n $n --json (budget $b s)"
        [ "$b" = 0 ] && { record "nrpt bench E=$e" FAILED "not run: out of time"; continue; }
        f=$logs/nrpt-bench-E$e.json
        rc=0
        timeout -k 5 "$b" "$bin/nrpt" --json bench --backend cuda -e "$e" -p 16 -n "$n" \
            >"$logs/nrpt-bench-E$e.out" 2>"$logs/nrpt-bench-E$e.err" || rc=$?
        attach "nrpt bench E=$e (stderr)" "$logs/nrpt-bench-E$e.err"
        line=$(grep -m1 '^{' "$logs/nrpt-bench-E$e.out" || true)
        wrote=0
        [ -n "$line" ] && wrote=1
        v=$(bench_verdict "$rc" "$b" "$wrote" "$(grep -v '^$' "$logs/nrpt-bench-E$e.err" | head -n 1 | cut -c1-160)")
        if [ "${v%%$'\t'*}" = ok ]; then
            printf '%s\n' "$line" >"$f"
            v=$'ok\t'"$(json_field backend <<<"$line"): $(json_field chain_steps_per_sec <<<"$line") chain-steps/s on the device ($(json_field math <<<"$line")), $(json_field end_to_end_chain_steps_per_sec <<<"$line") end to end"
        fi
        record "nrpt bench E=$e" "${v%%$'\t'*}" "${v#*$'\t'}"
    done
    b=$(budget 45 50)
    say "==> nrpt bench --target classifier --backend cuda (the share of the FP32 peak; budget $b s)"
    rc=0
    if [ "$b" != 0 ]; then
        # 512 ensembles × 8 chains = 4096 chains, batch 64, hidden 64: the issue's MLP
        # figure; 300 iterations a run, device-timed (the drawing of initial states and
        # the 79 MB upload are outside), in both modes.
        timeout -k 5 "$b" "$bin/nrpt" --json bench --target classifier --backend cuda -e 512 -p 8 --hidden 64 -n 300 --machine-size 256 \
            >"$logs/mlp.out" 2>"$logs/mlp.err" || rc=$?
        attach "nrpt bench --target classifier (stderr)" "$logs/mlp.err"
        line=$(grep -m1 '^{' "$logs/mlp.out" || true)
        wrote=0
        [ -n "$line" ] && wrote=1
        v=$(bench_verdict "$rc" "$b" "$wrote" "$(grep -v '^$' "$logs/mlp.err" | head -n 1 | cut -c1-160)")
        if [ "${v%%$'\t'*}" = ok ]; then
            printf '%s\n' "$line" >"$logs/mlp.json"
            if [ "$(json_field backend <<<"$line")" = cuda ]; then
                v=$'ok\t'"$(json_field gflops <<<"$line") GFLOP/s on the device ($(json_field math <<<"$line"); every mode in the figures)"
            else
                v=$'FAILED\t'"--backend cuda ran on $(json_field backend <<<"$line")"
            fi
        fi
        record "mlp bench" "${v%%$'\t'*}" "${v#*$'\t'}"
    else
        record "mlp bench" FAILED "not run: out of time"
    fi

    # ------------------------------------------------------------ half-precision states
    # `--precision bf16|f16`: the sum of modes at D = 256 (the storage is for D > 2),
    # 256 ensembles × 8 chains, 2,000 iterations, no samples kept.
    for p in bf16 f16; do
        b=$(budget 15 25)
        say "==> nrpt run --target sum-modes --dim 256 --precision $p --backend cuda (budget $b s)"
        [ "$b" = 0 ] && { record "precision $p" FAILED "not run: out of time"; continue; }
        rc=0
        timeout -k 5 "$b" "$bin/nrpt" --json run --target sum-modes --dim 256 -e 256 -p 8 -n 2000 \
            --thin 0 --precision "$p" --backend cuda -o "$tmp/run-$p" \
            >"$logs/run-$p.out" 2>"$logs/run-$p.err" || rc=$?
        attach "nrpt run --precision $p (stderr)" "$logs/run-$p.err"
        line=$(grep -m1 '^{' "$logs/run-$p.out" || true)
        [ -n "$line" ] && printf '%s\n' "$line" >"$logs/run-$p.json"
        v=$(precision_verdict "$rc" "$b" "$p" "$line" "$(grep -v '^$' "$logs/run-$p.err" | head -n 1 | cut -c1-160)")
        record "precision $p" "${v%%$'\t'*}" "${v#*$'\t'}"
    done

    # ------------------------------------------------------------ CPU-side checks
    run_test host_parity 30 15
    if [ -n "$nvrtc" ]; then
        if [ -n "$ptxas" ]; then
            run_test nvrtc 60 0 NRPT_REQUIRE_NVRTC=1
        else
            run_test nvrtc 60 0
        fi
    else
        record "test nvrtc" "not run" "the kernels come from the carried PTX (no NVRTC used)"
    fi
else
    for s in bench "sanitizer memcheck" "sanitizer racecheck" "nrpt bench" "mlp bench" "precision bf16" "precision f16" "test host_parity" "test nvrtc"; do
        record "$s" "not run" "no CUDA driver"
    done
fi
completed=1
exit 0
