//! The `nrpt` commands.

pub mod bench;
pub mod devices;
pub mod reproduce;
pub mod run;
pub mod scale;
pub mod window;

use crate::cli::BackendKind;
use crate::engine::cpu::CpuBackend;
use crate::engine::cuda::CudaBackend;
use crate::engine::{Backend, EngineError, Job, RunOutput};
use crate::progress::Progress;

/// The engine for `--backend`: `auto` opens GPU `device` when it can and falls back to
/// `cpu` (saying so on stderr unless `silent`); `cuda` is an error without a GPU.
pub fn select_backend(
    kind: BackendKind,
    device: usize,
    cpu: CpuBackend,
    silent: bool,
) -> Result<Box<dyn Backend>, EngineError> {
    match kind {
        BackendKind::Cpu => Ok(Box::new(cpu)),
        BackendKind::Cuda => Ok(Box::new(CudaBackend::open(device)?)),
        BackendKind::Auto => match CudaBackend::open(device) {
            Ok(gpu) => {
                if !silent {
                    eprintln!("backend: cuda ({})", gpu.device().name);
                }
                Ok(Box::new(gpu))
            }
            Err(e) => {
                if !silent {
                    eprintln!("backend: cpu (no GPU: {e})");
                }
                Ok(Box::new(cpu))
            }
        },
    }
}

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
