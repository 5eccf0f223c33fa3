//! `lwirc run`: run a registered version.

use std::io::Write;
use std::path::PathBuf;

use lwir_render::terminal::sanitize;
use lwir_render::{File, Report};
use lwir_runtime::bindings::{self, Bindings};
use lwir_runtime::effects::{Bound, Effects};
use lwir_runtime::{NewRun, Observer, OnDrift, RunError, RunEvent, RunStore, Runtime, Status};
use lwir_spec::{Finding, SpannedDocument};

use super::{open_registry, print, read_json, read_source, stderr_color};
use crate::exit;

/// Run a registered version: its output as JSON on standard output.
///
/// VERSION (`sha256:<hex>` or a unique prefix of its hex digits) is read from the registry
/// and re-hashed (a version that does not verify never runs). The input is checked against
/// the workflow's input schema first (findings at pointers into it, nothing called); then
/// every tool and model slot the version uses must be bound in --bindings, and the live
/// surface is compared with the version's registration record (drift). The run id comes
/// first on standard error, then progress: one line per step as it ends, named by its path
/// (`each[3]/classify` is step `classify` of item 3 of map `each`; `poll#2/fetch` of
/// iteration 2 of loop `poll`).
///
/// Every step is durable in the run's log (`--runs DIR/<run>/events.jsonl`): after a
/// crash `lwirc runs resume RUN` runs only what was in flight; after a failure `lwirc runs
/// retry RUN` runs the failed steps again; `lwirc runs replay RUN` rebuilds it without
/// calling anything.
///
/// Bindings (`lwir.bindings/1`) say where each tool and slot runs. A command tool reads
/// `{"tool", "args", "idempotency_key"}` on standard input and prints its result; a command
/// model reads the chat request and prints its answer; a model may be any OpenAI-compatible
/// server (`url`, `api_key_env`). Commands get `PATH`, `HOME`, `LANG` and the variables
/// their binding lists, nothing else of lwirc's environment. A tool bound to an MCP server
/// (`servers`: a `command` speaking MCP on standard input and output, or a streamable HTTP
/// `url`) is called over MCP, its idempotency key in `_meta` (`lwir/idempotency-key`);
/// each server is started once per run (with that minimal environment too) and shut down
/// at its end. `code.run` bodies run in the bubblewrap sandbox (as `lwirc test-code` runs
/// them); where it cannot run they fail with LW1108, nothing unconfined.
///
/// Exit status: 0 the run succeeded; 1 it failed (the step, the error and its code on
/// standard error) or the input does not fit (findings); 2 usage error, unreadable file or
/// bad bindings; 3 drift (`--on-drift fail`) or the run is paused (`--on-drift pause`).
///
/// Examples:
///   lwirc run 5c281a30 --input input.json --bindings bindings.json
///   lwirc run 5c281a30 --input input.json --bindings bindings.json --max-parallel 16 | jq .summary
///   lwirc run 5c281a30 --input input.json --bindings bindings.json --on-drift pause
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    /// The registered version: `sha256:<hex>` or a unique prefix of its hex digits.
    #[arg(value_name = "VERSION")]
    version: String,
    /// The run input: a JSON file (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    input: String,
    /// Where the tools and model slots run: a `lwir.bindings/1` file.
    #[arg(long, value_name = "FILE")]
    bindings: String,
    /// For a version registered before lwirc kept the tools' schemas in its record: the
    /// definition it was compiled against (its tools must match the record's hashes).
    #[arg(short = 'd', long = "definition", value_name = "WORKFLOW")]
    definition: Option<String>,
    #[command(flatten)]
    places: Places,
    /// What drift does: `fail` (nothing runs) or `pause` (the run is recorded as paused,
    /// for `lwirc runs resume RUN --accept-drift`).
    #[arg(long, value_enum, default_value_t = Drift::Fail)]
    on_drift: Drift,
    /// Steps that call a tool, a model or code, running at once at most (a `map` also at
    /// most its own `max_parallel`).
    #[arg(long, value_name = "N", default_value_t = lwir_runtime::run::DEFAULT_MAX_PARALLEL,
          value_parser = super::ranges::max_parallel)]
    max_parallel: usize,
    /// Progress and outcome on standard error: `human`, or `json` (one object per line).
    #[arg(long, value_enum, default_value_t = RunFormat::Human)]
    format: RunFormat,
}

/// Where runs and versions are: shared by `run` and `runs`.
#[derive(clap::Args, Clone)]
pub(crate) struct Places {
    /// The registry: a directory, or `oci://HOST[:PORT]/REPOSITORY` (default:
    /// `$LWIR_REGISTRY`, else `.lwir/registry`).
    #[arg(long, value_name = "REGISTRY", global = true)]
    pub(crate) registry: Option<PathBuf>,
    /// The store of runs (default: `$LWIR_RUNS`, else `.lwir/runs`).
    #[arg(long, value_name = "DIR", global = true)]
    pub(crate) runs: Option<PathBuf>,
}

impl Places {
    /// The store of runs.
    pub(crate) fn store(&self) -> RunStore {
        RunStore::new(
            self.runs
                .clone()
                .or_else(|| {
                    std::env::var_os("LWIR_RUNS")
                        .filter(|v| !v.is_empty())
                        .map(PathBuf::from)
                })
                .unwrap_or_else(|| PathBuf::from(lwir_runtime::log::DEFAULT_RUNS_DIR)),
        )
    }
}

/// `--on-drift`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Drift {
    Fail,
    Pause,
}

/// How a run command reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum RunFormat {
    /// Lines for people.
    Human,
    /// One JSON object per line.
    Json,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let (registry, _) = open_registry(args.places.registry.clone(), true)?;
    let Some(input) = read_json(&args.input)? else {
        return Ok(exit::FINDINGS);
    };
    let Some((bindings, bindings_doc)) = read_bindings(&args.bindings)? else {
        return Ok(exit::USAGE);
    };
    let definition = match &args.definition {
        Some(path) => match read_json(path)? {
            Some(doc) => Some(doc),
            None => return Ok(exit::FINDINGS),
        },
        None => None,
    };
    let runtime = Runtime::new(args.places.store(), &registry);
    let progress = Progress::new(args.format);
    let outcome = runtime.start(
        &NewRun {
            version: &args.version,
            input: &input,
            bindings: &bindings,
            bindings_document: Some(&bindings_doc),
            definition: definition.as_ref(),
            max_parallel: args.max_parallel,
            on_drift: match args.on_drift {
                Drift::Fail => OnDrift::Fail,
                Drift::Pause => OnDrift::Pause,
            },
        },
        &bound,
        &progress,
    );
    finish(
        outcome,
        &progress,
        Files {
            input: Some((&args.input, &input)),
            bindings: Some((&args.bindings, &bindings_doc)),
        },
    )
}

/// The effects a bindings file describes.
pub(crate) fn bound(bindings: &Bindings) -> Box<dyn Effects> {
    Box::new(Bound::new(bindings.clone()))
}

/// Reads a bindings file; `None` after printing its findings on standard error.
pub(crate) fn read_bindings(path: &str) -> anyhow::Result<Option<(Bindings, SpannedDocument)>> {
    let source = read_source(path)?;
    let read = bindings::read(source.bytes.clone());
    match (read.bindings, read.document) {
        (Some(b), Some(doc)) if read.findings.iter().all(|f| !f.is_error()) => Ok(Some((b, doc))),
        _ => {
            report_findings(&read.findings, &source.name, &source.bytes);
            Ok(None)
        }
    }
}

/// Prints `findings` about file `name` for people on standard error.
pub(crate) fn report_findings(findings: &[Finding], name: &str, bytes: &[u8]) {
    let file = File {
        name,
        bytes,
        document: None,
    };
    eprint!(
        "{}",
        lwir_render::human::render(
            Report::of_file(findings, file),
            lwir_render::human::HumanOptions {
                color: stderr_color(),
                ..Default::default()
            },
        )
    );
}

/// The files findings may point into.
pub(crate) struct Files<'a> {
    pub(crate) input: Option<(&'a str, &'a SpannedDocument)>,
    pub(crate) bindings: Option<(&'a str, &'a SpannedDocument)>,
}

/// Prints how a run ended and maps it to the exit status; its output on standard output.
pub(crate) fn finish(
    outcome: Result<lwir_runtime::Outcome, RunError>,
    progress: &Progress,
    files: Files<'_>,
) -> anyhow::Result<u8> {
    let report = match outcome {
        Ok(report) => report,
        Err(RunError::Registry(e)) => {
            eprintln!("lwirc: {}", sanitize(&e.to_string()));
            return Ok(exit::FINDINGS);
        }
        Err(RunError::Store(lwir_runtime::log::StoreError::Damaged { run, line, reason })) => {
            eprintln!(
                "lwirc: {} run-log-damaged: the log of run `{run}` is damaged at line {line}: {}",
                lwir_spec::Code::RunLogDamaged,
                sanitize(&reason)
            );
            return Ok(exit::FINDINGS);
        }
        Err(e) => return Err(anyhow::anyhow!("{e}")),
    };
    let run = report.run.as_deref().unwrap_or("-");
    let code = match &report.status {
        Status::Succeeded { output } => {
            progress.outcome(run, "succeeded", None, &report.stats);
            print(&format!("{}\n", terminal_safe_json(output)?))?;
            exit::OK
        }
        Status::Failed { step, failure } => {
            let at = step
                .as_deref()
                .map_or("the workflow's output".to_owned(), |s| {
                    format!("step `{}`", sanitize(s))
                });
            progress.outcome(
                run,
                "failed",
                Some(&format!(
                    "{at}: {} {}{}",
                    failure.code,
                    sanitize(&failure.error),
                    if report.run.is_some() {
                        format!("\n  (`lwirc runs retry {run}` runs the failed steps again)")
                    } else {
                        String::new()
                    }
                )),
                &report.stats,
            );
            if progress.format == RunFormat::Json {
                progress.json(
                    &serde_json::json!({"run": run, "status": "failed", "step": step,
                    "code": failure.code.as_str(), "error": failure.error,
                    "pointer": failure.pointer, "keyword": failure.keyword}),
                );
            }
            exit::FINDINGS
        }
        Status::Refused { input, findings } => {
            let file = if *input { files.input } else { files.bindings };
            match file {
                Some((name, doc)) => report_findings(findings, name, doc.source()),
                None => {
                    for f in findings {
                        eprintln!("{}: {}", f.code, sanitize(&f.message));
                    }
                }
            }
            if *input { exit::FINDINGS } else { exit::USAGE }
        }
        Status::Drift { findings } | Status::Paused { findings } => {
            match files.bindings {
                Some((name, doc)) => report_findings(findings, name, doc.source()),
                None => {
                    for f in findings {
                        eprintln!("{}: {}", f.code, sanitize(&f.message));
                    }
                }
            }
            if matches!(report.status, Status::Paused { .. }) {
                eprintln!(
                    "run {run} paused: the surface drifted; `lwirc runs resume {run} \
                     --accept-drift` goes on with it"
                );
            } else {
                eprintln!(
                    "lwirc: the surface drifted; nothing ran (--on-drift pause records a paused run)"
                );
            }
            exit::DRIFT
        }
        Status::Differs(d) => {
            let f = d.failure();
            eprintln!(
                "lwirc: {} replay-nondeterminism: {}; nothing more was run",
                f.code,
                sanitize(&f.error)
            );
            exit::FINDINGS
        }
        Status::Incomplete => {
            eprintln!("lwirc: run {run} stopped before its end");
            exit::FINDINGS
        }
    };
    Ok(code)
}

/// `value` as compact JSON in which every character a terminal could act on (C1 controls,
/// DEL, bidirectional overrides) is written as a `\uXXXX` escape: the same JSON value, safe
/// to print where people read it. (serde_json already escapes the C0 controls; such
/// characters can only be inside strings, so escaping them keeps the text JSON.)
pub(crate) fn terminal_safe_json(value: &serde_json::Value) -> anyhow::Result<String> {
    let text = serde_json::to_string(value)?;
    if !text.chars().any(lwir_render::terminal::is_unsafe) {
        return Ok(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if lwir_render::terminal::is_unsafe(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// Progress on standard error.
pub(crate) struct Progress {
    pub(crate) format: RunFormat,
    color: bool,
}

impl Progress {
    pub(crate) fn new(format: RunFormat) -> Self {
        Self {
            format,
            color: stderr_color(),
        }
    }

    fn line(&self, text: &str) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{text}");
    }

    pub(crate) fn json(&self, value: &serde_json::Value) {
        self.line(&value.to_string());
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// The last line: how the run ended, and its counts.
    fn outcome(&self, run: &str, status: &str, detail: Option<&str>, stats: &lwir_runtime::Stats) {
        match self.format {
            RunFormat::Human => {
                let head = format!("run {run} {status}");
                let head = if status == "succeeded" {
                    self.paint("32", &head)
                } else {
                    self.paint("31", &head)
                };
                let steps = stats.steps.max(1);
                self.line(&format!(
                    "{head} ({} step attempt{} ended, {} events, {} fsyncs, {:.2} fsyncs per step, {:.2} s)",
                    stats.steps,
                    if stats.steps == 1 { "" } else { "s" },
                    stats.events,
                    stats.fsyncs,
                    stats.fsyncs as f64 / steps as f64,
                    stats.elapsed.as_secs_f64()
                ));
                if let Some(detail) = detail {
                    self.line(&format!("  {detail}"));
                }
            }
            RunFormat::Json if status == "succeeded" => self.json(&serde_json::json!({
                "run": run, "status": status, "steps": stats.steps, "events": stats.events,
                "fsyncs": stats.fsyncs, "elapsed_s": stats.elapsed.as_secs_f64(),
                "usage": stats.usage,
            })),
            RunFormat::Json => {}
        }
    }
}

impl Observer for Progress {
    fn event(&self, event: &RunEvent, fresh: bool) {
        if !fresh {
            return;
        }
        if self.format == RunFormat::Json {
            let mut line = serde_json::json!({"event": event.name()});
            match event {
                RunEvent::RunStarted(s) => {
                    line["run"] = s.run.clone().into();
                    line["version"] = s.version.clone().into();
                }
                RunEvent::StepSucceeded(s) => {
                    line["step"] = s.step.clone().into();
                    line["attempt"] = s.attempt.into();
                }
                RunEvent::StepSkipped(s) => {
                    line["step"] = s.step.clone().into();
                }
                RunEvent::StepFailed(s) => {
                    line["step"] = s.step.clone().into();
                    line["attempt"] = s.attempt.into();
                    line["code"] = s.failure.code.as_str().into();
                    line["error"] = s.failure.error.clone().into();
                }
                RunEvent::RunResumed(r) => {
                    line["mode"] = r.mode.clone().into();
                }
                _ => return,
            }
            self.json(&line);
            return;
        }
        match event {
            RunEvent::RunStarted(s) => self.line(&format!(
                "run {} of {} ({})",
                s.run,
                sanitize(&s.workflow),
                &s.version[..s.version.len().min(19)]
            )),
            RunEvent::RunResumed(r) => self.line(&format!("{} by {}", r.mode, sanitize(&r.by))),
            RunEvent::StepSucceeded(s) if s.until.is_none() => {
                self.line(&format!(
                    "  {} {}",
                    self.paint("32", "ok"),
                    sanitize(&s.step)
                ));
            }
            RunEvent::StepSkipped(s) => {
                self.line(&format!(
                    "  {} {} (when: false)",
                    self.paint("2", "--"),
                    sanitize(&s.step)
                ));
            }
            RunEvent::StepFailed(s) => self.line(&format!(
                "  {} {} attempt {}: {} {}",
                self.paint("31", "!!"),
                sanitize(&s.step),
                s.attempt,
                s.failure.code,
                sanitize(&cut(&s.failure.error, 300))
            )),
            _ => {}
        }
    }
}

/// At most `max` characters of `text`, for one line.
fn cut(text: &str, max: usize) -> String {
    lwir_spec::text::ellipsis(&text.replace('\n', " "), max)
}
