//! The Bayesian classifier on data as a target: mini-batch energies of a softmax
//! regression or MLP (`engine::classifier`), rates configured per example.

use std::sync::Arc;

use super::{Builtin, Method};
use crate::config::{ExplorerKind, RunConfig};
use crate::error::ConfigError;
use crate::engine::{Batched, ClassifierTarget, Target};

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
