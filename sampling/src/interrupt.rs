//! Ctrl-C, SIGTERM and SIGHUP: the first one asks running work to stop cleanly (no
//! output folder is left half-written, see `output::OutDir`); the command then exits
//! with status 130.
//!
//! One flag holds the request ([`requested`]), and every loop that can run for more
//! than a fraction of a second looks at it: the engines and the other loops with a
//! progress callback through its answer ([`flow`]: [`Flow::Stop`]), the loops without
//! one directly ([`check`]; an evaluation that can be long, such as a classifier's
//! gradient, answers [`Stopped`]). Either way the work ends with
//! `EngineError::Interrupted` and nothing of it is kept, within about a second of the
//! signal.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();

/// Installs the handler (once per process; later calls do nothing).
pub fn install() {
    INSTALL.call_once(|| {
        // If a handler cannot be installed, Ctrl-C keeps its default meaning (the
        // process ends at once); atomic writes still leave no partial output file.
        let _ = ctrlc::set_handler(|| REQUESTED.store(true, Ordering::SeqCst));
    });
}

/// `true` once Ctrl-C (or SIGTERM, SIGHUP) has arrived.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Asks running work to stop, as Ctrl-C does: for a program that embeds the library
/// and receives signals itself (the Python package).
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Forgets a request once the work it stopped has ended, so that a program that goes
/// on (a Python session after a `KeyboardInterrupt`) can run again.
pub fn clear() {
    REQUESTED.store(false, Ordering::SeqCst);
}

/// A progress callback for runs without a progress bar: ignores the reports and stops
/// the run once Ctrl-C (or SIGTERM, SIGHUP) has arrived.
pub fn flow(_: u64) -> Flow {
    if requested() {
        Flow::Stop
    } else {
        Flow::Continue
    }
}

/// What a progress callback answers: go on, or stop (the run then returns
/// `EngineError::Interrupted` and nothing of its work). The engines poll nothing
/// else: Ctrl-C reaches them through the callback the command gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// Stop as soon as possible.
    Stop,
}

/// [`Stopped`] once Ctrl-C (or SIGTERM, SIGHUP) has arrived: the poll of a loop without
/// a progress callback, and of an evaluation that can be long (`?` makes it
/// `EngineError::Interrupted`).
pub fn check() -> Result<(), Stopped> {
    if requested() { Err(Stopped) } else { Ok(()) }
}

/// The error of work that a stop request ended, where a type of its own is needed (an
/// energy oracle's or an annealing path's, whose errors are `Clone`): it stands for
/// `EngineError::Interrupted`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("interrupted")]
pub struct Stopped;
