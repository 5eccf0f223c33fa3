//! `lwirc compile`: definition → planner draft → validate → repair → register, event-logged.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context as _, bail};
use lwir_repair::events::{EventLog, LOG_FILE, SessionEvent, SessionFailed, WorkflowRegistered};
use lwir_repair::harness::ProcessPlanner;
use lwir_repair::journal::Journal;
use lwir_repair::session::{self, Context, Outcome, Start};
use lwirc::registry::{Registered, Registration, Registry, RegistryError};
use lwirc::render::terminal::sanitize;
use lwirc::session::{PipelineCheck, Started, new_session_dir};
use serde_json::Value;

use super::planning::{self, PlannerArgs, ReportFormat};
use super::{print, read_json, read_source, registry_dir, write_atomically};
use crate::exit;

/// Compile a workflow: ask the planner for a draft, validate, repair, register.
///
/// The planner gets the definition (and `--input`) and proposes an LWIR draft. lwirc
/// validates it, applies safe fixes, and sends what is left back to the planner, within the
/// bounds of the definition's `planner` block (`max_repair_attempts`, `max_planner_calls`;
/// the flags override them). A draft without errors is registered like `lwirc register`
/// does, and its version is printed on standard output. When the bounds are spent, nothing
/// is registered: the report says why (the planner gave no proposal, or its proposals kept
/// failing validation) with the last findings, and the exit status is 1.
///
/// Every session has a directory (`--session`, default `.lwir/sessions/<time>-<pid>`) with
/// an append-only event log, `events.jsonl`: `harness.session.started` (with the
/// PlannerManifest), `harness.model.called`, `harness.model.responded`,
/// `harness.tool_call.failed`, `validation.completed`, `repair.applied`, and
/// `workflow.registered` or `session.failed`. Each line is fsynced before the next step.
/// The final draft is kept there too (`draft.json`, or `last-draft.json` on failure).
///
/// After a crash, `--session DIR --resume` continues the session: recorded planner answers
/// are reused, and only the call that was in flight is made again. Before anything runs, the
/// PlannerManifest is computed again; if the definition, its tools, the system prompt, the
/// skills or the planner slot changed, the session fails closed (exit 3) naming the fields.
///
/// The planner protocol (`lwir-planner/1`) is in `lwir-spec/README.md` §8; example planners
/// are in `examples/planners/`.
///
/// Exit status: 0 registered, 1 not converged, refused by the registry, or errors in the
/// definition, 2 usage error, unreadable file or damaged session log, 3 capability drift on
/// resume.
///
/// Examples:
///   lwirc compile workflow.json --planner 'python3 planner.py' --input input.json
///   lwirc compile workflow.json --planner ./planner --session .lwir/sessions/triage
///   lwirc compile workflow.json --planner ./planner --session .lwir/sessions/triage --resume
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    /// The WorkflowDefinition to compile.
    #[arg(value_name = "WORKFLOW")]
    definition: String,
    /// The workflow input, a JSON file given to the planner (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    input: Option<String>,
    /// The registry directory (default: `$LWIR_REGISTRY`, else `.lwir/registry`).
    #[arg(long, value_name = "DIR")]
    registry: Option<PathBuf>,
    /// The session directory (default: a new one under `.lwir/sessions/`).
    #[arg(long, value_name = "DIR")]
    session: Option<PathBuf>,
    /// Continue the crashed session in `--session DIR`.
    #[arg(long, requires = "session")]
    resume: bool,
    #[command(flatten)]
    planner: PlannerArgs,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let command = args.planner.command()?;
    let limits = args.planner.limits()?;
    if args.input.as_deref() == Some("-") && args.definition == "-" {
        bail!("only one of WORKFLOW and --input can be `-` (standard input)");
    }
    let definition = read_source(&args.definition)?;
    let Some(loaded) = planning::load_definition(&definition) else {
        return Ok(exit::FINDINGS);
    };
    let input = match &args.input {
        Some(path) => match read_json(path)? {
            Some(document) => document.root().to_json(),
            None => return Ok(exit::FINDINGS),
        },
        None => Value::Null,
    };
    let mut bounds = args.planner.bounds(&loaded.value);
    // A version the registry cannot take would be found out only after every planner call.
    check_registry(&registry_dir(args.registry.clone()))?;

    let dir = args
        .session
        .clone()
        .unwrap_or_else(|| new_session_dir(&PathBuf::from(".lwir/sessions")));
    let (mut journal, input) = if args.resume {
        let (log, recorded) = EventLog::resume(&dir)?;
        let started = recorded
            .first()
            .and_then(|e| match SessionEvent::parse(e) {
                Ok(SessionEvent::Started(data)) => serde_json::from_value::<Started>(data).ok(),
                _ => None,
            })
            .with_context(|| {
                format!(
                    "the session log `{}` does not begin with a harness.session.started \
                     event; it cannot be resumed",
                    dir.join(LOG_FILE).display()
                )
            })?;
        if let Err(drift) = started.manifest.check(&loaded.manifest) {
            eprintln!("lwirc: CapabilityDriftError: {drift}; the session was not resumed");
            for difference in &drift.differences {
                eprintln!("  - {}", sanitize(&difference.to_string()));
            }
            eprintln!(
                "a session runs against what it started with; start a new session to compile \
                 against today's definition"
            );
            return Ok(exit::DRIFT);
        }
        if args.input.is_some() && input != started.input {
            bail!(
                "--input differs from the input the session started with; a resumed session \
                 keeps its input (leave --input out to use the recorded one)"
            );
        }
        for (flag, given, recorded) in [
            (
                "--max-attempts",
                args.planner.max_attempts,
                started.max_repair_attempts,
            ),
            (
                "--max-planner-calls",
                args.planner.max_planner_calls,
                started.max_planner_calls,
            ),
        ] {
            if given.is_some_and(|n| n != recorded) {
                bail!(
                    "{flag} differs from the session's recorded bound ({recorded}); a resumed session keeps its bounds"
                );
            }
        }
        bounds.max_repair_attempts = started.max_repair_attempts;
        bounds.max_planner_calls = started.max_planner_calls;
        if !args.planner.quiet {
            eprintln!(
                "resuming session {} ({} committed events)",
                dir.display(),
                recorded.len()
            );
        }
        let input = started.input.clone();
        (Journal::resumed(log, recorded, 1), input)
    } else {
        let log = EventLog::create(&dir)?;
        let mut journal = Journal::new(log);
        let started = Started {
            command: "compile".to_owned(),
            workflow: loaded.name.clone(),
            definition: definition.name.clone(),
            planner: command.to_string(),
            manifest: loaded.manifest.clone(),
            input: input.clone(),
            max_repair_attempts: bounds.max_repair_attempts,
            max_planner_calls: bounds.max_planner_calls,
            planner_timeout_ms: u64::try_from(limits.timeout.as_millis()).unwrap_or(u64::MAX),
            planner_max_output: limits.max_output,
        };
        journal.record(SessionEvent::Started(serde_json::to_value(&started)?))?;
        if !args.planner.quiet {
            eprintln!(
                "session {} · planner `{command}` · at most {} planner calls, {} repair attempts",
                dir.display(),
                bounds.max_planner_calls,
                bounds.max_repair_attempts
            );
        }
        (journal, input)
    };
    let journal = &mut journal;
    if !args.planner.quiet {
        journal.observe(planning::progress);
    }

    let context = Context {
        workflow: loaded.value.clone(),
        manifest: serde_json::to_value(&loaded.manifest)?,
        input,
    };
    let mut check = PipelineCheck::new(definition, dir.join("draft.json").display().to_string());
    let mut planner = ProcessPlanner::new(command, limits);
    let outcome = session::run(
        Start::Plan,
        &context,
        bounds,
        &mut check,
        &mut planner,
        journal,
    )?;
    if outcome.report.converged() {
        register(&args, &dir, &outcome, &check, journal)
    } else {
        if let Some(draft) = &outcome.draft {
            write_atomically(&dir.join("last-draft.json"), draft)?;
        }
        journal.record(failed(&outcome, None))?;
        planning::report(&outcome, &check, &args.planner, Some(&dir))?;
        Ok(exit::FINDINGS)
    }
}

/// Checks, before any planner call, that the registry in `dir` can take a version.
fn check_registry(dir: &Path) -> anyhow::Result<()> {
    lwirc::registry::Directory::new(dir)
        .check_writable()
        .map_err(|why| {
            anyhow::anyhow!(
                "the registry `{}` cannot be used: {why}; no planner was called (choose \
                 another --registry)",
                dir.display()
            )
        })
}

/// `session.failed` for `outcome`, and why the registry refused it when it did.
fn failed(outcome: &Outcome, refused: Option<String>) -> SessionEvent {
    SessionEvent::SessionFailed(SessionFailed {
        reason: refused.clone().unwrap_or_else(|| outcome.report.reason()),
        // Serialising the report (plain data) cannot fail.
        report: serde_json::to_value(&outcome.report).unwrap_or_default(),
        refused,
    })
}

/// Registers the converged draft and records `workflow.registered`.
fn register(
    args: &Args,
    dir: &Path,
    outcome: &Outcome,
    check: &PipelineCheck,
    journal: &mut Journal<'_>,
) -> anyhow::Result<u8> {
    let draft = outcome.draft.as_deref().unwrap_or_default();
    write_atomically(&dir.join("draft.json"), draft)?;
    let validation = check.compiled(draft);
    let registration = Registration::new(&validation, SystemTime::now())
        .map_err(|why| anyhow::anyhow!("the converged draft cannot be registered: {why}"))?;
    let registry_dir = registry_dir(args.registry.clone());
    let registry = Registry::at(&registry_dir);
    let entry = match registry.register(&registration, false) {
        Ok(
            Registered::New(entry) | Registered::Already(entry) | Registered::Rebased { entry, .. },
        ) => entry,
        Err(RegistryError::Storage(e)) => return Err(super::storage_error(e)),
        Err(e) => {
            let why = format!("the registry refused the draft: {e}");
            journal.record(failed(outcome, Some(why.clone())))?;
            eprintln!("lwirc: {}", sanitize(&why));
            return Ok(exit::FINDINGS);
        }
    };
    journal.record(SessionEvent::WorkflowRegistered(WorkflowRegistered {
        version: entry.version.to_string(),
        workflow: entry.record.workflow.clone(),
    }))?;
    if !args.planner.quiet && args.planner.format == ReportFormat::Human {
        eprintln!(
            "`{}` is {} in {} ({} planner call{}, {} safe fix{})",
            sanitize(&entry.record.workflow),
            entry.version,
            registry_dir.display(),
            outcome.report.planner_calls,
            if outcome.report.planner_calls == 1 {
                ""
            } else {
                "s"
            },
            outcome.report.fixes_applied,
            if outcome.report.fixes_applied == 1 {
                ""
            } else {
                "es"
            },
        );
    }
    match args.planner.format {
        ReportFormat::Human => print(&format!("{}\n", entry.version))?,
        ReportFormat::Json => planning::report(outcome, check, &args.planner, Some(dir))?,
    }
    Ok(exit::OK)
}
