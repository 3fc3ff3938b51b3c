//! Exact tempering runs: the Gaussian annealing path of nrpt-core's [`exact`] module
//! driven from the command line, with several ensembles in parallel, an automatic
//! number of chains, the windows of Lemma 1, and the pooled estimates (Λ, λ(β), log Z,
//! round trips) that `nrpt run --target gaussian-path` and `nrpt scale --model
//! gaussian-path` report.
//!
//! # One run (per ensemble)
//!
//! 1. **Pilot** (only when the number of chains is `auto`, or the window depends on the
//!    swap rate): vanilla DEO at [`PILOT_CHAINS`] chains (or the P given) for a quarter
//!    of the budget, in rounds of doubling length with the grid re-placed at equal
//!    barrier after each. Its last round gives Λ̂ (pooled over ensembles).
//! 2. **Choices**: with `auto`, P from Λ̂ by the chosen [`ChainRule`]; the window from
//!    the swap rate every pair has on an equal-barrier grid, S = 1 − Λ̂/(P − 1).
//! 3. **Main run** at P with that window, starting from the pilot's grid carried to P
//!    chains ([`nrpt_core::exact::Barrier::equal_barrier_grid`]): rounds of doubling
//!    length that fill the budget; before the last round the grid and the MALA step
//!    sizes are frozen, so the last round measures a fixed Markov kernel. Its report is
//!    the result.
//!
//! The explorers are the run's choice ([`ExactSettings::explorer`]: MALA by default, or
//! HMC), the same in the pilot and the main run. [`diagnostics`] turns the pooled
//! estimates into warnings that say what to change.
//!
//! [`exact`]: nrpt_core::exact

use nrpt_core::exact::{
    Barrier, ChainRule, ExactBuffers, ExactExplorer, ExactOptions, ExactTempering, GaussianPath,
    InitialGrid, LevelRecord, PairRecord, RoundReport, ScheduleOptions, limit_rate,
    recommended_chains,
};
use nrpt_core::window::Scheme;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, MAX_EXPLORER_STEPS, MAX_LEAPFROG_STEPS, WindowSpec};
use crate::engine::{Flow, OnProgress};
use crate::stats::mean_sd;

pub mod diagnostics;
pub use diagnostics::{diagnostics, gaussian_corrected_barrier};

/// Chains of the pilot run of `--chains auto`.
pub const PILOT_CHAINS: usize = 16;

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
    /// Iterations of the main run per ensemble (the pilot runs a quarter more).
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

/// What the pilot found (pooled over ensembles).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PilotSummary {
    /// Its chains.
    pub chains: usize,
    /// Its iterations per ensemble.
    pub iterations: u64,
    /// Λ̂ of its last round, mean over ensembles.
    pub lambda: f64,
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
    /// The pilot, when there was one.
    pub pilot: Option<PilotSummary>,
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

/// The buffers of one ensemble, owned.
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
        Ok(Owned {
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
        })
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
}

/// Runs `rounds` rounds (freezing the kernel before the last) and returns the reports.
fn run_rounds(
    options: ExactOptions,
    dim: usize,
    owned: &mut Owned,
    rounds: u32,
    progress: OnProgress<'_>,
) -> anyhow::Result<Rounds> {
    let path = GaussianPath::standard(dim).map_err(core_error)?;
    let mut pt = ExactTempering::new(options, path, owned.view()).map_err(core_error)?;
    let mut reports = Vec::with_capacity(rounds as usize);
    for r in 0..rounds {
        if r + 1 == rounds {
            pt.set_adapt_grid(false);
            pt.set_adapt_steps(false);
        }
        let Ok(report) = pt.run_round();
        if progress(report.iterations) == Flow::Stop {
            return Err(crate::engine::EngineError::Interrupted.into());
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
    })
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
    if !(1..=crate::config::MAX_DIM).contains(&s.dim) {
        return Err(ConfigError::new(
            "dim",
            format!(
                "must be between 1 and {}, got {}",
                crate::config::MAX_DIM,
                s.dim
            ),
        ));
    }
    if s.iterations < MIN_ITERATIONS {
        return Err(ConfigError::new(
            "iterations",
            format!(
                "the gaussian-path target runs rounds of doubling length: at least \
                 {MIN_ITERATIONS} iterations, got {}",
                s.iterations
            ),
        ));
    }
    let (steps, leapfrog) = match s.explorer {
        ExactExplorer::Mala(m) => (m.steps_per_iteration, None),
        ExactExplorer::Hmc(h) => (h.steps_per_iteration, Some(h.leapfrog_steps)),
    };
    crate::config::in_range("explorer_steps", steps, 1, MAX_EXPLORER_STEPS)?;
    if let Some(l) = leapfrog {
        crate::config::in_range("leapfrog_steps", l, 1, MAX_LEAPFROG_STEPS)?;
    }
    s.explorer.validate().map_err(core_error)?;
    if let Chains::Fixed(p) = s.chains
        && !(2..=crate::config::MAX_CHAINS).contains(&p)
    {
        return Err(ConfigError::new(
            "chains",
            format!(
                "must be between 2 and {}, got {p}",
                crate::config::MAX_CHAINS
            ),
        ));
    }
    let values = s.ensembles as u128
        * PILOT_CHAINS.max(match s.chains {
            Chains::Fixed(p) => p,
            Chains::Auto(_) => PILOT_CHAINS,
        }) as u128
        * s.dim as u128;
    if s.ensembles == 0 || values > crate::config::MAX_VALUES {
        return Err(ConfigError::new(
            "ensembles",
            format!(
                "must be at least 1, with at most {} state values in all",
                crate::config::MAX_VALUES
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
/// A [`ConfigError`] for settings the run refuses, [`crate::engine::EngineError::Interrupted`]
/// after Ctrl-C or SIGTERM.
pub fn run(s: &ExactSettings, progress: OnProgress<'_>) -> anyhow::Result<ExactOutcome> {
    check(s)?;
    let path = GaussianPath::standard(s.dim).map_err(core_error)?;
    let closed_form = ClosedForm {
        lambda: path.global_barrier(),
        log_z: path.log_evidence(),
        limit_round_trip_rate: limit_rate(path.global_barrier()).map_err(core_error)?,
    };
    let needs_rate = matches!(s.window, WindowSpec::Optimal | WindowSpec::Paper);
    let pilot_chains = match s.chains {
        Chains::Fixed(p) => p,
        Chains::Auto(_) => PILOT_CHAINS,
    };
    let pilot_budget = (s.iterations / 4).max(MIN_ITERATIONS / 2);
    // The pilot: per ensemble, its last grid (to start the main run from) and Λ̂.
    let pilot: Option<Vec<Rounds>> = if needs_rate || matches!(s.chains, Chains::Auto(_)) {
        let (first, rounds) = rounds_for(pilot_budget);
        let schedule = ScheduleOptions {
            first_round: first,
            ..ScheduleOptions::default()
        };
        let runs: anyhow::Result<Vec<_>> = (0..s.ensembles)
            .into_par_iter()
            .map(|e| {
                let mut owned = Owned::new(pilot_chains, s.dim, &s.explorer)?;
                let o = options(s, e, Scheme::VANILLA_DEO, schedule);
                run_rounds(o, s.dim, &mut owned, rounds, progress)
            })
            .collect();
        Some(runs?)
    } else {
        None
    };
    let pilot_lambda = pilot.as_ref().map(|p| {
        p.iter()
            .map(|x| x.reports.last().map_or(f64::NAN, |r| r.global_barrier))
            .sum::<f64>()
            / p.len() as f64
    });
    let chains = match s.chains {
        Chains::Fixed(p) => p,
        Chains::Auto(rule) => {
            let lambda = pilot_lambda.unwrap_or(f64::NAN);
            recommended_chains(lambda, rule).map_err(core_error)?
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
    let (first, rounds) = rounds_for(s.iterations);
    let iterations_run = first * ((1u64 << rounds) - 1);
    let ensembles: anyhow::Result<Vec<EnsembleOutcome>> = (0..s.ensembles)
        .into_par_iter()
        .map(|e| {
            let mut owned = Owned::new(chains, s.dim, &s.explorer)?;
            let initial_grid = match &pilot {
                Some(p) => {
                    let (kb, kv) = &p[e].knots;
                    let barrier = Barrier::new(kb, kv).map_err(core_error)?;
                    barrier
                        .equal_barrier_grid(&mut owned.betas)
                        .map_err(core_error)?;
                    InitialGrid::Keep
                }
                None => InitialGrid::Uniform,
            };
            let schedule = ScheduleOptions {
                first_round: first,
                adapt_grid: true,
                initial_grid,
            };
            let o = options(s, e, scheme, schedule);
            let done = run_rounds(o, s.dim, &mut owned, rounds, progress)?;
            Ok(EnsembleOutcome {
                rounds: done.reports,
                betas: done.betas,
                knots: done.knots,
                levels: owned.levels.clone(),
                pairs: owned.pairs.clone(),
            })
        })
        .collect();
    Ok(ExactOutcome {
        closed_form,
        pilot: pilot_lambda.map(|lambda| PilotSummary {
            chains: pilot_chains,
            iterations: {
                let (f, r) = rounds_for(pilot_budget);
                f * ((1u64 << r) - 1)
            },
            lambda,
        }),
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
    /// log Z (forward stepping stone), mean over ensembles.
    pub log_z: f64,
    /// Its standard error: √(Σ SE_e²)/E from each ensemble's batch means.
    pub log_z_se: f64,
    /// The reverse stepping stone, mean over ensembles (a check).
    pub log_z_reverse: f64,
    /// Its standard error, as `log_z_se`.
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

impl ExactOutcome {
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
            log_z: mean_sd(&of(&|r| r.log_normalizer.value)).0,
            log_z_se: pooled_se(&|r| r.log_normalizer.standard_error),
            log_z_reverse: mean_sd(&of(&|r| r.log_normalizer_reverse.value)).0,
            log_z_reverse_se: pooled_se(&|r| r.log_normalizer_reverse.standard_error),
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

/// Lemma 1's round trips per iteration (all replicas) for per-pair rejections r_l and
/// window W: P / E[T] with E[T] = 2WP(1 + Σ r_l^W/(1 − r_l^W)); `None` for SEO or a
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
        let out = run(&s, &crate::engine::unobserved).unwrap();
        let p = out.pooled();
        let cf = out.closed_form;
        assert!((cf.lambda - 1.151_292_546).abs() < 1e-8, "{cf:?}");
        assert!((p.lambda - cf.lambda).abs() < 0.05 * cf.lambda, "{p:?}");
        assert!((p.log_z - cf.log_z).abs() < 0.1, "{p:?} vs {cf:?}");
        assert!(
            p.round_trips_per_1000 > 0.5 * p.predicted_round_trips_per_1000,
            "{p:?}"
        );
        assert!(out.pilot.is_none());
        // The same seed gives the same bits.
        let again = run(&s, &crate::engine::unobserved).unwrap().pooled();
        assert_eq!(p, again);
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
        let out = run(&s, &crate::engine::unobserved).unwrap();
        let pilot = out.pilot.unwrap();
        assert_eq!(pilot.chains, PILOT_CHAINS);
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
