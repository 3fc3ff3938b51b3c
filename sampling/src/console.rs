//! The terminal, without panics: `println!` panics when standard output is closed (`nrpt
//! … | head`) or full (`> /dev/full`), and `eprintln!` when standard error is. Commands
//! print results with [`say!`](crate::say), which returns an error that the command
//! passes up (exit status 1, or 141 for a closed pipe), and notes with
//! [`note!`](crate::note), which drops what cannot be written: there is nowhere left to
//! say it.

use std::fmt;
use std::io::{self, Write};

/// Standard output could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write to standard output")]
pub struct StdoutError(#[source] pub io::Error);

impl StdoutError {
    /// Whether the reader went away (a closed pipe): the conventional exit status is 141
    /// (128 + SIGPIPE), and there is nothing to report.
    pub fn is_broken_pipe(&self) -> bool {
        self.0.kind() == io::ErrorKind::BrokenPipe
    }
}

/// Writes one line to standard output.
pub fn line(args: fmt::Arguments<'_>) -> Result<(), StdoutError> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(StdoutError)
}

/// Writes one line to standard error, ignoring failure.
pub fn note(args: fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// `println!` that returns `Result<(), StdoutError>` instead of panicking.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => { $crate::console::line(format_args!($($arg)*)) };
}

/// `eprintln!` that never panics (what cannot be written is dropped).
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => { $crate::console::note(format_args!($($arg)*)) };
}
