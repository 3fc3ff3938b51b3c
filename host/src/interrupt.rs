//! Ctrl-C, SIGTERM and SIGHUP: the first one asks running work to stop cleanly (no
//! output folder is left half-written, see `output::OutDir`); the command then exits
//! with status 130.

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
pub fn flow(_: u64) -> crate::engine::Flow {
    if requested() {
        crate::engine::Flow::Stop
    } else {
        crate::engine::Flow::Continue
    }
}
