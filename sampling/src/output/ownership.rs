//! Which folders nrpt may replace: one it wrote itself (its marker file lists every file
//! in it), or an empty one. Never the root, the home folder, a folder holding the
//! current directory or an input file, even with `--force`.
//!
//! The marker is the only proof: a folder without one is not nrpt's however its files
//! are named (a person's `results.json` and `table.csv` look like an output folder),
//! so folders written before the marker existed need `--force` once.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The marker file in every output folder: who wrote the folder, and its files.
pub const MARKER: &str = ".nrpt-output.json";

/// Entries of an old folder examined at most: past that it is not one of ours.
pub const MAX_ENTRIES: usize = 100_000;

/// What [`MARKER`] holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Marker {
    /// Always "nrpt".
    pub written_by: String,
    /// The nrpt version.
    pub version: String,
    /// The command that wrote the folder (`run`, `deep`, …).
    pub command: String,
    /// Every file and folder it wrote, relative to the folder, `/`-separated, sorted.
    pub files: Vec<String>,
}

impl Marker {
    /// The marker of a folder that `command` wrote, listing what is in `dir` now.
    pub fn of(dir: &Path, command: &str) -> io::Result<Marker> {
        let mut files: Vec<String> = entries(dir)?.into_iter().collect();
        files.retain(|f| f != MARKER);
        Ok(Marker {
            written_by: "nrpt".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            command: command.into(),
            files,
        })
    }
}

/// What an existing folder is, to nrpt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing in it.
    Empty,
    /// Written by nrpt, nothing added since.
    Ours,
    /// Holds entries nrpt did not write (some of them, sorted).
    Foreign(Vec<String>),
}

/// Every entry of `dir`, recursively, relative and `/`-separated (symbolic links are
/// entries, not followed). At most [`MAX_ENTRIES`]: an error past that.
pub fn entries(dir: &Path) -> io::Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, rel)) = stack.pop() {
        for e in fs::read_dir(&path)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            let rel_name = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if e.file_type()?.is_dir() {
                stack.push((e.path(), rel_name.clone()));
            }
            out.insert(rel_name);
            if out.len() > MAX_ENTRIES {
                return Err(io::Error::other(format!("more than {MAX_ENTRIES} entries")));
            }
        }
    }
    Ok(out)
}

/// What an existing folder holds, and what it is to nrpt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Survey {
    /// Every entry (see [`entries`]), the marker included.
    pub entries: BTreeSet<String>,
    /// Empty, ours, or foreign.
    pub verdict: Verdict,
}

/// Lists the existing folder `dir` and judges it: a folder of more than
/// [`MAX_ENTRIES`] entries is foreign.
pub(crate) fn survey(dir: &Path) -> io::Result<Survey> {
    let found = match entries(dir) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::Other => {
            return Ok(Survey {
                entries: BTreeSet::new(),
                verdict: Verdict::Foreign(vec![e.to_string()]),
            });
        }
        Err(e) => return Err(e),
    };
    let verdict = if found.is_empty() {
        Verdict::Empty
    } else {
        // Without a valid marker nothing in the folder is proven ours.
        let marker = read_marker(dir);
        let marked = marker.is_some();
        let listed: BTreeSet<String> = marker
            .map(|m| m.files.into_iter().collect())
            .unwrap_or_default();
        let foreign: Vec<String> = found
            .iter()
            .filter(|f| !(listed.contains(f.as_str()) || (marked && f.as_str() == MARKER)))
            .cloned()
            .collect();
        if foreign.is_empty() {
            Verdict::Ours
        } else {
            Verdict::Foreign(foreign)
        }
    };
    Ok(Survey {
        entries: found,
        verdict,
    })
}

/// The marker of `dir`, when it has a valid one written by nrpt.
fn read_marker(dir: &Path) -> Option<Marker> {
    let path = dir.join(MARKER);
    let meta = fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > 64 << 20 {
        return None;
    }
    let m: Marker = serde_json::from_slice(&fs::read(&path).ok()?).ok()?;
    (m.written_by == "nrpt").then_some(m)
}

/// Why nrpt must never replace the folder `real` (a canonical path), whatever
/// `--force` says: it is the root, the home folder, or holds the current directory or
/// one of `inputs`.
pub(crate) fn protected(real: &Path, inputs: &[PathBuf]) -> Option<String> {
    if real.parent().is_none() {
        return Some("is the root folder".into());
    }
    if let Ok(cwd) = std::env::current_dir().and_then(|d| d.canonicalize())
        && cwd.starts_with(real)
    {
        return Some(if cwd == real {
            "is the current directory".into()
        } else {
            format!("holds the current directory ({})", cwd.display())
        });
    }
    if let Some(home) = std::env::var_os("HOME")
        .map(PathBuf::from)
        .and_then(|h| h.canonicalize().ok())
        && home.starts_with(real)
    {
        return Some(if home == real {
            "is your home folder".into()
        } else {
            format!("holds your home folder ({})", home.display())
        });
    }
    for input in inputs {
        if let Ok(i) = input.canonicalize()
            && i.starts_with(real)
        {
            return Some(format!("holds the input {}", input.display()));
        }
    }
    None
}

/// A short list of names for a message: the first few, and how many more.
pub(crate) fn some_names(names: &[String]) -> String {
    const SHOWN: usize = 4;
    let mut s = names
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_marked_and_foreign_folders_and_no_proof_without_a_marker() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(survey(d).unwrap().verdict, Verdict::Empty);
        fs::write(d.join("train.csv"), "1,0").unwrap();
        assert_eq!(
            survey(d).unwrap().verdict,
            Verdict::Foreign(vec!["train.csv".into()])
        );
        // The names of nrpt's outputs without a marker are not proof: a person's
        // results and tables are kept.
        let mine = tempfile::tempdir().unwrap();
        for f in [
            "results.json",
            "summary.json",
            "table.csv",
            "figure1_final.png",
        ] {
            fs::write(mine.path().join(f), "x").unwrap();
        }
        assert!(
            matches!(survey(mine.path()).unwrap().verdict, Verdict::Foreign(f) if f.len() == 4)
        );
        // A damaged marker proves nothing, and is itself foreign.
        fs::write(mine.path().join(MARKER), "{").unwrap();
        assert!(
            matches!(survey(mine.path()).unwrap().verdict, Verdict::Foreign(f) if f.len() == 5)
        );
        // A marker lists what nrpt wrote; anything else is foreign.
        let ours = tempfile::tempdir().unwrap();
        fs::create_dir(ours.path().join("sub")).unwrap();
        fs::write(ours.path().join("sub/a.csv"), "x").unwrap();
        let m = Marker::of(ours.path(), "run").unwrap();
        assert_eq!(m.files, ["sub", "sub/a.csv"]);
        fs::write(ours.path().join(MARKER), serde_json::to_vec(&m).unwrap()).unwrap();
        assert_eq!(survey(ours.path()).unwrap().verdict, Verdict::Ours);
        fs::write(ours.path().join("sub/notes.txt"), "mine").unwrap();
        assert_eq!(
            survey(ours.path()).unwrap().verdict,
            Verdict::Foreign(vec!["sub/notes.txt".into()])
        );
    }

    #[test]
    fn root_home_working_directory_and_input_folders_are_protected() {
        assert!(protected(Path::new("/"), &[]).is_some());
        let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
        assert_eq!(
            protected(&cwd, &[]).as_deref(),
            Some("is the current directory")
        );
        assert!(protected(cwd.parent().unwrap(), &[]).is_some());
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        let input = dir.path().join("train.csv");
        fs::write(&input, "x").unwrap();
        assert!(protected(&real, std::slice::from_ref(&input)).is_some());
        assert!(protected(&real.join("out"), &[input]).is_none());
    }

    #[test]
    fn long_lists_are_shortened() {
        let names: Vec<String> = (0..6).map(|i| format!("f{i}")).collect();
        assert_eq!(some_names(&names), "f0, f1, f2, f3 and 2 more");
    }
}
