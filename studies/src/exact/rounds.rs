//! Rounds of doubling length on one ensemble: how they fill a budget, the grid a run
//! starts from, progress reports within a round, and the kernel frozen for the last
//! round, which measures (and keeps target-level states when asked).

use nrpt_core::exact::{
    AnnealingPath, Barrier, ExactExplorer, ExactOptions, ExactTempering, InitialGrid, RoundReport,
    ScheduleOptions,
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
    let mut reports = Vec::with_capacity(rounds as usize);
    let mut samples = Vec::new();
    let stopped =
        || crate::error::StudyError::from(nrpt_sampling::engine::EngineError::Interrupted);
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
