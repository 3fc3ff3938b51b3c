//! Output folders written whole: checked before any computation, written into a hidden
//! sibling, swapped into place in one step.
//!
//! Kept whole past 600 lines: the folder's whole life (checked, locked, written aside,
//! swapped in, cleaned up) and a quarter of tests of its failures.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::OutputError;

type Result<T, E = OutputError> = std::result::Result<T, E>;

use super::ownership::{self, MARKER, Marker, Survey, Verdict};
use super::temp::{self, Locked};
use crate::error::ConfigError;

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
/// atomic exchange of the two names), then deletes what the old folder held when it was
/// checked, and nothing else.
///
/// The folder is checked again at the commit, before and after the exchange: when
/// something appeared in it meanwhile (a person's notes, another program's files), it is
/// left exactly as it is and the outputs go to a new folder beside it (`NAME.1`,
/// `NAME.2`, …), which the error [`OutChanged`] names.
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
    /// What the old folder held when it was checked: all that may be deleted (`None`
    /// when there was no folder).
    replaceable: Option<BTreeSet<String>>,
    /// Missing parents of `--out` that `prepare` created, outermost first: removed again
    /// (when still empty) if the outputs are never put in place.
    created: Vec<PathBuf>,
    committed: bool,
}

/// The output folder changed while the command ran: it was left as it is and the outputs
/// were put in a new folder beside it.
#[derive(Debug, thiserror::Error)]
#[error(
    "{target} changed while nrpt ran ({what}): nrpt left it as it is and wrote the \
     outputs to {} instead", written_to.display()
)]
pub struct OutChanged {
    /// `--out` as given.
    pub target: String,
    /// What changed: entries that appeared in it (some of them), or a folder that
    /// appeared where there was none.
    pub what: String,
    /// Where the outputs are.
    pub written_to: PathBuf,
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
    /// temporary sibling (and `target`'s missing parents, removed again if the outputs are
    /// never put in place). Errors name `--out`; a refused folder leaves nothing behind.
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
        let Resolved { real, missing } = resolve(target).map_err(bad)?;
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
        // The file system that will hold the name: the parent's, or its nearest
        // existing ancestor's.
        let existing = missing
            .first()
            .map_or(parent.as_path(), |m| super::parent_of(m));
        if let Some(max) = name_max(existing)
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
        let mut replaceable = None;
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
                let Survey { entries, verdict } = ownership::survey(&real)
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
                replaceable = Some(entries);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(bad(format!("cannot read {shown}: {e}"))),
        }
        // Every check passed: the side effects begin.
        let mut out = OutDir {
            target: target.to_path_buf(),
            real,
            temp: PathBuf::new(),
            lock: None,
            command: policy.command,
            mode,
            replaceable,
            created: Vec::new(),
            committed: false,
        };
        for dir in &missing {
            match fs::create_dir(dir) {
                Ok(()) => out.created.push(dir.clone()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => {}
                Err(e) => return Err(bad(format!("cannot create {}: {e}", dir.display()))),
            }
        }
        clean_stale_siblings(&parent, &name);
        let lock = temp::create_locked(&parent, |t| format!(".{name}.nrpt-{t}.lock"))
            .map_err(|e| bad(format!("cannot write in {}: {e}", parent.display())))?;
        out.temp = parent.join(format!(".{name}.nrpt-{}.tmp", lock.token));
        out.lock = Some(lock);
        fs::create_dir(&out.temp)
            .map_err(|e| bad(format!("cannot write in {}: {e}", parent.display())))?;
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
    ///
    /// When the target changed since it was checked (an entry appeared in it, or a
    /// folder appeared where there was none), the target is left as it is, the outputs
    /// are moved to a new folder beside it, and the error is [`OutChanged`].
    pub fn commit(mut self) -> Result<PathBuf> {
        pause_for_tests();
        if crate::interrupt::requested() {
            return Err(InterruptedWhileWriting(self.target.display().to_string()).into());
        }
        let marker = Marker::of(&self.temp, self.command)
            .map_err(|e| OutputError::io(format!("cannot list {}", self.temp.display()), e))?;
        super::files::write_json(&self.temp.join(MARKER), &marker)?;
        if let Some(mode) = self.mode {
            fs::set_permissions(&self.temp, fs::Permissions::from_mode(mode)).map_err(|e| {
                OutputError::io(format!("cannot set the mode of {}", self.temp.display()), e)
            })?;
        }
        let exists = fs::symlink_metadata(&self.real).is_ok_and(|m| m.is_dir());
        match self.replaceable.clone() {
            Some(allowed) if exists => self.replace(&allowed)?,
            _ => self.put_in_place()?,
        }
        self.committed = true;
        self.release_lock();
        Ok(self.target.clone())
    }

    /// Exchanges the written folder with the old one, which must hold nothing but
    /// `allowed` (checked before and after the exchange), then deletes `allowed`.
    fn replace(&mut self, allowed: &BTreeSet<String>) -> Result<()> {
        let added = added_since(&self.real, allowed)?;
        if !added.is_empty() {
            return Err(self.divert(appeared(&added)));
        }
        let token = self
            .lock
            .as_ref()
            .map_or_else(temp::token, |l| l.token.clone());
        exchange(&self.temp, &self.real, &token).map_err(|e| {
            OutputError::io(
                format!(
                    "cannot put the outputs in place of {}",
                    self.target.display()
                ),
                e,
            )
        })?;
        // The old folder now has the temporary name: an entry added between the check
        // and the exchange is found here, and the exchange undone.
        let added = added_since(&self.temp, allowed)?;
        if !added.is_empty() {
            exchange(&self.temp, &self.real, &token).map_err(|e| {
                OutputError::io(
                    format!(
                        "{} changed while its outputs were put in place, and the old folder \
                         could not be put back: it is at {}",
                        self.target.display(),
                        self.temp.display()
                    ),
                    e,
                )
            })?;
            return Err(self.divert(appeared(&added)));
        }
        let left = remove_listed(&self.temp, allowed);
        if !left.is_empty() {
            // Appeared in the instant between the last check and the removal: kept,
            // under a name a person sees.
            let kept = free_sibling(&self.real, "kept")
                .and_then(|k| rename_new(&self.temp, &k).map(|()| k));
            crate::console::note(format_args!(
                "warning: {} appeared in {} while its outputs were put in place; {}",
                ownership::some_names(&left),
                self.target.display(),
                match kept {
                    Ok(k) => format!("they are kept in {}", self.shown(&k).display()),
                    Err(e) => format!(
                        "they are kept in {} ({e} when it was given a visible name)",
                        self.temp.display()
                    ),
                }
            ));
        }
        Ok(())
    }

    /// Moves the written folder to the target's name, which held no folder when it was
    /// checked (or held a folder since removed): never over a folder that appeared
    /// meanwhile, unless that one is empty.
    fn put_in_place(&mut self) -> Result<()> {
        match rename_new(&self.temp, &self.real) {
            Ok(()) => Ok(()),
            Err(e) if already_there(&e) => {
                // Something took the name meanwhile: an empty folder may be replaced
                // (a plain rename replaces an empty folder, and fails on any other).
                let empty = ownership::survey(&self.real)
                    .is_ok_and(|s| matches!(s.verdict, Verdict::Empty));
                if empty && fs::rename(&self.temp, &self.real).is_ok() {
                    return Ok(());
                }
                Err(self.divert("something of that name appeared where there was nothing".into()))
            }
            Err(e) => Err(OutputError::io(
                format!("cannot move the outputs to {}", self.target.display()),
                e,
            )),
        }
    }

    /// Leaves the target as it is and moves the written folder to a free name beside
    /// it: the error that says where, or why it could not.
    fn divert(&mut self, what: String) -> OutputError {
        let moved =
            free_sibling(&self.real, "").and_then(|to| rename_new(&self.temp, &to).map(|()| to));
        match moved {
            Ok(to) => {
                self.committed = true;
                OutChanged {
                    target: self.target.display().to_string(),
                    what,
                    written_to: self.shown(&to),
                }
                .into()
            }
            Err(source) => OutputError::Diverted {
                target: self.target.display().to_string(),
                what,
                source,
            },
        }
    }

    /// A sibling of the real folder as the user would name it: beside `--out` as given
    /// when that is not a link, else the full path.
    fn shown(&self, sibling: &Path) -> PathBuf {
        let given = fs::symlink_metadata(&self.target).is_ok_and(|m| m.file_type().is_symlink());
        match sibling.file_name() {
            Some(name) if !given && self.target.file_name() == self.real.file_name() => {
                self.target.with_file_name(name)
            }
            _ => sibling.to_path_buf(),
        }
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
            if !self.temp.as_os_str().is_empty() {
                let _ = temp::remove_tree(&self.temp);
            }
            self.release_lock();
            // The parents this folder created, innermost first, where still empty.
            for dir in self.created.iter().rev() {
                if fs::remove_dir(dir).is_err() {
                    break;
                }
            }
        }
        self.release_lock();
    }
}

/// What a message says of entries that appeared in a folder.
fn appeared(added: &[String]) -> String {
    format!("{} appeared in it", ownership::some_names(added))
}

/// The entries of `dir` that are not in `allowed` (an error only when `dir` cannot be
/// read; more than [`ownership`]'s limit of entries counts as added).
fn added_since(dir: &Path, allowed: &BTreeSet<String>) -> Result<Vec<String>> {
    match ownership::entries(dir) {
        Ok(now) => Ok(now.difference(allowed).cloned().collect()),
        Err(e) if e.kind() == io::ErrorKind::Other => Ok(vec![e.to_string()]),
        Err(e) => Err(OutputError::io(format!("cannot read {}", dir.display()), e)),
    }
}

/// Removes from the folder `dir` the entries of `listed` (relative, `/`-separated), and
/// `dir` itself once empty, opening read-only folders first; returns what is left
/// (entries that were not listed).
fn remove_listed(dir: &Path, listed: &BTreeSet<String>) -> Vec<String> {
    let open_up = |p: &Path| {
        if let Ok(meta) = fs::symlink_metadata(p)
            && meta.is_dir()
        {
            let mode = meta.permissions().mode();
            if mode & 0o700 != 0o700 {
                let _ = fs::set_permissions(p, fs::Permissions::from_mode(mode | 0o700));
            }
        }
    };
    // Folders first made writable, so that what is in them can be removed.
    open_up(dir);
    for rel in listed {
        open_up(&dir.join(rel));
    }
    // A folder sorts before everything in it: in reverse order, contents come first.
    for rel in listed.iter().rev() {
        let path = dir.join(rel);
        let _ = match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => fs::remove_dir(&path),
            Ok(_) => fs::remove_file(&path),
            Err(_) => Ok(()),
        };
    }
    if fs::remove_dir(dir).is_ok() {
        return Vec::new();
    }
    ownership::entries(dir)
        .map(|e| e.into_iter().collect())
        .unwrap_or_else(|e| vec![e.to_string()])
}

/// A name beside `real` that nothing has: `NAME.1`, `NAME.2`, … (`NAME.kept-1`, … with a
/// `tag`).
fn free_sibling(real: &Path, tag: &str) -> io::Result<PathBuf> {
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tag = if tag.is_empty() {
        String::new()
    } else {
        format!("{tag}-")
    };
    for n in 1..=10_000 {
        let candidate = real.with_file_name(format!("{name}.{tag}{n}"));
        match fs::symlink_metadata(&candidate) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(candidate),
            Err(e) => return Err(e),
            Ok(_) => {}
        }
    }
    Err(io::Error::other(format!(
        "{name}.{tag}1 to {name}.{tag}10000 are all taken"
    )))
}

/// Renames `from` to `to` where nothing is at `to` (never replacing what appeared
/// there: an `AlreadyExists` error then).
fn rename_new(from: &Path, to: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        // Filesystems without RENAME_NOREPLACE: a check, then a rename (which can only
        // replace an empty folder that appeared in between).
        Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {
            if fs::symlink_metadata(to).is_ok() {
                return Err(io::Error::from(io::ErrorKind::AlreadyExists));
            }
            fs::rename(from, to)
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether a rename failed because the name is taken.
fn already_there(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::AlreadyExists || e.kind() == io::ErrorKind::DirectoryNotEmpty
}

/// `--out` resolved: the folder that is replaced (or the name to create), and the
/// parents that do not exist yet.
struct Resolved {
    /// `target` with symbolic links resolved.
    real: PathBuf,
    /// Missing parents, outermost first, as absolute paths.
    missing: Vec<PathBuf>,
}

/// `target` with symbolic links resolved: the folder (or the name to create) that is
/// replaced. Creates nothing: missing parents are listed for [`OutDir::prepare`] to
/// create once every check has passed.
fn resolve(target: &Path) -> Result<Resolved, String> {
    let shown = target.display();
    match fs::symlink_metadata(target) {
        Ok(m) if m.file_type().is_symlink() => {
            let real = fs::canonicalize(target).map_err(|e| {
                format!(
                    "{shown} is a symbolic link that leads nowhere ({e}): create the folder it \
                     names, or choose another --out"
                )
            })?;
            return Ok(Resolved {
                real,
                missing: Vec::new(),
            });
        }
        Ok(_) => {
            let real =
                fs::canonicalize(target).map_err(|e| format!("cannot resolve {shown}: {e}"))?;
            return Ok(Resolved {
                real,
                missing: Vec::new(),
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot read {shown}: {e}")),
    }
    let name = target
        .file_name()
        .ok_or_else(|| format!("{shown} does not name a folder"))?;
    // The nearest existing ancestor, and the names below it that do not exist yet.
    let mut base = super::parent_of(target).to_path_buf();
    let mut below: Vec<std::ffi::OsString> = Vec::new();
    loop {
        match fs::symlink_metadata(&base) {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot read {}: {e}", base.display())),
        }
        match (base.file_name(), base.parent()) {
            (Some(n), Some(p)) => {
                below.push(n.to_os_string());
                base = if p.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    p.to_path_buf()
                };
            }
            // `..` after a missing folder: the path cannot be made.
            _ => {
                return Err(format!(
                    "{shown} goes through {} which does not exist",
                    base.display()
                ));
            }
        }
    }
    let mut at =
        fs::canonicalize(&base).map_err(|e| format!("cannot resolve {}: {e}", base.display()))?;
    if !at.is_dir() {
        return Err(format!("{} is not a folder", base.display()));
    }
    let mut missing = Vec::new();
    for n in below.iter().rev() {
        at.push(n);
        missing.push(at.clone());
    }
    Ok(Resolved {
        real: at.join(name),
        missing,
    })
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

    /// Where an [`OutChanged`] error says the outputs went.
    fn changed_to(e: &OutputError) -> &Path {
        match e {
            OutputError::Changed(c) => &c.written_to,
            e => panic!("not OutChanged: {e}"),
        }
    }
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

    /// What appears in the folder while the command runs is kept: the folder is left as
    /// it is and the outputs go beside it; an empty folder that appeared is replaced.
    #[test]
    fn a_folder_that_changed_meanwhile_is_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        OutDir::prepare(&target, &policy())
            .unwrap()
            .commit()
            .unwrap();
        let o = OutDir::prepare(&target, &policy()).unwrap();
        write_atomic(&o.path().join("new.txt"), b"new").unwrap();
        fs::write(target.join("notes.txt"), "mine").unwrap();
        let e = o.commit().unwrap_err();
        let OutputError::Changed(changed) = &e else {
            panic!("not OutChanged: {e}")
        };
        assert!(changed.what.contains("notes.txt"), "{e}");
        assert_eq!(changed.written_to, dir.path().join("out.1"));
        assert_eq!(names(&target), [MARKER, "notes.txt"]);
        assert_eq!(names(&dir.path().join("out.1")), [MARKER, "new.txt"]);
        assert_eq!(names(dir.path()), ["out", "out.1"]);
        // The same under --force: only what was there when it was checked may go.
        let forced = OutPolicy {
            force: true,
            ..policy()
        };
        let o = OutDir::prepare(&target, &forced).unwrap();
        fs::create_dir(target.join("sub")).unwrap();
        let e = o.commit().unwrap_err();
        assert_eq!(changed_to(&e), dir.path().join("out.2"));
        assert_eq!(names(&target), [MARKER, "notes.txt", "sub"]);
        // A folder that appeared where there was none is kept; an empty one replaced.
        let fresh = dir.path().join("fresh");
        let o = OutDir::prepare(&fresh, &policy()).unwrap();
        fs::create_dir(&fresh).unwrap();
        fs::write(fresh.join("a"), "a").unwrap();
        let e = o.commit().unwrap_err();
        assert_eq!(changed_to(&e), dir.path().join("fresh.1"));
        assert_eq!(names(&fresh), ["a"]);
        let empty = dir.path().join("empty");
        let o = OutDir::prepare(&empty, &policy()).unwrap();
        fs::create_dir(&empty).unwrap();
        o.commit().unwrap();
        assert_eq!(names(&empty), [MARKER]);
    }

    /// A replaced folder loses only what it held when it was checked.
    #[test]
    fn only_listed_entries_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("d");
        fs::create_dir_all(d.join("sub/deeper")).unwrap();
        fs::write(d.join("sub/deeper/a"), "a").unwrap();
        fs::write(d.join("b"), "b").unwrap();
        let listed: BTreeSet<String> = ["b", "sub", "sub/deeper", "sub/deeper/a"]
            .map(String::from)
            .into();
        fs::write(d.join("sub/late"), "late").unwrap();
        fs::set_permissions(d.join("sub"), fs::Permissions::from_mode(0o555)).unwrap();
        assert_eq!(remove_listed(&d, &listed), ["sub", "sub/late"]);
        assert_eq!(fs::read_to_string(d.join("sub/late")).unwrap(), "late");
        assert!(!d.join("b").exists() && !d.join("sub/deeper").exists());
        fs::remove_file(d.join("sub/late")).unwrap();
        assert!(remove_listed(&d, &listed).is_empty());
        assert!(!d.exists());
    }

    /// Parents created for a folder that is never put in place are removed again;
    /// those that existed, or that something else now uses, are kept.
    #[test]
    fn parents_of_an_abandoned_folder_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a/b/c");
        drop(OutDir::prepare(&target, &policy()).unwrap());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        let o = OutDir::prepare(&target, &policy()).unwrap();
        fs::write(dir.path().join("a/keep"), "x").unwrap();
        drop(o);
        assert_eq!(names(&dir.path().join("a")), ["keep"]);
        // `..` after a folder that does not exist is refused, creating nothing.
        let e = OutDir::prepare(&dir.path().join("x/../y"), &policy()).unwrap_err();
        assert!(e.message.contains("does not exist"), "{e}");
        assert_eq!(names(dir.path()), ["a"]);
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
