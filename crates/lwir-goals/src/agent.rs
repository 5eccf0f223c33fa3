//! Planners and reviewers of a goal: external commands speaking `lwir-planner/1` with the
//! `replan` and `review` requests (`crates/lwir-spec/README.md` §8), run by the same process
//! harness as a compile's planner — no shell unless asked, their own process group, a
//! timeout and an output cap.

use lwir_repair::harness::FailureKind;
use lwir_repair::process::{self, Limits, PlannerCommand, Role};

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
    role: Role,
}

impl ProcessAgent {
    /// `command`, run under `limits`, as a planner.
    pub fn new(command: PlannerCommand, limits: Limits) -> Self {
        Self {
            command,
            limits,
            role: Role::Planner,
        }
    }

    /// The same command in `role` (a reviewer), which its failures name.
    pub fn with_role(self, role: Role) -> Self {
        Self { role, ..self }
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
            Err(e) => Err(CallFailure {
                kind: e.kind(),
                // Recorded and shown: redacted (a planner may print a secret it inherited).
                message: e.report(self.role),
            }),
        }
    }
}
