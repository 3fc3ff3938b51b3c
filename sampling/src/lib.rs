//! # nrpt-sampling: targets, engines and what they read and write
//!
//! Runs non-reversible parallel tempering ([`nrpt_core`]) for many ensembles at once.
//! This crate is the layer every study and the `nrpt` command stand on; it names none
//! of them.
//!
//! - [`engine`]: a [`Job`](engine::Job) (options, target, P chains, E ensembles,
//!   iterations, what to record), the [`Target`](engine::Target) trait that a user's
//!   own posterior implements, and the [`Backend`](engine::Backend) trait, with the
//!   CPU engine ([`engine::cpu`]: SIMD lanes of ensembles, bit-identical to
//!   nrpt-core's scalar driver) and the CUDA engine ([`engine::cuda`]);
//! - [`targets`]: the built-in targets (the 2D toy, the sum of modes, the mixture, the
//!   classifier) and their registration under a name;
//! - [`config`]: the validated run configuration (TOML and flags); [`preset`]: the
//!   paper's rules or the authors' code's, and one key per rule; [`error`]: the error
//!   of a setting a user controls;
//! - [`data`]: the classification data of the data targets: the bundled UCI digits and
//!   MNIST-1D, users' CSV and `.npy` files, the fixed train/test split; [`input`]:
//!   users' files opened safely; [`npy`]: NumPy `.npy` arrays, read and written;
//! - [`stats`]: bootstrap intervals and convergence diagnostics (R̂, ESS);
//! - [`output`]: output folders written atomically, never over what nrpt did not
//!   write; [`json`]: nrpt's JSON, NaN and infinities written as `"NaN"`, `"inf"` and
//!   `"-inf"` and read back; [`interrupt`]: Ctrl-C and SIGTERM as a stop request every long loop hears;
//!   [`limits`]: memory and size caps; [`machine`]: the machine a table was measured
//!   on; [`console`]: printing without panics.
//!
//! ```
//! use std::sync::Arc;
//! use nrpt_sampling::engine::cpu::CpuBackend;
//! use nrpt_sampling::engine::{Backend, Job};
//! use nrpt_sampling::targets::Toy;
//!
//! // The paper's 25-mode 2D target behind noise of scale 2, its settings (W = 8),
//! // 16 chains, 4 ensembles, 2,000 iterations.
//! let target = Arc::new(Toy::modes2d(2.0));
//! let job = Job::new(target, nrpt_core::TemperingOptions::default(), 16, 4, 2_000);
//! let out = CpuBackend::default().run(&job, &nrpt_sampling::engine::unobserved)?;
//! println!("{} round trips", out.total_stats().round_trips);
//! # Ok::<(), nrpt_sampling::engine::EngineError>(())
//! ```
#![deny(missing_docs)]
#[macro_use]
pub mod console;
pub mod config;
pub mod data;
pub mod engine;
pub mod error;
pub mod input;
pub mod interrupt;
pub mod json;
pub mod limits;
pub mod machine;
pub mod npy;
pub mod output;
pub mod preset;
pub mod stats;
pub mod targets;
