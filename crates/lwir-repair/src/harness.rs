//! The planner harness: one planner call is one request in, one answer (or one failure) out.
//!
//! [`Planner`] is the seam: the command-line planner ([`ProcessPlanner`], an external process
//! speaking [`crate::protocol`]) is one implementation; a built-in adapter for model servers
//! can be another without touching the loop.

use std::time::Duration;

use lwir_spec::Code;

use crate::process::{self, Limits, PlannerCommand};
use crate::protocol::{self, Answer, Request};

/// A planner's answer to one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The answer.
    pub answer: Answer,
    /// What the planner printed, exactly (recorded in the event log, so that a resumed
    /// session reuses it).
    pub stdout: String,
    /// How long the call took.
    pub elapsed: Duration,
}

impl Response {
    /// `draft` or `attention`.
    pub fn answer_kind(&self) -> &'static str {
        match self.answer {
            Answer::Draft { .. } => "draft",
            Answer::Attention { .. } => "attention",
        }
    }
}

/// How a planner call failed to give an answer: one kind per code, LW801–LW806.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The planner could not be started (LW801).
    NotStarted,
    /// It exited non-zero, was killed, or its output could not be read (LW802).
    Failed,
    /// It did not answer in time (LW803).
    TimedOut,
    /// Its answer was larger than the limit (LW804).
    TooLarge,
    /// Its answer was not JSON (LW805).
    NotJson,
    /// Its answer was JSON but not an answer (LW806).
    Invalid,
}

impl FailureKind {
    /// Every kind.
    pub const ALL: [FailureKind; 6] = [
        FailureKind::NotStarted,
        FailureKind::Failed,
        FailureKind::TimedOut,
        FailureKind::TooLarge,
        FailureKind::NotJson,
        FailureKind::Invalid,
    ];

    /// Its finding code.
    pub const fn code(self) -> Code {
        match self {
            FailureKind::NotStarted => Code::PlannerNotStarted,
            FailureKind::Failed => Code::PlannerFailed,
            FailureKind::TimedOut => Code::PlannerTimedOut,
            FailureKind::TooLarge => Code::PlannerAnswerTooLarge,
            FailureKind::NotJson => Code::PlannerAnswerNotJson,
            FailureKind::Invalid => Code::PlannerAnswerInvalid,
        }
    }

    /// The kind whose code is `code`, if one is (a session log names it by code).
    pub fn of_code(code: Code) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }
}

/// A planner call that gave no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannerFailure {
    /// How it failed.
    pub kind: FailureKind,
    /// What happened, for people.
    pub message: String,
    /// The end of what the planner wrote to standard error.
    pub stderr_tail: String,
    /// How long the call took.
    pub elapsed: Duration,
}

impl PlannerFailure {
    /// Its finding code (LW801–LW806).
    pub fn code(&self) -> Code {
        self.kind.code()
    }

    /// The failure with its message and standard-error tail redacted of secrets
    /// ([`lwir_spec::redact`]): a model server's error or a planner's standard error may
    /// quote an API key, and what a failure says is recorded and shown.
    pub fn redacted(mut self) -> Self {
        if let std::borrow::Cow::Owned(clean) = lwir_spec::redact::redact(&self.message) {
            self.message = clean;
        }
        if let std::borrow::Cow::Owned(clean) = lwir_spec::redact::redact(&self.stderr_tail) {
            self.stderr_tail = clean;
        }
        self
    }
}

/// Something that answers planner requests.
pub trait Planner {
    /// Answers `request`, whose wire form is `bytes`.
    fn call(&mut self, request: &Request, bytes: &[u8]) -> Result<Response, PlannerFailure>;
}

/// A planner that is an external command speaking the planner protocol.
#[derive(Clone, Debug)]
pub struct ProcessPlanner {
    command: PlannerCommand,
    limits: Limits,
}

impl ProcessPlanner {
    /// The planner `command`, run under `limits`.
    pub fn new(command: PlannerCommand, limits: Limits) -> Self {
        Self { command, limits }
    }
}

/// A planner's answer passing the call back: `{"kind": "delegate_to_default"}`.
pub const DELEGATE: &str = "delegate_to_default";

/// What a planner process printed, before it is read as an answer.
#[derive(Clone, Debug)]
pub struct Printed {
    /// Its standard output, UTF-8.
    pub stdout: String,
    /// The end of its standard error.
    pub stderr_tail: String,
    /// How long the call took.
    pub elapsed: Duration,
}

impl Printed {
    /// Whether the planner passed the call back to lwirc's built-in harness
    /// (`{"kind": "delegate_to_default"}`, other members ignored).
    pub fn delegates(&self) -> bool {
        let read = lwir_spec::document::read(self.stdout.as_bytes().to_vec());
        read.findings.is_empty()
            && read.document.is_some_and(|d| {
                d.root().get("kind").and_then(lwir_spec::Node::as_str) == Some(DELEGATE)
            })
    }

    /// The output read as an answer (spec §8.3).
    pub fn answer(self) -> Result<Response, PlannerFailure> {
        let answer =
            protocol::parse_answer(self.stdout.as_bytes()).map_err(|e| PlannerFailure {
                kind: e.kind,
                message: e.message,
                stderr_tail: self.stderr_tail.clone(),
                elapsed: self.elapsed,
            })?;
        Ok(Response {
            answer,
            stdout: self.stdout,
            elapsed: self.elapsed,
        })
    }
}

impl ProcessPlanner {
    /// Runs the planner for `request` (its wire form `bytes`): what it printed, or how it
    /// failed to print anything readable.
    pub fn run(&self, request: &Request, bytes: &[u8]) -> Result<Printed, PlannerFailure> {
        let started = std::time::Instant::now();
        let env = request.env();
        let env: Vec<(&str, String)> = env.into_iter().collect();
        let output =
            process::run(&self.command, bytes, &env, &self.limits).map_err(|e| PlannerFailure {
                kind: e.kind(),
                message: e.to_string(),
                stderr_tail: e.stderr_tail().to_owned(),
                elapsed: started.elapsed(),
            })?;
        let stdout = String::from_utf8(output.stdout).map_err(|e| PlannerFailure {
            kind: FailureKind::NotJson,
            message: format!(
                "the planner's answer is not UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
            stderr_tail: output.stderr_tail.clone(),
            elapsed: output.elapsed,
        })?;
        Ok(Printed {
            stdout,
            stderr_tail: output.stderr_tail,
            elapsed: output.elapsed,
        })
    }
}

impl Planner for ProcessPlanner {
    fn call(&mut self, request: &Request, bytes: &[u8]) -> Result<Response, PlannerFailure> {
        self.run(request, bytes)?.answer()
    }
}

#[cfg(test)]
mod tests {
    use lwir_spec::codes::Stage;

    use super::*;

    /// Every planner code is a failure kind, an `attention` or a repair cycle: a new code
    /// cannot be counted as some other kind of failure without a decision here.
    #[test]
    fn every_planner_code_has_its_own_kind() {
        for kind in FailureKind::ALL {
            assert_eq!(FailureKind::of_code(kind.code()), Some(kind));
        }
        for &code in Code::ALL {
            if code.stage() != Stage::Planner {
                continue;
            }
            let other = matches!(code, Code::PlannerNeedsAttention | Code::RepairCycle);
            assert!(
                FailureKind::of_code(code).is_some() != other,
                "{code} is neither a failure kind nor attention or a cycle"
            );
            assert!(
                code.help().is_some(),
                "{code} has no help in the code table"
            );
        }
    }
}
