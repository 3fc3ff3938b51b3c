#!/usr/bin/env bash
# Builds, here, everything scripts/gpu-check.sh runs on the GPU machine (which has no
# Rust toolchain) into gpu-bin/ (ignored by git), stripped:
#   tests/gpu tests/host_parity tests/nvrtc   release test executables of nrpt-cuda
#   tests/cuda_backend tests/cuda_classifier  the host's CUDA backend tests (2D toy,
#                                             classifier)
#   gpu_bench nrpt                            the bench example and the `nrpt` binary
#   ptx/                                      every NVRTC program precompiled for sm_90
#                                             with the pinned NVRTC 13.0 (pip), checked
#                                             by ptxas 13.0, for NRPT_CUDA_PTX_DIR
#   BUILD-INFO                                commit, toolchain, kernel-source hash
# Cargo's errors are shown as they come; the bundle is refused over 60 MiB (a device
# call carries at most 64 MiB in all). Then carry gpu-bin/ along:
#   scripts/gpu-build.sh && <device call with carry ["gpu-bin"]> scripts/gpu-check.sh
# Environment: NRPT_PTX_ARCH (default compute_90), NRPT_DEVICE_CUDA (default 13.0: the
# CUDA version of the GPU machine's driver; the PTX must come from that NVRTC).
set -euo pipefail
cd "$(dirname "$0")/.."

out=gpu-bin
arch=${NRPT_PTX_ARCH:-compute_90}
device_cuda=${NRPT_DEVICE_CUDA:-13.0}
limit_mib=60

die() {
    printf 'gpu-build: error: %s\n' "$*" >&2
    exit 1
}
step() { printf '\n==> %s\n' "$*"; }

command -v cargo >/dev/null || die "cargo not found: this script runs where Rust is installed"
command -v python3 >/dev/null || die "python3 not found (it reads cargo's JSON messages)"

step "NVRTC $device_cuda and ptxas for the precompiled PTX (scripts/nvrtc-env.sh)"
source scripts/nvrtc-env.sh

rm -rf "$out"
mkdir -p "$out/tests" "$out/ptx"
work=$(mktemp -d "${TMPDIR:-/tmp}/nrpt-gpu-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
# cargo's artifact messages (JSON); its diagnostics are rendered on stderr as usual,
# so that a build error is seen in full.
json="$work/cargo.json"

# One cargo invocation for everything, so that every binary links the same build of
# nrpt-cuda (the kernel sources are embedded in it) and the PTX that gpu_bench writes
# below is the PTX of every binary.
kernels_hash() {
    (cd kernels && find . -maxdepth 1 -type f \( -name '*.cu' -o -name '*.cuh' \) |
        LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
}
kernels_before=$(kernels_hash)
step "release build: test executables, gpu_bench, nrpt"
tests=(gpu host_parity nvrtc cuda_backend cuda_classifier)
# host-shims: host_parity and cuda_classifier run the kernels' code on the CPU too.
if ! cargo build --release -p nrpt-cuda -p nrpt-host --features nrpt-cuda/host-shims \
    "${tests[@]/#/--test=}" --example gpu_bench --bin nrpt \
    --message-format=json-render-diagnostics >"$json"; then
    die "the release build failed (cargo's messages are above)"
fi
[ "$(kernels_hash)" = "$kernels_before" ] ||
    die "kernels/ changed while building: run scripts/gpu-build.sh again"

# The JSON messages name every executable: "test NAME PATH", "example …", "bin …".
python3 - "$json" >"$work/artifacts.txt" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        kind = m["target"]["kind"][0]
        if kind in ("test", "example", "bin"):
            print(kind + "\t" + m["target"]["name"] + "\t" + m["executable"])
PY
artifact() {
    local exe
    exe=$(awk -F'\t' -v k="$1" -v n="$2" '$1 == k && $2 == n { print $3 }' "$work/artifacts.txt" | tail -n 1)
    [ -x "${exe:-/nonexistent}" ] ||
        die "cargo built no $1 $2 (it named: $(cut -f1,2 "$work/artifacts.txt" | tr '\t\n' ': '))"
    echo "$exe"
}
for t in "${tests[@]}"; do
    cp "$(artifact test "$t")" "$out/tests/$t"
done
cp "$(artifact example gpu_bench)" "$out/gpu_bench"
cp "$(artifact bin nrpt)" "$out/nrpt"

step "precompiled PTX for $arch (NVRTC, as the binaries would compile it at run time)"
"$out/gpu_bench" --emit-ptx "$out/ptx" --arch "$arch" ||
    die "gpu_bench --emit-ptx failed: NVRTC is needed here (scripts/nvrtc-env.sh)"
compiler=$(sed -n 's/^compiler: //p' "$out/ptx/nrpt_kernels.$arch.exact.ptx.manifest")
[ "$compiler" = "NVRTC $device_cuda" ] ||
    die "the PTX was compiled by $compiler, but the GPU machine's driver is CUDA $device_cuda \
(a newer NVRTC writes PTX that driver refuses): put NVRTC $device_cuda first on LD_LIBRARY_PATH \
(scripts/nvrtc-env.sh pins 13.0.88), or set NRPT_DEVICE_CUDA"
sm=sm_${arch#compute_}
if command -v ptxas >/dev/null; then
    ptxas_version=$(ptxas --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
    for f in "$out"/ptx/*.ptx; do
        ptxas -arch="$sm" "$f" -o "$work/check.cubin" ||
            die "ptxas $ptxas_version rejects $f (above)"
    done
    echo "ptxas $ptxas_version -arch=$sm accepts every PTX file"
else
    echo "warning: no ptxas on PATH: the PTX was not assembled here (the driver will)" >&2
    ptxas_version=none
fi

if command -v strip >/dev/null 2>&1; then
    strip "$out"/gpu_bench "$out"/nrpt "$out"/tests/*
else
    echo "warning: no strip: the binaries keep their symbols" >&2
fi

# What the bundle was built from; gpu-check.sh prints it and compares the kernel hash
# with the checkout it runs in.
kernels_sha=$kernels_before
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit="$commit (with uncommitted changes)"
fi
{
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
    echo "commit: $commit"
    echo "rustc: $(rustc --version 2>/dev/null || echo unknown)"
    echo "ptx: $arch by $compiler, checked by ptxas $ptxas_version"
    echo "kernels sha256: $kernels_sha"
} >"$out/BUILD-INFO"

step "bundle"
cat "$out/BUILD-INFO"
ls -l "$out" "$out/tests" "$out/ptx"
bytes=$(du -sb "$out" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
if [ "$bytes" -gt $((limit_mib * 1048576)) ]; then
    echo "largest files:" >&2
    find "$out" -type f -printf '%s %p\n' | sort -rn | head -n 5 >&2
    die "gpu-bin/ is $mib MiB, over the $limit_mib MiB limit (a device call carries 64 MiB in all)"
fi
echo "gpu-bin/: $mib MiB (limit $limit_mib MiB); carry it: run(carry [\"gpu-bin\"], command \"scripts/gpu-check.sh\")"
