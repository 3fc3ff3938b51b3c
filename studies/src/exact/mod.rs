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
//! [`exact`]: nrpt_core::exact

use nrpt_core::exact::{
    AnnealingPath, Barrier, ChainRule, ExactBuffers, ExactExplorer, ExactOptions, ExactTempering,
    GaussianPath, InitialGrid, Lengths, LevelRecord, PairRecord, RoundReport, ScheduleOptions,
    limit_rate, recommended_chains,
};
use nrpt_core::window::Scheme;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use nrpt_sampling::config::{ConfigError, MAX_EXPLORER_STEPS, MAX_LEAPFROG_STEPS, WindowSpec};
use nrpt_sampling::engine::memory::{Footprint, PROCESS_BYTES};
use nrpt_sampling::engine::{Flow, OnProgress};
use nrpt_sampling::stats::mean_sd;

pub mod diagnostics;
pub mod tables;
pub mod told;
pub use diagnostics::{Advice, diagnostics, gaussian_corrected_barrier, window_warning};
pub use told::{ControllerSettings, ControllerSummary, ExactController, SavedError};

/// Chains of the first pilot run of `--chains auto`.
pub const PILOT_CHAINS: usize = 16;

/// A pilot of `--chains auto` whose pairs reject more than this on average
/// (Λ̂/(P − 1), pooled over ensembles) is followed by a larger one ([`pilot_too_coarse`]).
pub const PILOT_MAX_MEAN_REJECTION: f64 = 0.5;

/// The barrier per pair an enlarged pilot is given chains for ([`next_pilot_chains`]).
pub const PILOT_TARGET_SHARE: f64 = 0.4;

/// The most pilots of one run (the first included): each runs a quarter of the budget.
pub const MAX_PILOTS: usize = 4;

/// The most chains of an enlarged pilot (Λ up to about 100 at [`PILOT_TARGET_SHARE`]).
pub const MAX_PILOT_CHAINS: usize = 256;

/// Whether a pilot with mean pair rejection `mean_rejection` (Λ̂/(P − 1)) is too coarse
/// for its Λ̂ to choose P: `mean_rejection > PILOT_MAX_MEAN_REJECTION` (NaN counts as too
/// coarse).
///
/// The criterion is the rule's own: P − 1 ≈ 2Λ̂ puts every pair of an equal-barrier grid
/// at rejection 0.5, and Λ̂/(P − 1) > 0.5 is exactly 2Λ̂ > P − 1, a pilot that asks for
/// more chains than it ran. Its Λ̂ = Σ r̂ then rests on pairs outside the linear regime
/// (r ≈ the pair's share of Λ holds for small r; each r̂ ≤ 1, so Σ r̂ saturates as
/// rejections approach 1: 13.1 for Λ = 19.0 at D = 400 with 16 chains), and P would be
/// extrapolated beyond any grid measured. At or below 0.5 the final P is at most about the
/// pilot's, and Σ r̂ is at most 7.6 % low if the swap log-ratios are Gaussian (the
/// per-pair barrier at r = 0.5 is √(2/π) Φ⁻¹(0.75) = 0.538; see [`mod@diagnostics`]).
pub fn pilot_too_coarse(mean_rejection: f64) -> bool {
    mean_rejection.is_nan() || mean_rejection > PILOT_MAX_MEAN_REJECTION
}

/// Chains of the pilot after one with `chains` chains, barrier Λ̂ `lambda` and Gaussian-swap
/// correction `corrected`: enough that each pair carries [`PILOT_TARGET_SHARE`] of the
/// barrier, P = 1 + ⌈Λ̃/0.4⌉, with Λ̃ the correction (Σ r̂ saturates, the correction does
/// not) or, when it is undefined (a pair rejected every swap), 2Λ̂; at least `chains` + 1,
/// at most `cap`. A share of 0.4 leaves room below [`PILOT_MAX_MEAN_REJECTION`] (Gaussian
/// swaps: r = erf(0.4 √π/2) = 0.38) for a Λ̃ up to 25 % low, so one enlargement usually
/// suffices.
pub fn next_pilot_chains(chains: usize, lambda: f64, corrected: Option<f64>, cap: usize) -> usize {
    let target = corrected.unwrap_or(2.0 * lambda);
    let want = if target.is_finite() && target > 0.0 {
        let n = (target / PILOT_TARGET_SHARE).ceil();
        if n < cap as f64 { 1 + n as usize } else { cap }
    } else {
        2 * chains
    };
    want.max(chains + 1).min(cap)
}

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

/// What a pilot found (pooled over ensembles).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PilotSummary {
    /// Its chains.
    pub chains: usize,
    /// Its iterations per ensemble.
    pub iterations: u64,
    /// Λ̂ = Σ r̂ of its last round, mean over ensembles.
    pub lambda: f64,
    /// The Gaussian-swap correction of its last round ([`gaussian_corrected_barrier`]),
    /// mean over ensembles; `None` when a pair rejected every swap.
    pub barrier_gaussian_corrected: Option<f64>,
    /// Mean pair rejection of its last round, Λ̂/(P − 1): above
    /// [`PILOT_MAX_MEAN_REJECTION`] another pilot follows (while pilots remain).
    pub mean_rejection: f64,
    /// Wall-clock seconds it took (all ensembles).
    pub seconds: f64,
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
}

/// The buffers of one ensemble, owned (by a run of a path, or by a told controller,
/// whose states and scratch are empty).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Owned {
    states: Vec<f64>,
    ells: Vec<f64>,
    betas: Vec<f64>,
    levels: Vec<LevelRecord>,
    at: Vec<u32>,
    of: Vec<u32>,
    trips: Vec<u8>,
    gates: Vec<bool>,
    flags: Vec<u8>,
    pairs: Vec<PairRecord>,
    knots: Vec<f64>,
    values: Vec<f64>,
    scratch: Vec<f64>,
}

impl Owned {
    fn new(chains: usize, dim: usize, explorer: &ExactExplorer) -> Result<Self, ConfigError> {
        let n = ExactBuffers::lengths(chains, dim, explorer).map_err(core_error)?;
        Ok(Owned::of(n))
    }

    /// Buffers of the lengths `n`.
    fn of(n: Lengths) -> Self {
        Owned {
            states: vec![0.0; n.states],
            ells: vec![0.0; n.per_level],
            betas: vec![0.0; n.per_level],
            levels: vec![LevelRecord::default(); n.per_level],
            at: vec![0; n.per_level],
            of: vec![0; n.per_level],
            trips: vec![0; n.per_level],
            gates: vec![false; n.per_pair],
            flags: vec![0; n.per_pair],
            pairs: vec![PairRecord::default(); n.per_pair],
            knots: vec![0.0; n.per_level],
            values: vec![0.0; n.per_level],
            scratch: vec![0.0; n.scratch],
        }
    }

    fn view(&mut self) -> ExactBuffers<'_> {
        ExactBuffers {
            states: &mut self.states,
            log_likelihoods: &mut self.ells,
            betas: &mut self.betas,
            levels: &mut self.levels,
            replica_at: &mut self.at,
            level_of: &mut self.of,
            trips: &mut self.trips,
            gates: &mut self.gates,
            flags: &mut self.flags,
            pairs: &mut self.pairs,
            barrier_betas: &mut self.knots,
            barrier_values: &mut self.values,
            scratch: &mut self.scratch,
        }
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

/// Rounds of doubling length that fill `budget`: (first round, rounds) with
/// `first · (2^rounds − 1) ≤ budget`, at least two rounds and a first round of at
/// least two iterations, the last round about half of the total.
pub fn rounds_for(budget: u64) -> (u64, u32) {
    let mut rounds = 2u32;
    // More rounds while the first would still have at least 8 iterations: the grid
    // needs a few rounds to settle, and each round's rejection estimate needs length.
    while rounds < 40 && budget / ((1u64 << (rounds + 1)) - 1) >= 8 {
        rounds += 1;
    }
    let first = (budget / ((1u64 << rounds) - 1)).max(2);
    (first, rounds)
}

/// What a sequence of rounds leaves: the reports, the last grid and the knots of Λ̂(β).
struct Rounds {
    reports: Vec<RoundReport>,
    betas: Vec<f64>,
    knots: (Vec<f64>, Vec<f64>),
    samples: Vec<f64>,
}

/// One pilot: its summary and, per ensemble, its rounds (whose knots start the next run).
struct Pilot {
    summary: PilotSummary,
    runs: Vec<Rounds>,
}

/// Places `owned`'s grid at equal barrier for the knots of `from`, or leaves it uniform.
fn initial_grid(owned: &mut Owned, from: Option<&Rounds>) -> Result<InitialGrid, ConfigError> {
    match from {
        Some(r) => {
            let (kb, kv) = &r.knots;
            let barrier = Barrier::new(kb, kv).map_err(core_error)?;
            barrier
                .equal_barrier_grid(&mut owned.betas)
                .map_err(core_error)?;
            Ok(InitialGrid::Keep)
        }
        None => Ok(InitialGrid::Uniform),
    }
}

/// Runs a pilot of `chains` chains and `budget` iterations per ensemble (vanilla DEO),
/// each ensemble starting from the grid of `previous`'s (uniform without one).
fn run_pilot<P: AnnealingPath>(
    s: &ExactSettings,
    make: &PathMaker<'_, P>,
    chains: usize,
    budget: u64,
    previous: Option<&Pilot>,
    progress: OnProgress<'_>,
) -> anyhow::Result<Pilot> {
    check_memory(s, chains, 0)?;
    let started = std::time::Instant::now();
    let (first, rounds) = rounds_for(budget);
    let runs: anyhow::Result<Vec<(Rounds, Option<f64>)>> = (0..s.ensembles)
        .into_par_iter()
        .map(|e| {
            let mut owned = Owned::new(chains, s.dim, &s.explorer)?;
            let initial_grid = initial_grid(&mut owned, previous.and_then(|p| p.runs.get(e)))?;
            let schedule = ScheduleOptions {
                first_round: first,
                adapt_grid: true,
                initial_grid,
            };
            let o = options(s, e, Scheme::VANILLA_DEO, schedule);
            let done = run_rounds(o, make()?, &mut owned, rounds, 0, progress)?;
            let rejections: Vec<f64> = owned.pairs.iter().map(PairRecord::rejection_rate).collect();
            Ok((done, gaussian_corrected_barrier(&rejections)))
        })
        .collect();
    let (runs, corrected): (Vec<Rounds>, Vec<Option<f64>>) = runs?.into_iter().unzip();
    let n = runs.len().max(1) as f64;
    let lambda = runs
        .iter()
        .map(|x| x.reports.last().map_or(f64::NAN, |r| r.global_barrier))
        .sum::<f64>()
        / n;
    let corrected: Option<Vec<f64>> = corrected.into_iter().collect();
    Ok(Pilot {
        summary: PilotSummary {
            chains,
            iterations: first * ((1u64 << rounds) - 1),
            lambda,
            barrier_gaussian_corrected: corrected
                .filter(|c| !c.is_empty())
                .map(|c| c.iter().sum::<f64>() / c.len() as f64),
            mean_rejection: lambda / chains.saturating_sub(1).max(1) as f64,
            seconds: started.elapsed().as_secs_f64(),
        },
        runs,
    })
}

/// The pilots of `--chains auto` from the `first`: while the last is too coarse
/// ([`pilot_too_coarse`]), fewer than [`MAX_PILOTS`] have run and it has fewer than `cap`
/// chains, `run` runs one with [`next_pilot_chains`] chains (given the last pilot).
fn enlarge_pilots<T>(
    first: T,
    summary: impl Fn(&T) -> &PilotSummary,
    cap: usize,
    mut run: impl FnMut(usize, &T) -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    let mut pilots = vec![first];
    while pilots.len() < MAX_PILOTS {
        let Some(last) = pilots.last() else { break };
        let p = summary(last);
        if !pilot_too_coarse(p.mean_rejection) || p.chains >= cap {
            break;
        }
        let next = next_pilot_chains(p.chains, p.lambda, p.barrier_gaussian_corrected, cap);
        let pilot = run(next, last)?;
        pilots.push(pilot);
    }
    Ok(pilots)
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
pub type PathMaker<'a, P> = dyn Fn() -> Result<P, ConfigError> + Sync + 'a;

/// Gradient coordinates (levels × dimension × gradients per level and iteration)
/// between two progress reports inside a round: a few milliseconds of a core, so that a
/// stop request ([`Flow::Stop`]) is answered within a round, however long, and the
/// reports cost nothing measurable.
const REPORT_COORDINATES: u64 = 1 << 18;

/// Iterations between two progress reports of a run of `chains` levels of dimension
/// `dim` with `explorer` (at least one; the work of [`REPORT_COORDINATES`]).
fn report_every(chains: usize, dim: usize, explorer: &ExactExplorer) -> u64 {
    let gradients = match explorer {
        ExactExplorer::Mala(m) => u64::from(m.steps_per_iteration),
        ExactExplorer::Hmc(h) => {
            u64::from(h.steps_per_iteration).saturating_mul(u64::from(h.leapfrog_steps))
        }
    };
    let per = (chains as u64)
        .saturating_mul(dim as u64)
        .saturating_mul(gradients)
        .max(1);
    (REPORT_COORDINATES / per).max(1)
}

/// Runs `rounds` rounds (freezing the kernel before the last) and returns the reports;
/// with `keep` > 0, up to `keep` target-level states of the last round, evenly spaced,
/// into `samples`. `progress` hears of the iterations every [`report_every`] of them
/// and at each round's end; its [`Flow::Stop`] ends the run.
fn run_rounds<P: AnnealingPath>(
    options: ExactOptions,
    path: P,
    owned: &mut Owned,
    rounds: u32,
    keep: usize,
    progress: OnProgress<'_>,
) -> anyhow::Result<Rounds> {
    let every = report_every(owned.betas.len(), path.dim(), &options.explorer);
    let mut pt = ExactTempering::new(options, path, owned.view()).map_err(core_error)?;
    let mut reports = Vec::with_capacity(rounds as usize);
    let mut samples = Vec::new();
    let stopped = || anyhow::Error::from(nrpt_sampling::engine::EngineError::Interrupted);
    for r in 0..rounds {
        let last = r + 1 == rounds;
        if last {
            pt.set_adapt_grid(false);
            pt.set_adapt_steps(false);
        }
        // Every `thin`-th iteration of the measurement round (counted from its end) is
        // kept when samples are asked for.
        let sampled = last && keep > 0;
        let length = pt.round_length();
        let thin = length.div_ceil(keep.max(1) as u64).max(1);
        let mut unreported = 0u64;
        let report = loop {
            let step = pt.step().map_err(path_error)?;
            unreported += 1;
            if let Some(report) = step.round_end {
                // The round's last state (its records are cleared on the next step).
                if sampled && let Some(x) = pt.state_at_level(0) {
                    samples.extend_from_slice(x);
                }
                break report;
            }
            if sampled
                && length.saturating_sub(pt.round_iteration()) % thin == 0
                && let Some(x) = pt.state_at_level(0)
            {
                samples.extend_from_slice(x);
            }
            if unreported >= every {
                if progress(unreported) == Flow::Stop {
                    return Err(stopped());
                }
                unreported = 0;
            }
        };
        if progress(unreported) == Flow::Stop {
            return Err(stopped());
        }
        reports.push(report);
    }
    let betas = pt.betas().to_vec();
    let knots = {
        let b = pt.barrier();
        (b.betas().to_vec(), b.knot_values().to_vec())
    };
    Ok(Rounds {
        reports,
        betas,
        knots,
        samples,
    })
}

/// A path's failed evaluation, as an error of the run; after a stop request (a path
/// that polls it answers [`nrpt_sampling::interrupt::Stopped`]) the run ends as the engines' do,
/// with [`nrpt_sampling::engine::EngineError::Interrupted`].
fn path_error<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    if nrpt_sampling::interrupt::requested() {
        return nrpt_sampling::engine::EngineError::Interrupted.into();
    }
    anyhow::anyhow!("the annealing path failed: {e:?}")
}

/// Options of a run with `chains`, `scheme` and `schedule`.
fn options(
    s: &ExactSettings,
    ensemble: usize,
    scheme: Scheme,
    schedule: ScheduleOptions,
) -> ExactOptions {
    ExactOptions {
        scheme,
        schedule,
        seed: s.seed,
        ensemble: ensemble as u32,
        explorer: s.explorer,
        ..ExactOptions::default()
    }
}

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
pub fn run(s: &ExactSettings, progress: OnProgress<'_>) -> anyhow::Result<ExactOutcome> {
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
/// # Errors
///
/// As [`run`], and a path's failed evaluation.
pub fn run_path<P: AnnealingPath>(
    s: &ExactSettings,
    closed_form: ClosedForm,
    make: &PathMaker<'_, P>,
    keep: usize,
    progress: OnProgress<'_>,
) -> anyhow::Result<ExactOutcome> {
    check(s)?;
    let needs_rate = matches!(s.window, WindowSpec::Optimal | WindowSpec::Paper);
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
    let last_pilot = pilots.last();
    let pilot_lambda = last_pilot.map(|p| p.summary.lambda);
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
    check_memory(s, chains, keep)?;
    let (first, rounds) = rounds_for(s.iterations);
    let iterations_run = first * ((1u64 << rounds) - 1);
    let ensembles: anyhow::Result<Vec<EnsembleOutcome>> = (0..s.ensembles)
        .into_par_iter()
        .map(|e| {
            let mut owned = Owned::new(chains, s.dim, &s.explorer)?;
            let initial_grid = initial_grid(&mut owned, last_pilot.and_then(|p| p.runs.get(e)))?;
            let schedule = ScheduleOptions {
                first_round: first,
                adapt_grid: true,
                initial_grid,
            };
            let o = options(s, e, scheme, schedule);
            let done = run_rounds(o, make()?, &mut owned, rounds, keep, progress)?;
            Ok(EnsembleOutcome {
                rounds: done.reports,
                betas: done.betas,
                knots: done.knots,
                levels: owned.levels.clone(),
                pairs: owned.pairs.clone(),
                samples: done.samples,
            })
        })
        .collect();
    Ok(ExactOutcome {
        closed_form,
        pilots: pilots.iter().map(|p| p.summary).collect(),
        chains,
        window: scheme.window_code(),
        window_swap_rate,
        iterations_run,
        ensembles: ensembles?,
    })
}

/// The pooled estimates of a run, from the measurement round of every ensemble.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pooled {
    /// Λ̂ = Σ r̂_l, mean over ensembles.
    pub lambda: f64,
    /// Its standard deviation over ensembles.
    pub lambda_sd: f64,
    /// Its standard error: √(Σ SE_e²)/E from each ensemble's batch means over the
    /// measured round's iterations (NaN with fewer than two batches).
    pub lambda_se: f64,
    /// Σ_l √(2/π) Φ⁻¹((1 + r̂_l)/2), mean over ensembles: Λ̂ corrected as if every pair's
    /// swap log-ratio were Gaussian ([`gaussian_corrected_barrier`]); a diagnostic, not
    /// an estimator of Λ in general. `None` when a pair rejected every swap.
    pub barrier_gaussian_corrected: Option<f64>,
    /// log Z: the mean of the forward and reverse stepping stones
    /// ([`log_z_mean`]: (`log_z_forward` + `log_z_reverse`)/2).
    pub log_z: f64,
    /// Its standard error, (SE_f + SE_r)/2: the two estimates share their states, and
    /// this is the largest the error of their mean can be whatever their correlation
    /// ([`log_z_mean`]).
    pub log_z_se: f64,
    /// The forward stepping stone, mean over ensembles (biased low by O(1/N)).
    pub log_z_forward: f64,
    /// Its standard error: √(Σ SE_e²)/E from each ensemble's batch means.
    pub log_z_forward_se: f64,
    /// The reverse stepping stone, mean over ensembles (biased high by O(1/N)).
    pub log_z_reverse: f64,
    /// Its standard error, as `log_z_forward_se`.
    pub log_z_reverse_se: f64,
    /// Round trips per 1000 iterations of one ensemble (all replicas), measured in the
    /// last round, mean over ensembles.
    pub round_trips_per_1000: f64,
    /// 1000/(2 + 2Σ r̂/(1 − r̂)) with the measured rejections (Syed et al.; W = 1), mean.
    pub predicted_round_trips_per_1000: f64,
    /// Lemma 1 with the measured rejections and the run's window, per 1000 iterations.
    pub lemma1_round_trips_per_1000: Option<f64>,
    /// 1000/(2 + 2Λ̂): the limit as P grows (W = 1).
    pub limit_round_trips_per_1000: f64,
    /// Smallest and largest pair rejection rate (over pairs and ensembles).
    pub rejection_range: (f64, f64),
    /// Acceptance of the explorers (MALA or HMC) in the last round, mean over levels
    /// with β > 0 and ensembles.
    pub explorer_acceptance: f64,
}

/// log Z as nrpt reports it from the forward and reverse stepping stones (`(value, se)`
/// each): their mean, with standard error (SE_f + SE_r)/2.
///
/// Forward and reverse are computed from the same states, so their errors are
/// correlated (positively: both follow the same draws), and their covariance is not
/// estimated. Var((F + R)/2) = (SE_f² + SE_r² + 2ρ SE_f SE_r)/4 ≤ ((SE_f + SE_r)/2)² for
/// every correlation ρ ≤ 1 (Cauchy–Schwarz), with equality at ρ = 1: the error stated
/// is conservative, never below the truth of the batch-means errors it combines. Their
/// O(1/N) Jensen biases have opposite signs (forward low, reverse high), which the mean
/// partly cancels.
pub fn log_z_mean(forward: (f64, f64), reverse: (f64, f64)) -> (f64, f64) {
    (0.5 * (forward.0 + reverse.0), 0.5 * (forward.1 + reverse.1))
}

impl ExactOutcome {
    /// The last pilot (the one P came from), if there was one.
    pub fn pilot(&self) -> Option<&PilotSummary> {
        self.pilots.last()
    }

    /// Pooled estimates.
    pub fn pooled(&self) -> Pooled {
        let last: Vec<&RoundReport> = self.ensembles.iter().filter_map(|e| e.last()).collect();
        let e = last.len().max(1) as f64;
        let of = |f: &dyn Fn(&RoundReport) -> f64| last.iter().map(|r| f(r)).collect::<Vec<_>>();
        let (lambda, lambda_sd) = mean_sd(&of(&|r| r.global_barrier));
        let pooled_se = |f: &dyn Fn(&RoundReport) -> f64| {
            last.iter().map(|r| f(r).powi(2)).sum::<f64>().sqrt() / e
        };
        let corrected: Option<Vec<f64>> = self
            .ensembles
            .iter()
            .map(|en| {
                let rej: Vec<f64> = en.pairs.iter().map(PairRecord::rejection_rate).collect();
                gaussian_corrected_barrier(&rej)
            })
            .collect();
        let forward = (
            mean_sd(&of(&|r| r.log_normalizer.value)).0,
            pooled_se(&|r| r.log_normalizer.standard_error),
        );
        let reverse = (
            mean_sd(&of(&|r| r.log_normalizer_reverse.value)).0,
            pooled_se(&|r| r.log_normalizer_reverse.standard_error),
        );
        let log_z = log_z_mean(forward, reverse);
        let lemma1: Vec<f64> = self
            .ensembles
            .iter()
            .filter_map(|en| {
                let rej: Vec<f64> = en.pairs.iter().map(PairRecord::rejection_rate).collect();
                lemma1_rate(&rej, self.window)
            })
            .collect();
        Pooled {
            lambda,
            lambda_sd,
            lambda_se: pooled_se(&|r| r.global_barrier_standard_error),
            barrier_gaussian_corrected: corrected.filter(|c| !c.is_empty()).map(|c| mean_sd(&c).0),
            log_z: log_z.0,
            log_z_se: log_z.1,
            log_z_forward: forward.0,
            log_z_forward_se: forward.1,
            log_z_reverse: reverse.0,
            log_z_reverse_se: reverse.1,
            round_trips_per_1000: mean_sd(&of(&|r| {
                1000.0 * r.round_trips as f64 / r.iterations as f64
            }))
            .0,
            predicted_round_trips_per_1000: 1000.0
                * mean_sd(&of(&|r| r.predicted_round_trip_rate)).0,
            lemma1_round_trips_per_1000: (lemma1.len() == self.ensembles.len()
                && !lemma1.is_empty())
            .then(|| 1000.0 * mean_sd(&lemma1).0),
            limit_round_trips_per_1000: 1000.0 / (2.0 + 2.0 * lambda),
            rejection_range: last
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
                    (lo.min(r.rejection_range.0), hi.max(r.rejection_range.1))
                }),
            explorer_acceptance: mean_sd(&of(&|r| r.explorer_acceptance)).0,
        }
    }

    /// Smallest and largest step size of the explorers (levels with β > 0, every
    /// ensemble) in the last round; NaN without such a level.
    pub fn step_size_range(&self) -> (f64, f64) {
        self.ensembles
            .iter()
            .flat_map(|en| en.levels.iter().filter(|l| l.proposals() > 0))
            .fold((f64::NAN, f64::NAN), |(lo, hi), l| {
                (lo.min(l.step_size()), hi.max(l.step_size()))
            })
    }

    /// λ̂(β) and Λ̂(β) at `betas`, mean over ensembles.
    pub fn profile(&self, betas: &[f64]) -> Vec<(f64, f64, f64)> {
        let barriers: Vec<Barrier<'_>> =
            self.ensembles.iter().filter_map(|e| e.barrier()).collect();
        let n = barriers.len().max(1) as f64;
        betas
            .iter()
            .map(|&b| {
                let local = barriers.iter().map(|x| x.local(b)).sum::<f64>() / n;
                let cumulative = barriers.iter().map(|x| x.cumulative(b)).sum::<f64>() / n;
                (b, local, cumulative)
            })
            .collect()
    }
}

/// Chains the two rules of [`nrpt_core::exact::chains`] recommend for a measured barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recommended {
    /// P − 1 ≈ 2Λ̂: the most round trips per chain-iteration ([`ChainRule::CostOptimal`],
    /// the rule of `--chains auto`).
    pub cost_optimal: Option<usize>,
    /// The fewest chains within 5 % of the limit rate 1/(2 + 2Λ̂), for chains run in
    /// parallel ([`ChainRule::NEAR_LIMIT_5_PERCENT`]).
    pub near_limit_5_percent: Option<usize>,
}

impl Recommended {
    /// Both rules for the barrier `lambda` (`None` where a rule cannot answer: Λ̂ NaN,
    /// negative or too large).
    pub fn for_barrier(lambda: f64) -> Self {
        let by = |rule| recommended_chains(lambda, rule).ok();
        Recommended {
            cost_optimal: by(ChainRule::CostOptimal),
            near_limit_5_percent: by(ChainRule::NEAR_LIMIT_5_PERCENT),
        }
    }
}

/// Lemma 1's round trips per iteration (all replicas) for per-pair rejections r_l and
/// window W: P / `E[T]` with `E[T]` = 2WP(1 + Σ r_l^W/(1 − r_l^W)); `None` for SEO or a
/// rejection of 1.
pub fn lemma1_rate(rejections: &[f64], window: u32) -> Option<f64> {
    if window == 0 || rejections.is_empty() {
        return None;
    }
    let w = f64::from(window);
    let mut sum = 0.0;
    for &r in rejections {
        let rw = r.clamp(0.0, 1.0).powf(w);
        if rw >= 1.0 {
            return None;
        }
        sum += rw / (1.0 - rw);
    }
    Some(1.0 / (2.0 * w * (1.0 + sum)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_fill_the_budget() {
        for budget in [MIN_ITERATIONS, 100, 1000, 20_000, 1 << 30] {
            let (first, rounds) = rounds_for(budget);
            let total = first * ((1u64 << rounds) - 1);
            assert!(rounds >= 2 && first >= 2, "{budget}: {first} × {rounds}");
            assert!(total <= budget, "{budget}: {total}");
            // At least half of the budget runs (the rounds double).
            assert!(2 * total >= budget, "{budget}: {total}");
        }
    }

    #[test]
    fn lemma1_at_w1_is_syeds_rate() {
        let r = [0.2, 0.3, 0.1];
        let syed = nrpt_core::exact::round_trip_rate(&r).unwrap();
        assert!((lemma1_rate(&r, 1).unwrap() - syed).abs() < 1e-15);
        // Against nrpt-core's Lemma 1 with equal rates.
        let t = nrpt_core::optimal::expected_round_trip_u32(4, 3, 0.7).unwrap();
        assert!((lemma1_rate(&[0.3; 3], 3).unwrap() - 4.0 / t).abs() < 1e-12);
        assert_eq!(lemma1_rate(&r, 0), None);
    }

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
            (p.log_z, p.log_z_se),
            log_z_mean(
                (p.log_z_forward, p.log_z_forward_se),
                (p.log_z_reverse, p.log_z_reverse_se)
            )
        );
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
            e.downcast_ref::<nrpt_sampling::engine::EngineError>(),
            Some(nrpt_sampling::engine::EngineError::Interrupted)
        ));
        let (first, _) = rounds_for(s.iterations);
        assert!(first > 8, "{first}");
        assert!(seen.into_inner() <= 8 * s.ensembles as u64);
    }

    /// A pilot of `chains` chains on an equal-barrier grid of a path with barrier `lambda`
    /// whose swap log-ratios are Gaussian: each pair rejects r = erf(√π b/2), b = Λ/(P − 1).
    fn model_pilot(chains: usize, lambda: f64) -> PilotSummary {
        let n = (chains - 1) as f64;
        let r = statrs::function::erf::erf(std::f64::consts::PI.sqrt() * lambda / n / 2.0);
        PilotSummary {
            chains,
            iterations: 100,
            lambda: n * r,
            barrier_gaussian_corrected: gaussian_corrected_barrier(&vec![r; chains - 1]),
            mean_rejection: r,
            seconds: 0.0,
        }
    }

    fn model_pilots(lambda: f64, cap: usize) -> Vec<PilotSummary> {
        enlarge_pilots(
            model_pilot(PILOT_CHAINS, lambda),
            |p| p,
            cap,
            |chains, _| Ok(model_pilot(chains, lambda)),
        )
        .unwrap()
    }

    #[test]
    fn the_pilot_enlarges_only_while_its_pairs_reject_more_than_half() {
        assert!(!pilot_too_coarse(0.5) && !pilot_too_coarse(0.2));
        assert!(pilot_too_coarse(0.500_001) && pilot_too_coarse(f64::NAN));
        // Λ = 3.6 (D = 16): 16 chains reject 0.24 each; one pilot.
        let p = model_pilots(3.6, MAX_PILOT_CHAINS);
        assert_eq!(p.len(), 1, "{p:?}");
        // Λ = 9.16 (D = 100): 16 chains reject 0.56; then 1 + ⌈9.16/0.4⌉ = 24 chains at 0.38.
        let p = model_pilots(9.163, MAX_PILOT_CHAINS);
        assert_eq!(p.iter().map(|x| x.chains).collect::<Vec<_>>(), [16, 24]);
        assert!(
            p[0].mean_rejection > 0.5 && p[1].mean_rejection < 0.4,
            "{p:?}"
        );
        // Λ = 18.4 (D = 400): Σ r̂ saturates at 16 chains, the correction does not.
        let p = model_pilots(18.36, MAX_PILOT_CHAINS);
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(
            p[1].chains,
            1 + (18.36f64 / PILOT_TARGET_SHARE).ceil() as usize
        );
        assert!(recommended_chains(p[1].lambda, AUTO_RULE).unwrap() >= 30);
    }

    #[test]
    fn pilots_are_bounded_in_number_and_chains() {
        // A barrier beyond what the cap can resolve: pilots stop at the cap.
        let p = model_pilots(500.0, MAX_PILOT_CHAINS);
        assert!(p.len() <= MAX_PILOTS, "{p:?}");
        assert_eq!(p.last().unwrap().chains, MAX_PILOT_CHAINS);
        assert!(p.iter().all(|x| x.chains <= MAX_PILOT_CHAINS));
        // A lower cap (memory), and no pilot larger than it.
        let p = model_pilots(500.0, 40);
        assert_eq!(p.iter().map(|x| x.chains).collect::<Vec<_>>(), [16, 40]);
        // A pilot that never gets fine enough: at most MAX_PILOTS, each larger.
        let mut calls = 0;
        let p = enlarge_pilots(
            model_pilot(PILOT_CHAINS, 9.0),
            |p| p,
            1 << 20,
            |chains, _| {
                calls += 1;
                Ok(PilotSummary {
                    mean_rejection: 0.9,
                    ..model_pilot(chains, 9.0)
                })
            },
        )
        .unwrap();
        assert_eq!((p.len(), calls), (MAX_PILOTS, MAX_PILOTS - 1));
        assert!(p.windows(2).all(|w| w[1].chains > w[0].chains), "{p:?}");
        // Without a correction (a pair always rejected), twice Λ̂ stands in for it.
        assert_eq!(next_pilot_chains(16, 14.0, None, 256), 1 + 70);
        assert_eq!(next_pilot_chains(16, f64::NAN, None, 256), 32);
        assert_eq!(next_pilot_chains(16, 1e300, Some(1e300), 256), 256);
        assert_eq!(next_pilot_chains(16, 0.1, Some(0.1), 256), 17);
    }

    #[test]
    fn log_z_is_the_mean_of_forward_and_reverse_with_the_conservative_error() {
        let (z, se) = log_z_mean((-2.0, 0.03), (-1.9, 0.05));
        assert!((z + 1.95).abs() < 1e-15 && (se - 0.04).abs() < 1e-15);
        // Never below the error of the mean at any correlation ρ ∈ [−1, 1].
        for rho in [-1.0, 0.0, 0.5, 1.0] {
            let var: f64 = (0.03f64.powi(2) + 0.05f64.powi(2) + 2.0 * rho * 0.03 * 0.05) / 4.0;
            assert!(var.sqrt() <= se + 1e-15, "ρ = {rho}");
        }
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
