#!/usr/bin/env bash
# The fast tier, what to run while working: every test of the workspace in the build that
# the full suite (scripts/test.sh) uses, `cargo test --workspace --exclude nrpt-benches
# --profile ci`, so that after one run of either only what changed compiles again (a
# change in a command: nrpt-host at opt-level 0, and the test programs that link it), less
# the slow tests:
#   - the memory-estimate tests (host/tests/it/memory_estimate.rs: every command's
#     estimate against its measured peak, about a minute of runs);
#   - the kernels' NVRTC and ptxas tests, which skip themselves (and say so) unless NVRTC
#     is installed: this script does not install it (scripts/nvrtc-env.sh does).
# The full suite runs all of them. Nothing is marked #[ignore]: the slow tests are left
# out here by name (--skip), so a test added anywhere runs in both tiers.
# Usage: scripts/quick-test.sh [TEST HARNESS ARGUMENTS...]
#   e.g. scripts/quick-test.sh window      (only the tests whose names contain "window")
# Ends with the seconds it took. Docs: docs/src/contributing/tests.md.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
# The same packages, profile and features as scripts/test.sh's test step (features are
# resolved over the selected packages: another selection would compile other artifacts).
cargo test --workspace --exclude nrpt-benches --profile ci --features nrpt-cuda/host-shims -- --skip memory_estimate:: "$@"
echo "quick tests: $((SECONDS - started)) s"
