# shellcheck shell=bash
# Makes NVRTC 13.0 and ptxas (pip wheels, no GPU needed) available to the tests of
# nrpt-cuda: installs the five pinned wheels if they are missing (quietly, once), then
# exports LD_LIBRARY_PATH (libnvrtc) and PATH (ptxas).
# Usage: source scripts/nvrtc-env.sh     (safe under `set -euo pipefail`; never exits
# the calling shell: if anything fails it prints why and leaves the environment alone,
# and the NVRTC tests then report that they were skipped).

_nrpt_nvrtc_env() {
    local py=""
    if command -v python3 >/dev/null 2>&1; then
        py=python3
    elif command -v python >/dev/null 2>&1; then
        py=python
    else
        echo "nvrtc-env: no python found; NVRTC tests will be skipped" >&2
        return 0
    fi
    local wheels=(
        nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88
        nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.88
    )
    local root
    root=$("$py" - <<'PY' 2>/dev/null || true
import importlib.util, os
spec = importlib.util.find_spec("nvidia")
if spec and spec.submodule_search_locations:
    for p in spec.submodule_search_locations:
        if os.path.isdir(os.path.join(p, "cu13", "lib")):
            print(os.path.join(p, "cu13")); break
PY
)
    if [ -z "$root" ] || ! ls "$root"/lib/libnvrtc.so* >/dev/null 2>&1 \
        || [ -z "$(find "$root" -name ptxas -type f 2>/dev/null | head -n 1)" ]; then
        echo "nvrtc-env: installing the pinned NVRTC/ptxas wheels (13.0.88)" >&2
        "$py" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "${wheels[@]}" >&2 \
            || { echo "nvrtc-env: pip install failed; NVRTC tests will be skipped" >&2; return 0; }
        root=$("$py" - <<'PY' 2>/dev/null || true
import importlib.util, os
spec = importlib.util.find_spec("nvidia")
if spec and spec.submodule_search_locations:
    for p in spec.submodule_search_locations:
        if os.path.isdir(os.path.join(p, "cu13", "lib")):
            print(os.path.join(p, "cu13")); break
PY
)
    fi
    if [ -z "$root" ]; then
        echo "nvrtc-env: nvidia/cu13 not found after install; NVRTC tests will be skipped" >&2
        return 0
    fi
    local ptxas
    ptxas=$(find "$root" -name ptxas -type f 2>/dev/null | head -n 1)
    export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if [ -n "$ptxas" ]; then
        chmod +x "$ptxas" 2>/dev/null || true
        PATH="$(dirname "$ptxas"):$PATH"
        export PATH
    fi
    echo "nvrtc-env: NVRTC from $root/lib${ptxas:+, ptxas $ptxas}" >&2
}
_nrpt_nvrtc_env
unset -f _nrpt_nvrtc_env
