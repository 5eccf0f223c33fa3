//! `lwirc runner`: a goal runner (protocol `lwir-runner/1`) on lwirc's own runtime — what
//! `goal run|tick|serve --bindings FILE` starts for each attempt.

use lwir_goals::runner::PROTOCOL;
use lwir_render::terminal::sanitize;
use lwir_runtime::{NewRun, OnDrift, Quiet, RunError, Runtime, Status};
use lwir_spec::{Finding, Node};
use serde_json::{Value, json};

use super::run::{Places, bound, read_bindings};
use super::{open_registry, print, read_source};
use crate::exit;

/// A goal runner on lwirc's runtime: runs one attempt as a run of its version.
///
/// Reads one `lwir-runner/1` request on standard input (what `goal run` sends: the goal,
/// the work item with its version and resolved input, the registered LWIR), runs the
/// version with that input under --bindings exactly as `lwirc run` does (the version
/// re-hashed, the input checked, drift fails the attempt, every step durable in the run's
/// log), and prints the answer on standard output: `{"kind": "succeeded", "output": …,
/// "run": RUN}` or `{"kind": "failed", "error": "…", "run": RUN}`. The goal records the run
/// id with the attempt (`goal show` names it; `lwirc runs show RUN` tells the rest).
///
/// `goal run|tick|serve --bindings FILE` uses it for you; name it as a runner yourself to
/// give it other places (`--runner 'lwirc runner --bindings b.json --runs /srv/runs'`).
///
/// Exit status: 0 an answer was printed (the attempt succeeded or failed); 2 the request
/// or the bindings cannot be read (the goal records the attempt as failed with why).
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    /// Where the tools and model slots run: a `lwir.bindings/1` file.
    #[arg(long, value_name = "FILE")]
    bindings: String,
    #[command(flatten)]
    places: Places,
    /// Steps that call a tool, a model or code, running at once at most, in one attempt.
    #[arg(long, value_name = "N", default_value_t = lwir_runtime::run::DEFAULT_MAX_PARALLEL,
          value_parser = super::ranges::max_parallel)]
    max_parallel: usize,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let source = read_source("-")?;
    let (version, input) = match request(&source.bytes) {
        Ok(found) => found,
        Err(why) => {
            eprintln!(
                "lwirc runner: the request is not a {PROTOCOL} run request: {}",
                sanitize(&why)
            );
            return Ok(exit::USAGE);
        }
    };
    let Some((bindings, bindings_doc)) = read_bindings(&args.bindings)? else {
        return Ok(exit::USAGE);
    };
    let (registry, _) = open_registry(args.places.registry.clone(), true)?;
    let runtime = Runtime::new(args.places.store(), &registry);
    // The input as the request wrote it (its findings point into it).
    let input_doc = lwir_spec::document::read(source.bytes[input].to_vec())
        .document
        .ok_or_else(|| anyhow::anyhow!("the work's input does not read back"))?;
    let outcome = runtime.start(
        &NewRun {
            version: &version,
            input: &input_doc,
            bindings: &bindings,
            bindings_document: Some(&bindings_doc),
            definition: None,
            max_parallel: args.max_parallel,
            on_drift: OnDrift::Fail,
        },
        &bound,
        &Quiet,
    );
    let answer = answer(outcome);
    if let Some(run) = answer.get("run").and_then(Value::as_str) {
        eprintln!("run {run}");
    }
    print(&format!("{answer}\n"))?;
    Ok(exit::OK)
}

/// The version of a run request, and where its input is in it.
fn request(bytes: &[u8]) -> Result<(String, std::ops::Range<usize>), String> {
    let read = lwir_spec::document::read(bytes.to_vec());
    if let Some(f) = read.findings.iter().find(|f| f.is_error()) {
        return Err(format!("{} (byte {})", f.message, f.span.start()));
    }
    let doc = read.document.ok_or("standard input is empty")?;
    let root = doc.root();
    if root.get("kind").and_then(Node::as_str) != Some("run") {
        return Err("its `kind` is not \"run\"".into());
    }
    if root.get("protocol").and_then(Node::as_str) != Some(PROTOCOL) {
        return Err(format!("its `protocol` is not \"{PROTOCOL}\""));
    }
    let work = root.get("work").ok_or("it has no `work`")?;
    let version = work
        .get("version")
        .and_then(Node::as_str)
        .ok_or("its `work` has no string `version`")?;
    let input = work.get("input").ok_or("its `work` has no `input`")?;
    Ok((version.to_owned(), input.span.range()))
}

/// The runner's answer for how the run went, naming the run when one was recorded.
fn answer(outcome: Result<lwir_runtime::Outcome, RunError>) -> Value {
    let failed = |error: String| json!({"kind": "failed", "error": error});
    let report = match outcome {
        Ok(report) => report,
        Err(e) => {
            return failed(format!(
                "the version cannot run: {}",
                sanitize(&e.to_string())
            ));
        }
    };
    let mut answer = match &report.status {
        Status::Succeeded { output } => json!({"kind": "succeeded", "output": output}),
        Status::Failed { step, failure } => failed(format!(
            "{}: {} {}",
            step.as_deref()
                .map_or("the workflow's output".to_owned(), |s| format!(
                    "step `{s}`"
                )),
            failure.code,
            failure.error,
        )),
        Status::Refused { input, findings } => failed(format!(
            "{}: {}",
            if *input {
                "the work's input does not fit the workflow's input schema"
            } else {
                "the bindings cannot run this version"
            },
            listed(findings)
        )),
        Status::Drift { findings } | Status::Paused { findings } => failed(format!(
            "the tools drifted from the version's registration record; nothing ran: {}",
            listed(findings)
        )),
        Status::Differs(d) => failed(d.failure().error),
        Status::Incomplete => failed("the run stopped before its end".into()),
    };
    if let Some(run) = &report.run {
        answer["run"] = json!(run);
    }
    answer
}

/// Findings in one line: code, pointer and message of each (the first five).
fn listed(findings: &[Finding]) -> String {
    let mut parts: Vec<String> = findings
        .iter()
        .take(5)
        .map(|f| format!("{} at `{}`: {}", f.code, f.pointer, f.message))
        .collect();
    if findings.len() > 5 {
        parts.push(format!("and {} more", findings.len() - 5));
    }
    parts.join("; ")
}
