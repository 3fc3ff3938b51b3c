//! The integration tests of nrpt-core (one file each under tests/it/), compiled
//! in one test binary rather than one each: each would link nrpt and compile its own copy of
//! the generic engines, in the optimized ci profile. Each file is a module, so a test is
//! named `FILE::NAME`: `cargo test -p nrpt-core --test it FILE::` runs one file's tests.

#[path = "../common/mod.rs"]
mod common;

mod controller;
mod driver;
mod exact;
mod exact_told;
mod index_process;
mod lanes;
mod merged_noise;
mod optimal_reference;
mod properties;
mod two_leg;
mod variational;
