#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
//! # nrpt-core: non-reversible parallel tempering, no `std`, no allocator
//!
//! Sample a multi-modal distribution with P chains at different learning rates that
//! swap states, on a microcontroller, in WebAssembly or on a server.
//!
//! ## Example: 16 chains on the paper's 25-mode target
//!
//! ```
//! use nrpt_core::driver::TemperingOptions;
//! use nrpt_core::fixed::FixedTempering;
//! use nrpt_core::target::{Modes2d, Noisy};
//! use nrpt_core::window::Scheme;
//!
//! // The best integer window for 16 chains at swap rate 0.4: 7 (the exact W⋆ is 7.41).
//! let window = nrpt_core::optimal::optimal_window(16, 0.4)?;
//! let options = TemperingOptions {
//!     scheme: Scheme::Deo { window },
//!     seed: 1,
//!     ..TemperingOptions::default() // the paper's settings: η from 0.003 to 0.6, S = 0.4
//! };
//! // Stochastic gradients and energies with noise of scale 2, as in the paper.
//! let mut pt = FixedTempering::<f64, _, 16, 2>::new(options, Noisy::paper(Modes2d))?;
//! let mut samples = 0.0;
//! for _ in 0..5_000 {
//!     pt.step().expect("the noisy toy oracle cannot fail");
//!     samples += pt.target_state()[0]; // keep the target level's samples
//! }
//! let stats = pt.stats();
//! println!("window {window}: {} round trips in {} iterations", stats.round_trips, pt.iteration());
//! assert!(stats.round_trips > 0);
//! # let _ = samples;
//! # Ok::<(), nrpt_core::Error>(())
//! ```
//!
//! ## What it does
//!
//! Parallel tempering runs P copies ("replicas") of a sampler on a ladder of levels:
//! level 0 samples the target distribution π(x) ∝ exp(−U(x)) with a small learning
//! rate; higher levels explore with larger learning rates (hotter, flatter versions of
//! the target). Neighbouring levels regularly *swap* replicas, so a state found by a
//! bold explorer can travel down to the target level. How fast replicas travel from
//! the bottom of the ladder to the top and back (a *round trip*) measures how well the
//! scheme mixes between modes.
//!
//! This crate implements the scheme of Deng, Zhang, Feng, Liang and Lin,
//! *Non-reversible Parallel Tempering for Deep Posterior Approximation* (AAAI 2023):
//!
//! - [`window`]: deterministic even–odd swaps with a window of W iterations (DEO_W);
//!   W = 1 is vanilla DEO, SEO the reversible baseline;
//! - [`swap`]: the buffered swap rule `e_{l+1} + C < e_l` for SGD explorers with
//!   stochastic energies, and the Metropolis rule for known temperatures;
//! - [`optimal`]: the optimal window W⋆ from the round-trip time of their Lemma 1
//!   (`O(P log P)` instead of `O(P²)` when swaps are rare);
//! - [`adapt`]: stochastic-approximation tuning of the learning-rate ladder and of the
//!   correction buffer towards a target swap rate;
//! - [`index`]: the replica/level permutation, round trips and per-pair counts;
//!   [`bernoulli`]: the index process alone, with Bernoulli indicators;
//! - [`explore`]: SGLD, SGD and momentum-SGD steps; [`target`]: the energy-oracle trait
//!   and the paper's toy targets; [`model`]: classifiers on data (softmax regression,
//!   MLPs) whose mini-batch energies and gradients the sampler explores;
//! - [`rules`]: the paper's rules by default, and the named variants of the authors'
//!   code ([`Rules::AUTHORS_CODE`]) and of earlier nrpt;
//! - [`rng`]: Philox4x32-10, counter-based, so CPU and GPU draw the same numbers;
//! - [`exact`]: exact tempering on a path π₀^(1−β) π₁^β: MALA or HMC explorers (HMC also
//!   on its own, [`exact::hmc_explore`]), barrier, schedule, log Z;
//! - [`driver`]: one full iteration over buffers the caller owns ([`Tempering`]), and
//!   [`fixed`]: the same over arrays of compile-time size ([`FixedTempering`]);
//!   [`Controller`]: the swaps, adaptation and counts alone, told the energies by a
//!   caller that explores by itself (a training loop of P networks: ask/tell);
//!   [`lanes`]: the same exchange for L ensembles in lockstep, stored by level (the
//!   layout of SIMD and GPU engines), from the same rule definitions.
//!
//! Everything runs without `std` and without an allocator (a microcontroller, a WASM
//! module); bad input is a typed [`Error`], never a panic (property tests drive the
//! public API with random options, lengths, NaN and infinities). The feature `gpu`
//! adds the `#[repr(C)]` parameter block of the CUDA kernels (`params`) and
//! `bytemuck::Pod` for it and the counters.

// Unit tests may allocate (property tests, reference walks); the library never does.
#[cfg(test)]
#[macro_use]
extern crate std;

pub mod adapt;
pub mod bernoulli;
pub mod driver;
pub mod error;
pub mod exact;
pub mod explore;
pub mod fastmath;
pub mod fixed;
pub mod float;
pub mod index;
pub mod lanes;
pub mod model;
pub mod optimal;
#[cfg(feature = "gpu")]
pub mod params;
pub mod reduce;
pub mod rng;
pub mod rules;
pub mod swap;
pub mod target;
pub mod window;

pub use driver::{Controller, Tempering, TemperingOptions};
pub use error::Error;
pub use fixed::FixedTempering;
pub use float::Float;
pub use rules::Rules;
