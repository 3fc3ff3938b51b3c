//! Errors of the command line and of nrpt-core as Python exceptions, with the
//! command's messages in Python's words ([`pythonic`]: keyword names, no flag
//! syntax): bad input is a `ValueError`, anything else a `RuntimeError`.

use pyo3::PyErr;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};

use nrpt::errors::{all, find};
use nrpt_sampling::engine::EngineError;

/// A `ValueError` with `message` (in Python's words, [`pythonic`]).
pub fn value_error(message: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(pythonic(&message.to_string()))
}

/// A command-line message in Python's words: every flag (`--adapt-ladder`, with a
/// value placeholder ` <ADAPT_LADDER>` or `=<X>` after it) becomes its keyword
/// argument (`adapt_ladder`), and a key followed by its own flag in parentheses
/// (`chains (--chains): …`) is written once (`chains: …`).
pub fn pythonic(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find("--") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(after.len());
        if !after.starts_with(|c: char| c.is_ascii_lowercase()) {
            out.push_str("--");
            rest = after;
            continue;
        }
        let name = after[..len].replace('-', "_");
        let mut tail = &after[len..];
        for open in [" <", "=<"] {
            if let Some(t) = tail.strip_prefix(open) {
                if let Some(end) = t.find('>') {
                    tail = &t[end + 1..];
                }
                break;
            }
        }
        // `chains (--chains)`: the key is already written.
        let doubled = format!("{name} (");
        if out.ends_with(&doubled) && tail.starts_with(')') {
            out.truncate(out.len() - 2);
            tail = &tail[1..];
        } else {
            out.push_str(&name);
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// An error of a command as the command line prints it (`error: {e:#}` without the
/// prefix): bad input (flags, configuration, data files, options nrpt-core rejects)
/// as `ValueError`, an interrupted run as `KeyboardInterrupt`, anything else (a
/// backend that cannot run) as `RuntimeError`.
pub fn command_error(e: anyhow::Error) -> PyErr {
    let message = pythonic(&format!("{e:#}"));
    let engine = find::<EngineError>(&e);
    if nrpt::errors::is_bad_input(&e) {
        PyValueError::new_err(message)
    } else if matches!(engine, Some(EngineError::Interrupted))
        || all::<nrpt_sampling::output::OutputError>(&e)
            .any(nrpt_sampling::output::OutputError::is_interrupted)
    {
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
    PyValueError::new_err(pythonic(first))
}
