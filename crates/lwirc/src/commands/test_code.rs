//! `lwirc test-code`: run the body of one `code.run` step of a draft as a run would.

use lwir_model::code::{CodeBody, CodeRunner};
use lwir_render::terminal::{excerpt, sanitize};
use serde_json::{Value, json};

use super::{print, read_json};
use crate::exit;

/// Run the body of a `code.run` step of a draft in the sandbox, as a run of it would, and
/// check its result against the step's `output` schema.
///
/// The step is named by a JSON Pointer into the draft (`/steps/2`, `/steps/0/steps/1`) or
/// by its id. Its body runs exactly as `lwirc run` runs it (and the planner's `test_code`
/// tool): in the bubblewrap sandbox (no network, the system read-only, an empty
/// environment), with the same limits (30 s, 512 MiB, 64 processes, 64 MiB per file, 1 MiB
/// kept of each output stream), `--input` as JSON on its standard input (`null` without
/// it), and its standard output read as one JSON value. Where the sandbox cannot run,
/// nothing runs (`lwirc sandbox check` says what to install).
///
/// The body's output is shown cleaned of terminal control characters; `--format json`
/// prints it exactly, with `result`, `fits` and `finding`.
///
/// Exit status: 0 the result fits the step's output schema, 1 it does not, the body
/// failed, or the sandbox cannot run here, 2 usage error, an unreadable file, or no
/// `code.run` step at STEP.
///
/// Examples:
///   lwirc test-code /steps/1 draft.json --input sample.json
///   lwirc test-code count draft.json --input - --format json < sample.json
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    /// The step: a JSON Pointer into the draft (`/steps/1`), or its id.
    #[arg(value_name = "STEP_POINTER")]
    step: String,
    /// The LWIR draft (`-` for standard input).
    #[arg(value_name = "DRAFT")]
    draft: String,
    /// The body's input: a JSON file (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    input: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// What ran and how it ended, for people.
    Human,
    /// The answer of the planner's `test_code` tool, with the step's pointer.
    Json,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    if args.input.as_deref() == Some("-") && args.draft == "-" {
        anyhow::bail!("only one of DRAFT and --input can be `-` (standard input)");
    }
    let Some(document) = read_json(&args.draft)? else {
        return Ok(exit::FINDINGS);
    };
    let draft = document.root().to_json();
    let Some((pointer, step)) = find_step(&draft, &args.step) else {
        anyhow::bail!(
            "`{}` names no step of `{}` (give a JSON Pointer such as /steps/1, or a step id)",
            sanitize(&args.step),
            sanitize(&args.draft)
        );
    };
    if step["kind"] != "code.run" {
        anyhow::bail!(
            "the step at `{}` is a `{}` step, not `code.run`",
            sanitize(&pointer),
            sanitize(step["kind"].as_str().unwrap_or("?"))
        );
    }
    let (Some(language), Some(body)) = (step["language"].as_str(), step["body"].as_str()) else {
        anyhow::bail!(
            "the step at `{}` has no `language` and `body` strings",
            sanitize(&pointer)
        );
    };
    let input = match &args.input {
        Some(path) => match read_json(path)? {
            Some(document) => document.root().to_json(),
            None => return Ok(exit::FINDINGS),
        },
        None => Value::Null,
    };
    let runner = match CodeRunner::probe() {
        Ok(runner) => runner,
        Err(why) => {
            eprintln!("lwirc: {}", sanitize(&why.to_string()));
            return Ok(exit::FINDINGS);
        }
    };
    let code = CodeBody {
        language,
        body,
        input: &input,
    };
    let output = step.get("output").cloned().unwrap_or(Value::Null);
    let tested = match runner.test(&code, &output) {
        Ok(tested) => tested,
        Err(why) => {
            eprintln!("lwirc: {}", sanitize(&why.to_string()));
            return Ok(exit::FINDINGS);
        }
    };
    let fits = tested.verdict.finding.is_none();
    match args.format {
        Format::Json => {
            let mut answer = tested.to_json();
            answer["step"] = json!(pointer);
            print(&(serde_json::to_string_pretty(&answer)? + "\n"))?;
        }
        Format::Human => human(&pointer, language, &tested),
    }
    Ok(if fits { exit::OK } else { exit::FINDINGS })
}

/// The step at `step` (a pointer), or the step whose id is `step`: its pointer and value.
fn find_step<'a>(draft: &'a Value, step: &str) -> Option<(String, &'a Value)> {
    if step.starts_with('/') {
        return draft.pointer(step).map(|v| (step.to_owned(), v));
    }
    fn walk<'a>(steps: &'a Value, at: &str, id: &str) -> Option<(String, &'a Value)> {
        for (i, s) in steps.as_array()?.iter().enumerate() {
            let here = format!("{at}/{i}");
            if s["id"] == id {
                return Some((here, s));
            }
            let nested = [
                walk(&s["steps"], &format!("{here}/steps"), id),
                walk(&s["default"], &format!("{here}/default"), id),
            ];
            if let Some(found) = nested.into_iter().flatten().next() {
                return Some(found);
            }
            for (c, case) in s["cases"].as_array().into_iter().flatten().enumerate() {
                if let Some(found) = walk(&case["steps"], &format!("{here}/cases/{c}/steps"), id) {
                    return Some(found);
                }
            }
        }
        None
    }
    walk(&draft["steps"], "/steps", step)
}

/// What ran and how it ended, on standard error; the result on standard output.
fn human(pointer: &str, language: &str, tested: &lwir_model::code::Tested) {
    let outcome = &tested.outcome;
    let ended = match (outcome.limit, outcome.exit_status, outcome.signal_name()) {
        (Some(limit), _, _) => format!("stopped at its {} limit", limit.name()),
        (None, Some(status), _) => format!("exit status {status}"),
        (None, None, Some(signal)) => format!("killed by {signal}"),
        _ => "no exit status".to_owned(),
    };
    eprintln!(
        "ran {} ({}) in the sandbox: {ended}, {:.2} s",
        sanitize(pointer),
        sanitize(language),
        outcome.elapsed.as_secs_f64()
    );
    for (name, text, cut) in [
        ("stdout", outcome.stdout_text(), outcome.stdout_truncated),
        ("stderr", outcome.stderr_text(), outcome.stderr_truncated),
    ] {
        if text.is_empty() {
            continue;
        }
        let mark = if cut { " (cut at the limit)" } else { "" };
        eprintln!("{name}{mark}:");
        let lines: Vec<&str> = text.lines().collect();
        for line in lines.iter().take(20) {
            eprintln!("  | {}", sanitize(&excerpt(line, 400)));
        }
        if lines.len() > 20 {
            eprintln!("  | … and {} more lines", lines.len() - 20);
        }
    }
    match &tested.verdict.finding {
        None => {
            if let Some(result) = &tested.verdict.result {
                let _ = print(&format!("{result}\n"));
            }
            eprintln!("the result fits the step's output schema");
        }
        Some(finding) => {
            eprintln!(
                "error[{}]: {}",
                finding.code,
                sanitize(&excerpt(&finding.message, 2000))
            );
            if let Some(at) = finding.schema_pointer.as_deref() {
                eprintln!("  schema: {}/output{}", sanitize(pointer), sanitize(at));
            }
        }
    }
}
