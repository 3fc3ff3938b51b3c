#!/usr/bin/env bash
# Prints the SASS instructions per chain-step of the persistent 2D kernels for sm_90 in
# every math mode (cuda/tests/sass_count.rs states the counting method; the book's
# speed chapter quotes the figures). No GPU needed: NVRTC, ptxas and nvdisasm come from
# the pinned pip wheels of scripts/nvrtc-env.sh. Fails, saying why, when a tool is
# missing. Honours CARGO_TARGET_DIR. NRPT_SASS_KEEP=DIR keeps the PTX, cubins and
# listings there.
# Usage: scripts/sass-count.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/nvrtc-env.sh
source scripts/nvrtc-env.sh
missing=()
for t in ptxas nvdisasm; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
done
if ! python3 -c 'import ctypes; ctypes.CDLL("libnvrtc.so.13")' >/dev/null 2>&1; then
    missing+=("libnvrtc.so.13")
fi
if [ "${#missing[@]}" -gt 0 ]; then
    echo "sass-count: FAILED: ${missing[*]} not available (scripts/nvrtc-env.sh could not install the pinned wheels; see its messages above)" >&2
    exit 1
fi
# NRPT_REQUIRE_SASS turns the test's skips into failures.
# host-shims: the test reads the kernels' team and warp widths from their host build.
NRPT_REQUIRE_SASS=1 cargo test -p nrpt-cuda --features host-shims --test sass_count -- \
    --nocapture --test-threads=1
