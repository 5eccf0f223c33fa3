//! Running versions: a new run, resuming one, retrying one, replaying one, verifying the
//! store, and what a run's log says of it. Nothing here prints or exits; each operation
//! returns a typed report.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use lwir_registry::dependencies::{Interface, ToolSchemas};
use lwir_registry::{Digest, Record, Registry, RegistryError, Storage};
use lwir_spec::expr::eval::Val;
use lwir_spec::ir::Definition;
use lwir_spec::{Code, Finding, SpannedDocument};
use serde_json::Value;

use crate::Observer;
use crate::bindings::{self, Bindings};
use crate::drift;
use crate::effects::Effects;
use crate::exec::{self, Context, End, Inbox};
use crate::log::{
    Failure, LoggedFinding, LoggedRun, RunEvent, RunPaused, RunResumed, RunStarted, RunStore,
    StoreError, Usage, Writer, WriterStats,
};
use crate::oracle::{Difference, Mode, Oracle, Recorded};
use crate::program::Program;
use crate::values;

/// The evaluator's budget for each expression of a run (`lwirc eval`'s default).
pub const BUDGET: u64 = lwir_spec::expr::eval::DEFAULT_BUDGET;

/// Leaf steps a run runs at once when `--max-parallel` is not given.
pub const DEFAULT_MAX_PARALLEL: usize = 4;

/// What a run does when the live surface drifted from the version's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnDrift {
    /// Nothing runs (exit 3).
    Fail,
    /// The run is recorded as paused with the findings (exit 3), for `runs resume
    /// --accept-drift`.
    Pause,
}

impl OnDrift {
    /// `fail` or `pause`.
    pub fn as_str(self) -> &'static str {
        match self {
            OnDrift::Fail => "fail",
            OnDrift::Pause => "pause",
        }
    }
}

/// Makes the effects of a run from its bindings.
pub type EffectsFor<'a> = &'a dyn Fn(&Bindings) -> Box<dyn Effects>;

/// A new run.
pub struct NewRun<'a> {
    /// The version: `sha256:<hex>` or a unique prefix of its hex digits.
    pub version: &'a str,
    /// The input, as read by the strict reader (findings point into it).
    pub input: &'a SpannedDocument,
    /// The bindings.
    pub bindings: &'a Bindings,
    /// The bindings file, for findings' spans.
    pub bindings_document: Option<&'a SpannedDocument>,
    /// The definition the version was compiled against, for a registration record written
    /// before lwirc kept the tools' schemas and the interface (`-d WORKFLOW`).
    pub definition: Option<&'a SpannedDocument>,
    /// Leaf steps at once, at most.
    pub max_parallel: usize,
    /// What drift does.
    pub on_drift: OnDrift,
}

/// Going on with a run: after a crash or a pause (`resume`), or after a failure (`retry`).
pub struct Continue<'a> {
    /// New bindings, which replace the run's (recorded), with their file.
    pub bindings: Option<(&'a Bindings, Option<&'a SpannedDocument>)>,
    /// Accept drift found now (recorded, with who and when).
    pub accept_drift: bool,
    /// Who resumes.
    pub by: String,
    /// As for a new run, for a version whose record lacks the tools' schemas.
    pub definition: Option<&'a SpannedDocument>,
}

impl Continue<'_> {
    /// Going on as `by`, with the run's own bindings and definition, accepting no drift.
    pub fn by(by: impl Into<String>) -> Self {
        Continue {
            bindings: None,
            accept_drift: false,
            by: by.into(),
            definition: None,
        }
    }
}

/// How a run (or this walk of it) ended.
#[derive(Clone, Debug)]
pub enum Status {
    /// It succeeded; the workflow's output.
    Succeeded {
        /// The output.
        output: Value,
    },
    /// A step (or the output) failed it.
    Failed {
        /// The innermost step that failed; none when the workflow's output did not fit.
        step: Option<String>,
        /// Why.
        failure: Failure,
    },
    /// It did not start: the input does not fit the input schema, or a tool or slot is not
    /// bound or cannot be reached (findings into the input or the bindings). Nothing was
    /// called or recorded.
    Refused {
        /// Whether the findings point into the input (else into the bindings).
        input: bool,
        /// The findings.
        findings: Vec<Finding>,
    },
    /// The live surface drifted and `--on-drift fail`: nothing ran or was recorded.
    Drift {
        /// The drift findings, into the bindings.
        findings: Vec<Finding>,
    },
    /// The live surface drifted and `--on-drift pause`: the run is recorded as paused.
    Paused {
        /// The drift findings, into the bindings.
        findings: Vec<Finding>,
    },
    /// Rebuilding the run differs from its log (resume and retry stop there).
    Differs(Difference),
    /// The walk ended without an end: nothing it waits for can happen.
    Incomplete,
}

/// What an operation on a run did.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The run (none when nothing was recorded).
    pub run: Option<String>,
    /// How it ended.
    pub status: Status,
    /// Counts.
    pub stats: Stats,
}

/// Counts of one walk of a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// Events written.
    pub events: u64,
    /// `sync_data` calls of the log (one per group commit).
    pub fsyncs: u64,
    /// Step attempts that ended (succeeded, failed, skipped) in this walk.
    pub steps: u64,
    /// Tokens used by the models asked in this walk.
    pub usage: Usage,
    /// How long the walk took.
    pub elapsed: Duration,
}

/// What replaying a run found.
#[derive(Clone, Debug)]
pub struct Replay {
    /// The run.
    pub run: String,
    /// The first difference, if any.
    pub difference: Option<Difference>,
    /// How the log ends: `succeeded`, `failed`, or `None` when the run has not ended (its
    /// recorded part was checked).
    pub ended: Option<&'static str>,
    /// Events of the log.
    pub events: usize,
    /// How long the replay took.
    pub elapsed: Duration,
}

/// Why an operation could not be done at all (a usage error, exit 2, unless said).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The registry could not give the version (not found, ambiguous, corrupt).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The store or a run's log could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The version cannot be run by this lwirc: a record that lacks what a run needs and no
    /// (matching) `-d WORKFLOW`, or an LWIR this lwirc cannot compile.
    #[error("{version} cannot be run: {reason}")]
    NotRunnable {
        /// The version.
        version: String,
        /// Why.
        reason: String,
    },
    /// The run is not in a state this operation takes (`runs retry` of a run that did not
    /// fail).
    #[error("{0}")]
    Refused(String),
}

/// The runs of a store, and the registry their versions come from.
pub struct Runtime<'r, S: Storage> {
    store: RunStore,
    registry: &'r Registry<S>,
}

/// What [`Runtime::check_bindings`] found.
#[derive(Clone, Debug)]
pub struct BindingsCheck {
    /// The version, resolved.
    pub version: String,
    /// The tools it references.
    pub tools: Vec<String>,
    /// The model slots it references.
    pub slots: Vec<String>,
    /// What is wrong (into the bindings file); empty when nothing is.
    pub findings: Vec<Finding>,
}

/// A version ready to run.
struct Loaded {
    version: Digest,
    record_digest: Digest,
    record: Record,
    program: Program,
    tools: BTreeMap<String, ToolSchemas>,
    interface: Interface,
    /// Whether the schemas came from `-d WORKFLOW` (then the run records them).
    from_definition: bool,
}

impl<'r, S: Storage> Runtime<'r, S> {
    /// The runs of `store`, running versions of `registry`.
    pub fn new(store: RunStore, registry: &'r Registry<S>) -> Self {
        Self { store, registry }
    }

    /// The store.
    pub fn store(&self) -> &RunStore {
        &self.store
    }

    /// The version `version` (a digest or a prefix), verified, with record `record` (else
    /// the latest), compiled; its schemas from the record, else from `definition`, else
    /// from what a run recorded (`recorded`).
    fn load(
        &self,
        version: &str,
        record: Option<&str>,
        definition: Option<&SpannedDocument>,
        recorded: Option<&Value>,
    ) -> Result<Loaded, RunError> {
        let digest = self.registry.resolve(version)?;
        let entries = self.registry.registrations(&digest)?;
        let entry = match record {
            None => entries.last().cloned(),
            Some(r) => entries
                .iter()
                .find(|e| e.record_digest.to_string() == r)
                .cloned(),
        }
        .ok_or_else(|| RegistryError::NotFound {
            prefix: version.to_owned(),
        })?;
        let lwir = self.registry.lwir(&digest)?;
        let not_runnable = |reason: String| RunError::NotRunnable {
            version: digest.to_string(),
            reason,
        };
        let document = lwir_spec::document::read(lwir);
        let document = document
            .document
            .filter(|_| document.findings.is_empty())
            .ok_or_else(|| not_runnable("its LWIR does not read back".into()))?;
        let program = Program::compile(document.root()).map_err(not_runnable)?;
        let record = entry.record.clone();
        let (tools, interface, from_definition) = if let Some(schemas) = recorded {
            let bad =
                |e: serde_json::Error| not_runnable(format!("the schemas the run recorded: {e}"));
            let tools = serde_json::from_value(schemas["tools"].clone()).map_err(bad)?;
            let interface = serde_json::from_value(schemas["interface"].clone()).map_err(bad)?;
            (tools, interface, true)
        } else if let (Some(tools), Some(interface)) = (&record.tools, &record.interface) {
            (tools.clone(), interface.clone(), false)
        } else {
            let Some(def) = definition else {
                return Err(not_runnable(
                    "its registration record was written before lwirc kept the tools' schemas \
                     and the workflow's interface; give the definition it was compiled against \
                     with -d WORKFLOW"
                        .into(),
                ));
            };
            let def = Definition::new(def.root());
            let tools = match &record.tools {
                Some(t) => t.clone(),
                None => ToolSchemas::of_pinned(&record.snapshot(), &def)
                    .map_err(|why| not_runnable(format!("-d WORKFLOW: {why}")))?,
            };
            let interface = match &record.interface {
                Some(i) => i.clone(),
                None => Interface::of(&def),
            };
            (tools, interface, true)
        };
        Ok(Loaded {
            version: digest,
            record_digest: entry.record_digest,
            record,
            program,
            tools,
            interface,
            from_definition,
        })
    }

    /// Runs a version: checks its input, its bindings and its surface, records the run and
    /// walks it to its end.
    pub fn start(
        &self,
        new: &NewRun<'_>,
        effects_for: EffectsFor<'_>,
        observer: &dyn Observer,
    ) -> Result<Outcome, RunError> {
        let began = Instant::now();
        let loaded = self.load(new.version, None, new.definition, None)?;
        let input = new.input.root().to_json();
        let findings = input_findings(&loaded.interface.input, &input, new.input);
        if !findings.is_empty() {
            return Ok(refused(true, findings));
        }
        // One set of effects for the whole run (servers started once, shut down at its end).
        let effects = effects_for(new.bindings);
        let (surface, drift) =
            match self.surface(&loaded, new.bindings, new.bindings_document, &*effects) {
                Ok(found) => found,
                Err(findings) => return Ok(refused(false, findings)),
            };
        if !drift.is_empty() && new.on_drift == OnDrift::Fail {
            return Ok(Outcome {
                run: None,
                status: Status::Drift { findings: drift },
                stats: Stats::default(),
            });
        }
        let run = crate::log::new_run_id();
        let log = self.store.create(&run)?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut writer = Writer::start(log, Some(notify(tx.clone())));
        let started = RunEvent::RunStarted(RunStarted {
            run: run.clone(),
            version: loaded.version.to_string(),
            record: loaded.record_digest.to_string(),
            workflow: loaded.record.workflow.clone(),
            input_digest: values::digest_of(&input),
            input: input.clone(),
            bindings: new.bindings.json.clone(),
            bindings_digest: new.bindings.digest(),
            lwirc_version: env!("CARGO_PKG_VERSION").to_owned(),
            surface: recorded_surface(&loaded, &surface),
            max_parallel: u32::try_from(new.max_parallel).unwrap_or(u32::MAX),
            on_drift: new.on_drift.as_str().to_owned(),
        });
        observer.event(&started, true);
        writer.append(started);
        if !drift.is_empty() {
            let paused = RunEvent::RunPaused(RunPaused {
                reason: "drift".into(),
                findings: drift.iter().map(LoggedFinding::of).collect(),
            });
            observer.event(&paused, true);
            writer.append(paused);
            let stats = finish(writer)?;
            return Ok(Outcome {
                run: Some(run),
                status: Status::Paused { findings: drift },
                stats: Stats {
                    events: stats.events,
                    fsyncs: stats.fsyncs,
                    elapsed: began.elapsed(),
                    ..Stats::default()
                },
            });
        }
        let oracle = Oracle::new(Mode::Live, Recorded::default(), Some(writer));
        walk(
            &run,
            &loaded,
            &Val::from_json(&input),
            &surface,
            new.max_parallel,
            oracle,
            Some(&*effects),
            observer,
            (tx, rx),
            began,
        )
    }

    /// What `lwirc bindings check` finds for `version` under `bindings`: every tool and
    /// model slot it references bound, every MCP server it uses started and listing the
    /// tools bound to it, and no drift from its registration record. The findings point
    /// into the bindings file (none: the bindings run the version as registered). Servers
    /// are shut down before it returns.
    pub fn check_bindings(
        &self,
        version: &str,
        bindings: &Bindings,
        document: Option<&SpannedDocument>,
        definition: Option<&SpannedDocument>,
        effects_for: EffectsFor<'_>,
    ) -> Result<BindingsCheck, RunError> {
        let loaded = self.load(version, None, definition, None)?;
        let effects = effects_for(bindings);
        let findings = match self.surface(&loaded, bindings, document, &*effects) {
            Ok((_, drift)) => drift,
            Err(findings) => findings,
        };
        Ok(BindingsCheck {
            version: loaded.version.to_string(),
            tools: loaded.program.tools.clone(),
            slots: loaded.program.slots.clone(),
            findings,
        })
    }

    /// The live surface of `loaded` under `bindings`, and its drift; findings when a tool or
    /// slot is not bound or cannot be listed.
    fn surface(
        &self,
        loaded: &Loaded,
        bindings: &Bindings,
        document: Option<&SpannedDocument>,
        effects: &dyn Effects,
    ) -> Result<(crate::effects::Surface, Vec<Finding>), Vec<Finding>> {
        let tools: Vec<&str> = loaded.program.tools.iter().map(String::as_str).collect();
        let slots: Vec<&str> = loaded.program.slots.iter().map(String::as_str).collect();
        let unbound = bindings::unbound(bindings, document, &tools, &slots);
        if !unbound.is_empty() {
            return Err(unbound);
        }
        let surface = effects.surface(&tools, &slots).map_err(|e| {
            let at = e.at.unwrap_or_else(|| "/tools".to_owned());
            let span = document
                .and_then(|d| d.span_of(&at).or_else(|| Some(d.root().span)))
                .unwrap_or_default();
            vec![Finding::new(e.code, at, span, e.message)]
        })?;
        let drift: Vec<Finding> = drift::findings(&loaded.record, &surface, bindings, document)
            .into_iter()
            .filter(Finding::is_error)
            .collect();
        Ok((surface, drift))
    }

    /// Goes on with run `run`: `resume` after a crash or a pause (only what was in flight
    /// runs again), `retry` after a failure (failed steps get new attempts).
    pub fn resume(
        &self,
        run: &str,
        retry: bool,
        how: &Continue<'_>,
        effects_for: EffectsFor<'_>,
        observer: &dyn Observer,
    ) -> Result<Outcome, RunError> {
        let began = Instant::now();
        let run = self.store.resolve(run)?;
        let (log, logged) = self.store.open(&run)?;
        let started = first_started(&logged)?;
        match (state_of(&logged), retry) {
            (State::Succeeded(output), _) => {
                return Ok(Outcome {
                    run: Some(run),
                    status: Status::Succeeded { output },
                    stats: Stats::default(),
                });
            }
            (State::Failed, false) => {
                return Err(RunError::Refused(format!(
                    "run `{run}` failed; `lwirc runs retry {run}` runs its failed steps again"
                )));
            }
            (State::Paused | State::Open, true) => {
                return Err(RunError::Refused(format!(
                    "run `{run}` has not failed (it did not end); `lwirc runs resume {run}` \
                     goes on with it"
                )));
            }
            _ => {}
        }
        let loaded = self.load(
            &started.version,
            Some(&started.record),
            how.definition,
            logged_schemas(&logged),
        )?;
        let (bindings, document, replaced) = match how.bindings {
            Some((b, d)) => (b.clone(), d, true),
            None => (
                latest_bindings(&logged).map_err(|why| {
                    RunError::Refused(format!("run `{run}`: its recorded bindings: {why}"))
                })?,
                None,
                false,
            ),
        };
        let effects = effects_for(&bindings);
        let (surface, drift) = match self.surface(&loaded, &bindings, document, &*effects) {
            Ok(found) => found,
            Err(findings) => {
                return Ok(refused(false, findings)).map(|r| Outcome {
                    run: Some(run.clone()),
                    ..r
                });
            }
        };
        if !drift.is_empty() && !how.accept_drift {
            return Ok(Outcome {
                run: Some(run),
                status: Status::Drift { findings: drift },
                stats: Stats::default(),
            });
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut writer = Writer::start(log, Some(notify(tx.clone())));
        let resumed = RunEvent::RunResumed(RunResumed {
            mode: if retry { "retry" } else { "resume" }.to_owned(),
            by: how.by.clone(),
            at: lwir_spec::time::rfc3339(SystemTime::now()),
            accept_drift: how.accept_drift && !drift.is_empty(),
            drift: drift.iter().map(LoggedFinding::of).collect(),
            bindings: replaced.then(|| bindings.json.clone()),
            bindings_digest: replaced.then(|| bindings.digest()),
        });
        observer.event(&resumed, true);
        writer.append(resumed);
        let recorded = Recorded::of(&numbered(&logged));
        let mode = if retry { Mode::Retry } else { Mode::Resume };
        let oracle = Oracle::new(mode, recorded, Some(writer));
        let max_parallel = usize::try_from(started.max_parallel).unwrap_or(DEFAULT_MAX_PARALLEL);
        walk(
            &run,
            &loaded,
            &Val::from_json(&started.input),
            &surface,
            max_parallel.max(1),
            oracle,
            Some(&*effects),
            observer,
            (tx, rx),
            began,
        )
    }

    /// Rebuilds run `run` from its log without performing anything, and compares every
    /// decision with what was recorded.
    pub fn replay(&self, run: &str) -> Result<Replay, RunError> {
        let began = Instant::now();
        let run = self.store.resolve(run)?;
        let logged = self.store.read(&run)?;
        let started = first_started(&logged)?;
        let loaded = self.load(
            &started.version,
            Some(&started.record),
            None,
            logged_schemas(&logged),
        )?;
        let recorded = Recorded::of(&numbered(&logged));
        let ended = match recorded.end() {
            Some(RunEvent::RunSucceeded(_)) => Some("succeeded"),
            Some(_) => Some("failed"),
            None => None,
        };
        let paused_only = !logged
            .events
            .iter()
            .any(|e| matches!(e, RunEvent::StepStarted(_) | RunEvent::StepSkipped(_)))
            && ended.is_none();
        if paused_only {
            return Ok(Replay {
                run,
                difference: None,
                ended,
                events: logged.events.len(),
                elapsed: began.elapsed(),
            });
        }
        let oracle = Oracle::new(Mode::Replay, recorded, None);
        let (tx, rx) = crossbeam_channel::unbounded();
        let surface = crate::effects::Surface::default();
        let report = walk(
            &run,
            &loaded,
            &Val::from_json(&started.input),
            &surface,
            usize::try_from(started.max_parallel)
                .unwrap_or(DEFAULT_MAX_PARALLEL)
                .max(1),
            oracle,
            None,
            &crate::Quiet,
            (tx, rx),
            began,
        )?;
        let difference = match report.status {
            Status::Differs(d) => Some(d),
            Status::Incomplete if ended.is_some() => Some(Difference {
                step: None,
                event: "run.succeeded".into(),
                pointer: String::new(),
                recorded: Some(Value::String(ended.unwrap_or_default().into())),
                replayed: None,
            }),
            _ => None,
        };
        Ok(Replay {
            run,
            difference,
            ended,
            events: logged.events.len(),
            elapsed: began.elapsed(),
        })
    }

    /// Every run of the store, checked: its log's chain and seqs, and the version it ran
    /// (its LWIR re-hashed to its digest, its record there). One entry per run, its problems
    /// (none when it is sound).
    pub fn verify(&self) -> Result<Vec<(String, Vec<String>)>, RunError> {
        let mut out = Vec::new();
        for id in self.store.ids()? {
            let mut problems = Vec::new();
            match self.store.read(&id) {
                Err(e) => problems.push(e.to_string()),
                Ok(logged) => match first_started(&logged) {
                    Err(e) => problems.push(e.to_string()),
                    Ok(started) => {
                        if let Err(e) = self.check_version(&started) {
                            problems.push(e);
                        }
                    }
                },
            }
            out.push((id, problems));
        }
        Ok(out)
    }

    fn check_version(&self, started: &RunStarted) -> Result<(), String> {
        let digest = Digest::parse(&started.version)
            .ok_or_else(|| format!("`{}` is not a version", started.version))?;
        self.registry
            .lwir(&digest)
            .map_err(|e| format!("its version {digest}: {e}"))?;
        let entries = self
            .registry
            .registrations(&digest)
            .map_err(|e| format!("its version {digest}: {e}"))?;
        if !entries
            .iter()
            .any(|e| e.record_digest.to_string() == started.record)
        {
            return Err(format!(
                "its version {digest} has no registration record {}",
                started.record
            ));
        }
        Ok(())
    }
}

/// The notifier of a run's writer: durability and failures reach the executor's inbox.
fn notify(tx: crossbeam_channel::Sender<Inbox>) -> crate::log::Notify {
    Box::new(move |news| {
        let _ = tx.send(match news {
            Ok(ticket) => Inbox::Durable(ticket),
            Err(why) => Inbox::LogFailed(why),
        });
    })
}

fn finish(writer: Writer) -> Result<WriterStats, RunError> {
    writer.finish().map(|(_, stats)| stats).map_err(|detail| {
        RunError::Store(StoreError::Io {
            run: String::new(),
            detail,
        })
    })
}

fn refused(input: bool, findings: Vec<Finding>) -> Outcome {
    Outcome {
        run: None,
        status: Status::Refused { input, findings },
        stats: Stats::default(),
    }
}

/// The surface `run.started` records.
fn recorded_surface(loaded: &Loaded, surface: &crate::effects::Surface) -> Value {
    let mut value = drift::recorded(&drift::current(&loaded.record, surface));
    if loaded.from_definition {
        // The run must be resumable and replayable without the definition given now.
        value["schemas"] = serde_json::json!({
            "tools": loaded.tools,
            "interface": loaded.interface,
        });
    }
    value
}

/// The schemas a run recorded in its `run.started` surface (for a record that lacks them).
fn logged_schemas(logged: &LoggedRun) -> Option<&Value> {
    match logged.events.first() {
        Some(RunEvent::RunStarted(s)) => s.surface.get("schemas"),
        _ => None,
    }
}

/// Findings for each place the run input does not fit `schema`.
fn input_findings(schema: &Value, input: &Value, document: &SpannedDocument) -> Vec<Finding> {
    values::mismatches(schema, input)
        .into_iter()
        .map(|m| {
            let span = document.span_of(&m.pointer).unwrap_or(document.root().span);
            Finding::new(
                Code::RunInputMismatch,
                m.pointer.clone(),
                span,
                format!(
                    "the input does not fit the workflow's input schema: {} (keyword `{}`)",
                    m.message, m.keyword
                ),
            )
        })
        .collect()
}

#[allow(clippy::too_many_arguments, reason = "one walk's parts")]
fn walk(
    run: &str,
    loaded: &Loaded,
    input: &Val,
    surface: &crate::effects::Surface,
    max_parallel: usize,
    mut oracle: Oracle,
    effects: Option<&dyn Effects>,
    observer: &dyn Observer,
    inbox: (
        crossbeam_channel::Sender<Inbox>,
        crossbeam_channel::Receiver<Inbox>,
    ),
    began: Instant,
) -> Result<Outcome, RunError> {
    let models: BTreeMap<String, String> = loaded
        .record
        .model_snapshot
        .iter()
        .map(|m| {
            let model = surface
                .models
                .get(&m.id)
                .cloned()
                .or_else(|| m.model.clone())
                .unwrap_or_else(|| m.id.clone());
            (m.id.clone(), model)
        })
        .collect();
    let cx = Context {
        run,
        input: input.clone(),
        tools: &loaded.tools,
        models: &models,
        output_schema: &loaded.interface.output,
        max_parallel,
        budget: BUDGET,
    };
    let outcome = exec::execute(&loaded.program, &cx, &mut oracle, effects, observer, inbox);
    let stats = match oracle.take_writer() {
        Some(writer) => finish(writer)?,
        None => WriterStats::default(),
    };
    let status = match outcome.end {
        End::Succeeded(output) => Status::Succeeded { output },
        End::Failed { step, failure } => Status::Failed { step, failure },
        End::Differs(d) => Status::Differs(d),
        End::Stalled => Status::Incomplete,
        End::LogFailed(detail) => {
            return Err(RunError::Store(StoreError::Io {
                run: run.to_owned(),
                detail,
            }));
        }
    };
    Ok(Outcome {
        run: Some(run.to_owned()),
        status,
        stats: Stats {
            events: stats.events,
            fsyncs: stats.fsyncs,
            steps: outcome.steps_ended,
            usage: outcome.usage,
            elapsed: began.elapsed(),
        },
    })
}

/// The log's events with their seqs.
fn numbered(logged: &LoggedRun) -> Vec<(u64, RunEvent)> {
    logged
        .raw
        .iter()
        .zip(&logged.events)
        .map(|(raw, e)| (raw.seq, e.clone()))
        .collect()
}

fn first_started(logged: &LoggedRun) -> Result<RunStarted, RunError> {
    match logged.events.first() {
        Some(RunEvent::RunStarted(s)) => Ok(s.clone()),
        _ => Err(RunError::Store(StoreError::Damaged {
            run: logged.id.clone(),
            line: 1,
            reason: "it does not start with `run.started`".into(),
        })),
    }
}

/// The bindings a run uses now: the last replacement, else those it started with.
fn latest_bindings(logged: &LoggedRun) -> Result<Bindings, String> {
    let mut json = None;
    for e in &logged.events {
        match e {
            RunEvent::RunStarted(s) => json = Some(&s.bindings),
            RunEvent::RunResumed(r) => {
                if let Some(b) = &r.bindings {
                    json = Some(b);
                }
            }
            _ => {}
        }
    }
    Bindings::from_recorded(json.ok_or("there are none")?)
}

/// Where a run stands, from its log.
enum State {
    Open,
    Paused,
    Failed,
    Succeeded(Value),
}

fn state_of(logged: &LoggedRun) -> State {
    let mut state = State::Open;
    for e in &logged.events {
        state = match e {
            RunEvent::RunStarted(_) | RunEvent::RunResumed(_) => State::Open,
            RunEvent::RunPaused(_) => State::Paused,
            RunEvent::RunFailed(_) => State::Failed,
            RunEvent::RunSucceeded(s) => State::Succeeded(s.output.clone()),
            _ => continue,
        };
    }
    state
}

/// What a run's log says of it, for `runs list` and `runs show`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Summary {
    /// The run id.
    pub run: String,
    /// The workflow's name.
    pub workflow: String,
    /// The version.
    pub version: String,
    /// `running`, `interrupted`, `paused`, `succeeded` or `failed`.
    pub status: &'static str,
    /// When it started.
    pub started_at: String,
    /// When it ended.
    pub ended_at: Option<String>,
    /// Its input.
    pub input: Value,
    /// Its output, when it succeeded.
    pub output: Option<Value>,
    /// Why it failed, when it did: the step and the failure.
    pub failure: Option<Value>,
    /// Per step path, its last attempt: `{step, attempt, status, error?, code?}`, in the
    /// order the steps started.
    pub steps: Vec<Value>,
    /// Step attempts by how they ended: `succeeded`, `failed`, `skipped`.
    pub counts: BTreeMap<&'static str, u64>,
    /// Tokens used by its model calls.
    pub usage: Usage,
    /// Events in its log.
    pub events: usize,
    /// Times it was resumed or retried.
    pub resumed: usize,
}

/// The summary of `logged`; `in_use` when a process runs it now.
pub fn summary(logged: &LoggedRun, in_use: bool) -> Option<Summary> {
    let RunEvent::RunStarted(started) = logged.events.first()? else {
        return None;
    };
    let mut steps: Vec<(String, Value)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut usage = Usage::default();
    let mut set = |step: &str, value: Value| match index.get(step) {
        Some(&i) => steps[i].1 = value,
        None => {
            index.insert(step.to_owned(), steps.len());
            steps.push((step.to_owned(), value));
        }
    };
    let mut failure = None;
    let mut output = None;
    let mut resumed = 0;
    for e in &logged.events {
        match e {
            RunEvent::StepStarted(s) => {
                set(
                    &s.step,
                    serde_json::json!({"step": s.step, "kind": s.kind, "attempt": s.attempt, "status": "running"}),
                );
            }
            RunEvent::StepSkipped(s) => {
                *counts.entry("skipped").or_default() += 1;
                set(
                    &s.step,
                    serde_json::json!({"step": s.step, "attempt": s.attempt, "status": "skipped"}),
                );
            }
            RunEvent::StepSucceeded(s) if s.until.is_none() => {
                *counts.entry("succeeded").or_default() += 1;
                set(
                    &s.step,
                    serde_json::json!({"step": s.step, "attempt": s.attempt, "status": "succeeded"}),
                );
            }
            RunEvent::StepFailed(s) => {
                *counts.entry("failed").or_default() += 1;
                set(
                    &s.step,
                    serde_json::json!({"step": s.step, "attempt": s.attempt, "status": "failed",
                    "error": s.failure.error, "code": s.failure.code.as_str()}),
                );
            }
            RunEvent::ModelResponded(m) => usage = usage.plus(m.usage),
            RunEvent::RunFailed(f) => {
                failure = Some(serde_json::json!({"step": f.step, "error": f.failure.error,
                    "code": f.failure.code.as_str(), "pointer": f.failure.pointer,
                    "keyword": f.failure.keyword}));
            }
            RunEvent::RunSucceeded(s) => output = Some(s.output.clone()),
            RunEvent::RunResumed(_) => {
                resumed += 1;
                failure = None;
            }
            _ => {}
        }
    }
    // Keep each step's kind from its start.
    let status = match state_of(logged) {
        State::Succeeded(_) => "succeeded",
        State::Failed => "failed",
        State::Paused => "paused",
        State::Open if in_use => "running",
        State::Open => "interrupted",
    };
    let ended_at = matches!(status, "succeeded" | "failed")
        .then(|| logged.raw.last().map(|e| e.time.clone()))
        .flatten();
    Some(Summary {
        run: logged.id.clone(),
        workflow: started.workflow.clone(),
        version: started.version.clone(),
        status,
        started_at: logged
            .raw
            .first()
            .map(|e| e.time.clone())
            .unwrap_or_default(),
        ended_at,
        input: started.input.clone(),
        output: if status == "succeeded" { output } else { None },
        failure: if status == "failed" { failure } else { None },
        steps: steps.into_iter().map(|(_, v)| v).collect(),
        counts,
        usage,
        events: logged.events.len(),
        resumed,
    })
}
