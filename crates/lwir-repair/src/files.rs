//! Writing files so that a reader, or a crash, sees the old file or the new one, never half
//! of one: the one implementation lwirc's drafts, registry and event log use. And reading a
//! file that a document names ([`read_confined`]): the one rule every such path follows.

use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically: a temporary file beside it, fsynced, then renamed
/// over `path`, and the directory synced where that is possible.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, true)
}

/// Writes `bytes` to `path` as [`write_atomically`] does, the whole file or none of it, but
/// without waiting for the disk: for a cache that its reader checks (and rebuilds from the
/// truth when a crash left it short, empty or missing), where the two syncs would cost more
/// than the rest of the command.
pub fn write_cache(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, false)
}

/// [`write_atomically`] (`durable`) and [`write_cache`]: a temporary file beside `path`,
/// written (and fsynced when `durable`), then renamed over `path` (and, when `durable`, the
/// directory synced where that is possible).
fn replace(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    let (dir, name) = parts(path)?;
    let tmp = dir.join(format!(".{}.{}.tmp", name, std::process::id()));
    let write = || -> io::Result<()> {
        write_new(&tmp, bytes, durable, false)?;
        std::fs::rename(&tmp, path)?;
        if durable {
            // The new file is in place; making the rename itself durable is best effort.
            let _ = sync_dir(&dir);
        }
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
    let linked = write_new(&temporary, bytes, true, true)
        .and_then(|()| std::fs::hard_link(&temporary, path));
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

/// Creates `path` (it must not exist), writes `bytes`, fsyncs when `sync`, and makes it
/// read-only when asked.
fn write_new(path: &Path, bytes: &[u8], sync: bool, read_only: bool) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(bytes)?;
    if sync {
        file.sync_all()?;
    }
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

/// Why [`open_confined`] or [`read_confined`] did not read a file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// `../../secret.json`, `/etc/shadow`, or a symbolic link to a file elsewhere: once
    /// every `..` and link is resolved, the file is not inside the root (shown here).
    #[error("it is outside `{0}`")]
    Outside(String),
    /// A directory, a FIFO, a device such as `/dev/zero`, a socket.
    #[error("it is not a regular file")]
    NotAFile,
    /// A regular file of more than the limit (shown here) bytes.
    #[error("it is larger than {0} bytes")]
    TooLarge(u64),
    /// A file that does not exist, cannot be opened, or was replaced while it was opened.
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl ReadError {
    /// The file does not exist (or a directory on its way does not).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Io(e) if e.kind() == io::ErrorKind::NotFound)
    }
}

/// Opens the file at `path` (relative to `root`, or absolute) for reading because a
/// document names it: only when, with every `.`, `..` and symbolic link resolved, it is
/// inside `root`, and only a regular file, opened without following a link that appeared
/// meanwhile and without waiting (a FIFO is refused, never waited on; a device is refused
/// before it is opened).
pub fn open_confined(root: &Path, path: &Path) -> Result<std::fs::File, ReadError> {
    let outside = || ReadError::Outside(root.display().to_string());
    // Judged on the text first, so that nothing outside is even looked at.
    let lexical_root = lexical(&std::path::absolute(root)?);
    let lexical_path = lexical(&std::path::absolute(root.join(path))?);
    if !lexical_path.starts_with(&lexical_root) {
        return Err(outside());
    }
    let real_root = std::fs::canonicalize(root)?;
    let real = std::fs::canonicalize(&lexical_path)?;
    if !real.starts_with(&real_root) {
        return Err(outside());
    }
    // `real` has no link left in it: this is the file's own type.
    let seen = std::fs::symlink_metadata(&real)?;
    if !seen.is_file() {
        return Err(ReadError::NotAFile);
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(&real)?;
    let opened = file.metadata()?;
    if !opened.is_file() {
        return Err(ReadError::NotAFile);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if (opened.dev(), opened.ino()) != (seen.dev(), seen.ino()) {
            return Err(ReadError::Io(io::Error::other(
                "it was replaced while it was opened",
            )));
        }
    }
    Ok(file)
}

/// Reads the file at `path` that a document names, as [`open_confined`] opens it: at most
/// `limit` bytes (a larger file is refused after `limit + 1` bytes are read, whatever its
/// size said).
pub fn read_confined(root: &Path, path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = open_confined(root, path)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > limit {
        return Err(ReadError::TooLarge(limit));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok(bytes)
}

/// `path` (absolute) with `.` and `..` resolved on its text alone.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
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

    #[test]
    fn a_named_file_is_read_only_inside_its_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("workspace");
        create_dirs(&root.join("drafts")).unwrap();
        std::fs::write(root.join("workflow.json"), b"{}").unwrap();
        std::fs::write(dir.path().join("secret.json"), b"secret").unwrap();
        let read = |path: &str| read_confined(&root, Path::new(path), 16);
        assert_eq!(read("workflow.json").unwrap(), b"{}");
        assert_eq!(read("drafts/../workflow.json").unwrap(), b"{}");
        assert_eq!(
            read_confined(&root, &root.join("./workflow.json"), 16).unwrap(),
            b"{}"
        );
        for outside in ["../secret.json", "drafts/../../secret.json", "/etc/passwd"] {
            assert!(
                matches!(read(outside), Err(ReadError::Outside(_))),
                "{outside}: {:?}",
                read(outside)
            );
        }
        let absolute = dir.path().join("secret.json");
        assert!(matches!(
            read_confined(&root, &absolute, 16),
            Err(ReadError::Outside(_))
        ));
        assert!(read("missing.json").unwrap_err().is_not_found());
        assert!(matches!(read("drafts"), Err(ReadError::NotAFile)));
    }

    #[test]
    fn a_named_file_is_read_up_to_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sixteen"), [b'x'; 16]).unwrap();
        std::fs::write(dir.path().join("seventeen"), [b'x'; 17]).unwrap();
        assert_eq!(
            read_confined(dir.path(), Path::new("sixteen"), 16)
                .unwrap()
                .len(),
            16
        );
        assert!(matches!(
            read_confined(dir.path(), Path::new("seventeen"), 16),
            Err(ReadError::TooLarge(16))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_out_of_the_root_a_device_and_a_fifo_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("workspace");
        create_dirs(&root.join("sub")).unwrap();
        std::fs::write(dir.path().join("secret.json"), b"secret").unwrap();
        std::fs::write(root.join("sub/workflow.json"), b"{}").unwrap();
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, root.join(name)).unwrap();
        };
        link(&dir.path().join("secret.json"), "secret.json");
        link(Path::new("/dev/zero"), "zero.json");
        link(dir.path(), "up");
        link(&root.join("sub/workflow.json"), "workflow.json");
        let read = |path: &str| read_confined(&root, Path::new(path), 1 << 20);
        for outside in ["secret.json", "zero.json", "up/secret.json"] {
            assert!(
                matches!(read(outside), Err(ReadError::Outside(_))),
                "{outside}: {:?}",
                read(outside)
            );
        }
        // A link that stays inside is followed.
        assert_eq!(read("workflow.json").unwrap(), b"{}");
        // A device inside the root: refused before it is opened.
        assert!(matches!(
            read_confined(Path::new("/dev"), Path::new("zero"), 1 << 20),
            Err(ReadError::NotAFile)
        ));
        // A FIFO nobody writes to: refused, not waited on.
        let fifo =
            std::ffi::CString::new(root.join("fifo.json").into_os_string().into_encoded_bytes())
                .unwrap();
        // SAFETY: `fifo` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(matches!(read("fifo.json"), Err(ReadError::NotAFile)));
    }
}
