//! Checkpoints of `nrpt run`: the whole state of a CPU run between two iterations,
//! written atomically beside the output folder (`<out>.checkpoint`) so that a run
//! killed at any point can be resumed with `nrpt run --resume <out>` and end with the
//! same bits as a run that was never interrupted.
//!
//! Kept whole past 600 lines: the file format, its writer, its reader and their checks side
//! by side, so that they cannot drift apart.
//!
//! A checkpoint cannot be misread. The file (format 3) is
//!
//! | bytes | what |
//! |---|---|
//! | 8 | `NRPTCKPT` |
//! | 4 | the format, u32 little-endian |
//! | 8 | the length L of the payload, u64 little-endian |
//! | L | the payload: the nrpt version, the run's configuration (JSON) and its input files (JSON: flag, path, SHA-256 of the bytes), each a u32 length and UTF-8 text; the checkpoint cadence (u64); then the [`RunState`] encoded by `postcard` (integers as varints, floats as their little-endian bytes: bit for bit, NaN included) |
//! | 32 | SHA-256 of everything before |
//!
//! Reading checks, in order: the magic, the format, the length, the checksum (any
//! changed byte is found), the version, the configuration and the state, and the
//! caller checks the state against the run ([`RunState::check`]: every count and
//! length) and the input files against their digests ([`changed_inputs`]). Any
//! failure is a [`CheckpointError`] that names the file and the reason.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use crate::error::{CheckpointError, Stopped};
use nrpt_sampling::config::RunConfig;
use nrpt_sampling::engine::cpu::CpuBackend;
use nrpt_sampling::engine::state::RunState;
use nrpt_sampling::engine::{EngineError, Flow, Job, OnProgress};
use nrpt_sampling::output::write_atomic;

const MAGIC: &[u8; 8] = b"NRPTCKPT";
/// The layout of the file; bumped whenever the layout or the state's encoding changes
/// (formats 1 and 2, of earlier versions, encoded the state with `bincode`; 3 with
/// `postcard`).
pub const FORMAT: u32 = 3;
/// Magic, format and length.
const HEAD: usize = 8 + 4 + 8;
/// The SHA-256 at the end.
const SUM: usize = 32;

/// One input file of a run and the digest of its bytes when the checkpoint was written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputDigest {
    /// The configuration key that names it (`data`, `labels`, …).
    pub key: String,
    /// The path, as configured.
    pub path: PathBuf,
    /// SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
}

/// What a checkpoint holds. `C` describes the run (for `nrpt run`, its
/// [`RunConfig`]; a library user saves whatever identifies theirs), so that a resume
/// can check it continues the same run.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint<C = RunConfig> {
    /// The description of the run.
    pub config: C,
    /// Its input files' digests.
    pub inputs: Vec<InputDigest>,
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

/// Where the checkpoint of the output folder `out` lives: beside it, `<out>.checkpoint`.
pub fn path_for(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".checkpoint");
    out.with_file_name(name)
}

fn version() -> String {
    format!("nrpt {}", env!("CARGO_PKG_VERSION"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The digest of every input file that `config` reads (the data files of a classifier),
/// read with the caps of data files.
pub fn input_digests(
    config: &RunConfig,
) -> Result<Vec<InputDigest>, nrpt_sampling::config::ConfigError> {
    let mut out = Vec::new();
    if !config.target.reads("data") {
        return Ok(out);
    }
    for (key, path) in config.input_paths() {
        let sha256 = digest_of(path).map_err(|e| {
            nrpt_sampling::config::ConfigError::new(key, format!("{}: {e}", path.display()))
        })?;
        out.push(InputDigest {
            key: key.to_string(),
            path: path.to_path_buf(),
            sha256,
        });
    }
    Ok(out)
}

/// The SHA-256 of the bytes of the data file `path` (read with the cap of data files, a
/// block at a time: the file is not held in memory), lowercase hex.
fn digest_of(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut input = nrpt_sampling::input::open(
        path,
        nrpt_sampling::input::max_data_bytes(),
        "the cap of a data file: a quarter of --max-memory, at most 4 GiB",
    )?;
    let mut sha = Sha256::new();
    let mut block = vec![0u8; 1 << 16];
    loop {
        match input.read(&mut block) {
            Ok(0) => return Ok(hex(&sha.finalize())),
            Ok(n) => sha.update(&block[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The inputs whose bytes are not those of `saved` any more (each with the reason).
pub fn changed_inputs(saved: &[InputDigest], now: &[InputDigest]) -> Vec<String> {
    let mut changed = Vec::new();
    for s in saved {
        match now.iter().find(|n| n.key == s.key) {
            Some(n) if n.sha256 == s.sha256 && n.path == s.path => {}
            Some(n) if n.path != s.path => changed.push(format!(
                "{} was {}, is now {}",
                s.key,
                s.path.display(),
                n.path.display()
            )),
            Some(_) => changed.push(format!(
                "{} ({}) has other bytes (SHA-256 {} then)",
                s.key,
                s.path.display(),
                &s.sha256[..s.sha256.len().min(12)]
            )),
            None => changed.push(format!("{} is no longer given", s.key)),
        }
    }
    for n in now {
        if !saved.iter().any(|s| s.key == n.key) {
            changed.push(format!("{} was not given then", n.key));
        }
    }
    changed
}

/// The bytes of a checkpoint (built in place: the state is encoded once, not copied,
/// into a buffer of the exact size, measured by a first pass that keeps no bytes).
pub fn encode<C: Serialize>(c: &Checkpoint<C>) -> crate::error::Result<Vec<u8>> {
    let texts = [
        version(),
        nrpt_sampling::json::to_string(&c.config)?,
        nrpt_sampling::json::to_string(&c.inputs)?,
    ];
    let state_len = postcard::serialize_with_flavor::<_, _, usize>(
        &c.state,
        postcard::ser_flavors::Size::default(),
    )
    .map_err(cannot_encode)?;
    let len = texts.iter().map(|t| 4 + t.len()).sum::<usize>() + 8 + state_len;
    let mut bytes = Vec::with_capacity(HEAD + len + SUM);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&FORMAT.to_le_bytes());
    bytes.extend_from_slice(&0u64.to_le_bytes());
    for text in texts {
        let len = u32::try_from(text.len()).map_err(cannot_encode)?;
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.extend_from_slice(text.as_bytes());
    }
    bytes.extend_from_slice(&c.every.to_le_bytes());
    let mut bytes = postcard::to_extend(&c.state, bytes).map_err(cannot_encode)?;
    let payload = (bytes.len() - HEAD) as u64;
    bytes[12..HEAD].copy_from_slice(&payload.to_le_bytes());
    let sum = Sha256::digest(&bytes);
    bytes.extend_from_slice(&sum);
    Ok(bytes)
}

/// A state the checkpoint format cannot hold (a text over 4 GiB, a value postcard
/// refuses), as an error of the run.
fn cannot_encode(e: impl std::fmt::Display) -> crate::error::StudyError {
    crate::error::StudyError::failed(format!("cannot encode the checkpoint: {e}"))
}

/// The SHA-256 a checkpoint file ends with: what tells the file one process wrote from
/// any other (see [`remove_own`]).
pub type Seal = [u8; SUM];

/// Writes a checkpoint atomically (a temporary file renamed into place) and returns its
/// seal.
pub fn write<C: Serialize>(path: &Path, c: &Checkpoint<C>) -> crate::error::Result<Seal> {
    let bytes = encode(c)?;
    write_atomic(path, &bytes)?;
    Ok(seal_of_bytes(&bytes))
}

fn seal_of_bytes(bytes: &[u8]) -> Seal {
    let mut seal = [0u8; SUM];
    if bytes.len() >= SUM {
        seal.copy_from_slice(&bytes[bytes.len() - SUM..]);
    }
    seal
}

/// What is at the path where a run would write its checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Occupant {
    /// Nothing.
    Nothing,
    /// A file that starts as nrpt's checkpoints do (of any format or version, damaged or
    /// not): nrpt wrote it.
    Checkpoint,
    /// Anything else (what it is, for a message): a file nrpt did not write, a folder,
    /// a link, a device.
    Other(String),
}

/// Looks at `path` without following a symbolic link and reads at most its first bytes.
pub fn occupant(path: &Path) -> std::io::Result<Occupant> {
    use std::io::Read;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Occupant::Nothing),
        Err(e) => return Err(e),
    };
    let kind = meta.file_type();
    if kind.is_dir() {
        return Ok(Occupant::Other("a folder".into()));
    }
    if kind.is_symlink() {
        return Ok(Occupant::Other("a symbolic link".into()));
    }
    if !kind.is_file() {
        return Ok(Occupant::Other("not a regular file".into()));
    }
    let mut head = [0u8; 8];
    let mut f = std::fs::File::open(path)?;
    let n = f.read(&mut head)?;
    Ok(if n == head.len() && &head == MAGIC {
        Occupant::Checkpoint
    } else {
        Occupant::Other("a file nrpt did not write".into())
    })
}

/// The seal of the checkpoint at `path` (its last 32 bytes), when a regular file there
/// starts as a checkpoint.
pub fn seal_of(path: &Path) -> Option<Seal> {
    use std::io::{Read, Seek, SeekFrom};
    if occupant(path).ok()? != Occupant::Checkpoint {
        return None;
    }
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    if len < (HEAD + SUM) as u64 {
        return None;
    }
    f.seek(SeekFrom::Start(len - SUM as u64)).ok()?;
    let mut seal = [0u8; SUM];
    f.read_exact(&mut seal).ok()?;
    Some(seal)
}

/// Removes the checkpoint at `path` if it is still the one sealed `seal` (the file this
/// run wrote or resumed from), and nothing else: a file put there since is kept.
/// Returns whether it was removed.
pub fn remove_own(path: &Path, seal: &Seal) -> bool {
    seal_of(path).is_some_and(|s| &s == seal) && std::fs::remove_file(path).is_ok()
}

/// Reads and checks a checkpoint (at most `--max-memory` bytes).
pub fn read<C: DeserializeOwned>(path: &Path) -> Result<Checkpoint<C>, CheckpointError> {
    let name = path.display().to_string();
    let bytes = nrpt_sampling::input::read_all(
        path,
        nrpt_sampling::limits::get().max_memory,
        "the cap of a checkpoint: --max-memory",
    )
    .map_err(|source| CheckpointError::Read {
        path: name.clone(),
        source,
    })?;
    decode(&bytes, &name)
}

/// Decodes and checks the bytes of a checkpoint; `name` names it in errors.
pub fn decode<C: DeserializeOwned>(
    bytes: &[u8],
    name: &str,
) -> Result<Checkpoint<C>, CheckpointError> {
    let damaged = |message: String| CheckpointError::Damaged {
        path: name.to_string(),
        message,
    };
    if bytes.len() < 12 || &bytes[..8] != MAGIC {
        return Err(CheckpointError::NotACheckpoint(name.to_string()));
    }
    let format = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if (1..FORMAT).contains(&format) {
        return Err(CheckpointError::OlderFormat {
            path: name.to_string(),
            found: format,
            reads: FORMAT,
        });
    }
    if format != FORMAT {
        return Err(CheckpointError::OtherFormat {
            path: name.to_string(),
            found: format,
            reads: FORMAT,
        });
    }
    if bytes.len() < HEAD + SUM {
        return Err(damaged(format!("{} bytes: truncated", bytes.len())));
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&bytes[12..20]);
    let len = u64::from_le_bytes(len);
    let expected = (bytes.len() - HEAD - SUM) as u64;
    if len != expected {
        return Err(damaged(format!(
            "its payload should be {len} bytes, the file holds {expected}: truncated or \
             extended"
        )));
    }
    let (body, sum) = bytes.split_at(bytes.len() - SUM);
    if Sha256::digest(body).as_slice() != sum {
        return Err(damaged(
            "its SHA-256 checksum does not match: the file changed after it was written".into(),
        ));
    }
    let payload = &body[HEAD..];
    let mut at = 0;
    let mut text = || -> Result<String, CheckpointError> {
        let len = payload
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| damaged("truncated header".into()))?;
        let t = payload
            .get(at + 4..(at + 4).saturating_add(len))
            .ok_or_else(|| damaged("truncated header".into()))?;
        at += 4 + len;
        String::from_utf8(t.to_vec()).map_err(|_| damaged("a header text is not UTF-8".into()))
    };
    let found = text()?;
    if found != version() {
        return Err(CheckpointError::OtherVersion {
            path: name.to_string(),
            found,
            ours: env!("CARGO_PKG_VERSION"),
        });
    }
    let config: C = nrpt_sampling::json::from_str(&text()?)
        .map_err(|e| damaged(format!("configuration: {e}")))?;
    let inputs: Vec<InputDigest> =
        nrpt_sampling::json::from_str(&text()?).map_err(|e| damaged(format!("inputs: {e}")))?;
    let every = payload
        .get(at..at + 8)
        .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        .ok_or_else(|| damaged("truncated header".into()))?;
    at += 8;
    // Decoded from the bytes already read (at most --max-memory), borrowing them: a
    // claimed length preallocates no more elements than the bytes left (postcard's size
    // hint) and at most about 1 MiB (serde's), so a huge count runs out of bytes instead
    // of memory.
    let (state, rest): (RunState, &[u8]) =
        postcard::take_from_bytes(&payload[at..]).map_err(|e| damaged(format!("state: {e}")))?;
    if !rest.is_empty() {
        return Err(damaged("trailing bytes after the state".into()));
    }
    if every == 0 {
        return Err(damaged("a checkpoint cadence of 0 iterations".into()));
    }
    Ok(Checkpoint {
        config,
        inputs,
        every,
        state,
    })
}

/// How a run saves itself: where, how often, and what describes it.
#[derive(Clone, Copy, Debug)]
pub struct Plan<'a, C> {
    /// The checkpoint file.
    pub path: &'a Path,
    /// Iterations between two checkpoints (≥ 1).
    pub every: u64,
    /// What the checkpoint says about the run.
    pub config: &'a C,
    /// The digests of the run's input files.
    pub inputs: &'a [InputDigest],
}

/// A run with checkpoints at its end.
#[derive(Debug)]
pub struct Finished {
    /// The state after the run's last iteration.
    pub state: RunState,
    /// The seal of the last checkpoint this run wrote (`None` when it wrote none).
    pub seal: Option<Seal>,
}

/// Runs `job` on the CPU engine from `saved` (or from its start) to its end, saving the
/// whole state to `plan.path` every `plan.every` iterations, and returns the final
/// state (`CpuBackend::finish` turns it into the run's output) with the seal of the last
/// checkpoint it wrote (remove that file with [`remove_own`] once the outputs are safe). Segments give the same
/// bits as one run, so a run resumed from any of its checkpoints ends as the
/// uninterrupted one. A stop asked by `progress` after a checkpoint was written is a
/// [`Stopped`] error that names it; `progress` is first told the iterations `saved`
/// already holds.
pub fn run<C: Serialize>(
    cpu: &CpuBackend,
    job: &Job,
    saved: Option<RunState>,
    plan: &Plan<'_, C>,
    progress: OnProgress<'_>,
) -> crate::error::Result<Finished> {
    if plan.every < 1 {
        return Err(nrpt_sampling::config::ConfigError::new(
            "checkpoint_every",
            "must be at least 1 iteration, got 0",
        )
        .into());
    }
    let mut state = saved;
    let mut seal = None;
    // The iteration of the checkpoint on disk, if any.
    let mut on_disk = None;
    if let Some(s) = &state {
        on_disk = Some(s.iteration);
        progress(s.iteration * job.ensembles as u64);
    }
    loop {
        let from = state.as_ref().map_or(0, |s| s.iteration);
        let until = from.saturating_add(plan.every).min(job.iterations);
        // A stop asked by `progress` (during a segment, or during the write of a
        // checkpoint) leaves the last checkpoint on disk: say which.
        let stopped = |on_disk: Option<u64>| match on_disk {
            Some(iteration) if progress(0) == Flow::Stop && plan.path.exists() => Some(Stopped {
                path: plan.path.to_path_buf(),
                iteration,
            }),
            _ => None,
        };
        let s = match cpu.run_from(job, state.take(), until, progress) {
            Ok(s) => s,
            Err(e) => {
                return Err(match (e, stopped(on_disk)) {
                    (EngineError::Interrupted, Some(stop)) => stop.into(),
                    (e, _) => e.into(),
                });
            }
        };
        if until >= job.iterations {
            return Ok(Finished { state: s, seal });
        }
        let c = Checkpoint {
            config: plan.config,
            inputs: plan.inputs.to_vec(),
            every: plan.every,
            state: s,
        };
        match write(plan.path, &c) {
            Ok(written) => seal = Some(written),
            Err(e) => {
                return Err(match stopped(on_disk) {
                    Some(stop) => stop.into(),
                    None => e,
                });
            }
        }
        on_disk = Some(until);
        state = Some(c.state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrpt_sampling::engine::cpu::CpuBackend;

    fn sample() -> Checkpoint {
        let config = RunConfig {
            iterations: 60,
            ensembles: 2,
            chains: 4,
            ..RunConfig::default()
        };
        let job = config.job(config.record()).unwrap();
        let state = CpuBackend::default()
            .run_from(&job, None, 30, &nrpt_sampling::engine::unobserved)
            .unwrap();
        Checkpoint {
            config,
            inputs: vec![InputDigest {
                key: "data".into(),
                path: "d.csv".into(),
                sha256: "ab".repeat(32),
            }],
            every: 30,
            state,
        }
    }

    /// A state written and read back is the same; a foreign, truncated or tampered
    /// file is refused with the reason.
    #[test]
    fn round_trip_and_refusals() {
        let c = sample();
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(&dir.path().join("out"));
        assert!(path.ends_with("out.checkpoint"));
        write(&path, &c).unwrap();
        assert_eq!(read(&path).unwrap(), c);
        let bytes = std::fs::read(&path).unwrap();
        assert!(matches!(
            decode::<RunConfig>(&bytes[..bytes.len() - 3], "c"),
            Err(CheckpointError::Damaged { .. })
        ));
        let mut other = bytes.clone();
        other[8] = 1;
        let e = decode::<RunConfig>(&other, "c").unwrap_err();
        assert!(
            matches!(e, CheckpointError::OlderFormat { found: 1, .. }),
            "{e}"
        );
        other[8] = 0x43;
        let e = decode::<RunConfig>(&other, "c").unwrap_err();
        assert!(
            matches!(e, CheckpointError::OtherFormat { found: 0x43, .. }),
            "{e}"
        );
        assert!(matches!(
            decode::<RunConfig>(b"hello world, not a checkpoint", "c"),
            Err(CheckpointError::NotACheckpoint(_))
        ));
    }

    /// Every single flipped bit of a checkpoint is found (the format's own bytes name
    /// the format, the magic's say it is no checkpoint, all others fail the checksum).
    #[test]
    fn every_flipped_byte_is_found() {
        let bytes = encode(&sample()).unwrap();
        let step = (bytes.len() / 997).max(1);
        for i in (0..bytes.len()).step_by(step).chain(0..HEAD) {
            let mut b = bytes.clone();
            b[i] ^= 1 << (i % 8);
            assert!(
                decode::<RunConfig>(&b, "c").is_err(),
                "byte {i} flipped was not found"
            );
        }
    }

    /// A file of an earlier format (2: the state encoded by `bincode`) is refused before
    /// its length, checksum or body are looked at, with a message that says it is older
    /// and what to do.
    #[test]
    fn a_file_of_an_earlier_format_is_refused_with_what_to_do() {
        assert_eq!(FORMAT, 3);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.checkpoint");
        for old in 1..FORMAT {
            // The header an earlier nrpt wrote, then a body of no interest.
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&old.to_le_bytes());
            bytes.extend_from_slice(&40u64.to_le_bytes());
            bytes.extend_from_slice(&[7u8; 40 + SUM]);
            std::fs::write(&path, &bytes).unwrap();
            // It is still recognised as nrpt's (a new run may replace it).
            assert_eq!(occupant(&path).unwrap(), Occupant::Checkpoint);
            let e = read::<RunConfig>(&path).unwrap_err();
            assert!(
                matches!(&e, CheckpointError::OlderFormat { found, .. } if *found == old),
                "{e:?}"
            );
            let message = e.to_string();
            for says in [
                path.display().to_string(),
                "written by an earlier nrpt in an older format".into(),
                format!("format {old}; this nrpt reads format 3 only"),
                "start the run again without --resume".into(),
            ] {
                assert!(message.contains(&says), "`{says}` not in: {message}");
            }
            // However short the file after its format.
            let e = decode::<RunConfig>(&bytes[..12], "c").unwrap_err();
            assert!(matches!(e, CheckpointError::OlderFormat { .. }), "{e:?}");
        }
    }

    /// The file of a state with the raw `state` bytes in place of its encoding, with
    /// a valid length and checksum.
    fn file_with(c: &Checkpoint, state: &[u8]) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&FORMAT.to_le_bytes());
        bytes.extend_from_slice(&0u64.to_le_bytes());
        for text in [
            version(),
            serde_json::to_string(&c.config).unwrap(),
            serde_json::to_string(&c.inputs).unwrap(),
        ] {
            bytes.extend_from_slice(&(text.len() as u32).to_le_bytes());
            bytes.extend_from_slice(text.as_bytes());
        }
        bytes.extend_from_slice(&c.every.to_le_bytes());
        bytes.extend_from_slice(state);
        let payload = (bytes.len() - HEAD) as u64;
        bytes[12..HEAD].copy_from_slice(&payload.to_le_bytes());
        let sum = Sha256::digest(&bytes);
        bytes.extend_from_slice(&sum);
        bytes
    }

    /// The state of a real run written and read back is the same, bit for bit: its
    /// bytes encode again to the same bytes, and floats that compare equal to others or
    /// to nothing (NaN with payloads, -0.0, subnormals, infinities) keep their bits.
    #[test]
    fn a_run_state_round_trips_bit_for_bit() {
        let c = sample();
        let bytes = encode(&c).unwrap();
        assert_eq!(
            file_with(&c, &postcard::to_stdvec(&c.state).unwrap()),
            bytes
        );
        let back: Checkpoint = decode(&bytes, "c").unwrap();
        assert_eq!(back, c);
        assert_eq!(encode(&back).unwrap(), bytes);

        let f32s = [
            f32::from_bits(0x7fc0_1234), // quiet NaN with a payload
            f32::from_bits(0x7f80_0001), // signalling NaN
            f32::from_bits(0xffc0_0000), // negative NaN
            -0.0,
            0.0,
            f32::from_bits(1),           // the smallest subnormal
            f32::from_bits(0x807f_ffff), // the largest negative subnormal
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
        ];
        let f64s = [
            f64::from_bits(0x7ff8_0000_dead_beef),
            f64::from_bits(0x7ff0_0000_0000_0001),
            f64::from_bits(0xfff8_0000_0000_0000),
            -0.0,
            f64::from_bits(1),
            f64::from_bits(0x800f_ffff_ffff_ffff),
            f64::NEG_INFINITY,
            f64::MAX,
        ];
        // postcard writes a float as its little-endian bytes, after the length.
        let raw = postcard::to_stdvec(&f64s.to_vec()).unwrap();
        let mut want = vec![f64s.len() as u8];
        for x in f64s {
            want.extend_from_slice(&x.to_bits().to_le_bytes());
        }
        assert_eq!(raw, want);
        let mut odd = c.clone();
        let e = &mut odd.state.ensembles[1];
        for (i, x) in e.buffers.states_mut().iter_mut().enumerate() {
            *x = f32s[i % f32s.len()];
        }
        e.progress.buffer = f64s[0];
        let bytes = encode(&odd).unwrap();
        let back: Checkpoint = decode(&bytes, "c").unwrap();
        let (a, b) = (&odd.state.ensembles[1], &back.state.ensembles[1]);
        let bits32 = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let bits64 = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let chains = c.config.chains;
        assert_eq!(
            bits32(&a.buffers.levels(chains)),
            bits32(&b.buffers.levels(chains))
        );
        assert_eq!(bits64(a.buffers.ladder()), bits64(b.buffers.ladder()));
        assert_eq!(a.progress.buffer.to_bits(), b.progress.buffer.to_bits());
        assert_eq!(encode(&back).unwrap(), bytes);
    }

    /// A state that claims more ensembles than could ever fit, with a valid checksum,
    /// runs out of bytes instead of memory; bytes after the state are refused.
    #[test]
    fn a_hostile_length_allocates_nothing() {
        let c = sample();
        // Iteration 0, then 2^62 ensembles (a varint), then nothing.
        let mut state = vec![0u8];
        state.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40]);
        let e = decode::<RunConfig>(&file_with(&c, &state), "c").unwrap_err();
        assert!(matches!(e, CheckpointError::Damaged { .. }), "{e:?}");
        let mut state = postcard::to_stdvec(&c.state).unwrap();
        state.push(0);
        let e = decode::<RunConfig>(&file_with(&c, &state), "c").unwrap_err();
        assert!(e.to_string().contains("trailing bytes"), "{e}");
    }

    #[test]
    fn changed_inputs_are_named() {
        let d = |key: &str, path: &str, sum: &str| InputDigest {
            key: key.into(),
            path: path.into(),
            sha256: sum.into(),
        };
        let saved = vec![d("data", "a.npy", "00aa"), d("labels", "y.npy", "11")];
        assert!(changed_inputs(&saved, &saved).is_empty());
        let now = vec![d("data", "a.npy", "00ab"), d("test_data", "t.npy", "22")];
        let c = changed_inputs(&saved, &now);
        assert_eq!(c.len(), 3, "{c:?}");
        assert!(c[0].contains("other bytes"), "{c:?}");
        assert!(c[1].contains("no longer given"), "{c:?}");
        assert!(c[2].contains("not given then"), "{c:?}");
    }
}
