//! The `nrpt` library behind the `nrpt` command (see the README).
pub mod baselines;
pub mod cli;
pub mod commands;
pub mod config;
pub mod engine;
pub mod figures;
pub mod interrupt;
pub mod metrics;
pub mod output;
pub mod progress;
pub mod scale;
