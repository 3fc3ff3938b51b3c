//! A progress bar on stderr for long runs: shown only when stderr is a terminal, the
//! user did not ask for `--quiet`, and the work has lasted more than a second.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress of one piece of work, measured in units of `total`.
pub struct Progress {
    bar: ProgressBar,
    enabled: bool,
    started: Instant,
    shown: Mutex<bool>,
    done: AtomicU64,
}

impl Progress {
    /// A (hidden until a second has passed) bar for `total` units of `what`.
    pub fn new(what: &str, total: u64, quiet: bool) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template(
            "{msg:>12} [{elapsed_precise}] {wide_bar} {percent:>3}% (eta {eta})",
        ) {
            bar.set_style(style);
        }
        bar.set_message(what.to_string());
        Progress {
            bar,
            enabled: !quiet && std::io::stderr().is_terminal(),
            started: Instant::now(),
            shown: Mutex::new(false),
            done: AtomicU64::new(0),
        }
    }

    /// Adds `n` units of finished work, and answers whether the work should go on: a
    /// progress callback of the engines ([`nrpt_sampling::engine::OnProgress`]) that stops
    /// them on Ctrl-C ([`nrpt_sampling::interrupt::flow`]).
    pub fn inc(&self, n: u64) -> nrpt_sampling::engine::Flow {
        self.done.fetch_add(n, Ordering::Relaxed);
        if self.enabled {
            self.draw(n);
        }
        nrpt_sampling::interrupt::flow(n)
    }

    fn draw(&self, n: u64) {
        if self.started.elapsed() > Duration::from_secs(1)
            && let Ok(mut shown) = self.shown.lock()
            && !*shown
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            *shown = true;
        }
        self.bar.inc(n);
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
