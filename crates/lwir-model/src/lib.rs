//! The built-in planner harness: lwirc itself runs the planner as an agent against any
//! OpenAI-compatible chat-completions server (a hosted API, vLLM, llama.cpp's server,
//! Ollama), with skills, memory, a scratch space, a `validate_draft` tool and, where the
//! sandbox runs, `bash` and `test_code` (see [`code`]).
//!
//! One planner call is a conversation: the system prompt (assembled in a fixed order, see
//! [`ModelPlanner::system_prompt`]), the same `plan` or `repair` request a planner process
//! gets (spec §8) as the user message, then model turns — each either tool calls, whose
//! results go back to the model, or the final answer, a planner answer object exactly as in
//! §8.3 (read with the same rules: LW805, LW806). Turns and tool calls are bounded; the
//! answer is asked for with `response_format` `json_schema`, falling back to `json_object`
//! and then to plain text when the server refuses (400), and each turn records which mode
//! it used. Every turn is recorded in the session's `model/events.jsonl`, the server's
//! response as received but for its secrets ([`lwir_spec::redact`]); the API key is sent as
//! a bearer token and written nowhere, not even where a server quotes it back.

pub mod code;
pub mod http;
pub mod tools;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lwir_repair::events::{EventLog, LogError};
use lwir_repair::harness::{FailureKind, Planner, PlannerFailure, Response};
use lwir_repair::protocol::{self, Request};
use lwir_validators::pipeline::Definition;
use serde_json::{Value, json};

pub use tools::Places;

/// How a turn asks for its answer, from the strictest down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `response_format: {"type": "json_schema", …}` with the planner-answer schema.
    JsonSchema,
    /// `response_format: {"type": "json_object"}`.
    JsonObject,
    /// No `response_format`: the prompt alone asks for JSON.
    Text,
}

impl Mode {
    /// Its name, as recorded.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::JsonSchema => "json_schema",
            Mode::JsonObject => "json_object",
            Mode::Text => "text",
        }
    }

    fn weaker(self) -> Option<Mode> {
        match self {
            Mode::JsonSchema => Some(Mode::JsonObject),
            Mode::JsonObject => Some(Mode::Text),
            Mode::Text => None,
        }
    }
}

/// What the harness needs.
#[derive(Clone)]
pub struct ModelConfig {
    /// The server's base URL (`…/v1`); requests go to `URL/chat/completions`.
    pub url: String,
    /// The model name sent to the server.
    pub model: String,
    /// The API key (`OPENAI_API_KEY`), sent as a bearer token only.
    pub key: Option<String>,
    /// Model turns allowed in one planner call.
    pub max_turns: u32,
    /// Tool calls allowed in one turn.
    pub max_tool_calls: u32,
    /// How long one planner call may take, every turn and retry included.
    pub timeout: Duration,
    /// Skills, memory and scratch.
    pub places: Places,
    /// Where turns are recorded (`<session>/model`): its event log, `events.jsonl`.
    pub record: PathBuf,
    /// Continue the turn log of a crashed session (`--resume`) instead of starting one.
    pub resume: bool,
    /// The sandbox of the `bash` and `test_code` tools; `None` where it cannot run: then
    /// neither is offered, nor named in the system prompt.
    pub code: Option<code::CodeRunner>,
    /// Told of each tool call as it ends (progress on a terminal).
    pub on_tool: Option<ToolObserver>,
}

/// A tool call the model made, as it ended.
#[derive(Clone, Copy, Debug)]
pub struct ToolNote<'a> {
    /// The tool's name (`bash`).
    pub name: &'a str,
    /// Its arguments as the model wrote them (hostile text: clean it before showing it).
    pub arguments: &'a str,
    /// What was sent back to the model.
    pub result: &'a str,
    /// Whether the call failed (its result says why).
    pub failed: bool,
}

/// Something told of each tool call.
pub type ToolObserver = Arc<dyn Fn(&ToolNote<'_>) + Send + Sync>;

impl std::fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is never printed, not even in a debug dump.
        f.debug_struct("ModelConfig")
            .field("url", &lwir_spec::redact::redact(&self.url))
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "<hidden>"))
            .field("max_turns", &self.max_turns)
            .field("max_tool_calls", &self.max_tool_calls)
            .field("timeout", &self.timeout)
            .field("record", &self.record)
            .field("resume", &self.resume)
            .field("sandboxed", &self.code.is_some())
            .finish_non_exhaustive()
    }
}

/// The built-in planner.
pub struct ModelPlanner {
    config: ModelConfig,
    client: http::Client,
    tools: tools::Tools,
    system: String,
    mode: Mode,
    log: Option<EventLog>,
    /// What an earlier run of this session recorded, to replay on resume.
    recorded: Recorded,
}

/// The turn log of an earlier run: per planner call, each exchange's response as received,
/// and each tool call's result.
#[derive(Debug, Default)]
struct Recorded {
    /// (call, exchange) → (status, body).
    responses: BTreeMap<(u64, u64), (u16, Vec<u8>)>,
    /// (call, exchange, tool call id) → the result sent back.
    tools: BTreeMap<(u64, u64, String), String>,
}

impl Recorded {
    fn of(events: &[lwir_repair::events::Event]) -> Self {
        let mut recorded = Recorded::default();
        for e in events {
            let call = e.data["call"].as_u64().unwrap_or(0);
            let exchange = e.data["exchange"].as_u64().unwrap_or(0);
            match e.event.as_str() {
                "harness.model.responded" => {
                    let body = match &e.data["response"] {
                        Value::String(text) if e.data["response_is_text"] == true => {
                            text.clone().into_bytes()
                        }
                        other => serde_json::to_vec(other).unwrap_or_default(),
                    };
                    let status = e.data["status"].as_u64().unwrap_or(0) as u16;
                    recorded.responses.insert((call, exchange), (status, body));
                }
                "harness.tool_call.succeeded" | "harness.tool_call.failed" => {
                    let id = e.data["id"].as_str().unwrap_or_default().to_owned();
                    let result = e.data["result"].as_str().unwrap_or_default().to_owned();
                    recorded.tools.insert((call, exchange, id), result);
                }
                _ => {}
            }
        }
        recorded
    }
}

/// lwirc's part of the system prompt: what a planner does and how it answers. `{lessons}`
/// is [`LESSONS`] or, with the sandbox, [`LESSONS_BASH`].
const ROLE: &str = "You are the planner of lwirc. You write LWIR workflow drafts (JSON) for the \
WorkflowDefinition in the request, using only its tools and model slots, and you repair drafts \
from the findings lwirc reports. The user message is a request of the lwir-planner/1 protocol: \
`plan` asks for a first draft, `repair` gives a draft and its findings (each with a code, a JSON \
Pointer into the draft, a message and often help and a fix) and asks for a draft without errors. \
{lessons} You may check a draft with validate_draft before you answer; it costs no attempt. \
Answer with exactly one JSON object and nothing else: {\"kind\": \"draft\", \"lwir\": {…the \
whole LWIR document…}} or, when you cannot produce a valid draft, {\"kind\": \"attention\", \
\"rationale\": \"why\"}.";

/// Where the role sends the planner for lessons, without the sandbox.
const LESSONS: &str = "Before drafting, read `lessons-learned.md` from the `workflow` memory \
store (read_memory), and when you have learned something worth keeping, append it there \
(append_memory).";

/// Where the role sends the planner for lessons, with `bash`.
const LESSONS_BASH: &str = "Before drafting, read `/mnt/memory/workflow/lessons-learned.md` \
with bash (`cat`), and when you have learned something worth keeping, append it there \
(`>>` in bash, or append_memory). Test every `code.run` body with test_code before you put it \
in a draft.";

impl ModelPlanner {
    /// The harness for `definition` (its JSON in `definition_json`) with `config`; its
    /// turn log, `<record>/events.jsonl`, is created (or, resuming, continued: recorded
    /// responses and tool results are reused, and the server is asked again only for the
    /// exchange that was in flight).
    pub fn new(
        config: ModelConfig,
        definition: Arc<Definition>,
        definition_json: &Value,
    ) -> Result<Self, LogError> {
        let resuming = config.resume && config.record.join(lwir_repair::events::LOG_FILE).exists();
        let (log, recorded) = if resuming {
            let (log, events) = EventLog::resume(&config.record)?;
            (log, Recorded::of(&events))
        } else {
            (EventLog::create(&config.record)?, Recorded::default())
        };
        let sandboxed = config.code.is_some();
        let system = system_prompt(definition_json, sandboxed);
        let client = http::Client::new(&config.url, config.key.clone(), config.timeout);
        let tools = tools::Tools {
            places: config.places.clone(),
            definition,
            code: config.code.clone(),
        };
        Ok(Self {
            config,
            client,
            tools,
            system,
            mode: Mode::JsonSchema,
            log: Some(log),
            recorded,
        })
    }

    /// The system prompt, in this order: the definition's `planner.system`; lwirc's role
    /// addendum; each active skill's frontmatter and how to read its body; the memory
    /// stores and the scratch, with where `bash` sees them; the tools.
    pub fn system_prompt(&self) -> &str {
        &self.system
    }

    fn fail(kind: FailureKind, message: String, started: Instant) -> PlannerFailure {
        PlannerFailure {
            kind,
            message,
            stderr_tail: String::new(),
            elapsed: started.elapsed(),
        }
    }

    /// Appends one event to the turn log; a log that cannot be written fails the call (a
    /// turn that is not recorded could not be resumed).
    pub(crate) fn log(
        &mut self,
        event: &str,
        data: Value,
        started: Instant,
    ) -> Result<(), PlannerFailure> {
        let Some(log) = self.log.as_mut() else {
            return Ok(());
        };
        log.append(event, data).map(drop).map_err(|e| {
            Self::fail(
                FailureKind::Failed,
                format!("cannot record the model turn: {e}"),
                started,
            )
        })
    }
}

impl Planner for ModelPlanner {
    fn call(&mut self, request: &Request, bytes: &[u8]) -> Result<Response, PlannerFailure> {
        let started = Instant::now();
        let deadline = started + self.config.timeout;
        let mut messages = vec![
            json!({ "role": "system", "content": self.system }),
            json!({ "role": "user", "content": String::from_utf8_lossy(bytes) }),
        ];
        let call = u64::from(request.call());
        let mut exchange = 0u64;
        let mut turn = 0;
        while turn < self.config.max_turns {
            turn += 1;
            exchange += 1;
            let mut body = json!({
                "model": self.config.model,
                "messages": messages,
                "tools": tools::Tools::specs(self.tools.code.is_some()),
            });
            match self.mode {
                Mode::JsonSchema => body["response_format"] = answer_format(),
                Mode::JsonObject => body["response_format"] = json!({ "type": "json_object" }),
                Mode::Text => {}
            }
            let answered = match self.recorded.responses.get(&(call, exchange)) {
                // Recorded by the run this one resumes: not asked again.
                Some((status, body)) => http::Answered {
                    status: *status,
                    body: body.clone(),
                    tries: 0,
                    location: None,
                },
                None => {
                    let sent = serde_json::to_vec(&body).unwrap_or_default();
                    self.log(
                        "harness.model.called",
                        json!({ "call": call, "exchange": exchange, "turn": turn, "mode": self.mode.as_str(), "request": body }),
                        started,
                    )?;
                    let answered = self
                        .client
                        .post(&sent, deadline)
                        .map_err(|e| Self::fail(e.kind, e.message, started))?;
                    let parsed: Option<Value> = serde_json::from_slice(&answered.body).ok();
                    let usage = parsed
                        .as_ref()
                        .map(|r| r["usage"].clone())
                        .unwrap_or_default();
                    let is_text = parsed.is_none();
                    let mut recorded = parsed.unwrap_or_else(|| {
                        Value::String(String::from_utf8_lossy(&answered.body).into_owned())
                    });
                    // Server text, such as an error that quotes the key, is kept as received
                    // but for its secrets.
                    lwir_spec::redact::redact_json(&mut recorded);
                    self.log(
                        "harness.model.responded",
                        json!({
                            "call": call, "exchange": exchange, "turn": turn, "mode": self.mode.as_str(),
                            "tries": answered.tries, "status": answered.status, "usage": usage,
                            "response_is_text": is_text,
                            "response": recorded,
                        }),
                        started,
                    )?;
                    answered
                }
            };
            let response: Option<Value> = serde_json::from_slice(&answered.body).ok();
            if answered.status == 400
                && let Some(weaker) = self.mode.weaker().filter(|_| self.mode != Mode::Text)
            {
                // The server refuses the structured-output request: ask again, less strictly
                // (this does not count as a turn).
                self.mode = weaker;
                turn -= 1;
                continue;
            }
            if !(200..300).contains(&answered.status) {
                // A wrong address or key: nothing was asked of the model.
                let kind = if matches!(answered.status, 300..=399 | 401 | 403 | 404) {
                    FailureKind::NotStarted
                } else {
                    FailureKind::Failed
                };
                let redirect = match &answered.location {
                    Some(to) if (300..400).contains(&answered.status) => format!(
                        " (a redirect to `{}`, which lwirc does not follow: give the address \
                         it names as --planner-url)",
                        lwir_spec::redact::excerpt(to.as_bytes(), 200)
                    ),
                    _ => String::new(),
                };
                let body = if answered.body.iter().all(u8::is_ascii_whitespace) {
                    "(an empty body)".to_owned()
                } else {
                    excerpt(&answered.body)
                };
                let hint = match answered.status {
                    404 => format!(
                        "; there is no chat endpoint at that address: lwirc posts to \
                         `--planner-url` + `/chat/completions`, and OpenAI-compatible servers \
                         serve it under their API root, usually `/v1` (--planner-url \
                         http://HOST:PORT/v1){}",
                        if self.client.shown_url().contains("/v1/") {
                            ""
                        } else {
                            " — this URL has no `/v1`"
                        }
                    ),
                    401 | 403 => "; the server refused the key: lwirc sends `$OPENAI_API_KEY` as \
                                  a bearer token (is it set, and for this server?)"
                        .to_owned(),
                    _ => String::new(),
                };
                return Err(Self::fail(
                    kind,
                    format!(
                        "the model server `{}` answered {}{redirect}: {body}{hint}",
                        self.client.shown_url(),
                        answered.status,
                    ),
                    started,
                ));
            }
            let Some(response) = response else {
                return Err(Self::fail(
                    FailureKind::Invalid,
                    format!(
                        "the model server's response is not JSON: {}",
                        excerpt(&answered.body)
                    ),
                    started,
                ));
            };
            let choice = &response["choices"][0];
            let message = &choice["message"];
            if !message.is_object() {
                return Err(Self::fail(
                    FailureKind::Invalid,
                    "the model server's response has no `choices[0].message`".into(),
                    started,
                ));
            }
            if choice["finish_reason"] == "length" {
                return Err(Self::fail(
                    FailureKind::Invalid,
                    "the model's answer was cut off (finish_reason: length): give it more output \
                     tokens, or ask for less"
                        .into(),
                    started,
                ));
            }
            let calls = message["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if !calls.is_empty() {
                if calls.len() > self.config.max_tool_calls as usize {
                    return Err(Self::fail(
                        FailureKind::Failed,
                        format!(
                            "the model asked for {} tool calls in one turn; at most {} are allowed",
                            calls.len(),
                            self.config.max_tool_calls
                        ),
                        started,
                    ));
                }
                messages.push(message.clone());
                for tool_call in &calls {
                    let id = tool_call["id"].as_str().unwrap_or_default().to_owned();
                    let name = tool_call["function"]["name"].as_str().unwrap_or_default();
                    let arguments = tool_call["function"]["arguments"].as_str().unwrap_or("{}");
                    let result = match self.recorded.tools.get(&(call, exchange, id.clone())) {
                        // A tool call that completed before the crash is not repeated (an
                        // append_memory, say).
                        Some(result) => result.clone(),
                        None => {
                            let at = json!({ "call": call, "exchange": exchange, "id": id, "name": name });
                            self.log("harness.tool_call.started", at.clone(), started)?;
                            let (event, result, failed) = match self.tools.call(name, arguments) {
                                Ok(text) => ("harness.tool_call.succeeded", text, false),
                                Err(why) => {
                                    ("harness.tool_call.failed", format!("error: {why}"), true)
                                }
                            };
                            if let Some(on_tool) = &self.config.on_tool {
                                on_tool(&ToolNote {
                                    name,
                                    arguments,
                                    result: &result,
                                    failed,
                                });
                            }
                            let mut data = at;
                            data["result"] = Value::String(result.clone());
                            self.log(event, data, started)?;
                            result
                        }
                    };
                    messages.push(json!({ "role": "tool", "tool_call_id": id, "content": result }));
                }
                continue;
            }
            let content = message["content"].as_str().unwrap_or_default().to_owned();
            let answer = protocol::parse_answer(content.as_bytes())
                .map_err(|e| Self::fail(e.kind, e.message, started))?;
            return Ok(Response {
                answer,
                stdout: content,
                elapsed: started.elapsed(),
            });
        }
        Err(Self::fail(
            FailureKind::Failed,
            format!(
                "the model made {} turns without answering (at most {} per planner call)",
                self.config.max_turns, self.config.max_turns
            ),
            started,
        ))
    }
}

/// A planner command that may pass a call back to the built-in harness: when it answers
/// `{"kind": "delegate_to_default"}`, the call is served by `model` (recorded in the turn
/// log as `harness.delegated`), or — without a model server — is a finding that says so.
pub struct Delegating {
    /// The planner command.
    pub process: lwir_repair::harness::ProcessPlanner,
    /// The built-in harness, when `--planner-url` is given too.
    pub model: Option<ModelPlanner>,
}

impl Planner for Delegating {
    fn call(&mut self, request: &Request, bytes: &[u8]) -> Result<Response, PlannerFailure> {
        let printed = self.process.run(request, bytes)?;
        if !printed.delegates() {
            return printed.answer();
        }
        let Some(model) = self.model.as_mut() else {
            return Err(PlannerFailure {
                kind: FailureKind::Invalid,
                message: "the planner answered `delegate_to_default`, but there is no built-in \
                          harness to serve the call: give --planner-url too"
                    .into(),
                stderr_tail: printed.stderr_tail,
                elapsed: printed.elapsed,
            });
        };
        let started = Instant::now();
        model.log(
            "harness.delegated",
            json!({ "call": request.call(), "kind": request.kind() }),
            started,
        )?;
        model.call(request, bytes)
    }
}

/// The token usage the server reported, summed over a session's turn log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Exchanges the server answered.
    pub turns: u64,
    /// `usage.prompt_tokens`, summed.
    pub prompt_tokens: u64,
    /// `usage.completion_tokens`, summed.
    pub completion_tokens: u64,
}

/// The usage recorded in the turn log in `record` (`<session>/model`); `None` when the
/// session has no turn log (its planner was a command).
pub fn usage(record: &std::path::Path) -> Option<Usage> {
    let events = lwir_repair::events::read(&record.join(lwir_repair::events::LOG_FILE)).ok()?;
    let mut usage = Usage::default();
    for e in events
        .iter()
        .filter(|e| e.event == "harness.model.responded")
    {
        usage.turns += 1;
        usage.prompt_tokens += e.data["usage"]["prompt_tokens"].as_u64().unwrap_or(0);
        usage.completion_tokens += e.data["usage"]["completion_tokens"].as_u64().unwrap_or(0);
    }
    Some(usage)
}

/// The harness id of the built-in planner, for the PlannerManifest.
pub fn harness_id() -> String {
    format!("lwirc-model/{}", env!("CARGO_PKG_VERSION"))
}

/// The memory stores the built-in planner mounts, for the PlannerManifest.
pub const MEMORY_STORES: [&str; 2] = ["org", "workflow"];

/// The functions the built-in harness offers the model (`tools` of its requests): `bash`
/// and `test_code` only with the sandbox.
pub fn tool_specs(sandboxed: bool) -> Value {
    tools::Tools::specs(sandboxed)
}

/// The PlannerManifest's `globalToolsHash` with the built-in harness: `sha256:` over the
/// RFC 8785 form of `{"definition": <the definition's tools, or null>, "harness": <the
/// functions offered>}`, so that a harness that offers other tools (or describes them
/// otherwise) is drift for a session, as a changed allowlist is.
pub fn tools_hash(definition_tools: Option<&Value>, sandboxed: bool) -> String {
    let part = json!({
        "definition": definition_tools.cloned().unwrap_or(Value::Null),
        "harness": tool_specs(sandboxed),
    });
    let bytes = serde_json::to_vec(&part).unwrap_or_default();
    let canonical = lwir_spec::canon::canonicalize(&bytes).unwrap_or(bytes);
    lwir_spec::canon::sha256_of(&canonical)
}

/// `response_format` for the planner answer. The schema keeps to what strict structured-output
/// modes accept — every property required, no `oneOf`, alternatives as nullable types — and
/// is sent non-strict, since the draft inside it is a free-form object; lwirc validates the
/// answer itself either way.
fn answer_format() -> Value {
    json!({ "type": "json_schema", "json_schema": { "name": "planner_answer", "strict": false, "schema": {
        "type": "object",
        "properties": {
            "kind": { "type": "string", "enum": ["draft", "attention"] },
            "lwir": { "type": ["object", "null"], "description": "the whole LWIR document (kind draft)" },
            "rationale": { "type": ["string", "null"], "description": "why (kind attention)" }
        },
        "required": ["kind", "lwir", "rationale"],
        "additionalProperties": false
    } } })
}

/// The system prompt: `planner.system`, the role, the skills, the memory stores and the
/// scratch, the tools; where `bash` sees each, with the sandbox.
fn system_prompt(definition: &Value, sandboxed: bool) -> String {
    let mut parts = Vec::new();
    if let Some(system) = definition["planner"]["system"].as_str() {
        parts.push(system.to_owned());
    }
    let lessons = if sandboxed { LESSONS_BASH } else { LESSONS };
    parts.push(ROLE.replace("{lessons}", lessons));
    let skills: Vec<String> = definition["planner"]["skills"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let name = s["name"].as_str()?;
            let bash = if sandboxed {
                format!(", or with bash: `cat .agents/skills/{name}/SKILL.md`")
            } else {
                String::new()
            };
            Some(format!(
                "- {name}: {} (read its body with read_skill {{\"name\": \"{name}\"}}{bash})",
                s["description"].as_str().unwrap_or("")
            ))
        })
        .collect();
    if !skills.is_empty() {
        parts.push(format!("Skills:\n{}", skills.join("\n")));
    }
    if sandboxed {
        parts.push(format!(
            "Memory stores:\n- workflow: this workflow's memory, read-write (read_memory, \
             append_memory; with bash at {workflow}/); `lessons-learned.md` holds what earlier \
             sessions learned\n- org: the organisation's memory, read-only (read_memory; with \
             bash at {org}/)\nScratch: this session's scratch space, kept for the whole \
             session (write_scratch, read_scratch; with bash at {scratch}/, its working \
             directory). bash runs in a sandbox without network: it sees the system \
             read-only, these directories, and the skills at .agents/skills/<name>/SKILL.md \
             (read-only).",
            workflow = tools::WORKFLOW_MEMORY_INSIDE,
            org = tools::ORG_MEMORY_INSIDE,
            scratch = tools::SCRATCH_INSIDE,
        ));
    } else {
        parts.push(
            "Memory stores:\n- workflow: this workflow's memory, read-write (read_memory, \
             append_memory); `lessons-learned.md` holds what earlier sessions learned\n- org: \
             the organisation's memory, read-only (read_memory)"
                .to_owned(),
        );
    }
    let tools: Vec<String> = tools::Tools::specs(sandboxed)
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            format!(
                "- {}: {}",
                t["function"]["name"].as_str().unwrap_or(""),
                t["function"]["description"].as_str().unwrap_or("")
            )
        })
        .collect();
    parts.push(format!("Tools:\n{}", tools.join("\n")));
    parts.join("\n\n")
}

/// The start of a server's answer, for a message, redacted of secrets.
fn excerpt(body: &[u8]) -> String {
    lwir_spec::redact::excerpt(body, lwir_spec::redact::EXCERPT_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_tools_change_the_tools_hash_and_the_prompt() {
        let tools = json!({ "t": { "description": "a tool" } });
        assert_ne!(
            tools_hash(Some(&tools), true),
            tools_hash(Some(&tools), false)
        );
        assert_eq!(tools_hash(None, true), tools_hash(None, true));
        let definition = json!({ "planner": { "system": "S",
            "skills": [ { "name": "k", "description": "d" } ] } });
        let without = system_prompt(&definition, false);
        assert!(
            !without.contains("bash") && !without.contains("/mnt/"),
            "{without}"
        );
        let with = system_prompt(&definition, true);
        let at = |text: &str| with.find(text).unwrap_or_else(|| panic!("{text}: {with}"));
        assert_eq!(at("S"), 0);
        assert!(at("/mnt/memory/workflow/lessons-learned.md") < at("Skills:"));
        assert!(at("cat .agents/skills/k/SKILL.md") < at("Memory stores:"));
        assert!(at("/mnt/memory/org/") < at("Tools:"));
        assert!(at("Tools:") < at("- bash:") && at("- bash:") < at("- test_code:"));
    }
}
