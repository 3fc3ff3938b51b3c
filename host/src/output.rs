//! What the commands write: whole output folders ([`OutDir`]: written into a hidden
//! sibling, then swapped into place), files within them (each through a temporary name),
//! CSV tables and `.npy` arrays.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::config::ConfigError;

/// An output folder written whole. [`OutDir::prepare`] checks `--out` before any
/// computation and creates a hidden sibling folder; the command writes its files there
/// ([`OutDir::path`]); [`OutDir::commit`] puts it in place of `--out` in one step (on
/// Linux an atomic exchange of the two names, `renameat2(RENAME_EXCHANGE)`, then the
/// old folder is deleted). A command that fails or is interrupted before `commit`
/// leaves the previous folder exactly as it was, or nothing where there was nothing:
/// the sibling is removed when the `OutDir` is dropped, and siblings left by killed
/// processes are removed by the next `prepare` of the same folder.
#[derive(Debug)]
pub struct OutDir {
    target: PathBuf,
    temp: PathBuf,
    committed: bool,
}

/// What [`OutDir::commit`] found when it was asked to stop.
#[derive(Debug, thiserror::Error)]
#[error("interrupted before the outputs were put in place: nothing was written ({0} is as it was)")]
pub struct InterruptedWhileWriting(pub String);

impl OutDir {
    /// Checks that `target` can be an output folder (it is a folder or does not exist,
    /// and its parent can be created and written) and creates the temporary sibling.
    /// Errors name `--out`.
    pub fn prepare(target: &Path) -> Result<OutDir, ConfigError> {
        let bad = |why: String| ConfigError::new("out", why);
        if target.as_os_str().is_empty() {
            return Err(bad("is empty".into()));
        }
        if let Ok(meta) = fs::metadata(target)
            && !meta.is_dir()
        {
            return Err(bad(format!(
                "{} exists and is not a folder",
                target.display()
            )));
        }
        let name = target
            .file_name()
            .ok_or_else(|| bad(format!("{} does not name a folder", target.display())))?
            .to_string_lossy()
            .into_owned();
        let parent = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fs::create_dir_all(parent)
            .map_err(|e| bad(format!("cannot create {}: {e}", parent.display())))?;
        remove_stale_siblings(parent, &name);
        let temp = parent.join(format!(".{name}.nrpt-{}.tmp", std::process::id()));
        let _ = fs::remove_dir_all(&temp);
        fs::create_dir(&temp)
            .map_err(|e| bad(format!("cannot write in {}: {e}", parent.display())))?;
        Ok(OutDir {
            target: target.to_path_buf(),
            temp,
            committed: false,
        })
    }

    /// Where the command writes its files until [`OutDir::commit`].
    pub fn path(&self) -> &Path {
        &self.temp
    }

    /// The folder the outputs end up in.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Puts the written folder in place of the target (unless Ctrl-C or SIGTERM came
    /// first: then nothing changes and the error says so).
    pub fn commit(mut self) -> Result<PathBuf> {
        pause_for_tests();
        if crate::interrupt::requested() {
            return Err(InterruptedWhileWriting(self.target.display().to_string()).into());
        }
        if self.target.is_dir() {
            exchange(&self.temp, &self.target).with_context(|| {
                format!(
                    "cannot put the outputs in place of {}",
                    self.target.display()
                )
            })?;
            // The old folder now has the temporary name.
            let _ = fs::remove_dir_all(&self.temp);
        } else {
            fs::rename(&self.temp, &self.target)
                .with_context(|| format!("cannot move the outputs to {}", self.target.display()))?;
        }
        self.committed = true;
        Ok(self.target.clone())
    }
}

/// The environment variable that makes [`OutDir::commit`] wait this many milliseconds
/// first, with every file written: a hook for the tests that interrupt a command while
/// it writes its outputs. Unset in normal use.
pub const PAUSE_BEFORE_COMMIT_VAR: &str = "NRPT_PAUSE_BEFORE_COMMIT_MS";

fn pause_for_tests() {
    let ms = std::env::var(PAUSE_BEFORE_COMMIT_VAR)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
        .min(60_000);
    if ms > 0 {
        // Wake early when a signal comes, as a real write would end soon after.
        let until = std::time::Instant::now() + std::time::Duration::from_millis(ms);
        while std::time::Instant::now() < until && !crate::interrupt::requested() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.temp);
        }
    }
}

/// Swaps the names of two folders in one step where the system can (Linux), else
/// moves `to` aside, `from` into place, and removes nothing (the caller removes the old
/// folder, which then has `from`'s name).
fn exchange(from: &Path, to: &Path) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let a = CString::new(from.as_os_str().as_bytes())?;
        let b = CString::new(to.as_os_str().as_bytes())?;
        // SAFETY: both are valid NUL-terminated paths; AT_FDCWD resolves them relative
        // to the working directory, as std's rename does.
        let rc = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        // Filesystems without RENAME_EXCHANGE fall through to the two renames.
        if err.raw_os_error() != Some(libc::EINVAL) && err.raw_os_error() != Some(libc::ENOSYS) {
            return Err(err);
        }
    }
    let aside = to.with_extension(format!("nrpt-old-{}", std::process::id()));
    fs::rename(to, &aside)?;
    if let Err(e) = fs::rename(from, to) {
        let _ = fs::rename(&aside, to);
        return Err(e);
    }
    fs::rename(&aside, from)
}

/// Removes `.NAME.nrpt-PID.tmp` siblings whose process no longer runs (left by a
/// process that was killed).
fn remove_stale_siblings(parent: &Path, name: &str) {
    let prefix = format!(".{name}.nrpt-");
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = file
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        // Only where /proc tells which processes run (Linux); elsewhere leftovers stay.
        let dead = pid != std::process::id()
            && Path::new("/proc/self").exists()
            && !Path::new(&format!("/proc/{pid}")).exists();
        if dead {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .with_context(|| format!("{} is not a file path", path.display()))?
        .to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| -> Result<()> {
        let mut f =
            fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if crate::interrupt::requested() {
            anyhow::bail!("interrupted");
        }
        fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Writes pretty JSON.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// A CSV table built in memory and written whole (RFC 4180 quoting by the `csv`
/// crate: a cell with a comma or a quote is quoted). A row with another number of
/// cells than the header makes [`Csv::write`] fail.
pub struct Csv {
    writer: csv::Writer<Vec<u8>>,
    columns: usize,
    rows: usize,
    ragged: Option<(usize, usize)>,
    error: Option<String>,
}

impl Csv {
    /// A table with this header.
    pub fn new(header: &[&str]) -> Self {
        let mut t = Csv {
            writer: csv::WriterBuilder::new()
                .flexible(true)
                .from_writer(Vec::new()),
            columns: header.len(),
            rows: 0,
            ragged: None,
            error: None,
        };
        t.record(header.iter().map(|h| h.to_string()).collect());
        t
    }

    fn record(&mut self, cells: Vec<String>) {
        if cells.len() != self.columns && self.ragged.is_none() {
            self.ragged = Some((self.rows, cells.len()));
        }
        if let Err(e) = self.writer.write_record(&cells)
            && self.error.is_none()
        {
            self.error = Some(e.to_string());
        }
    }

    /// Appends one row of already formatted cells.
    pub fn row<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: std::fmt::Display,
    {
        self.rows += 1;
        self.record(cells.into_iter().map(|c| c.to_string()).collect());
    }

    /// Writes the table.
    pub fn write(self, path: &Path) -> Result<()> {
        if let Some((row, cells)) = self.ragged {
            anyhow::bail!(
                "{}: row {row} has {cells} cells for {} columns",
                path.display(),
                self.columns
            );
        }
        if let Some(e) = self.error {
            anyhow::bail!("{}: {e}", path.display());
        }
        let bytes = self
            .writer
            .into_inner()
            .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.error()))?;
        write_atomic(path, &bytes)
    }
}

/// Encodes a little-endian `f32` array of the given shape as a NumPy `.npy` file
/// (format version 1.0).
pub fn npy_f32(shape: &[usize], data: &[f32]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_text}, }}");
    // Magic (6) + version (2) + header length (2) + header, padded to 64 bytes, ending
    // with a newline.
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat(total.next_multiple_of(64) - total));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + 4 * data.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_aligned_and_parsable() {
        let bytes = npy_f32(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + hlen) % 64, 0);
        let header = std::str::from_utf8(&bytes[10..10 + hlen]).unwrap();
        assert!(header.contains("'shape': (3, 2)"), "{header}");
        assert!(header.ends_with('\n'));
        assert_eq!(bytes.len(), 10 + hlen + 24);
        assert_eq!(&bytes[10 + hlen..10 + hlen + 4], &1.0f32.to_le_bytes());
        assert!(
            std::str::from_utf8(&npy_f32(&[4], &[0.0; 4])[10..])
                .unwrap()
                .contains("(4,)")
        );
    }

    /// A folder written whole replaces the old one; a dropped one leaves it as it was;
    /// a file in the way, or an unwritable parent, is an error naming --out.
    #[test]
    fn output_folders_are_all_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("old.txt"), "old").unwrap();
        {
            let o = OutDir::prepare(&target).unwrap();
            write_atomic(&o.path().join("new.txt"), b"new").unwrap();
            // Dropped without commit: nothing changes, no sibling is left.
        }
        assert!(target.join("old.txt").exists() && !target.join("new.txt").exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let o = OutDir::prepare(&target).unwrap();
        write_atomic(&o.path().join("new.txt"), b"new").unwrap();
        o.commit().unwrap();
        assert!(!target.join("old.txt").exists() && target.join("new.txt").exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // Into a fresh path, with parents created.
        let fresh = dir.path().join("a/b/c");
        let o = OutDir::prepare(&fresh).unwrap();
        o.commit().unwrap();
        assert!(fresh.is_dir());
        // A file in the way.
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let e = OutDir::prepare(&file).unwrap_err();
        assert_eq!(e.field, "out");
        assert!(e.message.contains("not a folder"), "{e}");
        // A stale sibling of a dead process is cleaned up.
        let stale = dir.path().join(".out.nrpt-999999999.tmp");
        std::fs::create_dir(&stale).unwrap();
        let _o = OutDir::prepare(&target).unwrap();
        assert!(!stale.exists());
    }

    #[test]
    fn csv_cells_are_quoted_and_rows_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let mut t = Csv::new(&["method", "value"]);
        t.row(["DEO⋆, S = 0.2", "1.5"]);
        t.row(["say \"hi\"", "2"]);
        t.write(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "method,value\n\"DEO⋆, S = 0.2\",1.5\n\"say \"\"hi\"\"\",2\n"
        );
        let mut t = Csv::new(&["a", "b"]);
        t.row(["1", "2", "3"]);
        let e = t.write(&dir.path().join("bad.csv")).unwrap_err();
        assert!(
            e.to_string().contains("row 1 has 3 cells for 2 columns"),
            "{e}"
        );
        assert!(!dir.path().join("bad.csv").exists());
    }

    #[test]
    fn atomic_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        write_atomic(&p, b"hello").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"hello");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
    }
}
