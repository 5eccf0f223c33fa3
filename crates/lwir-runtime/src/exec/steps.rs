//! What each kind of step does: leaves (`tool.call`, `model.call`, `code.run`) through
//! their effects, compound steps (`map`, `reduce`, `branch`, `loop`) through frames.

use std::collections::VecDeque;
use std::rc::Rc;

use lwir_spec::Code;
use lwir_spec::expr::eval::{Val, template_text};
use serde_json::{Value, json};

use super::{
    Attempt, End, Exec, FrameId, FrameKind, Kind, Over, Request, Response, Running, State,
};
use crate::effects::{
    CodeRun, ModelAnswer, ModelCall, ModelToolCall, ToolAnswer, ToolCall, ToolValue,
};
use crate::log::{
    CodeFinished, CodeStarted, Failure, Key, ModelCalled, ModelResponded, Phase, RunEvent,
    StepStarted, StepSucceeded, ToolCalled, ToolResponded,
};
use crate::program::{Body, Compiled};
use crate::values;

/// Rounds of a `model.call` with `tools`: past this many answers that ask for tools the
/// step fails (LW1105).
pub const MAX_MODEL_ROUNDS: u32 = 8;

/// Tool calls one model answer may ask for.
pub const MAX_TOOL_CALLS_PER_ROUND: usize = 16;

/// The idempotency key of a tool call: `lwir:` and the first 32 hex digits of SHA-256 of
/// the run id, the step path and the attempt (and, for a call a model asked for, the round
/// and its place in it), one per line. The same for every sending of one call.
pub fn idempotency_key(run: &str, step: &str, attempt: u32, call: Option<(u32, u32)>) -> String {
    let mut text = format!("{run}\n{step}\n{attempt}");
    if let Some((round, index)) = call {
        text.push_str(&format!("\n{round}\n{index}"));
    }
    let hex = lwir_spec::digest::sha256_hex(text.as_bytes());
    format!("lwir:{}", &hex[..32])
}

/// A `tool.call` in progress.
pub(super) struct ToolRun {
    tool: String,
}

/// A `model.call` in progress: its conversation so far.
pub(super) struct ModelRun {
    slot: String,
    model: String,
    round: u32,
    messages: Vec<Value>,
    response_format: Option<Value>,
    /// Function name → tool id, in the request's order.
    functions: Vec<(String, String)>,
    tools_json: Vec<Value>,
    output: Value,
    /// Tool calls of the last answer not yet made, with their place in it.
    pending: VecDeque<(u32, ModelToolCall)>,
    /// The tool call waiting for its result: its place, the call, the tool id.
    current: Option<(u32, ModelToolCall, String)>,
}

/// A `code.run` in progress.
pub(super) struct CodeRunState {
    output: Value,
}

/// A `map` in progress.
pub(super) struct MapRun {
    items: Rc<Vec<Val>>,
    var: String,
    next: usize,
    active: usize,
    limit: usize,
    results: Vec<Option<Val>>,
    failing: Option<Failure>,
    abandoned: usize,
}

fn text_of(v: &Val) -> String {
    match v {
        Val::String(s) => s.to_string(),
        other => template_text(other)
            .unwrap_or_else(|_| other.to_json().map(|j| j.to_string()).unwrap_or_default()),
    }
}

/// A function name a model server accepts (`^[A-Za-z0-9_-]{1,64}$`) for tool `id`, not
/// among `taken`.
fn function_name(id: &str, taken: &[(String, String)]) -> String {
    let mut base: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(56)
        .collect();
    if base.is_empty() {
        base.push_str("tool");
    }
    let mut name = base.clone();
    let mut n = 2;
    while taken.iter().any(|(f, _)| *f == name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    name
}

impl<'p> Exec<'p, '_> {
    fn running(&mut self, fid: FrameId, i: usize) -> Option<&mut Running> {
        match &mut self.frames[fid].as_mut()?.state[i] {
            State::Running(r) => Some(r),
            _ => None,
        }
    }

    /// The model call step `i` of frame `fid` is making, if it is running one.
    fn model_run(&mut self, fid: FrameId, i: usize) -> Option<&mut ModelRun> {
        match self.running(fid, i)? {
            Running {
                kind: Kind::Model(run),
                ..
            } => Some(run),
            _ => None,
        }
    }

    /// The map step `i` of frame `fid` is, if it is running.
    fn map_run(&mut self, fid: FrameId, i: usize) -> Option<&mut MapRun> {
        match self.running(fid, i)? {
            Running {
                kind: Kind::Map(m), ..
            } => Some(m),
            _ => None,
        }
    }

    fn attempt_of(&self, fid: FrameId, i: usize) -> Attempt {
        match &self.frame(fid).state[i] {
            State::Running(r) => r.attempt,
            State::Queued(a) => *a,
            _ => Attempt {
                attempt: 0,
                requirement: 0,
                when: None,
            },
        }
    }

    fn started(&self, fid: FrameId, i: usize, a: Attempt) -> StepStarted {
        StepStarted {
            step: self.path(fid, i),
            kind: self.frame(fid).steps[i].kind.as_str().to_owned(),
            attempt: a.attempt,
            when: a.when,
            ..StepStarted::default()
        }
    }

    /// Emits `step.succeeded` and finishes the step with `output`.
    fn succeed(&mut self, fid: FrameId, i: usize, output: Option<Value>) {
        let a = self.attempt_of(fid, i);
        let val = output.as_ref().map(Val::from_json);
        let ticket = self.emit(RunEvent::StepSucceeded(StepSucceeded {
            step: self.path(fid, i),
            attempt: a.attempt,
            output,
            until: None,
        }));
        if matches!(self.end, Some(End::Differs(_))) {
            return;
        }
        self.finish_step(fid, i, val, ticket);
    }

    /// Sends an effect: emits its call event, then takes its result from the log when it is
    /// there, else performs it (none in replay: the step then waits for ever, and the walk
    /// ends stalled).
    fn effect(&mut self, fid: FrameId, i: usize, call: RunEvent, result: Key, request: Request) {
        self.emit(call);
        if matches!(self.end, Some(End::Differs(_))) {
            return;
        }
        if let Some((seq, recorded)) = self.oracle.recorded_effect(&result) {
            self.immediate
                .insert(seq, ((fid, i), from_recorded(&recorded)));
            return;
        }
        match (&self.job_tx, self.oracle.performs()) {
            (Some(tx), true) => {
                self.next_job += 1;
                let id = self.next_job;
                self.jobs.insert(id, (fid, i));
                if tx.send((id, request)).is_err() {
                    self.jobs.remove(&id);
                    self.end = Some(End::LogFailed("the effect workers stopped".into()));
                }
            }
            _ => {
                if let Some(r) = self.running(fid, i) {
                    r.kind = Kind::Idle;
                }
            }
        }
    }

    // ----- leaves -----

    /// Starts the queued attempt `a` of leaf `i`, holding a slot.
    pub(super) fn start_leaf(&mut self, fid: FrameId, i: usize, a: Attempt) {
        self.frame_mut(fid).state[i] = State::Running(Box::new(Running {
            attempt: a,
            kind: Kind::Idle,
            slot: true,
        }));
        let step = &self.frame(fid).steps[i];
        match &step.body {
            Body::Tool { tool, args } => self.start_tool(fid, i, a, tool, args),
            Body::Model {
                slot,
                prompt,
                system,
                tools,
                output,
            } => self.start_model(fid, i, a, slot, prompt, system.as_ref(), tools, output),
            Body::Code {
                language,
                body,
                input,
                output,
            } => self.start_code(fid, i, a, language, body, input.as_ref(), output),
            _ => {}
        }
    }

    fn start_tool(&mut self, fid: FrameId, i: usize, a: Attempt, tool: &str, args: &Compiled) {
        let args = match self.evaluate(fid, args).and_then(|v| values::to_json(&v)) {
            Ok(v) => v,
            Err(f) => return self.attempt_failed(fid, i, f),
        };
        let mut started = self.started(fid, i, a);
        started.args = Some(args.clone());
        self.emit(RunEvent::StepStarted(started));
        if matches!(self.end, Some(End::Differs(_))) {
            return;
        }
        let input = self.tool_schema(tool, |t| &t.input);
        if let Err(m) = self
            .schemas
            .check(&format!("tool:{tool}:input"), &input, &args)
        {
            return self.attempt_failed(
                fid,
                i,
                m.failure(&format!("the arguments of tool `{tool}`")),
            );
        }
        let path = self.path(fid, i);
        let key = idempotency_key(self.cx.run, &path, a.attempt, None);
        if let Some(r) = self.running(fid, i) {
            r.kind = Kind::Tool(ToolRun {
                tool: tool.to_owned(),
            });
        }
        let call = RunEvent::ToolCalled(ToolCalled {
            step: path.clone(),
            attempt: a.attempt,
            round: None,
            index: None,
            tool: tool.to_owned(),
            via: self.effects.map_or(Value::Null, |e| e.via(tool)),
            args: args.clone(),
            idempotency_key: key.clone(),
        });
        let result = Key {
            step: path.clone(),
            attempt: a.attempt,
            phase: Phase::ToolResult(0, 0),
        };
        let request = Request::Tool(ToolCall {
            tool: tool.to_owned(),
            args,
            idempotency_key: key,
            step: path,
        });
        self.effect(fid, i, call, result, request);
    }

    fn tool_schema(
        &self,
        tool: &str,
        part: impl Fn(&lwir_registry::dependencies::ToolSchemas) -> &Value,
    ) -> Value {
        self.cx
            .tools
            .get(tool)
            .map_or(Value::Null, |t| part(t).clone())
    }

    /// A tool's answer as its output value: decoded by its schema and checked against it.
    fn tool_output(&mut self, tool: &str, answer: &ToolAnswer) -> Result<Value, Failure> {
        let output = self.tool_schema(tool, |t| &t.output);
        let value = match &answer.value {
            ToolValue::Json(v) => v.clone(),
            ToolValue::Text(t) => values::decode_text(t, &output),
        };
        if answer.is_error {
            let text = match &value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            return Err(Failure::new(
                Code::ToolCallFailed,
                format!("tool `{tool}` answered with an error: {}", cut(&text, 2000)),
            ));
        }
        self.schemas
            .check(&format!("tool:{tool}:output"), &output, &value)
            .map_err(|m| m.failure(&format!("the result of tool `{tool}`")))?;
        Ok(value)
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "the fields of one model.call step"
    )]
    fn start_model(
        &mut self,
        fid: FrameId,
        i: usize,
        a: Attempt,
        slot: &str,
        prompt: &Compiled,
        system: Option<&Compiled>,
        tools: &[String],
        output: &Value,
    ) {
        let prompt = match self.evaluate(fid, prompt) {
            Ok(v) => text_of(&v),
            Err(f) => return self.attempt_failed(fid, i, f),
        };
        let system = match system.map(|s| self.evaluate(fid, s)).transpose() {
            Ok(v) => v.map(|v| text_of(&v)),
            Err(f) => return self.attempt_failed(fid, i, f),
        };
        let mut started = self.started(fid, i, a);
        started.prompt = Some(prompt.clone());
        started.system = system.clone();
        self.emit(RunEvent::StepStarted(started));
        if matches!(self.end, Some(End::Differs(_))) {
            return;
        }
        let mut functions: Vec<(String, String)> = Vec::new();
        let mut tools_json = Vec::new();
        for tool in tools {
            let name = function_name(tool, &functions);
            let description = self.tool_schema(tool, |t| &t.description);
            let parameters = self.tool_schema(tool, |t| &t.input);
            tools_json.push(json!({
                "type": "function",
                "function": {
                    "name": name,
                    "description": description.as_str().unwrap_or_default(),
                    "parameters": if parameters.is_null() { json!({"type": "object"}) } else { parameters },
                }
            }));
            functions.push((name, tool.clone()));
        }
        let mut messages = Vec::new();
        if let Some(system) = system {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": prompt}));
        let response_format = (!values::is_string_schema(output) && !output.is_null()).then(
            || json!({"type": "json_schema", "json_schema": {"name": "output", "schema": output}}),
        );
        let model = self
            .cx
            .models
            .get(slot)
            .cloned()
            .unwrap_or_else(|| slot.to_owned());
        if let Some(r) = self.running(fid, i) {
            r.kind = Kind::Model(Box::new(ModelRun {
                slot: slot.to_owned(),
                model,
                round: 0,
                messages,
                response_format,
                functions,
                tools_json,
                output: output.clone(),
                pending: VecDeque::new(),
                current: None,
            }));
        }
        self.next_round(fid, i);
    }

    /// Asks the model again, with everything said so far.
    fn next_round(&mut self, fid: FrameId, i: usize) {
        let path = self.path(fid, i);
        let a = self.attempt_of(fid, i);
        let Some(run) = self.model_run(fid, i) else {
            return;
        };
        run.round += 1;
        let mut request = serde_json::Map::new();
        request.insert("messages".into(), Value::Array(run.messages.clone()));
        if let Some(f) = &run.response_format {
            request.insert("response_format".into(), f.clone());
        }
        if !run.tools_json.is_empty() {
            request.insert("tools".into(), Value::Array(run.tools_json.clone()));
        }
        let request = Value::Object(request);
        let (round, slot, model) = (run.round, run.slot.clone(), run.model.clone());
        let call = RunEvent::ModelCalled(ModelCalled {
            step: path.clone(),
            attempt: a.attempt,
            round,
            slot: slot.clone(),
            model: model.clone(),
            request: request.clone(),
        });
        let result = Key {
            step: path.clone(),
            attempt: a.attempt,
            phase: Phase::ModelResult(round),
        };
        let request = Request::Model(ModelCall {
            slot,
            model,
            request,
            step: path,
        });
        self.effect(fid, i, call, result, request);
    }

    fn model_answered(
        &mut self,
        fid: FrameId,
        i: usize,
        answer: Result<ModelAnswer, crate::effects::EffectError>,
    ) {
        let path = self.path(fid, i);
        let a = self.attempt_of(fid, i);
        let Some(run) = self.model_run(fid, i) else {
            return;
        };
        let round = run.round;
        let event = match &answer {
            Ok(ans) => ModelResponded {
                step: path.clone(),
                attempt: a.attempt,
                round,
                answer: Some(ans.to_json()),
                usage: ans.usage,
                mode: ans.mode.clone(),
                error: None,
            },
            Err(e) => ModelResponded {
                step: path.clone(),
                attempt: a.attempt,
                round,
                answer: None,
                usage: crate::log::Usage::default(),
                mode: None,
                error: Some(Failure::new(e.code, e.message.clone())),
            },
        };
        self.usage = self.usage.plus(event.usage);
        self.emit(RunEvent::ModelResponded(event));
        if matches!(self.end, Some(End::Differs(_))) {
            return;
        }
        let answer = match answer {
            Ok(a) => a,
            Err(e) => return self.attempt_failed(fid, i, Failure::new(e.code, e.message)),
        };
        let Some(run) = self.model_run(fid, i) else {
            return;
        };
        if answer.tool_calls.is_empty() {
            let content = answer.content.unwrap_or_default();
            let output = run.output.clone();
            let slot = run.slot.clone();
            let value = values::decode_text(&content, &output);
            let key = format!("step:{}:output", self.frame(fid).steps[i].pointer);
            if let Err(m) = self.schemas.check(&key, &output, &value) {
                return self.attempt_failed(
                    fid,
                    i,
                    m.failure(&format!("the answer of model slot `{slot}`")),
                );
            }
            return self.succeed(fid, i, Some(value));
        }
        let why = if run.functions.is_empty() {
            Some("the model asked for tool calls, but the step offers it no tools".to_owned())
        } else if round >= MAX_MODEL_ROUNDS {
            Some(format!(
                "the model still asked for tool calls after {MAX_MODEL_ROUNDS} rounds; its tool \
                 loop is bounded"
            ))
        } else if answer.tool_calls.len() > MAX_TOOL_CALLS_PER_ROUND {
            Some(format!(
                "the model asked for {} tool calls in one answer, more than {MAX_TOOL_CALLS_PER_ROUND}",
                answer.tool_calls.len()
            ))
        } else {
            None
        };
        if let Some(why) = why {
            return self.attempt_failed(fid, i, Failure::new(Code::ModelCallFailed, why));
        }
        run.messages.push(json!({
            "role": "assistant",
            "content": answer.content,
            "tool_calls": answer.tool_calls.iter().map(|c| json!({
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": match &c.arguments {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    },
                },
            })).collect::<Vec<_>>(),
        }));
        run.pending = answer
            .tool_calls
            .into_iter()
            .enumerate()
            .map(|(k, c)| (u32::try_from(k).unwrap_or(u32::MAX), c))
            .collect();
        self.next_tool_call(fid, i);
    }

    /// Makes the next tool call the model asked for; the next round when none is left.
    fn next_tool_call(&mut self, fid: FrameId, i: usize) {
        let path = self.path(fid, i);
        let a = self.attempt_of(fid, i);
        loop {
            let Some(run) = self.model_run(fid, i) else {
                return;
            };
            let Some((index, call)) = run.pending.pop_front() else {
                return self.next_round(fid, i);
            };
            let round = run.round;
            let Some(tool) = run
                .functions
                .iter()
                .find(|(f, _)| *f == call.name)
                .map(|(_, t)| t.clone())
            else {
                let content = json!({"error": format!("there is no tool `{}`", call.name)});
                run.messages.push(tool_message(&call.id, &content));
                continue;
            };
            let args = call.arguments.clone();
            let input = self.tool_schema(&tool, |t| &t.input);
            if let Err(m) = self
                .schemas
                .check(&format!("tool:{tool}:input"), &input, &args)
            {
                let failure = m.failure(&format!("the arguments of tool `{tool}`"));
                let content = json!({"error": failure.error});
                if let Some(run) = self.model_run(fid, i) {
                    run.messages.push(tool_message(&call.id, &content));
                }
                continue;
            }
            let key = idempotency_key(self.cx.run, &path, a.attempt, Some((round, index)));
            let via = self.effects.map_or(Value::Null, |e| e.via(&tool));
            if let Some(run) = self.model_run(fid, i) {
                run.current = Some((index, call, tool.clone()));
            }
            let event = RunEvent::ToolCalled(ToolCalled {
                step: path.clone(),
                attempt: a.attempt,
                round: Some(round),
                index: Some(index),
                tool: tool.clone(),
                via,
                args: args.clone(),
                idempotency_key: key.clone(),
            });
            let result = Key {
                step: path.clone(),
                attempt: a.attempt,
                phase: Phase::ToolResult(round, index),
            };
            let request = Request::Tool(ToolCall {
                tool,
                args,
                idempotency_key: key,
                step: path.clone(),
            });
            return self.effect(fid, i, event, result, request);
        }
    }

    /// The result of a tool call a model asked for goes back to it.
    fn model_tool_answered(
        &mut self,
        fid: FrameId,
        i: usize,
        answer: Result<ToolAnswer, crate::effects::EffectError>,
    ) {
        let path = self.path(fid, i);
        let a = self.attempt_of(fid, i);
        let Some(run) = self.model_run(fid, i) else {
            return;
        };
        let Some((index, call, tool)) = run.current.take() else {
            return;
        };
        let round = run.round;
        self.emit(RunEvent::ToolResponded(responded(
            path,
            a.attempt,
            Some((round, index)),
            &answer,
        )));
        if matches!(self.end, Some(End::Differs(_))) {
            return;
        }
        let content = match answer {
            Err(e) => json!({"error": e.message}),
            Ok(ans) => match self.tool_output(&tool, &ans) {
                Ok(v) => v,
                Err(f) => json!({"error": f.error}),
            },
        };
        if let Some(run) = self.model_run(fid, i) {
            run.messages.push(tool_message(&call.id, &content));
        }
        self.next_tool_call(fid, i);
    }

    #[allow(clippy::too_many_arguments, reason = "the fields of one code.run step")]
    fn start_code(
        &mut self,
        fid: FrameId,
        i: usize,
        a: Attempt,
        language: &str,
        body: &str,
        input: Option<&Compiled>,
        output: &Value,
    ) {
        let input = match input {
            None => Value::Null,
            Some(c) => match self.evaluate(fid, c).and_then(|v| values::to_json(&v)) {
                Ok(v) => v,
                Err(f) => return self.attempt_failed(fid, i, f),
            },
        };
        let mut started = self.started(fid, i, a);
        started.input = Some(input.clone());
        self.emit(RunEvent::StepStarted(started));
        if matches!(self.end, Some(End::Differs(_))) {
            return;
        }
        if let Some(r) = self.running(fid, i) {
            r.kind = Kind::Code(CodeRunState {
                output: output.clone(),
            });
        }
        let path = self.path(fid, i);
        let call = RunEvent::CodeStarted(CodeStarted {
            step: path.clone(),
            attempt: a.attempt,
            language: language.to_owned(),
            body_digest: lwir_spec::canon::sha256_of(body.as_bytes()),
            input: input.clone(),
        });
        let result = Key {
            step: path.clone(),
            attempt: a.attempt,
            phase: Phase::CodeResult,
        };
        let request = Request::Code(CodeRun {
            language: language.to_owned(),
            body: body.to_owned(),
            input,
            step: path,
        });
        self.effect(fid, i, call, result, request);
    }

    /// An effect's result arrived for leaf `i`.
    pub(super) fn on_response(&mut self, (fid, i): (FrameId, usize), response: Response) {
        if self.frames.get(fid).is_none_or(Option::is_none) {
            return;
        }
        let path = self.path(fid, i);
        let a = self.attempt_of(fid, i);
        let Some(running) = self.running(fid, i) else {
            return;
        };
        match (&running.kind, response) {
            (Kind::Tool(run), Response::Tool(answer)) => {
                let tool = run.tool.clone();
                self.emit(RunEvent::ToolResponded(responded(
                    path, a.attempt, None, &answer,
                )));
                if matches!(self.end, Some(End::Differs(_))) {
                    return;
                }
                let outcome = match answer {
                    Err(e) => Err(Failure::new(e.code, e.message)),
                    Ok(ans) => self.tool_output(&tool, &ans),
                };
                match outcome {
                    Ok(value) => self.succeed(fid, i, Some(value)),
                    Err(f) => self.attempt_failed(fid, i, f),
                }
            }
            (Kind::Model(_), Response::Model(answer)) => self.model_answered(fid, i, answer),
            (Kind::Model(_), Response::Tool(answer)) => self.model_tool_answered(fid, i, answer),
            (Kind::Code(run), Response::Code(outcome)) => {
                let output = run.output.clone();
                let event = match &outcome {
                    Ok(o) => CodeFinished {
                        step: path,
                        attempt: a.attempt,
                        exit_status: o.exit_status,
                        signal: o.signal.clone(),
                        limit: o.limit.clone(),
                        stdout: o.stdout.clone(),
                        stderr: o.stderr.clone(),
                        stdout_truncated: o.stdout_truncated,
                        stderr_truncated: o.stderr_truncated,
                        error: None,
                    },
                    Err(e) => CodeFinished {
                        step: path,
                        attempt: a.attempt,
                        error: Some(Failure::new(e.code, e.message.clone())),
                        ..CodeFinished::default()
                    },
                };
                self.emit(RunEvent::CodeFinished(event));
                if matches!(self.end, Some(End::Differs(_))) {
                    return;
                }
                let outcome = match outcome {
                    Err(e) => Err(Failure::new(e.code, e.message)),
                    // Read as the code runner reads every body's end (`test_code` too).
                    Ok(o) => match lwir_model::code::result(&lwir_model::code::Ended {
                        exit_status: o.exit_status,
                        signal: o.signal.as_deref(),
                        limit: o.limit.as_deref(),
                        stdout: &o.stdout,
                        stderr: &o.stderr,
                    }) {
                        Err(f) => Err(Failure::new(f.code, f.message)),
                        Ok(v) => {
                            let key = format!("step:{}:output", self.frame(fid).steps[i].pointer);
                            self.schemas
                                .check(&key, &output, &v)
                                .map(|()| v)
                                .map_err(|m| m.failure("the body's result"))
                        }
                    },
                };
                match outcome {
                    Ok(v) => self.succeed(fid, i, Some(v)),
                    Err(f) => self.attempt_failed(fid, i, f),
                }
            }
            _ => {}
        }
    }

    // ----- compound steps -----

    /// Starts attempt `a` of compound step `i`.
    pub(super) fn start_compound(&mut self, fid: FrameId, i: usize, a: Attempt) {
        self.frame_mut(fid).state[i] = State::Running(Box::new(Running {
            attempt: a,
            kind: Kind::Body,
            slot: false,
        }));
        let step = &self.frame(fid).steps[i];
        match &step.body {
            Body::Map {
                over,
                var,
                steps: _,
                result: _,
                max_parallel,
            } => {
                let Some(items) = self.start_over(fid, i, a, over) else {
                    return;
                };
                let limit = max_parallel
                    .map_or(self.cx.max_parallel, |m| m as usize)
                    .max(1);
                let n = items.len();
                if let Some(r) = self.running(fid, i) {
                    r.kind = Kind::Map(MapRun {
                        items,
                        var: var.clone(),
                        next: 0,
                        active: 0,
                        limit,
                        results: vec![None; n],
                        failing: None,
                        abandoned: 0,
                    });
                }
                self.map_pump(fid, i);
            }
            Body::Reduce {
                over,
                init,
                acc,
                var,
                with,
            } => {
                let Some(items) = self.start_over(fid, i, a, over) else {
                    return;
                };
                let mut value = match self.evaluate(fid, init) {
                    Ok(v) => v,
                    Err(f) => return self.attempt_failed(fid, i, f),
                };
                for item in items.iter() {
                    value = match self.evaluate_with(fid, with, &[(acc, &value), (var, item)]) {
                        Ok(v) => v,
                        Err(f) => return self.attempt_failed(fid, i, f),
                    };
                }
                match values::to_json(&value) {
                    Ok(json) => self.succeed(fid, i, Some(json)),
                    Err(f) => self.attempt_failed(fid, i, f),
                }
            }
            Body::Branch { cases, default } => {
                let mut chosen: Option<(Value, &'p [crate::program::Step])> = None;
                for (k, (when, steps)) in cases.iter().enumerate() {
                    match self.evaluate(fid, when) {
                        Ok(Val::Bool(true)) => {
                            chosen = Some((json!(k), steps));
                            break;
                        }
                        Ok(Val::Bool(false)) => {}
                        Ok(other) => {
                            return self.attempt_failed(
                                fid,
                                i,
                                Failure::new(
                                    Code::ExpressionFailed,
                                    format!(
                                        "the `when` of case {k} gave {}, not a bool",
                                        other.type_name()
                                    ),
                                ),
                            );
                        }
                        Err(f) => return self.attempt_failed(fid, i, f),
                    }
                }
                let (case, steps): (Value, &'p [crate::program::Step]) = match chosen {
                    Some(c) => c,
                    None if !default.is_empty() => (json!("default"), default),
                    None => (Value::Null, &[]),
                };
                let mut started = self.started(fid, i, a);
                started.case = Some(case);
                self.emit(RunEvent::StepStarted(started));
                if matches!(self.end, Some(End::Differs(_))) {
                    return;
                }
                if steps.is_empty() {
                    return self.succeed(fid, i, None);
                }
                let prefix = self.frame(fid).prefix.clone();
                self.new_frame(
                    Some((fid, i)),
                    FrameKind::Case,
                    steps,
                    prefix,
                    Vec::new(),
                    a.requirement,
                );
            }
            Body::Loop { steps, .. } => {
                let started = self.started(fid, i, a);
                self.emit(RunEvent::StepStarted(started));
                if matches!(self.end, Some(End::Differs(_))) {
                    return;
                }
                let prefix = format!("{}#1/", self.path(fid, i));
                self.new_frame(
                    Some((fid, i)),
                    FrameKind::Iteration(1),
                    steps,
                    prefix,
                    Vec::new(),
                    a.requirement,
                );
            }
            _ => {}
        }
    }

    /// `value` evaluated in frame `fid` as a list.
    /// Starts map or reduce `i` on its list `over`: evaluates it and logs `step.started`
    /// with it. `None` when the step is over already (the list failed it) or the run is
    /// (replay found a difference).
    fn start_over(
        &mut self,
        fid: FrameId,
        i: usize,
        a: Attempt,
        over: &Compiled,
    ) -> Option<Rc<Vec<Val>>> {
        let items = match self.list(fid, over, "`over`") {
            Ok(items) => items,
            Err(f) => {
                self.attempt_failed(fid, i, f);
                return None;
            }
        };
        let mut started = self.started(fid, i, a);
        started.over = Val::List(Rc::clone(&items)).to_json().ok();
        self.emit(RunEvent::StepStarted(started));
        if matches!(self.end, Some(End::Differs(_))) {
            return None;
        }
        Some(items)
    }

    fn list(&self, fid: FrameId, value: &Compiled, what: &str) -> Result<Rc<Vec<Val>>, Failure> {
        match self.evaluate(fid, value)? {
            Val::List(items) => Ok(items),
            other => Err(Failure::new(
                Code::ExpressionFailed,
                format!("{what} gave {}, not a list", other.type_name()),
            )),
        }
    }

    /// Starts items of map `i` while its `max_parallel` allows; ends it when all are over.
    fn map_pump(&mut self, fid: FrameId, i: usize) {
        let path = self.path(fid, i);
        let requirement = self.attempt_of(fid, i).requirement;
        let body: &'p [crate::program::Step] = match &self.frame(fid).steps[i].body {
            Body::Map { steps, .. } => steps,
            _ => return,
        };
        loop {
            let stopping = self.stopping || self.end.is_some() || self.frame(fid).doomed;
            let Some(m) = self.map_run(fid, i) else {
                return;
            };
            if stopping || m.failing.is_some() || m.active >= m.limit || m.next >= m.items.len() {
                break;
            }
            let k = m.next;
            m.next += 1;
            m.active += 1;
            let vars = vec![(m.var.clone(), m.items[k].clone())];
            self.new_frame(
                Some((fid, i)),
                FrameKind::Item(k),
                body,
                format!("{path}[{k}]/"),
                vars,
                requirement,
            );
        }
        let Some(m) = self.map_run(fid, i) else {
            return;
        };
        if m.active > 0 {
            return;
        }
        if let Some(f) = m.failing.take() {
            return self.attempt_failed(fid, i, f);
        }
        if m.abandoned > 0 || m.next < m.items.len() {
            return self.abandon(fid, i);
        }
        let results: Result<Vec<Value>, Failure> = m
            .results
            .iter()
            .map(|r| values::to_json(r.as_ref().unwrap_or(&Val::Null)))
            .collect();
        match results {
            Ok(list) => self.succeed(fid, i, Some(Value::Array(list))),
            Err(f) => self.attempt_failed(fid, i, f),
        }
    }

    /// Item `k` of map `i` (frame `item`) is over.
    pub(super) fn item_over(
        &mut self,
        fid: FrameId,
        i: usize,
        item: FrameId,
        k: usize,
        over: Over,
    ) {
        let result = match over {
            Over::Done => {
                let result = match &self.frame(fid).steps[i].body {
                    Body::Map { result, .. } => result,
                    _ => return,
                };
                Some(self.evaluate(item, result))
            }
            Over::Failed(f) => Some(Err(f)),
            Over::Abandoned => None,
        };
        self.free_frame(item);
        if let Some(m) = self.map_run(fid, i) {
            m.active -= 1;
            match result {
                Some(Ok(v)) => m.results[k] = Some(v),
                Some(Err(f)) => {
                    m.failing.get_or_insert(f);
                }
                None => m.abandoned += 1,
            }
        }
        self.map_pump(fid, i);
    }

    /// Iteration `n` of loop `i` (frame `iteration`) is over: `until` decides.
    pub(super) fn iteration_over(
        &mut self,
        fid: FrameId,
        i: usize,
        iteration: FrameId,
        n: u32,
        over: Over,
    ) {
        let (steps, until, max) = match &self.frame(fid).steps[i].body {
            Body::Loop {
                steps,
                until,
                max_iterations,
            } => (steps, until, *max_iterations),
            _ => return,
        };
        let decided = match over {
            Over::Done => self.evaluate(iteration, until),
            Over::Failed(f) => {
                self.free_frame(iteration);
                return self.attempt_failed(fid, i, f);
            }
            Over::Abandoned => {
                self.free_frame(iteration);
                return self.abandon(fid, i);
            }
        };
        self.free_frame(iteration);
        let done = match decided {
            Ok(Val::Bool(b)) => b,
            Ok(other) => {
                return self.attempt_failed(
                    fid,
                    i,
                    Failure::new(
                        Code::ExpressionFailed,
                        format!("`until` gave {}, not a bool", other.type_name()),
                    ),
                );
            }
            Err(f) => return self.attempt_failed(fid, i, f),
        };
        let path = self.path(fid, i);
        let a = self.attempt_of(fid, i);
        let ticket = self.emit(RunEvent::StepSucceeded(StepSucceeded {
            step: format!("{path}#{n}"),
            attempt: a.attempt,
            output: None,
            until: Some(done),
        }));
        if matches!(self.end, Some(End::Differs(_))) {
            return;
        }
        if done {
            return self.succeed(fid, i, None);
        }
        if n >= max {
            return self.attempt_failed(
                fid,
                i,
                Failure::new(
                    Code::LoopExhausted,
                    format!("`until` did not hold after {max} iterations (`max_iterations`)"),
                ),
            );
        }
        if self.stopping || self.end.is_some() || self.frame(fid).doomed {
            return self.abandon(fid, i);
        }
        self.new_frame(
            Some((fid, i)),
            FrameKind::Iteration(n + 1),
            steps,
            format!("{path}#{}/", n + 1),
            Vec::new(),
            ticket.max(a.requirement),
        );
    }

    /// The case branch `i` took (frame `case`) is over: its outputs are visible after it.
    pub(super) fn case_over(&mut self, fid: FrameId, i: usize, case: FrameId, over: Over) {
        match over {
            Over::Done => {
                let outputs = std::mem::take(&mut self.frame_mut(case).outputs);
                self.free_frame(case);
                self.frame_mut(fid).outputs.extend(outputs);
                self.succeed(fid, i, None);
            }
            Over::Failed(f) => {
                self.free_frame(case);
                self.attempt_failed(fid, i, f);
            }
            Over::Abandoned => {
                self.free_frame(case);
                self.abandon(fid, i);
            }
        }
    }

    /// A compound step that cannot go on (what it needs was never run): it does not run.
    fn abandon(&mut self, fid: FrameId, i: usize) {
        let f = self.frame_mut(fid);
        f.state[i] = State::Queued(Attempt {
            attempt: 0,
            requirement: 0,
            when: None,
        });
        f.running -= 1;
        self.not_run(fid, i);
    }
}

/// A tool message answering call `id` with `content`.
fn tool_message(id: &str, content: &Value) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": content.to_string()})
}

/// The `tool.responded` event of `answer`.
fn responded(
    step: String,
    attempt: u32,
    call: Option<(u32, u32)>,
    answer: &Result<ToolAnswer, crate::effects::EffectError>,
) -> ToolResponded {
    let (round, index) = (call.map(|c| c.0), call.map(|c| c.1));
    match answer {
        Ok(ans) => {
            let (result, text) = match &ans.value {
                ToolValue::Json(v) => (v.clone(), false),
                ToolValue::Text(t) => (Value::String(t.clone()), true),
            };
            ToolResponded {
                step,
                attempt,
                round,
                index,
                result: Some(result),
                text,
                is_error: ans.is_error,
                error: None,
            }
        }
        Err(e) => ToolResponded {
            step,
            attempt,
            round,
            index,
            result: None,
            text: false,
            is_error: false,
            error: Some(Failure::new(e.code, e.message.clone())),
        },
    }
}

/// The effect result a recorded response event holds.
fn from_recorded(event: &RunEvent) -> Response {
    use crate::effects::{CodeOutcome, EffectError};
    let error = |f: &Failure| EffectError::new(f.code, f.error.clone());
    match event {
        RunEvent::ToolResponded(e) => Response::Tool(match &e.error {
            Some(f) => Err(error(f)),
            None => {
                let result = e.result.clone().unwrap_or(Value::Null);
                Ok(ToolAnswer {
                    value: match (e.text, result) {
                        (true, Value::String(s)) => ToolValue::Text(s),
                        (_, v) => ToolValue::Json(v),
                    },
                    is_error: e.is_error,
                })
            }
        }),
        RunEvent::ModelResponded(e) => Response::Model(match &e.error {
            Some(f) => Err(error(f)),
            None => Ok(ModelAnswer::from_json(
                e.answer.as_ref().unwrap_or(&Value::Null),
                e.usage,
                e.mode.clone(),
            )),
        }),
        RunEvent::CodeFinished(e) => Response::Code(match &e.error {
            Some(f) => Err(error(f)),
            None => Ok(CodeOutcome {
                exit_status: e.exit_status,
                signal: e.signal.clone(),
                limit: e.limit.clone(),
                stdout: e.stdout.clone(),
                stderr: e.stderr.clone(),
                stdout_truncated: e.stdout_truncated,
                stderr_truncated: e.stderr_truncated,
            }),
        }),
        _ => Response::Tool(Err(EffectError::new(
            Code::RunLogDamaged,
            format!(
                "the log holds `{}` where a response was expected",
                event.name()
            ),
        ))),
    }
}

/// At most `max` characters of `text`.
fn cut(text: &str, max: usize) -> String {
    lwir_spec::text::cut(text, max, lwir_spec::text::Mark::Cut).into_owned()
}
