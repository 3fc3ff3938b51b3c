//! The one run loop of the CPU engine: a group of ensembles (nrpt-core drivers side by
//! side, or SIMD lanes) advances iteration by iteration; after each that records
//! anything, every ensemble's recorder observes it; progress is reported and cancellation answered in between.

use nrpt_core::adapt::StepSize;

use super::record::{Observed, Recorder};
use super::{EngineError, Flow, Job, OnProgress};

/// The most work (ensemble-iterations) between two progress reports.
const PROGRESS_EVERY: u64 = 1024;

/// The most coordinate-steps (chains × dimension per ensemble-iteration) between two
/// progress reports: a few milliseconds of a core. Targets of many coordinates report
/// (and answer a stop request) after fewer ensemble-iterations than
/// [`PROGRESS_EVERY`], down to every iteration; the 2D toy and small targets
/// (P·D ≤ 1024) keep the 1024.
const PROGRESS_COORDINATES: u64 = 1 << 20;

/// Ensemble-iterations between two progress reports of a job with `chains` chains of
/// dimension `dim`.
fn report_every(chains: usize, dim: usize) -> u64 {
    let per = (chains as u64).saturating_mul(dim as u64).max(1);
    (PROGRESS_COORDINATES / per).clamp(1, PROGRESS_EVERY)
}

/// Ensembles that advance together, one iteration at a time.
pub(crate) trait Group {
    /// Iterations done.
    fn iteration(&self) -> u64;
    /// Ensembles in the group.
    fn ensembles(&self) -> usize;
    /// One iteration of every ensemble with the adaptation step size `gamma`.
    fn step(&mut self, gamma: StepSize) -> Result<(), EngineError>;
    /// What the recorders read of ensemble `i` of the group.
    fn view(&self, i: usize) -> impl Observed + '_;
}

/// Runs `group` up to iteration `until`, each of its ensembles observed by its recorder
/// (`records[i]` for ensemble i of the group). A [`Flow::Stop`] from `progress` ends
/// the run with [`EngineError::Interrupted`].
pub(crate) fn drive(
    group: &mut impl Group,
    records: &mut [Recorder],
    job: &Job,
    until: u64,
    progress: OnProgress<'_>,
) -> Result<(), EngineError> {
    let schedule = job.options.adapt.schedule;
    let count = group.ensembles() as u64;
    let every = report_every(job.chains, job.target.dim());
    let mut unreported = 0u64;
    for k in group.iteration()..until {
        group.step(schedule.step_size(k)?)?;
        if job.record.any_at(k) {
            for (i, r) in records.iter_mut().enumerate() {
                r.observe(job.record, k, &group.view(i));
            }
        }
        unreported += count;
        if unreported >= every {
            if progress(unreported) == Flow::Stop {
                return Err(EngineError::Interrupted);
            }
            unreported = 0;
        }
    }
    if progress(unreported) == Flow::Stop {
        return Err(EngineError::Interrupted);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_targets_report_every_1024_and_large_ones_sooner() {
        assert_eq!(report_every(16, 2), PROGRESS_EVERY);
        assert_eq!(report_every(64, 16), PROGRESS_EVERY);
        assert_eq!(report_every(16, 4096), 16);
        assert_eq!(report_every(16, 1 << 20), 1);
        assert_eq!(report_every(usize::MAX, usize::MAX), 1);
        assert_eq!(report_every(0, 0), PROGRESS_EVERY);
    }
}
