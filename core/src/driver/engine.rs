//! The one implementation of an iteration, shared by [`crate::Tempering`] (slices)
//! and [`crate::FixedTempering`] (arrays).

use core::fmt;

use rand_core::Rng;

use super::options::{InitialStates, Temperatures, TemperingOptions};
use super::storage::Storage;
use super::{IterationReport, Progress};
use crate::adapt::{StepSize, adapt_buffer, adapt_ladder_indicators, initial_ladder};
use crate::error::{Error, check_len};
use crate::explore::{Explorer, langevin_step, merged_noise_scale, momentum_step, noise_scale};
use crate::float::Float;
use crate::index::{IndexStats, PairStats, authors_pass, init_identity, observe_arrival};
use crate::rng::{ENSEMBLE_WIDE, PhiloxStream, UnitDraw, fill_normals, streams};
use crate::rules::{MomentumOnSwap, PairEnergies, StepEnergy, SweepOrder};
use crate::swap::{
    PairTest, RuleInputs, SwapBuffers, SwapRule, SweepBuffers, flags, rule_indicator, sweep_levels,
    sweep_unchecked,
};
use crate::target::EnergyOracle;

/// The scalar state of a run: options, oracle, iteration counter, buffer, totals, and
/// the error that stopped it, if one did.
#[derive(Clone, Debug)]
pub(crate) struct Engine<O, E> {
    pub(crate) options: TemperingOptions,
    pub(crate) oracle: O,
    pub(crate) iteration: u64,
    pub(crate) buffer: f64,
    pub(crate) stats: IndexStats,
    /// Set when the oracle failed in the middle of an iteration: the states may be
    /// half-stepped, so every later call returns this error.
    pub(crate) failure: Option<E>,
}

impl<O, E: Clone> Engine<O, E> {
    /// Validates the options and the oracle, and initializes the (already checked)
    /// storage: ladder, temperatures, permutation, gates, counts, momenta and (unless
    /// kept) the states.
    pub(crate) fn start<F: UnitDraw>(
        options: TemperingOptions,
        oracle: O,
        s: &mut Storage<'_, F>,
    ) -> Result<Self, Error>
    where
        O: EnergyOracle<F, Error = E>,
    {
        let options = options.validate()?;
        oracle.validate()?;
        check_step_energy(&options, &oracle)?;
        initial_ladder(
            options.rules.initial_ladder,
            options.ladder_min,
            options.ladder_max,
            s.ladder,
        )?;
        init_identity(s.replica_at, s.level_of, s.trips);
        s.gates.fill(true);
        s.flags.fill(0);
        s.pair_stats.fill(PairStats::default());
        s.energies.fill(F::ZERO);
        s.momenta.fill(F::ZERO);
        if options.init != InitialStates::Keep {
            for (r, x) in s.states.chunks_mut(s.dim).enumerate() {
                initial_state(&options, r as u32, x);
            }
        }
        options.temperatures.fill(s.ladder, s.temperatures);
        Ok(Engine {
            options,
            oracle,
            iteration: 0,
            buffer: options.initial_buffer,
            stats: IndexStats::default(),
            failure: None,
        })
    }

    /// An engine that continues a run from `progress`, over storage that already holds
    /// the run's state: validates the options and the oracle, and checks that the
    /// storage is a consistent state (a permutation and its inverse, finite positive
    /// learning rates, finite temperatures, a finite buffer).
    pub(crate) fn resume<F: UnitDraw>(
        options: TemperingOptions,
        oracle: O,
        s: &mut Storage<'_, F>,
        progress: super::Progress,
    ) -> Result<Self, Error>
    where
        O: EnergyOracle<F, Error = E>,
    {
        let options = options.validate()?;
        oracle.validate()?;
        check_step_energy(&options, &oracle)?;
        SwapBuffers {
            replica_at: s.replica_at,
            level_of: s.level_of,
            gates: s.gates,
            flags: s.flags,
        }
        .check()?;
        let bad = |name, value: f64, allowed| Error::InvalidValue {
            name,
            value,
            allowed,
        };
        if let Some(&eta) = s.ladder.iter().find(|e| !(e.is_finite() && **e > 0.0)) {
            return Err(bad("ladder", eta, "finite and > 0 at every level"));
        }
        if let Some(&t) = s
            .temperatures
            .iter()
            .find(|t| !(t.is_finite() && **t >= 0.0))
        {
            return Err(bad("temperatures", t, "finite and >= 0 at every level"));
        }
        if !progress.buffer.is_finite() {
            return Err(bad("buffer", progress.buffer, "finite"));
        }
        Ok(Engine {
            options,
            oracle,
            iteration: progress.iteration,
            buffer: progress.buffer,
            stats: progress.stats,
            failure: None,
        })
    }

    /// Runs `f` unless an earlier failure stopped the run; remembers a new failure.
    pub(crate) fn guarded<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, E>) -> Result<T, E> {
        if let Some(e) = &self.failure {
            return Err(e.clone());
        }
        let out = f(self);
        if let Err(e) = &out {
            self.failure = Some(e.clone());
        }
        out
    }

    /// Where the run stands besides its buffers.
    pub(crate) fn progress(&self) -> Progress {
        Progress {
            iteration: self.iteration,
            buffer: self.buffer,
            stats: self.stats,
        }
    }

    /// The step size γ_k of the current iteration (the schedule was validated, so the
    /// fallback never acts).
    pub(crate) fn step_size(&self) -> StepSize {
        let gamma = self.options.adapt.schedule.gamma(self.iteration);
        StepSize::new(gamma).unwrap_or(StepSize::ZERO)
    }

    /// One whole iteration, unless an earlier failure stopped the run.
    pub(crate) fn iterate<F: UnitDraw>(
        &mut self,
        s: &mut Storage<'_, F>,
    ) -> Result<IterationReport, E>
    where
        O: EnergyOracle<F, Error = E>,
    {
        let gamma = self.step_size();
        self.guarded(|e| {
            e.explore(s)?;
            e.exchange(s, gamma)
        })
    }

    /// Phases 1–2: every replica's step and, with energies per level, its energy at
    /// the new state.
    pub(crate) fn explore<F: UnitDraw>(&mut self, s: &mut Storage<'_, F>) -> Result<(), E>
    where
        O: EnergyOracle<F, Error = E>,
    {
        let o = self.options;
        let p = s.energies.len();
        let dim = s.dim;
        let per_level = o.rules.pair_energies == PairEnergies::PerLevel;
        let momentum = o.explorer.has_momentum();
        for r in 0..p {
            let level = s.level_of[r] as usize;
            let replica = ReplicaStep {
                iteration: self.iteration,
                replica: r as u32,
                eta: s.ladder[level],
                temperature: s.temperatures[level],
            };
            let x = &mut s.states[r * dim..(r + 1) * dim];
            let v = if momentum {
                &mut s.momenta[r * dim..(r + 1) * dim]
            } else {
                &mut []
            };
            let energy = step_replica(&o, &mut self.oracle, replica, x, v, s.scratch, per_level)?;
            if let Some(e) = energy {
                s.energies[level] = e;
            }
        }
        Ok(())
    }

    /// Phases 3–6: swaps, adaptation with step size `gamma`, book-keeping; then the
    /// iteration counter moves on. Calls the oracle only with fresh energies per pair
    /// test.
    pub(crate) fn exchange<F: UnitDraw>(
        &mut self,
        s: &mut Storage<'_, F>,
        gamma: StepSize,
    ) -> Result<IterationReport, E>
    where
        O: EnergyOracle<F, Error = E>,
    {
        let o = self.options;
        let p = s.energies.len();
        let k = self.iteration;

        // 3–4. Indicators and windowed swaps.
        let rule = match o.rule {
            SwapRule::Buffered => RuleInputs::Buffered {
                buffer: F::from_f64(self.buffer),
            },
            SwapRule::Metropolis => RuleInputs::Metropolis {
                temperatures: s.temperatures,
            },
        };
        let mut rng = PhiloxStream::new(o.seed, o.ensemble, k, ENSEMBLE_WIDE, streams::SWAP);
        let swap = SwapBuffers {
            replica_at: s.replica_at,
            level_of: s.level_of,
            gates: s.gates,
            flags: s.flags,
        };
        let summary = match o.rules.pair_energies {
            PairEnergies::PerLevel => {
                self.stats.nonfinite_energies +=
                    s.energies.iter().filter(|e| !e.is_finite()).count() as u64;
                let buffers = SweepBuffers {
                    energies: s.energies,
                    swap,
                };
                sweep_levels(k, o.scheme, o.rules.sweep_order, rule, buffers, &mut rng)
            }
            PairEnergies::FreshPerTest => {
                let mut test = FreshEnergies {
                    oracle: &mut self.oracle,
                    states: s.states,
                    energies: s.energies,
                    dim: s.dim,
                    rule,
                    order: o.rules.sweep_order,
                    key: (o.seed, o.ensemble),
                    iteration: k,
                    swapped_below: None,
                    nonfinite: 0,
                };
                let summary = sweep_unchecked(k, o.scheme, swap, &mut rng, &mut test)?;
                self.stats.nonfinite_energies += test.nonfinite;
                summary
            }
        };

        // A momentum explorer arriving at a level starts with zero velocity.
        if o.explorer.has_momentum() && o.rules.momentum_on_swap == MomentumOnSwap::Reset {
            let dim = s.dim;
            for (pair, &f) in s.flags.iter().enumerate() {
                if f & flags::SWAPPED != 0 {
                    for level in [pair, pair + 1] {
                        let r = s.replica_at[level] as usize;
                        s.momenta[r * dim..(r + 1) * dim].fill(F::ZERO);
                    }
                }
            }
        }

        // 5. Adaptation, from this iteration's indicators.
        let gamma = gamma.get();
        let target = o.adapt.target_swap_rate;
        let flags_now: &[u8] = s.flags;
        if o.adapt.adapt_ladder {
            adapt_ladder_indicators(s.ladder, o.rules.ladder_update, target, gamma, |l| {
                flags_now[l] & flags::INDICATOR != 0
            });
            if o.temperatures == Temperatures::FollowLadder {
                o.temperatures.fill(s.ladder, s.temperatures);
            }
        }
        if o.adapt.adapt_buffer && o.rule == SwapRule::Buffered {
            let mean = f64::from(summary.indicators) / (p - 1) as f64;
            self.buffer = adapt_buffer(
                self.buffer,
                mean,
                target,
                gamma,
                o.adapt.buffer_scale,
                o.rules.buffer_projection,
            );
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
                    let ev = observe_arrival(&mut s.trips[r], level, top);
                    self.stats.record(ev);
                }
            }
        }
        self.stats.authors_round_trips += u64::from(authors_pass(s.trips, s.replica_at, s.flags));
        self.iteration += 1;
        Ok(IterationReport {
            indicators: summary.indicators,
            swaps: summary.swaps,
            nonfinite_pairs: summary.nonfinite,
            round_trips: (self.stats.round_trips - before) as u32,
        })
    }
}

/// Where one replica stands for its exploration step: the iteration, the replica's
/// index (its Philox stream) and the learning rate and temperature of its level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplicaStep {
    /// Iteration k (0-based).
    pub iteration: u64,
    /// Replica r.
    pub replica: u32,
    /// Learning rate η of the replica's level.
    pub eta: f64,
    /// Temperature T of the replica's level.
    pub temperature: f64,
}

/// Why [`explore_replica`] did not step a replica.
#[derive(Clone, Debug, PartialEq)]
pub enum ReplicaError<E> {
    /// A buffer of the wrong length (nothing was touched).
    Buffers(Error),
    /// The oracle's error, from its gradient or energy (the state may be half-stepped).
    Oracle(E),
}

impl<E: fmt::Display> fmt::Display for ReplicaError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplicaError::Buffers(e) => e.fmt(f),
            ReplicaError::Oracle(e) => write!(f, "energy oracle: {e}"),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> core::error::Error for ReplicaError<E> {}

/// One replica's share of phases 1–2, exactly as [`crate::Tempering::explore`] runs it:
/// from stream `STEP` of (k, r) the gradient noise (through the oracle), the sampling
/// noise when its scale ([`noise_scale`]) is above 0 — or, from an oracle whose
/// [`gaussian_gradient`](EnergyOracle::gaussian_gradient) gives its exact gradient and
/// the scale σ_g of its Gaussian gradient noise, both noises as one normal vector of
/// scale [`merged_noise_scale`] — the step of `options.explorer` on
/// `x` (and on the velocity `v` of a momentum explorer; `v` is not read otherwise and
/// may be empty), then, when `energy` is set, the stochastic energy at the new state.
/// Under the rule [`StepEnergy::SharedBatchBeforeStep`] the gradient draws from stream
/// `STEP` of (k, [`ENSEMBLE_WIDE`]) instead, the same for every replica, and the energy
/// is the oracle's [`last_loss`](EnergyOracle::last_loss) before the step (NaN from an
/// oracle that reports none, which the driver refuses when it is built).
///
/// Engines that explore outside the driver (or a caller that keeps its own states,
/// with a [`crate::driver::Controller`] doing the rest) use this to make the same draws
/// as the driver.
///
/// `x` must hold the oracle's D coordinates, `scratch` at least 2·D values (one
/// gradient and one noise vector) and `v`, with a momentum explorer, D values: anything
/// else is a [`ReplicaError::Buffers`] that changes nothing.
pub fn explore_replica<F: UnitDraw, O: EnergyOracle<F>>(
    options: &TemperingOptions,
    oracle: &mut O,
    step: ReplicaStep,
    x: &mut [F],
    v: &mut [F],
    scratch: &mut [F],
    energy: bool,
) -> Result<Option<F>, ReplicaError<O::Error>> {
    let dim = oracle.dim();
    let checks = check_len("x", x.len(), dim)
        .and_then(|()| check_len("scratch", scratch.len().min(2 * dim), 2 * dim))
        .and_then(|()| {
            if options.explorer.has_momentum() {
                check_len("v", v.len(), dim)
            } else {
                Ok(())
            }
        });
    checks.map_err(ReplicaError::Buffers)?;
    step_replica(options, oracle, step, x, v, scratch, energy).map_err(ReplicaError::Oracle)
}

/// The shared-batch energies need an oracle that reports its loss.
fn check_step_energy<F: Float, O: EnergyOracle<F>>(
    options: &TemperingOptions,
    oracle: &O,
) -> Result<(), Error> {
    if options.rules.step_energy == StepEnergy::SharedBatchBeforeStep && !oracle.reports_loss() {
        return Err(Error::Unsupported {
            what: "the shared-batch energies before the step need a data target (an oracle that reports its mini-batch loss)",
        });
    }
    Ok(())
}

/// [`explore_replica`] over buffers already checked (the driver's, checked once by
/// [`crate::Tempering::new`]).
pub(crate) fn step_replica<F: UnitDraw, O: EnergyOracle<F>>(
    options: &TemperingOptions,
    oracle: &mut O,
    step: ReplicaStep,
    x: &mut [F],
    v: &mut [F],
    scratch: &mut [F],
    energy: bool,
) -> Result<Option<F>, O::Error> {
    let o = options;
    let dim = x.len();
    let (grad, rest) = scratch.split_at_mut(dim);
    let noise = &mut rest[..dim];
    let mut rng = PhiloxStream::new(
        o.seed,
        o.ensemble,
        step.iteration,
        step.replica,
        streams::STEP,
    );
    let shared = o.rules.step_energy == StepEnergy::SharedBatchBeforeStep;
    let mut before = None;
    let mut sigma = noise_scale(o.explorer, step.eta, step.temperature);
    if shared {
        // Every replica's gradient from the same draw; its loss is the energy.
        let mut batch = PhiloxStream::new(
            o.seed,
            o.ensemble,
            step.iteration,
            ENSEMBLE_WIDE,
            streams::STEP,
        );
        oracle.gradient(x, grad, &mut batch)?;
        before = oracle.last_loss();
    } else if let Some(gradient_noise) = oracle.gaussian_gradient(x, grad)? {
        // Additive Gaussian gradient noise: it and the sampling noise are one normal
        // vector of the summed variance (the same transition law).
        sigma = merged_noise_scale(step.eta, gradient_noise, sigma);
    } else {
        oracle.gradient(x, grad, &mut rng)?;
    }
    if sigma > 0.0 {
        fill_normals(&mut rng, noise);
    }
    let (eta, sigma) = (F::from_f64(step.eta), F::from_f64(sigma));
    match o.explorer {
        Explorer::Langevin => langevin_step(x, grad, noise, eta, sigma),
        Explorer::Momentum { momentum } => {
            momentum_step(x, v, grad, noise, eta, F::from_f64(momentum), sigma);
        }
    }
    if !energy {
        Ok(None)
    } else if shared {
        // Checked when the engine was built: the oracle reports its loss.
        Ok(Some(before.unwrap_or(F::from_f64(f64::NAN))))
    } else {
        Ok(Some(oracle.energy(x, &mut rng)?))
    }
}

/// The initial state of replica `replica` as [`crate::Tempering::new`] draws it with
/// [`InitialStates::Uniform`]: every coordinate uniform in [low, high) from stream
/// `INIT` of (0, r). Leaves `x` alone with [`InitialStates::Keep`].
pub fn initial_state<F: UnitDraw>(options: &TemperingOptions, replica: u32, x: &mut [F]) {
    if let InitialStates::Uniform { low, high } = options.init {
        let mut rng = PhiloxStream::new(options.seed, options.ensemble, 0, replica, streams::INIT);
        for xi in x.iter_mut() {
            let u = f64::uniform(rng.next_u32());
            *xi = F::from_f64(low + (high - low) * u);
        }
    }
}

/// Indicators from a fresh stochastic energy for each side of each pair test (the
/// authors' code). The energies by level end up holding the last value drawn for the
/// replica now at each level.
struct FreshEnergies<'o, 's, 'r, O, F> {
    oracle: &'o mut O,
    states: &'s [F],
    energies: &'s mut [F],
    dim: usize,
    rule: RuleInputs<'r, F>,
    order: SweepOrder,
    key: (u32, u32),
    iteration: u64,
    /// The pair that swapped last in this pass.
    swapped_below: Option<usize>,
    nonfinite: u64,
}

impl<O, F, R> PairTest<R> for FreshEnergies<'_, '_, '_, O, F>
where
    F: UnitDraw,
    O: EnergyOracle<F>,
    R: Rng + ?Sized,
{
    type Error = O::Error;

    fn indicator(
        &mut self,
        pair: usize,
        replica_at: &[u32],
        rng: &mut R,
    ) -> Result<Option<bool>, O::Error> {
        // The lower state: the one at level `pair` now (sequential), or the one that was
        // there before this pass (simultaneous), which a swap of the pair below has
        // moved down to `pair − 1`.
        let moved_down = self.order == SweepOrder::Simultaneous
            && pair > 0
            && self.swapped_below == Some(pair - 1);
        let cold_level = if moved_down { pair - 1 } else { pair };
        let (cold, hot) = (
            replica_at[cold_level] as usize,
            replica_at[pair + 1] as usize,
        );
        let d = self.dim;
        let mut draws = PhiloxStream::new(
            self.key.0,
            self.key.1,
            self.iteration,
            pair as u32,
            streams::PAIR,
        );
        let e_hot = self
            .oracle
            .energy(&self.states[hot * d..(hot + 1) * d], &mut draws)?;
        let e_cold = self
            .oracle
            .energy(&self.states[cold * d..(cold + 1) * d], &mut draws)?;
        self.nonfinite += u64::from(!e_hot.is_finite()) + u64::from(!e_cold.is_finite());
        self.energies[cold_level] = e_cold;
        self.energies[pair + 1] = e_hot;
        Ok(rule_indicator(self.rule, pair, e_cold, e_hot, rng))
    }

    fn swapped(&mut self, pair: usize) {
        self.energies.swap(pair, pair + 1);
        self.swapped_below = Some(pair);
    }
}
