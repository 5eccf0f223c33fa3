//! The events of a run, typed: one variant per event kind, each with its payload. They
//! become the log's `event` name and `data` object only at the edge ([`RunEvent::name`],
//! [`RunEvent::data`]) and are read back from it ([`RunEvent::parse`]); resume, retry and
//! replay compare typed events.
//!
//! Every event about a step names it by `step`, its path (`each[3]/classify`), and
//! `attempt` (from 1). Values are kept whole: a resumed or replayed run reads its effects'
//! results from here.

// `code`: a `Code` as its string, `LW1104`, for `#[serde(with = "code")]`.
use lwir_repair::events::code;
use lwir_spec::Code;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::Event;

/// The event kinds, each once: its variant (named as its payload type), its name in the
/// log and what it says. Makes [`RunEvent`] and what names, writes and reads its variants.
macro_rules! events {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// One event of a run's log.
        #[derive(Clone, Debug, PartialEq)]
        pub enum RunEvent {
            $($(#[$doc])* $variant($variant),)*
        }

        impl RunEvent {
            /// The event's name in the log.
            pub const fn name(&self) -> &'static str {
                match self {
                    $(RunEvent::$variant(_) => $name,)*
                }
            }

            /// Its payload, the log's `data` object.
            pub fn data(&self) -> Value {
                let data = match self {
                    $(RunEvent::$variant(e) => serde_json::to_value(e),)*
                };
                // Plain structs of strings, numbers and JSON values always serialise.
                data.unwrap_or_default()
            }

            /// The typed form of a logged event; why not, when its name is unknown or its
            /// data lacks the event's fields.
            pub fn parse(event: &Event) -> Result<Self, String> {
                Ok(match event.event.as_str() {
                    $($name => RunEvent::$variant(event.data_as()?),)*
                    other => return Err(format!("`{other}` is not a run event")),
                })
            }
        }
    };
}

events! {
    /// `run.started`: what the run runs, with what, as what.
    RunStarted = "run.started",
    /// `step.started`: an attempt of a step began, with what it decided.
    StepStarted = "step.started",
    /// `step.skipped`: the step's `when` was false; its output is absent.
    StepSkipped = "step.skipped",
    /// `step.succeeded`: an attempt of a step ended with its output.
    StepSucceeded = "step.succeeded",
    /// `step.failed`: an attempt of a step failed.
    StepFailed = "step.failed",
    /// `tool.called`: a tool call is sent.
    ToolCalled = "tool.called",
    /// `tool.responded`: the tool's answer, or why there is none.
    ToolResponded = "tool.responded",
    /// `model.called`: a model round is sent.
    ModelCalled = "model.called",
    /// `model.responded`: the model's answer, or why there is none.
    ModelResponded = "model.responded",
    /// `code.started`: a code body is run.
    CodeStarted = "code.started",
    /// `code.finished`: how the code body ended.
    CodeFinished = "code.finished",
    /// `run.paused`: the run waits for a person (drift found with `--on-drift pause`).
    RunPaused = "run.paused",
    /// `run.resumed`: the run goes on (`runs resume`, `runs retry`).
    RunResumed = "run.resumed",
    /// `run.succeeded`: the run's output.
    RunSucceeded = "run.succeeded",
    /// `run.failed`: which step failed the run, and why.
    RunFailed = "run.failed",
}

/// `run.started`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunStarted {
    /// The run id.
    pub run: String,
    /// The WorkflowVersion run, `sha256:<hex>`.
    pub version: String,
    /// The digest of the registration record the run read (the one that counts).
    pub record: String,
    /// The workflow's name.
    pub workflow: String,
    /// The run input.
    pub input: Value,
    /// `sha256:` over the input's RFC 8785 form.
    pub input_digest: String,
    /// The bindings, as the file holds them (names of variables, never their values).
    pub bindings: Value,
    /// `sha256:` over the bindings' RFC 8785 form.
    pub bindings_digest: String,
    /// The lwirc that started the run.
    pub lwirc_version: String,
    /// The surface the run found: per referenced tool the hashes of its description,
    /// input and output as bound, per referenced slot the model the bindings name.
    pub surface: Value,
    /// Steps run at once, at most.
    pub max_parallel: u32,
    /// `fail` or `pause`.
    pub on_drift: String,
}

/// `step.started`: the attempt, and every decision made before its effect.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepStarted {
    /// The step's path.
    pub step: String,
    /// Its kind (`tool.call`, `map`, …).
    pub kind: String,
    /// The attempt, from 1.
    pub attempt: u32,
    /// `true` when the step has a `when` (which held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<bool>,
    /// A `tool.call`'s arguments, evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// A `model.call`'s prompt, rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// A `model.call`'s system prompt, rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// A `code.run`'s input, evaluated.
    #[serde(default, with = "present", skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// A `map`'s or `reduce`'s list, evaluated.
    #[serde(default, with = "present", skip_serializing_if = "Option::is_none")]
    pub over: Option<Value>,
    /// A `branch`'s case: its index, `"default"`, or `null` when none applies.
    #[serde(default, with = "present", skip_serializing_if = "Option::is_none")]
    pub case: Option<Value>,
}

/// `step.skipped`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepSkipped {
    /// The step's path.
    pub step: String,
    /// The attempt it would have been.
    pub attempt: u32,
    /// Always `false`: what `when` gave.
    pub when: bool,
}

/// `step.succeeded`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepSucceeded {
    /// The step's path (`poll#2` for an iteration of loop `poll`).
    pub step: String,
    /// The attempt.
    pub attempt: u32,
    /// The output: a tool's result, a model's or code body's answer, a map's list of
    /// results, a reduce's accumulator; absent for `branch` and `loop`.
    #[serde(default, with = "present", skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// For an iteration of a loop: what `until` gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<bool>,
}

/// Why a step, an effect or a run failed: the code, the message, and for a value that does
/// not fit its schema where and which keyword.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// For a compound step that failed because a step inside it did: that step's path
    /// (the innermost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// What happened.
    pub error: String,
    /// The finding code (LW1101–LW1110, LW70x for drift).
    #[serde(with = "code")]
    pub code: Code,
    /// A pointer into the value that did not fit its schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// The schema keyword that rejected it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyword: Option<String>,
    /// A pointer into the schema, to that keyword.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_pointer: Option<String>,
}

impl Failure {
    /// A failure with `code` and `error`, nothing located.
    pub fn new(code: Code, error: impl Into<String>) -> Self {
        Self {
            cause: None,
            error: error.into(),
            code,
            pointer: None,
            keyword: None,
            schema_pointer: None,
        }
    }
}

/// `step.failed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepFailed {
    /// The step's path.
    pub step: String,
    /// The attempt.
    pub attempt: u32,
    /// Why; `cause` is the innermost step it came from when that is another.
    #[serde(flatten)]
    pub failure: Failure,
}

/// `tool.called`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCalled {
    /// The step's path.
    pub step: String,
    /// The attempt.
    pub attempt: u32,
    /// For a call a model asked for: the round (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// For a call a model asked for: its place in the round (from 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// The tool id.
    pub tool: String,
    /// Where it runs, as bound: `{"server", "name"}` or `{"command"}` (not compared by
    /// replay: bindings may be replaced by `runs retry --bindings`).
    pub via: Value,
    /// The arguments.
    pub args: Value,
    /// The idempotency key sent with the call.
    pub idempotency_key: String,
}

/// `tool.responded`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResponded {
    /// The step's path.
    pub step: String,
    /// The attempt.
    pub attempt: u32,
    /// As in `tool.called`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// As in `tool.called`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// The result as the tool gave it (absent when there is none).
    #[serde(default, with = "present", skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Whether the result is text the tool gave (decoded by the output schema), rather
    /// than a JSON value.
    #[serde(default, skip_serializing_if = "is_false")]
    pub text: bool,
    /// Whether the tool reported a failure (its result then says why).
    pub is_error: bool,
    /// Why there is no result (the call failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Failure>,
}

/// Tokens a model call used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the request.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
    /// Both.
    pub total_tokens: u64,
}

impl Usage {
    /// `self` and `other` summed.
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens + other.prompt_tokens,
            completion_tokens: self.completion_tokens + other.completion_tokens,
            total_tokens: self.total_tokens + other.total_tokens,
        }
    }
}

/// `model.called`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelCalled {
    /// The step's path.
    pub step: String,
    /// The attempt.
    pub attempt: u32,
    /// The round of the step's tool loop, from 1.
    pub round: u32,
    /// The model slot.
    pub slot: String,
    /// The model, as bound (not compared by replay).
    pub model: String,
    /// The chat request: `messages`, `response_format` and `tools`.
    pub request: Value,
}

/// `model.responded`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelResponded {
    /// The step's path.
    pub step: String,
    /// The attempt.
    pub attempt: u32,
    /// The round.
    pub round: u32,
    /// The assistant's message: `content` and `tool_calls`.
    #[serde(default, with = "present", skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
    /// Tokens used.
    #[serde(default)]
    pub usage: Usage,
    /// How the answer was asked for (`json_schema`, `json_object`, `text`), when a server
    /// said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Why there is no answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Failure>,
}

/// `code.started`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CodeStarted {
    /// The step's path.
    pub step: String,
    /// The attempt.
    pub attempt: u32,
    /// `python`, `javascript` or `bash`.
    pub language: String,
    /// `sha256:` over the body's bytes.
    pub body_digest: String,
    /// The input given on standard input.
    pub input: Value,
}

/// `code.finished`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CodeFinished {
    /// The step's path.
    pub step: String,
    /// The attempt.
    pub attempt: u32,
    /// Its exit status, when it exited.
    pub exit_status: Option<i32>,
    /// The signal that ended it, by name.
    pub signal: Option<String>,
    /// Which limit stopped it.
    pub limit: Option<String>,
    /// Standard output (capped).
    pub stdout: String,
    /// Standard error (capped).
    pub stderr: String,
    /// Whether standard output was cut at the cap.
    #[serde(default)]
    pub stdout_truncated: bool,
    /// Whether standard error was cut at the cap.
    #[serde(default)]
    pub stderr_truncated: bool,
    /// Why it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Failure>,
}

/// A finding as a run's log keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggedFinding {
    /// Its code.
    #[serde(with = "code")]
    pub code: Code,
    /// Its pointer.
    pub pointer: String,
    /// Its message.
    pub message: String,
}

impl LoggedFinding {
    /// `finding` as logged.
    pub fn of(finding: &lwir_spec::Finding) -> Self {
        Self {
            code: finding.code,
            pointer: finding.pointer.clone(),
            message: finding.message.clone(),
        }
    }
}

/// `run.paused`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunPaused {
    /// Why: `drift`.
    pub reason: String,
    /// What was found.
    pub findings: Vec<LoggedFinding>,
}

/// `run.resumed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResumed {
    /// `resume` (after a crash or a pause) or `retry` (after a failure).
    pub mode: String,
    /// Who (`--by`, else `$USER`).
    pub by: String,
    /// When, RFC 3339 UTC.
    pub at: String,
    /// Whether drift found now was accepted (`--accept-drift`).
    pub accept_drift: bool,
    /// The findings of the drift accepted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<LoggedFinding>,
    /// New bindings (`--bindings FILE`), which replace the run's from here on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bindings: Option<Value>,
    /// Their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bindings_digest: Option<String>,
}

/// `run.succeeded`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSucceeded {
    /// The workflow's output (`null` when the draft has none).
    pub output: Value,
    /// Tokens used by every model call of the run.
    pub usage: Usage,
}

/// `run.failed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunFailed {
    /// The innermost step that failed (none when the workflow's output did not fit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Why.
    #[serde(flatten)]
    pub failure: Failure,
}

/// What an event is about, for matching a recomputed event with a recorded one: the step
/// path, the attempt and which of its events.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Key {
    pub(crate) step: String,
    pub(crate) attempt: u32,
    pub(crate) phase: Phase,
}

/// Which event of a step attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Phase {
    /// `step.started` or `step.skipped`.
    Start,
    /// `step.succeeded` or `step.failed`.
    End,
    /// `tool.called` of (round, index).
    ToolCall(u32, u32),
    /// `tool.responded` of (round, index).
    ToolResult(u32, u32),
    /// `model.called` of a round.
    ModelCall(u32),
    /// `model.responded` of a round.
    ModelResult(u32),
    /// `code.started`.
    CodeCall,
    /// `code.finished`.
    CodeResult,
}

impl RunEvent {
    /// The step path it is about, when it is about a step.
    pub fn step(&self) -> Option<&str> {
        Some(match self {
            RunEvent::StepStarted(e) => &e.step,
            RunEvent::StepSkipped(e) => &e.step,
            RunEvent::StepSucceeded(e) => &e.step,
            RunEvent::StepFailed(e) => &e.step,
            RunEvent::ToolCalled(e) => &e.step,
            RunEvent::ToolResponded(e) => &e.step,
            RunEvent::ModelCalled(e) => &e.step,
            RunEvent::ModelResponded(e) => &e.step,
            RunEvent::CodeStarted(e) => &e.step,
            RunEvent::CodeFinished(e) => &e.step,
            _ => return None,
        })
    }

    /// Which step attempt and which of its events it is; `None` for run-level events.
    pub(crate) fn key(&self) -> Option<Key> {
        let key = |step: &str, attempt: u32, phase: Phase| Key {
            step: step.to_owned(),
            attempt,
            phase,
        };
        let slot =
            |round: Option<u32>, index: Option<u32>| (round.unwrap_or(0), index.unwrap_or(0));
        Some(match self {
            RunEvent::StepStarted(e) => key(&e.step, e.attempt, Phase::Start),
            RunEvent::StepSkipped(e) => key(&e.step, e.attempt, Phase::Start),
            RunEvent::StepSucceeded(e) => key(&e.step, e.attempt, Phase::End),
            RunEvent::StepFailed(e) => key(&e.step, e.attempt, Phase::End),
            RunEvent::ToolCalled(e) => {
                let (r, i) = slot(e.round, e.index);
                key(&e.step, e.attempt, Phase::ToolCall(r, i))
            }
            RunEvent::ToolResponded(e) => {
                let (r, i) = slot(e.round, e.index);
                key(&e.step, e.attempt, Phase::ToolResult(r, i))
            }
            RunEvent::ModelCalled(e) => key(&e.step, e.attempt, Phase::ModelCall(e.round)),
            RunEvent::ModelResponded(e) => key(&e.step, e.attempt, Phase::ModelResult(e.round)),
            RunEvent::CodeStarted(e) => key(&e.step, e.attempt, Phase::CodeCall),
            RunEvent::CodeFinished(e) => key(&e.step, e.attempt, Phase::CodeResult),
            _ => return None,
        })
    }

    /// The event as replay compares it: what the run decided, without what the bindings
    /// said about where effects run (`via`, `model`), which `runs retry --bindings` may
    /// change between two attempts.
    pub(crate) fn decision(&self) -> Value {
        let mut data = self.data();
        if let Value::Object(members) = &mut data {
            match self {
                RunEvent::ToolCalled(_) => {
                    members.remove("via");
                }
                RunEvent::ModelCalled(_) => {
                    members.remove("model");
                }
                _ => {}
            }
        }
        data
    }
}

/// The first place where `a` and `b` differ: its pointer and the two values there (`None`
/// where one has nothing).
pub(crate) fn first_difference<'v>(
    a: &'v Value,
    b: &'v Value,
) -> Option<(String, Option<&'v Value>, Option<&'v Value>)> {
    type Found<'v> = Option<(String, Option<&'v Value>, Option<&'v Value>)>;
    fn go<'v>(a: &'v Value, b: &'v Value, at: &mut String) -> Found<'v> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                keys.into_iter()
                    .find_map(|k| below(at, k, x.get(k), y.get(k)))
            }
            (Value::Array(x), Value::Array(y)) => (0..x.len().max(y.len()))
                .find_map(|i| below(at, &i.to_string(), x.get(i), y.get(i))),
            _ if a == b => None,
            _ => Some((at.clone(), Some(a), Some(b))),
        }
    }

    /// The first difference below token `token` of `at`, where `a` and `b` have `p` and `q`.
    fn below<'v>(
        at: &mut String,
        token: &str,
        p: Option<&'v Value>,
        q: Option<&'v Value>,
    ) -> Found<'v> {
        let len = at.len();
        lwir_spec::pointer::push_token(at, token);
        let found = match (p, q) {
            (Some(p), Some(q)) => go(p, q, at),
            (p, q) => Some((at.clone(), p, q)),
        };
        at.truncate(len);
        found
    }

    go(a, b, &mut String::new())
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// An `Option<Value>` member read so that a present `null` is `Some(Null)` (serde's
/// default reads it as `None`); an absent member is `None` by `#[serde(default)]`, and
/// `None` is not written (`skip_serializing_if`). `Some` is written as its value.
mod present {
    use super::*;

    pub(super) fn serialize<S: serde::Serializer>(
        value: &Option<Value>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        value.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
        Value::deserialize(d).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn logged(event: &RunEvent) -> Event {
        Event {
            seq: 1,
            time: "2026-12-01T00:00:00.000Z".into(),
            event: event.name().into(),
            data: event.data(),
        }
    }

    /// Every kind of event reads back as itself, a present `null` output included.
    #[test]
    fn every_event_reads_back_as_itself() {
        let failure = Failure {
            cause: Some("each[3]/classify".into()),
            error: "no".into(),
            code: Code::ValueSchemaMismatch,
            pointer: Some("/label".into()),
            keyword: Some("enum".into()),
            schema_pointer: Some("/properties/label/enum".into()),
        };
        let events = [
            RunEvent::RunStarted(RunStarted {
                run: "r".into(),
                version: "sha256:00".into(),
                record: "sha256:01".into(),
                workflow: "w".into(),
                input: json!({"a": 1}),
                input_digest: "sha256:02".into(),
                bindings: json!({"bindings": "lwir.bindings/1"}),
                bindings_digest: "sha256:03".into(),
                lwirc_version: "0.1.0".into(),
                surface: json!({}),
                max_parallel: 4,
                on_drift: "fail".into(),
            }),
            RunEvent::StepStarted(StepStarted {
                step: "a".into(),
                kind: "code.run".into(),
                attempt: 1,
                input: Some(Value::Null),
                ..StepStarted::default()
            }),
            RunEvent::StepSkipped(StepSkipped {
                step: "b".into(),
                attempt: 1,
                when: false,
            }),
            RunEvent::StepSucceeded(StepSucceeded {
                step: "a".into(),
                attempt: 1,
                output: Some(Value::Null),
                until: None,
            }),
            RunEvent::StepSucceeded(StepSucceeded {
                step: "poll#2".into(),
                attempt: 1,
                output: None,
                until: Some(false),
            }),
            RunEvent::StepFailed(StepFailed {
                step: "each".into(),
                attempt: 2,
                failure: failure.clone(),
            }),
            RunEvent::ToolCalled(ToolCalled {
                step: "t".into(),
                attempt: 1,
                round: Some(2),
                index: Some(0),
                tool: "x.y".into(),
                via: json!({"command": ["t"]}),
                args: json!({}),
                idempotency_key: "lwir:00".into(),
            }),
            RunEvent::ToolResponded(ToolResponded {
                step: "t".into(),
                attempt: 1,
                round: None,
                index: None,
                result: Some(json!("Echo: hi")),
                text: true,
                is_error: false,
                error: None,
            }),
            RunEvent::ModelCalled(ModelCalled {
                step: "m".into(),
                attempt: 1,
                round: 1,
                slot: "fast".into(),
                model: "acme/small".into(),
                request: json!({"messages": []}),
            }),
            RunEvent::ModelResponded(ModelResponded {
                step: "m".into(),
                attempt: 1,
                round: 1,
                answer: None,
                usage: Usage::default(),
                mode: None,
                error: Some(failure.clone()),
            }),
            RunEvent::CodeStarted(CodeStarted {
                step: "c".into(),
                attempt: 1,
                language: "python".into(),
                body_digest: "sha256:04".into(),
                input: json!(1),
            }),
            RunEvent::CodeFinished(CodeFinished {
                step: "c".into(),
                attempt: 1,
                ..CodeFinished::default()
            }),
            RunEvent::RunPaused(RunPaused {
                reason: "drift".into(),
                findings: vec![LoggedFinding {
                    code: Code::ModelChanged,
                    pointer: "/models/fast/model".into(),
                    message: "m".into(),
                }],
            }),
            RunEvent::RunResumed(RunResumed {
                mode: "retry".into(),
                by: "me".into(),
                at: "2026-12-01T00:00:00Z".into(),
                accept_drift: false,
                drift: Vec::new(),
                bindings: None,
                bindings_digest: None,
            }),
            RunEvent::RunSucceeded(RunSucceeded {
                output: json!({"summary": "s"}),
                usage: Usage::default(),
            }),
            RunEvent::RunFailed(RunFailed {
                step: Some("each[3]/classify".into()),
                failure,
            }),
        ];
        for event in &events {
            assert_eq!(RunEvent::parse(&logged(event)).as_ref(), Ok(event));
        }
        assert_eq!(events[3].data()["output"], Value::Null);
        assert!(events[3].data().as_object().unwrap().contains_key("output"));
        assert_eq!(events[5].data()["code"], "LW1102");
        let mut unknown = logged(&events[0]);
        unknown.event = "run.exploded".into();
        assert!(RunEvent::parse(&unknown).is_err());
    }

    #[test]
    fn the_first_difference_is_located() {
        let a = json!({"args": {"label": "bug", "n": [1, 2]}, "step": "x"});
        let b = json!({"args": {"label": "feature", "n": [1, 2]}, "step": "x"});
        let (at, x, y) = first_difference(&a, &b).unwrap();
        assert_eq!(at, "/args/label");
        assert_eq!((x, y), (Some(&json!("bug")), Some(&json!("feature"))));
        let c = json!({"args": {"label": "bug", "n": [1]}, "step": "x"});
        assert_eq!(first_difference(&a, &c).unwrap().0, "/args/n/1");
        assert!(first_difference(&a, &a).is_none());
    }
}
