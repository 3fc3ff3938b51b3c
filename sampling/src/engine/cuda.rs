//! The CUDA engine: every ensemble of a [`Job`] on one GPU through nrpt-cuda's
//! [`GpuEnsembles`], recording exactly what the CPU engine records, at the same
//! iterations.
//!
//! Kept whole past 600 lines: one backend, whose runs, downloads for the recorder and
//! refusals all follow the same launch configuration.
//!
//! # Same results as the CPU engine
//!
//! Ensemble e draws from Philox key (seed, e) on both engines, and the kernels perform
//! nrpt-core's `f32` operations in the same order. Under [`MathMode::Exact`] (the
//! default: no FMA contraction, IEEE division and square root) a CUDA run is **bit for
//! bit** the CPU run of the same job: samples, traces, paths, ladders, buffers and
//! counts. Under [`MathMode::Fma`] values differ from the CPU by a few ulp, so swap
//! decisions may part after a while (same distribution, different realization). Half
//! precision storage ([`Precision::Bf16`], [`Precision::F16`], SumModes only) rounds
//! the states and is never bit-identical.
//!
//! # Classifiers
//!
//! A data target (one whose [`Target::cuda_mlp`](super::Target::cuda_mlp) answers: the
//! classifier of `targets::classifier`) runs on nrpt-cuda's [`GpuMlp`]: one block per
//! chain for the fused mini-batch step, the data set resident on the device, the same
//! swap-and-adapt code as the toy targets. Its reference is nrpt-core's per-example
//! classifier (`model::Classifier`), which it reproduces bit for bit under
//! [`MathMode::Exact`]; the CPU engine evaluates the same mini-batches with matrix
//! products whose sums run in another order, so a CUDA run and a CPU run of a
//! classifier agree in distribution, not in bits. Given initial states (pre-trained
//! networks) are uploaded.
//!
//! # What is downloaded when
//!
//! The run advances on the device in chunks that end exactly at the next iteration
//! where something is recorded (a sample, a trace entry, a path point) or where
//! Ctrl-C is checked; between them nothing leaves the GPU. A sample downloads the
//! states, a trace entry the buffers, counts and ensemble 0's ladder (indicator rates
//! are differences of the per-pair indicator counts), a path point ensemble 0's
//! levels.

use std::sync::Arc;

use nrpt_core::driver::TemperingOptions;
use nrpt_core::index::{IndexStats, PairStats};
use nrpt_core::model::DataView;
use nrpt_cuda::mlp::{GpuMlp, MlpConfig};
use nrpt_cuda::{
    CudaError, DeviceInfo, EnsembleConfig, ExecutionPath, Gpu, GpuEnsembles, GpuTarget, MathMode,
    Precision, Snapshot,
};

use super::record::{Observed, Recorder, merge};
use super::{Backend, CudaMlp, CudaTarget, EngineError, Flow, Job, OnProgress, RunOutput};

/// Short name of the backend in reports and errors.
const NAME: &str = "cuda";

/// Most ensemble-iterations between two checks of Ctrl-C (and progress reports).
const CHUNK_WORK: u64 = 1 << 24;

/// Most iterations between two checks of Ctrl-C, whatever the number of ensembles.
const CHUNK_ITERATIONS: u64 = 4096;

/// Most coordinate-steps (ensembles × chains × dimension per iteration) between two
/// checks of Ctrl-C: a fraction of a second of a large GPU, so that targets of many
/// coordinates stop as fast as the 2D toy (whose chunks, P·D ≤ 512, it leaves as
/// [`CHUNK_WORK`] makes them).
const CHUNK_COORDINATES: u64 = 1 << 33;

/// The CUDA engine on one device (see the module docs).
#[derive(Clone, Debug)]
pub struct CudaBackend {
    gpu: Arc<Gpu>,
    math: MathMode,
    path: ExecutionPath,
    precision: Precision,
}

/// Turns an nrpt-cuda error into the engine's error, with a message a user can act on.
fn engine_error(e: CudaError) -> EngineError {
    let message = match e {
        CudaError::Options(e) => return EngineError::Invalid(e),
        CudaError::NoDriver { reason } => {
            format!("no CUDA driver was found ({reason}); this machine can only run --backend cpu")
        }
        CudaError::NoNvrtc { reason } => format!(
            "the CUDA driver is present but NVRTC, which compiles the kernels, is not \
             ({reason})"
        ),
        CudaError::NoSuchDevice { ordinal, count } => format!(
            "there is no CUDA device {ordinal}: {count} present (`nrpt devices` lists them)"
        ),
        other => other.to_string(),
    };
    EngineError::Backend {
        backend: NAME,
        message,
    }
}

/// Every CUDA device of this machine, or why there is none (the error says, e.g., that
/// no CUDA driver was found). Never panics.
pub fn list_devices() -> Result<Vec<DeviceInfo>, EngineError> {
    Gpu::list().map_err(engine_error)
}

/// What the recorder reads from a run on the device, whichever kernels carry it: the
/// toy targets' [`GpuEnsembles`] or the classifiers' [`GpuMlp`].
trait DeviceRun {
    fn advance(&mut self, iterations: u64) -> Result<(), CudaError>;
    fn time_device(&mut self, on: bool);
    fn device_seconds(&self) -> f64;
    fn buffers(&self) -> Result<Vec<f64>, CudaError>;
    fn index_stats(&self) -> Result<Vec<IndexStats>, CudaError>;
    fn pair_stats(&self) -> Result<Vec<PairStats>, CudaError>;
    fn ladder(&self, ensemble: usize) -> Result<Vec<f64>, CudaError>;
    fn levels(&self, ensemble: usize) -> Result<Vec<u32>, CudaError>;
    fn sample_target(&self) -> Result<Vec<f32>, CudaError>;
    fn snapshot(&self) -> Result<Snapshot, CudaError>;
    fn states(&self) -> Result<Vec<f32>, CudaError>;
}

macro_rules! device_run {
    ($t:ty) => {
        impl DeviceRun for $t {
            fn advance(&mut self, iterations: u64) -> Result<(), CudaError> {
                <$t>::advance(self, iterations)
            }
            fn time_device(&mut self, on: bool) {
                <$t>::time_device(self, on)
            }
            fn device_seconds(&self) -> f64 {
                <$t>::device_seconds(self)
            }
            fn buffers(&self) -> Result<Vec<f64>, CudaError> {
                <$t>::buffers(self)
            }
            fn index_stats(&self) -> Result<Vec<IndexStats>, CudaError> {
                <$t>::index_stats(self)
            }
            fn pair_stats(&self) -> Result<Vec<PairStats>, CudaError> {
                <$t>::pair_stats(self)
            }
            fn ladder(&self, ensemble: usize) -> Result<Vec<f64>, CudaError> {
                <$t>::ladder(self, ensemble)
            }
            fn levels(&self, ensemble: usize) -> Result<Vec<u32>, CudaError> {
                <$t>::levels(self, ensemble)
            }
            fn sample_target(&self) -> Result<Vec<f32>, CudaError> {
                <$t>::sample_target(self)
            }
            fn snapshot(&self) -> Result<Snapshot, CudaError> {
                <$t>::snapshot(self)
            }
            fn states(&self) -> Result<Vec<f32>, CudaError> {
                <$t>::states(self)
            }
        }
    };
}

device_run!(GpuEnsembles);
device_run!(GpuMlp);

/// The nrpt-cuda configuration of a classifier job (its target's
/// [`Target::cuda_mlp`](super::Target::cuda_mlp)): ensemble e of the job is ensemble e
/// of the launch (Philox key (seed, e), as on the CPU), under the backend's math.
pub fn classifier_config(job: &Job, mlp: &CudaMlp<'_>, math: MathMode) -> MlpConfig {
    MlpConfig {
        options: TemperingOptions {
            ensemble: 0,
            ..job.options
        },
        model: mlp.model,
        ensembles: job.ensembles,
        chains: job.chains,
        math,
    }
}

/// The training set of a classifier as nrpt-core's checked view.
fn training_view<'a>(mlp: &CudaMlp<'a>) -> Result<DataView<'a>, EngineError> {
    let d = mlp.data;
    Ok(DataView::new(
        &d.train.x, &d.train.y, d.features, d.classes,
    )?)
}

impl CudaBackend {
    /// Opens device `ordinal` and compiles the kernels (NVRTC, once per process):
    /// [`MathMode::Exact`], automatic choice of kernels, `f32` states. Without a driver
    /// the error says that no CUDA driver was found; never panics.
    pub fn open(ordinal: usize) -> Result<Self, EngineError> {
        let gpu = Gpu::open(ordinal).map_err(engine_error)?;
        Ok(CudaBackend::from_gpu(Arc::new(gpu)))
    }

    /// The engine on an already opened device, with the defaults of [`open`](Self::open).
    pub(crate) fn from_gpu(gpu: Arc<Gpu>) -> Self {
        CudaBackend {
            gpu,
            math: MathMode::Exact,
            path: ExecutionPath::Auto,
            precision: Precision::F32,
        }
    }

    /// The same engine with another floating-point contract ([`MathMode::Fma`] is
    /// faster and no longer bit-identical to the CPU).
    pub fn with_math(self, math: MathMode) -> Self {
        CudaBackend { math, ..self }
    }

    /// The same engine forcing a choice of kernels (for comparisons and benchmarks).
    pub fn with_path(self, path: ExecutionPath) -> Self {
        CudaBackend { path, ..self }
    }

    /// The same engine with another storage of the states (half precision: SumModes
    /// with D > 2 only; a run of another target fails with a clear message).
    pub fn with_precision(self, precision: Precision) -> Self {
        CudaBackend { precision, ..self }
    }

    /// The device's description (name, compute capability, memory).
    pub fn device(&self) -> &DeviceInfo {
        self.gpu.info()
    }

    /// The opened device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The floating-point contract of the kernels.
    pub fn math(&self) -> MathMode {
        self.math
    }

    /// The nrpt-cuda configuration that runs `job`: ensemble e of the job is ensemble e
    /// of the launch, with Philox key (seed, e) as on the CPU.
    /// (Classifiers run on `GpuMlp` and never use this configuration; a job of a
    /// target without CUDA kernels gets the 2D toy's, which [`Backend::unsupported`]
    /// refuses to run.)
    pub fn config(&self, job: &Job) -> EnsembleConfig {
        EnsembleConfig {
            precision: self.precision,
            math: self.math,
            path: self.path,
            ..kernel_config(job).unwrap_or_else(|| {
                launch_config(job, CudaTarget::with_noise(GpuTarget::Modes2d, 0.0))
            })
        }
    }
}

/// The nrpt-cuda configuration of a job whose target has CUDA kernels ([`Target::cuda`]:
/// `modes2d`, `sum-modes`, `mixture`, a user's target with its own source) with the
/// engine's defaults ([`MathMode::Exact`], automatic choice of kernels, `f32` states),
/// or `None` for a target without. Ensemble e of the job is ensemble e of the launch,
/// with Philox key (seed, e) as on the CPU. The parity tests (`tests/`) run the
/// kernels' host-compiled math on exactly this.
///
/// [`Target::cuda`]: crate::engine::Target::cuda
pub fn kernel_config(job: &Job) -> Option<EnsembleConfig> {
    job.target.cuda().map(|t| launch_config(job, t))
}

/// Why the kernels of [`kernel_config`] cannot run `job` (a target without CUDA
/// kernels, given initial states, rules they do not implement), or `None`.
pub fn kernel_unsupported(job: &Job) -> Option<String> {
    if job.target.cuda().is_none() {
        return Some(format!(
            "target {} has no CUDA kernels (neither a built-in potential of the kernels \
             nor its own CUDA source: Target::cuda)",
            job.target.name()
        ));
    }
    if job.initial_states.is_some() {
        return Some("given initial states are not uploaded by the CUDA engine".to_string());
    }
    match job.options.params(job.chains, job.target.dim()) {
        Err(nrpt_core::Error::Unsupported { what }) => {
            Some(format!("the kernels do not implement {what}"))
        }
        _ => None,
    }
}

fn launch_config(job: &Job, target: CudaTarget) -> EnsembleConfig {
    EnsembleConfig {
        noise: target.noise,
        ..EnsembleConfig::new(
            TemperingOptions {
                ensemble: 0,
                ..job.options
            },
            target.kernels,
            job.ensembles,
            job.chains,
        )
    }
}

/// What a device run records: one [`Recorder`] per ensemble, filled from downloads at
/// the iterations the job records, as the CPU engine fills them.
struct DeviceRecords<'a> {
    job: &'a Job,
    records: Vec<Recorder>,
}

impl<'a> DeviceRecords<'a> {
    fn new(job: &'a Job) -> Self {
        DeviceRecords {
            job,
            records: (0..job.ensembles).map(|e| Recorder::new(job, e)).collect(),
        }
    }

    /// The next number of iterations done, above `done`, after which something is
    /// recorded (or `job.iterations`).
    fn next_stop(&self, done: u64) -> u64 {
        let rec = self.job.record;
        let mut next = self.job.iterations;
        if rec.thin > 0 {
            // Samples after iteration k (0-based), k ≥ warmup, k multiple of thin.
            let from = rec.warmup.max(done);
            let k = from.div_ceil(rec.thin).saturating_mul(rec.thin);
            next = next.min(k.saturating_add(1));
        }
        if let Some(q) = done.checked_div(rec.trace_every) {
            next = next.min((q + 1).saturating_mul(rec.trace_every));
        }
        if done < rec.path_iterations {
            next = next.min(done + 1);
        }
        next
    }

    /// Records what the job asks for once `done` iterations are done (after iteration
    /// k = done − 1): downloads what is recorded then, and lets every ensemble's
    /// recorder observe its part.
    fn observe(&mut self, run: &dyn DeviceRun, done: u64) -> Result<(), CudaError> {
        let rec = self.job.record;
        let k = done - 1;
        let (pairs, d) = (self.job.chains - 1, self.job.target.dim());
        let mut seen = Downloaded::default();
        if rec.traces_at(k) {
            seen.ladders = (0..self.job.ensembles)
                .map(|e| run.ladder(e))
                .collect::<Result<_, _>>()?;
            seen.buffers = run.buffers()?;
            seen.stats = run.index_stats()?;
            seen.counts = run.pair_stats()?;
        }
        if rec.paths_at(k) {
            seen.levels = run.levels(0)?;
        }
        if rec.samples_at(k) {
            seen.targets = run.sample_target()?;
        }
        for (e, r) in self.records.iter_mut().enumerate() {
            let view = DeviceView {
                seen: &seen,
                e,
                pairs,
                d,
            };
            r.observe(rec, k, &view);
        }
        Ok(())
    }
}

/// What was downloaded at one recorded iteration (empty where nothing is recorded).
#[derive(Default)]
struct Downloaded {
    ladders: Vec<Vec<f64>>,
    buffers: Vec<f64>,
    stats: Vec<IndexStats>,
    counts: Vec<PairStats>,
    levels: Vec<u32>,
    targets: Vec<f32>,
}

/// Ensemble `e` of a download, as its recorder reads it.
struct DeviceView<'a> {
    seen: &'a Downloaded,
    e: usize,
    pairs: usize,
    d: usize,
}

impl Observed for DeviceView<'_> {
    fn ladder(&self) -> Vec<f64> {
        self.seen.ladders.get(self.e).cloned().unwrap_or_default()
    }
    fn buffer(&self) -> f64 {
        self.seen.buffers.get(self.e).copied().unwrap_or(f64::NAN)
    }
    fn stats(&self) -> IndexStats {
        self.seen.stats.get(self.e).copied().unwrap_or_default()
    }
    fn indicators(&self, pair: usize) -> u64 {
        self.seen
            .counts
            .get(self.e * self.pairs + pair)
            .map_or(0, |c| c.indicators)
    }
    fn level_of(&self) -> Vec<u32> {
        // Downloaded for ensemble 0 only, the one whose paths are recorded.
        self.seen.levels.clone()
    }
    fn push_target(&self, samples: &mut Vec<f32>) {
        let at = self.e * self.d..(self.e + 1) * self.d;
        samples.extend_from_slice(self.seen.targets.get(at).unwrap_or_default());
    }
}

impl CudaBackend {
    /// Runs `job`; with `timed`, also the seconds the device spent on its iterations
    /// (CUDA events around each chunk's launches: set-up, the drawing and upload of
    /// initial states, module loading, recorded downloads and the final snapshot are
    /// outside), else 0.
    fn run_job(
        &self,
        job: &Job,
        progress: OnProgress<'_>,
        timed: bool,
    ) -> Result<(RunOutput, f64), EngineError> {
        match job.target.cuda_mlp() {
            Some(c) => {
                let view = training_view(&c)?;
                let config = classifier_config(job, &c, self.math);
                let initial = job.initial_states.as_deref().map(Vec::as_slice);
                let run = GpuMlp::new(&self.gpu, &config, &view, initial).map_err(engine_error)?;
                self.drive(job, run, progress, timed)
            }
            None => {
                let run = GpuEnsembles::new(&self.gpu, &self.config(job)).map_err(engine_error)?;
                self.drive(job, run, progress, timed)
            }
        }
    }

    /// Advances `run` to the job's end in chunks that stop where something is recorded,
    /// and returns what the CPU engine returns.
    fn drive(
        &self,
        job: &Job,
        mut run: impl DeviceRun,
        progress: OnProgress<'_>,
        timed: bool,
    ) -> Result<(RunOutput, f64), EngineError> {
        run.time_device(timed);
        let mut records = DeviceRecords::new(job);
        let e = job.ensembles as u64;
        let per_iteration = (e * job.chains as u64).saturating_mul(job.target.dim() as u64);
        let chunk = (CHUNK_WORK / e)
            .min(CHUNK_COORDINATES / per_iteration.max(1))
            .clamp(1, CHUNK_ITERATIONS);
        let mut done = 0u64;
        while done < job.iterations {
            let stop = records.next_stop(done).min(done + chunk);
            run.advance(stop - done).map_err(engine_error)?;
            let flow = progress(e * (stop - done));
            done = stop;
            records.observe(&run, done).map_err(engine_error)?;
            if flow == Flow::Stop {
                return Err(EngineError::Interrupted);
            }
        }
        let device_seconds = run.device_seconds();
        let snapshot = run.snapshot().map_err(engine_error)?;
        let states = run.states().map_err(engine_error)?;
        let (p, d) = (job.chains, job.target.dim());
        let mut runs = records.records;
        for (e, (s, r)) in snapshot.ensembles.into_iter().zip(&mut runs).enumerate() {
            // The state at each level: replica replica_at[l] of ensemble e.
            let levels = s
                .replica_at
                .iter()
                .flat_map(|&r| {
                    let c = e * p + r as usize;
                    states[c * d..(c + 1) * d].iter().copied()
                })
                .collect();
            r.finish(s.ladder, s.buffer, s.stats, s.pair_stats, levels);
        }
        Ok((merge(self.name(), runs, d), device_seconds))
    }

    /// Why this device cannot run a classifier job, or `None`.
    fn classifier_unsupported(&self, job: &Job, target: &CudaMlp<'_>) -> Option<String> {
        if self.precision != Precision::F32 {
            return Some("half-precision storage is for SumModes states, not classifiers".into());
        }
        if self.path == ExecutionPath::Persistent {
            return Some("the persistent kernel is for the 2D toy, not classifiers".into());
        }
        let view = match training_view(target) {
            Ok(v) => v,
            Err(e) => return Some(e.to_string()),
        };
        let config = classifier_config(job, target, self.math);
        if let Err(e) = config.params(view.len(), view.features(), view.classes()) {
            return Some(match e {
                CudaError::Options(nrpt_core::Error::Unsupported { what }) => {
                    format!("the kernels do not implement {what}")
                }
                other => other.to_string(),
            });
        }
        nrpt_cuda::mlp::check_shared_memory(&self.gpu, &config.model)
            .err()
            .map(|e| e.to_string())
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> String {
        NAME.to_string()
    }

    fn unsupported(&self, job: &Job) -> Option<String> {
        // The launches number their ensembles from 0.
        if job.first_ensemble() != 0 {
            return Some(format!(
                "a job whose ensembles start at {} (one shard of a run)",
                job.first_ensemble()
            ));
        }
        if let Some(c) = job.target.cuda_mlp() {
            return self.classifier_unsupported(job, &c);
        }
        kernel_unsupported(job)
    }

    fn run(&self, job: &Job, progress: OnProgress<'_>) -> Result<RunOutput, EngineError> {
        self.checked_run(job, progress, false).map(|(out, _)| out)
    }

    fn as_cuda(&self) -> Option<&CudaBackend> {
        Some(self)
    }
}

impl CudaBackend {
    /// Runs `job` as [`Backend::run`] does and also returns the seconds the device
    /// spent on its iterations, timed by CUDA events around each chunk of launches
    /// (nrpt_cuda::timing): set-up (module loading, allocation, the drawing and upload
    /// of initial states), recorded downloads and the final snapshot are outside. This
    /// is what `nrpt bench --backend cuda` reports as `device_seconds`.
    pub fn run_timed(
        &self,
        job: &Job,
        progress: OnProgress<'_>,
    ) -> Result<(RunOutput, f64), EngineError> {
        self.checked_run(job, progress, true)
    }

    fn checked_run(
        &self,
        job: &Job,
        progress: OnProgress<'_>,
        timed: bool,
    ) -> Result<(RunOutput, f64), EngineError> {
        if let Some(why) = self.unsupported(job) {
            return Err(EngineError::Backend {
                backend: NAME,
                message: format!("{why}: run it with --backend cpu"),
            });
        }
        if job.ensembles == 0 {
            return Err(EngineError::Backend {
                backend: NAME,
                message: "no ensembles to run".to_string(),
            });
        }
        if job.chains < 2 {
            return Err(nrpt_core::Error::TooFewChains { chains: job.chains }.into());
        }
        self.run_job(job, progress, timed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Record;

    /// The chunks end at every iteration where the CPU engine records something.
    #[test]
    fn stops_cover_every_recording_iteration() {
        let records = [
            Record::NOTHING,
            Record {
                thin: 3,
                warmup: 40,
                trace_every: 25,
                path_iterations: 120,
            },
            Record {
                thin: 1,
                warmup: 0,
                trace_every: 1,
                path_iterations: 0,
            },
            Record {
                thin: 7,
                warmup: 500,
                trace_every: 0,
                path_iterations: 1000,
            },
        ];
        for record in records {
            for iterations in [0u64, 1, 2, 99, 300, 1001] {
                let job = Job {
                    record,
                    ..Job::new(
                        std::sync::Arc::new(crate::targets::Toy::modes2d(2.0)),
                        TemperingOptions::default(),
                        4,
                        2,
                        iterations,
                    )
                };
                let recorder = DeviceRecords::new(&job);
                let mut stops = Vec::new();
                let mut done = 0;
                while done < iterations {
                    let next = recorder.next_stop(done);
                    assert!(next > done && next <= iterations, "{record:?}");
                    stops.push(next);
                    done = next;
                }
                for k in 0..iterations {
                    let wanted = (record.thin > 0 && k >= record.warmup && k % record.thin == 0)
                        || (record.trace_every > 0 && (k + 1) % record.trace_every == 0)
                        || k < record.path_iterations;
                    if wanted {
                        assert!(stops.contains(&(k + 1)), "k = {k}, {record:?}");
                    }
                }
            }
        }
    }
}
