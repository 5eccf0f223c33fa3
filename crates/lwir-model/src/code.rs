//! The one way a code body runs: as a `code.run` step runs it, in the confined sandbox
//! (`lwir-sandbox`), with the same limits, its input as JSON on standard input, and its
//! standard output read as one JSON value and checked against the step's `output` schema.
//!
//! Three callers share it, so that what a planner tests is what a run does: the runtime's
//! `code.run` effect, the planner's `test_code` tool, and `lwirc test-code`.
//!
//! - `python` runs `python3 -c BODY`, `javascript` runs `node -e BODY`, `bash` runs
//!   `bash -c BODY`, each in `/tmp` (private to the call) with no mount of the host, and an
//!   environment of `PATH`, `HOME` (`/tmp`) and `LANG` (`C.UTF-8`) only.
//! - The limits are the sandbox's defaults ([`Limits::default`]): 30 s of wall and of CPU
//!   time, 512 MiB, 64 processes, 64 MiB per file, 1 MiB kept of each output stream.
//! - A body is at most [`MAX_BODY_BYTES`] (the spec's bound on `body`).

use lwir_sandbox::{Job, Limits, Outcome, Sandbox, Unavailable};
use lwir_spec::Code;
use serde_json::{Value, json};

/// The most bytes a body may have (spec §3.2: `body`, at most 65 536 bytes).
pub const MAX_BODY_BYTES: usize = 65_536;

/// The languages a body may be written in, and the interpreter that runs each.
pub const LANGUAGES: [(&str, &str, &str); 3] = [
    ("python", "python3", "-c"),
    ("javascript", "node", "-e"),
    ("bash", "bash", "-c"),
];

/// A code body and its input: what a `code.run` step runs.
#[derive(Clone, Debug, PartialEq)]
pub struct CodeBody<'a> {
    /// `python`, `javascript` or `bash`.
    pub language: &'a str,
    /// The source text.
    pub body: &'a str,
    /// Its input, written as JSON on its standard input.
    pub input: &'a Value,
}

/// Why a body could not be run (nothing ran).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    /// The sandbox cannot run here (bubblewrap missing, namespaces refused, …): nothing
    /// runs unconfined instead.
    #[error(
        "code bodies run only in the bubblewrap sandbox, which cannot run here, and nothing \
         runs unconfined instead: {0}"
    )]
    Unavailable(String),
    /// The body cannot be run as given: an unknown language (`ruby`), a body over
    /// [`MAX_BODY_BYTES`], a NUL byte in it.
    #[error("{0}")]
    Invalid(String),
    /// The sandbox could not make the call on the host (a cgroup, a pipe), or could not
    /// end its processes.
    #[error("the sandbox could not run the body: {0}")]
    Sandbox(String),
}

impl CodeError {
    /// The finding code a run reports it with: LW1108 when the sandbox is missing, else
    /// LW1106.
    pub fn code(&self) -> Code {
        match self {
            CodeError::Unavailable(_) => Code::CapabilityUnavailable,
            CodeError::Invalid(_) | CodeError::Sandbox(_) => Code::CodeRunFailed,
        }
    }
}

/// Runs code bodies in a sandbox that works on this machine.
#[derive(Clone, Debug)]
pub struct CodeRunner {
    sandbox: Sandbox,
}

impl CodeRunner {
    /// A runner on `sandbox`.
    pub fn new(sandbox: Sandbox) -> Self {
        Self { sandbox }
    }

    /// A runner on the sandbox of this machine ([`Sandbox::probe`]), or why there is none.
    pub fn probe() -> Result<Self, CodeError> {
        Sandbox::probe().map(Self::new).map_err(|e| unavailable(&e))
    }

    /// The sandbox it runs in.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Runs `body` and returns how it ended (its exit status, signal, limit and output).
    pub fn run(&self, body: &CodeBody<'_>) -> Result<Outcome, CodeError> {
        let job = job(body)?;
        self.sandbox
            .run(&job)
            .map_err(|e| CodeError::Sandbox(e.to_string()))
    }

    /// Runs `body` and checks its result against `output`: what `test_code` answers.
    pub fn test(&self, body: &CodeBody<'_>, output: &Value) -> Result<Tested, CodeError> {
        let outcome = self.run(body)?;
        let verdict = verdict(&outcome, output);
        Ok(Tested { outcome, verdict })
    }
}

/// [`CodeError::Unavailable`] for why the sandbox cannot run.
pub fn unavailable(why: &Unavailable) -> CodeError {
    CodeError::Unavailable(why.to_string())
}

/// The sandbox job that runs `body`.
pub fn job(body: &CodeBody<'_>) -> Result<Job, CodeError> {
    let Some((_, program, flag)) = LANGUAGES.iter().find(|(l, _, _)| *l == body.language) else {
        return Err(CodeError::Invalid(format!(
            "`{}` is not a language of code.run (python, javascript or bash)",
            lwir_spec::redact::excerpt(body.language.as_bytes(), 40)
        )));
    };
    if body.body.len() > MAX_BODY_BYTES {
        return Err(CodeError::Invalid(format!(
            "the body is {} bytes; a body is at most {MAX_BODY_BYTES} bytes",
            body.body.len()
        )));
    }
    if body.body.contains('\0') {
        return Err(CodeError::Invalid("the body holds a NUL byte".to_owned()));
    }
    let mut job = Job::new([*program, *flag, body.body]);
    job.stdin = serde_json::to_vec(body.input).unwrap_or_default();
    job.cwd = "/tmp".into();
    job.env = environment();
    job.limits = Limits::default();
    Ok(job)
}

/// The whole environment of a body and of a `bash` command: nothing of lwirc's.
pub(crate) fn environment() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    vec![
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("HOME".into(), "/tmp".into()),
        ("LANG".into(), "C.UTF-8".into()),
    ]
}

/// A body's run and what it means for the step.
#[derive(Clone, Debug)]
pub struct Tested {
    /// How the body ended.
    pub outcome: Outcome,
    /// Its result, and whether it fits.
    pub verdict: Verdict,
}

impl Tested {
    /// The answer of `test_code` and `lwirc test-code --format json`: the sandbox's answer
    /// (`exit_status`, `signal`, `limit`, `stdout`, `stderr`, `stdout_truncated`,
    /// `stderr_truncated`) and `result` (the parsed standard output, or `null`), `fits`,
    /// and `finding` (`null`, or `code`, `message`, `pointer`, `keyword`,
    /// `schema_pointer`).
    pub fn to_json(&self) -> Value {
        let mut answer = serde_json::to_value(&self.outcome).unwrap_or_else(|_| json!({}));
        answer["result"] = self.verdict.result.clone().unwrap_or(Value::Null);
        answer["fits"] = Value::Bool(self.verdict.finding.is_none());
        answer["finding"] = match &self.verdict.finding {
            None => Value::Null,
            Some(f) => json!({
                "code": f.code.as_str(), "message": f.message, "pointer": f.pointer,
                "keyword": f.keyword, "schema_pointer": f.schema_pointer,
            }),
        };
        answer
    }
}

/// What a body's end means for its step: its result, when its standard output is one JSON
/// value, and the finding that fails the step, if any.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The parsed standard output (strict I-JSON), when the body succeeded and printed one
    /// JSON value.
    pub result: Option<Value>,
    /// Why the step would fail: LW1106 (the body failed, or printed no JSON value) or
    /// LW1102 (its result does not fit `output`); `None` when it fits.
    pub finding: Option<CodeFinding>,
}

/// Why a body's run fails its step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeFinding {
    /// LW1106 or LW1102.
    pub code: Code,
    /// What happened.
    pub message: String,
    /// For a result outside the schema: the pointer into the result.
    pub pointer: Option<String>,
    /// For a result outside the schema: the keyword that rejects it.
    pub keyword: Option<String>,
    /// For a result outside the schema: the pointer into the schema, to that keyword.
    pub schema_pointer: Option<String>,
}

impl CodeFinding {
    fn failed(message: String) -> Self {
        Self {
            code: Code::CodeRunFailed,
            message,
            pointer: None,
            keyword: None,
            schema_pointer: None,
        }
    }
}

/// How a body ended, as the run log's `code.finished` records it (names for the signal
/// and the limit, the output as text).
#[derive(Clone, Copy, Debug)]
pub struct Ended<'a> {
    /// The exit status, when it exited.
    pub exit_status: Option<i32>,
    /// The signal that ended it (`SIGKILL`).
    pub signal: Option<&'a str>,
    /// The limit that stopped it (`processes`).
    pub limit: Option<&'a str>,
    /// Its standard output, as kept.
    pub stdout: &'a str,
    /// Its standard error, as kept.
    pub stderr: &'a str,
}

/// A body's result: its standard output as one JSON value when it succeeded (exit 0, no
/// limit), else the LW1106 finding that fails its step — what every caller of the runner
/// reads a body's end with (`lwirc run`, a replay of its log, `test_code`).
pub fn result(ended: &Ended<'_>) -> Result<Value, CodeFinding> {
    if ended.exit_status != Some(0) || ended.limit.is_some() {
        let how = match (ended.limit, ended.exit_status, ended.signal) {
            (Some(limit), _, _) => format!("was stopped at its {limit} limit"),
            (None, Some(status), _) => format!("exited with status {status}"),
            (None, None, Some(signal)) => format!("was killed by {signal}"),
            _ => "ended without an exit status".to_owned(),
        };
        return Err(CodeFinding::failed(format!(
            "the body {how}: {}",
            cut(ended.stderr.trim(), 2000)
        )));
    }
    parse_strict(ended.stdout.as_bytes()).ok_or_else(|| {
        CodeFinding::failed(format!(
            "the body's standard output is not one JSON value: {}",
            cut(ended.stdout, 500)
        ))
    })
}

/// The verdict on `outcome` for a step whose output schema is `output`, with the messages
/// a run gives.
pub fn verdict(outcome: &Outcome, output: &Value) -> Verdict {
    let (signal, stdout, stderr) = (
        outcome.signal_name(),
        outcome.stdout_text(),
        outcome.stderr_text(),
    );
    let ended = Ended {
        exit_status: outcome.exit_status,
        signal: signal.as_deref(),
        limit: outcome.limit.map(|l| l.name()),
        stdout: &stdout,
        stderr: &stderr,
    };
    match result(&ended) {
        Err(finding) => Verdict {
            result: None,
            finding: Some(finding),
        },
        Ok(value) => Verdict {
            finding: check(output, &value),
            result: Some(value),
        },
    }
}

/// `value` against `schema` (JSON Schema 2020-12, as a run checks it): the first place it
/// does not fit.
fn check(schema: &Value, value: &Value) -> Option<CodeFinding> {
    if matches!(schema, Value::Null | Value::Bool(true))
        || schema.as_object().is_some_and(serde_json::Map::is_empty)
    {
        return None;
    }
    let validator = match jsonschema::draft202012::new(schema) {
        Ok(v) => v,
        Err(e) => {
            return Some(CodeFinding {
                code: Code::ValueSchemaMismatch,
                message: format!(
                    "the body's result does not fit its schema: the schema does not compile: {e}"
                ),
                pointer: Some(String::new()),
                keyword: None,
                schema_pointer: None,
            });
        }
    };
    let mut errors = validator.iter_errors(value);
    let first = errors.next()?;
    let more = errors.take(999).count();
    let pointer = first.instance_path().as_str().to_owned();
    let keyword = first.kind().keyword().to_owned();
    let at = if pointer.is_empty() {
        String::new()
    } else {
        format!(" at `{pointer}`")
    };
    let more = match more {
        0 => String::new(),
        1 => " (and 1 more place)".to_owned(),
        n => format!(" (and {n} more places)"),
    };
    Some(CodeFinding {
        code: Code::ValueSchemaMismatch,
        message: format!(
            "the body's result does not fit its schema{at}: {first} (keyword `{keyword}`){more}"
        ),
        pointer: Some(pointer),
        schema_pointer: Some(first.schema_path().as_str().to_owned()),
        keyword: Some(keyword),
    })
}

/// `bytes` as one strict I-JSON value (duplicate keys, lone surrogates refused).
fn parse_strict(bytes: &[u8]) -> Option<Value> {
    let read = lwir_spec::document::read(bytes.to_vec());
    match read.document {
        Some(doc) if read.findings.is_empty() => Some(doc.root().to_json()),
        _ => None,
    }
}

/// At most `max` characters of `text`, with `… (cut)` when cut (as a run's messages).
fn cut(text: &str, max: usize) -> String {
    lwir_spec::text::cut(text, max, lwir_spec::text::Mark::Cut).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_become_interpreter_command_lines_with_their_input_on_stdin() {
        let input = json!({"n": 2});
        let body = CodeBody {
            language: "python",
            body: "print(1)",
            input: &input,
        };
        let job = job(&body).unwrap();
        assert_eq!(job.argv, ["python3", "-c", "print(1)"]);
        assert_eq!(job.stdin, br#"{"n":2}"#);
        assert!(job.mounts.is_empty());
        let ruby = CodeBody {
            language: "ruby",
            ..body.clone()
        };
        assert!(matches!(super::job(&ruby), Err(CodeError::Invalid(m)) if m.contains("ruby")));
        let big = "x".repeat(MAX_BODY_BYTES + 1);
        let big = CodeBody {
            body: &big,
            ..body.clone()
        };
        assert!(matches!(super::job(&big), Err(CodeError::Invalid(m)) if m.contains("65536")));
    }
}
