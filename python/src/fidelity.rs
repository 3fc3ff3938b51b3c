//! Your own predictive against a reference posterior (nrpt-studies'
//! `deep::external`), and the bundled data sets as arrays, so that a predictive can be
//! computed on exactly the reference's data and test split.

use std::path::Path;

use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use nrpt_sampling::data::{self, Bundled, Split};
use nrpt_studies::deep::external::{self, ExternalError, StatedModel};
use nrpt_studies::deep::reference::{self, Reference, data_digest};

use crate::convert::{array1, reshape2, to_dict};
use crate::errors::value_error;

/// The reference `given`: a bundled one by name (unless `path_like`, a Python path
/// object), else the folder of that path.
fn load_reference(given: &str, path_like: bool) -> PyResult<Reference> {
    if !path_like && reference::bundled_names().any(|n| n == given) {
        return reference::bundled_named(given).map_err(value_error);
    }
    let dir = Path::new(given);
    if !path_like && !dir.exists() {
        let known: Vec<&str> = reference::bundled_names().collect();
        return Err(value_error(format!(
            "reference: `{given}` is neither a bundled reference ({}) nor a folder",
            known.join(", ")
        )));
    }
    Reference::load(dir).map_err(value_error)
}

/// Labels as class indices; a negative or too large one is refused.
fn class_labels(labels: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<u32>> {
    labels
        .as_array()
        .iter()
        .enumerate()
        .map(|(i, &y)| {
            u32::try_from(y).map_err(|_| {
                value_error(format!(
                    "labels: {y} at position {i} is not a class label (0, 1, ...)"
                ))
            })
        })
        .collect()
}

/// `probs` (test examples × classes) scored against `reference` (a bundled name or a
/// folder), after checking that it is of the stated model and of the reference's test
/// split: the scores with their intervals and the reference's description, as a dict.
#[pyfunction]
#[pyo3(signature = (probs, labels, dataset, layers, prior_sigma, reference, path_like, seed))]
#[allow(clippy::too_many_arguments)]
pub fn fidelity<'py>(
    py: Python<'py>,
    probs: PyReadonlyArray2<'py, f64>,
    labels: PyReadonlyArray1<'py, i64>,
    dataset: String,
    layers: Vec<usize>,
    prior_sigma: f64,
    reference: String,
    path_like: bool,
    seed: u32,
) -> PyResult<Bound<'py, PyDict>> {
    let shape = [probs.shape()[0], probs.shape()[1]];
    let values: Vec<f64> = probs.as_array().iter().copied().collect();
    let labels = class_labels(&labels)?;
    let r = load_reference(&reference, path_like)?;
    let model = StatedModel {
        data: dataset,
        layers,
        prior_sigma,
    };
    let scores = external::score_predictive(&values, shape, &labels, &model, &r, seed)
        .map_err(|e| match e {
            ExternalError::LabelCount { .. }
            | ExternalError::OtherLabels { .. }
            | ExternalError::Shape { .. } => value_error(format!(
                "{e}; nrpt.dataset({:?})[\"test_data\"] and [\"test_labels\"] are the reference's test examples, in order",
                r.meta.model.data
            )),
            e => value_error(e),
        })?;
    to_dict(py, &scores)
}

/// A split's features (examples × features, `f32`, as the model sees them) and labels.
fn split_arrays<'py>(
    py: Python<'py>,
    d: &Bound<'py, PyDict>,
    split: &Split,
    features: usize,
    names: [&str; 2],
) -> PyResult<()> {
    let x = reshape2(py, split.x.clone(), (split.len(), features))?;
    d.set_item(names[0], x)?;
    let y: Vec<i64> = split.y.iter().map(|&v| i64::from(v)).collect();
    d.set_item(names[1], array1(py, y))
}

/// A bundled data set (`digits`, `mnist1d`) as nrpt's models see it, split as nrpt
/// splits it.
#[pyfunction]
pub fn dataset<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyDict>> {
    let bundled: Bundled = name.parse().map_err(value_error)?;
    let d = data::load(&bundled.into()).map_err(value_error)?;
    let out = PyDict::new(py);
    out.set_item("name", &d.name)?;
    out.set_item("description", &d.description)?;
    out.set_item("features", d.features)?;
    out.set_item("classes", d.classes)?;
    out.set_item("data_sha256", data_digest(&d))?;
    split_arrays(py, &out, &d.train, d.features, ["data", "labels"])?;
    split_arrays(py, &out, &d.test, d.features, ["test_data", "test_labels"])?;
    Ok(out)
}
