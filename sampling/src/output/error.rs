//! The error of writing outputs: typed, so that the command picks its exit status and
//! message, and the Python package its exception, by what happened.

use std::io;
use std::path::Path;

use super::{InterruptedWhileWriting, OutChanged};

/// What went wrong while outputs were written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// A file or folder could not be created, written, listed or moved: `what` says
    /// which and what was being done (`cannot write out/summary.json`).
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the file or folder.
        what: String,
        /// The system's error.
        #[source]
        source: io::Error,
    },
    /// A stop request (Ctrl-C, SIGTERM) came before the outputs were put in place.
    #[error(transparent)]
    Interrupted(#[from] InterruptedWhileWriting),
    /// The output folder changed while nrpt ran: it was left as it is and the outputs
    /// are in a new folder beside it.
    #[error(transparent)]
    Changed(#[from] OutChanged),
    /// The output folder changed while nrpt ran and the outputs could not be put beside
    /// it either: nothing was written.
    #[error(
        "{target} changed while nrpt ran ({what}), and the outputs could not be put beside \
         it ({source}): nothing was written, {target} is as it was"
    )]
    Diverted {
        /// `--out` as given.
        target: String,
        /// What changed.
        what: String,
        /// Why the outputs could not be moved beside it.
        #[source]
        source: io::Error,
    },
    /// What was to be written is not well formed (a table whose columns disagree, a
    /// value JSON cannot hold): a mistake of the code that builds the outputs, named
    /// with the file.
    #[error("{file}: {message}")]
    Malformed {
        /// The file that was to be written.
        file: String,
        /// What is wrong.
        message: String,
    },
}

impl OutputError {
    /// An [`OutputError::Io`] that says `what` was being done.
    pub fn io(what: impl Into<String>, source: io::Error) -> Self {
        OutputError::Io {
            what: what.into(),
            source,
        }
    }

    /// An [`OutputError::Malformed`] about `file`.
    pub(crate) fn malformed(file: &Path, message: impl Into<String>) -> Self {
        OutputError::Malformed {
            file: file.display().to_string(),
            message: message.into(),
        }
    }

    /// Whether a stop request ended the writing.
    pub fn is_interrupted(&self) -> bool {
        matches!(self, OutputError::Interrupted(_))
    }
}
