//! The Bayesian classifier on data as a target, in one place: the posterior of a
//! softmax regression or MLP's parameters on a training set, seen through mini-batches.
//!
//! - [`ClassifierTarget`] (here): the data, the network, the mini-batch and the prior,
//!   with its [`Target`] implementation (rates configured per example) and its
//!   registration as `--target classifier` ([`CLASSIFIER`], [`model()`]);
//! - [`oracle`]: [`Batched`], its mini-batch energy and gradient for the CPU engine;
//! - [`network`]: the network's forward and backward passes as matrix products,
//!   predictions and initial parameters; [`matmul`]: the small matrix products they run
//!   on; `softmax`: the vectorized loss and its δ.
//!
//! The CUDA engine runs the same target on nrpt-cuda's classifier kernels, from what
//! [`Target::cuda_mlp`] gives it.

use std::sync::Arc;

use nrpt_core::model::Architecture;
use nrpt_cuda::mlp::MlpModel;
use serde::Serialize;

use super::{Builtin, Method};
use crate::config::{ExplorerKind, RunConfig};
use crate::data::Dataset;
use crate::engine::{CudaMlp, Target};
use crate::error::ConfigError;

pub mod matmul;
pub mod network;
pub mod oracle;
mod softmax;

pub use matmul::Kernel;
pub use network::{initial_parameters, predict};
pub use oracle::Batched;

/// A classifier target: the data, the network and how it is seen.
#[derive(Clone, Debug)]
pub struct ClassifierTarget {
    /// The training and test sets.
    pub data: Arc<Dataset>,
    /// The network: [F, hidden…, C].
    pub arch: Architecture,
    /// Examples per mini-batch.
    pub batch: usize,
    /// Standard deviation σ of the Gaussian prior on every parameter.
    pub prior_sigma: f64,
}

impl PartialEq for ClassifierTarget {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.data, &other.data)
            && self.arch == other.arch
            && self.batch == other.batch
            && self.prior_sigma == other.prior_sigma
    }
}

impl Serialize for ClassifierTarget {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("ClassifierTarget", 6)?;
        st.serialize_field("data", &self.data.name)?;
        st.serialize_field("layers", &self.arch.sizes().collect::<Vec<_>>())?;
        st.serialize_field("parameters", &self.arch.parameters())?;
        st.serialize_field("batch", &self.batch)?;
        st.serialize_field("prior_sigma", &self.prior_sigma)?;
        st.serialize_field("train_examples", &self.data.train.len())?;
        st.end()
    }
}

impl ClassifierTarget {
    /// The network [F, `hidden`…, C] on `data` (features F and classes C come from the
    /// data), mini-batches of `batch` examples and a N(0, `prior_sigma`²) prior; the
    /// error names the setting at fault (`hidden`, `batch`, `prior_sigma`).
    pub fn new(
        data: Arc<Dataset>,
        hidden: &[usize],
        batch: usize,
        prior_sigma: f64,
    ) -> Result<Self, ConfigError> {
        let mut sizes = vec![data.features];
        sizes.extend_from_slice(hidden);
        sizes.push(data.classes);
        let arch =
            Architecture::new(&sizes).map_err(|e| ConfigError::new("hidden", e.to_string()))?;
        if batch == 0 || batch > data.train.len() {
            return Err(ConfigError::new(
                "batch",
                format!(
                    "must be between 1 and the {} training examples, got {batch}",
                    data.train.len()
                ),
            ));
        }
        if !(prior_sigma.is_finite() && prior_sigma > 0.0) {
            return Err(ConfigError::new(
                "prior_sigma",
                format!("must be a finite number > 0, got {prior_sigma}"),
            ));
        }
        Ok(ClassifierTarget {
            data,
            arch,
            batch,
            prior_sigma,
        })
    }

    /// Parameters D (the dimension of a state).
    pub fn dim(&self) -> usize {
        self.arch.parameters()
    }

    /// Training examples N.
    pub fn examples(&self) -> usize {
        self.data.train.len()
    }

    /// Mini-batch iterations per pass over the training set: N / |B|.
    pub fn iterations_per_epoch(&self) -> f64 {
        self.examples() as f64 / self.batch as f64
    }

    /// Iterations (mini-batches per chain) of `epochs` passes over the training set.
    pub fn iterations(&self, epochs: f64) -> u64 {
        (epochs * self.iterations_per_epoch()).round().max(1.0) as u64
    }

    /// The same network, mini-batch and prior on other data (of the same features and
    /// classes), the mini-batch no larger than its training set.
    pub fn with_data(&self, data: Arc<Dataset>) -> Result<Self, ConfigError> {
        let hidden: Vec<usize> = self
            .arch
            .sizes()
            .skip(1)
            .take(self.arch.layers() - 1)
            .collect();
        let batch = self.batch.min(data.train.len().max(1));
        ClassifierTarget::new(data, &hidden, batch, self.prior_sigma)
    }

    /// A batched oracle over this target, with its own workspace, computing with the
    /// fastest kernel of this processor.
    pub fn oracle(self: &Arc<Self>) -> Batched {
        self.oracle_with(Kernel::detect())
    }

    /// A batched oracle whose matrix products run on `kernel` (for comparisons: each
    /// kernel sums in its own order).
    pub fn oracle_with(self: &Arc<Self>, kernel: Kernel) -> Batched {
        Batched::new(Arc::clone(self), kernel)
    }

    /// The floating-point operations of one chain-step of the batched oracle: the
    /// gradient pass (forward 2·B·M, backward 4·B·M less the first layer's input
    /// gradient 2·B·F·H₁) and the energy's forward pass (2·B·M), with M = Σ in·out;
    /// biases, activations and the softmax not counted. The NumPy reference counts the
    /// same way.
    pub fn flops_per_chain_step(&self) -> f64 {
        let b = self.batch as f64;
        let m = self.arch.multiply_adds() as f64;
        // No input gradient is needed for the first layer.
        let first = self
            .arch
            .layer(0)
            .map_or(0.0, |l| (l.inputs * l.outputs) as f64);
        2.0 * b * m + (4.0 * b * m - 2.0 * b * first) + 2.0 * b * m
    }
}

/// A classifier target as the engines hold it.
pub type Classifier = Arc<ClassifierTarget>;

/// `--target classifier`: the defaults of the deep experiment (momentum SGD, rates
/// 0.005 to 0.02 per example, S = 0.1, buffer 0.1 per example with scale 10,
/// γ_k = 50/(k^0.8 + 1000), 4,000 iterations, 3 ensembles, a sample every 20 iterations
/// after 400).
pub const CLASSIFIER: Builtin = Builtin {
    name: "classifier",
    about: "a Bayesian MLP (or softmax regression) on data: --dataset or --data, --hidden, \
            --batch; rates and buffer per example",
    method: Method::Sgd,
    keys: &[
        "dataset",
        "data",
        "labels",
        "test_data",
        "test_labels",
        "hidden",
        "batch",
        "prior_sigma",
    ],
    args: &[],
    defaults: |c| RunConfig {
        chains: 10,
        ensembles: 3,
        iterations: 4_000,
        swap_rate: 0.1,
        eta_min: 0.005,
        eta_max: 0.02,
        explorer: ExplorerKind::Msgd,
        buffer: 0.1,
        buffer_scale: 10.0,
        gamma_b: 1000.0,
        thin: 20,
        warmup: 400,
        ..c
    },
    // Rates and buffer are per example; the energy sums over N examples (the target's
    // energy scale).
    build: |c| Ok(Arc::new(model(c)?)),
};

/// The classifier a configuration describes: its data loaded and checked, its network.
pub fn model(c: &RunConfig) -> Result<Classifier, ConfigError> {
    let spec = crate::data::DataSpec::from_paths(
        c.dataset,
        c.data.as_deref(),
        c.labels.as_deref(),
        c.test_data.as_deref(),
        c.test_labels.as_deref(),
    )
    .map_err(|e| match e {
        // The key of the flag at fault (`--test-labels`: `test_labels`).
        crate::data::DataError::Flag { flag, reason } => {
            ConfigError::new(&flag.trim_start_matches('-').replace('-', "_"), reason)
        }
        e => ConfigError::new("data", e.to_string()),
    })?;
    let data = crate::data::load(&spec).map_err(|e| {
        // The key whose file the error is about (`--labels`, `--test-data`, …).
        let key = e
            .file()
            .and_then(|f| {
                c.input_paths()
                    .into_iter()
                    .find(|(_, p)| crate::data::display(p) == f)
            })
            .map_or("data", |(k, _)| k);
        ConfigError::new(key, e.to_string())
    })?;
    if let Some(w) = data.class_warning() {
        crate::note!("warning: {w}");
    }
    ClassifierTarget::new(Arc::new(data), &c.hidden, c.batch, c.prior_sigma).map(Arc::new)
}

impl Target for Arc<ClassifierTarget> {
    type Oracle = Batched;

    fn name(&self) -> String {
        "classifier".into()
    }

    fn dim(&self) -> usize {
        ClassifierTarget::dim(self)
    }

    fn oracle(&self) -> Batched {
        ClassifierTarget::oracle(self)
    }

    /// nrpt-cuda's classifier kernels: the network, mini-batch and prior, and the data.
    fn cuda_mlp(&self) -> Option<CudaMlp<'_>> {
        Some(CudaMlp {
            model: MlpModel {
                arch: self.arch,
                batch: self.batch,
                prior_sigma: self.prior_sigma,
            },
            data: &self.data,
        })
    }

    /// The training examples N: rates and buffer are configured per example (for the
    /// mean loss) while the energy sums over the examples.
    fn energy_scale(&self) -> f64 {
        self.data.train.len() as f64
    }

    fn settings(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.as_ref()).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.insert("name".into(), "classifier".into());
        }
        v
    }

    fn memory(&self, ensembles: usize) -> Vec<(&'static str, u64)> {
        let m = |v: &[u64]| v.iter().fold(1u64, |a, &b| a.saturating_mul(b));
        let data = &self.data;
        let rows = (data.train.len() + data.test.len()) as u64;
        // One `Batched` per ensemble: the batch's inputs, every layer's outputs, two rows
        // of the widest layer and the softmax's C + 3 values per example (rows with a
        // column of ones, padded to whole vectors of 8: an upper bound), the largest
        // layer's weights repacked and a padded bias; and a gradient of D values.
        let b = self.batch as u64;
        let pad = |n: usize| (n as u64).div_ceil(8).saturating_mul(8);
        let widths: u64 = self.arch.iter().map(|l| pad(l.outputs + 1)).sum();
        let packed = self
            .arch
            .iter()
            .map(|l| m(&[l.inputs as u64, pad(l.outputs)]).max(m(&[l.outputs as u64, pad(l.inputs)])))
            .max()
            .unwrap_or(0)
            .saturating_add(pad(self.arch.widest()));
        let scratch = m(&[
            b,
            (data.features as u64 + 1)
                .saturating_add(widths)
                .saturating_add(m(&[2, pad(self.arch.widest() + 1)]))
                .saturating_add(self.arch.classes() as u64 + 3),
            4,
        ])
        .saturating_add(m(&[4, packed]))
        .saturating_add(m(&[4, ClassifierTarget::dim(self) as u64]));
        vec![
            (
                "data",
                m(&[rows, (data.features as u64).saturating_add(1), 4]),
            ),
            ("scratch", m(&[ensembles as u64, scratch])),
        ]
    }
}
