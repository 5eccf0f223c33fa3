//! What `lwirc repair` and `lwirc compile` share: the planner flags, progress lines on
//! standard error, and the final report.

use std::path::Path;
use std::time::Duration;

use lwir_repair::events::Event;
use lwir_repair::process::{self, Limits, PlannerCommand};
use lwir_repair::session::{Bounds, Outcome};
use lwirc::manifest::{PlannerManifest, harness_id};
use lwirc::pipeline::Source;
use lwirc::render::human;
use lwirc::render::terminal::sanitize;
use lwirc::session::PipelineCheck;
use serde_json::{Value, json};

use super::{ColorChoice, print, stderr_color};

/// How to run the planner, and the bounds of the loop.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct PlannerArgs {
    /// The planner command: run directly (split like a shell would, but without a shell),
    /// one JSON request on its standard input, one JSON answer on its standard output.
    #[arg(long, value_name = "CMD")]
    pub(crate) planner: String,
    /// Run the planner command through `sh -c` (pipes, variables, `&&`).
    #[arg(long)]
    pub(crate) planner_shell: bool,
    /// Seconds one planner call may take before the planner (and everything it started) is
    /// killed: from 0.001 to 86400.
    #[arg(long, value_name = "SECONDS", default_value_t = process::DEFAULT_TIMEOUT.as_secs_f64(),
          value_parser = super::ranges::timeout_seconds)]
    pub(crate) planner_timeout: f64,
    /// The most bytes read from the planner's standard output per call: from 1 to 1073741824.
    #[arg(long, value_name = "BYTES", default_value_t = process::DEFAULT_MAX_OUTPUT,
          value_parser = super::ranges::max_output_bytes)]
    pub(crate) planner_max_output: usize,
    /// Repair requests allowed, from 0 to 1000 (default: the definition's
    /// `planner.max_repair_attempts`, else 3).
    #[arg(long, value_name = "N", value_parser = super::ranges::max_attempts)]
    pub(crate) max_attempts: Option<u32>,
    /// Planner calls allowed, the first draft included: 0 to 1000 (0: safe fixes alone)
    /// (default: the definition's `planner.max_planner_calls`, else 8).
    #[arg(long, value_name = "N", value_parser = super::ranges::max_planner_calls)]
    pub(crate) max_planner_calls: Option<u32>,
    /// Output format of the final report on standard output.
    #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
    pub(crate) format: ReportFormat,
    /// When to colour the findings.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub(crate) color: ColorChoice,
    /// No progress lines on standard error.
    #[arg(short, long)]
    pub(crate) quiet: bool,
}

/// Formats of the final report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ReportFormat {
    /// Progress and findings for people.
    Human,
    /// One JSON object: the report, the last findings, the version.
    Json,
}

impl PlannerArgs {
    pub(crate) fn command(&self) -> anyhow::Result<PlannerCommand> {
        if self.planner_shell {
            Ok(PlannerCommand::shell(&self.planner))
        } else {
            Ok(PlannerCommand::parse(&self.planner)?)
        }
    }

    pub(crate) fn limits(&self) -> anyhow::Result<Limits> {
        if !(self.planner_timeout.is_finite() && self.planner_timeout > 0.0) {
            anyhow::bail!("--planner-timeout must be a positive number of seconds");
        }
        Ok(Limits {
            timeout: Duration::from_secs_f64(self.planner_timeout),
            max_output: self.planner_max_output,
        })
    }

    /// The definition's bounds with the flags' overrides.
    pub(crate) fn bounds(&self, definition: &Value) -> Bounds {
        let mut bounds = lwirc::session::bounds_of(definition);
        if let Some(n) = self.max_attempts {
            bounds.max_repair_attempts = n;
        }
        if let Some(n) = self.max_planner_calls {
            bounds.max_planner_calls = n;
        }
        bounds
    }
}

/// A definition a session can run against.
pub(crate) struct Loaded {
    /// As JSON.
    pub(crate) value: Value,
    /// Its PlannerManifest.
    pub(crate) manifest: PlannerManifest,
    /// Its `name`.
    pub(crate) name: String,
}

/// Reads the definition for a session: `None` (after printing why on standard error) when it
/// is not I-JSON or has errors of its own — no planner call could succeed against it.
pub(crate) fn load_definition(definition: &Source) -> Option<Loaded> {
    let document = super::document_or_report(definition.clone())?;
    if let Some(errors) = lwirc::session::definition_errors(definition) {
        let options = human::HumanOptions {
            color: stderr_color(),
            ..Default::default()
        };
        eprint!("{}", human::render(&errors, options));
        eprintln!(
            "lwirc: the definition `{}` has errors; fix them before asking a planner",
            sanitize(&definition.name)
        );
        return None;
    }
    let value = document.root().to_json();
    Some(Loaded {
        manifest: PlannerManifest::of(document.root(), harness_id()),
        name: value
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        value,
    })
}

/// Prints one progress line per event on standard error.
pub(crate) fn progress(event: &Event, replayed: bool) {
    let mark = if replayed { "(replayed) " } else { "" };
    let data = &event.data;
    let num = |key: &str| data.get(key).and_then(Value::as_u64).unwrap_or(0);
    let raw = |key: &str| data.get(key).and_then(Value::as_str).unwrap_or("");
    let text = |key: &str| sanitize(raw(key));
    match event.event.as_str() {
        "harness.session.started" => {}
        "harness.model.called" => {
            let what = match data.get("attempt").and_then(Value::as_u64) {
                Some(attempt) => format!("repair attempt {attempt}"),
                None => "plan a first draft".to_owned(),
            };
            eprintln!("{mark}planner call {}: {what}", num("call"));
        }
        "harness.model.responded" => {
            let answer = text("answer");
            // An attention's rationale is shown once, with its finding at the end.
            let detail = if answer == "draft" {
                format!(" ({} bytes)", raw("stdout").len())
            } else {
                String::new()
            };
            eprintln!(
                "{mark}  answered {answer}{detail} in {:.2} s",
                num("elapsed_ms") as f64 / 1000.0
            );
        }
        "harness.tool_call.failed" => {
            eprintln!("{mark}  failed: {} {}", text("code"), text("message"));
            let tail = raw("stderr_tail");
            if !tail.is_empty() {
                for line in tail
                    .lines()
                    .rev()
                    .take(5)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                {
                    eprintln!("{mark}    | {}", sanitize(line));
                }
            }
        }
        "validation.completed" => {
            let (errors, warnings) = (num("errors"), num("warnings"));
            if errors == 0 {
                eprintln!(
                    "{mark}  validation: no errors, {warnings} warning{}",
                    if warnings == 1 { "" } else { "s" }
                );
                return;
            }
            eprintln!(
                "{mark}  validation: {errors} error{}, {warnings} warning{}",
                if errors == 1 { "" } else { "s" },
                if warnings == 1 { "" } else { "s" }
            );
            let findings = data.get("findings").and_then(Value::as_array);
            let errors: Vec<&Value> = findings
                .into_iter()
                .flatten()
                .filter(|f| f["severity"] == "error")
                .collect();
            for f in errors.iter().take(12) {
                let fix = match f["fix"].as_str() {
                    Some("machine-applicable") => " [safe fix]",
                    _ => "",
                };
                eprintln!(
                    "{mark}    {} {}: {}{fix}",
                    sanitize(f["code"].as_str().unwrap_or("")),
                    pointer_text(f["pointer"].as_str().unwrap_or("")),
                    sanitize(f["message"].as_str().unwrap_or(""))
                );
            }
            if errors.len() > 12 {
                eprintln!("{mark}    … and {} more", errors.len() - 12);
            }
        }
        "repair.applied" => {
            let applied = data["applied"].as_array().map_or(0, Vec::len);
            let rolled_back = data["rolled_back"].as_array().map_or(0, Vec::len);
            let codes: Vec<String> = data["applied"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| {
                    format!(
                        "{} {}",
                        sanitize(f["code"].as_str().unwrap_or("")),
                        pointer_text(f["pointer"].as_str().unwrap_or(""))
                    )
                })
                .collect();
            let back = if rolled_back > 0 {
                let why: Vec<String> = data["rolled_back"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(rollback_text)
                    .collect();
                format!(", rolled back {rolled_back} ({})", why.join("; "))
            } else {
                String::new()
            };
            eprintln!(
                "{mark}  safe fixes: applied {applied} ({}){back}",
                codes.join(", ")
            );
        }
        // The command itself says how the session ended.
        _ => {}
    }
}

/// A rolled-back fix (as logged) and why: `LW301 /steps/0/tool: it added LW304
/// /steps/0/args/state`.
fn rollback_text(fix: &Value) -> String {
    let code_and_pointer = |v: &Value| {
        format!(
            "{} {}",
            sanitize(v["code"].as_str().unwrap_or("")),
            pointer_text(v["pointer"].as_str().unwrap_or(""))
        )
    };
    let added: Vec<String> = fix["added_errors"]
        .as_array()
        .into_iter()
        .flatten()
        .map(code_and_pointer)
        .collect();
    let why = if fix["untried"] == true {
        "not tried in this pass (it had spent its one-by-one checks)".to_owned()
    } else if added.is_empty() {
        "its patch no longer applied".to_owned()
    } else {
        format!("it added {}", added.join(", "))
    };
    format!("{}: {why}", code_and_pointer(fix))
}

fn pointer_text(pointer: &str) -> std::borrow::Cow<'_, str> {
    if pointer.is_empty() {
        "/".into()
    } else {
        sanitize(pointer)
    }
}

/// Prints the final report: human on standard error (findings, planner problems, the
/// reason), JSON on standard output.
pub(crate) fn report(
    outcome: &Outcome,
    check: &PipelineCheck,
    args: &PlannerArgs,
    session: Option<&Path>,
) -> anyhow::Result<()> {
    let report = &outcome.report;
    match args.format {
        ReportFormat::Json => {
            let findings = outcome
                .checked
                .as_ref()
                .map_or(json!([]), |c| c.findings_json.clone());
            let mut out = json!({
                "report": report,
                "reason": report.reason(),
                "findings": findings,
            });
            if let Some(dir) = session {
                out["session"] = json!(dir.display().to_string());
            }
            print(&(serde_json::to_string_pretty(&out)? + "\n"))
        }
        ReportFormat::Human => {
            if !report.converged() {
                if let Some(draft) = &outcome.draft {
                    let mut validation = check.validation(draft);
                    if let Some(dir) = session {
                        // The file the session keeps it in.
                        validation.draft.name = dir.join("last-draft.json").display().to_string();
                    }
                    if !validation.findings.is_empty() {
                        eprintln!("\nthe last draft:");
                        eprint!(
                            "{}",
                            human::render(
                                &validation,
                                human::HumanOptions {
                                    color: stderr_color()
                                        && !matches!(args.color, ColorChoice::Never),
                                    ..Default::default()
                                }
                            )
                        );
                    }
                }
                for fix in &report.rolled_back {
                    let fix = serde_json::to_value(fix).unwrap_or_default();
                    eprintln!("safe fix rolled back: {}", rollback_text(&fix));
                }
                for f in &report.planner_findings {
                    let call = (f.planner.as_ref().and_then(|p| p.call))
                        .map(|c| format!(" (call {c})"))
                        .unwrap_or_default();
                    eprintln!("error[{}]{call}: {}", f.code, sanitize(&f.message));
                    if let Some(help) = &f.help {
                        eprintln!("  help: {}", sanitize(help));
                    }
                }
                eprintln!("lwirc: not converged: {}", report.reason());
                if let Some(dir) = session {
                    eprintln!("the session log is {}", dir.join("events.jsonl").display());
                }
            }
            Ok(())
        }
    }
}
