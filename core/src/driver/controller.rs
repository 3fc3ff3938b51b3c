//! The swap controller: the exchange half of an iteration for a caller that explores
//! by itself (ask/tell), over buffers the caller owns. See [`Controller`].

use core::convert::Infallible;

use rand_core::Rng;

use super::options::{InitialStates, Temperatures, TemperingOptions};
use super::storage::Storage;
use super::{Engine, IterationReport, Progress};
use crate::adapt::{adapt_buffer, adapt_ladder_observed};
use crate::error::{Error, check_chains, check_len};
use crate::explore::Explorer;
use crate::index::{IndexStats, PairStats, TripState};
use crate::rng::UnitDraw;
use crate::rules::{MomentumOnSwap, PairEnergies};
use crate::swap::SwapRule;
use crate::swap::flags;
use crate::target::EnergyOracle;

/// The buffers of a [`Controller`] of P replicas, lent by the caller (no states: the
/// caller keeps its own). Contents on entry do not matter for [`Controller::new`],
/// which initializes them; [`Controller::resume`] takes them as a saved run left them.
#[derive(Debug)]
pub struct ControllerBuffers<'a, F> {
    /// Energy of the replica at each level at the last [`Controller::tell`] (length P).
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
}

impl<F> ControllerBuffers<'_, F> {
    /// Checks every length against P (taken from `energies`); returns P.
    pub fn check(&self) -> Result<usize, Error> {
        let p = self.energies.len();
        check_chains(p)?;
        check_len("ladder", self.ladder.len(), p)?;
        check_len("temperatures", self.temperatures.len(), p)?;
        check_len("replica_at", self.replica_at.len(), p)?;
        check_len("level_of", self.level_of.len(), p)?;
        check_len("trips", self.trips.len(), p)?;
        check_len("gates", self.gates.len(), p - 1)?;
        check_len("flags", self.flags.len(), p - 1)?;
        check_len("pair_stats", self.pair_stats.len(), p - 1)?;
        Ok(p)
    }
}

/// The oracle of a controller: there is none. The caller computes the energies, and
/// the rules that would call an oracle in the exchange ([`PairEnergies::FreshPerTest`])
/// are refused when the controller is built, so these methods are never called.
#[derive(Clone, Copy, Debug)]
struct Told;

impl<F: UnitDraw> EnergyOracle<F> for Told {
    type Error = Infallible;

    fn dim(&self) -> usize {
        0
    }

    fn gradient<R: Rng + ?Sized>(
        &mut self,
        _: &[F],
        _: &mut [F],
        _: &mut R,
    ) -> Result<(), Infallible> {
        Ok(())
    }

    fn energy<R: Rng + ?Sized>(&mut self, _: &[F], _: &mut R) -> Result<F, Infallible> {
        Ok(F::from_f64(f64::NAN))
    }
}

/// What the adaptation of a [`Controller`] makes of a pair with a non-finite energy
/// (a diverged model, a NaN loss). Such a pair never swaps and is counted either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NonfinitePairs {
    /// Its indicator is 0 and feeds the adaptation like any other (as in
    /// [`Tempering`](super::Tempering) and every engine of the command line): a
    /// diverged model pushes the buffer down and the ladder's gaps together.
    #[default]
    Adapt,
    /// It is left out of the adaptation: it carries no rate error in the ladder
    /// update ([`adapt_ladder_observed`]; a level between two such pairs keeps its
    /// rate), and the buffer moves by the mean indicator of the finite pairs alone,
    /// not at all when there is none. An iteration without a non-finite energy is the
    /// same, bit for bit, as with [`NonfinitePairs::Adapt`].
    Exclude,
}

/// The swap controller of one ensemble: [`Tempering`](super::Tempering) without the
/// exploration, told the energies by a caller that explores by itself.
///
/// A training loop that keeps P models at P learning rates (a PyTorch loop, say) asks
/// the controller which learning rate each model has, steps every model, computes each
/// one's stochastic energy (a mini-batch loss) and tells the controller those P
/// energies. The controller then runs exactly what [`Tempering::exchange`] runs after
/// the driver's own exploration: the swap indicators and the windowed swaps on the
/// replica/level permutation, the stochastic approximation of the ladder and of the
/// buffer, and the round-trip book-keeping in both countings, with the same Philox
/// streams. It is the same code ([`Tempering`] and [`Controller`] share one engine), so
/// a controller told the energies that a [`Tempering`] run computed makes that run's
/// decisions bit for bit (`core/tests/it/controller.rs` proves it for every rule it
/// accepts).
///
/// **Energies are told by replica**: `energies[r]` is the energy of the caller's model
/// r, which sits at level `level_of[r]` (the models never move; the permutation does).
/// After [`Controller::tell`], [`Controller::learning_rate`] gives each replica's
/// learning rate for the next step and [`Controller::swapped`] whether it changed
/// level (and so, with [`MomentumOnSwap::Reset`], must restart with zero velocity:
/// [`Controller::momentum_reset`]).
///
/// Rules that need the energy function itself are refused: with
/// [`PairEnergies::FreshPerTest`] every pair test draws two fresh energies, which P
/// energies per iteration cannot supply.
///
/// [`Tempering::exchange`]: super::Tempering::exchange
/// [`Tempering`]: super::Tempering
///
/// ```
/// use nrpt_core::driver::{Controller, ControllerBuffers, TemperingOptions};
/// use nrpt_core::index::PairStats;
///
/// const P: usize = 4;
/// let (mut energies, mut ladder, mut temperatures) = ([0.0f64; P], [0.0; P], [0.0; P]);
/// let (mut replica_at, mut level_of, mut trips) = ([0u32; P], [0u32; P], [0u8; P]);
/// let (mut gates, mut flags) = ([false; P - 1], [0u8; P - 1]);
/// let mut pair_stats = [PairStats::default(); P - 1];
/// let buffers = ControllerBuffers {
///     energies: &mut energies,
///     ladder: &mut ladder,
///     temperatures: &mut temperatures,
///     replica_at: &mut replica_at,
///     level_of: &mut level_of,
///     trips: &mut trips,
///     gates: &mut gates,
///     flags: &mut flags,
///     pair_stats: &mut pair_stats,
/// };
/// let mut ctl = Controller::new(TemperingOptions::default(), buffers)?;
/// for k in 0..100u32 {
///     // Step model r with ctl.learning_rate(r), then tell its energy, by replica.
///     let energies: [f64; P] = core::array::from_fn(|r| f64::from((k + 3 * r as u32) % 7));
///     ctl.tell(&energies)?;
///     for r in 0..P {
///         if ctl.momentum_reset(r) { /* zero model r's velocity */ }
///     }
/// }
/// assert_eq!(ctl.iteration(), 100);
/// # Ok::<(), nrpt_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Controller<'a, F: UnitDraw> {
    engine: Engine<Told, Infallible>,
    storage: Storage<'a, F>,
    /// The options as given (the engine's have no explorer and keep no states).
    options: TemperingOptions,
    /// What the adaptation makes of non-finite pairs.
    nonfinite: NonfinitePairs,
}

impl<'a, F: UnitDraw> Controller<'a, F> {
    /// Checks the options and every buffer length and initializes the buffers: the
    /// initial ladder, the temperatures, the identity permutation (replica r at level
    /// r), open gates, zero counts. `options.explorer` and `options.init` are checked
    /// but not used (the caller explores); rules that need the energy function itself
    /// are an [`Error::Unsupported`].
    pub fn new(
        options: TemperingOptions,
        buffers: ControllerBuffers<'a, F>,
    ) -> Result<Self, Error> {
        let (options, engine_options) = Self::check_options(options)?;
        buffers.check()?;
        let mut storage = storage(buffers);
        let engine = Engine::start(engine_options, Told, &mut storage)?;
        Ok(Controller {
            engine,
            storage,
            options,
            nonfinite: NonfinitePairs::Adapt,
        })
    }

    /// Continues a controller: `buffers` hold its state (as [`Controller::buffers`]
    /// showed it) and `progress` its [`Controller::progress`]; the options must be the
    /// ones it ran with. Checks the lengths and that the state is consistent, then goes
    /// on with the same bits as if it had never stopped.
    pub fn resume(
        options: TemperingOptions,
        buffers: ControllerBuffers<'a, F>,
        progress: Progress,
    ) -> Result<Self, Error> {
        let (options, engine_options) = Self::check_options(options)?;
        buffers.check()?;
        let mut storage = storage(buffers);
        let engine = Engine::resume(engine_options, Told, &mut storage, progress)?;
        Ok(Controller {
            engine,
            storage,
            options,
            nonfinite: NonfinitePairs::Adapt,
        })
    }

    /// The caller's options, validated, and the engine's: no exploration (a Langevin
    /// explorer, so the engine keeps no velocities) and no states to draw.
    fn check_options(
        options: TemperingOptions,
    ) -> Result<(TemperingOptions, TemperingOptions), Error> {
        let options = options.validate()?;
        if options.rules.pair_energies == PairEnergies::FreshPerTest {
            return Err(Error::Unsupported {
                what: "fresh energies per pair test (PairEnergies::FreshPerTest) in a controller: \
                       it is told one energy per replica and iteration, and a fresh draw for \
                       each side of each pair test needs the energy function itself; use \
                       PairEnergies::PerLevel",
            });
        }
        let engine = TemperingOptions {
            explorer: Explorer::Langevin,
            init: InitialStates::Keep,
            ..options
        };
        Ok((options, engine))
    }

    /// One iteration's exchange, given the stochastic energy of every replica at its
    /// new state, **by replica** (`energies[r]` for the caller's model r, at level
    /// `level_of[r]`): swaps, adaptation with γ_k of this iteration, book-keeping; then
    /// the iteration counter moves on. A non-finite energy never wins a swap and is
    /// counted (as in [`Tempering`](super::Tempering)); a wrong length is an error that
    /// changes nothing.
    pub fn tell(&mut self, energies: &[F]) -> Result<IterationReport, Error> {
        check_len("energies", energies.len(), self.storage.energies.len())?;
        for (&level, &e) in self.storage.level_of.iter().zip(energies) {
            self.storage.energies[level as usize] = e;
        }
        let gamma = self.engine.step_size();
        let exclude = self.nonfinite == NonfinitePairs::Exclude
            && self.storage.energies.iter().any(|e| !e.is_finite());
        // Excluding: the exchange without its adaptation, then the adaptation here.
        let adapt = self.engine.options.adapt;
        if exclude {
            self.engine.options.adapt.adapt_ladder = false;
            self.engine.options.adapt.adapt_buffer = false;
        }
        let s = &mut self.storage;
        let report = match self.engine.guarded(|e| e.exchange(s, gamma)) {
            Ok(report) => report,
            Err(never) => match never {},
        };
        if exclude {
            self.engine.options.adapt = adapt;
            self.adapt_finite_pairs(gamma.get(), report);
        }
        Ok(report)
    }

    /// The adaptation of [`NonfinitePairs::Exclude`] after an exchange whose own
    /// adaptation was off: the same step γ_k, the non-finite pairs left out.
    fn adapt_finite_pairs(&mut self, gamma: f64, report: IterationReport) {
        let o = &self.engine.options;
        let target = o.adapt.target_swap_rate;
        let s = &mut self.storage;
        let flags_now: &[u8] = s.flags;
        let observed = |l: usize| {
            let f = flags_now[l];
            (f & flags::NONFINITE == 0).then_some(f & flags::INDICATOR != 0)
        };
        if o.adapt.adapt_ladder {
            adapt_ladder_observed(s.ladder, o.rules.ladder_update, target, gamma, observed);
            if o.temperatures == Temperatures::FollowLadder {
                o.temperatures.fill(s.ladder, s.temperatures);
            }
        }
        let finite = flags_now.len() as u32 - report.nonfinite_pairs;
        if o.adapt.adapt_buffer && o.rule == SwapRule::Buffered && finite > 0 {
            let mean = f64::from(report.indicators) / f64::from(finite);
            self.engine.buffer = adapt_buffer(
                self.engine.buffer,
                mean,
                target,
                gamma,
                o.adapt.buffer_scale,
                o.rules.buffer_projection,
            );
        }
    }

    /// Sets what the adaptation makes of pairs with a non-finite energy (default
    /// [`NonfinitePairs::Adapt`], the command line's policy). It is not part of
    /// [`Controller::progress`]: a caller that resumes sets it again.
    pub fn set_nonfinite_pairs(&mut self, policy: NonfinitePairs) {
        self.nonfinite = policy;
    }

    /// What the adaptation makes of non-finite pairs.
    pub fn nonfinite_pairs(&self) -> NonfinitePairs {
        self.nonfinite
    }

    /// Number of replicas P.
    pub fn chains(&self) -> usize {
        self.storage.energies.len()
    }

    /// Learning rate of replica `replica` (of its level) for the next step, or `None`
    /// past the last replica.
    pub fn learning_rate(&self, replica: usize) -> Option<f64> {
        let level = *self.storage.level_of.get(replica)? as usize;
        self.storage.ladder.get(level).copied()
    }

    /// Temperature of replica `replica` (of its level), or `None` past the last one.
    pub fn temperature(&self, replica: usize) -> Option<f64> {
        let level = *self.storage.level_of.get(replica)? as usize;
        self.storage.temperatures.get(level).copied()
    }

    /// Whether replica `replica` changed level at the last [`Controller::tell`]
    /// (`false` before the first and past the last replica).
    pub fn swapped(&self, replica: usize) -> bool {
        let Some(&level) = self.storage.level_of.get(replica) else {
            return false;
        };
        let level = level as usize;
        let f = &self.storage.flags;
        let swapped = |pair: usize| f.get(pair).is_some_and(|&b| b & flags::SWAPPED != 0);
        (level > 0 && swapped(level - 1)) || swapped(level)
    }

    /// Whether replica `replica` must restart with zero velocity: it changed level at
    /// the last [`Controller::tell`] and the rules reset momentum on a swap
    /// ([`MomentumOnSwap::Reset`], the default; the authors' code re-creates both
    /// optimizers). Only momentum explorers have a velocity to reset.
    pub fn momentum_reset(&self, replica: usize) -> bool {
        self.options.rules.momentum_on_swap == MomentumOnSwap::Reset && self.swapped(replica)
    }

    /// Read access to the buffers: ladder and temperatures by level, the permutation,
    /// the trip states, gates, flags of the last iteration and per-pair counts.
    /// (Its `states` and `momenta` are empty: the caller keeps them.)
    pub fn buffers(&self) -> &Storage<'a, F> {
        &self.storage
    }

    /// Gives the buffers back.
    pub fn into_buffers(self) -> ControllerBuffers<'a, F> {
        let s = self.storage;
        ControllerBuffers {
            energies: s.energies,
            ladder: s.ladder,
            temperatures: s.temperatures,
            replica_at: s.replica_at,
            level_of: s.level_of,
            trips: s.trips,
            gates: s.gates,
            flags: s.flags,
            pair_stats: s.pair_stats,
        }
    }

    /// Where the controller stands besides its buffers (see [`Controller::resume`]).
    pub fn progress(&self) -> Progress {
        self.engine.progress()
    }

    /// Iterations told so far.
    pub fn iteration(&self) -> u64 {
        self.engine.iteration
    }

    /// Current correction buffer C.
    pub fn buffer(&self) -> f64 {
        self.engine.buffer
    }

    /// Round trips (both countings), restarts and non-finite energies so far.
    pub fn stats(&self) -> IndexStats {
        self.engine.stats
    }

    /// The validated options, as given.
    pub fn options(&self) -> &TemperingOptions {
        &self.options
    }
}

/// The driver's storage over a controller's buffers: no states, momenta or scratch
/// (D = 0), which the exchange reads only for rules a controller refuses.
fn storage<F>(b: ControllerBuffers<'_, F>) -> Storage<'_, F> {
    Storage {
        states: &mut [],
        momenta: &mut [],
        energies: b.energies,
        ladder: b.ladder,
        temperatures: b.temperatures,
        replica_at: b.replica_at,
        level_of: b.level_of,
        trips: b.trips,
        gates: b.gates,
        flags: b.flags,
        pair_stats: b.pair_stats,
        scratch: &mut [],
        dim: 0,
    }
}
