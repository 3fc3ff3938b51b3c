//! The optimal window W⋆ and Lemma 1's round-trip model (nrpt-core's `optimal`).

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::to_dict;
use crate::errors::{command_error, value_error};

/// The best integer window for P chains at swap rate S (what `window="opt"` runs).
#[pyfunction]
pub fn optimal_window(chains: usize, swap_rate: f64) -> PyResult<u32> {
    nrpt_core::optimal::optimal_window(chains, swap_rate).map_err(value_error)
}

/// The exact minimizer W⋆ of Lemma 1's E[T] over real windows W ≥ 1.
#[pyfunction]
pub fn w_star(chains: usize, swap_rate: f64) -> PyResult<f64> {
    nrpt_core::optimal::w_star(chains, swap_rate).map_err(value_error)
}

/// The paper's asymptotic window ⌈(ln P + ln ln P) / −ln(1 − S)⌉.
#[pyfunction]
pub fn paper_window(chains: usize, swap_rate: f64) -> PyResult<u32> {
    nrpt_core::optimal::paper_window(chains, swap_rate).map_err(value_error)
}

/// The root x⋆ = r^W⋆ of the stationarity equation (depends on P alone; `None` for
/// P ≤ 3, where E[T] grows with W).
#[pyfunction]
pub fn x_star(chains: usize) -> PyResult<Option<f64>> {
    Ok(nrpt_core::optimal::x_star(chains)
        .map_err(value_error)?
        .root())
}

/// Lemma 1's expected round-trip time E[T] = 2WP (1 + (P − 1) r^W / (1 − r^W)),
/// r = 1 − S, for a real window W ≥ 1.
#[pyfunction]
pub fn expected_round_trip(chains: usize, window: f64, swap_rate: f64) -> PyResult<f64> {
    nrpt_core::optimal::expected_round_trip(chains, window, swap_rate).map_err(value_error)
}

/// Lemma 1's round trips per iteration of one ensemble, P / E[T].
#[pyfunction]
pub fn round_trip_rate(chains: usize, window: f64, swap_rate: f64) -> PyResult<f64> {
    nrpt_core::optimal::round_trip_rate(chains, window, swap_rate).map_err(value_error)
}

/// What `nrpt window -p P -s S --json` prints, as a dict.
#[pyfunction]
pub fn window_report<'py>(
    py: Python<'py>,
    chains: usize,
    swap_rate: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let report = nrpt::commands::window::report(chains, swap_rate).map_err(command_error)?;
    to_dict(py, &report)
}
