//! The one run loop of the CPU engine: a group of ensembles (nrpt-core drivers side by
//! side, or SIMD lanes) advances iteration by iteration; after each, every ensemble's
//! recorder observes it; progress is reported and cancellation answered in between.

use nrpt_core::adapt::StepSize;

use super::record::{Observed, Recorder};
use super::{EngineError, Flow, Job, OnProgress};

/// How much work (ensemble-iterations) runs between two progress reports.
const PROGRESS_EVERY: u64 = 1024;

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
    let mut unreported = 0u64;
    for k in group.iteration()..until {
        group.step(schedule.step_size(k)?)?;
        for (i, r) in records.iter_mut().enumerate() {
            r.observe(job.record, k, &group.view(i));
        }
        unreported += count;
        if unreported >= PROGRESS_EVERY {
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
