//! Output folders written whole: checked before any computation, written into a hidden
//! sibling, swapped into place in one step.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::ownership::{self, MARKER, Marker, Verdict};
use super::temp::{self, Locked};
use crate::config::ConfigError;

/// How a command may choose its output folder.
#[derive(Clone, Debug, Default)]
pub struct OutPolicy {
    /// The command that writes it (`run`, `deep`, …), recorded in the marker.
    pub command: &'static str,
    /// Replace an existing folder that nrpt did not write (`--force`).
    pub force: bool,
    /// Files and folders the command reads: a folder holding one is never replaced.
    pub inputs: Vec<PathBuf>,
}

/// An output folder written whole.
///
/// [`OutDir::prepare`] checks `--out` before any computation: a folder nrpt did not
/// write (see [`ownership`](super::ownership)) is refused unless `--force`, and never
/// replaced when it is the root, the home folder, or holds the current directory or
/// an input; a mount point, a name that is not UTF-8 or too long for the temporary
/// names, an unwritable parent are refused. It then creates a hidden sibling
/// `.NAME.nrpt-TOKEN.tmp` (with the old folder's group and set-group-ID bit), held by
/// the lock file `.NAME.nrpt-TOKEN.lock` while this process lives. The command writes
/// its files there ([`OutDir::path`]); [`OutDir::commit`] writes the marker, gives the
/// folder the old one's mode and puts it in place of `--out` in one step (on Linux an
/// atomic exchange of the two names), then deletes the old folder.
///
/// A command that fails or is interrupted before `commit` leaves the previous folder
/// exactly as it was, or nothing where there was nothing: the sibling is removed when
/// the `OutDir` is dropped, and siblings of killed processes (whose lock is free) by
/// the next `prepare` of the same folder. A symbolic link as `--out` is followed and
/// kept: the folder it leads to is replaced.
#[derive(Debug)]
pub struct OutDir {
    /// `--out` as given.
    target: PathBuf,
    /// The folder that is replaced: `--out` with links resolved.
    real: PathBuf,
    temp: PathBuf,
    lock: Option<Locked>,
    command: &'static str,
    /// The old folder's permission bits, kept by the new one.
    mode: Option<u32>,
    committed: bool,
}

/// What [`OutDir::commit`] found when it was asked to stop.
#[derive(Debug, thiserror::Error)]
#[error("interrupted before the outputs were put in place: nothing was written ({0} is as it was)")]
pub struct InterruptedWhileWriting(pub String);

/// The outputs are complete in this folder: the context of any error that comes after
/// [`OutDir::commit`] (printing the results, `--strict`), so that the message says the
/// folder was written.
#[derive(Clone, Debug, thiserror::Error)]
#[error("the outputs are complete in {}", .0.display())]
pub struct Committed(pub PathBuf);

/// Bytes that the temporary names add to `--out`'s last component at most:
/// `.NAME.checkpoint.TOKEN.tmp`.
pub const TEMP_NAME_OVERHEAD: usize =
    ".".len() + ".checkpoint.".len() + temp::TOKEN_LEN + ".tmp".len();

impl OutDir {
    /// Checks that `target` can be the output folder of `policy.command` and creates the
    /// temporary sibling. Errors name `--out`.
    pub fn prepare(target: &Path, policy: &OutPolicy) -> Result<OutDir, ConfigError> {
        let bad = |why: String| ConfigError::new("out", why);
        let shown = target.display();
        if target.as_os_str().is_empty() {
            return Err(bad("is empty".into()));
        }
        if target.to_str().is_none() {
            return Err(bad(format!(
                "{shown} is not UTF-8 text: nrpt writes the output path into its JSON \
                 summaries, which need UTF-8; choose another name"
            )));
        }
        let real = resolve(target).map_err(bad)?;
        if real.parent().is_none() {
            return Err(bad(format!(
                "{shown} is the root folder: nrpt replaces its output folder whole, so it never \
                 writes there (not even with --force); choose a folder of its own"
            )));
        }
        let name = real
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| bad(format!("{shown} does not name a folder")))?
            .to_string();
        let parent = super::parent_of(&real).to_path_buf();
        if let Some(max) = name_max(&parent)
            && name.len() + TEMP_NAME_OVERHEAD > max
        {
            return Err(bad(format!(
                "the name {name:?} is {} bytes; nrpt's temporary names add {TEMP_NAME_OVERHEAD} \
                 and this file system takes at most {max} per name: choose a shorter name",
                name.len()
            )));
        }
        let mut mode = None;
        let mut group = None;
        match fs::symlink_metadata(&real) {
            Ok(meta) if !meta.is_dir() => {
                return Err(bad(format!("{shown} exists and is not a folder")));
            }
            Ok(meta) => {
                if let Some(why) = ownership::protected(&real, &policy.inputs) {
                    return Err(bad(format!(
                        "{shown} {why}: nrpt replaces its output folder whole, so it never \
                         writes there (not even with --force); choose a folder of its own, \
                         such as {}",
                        target.join("nrpt-out").display()
                    )));
                }
                if is_mount_point(&real, &meta) {
                    return Err(bad(format!(
                        "{shown} is a mount point: nrpt puts its outputs in place by renaming \
                         folders, which a mount point refuses; write into a folder inside it, \
                         such as {}",
                        target.join("nrpt-out").display()
                    )));
                }
                let verdict = ownership::judge(&real)
                    .map_err(|e| bad(format!("cannot read {shown}: {e}")))?;
                if let Verdict::Foreign(names) = verdict
                    && !policy.force
                {
                    return Err(bad(format!(
                        "{shown} holds files nrpt did not write ({}): nrpt replaces its output \
                         folder whole, so it only replaces an empty folder or one it wrote \
                         itself; choose another --out, or add --force to replace it and \
                         everything in it",
                        ownership::some_names(&names)
                    )));
                }
                mode = Some(meta.permissions().mode() & 0o7777);
                group = Some(meta.gid());
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(bad(format!("cannot read {shown}: {e}"))),
        }
        clean_stale_siblings(&parent, &name);
        let lock = temp::create_locked(&parent, |t| format!(".{name}.nrpt-{t}.lock"))
            .map_err(|e| bad(format!("cannot write in {}: {e}", parent.display())))?;
        let temp = parent.join(format!(".{name}.nrpt-{}.tmp", lock.token));
        fs::create_dir(&temp)
            .map_err(|e| bad(format!("cannot write in {}: {e}", parent.display())))?;
        let out = OutDir {
            target: target.to_path_buf(),
            real,
            temp,
            lock: Some(lock),
            command: policy.command,
            mode,
            committed: false,
        };
        // The old folder's group (files created inside then take it where the
        // set-group-ID bit is set), and its mode, writable by us until the commit.
        if let Some(gid) = group
            && fs::metadata(&out.temp).is_ok_and(|m| m.gid() != gid)
        {
            let _ = std::os::unix::fs::chown(&out.temp, None, Some(gid));
        }
        if let Some(mode) = mode {
            let _ = fs::set_permissions(&out.temp, fs::Permissions::from_mode(mode | 0o700));
        }
        Ok(out)
    }

    /// Where the command writes its files until [`OutDir::commit`].
    pub fn path(&self) -> &Path {
        &self.temp
    }

    /// The folder the outputs end up in, as the user named it.
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
        let marker = Marker::of(&self.temp, self.command)
            .with_context(|| format!("cannot list {}", self.temp.display()))?;
        super::files::write_json(&self.temp.join(MARKER), &marker)?;
        if let Some(mode) = self.mode {
            fs::set_permissions(&self.temp, fs::Permissions::from_mode(mode))
                .with_context(|| format!("cannot set the mode of {}", self.temp.display()))?;
        }
        if fs::symlink_metadata(&self.real).is_ok_and(|m| m.is_dir()) {
            let token = self
                .lock
                .as_ref()
                .map_or_else(temp::token, |l| l.token.clone());
            exchange(&self.temp, &self.real, &token).with_context(|| {
                format!(
                    "cannot put the outputs in place of {}",
                    self.target.display()
                )
            })?;
            self.committed = true;
            // The old folder now has the temporary name.
            if let Err(e) = temp::remove_tree(&self.temp) {
                crate::console::note(format_args!(
                    "note: the previous contents of {} could not be removed from {}: {e}; \
                     remove that folder by hand",
                    self.target.display(),
                    self.temp.display()
                ));
            }
        } else {
            fs::rename(&self.temp, &self.real)
                .with_context(|| format!("cannot move the outputs to {}", self.target.display()))?;
            self.committed = true;
        }
        self.release_lock();
        Ok(self.target.clone())
    }

    fn release_lock(&mut self) {
        if let Some(lock) = self.lock.take() {
            let _ = fs::remove_file(&lock.path);
        }
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = temp::remove_tree(&self.temp);
        }
        self.release_lock();
    }
}

/// `target` with symbolic links resolved: the folder (or the name to create) that is
/// replaced. Creates missing parents.
fn resolve(target: &Path) -> Result<PathBuf, String> {
    let shown = target.display();
    match fs::symlink_metadata(target) {
        Ok(m) if m.file_type().is_symlink() => {
            return fs::canonicalize(target).map_err(|e| {
                format!(
                    "{shown} is a symbolic link that leads nowhere ({e}): create the folder it \
                     names, or choose another --out"
                )
            });
        }
        Ok(_) => {
            return fs::canonicalize(target).map_err(|e| format!("cannot resolve {shown}: {e}"));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot read {shown}: {e}")),
    }
    let name = target
        .file_name()
        .ok_or_else(|| format!("{shown} does not name a folder"))?;
    let parent = super::parent_of(target);
    fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let parent = fs::canonicalize(parent)
        .map_err(|e| format!("cannot resolve {}: {e}", parent.display()))?;
    Ok(parent.join(name))
}

/// The longest name the file system of `dir` takes (`None` where it cannot be asked).
fn name_max(dir: &Path) -> Option<usize> {
    rustix::fs::statvfs(dir)
        .ok()
        .and_then(|s| usize::try_from(s.f_namemax).ok())
        .filter(|&n| n > 0)
}

/// Whether the folder `real` is the root of a mount (a rename of it fails with EBUSY):
/// by `statx` where the kernel says, else by a device differing from its parent's.
fn is_mount_point(real: &Path, meta: &fs::Metadata) -> bool {
    use rustix::fs::{AtFlags, CWD, StatxAttributes, StatxFlags, statx};
    if let Ok(s) = statx(
        CWD,
        real,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::BASIC_STATS,
    ) && s.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT)
    {
        return s.stx_attributes.contains(StatxAttributes::MOUNT_ROOT);
    }
    real.parent()
        .and_then(|p| fs::metadata(p).ok())
        .is_some_and(|p| p.dev() != meta.dev())
}

/// Swaps the names of two folders in one step where the system can (Linux), else
/// moves `to` aside (`.NAME.nrpt-TOKEN.old`, under the same lock), `from` into place,
/// and the old folder to `from`'s name. Either way the old folder ends at `from`.
fn exchange(from: &Path, to: &Path, token: &str) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    match renameat_with(CWD, from, CWD, to, RenameFlags::EXCHANGE) {
        Ok(()) => return Ok(()),
        // Filesystems without RENAME_EXCHANGE fall through to the renames.
        Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {}
        Err(e) => return Err(e.into()),
    }
    let name = to
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let aside = super::parent_of(to).join(format!(".{name}.nrpt-{token}.old"));
    fs::rename(to, &aside)?;
    if let Err(e) = fs::rename(from, to) {
        let _ = fs::rename(&aside, to);
        return Err(e);
    }
    fs::rename(&aside, from)
}

/// Removes the siblings `.NAME.nrpt-TOKEN.{tmp,old}` of killed processes: those whose
/// lock file `.NAME.nrpt-TOKEN.lock` is free, and, lockless (left by earlier versions),
/// those older than a day.
fn clean_stale_siblings(parent: &Path, name: &str) {
    let prefix = format!(".{name}.nrpt-");
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    let names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|f| f.starts_with(&prefix))
        .collect();
    for file in &names {
        let rest = &file[prefix.len()..];
        let Some((token, kind)) = rest.rsplit_once('.') else {
            continue;
        };
        let path = parent.join(file);
        match kind {
            "lock" if temp::is_token(token) => {
                if let Some(_held) = temp::take_abandoned(&path) {
                    for k in ["tmp", "old"] {
                        let _ = temp::remove_tree(&parent.join(format!("{prefix}{token}.{k}")));
                    }
                    let _ = fs::remove_file(&path);
                }
            }
            "tmp" | "old" => {
                let lock = format!("{prefix}{token}.lock");
                if !names.contains(&lock) && temp::older_than_a_day(&path) {
                    let _ = temp::remove_tree(&path);
                }
            }
            _ => {}
        }
    }
}

/// The environment variable that makes [`OutDir::commit`] wait this many milliseconds
/// first, with every file written: a hook for the tests that interrupt a command while
/// it writes its outputs. Builds with debug assertions only (debug and `ci`); release builds ignore it.
pub const PAUSE_BEFORE_COMMIT_VAR: &str = "NRPT_PAUSE_BEFORE_COMMIT_MS";

fn pause_for_tests() {
    if !cfg!(debug_assertions) {
        return;
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::write_atomic;

    fn policy() -> OutPolicy {
        OutPolicy {
            command: "test",
            ..OutPolicy::default()
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// A folder written whole replaces the old one; a dropped one leaves it as it was;
    /// a file in the way, or an unwritable parent, is an error naming --out.
    #[test]
    fn output_folders_are_all_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        let o = OutDir::prepare(&target, &policy()).unwrap();
        write_atomic(&o.path().join("old.txt"), b"old").unwrap();
        o.commit().unwrap();
        assert_eq!(names(&target), [MARKER, "old.txt"]);
        {
            let o = OutDir::prepare(&target, &policy()).unwrap();
            write_atomic(&o.path().join("new.txt"), b"new").unwrap();
            // Dropped without commit: nothing changes, no sibling is left.
        }
        assert_eq!(names(&target), [MARKER, "old.txt"]);
        assert_eq!(names(dir.path()), ["out"]);
        let o = OutDir::prepare(&target, &policy()).unwrap();
        write_atomic(&o.path().join("new.txt"), b"new").unwrap();
        o.commit().unwrap();
        assert_eq!(names(&target), [MARKER, "new.txt"]);
        assert_eq!(names(dir.path()), ["out"]);
        // Into a fresh path, with parents created.
        let fresh = dir.path().join("a/b/c");
        OutDir::prepare(&fresh, &policy())
            .unwrap()
            .commit()
            .unwrap();
        assert!(fresh.is_dir());
        // A file in the way.
        let file = dir.path().join("f");
        fs::write(&file, "x").unwrap();
        let e = OutDir::prepare(&file, &policy()).unwrap_err();
        assert_eq!(e.field, "out");
        assert!(e.message.contains("not a folder"), "{e}");
    }

    #[test]
    fn foreign_folders_are_refused_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("d");
        fs::create_dir(&d).unwrap();
        fs::write(d.join("keep"), "x").unwrap();
        let e = OutDir::prepare(&d, &policy()).unwrap_err();
        assert!(e.message.contains("did not write (keep)"), "{e}");
        assert!(e.message.contains("--force"), "{e}");
        assert_eq!(names(dir.path()), ["d"]);
        let forced = OutPolicy {
            force: true,
            ..policy()
        };
        OutDir::prepare(&d, &forced).unwrap().commit().unwrap();
        assert_eq!(names(&d), [MARKER]);
        // A folder holding an input is refused even with --force.
        fs::write(d.join("train.csv"), "1,0").unwrap();
        let with_input = OutPolicy {
            inputs: vec![d.join("train.csv")],
            ..forced
        };
        let e = OutDir::prepare(&d, &with_input).unwrap_err();
        assert!(e.message.contains("holds the input"), "{e}");
        assert!(d.join("train.csv").exists());
    }

    #[test]
    fn mode_group_and_links_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        OutDir::prepare(&real, &policy()).unwrap().commit().unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o2750)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let o = OutDir::prepare(&link, &policy()).unwrap();
        write_atomic(&o.path().join("a"), b"a").unwrap();
        assert_eq!(o.commit().unwrap(), link);
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(link.join("a")).unwrap(), b"a");
        let mode = fs::metadata(&real).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o2750);
        // A read-only old folder is replaced and removed.
        fs::set_permissions(&real, fs::Permissions::from_mode(0o555)).unwrap();
        OutDir::prepare(&real, &policy()).unwrap().commit().unwrap();
        assert_eq!(
            fs::metadata(&real).unwrap().permissions().mode() & 0o7777,
            0o555
        );
        assert_eq!(names(dir.path()), ["link", "real"]);
        // A link to nowhere.
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nothing"), &dangling).unwrap();
        let e = OutDir::prepare(&dangling, &policy()).unwrap_err();
        assert!(e.message.contains("leads nowhere"), "{e}");
    }

    #[test]
    fn stale_siblings_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        let live = OutDir::prepare(&target, &policy()).unwrap();
        // Left by a killed process: a lock file no one holds, and its folder.
        let dead = temp::create_locked(dir.path(), |t| format!(".out.nrpt-{t}.lock")).unwrap();
        let dead_lock = dead.path.clone();
        let dead_temp = dir.path().join(format!(".out.nrpt-{}.tmp", dead.token));
        fs::create_dir(&dead_temp).unwrap();
        fs::write(dead_temp.join("summary.json"), "{}").unwrap();
        drop(dead);
        // Lockless leftovers of earlier versions: kept while young.
        let legacy = dir.path().join(".out.nrpt-4242.tmp");
        fs::create_dir(&legacy).unwrap();
        let other = OutDir::prepare(&target, &policy()).unwrap();
        assert!(live.path().exists(), "a live sibling was removed");
        assert!(!dead_temp.exists() && !dead_lock.exists());
        assert!(legacy.exists());
        drop((live, other));
    }

    #[test]
    fn unusable_names_are_refused() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join(std::ffi::OsStr::from_bytes(b"out\xff"));
        let e = OutDir::prepare(&bad, &policy()).unwrap_err();
        assert!(e.message.contains("UTF-8"), "{e}");
        let long = dir.path().join("x".repeat(240));
        let e = OutDir::prepare(&long, &policy()).unwrap_err();
        assert!(e.message.contains("shorter name"), "{e}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
