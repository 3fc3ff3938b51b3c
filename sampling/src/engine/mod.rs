//! Running many ensembles: the job description, what a run returns, and the
//! [`Backend`] trait that the CPU engine (and the CUDA engine) implement.

mod buffers;
pub mod cpu;
pub mod cuda;
mod group;
pub(crate) mod lockstep;
pub mod memory;
mod record;
pub use record::{EnsembleRecords, EnsembleTrace, Observed, ladder_spread};
pub(crate) mod replica_lanes;
pub mod simd;
pub mod state;
pub mod target;

pub use buffers::EnsembleBuffers;
pub use target::{AnyTarget, CudaMlp, CudaTarget, Explore, LaneGroup, Target};

use std::sync::Arc;

use nrpt_core::driver::TemperingOptions;
use nrpt_core::index::{IndexStats, PairStats};
use serde::Serialize;

/// What to record while running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Keep the target-level state of every ensemble every `thin` iterations (0: none).
    pub thin: u64,
    /// Keep samples only from iteration `warmup` on.
    pub warmup: u64,
    /// Trace ladder, buffer, rates and round trips every `trace_every` iterations
    /// (0: never).
    pub trace_every: u64,
    /// Record the level of every replica of ensemble 0 for the first
    /// `path_iterations` iterations (0: none).
    pub path_iterations: u64,
}

impl Record {
    /// Nothing recorded (benchmarks).
    pub const NOTHING: Record = Record {
        thin: 0,
        warmup: 0,
        trace_every: 0,
        path_iterations: 0,
    };
}

/// One run: E independent ensembles of P replicas, all with the same options; ensemble
/// e draws its random numbers with Philox key (seed, e).
///
/// The ensembles of a job are `options.ensemble .. options.ensemble + E`
/// ([`Job::first_ensemble`]): 0 .. E for a whole run, a later block for one shard of it,
/// whose ensembles then draw exactly the numbers they draw in the whole run.
#[derive(Clone, Debug)]
pub struct Job {
    /// Options of every ensemble; the `ensemble` field is the index of the job's first
    /// ensemble (0 but for a shard), and the engines set it per ensemble.
    pub options: TemperingOptions,
    /// What is sampled: a built-in target (`crate::targets`) or a user's [`Target`].
    pub target: Arc<dyn AnyTarget>,
    /// P.
    pub chains: usize,
    /// E.
    pub ensembles: usize,
    /// Iterations.
    pub iterations: u64,
    /// What to record.
    pub record: Record,
    /// States to start from with `InitialStates::Keep`, ensemble by ensemble and
    /// replica by replica (E·P·D values); `None` for the options' own start.
    pub initial_states: Option<Arc<Vec<f32>>>,
}

impl Job {
    /// A job of `ensembles` ensembles of `chains` replicas of `target` for `iterations`
    /// iterations, recording nothing.
    pub fn new(
        target: Arc<dyn AnyTarget>,
        options: TemperingOptions,
        chains: usize,
        ensembles: usize,
        iterations: u64,
    ) -> Job {
        Job {
            options,
            target,
            chains,
            ensembles,
            iterations,
            record: Record::NOTHING,
            initial_states: None,
        }
    }
}

impl Job {
    /// The index of the job's first ensemble: ensemble i of the job is ensemble
    /// `first_ensemble() + i` of the run it belongs to (its Philox key, its records).
    pub fn first_ensemble(&self) -> usize {
        self.options.ensemble as usize
    }
}

impl PartialEq for Job {
    /// The same options, sizes, records and start, and the same target (the same
    /// object, or one with the same name and settings).
    fn eq(&self, other: &Self) -> bool {
        let same_target = Arc::ptr_eq(&self.target, &other.target)
            || (self.target.name() == other.target.name()
                && self.target.settings() == other.target.settings());
        same_target
            && self.options == other.options
            && self.chains == other.chains
            && self.ensembles == other.ensembles
            && self.iterations == other.iterations
            && self.record == other.record
            && self.initial_states == other.initial_states
    }
}

/// Final state of one ensemble.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct EnsembleResult {
    /// Learning rate of each level.
    pub ladder: Vec<f64>,
    /// Correction buffer C.
    pub buffer: f64,
    /// Round trips, restarts, non-finite energies.
    pub stats: IndexStats,
    /// Per-pair counts.
    pub pairs: Vec<PairStats>,
    /// The final state of every level, level by level (P·D values).
    pub levels: Vec<f32>,
}

/// Traces over the run, one entry every `trace_every` iterations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// Iterations done at each entry.
    pub iterations: Vec<u64>,
    /// Ladder at each entry: per level, the mean over ensembles.
    pub ladder: Vec<Vec<f64>>,
    /// Ladder at each entry: per level, the standard deviation over ensembles.
    pub ladder_sd: Vec<Vec<f64>>,
    /// Buffer C averaged over ensembles.
    pub buffer: Vec<f64>,
    /// Standard round trips so far, summed over ensembles.
    pub round_trips: Vec<u64>,
    /// Round trips so far in the authors' counting, summed over ensembles.
    pub authors_round_trips: Vec<u64>,
    /// Per pair: share of iterations since the previous entry with a swap indicator
    /// of 1, averaged over ensembles.
    pub indicator_rate: Vec<Vec<f64>>,
}

impl Trace {
    /// The trace of a run from its ensembles' traces, in ensemble order: what the run's
    /// own output holds when they are its ensembles'.
    pub fn merge(ensembles: &[EnsembleTrace]) -> Trace {
        let refs: Vec<&EnsembleTrace> = ensembles.iter().collect();
        record::merge_traces(&refs)
    }
}

/// Everything a run returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    /// Name of the backend that ran it.
    pub backend: String,
    /// Final state of every ensemble.
    pub ensembles: Vec<EnsembleResult>,
    /// Target-level samples, `[sample][ensemble][coordinate]` flattened.
    pub samples: Vec<f32>,
    /// Iteration of each sample.
    pub sample_iterations: Vec<u64>,
    /// Traces.
    pub trace: Trace,
    /// Level of each replica of ensemble 0, one `Vec` per replica, one entry per
    /// iteration of the first `path_iterations`.
    pub paths: Vec<Vec<u32>>,
    /// The traces of every ensemble, from which `trace` is made.
    pub ensemble_traces: Vec<EnsembleTrace>,
}

impl RunOutput {
    /// The records of every ensemble, the first being ensemble `first` of its run
    /// (the job's [`Job::first_ensemble`]); `dim` coordinates per sample. `None` when
    /// this output does not hold whole records (made by hand).
    pub fn split(&self, first: usize, dim: usize) -> Option<Vec<EnsembleRecords>> {
        record::split(self, first, dim)
    }

    /// The output of a run from the records of all its ensembles, in order: the same
    /// bits as the run's own output when the records are its ensembles' (whatever jobs
    /// ran them), `backend` named.
    pub fn join(backend: String, parts: Vec<EnsembleRecords>, dim: usize) -> RunOutput {
        record::join(backend, parts, dim)
    }

    /// Round trips summed over ensembles.
    pub fn total_stats(&self) -> IndexStats {
        let mut t = IndexStats::default();
        for e in &self.ensembles {
            t.round_trips += e.stats.round_trips;
            t.restarts += e.stats.restarts;
            t.authors_round_trips += e.stats.authors_round_trips;
            t.nonfinite_energies += e.stats.nonfinite_energies;
        }
        t
    }
}

/// Errors of an engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The options or sizes were rejected by nrpt-core.
    #[error("invalid run: {0}")]
    Invalid(#[from] nrpt_core::Error),
    /// Ctrl-C was pressed; the run stopped and wrote nothing.
    #[error("interrupted")]
    Interrupted,
    /// The backend could not run (no device, a kernel failed, …).
    #[error("{backend} backend: {message}")]
    Backend {
        /// Which backend.
        backend: &'static str,
        /// What happened.
        message: String,
    },
}

/// An oracle that cannot fail (`Error = Infallible`) fails no run.
impl From<std::convert::Infallible> for EngineError {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}

pub use crate::interrupt::Flow;

impl From<crate::interrupt::Stopped> for EngineError {
    fn from(_: crate::interrupt::Stopped) -> Self {
        EngineError::Interrupted
    }
}

/// A progress callback: called now and then with the work done since the last call
/// (for the sampler engines, ensemble-iterations; E × iterations in all).
pub type OnProgress<'a> = &'a (dyn Fn(u64) -> Flow + Sync);

/// A progress callback that ignores the reports and never stops a run.
pub fn unobserved(_: u64) -> Flow {
    Flow::Continue
}

/// A way of running a [`Job`]: the CPU engine, the CUDA engine.
pub trait Backend: Sync {
    /// Short name for reports ("cpu", "cuda").
    fn name(&self) -> String;

    /// Why this backend cannot run `job` (rules it does not implement), or `None`.
    fn unsupported(&self, _job: &Job) -> Option<String> {
        None
    }

    /// Runs the job; `progress(n)` is called now and then with the number of
    /// ensemble-iterations done since the previous call (total E × iterations), and
    /// its answer [`Flow::Stop`] ends the run with [`EngineError::Interrupted`].
    fn run(&self, job: &Job, progress: OnProgress<'_>) -> Result<RunOutput, EngineError>;

    /// The CUDA engine behind this backend, where it is one (for what only it can
    /// report, such as device-timed benches); `None` by default.
    fn as_cuda(&self) -> Option<&cuda::CudaBackend> {
        None
    }
}
