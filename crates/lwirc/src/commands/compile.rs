//! `lwirc compile`: definition → planner draft → validate → repair → register, event-logged.

use std::path::{Path, PathBuf};

use anyhow::bail;
use lwir_render::terminal::sanitize;
use lwir_repair::repair_loop::Bounds;
use lwir_session::{self as session, Compiled, End, Observer, SessionError, Settings};

use super::planning::{self, PlannerArgs, ReportFormat};
use super::{open_registry, print, read_json, read_source};
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
/// The planner protocol (`lwir-planner/1`) is in `crates/lwir-spec/README.md` §8; example planners
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
    /// The registry: a directory, or `oci://HOST[:PORT]/REPOSITORY` (`oci+http://` for
    /// plain HTTP), which may stay silent for `$LWIR_REGISTRY_TIMEOUT` seconds (30) at a
    /// time (default: `$LWIR_REGISTRY`, else `.lwir/registry`).
    #[arg(long, value_name = "REGISTRY")]
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
    let limits = args.planner.limits()?;
    if args.input.as_deref() == Some("-") && args.definition == "-" {
        bail!("only one of WORKFLOW and --input can be `-` (standard input)");
    }
    let Some(mut prepared) = planning::prepare(read_source(&args.definition)?) else {
        return Ok(exit::FINDINGS);
    };
    args.planner.adjust_manifest(&mut prepared);
    let input = match &args.input {
        Some(path) => match read_json(path)? {
            Some(document) => Some(document.root().to_json()),
            None => return Ok(exit::FINDINGS),
        },
        None => None,
    };
    let settings = Settings {
        dir: args
            .session
            .clone()
            .unwrap_or_else(|| session::new_session_dir(Path::new(".lwir/sessions"))),
        resume: args.resume,
        input,
        max_repair_attempts: args.planner.max_attempts,
        max_planner_calls: args.planner.max_planner_calls,
        planner: args.planner.describe(&prepared)?,
        limits,
    };
    let (registry, registry_name) = open_registry(args.registry.clone(), false)?;
    let mut planner =
        args.planner
            .planner(&prepared, &args.definition, &settings.dir, args.resume)?;
    let mut progress = Progress {
        quiet: args.planner.quiet,
        planner: settings.planner.clone(),
    };
    let compiled = match session::compile(
        &prepared,
        &settings,
        &mut *planner,
        &registry,
        &mut progress,
    ) {
        Ok(compiled) => compiled,
        Err(SessionError::Drift(drift)) => {
            eprintln!("lwirc: CapabilityDriftError: {drift}; the session was not resumed");
            for difference in &drift.differences {
                eprintln!("  - {}", sanitize(&difference.to_string()));
            }
            eprintln!(
                "a session runs against what it started with; start a new session to \
                     compile against today's definition"
            );
            return Ok(exit::DRIFT);
        }
        Err(SessionError::Registry(why)) => bail!(
            "the registry `{}` cannot be used: {why}; no planner was called (choose \
                 another --registry)",
            registry_name
        ),
        Err(other) => return Err(other.into()),
    };
    report(&args, &compiled, &registry_name)
}

/// Progress on standard error, unless `--quiet`.
struct Progress {
    quiet: bool,
    planner: String,
}

impl Observer for Progress {
    fn begun(&mut self, dir: &Path, bounds: Bounds, resumed: Option<usize>) {
        if self.quiet {
            return;
        }
        match resumed {
            Some(events) => {
                eprintln!(
                    "resuming session {} ({events} committed events)",
                    dir.display()
                );
            }
            None => eprintln!(
                "session {} · planner `{}` · at most {} planner calls, {} repair attempts",
                dir.display(),
                self.planner,
                bounds.max_planner_calls,
                bounds.max_repair_attempts
            ),
        }
    }

    fn event(&mut self, event: &lwir_repair::events::SessionEvent, replayed: bool) {
        if !self.quiet {
            planning::progress(event, replayed);
        }
    }
}

/// Prints how the session ended; its exit status.
fn report(args: &Args, compiled: &Compiled, registry_name: &str) -> anyhow::Result<u8> {
    let Compiled {
        dir,
        outcome,
        end,
        check,
    } = compiled;
    match end {
        End::NotConverged => {
            planning::report(outcome, check, &args.planner, Some(dir))?;
            Ok(exit::FINDINGS)
        }
        End::Refused(why) => {
            eprintln!("lwirc: {}", sanitize(why));
            Ok(exit::FINDINGS)
        }
        End::Registered(entry) => {
            let report = &outcome.report;
            if !args.planner.quiet && args.planner.format == ReportFormat::Human {
                let plural = |n: u32, one: &'static str, many: &'static str| {
                    if n == 1 { one } else { many }
                };
                eprintln!(
                    "`{}` is {} in {} ({} planner call{}, {} safe fix{})",
                    sanitize(&entry.record.workflow),
                    entry.version,
                    registry_name,
                    report.planner_calls,
                    plural(report.planner_calls, "", "s"),
                    report.fixes_applied,
                    plural(report.fixes_applied, "", "es"),
                );
            }
            match args.planner.format {
                ReportFormat::Human => print(&format!("{}\n", entry.version))?,
                ReportFormat::Json => planning::report(outcome, check, &args.planner, Some(dir))?,
            }
            Ok(exit::OK)
        }
    }
}
