//! `lwirc goal`: goals whose plans advance only through validated proposals into new,
//! immutable generations.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lwir_goals::GoalError;
use lwir_goals::agent::ProcessAgent;
use lwir_goals::goal::{Dispatch, Goals, Replanned, Report as WorkReport};
use lwir_goals::runner::ProcessRunner;
use lwir_goals::store::{Directory, Store};
use lwir_goals::templates::RegistryTemplates;
use lwir_render::terminal::{excerpt, sanitize};
use lwir_render::{File, Report};
use lwir_repair::process::{self, PlannerCommand, Role};

mod render;

use super::{
    ColorChoice, Format, TooLarge, open_registry, print, process_limits, read_at_most, read_source,
};
use crate::exit;
use render::{Progress, list_row, list_table, render, show_human, stderr_choice};

/// Goals: plans that change only through validated proposals, every generation kept.
///
/// A goal file names what the goal is for, the registered templates its work may run (each
/// pinned by its version), its first work items and root, who may replan and every bound.
/// `goal create` checks it (like a draft: every finding at once), freezes it and
/// materializes generation 0. A runtime then takes `goal next` and reports each attempt with
/// `goal report`. When the active generation can make no more progress, `goal replan` asks
/// the planner for a new plan; the host checks it (templates from the catalog, dependencies,
/// a new root-capable root, reachability, bounds, input types), a reviewer and/or a person
/// approves it, and applying it starts a new generation. Nothing is ever edited: `goal show`
/// tells the whole history, computed from the goal's event log.
///
/// Goals are kept in `--goals STORE` (a directory, or `postgres://USER@HOST/DATABASE` for a
/// team; `?connect_timeout=SECONDS`, 10 by default, bounds the handshake, and
/// `statement_timeout=SECONDS`, 30, each statement), else `$LWIR_GOALS`, else
/// `.lwir/goals`; templates are read from `--registry REGISTRY` (a directory or
/// `oci://HOST/REPOSITORY`, silent at most `$LWIR_REGISTRY_TIMEOUT` seconds, 30, at a time),
/// else `$LWIR_REGISTRY`, else `.lwir/registry`. A GOAL argument is a goal id, a unique prefix
/// of one, or a goal name only one goal has.
///
/// Exit status: 0 done, 1 findings, refused or not eligible (the reason on standard error),
/// 2 usage error or an unreadable store, 3 the planner profile drifted.
///
/// Examples:
///   lwirc goal create goal.json
///   lwirc goal next release-notes-w49
///   lwirc goal report release-notes-w49 notes-3fa2c9e01b7d failed --error "API timeout"
///   lwirc goal replan release-notes-w49 --planner 'python3 planner.py'
///   lwirc goal approve release-notes-w49 p1
///   lwirc goal show release-notes-w49 --format json | jq .replan_consumption
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: GoalCommand,
    /// The goal store: a directory, or a PostgreSQL database
    /// (`postgres://USER@HOST:PORT/DATABASE`; `?connect_timeout=SECONDS`, 10, bounds the
    /// handshake and `statement_timeout=SECONDS`, 30, each statement) (default:
    /// `$LWIR_GOALS`, else `.lwir/goals`).
    #[arg(long, value_name = "STORE", global = true)]
    goals: Option<PathBuf>,
    /// The registry templates are read from: a directory, or `oci://HOST[:PORT]/REPOSITORY`,
    /// which may stay silent for `$LWIR_REGISTRY_TIMEOUT` seconds (30) at a time (default:
    /// `$LWIR_REGISTRY`, else `.lwir/registry`).
    #[arg(long, value_name = "REGISTRY", global = true)]
    registry: Option<PathBuf>,
    /// Who runs the command, as recorded in the goal's events (default: `$USER`).
    #[arg(long, value_name = "NAME", global = true)]
    by: Option<String>,
}

#[derive(clap::Subcommand)]
enum GoalCommand {
    /// Check a goal file, freeze it and materialize generation 0; print the goal id.
    ///
    /// The same file again (or the same JSON written differently) is the same goal: the
    /// same id is printed and nothing is written.
    Create {
        /// The goal file (`-` for standard input).
        #[arg(value_name = "GOAL.json")]
        file: String,
        /// Format of the findings, when there are any.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// When to colour the findings.
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// One row per goal: id, status, generation, attempts, replans, replan consumption.
    List {
        /// Output format.
        #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
        format: ShowFormat,
    },
    /// A goal's projection: status and why, every generation, work item, attempt and plan.
    Show {
        /// The goal.
        goal: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
        format: ShowFormat,
    },
    /// The work that can be dispatched now, each with its input resolved (a JSON array).
    Next {
        /// The goal.
        goal: String,
    },
    /// Record what the runtime did with a work item.
    ///
    /// `started` begins an attempt; `succeeded` (with `--output FILE`, at most 16 MiB as a
    /// runner's answer is, checked against the template's output schema) and `failed` (with
    /// `--error TEXT`) end it — or, reported without a start, are an attempt of their own.
    /// Reports on superseded, finished or over-ceiling work are refused (exit 1) and nothing
    /// is recorded.
    #[command(verbatim_doc_comment)]
    Report {
        /// The goal.
        goal: String,
        /// The work id (as `goal next` and `goal show` print it), or the key of an item of the
        /// active generation.
        work: String,
        /// What happened.
        #[arg(value_enum)]
        status: ReportStatus,
        /// The output of a successful attempt: a JSON file (`-` for standard input).
        #[arg(long, value_name = "FILE")]
        output: Option<String>,
        /// The error of a failed attempt.
        #[arg(long, value_name = "TEXT")]
        error: Option<String>,
    },
    /// One bounded planner cycle, when the goal is eligible (nothing can run and the root has
    /// not succeeded).
    ///
    /// The planner gets a `replan` request (lwir-planner/1) and answers `apply` with new items
    /// and a new root, or `attention`. The proposal is checked by lwirc, reviewed by
    /// `--reviewer` when given (at most the goal's `max_review_rounds` revisions), then
    /// applied when the goal's `auto_apply` allows, else left for `goal approve`. Every
    /// replan is charged against the goal's `max_replans`, except when the planner cannot
    /// be started.
    #[command(verbatim_doc_comment)]
    Replan {
        /// The goal.
        goal: String,
        #[command(flatten)]
        agents: AgentArgs,
        /// When to colour the findings of a refused proposal.
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// Drive the goal: dispatch ready work to a runner, record every attempt, retry within
    /// the ceilings, replan when eligible (with --planner), and stop when the goal has
    /// succeeded or waits for someone.
    ///
    /// The runner (protocol lwir-runner/1) gets one JSON request per attempt on standard
    /// input — the goal, the work item and its resolved input, the registered LWIR of its
    /// version — and answers `{"kind": "succeeded", "output": …}` or `{"kind": "failed",
    /// "error": "…"}`. At most the goal's `max_parallel` runners run at once. A runner that
    /// cannot be started, fails, hangs, prints too much or something that is not an answer,
    /// or whose output breaks the template's output schema, is a failed attempt with its
    /// finding (LW1012–LW1018); so is an item whose resolved input would pass 16 MiB
    /// (LW1020), without starting the runner. A killed `goal run` loses nothing: run it
    /// again, and the attempts it had in flight are recorded as interrupted (they count).
    ///
    /// With --bindings FILE instead of --runner, lwirc runs each attempt itself (`lwirc
    /// runner`): a run of the template's version with the item's input, its tools and
    /// models where the bindings say, durable in the store of runs. The attempt records the
    /// run id; `goal show` names it, `lwirc runs show RUN` tells the rest.
    ///
    /// Exit status: 0 the goal succeeded; 1 it is exhausted, cancelled or waits (for review,
    /// after an attention, or for a planner: run with --planner), with what to do on standard
    /// error; 2 usage error or an unreadable store; 3 the planner profile drifted.
    #[command(verbatim_doc_comment)]
    Run {
        /// The goal.
        goal: String,
        #[command(flatten)]
        runner: RunnerArgs,
        /// The planner command, to replan when the goal becomes eligible.
        #[arg(long, value_name = "CMD")]
        planner: Option<String>,
        #[command(flatten)]
        limits: AgentLimits,
        /// Output format of the final report on standard output (progress goes to standard
        /// error either way).
        #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
        format: ShowFormat,
        /// No progress lines.
        #[arg(short, long)]
        quiet: bool,
    },
    /// One service pass over every goal of the store: each goal that can act does one step
    /// (dispatches its ready work and waits for it, or replans when eligible and a planner
    /// is given), then the command exits.
    ///
    /// Exit status: 0 done (whatever the goals' statuses: `goal list` shows them), 2 usage
    /// error or an unreadable store.
    #[command(verbatim_doc_comment)]
    Tick {
        #[command(flatten)]
        service: ServiceArgs,
    },
    /// Drive every goal of the store until stopped (SIGTERM or Ctrl-C): dispatch ready
    /// work, record attempts, replan eligible goals — at most --max-planner-calls planner
    /// calls at once across all goals, so slow planners never hold up ready work. Goals
    /// that wait for a person are looked at again when they change (an approval, a retry).
    /// On SIGTERM or Ctrl-C nothing new starts; runners in flight get --stop-grace seconds
    /// to answer, then are killed and their attempts recorded as interrupted; replans in
    /// flight are waited for (a second signal exits at once: the next serve or run records
    /// what was in flight as interrupted). Another process driving a goal (`goal run`) is
    /// left alone. A goal that cannot be driven (a damaged log, an answer that cannot be
    /// recorded, an internal error) does not stop the others: why is printed when serve
    /// stops.
    ///
    /// Exit status: 0 stopped cleanly, 2 usage error or an unreadable store.
    #[command(verbatim_doc_comment)]
    Serve {
        #[command(flatten)]
        service: ServiceArgs,
        /// Seconds between passes over the store: from 0.001 to 86400.
        #[arg(long, value_name = "SECONDS", default_value_t = 1.0,
              value_parser = super::ranges::timeout_seconds)]
        interval: f64,
        /// Seconds a stopping serve waits for the runners in flight before it kills them
        /// (their attempts are recorded as interrupted, and count): from 0.001 to 86400.
        #[arg(long, value_name = "SECONDS", default_value_t = 10.0,
              value_parser = super::ranges::timeout_seconds)]
        stop_grace: f64,
    },
    /// Approve a plan that waits for review, and apply it.
    Approve {
        /// The goal.
        goal: String,
        /// The plan (`p1`, `p2`, …).
        plan: String,
    },
    /// Reject a plan that waits for review; the feedback goes to the next replan.
    Reject {
        /// The goal.
        goal: String,
        /// The plan.
        plan: String,
        /// Why, for the planner's next attempt.
        #[arg(long, value_name = "TEXT")]
        feedback: String,
    },
    /// Ask for another replan after the planner asked for attention.
    Retry {
        /// The goal.
        goal: String,
        /// The plan that ended in attention.
        plan: String,
    },
    /// Stop the goal for good: nothing is dispatched or replanned again.
    Cancel {
        /// The goal.
        goal: String,
        /// Why, recorded with the cancellation.
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
}

#[derive(clap::Args)]
struct AgentArgs {
    /// The planner command (lwir-planner/1, run without a shell).
    #[arg(long, value_name = "CMD")]
    planner: String,
    #[command(flatten)]
    limits: AgentLimits,
}

#[derive(clap::Args)]
#[command(group = clap::ArgGroup::new("runner-or-bindings").required(true).args(["runner", "bindings"]))]
struct RunnerArgs {
    /// The runner command (lwir-runner/1, run without a shell).
    #[arg(long, value_name = "CMD")]
    runner: Option<String>,
    /// Run each attempt on lwirc's own runtime instead of a runner command: as a run of its
    /// template's version with the item's input, its tools and model slots where this
    /// `lwir.bindings/1` file says (as `lwirc run --bindings`); the attempt records the run
    /// id (`lwirc runs show RUN`).
    #[arg(long, value_name = "FILE")]
    bindings: Option<PathBuf>,
    /// With --bindings: the store of runs (default: `$LWIR_RUNS`, else `.lwir/runs`).
    #[arg(long, value_name = "DIR", requires = "bindings")]
    runs: Option<PathBuf>,
    /// Run the runner command through `sh -c`.
    #[arg(long, requires = "runner")]
    runner_shell: bool,
    /// Seconds one attempt may take before its runner (and all it started) is killed:
    /// from 0.001 to 86400.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600.0,
          value_parser = super::ranges::timeout_seconds)]
    runner_timeout: f64,
    /// The most bytes read from one runner answer: from 1 to 1073741824.
    #[arg(long, value_name = "BYTES", default_value_t = process::DEFAULT_MAX_OUTPUT,
          value_parser = super::ranges::max_output_bytes)]
    runner_max_output: usize,
}

impl RunnerArgs {
    /// The runner: the command given, or `lwirc runner` on the bindings (checked now, so
    /// that bindings with mistakes are a usage error before anything is dispatched), with
    /// the registry templates are read from.
    fn runner(&self, registry: Option<&Path>) -> anyhow::Result<ProcessRunner> {
        let command = match (&self.runner, &self.bindings) {
            (Some(runner), _) if self.runner_shell => PlannerCommand::shell(runner),
            (Some(runner), _) => PlannerCommand::parse(runner)
                .map_err(|e| anyhow::anyhow!("{}: {e}", Role::Runner.option()))?,
            (None, Some(bindings)) => builtin_runner(bindings, self.runs.as_deref(), registry)?,
            (None, None) => anyhow::bail!("give --runner CMD or --bindings FILE"),
        };
        Ok(ProcessRunner::new(
            command,
            process_limits(self.runner_timeout, self.runner_max_output),
        ))
    }
}

/// `lwirc runner --bindings FILE [--runs DIR] [--registry REGISTRY]`, this very program,
/// every path absolute (a runner may be started anywhere).
fn builtin_runner(
    bindings: &Path,
    runs: Option<&Path>,
    registry: Option<&Path>,
) -> anyhow::Result<PlannerCommand> {
    let text = bindings.to_string_lossy();
    if super::run::read_bindings(&text)?.is_none() {
        anyhow::bail!("the bindings `{text}` have mistakes (above); nothing was dispatched");
    }
    let absolute = |p: &Path| -> anyhow::Result<String> {
        Ok(std::path::absolute(p)?.to_string_lossy().into_owned())
    };
    // This program — or, when lwirc runs inside another one (the Python package's `lwirc`
    // command runs it in the interpreter), the program `LWIRC_EXE` names.
    let exe = match std::env::var_os("LWIRC_EXE").filter(|v| !v.is_empty()) {
        Some(exe) => PathBuf::from(exe),
        None => std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("cannot find lwirc's own program to run attempts: {e}"))?,
    };
    let mut words = vec![
        exe.to_string_lossy().into_owned(),
        "runner".to_owned(),
        "--bindings".to_owned(),
        absolute(bindings)?,
    ];
    if let Some(runs) = runs {
        words.extend(["--runs".to_owned(), absolute(runs)?]);
    }
    if let Some(registry) = registry {
        let text = registry.to_string_lossy();
        // A registry URL (`oci://…`) is passed as given; a directory made absolute.
        let location = if lwir_registry::OciUrl::parse(&text).is_some() {
            text.into_owned()
        } else {
            absolute(registry)?
        };
        words.extend(["--registry".to_owned(), location]);
    }
    PlannerCommand::from_words(&words)
        .ok_or_else(|| anyhow::anyhow!("cannot make the runner's command line"))
}

#[derive(clap::Args)]
struct ServiceArgs {
    #[command(flatten)]
    runner: RunnerArgs,
    /// The planner command, to replan goals that become eligible.
    #[arg(long, value_name = "CMD")]
    planner: Option<String>,
    #[command(flatten)]
    limits: AgentLimits,
    /// At most this many planner calls at once, over every goal: from 1 to 64.
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    max_planner_calls: u32,
    /// Output format of the final report on standard output.
    #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
    format: ShowFormat,
    /// No progress lines.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(clap::Args)]
struct AgentLimits {
    /// The reviewer command (the same protocol, `review` requests).
    #[arg(long, value_name = "CMD")]
    reviewer: Option<String>,
    /// Run the planner and reviewer commands through `sh -c`.
    #[arg(long)]
    planner_shell: bool,
    /// Seconds one call may take: from 0.001 to 86400.
    #[arg(long, value_name = "SECONDS", default_value_t = process::DEFAULT_TIMEOUT.as_secs_f64(),
          value_parser = super::ranges::timeout_seconds)]
    planner_timeout: f64,
    /// The most bytes read from one answer: from 1 to 1073741824.
    #[arg(long, value_name = "BYTES", default_value_t = process::DEFAULT_MAX_OUTPUT,
          value_parser = super::ranges::max_output_bytes)]
    planner_max_output: usize,
}

impl AgentLimits {
    /// The `role` (planner or reviewer) command `line`, under these limits.
    fn agent(&self, line: &str, role: Role) -> anyhow::Result<ProcessAgent> {
        let command = if self.planner_shell {
            PlannerCommand::shell(line)
        } else {
            PlannerCommand::parse(line).map_err(|e| anyhow::anyhow!("{}: {e}", role.option()))?
        };
        Ok(ProcessAgent::new(
            command,
            process_limits(self.planner_timeout, self.planner_max_output),
        )
        .with_role(role))
    }
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum ShowFormat {
    /// For people.
    Human,
    /// JSON.
    Json,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum ReportStatus {
    /// An attempt started.
    Started,
    /// The attempt succeeded (`--output FILE`).
    Succeeded,
    /// The attempt failed (`--error TEXT`).
    Failed,
}

/// The goals directory: `--goals DIR`, else `LWIR_GOALS`, else `.lwir/goals`.
fn goals_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| {
        std::env::var_os("LWIR_GOALS")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
    .unwrap_or_else(|| PathBuf::from(".lwir/goals"))
}

/// The goal store `--goals` (else `LWIR_GOALS`, else `.lwir/goals`) names: a directory, or
/// a PostgreSQL database (`postgres://USER@HOST:PORT/DATABASE`), connected and migrated.
pub(crate) fn open_store(
    flag: Option<PathBuf>,
) -> Result<Box<dyn Store>, lwir_goals::store::StoreError> {
    let location = goals_dir(flag);
    let text = location.to_string_lossy();
    if lwir_goals::postgres::is_url(&text) {
        return Ok(Box::new(lwir_goals::postgres::Postgres::connect(&text)?));
    }
    Ok(Box::new(Directory::at(location)))
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let store = open_store(args.goals.clone()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let store = &*store;
    let (registry, registry_name) = open_registry(args.registry.clone(), false)?;
    let templates = RegistryTemplates::new(&registry, format!("`{registry_name}`"));
    let by = args
        .by
        .clone()
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .or_else(|| std::env::var("LOGNAME").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "unknown".to_owned());
    let goals = Goals {
        store,
        templates: &templates,
        by,
        now,
    };
    let outcome = dispatch(&goals, store, args.command, args.registry.as_deref());
    let outcome = match outcome {
        Ok(code) => Ok(code),
        Err(Failure::Usage(e)) => return Err(e),
        Err(Failure::Goal(e)) => Err(e),
    };
    match outcome {
        Ok(code) => Ok(code),
        Err(e) => failure(e),
    }
}

/// An error of a goal command: refusals and findings exit 1, drift 3, the rest 2.
fn failure(e: GoalError) -> anyhow::Result<u8> {
    match e {
        GoalError::Refused(message) => {
            eprintln!("lwirc: {}", sanitize(&message));
            Ok(exit::FINDINGS)
        }
        GoalError::Drift(_) => {
            eprintln!("lwirc: {}", sanitize(&e.to_string()));
            Ok(exit::DRIFT)
        }
        GoalError::Findings { .. } => {
            eprintln!("lwirc: {}", sanitize(&e.to_string()));
            Ok(exit::FINDINGS)
        }
        GoalError::Store(lwir_goals::store::StoreError::NotFound { .. }) => {
            eprintln!("lwirc: {}", sanitize(&e.to_string()));
            Ok(exit::FINDINGS)
        }
        other => Err(anyhow::anyhow!("{other}")),
    }
}

/// The goal id `text` names: an id, a unique prefix of one, or a name only one goal has.
fn resolve(store: &dyn Store, text: &str) -> Result<String, GoalError> {
    let ids = store.goals()?;
    if ids.iter().any(|id| id == text) {
        return Ok(text.to_owned());
    }
    let by_name: Vec<&String> = ids
        .iter()
        .filter(|id| id.rsplit_once('-').is_some_and(|(name, _)| name == text))
        .collect();
    let by_prefix: Vec<&String> = ids.iter().filter(|id| id.starts_with(text)).collect();
    let candidates = if by_name.is_empty() {
        by_prefix
    } else {
        by_name
    };
    match candidates.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(GoalError::Refused(format!(
            "no goal `{text}` in {}{}",
            store.location(),
            if ids.is_empty() {
                " (it has no goals; `lwirc goal create GOAL.json` creates one)".to_owned()
            } else {
                format!("; its goals: {}", ids.join(", "))
            }
        ))),
        many => Err(GoalError::Refused(format!(
            "`{text}` names {} goals: {}; give the whole id",
            many.len(),
            many.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Why a goal command did not complete: the goal said no (exit 1, or 3 for drift), or the
/// command could not be carried out — an unreadable file, a bad flag, standard output
/// closed — which is a usage error (exit 2), as everywhere in lwirc.
enum Failure {
    Goal(GoalError),
    Usage(anyhow::Error),
}

impl From<GoalError> for Failure {
    fn from(e: GoalError) -> Self {
        Failure::Goal(e)
    }
}

fn dispatch(
    goals: &Goals<'_>,
    store: &dyn Store,
    command: GoalCommand,
    registry: Option<&Path>,
) -> Result<u8, Failure> {
    let io = Failure::Usage;
    match command {
        GoalCommand::Create {
            file,
            format,
            color,
        } => create_goal(goals, &file, format, color),
        GoalCommand::List { format } => {
            let (shown, failed) = goals.list()?;
            for (id, e) in &failed {
                eprintln!(
                    "lwirc: goal {id} cannot be read: {}",
                    sanitize(&e.to_string())
                );
            }
            match format {
                ShowFormat::Json => {
                    let rows: Vec<serde_json::Value> = shown.iter().map(list_row).collect();
                    print(&format!(
                        "{}\n",
                        serde_json::to_string_pretty(&rows).unwrap_or_default()
                    ))
                    .map_err(io)?;
                }
                ShowFormat::Human => print(&list_table(&shown)).map_err(io)?,
            }
            Ok(if failed.is_empty() {
                exit::OK
            } else {
                exit::FINDINGS
            })
        }
        GoalCommand::Show { goal, format } => {
            let id = resolve(store, &goal)?;
            let mut projection = goals.show(&id)?;
            match format {
                ShowFormat::Json => {
                    let mut text = projection.to_string_pretty();
                    text.push('\n');
                    print(&text).map_err(io)?
                }
                ShowFormat::Human => print(&show_human(&projection)).map_err(io)?,
            }
            Ok(exit::OK)
        }
        GoalCommand::Next { goal } => {
            let id = resolve(store, &goal)?;
            let (ready, unresolved) = goals.next(&id)?;
            for u in &unresolved {
                let code = u
                    .code
                    .map_or(String::new(), |c| format!("{c} {}: ", c.name()));
                eprintln!(
                    "lwirc: work {} ({}) is ready but its input cannot be resolved: {code}{}; report it failed with `lwirc goal report {id} {} failed --error TEXT`",
                    u.id,
                    u.key,
                    sanitize(&u.error),
                    u.id
                );
            }
            if ready.is_empty() && unresolved.is_empty() {
                let p = goals.show(&id)?;
                eprintln!(
                    "lwirc: nothing to dispatch: goal {id} is {} — {}",
                    p.status.as_str(),
                    sanitize(&p.reason)
                );
            }
            let json: Vec<&Dispatch> = ready.iter().collect();
            print(&format!(
                "{}\n",
                serde_json::to_string_pretty(&json).unwrap_or_default()
            ))
            .map_err(io)?;
            Ok(exit::OK)
        }
        GoalCommand::Report {
            goal,
            work,
            status,
            output,
            error,
        } => report(goals, store, &goal, &work, status, output, error),
        GoalCommand::Replan {
            goal,
            agents,
            color,
        } => replan(goals, store, &goal, agents, color),
        GoalCommand::Tick { service } => serve(goals, &service, None, None, registry),
        GoalCommand::Serve {
            service,
            interval,
            stop_grace,
        } => serve(goals, &service, Some(interval), Some(stop_grace), registry),
        GoalCommand::Run {
            goal,
            runner,
            planner,
            limits,
            format,
            quiet,
        } => run_goal(
            goals, store, &goal, runner, planner, limits, format, quiet, registry,
        ),
        GoalCommand::Approve { goal, plan } => {
            let id = resolve(store, &goal)?;
            match goals.approve(&id, &plan) {
                Ok(generation) => {
                    eprintln!(
                        "lwirc: plan {plan} was applied: goal {id} is at generation {generation}"
                    );
                    Ok(exit::OK)
                }
                Err(GoalError::Findings { document, findings }) => {
                    if let Some(doc) = document {
                        eprint!(
                            "{}",
                            render(
                                Format::Human,
                                ColorChoice::Never,
                                &format!("plan {plan}"),
                                &doc,
                                &findings
                            )
                        );
                    }
                    eprintln!(
                        "lwirc: plan {plan} was refused when it was materialized; nothing was applied"
                    );
                    Ok(exit::FINDINGS)
                }
                Err(e) => Err(e.into()),
            }
        }
        GoalCommand::Reject {
            goal,
            plan,
            feedback,
        } => {
            let id = resolve(store, &goal)?;
            goals.reject(&id, &plan, &feedback)?;
            eprintln!("lwirc: plan {plan} was rejected; the feedback goes to the next replan");
            Ok(exit::OK)
        }
        GoalCommand::Retry { goal, plan } => {
            let id = resolve(store, &goal)?;
            goals.retry(&id, &plan)?;
            eprintln!(
                "lwirc: the attention of plan {plan} is cleared; `lwirc goal replan {id} --planner CMD` may run again"
            );
            Ok(exit::OK)
        }
        GoalCommand::Cancel { goal, reason } => {
            let id = resolve(store, &goal)?;
            goals.cancel(&id, reason.as_deref())?;
            eprintln!("lwirc: goal {id} is cancelled; nothing more is dispatched or replanned");
            Ok(exit::OK)
        }
    }
}

/// `goal create`: freezes the goal file, printing its id; its findings when it is refused.
fn create_goal(
    goals: &Goals<'_>,
    file: &str,
    format: Format,
    color: ColorChoice,
) -> Result<u8, Failure> {
    let io = Failure::Usage;
    let source = read_source(file).map_err(io)?;
    let name = source.name.clone();
    // Kept to show reader findings of a file that is not JSON at all.
    let bytes = source.bytes.clone();
    match goals.create(source.bytes) {
        Ok(created) => {
            if !created.warnings.is_empty() {
                eprint!(
                    "{}",
                    render(format, color, &name, &created.document, &created.warnings)
                );
            }
            if !created.new {
                eprintln!(
                    "lwirc: goal {} exists already; nothing was written",
                    created.id
                );
            }
            print(&format!("{}\n", created.id)).map_err(io)?;
            Ok(exit::OK)
        }
        Err(GoalError::Findings { document, findings }) => {
            use lwir_spec::kind::FileKind;
            if let Some(kind @ (FileKind::Draft | FileKind::Definition)) =
                document.as_ref().and_then(|d| FileKind::of(d.root()))
            {
                eprintln!(
                    "lwirc: `{}` is {}, not a goal file (`goal`, `templates`, `work`): \
                     {}",
                    sanitize(&name),
                    kind.noun(),
                    match kind {
                        FileKind::Draft =>
                            "a draft is validated with lwirc validate \
                                            DRAFT -d WORKFLOW and registered with \
                                            lwirc register",
                        _ =>
                            "a definition is what a goal's templates compile \
                              against; the goal file names it",
                    }
                );
            }
            match document {
                Some(doc) => print(&render(format, color, &name, &doc, &findings)).map_err(io)?,
                None => {
                    let report = Report::of_file(
                        &findings,
                        File {
                            name: &name,
                            bytes: &bytes,
                            document: None,
                        },
                    );
                    print(&format.render(report, color)).map_err(io)?;
                }
            }
            Ok(exit::FINDINGS)
        }
        Err(e) => Err(e.into()),
    }
}

/// `goal report`: an attempt's start or end, reported by a runtime outside lwirc.
fn report(
    goals: &Goals<'_>,
    store: &dyn Store,
    goal: &str,
    work: &str,
    status: ReportStatus,
    output: Option<String>,
    error: Option<String>,
) -> Result<u8, Failure> {
    let io = Failure::Usage;
    let id = resolve(store, goal)?;
    let report = match status {
        ReportStatus::Started => {
            if output.is_some() || error.is_some() {
                return Err(Failure::Usage(anyhow::anyhow!(
                    "`started` takes neither --output nor --error"
                )));
            }
            WorkReport::Started
        }
        ReportStatus::Succeeded => {
            if error.is_some() {
                return Err(Failure::Usage(anyhow::anyhow!(
                    "`succeeded` takes --output, not --error"
                )));
            }
            let Some(path) = output else {
                return Err(Failure::Usage(anyhow::anyhow!(
                    "`succeeded` needs --output FILE (the attempt's output, JSON)"
                )));
            };
            // What `goal run` would read of a runner's answer, at most: an output
            // is recorded in the goal's log, which every goal command reads.
            let limit = process::DEFAULT_MAX_OUTPUT;
            let source = match read_at_most(&path, limit as u64).map_err(io)? {
                Ok(source) => source,
                Err(TooLarge { size }) => {
                    let (name, size) = match size {
                        Some(size) => {
                            (format!("`{}`", sanitize(&path)), format!("is {size} bytes"))
                        }
                        None => (
                            "on standard input".to_owned(),
                            format!("is more than {limit} bytes"),
                        ),
                    };
                    eprintln!(
                        "lwirc: the output {name} {size}; a work item's output is at most {limit} \
                         bytes (as a runner's answer is); nothing was recorded"
                    );
                    return Ok(exit::FINDINGS);
                }
            };
            let Some(doc) = super::document_or_report(source) else {
                return Ok(exit::FINDINGS);
            };
            WorkReport::Succeeded(doc.root().to_json())
        }
        ReportStatus::Failed => {
            if output.is_some() {
                return Err(Failure::Usage(anyhow::anyhow!(
                    "`failed` takes --error, not --output"
                )));
            }
            WorkReport::Failed(error.unwrap_or_else(|| "failed (no error given)".to_owned()))
        }
    };
    let event = goals.report(&id, work, &report)?;
    let attempt = event
        .data
        .get("attempt")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    eprintln!(
        "lwirc: recorded {} of {work} (attempt {attempt}) in goal {id}",
        event.event
    );
    Ok(exit::OK)
}

/// `goal replan`: one replan, with its reviewer when there is one; what came of it.
fn replan(
    goals: &Goals<'_>,
    store: &dyn Store,
    goal: &str,
    agents: AgentArgs,
    color: ColorChoice,
) -> Result<u8, Failure> {
    let io = Failure::Usage;
    let id = resolve(store, goal)?;
    let mut planner = agents
        .limits
        .agent(&agents.planner, Role::Planner)
        .map_err(io)?;
    let mut reviewer = agents
        .limits
        .reviewer
        .as_deref()
        .map(|r| agents.limits.agent(r, Role::Reviewer))
        .transpose()
        .map_err(io)?;
    let outcome = goals.replan(
        &id,
        &mut planner,
        reviewer
            .as_mut()
            .map(|r| r as &mut dyn lwir_goals::agent::Agent),
    )?;
    match outcome {
        Replanned::Applied { plan, generation } => {
            eprintln!("lwirc: plan {plan} was applied: goal {id} is at generation {generation}");
            print(&format!("{plan}\n")).map_err(io)?;
            Ok(exit::OK)
        }
        Replanned::AwaitingReview { plan, note } => {
            if let Some(note) = note {
                eprintln!("lwirc: {}", sanitize(&note));
            }
            eprintln!(
                "lwirc: plan {plan} is valid and waits for review: `lwirc goal approve {id} {plan}` or `lwirc goal reject {id} {plan} --feedback TEXT`"
            );
            print(&format!("{plan}\n")).map_err(io)?;
            Ok(exit::OK)
        }
        Replanned::Attention { plan, rationale } => {
            eprintln!(
                "lwirc: plan {plan} ended in attention: {}\nlwirc: after a person has looked, `lwirc goal retry {id} {plan}` asks for another replan",
                sanitize(&excerpt(&rationale, 2000))
            );
            Ok(exit::FINDINGS)
        }
        Replanned::Rejected { plan, feedback } => {
            eprintln!(
                "lwirc: plan {plan} was rejected by the reviewer: {}",
                sanitize(&excerpt(&feedback, 2000))
            );
            Ok(exit::FINDINGS)
        }
        Replanned::Failed {
            plan,
            charged,
            message,
            findings,
        } => {
            if let Some((document, findings)) = findings {
                let name = format!("plan {plan} (the planner's answer)");
                match document {
                    Some(doc) => eprint!(
                        "{}",
                        render(Format::Human, stderr_choice(color), &name, &doc, &findings)
                    ),
                    None => {
                        for f in &findings {
                            eprintln!("{}: {}", f.code, sanitize(&f.message));
                        }
                    }
                }
            }
            eprintln!(
                "lwirc: plan {plan} failed: {}{}",
                sanitize(&excerpt(&message, 2000)),
                if charged {
                    " (the replan is spent)"
                } else {
                    " (not charged: the planner could not be started)"
                }
            );
            Ok(exit::FINDINGS)
        }
    }
}

/// `goal run`: drives the goal until it ends or waits for a person.
#[allow(clippy::too_many_arguments)]
fn run_goal(
    goals: &Goals<'_>,
    store: &dyn Store,
    goal: &str,
    runner: RunnerArgs,
    planner: Option<String>,
    limits: AgentLimits,
    format: ShowFormat,
    quiet: bool,
    registry: Option<&Path>,
) -> Result<u8, Failure> {
    let io = Failure::Usage;
    let id = resolve(store, goal)?;
    let runner = runner.runner(registry).map_err(io)?;
    let mut planner = planner
        .as_deref()
        .map(|p| limits.agent(p, Role::Planner))
        .transpose()
        .map_err(io)?;
    let mut reviewer = limits
        .reviewer
        .as_deref()
        .map(|r| limits.agent(r, Role::Reviewer))
        .transpose()
        .map_err(io)?;
    let mut observer = Progress { quiet };
    let report = goals.run(
        &id,
        &runner,
        planner
            .as_mut()
            .map(|p| p as &mut dyn lwir_goals::agent::Agent),
        reviewer
            .as_mut()
            .map(|r| r as &mut dyn lwir_goals::agent::Agent),
        &mut observer,
    )?;
    let status = report.status;
    match format {
        ShowFormat::Json => print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        ))
        .map_err(io)?,
        ShowFormat::Human => print(&format!(
            "goal {}: {} — {}\n",
            report.goal,
            status.as_str(),
            sanitize(&report.reason)
        ))
        .map_err(io)?,
    }
    if status == lwir_goals::projection::Status::Eligible && planner.is_none() {
        eprintln!(
            "lwirc: the goal is eligible for a replan: run again with --planner CMD, or `lwirc goal replan {id} --planner CMD`"
        );
    }
    Ok(if status == lwir_goals::projection::Status::Succeeded {
        exit::OK
    } else {
        exit::FINDINGS
    })
}

/// `goal tick` (`interval` none) and `goal serve`.
fn serve(
    goals: &Goals<'_>,
    args: &ServiceArgs,
    interval: Option<f64>,
    grace: Option<f64>,
    registry: Option<&Path>,
) -> Result<u8, Failure> {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let io = Failure::Usage;
    let runner = args.runner.runner(registry).map_err(io)?;
    let planner = args
        .planner
        .as_deref()
        .map(|p| args.limits.agent(p, Role::Planner))
        .transpose()
        .map_err(io)?;
    let reviewer = args
        .limits
        .reviewer
        .as_deref()
        .map(|r| args.limits.agent(r, Role::Reviewer))
        .transpose()
        .map_err(io)?;
    let make_planner =
        planner.map(|p| move || Box::new(p.clone()) as Box<dyn lwir_goals::agent::Agent + Send>);
    let make_reviewer =
        reviewer.map(|r| move || Box::new(r.clone()) as Box<dyn lwir_goals::agent::Agent + Send>);
    let service = lwir_goals::run::Service {
        runner: &runner,
        planner: make_planner
            .as_ref()
            .map(|f| f as lwir_goals::run::AgentFactory<'_>),
        reviewer: make_reviewer
            .as_ref()
            .map(|f| f as lwir_goals::run::AgentFactory<'_>),
        max_planner_calls: args.max_planner_calls as usize,
        interval: Duration::from_secs_f64(interval.unwrap_or(1.0)),
        // A tick is not stopped by a signal's grace: it waits for what it started.
        grace: Duration::from_secs_f64(grace.unwrap_or(10.0)),
    };
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        // A second signal while stopping exits at once (status 130, as a shell would say).
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&stop))
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&stop)))
            .map_err(|e| Failure::Usage(anyhow::anyhow!("cannot handle signals: {e}")))?;
    }
    let mut observer = Progress { quiet: args.quiet };
    let report = goals.serve(&service, interval.is_none(), &stop, &mut observer)?;
    for (goal, why) in &report.skipped {
        eprintln!("lwirc: goal {goal} was not driven: {}", sanitize(why));
    }
    let io2 = Failure::Usage;
    match args.format {
        ShowFormat::Json => print(&format!("{}\n", serde_json::to_string_pretty(&report).unwrap_or_default())).map_err(io2)?,
        ShowFormat::Human => print(&format!(
            "{} pass(es): {} attempt(s) dispatched ({} succeeded, {} failed), {} interrupted, {} replan(s)\n",
            report.ticks, report.dispatched, report.succeeded, report.failed, report.interrupted, report.replans
        ))
        .map_err(io2)?,
    }
    Ok(exit::OK)
}
