//! Ctrl-C while an engine runs: the engine computes on a worker thread with the GIL
//! released, while the calling thread wakes every few milliseconds to let Python run
//! its signal handlers. When one raises (Ctrl-C's `KeyboardInterrupt`), the engine is
//! asked to stop as the command's Ctrl-C handler asks it (`nrpt_sampling::interrupt`), its
//! worker is joined, and the handler's exception is raised.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use pyo3::prelude::*;

/// How often the caller's thread looks for a signal while the engine runs.
const POLL: Duration = Duration::from_millis(50);

/// Runs `f` on a worker thread with the GIL released; a Python signal handler that
/// raises meanwhile stops it (the engines' progress callbacks look at `nrpt_sampling::interrupt::requested` between
/// segments of work) and its exception is the result. Only Python's main thread
/// receives signals, so elsewhere this waits for `f` to finish.
pub fn interruptible<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    py.detach(|| {
        thread::scope(|s| {
            let (done, finished) = mpsc::channel();
            let worker = s.spawn(move || {
                let out = f();
                // The receiver outlives the worker (joined below): a failed send
                // cannot happen, and would change nothing.
                let _ = done.send(());
                out
            });
            let mut signal = None;
            while let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(POLL) {
                if signal.is_none()
                    && let Err(e) = Python::attach(|py| py.check_signals())
                {
                    nrpt_sampling::interrupt::request();
                    signal = Some(e);
                }
            }
            let out = match worker.join() {
                Ok(out) => out,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            match signal {
                Some(e) => {
                    // The request served this run; later runs start afresh.
                    nrpt_sampling::interrupt::clear();
                    Err(e)
                }
                None => Ok(out),
            }
        })
    })
}
