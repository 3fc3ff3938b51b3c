//! # nrpt: the library behind the `nrpt` command
//!
//! The command's own layer, over [`nrpt_studies`] (the experiments) and
//! [`nrpt_sampling`] (targets, engines, data, configuration):
//!
//! - [`cli`]: the arguments of every command and their help;
//! - [`commands`]: `window`, `run`, `reproduce`, `bench`, `scale`, `deep`,
//!   `reference`, `devices`: each parses what it was given, runs the library and
//!   prints or writes the results;
//! - [`figures`]: the plots (PNG and SVG); [`progress`]: the progress bar of long runs;
//! - [`spellings`]: the spellings of the previous release still read, with a note.
//!
//! A program that samples its own target needs only [`nrpt_sampling`] (see its
//! example); this crate is for what the command does.
#![deny(missing_docs)]
#[macro_use]
extern crate nrpt_sampling;

pub mod cli;
pub mod commands;
pub mod errors;
pub mod figures;
pub mod progress;
pub mod spellings;

/// The Rust snippets of the README and of the book, compiled and run as this crate's
/// doc tests (`cargo test -p nrpt-host --doc`), so that an example that stops compiling
/// fails CI. A snippet that is an excerpt rather than a program is marked `ignore` in
/// its page, with the reason beside it.
#[cfg(doctest)]
mod documentation {
    #[doc = include_str!("../../README.md")]
    struct Readme;
    #[doc = include_str!("../../docs/src/guide/library.md")]
    struct Library;
    #[doc = include_str!("../../docs/src/contributing/adding-a-target.md")]
    struct AddingATarget;
}
