#!/usr/bin/env bash
# The whole GPU check in one device call, done within 330 s of wall time (a 6-minute
# budget with slack): checks the carried binaries (files, executable bits, `ldd`), the
# driver and the device (nvidia-smi), finds NVRTC deterministically (or uses the
# carried PTX), runs the GPU parity tests of nrpt-cuda and of the host's CUDA backend
# (2D toy and classifier) with NRPT_REQUIRE_GPU=1 (a missing driver, device or NVRTC
# fails them, never a skip), the throughput bench with the device's own limits (copy
# bandwidth, FP32 peak),
# compute-sanitizer memcheck and racecheck on a tiny case where the machine has it,
# `nrpt bench --backend cuda`, and last the CPU-side checks. It writes three files to
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
#   --kernels    auto (default): NVRTC when one no newer than the driver is found,
#                else the carried PTX (BIN_DIR/ptx); nvrtc: NVRTC or fail; ptx: the
#                carried PTX through NRPT_CUDA_PTX_DIR, NVRTC never used
# Exit status: 0 when every step passed, 1 when one failed, 2 for a usage error.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS=0
deadline=${NRPT_GPU_CHECK_DEADLINE:-330}

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
# budget MAX RESERVE: seconds a step may take: at most MAX, and no more than what is
# left before the deadline minus RESERVE (kept for the later steps), but always half of
# what is left (the earlier steps matter more); 0 when fewer than 5 seconds are left.
budget() {
    local left=$((deadline - SECONDS - 5)) b
    b=$((left - $2))
    [ "$b" -lt $((left / 2)) ] && b=$((left / 2))
    [ "$b" -gt "$1" ] && b=$1
    [ "$b" -lt 5 ] && b=0
    echo "$b"
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
        "$py" - "$tmp" "$summary" "$status" "$SECONDS" "$deadline" "$out" <<'PY' && return 0
import glob, json, os, re, sys
tmp, summary_path, status, elapsed, deadline, out = sys.argv[1:7]
logs = os.path.join(tmp, "logs")

def rows(path):
    try:
        return [l.rstrip("\n").split("\t") for l in open(path, encoding="utf-8", errors="replace") if l.strip()]
    except OSError:
        return []

def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

facts = {}
for r in rows(os.path.join(tmp, "facts.tsv")):
    facts[r[0]] = r[1] if len(r) > 1 else ""
steps = [{"step": r[0], "verdict": r[1] if len(r) > 1 else "", "detail": r[2] if len(r) > 2 else ""}
         for r in rows(os.path.join(tmp, "steps.tsv"))]

tests = {}
for path in sorted(glob.glob(os.path.join(logs, "test-*.log"))):
    name = os.path.basename(path)[5:-4]
    text = open(path, encoding="utf-8", errors="replace").read()
    try:
        err = open(path[:-4] + ".err", encoding="utf-8", errors="replace").read()
    except OSError:
        err = ""
    verdicts = dict(re.findall(r"^test (\S+) \.\.\. (ok|FAILED|ignored)\s*$", text, re.M))
    tests[name] = {
        "passed": sum(v == "ok" for v in verdicts.values()),
        "failed": sum(v == "FAILED" for v in verdicts.values()),
        "ignored": sum(v == "ignored" for v in verdicts.values()),
        "tests": verdicts,
        "parity_lines": [l.strip() for l in (text + err).splitlines() if "parity ok" in l][:40],
        "skipped_lines": [l.strip() for l in (text + err).splitlines() if ": skipped:" in l][:20],
    }
for s in steps:
    if s["step"].startswith("test ") and s["step"][5:] in tests:
        tests[s["step"][5:]]["verdict"] = s["verdict"]
        tests[s["step"][5:]]["detail"] = s["detail"]

bench = load_json(os.path.join(logs, "gpu_bench.json"))
figures = list((bench or {}).get("figures", []))
if not figures:  # no bench: the headline figures, unmeasured, so the table shows them
    figures = [
        {"name": "persistent_2d_chain_steps_per_s", "what": "2D persistent kernel, chain-steps/s",
         "value": None, "target": 5e10, "ratio_to_target": None, "met": None},
        {"name": "d1024_f32_share_of_copy_bandwidth",
         "what": "D=1024 f32 step / cudaMemcpy D2D bandwidth",
         "value": None, "target": 0.70, "ratio_to_target": None, "met": None},
        {"name": "fp32_measured_share_of_theoretical",
         "what": "FP32 FMA micro-kernel / theoretical peak",
         "value": None, "target": None, "ratio_to_target": None, "met": None},
    ]
    for f_ in figures:
        f_["note"] = "not measured: the bench did not run or wrote no JSON"
limits = (bench or {}).get("limits", {})
mlp = load_json(os.path.join(logs, "mlp.json"))
peak = limits.get("fp32_measured_gflops") or limits.get("fp32_theoretical_gflops")
mlp_fig = {"name": "mlp_share_of_fp32_peak", "what": "MLP (nrpt bench --model mlp) / FP32 peak",
           "value": None, "target": 0.30, "ratio_to_target": None, "met": None}
if mlp and mlp.get("backend") == "cuda" and peak:
    mlp_fig["value"] = mlp.get("gflops", 0) / peak
    mlp_fig["ratio_to_target"] = mlp_fig["value"] / 0.30
    mlp_fig["met"] = mlp_fig["value"] >= 0.30
    mlp_fig["note"] = "%.1f GFLOP/s against %.1f GFLOP/s (%s)" % (
        mlp.get("gflops", 0), peak,
        "measured" if limits.get("fp32_measured_gflops") else "theoretical")
elif mlp:
    mlp_fig["note"] = "not on the GPU: nrpt bench --model mlp ran on backend %r" % mlp.get("backend")
else:
    mlp_fig["note"] = "not measured (see the mlp step)"
figures.append(mlp_fig)

nrpt_rows = []
for path in sorted(glob.glob(os.path.join(logs, "nrpt-bench-E*.json")),
                   key=lambda p: int(re.sub(r"\D", "", os.path.basename(p)) or 0)):
    j = load_json(path)
    if isinstance(j, dict):
        nrpt_rows.append(j)

summary = {
    "status": status,
    "elapsed_s": int(elapsed),
    "deadline_s": int(deadline),
    "failures": ["%s: %s" % (s["step"], s["detail"]) for s in steps if s["verdict"] == "FAILED"],
    "warnings": ["%s: %s" % (s["step"], s["detail"]) for s in steps if s["verdict"] == "warning"],
    "machine": {k[8:]: v for k, v in facts.items() if k.startswith("machine.")},
    "kernels": {k[8:]: v for k, v in facts.items() if k.startswith("kernels.")},
    "bundle": {k[7:]: v for k, v in facts.items() if k.startswith("bundle.")},
    "steps": steps,
    "tests": tests,
    "figures": figures,
    "limits": limits,
    "bench": bench,
    "nrpt_bench": nrpt_rows,
    "files": ["gpu-check.json", "gpu-check.log", "gpu-check-logs.tar.gz"],
}
with open(summary_path, "w", encoding="utf-8") as f:
    json.dump(summary, f, indent=1)
    f.write("\n")

def fmt(v, pct=False):
    if v is None:
        return "n/a"
    return "%.1f%%" % (100 * v) if pct else "%.3e" % v

print()
print("=" * 24 + " nrpt GPU check: %s (%s s of %s s) " % (status.upper(), elapsed, deadline) + "=" * 24)
m = summary["machine"]
k = summary["kernels"]
print("device: %s, cc %s, driver %s (CUDA %s); kernels: %s" % (
    m.get("gpu", "none"), m.get("compute_capability", "?"), m.get("driver", "?"),
    m.get("driver_cuda", "?"), k.get("origin", "?")))
print("%-24s %-8s %s" % ("step", "verdict", "detail"))
for s in steps:
    print("%-24s %-8s %s" % (s["step"], s["verdict"], s["detail"][:110]))
print()
print("%-46s %11s %9s %7s %4s" % ("figure", "value", "target", "ratio", "met"))
for f_ in figures:
    pct = f_.get("name", "").find("share") >= 0
    met = f_.get("met")
    print("%-46s %11s %9s %7s %4s" % (
        f_.get("what", f_.get("name"))[:46], fmt(f_.get("value"), pct),
        fmt(f_.get("target"), pct) if f_.get("target") is not None else "-",
        "%.2f" % f_["ratio_to_target"] if f_.get("ratio_to_target") is not None else "-",
        "-" if met is None else ("yes" if met else "NO")))
if limits:
    print("limits: cudaMemcpy D2D %s GB/s, copy kernel %s GB/s, FP32 %s / %s GFLOP/s (measured / theoretical)" % tuple(
        "%.0f" % v if isinstance(v, (int, float)) else "n/a" for v in (
            limits.get("copy_memcpy_d2d_gbs"), limits.get("copy_kernel_gbs"),
            limits.get("fp32_measured_gflops"), limits.get("fp32_theoretical_gflops"))))
print("in %s: gpu-check.json (summary), gpu-check.log (full log), gpu-check-logs.tar.gz (step logs)" % out)
PY
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
    elif ! lddout=$(ldd "$p" 2>&1); then
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
say "==> driver and device"
# Python's ctypes answers without any of our binaries: the driver's CUDA version, and
# an NVRTC library's version.
probe() {
    [ -n "$py" ] || return 1
    "$py" - "$@" <<'PY' 2>/dev/null
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
    nvidia-smi >"$logs/nvidia-smi.txt" 2>&1 || true
    attach nvidia-smi "$logs/nvidia-smi.txt"
    q=$(nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader 2>/dev/null | head -n 1 || true)
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
# ver_le A B: version A <= version B.
ver_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]; }
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
        $(find /usr/local -maxdepth 1 -name 'cuda-[0-9]*' 2>/dev/null | sort -V); do
        for sub in lib64 lib targets/x86_64-linux/lib; do
            [ -d "$d/$sub" ] && try_nvrtc "$(nvrtc_in "$d/$sub")" && return 0
        done
    done
    # 2. Python's NVIDIA wheels, in the site-packages python3 names.
    if [ -n "$py" ]; then
        for sp in $("$py" -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null); do
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
if [ "$kernels_mode" != ptx ] && find_nvrtc; then
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
    record kernels ok "$origin"
elif [ "$kernels_mode" != nvrtc ] && [ -n "$ptx_dir" ]; then
    export NRPT_CUDA_PTX_DIR=$ptx_dir
    origin="precompiled PTX ($ptx_dir, $(sed -n 's/^compiler: //p' "$ptx_dir/nrpt_kernels.compute_90.exact.ptx.manifest"))"
    fact kernels.mode ptx
    fact kernels.ptx_dir "$ptx_dir"
    if [ "$kernels_mode" = auto ]; then
        record kernels warning "no NVRTC no newer than the driver found ($examined examined): using the $origin"
    else
        record kernels ok "$origin"
    fi
else
    no_ptx="no usable precompiled PTX ($ptx_note; rebuild with scripts/gpu-build.sh)"
    case $kernels_mode in
    ptx) why=$no_ptx ;;
    nvrtc) why="no NVRTC no newer than the driver found ($examined examined: toolkit, Python wheels, bounded search)" ;;
    *) why="no NVRTC no newer than the driver found ($examined examined), and $no_ptx" ;;
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
    say "==> test $t"
    if [ ! -x "$exe" ]; then
        record "test $t" FAILED "$exe is missing"
        return
    fi
    b=$(budget "$max" "$reserve")
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
    local passed failed skipped
    passed=$(grep -c '^test .* \.\.\. ok$' "$f" || true)
    failed=$(grep -c '^test .* \.\.\. FAILED$' "$f" || true)
    skipped=$(cat "$f" "$ferr" | grep -c ': skipped:' || true)
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        record "test $t" FAILED "timed out after $b s ($passed passed before)"
    elif [ "$rc" != 0 ]; then
        record "test $t" FAILED "exit $rc, $failed failed, $passed passed: $(first_panic "$f")"
    elif [ "$skipped" != 0 ]; then
        record "test $t" warning "$passed passed, but $skipped skipped: $(cat "$f" "$ferr" | grep -m1 ': skipped:' | cut -c1-160)"
    else
        record "test $t" ok "$passed passed in $((SECONDS - t0)) s"
    fi
}

# Without a driver the GPU tests still run: they must fail at once, naming it.
run_test gpu 90 220
run_test cuda_backend 90 190
run_test cuda_classifier 90 170

if [ "$have_driver" = 1 ]; then
    # ------------------------------------------------------------ bench
    say "==> bench (gpu_bench)"
    b=$(budget 150 90)
    quick=()
    [ "$b" -lt 100 ] && quick=(--quick)
    rc=0
    if [ "$b" = 0 ]; then
        record bench FAILED "not run: out of time"
    else
        timeout -k 5 "$b" "$bin/gpu_bench" --out "$logs" "${quick[@]}" >"$logs/bench.log" 2>&1 || rc=$?
        attach "gpu_bench${quick:+ --quick}" "$logs/bench.log"
        sed -n '/^device:/p;/^FP32 peak/p;/cudaMemcpy/p' "$logs/bench.log" | sed 's/^/    /' | tee -a "$log"
        if [ "$rc" = 0 ] && [ -f "$logs/gpu_bench.json" ]; then
            record bench ok "${quick:+quick, }$(grep -c '"kernel":' "$logs/gpu_bench.json") rows, limits measured"
        elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            record bench FAILED "timed out after $b s"
        else
            record bench FAILED "exit $rc: $(grep -m1 -i 'error' "$logs/bench.log" | cut -c1-160)"
        fi
    fi

    # ------------------------------------------------------------ compute-sanitizer
    sanitizer=$(command -v compute-sanitizer || true)
    if [ -z "$sanitizer" ]; then
        for c in /usr/local/cuda-13.0/bin/compute-sanitizer /usr/local/cuda/bin/compute-sanitizer \
            $(find /usr/local -maxdepth 3 -path '/usr/local/cuda-[0-9]*/bin/compute-sanitizer' 2>/dev/null | sort -V); do
            [ -x "$c" ] && { sanitizer=$c; break; }
        done
    fi
    if [ -z "$sanitizer" ]; then
        sanitizer=$(timeout 15 find /usr/local /opt -maxdepth 5 -name compute-sanitizer -type f -perm -u+x -print -quit 2>/dev/null || true)
    fi
    fact machine.compute_sanitizer "${sanitizer:-none}"
    for tool in memcheck racecheck; do
        say "==> compute-sanitizer $tool (gpu_bench --tiny)"
        if [ -z "$sanitizer" ]; then
            record "sanitizer $tool" warning "not run: no compute-sanitizer on this machine (looked on PATH, in /usr/local/cuda*/bin, under /usr/local and /opt)"
            continue
        fi
        b=$(budget 60 40)
        if [ "$b" = 0 ]; then
            record "sanitizer $tool" warning "not run: out of time"
            continue
        fi
        f=$logs/sanitizer-$tool.log
        rc=0
        timeout -k 5 "$b" "$sanitizer" --tool "$tool" --error-exitcode 86 --print-limit 20 \
            "$bin/gpu_bench" --tiny >"$f" 2>&1 || rc=$?
        attach "compute-sanitizer $tool" "$f"
        errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$f" | tail -n 1)
        if [ "$rc" = 0 ] && [ "${errors:-0}" = 0 ] && grep -q 'every case ok' "$f"; then
            record "sanitizer $tool" ok "no errors (${errors:+ERROR SUMMARY: $errors errors, }$sanitizer)"
        elif [ "$rc" = 86 ] || [ "${errors:-0}" != 0 ]; then
            record "sanitizer $tool" FAILED "${errors:-some} errors: $(grep -m1 -E '^========= (Invalid|Error|Race|.*hazard)' "$f" | cut -c1-160)"
        elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            record "sanitizer $tool" warning "timed out after $b s"
        elif grep -qE '^========= .*([Nn]ot supported|Internal|[Ee]rror)' "$f"; then
            # The sanitizer's own complaint (e.g. "Device not supported" on gVisor).
            record "sanitizer $tool" warning "could not run here (exit $rc): $(grep -m1 -E '^========= .*([Nn]ot supported|Internal|[Ee]rror)' "$f" | cut -c1-160)"
        else
            record "sanitizer $tool" FAILED "gpu_bench --tiny failed under it (exit $rc): $(grep -m1 -E '^Error' "$f" | cut -c1-160)"
        fi
    done

    # ------------------------------------------------------------ nrpt bench
    field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p" | head -n 1; }
    for spec in "256 2000" "4096 2000" "65536 1000"; do
        read -r e n <<<"$spec"
        say "==> nrpt bench --backend cuda -e $e -p 16 -n $n --json"
        b=$(budget 30 45)
        [ "$b" = 0 ] && { record "nrpt bench E=$e" warning "not run: out of time"; continue; }
        f=$logs/nrpt-bench-E$e.json
        rc=0
        timeout -k 5 "$b" "$bin/nrpt" --json bench --backend cuda -e "$e" -p 16 -n "$n" \
            >"$logs/nrpt-bench-E$e.out" 2>"$logs/nrpt-bench-E$e.err" || rc=$?
        attach "nrpt bench E=$e (stderr)" "$logs/nrpt-bench-E$e.err"
        line=$(grep -m1 '^{' "$logs/nrpt-bench-E$e.out" || true)
        if [ "$rc" = 0 ] && [ -n "$line" ]; then
            printf '%s\n' "$line" >"$f"
            record "nrpt bench E=$e" ok "$(field backend <<<"$line"): $(field chain_steps_per_sec <<<"$line") chain-steps/s"
        else
            record "nrpt bench E=$e" FAILED "exit $rc: $(grep -v '^$' "$logs/nrpt-bench-E$e.err" | head -n 1 | cut -c1-160)"
        fi
    done
    say "==> nrpt bench --model mlp --backend cuda (for the share of the FP32 peak)"
    b=$(budget 20 40)
    rc=0
    if [ "$b" != 0 ]; then
        # 512 ensembles × 8 chains = 4096 chains, batch 64, hidden 64: the issue's MLP figure.
        timeout -k 5 "$b" "$bin/nrpt" --json bench --model mlp --backend cuda -e 512 -p 8 --hidden 64 -n 20 --machine-size 256 \
            >"$logs/mlp.out" 2>"$logs/mlp.err" || rc=$?
        attach "nrpt bench --model mlp (stderr)" "$logs/mlp.err"
        line=$(grep -m1 '^{' "$logs/mlp.out" || true)
        if [ "$rc" = 0 ] && [ -n "$line" ]; then
            printf '%s\n' "$line" >"$logs/mlp.json"
            if [ "$(field backend <<<"$line")" = cuda ]; then
                record "mlp bench" ok "$(field gflops <<<"$line") GFLOP/s on the GPU"
            else
                record "mlp bench" n/a "no CUDA path in this nrpt yet (it ran on $(field backend <<<"$line")): no MLP figure"
            fi
        elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            record "mlp bench" warning "timed out after $b s"
        else
            record "mlp bench" warning "exit $rc: $(grep -v '^$' "$logs/mlp.err" | head -n 1 | cut -c1-160)"
        fi
    else
        record "mlp bench" warning "not run: out of time"
    fi

    # ------------------------------------------------------------ CPU-side checks
    run_test host_parity 45 15
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
    for s in bench "sanitizer memcheck" "sanitizer racecheck" "nrpt bench" "test host_parity" "test nvrtc"; do
        record "$s" "not run" "no CUDA driver"
    done
fi
completed=1
exit 0
