//! Errors of the command line and of nrpt-core as Python exceptions, with the
//! command's messages: bad input is a `ValueError`, anything else a `RuntimeError`.

use pyo3::PyErr;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};

use nrpt::config::ConfigError;
use nrpt::data::DataError;
use nrpt::engine::EngineError;

/// A `ValueError` with `message`.
pub fn value_error(message: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(message.to_string())
}

/// An error of a command as the command line prints it (`error: {e:#}` without the
/// prefix): bad input (flags, configuration, data files, options nrpt-core rejects)
/// as `ValueError`, an interrupted run as `KeyboardInterrupt`, anything else (a
/// backend that cannot run) as `RuntimeError`.
pub fn command_error(e: anyhow::Error) -> PyErr {
    let message = format!("{e:#}");
    let bad_input = e.downcast_ref::<ConfigError>().is_some()
        || e.downcast_ref::<DataError>().is_some()
        || e.downcast_ref::<nrpt_core::Error>().is_some()
        || matches!(
            e.downcast_ref::<EngineError>(),
            Some(EngineError::Invalid(_))
        );
    if bad_input {
        PyValueError::new_err(message)
    } else if matches!(
        e.downcast_ref::<EngineError>(),
        Some(EngineError::Interrupted)
    ) {
        PyKeyboardInterrupt::new_err(message)
    } else {
        PyRuntimeError::new_err(message)
    }
}

/// A flag the command line's parser refused, as its first paragraph without the
/// `error: ` prefix (no usage, no tip to try `--help`): `invalid value 'x' for
/// '--swap-rate <S>': invalid float literal`.
pub fn parse_error(e: &clap::Error) -> PyErr {
    let text = e.render().to_string();
    let first = text.split("\n\n").next().unwrap_or(&text).trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    PyValueError::new_err(first.to_string())
}
