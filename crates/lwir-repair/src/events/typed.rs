//! The events of a session, typed: one variant per event kind, each with its payload. They
//! are turned into the log's `event` name and `data` object only at the edge
//! ([`SessionEvent::name`], [`SessionEvent::data`]) and read back from it
//! ([`SessionEvent::parse`]); the journal compares typed events when it replays a log.
//!
//! The names and fields are those the log has always had (documented in docs/guide/compiling.md's
//! session section): `data` is written as a JSON object with its keys sorted, so an event
//! written from these types is byte for byte what earlier versions wrote.

use lwir_spec::{Applicability, Code, Severity};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::Event;
use crate::fixes::AppliedFix;

/// One event of a session.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionEvent {
    /// `harness.session.started`: what the session runs against. Its payload belongs to
    /// whoever starts sessions (lwirc's `Started`: the command, the PlannerManifest, the
    /// input, the bounds), so the loop keeps it as JSON.
    Started(Value),
    /// `harness.model.called`: a planner call is being made.
    ModelCalled(ModelCalled),
    /// `harness.model.responded`: the planner answered.
    ModelResponded(ModelResponded),
    /// `harness.tool_call.failed`: the call gave no answer.
    CallFailed(CallFailed),
    /// `validation.completed`: a draft was validated.
    ValidationCompleted(ValidationCompleted),
    /// `repair.applied`: a pass of safe fixes was kept.
    RepairApplied(RepairApplied),
    /// `workflow.registered`: the session registered a version.
    WorkflowRegistered(WorkflowRegistered),
    /// `session.failed`: the session ended without a version. Its report is the loop's
    /// `Report`, kept as JSON.
    SessionFailed(SessionFailed),
}

/// `harness.model.called`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelCalled {
    /// The call's number (1 for the first).
    pub call: u32,
    /// `plan` or `repair`.
    pub kind: String,
    /// The SHA-256 (lowercase hex) of the request's bytes.
    pub request_sha256: String,
    /// The request's length in bytes.
    pub request_bytes: u64,
    /// The repair attempt, for a repair request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// `harness.model.responded`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelResponded {
    /// The call's number.
    pub call: u32,
    /// `draft` or `attention`.
    pub answer: String,
    /// How long the call took.
    pub elapsed_ms: u64,
    /// What the planner printed, exactly (a resumed session answers from it).
    pub stdout: String,
}

/// `harness.tool_call.failed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallFailed {
    /// The call's number.
    pub call: u32,
    /// LW801–LW806.
    #[serde(with = "code")]
    pub code: Code,
    /// What happened.
    pub message: String,
    /// The end of the planner's standard error.
    pub stderr_tail: String,
    /// How long the call took.
    pub elapsed_ms: u64,
}

/// `validation.completed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationCompleted {
    /// Errors found.
    pub errors: usize,
    /// Warnings found.
    pub warnings: usize,
    /// The state validated: the canonical hash of the draft (or of its bytes).
    pub state: String,
    /// Every finding, without its place in the text.
    pub findings: Vec<LoggedFinding>,
    /// The WorkflowVersion, when there are no errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// A finding as `validation.completed` logs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggedFinding {
    /// Its code.
    #[serde(with = "code")]
    pub code: Code,
    /// `error` or `warning`.
    #[serde(with = "severity")]
    pub severity: Severity,
    /// Its pointer.
    pub pointer: String,
    /// Its message.
    pub message: String,
    /// The applicability of its fix (`null` without one).
    pub fix: Option<Applicability>,
}

impl LoggedFinding {
    /// `finding` as logged.
    pub fn of(finding: &lwir_spec::Finding) -> Self {
        Self {
            code: finding.code,
            severity: finding.severity,
            pointer: finding.pointer.clone(),
            message: finding.message.clone(),
            fix: finding.fix.as_ref().map(|f| f.applicability),
        }
    }
}

/// `repair.applied`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepairApplied {
    /// The fixes kept.
    pub applied: Vec<AppliedFix>,
    /// The fixes rolled back, each with why.
    pub rolled_back: Vec<AppliedFix>,
    /// Errors before the pass.
    pub errors_before: usize,
    /// Errors after it.
    pub errors_after: usize,
    /// The state after it.
    pub state: String,
}

/// `workflow.registered`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowRegistered {
    /// The version registered.
    pub version: String,
    /// The workflow's name.
    pub workflow: String,
}

/// `session.failed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionFailed {
    /// Why, in one sentence.
    pub reason: String,
    /// The loop's report.
    pub report: Value,
    /// Why the registry refused the converged draft, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

impl SessionEvent {
    /// The event's name in the log.
    pub const fn name(&self) -> &'static str {
        match self {
            SessionEvent::Started(_) => "harness.session.started",
            SessionEvent::ModelCalled(_) => "harness.model.called",
            SessionEvent::ModelResponded(_) => "harness.model.responded",
            SessionEvent::CallFailed(_) => "harness.tool_call.failed",
            SessionEvent::ValidationCompleted(_) => "validation.completed",
            SessionEvent::RepairApplied(_) => "repair.applied",
            SessionEvent::WorkflowRegistered(_) => "workflow.registered",
            SessionEvent::SessionFailed(_) => "session.failed",
        }
    }

    /// Its payload, the log's `data` object.
    pub fn data(&self) -> Value {
        let data = match self {
            SessionEvent::Started(data) => return data.clone(),
            SessionEvent::ModelCalled(e) => serde_json::to_value(e),
            SessionEvent::ModelResponded(e) => serde_json::to_value(e),
            SessionEvent::CallFailed(e) => serde_json::to_value(e),
            SessionEvent::ValidationCompleted(e) => serde_json::to_value(e),
            SessionEvent::RepairApplied(e) => serde_json::to_value(e),
            SessionEvent::WorkflowRegistered(e) => serde_json::to_value(e),
            SessionEvent::SessionFailed(e) => serde_json::to_value(e),
        };
        // Plain structs of strings, numbers and JSON values always serialise.
        data.unwrap_or_default()
    }

    /// The typed form of a logged event; why not, when its name is unknown or its data
    /// does not have the event's fields.
    pub fn parse(event: &Event) -> Result<Self, String> {
        Ok(match event.event.as_str() {
            "harness.session.started" if event.data.is_object() => {
                SessionEvent::Started(event.data.clone())
            }
            "harness.model.called" => SessionEvent::ModelCalled(event.data_as()?),
            "harness.model.responded" => SessionEvent::ModelResponded(event.data_as()?),
            "harness.tool_call.failed" => SessionEvent::CallFailed(event.data_as()?),
            "validation.completed" => SessionEvent::ValidationCompleted(event.data_as()?),
            "repair.applied" => SessionEvent::RepairApplied(event.data_as()?),
            "workflow.registered" => SessionEvent::WorkflowRegistered(event.data_as()?),
            "session.failed" => SessionEvent::SessionFailed(event.data_as()?),
            other => return Err(format!("`{other}` is not a session event")),
        })
    }
}

/// A [`Code`] as its string, `LW301`, for `#[serde(with = "…::code")]` (the session's
/// events and fixes, a run's events).
pub mod code {
    use super::*;

    /// Writes `code` as its string.
    pub fn serialize<S: Serializer>(code: &Code, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(code.as_str())
    }

    /// Reads a code from its string; an unknown one is an error.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Code, D::Error> {
        let text = String::deserialize(deserializer)?;
        Code::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("unknown code `{text}`")))
    }
}

/// A [`Severity`] as its string, `error` or `warning`.
mod severity {
    use super::*;

    pub(super) fn serialize<S: Serializer>(
        severity: &Severity,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(severity.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Severity, D::Error> {
        match String::deserialize(deserializer)?.as_str() {
            "error" => Ok(Severity::Error),
            "warning" => Ok(Severity::Warning),
            other => Err(serde::de::Error::custom(format!(
                "unknown severity `{other}`"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logged(event: &SessionEvent) -> Event {
        Event {
            seq: 1,
            time: "2026-12-01T00:00:00.000Z".into(),
            event: event.name().into(),
            data: event.data(),
        }
    }

    /// Every kind of event reads back as itself from what the log holds, and the log
    /// holds the fields it always had.
    #[test]
    fn every_event_reads_back_as_itself() {
        let fix = AppliedFix {
            code: Code::UnknownTool,
            pointer: "/steps/0/tool".into(),
            message: "unknown tool `a`".into(),
            patch: vec![lwir_spec::PatchOp::Replace {
                path: "/steps/0/tool".into(),
                value: "b".into(),
            }],
            added_errors: Vec::new(),
            untried: false,
        };
        let events = [
            SessionEvent::Started(serde_json::json!({ "command": "compile" })),
            SessionEvent::ModelCalled(ModelCalled {
                call: 2,
                kind: "repair".into(),
                request_sha256: "ab".into(),
                request_bytes: 10,
                attempt: Some(1),
            }),
            SessionEvent::ModelResponded(ModelResponded {
                call: 2,
                answer: "draft".into(),
                elapsed_ms: 3,
                stdout: "{}".into(),
            }),
            SessionEvent::CallFailed(CallFailed {
                call: 1,
                code: Code::PlannerTimedOut,
                message: "timed out".into(),
                stderr_tail: String::new(),
                elapsed_ms: 5,
            }),
            SessionEvent::ValidationCompleted(ValidationCompleted {
                errors: 1,
                warnings: 0,
                state: "sha256:00".into(),
                findings: vec![LoggedFinding {
                    code: Code::UnknownTool,
                    severity: Severity::Error,
                    pointer: "/steps/0/tool".into(),
                    message: "unknown tool `a`".into(),
                    fix: None,
                }],
                version: None,
            }),
            SessionEvent::RepairApplied(RepairApplied {
                applied: vec![fix.clone()],
                rolled_back: Vec::new(),
                errors_before: 1,
                errors_after: 0,
                state: "sha256:01".into(),
            }),
            SessionEvent::WorkflowRegistered(WorkflowRegistered {
                version: "sha256:02".into(),
                workflow: "w".into(),
            }),
            SessionEvent::SessionFailed(SessionFailed {
                reason: "why".into(),
                report: serde_json::json!({ "outcome": "exhausted" }),
                refused: None,
            }),
        ];
        for event in &events {
            assert_eq!(SessionEvent::parse(&logged(event)).as_ref(), Ok(event));
        }
        // The fields as the log has them: a finding's `fix` is `null` without one.
        assert_eq!(
            events[4].data()["findings"][0],
            serde_json::json!({ "code": "LW301", "severity": "error", "pointer": "/steps/0/tool",
                                "message": "unknown tool `a`", "fix": null })
        );
        assert_eq!(
            events[1].data(),
            serde_json::json!({ "call": 2, "kind": "repair", "request_sha256": "ab",
                                "request_bytes": 10, "attempt": 1 })
        );
        let mut unknown = logged(&events[6]);
        unknown.event = "workflow.unregistered".into();
        assert!(SessionEvent::parse(&unknown).is_err());
    }
}
