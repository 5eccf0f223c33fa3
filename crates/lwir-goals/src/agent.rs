//! Planners and reviewers of a goal: external commands speaking `lwir-planner/1` with the
//! `replan` and `review` requests (`crates/lwir-spec/README.md` §8), run by the same process
//! harness as a compile's planner — no shell unless asked, their own process group, a
//! timeout and an output cap.

use lwir_repair::harness::FailureKind;
use lwir_repair::process::{self, Limits, PlannerCommand};

/// A call that gave no output to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallFailure {
    /// How it failed (its code is LW801–LW804).
    pub kind: FailureKind,
    /// What happened.
    pub message: String,
}

/// Something that answers one request with the bytes of its answer.
pub trait Agent {
    /// What it is, for the log and receipts (the command line).
    fn describe(&self) -> String;
    /// Sends `request` (its kind in `kind`) and returns what came back.
    fn call(
        &mut self,
        kind: &str,
        request: &[u8],
        env: &[(&str, String)],
    ) -> Result<Vec<u8>, CallFailure>;
}

/// An external command.
#[derive(Clone, Debug)]
pub struct ProcessAgent {
    command: PlannerCommand,
    limits: Limits,
}

impl ProcessAgent {
    /// `command`, run under `limits`.
    pub fn new(command: PlannerCommand, limits: Limits) -> Self {
        Self { command, limits }
    }
}

impl Agent for ProcessAgent {
    fn describe(&self) -> String {
        self.command.to_string()
    }

    fn call(
        &mut self,
        kind: &str,
        request: &[u8],
        env: &[(&str, String)],
    ) -> Result<Vec<u8>, CallFailure> {
        let mut env = env.to_vec();
        env.push((
            "LWIRC_PLANNER_PROTOCOL",
            lwir_repair::protocol::PROTOCOL.to_owned(),
        ));
        env.push(("LWIRC_PLANNER_KIND", kind.to_owned()));
        match process::run(&self.command, request, &env, &self.limits) {
            Ok(output) => Ok(output.stdout),
            Err(e) => {
                let kind = e.kind();
                let tail = e.stderr_tail();
                let message = if tail.is_empty() {
                    e.to_string()
                } else {
                    format!("{e}; its standard error ends: {}", last_line(tail))
                };
                // Recorded and shown: a planner may print a secret it inherited.
                let message = lwir_spec::redact::redact(&message).into_owned();
                Err(CallFailure { kind, message })
            }
        }
    }
}

fn last_line(text: &str) -> String {
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    line.chars().take(500).collect()
}
