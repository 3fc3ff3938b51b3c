#!/usr/bin/env bash
# The full test suite, from a fresh clone: installs what it needs, then checks
# formatting, lints, the no_std/no-alloc proof of nrpt-core and runs every test.
# Usage: scripts/test.sh        (CI calls exactly this through .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> [%d s] %s\n' "$SECONDS" "$*"; }

step "toolchain: targets and components"
rustup target add thumbv7em-none-eabihf wasm32-unknown-unknown
rustup component add rustfmt clippy

# One target folder for every cargo command of the suite, the workspace's (target/, or
# $CARGO_TARGET_DIR, or build.target-dir): the Python crate's lints and API docs (python/
# is a cargo workspace of its own) and the embedded workspaces then reuse the dependencies
# the workspace's lints compiled, instead of compiling them again in folders of their own.
source scripts/target-dir.sh
CARGO_TARGET_DIR=$(target_dir)
export CARGO_TARGET_DIR

step "format"
cargo fmt --all --check
cargo fmt --manifest-path python/Cargo.toml --check

step "Python package, started in the background at the lowest priority: sdist, manylinux2014 abi3 wheel built from it (maturin --zig), installed in a fresh venv"
# The wheel shares no compiled crate with the steps below (the zig linker enters every
# fingerprint), so it builds in a target folder of its own (no wait on cargo's lock) and
# at nice 19 / idle I/O class: it takes the core the foreground steps leave idle (test
# runs, QEMU, Node, mdBook, pytest) and yields the rest. Its log is printed at the Python
# step, which waits for it.
python3 scripts/check-python-lock.py  # its lock pins the crates it shares with the workspace
python_target="$CARGO_TARGET_DIR/python-package"
mkdir -p "$python_target"
# A fresh environment each run, removed at the end; the script installs the wheel and
# python/requirements-ci.txt into it (a venv, or a folder for PYTHONPATH where python3 has
# no venv module).
venv=$(mktemp -d "$CARGO_TARGET_DIR/python-venv.XXXXXX")
package_log="$python_target/python-package.log"
# setsid: a session and process group of its own, so that a failing or interrupted
# suite stops the whole build (maturin, cargo, rustc) with it. A new session is also a
# new scheduler autogroup where the kernel has them (sched_autogroup_enabled), and CPU
# time is shared between autogroups whatever the nice values inside them: the build
# lowers its own group's priority too (/proc/self/autogroup, which an unprivileged
# process may raise), else it would take half the machine from the steps below.
CARGO_TARGET_DIR="$python_target" setsid bash -c '
    echo 19 >/proc/self/autogroup 2>/dev/null || true
    if command -v ionice >/dev/null 2>&1; then exec nice -n 19 ionice -c 3 "$@"; fi
    exec nice -n 19 "$@"' low-priority \
    scripts/python-package.sh --profile ci --venv "$venv" >"$package_log" 2>&1 &
package_pid=$!
stop_package() {
    kill -- -"$package_pid" 2>/dev/null || true
    wait "$package_pid" 2>/dev/null || true
    rm -rf "$venv"
}
trap stop_package EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
echo "started (process $package_pid, log $package_log)"

step "lints"
cargo clippy --workspace --all-targets -- -D warnings
# nrpt-cuda as the command builds it, without the test-only feature host-shims (the
# workspace's lints above have it: the test crates enable it).
cargo clippy -p nrpt-cuda --all-targets -- -D warnings
cargo clippy --manifest-path python/Cargo.toml -- -D warnings

step "no import circles between the top-level modules of any crate, nor between modules side by side"
python3 scripts/check-import-cycles.py

step "nrpt-core is no_std: builds for Cortex-M4F and WASM"
cargo build -p nrpt-core --target thumbv7em-none-eabihf
cargo build -p nrpt-core --target wasm32-unknown-unknown

step "nrpt-core enables no std or alloc feature anywhere in its dependency graph"
features=$(cargo tree -p nrpt-core -e features,normal,no-proc-macro \
    --target thumbv7em-none-eabihf --prefix none)
if grep -E 'feature "(std|alloc)"' <<<"$features"; then
    echo "error: a dependency of nrpt-core enables std or alloc (lines above)" >&2
    exit 1
fi
echo "ok: no std/alloc features"

step "nrpt-core links into a bare-metal binary with no allocator"
(cd core/nostd-check && cargo build --release)

step "the GPU check's verdicts and summary on captured outputs, and the check failing here (seconds, no GPU)"
scripts/test-gpu-check.sh

step "NVRTC 13.0 and ptxas from pip (the kernels compile in the tests; no GPU needed)"
source scripts/nvrtc-env.sh
export NRPT_REQUIRE_NVRTC=1

step "tests: every crate, one optimized build with debug assertions (the ci profile)"
# One build serves the tests, the bit-identity checks of the vectorized engines (compiled
# as users get them: optimized, with the same instruction sets), the documentation's
# numbers and the Python package (python/Cargo.toml declares the same profile).
# host-shims: nrpt-cuda's tests of the kernels' code compiled for the host (test-only;
# the test crates turn it on too, this names it so that none of them is skipped).
cargo test --workspace --profile ci --features nrpt-cuda/host-shims
export NRPT_BIN="$(target_dir)/ci/nrpt"

step "documentation: API docs with -D warnings, the book (mdBook), its links and numbers"
scripts/docs.sh

step "embedded and WASM: firmware under QEMU, Node test of the .wasm, size limits"
embedded/ci.sh

step "NumPy speed references: their own checks"
python3 -c "import numpy" 2>/dev/null || python3 -m pip install --quiet numpy
python3 benches/numpy/test_nrpt_numpy.py
python3 benches/numpy/test_mlp_numpy.py

step "Python package: the wheel from the background step, then stubtest and its tests against the command"
python_started=$SECONDS
package_status=0
wait "$package_pid" || package_status=$?
cat "$package_log"
if [[ $package_status -ne 0 ]]; then
    echo "error: scripts/python-package.sh failed (exit $package_status; its log above)" >&2
    exit 1
fi
echo "python package: waited $((SECONDS - python_started)) s for the background build"
target=$(target_dir)
if [[ -x "$venv/bin/python" ]]; then
    py="$venv/bin/python"
else
    py=python3
    export PYTHONPATH="$venv"
fi
# The stubs match the installed package, then the tests (the command line is the ci
# build of the tests above).
MYPY_CACHE_DIR="$target/mypy-cache" "$py" -m mypy.stubtest nrpt
NRPT_REQUIRE_CLI=1 NRPT_REQUIRE_MPI=1 "$py" -m pytest -q python/tests
echo "python package: $((SECONDS - python_started)) s"
echo "test suite: $SECONDS s"
