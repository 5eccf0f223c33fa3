//! Command tools and command models: a program run per call by the planner protocol's
//! process rules (`lwir_repair::process`: no shell, its own process group, a timeout, a cap
//! on standard output, exit status 0, nothing left running) with a minimal environment —
//! `PATH`, `HOME`, `LANG` and the variables its binding names, nothing else of lwirc's.
//!
//! - A tool reads `{"tool", "args", "idempotency_key"}` on standard input and prints its
//!   result: JSON, or text (decoded by the tool's output schema).
//! - A model reads the chat request (`model`, `messages`, `response_format`, `tools`) and
//!   prints the assistant's answer: its text, or an assistant message
//!   `{"role": "assistant", "content": …, "tool_calls": […], "usage": {…}}`.

use lwir_repair::process::{self, Limits, PlannerCommand, RunFailure};
use lwir_spec::Code;
use serde_json::{Value, json};

use super::{EffectError, ModelAnswer, ModelCall, ModelToolCall, ToolAnswer, ToolCall, ToolValue};
use crate::bindings::CommandSpec;
use crate::log::Usage;

/// The variables every command gets from lwirc's environment (when set).
const BASE_ENV: &[&str] = &["PATH", "HOME", "LANG"];

/// The environment of a command: the base variables and those `spec` names, as lwirc has
/// them now.
fn environment(spec: &CommandSpec) -> Vec<(&str, String)> {
    BASE_ENV
        .iter()
        .copied()
        .chain(spec.env.iter().map(String::as_str))
        .filter_map(|name| Some((name, std::env::var(name).ok()?)))
        .collect()
}

fn command(spec: &CommandSpec) -> Result<PlannerCommand, String> {
    PlannerCommand::from_words(&spec.command).ok_or_else(|| "the command is empty".to_owned())
}

/// Runs `spec` with `request` on standard input; its standard output, or why not (named
/// `what`, e.g. "tool `x`").
fn run(
    spec: &CommandSpec,
    request: &Value,
    what: &str,
    code: Code,
) -> Result<Vec<u8>, EffectError> {
    let cmd = command(spec).map_err(|why| EffectError::new(code, format!("{what}: {why}")))?;
    let bytes = serde_json::to_vec(request).unwrap_or_default();
    let limits = Limits {
        timeout: spec.timeout,
        max_output: spec.max_output,
    };
    let env = environment(spec);
    process::run_clean(&cmd, &bytes, &env, &limits)
        .map(|o| o.stdout)
        .map_err(|failure| EffectError::new(code, describe(&failure, what, &cmd)))
}

/// A process failure in the words of the thing it ran.
fn describe(failure: &RunFailure, what: &str, cmd: &PlannerCommand) -> String {
    let tail = |t: &str| {
        if t.is_empty() {
            String::new()
        } else {
            format!("; its standard error ends: {t}")
        }
    };
    match failure {
        RunFailure::NotStarted { command, source } => {
            format!("{what}: cannot start `{command}`: {source} (it is run without a shell)")
        }
        RunFailure::Exited {
            code: Some(code),
            stderr_tail,
            ..
        } => format!(
            "{what} (`{cmd}`) exited with status {code}{}",
            tail(stderr_tail)
        ),
        RunFailure::Exited {
            signal: Some(signal),
            stderr_tail,
            ..
        } => format!(
            "{what} (`{cmd}`) was killed by signal {signal}{}",
            tail(stderr_tail)
        ),
        RunFailure::Exited { stderr_tail, .. } => {
            format!("{what} (`{cmd}`) failed{}", tail(stderr_tail))
        }
        RunFailure::TimedOut { after, stderr_tail } => format!(
            "{what} (`{cmd}`) did not answer within {} s and was stopped{}",
            after.as_secs_f64(),
            tail(stderr_tail)
        ),
        RunFailure::TooLarge { limit, stderr_tail } => format!(
            "{what} (`{cmd}`) wrote more than {limit} bytes and was stopped{}",
            tail(stderr_tail)
        ),
        RunFailure::Io { source } => format!("{what} (`{cmd}`): {source}"),
    }
}

/// Standard output as text: UTF-8, one trailing line break dropped.
fn text(bytes: Vec<u8>, what: &str, code: Code) -> Result<String, EffectError> {
    let mut text = String::from_utf8(bytes)
        .map_err(|_| EffectError::new(code, format!("{what} printed bytes that are not UTF-8")))?;
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    Ok(text)
}

/// Calls a command tool.
pub(crate) fn call_tool(spec: &CommandSpec, call: &ToolCall) -> Result<ToolAnswer, EffectError> {
    let what = format!("tool `{}`", call.tool);
    let request = json!({
        "tool": call.tool,
        "args": call.args,
        "idempotency_key": call.idempotency_key,
    });
    let stdout = run(spec, &request, &what, Code::ToolCallFailed)?;
    if let Some(v) = crate::values::parse_strict(&stdout) {
        return Ok(ToolAnswer {
            value: ToolValue::Json(v),
            is_error: false,
        });
    }
    Ok(ToolAnswer {
        value: ToolValue::Text(text(stdout, &what, Code::ToolCallFailed)?),
        is_error: false,
    })
}

/// Asks a command model, one round.
pub(crate) fn call_model(spec: &CommandSpec, call: &ModelCall) -> Result<ModelAnswer, EffectError> {
    let what = format!("model slot `{}`", call.slot);
    let mut request = call.request.clone();
    if let Value::Object(m) = &mut request {
        m.insert("model".into(), Value::String(call.model.clone()));
    }
    let stdout = run(spec, &request, &what, Code::ModelCallFailed)?;
    let parsed = crate::values::parse_strict(&stdout);
    if let Some(message) =
        parsed.filter(|v| v.get("role").and_then(Value::as_str) == Some("assistant"))
    {
        return Ok(assistant_message(&message));
    }
    Ok(ModelAnswer {
        content: Some(text(stdout, &what, Code::ModelCallFailed)?),
        ..ModelAnswer::default()
    })
}

/// An assistant message in the chat-completions form (`tool_calls` with `function.name`
/// and `function.arguments` as a JSON string), or with `name` and `arguments` directly.
pub(crate) fn assistant_message(message: &Value) -> ModelAnswer {
    let tool_calls = message["tool_calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let function = c.get("function").unwrap_or(c);
                    let arguments = match &function["arguments"] {
                        Value::String(s) => crate::values::parse_strict(s.as_bytes())
                            .unwrap_or(Value::String(s.clone())),
                        Value::Null => json!({}),
                        other => other.clone(),
                    };
                    ModelToolCall {
                        id: c["id"]
                            .as_str()
                            .map_or_else(|| format!("call_{i}"), str::to_owned),
                        name: function["name"].as_str().unwrap_or_default().to_owned(),
                        arguments,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let count = |k: &str| message["usage"][k].as_u64().unwrap_or(0);
    ModelAnswer {
        content: message["content"].as_str().map(str::to_owned),
        tool_calls,
        usage: Usage {
            prompt_tokens: count("prompt_tokens"),
            completion_tokens: count("completion_tokens"),
            total_tokens: count("total_tokens"),
        },
        mode: None,
    }
}
