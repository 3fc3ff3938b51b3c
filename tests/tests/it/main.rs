//! The cross-crate checks (one file each under tests/it/), compiled
//! in one test binary rather than one each: each would link nrpt and compile its own copy of
//! the generic engines, in the optimized ci profile. Each file is a module, so a test is
//! named `FILE::NAME`: `cargo test -p nrpt-tests --test it FILE::` runs one file's tests.

mod determinism;
mod embedded;
mod fast_math;
mod fences;
mod parity;
mod source_targets;
