//! The error of the studies: one type with a variant per kind of failure, so that a
//! caller (the command, the Python package) tells bad input from an interrupted run or a
//! failed write by matching on it, not by reading its message.
//!
//! Every variant but [`StudyError::Json`] and [`StudyError::Failed`] wraps the typed
//! error of the layer that failed and shows its message unchanged; [`StudyError::inner`]
//! gives that error back (for a caller that collects errors of several kinds behind one
//! `dyn Error`, as the command does).
//!
//! The errors of a checkpoint ([`CheckpointError`], [`Stopped`]) and of a reference
//! posterior ([`ReferenceError`]) live here too, so that this module names no module of
//! the studies that returns it; `checkpoint` and `deep::reference` re-export them.

use nrpt_sampling::config::ConfigError;
use nrpt_sampling::data::DataError;
use nrpt_sampling::engine::EngineError;
use nrpt_sampling::output::OutputError;
use nrpt_sampling::stats::StatsError;

use std::path::PathBuf;

use crate::shard::ShardError;

/// Why a study did not finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StudyError {
    /// A setting, a flag or a file named by one is wrong (bad input).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A data set cannot be read or is malformed (bad input).
    #[error(transparent)]
    Data(#[from] DataError),
    /// A reference posterior cannot be used (bad input).
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// Folders that are not every shard of one run, or a damaged one (bad input).
    #[error(transparent)]
    Shard(#[from] ShardError),
    /// A checkpoint that cannot be used (bad input).
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// nrpt-core refused a setting (bad input).
    #[error(transparent)]
    Core(#[from] nrpt_core::Error),
    /// The engine failed, or a stop request (Ctrl-C, SIGTERM) ended it
    /// ([`EngineError::Interrupted`]).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Writing an output failed, or a stop request ended the write.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// A run with checkpoints stopped by its progress callback; its last checkpoint is
    /// kept.
    #[error(transparent)]
    Stopped(#[from] Stopped),
    /// A statistic that cannot be formed from what was measured.
    #[error(transparent)]
    Stats(#[from] StatsError),
    /// A value that cannot be written as JSON, or JSON that does not read as the study's
    /// own.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A computation that cannot go on, and why (not the user's input: a path that
    /// failed, a result that cannot be formed).
    #[error("{0}")]
    Failed(String),
}

impl StudyError {
    /// A [`StudyError::Failed`] with `message`.
    pub fn failed(message: impl Into<String>) -> Self {
        StudyError::Failed(message.into())
    }

    /// Whether a stop request (Ctrl-C, SIGTERM) ended the study.
    pub fn is_interrupted(&self) -> bool {
        match self {
            StudyError::Engine(EngineError::Interrupted) => true,
            StudyError::Output(o) => o.is_interrupted(),
            _ => false,
        }
    }

    /// The error of the layer that failed (this error itself for [`StudyError::Json`]
    /// and [`StudyError::Failed`], whose message is their own).
    pub fn inner(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        match self {
            StudyError::Config(e) => e,
            StudyError::Data(e) => e,
            StudyError::Reference(e) => e,
            StudyError::Shard(e) => e,
            StudyError::Checkpoint(e) => e,
            StudyError::Core(e) => e,
            StudyError::Engine(e) => e,
            StudyError::Output(e) => e,
            StudyError::Stopped(e) => e,
            StudyError::Stats(e) => e,
            StudyError::Json(_) | StudyError::Failed(_) => self,
        }
    }
}

/// Why a checkpoint cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The file cannot be read.
    #[error("cannot read the checkpoint {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is not a checkpoint of nrpt.
    #[error("{0} is not a checkpoint of nrpt")]
    NotACheckpoint(String),
    /// An older layout: written by an earlier version of nrpt, which this one cannot
    /// read.
    #[error(
        "the checkpoint {path} was written by an earlier nrpt in an older format (format \
         {found}; this nrpt reads format {reads} only), so this version cannot resume it: \
         start the run again without --resume (its first checkpoint replaces this file), \
         or resume it with the nrpt that wrote it"
    )]
    OlderFormat {
        /// The file.
        path: String,
        /// The format number it says.
        found: u32,
        /// The format this nrpt reads (`checkpoint::FORMAT`).
        reads: u32,
    },
    /// Another layout, not one of the earlier ones.
    #[error(
        "the checkpoint {path} says it has format {found}, and this nrpt reads format \
         {reads}: it was written by another version of nrpt (or that byte is damaged); \
         resume it with the version that wrote it, or start the run again"
    )]
    OtherFormat {
        /// The file.
        path: String,
        /// The format number it says.
        found: u32,
        /// The format this nrpt reads (`checkpoint::FORMAT`).
        reads: u32,
    },
    /// Written by another version.
    #[error(
        "the checkpoint {path} was written by {found}; this is nrpt {ours}: its bits may \
         differ, so it cannot be resumed by this version (resume it with {found}, or start \
         the run again)"
    )]
    OtherVersion {
        /// The file.
        path: String,
        /// Who wrote it.
        found: String,
        /// This version.
        ours: &'static str,
    },
    /// The contents do not decode, fail their checksum or do not fit the run.
    #[error("the checkpoint {path} is damaged or inconsistent: {message}")]
    Damaged {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// A run with checkpoints stopped by its progress callback: its last checkpoint is kept.
#[derive(Debug, thiserror::Error)]
#[error("stopped; the checkpoint {} holds iteration {iteration}", path.display())]
pub struct Stopped {
    /// The checkpoint file.
    pub path: PathBuf,
    /// The iteration it holds.
    pub iteration: u64,
}

/// Why a reference cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    /// A file cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `reference.json` is not a description of this format.
    #[error("{path} is not a reference description: {reason}")]
    Meta {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// `reference.npy` is not a predictive.
    #[error("{path} is not a reference predictive: {reason}")]
    Predictive {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// `draws.npy.gz` is not the reference's single draws.
    #[error("{path} is not the reference's draws: {reason}")]
    Draws {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// No bundled reference has this name.
    #[error("no bundled reference is named `{name}`; the bundled ones: {known}")]
    UnknownBundled {
        /// The name asked for.
        name: String,
        /// The bundled names, comma-separated.
        known: String,
    },
    /// It belongs to another model.
    #[error(
        "the reference in {source_name} belongs to another model: its {field} is {reference}, this run's is {model}; compute one for this model with `nrpt reference` (same --dataset/--data, --hidden and --prior-sigma)"
    )]
    Mismatch {
        /// Where the reference came from.
        source_name: String,
        /// The first field that differs.
        field: &'static str,
        /// The reference's value.
        reference: String,
        /// The model's value.
        model: String,
    },
}

/// The result of a study.
pub type Result<T, E = StudyError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_error_shows_its_own_message_and_is_found_by_type() {
        let e = StudyError::from(ConfigError::new("chains", "must be at least 2, got 1"));
        assert_eq!(
            e.to_string(),
            "chains (--chains): must be at least 2, got 1"
        );
        assert!(!e.is_interrupted());
        let c = e.inner().downcast_ref::<ConfigError>().unwrap();
        assert_eq!(c.field, "chains");
    }

    #[test]
    fn interruption_and_failure_are_told_apart() {
        let stopped = StudyError::from(EngineError::Interrupted);
        assert!(stopped.is_interrupted());
        let failed = StudyError::failed("the annealing path failed");
        assert_eq!(failed.to_string(), "the annealing path failed");
        assert!(!failed.is_interrupted());
        assert!(failed.inner().downcast_ref::<StudyError>().is_some());
    }
}
