//! Runs cut into shards for job arrays, and the checks that put them back together:
//! `--shard i/n` ([`Shard`]), the summary a shard's folder carries (`shard.json`,
//! [`Summary`]), and the reading of a set of shard folders ([`read_set`]) that refuses,
//! by name, anything that is not every shard of one run exactly once.
//!
//! How a command cuts its work is its own: `nrpt scale` runs every n-th point of its
//! sweep ([`Shard::holds`]); `nrpt reproduce` runs a contiguous block of its seeds
//! ([`Shard::block`]), so that a shard is one engine job over consecutive
//! ensembles, each drawing from its own Philox key (seed, e) exactly as in the whole
//! run, and the merge concatenates the shards' per-seed records in shard order; `nrpt
//! deep` cuts its seeds the same way, every method of a seed keyed by the seed, and
//! builds its report from per-seed records whether they come from one run or from its
//! shards ([`crate::deep::experiment::Setup`]).

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Which part of a run a process covers: shard `index` of `count`, written `i/n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, 0-based.
    pub index: usize,
    /// Shards in all.
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a shard: write i/n with 0 <= i < n, e.g. 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse::<usize>().map_err(|_| bad())?,
            n.trim().parse::<usize>().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The whole run as one shard.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Whether item `i` belongs to this shard when items are dealt out in turn
    /// (`i % n == index`: `nrpt scale`'s points).
    pub fn holds(&self, i: usize) -> bool {
        i % self.count == self.index
    }

    /// This shard's contiguous block of `total` items (seeds): the first `total % n`
    /// shards one item longer than the others. An error when the block is empty (more
    /// shards than items).
    pub fn block(&self, total: usize) -> Result<Range<usize>, ShardError> {
        if self.count > total {
            return Err(ShardError::TooManyShards {
                shard: *self,
                total,
            });
        }
        let (base, extra) = (total / self.count, total % self.count);
        let start = self.index * base + self.index.min(extra);
        let len = base + usize::from(self.index < extra);
        Ok(start..start + len)
    }
}

/// `shard.json`: what marks an output folder as one shard of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// `nrpt-shard`.
    pub format: String,
    /// The command whose run this is a shard of (`reproduce`, `deep`).
    pub command: String,
    /// This shard, `i/n`.
    pub shard: String,
    /// Its index i.
    pub index: usize,
    /// The number of shards n.
    pub count: usize,
    /// The seeds (ensembles) this shard ran, `[start, end)` of the run's.
    pub seeds: [usize; 2],
    /// The run's seeds in all.
    pub total_seeds: usize,
    /// A digest of the run's configuration (FNV-1a, 64 bits, of `settings` as JSON):
    /// shards of one run share it.
    pub config_hash: String,
    /// The run's configuration, as the command states it.
    pub settings: serde_json::Value,
    /// The version of nrpt that ran the shard.
    pub version: String,
}

/// The file name of the summary.
pub const SUMMARY: &str = "shard.json";
/// What `format` holds.
pub const FORMAT: &str = "nrpt-shard";

impl Summary {
    /// The summary of shard `shard` of a run of `command` over `total` seeds with
    /// `settings` (which must not hold the shard itself).
    pub fn new(
        command: &str,
        shard: Shard,
        total: usize,
        settings: serde_json::Value,
    ) -> Result<Summary, ShardError> {
        let seeds = shard.block(total)?;
        Ok(Summary {
            format: FORMAT.to_string(),
            command: command.to_string(),
            shard: shard.to_string(),
            index: shard.index,
            count: shard.count,
            seeds: [seeds.start, seeds.end],
            total_seeds: total,
            config_hash: config_hash(&settings),
            settings,
            version: env!("CARGO_PKG_VERSION").to_string(),
        })
    }

    /// The shard.
    pub fn shard(&self) -> Shard {
        Shard {
            index: self.index,
            count: self.count,
        }
    }
}

/// FNV-1a (64 bits) of the JSON text of `settings`, in hex: equal settings, equal
/// digest (a name to compare at a glance; the merge compares the settings themselves).
pub fn config_hash(settings: &serde_json::Value) -> String {
    let text = settings.to_string();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Why a set of folders is not every shard of one run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    /// More shards than seeds: some shard would run nothing.
    #[error("shard {shard} of {total} seeds would run none: use at most {total} shards")]
    TooManyShards {
        /// The shard asked for.
        shard: Shard,
        /// The run's seeds.
        total: usize,
    },
    /// No folder given.
    #[error("give the output folders of every shard of one run")]
    NoInputs,
    /// A folder without a readable `shard.json`.
    #[error("{folder} is not a shard of nrpt {command}: {why}")]
    NotAShard {
        /// The folder.
        folder: PathBuf,
        /// The merging command.
        command: String,
        /// What is wrong.
        why: String,
    },
    /// A shard of another command's run.
    #[error("{folder} is a shard of nrpt {found}, not of nrpt {command}")]
    OtherCommand {
        /// The folder.
        folder: PathBuf,
        /// Its command.
        found: String,
        /// The merging command.
        command: String,
    },
    /// Shards of different runs.
    #[error(
        "{folder} is a shard of another run than {first} (configuration {found} against \
         {expected}): merge only the shards of one run"
    )]
    OtherRun {
        /// The folder that differs.
        folder: PathBuf,
        /// The first folder.
        first: PathBuf,
        /// Its digest.
        found: String,
        /// The first folder's digest.
        expected: String,
    },
    /// The same shard twice.
    #[error("shard {shard} is given twice: {first} and {second}")]
    Duplicate {
        /// The shard.
        shard: Shard,
        /// One folder.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// Shards missing.
    #[error("shards {missing} of {count} are missing (only {given} given)")]
    Missing {
        /// The missing shards, `i/n, …`.
        missing: String,
        /// n.
        count: usize,
        /// The folders given.
        given: usize,
    },
    /// A summary that contradicts itself (edited by hand, or another program's).
    #[error("{folder}: its shard.json does not hold together: {why}")]
    Inconsistent {
        /// The folder.
        folder: PathBuf,
        /// What is wrong.
        why: String,
    },
}

/// The summary in `folder`, checked to belong to `command`.
fn read_summary(folder: &Path, command: &str) -> Result<Summary, ShardError> {
    let not = |why: String| ShardError::NotAShard {
        folder: folder.to_path_buf(),
        command: command.to_string(),
        why,
    };
    let path = folder.join(SUMMARY);
    let text = nrpt_sampling::input::read_text(
        &path,
        nrpt_sampling::input::MAX_LIST_BYTES,
        "the cap of a shard's shard.json",
    )
    .map_err(|e| not(format!("cannot read its {SUMMARY} ({e})")))?;
    let s: Summary = nrpt_sampling::json::from_str(&text)
        .map_err(|e| not(format!("its {SUMMARY} is not one: {e}")))?;
    if s.format != FORMAT {
        return Err(not(format!("its {SUMMARY} has format `{}`", s.format)));
    }
    if s.command != command {
        return Err(ShardError::OtherCommand {
            folder: folder.to_path_buf(),
            found: s.command,
            command: command.to_string(),
        });
    }
    let inconsistent = |why: String| ShardError::Inconsistent {
        folder: folder.to_path_buf(),
        why,
    };
    if s.count == 0 || s.index >= s.count || s.shard != s.shard().to_string() {
        return Err(inconsistent(format!(
            "shard `{}` with index {} of {}",
            s.shard, s.index, s.count
        )));
    }
    let block = s
        .shard()
        .block(s.total_seeds)
        .map_err(|e| inconsistent(e.to_string()))?;
    if s.seeds != [block.start, block.end] {
        return Err(inconsistent(format!(
            "seeds {:?}, but shard {} of {} seeds runs {block:?}",
            s.seeds, s.shard, s.total_seeds
        )));
    }
    if s.config_hash != config_hash(&s.settings) {
        return Err(inconsistent(
            "its config_hash is not the digest of its settings".to_string(),
        ));
    }
    Ok(s)
}

/// Reads the summaries of `folders` and checks that they are every shard of one run of
/// `command`, each once; returns (folder, summary) in shard order.
pub fn read_set(folders: &[PathBuf], command: &str) -> Result<Vec<(PathBuf, Summary)>, ShardError> {
    let Some(first_folder) = folders.first() else {
        return Err(ShardError::NoInputs);
    };
    let mut set: Vec<(PathBuf, Summary)> = Vec::with_capacity(folders.len());
    for folder in folders {
        let s = read_summary(folder, command)?;
        if let Some((_, first)) = set.first()
            && (s.settings != first.settings
                || s.count != first.count
                || s.total_seeds != first.total_seeds)
        {
            return Err(ShardError::OtherRun {
                folder: folder.clone(),
                first: first_folder.clone(),
                found: format!("{} in {} shards", s.config_hash, s.count),
                expected: format!("{} in {} shards", first.config_hash, first.count),
            });
        }
        if let Some((other, _)) = set.iter().find(|(_, o)| o.index == s.index) {
            return Err(ShardError::Duplicate {
                shard: s.shard(),
                first: other.clone(),
                second: folder.clone(),
            });
        }
        set.push((folder.clone(), s));
    }
    let count = set[0].1.count;
    let missing: Vec<String> = (0..count)
        .filter(|i| !set.iter().any(|(_, s)| s.index == *i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(ShardError::Missing {
            missing: missing.join(", "),
            count,
            given: set.len(),
        });
    }
    set.sort_by_key(|(_, s)| s.index);
    Ok(set)
}

/// The file of a shard's folder that holds its records (what the merge joins).
pub const RECORDS: &str = "records.json";

/// The records of the shard in `folder` (its [`RECORDS`]) of `nrpt {command}`, read
/// under the cap of a results file and parsed as `T`; errors name the file.
pub fn read_records<T: serde::de::DeserializeOwned>(
    folder: &Path,
    command: &str,
) -> Result<T, nrpt_sampling::error::ConfigError> {
    use nrpt_sampling::error::ConfigError;
    let path = folder.join(RECORDS);
    let text = nrpt_sampling::input::read_text(
        &path,
        nrpt_sampling::input::MAX_RESULTS_BYTES,
        "the cap of a shard's records.json",
    )
    .map_err(|e| ConfigError::new("inputs", format!("cannot read {}: {e}", path.display())))?;
    nrpt_sampling::json::from_str(&text).map_err(|e| {
        ConfigError::new(
            "inputs",
            format!(
                "{} is not a shard's records of nrpt {command}: {e}",
                path.display()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_refuse_what_is_not_one() {
        assert_eq!("1/3".parse::<Shard>(), Ok(Shard { index: 1, count: 3 }));
        for bad in ["0/0", "3/2", "2/2", "a/b", "1", "-1/2", "1/2/3", ""] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.contains("is not a shard"), "{bad}: {e}");
        }
    }

    #[test]
    fn blocks_cover_every_seed_once_in_order() {
        for total in 1..20 {
            for count in 1..=total {
                let mut next = 0;
                for index in 0..count {
                    let b = Shard { index, count }.block(total).unwrap();
                    assert_eq!(b.start, next);
                    assert!(!b.is_empty());
                    next = b.end;
                }
                assert_eq!(next, total);
            }
        }
        assert!(matches!(
            Shard { index: 0, count: 4 }.block(3),
            Err(ShardError::TooManyShards { .. })
        ));
    }
}
