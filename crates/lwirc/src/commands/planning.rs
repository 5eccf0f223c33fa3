//! What `lwirc repair` and `lwirc compile` share: the planner flags, progress lines on
//! standard error, and the final report.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use lwir_render::terminal::sanitize;
use lwir_render::{File, Report, human};
use lwir_repair::events::{LoggedFinding, SessionEvent};
use lwir_repair::fixes::AppliedFix;
use lwir_repair::process::{self, Limits, PlannerCommand};
use lwir_repair::repair_loop::{Bounds, Outcome};
use lwir_session::{PipelineCheck, Prepared};
use lwir_spec::{Applicability, Severity};
use lwir_validators::pipeline::Source;
use serde_json::{Value, json};

use super::{ColorChoice, print, stderr_color};

/// How to run the planner, and the bounds of the loop.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct PlannerArgs {
    /// The planner command: run directly (split like a shell would, but without a shell),
    /// one JSON request on its standard input, one JSON answer on its standard output.
    /// Required, or --planner-url, unless the session may make no planner call
    /// (`lwirc repair --max-planner-calls 0`).
    #[arg(long, value_name = "CMD")]
    pub(crate) planner: Option<String>,
    /// Plan with lwirc's built-in harness against an OpenAI-compatible chat-completions
    /// server: requests go to `URL/chat/completions`, with `$OPENAI_API_KEY` (when set) as
    /// a bearer token. The model is the planner slot's (`planner.model` of the definition),
    /// or --planner-model. The server must accept the connection within 10 s, and answer
    /// within --planner-timeout; a redirect is not followed. With --planner too, the
    /// command plans and the harness serves the calls it answers
    /// `{"kind": "delegate_to_default"}` to. Where the sandbox runs (`lwirc sandbox
    /// check`), the planner also gets `bash` (in its scratch, with the memory stores at
    /// /mnt/memory/) and `test_code`; where it does not, neither is offered.
    #[arg(long, value_name = "URL", env = "LWIRC_PLANNER_URL")]
    pub(crate) planner_url: Option<String>,
    /// The model name to ask the server for (default: the planner slot's `model`).
    #[arg(long, value_name = "NAME", requires = "planner_url")]
    pub(crate) planner_model: Option<String>,
    /// The skills directory, `<DIR>/<name>/SKILL.md` (default: `.agents/skills` beside
    /// the definition).
    #[arg(long, value_name = "DIR", requires = "planner_url")]
    pub(crate) skills: Option<std::path::PathBuf>,
    /// The memory directory: `<DIR>/workflow/<workflow name>/` (read-write) and
    /// `<DIR>/org/` (read-only) (default: `.lwir/memory`).
    #[arg(long, value_name = "DIR", requires = "planner_url")]
    pub(crate) memory: Option<std::path::PathBuf>,
    /// Model turns allowed in one planner call: from 1 to 100.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(crate) max_model_turns: u32,
    /// Tool calls allowed in one model turn: from 1 to 100.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(crate) max_tool_calls: u32,
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
    /// The sandbox of the harness's `bash` and `test_code`, probed once (`None`: it cannot
    /// run here, and neither tool is offered).
    #[arg(skip)]
    sandbox: OnceLock<Option<lwir_model::code::CodeRunner>>,
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
        let line = self.planner.as_deref().unwrap_or_default();
        if self.planner_shell {
            Ok(PlannerCommand::shell(line))
        } else {
            PlannerCommand::parse(line).map_err(|e| anyhow::anyhow!("--planner: {e}"))
        }
    }

    /// With the built-in harness, the PlannerManifest names it, the memory stores it
    /// mounts, and the tools it offers (in `globalToolsHash`, beside the definition's).
    pub(crate) fn adjust_manifest(&self, prepared: &mut Prepared) {
        if self.planner_url.is_some() {
            prepared.manifest.harness_id = lwir_model::harness_id();
            prepared.manifest.memory_store_ids = lwir_model::MEMORY_STORES
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            prepared.manifest.global_tools_hash =
                lwir_model::tools_hash(prepared.value.get("tools"), self.sandbox().is_some());
        }
    }

    /// The sandbox of the built-in harness's `bash` and `test_code`, probed the first time;
    /// where it cannot run, standard error says so once, and neither tool is offered.
    fn sandbox(&self) -> Option<&lwir_model::code::CodeRunner> {
        self.sandbox
            .get_or_init(|| match lwir_model::code::CodeRunner::probe() {
                Ok(runner) => Some(runner),
                Err(why) => {
                    eprintln!(
                        "lwirc: the planner is not offered `bash` or `test_code`: {}",
                        sanitize(&why.to_string())
                    );
                    None
                }
            })
            .as_ref()
    }

    /// The planner as a session names it: the command, or the model server and model.
    pub(crate) fn describe(&self, prepared: &Prepared) -> anyhow::Result<String> {
        match &self.planner_url {
            Some(url) => Ok(format!(
                "model server {} (model {})",
                lwir_spec::redact::redact(url),
                self.model(prepared)?
            )),
            None => Ok(self.command()?.to_string()),
        }
    }

    fn model(&self, prepared: &Prepared) -> anyhow::Result<String> {
        if let Some(model) = &self.planner_model {
            return Ok(model.clone());
        }
        let slot = prepared.value["planner"]["model"].as_str();
        slot.and_then(|slot| prepared.value["models"][slot]["model"].as_str())
            .map(str::to_owned)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "the definition's planner has no model slot with a `model`; name the model with --planner-model"
                )
            })
    }

    /// The planner of a session: the command, or the built-in harness (recording its
    /// turns and keeping its scratch space in `session_dir`).
    pub(crate) fn planner(
        &self,
        prepared: &Prepared,
        definition_path: &str,
        session_dir: &Path,
        resume: bool,
    ) -> anyhow::Result<Box<dyn lwir_repair::harness::Planner>> {
        let limits = self.limits()?;
        let process = match &self.planner {
            Some(_) => Some(lwir_repair::harness::ProcessPlanner::new(
                self.command()?,
                limits,
            )),
            None => None,
        };
        let Some(url) = &self.planner_url else {
            let Some(process) = process else {
                anyhow::bail!("give --planner CMD or --planner-url URL");
            };
            return Ok(Box::new(lwir_model::Delegating {
                process,
                model: None,
            }));
        };
        let beside = Path::new(definition_path)
            .parent()
            .unwrap_or(Path::new("."));
        let skills_dir = self
            .skills
            .clone()
            .unwrap_or_else(|| beside.join(".agents/skills"));
        let skills = prepared.value["planner"]["skills"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["name"].as_str())
            .filter(|name| {
                !name.is_empty() && !name.contains(['/', '\\']) && !name.starts_with('.')
            })
            .map(str::to_owned)
            .collect();
        let memory = self
            .memory
            .clone()
            .unwrap_or_else(|| Path::new(".lwir/memory").to_path_buf());
        let config = lwir_model::ModelConfig {
            url: url.clone(),
            model: self.model(prepared)?,
            key: std::env::var("OPENAI_API_KEY")
                .ok()
                .filter(|k| !k.is_empty()),
            max_turns: self.max_model_turns,
            max_tool_calls: self.max_tool_calls,
            timeout: limits.timeout,
            places: lwir_model::Places {
                skills_dir,
                skills,
                workflow_memory: memory.join("workflow").join(&prepared.name),
                org_memory: memory.join("org"),
                scratch: session_dir.join("scratch"),
            },
            record: session_dir.join("model"),
            resume,
            code: self.sandbox().cloned(),
            on_tool: (!self.quiet).then(|| Arc::new(tool_progress) as lwir_model::ToolObserver),
        };
        let planner =
            lwir_model::ModelPlanner::new(config, prepared.definition.clone(), &prepared.value)
                .map_err(|e| anyhow::anyhow!("the model turn log of the session: {e}"))?;
        lwir_repair::files::create_dirs(&session_dir.join("model"))?;
        super::write_atomically(
            &session_dir.join("model").join("system-prompt.txt"),
            planner.system_prompt().as_bytes(),
        )?;
        Ok(match process {
            Some(process) => Box::new(lwir_model::Delegating {
                process,
                model: Some(planner),
            }),
            None => Box::new(planner),
        })
    }

    pub(crate) fn limits(&self) -> anyhow::Result<Limits> {
        if !(self.planner_timeout.is_finite() && self.planner_timeout > 0.0) {
            anyhow::bail!("--planner-timeout must be a positive number of seconds");
        }
        Ok(super::process_limits(
            self.planner_timeout,
            self.planner_max_output,
        ))
    }

    /// The definition's bounds with the flags' overrides.
    pub(crate) fn bounds(&self, definition: &Value) -> Bounds {
        lwir_session::bounds_of(definition, self.max_attempts, self.max_planner_calls)
    }
}

/// Reads the definition for a session: `None` (after printing why on standard error) when it
/// is not I-JSON or has errors of its own — no planner call could succeed against it.
pub(crate) fn prepare(definition: Source) -> Option<Prepared> {
    let name = definition.name.clone();
    match Prepared::new(definition) {
        Ok(prepared) => Some(prepared),
        Err(errors) => {
            let options = human::HumanOptions {
                color: stderr_color(),
                ..Default::default()
            };
            super::say_misplaced(&errors);
            eprint!("{}", human::render(&*errors, options));
            eprintln!(
                "lwirc: the definition `{}` has errors; fix them before asking a planner",
                sanitize(&name)
            );
            None
        }
    }
}

/// Prints one progress line per event on standard error.
pub(crate) fn progress(event: &SessionEvent, replayed: bool) {
    let mark = if replayed { "(replayed) " } else { "" };
    match event {
        SessionEvent::ModelCalled(called) => {
            let what = match called.attempt {
                Some(attempt) => format!("repair attempt {attempt}"),
                None => "plan a first draft".to_owned(),
            };
            eprintln!("{mark}planner call {}: {what}", called.call);
        }
        SessionEvent::ModelResponded(responded) => {
            let answer = sanitize(&responded.answer);
            // An attention's rationale is shown once, with its finding at the end.
            let detail = if answer == "draft" {
                format!(" ({} bytes)", responded.stdout.len())
            } else {
                String::new()
            };
            eprintln!(
                "{mark}  answered {answer}{detail} in {:.2} s",
                responded.elapsed_ms as f64 / 1000.0
            );
        }
        SessionEvent::CallFailed(failed) => {
            eprintln!(
                "{mark}  failed: {} {}",
                failed.code,
                sanitize(&failed.message)
            );
            let tail: Vec<&str> = failed.stderr_tail.lines().rev().take(5).collect();
            for line in tail.into_iter().rev() {
                eprintln!("{mark}    | {}", sanitize(line));
            }
        }
        SessionEvent::ValidationCompleted(validated) => {
            let (errors, warnings) = (validated.errors, validated.warnings);
            if errors == 0 {
                eprintln!(
                    "{mark}  validation: no errors, {warnings} warning{}",
                    plural(warnings)
                );
                return;
            }
            eprintln!(
                "{mark}  validation: {errors} error{}, {warnings} warning{}",
                plural(errors),
                plural(warnings)
            );
            let errors: Vec<&LoggedFinding> = validated
                .findings
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .collect();
            for f in errors.iter().take(12) {
                let fix = match f.fix {
                    Some(Applicability::MachineApplicable) => " [safe fix]",
                    _ => "",
                };
                eprintln!(
                    "{mark}    {} {}: {}{fix}",
                    f.code,
                    pointer_text(&f.pointer),
                    sanitize(&f.message)
                );
            }
            if errors.len() > 12 {
                eprintln!("{mark}    … and {} more", errors.len() - 12);
            }
        }
        SessionEvent::RepairApplied(pass) => {
            let codes: Vec<String> = pass
                .applied
                .iter()
                .map(|f| format!("{} {}", f.code, pointer_text(&f.pointer)))
                .collect();
            let back = if pass.rolled_back.is_empty() {
                String::new()
            } else {
                let why: Vec<String> = pass.rolled_back.iter().map(rollback_text).collect();
                format!(
                    ", rolled back {} ({})",
                    pass.rolled_back.len(),
                    why.join("; ")
                )
            };
            eprintln!(
                "{mark}  safe fixes: applied {} ({}){back}",
                pass.applied.len(),
                codes.join(", ")
            );
        }
        // The command itself says how the session began and ended.
        SessionEvent::Started(_)
        | SessionEvent::WorkflowRegistered(_)
        | SessionEvent::SessionFailed(_) => {}
    }
}

/// One progress line per tool call of the built-in harness (more for `bash` and
/// `test_code`: what ran and how it ended). Everything the model wrote or a command printed
/// is cleaned of terminal controls; the turn log keeps it exact.
fn tool_progress(note: &lwir_model::ToolNote<'_>) {
    let arguments: Value = serde_json::from_str(note.arguments).unwrap_or(Value::Null);
    let answer: Value = serde_json::from_str(note.result).unwrap_or(Value::Null);
    let shown = |text: &str| sanitize(&lwir_render::terminal::excerpt(text, 120)).into_owned();
    let name = shown(note.name);
    if note.failed {
        eprintln!("  tool {name}: {}", shown(note.result));
        return;
    }
    let ended = |answer: &Value| match (&answer["limit"], &answer["exit_status"], &answer["signal"])
    {
        (Value::String(limit), _, _) => format!("stopped at its {limit} limit"),
        (_, Value::Number(status), _) => format!("exit {status}"),
        (_, _, Value::String(signal)) => format!("killed by {signal}"),
        _ => "ended".to_owned(),
    };
    match note.name {
        "bash" => {
            eprintln!(
                "  tool bash: {} → {}",
                shown(arguments["command"].as_str().unwrap_or_default()),
                ended(&answer)
            );
            for line in answer["stdout"]
                .as_str()
                .unwrap_or_default()
                .lines()
                .take(3)
            {
                eprintln!("    | {}", shown(line));
            }
        }
        "test_code" => {
            let verdict = match answer["finding"]["code"].as_str() {
                None => "fits its output schema".to_owned(),
                Some(code) => format!(
                    "{code} {}",
                    shown(answer["finding"]["message"].as_str().unwrap_or_default())
                ),
            };
            eprintln!(
                "  tool test_code ({}): {}, {verdict}",
                shown(arguments["language"].as_str().unwrap_or_default()),
                ended(&answer)
            );
        }
        _ => eprintln!("  tool {name}"),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A rolled-back fix and why: `LW301 /steps/0/tool: it added LW304 /steps/0/args/state`.
fn rollback_text(fix: &AppliedFix) -> String {
    let added: Vec<String> = fix
        .added_errors
        .iter()
        .map(|e| format!("{} {}", e.code, pointer_text(&e.pointer)))
        .collect();
    let why = if fix.untried {
        "not tried in this pass (it had spent its one-by-one checks)".to_owned()
    } else if added.is_empty() {
        "its patch no longer applied".to_owned()
    } else {
        format!("it added {}", added.join(", "))
    };
    format!("{} {}: {why}", fix.code, pointer_text(&fix.pointer))
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
                if let Some(usage) = lwir_model::usage(&dir.join("model")) {
                    out["model_usage"] = serde_json::to_value(usage)?;
                }
            }
            print(&(serde_json::to_string_pretty(&out)? + "\n"))
        }
        ReportFormat::Human => {
            if let Some(usage) = session.and_then(|dir| lwir_model::usage(&dir.join("model")))
                && !args.quiet
            {
                eprintln!(
                    "model usage: {} turn(s), {} prompt + {} completion tokens",
                    usage.turns, usage.prompt_tokens, usage.completion_tokens
                );
            }
            if !report.converged() {
                if let (Some(draft), Some(checked)) = (&outcome.draft, &outcome.checked) {
                    // The file the session keeps it in.
                    let name = match session {
                        Some(dir) => dir.join("last-draft.json").display().to_string(),
                        None => check.draft_name().to_owned(),
                    };
                    let definition = check.definition();
                    let report = Report {
                        findings: &checked.findings,
                        draft: Some(File {
                            name: &name,
                            bytes: draft,
                            document: None,
                        }),
                        definition: Some(File {
                            name: &definition.source.name,
                            bytes: definition.bytes(),
                            document: definition.document(),
                        }),
                        version: checked.version.as_deref(),
                    };
                    if !checked.findings.is_empty() {
                        eprintln!("\nthe last draft:");
                        eprint!(
                            "{}",
                            human::render(
                                report,
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
                    eprintln!("safe fix rolled back: {}", rollback_text(fix));
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
