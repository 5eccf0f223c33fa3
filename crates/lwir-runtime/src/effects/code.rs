//! `code.run` bodies, run by the one code runner the planner's `test_code` uses too
//! ([`lwir_model::code`]): the bubblewrap sandbox, its limits, the input as JSON on
//! standard input. The sandbox is probed once per process, at the first body; where it
//! cannot run, every body fails with LW1108 naming what is missing, and nothing runs
//! unconfined.

use std::sync::OnceLock;

use lwir_model::code::{CodeBody, CodeError, CodeRunner};

use super::{CodeOutcome, CodeRun, EffectError};

/// The sandbox of this process, or why there is none.
static RUNNER: OnceLock<Result<CodeRunner, CodeError>> = OnceLock::new();

/// Runs one body; its end as `code.finished` records it. The executor reads the result
/// from standard output and checks it against the step's `output`.
pub(super) fn run(run: &CodeRun) -> Result<CodeOutcome, EffectError> {
    let runner = RUNNER
        .get_or_init(CodeRunner::probe)
        .as_ref()
        .map_err(|e| EffectError::new(e.code(), e.to_string()))?;
    let body = CodeBody {
        language: &run.language,
        body: &run.body,
        input: &run.input,
    };
    let outcome = runner
        .run(&body)
        .map_err(|e| EffectError::new(e.code(), e.to_string()))?;
    Ok(CodeOutcome {
        exit_status: outcome.exit_status,
        signal: outcome.signal_name(),
        limit: outcome.limit.map(|l| l.name().to_owned()),
        stdout: outcome.stdout_text(),
        stderr: outcome.stderr_text(),
        stdout_truncated: outcome.stdout_truncated,
        stderr_truncated: outcome.stderr_truncated,
    })
}
