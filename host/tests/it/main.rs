//! The integration tests of nrpt-host (one file each under tests/it/), compiled
//! in one test binary rather than one each: each would link nrpt and compile its own copy of
//! the generic engines, in the optimized ci profile. Each file is a module, so a test is
//! named `FILE::NAME`: `cargo test -p nrpt-host --test it FILE::` runs one file's tests.
//! The CUDA backend's tests (tests/cuda_backend.rs, tests/cuda_classifier.rs) stay test
//! binaries of their own: scripts/gpu-build.sh ships them by name.

#[path = "../common/mod.rs"]
mod common;

mod adversary;
mod classifier_exact;
mod cli;
mod deep;
mod exact;
mod figures;
mod memory_estimate;
mod mnist1d;
mod reference;
mod reliability;
mod shards;
mod stop;
