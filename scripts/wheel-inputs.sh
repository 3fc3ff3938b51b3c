#!/usr/bin/env bash
# The SHA-256 of what decides whether the manylinux wheel builds, links against glibc
# 2.17 at most and imports (the check of scripts/python-package.sh without --native):
# the Python crate and package (python/, less the record below), the manifests and build
# scripts of every crate it compiles, Cargo.lock, the root Cargo.toml (its profiles), the
# files the sdist carries (kernels/, data/) and the packaging script. Content of the
# working tree, tracked files only, paths included, so a rename counts.
#
# scripts/test.sh builds and checks that wheel only when this hash differs from the one
# recorded in python/manylinux-checked.sha256 (which it rewrites after a check passes:
# commit it), or when NRPT_WHEEL_CHECK=always.
#
# Usage: scripts/wheel-inputs.sh        prints the hash
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z -- python Cargo.lock Cargo.toml core/Cargo.toml cuda/Cargo.toml cuda/build.rs \
    sampling/Cargo.toml studies/Cargo.toml host/Cargo.toml kernels data scripts/python-package.sh |
    grep -zv '^python/manylinux-checked.sha256$' |
    sort -z |
    xargs -0 sha256sum |
    sha256sum | cut -d' ' -f1
