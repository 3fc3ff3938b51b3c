//! The `nrpt` commands.

pub mod bench;
pub mod classifier_exact;
pub mod deep;
pub mod devices;
pub mod gaussian_path;
pub mod reference;
pub mod reproduce;
pub mod run;
pub mod scale;
pub mod warnings;
pub mod window;

use std::path::Path;

use crate::cli::BackendKind;
use crate::progress::Progress;
use nrpt_sampling::config::{MathKind, PrecisionKind};
use nrpt_sampling::engine::cpu::CpuBackend;
use nrpt_sampling::engine::cuda::CudaBackend;
use nrpt_sampling::engine::{Backend, EngineError, Job, OnProgress, RunOutput};

/// The engine for `--backend`: `auto` opens GPU `device` when it can and falls back to
/// `cpu` (saying so on stderr unless `silent`), also for every job whose rules the
/// kernels do not implement; `cuda` is an error without a GPU. The GPU's kernels are
/// compiled under `math` (`--math`); on the CPU `fast` switches the 2D toy's lane
/// groups to fast mode's math ([`CpuBackend::fast_math`]) and the rest computes exactly
/// (a note says so when `math` is not exact and the CPU runs). The GPU stores its
/// states as `precision` says (`--precision`); `bf16` and `f16` need the GPU, so where
/// the CPU would run (`cpu`, `auto` without a GPU, or a job the GPU cannot run) they
/// are refused with a [`ConfigError`](nrpt_sampling::config::ConfigError) naming
/// `--precision`.
pub fn select_backend(
    kind: BackendKind,
    device: usize,
    cpu: CpuBackend,
    silent: bool,
    math: MathKind,
    precision: PrecisionKind,
) -> anyhow::Result<Box<dyn Backend>> {
    let cpu_refuses = || -> anyhow::Result<()> {
        if precision.is_f32() {
            Ok(())
        } else {
            Err(nrpt_sampling::config::cpu_precision_error().into())
        }
    };
    // The CPU's fast mode: the 2D toy's lane groups only (`CpuBackend::fast_math`).
    let cpu = CpuBackend {
        fast_math: math == MathKind::Fast,
        ..cpu
    };
    let cpu_note = |silent: bool| {
        if !silent && !math.is_exact() {
            note!(
                "math: {} on the CPU: {}",
                math.name(),
                if math == MathKind::Fast {
                    "FMA and shorter ln/sin/cos polynomials in the 2D toy's lane groups                      (E >= 16); every other CPU path computes exactly"
                } else {
                    "the CPU engine computes exactly (fma applies to the CUDA kernels)"
                }
            );
        }
    };
    match kind {
        BackendKind::Cpu => {
            cpu_refuses()?;
            cpu_note(silent);
            Ok(Box::new(cpu))
        }
        BackendKind::Cuda => Ok(Box::new(
            CudaBackend::open(device)?
                .with_math(math.mode())
                .with_precision(precision.storage()),
        )),
        BackendKind::Auto => match CudaBackend::open(device) {
            Ok(gpu) => {
                if !silent {
                    note!(
                        "backend: cuda ({}), math {}",
                        gpu.device().name,
                        math.name()
                    );
                }
                let gpu = gpu
                    .with_math(math.mode())
                    .with_precision(precision.storage());
                Ok(Box::new(Auto {
                    gpu,
                    cpu,
                    silent,
                    gpu_only: (!precision.is_f32()).then_some(precision),
                }))
            }
            Err(e) => {
                cpu_refuses().map_err(|c| c.context(format!("backend auto found no GPU ({e})")))?;
                if !silent {
                    note!("backend: cpu (no GPU: {e})");
                }
                cpu_note(silent);
                Ok(Box::new(cpu))
            }
        },
    }
}

/// `--backend auto` with a GPU: the GPU, or the CPU for the jobs it cannot run (none
/// under a storage only the GPU has, `gpu_only`).
struct Auto {
    gpu: CudaBackend,
    cpu: CpuBackend,
    silent: bool,
    gpu_only: Option<PrecisionKind>,
}

impl Backend for Auto {
    fn name(&self) -> String {
        self.gpu.name()
    }

    fn run(&self, job: &Job, progress: OnProgress<'_>) -> Result<RunOutput, EngineError> {
        match self.gpu.unsupported(job) {
            None => self.gpu.run(job, progress),
            Some(why) if self.gpu_only.is_some() => Err(EngineError::Backend {
                backend: "cuda",
                message: format!(
                    "{why}; --precision {} needs the GPU (the CPU engine keeps f32 states)",
                    self.gpu_only.map_or("", PrecisionKind::name)
                ),
            }),
            Some(why) => {
                if !self.silent {
                    note!("backend: cpu for this run ({why})");
                }
                self.cpu.run(job, progress)
            }
        }
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

/// Runs `report` (the printing of results, `--strict`) after the outputs were put in
/// place in `folder`: any error it gives then says that the outputs are complete.
pub(crate) fn after_commit(
    folder: &Path,
    report: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    report().map_err(|e| e.context(nrpt_sampling::output::Committed(folder.to_path_buf())))
}
