//! The planner harness: one planner call is one request in, one answer (or one failure) out.
//!
//! [`Planner`] is the seam: the command-line planner ([`ProcessPlanner`], an external process
//! speaking [`crate::protocol`]) is one implementation; a built-in adapter for model servers
//! can be another without touching the loop.

use std::time::Duration;

use lwir_spec::Code;

use crate::process::{self, Limits, PlannerCommand, RunFailure};
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

/// A planner call that gave no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannerFailure {
    /// LW801–LW806.
    pub code: Code,
    /// What happened, for people.
    pub message: String,
    /// The end of what the planner wrote to standard error.
    pub stderr_tail: String,
    /// How long the call took.
    pub elapsed: Duration,
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

impl Planner for ProcessPlanner {
    fn call(&mut self, request: &Request, bytes: &[u8]) -> Result<Response, PlannerFailure> {
        let started = std::time::Instant::now();
        let env = request.env();
        let env: Vec<(&str, String)> = env.into_iter().collect();
        let output = process::run(&self.command, bytes, &env, &self.limits).map_err(|e| {
            let (code, message) = match &e {
                RunFailure::NotStarted { .. } => (Code::PlannerNotStarted, e.to_string()),
                RunFailure::Exited { .. } => (Code::PlannerFailed, e.to_string()),
                RunFailure::TimedOut { .. } => (Code::PlannerTimedOut, e.to_string()),
                RunFailure::TooLarge { .. } => (Code::PlannerAnswerTooLarge, e.to_string()),
                RunFailure::Io { .. } => (Code::PlannerFailed, e.to_string()),
            };
            PlannerFailure {
                code,
                message,
                stderr_tail: e.stderr_tail().to_owned(),
                elapsed: started.elapsed(),
            }
        })?;
        let failure = |code, message| PlannerFailure {
            code,
            message,
            stderr_tail: output.stderr_tail.clone(),
            elapsed: output.elapsed,
        };
        let stdout = String::from_utf8(output.stdout.clone()).map_err(|e| {
            failure(
                Code::PlannerAnswerNotJson,
                format!(
                    "the planner's answer is not UTF-8 (invalid byte at offset {})",
                    e.utf8_error().valid_up_to()
                ),
            )
        })?;
        let answer =
            protocol::parse_answer(stdout.as_bytes()).map_err(|e| failure(e.code, e.message))?;
        Ok(Response {
            answer,
            stdout,
            elapsed: output.elapsed,
        })
    }
}
