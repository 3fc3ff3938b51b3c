//! A reference posterior for the deep comparison: the predictive on the test set of
//! full-batch Hamiltonian Monte Carlo on the same model, data and prior, with what it
//! took to get it and how well its chains agree.
//!
//! `nrpt reference` computes one ([`run`]) and writes it as two files:
//!
//! - `reference.npy`: the posterior predictive, test examples × classes, `f64`: the
//!   average over every kept sample of every chain of the softmax outputs;
//! - `draws.npy.gz` (optional): the predictives of some of its samples one by one
//!   ([`Draws`]), for the exact-sampling row of `nrpt deep`;
//! - `reference.json`: a [`Meta`]: the model it belongs to ([`ModelKey`]: data and its
//!   SHA-256, layers, prior), the sampler's settings, the convergence diagnostics (R̂
//!   and effective sample sizes of the test log-likelihood and of the predictive
//!   probabilities), its own accuracy and NLL, the seconds it took, the command, machine
//!   and date.
//!
//! `nrpt deep` scores every method against a reference of the same model: the one
//! given by `--reference DIR`, else a bundled one ([`bundled`]) when its key matches.
//! A reference of another model is an error, never a silent comparison.

pub mod draws;
pub mod run;

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use crate::error::ReferenceError;
pub use draws::Draws;
pub use run::{Diagnostics, HmcSettings, Quantity, ReferenceRun};

use nrpt_sampling::data::Dataset;
use nrpt_sampling::targets::classifier::ClassifierTarget;

/// Version of the files' layout.
pub const FORMAT: u32 = 1;

/// Name of the predictive file in a reference folder.
pub(crate) const PREDICTIVE_FILE: &str = "reference.npy";
/// Name of the description file in a reference folder.
pub(crate) const META_FILE: &str = "reference.json";

/// The most bytes a `reference.json` may hold.
const MAX_META_BYTES: u64 = 1 << 20;
/// The most bytes a `reference.npy` may hold (10⁷ probabilities).
const MAX_PREDICTIVE_BYTES: u64 = 80 << 20;

/// Rows of a predictive must sum to 1 within this (a reference's when it is read, and a
/// predictive scored against one, [`super::external`]).
pub const SUM_TOLERANCE: f64 = 1e-6;

/// What a reference belongs to: the same data (by content), network and prior.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelKey {
    /// The data's short name (`digits`, `mnist1d`, a file name).
    pub data: String,
    /// SHA-256 of the data as the model sees it ([`data_digest`]).
    pub data_sha256: String,
    /// Layer sizes [F, hidden…, C].
    pub layers: Vec<usize>,
    /// Standard deviation of the Gaussian prior on every parameter.
    pub prior_sigma: f64,
    /// Training examples.
    pub train_examples: usize,
    /// Test examples.
    pub test_examples: usize,
}

impl ModelKey {
    /// The key of a classifier target.
    pub fn of(target: &ClassifierTarget) -> Self {
        let d = &target.data;
        ModelKey {
            data: d.name.clone(),
            data_sha256: data_digest(d),
            layers: target.arch.sizes().collect(),
            prior_sigma: target.prior_sigma,
            train_examples: d.train.len(),
            test_examples: d.test.len(),
        }
    }

    /// The first field in which `self` (a reference's) and `model` differ, as
    /// (field, reference's value, model's value).
    fn difference(&self, model: &ModelKey) -> Option<(&'static str, String, String)> {
        let show = |v: &dyn std::fmt::Debug| format!("{v:?}");
        if self.data_sha256 != model.data_sha256 {
            return Some((
                "data",
                format!("{} (SHA-256 {})", self.data, self.data_sha256),
                format!("{} (SHA-256 {})", model.data, model.data_sha256),
            ));
        }
        if self.layers != model.layers {
            return Some(("layers", show(&self.layers), show(&model.layers)));
        }
        if self.prior_sigma != model.prior_sigma {
            return Some((
                "prior_sigma",
                show(&self.prior_sigma),
                show(&model.prior_sigma),
            ));
        }
        None
    }
}

/// SHA-256 (hex) of a data set's content as the model sees it: features and classes
/// (u64 little-endian), then per split (training, test) its number of examples (u64
/// LE), its features (f32 LE) and its labels (u32 LE). Two files with the same examples in the same split digest
/// alike; a changed value, order or split does not.
pub fn data_digest(d: &Dataset) -> String {
    let mut h = Sha256::new();
    h.update((d.features as u64).to_le_bytes());
    h.update((d.classes as u64).to_le_bytes());
    for split in [&d.train, &d.test] {
        h.update((split.len() as u64).to_le_bytes());
        for v in &split.x {
            h.update(v.to_le_bytes());
        }
        for y in &split.y {
            h.update(y.to_le_bytes());
        }
    }
    h.finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
}

/// Everything `reference.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// [`FORMAT`].
    pub format: u32,
    /// The model the reference belongs to.
    pub model: ModelKey,
    /// How it was sampled.
    pub sampler: HmcSettings,
    /// How well the chains agree.
    pub diagnostics: Diagnostics,
    /// Test accuracy of the reference predictive.
    pub accuracy: f64,
    /// Its NLL per test example.
    pub nll: f64,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
    /// The command that made it.
    pub command: String,
    /// The machine it ran on (processor, cores).
    pub machine: String,
    /// When (UTC, ISO 8601).
    pub date: String,
    /// nrpt's version.
    pub nrpt_version: String,
}

/// A reference posterior: its description and its predictive (test examples × classes).
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    /// The description.
    pub meta: Meta,
    /// The predictive, row-major, every row a distribution.
    pub predictive: Vec<f64>,
    /// Where it came from (a folder, or the bundled name).
    pub source: String,
    /// Some of its samples' predictives one by one (`None` for a reference written
    /// without them, e.g. by nrpt before they were kept).
    pub draws: Option<Draws>,
}

impl Reference {
    /// Reads a reference folder (`reference.json`, `reference.npy` and, when there,
    /// `draws.npy.gz`), checking each.
    pub fn load(dir: &Path) -> Result<Self, ReferenceError> {
        let read = |name: &str, cap: u64| {
            let path = dir.join(name);
            nrpt_sampling::input::read_all(&path, cap, "reference file")
                .map_err(|source| ReferenceError::Io { path, source })
        };
        let meta = read(META_FILE, MAX_META_BYTES)?;
        let npy = read(PREDICTIVE_FILE, MAX_PREDICTIVE_BYTES)?;
        let draws = if dir.join(draws::DRAWS_FILE).exists() {
            Some(read(draws::DRAWS_FILE, MAX_PREDICTIVE_BYTES)?)
        } else {
            None
        };
        Self::from_bytes(&meta, &npy, draws.as_deref(), &dir.display().to_string())
    }

    /// A reference from its files' bytes (the draws' when there are some); `source`
    /// names them in errors.
    pub fn from_bytes(
        meta: &[u8],
        npy: &[u8],
        draws: Option<&[u8]>,
        source: &str,
    ) -> Result<Self, ReferenceError> {
        let meta_err = |reason: String| ReferenceError::Meta {
            path: format!("{source}/{META_FILE}"),
            reason,
        };
        let meta: Meta =
            nrpt_sampling::json::from_slice(meta).map_err(|e| meta_err(e.to_string()))?;
        if meta.format != FORMAT {
            return Err(meta_err(format!(
                "format {} (this nrpt reads format {FORMAT})",
                meta.format
            )));
        }
        let bad = |reason: String| ReferenceError::Predictive {
            path: format!("{source}/{PREDICTIVE_FILE}"),
            reason,
        };
        let array = nrpt_sampling::npy::decode(npy, 2).map_err(|e| bad(e.to_string()))?;
        let classes = meta.model.layers.last().copied().unwrap_or(0);
        let want = [meta.model.test_examples, classes];
        if array.shape != want {
            return Err(bad(format!(
                "shape {:?}, but its description says {} test examples × {} classes",
                array.shape, want[0], want[1]
            )));
        }
        for (i, row) in array.values.chunks_exact(classes.max(1)).enumerate() {
            let sum: f64 = row.iter().sum();
            if row.iter().any(|&p| !(0.0..=1.0).contains(&p)) || (sum - 1.0).abs() > SUM_TOLERANCE {
                return Err(bad(format!(
                    "row {i} is not a distribution (values in [0, 1] summing to 1): {row:?}"
                )));
            }
        }
        let draws = draws
            .map(|bytes| Draws::decode(bytes, want))
            .transpose()
            .map_err(|reason| ReferenceError::Draws {
                path: format!("{source}/{}", draws::DRAWS_FILE),
                reason,
            })?;
        Ok(Reference {
            meta,
            predictive: array.values,
            source: source.to_string(),
            draws,
        })
    }

    /// Writes `reference.npy`, `draws.npy.gz` (when it has draws) and `reference.json`
    /// into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), nrpt_sampling::output::OutputError> {
        let shape = [
            self.meta.model.test_examples,
            self.meta.model.layers.last().copied().unwrap_or(0),
        ];
        nrpt_sampling::output::write_atomic(
            &dir.join(PREDICTIVE_FILE),
            &nrpt_sampling::npy::encode_f64(&shape, &self.predictive),
        )?;
        if let Some(d) = &self.draws {
            nrpt_sampling::output::write_atomic(&dir.join(draws::DRAWS_FILE), &d.encode(shape))?;
        }
        nrpt_sampling::output::write_json(&dir.join(META_FILE), &self.meta)
    }

    /// Checks that the reference belongs to `target`'s model.
    pub fn check(&self, target: &ClassifierTarget) -> Result<(), ReferenceError> {
        match self.meta.model.difference(&ModelKey::of(target)) {
            None => Ok(()),
            Some((field, reference, model)) => Err(ReferenceError::Mismatch {
                source_name: self.source.clone(),
                field,
                reference,
                model,
            }),
        }
    }
}

/// A reference bundled with nrpt: its folder's name under `data/reference/` (see
/// `data/README.md`) and its files, read through the crate's `data` link, as in
/// `data/digits.rs`.
struct Bundled {
    name: &'static str,
    meta: &'static [u8],
    predictive: &'static [u8],
    draws: Option<&'static [u8]>,
}

/// The references bundled with nrpt.
const BUNDLED: &[Bundled] = &[Bundled {
    name: "digits-mlp64",
    meta: include_bytes!("../../../data/reference/digits-mlp64/reference.json"),
    predictive: include_bytes!("../../../data/reference/digits-mlp64/reference.npy"),
    draws: Some(include_bytes!(
        "../../../data/reference/digits-mlp64/draws.npy.gz"
    )),
}];

/// The names of the bundled references (their folders under `data/reference/`):
/// `digits-mlp64`, the default model of `nrpt deep` on the digits.
pub fn bundled_names() -> impl Iterator<Item = &'static str> {
    BUNDLED.iter().map(|b| b.name)
}

/// A bundled reference read from its bytes; its source reads `bundled NAME`.
fn read_bundled(b: &Bundled) -> Result<Reference, ReferenceError> {
    Reference::from_bytes(
        b.meta,
        b.predictive,
        b.draws,
        &format!("bundled {}", b.name),
    )
}

/// Every bundled reference, read and checked.
pub fn bundled() -> Result<Vec<Reference>, ReferenceError> {
    BUNDLED.iter().map(read_bundled).collect()
}

/// The bundled reference named `name` (one of [`bundled_names`]), read and checked.
pub fn bundled_named(name: &str) -> Result<Reference, ReferenceError> {
    match BUNDLED.iter().find(|b| b.name == name) {
        Some(entry) => read_bundled(entry),
        None => Err(ReferenceError::UnknownBundled {
            name: name.to_string(),
            known: bundled_names().collect::<Vec<_>>().join(", "),
        }),
    }
}

/// The bundled reference of `target`'s model, if there is one.
pub fn bundled_for(target: &ClassifierTarget) -> Result<Option<Reference>, ReferenceError> {
    Ok(bundled()?.into_iter().find(|r| r.check(target).is_ok()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrpt_core::model::Architecture;
    use std::sync::Arc;

    fn digits(sizes: &[usize], prior_sigma: f64) -> ClassifierTarget {
        ClassifierTarget {
            data: Arc::new(nrpt_sampling::data::digits()),
            arch: Architecture::new(sizes).unwrap(),
            batch: 64,
            prior_sigma,
        }
    }

    /// The bundled reference reads, belongs to the default model of `nrpt deep` (and to
    /// no other), and its chains agreed: every R̂ it reports below 1.1, as the issue
    /// that asked for it requires, with thousands of effective samples.
    #[test]
    fn the_bundled_reference_is_converged_and_belongs_to_the_default_model() {
        let all = bundled().unwrap();
        assert_eq!(all.len(), BUNDLED.len());
        let r = &all[0];
        let d = &r.meta.diagnostics;
        assert!(d.converged && d.divergent == 0, "{d:?}");
        assert!(
            d.test_log_likelihood.rhat < 1.1 && d.predictive_rhat_max < 1.1,
            "{d:?}"
        );
        assert!(d.test_log_likelihood.ess_bulk > 1000.0 && d.predictive_ess_bulk_min > 1000.0);
        let target = digits(&[64, 64, 10], 1.0);
        r.check(&target).unwrap();
        assert!(bundled_for(&target).unwrap().is_some());
        // Its own scores, recomputed from its predictive.
        let scores =
            super::super::fidelity::example_scores(&r.predictive, &target.data.test.y, 10, None);
        let nll = scores.nll.iter().sum::<f64>() / scores.nll.len() as f64;
        assert!((nll - r.meta.nll).abs() < 1e-9, "{nll} vs {}", r.meta.nll);
        for (other, field) in [
            (digits(&[64, 32, 10], 1.0), "layers"),
            (digits(&[64, 64, 10], 0.5), "prior_sigma"),
        ] {
            match r.check(&other) {
                Err(ReferenceError::Mismatch { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{other:?}"),
            }
            assert!(bundled_for(&other).unwrap().is_none());
        }
    }

    /// A bundled reference is found by its folder's name; another name is refused with
    /// the list of the bundled ones.
    #[test]
    fn bundled_references_by_name() {
        assert_eq!(bundled_names().collect::<Vec<_>>(), ["digits-mlp64"]);
        let r = bundled_named("digits-mlp64").unwrap();
        assert_eq!(r.source, "bundled digits-mlp64");
        assert_eq!(r, bundled().unwrap().remove(0));
        let e = bundled_named("digits").unwrap_err();
        assert!(matches!(e, ReferenceError::UnknownBundled { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "no bundled reference is named `digits`; the bundled ones: digits-mlp64"
        );
    }

    /// `data/README.md` states the SHA-256 of every bundled file.
    #[test]
    fn the_readme_states_the_bundled_checksums() {
        let readme = include_str!("../../../../data/README.md");
        for b in BUNDLED {
            for bytes in [b.meta, b.predictive].into_iter().chain(b.draws) {
                let hex: String = Sha256::digest(bytes)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                assert!(readme.contains(&hex), "data/README.md lacks {hex}");
            }
        }
    }

    /// A written reference reads back as it was; damaged files are errors that say
    /// which file and what is wrong.
    #[test]
    fn references_round_trip_and_damage_is_refused() {
        let r = bundled().unwrap().remove(0);
        let dir = tempfile::tempdir().unwrap();
        r.write(dir.path()).unwrap();
        let back = Reference::load(dir.path()).unwrap();
        assert_eq!(back.meta, r.meta);
        assert_eq!(back.predictive, r.predictive);

        let (meta, npy) = (
            std::fs::read(dir.path().join(META_FILE)).unwrap(),
            std::fs::read(dir.path().join(PREDICTIVE_FILE)).unwrap(),
        );
        // A probability moved: the row no longer sums to 1.
        let mut values = r.predictive.clone();
        values[3] += 0.01;
        let shape = [r.meta.model.test_examples, 10];
        let moved = nrpt_sampling::npy::encode_f64(&shape, &values);
        assert!(matches!(
            Reference::from_bytes(&meta, &moved, None, "x"),
            Err(ReferenceError::Predictive { .. })
        ));
        // Another shape than the description's.
        let short =
            nrpt_sampling::npy::encode_f64(&[shape[0] - 1, 10], &values[..values.len() - 10]);
        let e = Reference::from_bytes(&meta, &short, None, "x").unwrap_err();
        assert!(e.to_string().contains("shape"), "{e}");
        // Truncated bytes, a description of another format, not JSON.
        assert!(matches!(
            Reference::from_bytes(&meta, &npy[..npy.len() / 2], None, "x"),
            Err(ReferenceError::Predictive { .. })
        ));
        let text = String::from_utf8(meta.clone()).unwrap();
        let future = text.replacen("\"format\": 1", "\"format\": 99", 1);
        let e = Reference::from_bytes(future.as_bytes(), &npy, None, "x").unwrap_err();
        assert!(e.to_string().contains("format 99"), "{e}");
        assert!(matches!(
            Reference::from_bytes(b"{", &npy, None, "x"),
            Err(ReferenceError::Meta { .. })
        ));
        // A missing folder names the file.
        let e = Reference::load(&dir.path().join("absent")).unwrap_err();
        assert!(e.to_string().contains(META_FILE), "{e}");
    }
}
