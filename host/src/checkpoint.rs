//! Checkpoints of `nrpt run`: the whole state of a CPU run between two iterations,
//! written atomically beside the output folder (`<out>.checkpoint`) so that a run
//! killed at any point can be resumed with `nrpt run --resume <out>` and end with the
//! same bits as a run that was never interrupted.
//!
//! The file is `NRPTCKPT`, a format number (u32, little-endian), the nrpt version that
//! wrote it, the run's configuration as JSON and the checkpoint cadence, then the
//! [`RunState`] encoded by `bincode` (floats bit for bit, NaN included). Lengths are
//! u32 little-endian before each text. A checkpoint
//! of another format or version, or one whose state does not fit its configuration, is
//! refused with an error that says which, never misread.

use std::path::{Path, PathBuf};

use crate::config::RunConfig;
use crate::engine::state::RunState;
use crate::output::write_atomic;

const MAGIC: &[u8; 8] = b"NRPTCKPT";
/// The layout of the file; bumped whenever the state's encoding changes.
pub const FORMAT: u32 = 1;

/// What a checkpoint holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// The configuration of the run.
    pub config: RunConfig,
    /// Iterations between checkpoints.
    pub every: u64,
    /// The state after `state.iteration` iterations.
    pub state: RunState,
}

/// A run with checkpoints interrupted while computing: its outputs are not written, its
/// last checkpoint is kept.
#[derive(Debug, thiserror::Error)]
#[error(
    "interrupted (Ctrl-C or SIGTERM) while computing: no output was written; the checkpoint \
     {checkpoint} holds iteration {iteration}: continue with `nrpt run --resume {out}`"
)]
pub struct InterruptedWithCheckpoint {
    /// The checkpoint file.
    pub checkpoint: String,
    /// The iteration it holds.
    pub iteration: u64,
    /// The run's output folder.
    pub out: String,
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
    /// Written by another format or version.
    #[error(
        "{path} was written by {found}; this is nrpt {ours} (checkpoint format {FORMAT}): it cannot be resumed by this version"
    )]
    OtherVersion {
        /// The file.
        path: String,
        /// Who wrote it.
        found: String,
        /// This version.
        ours: &'static str,
    },
    /// The contents do not decode or do not fit the configuration.
    #[error("the checkpoint {path} is damaged or inconsistent: {message}")]
    Damaged {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// Where the checkpoint of the output folder `out` lives: beside it, `<out>.checkpoint`.
pub fn path_for(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".checkpoint");
    out.with_file_name(name)
}

fn version() -> String {
    format!(
        "nrpt {} (checkpoint format {FORMAT})",
        env!("CARGO_PKG_VERSION")
    )
}

/// Writes a checkpoint atomically (a temporary file renamed into place).
pub fn write(path: &Path, c: &Checkpoint) -> anyhow::Result<()> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&FORMAT.to_le_bytes());
    for text in [version(), serde_json::to_string(&c.config)?] {
        bytes.extend_from_slice(&(text.len() as u32).to_le_bytes());
        bytes.extend_from_slice(text.as_bytes());
    }
    bytes.extend_from_slice(&c.every.to_le_bytes());
    let body = bincode::serde::encode_to_vec(&c.state, bincode::config::standard())?;
    bytes.extend_from_slice(&body);
    write_atomic(path, &bytes)
}

/// Reads and checks a checkpoint.
pub fn read(path: &Path) -> Result<Checkpoint, CheckpointError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| CheckpointError::Read {
        path: name.clone(),
        source,
    })?;
    let damaged = |message: String| CheckpointError::Damaged {
        path: name.clone(),
        message,
    };
    if bytes.len() < 12 || &bytes[..8] != MAGIC {
        return Err(CheckpointError::NotACheckpoint(name));
    }
    let format = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    let mut at = 12;
    let mut text = || -> Result<String, CheckpointError> {
        let len = bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| damaged("truncated header".into()))?;
        let t = bytes
            .get(at + 4..(at + 4).saturating_add(len))
            .ok_or_else(|| damaged("truncated header".into()))?;
        at += 4 + len;
        Ok(String::from_utf8_lossy(t).into_owned())
    };
    let found = text()?;
    if format != FORMAT || found != version() {
        return Err(CheckpointError::OtherVersion {
            path: name,
            found,
            ours: env!("CARGO_PKG_VERSION"),
        });
    }
    let config: RunConfig =
        serde_json::from_str(&text()?).map_err(|e| damaged(format!("configuration: {e}")))?;
    let every = bytes
        .get(at..at + 8)
        .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        .ok_or_else(|| damaged("truncated header".into()))?;
    at += 8;
    let (state, used): (RunState, usize) =
        bincode::serde::decode_from_slice(&bytes[at..], bincode::config::standard())
            .map_err(|e| damaged(e.to_string()))?;
    if at + used != bytes.len() {
        return Err(damaged("trailing bytes after the state".into()));
    }
    Ok(Checkpoint {
        config,
        every,
        state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Record;
    use crate::engine::cpu::CpuBackend;

    /// A state written and read back is the same; a foreign, truncated or tampered
    /// file is refused with the reason.
    #[test]
    fn round_trip_and_refusals() {
        let config = RunConfig {
            iterations: 60,
            ensembles: 2,
            chains: 4,
            ..RunConfig::default()
        };
        let job = config.job(Record::NOTHING).unwrap();
        let state = CpuBackend::default()
            .run_from(&job, None, 30, &|_| {})
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(&dir.path().join("out"));
        assert!(path.ends_with("out.checkpoint"));
        let c = Checkpoint {
            config,
            every: 30,
            state,
        };
        write(&path, &c).unwrap();
        assert_eq!(read(&path).unwrap(), c);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(matches!(read(&path), Err(CheckpointError::Damaged { .. })));
        let mut other = bytes.clone();
        other[8] = 99;
        std::fs::write(&path, &other).unwrap();
        assert!(matches!(
            read(&path),
            Err(CheckpointError::OtherVersion { .. })
        ));
        std::fs::write(&path, b"hello world, not a checkpoint").unwrap();
        assert!(matches!(
            read(&path),
            Err(CheckpointError::NotACheckpoint(_))
        ));
    }
}
