//! Temporary names that tell a live writer from an abandoned one.
//!
//! Every temporary file or folder nrpt creates beside a user's path has a random token
//! in its name (unique across processes, PID namespaces and machines that share the
//! disk) and is held by an exclusive file lock (`flock`) for as long as its writer
//! lives. The kernel drops the lock when the process ends, however it ends, so a
//! temporary name whose lock can be taken is *provably* abandoned and may be removed;
//! one whose lock is held belongs to a live run and is never touched.
//!
//! A writer creates its lock file with `O_EXCL`, locks it, then checks that the name
//! still leads to the file it locked: a cleaner that took the lock in between and
//! removed the name makes the writer start again with a new token, so the two never
//! share a name.

use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, RandomState};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// Temporary names without a lock (left by versions before locks, or by a writer killed
/// between two steps) are removed once older than this.
pub(crate) const LOCKLESS_STALE_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// Characters of a token.
pub(crate) const TOKEN_LEN: usize = 16;

/// A fresh random token of [`TOKEN_LEN`] hex digits (the system's random keys of
/// `RandomState`, the process, the time and a counter, hashed).
pub(crate) fn token() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let h = RandomState::new().hash_one((std::process::id(), now, n));
    format!("{h:016x}")
}

/// Whether `s` looks like a [`token`].
pub(crate) fn is_token(s: &str) -> bool {
    s.len() == TOKEN_LEN && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A file created with a unique name, locked, and checked to be still at that name.
#[derive(Debug)]
pub(crate) struct Locked {
    /// The open file (its lock lasts as long as it is open).
    pub file: File,
    /// Where it is.
    pub path: PathBuf,
    /// The token in its name.
    pub token: String,
}

/// Creates `dir/name(token)` with a fresh token, locks it, and makes sure the name still
/// leads to it (else tries again with another token).
pub(crate) fn create_locked(dir: &Path, name: impl Fn(&str) -> String) -> io::Result<Locked> {
    let mut last = None;
    for _ in 0..64 {
        let token = token();
        let path = dir.join(name(&token));
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                last = Some(e);
                continue;
            }
            Err(e) => return Err(e),
        };
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
        let mine = file.metadata()?;
        match fs::symlink_metadata(&path) {
            Ok(m) if m.dev() == mine.dev() && m.ino() == mine.ino() => {
                return Ok(Locked { file, path, token });
            }
            // A cleaner removed the name between our create and our lock.
            _ => continue,
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no unique temporary name could be made")))
}

/// Whether the lock of the file at `path` is free, i.e. whoever created it has ended.
/// Returns the open, now locked file so that the caller removes what it guards while
/// no new writer can take it; `None` when the lock is held (or the file is gone).
pub(crate) fn take_abandoned(path: &Path) -> Option<File> {
    let f = File::open(path).ok()?;
    rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).ok()?;
    Some(f)
}

/// Whether `path` was last modified more than [`LOCKLESS_STALE_AFTER`] ago.
pub(crate) fn older_than_a_day(path: &Path) -> bool {
    fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > LOCKLESS_STALE_AFTER)
}

/// Removes a folder tree that nrpt wrote, even where its modes forbid writing (an old
/// output folder that was read-only): every folder in it is made writable by its owner
/// first.
pub(crate) fn remove_tree(path: &Path) -> io::Result<()> {
    fn open_up(p: &Path) {
        use std::os::unix::fs::PermissionsExt;
        let Ok(meta) = fs::symlink_metadata(p) else {
            return;
        };
        if !meta.is_dir() {
            return;
        }
        let mode = meta.permissions().mode();
        if mode & 0o700 != 0o700 {
            let _ = fs::set_permissions(p, fs::Permissions::from_mode(mode | 0o700));
        }
        if let Ok(entries) = fs::read_dir(p) {
            for e in entries.flatten() {
                open_up(&e.path());
            }
        }
    }
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(m) if !m.is_dir() => return fs::remove_file(path),
        Ok(_) => {}
    }
    open_up(path);
    fs::remove_dir_all(path)
}

/// Removes the temporary files `.NAME.TOKEN.tmp` that writers of `target` (through
/// `files::write_atomic`) left when they were killed: those whose lock is free. Files of
/// older versions, named with a process id and never locked, are removed too.
pub fn clean_file_temps(target: &Path) {
    let Some(name) = target.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    let dir = super::parent_of(target);
    let prefix = format!(".{name}.");
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(middle) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|rest| rest.strip_suffix(".tmp"))
        else {
            continue;
        };
        if !(is_token(middle) || middle.parse::<u32>().is_ok()) {
            continue;
        }
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_file())
            && let Some(_lock) = take_abandoned(&path)
        {
            let _ = fs::remove_file(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_unique_and_recognised() {
        let a: std::collections::HashSet<String> = (0..1000).map(|_| token()).collect();
        assert_eq!(a.len(), 1000);
        assert!(a.iter().all(|t| is_token(t)));
        assert!(!is_token("12345") && !is_token("zzzzzzzzzzzzzzzz"));
    }

    #[test]
    fn a_held_lock_is_live_and_a_released_one_abandoned() {
        let dir = tempfile::tempdir().unwrap();
        let held = create_locked(dir.path(), |t| format!(".x.{t}.lock")).unwrap();
        assert!(
            take_abandoned(&held.path).is_none(),
            "a live lock was taken"
        );
        let path = held.path.clone();
        drop(held);
        assert!(take_abandoned(&path).is_some());
    }

    #[test]
    fn abandoned_file_temps_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.checkpoint");
        let live = create_locked(dir.path(), |t| format!(".out.checkpoint.{t}.tmp")).unwrap();
        let dead = create_locked(dir.path(), |t| format!(".out.checkpoint.{t}.tmp")).unwrap();
        let dead_path = dead.path.clone();
        drop(dead);
        let legacy = dir.path().join(".out.checkpoint.4242.tmp");
        fs::write(&legacy, "x").unwrap();
        let unrelated = dir.path().join(".out.checkpoint.notes.tmp");
        fs::write(&unrelated, "x").unwrap();
        clean_file_temps(&target);
        assert!(live.path.exists());
        assert!(!dead_path.exists() && !legacy.exists());
        assert!(unrelated.exists());
    }

    #[test]
    fn read_only_trees_are_removed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        fs::create_dir_all(t.join("sub")).unwrap();
        fs::write(t.join("sub/a"), "a").unwrap();
        fs::set_permissions(t.join("sub"), fs::Permissions::from_mode(0o500)).unwrap();
        fs::set_permissions(&t, fs::Permissions::from_mode(0o500)).unwrap();
        remove_tree(&t).unwrap();
        assert!(!t.exists());
    }
}
