//! Where a store is written and how it replaces another: temporary names beside the output
//! (`.NAME.KIND-PID-NANOS@HOST`), the overwrite rule (only a molsift store is ever replaced),
//! the atomic swap into place, and the sweep that removes what killed runs left behind.
//!
//! Every temporary directory or file of molsift (a store being built, an ingest's work
//! directory, an index file being written, a manifest being rewritten) is named by
//! [`temporary_sibling`], so one [`sweep_leftovers`] finds them all: an entry whose creator
//! (same host, that PID) is no longer alive is removed.

use std::io;
use std::path::{Path, PathBuf};

use molsift_iostats as iostats;

use crate::layout::{
    ANALOG_FILES, ANALOG_RETIRED_FILES, DATA_FILES, INDEX_FILES, MANIFEST, OPTIONAL_FILES,
    PATTERN_COMPACT_FILES, PATTERN_FILES,
};
use crate::StoreError;
use crate::{planes, v2};

/// `DIR/.NAME.KIND-PID-NANOS@HOST` next to `path`: same file system, so a rename is atomic,
/// and the creator (host and process) can be told later from the name alone.
pub fn temporary_sibling(path: &Path, kind: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    path.with_file_name(format!(
        ".{name}.{kind}-{}-{nanos}@{}",
        std::process::id(),
        hostname()
    ))
}

/// The creator of a temporary name made by [`temporary_sibling`] for `base`: `(pid, host)`.
fn creator(entry: &str, base: Option<&str>) -> Option<(i32, String)> {
    let rest = entry.strip_prefix('.')?;
    let rest = match base {
        Some(b) => rest.strip_prefix(b)?.strip_prefix('.')?,
        None => rest,
    };
    let (left, host) = rest.rsplit_once('@')?;
    let mut parts = left.rsplitn(3, '-');
    let (_nanos, pid, kind) = (parts.next()?, parts.next()?, parts.next()?);
    let kind = if base.is_some() {
        kind
    } else {
        kind.rsplit('.').next()?
    };
    if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_lowercase()) {
        return None;
    }
    Some((pid.parse().ok()?, host.to_string()))
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).replace(['/', '@'], "_")
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

/// [`sweep_leftovers`] for the output `path`: in its directory, for its name.
pub fn sweep_leftovers_beside(path: &Path) -> Vec<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new(""));
    sweep_leftovers(dir, path.file_name().and_then(|n| n.to_str()))
}

/// Removes the temporary entries that runs killed on this host left in `dir` (for the output
/// named `base`, or for any name when `None`): those whose creating process is gone. Entries
/// of live processes, of other hosts, and everything else are left alone. Returns what it
/// removed.
pub fn sweep_leftovers(dir: &Path, base: Option<&str>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }) else {
        return Vec::new();
    };
    let host = hostname();
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((pid, from)) = creator(&name, base) else {
            continue;
        };
        if from != host || alive(pid) {
            continue;
        }
        let path = entry.path();
        let gone = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        if gone.is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// The overwrite rule: `--overwrite` replaces only a molsift store. `Ok` when nothing is at
/// `path`, it is an empty directory, or a store directory holding nothing but store files (and
/// molsift's own temporary files); an error naming what is there otherwise, so that no user
/// file or directory (an input, a README, a project folder) is ever deleted.
pub fn check_replaceable(path: &Path) -> Result<(), StoreError> {
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StoreError::io(path, e)),
        Ok(m) => m,
    };
    let refuse = |what: String| StoreError::NotReplaceable {
        path: path.to_path_buf(),
        what,
    };
    if !meta.is_dir() {
        return Err(refuse("is not a directory".into()));
    }
    // every file either version of a store may hold, from the modules that write them
    let store_files = || {
        [MANIFEST, v2::IDS_LOOKUP]
            .into_iter()
            .chain(DATA_FILES)
            .chain(INDEX_FILES)
            .chain(PATTERN_FILES)
            .chain(PATTERN_COMPACT_FILES)
            .chain(ANALOG_FILES)
            .chain(ANALOG_RETIRED_FILES)
            .chain(v2::REQUIRED)
            .chain(planes::FILES)
            .chain(OPTIONAL_FILES)
    };
    let entries = std::fs::read_dir(path).map_err(|e| StoreError::io(path, e))?;
    let mut has_manifest = false;
    let mut empty = true;
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io(path, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let known = store_files().any(|f| f == name);
        let ours = creator(&name, None).is_some_and(|_| {
            let stem = name.trim_start_matches('.');
            store_files().any(|f| stem.starts_with(&format!("{f}.")))
        });
        let kind = entry.file_type().ok();
        let is_file = kind.is_some_and(|t| t.is_file());
        // a killed run's temporary entry may be a directory (the graph parts of a pattern build)
        let is_dir = kind.is_some_and(|t| t.is_dir());
        // a store set (`molsift ingest --shards`): its manifest, and shards that are stores
        let set_file = name == SET_MANIFEST && is_file;
        let shard = is_dir && is_shard_name(&name) && {
            check_replaceable(&entry.path())?;
            true
        };
        if set_file || shard {
            has_manifest |= set_file;
            empty = false;
            continue;
        }
        if !((known && is_file) || (ours && (is_file || is_dir))) {
            return Err(refuse(format!(
                "holds {name:?}, which is not a file of a molsift store"
            )));
        }
        has_manifest |= name == MANIFEST;
        empty = false;
    }
    if !has_manifest && !empty {
        return Err(refuse("has no manifest.json: not a molsift store".into()));
    }
    Ok(())
}

/// The manifest of a store set (`molsift ingest --shards`: shard stores beside it).
pub const SET_MANIFEST: &str = "set.json";

/// A shard's directory name in a store set: `shard-` and four or more digits.
fn is_shard_name(name: &str) -> bool {
    name.strip_prefix("shard-")
        .is_some_and(|d| d.len() >= 4 && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Moves the finished store at `tmp` to `dest`. If `dest` exists, it is replaced only with
/// `overwrite` and only if [`check_replaceable`] allows it, in one atomic exchange (readers see
/// the old store or the new one, never neither); the old store is then removed.
pub fn swap_into_place(tmp: &Path, dest: &Path, overwrite: bool) -> Result<(), StoreError> {
    if iostats::metadata(dest).is_err() {
        match std::fs::rename(tmp, dest) {
            Ok(()) => return sync_parent(dest),
            // another run put a store there first: replace it (overwrite) or refuse, below
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTEMPTY) | Some(libc::EEXIST)) => {}
            Err(e) => return Err(StoreError::io(dest, e)),
        }
    }
    if !overwrite {
        return Err(StoreError::Exists(dest.to_path_buf()));
    }
    check_replaceable(dest)?;
    let old = match exchange(tmp, dest) {
        Ok(()) => tmp.to_path_buf(), // the old store is now at the temporary name
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EINVAL)) => {
            // no RENAME_EXCHANGE on this file system: two renames
            let old = temporary_sibling(dest, "old");
            std::fs::rename(dest, &old).map_err(|e| StoreError::io(dest, e))?;
            std::fs::rename(tmp, dest).map_err(|e| StoreError::io(dest, e))?;
            old
        }
        Err(e) => return Err(StoreError::io(dest, e)),
    };
    sync_parent(dest)?;
    std::fs::remove_dir_all(&old).map_err(|e| StoreError::io(&old, e))
}

/// `renameat2(a, b, RENAME_EXCHANGE)`: swaps two paths atomically.
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
    };
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: two valid C strings; renameat2 only reads them.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Syncs the directory holding `path`, so a rename in it survives a crash.
pub(crate) fn sync_parent(path: &Path) -> Result<(), StoreError> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    sync_dir(parent)
}

/// Syncs a directory's entries to disk.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    iostats::CountedFile::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_tell_their_creator() {
        let t = temporary_sibling(Path::new("/x/lib.store"), "ingest");
        let name = t.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(".lib.store.ingest-"), "{name}");
        assert_eq!(
            creator(&name, Some("lib.store")).unwrap(),
            (std::process::id() as i32, hostname())
        );
        assert!(creator(&name, Some("lib")).is_none());
        assert!(creator("README", None).is_none());
    }

    #[test]
    fn sweep_removes_only_dead_creators_of_this_host() {
        let dir = tempfile::tempdir().unwrap();
        let host = hostname();
        let dead = dir.path().join(format!(".s.ingest-999999999-1@{host}"));
        let live = dir
            .path()
            .join(format!(".s.tmp-{}-1@{host}", std::process::id()));
        let other = dir.path().join(".s.tmp-999999999-1@another-host");
        let user = dir.path().join(".s.notes");
        for d in [&dead, &live, &other] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(&user, "mine").unwrap();
        assert_eq!(sweep_leftovers(dir.path(), Some("s")), vec![dead.clone()]);
        assert!(!dead.exists() && live.exists() && other.exists() && user.exists());
    }

    #[test]
    fn overwrite_refuses_anything_but_a_store() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(
            check_replaceable(&file),
            Err(StoreError::NotReplaceable { .. })
        ));
        let proj = dir.path().join("proj");
        std::fs::create_dir(&proj).unwrap();
        std::fs::write(proj.join("manifest.json"), "{}").unwrap();
        std::fs::write(proj.join("README"), "x").unwrap();
        let err = check_replaceable(&proj).unwrap_err().to_string();
        assert!(err.contains("README"), "{err}");
        std::fs::remove_file(proj.join("README")).unwrap();
        assert!(check_replaceable(&proj).is_ok());
        std::fs::write(proj.join("smiles.txt"), "C\n").unwrap();
        std::fs::remove_file(proj.join("manifest.json")).unwrap();
        assert!(check_replaceable(&proj).is_err());
        std::fs::remove_file(proj.join("smiles.txt")).unwrap();
        assert!(check_replaceable(&proj).is_ok()); // empty: nothing to lose
        assert!(check_replaceable(&dir.path().join("absent")).is_ok());
    }
}
