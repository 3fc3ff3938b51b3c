#!/usr/bin/env bash
# The full test suite, from a fresh clone: installs what it needs, then checks
# formatting, lints, the no_std/no-alloc proof of nrpt-core and runs every test.
# Usage: scripts/test.sh        (CI calls exactly this through .ci/run)
# The fast tier, while working: scripts/quick-test.sh (docs/src/contributing/tests.md).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> [%d s] %s\n' "$SECONDS" "$*"; }

step "toolchain: targets and components; NumPy for python3"
rustup target add thumbv7em-none-eabihf wasm32-unknown-unknown
rustup component add rustfmt clippy
# The NumPy speed references and the import check of the manylinux wheel need it.
python3 -c "import numpy" 2>/dev/null || python3 -m pip install --quiet numpy

# One target folder for every cargo command of the suite, the workspace's (target/, or
# $CARGO_TARGET_DIR, or build.target-dir): the embedded workspaces and the Python wheel the
# tests use then reuse what the workspace's lints and tests compiled.
source scripts/target-dir.sh
CARGO_TARGET_DIR=$(target_dir)
export CARGO_TARGET_DIR
target=$CARGO_TARGET_DIR

step "format"
cargo fmt --all --check

step "started in the background at the lowest priority: the Python test environment, and, when its inputs changed, the package as an index gets it (sdist, manylinux2014 abi3 wheel built from it by maturin --zig, checked)"
# Two jobs that share nothing with the steps below and wait on no cargo lock:
#  - env: a fresh virtual environment with python/requirements-ci.txt (scripts/python-env.sh;
#    a folder for PYTHONPATH where python3 has no venv module), removed at the end; the
#    tests' wheel goes into it at the Python step;
#  - package: scripts/python-package.sh --profile wheel-check --no-install, in a target
#    folder of its own (zig, the linker, enters every crate's fingerprint, so nothing is
#    shared anyway): the sdist builds alone, the wheel's tags and glibc symbols, it
#    imports. Only checked, never tested, so compiled in the cheapest profile (root
#    Cargo.toml). The last step waits for it and prints its log.
# Each runs at nice 19 and the idle I/O class: it takes the core the foreground steps leave
# idle (test runs, QEMU, Node, mdBook, pytest) and yields the rest. setsid: a session and
# process group of its own, so that a failing or interrupted suite stops the whole job
# (pip, maturin, cargo, rustc) with it. A new session is also a new scheduler autogroup
# where the kernel has them (sched_autogroup_enabled), and CPU time is shared between
# autogroups whatever the nice values inside them: the job lowers its own group's priority
# too (/proc/self/autogroup, which an unprivileged process may raise), else it would take
# half the machine from the steps below.
python_target="$target/python-package"
mkdir -p "$python_target"
venv=$(mktemp -d "$target/python-venv.XXXXXX")
declare -A job_pid job_log
# background [--normal] NAME COMMAND...: started in the background, its output in a log,
# at the lowest priority (or, with --normal, the suite's own).
background() {
    local low=1
    if [[ $1 == --normal ]]; then low=0; shift; fi
    local name=$1
    shift
    job_log[$name]="$python_target/$name.log"
    setsid bash -c '
        if (($1)); then
            echo 19 >/proc/self/autogroup 2>/dev/null || true
            if command -v ionice >/dev/null 2>&1; then shift; exec nice -n 19 ionice -c 3 "$@"; fi
            shift; exec nice -n 19 "$@"
        fi
        shift; exec "$@"' job "$low" "$@" >"${job_log[$name]}" 2>&1 &
    job_pid[$name]=$!
    echo "$name: started (process ${job_pid[$name]}, log ${job_log[$name]})"
}
# finish NAME: waits for the job, prints its log, fails the suite if the job failed.
finish() {
    local name=$1 started=$SECONDS status=0
    wait "${job_pid[$1]}" || status=$?
    unset "job_pid[$name]"
    cat "${job_log[$name]}"
    echo "$name: waited $((SECONDS - started)) s for the background job"
    if ((status != 0)); then
        echo "error: the background job '$name' failed (exit $status; its log above)" >&2
        exit 1
    fi
}
stop_background() {
    local pid
    for pid in "${job_pid[@]}"; do kill -- -"$pid" 2>/dev/null || true; done
    for pid in "${job_pid[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$venv"
}
trap stop_background EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
background python-env scripts/python-env.sh "$venv"
# The manylinux wheel is built and checked when what decides it changed
# (scripts/wheel-inputs.sh: the Python crate, the manifests, Cargo.lock, the packaging
# script) since the check recorded in python/manylinux-checked.sha256, which a passing
# check rewrites (commit it); NRPT_WHEEL_CHECK=always builds it whatever the record says,
# as a release does, and never skips it (a local run; CI keeps the default, auto). It is the suite's largest build that shares nothing (about a third
# of the suite's CPU time on two cores).
wheel_record=python/manylinux-checked.sha256
wheel_inputs=$(scripts/wheel-inputs.sh)
case ${NRPT_WHEEL_CHECK:-auto} in
    always) wheel_check=1 ;;
    auto) [[ $(cut -d' ' -f1 "$wheel_record" 2>/dev/null) == "$wheel_inputs" ]] && wheel_check=0 || wheel_check=1 ;;
    never) wheel_check=0 ;;
    *) echo "error: NRPT_WHEEL_CHECK is '$NRPT_WHEEL_CHECK': auto (the default), always or never" >&2; exit 2 ;;
esac
if ((wheel_check)); then
    background python-package env CARGO_TARGET_DIR="$python_target" \
        scripts/python-package.sh --profile wheel-check --no-install
else
    echo "python-package: not started: the manylinux wheel's inputs are those it was checked with ($wheel_record: $wheel_inputs); NRPT_WHEEL_CHECK=always checks it again"
fi

step "lints (the workspace, the Python crate among its members)"
cargo clippy --workspace --all-targets -- -D warnings
# nrpt-cuda as the command builds it, without the test-only feature host-shims (the
# workspace's lints above have it: the test crates enable it).
cargo clippy -p nrpt-cuda --all-targets -- -D warnings

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
# numbers and the Python wheel of the next step. nrpt-benches has no test (its library
# is empty, its benches run with cargo bench), but its dev-dependency criterion would
# enable a feature (either's use_std, under rayon) that the Python extension's build does
# not: left out, the wheel reuses every crate built here.
# host-shims: nrpt-cuda's tests of the kernels' code compiled for the host (test-only;
# the test crates turn it on too, this names it so that none of them is skipped). The
# wheel below is built with it as well, else nrpt-cuda and every crate above it would
# compile again for the wheel (nrpt-python's feature host-shims turns it on there; the
# extension calls none of it).
cargo test --workspace --exclude nrpt-benches --profile ci --features nrpt-cuda/host-shims
export NRPT_BIN="$target/ci/nrpt"

step "the Python wheel the tests install: native (no zig), on the build above"
# maturin build --profile ci with this machine's linker, into the same target folder: only
# the extension and the crates nothing else uses (PyO3, numpy) compile. A workspace crate
# compiled again means that its features differ between `cargo test --workspace
# --exclude nrpt-benches` and the extension's own build: compare `cargo tree -e
# normal,build,dev --workspace --exclude nrpt-benches -f '{p} {f}'` with `cargo tree -e
# normal,build -p nrpt-python -f '{p} {f}'`.
native_log="$python_target/python-native.log"
scripts/python-package.sh --native --profile ci --features host-shims --no-install \
    --out "$target/python-native" |
    tee "$native_log"
if grep -E '^ *Compiling nrpt-' "$native_log" | grep -v ' nrpt-python '; then
    echo "error: the native wheel compiled workspace crates again (above), instead of reusing the tests' build" >&2
    exit 1
fi
wheel=$(sed -n 's|^left in \(.*\): \(.*\.whl\)$|\1/\2|p' "$native_log")
[[ -f $wheel ]] || { echo "error: no native wheel named in $native_log" >&2; exit 1; }

step "documentation: API docs with -D warnings, the book (mdBook), its links and numbers"
scripts/docs.sh

step "embedded and WASM (firmware under QEMU, Node test of the .wasm, size limits), started beside the NumPy and Python steps"
# Its cargo builds (the last of the suite) share no lock with the steps below, which run
# no cargo, and much of each side waits on one core (QEMU, Node, pytest): side by side
# they take about the time of the longer. Its log is printed when it is waited for.
background --normal embedded embedded/ci.sh

step "NumPy speed references: their own checks"
python3 benches/numpy/test_nrpt_numpy.py
python3 benches/numpy/test_mlp_numpy.py

step "Python package: the native wheel installed in the environment from the background, then stubtest and its tests against the command"
python_started=$SECONDS
finish python-env
scripts/python-env.sh "$venv" --no-requirements --wheel "$wheel"
if [[ -x "$venv/bin/python" ]]; then
    py="$venv/bin/python"
else
    py=python3
    export PYTHONPATH="$venv"
fi
# The stubs match the installed package, then the tests (the command line is the ci
# build of the tests above).
MYPY_CACHE_DIR="$target/mypy-cache" "$py" -m mypy.stubtest nrpt
"$py" -c 'import torch; print(f"PyTorch {torch.__version__} for the tests of nrpt.torch and torchrun")'
NRPT_REQUIRE_CLI=1 NRPT_REQUIRE_MPI=1 NRPT_REQUIRE_TORCH=1 "$py" -m pytest -q -rs python/tests
echo "python package: $((SECONDS - python_started)) s"

step "embedded and WASM: the job started after the documentation"
finish embedded

if ((wheel_check)); then
    step "the Python package as an index gets it: the background job's sdist and manylinux wheel, checked"
    finish python-package
    if [[ $(scripts/wheel-inputs.sh) == "$wheel_inputs" ]]; then
        printf '%s  the inputs (scripts/wheel-inputs.sh) of the manylinux wheel scripts/test.sh last built and checked\n' \
            "$wheel_inputs" >"$wheel_record"
        echo "recorded in $wheel_record (commit it: the suite then skips this build until the inputs change)"
    else
        echo "not recorded: the inputs changed while the suite ran"
    fi
fi
echo "test suite: $SECONDS s"
