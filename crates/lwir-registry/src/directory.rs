//! [`Storage`] on a local directory:
//!
//! ```text
//! <registry>/objects/sha256/<hex>   objects: canonical LWIR and registration records
//! <registry>/versions/<hex>         version references (a version's first registration)
//! <registry>/versions/<hex>.<n>     its n-th later registration (`lwirc register --rebase`)
//! ```
//!
//! Every file is written once: into a temporary file `.tmp.<pid>.<n>` in the directory it
//! is published to, fsynced, made read-only, then hard-linked to its final name — which
//! fails when the name exists, so nothing is ever replaced, and a name never has fewer than
//! all its bytes — then the temporary name is removed and the directory fsynced. (A rename
//! would be atomic too but replaces an existing file silently.) A process killed before the
//! link leaves only a temporary file, which nothing reads.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use lwir_repair::files;

use super::{Area, Digest, Listed, Put, Storage, StorageError, reference_name};

/// Names of unpublished files start with this.
const TEMPORARY_PREFIX: &str = ".tmp.";

/// The largest object read: canonical LWIR of a document as large as lwirc reads.
const MAX_OBJECT: u64 = lwir_spec::document::MAX_BYTES as u64;

/// The largest version reference read.
const MAX_REFERENCE: u64 = 16 * 1024 * 1024;

/// A registry in a directory.
#[derive(Clone, Debug)]
pub struct Directory {
    root: PathBuf,
}

impl Directory {
    /// The registry rooted at `root`; nothing is created until the first write.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn area(&self, area: Area) -> PathBuf {
        self.root.join(area_path(area))
    }

    /// Whether a version can be stored here, checked without storing anything: each area
    /// is a directory this process can write in, or can be created in one (the nearest part
    /// of its path that exists is a writable directory). Says why not.
    fn writable(&self) -> Result<(), String> {
        for area in [self.area(Area::Objects), self.area(Area::Versions)] {
            let mut existing = area.as_path();
            loop {
                match fs::metadata(existing) {
                    Ok(metadata) if metadata.is_dir() => break,
                    Ok(_) => return Err(format!("`{}` is not a directory", existing.display())),
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                        ) =>
                    {
                        existing = match existing.parent() {
                            Some(parent) if !parent.as_os_str().is_empty() => parent,
                            // The current directory itself is gone: nothing to climb to.
                            _ if existing == Path::new(".") => {
                                return Err(format!("cannot read `.`: {e}"));
                            }
                            _ => Path::new("."),
                        };
                    }
                    Err(e) => return Err(format!("cannot read `{}`: {e}", existing.display())),
                }
            }
            // Named like the registry's own temporary files, which nothing reads.
            let probe = existing.join(format!("{TEMPORARY_PREFIX}{}.probe", std::process::id()));
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&probe)
                .map_err(|e| format!("cannot write in `{}`: {e}", existing.display()))?;
            let _ = fs::remove_file(&probe);
        }
        Ok(())
    }

    /// The file `name` of `area`, read as a file a document names
    /// ([`files::read_confined`]): a goal file's template or a draft's version leads here,
    /// and a committed registry directory may hold anything, so a regular file inside the
    /// registry only, never waited on, at most as large as a version's record or LWIR can be.
    fn read(&self, area: Area, name: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let limit = match area {
            Area::Objects => MAX_OBJECT,
            Area::Versions => MAX_REFERENCE,
        };
        let path = area_path(area).join(name);
        match files::read_confined(&self.root, &path, limit) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(error(
                format!("cannot read {}", self.root.join(&path).display()),
                match e {
                    files::ReadError::Io(e) => e,
                    other => io::Error::other(other),
                },
            )),
        }
    }
}

/// Where `area` is in a registry.
fn area_path(area: Area) -> &'static Path {
    match area {
        Area::Objects => Path::new("objects/sha256"),
        Area::Versions => Path::new("versions"),
    }
}

/// `<hex>.<n>` with n ≥ 1 written without leading zeros.
fn registration_name(name: &str) -> Option<(Digest, u32)> {
    let (hex, n) = name.split_once('.')?;
    let digest = Digest::from_hex(hex)?;
    let n: u32 = n.parse().ok()?;
    (n >= 1 && n.to_string() == name[hex.len() + 1..]).then_some((digest, n))
}

fn error(context: String, source: io::Error) -> StorageError {
    StorageError { context, source }
}

/// Writes `bytes` to `dir/name` once, atomically, read-only, without replacing an existing
/// file ([`files::write_once`]).
fn publish(dir: &Path, name: &str, bytes: &[u8]) -> Result<Put, StorageError> {
    files::create_dirs(dir).map_err(|e| error(format!("cannot create {}", dir.display()), e))?;
    let target = dir.join(name);
    match files::write_once(&target, bytes, TEMPORARY_PREFIX) {
        Ok(true) => Ok(Put::Created),
        Ok(false) => Ok(Put::Existed),
        Err(e) => Err(error(format!("cannot write {}", target.display()), e)),
    }
}

impl Storage for Directory {
    fn check_writable(&self) -> Result<(), String> {
        self.writable()
    }

    fn put_object(&self, digest: &Digest, bytes: &[u8]) -> Result<Put, StorageError> {
        publish(&self.area(Area::Objects), digest.hex(), bytes)
    }

    fn object(&self, digest: &Digest) -> Result<Option<Vec<u8>>, StorageError> {
        self.read(Area::Objects, digest.hex())
    }

    fn remove_object(&self, digest: &Digest) -> Result<(), StorageError> {
        let path = self.area(Area::Objects).join(digest.hex());
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(error(format!("cannot remove {}", path.display()), e))
            }
            _ => Ok(()),
        }
    }

    fn put_registration(
        &self,
        version: &Digest,
        n: u32,
        bytes: &[u8],
    ) -> Result<Put, StorageError> {
        publish(
            &self.area(Area::Versions),
            &reference_name(version, n),
            bytes,
        )
    }

    fn registration(&self, version: &Digest, n: u32) -> Result<Option<Vec<u8>>, StorageError> {
        self.read(Area::Versions, &reference_name(version, n))
    }

    fn list(&self, area: Area) -> Result<Vec<Listed>, StorageError> {
        let dir = self.area(area);
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(error(format!("cannot list {}", dir.display()), e)),
        };
        let mut listed = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| error(format!("cannot list {}", dir.display()), e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            listed.push(if let Some(digest) = Digest::from_hex(&name) {
                Listed::Named(digest)
            } else if let Some((digest, n)) = registration_name(&name) {
                Listed::Registration(digest, n)
            } else if name.starts_with(TEMPORARY_PREFIX) {
                Listed::Temporary(name)
            } else {
                Listed::Unexpected(name)
            });
        }
        Ok(listed)
    }

    fn location(&self, area: Area, name: &str) -> String {
        match area {
            Area::Objects => format!("objects/sha256/{name}"),
            Area::Versions => format!("versions/{name}"),
        }
    }
}
