//! Running many ensembles: the job description, what a run returns, and the
//! [`Backend`] trait that the CPU engine (and the CUDA engine) implement.

mod buffers;
pub mod classifier;
pub mod cpu;
pub mod cuda;
mod lockstep;
pub(crate) mod matmul;
pub mod memory;
mod record;
pub use record::ladder_spread;
mod softmax;
pub mod state;
mod toy2d;

pub use buffers::EnsembleBuffers;
pub use classifier::ClassifierTarget;

use std::sync::Arc;

use nrpt_core::driver::TemperingOptions;
use nrpt_core::index::{IndexStats, PairStats};
use nrpt_core::target::{Modes2d, Potential, SumModes};
use serde::Serialize;

/// The energy landscapes the engines know.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "name")]
pub enum Target {
    /// The paper's 25-mode 2D target (with the authors' wall at |x|² = 20).
    Modes2d,
    /// `Σ_j 0.2 x_j² − 2 cos 2πx_j` in `dim` dimensions.
    SumModes {
        /// Dimension D.
        dim: usize,
    },
    /// The posterior of a classifier's parameters on a training set, through
    /// mini-batches (see [`classifier`]).
    Classifier(Arc<ClassifierTarget>),
}

impl Target {
    /// Dimension D.
    pub fn dim(&self) -> usize {
        match self {
            Target::Modes2d => 2,
            Target::SumModes { dim } => *dim,
            Target::Classifier(c) => c.dim(),
        }
    }

    /// How many units of the configuration make one of the energy: the training
    /// examples for a classifier (whose learning rates and buffer are configured per
    /// example, for the mean loss, while its energy sums over the examples), 1 for the
    /// toy targets. A configured rate η is η / scale in the job; a buffer C is C · scale.
    pub fn energy_scale(&self) -> f64 {
        match self {
            Target::Classifier(c) => c.data.train.len() as f64,
            _ => 1.0,
        }
    }

    /// The synthetic potential behind the toy targets (seen through added noise), or
    /// `None` for data targets.
    pub fn toy(&self) -> Option<Toy> {
        match self {
            Target::Modes2d => Some(Toy::Modes2d),
            Target::SumModes { dim } => Some(Toy::SumModes { dim: *dim }),
            Target::Classifier(_) => None,
        }
    }
}

/// The synthetic potentials of the toy targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Toy {
    /// The paper's 25-mode 2D target.
    Modes2d,
    /// The D-dimensional sum of 5-mode profiles.
    SumModes {
        /// Dimension D.
        dim: usize,
    },
}

impl<F: nrpt_core::Float> Potential<F> for Toy {
    fn dim(&self) -> usize {
        match *self {
            Toy::Modes2d => 2,
            Toy::SumModes { dim } => dim,
        }
    }

    #[inline]
    fn energy(&self, x: &[F]) -> F {
        match *self {
            Toy::Modes2d => Potential::<F>::energy(&Modes2d, x),
            Toy::SumModes { dim } => Potential::<F>::energy(&SumModes { dim }, x),
        }
    }

    #[inline]
    fn gradient(&self, x: &[F], grad: &mut [F]) {
        match *self {
            Toy::Modes2d => Potential::<F>::gradient(&Modes2d, x, grad),
            Toy::SumModes { dim } => Potential::<F>::gradient(&SumModes { dim }, x, grad),
        }
    }
}

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
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Options of every ensemble (the `ensemble` field is set per ensemble).
    pub options: TemperingOptions,
    /// Target.
    pub target: Target,
    /// Standard deviation of the noise added to gradients and energies.
    pub noise: f64,
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
}

impl RunOutput {
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

/// A way of running a [`Job`]: the CPU engine, the CUDA engine.
pub trait Backend: Sync {
    /// Short name for reports ("cpu", "cuda").
    fn name(&self) -> String;

    /// Why this backend cannot run `job` (rules it does not implement), or `None`.
    fn unsupported(&self, _job: &Job) -> Option<String> {
        None
    }

    /// Runs the job; `progress(n)` is called now and then with the number of
    /// ensemble-iterations done since the previous call (total E × iterations).
    fn run(&self, job: &Job, progress: &(dyn Fn(u64) + Sync)) -> Result<RunOutput, EngineError>;
}
