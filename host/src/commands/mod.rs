//! The `nrpt` commands.

pub mod bench;
pub mod reproduce;
pub mod run;
pub mod window;

use crate::engine::{Backend, EngineError, Job, RunOutput};
use crate::progress::Progress;

/// Runs a job on `backend` with a progress bar labelled `what`.
pub fn run_job(
    backend: &dyn Backend,
    job: &Job,
    what: &str,
    quiet: bool,
) -> Result<RunOutput, EngineError> {
    let progress = Progress::new(what, job.iterations * job.ensembles as u64, quiet);
    let out = backend.run(job, &|n| progress.inc(n));
    progress.finish();
    out
}
