//! `lwirc repair`: the bounded repair loop on a draft, without registering it.

use lwir_repair::journal::Journal;
use lwir_repair::repair_loop::{self, Context, Start};
use lwir_session::PipelineCheck;
use serde_json::Value;

use super::planning::{self, PlannerArgs};
use super::{DraftArgs, print_bytes, write_atomically};
use crate::exit;

/// Repair a draft: safe fixes first, then the planner, within bounds.
///
/// The loop: validate the draft against its definition; apply the machine-applicable fixes
/// (in passes; a fix that adds an error is rolled back); if errors remain, send the draft,
/// its findings and the definition to the planner and validate what it proposes; repeat.
/// It stops when the draft has no errors (exit 0), or when `max_repair_attempts` or
/// `max_planner_calls` are spent, the planner answers `attention`, or a state repeats
/// (exit 1, with a report that says why: the planner gave no proposal, or its proposals
/// kept failing validation). `maybe-incorrect` fixes are never applied unattended.
///
/// The planner is any program that reads one JSON request on standard input and prints one
/// JSON answer (protocol `lwir-planner/1`, see `crates/lwir-spec/README.md` §8). It is run without
/// a shell unless `--planner-shell` is given; each call has a timeout.
///
/// With `--max-planner-calls 0` only the safe fixes run, and no planner is needed: what
/// `lwirc fix` does, with the loop's report.
///
/// The repaired draft goes to `-o OUT` (written atomically) or standard output; on failure
/// nothing is written there, unless `--keep-partial` is given: then the last draft (the
/// safe fixes applied) is written there all the same, and the exit status is still 1.
/// Progress goes to standard error.
///
/// Exit status: 0 converged, 1 not converged (or the definition has errors), 2 usage error
/// or unreadable file.
///
/// Examples:
///   lwirc repair draft.json -d workflow.json --planner 'python3 planner.py' -o fixed.json
///   lwirc repair draft.json -d workflow.json --planner ./planner --max-attempts 1
///   lwirc repair draft.json -d workflow.json --planner 'examples/planners/attention.sh'
///   lwirc repair draft.json -d workflow.json --max-planner-calls 0 --keep-partial -o out.json
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    #[command(flatten)]
    files: DraftArgs,
    /// Where to write the repaired draft (default: standard output).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<std::path::PathBuf>,
    /// When the loop does not converge, write the last draft (partly fixed) to `-o OUT`
    /// anyway.
    #[arg(long, requires = "output")]
    keep_partial: bool,
    #[command(flatten)]
    planner: PlannerArgs,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let (draft, definition) = args.files.read()?;
    let Some(mut prepared) = planning::prepare(definition) else {
        return Ok(exit::FINDINGS);
    };
    args.planner.adjust_manifest(&mut prepared);
    let bounds = args.planner.bounds(&prepared.value);
    let context = Context {
        workflow: prepared.value.clone(),
        manifest: serde_json::to_value(&prepared.manifest)?,
        input: Value::Null,
    };
    let mut check = PipelineCheck::against(prepared.definition.clone(), draft.name.clone());
    // The built-in harness records its turns and keeps its scratch space in a directory of
    // its own, as a compile session does.
    let record = crate::commands::repair_record_dir();
    let no_planner = args.planner.planner.is_none() && args.planner.planner_url.is_none();
    let mut planner: Box<dyn lwir_repair::harness::Planner> =
        if no_planner && bounds.max_planner_calls == 0 {
            // The loop never calls it: safe fixes alone.
            Box::new(Unused)
        } else {
            args.planner
                .planner(&prepared, &args.files.definition, &record, false)?
        };
    let mut journal = Journal::in_memory();
    if !args.planner.quiet {
        journal.observe(planning::progress);
    }
    let outcome = repair_loop::run(
        Start::Draft(draft.bytes),
        &context,
        bounds,
        &mut check,
        &mut *planner,
        &mut journal,
    )?;
    planning::report(&outcome, &check, &args.planner, None)?;
    if !outcome.report.converged() {
        if args.keep_partial
            && let (Some(path), Some(bytes)) = (&args.output, &outcome.draft)
        {
            write_atomically(path, bytes)?;
            if !args.planner.quiet {
                eprintln!(
                    "wrote the partly repaired draft ({} error{} left) to {}",
                    outcome.report.errors,
                    if outcome.report.errors == 1 { "" } else { "s" },
                    path.display()
                );
            }
        }
        return Ok(exit::FINDINGS);
    }
    let bytes = outcome.draft.unwrap_or_default();
    match &args.output {
        Some(path) => {
            write_atomically(path, &bytes)?;
            if !args.planner.quiet {
                eprintln!("wrote the repaired draft to {}", path.display());
            }
        }
        None if args.planner.format == planning::ReportFormat::Human => print_bytes(&bytes)?,
        None => {}
    }
    Ok(exit::OK)
}

/// The planner of a session allowed no planner call: never called.
struct Unused;

impl lwir_repair::harness::Planner for Unused {
    fn call(
        &mut self,
        _request: &lwir_repair::protocol::Request,
        _bytes: &[u8],
    ) -> Result<lwir_repair::harness::Response, lwir_repair::harness::PlannerFailure> {
        Err(lwir_repair::harness::PlannerFailure {
            kind: lwir_repair::harness::FailureKind::NotStarted,
            message: "no planner was given (--max-planner-calls 0)".to_owned(),
            stderr_tail: String::new(),
            elapsed: std::time::Duration::ZERO,
        })
    }
}
