//! The error of the studies: one type with a variant per kind of failure, so that a
//! caller (the command, the Python package) tells bad input from an interrupted run or a
//! failed write by matching on it, not by reading its message.
//!
//! Every variant but [`StudyError::Json`] and [`StudyError::Failed`] wraps the typed
//! error of the layer that failed and shows its message unchanged; [`StudyError::inner`]
//! gives that error back (for a caller that collects errors of several kinds behind one
//! `dyn Error`, as the command does).

use nrpt_sampling::config::ConfigError;
use nrpt_sampling::data::DataError;
use nrpt_sampling::engine::EngineError;
use nrpt_sampling::output::OutputError;
use nrpt_sampling::stats::StatsError;

use crate::checkpoint::{CheckpointError, Stopped};
use crate::deep::reference::ReferenceError;
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

    /// Whether the user's input is at fault (settings, flags, files named by them), not
    /// the machine or the computation.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            StudyError::Config(_)
                | StudyError::Data(_)
                | StudyError::Reference(_)
                | StudyError::Shard(_)
                | StudyError::Checkpoint(_)
                | StudyError::Core(_)
                | StudyError::Engine(EngineError::Invalid(_))
        )
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
        assert!(e.is_bad_input() && !e.is_interrupted());
        let c = e.inner().downcast_ref::<ConfigError>().unwrap();
        assert_eq!(c.field, "chains");
    }

    #[test]
    fn interruption_and_failure_are_told_apart() {
        let stopped = StudyError::from(EngineError::Interrupted);
        assert!(stopped.is_interrupted() && !stopped.is_bad_input());
        let failed = StudyError::failed("the annealing path failed");
        assert_eq!(failed.to_string(), "the annealing path failed");
        assert!(!failed.is_interrupted() && !failed.is_bad_input());
        assert!(failed.inner().downcast_ref::<StudyError>().is_some());
    }
}
