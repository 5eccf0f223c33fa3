//! The compile session — [`compile`]: a definition, a planner and a registry in; a registered
//! version or an attributed failure out, event-logged — and what it and `lwirc repair` add
//! to the repair loop of `lwir-repair` (`lwir_repair::repair_loop`, which validates, fixes and
//! asks the planner, but registers and logs nothing of its own): the validation pipeline as
//! the loop's checker, the bounds from the definition, the session's first event.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use lwir_registry::{
    Entry, NotRegistrable, Registered, Registration, Registry, RegistryError, Storage, StorageError,
};
use lwir_repair::events::{EventLog, LogError, SessionEvent, SessionFailed, WorkflowRegistered};
use lwir_repair::files::write_atomically;
use lwir_repair::fixes::{Check, Checked};
use lwir_repair::harness::Planner;
use lwir_repair::journal::{Journal, JournalError};
use lwir_repair::manifest::{CapabilityDriftError, PlannerManifest};
use lwir_repair::process::Limits;
use lwir_repair::repair_loop::{Bounds, Context, Outcome, Start};
use lwir_spec::canon::sha256_of;
use lwir_spec::{Finding, Origin};
use lwir_validators::pipeline::{self, Definition, Source, Validation};
use serde_json::Value;

/// The repair loop's checker: the whole validation pipeline against one definition, read
/// and checked once.
#[derive(Clone, Debug)]
pub struct PipelineCheck {
    definition: Arc<Definition>,
    draft_name: String,
}

impl PipelineCheck {
    /// Checks drafts (reported as `draft_name`) against `definition`.
    pub fn new(definition: Source, draft_name: impl Into<String>) -> Self {
        Self::against(Arc::new(Definition::read(definition)), draft_name)
    }

    /// Checks drafts (reported as `draft_name`) against a definition already read.
    pub fn against(definition: Arc<Definition>, draft_name: impl Into<String>) -> Self {
        Self {
            definition,
            draft_name: draft_name.into(),
        }
    }

    /// The definition it checks against.
    pub fn definition(&self) -> &Arc<Definition> {
        &self.definition
    }

    /// The name drafts are reported as.
    pub fn draft_name(&self) -> &str {
        &self.draft_name
    }

    /// The full validation of `bytes`, for the renderers.
    pub fn validation(&self, bytes: &[u8]) -> Validation {
        pipeline::validate_against(self.source(bytes), &self.definition)
    }

    /// The validation of `bytes` with the compiled expression plan, for registering.
    pub fn compiled(&self, bytes: &[u8]) -> Validation {
        pipeline::compile_against(self.source(bytes), &self.definition)
    }

    fn source(&self, bytes: &[u8]) -> Source {
        Source {
            name: self.draft_name.clone(),
            bytes: bytes.to_vec(),
        }
    }
}

impl Check for PipelineCheck {
    fn check(&mut self, bytes: &[u8]) -> Checked {
        checked(self.validation(bytes))
    }
}

/// The checker of `lwirc fix` and the editor's fix-all: the pipeline against a definition
/// read once, or without one (the checks that need it skipped, as `lwirc validate` does).
pub struct DraftCheck {
    definition: Option<Arc<Definition>>,
    draft_name: String,
}

impl DraftCheck {
    /// Checks drafts (reported as `draft_name`) against `definition`, when there is one.
    pub fn new(definition: Option<Arc<Definition>>, draft_name: impl Into<String>) -> Self {
        Self {
            definition,
            draft_name: draft_name.into(),
        }
    }

    /// The full validation of `bytes`, for the renderers.
    pub fn validation(&self, bytes: &[u8]) -> Validation {
        let source = Source {
            name: self.draft_name.clone(),
            bytes: bytes.to_vec(),
        };
        match &self.definition {
            Some(definition) => pipeline::validate_against(source, definition),
            None => pipeline::validate(source, None),
        }
    }
}

impl Check for DraftCheck {
    fn check(&mut self, bytes: &[u8]) -> Checked {
        checked(self.validation(bytes))
    }
}

/// What the repair loop needs of a validation.
pub fn checked(mut validation: Validation) -> Checked {
    let findings_json = lwir_render::json::findings(&validation);
    let state = match validation.digest.take() {
        // The digest of the canonical draft, hashed beside the validation.
        Some(digest) => digest,
        None => format!("bytes:{}", sha256_of(validation.bytes(Origin::Draft))),
    };
    let findings = std::mem::take(&mut validation.findings);
    let version = validation.version.take();
    Checked {
        findings_json,
        state,
        version,
        findings,
        document: validation.into_document().map(Arc::new),
    }
}

/// The bounds of a session: `max_repair_attempts` and `max_planner_calls` as given (the
/// command line's), else as the definition's `planner` block sets them, else the defaults.
pub fn bounds_of(
    definition: &Value,
    max_repair_attempts: Option<u32>,
    max_planner_calls: Option<u32>,
) -> Bounds {
    let mut bounds = Bounds::default();
    let planner = definition.get("planner");
    let field = |key: &str| {
        planner
            .and_then(|p| p.get(key))
            .and_then(Value::as_u64)
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    };
    if let Some(n) = max_repair_attempts.or_else(|| field("max_repair_attempts")) {
        bounds.max_repair_attempts = n;
    }
    if let Some(n) = max_planner_calls.or_else(|| field("max_planner_calls")) {
        bounds.max_planner_calls = n;
    }
    bounds
}

/// The data of `harness.session.started`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Started {
    /// `compile`.
    pub command: String,
    /// The definition's `name`.
    pub workflow: String,
    /// The definition file as given.
    pub definition: String,
    /// The planner command, shell-quoted.
    pub planner: String,
    /// The PlannerManifest.
    pub manifest: PlannerManifest,
    /// The workflow input, `null` without one.
    pub input: Value,
    /// `max_repair_attempts`.
    pub max_repair_attempts: u32,
    /// `max_planner_calls`.
    pub max_planner_calls: u32,
    /// Per-call timeout in milliseconds.
    pub planner_timeout_ms: u64,
    /// Answer size limit in bytes.
    pub planner_max_output: usize,
}

/// A new session directory under `base`: the time and the process id, so that sessions sort
/// by start and two started in the same second do not collide.
pub fn new_session_dir(base: &Path) -> PathBuf {
    let stamp = lwir_spec::time::rfc3339(SystemTime::now())
        .replace(['-', ':'], "")
        .replace('Z', "");
    base.join(format!("{stamp}-{}", std::process::id()))
}

/// A definition a compile session can run against: read and checked once, with what the
/// planner is told about it.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The definition, read and checked.
    pub definition: Arc<Definition>,
    /// As JSON (what the planner gets).
    pub value: Value,
    /// Its PlannerManifest.
    pub manifest: PlannerManifest,
    /// Its `name`.
    pub name: String,
}

impl Prepared {
    /// Reads and checks `definition`; its errors (reader or its own), as a validation to
    /// render, when it has any — no planner call could succeed against it.
    pub fn new(definition: Source) -> Result<Self, Box<Validation>> {
        let mut validation = pipeline::validate_definition(definition);
        let document = validation
            .definition
            .as_deref()
            .and_then(Definition::document);
        let (Some(document), false) = (document, validation.has_errors()) else {
            validation.findings.retain(Finding::is_error);
            return Err(Box::new(validation));
        };
        let value = document.root().to_json();
        let manifest = PlannerManifest::of(document.root(), lwir_repair::manifest::harness_id());
        let name = value
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        Ok(Self {
            definition: Arc::clone(validation.definition.as_ref().expect("read above")),
            value,
            manifest,
            name,
        })
    }
}

/// How a compile session runs.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The session directory: its event log, and the draft it ends with.
    pub dir: PathBuf,
    /// Continue the session in `dir` after a crash instead of starting one there.
    pub resume: bool,
    /// The workflow input (`None`: `null`; on resume, the recorded one).
    pub input: Option<Value>,
    /// `max_repair_attempts`, instead of the definition's.
    pub max_repair_attempts: Option<u32>,
    /// `max_planner_calls`, instead of the definition's.
    pub max_planner_calls: Option<u32>,
    /// The planner as the log names it (its command).
    pub planner: String,
    /// The limits of each planner call, as the log records them.
    pub limits: Limits,
}

/// What a session tells its observer as it goes.
pub trait Observer {
    /// The session has its log, before its first event: new (`resumed` is `None`) or
    /// resumed with that many committed events; under `bounds`.
    fn begun(&mut self, dir: &Path, bounds: Bounds, resumed: Option<usize>) {
        let _ = (dir, bounds, resumed);
    }

    /// An event was recorded, or replayed from the log.
    fn event(&mut self, event: &SessionEvent, replayed: bool) {
        let _ = (event, replayed);
    }
}

/// An observer that looks at nothing.
impl Observer for () {}

/// How a session ended.
#[derive(Debug)]
pub enum End {
    /// The draft converged and is registered (or was already).
    Registered(Box<Entry>),
    /// The bounds were spent, or the planner gave up: nothing registered.
    NotConverged,
    /// The draft converged and the registry refused it (why).
    Refused(String),
}

/// A finished compile session.
#[derive(Debug)]
pub struct Compiled {
    /// Its directory.
    pub dir: PathBuf,
    /// The loop's last draft, its validation and the report.
    pub outcome: Outcome,
    /// How it ended.
    pub end: End,
    /// The checker it validated with (to render the last draft's findings).
    pub check: PipelineCheck,
}

/// Why a compile session could not run (or go on).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The registry cannot take a version; nothing was asked of the planner.
    #[error("the registry cannot be used: {0}; no planner was called")]
    Registry(String),
    /// The session's log cannot be created, resumed or appended to.
    #[error(transparent)]
    Log(#[from] LogError),
    /// Replaying the log does not give its events, or recording failed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The session cannot be resumed as asked (its log does not start as a session does,
    /// or the input or a bound differs from the recorded one).
    #[error("{0}")]
    NotResumable(String),
    /// The definition, its tools, prompt, skills or planner slot changed since the session
    /// started: it fails closed.
    #[error(transparent)]
    Drift(#[from] CapabilityDriftError),
    /// A draft could not be written into the session directory.
    #[error("cannot write `{path}`: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The converged draft has no registration (a bug: it validated clean).
    #[error("the converged draft cannot be registered: {0}")]
    NotRegistrable(#[from] NotRegistrable),
    /// The registry's storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Runs a compile session: the definition → the planner's draft → validate → safe fixes
/// and repair → register, event-logged in `settings.dir`.
///
/// A new session writes `harness.session.started` first. A resumed one (`settings.resume`)
/// reads the log, fails closed when the PlannerManifest of `prepared` differs from the
/// recorded one ([`SessionError::Drift`]), keeps the recorded input and bounds, and replays
/// what it did: only the planner call that was in flight is made again. Before any planner
/// call the registry must be able to take a version. The session ends registered, not
/// converged (the last draft kept as `last-draft.json`, `session.failed` recorded) or
/// refused by the registry (`session.failed` with why); a converged draft is kept as
/// `draft.json`.
pub fn compile<S: Storage>(
    prepared: &Prepared,
    settings: &Settings,
    planner: &mut dyn Planner,
    registry: &Registry<S>,
    observer: &mut dyn Observer,
) -> Result<Compiled, SessionError> {
    let mut bounds = bounds_of(
        &prepared.value,
        settings.max_repair_attempts,
        settings.max_planner_calls,
    );
    registry.check_writable().map_err(SessionError::Registry)?;
    let dir = &settings.dir;
    let (mut journal, input) = if settings.resume {
        let (log, recorded) = EventLog::resume(dir)?;
        let started = recorded
            .first()
            .and_then(|e| match SessionEvent::parse(e) {
                Ok(SessionEvent::Started(data)) => serde_json::from_value::<Started>(data).ok(),
                _ => None,
            })
            .ok_or_else(|| {
                SessionError::NotResumable(format!(
                    "the session log `{}` does not begin with a harness.session.started \
                     event; it cannot be resumed",
                    log.path().display()
                ))
            })?;
        started.manifest.check(&prepared.manifest)?;
        if settings.input.as_ref().is_some_and(|i| *i != started.input) {
            return Err(SessionError::NotResumable(
                "--input differs from the input the session started with; a resumed session \
                 keeps its input (leave --input out to use the recorded one)"
                    .to_owned(),
            ));
        }
        for (flag, given, recorded) in [
            (
                "--max-attempts",
                settings.max_repair_attempts,
                started.max_repair_attempts,
            ),
            (
                "--max-planner-calls",
                settings.max_planner_calls,
                started.max_planner_calls,
            ),
        ] {
            if given.is_some_and(|n| n != recorded) {
                return Err(SessionError::NotResumable(format!(
                    "{flag} differs from the session's recorded bound ({recorded}); a resumed \
                     session keeps its bounds"
                )));
            }
        }
        bounds.max_repair_attempts = started.max_repair_attempts;
        bounds.max_planner_calls = started.max_planner_calls;
        observer.begun(dir, bounds, Some(recorded.len()));
        let mut journal = Journal::resumed(log, recorded, 1);
        journal.observe(|event, replayed| observer.event(event, replayed));
        (journal, started.input)
    } else {
        let log = EventLog::create(dir)?;
        observer.begun(dir, bounds, None);
        let mut journal = Journal::new(log);
        journal.observe(|event, replayed| observer.event(event, replayed));
        let input = settings.input.clone().unwrap_or(Value::Null);
        let started = Started {
            command: "compile".to_owned(),
            workflow: prepared.name.clone(),
            definition: prepared.definition.source.name.clone(),
            planner: settings.planner.clone(),
            manifest: prepared.manifest.clone(),
            input: input.clone(),
            max_repair_attempts: bounds.max_repair_attempts,
            max_planner_calls: bounds.max_planner_calls,
            planner_timeout_ms: u64::try_from(settings.limits.timeout.as_millis())
                .unwrap_or(u64::MAX),
            planner_max_output: settings.limits.max_output,
        };
        // Plain data always serialises.
        let data = serde_json::to_value(&started).unwrap_or_default();
        journal.record(SessionEvent::Started(data))?;
        (journal, input)
    };

    let context = Context {
        workflow: prepared.value.clone(),
        // Plain data always serialises.
        manifest: serde_json::to_value(&prepared.manifest).unwrap_or_default(),
        input,
    };
    let mut check = PipelineCheck::against(
        Arc::clone(&prepared.definition),
        dir.join("draft.json").display().to_string(),
    );
    let outcome = lwir_repair::repair_loop::run(
        Start::Plan,
        &context,
        bounds,
        &mut check,
        planner,
        &mut journal,
    )?;
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        write_atomically(&path, bytes).map_err(|source| SessionError::Write { path, source })
    };
    if !outcome.report.converged() {
        if let Some(draft) = &outcome.draft {
            write("last-draft.json", draft)?;
        }
        journal.record(failed(&outcome, None))?;
        return Ok(Compiled {
            dir: dir.clone(),
            outcome,
            end: End::NotConverged,
            check,
        });
    }
    let draft = outcome.draft.as_deref().unwrap_or_default();
    write("draft.json", draft)?;
    let registration = Registration::new(&check.compiled(draft), SystemTime::now())?;
    let end = match registry.register(&registration, false) {
        Ok(
            Registered::New(entry) | Registered::Already(entry) | Registered::Rebased { entry, .. },
        ) => {
            journal.record(SessionEvent::WorkflowRegistered(WorkflowRegistered {
                version: entry.version.to_string(),
                workflow: entry.record.workflow.clone(),
            }))?;
            End::Registered(Box::new(entry))
        }
        Err(RegistryError::Storage(e)) => return Err(e.into()),
        Err(e) => {
            let next = match &e {
                RegistryError::SnapshotMismatch { .. } => format!(
                    "; the session's draft is `{}`: `lwirc register {} -d WORKFLOW --rebase` \
                     registers the same version again pinned to this definition (the earlier \
                     registration is kept), or compile into another registry (--registry)",
                    dir.join("draft.json").display(),
                    dir.join("draft.json").display()
                ),
                _ => String::new(),
            };
            let why = format!("the registry refused the draft: {e}{next}");
            journal.record(failed(&outcome, Some(why.clone())))?;
            End::Refused(why)
        }
    };
    Ok(Compiled {
        dir: dir.clone(),
        outcome,
        end,
        check,
    })
}

/// `session.failed` for `outcome`, and why the registry refused it when it did.
fn failed(outcome: &Outcome, refused: Option<String>) -> SessionEvent {
    SessionEvent::SessionFailed(SessionFailed {
        reason: refused.clone().unwrap_or_else(|| outcome.report.reason()),
        // Plain data always serialises.
        report: serde_json::to_value(&outcome.report).unwrap_or_default(),
        refused,
    })
}
