//! `nrpt._nrpt`: the native half of the Python package `nrpt`.
//!
//! - `controller`: nrpt-core's swap [`Controller`](nrpt_core::Controller) over owned
//!   buffers, told P energies per iteration by a Python training loop;
//! - `toy`: the driver's own exploration step of the toy targets over NumPy states
//!   (so a loop written in Python reproduces `nrpt run` bit for bit), and a recorder of
//!   a core [`Tempering`](nrpt_core::Tempering) run for the tests;
//! - `exact`: exact tempering told the log-likelihoods by a Python sampler (the host's
//!   `ExactController`), and a recorder of a core exact run for the tests;
//! - `solver`: the optimal window and Lemma 1;
//! - `engines`: `nrpt run`, `reproduce`, `deep` and `scale` with their results as
//!   dictionaries of NumPy arrays instead of files, the GIL released while they run;
//! - `fidelity`: a predictive computed elsewhere scored against a reference posterior
//!   (nrpt-studies' `deep::external`), and the bundled data sets as arrays.
//!
//! Every configuration goes through the command line's own parser and validation
//! (the Python keyword arguments become its flags), so errors read as the command's.
//! The pure-Python part (`python/nrpt/__init__.py`) holds the public classes and
//! docstrings.

use pyo3::prelude::*;

mod config;
mod controller;
mod convert;
mod engines;
mod errors;
mod exact;
mod fidelity;
mod interrupt;
mod saved;
mod solver;
mod toy;

/// The native module (see the package `nrpt`).
#[pymodule]
fn _nrpt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<controller::NativeController>()?;
    m.add_class::<toy::NativeToyExplorer>()?;
    m.add_class::<exact::NativeExactController>()?;
    m.add_function(wrap_pyfunction!(solver::optimal_window, m)?)?;
    m.add_function(wrap_pyfunction!(solver::w_star, m)?)?;
    m.add_function(wrap_pyfunction!(solver::paper_window, m)?)?;
    m.add_function(wrap_pyfunction!(solver::x_star, m)?)?;
    m.add_function(wrap_pyfunction!(solver::expected_round_trip, m)?)?;
    m.add_function(wrap_pyfunction!(solver::round_trip_rate, m)?)?;
    m.add_function(wrap_pyfunction!(solver::window_report, m)?)?;
    m.add_function(wrap_pyfunction!(engines::run, m)?)?;
    m.add_function(wrap_pyfunction!(engines::reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(engines::deep, m)?)?;
    m.add_function(wrap_pyfunction!(engines::scale, m)?)?;
    m.add_function(wrap_pyfunction!(fidelity::fidelity, m)?)?;
    m.add_function(wrap_pyfunction!(fidelity::dataset, m)?)?;
    m.add_function(wrap_pyfunction!(config::flags, m)?)?;
    m.add_function(wrap_pyfunction!(toy::record_tempering, m)?)?;
    m.add_function(wrap_pyfunction!(exact::record_exact, m)?)?;
    Ok(())
}
