//! Runners: the programs that execute a goal's work, protocol `lwir-runner/1`
//! (`crates/lwir-spec/README.md` §10, `crates/lwir-spec/schema/runner-protocol-1.schema.json`).
//!
//! One JSON request on the runner's standard input — the goal, the work item (id, key,
//! template, version, attempt, resolved input) and the registered LWIR of its version — and
//! one answer on its standard output: `{"kind": "succeeded", "output": …}` or `{"kind":
//! "failed", "error": "…"}`. The process rules are the planner's (no shell unless asked,
//! its own process group, a timeout, an output cap, exit status 0); every way a runner can
//! fail to answer is a finding (LW1013–LW1018) recorded as the attempt's failure.

use lwir_repair::harness::FailureKind;
use lwir_repair::process::{self, Limits, PlannerCommand, Role};
use lwir_spec::document::{self, Value};
use lwir_spec::{Code, Node};

/// The protocol name every run request carries.
pub const PROTOCOL: &str = "lwir-runner/1";

/// The environment variable that marks every process of one attempt with
/// `<goal>/<work>/<attempt>`, so that what a killed `goal run` left running can be found.
pub const ATTEMPT_VAR: &str = "LWIRC_RUNNER_ATTEMPT";

/// The most characters of a runner's error kept.
pub const MAX_ERROR_CHARS: usize = 4096;

/// Runs one request; what came back, or how it failed.
pub trait Runner: Sync {
    /// What it is, for messages (the command line).
    fn describe(&self) -> String;
    /// Runs `request` with `env` added to its environment.
    fn run(&self, request: &[u8], env: &[(&str, String)]) -> Result<Vec<u8>, Failure>;
}

/// A runner that gave no answer, as a finding's code and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// LW1013–LW1018.
    pub code: Code,
    /// What happened.
    pub message: String,
}

/// An external command.
#[derive(Clone, Debug)]
pub struct ProcessRunner {
    command: PlannerCommand,
    limits: Limits,
}

impl ProcessRunner {
    /// `command`, run under `limits`.
    pub fn new(command: PlannerCommand, limits: Limits) -> Self {
        Self { command, limits }
    }
}

/// The runner code of a process failure kind.
fn code_of(kind: FailureKind) -> Code {
    match kind {
        FailureKind::NotStarted => Code::RunnerNotStarted,
        FailureKind::Failed => Code::RunnerFailed,
        FailureKind::TimedOut => Code::RunnerTimedOut,
        FailureKind::TooLarge => Code::RunnerAnswerTooLarge,
        FailureKind::NotJson => Code::RunnerAnswerNotJson,
        FailureKind::Invalid => Code::RunnerAnswerInvalid,
    }
}

impl Runner for ProcessRunner {
    fn describe(&self) -> String {
        self.command.to_string()
    }

    fn run(&self, request: &[u8], env: &[(&str, String)]) -> Result<Vec<u8>, Failure> {
        let mut env = env.to_vec();
        env.push(("LWIRC_RUNNER_PROTOCOL", PROTOCOL.to_owned()));
        match process::run(&self.command, request, &env, &self.limits) {
            Ok(output) => Ok(output.stdout),
            Err(e) => Err(Failure {
                code: code_of(e.kind()),
                // Recorded and shown: redacted (a runner may print a secret it inherited).
                message: e.report(Role::Runner),
            }),
        }
    }
}

/// What a runner's answer says.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// The work succeeded with this output (not yet checked against the output schema).
    Succeeded(serde_json::Value),
    /// The work failed, as the runner says.
    Failed(String),
}

/// The most characters of a run id an answer may name.
pub const MAX_RUN_ID_CHARS: usize = 128;

/// Whether `run` may be recorded as the run an attempt was: 1 to [`MAX_RUN_ID_CHARS`]
/// ASCII letters, digits, `-`, `_`, `.` and `:` (nothing a terminal or a path could act on).
pub fn is_run_id(run: &str) -> bool {
    !run.is_empty()
        && run.len() <= MAX_RUN_ID_CHARS
        && run
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// Reads a runner's standard output as an answer: exactly one strict I-JSON value, an
/// object with `kind` `succeeded` and an `output`, or `failed` and a string `error`, and
/// optionally `run`, the id of the run the attempt was (recorded with it; lwirc's built-in
/// runner names it). Other members are ignored.
pub fn read_answer(stdout: &[u8]) -> Result<(Answer, Option<String>), Failure> {
    let not_json = |message: String| Failure {
        code: Code::RunnerAnswerNotJson,
        message,
    };
    let invalid = |message: &str| Failure {
        code: Code::RunnerAnswerInvalid,
        message: message.to_owned(),
    };
    let read = document::read(stdout.to_vec());
    if let Some(f) = read.findings.iter().find(|f| f.is_error()) {
        return Err(not_json(format!(
            "the runner's answer is not strict JSON: {} (byte {})",
            lwir_spec::text::ellipsis(&f.message, 300),
            f.span.start()
        )));
    }
    let Some(doc) = read.document else {
        return Err(not_json(
            "the runner printed nothing on standard output".to_owned(),
        ));
    };
    let root = doc.root();
    if !matches!(root.value, Value::Object(_)) {
        return Err(invalid("the runner's answer is not an object with `kind`"));
    }
    let run = match root.get("run") {
        None => None,
        Some(run) => match run.as_str() {
            Some(run) if is_run_id(run) => Some(run.to_owned()),
            _ => {
                return Err(invalid(
                    "the answer's `run` is not a run id (1 to 128 ASCII letters, digits, `-`, `_`, `.`, `:`)",
                ));
            }
        },
    };
    let answer = match root.get("kind").and_then(Node::as_str) {
        Some("succeeded") => match root.get("output") {
            Some(output) => Ok(Answer::Succeeded(output.to_json())),
            None => Err(invalid("a `succeeded` answer needs an `output`")),
        },
        Some("failed") => match root.get("error").and_then(Node::as_str) {
            Some(error) if !error.trim().is_empty() => Ok(Answer::Failed(
                lwir_spec::text::ellipsis(error.trim(), MAX_ERROR_CHARS),
            )),
            _ => Err(invalid(
                "a `failed` answer needs a non-empty string `error`",
            )),
        },
        Some(_) => Err(invalid(
            "the answer's `kind` is not \"succeeded\" or \"failed\"",
        )),
        None => Err(invalid(
            "the answer has no `kind` (\"succeeded\" or \"failed\")",
        )),
    }?;
    Ok((answer, run))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_may_name_its_run_and_a_hostile_run_id_is_refused() {
        let (answer, run) =
            read_answer(br#"{"kind": "succeeded", "output": {"n": 1}, "run": "a1b2c3d4e5f60718"}"#)
                .unwrap();
        assert_eq!(answer, Answer::Succeeded(serde_json::json!({"n": 1})));
        assert_eq!(run.as_deref(), Some("a1b2c3d4e5f60718"));
        let (_, run) = read_answer(br#"{"kind": "failed", "error": "no"}"#).unwrap();
        assert_eq!(run, None);
        for bad in [
            r#""""#,
            r#""\u001b[31mred""#,
            r#""../../etc/passwd""#,
            r#"7"#,
            r#""a b""#,
        ] {
            let text = format!(r#"{{"kind": "succeeded", "output": 1, "run": {bad}}}"#);
            let e = read_answer(text.as_bytes()).unwrap_err();
            assert_eq!(e.code, Code::RunnerAnswerInvalid, "{bad}");
        }
        let long = format!(
            r#"{{"kind": "failed", "error": "x", "run": "{}"}}"#,
            "r".repeat(MAX_RUN_ID_CHARS + 1)
        );
        assert!(read_answer(long.as_bytes()).is_err());
        assert!(is_run_id(&"r".repeat(MAX_RUN_ID_CHARS)));
    }
}
