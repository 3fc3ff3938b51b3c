//! # nrpt: the library behind the `nrpt` command
//!
//! Runs non-reversible parallel tempering ([`nrpt_core`]) for many ensembles at once
//! and turns the runs into the paper's results, scaling studies and figures.
//!
//! - [`engine`]: a [`Job`](engine::Job) (options, target, P chains, E ensembles,
//!   iterations, what to record), the [`Target`](engine::Target) trait that a user's
//!   own posterior implements, and the [`Backend`](engine::Backend) trait, with the
//!   CPU engine ([`engine::cpu`]: SIMD lanes of ensembles, bit-identical to
//!   nrpt-core's scalar driver) and the CUDA engine ([`engine::cuda`]);
//! - [`config`]: the validated run configuration (TOML and flags); [`preset`]: the
//!   paper's rules or the authors' code's, and one key per rule;
//! - [`commands`]: `window`, `run`, `reproduce`, `bench`, `scale`, `devices`;
//! - [`targets`]: the built-in targets (the 2D toy, the sum of modes, the classifier);
//! - [`data`]: the classification data of the data targets: the bundled UCI digits,
//!   users' CSV and `.npy` files, the fixed train/test split;
//! - [`scale`]: round-trip time against P and W beside Lemma 1, with the Bernoulli
//!   index-process simulator;
//! - [`metrics`], [`baselines`], [`figures`], [`output`]: accuracy against the true
//!   density, the SGLD baselines, plots (PNG and SVG), files written atomically;
//! - [`npy`]: NumPy `.npy` arrays, read (users' data) and written (`samples.npy`).
//!
//! ```
//! use std::sync::Arc;
//! use nrpt::engine::cpu::CpuBackend;
//! use nrpt::engine::{Backend, Job};
//! use nrpt::targets::Toy;
//!
//! // The paper's 25-mode 2D target behind noise of scale 2, its settings (W = 8),
//! // 16 chains, 4 ensembles, 2,000 iterations.
//! let target = Arc::new(Toy::modes2d(2.0));
//! let job = Job::new(target, nrpt_core::TemperingOptions::default(), 16, 4, 2_000);
//! let out = CpuBackend::default().run(&job, &nrpt::engine::unobserved)?;
//! println!("{} round trips", out.total_stats().round_trips);
//! # Ok::<(), nrpt::engine::EngineError>(())
//! ```
#[macro_use]
pub mod console;
pub mod baselines;
pub mod checkpoint;
pub mod cli;
pub mod commands;
pub mod config;
pub mod data;
pub mod deep;
pub mod engine;
pub mod error;
pub mod exact;
pub mod figures;
pub mod input;
pub mod interrupt;
pub mod limits;
pub mod machine;
pub mod metrics;
pub mod npy;
pub mod output;
pub mod preset;
pub mod progress;
pub mod scale;
pub mod shard;
pub mod stats;
pub mod targets;

/// The Rust snippets of the README and of the book, compiled and run as this crate's
/// doc tests (`cargo test -p nrpt-host --doc`), so that an example that stops compiling
/// fails CI. A snippet that is an excerpt rather than a program is marked `ignore` in
/// its page, with the reason beside it.
#[cfg(doctest)]
mod documentation {
    #[doc = include_str!("../../README.md")]
    struct Readme;
    #[doc = include_str!("../../docs/src/guide/library.md")]
    struct Library;
    #[doc = include_str!("../../docs/src/contributing/adding-a-target.md")]
    struct AddingATarget;
}
