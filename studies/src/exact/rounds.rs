//! Rounds of doubling length on one ensemble: how they fill a budget, the grid a run
//! starts from, progress reports within a round, and the kernel frozen for the last
//! round, which measures (and keeps target-level states when asked).

use nrpt_core::exact::{
    AnnealingPath, Barrier, ExactExplorer, ExactOptions, ExactTempering, InitialGrid, RoundReport,
    ScheduleOptions, TwoLegTempering,
};
use nrpt_core::window::Scheme;

use super::buffers::Owned;
use super::{ExactSettings, core_error};
use nrpt_sampling::config::ConfigError;
use nrpt_sampling::engine::{Flow, OnProgress};

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
pub(super) struct Rounds {
    pub(super) reports: Vec<RoundReport>,
    pub(super) betas: Vec<f64>,
    pub(super) knots: (Vec<f64>, Vec<f64>),
    pub(super) samples: Vec<f64>,
}

/// Places `owned`'s grid at equal barrier for the knots of `from`, or leaves it uniform.
pub(super) fn initial_grid(
    owned: &mut Owned,
    from: Option<&Rounds>,
) -> Result<InitialGrid, ConfigError> {
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

/// Gradient coordinates (levels × dimension × gradients per level and iteration)
/// between two progress reports inside a round: a few milliseconds of a core, so that a
/// stop request ([`Flow::Stop`]) is answered within a round, however long, and the
/// reports cost nothing measurable.
const REPORT_COORDINATES: u64 = 1 << 18;

/// Iterations between two progress reports of a run of `chains` levels of dimension
/// `dim` with `explorer` (at least one; the work of [`REPORT_COORDINATES`]).
pub(super) fn report_every(chains: usize, dim: usize, explorer: &ExactExplorer) -> u64 {
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

/// A sampler whose rounds [`drive`] runs: one leg ([`ExactTempering`]) or two
/// ([`TwoLegTempering`]).
pub(super) trait RoundSampler {
    /// The error of a path's evaluation.
    type Error: std::fmt::Debug;
    /// What the end of a round reports.
    type Round;
    /// One iteration; the round's report when it completed one.
    fn step_once(&mut self) -> Result<Option<Self::Round>, Self::Error>;
    /// Freezes the grid (and a variational fit) and the step sizes for the last round.
    fn freeze(&mut self);
    /// Iterations of the current round.
    fn length(&self) -> u64;
    /// Iterations done in the current round.
    fn done_in_round(&self) -> u64;
    /// The target level's state (on two legs, the variational leg's).
    fn target(&self) -> Option<&[f64]>;
}

impl<P: AnnealingPath> RoundSampler for ExactTempering<'_, P> {
    type Error = P::Error;
    type Round = RoundReport;

    fn step_once(&mut self) -> Result<Option<RoundReport>, P::Error> {
        Ok(self.step()?.round_end)
    }

    fn freeze(&mut self) {
        self.set_adapt_grid(false);
        self.set_adapt_steps(false);
    }

    fn length(&self) -> u64 {
        self.round_length()
    }

    fn done_in_round(&self) -> u64 {
        self.round_iteration()
    }

    fn target(&self) -> Option<&[f64]> {
        self.state_at_level(0)
    }
}

impl<P: AnnealingPath, Q: AnnealingPath<Error = P::Error>> RoundSampler
    for TwoLegTempering<'_, '_, P, Q>
{
    type Error = P::Error;
    type Round = (RoundReport, RoundReport);

    fn step_once(&mut self) -> Result<Option<Self::Round>, P::Error> {
        Ok(self.step()?.round_end())
    }

    fn freeze(&mut self) {
        self.set_adapt_grid(false);
        self.set_adapt_steps(false);
    }

    fn length(&self) -> u64 {
        self.round_length()
    }

    fn done_in_round(&self) -> u64 {
        self.round_iteration()
    }

    fn target(&self) -> Option<&[f64]> {
        self.variational().state_at_level(0)
    }
}

/// Runs `rounds` rounds of `pt` (freezing the kernel before the last) and returns their
/// reports; with `keep` > 0, up to `keep` target-level states of the last round, evenly
/// spaced, into `samples`. `progress` hears of the iterations every `every` of them and
/// at each round's end; its [`Flow::Stop`] ends the run.
fn drive<S: RoundSampler>(
    pt: &mut S,
    rounds: u32,
    keep: usize,
    every: u64,
    samples: &mut Vec<f64>,
    progress: OnProgress<'_>,
) -> crate::error::Result<Vec<S::Round>> {
    let mut reports = Vec::with_capacity(rounds as usize);
    let stopped =
        || crate::error::StudyError::from(nrpt_sampling::engine::EngineError::Interrupted);
    for r in 0..rounds {
        let last = r + 1 == rounds;
        if last {
            pt.freeze();
        }
        // Every `thin`-th iteration of the measurement round (counted from its end) is
        // kept when samples are asked for.
        let sampled = last && keep > 0;
        let length = pt.length();
        let thin = length.div_ceil(keep.max(1) as u64).max(1);
        let mut unreported = 0u64;
        let report = loop {
            let step = pt.step_once().map_err(path_error)?;
            unreported += 1;
            if let Some(report) = step {
                // The round's last state (its records are cleared on the next step).
                if sampled && let Some(x) = pt.target() {
                    samples.extend_from_slice(x);
                }
                break report;
            }
            if sampled
                && length
                    .saturating_sub(pt.done_in_round())
                    .is_multiple_of(thin)
                && let Some(x) = pt.target()
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
    Ok(reports)
}

/// The grid and the knots of Λ̂(β) a leg ends with.
fn grid_and_knots<P: AnnealingPath>(
    pt: &ExactTempering<'_, P>,
) -> (Vec<f64>, (Vec<f64>, Vec<f64>)) {
    let b = pt.barrier();
    (
        pt.betas().to_vec(),
        (b.betas().to_vec(), b.knot_values().to_vec()),
    )
}

/// Runs `rounds` rounds (freezing the kernel before the last) and returns the reports;
/// with `keep` > 0, up to `keep` target-level states of the last round, evenly spaced,
/// into `samples`. `progress` hears of the iterations every [`report_every`] of them
/// and at each round's end; its [`Flow::Stop`] ends the run.
pub(super) fn run_rounds<P: AnnealingPath>(
    options: ExactOptions,
    path: P,
    owned: &mut Owned,
    rounds: u32,
    keep: usize,
    progress: OnProgress<'_>,
) -> crate::error::Result<Rounds> {
    let every = report_every(owned.betas.len(), path.dim(), &options.explorer);
    let mut pt = ExactTempering::new(options, path, owned.view()).map_err(core_error)?;
    let mut samples = Vec::new();
    let reports = drive(&mut pt, rounds, keep, every, &mut samples, progress)?;
    let (betas, knots) = grid_and_knots(&pt);
    Ok(Rounds {
        reports,
        betas,
        knots,
        samples,
    })
}

/// What the rounds of two legs leave: each leg's rounds (the variational leg's with the
/// kept states) and the exchanges of their target replicas.
pub(super) struct TwoLegRounds {
    pub(super) fixed: Rounds,
    pub(super) variational: Rounds,
    pub(super) exchanges: u64,
}

/// [`run_rounds`] on two legs joined at the target ([`TwoLegTempering`]): the fixed
/// leg with `path` over `fixed`, the variational leg with `variational_path` over
/// `variational` (its options' ensemble word is the fixed leg's plus
/// [`nrpt_core::exact::VARIATIONAL_LEG_ENSEMBLE`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn run_two_leg_rounds<P: AnnealingPath, Q: AnnealingPath<Error = P::Error>>(
    (options, variational_options): (ExactOptions, ExactOptions),
    (path, variational_path): (P, Q),
    (fixed, variational): (&mut Owned, &mut Owned),
    rounds: u32,
    keep: usize,
    progress: OnProgress<'_>,
) -> crate::error::Result<TwoLegRounds> {
    let chains = fixed.betas.len() + variational.betas.len();
    let every = report_every(chains, path.dim(), &options.explorer);
    let f = ExactTempering::new(options, path, fixed.view()).map_err(core_error)?;
    let v = ExactTempering::new(variational_options, variational_path, variational.view())
        .map_err(core_error)?;
    let mut pt = TwoLegTempering::new(f, v, 0).map_err(core_error)?;
    let mut samples = Vec::new();
    let reports = drive(&mut pt, rounds, keep, every, &mut samples, progress)?;
    let (fixed_reports, variational_reports) = reports.into_iter().unzip();
    let (betas, knots) = grid_and_knots(pt.fixed());
    let (v_betas, v_knots) = grid_and_knots(pt.variational());
    Ok(TwoLegRounds {
        fixed: Rounds {
            reports: fixed_reports,
            betas,
            knots,
            samples: Vec::new(),
        },
        variational: Rounds {
            reports: variational_reports,
            betas: v_betas,
            knots: v_knots,
            samples,
        },
        exchanges: pt.exchanges(),
    })
}

/// A path's failed evaluation, as an error of the run; after a stop request (a path
/// that polls it answers [`nrpt_sampling::interrupt::Stopped`]) the run ends as the engines' do,
/// with [`nrpt_sampling::engine::EngineError::Interrupted`].
fn path_error<E: std::fmt::Debug>(e: E) -> crate::error::StudyError {
    if nrpt_sampling::interrupt::requested() {
        return nrpt_sampling::engine::EngineError::Interrupted.into();
    }
    crate::error::StudyError::failed(format!("the annealing path failed: {e:?}"))
}

/// Options of a run with `chains`, `scheme` and `schedule`.
pub(super) fn options(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::MIN_ITERATIONS;

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
}
