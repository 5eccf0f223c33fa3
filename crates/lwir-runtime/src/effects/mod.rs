//! Effects: everything a run does outside itself — a tool call, a model call (each round of
//! a tool loop), a code body run — behind one trait, [`Effects`], which the executor calls
//! from its worker threads, and the run-level surface check drift needs
//! ([`Effects::surface`]).
//!
//! Everything else a run does is a pure function of the version, the input and the results
//! of these calls, which is why a run can be resumed and replayed from its log.
//!
//! - [`Bound`]: the effects a bindings file describes (command tools and models, tools of
//!   MCP servers, models on an OpenAI-compatible server, `code.run` in the sandbox);
//! - [`fake`]: an in-process implementation for tests and benchmarks.

mod bound;
mod code;
mod command;
pub mod fake;
mod http;
mod mcp;

use std::collections::BTreeMap;

use lwir_spec::Code;
use serde_json::Value;

pub use bound::Bound;

use crate::log::Usage;

/// Why an effect gave no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EffectError {
    /// LW1104 (a tool), LW1105 (a model), LW1106 (code), LW1108 (not available here).
    pub code: Code,
    /// What happened, naming the tool, server or command (never a secret).
    pub message: String,
    /// Where in the bindings file the cause is, when it is known (`/servers/everything`).
    pub at: Option<String>,
}

impl EffectError {
    /// An error with `code` and `message`.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            at: None,
        }
    }

    /// The same error, its cause at pointer `at` of the bindings file.
    pub fn at(self, at: impl Into<String>) -> Self {
        Self {
            at: Some(at.into()),
            ..self
        }
    }
}

/// One tool call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The tool id (the definition's).
    pub tool: String,
    /// The arguments, checked against the tool's input schema.
    pub args: Value,
    /// The same for every sending of this call (`lwir:` + 32 hex digits): a tool that sees
    /// it twice is seeing a call sent again after lwirc was interrupted.
    pub idempotency_key: String,
    /// The step path, for messages.
    pub step: String,
}

/// What a tool answered.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolAnswer {
    /// The result.
    pub value: ToolValue,
    /// Whether the tool reported a failure (the value says why).
    pub is_error: bool,
}

/// A tool's result as it came.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolValue {
    /// A JSON value (an MCP `structuredContent`; a command's standard output that is JSON).
    Json(Value),
    /// Text, decoded by the tool's output schema: JSON when the schema is not a string
    /// schema and the text parses, else the text as a string.
    Text(String),
}

/// One round of a model call.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelCall {
    /// The model slot.
    pub slot: String,
    /// The model the bindings name for it (else the slot's own).
    pub model: String,
    /// The chat request without its `model`: `messages`, `response_format`, `tools`.
    pub request: Value,
    /// The step path, for messages.
    pub step: String,
}

/// What a model answered: the assistant's message.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelAnswer {
    /// Its text.
    pub content: Option<String>,
    /// The tool calls it asks for.
    pub tool_calls: Vec<ModelToolCall>,
    /// Tokens used.
    pub usage: Usage,
    /// How the answer was asked for, when the server fell back (`json_object`, `text`).
    pub mode: Option<String>,
}

/// A tool call a model asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelToolCall {
    /// Its id (sent back with the result).
    pub id: String,
    /// The function name of the request's `tools`.
    pub name: String,
    /// Its arguments (a JSON object, or the text the model wrote when it is not JSON).
    pub arguments: Value,
}

impl ModelAnswer {
    /// The message as `model.responded` records it.
    pub fn to_json(&self) -> Value {
        let mut message = serde_json::Map::new();
        message.insert(
            "content".into(),
            self.content.clone().map_or(Value::Null, Value::String),
        );
        if !self.tool_calls.is_empty() {
            message.insert(
                "tool_calls".into(),
                Value::Array(
                    self.tool_calls
                        .iter()
                        .map(|c| {
                            serde_json::json!({ "id": c.id, "name": c.name, "arguments": c.arguments })
                        })
                        .collect(),
                ),
            );
        }
        Value::Object(message)
    }

    /// The message `model.responded` recorded (its usage and mode apart).
    pub fn from_json(message: &Value, usage: Usage, mode: Option<String>) -> Self {
        let tool_calls = message["tool_calls"]
            .as_array()
            .map(|calls| {
                calls
                    .iter()
                    .map(|c| ModelToolCall {
                        id: c["id"].as_str().unwrap_or_default().to_owned(),
                        name: c["name"].as_str().unwrap_or_default().to_owned(),
                        arguments: c["arguments"].clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            content: message["content"].as_str().map(str::to_owned),
            tool_calls,
            usage,
            mode,
        }
    }
}

/// One code body run.
#[derive(Clone, Debug, PartialEq)]
pub struct CodeRun {
    /// `python`, `javascript` or `bash`.
    pub language: String,
    /// The source text.
    pub body: String,
    /// Its input, given as JSON on standard input.
    pub input: Value,
    /// The step path, for messages.
    pub step: String,
}

/// How a code body ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeOutcome {
    /// The exit status, when it exited.
    pub exit_status: Option<i32>,
    /// The signal that ended it, by name.
    pub signal: Option<String>,
    /// Which limit stopped it (`time`, `cpu`, `memory`, `processes`, `file_size`, `output`).
    pub limit: Option<String>,
    /// Standard output, capped.
    pub stdout: String,
    /// Standard error, capped.
    pub stderr: String,
    /// Whether standard output was cut.
    pub stdout_truncated: bool,
    /// Whether standard error was cut.
    pub stderr_truncated: bool,
}

/// A tool as a server lists it now, in the schema normal form of `lwirc tools import`.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveTool {
    /// Its description (`null` when it has none).
    pub description: Value,
    /// Its input schema.
    pub input: Value,
    /// Its output schema, when the server declares one.
    pub output: Option<Value>,
}

/// The surface a run finds before its first step: what it compares with the version's
/// registration record (drift).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Surface {
    /// Per referenced tool that a server lists, its live form. Tools whose binding has no
    /// listing of its own (a command) are absent: the record's schemas are theirs.
    pub tools: BTreeMap<String, LiveTool>,
    /// Referenced tools whose server does not list them (drift: the tool was removed).
    pub removed: std::collections::BTreeSet<String>,
    /// Per referenced slot, the model the bindings name (absent: the slot's own model).
    pub models: BTreeMap<String, String>,
}

/// What a run does outside itself. Calls come from several threads at once (at most the
/// run's `max_parallel`); each blocks until its effect is done.
pub trait Effects: Send + Sync {
    /// Calls a tool.
    fn tool(&self, call: &ToolCall) -> Result<ToolAnswer, EffectError>;
    /// Asks a model, one round.
    fn model(&self, call: &ModelCall) -> Result<ModelAnswer, EffectError>;
    /// Runs a code body.
    fn code(&self, run: &CodeRun) -> Result<CodeOutcome, EffectError>;
    /// The live surface of the tools and slots given, before the first step (the
    /// execution-time drift check); an error when a server cannot be reached to list it.
    fn surface(&self, tools: &[&str], slots: &[&str]) -> Result<Surface, EffectError>;
    /// Where tool `tool` runs, as `tool.called` records it (`{"command": […]}`, `{"server",
    /// "name"}`).
    fn via(&self, tool: &str) -> Value;
}

impl<T: Effects + ?Sized> Effects for std::sync::Arc<T> {
    fn tool(&self, call: &ToolCall) -> Result<ToolAnswer, EffectError> {
        (**self).tool(call)
    }
    fn model(&self, call: &ModelCall) -> Result<ModelAnswer, EffectError> {
        (**self).model(call)
    }
    fn code(&self, run: &CodeRun) -> Result<CodeOutcome, EffectError> {
        (**self).code(run)
    }
    fn surface(&self, tools: &[&str], slots: &[&str]) -> Result<Surface, EffectError> {
        (**self).surface(tools, slots)
    }
    fn via(&self, tool: &str) -> Value {
        (**self).via(tool)
    }
}
