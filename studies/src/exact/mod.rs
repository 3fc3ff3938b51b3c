//! Exact tempering runs: the Gaussian annealing path of nrpt-core's [`exact`] module
//! driven from the command line, with several ensembles in parallel, an automatic
//! number of chains, the windows of Lemma 1, and the pooled estimates (Λ, λ(β), log Z,
//! round trips) that `nrpt run --target gaussian-path` and `nrpt scale --target
//! gaussian-path` report. [`run_path`] runs the same on any annealing path (a
//! classifier's posterior: `nrpt run --target classifier --exact`), optionally keeping
//! target-level samples.
//!
//! # One run (per ensemble)
//!
//! 1. **Pilot** (only when the number of chains is `auto`, or the window depends on the
//!    swap rate): vanilla DEO at [`PILOT_CHAINS`] chains (or the P given) for a quarter
//!    of the budget, in rounds of doubling length with the grid re-placed at equal
//!    barrier after each. Its last round gives Λ̂ (pooled over ensembles).
//! 2. **Enlarged pilots** (only with `auto`): while the last pilot's pairs reject more
//!    than [`PILOT_MAX_MEAN_REJECTION`] on average, another pilot with more chains
//!    ([`next_pilot_chains`]), at most [`MAX_PILOTS`] pilots in all and at most
//!    [`MAX_PILOT_CHAINS`] chains each (see [`pilot_too_coarse`] for why).
//! 3. **Choices**: with `auto`, P from the last pilot's Λ̂ by the chosen [`ChainRule`];
//!    the window from the swap rate every pair has on an equal-barrier grid,
//!    S = 1 − Λ̂/(P − 1).
//! 4. **Main run** at P with that window, starting from the last pilot's grid carried to P
//!    chains ([`nrpt_core::exact::Barrier::equal_barrier_grid`]): rounds of doubling
//!    length that fill the budget; before the last round the grid and the MALA step
//!    sizes are frozen, so the last round measures a fixed Markov kernel. Its report is
//!    the result.
//!
//! The explorers are the run's choice ([`ExactSettings::explorer`]: MALA by default, or
//! HMC), the same in the pilot and the main run. [`diagnostics()`] turns the pooled
//! estimates into warnings that say what to change.
//!
//! # Where each part lives
//!
//! This module holds the settings, the outcome and the run itself ([`run_path`]: the
//! steps above, the memory it may plan); `pilot` the pilots and their enlargement,
//! `rounds` the rounds of one ensemble and `buffers` what they borrow; `pooled` the
//! estimates pooled over ensembles ([`Pooled`], [`Recommended`], [`lemma1_rate`]);
//! [`log_z_error`] the error stated for log Z; [`ais`] annealed importance sampling,
//! the independent estimate of log Z to check against; [`diagnostics()`] the warnings,
//! [`tables`] the tables a run writes and [`told`] the controller told the
//! log-likelihoods by a caller's own loop.
//!
//! [`exact`]: nrpt_core::exact

use nrpt_core::exact::{
    AnnealingPath, Barrier, ChainRule, ExactBuffers, ExactExplorer, GaussianPath, LevelRecord,
    PairRecord, RoundReport, ScheduleOptions, VARIATIONAL_LEG_ENSEMBLE, VariationalOptions,
    VariationalPath, limit_rate, recommended_chains,
};
use nrpt_core::window::Scheme;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use nrpt_sampling::config::{
    ConfigError, MAX_EXPLORER_STEPS, MAX_LEAPFROG_STEPS, ReferenceKind, WindowSpec,
};
use nrpt_sampling::engine::OnProgress;
use nrpt_sampling::engine::memory::{Footprint, PROCESS_BYTES};

pub mod ais;
mod buffers;
pub mod diagnostics;
pub mod log_z_error;
mod pilot;
mod pooled;
mod rounds;
pub mod tables;
pub mod told;
pub use diagnostics::{Advice, diagnostics, gaussian_corrected_barrier, window_warning};
pub use log_z_error::{LogZErrorSource, MIN_ROUND_TRIPS, StatedError, stated_error};
pub use pilot::{
    MAX_PILOT_CHAINS, MAX_PILOTS, PILOT_CHAINS, PILOT_MAX_MEAN_REJECTION, PILOT_TARGET_SHARE,
    PilotSummary, next_pilot_chains, pilot_too_coarse,
};
pub use pooled::{Pooled, Recommended, barrier_saturated, lemma1_rate, log_z_mean};
pub use rounds::rounds_for;
pub use told::{ControllerSettings, ControllerSummary, ExactController, SavedError};

use buffers::Owned;
use pilot::{Pilot, enlarge_pilots, run_pilot};
use rounds::{initial_grid, options, run_rounds, run_two_leg_rounds};

/// The smallest budget: two rounds of at least two iterations, and a pilot.
pub const MIN_ITERATIONS: u64 = 32;

/// How many chains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Chains {
    /// This P.
    Fixed(usize),
    /// Chosen from the pilot's Λ̂ by this rule.
    Auto(ChainRule),
}

/// The rule of `--chains auto` (see [`nrpt_core::exact::chains`]): the P with the
/// most round trips per chain-iteration, P − 1 ≈ 2Λ, Pigeons.jl's "about 2Λ" made exact.
pub const AUTO_RULE: ChainRule = ChainRule::CostOptimal;

/// What an exact run does.
#[derive(Clone, Debug, PartialEq)]
pub struct ExactSettings {
    /// Dimension d of the Gaussian path N(0, I_d) → N(0, I_d/10).
    pub dim: usize,
    /// Chains.
    pub chains: Chains,
    /// Independent ensembles, pooled.
    pub ensembles: usize,
    /// Iterations of the main run per ensemble (each pilot runs a quarter more).
    pub iterations: u64,
    /// The window (a number, `opt`, `paper` or `seo`).
    pub window: WindowSpec,
    /// Seed; ensemble e uses the Philox key (seed, e).
    pub seed: u32,
    /// The explorers of the levels with β > 0 (MALA by default).
    pub explorer: ExactExplorer,
    /// The reference the levels anneal from: the path's own, or a variational one
    /// fitted after every round ([`nrpt_core::exact::VariationalPath`]).
    pub reference: ReferenceKind,
}

/// The closed forms of the run's path.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClosedForm {
    /// Λ.
    pub lambda: f64,
    /// log Z = log Z(1) − log Z(0).
    pub log_z: f64,
    /// 1/(2 + 2Λ): the round trips per iteration of DEO as P grows.
    pub limit_round_trip_rate: f64,
}

/// One ensemble's main run.
#[derive(Clone, Debug)]
pub struct EnsembleOutcome {
    /// Every round's report, the last one (frozen kernel) being the measurement.
    pub rounds: Vec<RoundReport>,
    /// The grid of the last round (level order, β from 1 to 0).
    pub betas: Vec<f64>,
    /// Knots of Λ̂(β) after the last round: β and Λ̂ at each.
    pub knots: (Vec<f64>, Vec<f64>),
    /// Per level: the explorer's step size and acceptance in the last round.
    pub levels: Vec<LevelRecord>,
    /// Per pair: rejection and swap records of the last round.
    pub pairs: Vec<PairRecord>,
    /// Target-level (β = 1) states kept in the measurement round, one after another
    /// (each of the path's dimension): empty unless the run asked for samples
    /// ([`run_path`]).
    pub samples: Vec<f64>,
}

impl EnsembleOutcome {
    /// The measurement round.
    pub fn last(&self) -> Option<&RoundReport> {
        self.rounds.last()
    }

    /// λ̂(β) and Λ̂(β) of this ensemble (the monotone interpolation of its knots).
    pub fn barrier(&self) -> Option<Barrier<'_>> {
        Barrier::new(&self.knots.0, &self.knots.1).ok()
    }
}

/// A whole run.
#[derive(Clone, Debug)]
pub struct ExactOutcome {
    /// The path's closed forms.
    pub closed_form: ClosedForm,
    /// The pilots in order (none for a fixed P and window); P came from the last.
    pub pilots: Vec<PilotSummary>,
    /// Chains of the main run.
    pub chains: usize,
    /// Window of the main run (0: SEO).
    pub window: u32,
    /// The swap rate S the window was chosen for (`None` for a fixed window).
    pub window_swap_rate: Option<f64>,
    /// Iterations of the main run per ensemble.
    pub iterations_run: u64,
    /// Every ensemble, in order.
    pub ensembles: Vec<EnsembleOutcome>,
    /// On the stabilized ladder ([`ReferenceKind::Stabilized`]), the fixed leg, an outcome
    /// of its own (its pilots, chains and ensembles; the fields above are then the
    /// variational leg's); `None` on one leg.
    pub fixed_leg: Option<Box<ExactOutcome>>,
    /// On the stabilized ladder, the exchanges of the two legs' target replicas, summed
    /// over ensembles; 0 on one leg.
    pub exchanges: u64,
}

impl ExactOutcome {
    /// The last pilot (the one P came from), if there was one.
    pub fn pilot(&self) -> Option<&PilotSummary> {
        self.pilots.last()
    }
}

fn core_error(e: nrpt_core::Error) -> ConfigError {
    let field = match e {
        nrpt_core::Error::TooFewChains { .. } => "chains",
        nrpt_core::Error::InvalidValue { name, .. } => match name {
            "dim" => "dim",
            "mala.steps_per_iteration" | "hmc.steps_per_iteration" => "explorer_steps",
            "hmc.leapfrog_steps" => "leapfrog_steps",
            _ => "config",
        },
        _ => "config",
    };
    ConfigError::new(field, e.to_string())
}

/// The most chains a run of these settings may hold: [`MAX_CHAINS`](nrpt_sampling::config::MAX_CHAINS)
/// and the state values' limit.
fn chain_cap(s: &ExactSettings) -> usize {
    let per_chain = (s.ensembles.max(1) as u128) * (s.dim.max(1) as u128);
    let by_values = nrpt_sampling::config::MAX_VALUES / per_chain;
    usize::try_from(by_values)
        .unwrap_or(usize::MAX)
        .min(nrpt_sampling::config::MAX_CHAINS)
}

/// The memory of running `s` with `chains` chains, keeping `keep` target-level states
/// of each ensemble, checked against `--max-memory` before the pilots and the run: the
/// buffers of the ensembles that run at once (one per worker thread, at most one per
/// ensemble: states P·D f64, the explorer's scratch, per level and pair their records)
/// and every ensemble's outcome (its round reports, level and pair records, grid, kept
/// states).
pub fn footprint(s: &ExactSettings, chains: usize, keep: usize) -> Footprint {
    use std::mem::size_of;
    let m = |v: &[u64]| v.iter().fold(1u64, |a, &b| a.saturating_mul(b));
    let mut f = Footprint::default();
    f.add("process", PROCESS_BYTES);
    let running = (rayon::current_num_threads() as u64)
        .min(s.ensembles as u64)
        .max(1);
    let owned = ExactBuffers::lengths(chains, s.dim, &s.explorer).map_or(u64::MAX, |n| {
        let per_level = 8 + 8 + size_of::<LevelRecord>() + 4 + 4 + 1 + 8 + 8;
        let per_pair = 1 + 1 + size_of::<PairRecord>();
        m(&[n.states as u64, 8])
            .saturating_add(m(&[n.per_level as u64, per_level as u64]))
            .saturating_add(m(&[n.per_pair as u64, per_pair as u64]))
            .saturating_add(m(&[n.scratch as u64, 8]))
    });
    f.add("chain states", m(&[running, owned]));
    let (_, rounds) = rounds_for(s.iterations);
    let per_level = size_of::<LevelRecord>() + size_of::<PairRecord>() + 3 * 8;
    let outcome = m(&[u64::from(rounds), size_of::<RoundReport>() as u64])
        .saturating_add(m(&[chains as u64, per_level as u64]))
        .saturating_add(m(&[keep as u64, s.dim as u64, 8]));
    f.add("ensemble outcomes", m(&[s.ensembles as u64, outcome]));
    f
}

/// [`footprint`] checked against `--max-memory`.
fn check_memory(s: &ExactSettings, chains: usize, keep: usize) -> Result<(), ConfigError> {
    nrpt_sampling::engine::memory::check(
        &footprint(s, chains, keep),
        "--ensembles, --chains or --dim",
    )
    .map_err(|m| ConfigError::new("max_memory", m))
}

/// Makes a fresh path for one sampler (each ensemble and pilot has its own).
pub(crate) type PathMaker<'a, P> = dyn Fn() -> Result<P, ConfigError> + Sync + 'a;

/// Checks the settings that do not need a run.
pub fn check(s: &ExactSettings) -> Result<(), ConfigError> {
    if !(1..=nrpt_sampling::config::MAX_DIM).contains(&s.dim) {
        return Err(ConfigError::new(
            "dim",
            format!(
                "must be between 1 and {}, got {}",
                nrpt_sampling::config::MAX_DIM,
                s.dim
            ),
        ));
    }
    if s.iterations < MIN_ITERATIONS {
        return Err(ConfigError::new(
            "iterations",
            format!(
                "exact tempering runs rounds of doubling length: at least \
                 {MIN_ITERATIONS} iterations, got {}",
                s.iterations
            ),
        ));
    }
    let (steps, leapfrog) = match s.explorer {
        ExactExplorer::Mala(m) => (m.steps_per_iteration, None),
        ExactExplorer::Hmc(h) => (h.steps_per_iteration, Some(h.leapfrog_steps)),
    };
    nrpt_sampling::config::in_range("explorer_steps", steps, 1, MAX_EXPLORER_STEPS)?;
    if let Some(l) = leapfrog {
        nrpt_sampling::config::in_range("leapfrog_steps", l, 1, MAX_LEAPFROG_STEPS)?;
    }
    s.explorer.validate().map_err(core_error)?;
    if let Chains::Fixed(p) = s.chains
        && !(2..=nrpt_sampling::config::MAX_CHAINS).contains(&p)
    {
        return Err(ConfigError::new(
            "chains",
            format!(
                "must be between 2 and {}, got {p}",
                nrpt_sampling::config::MAX_CHAINS
            ),
        ));
    }
    let values = s.ensembles as u128
        * PILOT_CHAINS.max(match s.chains {
            Chains::Fixed(p) => p,
            Chains::Auto(_) => PILOT_CHAINS,
        }) as u128
        * s.dim as u128;
    if s.ensembles == 0 || values > nrpt_sampling::config::MAX_VALUES {
        return Err(ConfigError::new(
            "ensembles",
            format!(
                "must be at least 1, with at most {} state values in all",
                nrpt_sampling::config::MAX_VALUES
            ),
        ));
    }
    Ok(())
}

/// Runs the Gaussian path with these settings; `progress` is called with the iterations
/// each ensemble completes.
///
/// # Errors
///
/// A [`ConfigError`] for settings the run refuses, [`nrpt_sampling::engine::EngineError::Interrupted`]
/// after Ctrl-C or SIGTERM.
pub fn run(s: &ExactSettings, progress: OnProgress<'_>) -> crate::error::Result<ExactOutcome> {
    check(s)?;
    let path = GaussianPath::standard(s.dim).map_err(core_error)?;
    let closed_form = ClosedForm {
        lambda: path.global_barrier(),
        log_z: path.log_evidence(),
        limit_round_trip_rate: limit_rate(path.global_barrier()).map_err(core_error)?,
    };
    let dim = s.dim;
    run_path(
        s,
        closed_form,
        &|| GaussianPath::standard(dim).map_err(core_error),
        0,
        progress,
    )
}

/// Runs exact tempering on the paths `make` makes (one per ensemble and pilot, each of
/// dimension `s.dim`), keeping up to `keep` target-level states of each ensemble's
/// measurement round ([`EnsembleOutcome::samples`]); `closed_form` is reported as given
/// (NaN where the path has none). With `keep` = 0 the run is exactly [`run`]'s.
///
/// With [`ReferenceKind::Variational`] each path is wrapped in a
/// [`VariationalPath`] (default [`VariationalOptions`]), whose reference each sampler
/// (every pilot, every ensemble's main run) fits from its own rounds; `closed_form` is
/// still the wrapped path's (the fixed reference's Λ, and the same log Z).
///
/// # Errors
///
/// As [`run`], and a path's failed evaluation.
pub fn run_path<P: AnnealingPath>(
    s: &ExactSettings,
    closed_form: ClosedForm,
    make: &PathMaker<'_, P>,
    keep: usize,
    progress: OnProgress<'_>,
) -> crate::error::Result<ExactOutcome> {
    let variational = || {
        let inner = make()?;
        let buffer = vec![0.0; VariationalPath::<P, Vec<f64>>::buffer_len(inner.dim())];
        VariationalPath::new(inner, buffer, VariationalOptions::default()).map_err(core_error)
    };
    match s.reference {
        ReferenceKind::Fixed => run_on(s, closed_form, make, keep, progress),
        ReferenceKind::Variational => run_on(s, closed_form, &variational, keep, progress),
        ReferenceKind::Stabilized => {
            run_stabilized(s, closed_form, (make, &variational), keep, progress)
        }
    }
}

/// What the pilots decide for one leg: P and the window.
struct Plan {
    pilots: Vec<Pilot>,
    chains: usize,
    scheme: Scheme,
    window_swap_rate: Option<f64>,
}

impl Plan {
    /// The last pilot's run of ensemble `e`, whose grid starts the main run.
    fn pilot_run(&self, e: usize) -> Option<&rounds::Rounds> {
        self.pilots.last().and_then(|p| p.runs.get(e))
    }
}

/// The pilots of one leg on the paths `make` makes, and what they choose: P (given, or
/// by the rule from the last pilot's Λ̂) and, when `choose_window`, the window (from
/// the swap rate of an equal-barrier grid; else the window asked for at S = 0.5).
fn plan<P: AnnealingPath>(
    s: &ExactSettings,
    make: &PathMaker<'_, P>,
    choose_window: bool,
    progress: OnProgress<'_>,
) -> crate::error::Result<Plan> {
    let needs_rate = choose_window && matches!(s.window, WindowSpec::Optimal | WindowSpec::Paper);
    let pilot_chains = match s.chains {
        Chains::Fixed(p) => p,
        Chains::Auto(_) => PILOT_CHAINS,
    };
    let pilot_budget = (s.iterations / 4).max(MIN_ITERATIONS / 2);
    // The pilots: the first at `pilot_chains`; with `auto`, larger ones while the last
    // is too coarse, within MAX_PILOTS and MAX_PILOT_CHAINS (and the memory limit).
    let pilots: Vec<Pilot> = if needs_rate || matches!(s.chains, Chains::Auto(_)) {
        let first = run_pilot(s, make, pilot_chains, pilot_budget, None, progress)?;
        if matches!(s.chains, Chains::Auto(_)) {
            let cap = MAX_PILOT_CHAINS.min(chain_cap(s));
            enlarge_pilots(
                first,
                |p| &p.summary,
                cap,
                |chains, last| run_pilot(s, make, chains, pilot_budget, Some(last), progress),
            )?
        } else {
            vec![first]
        }
    } else {
        Vec::new()
    };
    let pilot_lambda = pilots.last().map(|p| p.summary.lambda);
    let chains = match s.chains {
        Chains::Fixed(p) => p,
        Chains::Auto(rule) => {
            let lambda = pilot_lambda.unwrap_or(f64::NAN);
            let p = recommended_chains(lambda, rule).map_err(core_error)?;
            let cap = chain_cap(s);
            if p > cap {
                return Err(ConfigError::new(
                    "chains",
                    format!(
                        "the pilot's Λ̂ = {lambda:.3} asks for {p} chains, more than {cap} \
                         (the limit on chains and state values for {} ensembles of dimension \
                         {}): use fewer --ensembles or a smaller --dim",
                        s.ensembles, s.dim
                    ),
                )
                .into());
            }
            p
        }
    };
    let (scheme, window_swap_rate) = if needs_rate {
        let lambda = pilot_lambda.unwrap_or(f64::NAN);
        let rate = 1.0 - lambda / (chains - 1) as f64;
        if !(rate > 0.0 && rate < 1.0) {
            return Err(ConfigError::new(
                "chains",
                format!(
                    "{chains} chains cannot cross the barrier Λ̂ = {lambda:.3} (every pair would \
                     reject): use more than {} chains",
                    lambda.ceil() + 1.0
                ),
            )
            .into());
        }
        (s.window.scheme(chains, rate)?, Some(rate))
    } else {
        (s.window.scheme(chains, 0.5)?, None)
    };
    Ok(Plan {
        pilots,
        chains,
        scheme,
        window_swap_rate,
    })
}

/// The schedule of a main run of `rounds` rounds from `first` iterations, starting from
/// the grid of `from` (a pilot's run) or the uniform one.
fn main_options(
    s: &ExactSettings,
    owned: &mut Owned,
    from: Option<&rounds::Rounds>,
    (ensemble, scheme, first): (u32, Scheme, u64),
) -> Result<nrpt_core::exact::ExactOptions, ConfigError> {
    let initial_grid = initial_grid(owned, from)?;
    let schedule = ScheduleOptions {
        first_round: first,
        adapt_grid: true,
        initial_grid,
    };
    Ok(nrpt_core::exact::ExactOptions {
        ensemble,
        ..options(s, 0, scheme, schedule)
    })
}

/// One ensemble's outcome from its rounds and its leg's buffers.
fn ensemble_outcome(done: rounds::Rounds, owned: &Owned) -> EnsembleOutcome {
    EnsembleOutcome {
        rounds: done.reports,
        betas: done.betas,
        knots: done.knots,
        levels: owned.levels.clone(),
        pairs: owned.pairs.clone(),
        samples: done.samples,
    }
}

/// [`run_path`] on the paths `make` makes as they are.
fn run_on<P: AnnealingPath>(
    s: &ExactSettings,
    closed_form: ClosedForm,
    make: &PathMaker<'_, P>,
    keep: usize,
    progress: OnProgress<'_>,
) -> crate::error::Result<ExactOutcome> {
    check(s)?;
    let plan = plan(s, make, true, progress)?;
    let chains = plan.chains;
    check_memory(s, chains, keep)?;
    let (first, rounds) = rounds_for(s.iterations);
    let iterations_run = first * ((1u64 << rounds) - 1);
    let ensembles: crate::error::Result<Vec<EnsembleOutcome>> = (0..s.ensembles)
        .into_par_iter()
        .map(|e| {
            let mut owned = Owned::new(chains, s.dim, &s.explorer)?;
            let o = main_options(
                s,
                &mut owned,
                plan.pilot_run(e),
                (e as u32, plan.scheme, first),
            )?;
            let done = run_rounds(o, make()?, &mut owned, rounds, keep, progress)?;
            Ok(ensemble_outcome(done, &owned))
        })
        .collect();
    Ok(ExactOutcome {
        closed_form,
        pilots: plan.pilots.iter().map(|p| p.summary).collect(),
        chains,
        window: plan.scheme.window_code(),
        window_swap_rate: plan.window_swap_rate,
        iterations_run,
        ensembles: ensembles?,
        fixed_leg: None,
        exchanges: 0,
    })
}

/// [`run_path`] on the stabilized ladder: a fixed leg on the paths `make` makes and a
/// variational leg on those `variational` makes, joined at the target
/// ([`nrpt_core::exact::TwoLegTempering`]). Each leg has its pilots and its P (`--chains`
/// is each leg's; `auto` sizes each from its own pilot's Λ̂); the window is chosen on
/// the fixed leg and both legs swap with it. The outcome is the variational leg's, with
/// the fixed leg in [`ExactOutcome::fixed_leg`]; the kept target states are the
/// variational leg's.
fn run_stabilized<P: AnnealingPath, Q: AnnealingPath<Error = P::Error>>(
    s: &ExactSettings,
    closed_form: ClosedForm,
    (make, variational): (&PathMaker<'_, P>, &PathMaker<'_, Q>),
    keep: usize,
    progress: OnProgress<'_>,
) -> crate::error::Result<ExactOutcome> {
    check(s)?;
    let fixed_plan = plan(s, make, true, progress)?;
    let v_plan = plan(s, variational, false, progress)?;
    let (pf, pv) = (fixed_plan.chains, v_plan.chains);
    check_memory(s, pf + pv, keep)?;
    let (first, rounds) = rounds_for(s.iterations);
    let iterations_run = first * ((1u64 << rounds) - 1);
    let scheme = fixed_plan.scheme;
    let runs: crate::error::Result<Vec<(EnsembleOutcome, EnsembleOutcome, u64)>> = (0..s.ensembles)
        .into_par_iter()
        .map(|e| {
            let (mut of, mut ov) = (
                Owned::new(pf, s.dim, &s.explorer)?,
                Owned::new(pv, s.dim, &s.explorer)?,
            );
            let key = e as u32;
            let fo = main_options(s, &mut of, fixed_plan.pilot_run(e), (key, scheme, first))?;
            // `check` keeps the ensembles below MAX_VALUES / PILOT_CHAINS = 2²⁷, so the
            // variational legs' keys never meet the fixed legs'.
            let v_key = key.wrapping_add(VARIATIONAL_LEG_ENSEMBLE);
            let vo = main_options(s, &mut ov, v_plan.pilot_run(e), (v_key, scheme, first))?;
            let done = run_two_leg_rounds(
                (fo, vo),
                (make()?, variational()?),
                (&mut of, &mut ov),
                rounds,
                keep,
                progress,
            )?;
            Ok((
                ensemble_outcome(done.fixed, &of),
                ensemble_outcome(done.variational, &ov),
                done.exchanges,
            ))
        })
        .collect();
    let (mut fixed, mut legs, mut exchanges) = (Vec::new(), Vec::new(), 0);
    for (f, v, x) in runs? {
        fixed.push(f);
        legs.push(v);
        exchanges += x;
    }
    let fixed_leg = ExactOutcome {
        closed_form,
        pilots: fixed_plan.pilots.iter().map(|p| p.summary).collect(),
        chains: pf,
        window: scheme.window_code(),
        window_swap_rate: fixed_plan.window_swap_rate,
        iterations_run,
        ensembles: fixed,
        fixed_leg: None,
        // The ladder's count is the outer outcome's, once.
        exchanges: 0,
    };
    Ok(ExactOutcome {
        closed_form,
        pilots: v_plan.pilots.iter().map(|p| p.summary).collect(),
        chains: pv,
        window: scheme.window_code(),
        window_swap_rate: fixed_plan.window_swap_rate,
        iterations_run,
        ensembles: legs,
        fixed_leg: Some(Box::new(fixed_leg)),
        exchanges,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrpt_sampling::engine::Flow;
    use rounds::report_every;

    #[test]
    fn a_small_run_recovers_the_closed_forms() {
        let s = ExactSettings {
            dim: 2,
            chains: Chains::Fixed(12),
            ensembles: 2,
            iterations: 4000,
            window: WindowSpec::Fixed(1),
            seed: 3,
            explorer: ExactExplorer::default(),
            reference: ReferenceKind::Fixed,
        };
        let out = run(&s, &nrpt_sampling::engine::unobserved).unwrap();
        let p = out.pooled();
        let cf = out.closed_form;
        assert!((cf.lambda - 1.151_292_546).abs() < 1e-8, "{cf:?}");
        assert!((p.lambda - cf.lambda).abs() < 0.05 * cf.lambda, "{p:?}");
        assert!((p.log_z - cf.log_z).abs() < 0.1, "{p:?} vs {cf:?}");
        assert!(
            p.round_trips_per_1000 > 0.5 * p.predicted_round_trips_per_1000,
            "{p:?}"
        );
        assert!(out.pilots.is_empty());
        assert_eq!(
            (p.log_z, p.log_z_se_batch_means),
            log_z_mean(
                (p.log_z_forward, p.log_z_forward_se),
                (p.log_z_reverse, p.log_z_reverse_se)
            )
        );
        // The stated error is the larger of the batch means' and the ensembles' spread.
        let between = p.log_z_se_between_ensembles.unwrap();
        assert_eq!(p.log_z_se, p.log_z_se_batch_means.max(between));
        let spread = (p.log_z_ensembles[0] - p.log_z_ensembles[1]).abs() / 2.0;
        assert!((between - spread).abs() < 1e-12, "{between} vs {spread}");
        let mean = (p.log_z_ensembles[0] + p.log_z_ensembles[1]) / 2.0;
        assert!((p.log_z - mean).abs() < 1e-12);
        // The same seed gives the same bits.
        let again = run(&s, &nrpt_sampling::engine::unobserved)
            .unwrap()
            .pooled();
        assert_eq!(p, again);
    }

    /// The reports add up to every iteration run (every round of every ensemble),
    /// several per round of a run whose rounds are long; a [`Flow::Stop`] ends the run
    /// inside its first round, with [`EngineError::Interrupted`](nrpt_sampling::engine::EngineError).
    #[test]
    fn progress_reports_add_up_and_a_stop_ends_a_round() {
        use std::sync::atomic::{AtomicU64, Ordering};
        let s = ExactSettings {
            dim: 4096,
            chains: Chains::Fixed(8),
            ensembles: 2,
            iterations: 400,
            window: WindowSpec::Fixed(1),
            seed: 1,
            explorer: ExactExplorer::default(),
            reference: ReferenceKind::Fixed,
        };
        // 8 levels × 4096 coordinates: a report every 8 iterations.
        assert_eq!(report_every(8, 4096, &s.explorer), 8);
        let (calls, sum) = (AtomicU64::new(0), AtomicU64::new(0));
        let out = run(&s, &|n| {
            calls.fetch_add(1, Ordering::Relaxed);
            sum.fetch_add(n, Ordering::Relaxed);
            Flow::Continue
        })
        .unwrap();
        let pilots: u64 = out.pilots.iter().map(|p| p.iterations).sum();
        let all = (pilots + out.iterations_run) * s.ensembles as u64;
        assert_eq!(sum.into_inner(), all);
        let rounds = (out.pilots.len() + 1) * out.ensembles[0].rounds.len();
        assert!(
            calls.into_inner() > 2 * (rounds * s.ensembles) as u64,
            "reports within rounds"
        );
        // Stopped at the first report: after 8 iterations of a first round of more.
        let seen = AtomicU64::new(0);
        let e = run(&s, &|n| {
            seen.fetch_add(n, Ordering::Relaxed);
            Flow::Stop
        })
        .unwrap_err();
        assert!(matches!(
            e,
            crate::error::StudyError::Engine(nrpt_sampling::engine::EngineError::Interrupted)
        ));
        let (first, _) = rounds_for(s.iterations);
        assert!(first > 8, "{first}");
        assert!(seen.into_inner() <= 8 * s.ensembles as u64);
    }

    /// The stabilized ladder: each leg sized by its own pilot, the fixed leg beside the
    /// variational one in the outcome, both legs' log Z the closed form within 4 of
    /// their stated errors, the variational leg's barrier near zero (a Gaussian target
    /// is fitted exactly), exchanges every other iteration (vanilla DEO).
    #[test]
    fn a_stabilized_run_has_two_legs_that_agree() {
        let s = ExactSettings {
            dim: 4,
            chains: Chains::Auto(AUTO_RULE),
            ensembles: 2,
            iterations: 4000,
            window: WindowSpec::Fixed(1),
            seed: 2,
            explorer: ExactExplorer::default(),
            reference: ReferenceKind::Stabilized,
        };
        let out = run(&s, &nrpt_sampling::engine::unobserved).unwrap();
        let leg = out.fixed_leg.as_deref().expect("a fixed leg");
        assert!(leg.fixed_leg.is_none());
        let (v, f) = (out.pooled(), leg.pooled());
        let cf = out.closed_form;
        // The fixed leg: the rule's P for the closed-form Λ (1.63 from N(0, I₄)); the
        // fitted leg: 2.
        assert_eq!(out.chains, 2);
        assert!(
            leg.chains
                .abs_diff(recommended_chains(cf.lambda, AUTO_RULE).unwrap())
                <= 1
        );
        assert!(v.lambda < 0.1, "{v:?}");
        assert!((f.lambda - cf.lambda).abs() < 0.1 * cf.lambda, "{f:?}");
        for p in [&v, &f] {
            assert!(
                (p.log_z - cf.log_z).abs() < 4.0 * p.log_z_se,
                "{p:?} vs {cf:?}"
            );
        }
        // Vanilla DEO: the middle pair swaps at every even iteration of the main run (the
        // pilots run each leg alone).
        assert_eq!(
            out.exchanges,
            s.ensembles as u64 * out.iterations_run.div_ceil(2)
        );
        assert_eq!(leg.iterations_run, out.iterations_run);
        // The same seed gives the same bits.
        let again = run(&s, &nrpt_sampling::engine::unobserved).unwrap();
        assert_eq!(again.pooled(), v);
        assert_eq!(again.fixed_leg.unwrap().pooled(), f);
    }

    #[test]
    fn auto_chains_follow_the_rule_for_the_pilots_barrier() {
        let s = ExactSettings {
            dim: 16,
            chains: Chains::Auto(AUTO_RULE),
            ensembles: 2,
            iterations: 2000,
            window: WindowSpec::Optimal,
            seed: 1,
            explorer: ExactExplorer::default(),
            reference: ReferenceKind::Fixed,
        };
        let out = run(&s, &nrpt_sampling::engine::unobserved).unwrap();
        // 16 chains reject about 0.24 each at Λ = 3.6: one pilot.
        assert_eq!(out.pilots.len(), 1, "{:?}", out.pilots);
        let pilot = *out.pilot().unwrap();
        assert_eq!(pilot.chains, PILOT_CHAINS);
        assert!(!pilot_too_coarse(pilot.mean_rejection), "{pilot:?}");
        assert_eq!(
            out.chains,
            recommended_chains(pilot.lambda, AUTO_RULE).unwrap()
        );
        // Closed form: Λ = 3.6175 for d = 16, and the rule gives 8 chains.
        let want = recommended_chains(out.closed_form.lambda, AUTO_RULE).unwrap();
        assert_eq!(want, 8);
        assert!(out.chains.abs_diff(want) <= 1, "{} vs {want}", out.chains);
        assert!(out.window >= 1 && out.window_swap_rate.is_some());
    }
}
