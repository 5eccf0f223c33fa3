//! Writing files so that a reader, or a crash, sees the old file or the new one, never half
//! of one: the one implementation lwirc's drafts, registry and event log use.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically: a temporary file beside it, fsynced, then renamed
/// over `path`, and the directory synced where that is possible.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (dir, name) = parts(path)?;
    let tmp = dir.join(format!(".{}.{}.tmp", name, std::process::id()));
    let write = || -> io::Result<()> {
        write_synced(&tmp, bytes, false)?;
        std::fs::rename(&tmp, path)?;
        // The new file is in place; making the rename itself durable is best effort.
        let _ = sync_dir(&dir);
        Ok(())
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Writes `bytes` to `path` once: read-only, atomically (a temporary file named
/// `temporary_prefix…` beside it, fsynced, then hard-linked to `path`), and never over an
/// existing file. `Ok(true)` when it was written, `Ok(false)` when `path` already existed.
/// The directory must exist; it is synced after a new entry.
pub fn write_once(path: &Path, bytes: &[u8], temporary_prefix: &str) -> io::Result<bool> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (dir, _) = parts(path)?;
    let temporary = dir.join(format!(
        "{temporary_prefix}{}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let linked =
        write_synced(&temporary, bytes, true).and_then(|()| std::fs::hard_link(&temporary, path));
    // Linked or not, the temporary name goes.
    let _ = std::fs::remove_file(&temporary);
    match linked {
        Ok(()) => sync_dir(&dir).map(|()| true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Creates `dir` and its parents, syncing each parent that got a new entry (another
/// process creating one first is fine).
pub fn create_dirs(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dirs(parent)?;
    }
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
        Err(e) => return Err(e),
    }
    match dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => sync_dir(parent),
        None => Ok(()),
    }
}

/// The directory of `path` (`.` for a bare name) and its file name.
fn parts(path: &Path) -> io::Result<(PathBuf, String)> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not a file name", path.display()),
        )
    })?;
    Ok((dir, name.to_string_lossy().into_owned()))
}

/// Creates `path` (it must not exist), writes `bytes`, fsyncs, and makes it read-only when
/// asked.
fn write_synced(path: &Path, bytes: &[u8], read_only: bool) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    if read_only {
        let mut permissions = file.metadata()?.permissions();
        permissions.set_readonly(true);
        file.set_permissions(permissions)?;
    }
    Ok(())
}

/// Makes the entries of directory `dir` (a file created or renamed in it) durable. Outside
/// Unix directories cannot be opened and synced portably; nothing is done there.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_once_never_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        assert!(write_once(&path, b"one", ".tmp-").unwrap());
        assert!(!write_once(&path, b"two", ".tmp-").unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        assert!(std::fs::metadata(&path).unwrap().permissions().readonly());
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn write_atomically_replaces_and_creates_directories_on_request() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("x/y");
        create_dirs(&nested).unwrap();
        create_dirs(&nested).unwrap();
        let path = nested.join("f.json");
        write_atomically(&path, b"1").unwrap();
        write_atomically(&path, b"2").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"2");
        assert_eq!(std::fs::read_dir(&nested).unwrap().count(), 1);
        assert!(write_atomically(Path::new("/"), b"").is_err());
    }
}
