//! The registry: validated drafts stored as immutable, content-addressed workflow versions,
//! with the capability snapshot each version pins ([`dependencies`]) and its drift against
//! today's definition ([`drift`]).
//!
//! # Model
//! Two kinds of stored thing, both write-once:
//! - **objects**, named by the SHA-256 of their bytes: the canonical (RFC 8785) LWIR of each
//!   version, whose digest *is* the WorkflowVersion, and each version's registration
//!   [`Record`];
//! - **versions**, one small reference per WorkflowVersion, naming its record object:
//!   `{"record":"sha256:…","version":"sha256:…"}` in canonical form.
//!
//! Registering stores the LWIR object, then the record object, then publishes the version
//! reference. Publishing never replaces: of two processes registering the same LWIR at once,
//! one publishes and the other finds its reference and answers as for a repeated
//! registration (idempotent when the snapshots agree, refused when they differ). A process
//! that dies before publishing leaves at most an unreferenced object, which [`Registry::verify`]
//! reports as an orphan. Every read re-hashes what it read and refuses bytes whose hash is
//! not their name.
//!
//! # Storage boundary
//! [`Storage`] is everything the registry needs from where the bytes live: put/get an object
//! by digest, publish/get a version reference without replacing, list both. [`Directory`]
//! implements it on a local directory, [`Oci`] on an OCI distribution registry — objects
//! are blobs addressed by digest, a version reference is a manifest tagged
//! `sha256-<hex>` that lists the two blobs (write-once by a check before the put) — and
//! [`AnyStorage`] is either, as `--registry` names it.

pub mod dependencies;
mod directory;
pub mod drift;
pub mod oci;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::SystemTime;

use lwir_spec::Origin;
use lwir_spec::canon::{canonical_bytes, sha256_of};
use lwir_spec::ir::{Definition, Draft};
use lwir_spec::time::rfc3339;
use lwir_validators::pipeline::Validation;
use serde::{Deserialize, Serialize};

pub use directory::Directory;
pub use oci::{Oci, OciUrl};

use crate::dependencies::{
    Change, Interface, ModelSlotSnapshot, Snapshot, ToolSchemas, ToolSnapshot, compare,
};

/// The format tag of a registration record.
pub const RECORD_FORMAT: &str = "lwir.registration/1";

/// A SHA-256 digest: the name of an object, and (for canonical LWIR) a WorkflowVersion.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    hex: String,
}

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let text = sha256_of(bytes);
        Self {
            hex: text["sha256:".len()..].to_owned(),
        }
    }

    /// Parses `sha256:<64 lowercase hex digits>`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::from_hex(text.strip_prefix("sha256:")?)
    }

    /// Parses 64 lowercase hex digits.
    pub fn from_hex(hex: &str) -> Option<Self> {
        (hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))).then(
            || Self {
                hex: hex.to_owned(),
            },
        )
    }

    /// The 64 hex digits.
    pub fn hex(&self) -> &str {
        &self.hex
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex)
    }
}

/// What a registration stores beside the LWIR: what it was validated against and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// [`RECORD_FORMAT`].
    pub format: String,
    /// The WorkflowVersion, `sha256:<hex>`.
    pub version: String,
    /// The workflow's name (the draft's `workflow`).
    pub workflow: String,
    /// When it was registered, RFC 3339 in UTC.
    pub registered_at: String,
    /// The lwirc that registered it.
    pub lwirc_version: String,
    /// Per referenced tool: id and the hashes of its description, input and output schema.
    pub capability_snapshot: Vec<ToolSnapshot>,
    /// Per referenced model slot: id, model, quality, capabilities, context size and hash.
    pub model_snapshot: Vec<ModelSlotSnapshot>,
    /// The definition's `input` and `output` schemas, whole (absent in records written
    /// before lwirc kept them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<Interface>,
    /// The referenced tools' `description`, `input` and `output`, whole, by tool id, so
    /// that what runs the version can check the values flowing into and out of each tool
    /// (absent in records written before lwirc kept them: [`ToolSchemas::of_pinned`]
    /// takes them from the definition the version was compiled against).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<BTreeMap<String, ToolSchemas>>,
    /// The validation result: `summary` and `findings` (its warnings) in the shape of the
    /// JSON report of `lwirc validate`.
    pub validation: serde_json::Value,
    /// The record this registration replaces as the one that counts (`lwirc register
    /// --rebase`: the same LWIR re-validated against a changed definition); absent for a
    /// version's first registration. Every earlier record stays stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// The compiled expression plan: `{ "cost": total, "types": [ … ], "plan": [ { pointer,
    /// kind, source, nodes, cost } … ] }`, every expression and template of the draft typed,
    /// with its static cost bound (`null` in records written before expressions were
    /// compiled). `nodes` is flat (children first, by index; the root last) and each node's
    /// `type` indexes `types`, so the record grows linearly with the draft.
    pub expressions: Option<serde_json::Value>,
}

impl Record {
    /// The capability and model-slot snapshot it pins.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            tools: self.capability_snapshot.clone(),
            model_slots: self.model_snapshot.clone(),
            interface: self.interface.clone(),
        }
    }
}

/// A draft ready to be stored: its canonical bytes and its record.
#[derive(Clone, Debug)]
pub struct Registration {
    /// The RFC 8785 canonical bytes of the draft.
    pub lwir: Vec<u8>,
    /// Its record.
    pub record: Record,
}

/// Why a validation cannot be registered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NotRegistrable {
    /// The draft has errors (a draft with a misspelt tool id).
    #[error("the draft has errors")]
    HasErrors,
    /// It was validated without a definition (`lwirc validate draft.json` without `-d`), or
    /// the definition could not be read.
    #[error("the draft was not validated against a readable definition")]
    NoDefinition,
}

impl Registration {
    /// The registration of a draft that `validation` found clean against its definition,
    /// stamped `registered_at`.
    pub fn new(validation: &Validation, registered_at: SystemTime) -> Result<Self, NotRegistrable> {
        if validation.has_errors() {
            return Err(NotRegistrable::HasErrors);
        }
        let draft_doc = validation
            .document(Origin::Draft)
            .ok_or(NotRegistrable::HasErrors)?;
        let definition_doc = validation
            .definition
            .as_ref()
            .and_then(|_| validation.document(Origin::Definition))
            .ok_or(NotRegistrable::NoDefinition)?;
        let draft = Draft::new(draft_doc.root());
        let definition = Definition::new(definition_doc.root());
        let snapshot = Snapshot::of_draft(&definition, &draft);
        let tools = snapshot
            .tools
            .iter()
            .filter_map(|t| Some((t.id.clone(), ToolSchemas::of(definition.tool(&t.id)?))))
            .collect();
        let lwir = canonical_bytes(draft_doc.root());
        let report = lwir_render::json::value(validation);
        let record = Record {
            format: RECORD_FORMAT.to_owned(),
            version: sha256_of(&lwir),
            workflow: draft
                .workflow()
                .and_then(lwir_spec::Node::as_str)
                .unwrap_or_default()
                .to_owned(),
            registered_at: rfc3339(registered_at),
            lwirc_version: env!("CARGO_PKG_VERSION").to_owned(),
            capability_snapshot: snapshot.tools,
            model_snapshot: snapshot.model_slots,
            interface: snapshot.interface,
            tools: Some(tools),
            supersedes: None,
            validation: serde_json::json!({
                "summary": report["summary"],
                "findings": report["findings"],
            }),
            expressions: Some(serde_json::json!({
                "cost": validation.plan.cost(),
                "types": validation.plan.types,
                "plan": validation.plan.entries,
            })),
        };
        Ok(Self { lwir, record })
    }
}

/// A registered version: its digest, its record and where the record is stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The WorkflowVersion.
    pub version: Digest,
    /// The digest of the record object.
    pub record_digest: Digest,
    /// The record.
    pub record: Record,
    /// Which registration of the version this is: 0 for the first, n for the n-th
    /// `--rebase`. The highest is the one that counts.
    pub registration: u32,
}

/// What [`Registry::register`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum Registered {
    /// Stored now.
    New(Entry),
    /// Already registered with the same snapshot; nothing was written.
    Already(Entry),
    /// Registered again against a new snapshot (`--rebase`); the earlier registrations stay.
    Rebased {
        /// The new registration.
        entry: Entry,
        /// The snapshot differences from the registration it supersedes.
        changes: Vec<Change>,
    },
}

/// A registry operation that could not be done.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Stored bytes are not what their name says: a flipped byte in `objects/sha256/<hex>`,
    /// a version reference that is not `{"record":…,"version":…}` for its name, a record
    /// that does not parse.
    #[error("{location} is corrupt: {detail}; run `lwirc registry verify`")]
    Corrupt {
        /// Which stored thing.
        location: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A version reference names an object that is not there (deleted by hand).
    #[error("{location} is missing (needed by {version}); run `lwirc registry verify`")]
    Missing {
        /// Which stored thing.
        location: String,
        /// The version that needs it.
        version: Digest,
    },
    /// What would be stored could not be read back (a record nested past the JSON reader's
    /// depth limit); nothing was published.
    #[error("{version} was not registered: {detail}")]
    Unreadable {
        /// The version.
        version: Digest,
        /// What would not read back.
        detail: String,
    },
    /// `registry show 0000` when no version starts with `0000`.
    #[error("no registered version matches `{prefix}`")]
    NotFound {
        /// The prefix as given.
        prefix: String,
    },
    /// `registry show a` when several versions start with `a`.
    #[error("`{prefix}` is ambiguous: it matches {}", candidates.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    Ambiguous {
        /// The prefix as given.
        prefix: String,
        /// Every version it matches.
        candidates: Vec<Digest>,
    },
    /// `registry show xyz`: not hex digits.
    #[error(
        "`{prefix}` is not a version: give `sha256:` and/or hex digits (`registry show` also \
         takes a registered workflow's name; see lwirc registry list)"
    )]
    InvalidPrefix {
        /// The text as given.
        prefix: String,
    },
    /// The same LWIR was registered before against a different capability or model
    /// snapshot (a tool's input schema changed between the two registrations).
    #[error("{version} is already registered against a different snapshot: {}", changes.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    SnapshotMismatch {
        /// The version.
        version: Digest,
        /// How today's snapshot differs from the registered one.
        changes: Vec<Change>,
    },
    /// The storage failed (permission denied, disk full).
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// A storage operation failed.
#[derive(Debug, thiserror::Error)]
#[error("{context}: {source}")]
pub struct StorageError {
    /// What was being done, to what.
    pub context: String,
    /// Why it failed.
    #[source]
    pub source: std::io::Error,
}

/// Whether a write-once put created the thing or found it there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Put {
    /// Written now.
    Created,
    /// Already present; left as it was.
    Existed,
}

/// The two areas of a registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Area {
    /// Content-addressed objects.
    Objects,
    /// Version references.
    Versions,
}

/// A name found in an area.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listed {
    /// A digest-named object or version (a version's first registration).
    Named(Digest),
    /// A later registration of a version: `<hex>.<n>`, n ≥ 1 (`lwirc register --rebase`).
    Registration(Digest, u32),
    /// A write in progress, or left by a process that died before publishing it (a
    /// directory's temporary file; a storage whose writes are atomic has none).
    Temporary(String),
    /// Something that is neither.
    Unexpected(String),
}

/// Where the registry's bytes live. Implementations must make puts write-once (never
/// replace an existing name) and atomic (a name is either absent or has all its bytes).
pub trait Storage {
    /// Stores `bytes` as the object `digest` (the caller's digest of them) unless it exists.
    fn put_object(&self, digest: &Digest, bytes: &[u8]) -> Result<Put, StorageError>;
    /// The bytes of object `digest`, unverified; `None` when absent.
    fn object(&self, digest: &Digest) -> Result<Option<Vec<u8>>, StorageError>;
    /// Deletes object `digest` (used only for a record that lost a publishing race, which
    /// nothing references). A storage that does not delete (an OCI registry leaves
    /// unreferenced blobs to its garbage collection) may keep it and succeed.
    fn remove_object(&self, digest: &Digest) -> Result<(), StorageError>;
    /// Publishes the reference of `version` unless one exists: its registration 0.
    fn put_version(&self, version: &Digest, bytes: &[u8]) -> Result<Put, StorageError> {
        self.put_registration(version, 0, bytes)
    }
    /// The reference of `version`; `None` when absent: its registration 0.
    fn version(&self, version: &Digest) -> Result<Option<Vec<u8>>, StorageError> {
        self.registration(version, 0)
    }
    /// Publishes the reference of registration `n` of `version` unless one exists: 0 is the
    /// version's own ([`Storage::put_version`]), n ≥ 1 a later registration.
    fn put_registration(&self, version: &Digest, n: u32, bytes: &[u8])
    -> Result<Put, StorageError>;
    /// The reference of registration `n` of `version` (0: the version's own); `None` when
    /// absent.
    fn registration(&self, version: &Digest, n: u32) -> Result<Option<Vec<u8>>, StorageError>;
    /// Every name in `area`.
    fn list(&self, area: Area) -> Result<Vec<Listed>, StorageError>;
    /// How to name `name` of `area` to a person: a path for a directory
    /// (`objects/sha256/<hex>`), a reference for an OCI registry (`oci://host/repo@sha256:…`).
    fn location(&self, area: Area, name: &str) -> String;
    /// Whether a version could be stored now, checked without storing one; why not. A
    /// session asks before its first planner call, so that an unusable registry is not
    /// found out after every call is spent.
    fn check_writable(&self) -> Result<(), String>;
}

/// The registry over a storage.
#[derive(Debug)]
pub struct Registry<S = Directory> {
    storage: S,
}

impl Registry<Directory> {
    /// The registry in directory `dir` (created on the first registration).
    pub fn at(dir: impl Into<std::path::PathBuf>) -> Self {
        Self::new(Directory::new(dir))
    }
}

/// A registry anywhere lwirc can keep one: a directory, or an OCI distribution registry.
#[derive(Debug)]
pub enum AnyStorage {
    /// A local directory.
    Directory(Directory),
    /// A repository of an OCI distribution registry.
    Oci(Box<Oci>),
}

impl AnyStorage {
    /// The storage `location` names: `oci://HOST[:PORT]/REPOSITORY` (`oci+http://` for a
    /// plain-HTTP registry), else a directory path.
    pub fn parse(location: &str) -> Result<Self, String> {
        match OciUrl::parse(location) {
            Some(url) => Ok(AnyStorage::Oci(Box::new(Oci::new(
                url?,
                oci::wait_from_env()?,
            )))),
            None => Ok(AnyStorage::Directory(Directory::new(location))),
        }
    }

    /// Where it is, as a person writes it.
    pub fn display(&self) -> String {
        match self {
            AnyStorage::Directory(d) => format!("`{}`", d.root().display()),
            AnyStorage::Oci(o) => o.url().display(),
        }
    }
}

impl AnyStorage {
    /// The storage itself, whichever it is.
    fn inner(&self) -> &dyn Storage {
        match self {
            AnyStorage::Directory(s) => s,
            AnyStorage::Oci(s) => &**s,
        }
    }
}

impl Storage for AnyStorage {
    fn put_object(&self, digest: &Digest, bytes: &[u8]) -> Result<Put, StorageError> {
        self.inner().put_object(digest, bytes)
    }
    fn object(&self, digest: &Digest) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner().object(digest)
    }
    fn remove_object(&self, digest: &Digest) -> Result<(), StorageError> {
        self.inner().remove_object(digest)
    }
    fn put_registration(
        &self,
        version: &Digest,
        n: u32,
        bytes: &[u8],
    ) -> Result<Put, StorageError> {
        self.inner().put_registration(version, n, bytes)
    }
    fn registration(&self, version: &Digest, n: u32) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner().registration(version, n)
    }
    fn list(&self, area: Area) -> Result<Vec<Listed>, StorageError> {
        self.inner().list(area)
    }
    fn location(&self, area: Area, name: &str) -> String {
        self.inner().location(area, name)
    }
    fn check_writable(&self) -> Result<(), String> {
        self.inner().check_writable()
    }
}

/// The variable that names the registry when no flag or setting does.
pub const REGISTRY_VARIABLE: &str = "LWIR_REGISTRY";

/// The registry when nothing names one, relative to where lwirc runs (or the workspace).
pub const DEFAULT_LOCATION: &str = ".lwir/registry";

/// Where the registry is: `given` (a `--registry` flag, an editor setting), else
/// `$LWIR_REGISTRY`, else [`DEFAULT_LOCATION`]. A relative directory is taken relative to
/// `base` when there is one (an editor's workspace root); an `oci://` URL is kept as it is.
/// The one rule for every front end, so that the CLI and the editor read the same registry.
pub fn location(
    given: Option<&std::path::Path>,
    base: Option<&std::path::Path>,
) -> std::path::PathBuf {
    let named = given.map(std::path::Path::to_path_buf).or_else(|| {
        std::env::var_os(REGISTRY_VARIABLE)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    });
    let location = named.unwrap_or_else(|| std::path::PathBuf::from(DEFAULT_LOCATION));
    let is_url = OciUrl::parse(&location.to_string_lossy()).is_some();
    match base {
        Some(base) if location.is_relative() && !is_url => base.join(location),
        _ => location,
    }
}

/// The registry `location` names (see [`AnyStorage::parse`]).
pub fn open(location: &str) -> Result<Registry<AnyStorage>, String> {
    AnyStorage::parse(location).map(Registry::new)
}

/// The reference of one version: the canonical JSON of this struct (fields in JCS order).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct VersionRef {
    record: String,
    version: String,
}

impl<S: Storage> Registry<S> {
    /// The registry over `storage`.
    pub fn new(storage: S) -> Self {
        Self { storage }
    }

    /// The storage.
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// Whether a version could be registered now (see [`Storage::check_writable`]).
    pub fn check_writable(&self) -> Result<(), String> {
        self.storage.check_writable()
    }

    /// Stores `registration`: idempotent for the same LWIR and snapshot; for the same LWIR
    /// and a different snapshot refused ([`RegistryError::SnapshotMismatch`]), or with
    /// `rebase` registered again: a new record that supersedes the latest one, every earlier
    /// record kept ([`Registered::Rebased`]).
    pub fn register(
        &self,
        registration: &Registration,
        rebase: bool,
    ) -> Result<Registered, RegistryError> {
        let version = Digest::of(&registration.lwir);
        let snapshot = registration.record.snapshot();
        if let Some(existing) = self.entry(&version)? {
            return self.settle(existing, registration, &snapshot, rebase);
        }
        let record_bytes = encode_record(&registration.record, &version)?;
        let reread = lwir_spec::document::read(registration.lwir.clone());
        if let Some(finding) = reread.findings.first() {
            return Err(RegistryError::Unreadable {
                version,
                detail: format!(
                    "its canonical form would not read back ({}: {})",
                    finding.code, finding.message
                ),
            });
        }
        self.put_verified(&version, &registration.lwir)?;
        let record_digest = Digest::of(&record_bytes);
        self.put_verified(&record_digest, &record_bytes)?;
        let reference = version_ref(&version, &record_digest);
        match self.storage.put_version(&version, &reference)? {
            Put::Created => Ok(Registered::New(Entry {
                version,
                record_digest,
                record: registration.record.clone(),
                registration: 0,
            })),
            Put::Existed => {
                // Another process published this version first. Its record is the one that
                // counts; ours is referenced by nothing unless it is byte-identical to it.
                let existing = self.published(&version)?;
                if existing.record_digest != record_digest {
                    self.storage.remove_object(&record_digest)?;
                }
                self.settle(existing, registration, &snapshot, rebase)
            }
        }
    }

    /// The entry of a version that was just seen published.
    fn published(&self, version: &Digest) -> Result<Entry, RegistryError> {
        self.entry(version)?.ok_or_else(|| RegistryError::Corrupt {
            location: self.storage.location(Area::Versions, version.hex()),
            detail: "published but unreadable".into(),
        })
    }

    fn settle(
        &self,
        mut existing: Entry,
        registration: &Registration,
        snapshot: &Snapshot,
        rebase: bool,
    ) -> Result<Registered, RegistryError> {
        // Bounded: each round loses a race to a process that published a registration.
        for _ in 0..64 {
            let pinned = existing.record.snapshot();
            if pinned.agrees_with(snapshot) {
                return Ok(Registered::Already(existing));
            }
            let mut changes = compare(&pinned, snapshot);
            if changes.is_empty() {
                // Same facts in another order (capabilities listed differently).
                changes = pinned
                    .model_slots
                    .iter()
                    .map(|m| Change::SlotOtherwise { slot: m.id.clone() })
                    .collect();
            }
            if !rebase {
                return Err(RegistryError::SnapshotMismatch {
                    version: existing.version,
                    changes,
                });
            }
            let version = existing.version.clone();
            let mut record = registration.record.clone();
            record.supersedes = Some(existing.record_digest.to_string());
            let record_bytes = encode_record(&record, &version)?;
            let record_digest = Digest::of(&record_bytes);
            self.put_verified(&record_digest, &record_bytes)?;
            let n = existing.registration + 1;
            let reference = version_ref(&version, &record_digest);
            match self.storage.put_registration(&version, n, &reference)? {
                Put::Created => {
                    let entry = Entry {
                        version,
                        record_digest,
                        record,
                        registration: n,
                    };
                    return Ok(Registered::Rebased { entry, changes });
                }
                Put::Existed => {
                    existing = self.published(&version)?;
                    if existing.record_digest != record_digest {
                        self.storage.remove_object(&record_digest)?;
                    }
                }
            }
        }
        Err(RegistryError::Corrupt {
            location: self
                .storage
                .location(Area::Versions, existing.version.hex()),
            detail: "registrations keep changing while this one is written".into(),
        })
    }

    /// Puts an object; when one of that name exists, checks that its bytes hash to it.
    fn put_verified(&self, digest: &Digest, bytes: &[u8]) -> Result<(), RegistryError> {
        if self.storage.put_object(digest, bytes)? == Put::Existed {
            self.object(digest, digest)?;
        }
        Ok(())
    }

    /// The verified bytes of object `digest`, needed by `version`.
    fn object(&self, digest: &Digest, version: &Digest) -> Result<Vec<u8>, RegistryError> {
        let location = self.storage.location(Area::Objects, digest.hex());
        let bytes = self
            .storage
            .object(digest)?
            .ok_or_else(|| RegistryError::Missing {
                location: location.clone(),
                version: version.clone(),
            })?;
        let actual = Digest::of(&bytes);
        if actual != *digest {
            return Err(RegistryError::Corrupt {
                location,
                detail: format!("its bytes hash to {actual}"),
            });
        }
        Ok(bytes)
    }

    /// The registered version `version` as it counts now — its latest registration — its
    /// references, records and LWIR verified; `None` when it is not registered.
    pub fn entry(&self, version: &Digest) -> Result<Option<Entry>, RegistryError> {
        Ok(self.registrations(version)?.pop())
    }

    /// Every registration of `version`, the first first, each verified, each superseding
    /// the one before; empty when it is not registered.
    pub fn registrations(&self, version: &Digest) -> Result<Vec<Entry>, RegistryError> {
        let mut entries: Vec<Entry> = Vec::new();
        for n in 0u32.. {
            let Some(entry) = self.registration(version, n)? else {
                break;
            };
            if n == 0 {
                // The LWIR is the same object for every registration: hashed once.
                self.object(version, version)?;
            }
            let expected = entries.last().map(|e| e.record_digest.to_string());
            if entry.record.supersedes != expected {
                return Err(RegistryError::Corrupt {
                    location: self.reference_location(version, n),
                    detail: match expected {
                        Some(previous) => format!("its record does not supersede {previous}"),
                        None => "the first registration's record supersedes another".into(),
                    },
                });
            }
            entries.push(entry);
        }
        Ok(entries)
    }

    fn reference_location(&self, version: &Digest, n: u32) -> String {
        self.storage
            .location(Area::Versions, &reference_name(version, n))
    }

    /// The stored reference of registration `n` of `version` (0: the first), unverified.
    fn reference_bytes(&self, version: &Digest, n: u32) -> Result<Option<Vec<u8>>, StorageError> {
        self.storage.registration(version, n)
    }

    /// Registration `n` of `version`, its reference and record verified (the LWIR is left
    /// to [`Registry::registrations`]); `None` when there is none.
    fn registration(&self, version: &Digest, n: u32) -> Result<Option<Entry>, RegistryError> {
        let Some(bytes) = self.reference_bytes(version, n)? else {
            return Ok(None);
        };
        let location = self.reference_location(version, n);
        let corrupt = |detail: String| RegistryError::Corrupt {
            location: location.clone(),
            detail,
        };
        let reference: VersionRef = serde_json::from_slice(&bytes)
            .map_err(|e| corrupt(format!("not a version reference ({e})")))?;
        let record_digest = Digest::parse(&reference.record)
            .ok_or_else(|| corrupt(format!("`{}` is not a digest", reference.record)))?;
        if reference.version != version.to_string() {
            return Err(corrupt(format!(
                "it is the reference of {}, not of {version}",
                reference.version
            )));
        }
        if version_ref(version, &record_digest) != bytes {
            return Err(corrupt(
                "not the canonical reference of this version".into(),
            ));
        }
        let record_bytes = self.object(&record_digest, version)?;
        let record: Record =
            serde_json::from_slice(&record_bytes).map_err(|e| RegistryError::Corrupt {
                location: self.storage.location(Area::Objects, record_digest.hex()),
                detail: format!("not a registration record ({e})"),
            })?;
        if record.version != version.to_string() {
            // The record object is intact (it hashed to its name); the reference that
            // names it for this version is what is wrong.
            return Err(corrupt(format!(
                "it names {record_digest}, which is the record of {}, not of {version}",
                record.version
            )));
        }
        Ok(Some(Entry {
            version: version.clone(),
            record_digest,
            record,
            registration: n,
        }))
    }

    /// The bytes of `entry`'s record as stored, verified.
    pub fn record_bytes(&self, entry: &Entry) -> Result<Vec<u8>, RegistryError> {
        self.object(&entry.record_digest, &entry.version)
    }

    /// The canonical LWIR of `version`, verified.
    pub fn lwir(&self, version: &Digest) -> Result<Vec<u8>, RegistryError> {
        self.object(version, version)
    }

    /// The one registered version that `text` (`sha256:` optional, then hex digits, any
    /// case) is a prefix of.
    pub fn resolve(&self, text: &str) -> Result<Digest, RegistryError> {
        let trimmed = text.trim();
        let prefix = trimmed
            .strip_prefix("sha256:")
            .unwrap_or(trimmed)
            .to_ascii_lowercase();
        if prefix.is_empty() || prefix.len() > 64 || !prefix.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(RegistryError::InvalidPrefix {
                prefix: text.to_owned(),
            });
        }
        let mut candidates: Vec<Digest> = self
            .versions()?
            .into_iter()
            .filter(|v| v.hex().starts_with(&prefix))
            .collect();
        match candidates.len() {
            0 => Err(RegistryError::NotFound {
                prefix: text.to_owned(),
            }),
            1 => Ok(candidates.remove(0)),
            _ => Err(RegistryError::Ambiguous {
                prefix: text.to_owned(),
                candidates,
            }),
        }
    }

    /// [`Registry::resolve`], or else, when `text` names a registered workflow (the
    /// definition's `name`, which is also its OCI tag), that workflow's latest version (the
    /// last registered).
    pub fn resolve_or_latest(&self, text: &str) -> Result<Digest, RegistryError> {
        match self.resolve(text) {
            Ok(version) => Ok(version),
            Err(e @ (RegistryError::InvalidPrefix { .. } | RegistryError::NotFound { .. })) => {
                let (entries, _) = self.list()?;
                entries
                    .into_iter()
                    .rev()
                    .find(|entry| entry.record.workflow == text.trim())
                    .map(|entry| entry.version)
                    .ok_or(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Every registered version, sorted.
    fn versions(&self) -> Result<Vec<Digest>, RegistryError> {
        let mut versions: Vec<Digest> = self
            .storage
            .list(Area::Versions)?
            .into_iter()
            .filter_map(|l| match l {
                Listed::Named(d) => Some(d),
                _ => None,
            })
            .collect();
        versions.sort();
        Ok(versions)
    }

    /// Copies every registration of every version to `to`: each read and verified here,
    /// written there write-once (objects first, references last, as `register` writes
    /// them), then read back from there and verified again. A version already there with
    /// the same registrations is left as it is; one whose registrations differ there is a
    /// problem, as is one that does not verify here. Records are copied as they are (the
    /// version, its snapshot and when it was registered stay what they were).
    pub fn copy_to<T: Storage>(&self, to: &Registry<T>) -> Result<CopyReport, RegistryError> {
        let mut report = CopyReport::default();
        for version in self.versions()? {
            match self.copy_version(&version, to) {
                Ok(Copied::New(workflow)) => report.copied.push((version, workflow)),
                Ok(Copied::Present(workflow)) => report.present.push((version, workflow)),
                Ok(Copied::Gone) => {}
                Err(RegistryError::Storage(e)) => return Err(e.into()),
                Err(e) => report.problems.push(e),
            }
        }
        Ok(report)
    }

    fn copy_version<T: Storage>(
        &self,
        version: &Digest,
        to: &Registry<T>,
    ) -> Result<Copied, RegistryError> {
        let entries = self.registrations(version)?;
        let Some(latest) = entries.last() else {
            return Ok(Copied::Gone);
        };
        let workflow = latest.record.workflow.clone();
        let theirs = to.registrations(version)?;
        let mut wrote = false;
        for entry in &entries {
            let n = entry.registration;
            if let Some(there) = theirs.iter().find(|e| e.registration == n) {
                if there.record_digest != entry.record_digest {
                    return Err(RegistryError::Corrupt {
                        location: to.reference_location(version, n),
                        detail: format!(
                            "registration {} of this version there names {}, here {}",
                            n + 1,
                            there.record_digest,
                            entry.record_digest
                        ),
                    });
                }
                continue;
            }
            if n == 0 {
                to.put_verified(version, &self.lwir(version)?)?;
            }
            to.put_verified(&entry.record_digest, &self.record_bytes(entry)?)?;
            let reference = version_ref(version, &entry.record_digest);
            let put = to.storage.put_registration(version, n, &reference)?;
            if put == Put::Existed
                && to.reference_bytes(version, n)?.as_deref() != Some(&reference[..])
            {
                return Err(RegistryError::Corrupt {
                    location: to.reference_location(version, n),
                    detail: "another registration of this version was published there meanwhile"
                        .into(),
                });
            }
            wrote = true;
        }
        // Read back from the destination, verified, as any reader will.
        let copied = to.registrations(version)?;
        let same = copied.len() == entries.len()
            && copied
                .iter()
                .zip(&entries)
                .all(|(a, b)| a.record_digest == b.record_digest);
        if !same {
            return Err(RegistryError::Corrupt {
                location: to.reference_location(version, 0),
                detail: "the copy does not read back as the original".into(),
            });
        }
        Ok(if wrote {
            Copied::New(workflow)
        } else {
            Copied::Present(workflow)
        })
    }

    /// Every registered version that reads back intact, oldest first, and the error of
    /// each that does not.
    pub fn list(&self) -> Result<(Vec<Entry>, Vec<RegistryError>), RegistryError> {
        let mut entries = Vec::new();
        let mut problems = Vec::new();
        for version in self.versions()? {
            match self.entry(&version) {
                Ok(Some(entry)) => entries.push(entry),
                // Listed, then gone: nothing to show.
                Ok(None) => {}
                Err(RegistryError::Storage(e)) => return Err(e.into()),
                Err(e) => problems.push(e),
            }
        }
        entries.sort_by(|a, b| {
            (&a.record.registered_at, &a.version).cmp(&(&b.record.registered_at, &b.version))
        });
        Ok((entries, problems))
    }

    /// Re-reads and re-hashes everything: every version reference, record and LWIR object,
    /// and every object, referenced or not.
    pub fn verify(&self) -> Result<Verification, RegistryError> {
        let mut report = Verification::default();
        // Objects needed by an intact-looking reference, with the version that needs them.
        let mut needed: BTreeMap<Digest, Digest> = BTreeMap::new();
        // Later registrations (`<hex>.<n>`) listed, and those a version's chain covers.
        let mut later: Vec<(Digest, u32)> = Vec::new();
        let mut covered: BTreeSet<(Digest, u32)> = BTreeSet::new();
        for listed in self.storage.list(Area::Versions)? {
            let version = match listed {
                Listed::Named(d) => d,
                Listed::Registration(d, n) => {
                    later.push((d, n));
                    continue;
                }
                Listed::Temporary(name) => {
                    report.push(IssueKind::Temporary, Area::Versions, &name, &self.storage);
                    continue;
                }
                Listed::Unexpected(name) => {
                    report.push(IssueKind::Unexpected, Area::Versions, &name, &self.storage);
                    continue;
                }
            };
            match self.registrations(&version) {
                Ok(entries) if entries.is_empty() => {}
                Ok(entries) => {
                    report.versions += 1;
                    needed.insert(version.clone(), version.clone());
                    for entry in entries {
                        covered.insert((version.clone(), entry.registration));
                        needed.insert(entry.record_digest, version.clone());
                    }
                }
                Err(RegistryError::Storage(e)) => return Err(e.into()),
                Err(e) => {
                    // Keep what the references name, so the object pass does not also call
                    // them orphans.
                    for n in 0u32.. {
                        let Some(bytes) = self.reference_bytes(&version, n)? else {
                            break;
                        };
                        covered.insert((version.clone(), n));
                        if let Ok(r) = serde_json::from_slice::<VersionRef>(&bytes)
                            && let Some(d) = Digest::parse(&r.record)
                        {
                            needed.insert(d, version.clone());
                        }
                    }
                    needed.insert(version.clone(), version.clone());
                    report.issues.push(Issue::from_error(e));
                }
            }
        }
        for (version, n) in later {
            if !covered.contains(&(version.clone(), n)) {
                report.issues.push(Issue {
                    kind: IssueKind::Unexpected,
                    location: self.reference_location(&version, n),
                    detail: "a later registration that follows no registration of its version"
                        .into(),
                });
            }
        }
        for listed in self.storage.list(Area::Objects)? {
            let digest = match listed {
                Listed::Named(d) => d,
                Listed::Registration(d, n) => {
                    let name = reference_name(&d, n);
                    report.push(IssueKind::Unexpected, Area::Objects, &name, &self.storage);
                    continue;
                }
                Listed::Temporary(name) => {
                    report.push(IssueKind::Temporary, Area::Objects, &name, &self.storage);
                    continue;
                }
                Listed::Unexpected(name) => {
                    report.push(IssueKind::Unexpected, Area::Objects, &name, &self.storage);
                    continue;
                }
            };
            report.objects += 1;
            let location = self.storage.location(Area::Objects, digest.hex());
            if let Some(bytes) = self.storage.object(&digest)? {
                let actual = Digest::of(&bytes);
                if actual != digest && !report.issues.iter().any(|i| i.location == location) {
                    report.issues.push(Issue {
                        kind: IssueKind::Corrupt,
                        location: location.clone(),
                        detail: format!("its bytes hash to {actual}"),
                    });
                }
            }
            if !needed.contains_key(&digest) {
                report.issues.push(Issue {
                    kind: IssueKind::Orphan,
                    location,
                    detail: "referenced by no version (a registration that did not finish, or \
                             one still running)"
                        .into(),
                });
            }
        }
        report
            .issues
            .sort_by(|a, b| (a.kind, &a.location).cmp(&(b.kind, &b.location)));
        report.issues.dedup();
        Ok(report)
    }
}

/// The stored bytes of `record`, refused when they would not read back (nothing is
/// published that lwirc cannot read).
fn encode_record(record: &Record, version: &Digest) -> Result<Vec<u8>, RegistryError> {
    let mut bytes = serde_json::to_vec_pretty(record)
        .expect("a record serialises: strings, numbers and JSON values");
    bytes.push(b'\n');
    if let Err(e) = serde_json::from_slice::<Record>(&bytes) {
        return Err(RegistryError::Unreadable {
            version: version.clone(),
            detail: format!("its registration record would not read back ({e})"),
        });
    }
    Ok(bytes)
}

/// The name of the reference of registration `n` of `version`: `<hex>` for the first,
/// `<hex>.<n>` for the n-th `--rebase`.
fn reference_name(version: &Digest, n: u32) -> String {
    match n {
        0 => version.hex().to_owned(),
        n => format!("{}.{n}", version.hex()),
    }
}

fn version_ref(version: &Digest, record: &Digest) -> Vec<u8> {
    serde_json::to_vec(&VersionRef {
        record: record.to_string(),
        version: version.to_string(),
    })
    .expect("two strings serialise")
}

/// The outcome of [`Registry::copy_to`].
#[derive(Debug, Default)]
pub struct CopyReport {
    /// Versions written to the destination (with their workflow).
    pub copied: Vec<(Digest, String)>,
    /// Versions that were there already, the same.
    pub present: Vec<(Digest, String)>,
    /// Versions that do not verify here, or differ there.
    pub problems: Vec<RegistryError>,
}

enum Copied {
    New(String),
    Present(String),
    Gone,
}

/// The outcome of [`Registry::verify`].
#[derive(Debug, Default)]
pub struct Verification {
    /// Versions whose reference, record and LWIR all verified.
    pub versions: usize,
    /// Objects hashed.
    pub objects: usize,
    /// Everything found, problems first.
    pub issues: Vec<Issue>,
}

impl Verification {
    /// Whether anything is corrupt or missing (orphans and temporary files are not
    /// problems: nothing refers to them).
    pub fn has_problems(&self) -> bool {
        self.issues.iter().any(|i| i.kind.is_problem())
    }

    fn push(&mut self, kind: IssueKind, area: Area, name: &str, storage: &impl Storage) {
        let detail = match kind {
            IssueKind::Temporary => {
                "an unpublished write: in progress, or left by a process that died; never read"
            }
            _ => "not a name the registry uses; ignored",
        };
        self.issues.push(Issue {
            kind,
            location: storage.location(area, name),
            detail: detail.into(),
        });
    }
}

/// One thing [`Registry::verify`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// What kind of thing.
    pub kind: IssueKind,
    /// Where.
    pub location: String,
    /// In words.
    pub detail: String,
}

impl Issue {
    fn from_error(error: RegistryError) -> Self {
        match error {
            RegistryError::Missing { location, version } => Issue {
                kind: IssueKind::Missing,
                location,
                detail: format!("needed by {version}"),
            },
            RegistryError::Corrupt { location, detail } => Issue {
                kind: IssueKind::Corrupt,
                location,
                detail,
            },
            other => Issue {
                kind: IssueKind::Corrupt,
                location: String::new(),
                detail: other.to_string(),
            },
        }
    }
}

/// Kinds of [`Issue`], problems first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum IssueKind {
    /// Bytes that do not hash to their name, or a reference or record that does not parse.
    Corrupt,
    /// An object a version needs is not there.
    Missing,
    /// An object no version refers to.
    Orphan,
    /// An unpublished temporary file.
    Temporary,
    /// A file the registry does not use.
    Unexpected,
}

impl IssueKind {
    /// Whether it makes the registry unsound.
    pub fn is_problem(self) -> bool {
        matches!(self, IssueKind::Corrupt | IssueKind::Missing)
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            IssueKind::Corrupt => "corrupt",
            IssueKind::Missing => "missing",
            IssueKind::Orphan => "orphan",
            IssueKind::Temporary => "temporary",
            IssueKind::Unexpected => "unexpected",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_parse_only_their_own_form() {
        let d = Digest::of(b"x");
        assert_eq!(Digest::parse(&d.to_string()), Some(d.clone()));
        assert_eq!(Digest::parse(d.hex()), None);
        assert_eq!(Digest::from_hex(&d.hex().to_uppercase()), None);
        assert_eq!(Digest::from_hex("abc"), None);
    }
}
