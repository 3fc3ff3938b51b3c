//! Rust values to Python ones: JSON-like trees (every report of the host is
//! `Serialize`) to dicts and lists, vectors to NumPy arrays.

use nrpt_sampling::json;
use numpy::ndarray::{Array, Array2};
use numpy::{Element, IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde::Serialize;
use serde_json::Value;

/// A JSON value as Python objects: dicts, lists, `int`, `float`, `str`, `bool`, `None`.
pub fn json_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map {
                dict.set_item(k, json_to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// Any `Serialize` value as Python objects, as the command's JSON has it (through JSON
/// values, floats exact, NaN and infinities as `"NaN"`, `"inf"` and `"-inf"`).
pub fn to_py<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    let v = json::to_value(value)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    json_to_py(py, &v)
}

/// Any `Serialize` struct as a Python dict.
pub fn to_dict<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyDict>> {
    Ok(to_py(py, value)?.cast_into::<PyDict>()?)
}

/// A vector as a 1-D array.
pub fn array1<'py, T: Element>(py: Python<'py>, v: Vec<T>) -> Bound<'py, PyArray1<T>> {
    PyArray1::from_vec(py, v)
}

/// Rows of equal length as a 2-D array (`rows × width`; width given for zero rows).
pub fn array2<'py, T: Element + Clone>(
    py: Python<'py>,
    rows: &[Vec<T>],
    width: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let flat: Vec<T> = rows.iter().flatten().cloned().collect();
    let a = Array2::from_shape_vec((rows.len(), width), flat)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    Ok(a.into_pyarray(py).into_any())
}

/// A flat vector as a 2-D array.
pub fn reshape2<'py, T: Element>(
    py: Python<'py>,
    flat: Vec<T>,
    shape: (usize, usize),
) -> PyResult<Bound<'py, PyAny>> {
    let a = Array::from_shape_vec(shape, flat)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    Ok(a.into_pyarray(py).into_any())
}

/// A flat vector as an array of any shape.
pub fn reshape<'py, T: Element>(
    py: Python<'py>,
    flat: Vec<T>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    let a = Array::from_shape_vec(numpy::ndarray::IxDyn(shape), flat)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    Ok(a.into_pyarray(py).into_any())
}

/// Adds a command's outputs ([`nrpt_sampling::output::OutputSet`], what its files hold) to `d`:
/// each table a dict of column arrays (a block per row: an array of `rows × block`),
/// each array, the totals and the vectors.
pub fn add_outputs<'py>(
    py: Python<'py>,
    d: &Bound<'py, PyDict>,
    set: nrpt_sampling::output::OutputSet,
) -> PyResult<()> {
    use nrpt_sampling::output::Values;
    for t in set.tables.into_iter().filter(|t| t.in_python) {
        let table = PyDict::new(py);
        for c in t.columns {
            let mut shape = vec![c.rows()];
            shape.extend(&c.row_shape);
            let column = match c.values {
                Values::U64(v) => reshape(py, v, &shape)?,
                Values::F64(v, _) => reshape(py, v, &shape)?,
                Values::F32(v, _) => reshape(py, v, &shape)?,
                Values::Bool(v) => reshape(py, v, &shape)?,
            };
            table.set_item(c.name, column)?;
        }
        d.set_item(t.name, table)?;
    }
    for a in set.arrays {
        d.set_item(a.name, reshape(py, a.data, &a.shape)?)?;
    }
    for (name, v) in set.totals {
        d.set_item(name, v)?;
    }
    for (name, v) in set.vectors {
        d.set_item(name, array1(py, v))?;
    }
    Ok(())
}

/// Top-level lists of numbers of `d` (a report's vectors) as NumPy arrays: 1-D, or 2-D
/// for lists of equally long lists of numbers (NaN and infinities as floats again).
pub fn lists_to_arrays(py: Python<'_>, d: &Bound<'_, PyDict>, value: &Value) -> PyResult<()> {
    let Value::Object(map) = value else {
        return Ok(());
    };
    // A number, or the name of a non-finite one (nrpt_sampling::json).
    let number = |v: &Value| v.as_f64().or_else(|| v.as_str().and_then(json::named));
    let numbers = |items: &[Value]| -> Option<Vec<f64>> { items.iter().map(number).collect() };
    for (k, v) in map {
        let Value::Array(items) = v else { continue };
        if items.is_empty() {
            continue;
        }
        if let Some(row) = numbers(items) {
            d.set_item(k, array1(py, row))?;
        } else if let Some(rows) = items
            .iter()
            .map(|r| r.as_array().and_then(|r| numbers(r)))
            .collect::<Option<Vec<Vec<f64>>>>()
        {
            let width = rows.first().map_or(0, Vec::len);
            if rows.iter().all(|r| r.len() == width) {
                d.set_item(k, array2(py, &rows, width)?)?;
            }
        }
    }
    Ok(())
}
