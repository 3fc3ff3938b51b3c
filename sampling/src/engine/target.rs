//! What an engine needs of a target: the seam between the engines and the posteriors
//! they sample, the built-in ones (`crate::targets`) and a user's own.
//!
//! A user implements [`Target`]: a name, the dimension D, and an energy oracle (nrpt-core's
//! [`EnergyOracle`]: a stochastic gradient and a stochastic energy), optionally a faster
//! exploration in SIMD lanes and what the GPU kernels run ([`Target::cuda`]: a potential
//! the kernels know, or the target's own CUDA source). Every type that
//! implements [`Target`] is also an [`AnyTarget`], the object-safe form a
//! [`Job`] holds (`Arc<dyn AnyTarget>`), so the same engines run it:
//! ensembles in parallel on the CPU, recording, checkpoints, progress. The exploration
//! and exchange stay generic over the oracle's type inside [`AnyTarget::run_cpu`], so a
//! user's oracle is called without dynamic dispatch.
//!
//! ```
//! use std::convert::Infallible;
//! use std::sync::Arc;
//! use nrpt_sampling::engine::{Job, Record, Target};
//! use nrpt_sampling::engine::cpu::CpuBackend;
//! use nrpt_sampling::engine::Backend;
//! use nrpt_core::rng::Rng;
//! use nrpt_core::target::EnergyOracle;
//!
//! /// A standard normal in D dimensions, seen exactly.
//! #[derive(Debug)]
//! struct Normal(usize);
//!
//! #[derive(Clone)]
//! struct NormalOracle(usize);
//!
//! impl EnergyOracle<f32> for NormalOracle {
//!     type Error = Infallible;
//!     fn dim(&self) -> usize { self.0 }
//!     fn gradient<R: Rng + ?Sized>(&mut self, x: &[f32], g: &mut [f32], _: &mut R)
//!         -> Result<(), Infallible> {
//!         g.copy_from_slice(x);
//!         Ok(())
//!     }
//!     fn energy<R: Rng + ?Sized>(&mut self, x: &[f32], _: &mut R) -> Result<f32, Infallible> {
//!         Ok(0.5 * x.iter().map(|v| v * v).sum::<f32>())
//!     }
//! }
//!
//! impl Target for Normal {
//!     type Oracle = NormalOracle;
//!     fn name(&self) -> String { format!("normal-{}", self.0) }
//!     fn dim(&self) -> usize { self.0 }
//!     fn oracle(&self) -> NormalOracle { NormalOracle(self.0) }
//! }
//!
//! let job = Job::new(Arc::new(Normal(3)), nrpt_core::TemperingOptions::default(), 8, 2, 500);
//! let out = CpuBackend::default().run(&job, &nrpt_sampling::engine::unobserved)?;
//! assert_eq!(out.ensembles.len(), 2);
//! # Ok::<(), nrpt_sampling::engine::EngineError>(())
//! ```

use std::any::Any;
use std::fmt;

use nrpt_core::driver::Tempering;
use nrpt_core::target::EnergyOracle;
use nrpt_cuda::mlp::MlpModel;
use nrpt_cuda::{GpuTarget, Noise};

use super::cpu::{Simd, Span};
use super::state::EnsembleState;
use super::{EngineError, Job, OnProgress};
use crate::data::Dataset;

/// A posterior the engines can sample: what a user implements for their own model.
pub trait Target: Send + Sync + fmt::Debug + 'static {
    /// The energy oracle the driver calls (one per ensemble, so it may own scratch).
    /// Its error is [`Infallible`](std::convert::Infallible) for an oracle that cannot
    /// fail; an oracle whose one evaluation is long (the classifier's, on a large
    /// network) may answer [`crate::interrupt::Stopped`] at a stop request, which ends
    /// the run as [`EngineError::Interrupted`].
    type Oracle: EnergyOracle<f32, Error: Into<EngineError>> + Send;

    /// A short name for reports and summaries (`modes2d`, `classifier`, `banana`).
    fn name(&self) -> String;

    /// The dimension D of a state.
    fn dim(&self) -> usize;

    /// An oracle for one ensemble.
    fn oracle(&self) -> Self::Oracle;

    /// How many units of the configuration make one of the energy (1 unless the
    /// target's rates are configured per example: see `ClassifierTarget`).
    fn energy_scale(&self) -> f64 {
        1.0
    }

    /// The settings that define the target, for `summary.json` (default: its name).
    fn settings(&self) -> serde_json::Value {
        serde_json::json!({ "name": self.name() })
    }

    /// A faster exploration phase for one ensemble, the same bits as the driver's
    /// (SIMD lanes over its replicas), when the target has one for these options;
    /// `None` runs nrpt-core's scalar code.
    fn fast_explore(&self, _job: &Job) -> Option<Explore<Self::Oracle>> {
        None
    }

    /// Bytes the target holds besides the chain states (data sets, scratch per
    /// ensemble), for the memory estimate: (what, bytes).
    fn memory(&self, _ensembles: usize) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// Bytes one worker thread holds while it runs ensembles of `job` besides their
    /// buffers (the scratch of a [`Target::fast_explore`]), for the memory estimate: it
    /// counts them once for every thread the run uses.
    fn memory_per_thread(&self, _job: &Job) -> u64 {
        0
    }

    /// Whether the lane engine, which runs the whole iteration of 32 ensembles in
    /// SIMD lanes (`engine::lockstep`), knows this target's math.
    fn lane_group(&self) -> Option<LaneGroup> {
        None
    }

    /// What the CUDA kernels run for this target (`--backend cuda`): a potential the
    /// kernels know or the target's own CUDA source ([`GpuTarget::Source`], see
    /// [`nrpt_cuda::source`] for what the code defines), and the noise the kernels add,
    /// which must be the noise of [`Target::oracle`] (the oracle is then
    /// `Noisy<potential>`). `None` (the default): the CUDA engine refuses the target.
    fn cuda(&self) -> Option<CudaTarget> {
        None
    }

    /// What nrpt-cuda's classifier kernels run for a data target (`--backend cuda`),
    /// in place of [`Target::cuda`]'s potentials: the network, mini-batch and prior, and
    /// the data set, whose training examples the kernels hold on the device. `None` (the
    /// default) for every other target; the built-in classifier
    /// (`crate::targets::classifier`) answers it.
    fn cuda_mlp(&self) -> Option<CudaMlp<'_>> {
        None
    }
}

/// A classifier as nrpt-cuda's classifier kernels run it ([`Target::cuda_mlp`]).
#[derive(Clone, Copy, Debug)]
pub struct CudaMlp<'a> {
    /// The network, the examples per mini-batch and the prior.
    pub model: MlpModel,
    /// The data; the kernels train on its training set.
    pub data: &'a Dataset,
}

/// What the CUDA engine runs for a target ([`Target::cuda`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CudaTarget {
    /// The potential the kernels evaluate.
    pub kernels: GpuTarget,
    /// The noise the kernels add to its gradients and energies.
    pub noise: Noise,
}

impl CudaTarget {
    /// The kernels' potential `kernels` behind noise of scale `noise` on every gradient
    /// coordinate and energy (what [`Toy`](crate::targets::Toy) targets see).
    pub(crate) fn with_noise(kernels: GpuTarget, noise: f64) -> Self {
        CudaTarget {
            kernels,
            noise: Noise {
                gradient: noise,
                energy: noise,
            },
        }
    }
}

/// The targets whose math the whole-iteration lane engine (`engine::lockstep`) has.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LaneGroup {
    /// The paper's 2D toy behind noise of this scale.
    Modes2d {
        /// The noise scale of gradients and energies.
        noise: f64,
    },
}

/// A faster exploration phase: steps every replica of an ensemble and writes its energy,
/// as `Tempering::explore` does, with the instruction set given.
pub type Explore<O> = fn(&mut Tempering<'_, f32, O>, Simd);

/// The object-safe form of a [`Target`] that a [`Job`] holds; implemented for every
/// [`Target`].
pub trait AnyTarget: Send + Sync + fmt::Debug {
    /// See [`Target::name`].
    fn name(&self) -> String;
    /// See [`Target::dim`].
    fn dim(&self) -> usize;
    /// See [`Target::energy_scale`].
    fn energy_scale(&self) -> f64;
    /// See [`Target::settings`].
    fn settings(&self) -> serde_json::Value;
    /// See [`Target::memory`].
    fn memory(&self, ensembles: usize) -> Vec<(&'static str, u64)>;
    /// See [`Target::memory_per_thread`].
    fn memory_per_thread(&self, job: &Job) -> u64;
    /// See [`Target::lane_group`].
    fn lane_group(&self) -> Option<LaneGroup>;
    /// See [`Target::cuda`].
    fn cuda(&self) -> Option<CudaTarget>;
    /// See [`Target::cuda_mlp`].
    fn cuda_mlp(&self) -> Option<CudaMlp<'_>>;
    /// Runs the ensembles of `span` of `job` on the CPU (see `engine::cpu`), with the
    /// target's own oracle type.
    fn run_cpu(
        &self,
        job: &Job,
        span: Span<'_>,
        simd: Simd,
        progress: OnProgress<'_>,
    ) -> Result<Vec<EnsembleState>, EngineError>;
    /// The target as `Any`, for engines and reports that know a built-in target
    /// (the CUDA kernels, the 2D toy's accuracy).
    fn as_any(&self) -> &dyn Any;
}

impl<T: Target> AnyTarget for T {
    fn name(&self) -> String {
        Target::name(self)
    }

    fn dim(&self) -> usize {
        Target::dim(self)
    }

    fn energy_scale(&self) -> f64 {
        Target::energy_scale(self)
    }

    fn settings(&self) -> serde_json::Value {
        Target::settings(self)
    }

    fn memory(&self, ensembles: usize) -> Vec<(&'static str, u64)> {
        Target::memory(self, ensembles)
    }

    fn memory_per_thread(&self, job: &Job) -> u64 {
        Target::memory_per_thread(self, job)
    }

    fn lane_group(&self) -> Option<LaneGroup> {
        Target::lane_group(self)
    }

    fn cuda(&self) -> Option<CudaTarget> {
        Target::cuda(self)
    }

    fn cuda_mlp(&self) -> Option<CudaMlp<'_>> {
        Target::cuda_mlp(self)
    }

    fn run_cpu(
        &self,
        job: &Job,
        span: Span<'_>,
        simd: Simd,
        progress: OnProgress<'_>,
    ) -> Result<Vec<EnsembleState>, EngineError> {
        let fast = if simd == Simd::Scalar {
            None
        } else {
            self.fast_explore(job)
        };
        super::cpu::run_chunk_with(
            job,
            span,
            progress,
            |_| self.oracle(),
            |t| match fast {
                Some(explore) => {
                    explore(t, simd);
                    Ok(())
                }
                None => t.explore().map_err(Into::into),
            },
        )
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl dyn AnyTarget {
    /// The target as the built-in type `T`, if it is one.
    pub fn downcast_ref<T: Target>(&self) -> Option<&T> {
        self.as_any().downcast_ref::<T>()
    }

    /// Whether the target is the built-in type `T`.
    pub fn is<T: Target>(&self) -> bool {
        self.as_any().is::<T>()
    }
}
