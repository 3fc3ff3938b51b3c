# shellcheck shell=bash
# Makes NVRTC 13.0 and ptxas (pip wheels, no GPU needed) available to the tests of
# nrpt-cuda: installs the five pinned wheels if they are missing (quietly, once), then
# exports LD_LIBRARY_PATH (libnvrtc) and PATH (ptxas). Also installs the pinned
# nvdisasm wheel (13.2.51, the oldest on PyPI; it reads ptxas 13.0's sm_90 cubins) that
# the SASS instruction counter (cuda/tests/sass_count.rs, scripts/sass-count.sh) needs.
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
    if [ ! -f "$root/bin/nvdisasm" ]; then
        echo "nvrtc-env: installing the pinned nvdisasm wheel (13.2.51)" >&2
        "$py" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
            --no-deps nvidia-cuda-nvdisasm==13.2.51 >&2 \
            || echo "nvrtc-env: pip install of nvdisasm failed; the SASS counter will be skipped" >&2
    fi
    [ -f "$root/bin/nvdisasm" ] && chmod +x "$root/bin/nvdisasm" 2>/dev/null
    local ptxas
    ptxas=$(find "$root" -name ptxas -type f 2>/dev/null | head -n 1)
    export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if [ -n "$ptxas" ]; then
        chmod +x "$ptxas" 2>/dev/null || true
        PATH="$(dirname "$ptxas"):$PATH"
        export PATH
    fi
    if [ -f "$root/bin/nvdisasm" ] && [ "$(dirname "$ptxas")" != "$root/bin" ]; then
        PATH="$root/bin:$PATH"
        export PATH
    fi
    echo "nvrtc-env: NVRTC from $root/lib${ptxas:+, ptxas $ptxas}" >&2
}
_nrpt_nvrtc_env
unset -f _nrpt_nvrtc_env
