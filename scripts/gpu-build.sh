#!/usr/bin/env bash
# Builds what scripts/gpu-check.sh runs on the GPU machine (which has no Rust
# toolchain): the release test executables of nrpt-cuda, the host test of the CUDA
# backend (host/tests/cuda_backend.rs), the gpu_bench example and the release `nrpt`
# binary, stripped, into gpu-bin/ (ignored by git). Run it here, then carry gpu-bin/ along:
#   scripts/gpu-build.sh && <device call with carry ["gpu-bin"]> scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/target-dir.sh # target_dir: cargo's target directory ($CARGO_TARGET_DIR or target/)

out=gpu-bin
rm -rf "$out"
mkdir -p "$out/tests"

# Test executables: the JSON messages name every artifact's executable.
{
    cargo test -p nrpt-cuda --release --no-run --message-format=json 2>/dev/null
    cargo test -p nrpt-host --release --test cuda_backend --no-run --message-format=json \
        2>/dev/null
} | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
            and m.get("profile", {}).get("test"):
        print(m["target"]["name"], m["executable"])
' | while read -r name exe; do
        cp "$exe" "$out/tests/$name"
    done

for t in gpu host_parity nvrtc cuda_backend; do
    [ -x "$out/tests/$t" ] || { echo "error: test executable $t was not built" >&2; exit 1; }
done

target=$(target_dir)
cargo build -p nrpt-cuda --release --example gpu_bench
cp "$target/release/examples/gpu_bench" "$out/gpu_bench"
cargo build -p nrpt-host --release --bin nrpt
cp "$target/release/nrpt" "$out/nrpt"

if command -v strip >/dev/null 2>&1; then
    strip "$out"/gpu_bench "$out"/nrpt "$out"/tests/* 2>/dev/null || true
fi
ls -l "$out" "$out/tests"
du -sh "$out"
