//! The tempering state machine: one full iteration of one ensemble, over storage the
//! caller owns.
//!
//! An iteration k does, in order:
//! 1. **explore**: every replica takes one step (SGLD, SGD or momentum SGD) with the
//!    learning rate and temperature of its level;
//! 2. **energies**: the stochastic energy of every replica at its new state, stored by
//!    level (computed right after the replica's step, in the same pass);
//! 3. **indicators** of every adjacent pair by the swap rule;
//! 4. **windowed swaps** of the eligible pairs with open gates (DEO_W) or of the pairs of
//!    a random parity (SEO), on the replica/level permutation;
//! 5. **adaptation** of the ladder and of the correction buffer towards the target
//!    swap rate;
//! 6. **book-keeping**: per-pair counts, round trips and restarts.
//!
//! Every random draw comes from a Philox stream keyed by (seed, ensemble) and addressed
//! by (iteration, replica, purpose): results do not depend on the order in which
//! replicas or ensembles are processed, and the CUDA kernels reproduce them. Replica r
//! at iteration k reads stream `STEP` of (k, r) in this order: its gradient noise, its
//! Langevin noise (only if its level's temperature is above 0), its energy noise; the
//! ensemble's swap draws come from stream `SWAP` of (k, `ENSEMBLE_WIDE`); initial states
//! from stream `INIT` of (0, r). See [`crate::rng::streams`].

use bytemuck::{Pod, Zeroable};

use crate::adapt::{
    AdaptOptions, adapt_buffer, adapt_ladder_indicators, check_ladder_ends, geometric_ladder,
};
use crate::error::{Error, check_chains, check_len, check_non_negative};
use crate::explore::{Explorer, langevin_step, momentum_step, noise_scale};
use crate::index::{IndexStats, PairStats, TripState, init_identity, observe_arrival};
use crate::rng::{ENSEMBLE_WIDE, PhiloxStream, UnitDraw, fill_normals, streams};
use crate::swap::{RuleInputs, SwapBuffers, SwapRule, SweepBuffers, flags, sweep};
use crate::target::EnergyOracle;
use crate::window::Scheme;

/// Temperatures of the levels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Temperatures {
    /// The paper's SGD explorers: T₀ = 1 at the target, T = 0 above (the explorers'
    /// spread comes from gradient noise and large learning rates).
    SgdExplorers,
    /// The same temperature T at every level.
    Constant(f64),
    /// Geometric from 1 at level 0 to `max` at level P − 1.
    Geometric {
        /// Temperature of the hottest level (> 1).
        max: f64,
    },
    /// `T_l = η_l / η₀`, following the ladder as it adapts (the linear relation
    /// between learning rate and temperature that motivates the paper's adaptation).
    FollowLadder,
}

/// Where the replicas start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InitialStates {
    /// Every coordinate uniform in [low, high), drawn from the INIT stream of each
    /// replica (the paper: U(−1, 1)).
    Uniform {
        /// Lower bound.
        low: f64,
        /// Upper bound (> low).
        high: f64,
    },
    /// Keep the states the caller put in the storage.
    Keep,
}

/// Everything that configures a tempering run of one ensemble. `Default` is the
/// paper's 2D toy experiment with the optimal window of P = 16 chains (DEO⋆-SGD×P16).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TemperingOptions {
    /// Swap scheme and window.
    pub scheme: Scheme,
    /// Swap rule.
    pub rule: SwapRule,
    /// Exploration kernel.
    pub explorer: Explorer,
    /// Level temperatures.
    pub temperatures: Temperatures,
    /// Smallest learning rate η₀ (the target level).
    pub ladder_min: f64,
    /// Largest learning rate η_{P−1} (the hottest explorer).
    pub ladder_max: f64,
    /// Initial correction buffer C of the buffered rule.
    pub initial_buffer: f64,
    /// Adaptation of the ladder and buffer.
    pub adapt: AdaptOptions,
    /// Initial states.
    pub init: InitialStates,
    /// Seed of the Philox streams.
    pub seed: u32,
    /// Index of this ensemble (second key word of the Philox streams).
    pub ensemble: u32,
}

impl Default for TemperingOptions {
    /// DEO⋆-SGD on the paper's toy: W = 8, buffered rule, SGD explorers, η from 0.003
    /// to 0.6, C₀ = 4, S = 0.4, γ_k = 50/(k^0.8 + 500), x₀ ~ U(−1, 1)².
    fn default() -> Self {
        TemperingOptions {
            scheme: Scheme::Deo { window: 8 },
            rule: SwapRule::Buffered,
            explorer: Explorer::Langevin,
            temperatures: Temperatures::SgdExplorers,
            ladder_min: 0.003,
            ladder_max: 0.6,
            initial_buffer: 4.0,
            adapt: AdaptOptions::default(),
            init: InitialStates::Uniform {
                low: -1.0,
                high: 1.0,
            },
            seed: 0,
            ensemble: 0,
        }
    }
}

impl Temperatures {
    /// Writes the temperature of every level for the given ladder (same length P ≥ 2):
    /// what the driver uses at the start and, for [`Temperatures::FollowLadder`],
    /// after every ladder update.
    pub fn fill(&self, ladder: &[f64], temperatures: &mut [f64]) {
        let top = temperatures.len().saturating_sub(1).max(1);
        for (l, t) in temperatures.iter_mut().enumerate() {
            *t = match *self {
                Temperatures::SgdExplorers => {
                    if l == 0 {
                        1.0
                    } else {
                        0.0
                    }
                }
                Temperatures::Constant(c) => c,
                Temperatures::Geometric { max } => libm::pow(max, l as f64 / top as f64),
                Temperatures::FollowLadder => ladder[l] / ladder[0],
            };
        }
    }
}

impl TemperingOptions {
    /// Checks every field; `Error` names the first one that is wrong.
    pub fn validate(self) -> Result<Self, Error> {
        self.scheme.validate()?;
        self.explorer.validate()?;
        self.adapt.validate()?;
        check_ladder_ends(self.ladder_min, self.ladder_max)?;
        check_non_negative("initial_buffer", self.initial_buffer)?;
        match self.temperatures {
            Temperatures::Constant(t) => check_non_negative("temperature", t)?,
            Temperatures::Geometric { max } => {
                if !(max.is_finite() && max > 1.0) {
                    return Err(Error::InvalidValue {
                        name: "temperatures.max",
                        value: max,
                        allowed: "finite and > 1",
                    });
                }
            }
            Temperatures::SgdExplorers | Temperatures::FollowLadder => {}
        }
        if self.rule == SwapRule::Metropolis {
            let positive = match self.temperatures {
                Temperatures::Constant(t) => t > 0.0,
                Temperatures::SgdExplorers => false,
                Temperatures::Geometric { .. } | Temperatures::FollowLadder => true,
            };
            if !positive {
                return Err(Error::InvalidValue {
                    name: "temperatures",
                    value: 0.0,
                    allowed: "> 0 at every level for the Metropolis rule",
                });
            }
        }
        if let InitialStates::Uniform { low, high } = self.init
            && !(low.is_finite() && high.is_finite() && low < high)
        {
            return Err(Error::InvalidValue {
                name: "init.high",
                value: high,
                allowed: "finite and > init.low",
            });
        }
        Ok(self)
    }

    /// The `#[repr(C)]` parameter block that the CUDA kernels read.
    pub fn params(&self, chains: usize, dim: usize) -> KernelParams {
        let momentum = match self.explorer {
            Explorer::Langevin => 0.0,
            Explorer::Momentum { momentum } => momentum,
        };
        KernelParams {
            target_swap_rate: self.adapt.target_swap_rate,
            gamma_a: self.adapt.schedule.a,
            gamma_alpha: self.adapt.schedule.alpha,
            gamma_b: self.adapt.schedule.b,
            buffer_scale: self.adapt.buffer_scale,
            momentum,
            ladder_min: self.ladder_min,
            ladder_max: self.ladder_max,
            chains: chains as u32,
            dim: dim as u32,
            window: self.scheme.window_code(),
            rule: self.rule.code(),
            explorer: u32::from(self.explorer.has_momentum()),
            adapt_flags: u32::from(self.adapt.adapt_ladder)
                | (u32::from(self.adapt.adapt_buffer) << 1)
                | (u32::from(self.temperatures == Temperatures::FollowLadder) << 2),
            seed: self.seed,
            ensemble: self.ensemble,
        }
    }
}

/// The parameters of a run as one plain `#[repr(C)]` block (96 bytes, no padding),
/// mirrored field for field by the CUDA kernels' header.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct KernelParams {
    /// Target swap rate S.
    pub target_swap_rate: f64,
    /// Step-size numerator a.
    pub gamma_a: f64,
    /// Step-size exponent α.
    pub gamma_alpha: f64,
    /// Step-size offset b.
    pub gamma_b: f64,
    /// Buffer update scale c.
    pub buffer_scale: f64,
    /// Momentum μ (0 for Langevin explorers).
    pub momentum: f64,
    /// η₀.
    pub ladder_min: f64,
    /// η_{P−1}.
    pub ladder_max: f64,
    /// P.
    pub chains: u32,
    /// D.
    pub dim: u32,
    /// Window W for DEO, 0 for SEO.
    pub window: u32,
    /// 0 buffered, 1 Metropolis.
    pub rule: u32,
    /// 0 Langevin (SGLD/SGD), 1 momentum.
    pub explorer: u32,
    /// Bit 0 adapt ladder, bit 1 adapt buffer, bit 2 temperatures follow the ladder.
    pub adapt_flags: u32,
    /// Philox seed.
    pub seed: u32,
    /// Ensemble index.
    pub ensemble: u32,
}

/// The caller-owned buffers of one ensemble of P replicas in D dimensions.
#[derive(Debug)]
pub struct Storage<'a, F> {
    /// States, replica-major: replica r is `states[r·D .. (r+1)·D]` (length P·D).
    pub states: &'a mut [F],
    /// Momenta, same layout (length P·D for momentum explorers, else may be empty).
    pub momenta: &'a mut [F],
    /// Energy of the replica at each level (length P).
    pub energies: &'a mut [F],
    /// Learning rate of each level (length P).
    pub ladder: &'a mut [f64],
    /// Temperature of each level (length P).
    pub temperatures: &'a mut [f64],
    /// Replica at each level (length P).
    pub replica_at: &'a mut [u32],
    /// Level of each replica (length P).
    pub level_of: &'a mut [u32],
    /// Round-trip state of each replica (length P).
    pub trips: &'a mut [TripState],
    /// Gate of each pair (length P − 1).
    pub gates: &'a mut [bool],
    /// Swap flags of each pair at the last iteration (length P − 1).
    pub flags: &'a mut [u8],
    /// Counts of each pair (length P − 1).
    pub pair_stats: &'a mut [PairStats],
    /// Scratch for one gradient and one noise vector (length 2·D).
    pub scratch: &'a mut [F],
}

impl<F> Storage<'_, F> {
    /// Checks every length against P (taken from `energies`) and D.
    pub fn check(&self, dim: usize, momentum: bool) -> Result<usize, Error> {
        let p = self.energies.len();
        check_chains(p)?;
        check_len("states", self.states.len(), p * dim)?;
        if momentum {
            check_len("momenta", self.momenta.len(), p * dim)?;
        }
        check_len("ladder", self.ladder.len(), p)?;
        check_len("temperatures", self.temperatures.len(), p)?;
        check_len("replica_at", self.replica_at.len(), p)?;
        check_len("level_of", self.level_of.len(), p)?;
        check_len("trips", self.trips.len(), p)?;
        check_len("gates", self.gates.len(), p - 1)?;
        check_len("flags", self.flags.len(), p - 1)?;
        check_len("pair_stats", self.pair_stats.len(), p - 1)?;
        check_len("scratch", self.scratch.len(), 2 * dim)?;
        if dim == 0 {
            return Err(Error::InvalidValue {
                name: "dim",
                value: 0.0,
                allowed: ">= 1",
            });
        }
        Ok(p)
    }

    /// Re-borrows every buffer for a shorter lifetime.
    pub fn reborrow(&mut self) -> Storage<'_, F> {
        Storage {
            states: self.states,
            momenta: self.momenta,
            energies: self.energies,
            ladder: self.ladder,
            temperatures: self.temperatures,
            replica_at: self.replica_at,
            level_of: self.level_of,
            trips: self.trips,
            gates: self.gates,
            flags: self.flags,
            pair_stats: self.pair_stats,
            scratch: self.scratch,
        }
    }
}

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

/// The scalar state of a run: options, oracle, iteration counter, buffer, totals.
#[derive(Clone, Debug)]
pub(crate) struct Engine<O> {
    pub(crate) options: TemperingOptions,
    pub(crate) oracle: O,
    pub(crate) iteration: u64,
    pub(crate) buffer: f64,
    pub(crate) stats: IndexStats,
}

impl<O> Engine<O> {
    /// Validates and initializes the storage: ladder, temperatures, permutation, gates,
    /// counts, momenta and (unless kept) the states.
    pub(crate) fn start<F: UnitDraw>(
        options: TemperingOptions,
        oracle: O,
        s: &mut Storage<'_, F>,
        dim: usize,
    ) -> Result<Self, Error> {
        let options = options.validate()?;
        s.check(dim, options.explorer.has_momentum())?;
        geometric_ladder(options.ladder_min, options.ladder_max, s.ladder)?;
        init_identity(s.replica_at, s.level_of, s.trips);
        s.gates.fill(true);
        s.flags.fill(0);
        s.pair_stats.fill(PairStats::default());
        s.energies.fill(F::ZERO);
        s.momenta.fill(F::ZERO);
        if let InitialStates::Uniform { low, high } = options.init {
            for (r, x) in s.states.chunks_mut(dim).enumerate() {
                let mut rng =
                    PhiloxStream::new(options.seed, options.ensemble, 0, r as u32, streams::INIT);
                for xi in x.iter_mut() {
                    let u = f64::uniform(rand_core::Rng::next_u32(&mut rng));
                    *xi = F::from_f64(low + (high - low) * u);
                }
            }
        }
        let engine = Engine {
            options,
            oracle,
            iteration: 0,
            buffer: options.initial_buffer,
            stats: IndexStats::default(),
        };
        engine.set_temperatures(s.ladder, s.temperatures);
        Ok(engine)
    }

    fn set_temperatures(&self, ladder: &[f64], temperatures: &mut [f64]) {
        self.options.temperatures.fill(ladder, temperatures);
    }

    /// One full iteration (see the module docs).
    pub(crate) fn iterate<F: UnitDraw>(
        &mut self,
        s: &mut Storage<'_, F>,
    ) -> Result<IterationReport, O::Error>
    where
        O: EnergyOracle<F>,
    {
        self.explore(s)?;
        Ok(self.exchange(s))
    }

    /// Phases 1–2: every replica's step and its energy at the new state.
    pub(crate) fn explore<F: UnitDraw>(&mut self, s: &mut Storage<'_, F>) -> Result<(), O::Error>
    where
        O: EnergyOracle<F>,
    {
        let o = self.options;
        let p = s.energies.len();
        let dim = s.scratch.len() / 2;
        let k = self.iteration;
        let kw = k as u32;
        let (seed, ens) = (o.seed, o.ensemble);
        let (grad, noise) = s.scratch.split_at_mut(dim);

        // 1–2. Explore, then the stochastic energy at the new state, replica by replica
        // from one Philox stream each (gradient noise, Langevin noise, energy noise).
        for r in 0..p {
            let level = s.level_of[r] as usize;
            let eta = s.ladder[level];
            let x = &mut s.states[r * dim..(r + 1) * dim];
            let mut rng = PhiloxStream::new(seed, ens, kw, r as u32, streams::STEP);
            self.oracle.gradient(x, grad, &mut rng)?;
            let sigma = noise_scale(o.explorer, eta, s.temperatures[level]);
            if sigma > 0.0 {
                fill_normals(&mut rng, noise);
            }
            let (eta, sigma) = (F::from_f64(eta), F::from_f64(sigma));
            match o.explorer {
                Explorer::Langevin => langevin_step(x, grad, noise, eta, sigma),
                Explorer::Momentum { momentum } => {
                    let v = &mut s.momenta[r * dim..(r + 1) * dim];
                    momentum_step(x, v, grad, noise, eta, F::from_f64(momentum), sigma);
                }
            }
            s.energies[level] = self.oracle.energy(x, &mut rng)?;
        }
        Ok(())
    }

    /// Phases 3–6, from the energies by level: swaps, adaptation, book-keeping; then
    /// the iteration counter moves on.
    pub(crate) fn exchange<F: UnitDraw>(&mut self, s: &mut Storage<'_, F>) -> IterationReport {
        let gamma = self.options.adapt.schedule.gamma(self.iteration);
        self.exchange_with_gamma(s, gamma)
    }

    /// [`Engine::exchange`] with the step size γ_k supplied by the caller.
    pub(crate) fn exchange_with_gamma<F: UnitDraw>(
        &mut self,
        s: &mut Storage<'_, F>,
        gamma: f64,
    ) -> IterationReport {
        let o = self.options;
        let p = s.energies.len();
        let k = self.iteration;
        let kw = k as u32;
        let (seed, ens) = (o.seed, o.ensemble);
        self.stats.nonfinite_energies +=
            s.energies.iter().filter(|e| !e.is_finite()).count() as u64;

        // 3–4. Indicators and windowed swaps.
        let rule = match o.rule {
            SwapRule::Buffered => RuleInputs::Buffered {
                buffer: F::from_f64(self.buffer),
            },
            SwapRule::Metropolis => RuleInputs::Metropolis {
                temperatures: s.temperatures,
            },
        };
        let mut rng = PhiloxStream::new(seed, ens, kw, ENSEMBLE_WIDE, streams::SWAP);
        let summary = sweep(
            k,
            o.scheme,
            rule,
            SweepBuffers {
                energies: s.energies,
                swap: SwapBuffers {
                    replica_at: s.replica_at,
                    level_of: s.level_of,
                    gates: s.gates,
                    flags: s.flags,
                },
            },
            &mut rng,
        );

        // 5. Adaptation, from this iteration's indicators.
        let target = o.adapt.target_swap_rate;
        let flags_now: &[u8] = s.flags;
        if o.adapt.adapt_ladder {
            adapt_ladder_indicators(s.ladder, target, gamma, |l| {
                flags_now[l] & flags::INDICATOR != 0
            });
            if o.temperatures == Temperatures::FollowLadder {
                self.set_temperatures(s.ladder, s.temperatures);
            }
        }
        if o.adapt.adapt_buffer && o.rule == SwapRule::Buffered {
            let mean = f64::from(summary.indicators) / (p - 1) as f64;
            self.buffer = adapt_buffer(self.buffer, mean, target, gamma, o.adapt.buffer_scale);
        }

        // 6. Book-keeping.
        let before = self.stats.round_trips;
        let top = p - 1;
        for (pair, (&f, st)) in s.flags.iter().zip(s.pair_stats.iter_mut()).enumerate() {
            st.indicators += u64::from(f & flags::INDICATOR != 0);
            st.attempts += u64::from(f & flags::ATTEMPT != 0);
            st.nonfinite += u64::from(f & flags::NONFINITE != 0);
            if f & flags::SWAPPED != 0 {
                st.swaps += 1;
                for level in [pair, pair + 1] {
                    let r = s.replica_at[level] as usize;
                    let ev = observe_arrival(&mut s.trips[r], level, r, top);
                    self.stats.record(ev);
                }
            }
        }
        self.iteration += 1;
        IterationReport {
            indicators: summary.indicators,
            swaps: summary.swaps,
            nonfinite_pairs: summary.nonfinite,
            round_trips: (self.stats.round_trips - before) as u32,
        }
    }
}

/// A tempering run of one ensemble over storage the caller owns.
///
/// Build it with [`Tempering::new`], then call [`Tempering::step`] once per
/// iteration. Generic over the float type `F` (`f32` or `f64`) and the oracle `O`.
#[derive(Debug)]
pub struct Tempering<'a, F, O> {
    engine: Engine<O>,
    storage: Storage<'a, F>,
}

impl<'a, F: UnitDraw, O: EnergyOracle<F>> Tempering<'a, F, O> {
    /// Checks the options and every buffer length (P from `storage.energies`, D from
    /// the oracle) and initializes the storage.
    pub fn new(
        options: TemperingOptions,
        oracle: O,
        mut storage: Storage<'a, F>,
    ) -> Result<Self, Error> {
        let dim = oracle.dim();
        let engine = Engine::start(options, oracle, &mut storage, dim)?;
        Ok(Tempering { engine, storage })
    }

    /// Runs one iteration.
    pub fn step(&mut self) -> Result<IterationReport, O::Error> {
        self.engine.iterate(&mut self.storage)
    }

    /// The second half of an iteration for engines that explore by themselves (a
    /// vectorized CPU path, say): after they have moved every replica and written the
    /// energies by level into [`Tempering::storage_mut`], this runs the swaps, the
    /// adaptation and the book-keeping of iteration [`Tempering::iteration`] exactly as
    /// [`Tempering::step`] would, and advances the iteration counter.
    pub fn exchange(&mut self) -> IterationReport {
        self.engine.exchange(&mut self.storage)
    }

    /// [`Tempering::exchange`] with the adaptation step size `gamma` supplied by the
    /// caller; it must equal `self.options().adapt.schedule.gamma(self.iteration())`
    /// for results identical to [`Tempering::step`]. Engines that run many ensembles in
    /// lockstep compute it once per iteration instead of once per ensemble.
    pub fn exchange_with_gamma(&mut self, gamma: f64) -> IterationReport {
        self.engine.exchange_with_gamma(&mut self.storage, gamma)
    }

    /// Write access to the buffers, for engines that explore by themselves (see
    /// [`Tempering::exchange`]). Keep the permutation, gates and counts as they are:
    /// only states, momenta and energies are theirs to write.
    pub fn storage_mut(&mut self) -> &mut Storage<'a, F> {
        &mut self.storage
    }

    /// The first half of an iteration: every replica's exploration step and its
    /// energy, by nrpt-core's scalar code; follow with [`Tempering::exchange`].
    /// `explore` then `exchange` is exactly [`Tempering::step`].
    pub fn explore(&mut self) -> Result<(), O::Error> {
        self.engine.explore(&mut self.storage)
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
    pub fn into_storage(self) -> Storage<'a, F> {
        self.storage
    }

    /// The state of the replica at level 0 (the target: the samples to keep).
    pub fn target_state(&self) -> &[F] {
        let dim = self.storage.scratch.len() / 2;
        let r = self.storage.replica_at[0] as usize;
        &self.storage.states[r * dim..(r + 1) * dim]
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
}
