//! `lwirc runs`: the runs of a store — list, show, resume, retry, replay, verify.

use lwir_render::terminal::sanitize;
use lwir_runtime::{Continue, Runtime, summary};

use super::run::{
    Files, Places, Progress, RunFormat, bound, finish, read_bindings, terminal_safe_json,
};
use super::{open_registry, print, read_json};
use crate::exit;

/// The runs of a store: list them, show one, resume, retry or replay one, verify them all.
///
/// Runs are kept in `--runs DIR` (else `$LWIR_RUNS`, else `.lwir/runs`), one directory per
/// run holding its append-only event log, each line chained to the one before by a hash
/// that every read checks. A RUN argument is a run id or a unique prefix of one.
///
/// - `resume RUN`: after a crash (`kill -9` included) or a pause. Committed events are
///   kept; only the steps that were in flight run again, a tool call sent again with the
///   same idempotency key.
/// - `retry RUN`: after a failure. Same version, same input; steps that succeeded keep
///   their outputs; failed steps run again as new attempts, and what depends on them
///   follows.
/// - `replay RUN` (or `--all`): rebuilds the run from its log without calling a model, a
///   tool or a code body; every request and decision must come out as recorded. The first
///   difference is a nondeterminism finding (LW1109) with the step and both values.
/// - `verify`: every log's chain and every version's digest.
///
/// `resume` and `retry` print the workflow's output on standard output when the run ends,
/// as `lwirc run` does, with its exit statuses.
///
/// Exit status: 0 done; 1 a run failed, a replay found a difference, `verify` found damage,
/// or no run matches; 2 usage error or unreadable store; 3 drift (resume without
/// `--accept-drift`).
///
/// Examples:
///   lwirc runs list
///   lwirc runs show 3f9a --format json | jq .steps
///   lwirc runs resume 3f9a
///   lwirc runs retry 3f9a --bindings fixed-bindings.json
///   lwirc runs replay --all
///   lwirc runs verify --registry oci://registry.local/lwir
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: RunsCommand,
    #[command(flatten)]
    places: Places,
    /// Output format.
    #[arg(long, value_enum, default_value_t = RunFormat::Human, global = true)]
    format: RunFormat,
}

#[derive(clap::Subcommand)]
enum RunsCommand {
    /// One line per run: id, status, workflow, version, when it started, steps.
    List,
    /// A run: its status, input, output or failure, and every step's last attempt.
    Show {
        /// The run: its id or a unique prefix.
        run: String,
    },
    /// Go on with a run after a crash or a pause: only what was in flight runs again.
    Resume {
        /// The run: its id or a unique prefix.
        run: String,
        #[command(flatten)]
        go: GoOn,
        /// Accept drift found now (recorded with who and when) and go on.
        #[arg(long)]
        accept_drift: bool,
    },
    /// Run the failed steps of a failed run again, as new attempts; what succeeded is kept.
    Retry {
        /// The run: its id or a unique prefix.
        run: String,
        #[command(flatten)]
        go: GoOn,
    },
    /// Rebuild a run (or `--all`) from its log without performing anything, and compare.
    Replay {
        /// The run: its id or a unique prefix.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        run: Option<String>,
        /// Every run of the store.
        #[arg(long)]
        all: bool,
    },
    /// Check every run of the store: its log's chain and the version it ran.
    Verify,
}

/// What `resume` and `retry` take.
#[derive(clap::Args)]
struct GoOn {
    /// New bindings, which replace the run's from here on (recorded).
    #[arg(long, value_name = "FILE")]
    bindings: Option<String>,
    /// Who goes on with the run, as recorded (default: `$USER`).
    #[arg(long, value_name = "NAME")]
    by: Option<String>,
    /// For a version whose record lacks the tools' schemas: the definition it was
    /// compiled against.
    #[arg(short = 'd', long = "definition", value_name = "WORKFLOW")]
    definition: Option<String>,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let store = args.places.store();
    match args.command {
        RunsCommand::List => list(&store, args.format),
        RunsCommand::Show { run } => show(&store, &run, args.format),
        RunsCommand::Resume {
            run,
            go,
            accept_drift,
        } => go_on(&args.places, &run, false, &go, accept_drift, args.format),
        RunsCommand::Retry { run, go } => go_on(&args.places, &run, true, &go, false, args.format),
        RunsCommand::Replay { run, all } => replay(&args.places, run.as_deref(), all, args.format),
        RunsCommand::Verify => verify(&args.places, args.format),
    }
}

/// A store error a person can act on (no such run, ambiguous) is exit 1; others exit 2.
fn store_failure(e: lwir_runtime::log::StoreError) -> anyhow::Result<u8> {
    use lwir_runtime::log::StoreError;
    match e {
        StoreError::NotFound { .. } | StoreError::Ambiguous { .. } | StoreError::Damaged { .. } => {
            eprintln!("lwirc: {}", sanitize(&e.to_string()));
            Ok(exit::FINDINGS)
        }
        other => Err(anyhow::anyhow!("{other}")),
    }
}

fn list(store: &lwir_runtime::RunStore, format: RunFormat) -> anyhow::Result<u8> {
    let mut rows = Vec::new();
    for id in store.ids().map_err(|e| anyhow::anyhow!("{e}"))? {
        match store.read(&id) {
            Ok(logged) => {
                if let Some(s) = summary(&logged, store.in_use(&id)) {
                    rows.push(s);
                }
            }
            Err(e) => eprintln!("lwirc: {}", sanitize(&e.to_string())),
        }
    }
    rows.sort_by(|a, b| a.started_at.cmp(&b.started_at).then(a.run.cmp(&b.run)));
    if format == RunFormat::Json {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|s| {
                serde_json::json!({"run": s.run, "status": s.status, "workflow": s.workflow,
                    "version": s.version, "started_at": s.started_at, "ended_at": s.ended_at,
                    "counts": s.counts, "resumed": s.resumed})
            })
            .collect();
        print(&format!("{}\n", serde_json::to_string_pretty(&rows)?))?;
        return Ok(exit::OK);
    }
    let mut text = String::new();
    for s in &rows {
        let count = |k: &str| s.counts.get(k).copied().unwrap_or(0);
        text.push_str(&format!(
            "{}  {:<11}  {}  {}  {}  {} ok, {} failed, {} skipped\n",
            s.run,
            s.status,
            &s.version[..s.version.len().min(19)],
            s.started_at,
            sanitize(&s.workflow),
            count("succeeded"),
            count("failed"),
            count("skipped")
        ));
    }
    if rows.is_empty() {
        eprintln!("no runs in `{}`", store.root().display());
    }
    print(&text)?;
    Ok(exit::OK)
}

fn show(store: &lwir_runtime::RunStore, run: &str, format: RunFormat) -> anyhow::Result<u8> {
    let id = match store.resolve(run) {
        Ok(id) => id,
        Err(e) => return store_failure(e),
    };
    let logged = match store.read(&id) {
        Ok(l) => l,
        Err(e) => return store_failure(e),
    };
    let Some(s) = summary(&logged, store.in_use(&id)) else {
        eprintln!("lwirc: run `{id}` has no `run.started`");
        return Ok(exit::FINDINGS);
    };
    if format == RunFormat::Json {
        print(&format!("{}\n", serde_json::to_string_pretty(&s)?))?;
        return Ok(exit::OK);
    }
    let mut text = format!(
        "run {}: {}\n  workflow {}, version {}\n  started {}{}\n  {} events, resumed {} time{}\n",
        s.run,
        s.status,
        sanitize(&s.workflow),
        s.version,
        s.started_at,
        s.ended_at
            .as_ref()
            .map_or(String::new(), |t| format!(", ended {t}")),
        s.events,
        s.resumed,
        if s.resumed == 1 { "" } else { "s" }
    );
    if let Some(f) = &s.failure {
        text.push_str(&format!(
            "  failed at {}: {} {}\n",
            f["step"].as_str().unwrap_or("the output"),
            f["code"].as_str().unwrap_or_default(),
            sanitize(f["error"].as_str().unwrap_or_default())
        ));
    }
    if s.usage.total_tokens > 0 {
        text.push_str(&format!("  tokens: {}\n", s.usage.total_tokens));
    }
    text.push_str("  steps:\n");
    for step in &s.steps {
        text.push_str(&format!(
            "    {:<9} {} (attempt {}){}\n",
            step["status"].as_str().unwrap_or_default(),
            sanitize(step["step"].as_str().unwrap_or_default()),
            step["attempt"],
            step["error"]
                .as_str()
                .map_or(String::new(), |e| format!(": {}", sanitize(e)))
        ));
    }
    if let Some(output) = &s.output {
        text.push_str(&format!("  output: {}\n", terminal_safe_json(output)?));
    }
    print(&text)?;
    Ok(exit::OK)
}

fn go_on(
    places: &Places,
    run: &str,
    retry: bool,
    go: &GoOn,
    accept_drift: bool,
    format: RunFormat,
) -> anyhow::Result<u8> {
    let (registry, _) = open_registry(places.registry.clone(), true)?;
    let bindings = match &go.bindings {
        Some(path) => match read_bindings(path)? {
            Some(b) => Some(b),
            None => return Ok(exit::USAGE),
        },
        None => None,
    };
    let definition = match &go.definition {
        Some(path) => match read_json(path)? {
            Some(doc) => Some(doc),
            None => return Ok(exit::FINDINGS),
        },
        None => None,
    };
    let by = go
        .by
        .clone()
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "unknown".to_owned());
    let runtime = Runtime::new(places.store(), &registry);
    let progress = Progress::new(format);
    let outcome = runtime.resume(
        run,
        retry,
        &Continue {
            bindings: bindings.as_ref().map(|(b, d)| (b, Some(d))),
            accept_drift,
            by,
            definition: definition.as_ref(),
        },
        &bound,
        &progress,
    );
    if let Err(lwir_runtime::RunError::Store(e @ lwir_runtime::log::StoreError::NotFound { .. }))
    | Err(lwir_runtime::RunError::Store(e @ lwir_runtime::log::StoreError::Ambiguous { .. })) =
        &outcome
    {
        eprintln!("lwirc: {}", sanitize(&e.to_string()));
        return Ok(exit::FINDINGS);
    }
    if let Err(lwir_runtime::RunError::Refused(why)) = &outcome {
        eprintln!("lwirc: {}", sanitize(why));
        return Ok(exit::FINDINGS);
    }
    finish(
        outcome,
        &progress,
        Files {
            input: None,
            bindings: bindings
                .as_ref()
                .map(|(_, d)| (go.bindings.as_deref().unwrap_or("-"), d)),
        },
    )
}

fn replay(places: &Places, run: Option<&str>, all: bool, format: RunFormat) -> anyhow::Result<u8> {
    let (registry, _) = open_registry(places.registry.clone(), true)?;
    let store = places.store();
    let runtime = Runtime::new(store.clone(), &registry);
    let ids = if all {
        store.ids().map_err(|e| anyhow::anyhow!("{e}"))?
    } else {
        match store.resolve(run.unwrap_or_default()) {
            Ok(id) => vec![id],
            Err(e) => return store_failure(e),
        }
    };
    let mut code = exit::OK;
    let mut rows = Vec::new();
    for id in &ids {
        let (ok, line, json) = match runtime.replay(id) {
            Ok(r) => match &r.difference {
                None => (
                    true,
                    format!(
                        "run {id}: no difference ({} events, {}, {:.3} s)",
                        r.events,
                        r.ended
                            .map_or("not ended: its recorded part replayed".to_owned(), |e| {
                                format!("ended {e}")
                            }),
                        r.elapsed.as_secs_f64()
                    ),
                    serde_json::json!({"run": id, "difference": null, "ended": r.ended,
                        "events": r.events}),
                ),
                Some(d) => {
                    let f = d.failure();
                    (
                        false,
                        format!(
                            "run {id}: {} replay-nondeterminism: {}",
                            f.code,
                            sanitize(&f.error)
                        ),
                        serde_json::json!({"run": id, "ended": r.ended, "events": r.events,
                            "difference": {"code": f.code.as_str(), "step": d.step, "event": d.event,
                                "pointer": d.pointer, "recorded": d.recorded, "replayed": d.replayed}}),
                    )
                }
            },
            Err(e) => {
                let text = e.to_string();
                (
                    false,
                    format!(
                        "run {id}: {} run-log-damaged: {}",
                        lwir_spec::Code::RunLogDamaged,
                        sanitize(&text)
                    ),
                    serde_json::json!({"run": id, "damaged": text}),
                )
            }
        };
        if !ok {
            code = exit::FINDINGS;
        }
        rows.push(json);
        if format == RunFormat::Human {
            print(&format!("{line}\n"))?;
        }
    }
    if format == RunFormat::Json {
        print(&format!("{}\n", serde_json::to_string_pretty(&rows)?))?;
    } else if all && ids.is_empty() {
        eprintln!("no runs in `{}`", store.root().display());
    }
    Ok(code)
}

fn verify(places: &Places, format: RunFormat) -> anyhow::Result<u8> {
    let (registry, _) = open_registry(places.registry.clone(), true)?;
    let runtime = Runtime::new(places.store(), &registry);
    let checked = runtime.verify().map_err(|e| anyhow::anyhow!("{e}"))?;
    let damaged = checked.iter().filter(|(_, p)| !p.is_empty()).count();
    if format == RunFormat::Json {
        let rows: Vec<serde_json::Value> = checked
            .iter()
            .map(|(run, problems)| serde_json::json!({"run": run, "problems": problems}))
            .collect();
        print(&format!("{}\n", serde_json::to_string_pretty(&rows)?))?;
    } else {
        let mut text = String::new();
        for (run, problems) in &checked {
            if problems.is_empty() {
                text.push_str(&format!("run {run}: ok\n"));
            }
            for p in problems {
                text.push_str(&format!("run {run}: {}\n", sanitize(p)));
            }
        }
        text.push_str(&format!(
            "{} run{} checked, {damaged} damaged\n",
            checked.len(),
            if checked.len() == 1 { "" } else { "s" }
        ));
        print(&text)?;
    }
    Ok(if damaged > 0 {
        exit::FINDINGS
    } else {
        exit::OK
    })
}
