//! Exact tempering whose caller explores: the run behind Python's `nrpt.ExactController`,
//! for any loop with its own exact sampler.
//!
//! Kept whole past 600 lines: the controller and its saved form share its private
//! buffers; its reference is in `reference`, its tests in `tests`.
//!
//! The caller keeps P replicas (states of its model) and its own sampler. Each
//! iteration it moves replica r with a sampler that leaves
//! `π_β(x) ∝ π₀(x) · L(x)^β` invariant at β = [`ExactController::betas_by_replica`]`[r]`
//! (β = 0: the reference π₀ alone, drawn or explored exactly; β = 1: the posterior),
//! computes ℓ(x) = log L(x), the log-likelihood of the new state, and
//! [`tells`](ExactController::tell) the P values **by replica**. The controller runs
//! nrpt-core's [`ExactTempering::tell`]: the Metropolis swaps between neighbouring
//! levels (DEO with a window, or SEO), the rounds of doubling length that re-place the β
//! grid at equal barrier, Λ̂ and λ̂(β), log Z = log ∫ π₀ L by the stepping stone, the
//! round trips. Swaps move β between replicas, never the states.
//!
//! It owns its buffers and keeps the core's [`ExactProgress`] between calls (each call
//! resumes the core run over them: an O(P) check, nothing beside a sampler's step), so
//! it is plain data: [`ExactController::encode`] saves it with every bit and
//! [`ExactController::decode`] continues it exactly. Its summary ([`Pooled`] of its last
//! round) and warnings ([`diagnostics()`] with [`Advice::Controller`]) are the command's,
//! computed by the same functions from the controller seen as a run of one ensemble
//! ([`ExactController::outcome`]).
//!
//! # A variational reference
//!
//! [`ExactController::with_reference`] with [`ReferenceKind::Variational`] fits a
//! mean-field Gaussian q = N(m, diag s²) to the posterior level as the run goes, the
//! reference of Surjanovic, Syed, Bouchard-Côté and Campbell ("Parallel tempering with a
//! variational reference", NeurIPS 2022): a path from a q close to the posterior is
//! short (a small Λ), so few chains make many round trips. The caller then
//! [`tells`](ExactController::tell_states) the states of its P replicas beside their ℓ;
//! after the swaps the controller hands the state now at the posterior level to its
//! [`GaussianFit`] (as nrpt-core's own run hands it to a [`VariationalPath`]), and at the
//! end of every round whose grid adapted it fits q to that round's states (once it has
//! [`VariationalOptions::min_samples`](nrpt_core::exact::VariationalOptions::min_samples) of them). Until the first fit the reference is
//! the caller's own π₀; from then on it is q ([`ExactController::reference_mean`],
//! [`ExactController::reference_scale`], [`ExactController::reference_log_density`]):
//! the caller draws β = 0 from q, moves β > 0 with a sampler of q(x)^(1−β) γ₁(x)^β, where
//! γ₁ = π₀ L is the unnormalized posterior, and tells ℓ_q(x) = log γ₁(x) − log q(x)
//! instead of log L(x). The posterior is the same and q is normalized, so log Z is still
//! log ∫ π₀ L.
//!
//! [`VariationalPath`]: nrpt_core::exact::VariationalPath
//!
//! ```
//! use nrpt_studies::exact::{ControllerSettings, ExactController};
//! use nrpt_core::rng::{PhiloxStream, normal_pair, streams};
//!
//! // Prior N(0, 1), one observation y ~ N(x, 1): π_β is N(βy/(1 + β), 1/(1 + β)), drawn
//! // exactly, and log Z = log N(y; 0, 2).
//! let y = 1.5f64;
//! let ell = |x: f64| -0.5 * (y - x).powi(2) - 0.5 * (2.0 * std::f64::consts::PI).ln();
//! let mut ctl = ExactController::new(ControllerSettings { seed: 3, ..ControllerSettings::new(6) }, None)?;
//! let mut ells = vec![0.0; 6];
//! for k in 0..2046u64 {
//!     for (r, &beta) in ctl.betas_by_replica().iter().enumerate() {
//!         let mut rng = PhiloxStream::new(3, 0, k, r as u32, streams::EXACT_EXPLORE);
//!         let (z, _): (f64, f64) = normal_pair(&mut rng);
//!         let x = beta * y / (1.0 + beta) + z / (1.0 + beta).sqrt();
//!         ells[r] = ell(x);
//!     }
//!     ctl.tell(&ells)?;
//! }
//! let p = ctl.pooled().expect("rounds have ended");
//! let truth = -0.25 * y * y - 0.5 * (4.0 * std::f64::consts::PI).ln();
//! assert!((p.log_z - truth).abs() < 4.0 * p.log_z_se + 0.02, "{} ± {} vs {truth}", p.log_z, p.log_z_se);
//! assert!(ctl.warnings().is_empty(), "{:?}", ctl.warnings());
//! # Ok::<(), nrpt_core::Error>(())
//! ```

use nrpt_core::exact::{
    Barrier, ExactBuffers, ExactOptions, ExactProgress, ExactReport, ExactTempering, GaussianFit,
    InitialGrid, NoPath, PairRecord, RoundReport, ScheduleOptions,
};
use nrpt_core::index::IndexStats;
use nrpt_core::window::Scheme;
use nrpt_sampling::config::ReferenceKind;
use serde::{Deserialize, Serialize};

use super::Owned;

use super::{Advice, ClosedForm, EnsembleOutcome, ExactOutcome, Pooled, Recommended, diagnostics};

/// What configures an [`ExactController`]. [`ControllerSettings::new`] gives the defaults:
/// vanilla DEO (W = 1), seed 0, ensemble 0, rounds of 2, 4, 8, … iterations, the grid
/// re-placed at equal barrier after each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControllerSettings {
    /// Chains (replicas) P, at least 2 and at most [`MAX_CHAINS`](nrpt_sampling::config::MAX_CHAINS).
    pub chains: usize,
    /// The window W ≥ 1 of DEO (1: vanilla DEO), or 0 for SEO. With W > 1 the levels are
    /// biased ([`super::window_warning`]).
    pub window: u32,
    /// Seed: the first word of the Philox key of the swaps.
    pub seed: u32,
    /// Ensemble: the second word (independent copies of a run differ in it).
    pub ensemble: u32,
    /// Iterations of round 0 (≥ 1); round r lasts `first_round · 2^r`.
    pub first_round: u64,
    /// Re-place the grid at equal barrier after every round (else the initial grid
    /// stays).
    pub adapt_grid: bool,
}

impl ControllerSettings {
    /// The defaults for P = `chains`.
    pub fn new(chains: usize) -> Self {
        ControllerSettings {
            chains,
            window: 1,
            seed: 0,
            ensemble: 0,
            first_round: ScheduleOptions::default().first_round,
            adapt_grid: true,
        }
    }

    /// The swap scheme: DEO with the window, or SEO for window 0.
    pub fn scheme(&self) -> Scheme {
        match self.window {
            0 => Scheme::Seo,
            window => Scheme::Deo { window },
        }
    }

    /// The core's options (the explorer and start states play no part in a told run).
    pub fn options(&self, initial_grid: InitialGrid) -> ExactOptions {
        ExactOptions {
            scheme: self.scheme(),
            schedule: ScheduleOptions {
                first_round: self.first_round,
                adapt_grid: self.adapt_grid,
                initial_grid,
            },
            seed: self.seed,
            ensemble: self.ensemble,
            ..ExactOptions::default()
        }
    }
}

mod reference;
#[cfg(test)]
mod tests;

use reference::{Reference, SavedReference};

/// A controller of exact tempering told the log-likelihoods (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExactController {
    settings: ControllerSettings,
    /// The buffers of the core run (no states: the caller keeps them).
    b: Owned,
    progress: ExactProgress,
    /// The pair records of the last completed round (empty before the first).
    last_pairs: Vec<PairRecord>,
    /// The reference, encoded after the rest ([`SavedReference`]), so that the rest
    /// encodes as version 2 did.
    #[serde(skip)]
    reference: Reference,
}

/// The core run over a controller's buffers: new, or resumed from its progress.
fn core_run(
    b: &mut Owned,
    options: ExactOptions,
    progress: Option<ExactProgress>,
) -> Result<ExactTempering<'_, NoPath>, nrpt_core::Error> {
    match progress {
        None => ExactTempering::told(options, b.view()),
        Some(p) => ExactTempering::resume_told(options, b.view(), p),
    }
}

/// What [`ExactController::encode`] writes first.
const FORMAT: &str = "nrpt.ExactController";
/// The version of the encoding, written after [`FORMAT`]: 1 (earlier versions of nrpt)
/// encoded the controller with `bincode`, 2 with `postcard`, 3 as 2 followed by the
/// reference ([`SavedReference`]). All write the tag and the version as the same bytes
/// (the text's length as one byte, the text, the version as one byte), so a saved
/// controller of version 1 is recognised as one.
const VERSION: u32 = 3;
/// The oldest version this one reads: 2, a controller with a fixed reference.
const OLDEST: u32 = 2;

/// Why saved bytes do not give a controller.
#[derive(Debug, thiserror::Error)]
pub enum SavedError {
    /// Not the encoding of an exact controller.
    #[error("not a saved nrpt exact controller: {0}")]
    Format(String),
    /// Saved by an earlier version of nrpt in an older encoding, which this one cannot
    /// read.
    #[error(
        "a saved nrpt exact controller written by an earlier nrpt in an older format \
         (version {found}; this nrpt reads versions {OLDEST} to {VERSION}), so this version cannot \
         continue it: start the controller again (recompute the run from its start), or \
         continue it with the nrpt that saved it"
    )]
    OlderFormat {
        /// The version found.
        found: u32,
    },
    /// Saved by another version of the encoding, not one of the earlier ones.
    #[error(
        "a saved nrpt exact controller of version {found}; this nrpt reads versions \
         {OLDEST} to {VERSION}"
    )]
    Version {
        /// The version found.
        found: u32,
    },
    /// The bytes decode, but to a state that cannot be a run's.
    #[error("a saved nrpt exact controller whose state cannot be a run's: {0}")]
    State(nrpt_core::Error),
}

impl ExactController {
    /// A controller with `settings`, starting from the uniform grid or from
    /// `initial_betas` (P values by level, strictly decreasing from 1 to 0: for instance
    /// [`ExactController::equal_barrier_grid`] of an earlier run).
    ///
    /// # Errors
    ///
    /// Fewer than 2 or more than [`MAX_CHAINS`](nrpt_sampling::config::MAX_CHAINS) chains, a first
    /// round of 0 iterations, or initial betas of another length or out of order.
    pub fn new(
        settings: ControllerSettings,
        initial_betas: Option<&[f64]>,
    ) -> Result<Self, nrpt_core::Error> {
        Self::with_reference(settings, initial_betas, ReferenceKind::Fixed, 0)
    }

    /// A controller as [`ExactController::new`] makes it, with the reference `reference`:
    /// [`ReferenceKind::Fixed`] (the caller's π₀ throughout: [`ExactController::new`]'s,
    /// `dim` unused) or [`ReferenceKind::Variational`] (a Gaussian fitted to the posterior
    /// level, see the [module docs](self)) for states of `dim` coordinates, which
    /// [`ExactController::tell_states`] then needs every iteration.
    ///
    /// # Errors
    ///
    /// As [`ExactController::new`]; a variational reference with `dim` = 0; any other
    /// reference ([`nrpt_core::Error::Unsupported`]: the two-leg stabilized ladder is
    /// available in `nrpt run` only).
    pub fn with_reference(
        settings: ControllerSettings,
        initial_betas: Option<&[f64]>,
        reference: ReferenceKind,
        dim: usize,
    ) -> Result<Self, nrpt_core::Error> {
        let reference = Reference::new(reference, dim)?;
        const _: () = assert!(
            nrpt_sampling::config::MAX_CHAINS == 65_536,
            "update the message below"
        );
        let p = settings.chains;
        if p > nrpt_sampling::config::MAX_CHAINS {
            return Err(nrpt_core::Error::InvalidValue {
                name: "chains",
                value: p as f64,
                allowed: "at most 65536 (nrpt's limit on chains)",
            });
        }
        let n = ExactBuffers::told_lengths(p)?;
        let mut c = ExactController {
            settings,
            b: Owned::of(n),
            progress: ExactProgress {
                iteration: 0,
                round: 0,
                round_iteration: 0,
                started: false,
                closed: false,
                stats: IndexStats::default(),
                round_base: IndexStats::default(),
                forward_batches: Default::default(),
                reverse_batches: Default::default(),
                barrier_batch_sum: 0.0,
                barrier_batch_iterations: 0,
                barrier_batches: Default::default(),
                adapt_grid: settings.adapt_grid,
                adapt_steps: false,
                last_round: None,
            },
            last_pairs: Vec::new(),
            reference,
        };
        let grid = match initial_betas {
            Some(b) => {
                if b.len() != p {
                    return Err(nrpt_core::Error::LengthMismatch {
                        name: "betas",
                        expected: p,
                        found: b.len(),
                    });
                }
                c.b.betas.copy_from_slice(b);
                InitialGrid::Keep
            }
            None => InitialGrid::Uniform,
        };
        let run = core_run(&mut c.b, settings.options(grid), None)?;
        let progress = run.progress();
        c.progress = progress;
        Ok(c)
    }

    /// Runs `f` on the core run resumed over these buffers, then keeps its progress.
    fn with<T>(
        &mut self,
        f: impl FnOnce(&mut ExactTempering<'_, NoPath>) -> T,
    ) -> Result<T, nrpt_core::Error> {
        let options = self.settings.options(InitialGrid::Keep);
        let progress = self.progress;
        let mut run = core_run(&mut self.b, options, Some(progress))?;
        let out = f(&mut run);
        let progress = run.progress();
        self.progress = progress;
        Ok(out)
    }

    /// One iteration, given ℓ (the log-likelihood) of every replica's new state **by
    /// replica**: the swaps, the records, the end of a batch or round
    /// ([`ExactTempering::tell`]). NaN or infinite values are taken as they are (their
    /// pairs never swap and are counted; a NaN or +∞ makes the round's log Z NaN or +∞).
    ///
    /// # Errors
    ///
    /// [`nrpt_core::Error::LengthMismatch`] unless there are P values, and for the
    /// states with a variational reference (which needs
    /// [`ExactController::tell_states`]); nothing changes then.
    pub fn tell(&mut self, log_likelihoods: &[f64]) -> Result<ExactReport, nrpt_core::Error> {
        self.tell_states(log_likelihoods, None)
    }

    /// [`ExactController::tell`] with the states the ℓ belong to: `states` holds the P
    /// replicas' states **by replica**, row-major (P × D, replica r at `r·D..(r+1)·D`),
    /// as the caller's sampler left them. After the swaps, the state of the replica now at
    /// the posterior level is gathered for the variational reference (unless one of its
    /// coordinates is not finite), and at the end of a round whose grid adapted the
    /// reference is fitted (see the [module docs](self)): from then on the caller tells
    /// ℓ_q = log γ₁ − log q. A fixed reference takes `None`.
    ///
    /// # Errors
    ///
    /// [`nrpt_core::Error::LengthMismatch`] unless there are P values and, with a
    /// variational reference, P·D states; [`nrpt_core::Error::Unsupported`] for states
    /// told to a fixed reference; nothing changes then.
    pub fn tell_states(
        &mut self,
        log_likelihoods: &[f64],
        states: Option<&[f64]>,
    ) -> Result<ExactReport, nrpt_core::Error> {
        let dim = self.check_states(states)?;
        let adapting = self.progress.adapt_grid;
        let report = self.with(|run| run.tell(log_likelihoods))??;
        if report.round_end.is_some() {
            self.last_pairs.clone_from(&self.b.pairs);
        }
        let r = self.b.at.first().map_or(0, |&r| r as usize);
        let target = states.and_then(|x| x.get(r * dim..(r + 1) * dim));
        let fit = report.round_end.is_some() && adapting;
        self.reference.after_tell(target, fit);
        Ok(report)
    }

    /// D for the states a tell needs (0 for a fixed reference, which takes none).
    fn check_states(&self, states: Option<&[f64]>) -> Result<usize, nrpt_core::Error> {
        match (&self.reference, states) {
            (Reference::Fixed, None) => Ok(0),
            (Reference::Fixed, Some(_)) => Err(nrpt_core::Error::Unsupported {
                what: "states told to an exact controller with a fixed reference (only a \
                       variational reference gathers them)",
            }),
            (Reference::Variational(q), x) => {
                let expected = self.chains() * q.dim();
                let found = x.map_or(0, <[f64]>::len);
                if x.is_none() || found != expected {
                    return Err(nrpt_core::Error::LengthMismatch {
                        name: "states (P × D, by replica)",
                        expected,
                        found,
                    });
                }
                Ok(q.dim())
            }
        }
    }

    /// The reference: [`ReferenceKind::Fixed`] or [`ReferenceKind::Variational`].
    pub fn reference_kind(&self) -> ReferenceKind {
        match self.reference {
            Reference::Fixed => ReferenceKind::Fixed,
            Reference::Variational(_) => ReferenceKind::Variational,
        }
    }

    /// D, the coordinates of a replica's state, with a variational reference (`None`
    /// with a fixed one).
    pub fn reference_dim(&self) -> Option<usize> {
        match &self.reference {
            Reference::Fixed => None,
            Reference::Variational(q) => Some(q.dim()),
        }
    }

    /// Fits of the variational reference so far (0 with a fixed one, or before the
    /// first fit).
    pub fn reference_fits(&self) -> u32 {
        match &self.reference {
            Reference::Fixed => 0,
            Reference::Variational(q) => q.fits(),
        }
    }

    /// The fitted reference's mean m (`None` with a fixed reference or before the first
    /// fit, while the reference is the caller's π₀).
    pub fn reference_mean(&self) -> Option<&[f64]> {
        self.reference.fitted().map(GaussianFit::mean)
    }

    /// The fitted reference's standard deviations s (`None` as for
    /// [`ExactController::reference_mean`]).
    pub fn reference_scale(&self) -> Option<&[f64]> {
        self.reference.fitted().map(GaussianFit::scale)
    }

    /// log q(x) of the fitted reference (normalized: Σ_i log N(x_i; m_i, s_i²)), and
    /// ∇ log q(x) = −(x − m)/s² into `grad` when given.
    ///
    /// # Errors
    ///
    /// [`nrpt_core::Error::Unsupported`] with a fixed reference or before the first fit
    /// (the reference is then the caller's own π₀); [`nrpt_core::Error::LengthMismatch`]
    /// unless `x` (and `grad`) have D values.
    pub fn reference_log_density(
        &self,
        x: &[f64],
        grad: Option<&mut [f64]>,
    ) -> Result<f64, nrpt_core::Error> {
        let q = self
            .reference
            .fitted()
            .ok_or(nrpt_core::Error::Unsupported {
                what: "log q before the variational reference's first fit (the reference \
                       is then the caller's own, and with a fixed reference always)",
            })?;
        let d = q.dim();
        for (name, found) in [
            ("x", Some(x.len())),
            ("grad", grad.as_deref().map(<[f64]>::len)),
        ] {
            if let Some(found) = found.filter(|&n| n != d) {
                return Err(nrpt_core::Error::LengthMismatch {
                    name,
                    expected: d,
                    found,
                });
            }
        }
        Ok(q.log_density(x, grad))
    }

    /// The settings.
    pub fn settings(&self) -> &ControllerSettings {
        &self.settings
    }

    /// Chains P.
    pub fn chains(&self) -> usize {
        self.b.betas.len()
    }

    /// Iterations told so far.
    pub fn iteration(&self) -> u64 {
        self.progress.iteration
    }

    /// The current round (rounds completed so far).
    pub fn round(&self) -> u32 {
        self.progress.round
    }

    /// Iterations told in the current round.
    pub fn round_iteration(&self) -> u64 {
        self.progress.round_iteration
    }

    /// Iterations of the current round.
    pub fn round_length(&self) -> u64 {
        self.settings
            .options(InitialGrid::Keep)
            .schedule
            .round_length(self.progress.round)
    }

    /// Whether the grid is re-placed at equal barrier after each round.
    pub fn adapt_grid(&self) -> bool {
        self.progress.adapt_grid
    }

    /// Turns the grid's re-placement after each round on or off (off: the grid stays
    /// as it is from now on).
    pub fn set_adapt_grid(&mut self, on: bool) {
        self.progress.adapt_grid = on;
    }

    /// β of each level (level 0: β = 1, the posterior; level P − 1: β = 0, the
    /// reference).
    pub fn betas(&self) -> &[f64] {
        &self.b.betas
    }

    /// β of each replica: what the caller's sampler targets for replica r next.
    pub fn betas_by_replica(&self) -> Vec<f64> {
        self.b
            .of
            .iter()
            .map(|&l| self.b.betas.get(l as usize).copied().unwrap_or(f64::NAN))
            .collect()
    }

    /// The replica at each level (`replica_at()[0]` is at the posterior).
    pub fn replica_at(&self) -> &[u32] {
        &self.b.at
    }

    /// The level of each replica.
    pub fn level_of(&self) -> &[u32] {
        &self.b.of
    }

    /// ℓ of each replica as last told (NaN before the first tell).
    pub fn log_likelihoods(&self) -> &[f64] {
        &self.b.ells
    }

    /// The swap flags of each pair at the last iteration ([`nrpt_core::swap::flags`]).
    pub fn flags(&self) -> &[u8] {
        &self.b.flags
    }

    /// Round trips, restarts and non-finite counts over the whole run.
    pub fn stats(&self) -> IndexStats {
        self.progress.stats
    }

    /// The report of the last completed round.
    pub fn last_round(&self) -> Option<&RoundReport> {
        self.progress.last_round.as_ref()
    }

    /// The pair records of the last completed round (empty before the first).
    pub fn last_pairs(&self) -> &[PairRecord] {
        &self.last_pairs
    }

    /// Λ̂(β) and λ̂(β) of the last completed round (`None` before the first).
    pub fn barrier(&self) -> Option<Barrier<'_>> {
        self.progress.last_round?;
        Barrier::new(&self.b.knots, &self.b.values).ok()
    }

    /// The grid of `chains` points at equal barrier for the last completed round's Λ̂
    /// (the initial betas of a controller with another number of chains); `None` before
    /// the first round.
    ///
    /// # Errors
    ///
    /// Fewer than 2 chains.
    pub fn equal_barrier_grid(&self, chains: usize) -> Result<Option<Vec<f64>>, nrpt_core::Error> {
        let Some(b) = self.barrier() else {
            return Ok(None);
        };
        let mut out = vec![0.0; chains];
        b.equal_barrier_grid(&mut out)?;
        Ok(Some(out))
    }

    /// The controller as a run of one ensemble whose measured round is its last
    /// completed one (no ensemble before the first): what the command's [`Pooled`] and
    /// [`diagnostics()`] read. The path has no closed forms (NaN).
    pub fn outcome(&self) -> ExactOutcome {
        let ensembles = self
            .progress
            .last_round
            .map(|r| EnsembleOutcome {
                rounds: vec![r],
                betas: self.b.knots.clone(),
                knots: (self.b.knots.clone(), self.b.values.clone()),
                levels: self.b.levels.clone(),
                pairs: self.last_pairs.clone(),
                samples: Vec::new(),
            })
            .into_iter()
            .collect();
        ExactOutcome {
            closed_form: ClosedForm {
                lambda: f64::NAN,
                log_z: f64::NAN,
                limit_round_trip_rate: f64::NAN,
            },
            pilots: Vec::new(),
            chains: self.chains(),
            window: self.settings.window,
            window_swap_rate: None,
            iterations_run: self.progress.iteration,
            ensembles,
            fixed_leg: None,
            exchanges: 0,
        }
    }

    /// The command's estimates of the last completed round: Λ̂ with its error, log Z (the
    /// mean of the forward and reverse stepping stones, both with their errors), the
    /// measured and predicted round trips, … (`None` before the first round ends).
    pub fn pooled(&self) -> Option<Pooled> {
        self.progress.last_round?;
        Some(self.outcome().pooled())
    }

    /// The command's warnings about the last completed round, in the controller's terms
    /// (too few chains, no round trip, the stepping stones apart, round trips below the
    /// prediction, a window above 1), each saying what to do.
    pub fn warnings(&self) -> Vec<String> {
        let out = self.outcome();
        let pooled = out.pooled();
        diagnostics(&out, &pooled, Advice::Controller)
    }

    /// The chains both rules recommend for the last completed round's Λ̂, lower bounds
    /// where it saturates ([`Recommended::for_measured`]; `None`s, and no lower bound,
    /// before the first round).
    pub fn recommended(&self) -> Recommended {
        let out = self.outcome();
        match self.pooled() {
            Some(p) => {
                Recommended::for_measured(p.lambda, out.chains, out.any_pair_never_swapped())
            }
            None => Recommended::for_barrier(f64::NAN),
        }
    }

    /// Everything a caller reports: settings, counts, the grid, [`Pooled`] of the last
    /// round, the chains recommended for its Λ̂ and the warnings.
    pub fn summary(&self) -> ControllerSummary {
        let pooled = self.pooled();
        ControllerSummary {
            settings: self.settings,
            iteration: self.progress.iteration,
            rounds: self.progress.round,
            measured_iterations: self.last_round().map_or(0, |r| r.iterations),
            stats: self.progress.stats,
            betas: self.b.betas.clone(),
            recommended_chains: self.recommended(),
            pooled,
            warnings: self.warnings(),
            reference: self.reference_kind().name(),
            reference_fits: self.reference_fits(),
        }
    }

    /// The whole state, every float bit for bit (NaN included): a format tag, a version,
    /// the controller and its reference (with the fit's moments), encoded by `postcard` (integers as varints, floats as their
    /// little-endian bytes).
    pub fn encode(&self) -> Vec<u8> {
        // Encoding into a vector fails only for types serde cannot describe.
        postcard::to_stdvec(&(FORMAT, VERSION, self, self.reference.saved())).unwrap_or_default()
    }

    /// A controller from [`ExactController::encode`]'s bytes, checked as the core checks
    /// a resumed run (lengths, grid, knots, permutation, round position) and its
    /// reference as [`GaussianFit::resume`] checks a fit, continuing with the same bits.
    /// Bytes of version 2 (before references) give a controller with a fixed reference.
    ///
    /// # Errors
    ///
    /// Bytes of something else or another version (an earlier one is
    /// [`SavedError::OlderFormat`]), or a state that cannot be a run's.
    pub fn decode(bytes: &[u8]) -> Result<Self, SavedError> {
        // The tag and the version first: every version writes them alike. A claimed
        // length preallocates no more elements than the bytes left.
        let ((format, version), rest): ((&str, u32), &[u8]) =
            postcard::take_from_bytes(bytes).map_err(|e| SavedError::Format(e.to_string()))?;
        if format != FORMAT {
            return Err(SavedError::Format(format!("format {format:?}")));
        }
        if (1..OLDEST).contains(&version) {
            return Err(SavedError::OlderFormat { found: version });
        }
        if !(OLDEST..=VERSION).contains(&version) {
            return Err(SavedError::Version { found: version });
        }
        let format = |e: postcard::Error| SavedError::Format(e.to_string());
        let (mut c, mut rest): (ExactController, &[u8]) =
            postcard::take_from_bytes(rest).map_err(format)?;
        if version > OLDEST {
            let (saved, after): (SavedReference<Vec<f64>>, &[u8]) =
                postcard::take_from_bytes(rest).map_err(format)?;
            c.reference = Reference::resume(saved).map_err(SavedError::State)?;
            rest = after;
        }
        if !rest.is_empty() {
            return Err(SavedError::Format(format!(
                "{} bytes after the controller",
                rest.len()
            )));
        }
        if c.b.betas.len() != c.settings.chains {
            return Err(SavedError::State(nrpt_core::Error::LengthMismatch {
                name: "betas",
                expected: c.settings.chains,
                found: c.b.betas.len(),
            }));
        }
        if !(c.last_pairs.is_empty() || c.last_pairs.len() == c.b.pairs.len()) {
            return Err(SavedError::State(nrpt_core::Error::LengthMismatch {
                name: "last_pairs",
                expected: c.b.pairs.len(),
                found: c.last_pairs.len(),
            }));
        }
        c.with(|_| ()).map_err(SavedError::State)?;
        Ok(c)
    }
}

/// [`ExactController::summary`]: serializable, with the command's field names.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ControllerSummary {
    /// The settings.
    pub settings: ControllerSettings,
    /// Iterations told.
    pub iteration: u64,
    /// Rounds completed.
    pub rounds: u32,
    /// Iterations of the last completed round (the one the estimates come from).
    pub measured_iterations: u64,
    /// Round trips, restarts and non-finite ℓ over the whole run.
    #[serde(flatten)]
    pub stats: IndexStats,
    /// The current grid, by level.
    pub betas: Vec<f64>,
    /// The command's estimates of the last completed round (absent before the first).
    #[serde(flatten)]
    pub pooled: Option<Pooled>,
    /// The chains the two rules recommend for the last round's Λ̂.
    pub recommended_chains: Recommended,
    /// The warnings, each saying what to do.
    pub warnings: Vec<String>,
    /// The reference: `"fixed"` or `"variational"`.
    pub reference: &'static str,
    /// Fits of the variational reference so far (0 with a fixed one).
    pub reference_fits: u32,
}
