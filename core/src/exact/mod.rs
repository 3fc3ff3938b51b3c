//! Exact tempering on an annealing path: MALA or HMC explorers, Metropolis swaps between
//! known inverse temperatures, the communication barrier, the barrier-based schedule, log Z by
//! stepping stone, and the number of chains.
//!
//! This is the setting of Syed, Bouchard-Côté, Deligiannidis and Doucet,
//! "Non-reversible parallel tempering: a scalable highly parallel MCMC scheme" (JRSS-B
//! 2022), which Deng et al.'s windowed DEO builds on, and of Pigeons.jl, its reference
//! implementation. Energies are exact and every level's distribution is known up to a
//! constant:
//!
//! ```text
//! π_β ∝ π₀ e^{βℓ},   ℓ = log π₁ − log π₀,   level l at β_l:  1 = β_0 > β_1 > … > β_{P−1} = 0,
//! ```
//!
//! so level 0 samples the target π₁ and level P − 1 the reference π₀, drawn exactly.
//!
//! # The parts (one idea per module; derivations in each module's docs)
//!
//! - [`path`]: the [`AnnealingPath`] trait (log π₀ and ℓ with gradients, exact draws
//!   from π₀) and what the stepping stone then estimates; [`gaussian`]: the
//!   [`GaussianPath`] N(0, σ₀²I) → N(0, σ₁²I) with every closed form (τ_β, log Z(β),
//!   λ(β), Λ(β), Λ), derived there.
//! - [`mala`]: the MALA explorer, [`mala_explore`] at each β > 0 (step size adapted
//!   towards acceptance 0.574), [`reference_draw`] at β = 0.
//! - [`hmc`]: the HMC explorer, [`hmc_explore`]: L leapfrog steps with a jittered step
//!   size, adapted towards acceptance 0.65; usable on its own as a plain HMC sampler.
//! - [`explorer`]: what both share: the tempered density and gradient
//!   ([`tempered_gradient`]), the Robbins–Monro step-size update ([`adapt_step`]) and the
//!   error of one explorer call ([`ExploreError`]); [`ExactExplorer`] chooses one for a
//!   run.
//! - [`swap`]: the Metropolis swap `log A = (β_l − β_{l+1})(ℓ(x_{l+1}) − ℓ(x_l))` (sign
//!   derived for nrpt's level order) as a [`PairTest`](crate::swap::PairTest) for the
//!   one windowed sweep [`crate::swap::sweep_with`] (DEO_W, W = 1 vanilla, SEO).
//! - [`barrier`]: Λ̂ = Σ r_l, the monotone cubic Λ̂(β) and its derivative λ̂(β), and the
//!   grid at equal barrier ([`Barrier`]).
//! - [`schedule`]: rounds of doubling length, the grid re-placed after each
//!   ([`ScheduleOptions`]), and the grid's rules ([`check_grid`]).
//! - [`evidence`]: forward and reverse stepping stone with log-sum-exp, batch-means
//!   standard errors ([`LogMeanExp`], [`Estimate`]).
//! - [`variational`]: a mean-field Gaussian reference fitted to the target level at the
//!   end of every round ([`VariationalPath`], around any path), which shortens the path
//!   from a far reference (Surjanovic et al., NeurIPS 2022); [`two_leg`]: the stabilized
//!   ladder that keeps the fixed reference on a second leg ([`TwoLegTempering`]).
//! - [`chains`]: the predicted round-trip rate 1/(2 + 2Σ r/(1 − r)), its limit
//!   1/(2 + 2Λ), and two rules for the number of chains ([`recommended_chains`]).
//! - The run: [`ExactTempering`] with its [`ExactOptions`], over [`ExactBuffers`] the
//!   caller owns; [`RoundReport`] summarizes each round, [`ExactReport`] each iteration;
//!   [`ExactProgress`] is where it stands (to save and resume); [`NoPath`] the path of a
//!   run whose caller explores ([`ExactTempering::tell`]).
//!
//! # One iteration k
//!
//! 1. **Explore**: the replica at each level l with β_l > 0 takes
//!    [`ExactExplorer::steps_per_iteration`] MALA steps or HMC trajectories at β_l with
//!    the level's step size (then adapted, unless frozen); at β = 0 it is replaced by an
//!    exact draw from π₀. Its ℓ is stored by replica.
//! 2. **Stepping stone**: for every pair, the terms (β_l − β_{l+1}) ℓ(x_{l+1}) and
//!    −(β_l − β_{l+1}) ℓ(x_l) are added to the round's log-mean-exp sums.
//! 3. **Swap**: [`crate::swap::sweep_with`]'s windowed pass with the Metropolis test:
//!    every pair's acceptance probability α_l is recorded (r̂_l is the round's mean of
//!    1 − α_l), the eligible pairs with open gates swap with probability α_l.
//! 4. **Book-keeping**: attempted and accepted swaps per pair, standard round trips and
//!    restarts ([`crate::index::observe_arrival`]), the authors' count too.
//! 5. At the end of a round (`first_round · 2^r` iterations): Λ̂ and the knots of Λ̂(β),
//!    log Z with its error, the predicted round-trip rate, in a [`RoundReport`]; then
//!    the grid moves to equal barrier and the next round, twice as long, starts.
//!
//! # Driving a run
//!
//! ```
//! use nrpt_core::exact::{
//!     ChainRule, ExactBuffers, ExactOptions, ExactTempering, GaussianPath, LevelRecord,
//!     PairRecord, recommended_chains,
//! };
//!
//! const P: usize = 8;
//! const D: usize = 2;
//! let (mut states, mut ells, mut betas) = ([0.0; P * D], [0.0; P], [0.0; P]);
//! let mut levels = [LevelRecord::default(); P];
//! let (mut at, mut of, mut trips) = ([0u32; P], [0u32; P], [0u8; P]);
//! let (mut gates, mut flags) = ([false; P - 1], [0u8; P - 1]);
//! let mut pairs = [PairRecord::default(); P - 1];
//! // Scratch for the default explorer, MALA (HMC: HMC_SCRATCH_VECTORS · D).
//! let (mut knots, mut values, mut scratch) = ([0.0; P], [0.0; P], [0.0; 4 * D]);
//! let buffers = ExactBuffers {
//!     states: &mut states, log_likelihoods: &mut ells, betas: &mut betas,
//!     levels: &mut levels, replica_at: &mut at, level_of: &mut of, trips: &mut trips,
//!     gates: &mut gates, flags: &mut flags, pairs: &mut pairs,
//!     barrier_betas: &mut knots, barrier_values: &mut values, scratch: &mut scratch,
//! };
//! // Reference N(0, I₂), target N(0, 0.1 I₂): Λ = ln 10 / 2 ≈ 1.15, log Z = ln(0.2π).
//! let path = GaussianPath::standard(D)?;
//! let mut pt = ExactTempering::new(ExactOptions { seed: 7, ..ExactOptions::default() }, path, buffers)?;
//! for _ in 0..10 {
//!     // Rounds of 2, 4, …, 1024 iterations; the grid moves to equal barrier after each.
//!     let Ok(round) = pt.run_round(); // the Gaussian path cannot fail
//!     println!("round {}: Λ̂ = {:.3}, log Z = {:.3} ± {:.3}", round.round,
//!         round.global_barrier, round.log_normalizer.value, round.log_normalizer.standard_error);
//! }
//! let last = *pt.last_round().unwrap();
//! assert!((last.global_barrier - pt.path().global_barrier()).abs() < 0.2);
//! assert!((last.log_normalizer.value - pt.path().log_evidence()).abs() < 0.3);
//! // λ̂(β) of the last round, and the chains a parallel machine would want.
//! let lambda_mid = pt.barrier().local(0.5);
//! let chains = recommended_chains(last.global_barrier, ChainRule::NEAR_LIMIT_5_PERCENT)?;
//! # let _ = (lambda_mid, chains);
//! # Ok::<(), nrpt_core::Error>(())
//! ```
//!
//! HMC explorers instead: `explorer: ExactExplorer::Hmc(HmcOptions::default())` in the
//! options and a scratch of [`HMC_SCRATCH_VECTORS`]·D ([`ExactBuffers::lengths`] gives
//! every length for the chosen explorer).
//!
//! To run with another number of chains P′, give the next run's `betas` the grid
//! `pt.barrier().equal_barrier_grid(&mut new_betas)` and
//! [`InitialGrid::Keep`]. For a final measurement round with a fixed kernel, call
//! [`ExactTempering::set_adapt_grid`] and [`ExactTempering::set_adapt_steps`] with
//! `false` before it.
//!
//! # Your own explorer: tell
//!
//! A caller with its own exact sampler (NUTS on π₀ e^{βℓ}, a Gibbs sampler, exact
//! draws) builds the run with [`ExactTempering::told`] over buffers without states
//! ([`ExactBuffers::told_lengths`]: the path is [`NoPath`]), moves each replica r at
//! β = `betas()[level_of()[r]]` and calls [`ExactTempering::tell`] with the P values of
//! ℓ by replica. `tell` runs the code `step` runs after its exploration (one function,
//! not a copy), so a run told the ℓ that a `step` run computed makes its swaps, grids
//! and estimates bit for bit (`core/tests/it/exact_told.rs`).
//!
//! # Saving and resuming
//!
//! [`ExactTempering::progress`] is everything but the buffers, plain data
//! ([`ExactProgress`]); [`ExactTempering::resume`] (or [`ExactTempering::resume_told`])
//! over the saved buffers and progress continues the run with the same bits, after
//! checking that they can be a run's state.
//!
//! # Randomness
//!
//! Philox streams keyed by (seed, ensemble): replica r explores at iteration k from
//! stream [`EXACT_EXPLORE`](crate::rng::streams::EXACT_EXPLORE) of (k, r); the swaps
//! of iteration k come from [`EXACT_SWAP`](crate::rng::streams::EXACT_SWAP) of
//! (k, [`ENSEMBLE_WIDE`](crate::rng::ENSEMBLE_WIDE)); initial states from
//! [`EXACT_INIT`](crate::rng::streams::EXACT_INIT) of (0, r). Results depend on (seed,
//! ensemble) alone, not on the order in which levels are processed.
//!
//! # Cost
//!
//! Per iteration and level with β > 0, with T = `steps_per_iteration`: MALA makes T + 1
//! evaluations of log π₀ and ℓ with gradients and draws T(2⌈D/2⌉ + 1) words; HMC with L
//! leapfrog steps makes 1 + T·L evaluations (fewer when a trajectory stops at a
//! non-finite value) and draws T(2⌈D/2⌉ + 2) words
//! ([`ExactExplorer::gradients_per_iteration`]). At β = 0: one exact draw and one ℓ;
//! then O(P) for the sweep and records. All in `f64`, no allocation; memory is the
//! caller's buffers, `8·(P·D + 4P + S·D)` bytes of floats (S = 4 for MALA, 5 for HMC) and
//! about `190·P` of records and permutation.

pub mod barrier;
mod buffers;
pub mod chains;
mod driver;
pub mod evidence;
pub mod explorer;
pub mod gaussian;
pub mod hmc;
pub mod mala;
mod options;
pub mod path;
mod report;
pub mod schedule;
pub mod swap;
pub mod two_leg;
pub mod variational;

pub use barrier::{Barrier, cumulative_from_rejections};
pub use buffers::{ExactBuffers, Lengths, LevelRecord, PairRecord};
pub use chains::{
    ChainRule, equal_rejection_rate, limit_rate, recommended_chains, round_trip_rate,
};
pub use driver::{ExactProgress, ExactTempering};
pub use evidence::{BATCHES, BatchMeans, Estimate, LogMeanExp, batch_of};
pub use explorer::{
    ExploreError, MAX_STEP, MIN_STEP, TemperedPoint, adapt_step, tempered_gradient,
};
pub use gaussian::{GaussianPath, barrier_constant};
pub use hmc::{HMC_SCRATCH_VECTORS, HmcOptions, HmcOutcome, hmc_explore};
pub use mala::{MALA_SCRATCH_VECTORS, MalaOptions, MalaOutcome, mala_explore, reference_draw};
pub use options::{ExactExplorer, ExactOptions, StartStates};
pub use path::{AnnealingPath, NoPath, NoPathError, log_tempered};
pub use report::{ExactReport, RoundReport};
pub use schedule::{InitialGrid, ScheduleOptions, check_grid, uniform_grid};
pub use swap::{SwapTest, TemperedSwaps, swap_acceptance, swap_log_ratio};
pub use two_leg::{TwoLegReport, TwoLegTempering, VARIATIONAL_LEG_ENSEMBLE};
pub use variational::{GaussianFit, VariationalOptions, VariationalPath};
