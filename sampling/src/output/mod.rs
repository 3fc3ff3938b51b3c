//! What the commands write, and how they never lose what they did not write.
//!
//! - [`OutDir`] (`folder`): whole output folders, checked before any computation
//!   (nrpt replaces only an empty folder or one it wrote itself: [`ownership`]), written
//!   into a hidden sibling, swapped into place in one step;
//! - [`temp`]: temporary names with random tokens, held by file locks, so that what a
//!   killed process left is told from what a live one writes;
//! - `files`: files written through a temporary name ([`write_atomic`]), CSV tables,
//!   JSON (`.npy` arrays are encoded by [`crate::npy`]);
//! - [`OutputError`]: what can go wrong, by kind.

mod error;
mod files;
mod folder;
pub mod ownership;
mod set;
pub mod temp;

use std::path::Path;

pub use error::OutputError;
pub use files::{Csv, write_atomic, write_json};
pub use folder::{
    Committed, InterruptedWhileWriting, OutChanged, OutDir, OutPolicy, PAUSE_BEFORE_COMMIT_VAR,
    TEMP_NAME_OVERHEAD,
};
pub use set::{Array, Cell, Column, OutputSet, Table, Values};

/// The folder a path is in (`.` for a bare name).
pub fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}
