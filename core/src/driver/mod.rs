//! The tempering state machine: one full iteration of one ensemble, over storage the
//! caller owns.
//!
//! An iteration k does, in order:
//! 1. **explore**: every replica takes one step (SGLD, SGD or momentum SGD) with the
//!    learning rate and temperature of its level;
//! 2. **energies**: the stochastic energy of every replica at its new state, stored by
//!    level (computed right after the replica's step, in the same pass), unless the
//!    rules ask for fresh energies per pair test;
//! 3. **indicators** of every adjacent pair by the swap rule;
//! 4. **windowed swaps** of the eligible pairs with open gates (DEO_W) or of the pairs of
//!    a random parity (SEO), on the replica/level permutation; the two replicas of a
//!    swap lose their momentum unless the rules carry it;
//! 5. **adaptation** of the ladder and of the correction buffer towards the target
//!    swap rate;
//! 6. **book-keeping**: per-pair counts, round trips and restarts.
//!
//! Where the paper and other implementations differ, [`TemperingOptions::rules`]
//! chooses (see [`crate::rules`]); the default is the paper.
//!
//! Every random draw comes from a Philox stream keyed by (seed, ensemble) and addressed
//! by (iteration, replica, purpose): results do not depend on the order in which
//! replicas or ensembles are processed, and the CUDA kernels reproduce them. Replica r
//! at iteration k reads stream `STEP` of (k, r) in this order: its gradient noise, its
//! Langevin noise (only if its level's temperature is above 0), its energy noise; the
//! ensemble's swap draws come from stream `SWAP` of (k, `ENSEMBLE_WIDE`); fresh pair
//! energies from stream `PAIR` of (k, pair); initial states from stream `INIT` of
//! (0, r). See [`crate::rng::streams`].
//!
//! ## Exploring elsewhere
//!
//! A caller that keeps its own states and explores them itself (a training loop of P
//! networks, a vectorized engine) drives the same iteration through a [`Controller`]:
//! it tells the P energies by replica and gets the swaps, the ladder and the counts,
//! the same bits as [`Tempering`] for the same energies. [`explore_replica`] and
//! [`initial_state`] are the driver's own exploration step and initial draw of one
//! replica, for callers that want its streams.
//!
//! ## Failures
//!
//! Bad options and buffers are a typed [`Error`] from [`Tempering::new`]. An oracle
//! that fails in the middle of an iteration leaves replicas half-stepped; the sampler
//! then refuses to go on: every later call returns the same error (hence
//! `EnergyOracle::Error: Clone`).

mod controller;
mod engine;
mod options;
mod storage;

pub use controller::{Controller, ControllerBuffers, NonfinitePairs};
pub use engine::{ReplicaError, ReplicaStep, explore_replica, initial_state};
pub use options::{InitialStates, Temperatures, TemperingOptions};

pub use storage::{Buffers, ExploreView, Storage};

pub(crate) use engine::Engine;

use crate::adapt::StepSize;
use crate::error::Error;
use crate::index::IndexStats;
use crate::rng::UnitDraw;
use crate::target::EnergyOracle;

/// What one iteration did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IterationReport {
    /// Pairs whose swap indicator was 1.
    pub indicators: u32,
    /// Swaps executed.
    pub swaps: u32,
    /// Pairs with a non-finite energy.
    pub nonfinite_pairs: u32,
    /// Standard round trips completed at this iteration.
    pub round_trips: u32,
}

/// Where a run stands besides its buffers: the iteration counter, the correction
/// buffer C and the totals. With the buffers (as [`Tempering::storage`] shows them),
/// it is all [`Tempering::resume`] needs to continue the run exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Progress {
    /// Iterations done.
    pub iteration: u64,
    /// The correction buffer C.
    pub buffer: f64,
    /// Round trips, restarts and non-finite counts.
    pub stats: IndexStats,
}

/// A tempering run of one ensemble over buffers the caller owns.
///
/// Build it with [`Tempering::new`], then call [`Tempering::step`] once per
/// iteration. Generic over the float type `F` (`f32` or `f64`) and the oracle `O`.
#[derive(Debug)]
pub struct Tempering<'a, F, O: EnergyOracle<F>>
where
    F: UnitDraw,
{
    engine: Engine<O, O::Error>,
    storage: Storage<'a, F>,
}

impl<'a, F: UnitDraw, O: EnergyOracle<F>> Tempering<'a, F, O> {
    /// Checks the options, the oracle and every buffer length (P from
    /// `buffers.energies`, D from the oracle) and initializes the buffers.
    pub fn new(
        options: TemperingOptions,
        oracle: O,
        buffers: Buffers<'a, F>,
    ) -> Result<Self, Error> {
        let dim = oracle.dim();
        buffers.check(dim, options.explorer.has_momentum())?;
        let mut storage = Storage::from_checked(buffers, dim);
        let engine = Engine::start(options, oracle, &mut storage)?;
        Ok(Tempering { engine, storage })
    }

    /// Continues a run: `buffers` hold its state (every buffer as [`Tempering::storage`]
    /// showed it, momenta and energies included) and `progress` its
    /// [`Tempering::progress`]; the options and oracle must be the run's. Checks the
    /// lengths and that the state is consistent (a permutation and its inverse, finite
    /// positive learning rates, finite temperatures and buffer), then continues exactly
    /// where the run stood: the same bits as if it had never stopped.
    pub fn resume(
        options: TemperingOptions,
        oracle: O,
        buffers: Buffers<'a, F>,
        progress: Progress,
    ) -> Result<Self, Error> {
        let dim = oracle.dim();
        buffers.check(dim, options.explorer.has_momentum())?;
        let mut storage = Storage::from_checked(buffers, dim);
        let engine = Engine::resume(options, oracle, &mut storage, progress)?;
        Ok(Tempering { engine, storage })
    }

    /// Where the run stands besides its buffers (see [`Tempering::resume`]).
    pub fn progress(&self) -> Progress {
        self.engine.progress()
    }

    /// Runs one iteration.
    pub fn step(&mut self) -> Result<IterationReport, O::Error> {
        self.engine.iterate(&mut self.storage)
    }

    /// The first half of an iteration: every replica's exploration step and its
    /// energy, by nrpt-core's scalar code; follow with [`Tempering::exchange`].
    /// `explore` then `exchange` is exactly [`Tempering::step`].
    pub fn explore(&mut self) -> Result<(), O::Error> {
        let s = &mut self.storage;
        self.engine.guarded(|e| e.explore(s))
    }

    /// The second half of an iteration for engines that explore by themselves (a
    /// vectorized CPU path, say): after they have moved every replica and written the
    /// energies by level through [`Tempering::explore_view`], this runs the swaps, the
    /// adaptation and the book-keeping of iteration [`Tempering::iteration`] exactly as
    /// [`Tempering::step`] would, and advances the iteration counter. The oracle is
    /// called only with fresh energies per pair test.
    pub fn exchange(&mut self) -> Result<IterationReport, O::Error> {
        let gamma = self.engine.step_size();
        self.exchange_with_gamma(gamma)
    }

    /// [`Tempering::exchange`] with the adaptation step size supplied by the caller;
    /// it must equal `self.options().adapt.schedule.step_size(self.iteration())` for
    /// results identical to [`Tempering::step`]. Engines that run many ensembles in
    /// lockstep compute it once per iteration instead of once per ensemble.
    pub fn exchange_with_gamma(&mut self, gamma: StepSize) -> Result<IterationReport, O::Error> {
        let s = &mut self.storage;
        self.engine.guarded(|e| e.exchange(s, gamma))
    }

    /// Write access to the states, momenta and energies, for engines that explore by
    /// themselves (see [`Tempering::exchange`]); the permutation, ladder and counts
    /// stay the driver's.
    pub fn explore_view(&mut self) -> ExploreView<'_, F> {
        self.storage.explore_view()
    }

    /// Runs `n` iterations.
    pub fn run(&mut self, n: u64) -> Result<(), O::Error> {
        for _ in 0..n {
            self.step()?;
        }
        Ok(())
    }

    /// Read access to every buffer.
    pub fn storage(&self) -> &Storage<'a, F> {
        &self.storage
    }

    /// Gives the buffers back.
    pub fn into_buffers(self) -> Buffers<'a, F> {
        self.storage.into_buffers()
    }

    /// The state of the replica at level 0 (the target: the samples to keep).
    pub fn target_state(&self) -> &[F] {
        self.storage.state_at_level(0).unwrap_or(&[])
    }

    /// Iterations done.
    pub fn iteration(&self) -> u64 {
        self.engine.iteration
    }

    /// Current correction buffer C.
    pub fn buffer(&self) -> f64 {
        self.engine.buffer
    }

    /// Round trips, restarts and non-finite counts so far.
    pub fn stats(&self) -> IndexStats {
        self.engine.stats
    }

    /// The validated options.
    pub fn options(&self) -> &TemperingOptions {
        &self.engine.options
    }

    /// The oracle.
    pub fn oracle(&self) -> &O {
        &self.engine.oracle
    }

    /// The error that stopped the run, if the oracle failed in the middle of an
    /// iteration (every later call returns it).
    pub fn failure(&self) -> Option<&O::Error> {
        self.engine.failure.as_ref()
    }
}
