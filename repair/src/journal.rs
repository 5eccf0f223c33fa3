//! The journal: how a repair session records what it does, and how a resumed session
//! fast-forwards through what it did before.
//!
//! Every event goes through [`Journal::record`]. A fresh session appends it to the event log
//! (fsynced before the session goes on). A resumed session first *replays*: the session runs
//! again from the start — validation and fixes are deterministic — and each event it would
//! record is compared with the committed event at the same place instead of being written.
//! Planner calls are answered from the log ([`Journal::call`]): a call whose response was
//! committed is not made again; the call that was in flight when the session died (its
//! `harness.model.called` is the last committed event) is made for real. Once past the
//! committed events the journal appends as a fresh session does.
//!
//! A replayed event that differs from the committed one means the log does not describe this
//! session (edited, or written by another lwirc): that is an error, never skipped.

use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::events::{Event, EventLog, LogError};
use crate::harness::{Planner, PlannerFailure, Response};
use crate::protocol::{self, Request};

/// Why a session cannot go on recording.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The event log could not be written or read.
    #[error(transparent)]
    Log(#[from] LogError),
    /// Replaying the session does not give the committed events.
    #[error(
        "the session log does not match a replay of this session at event {seq}: the log has \
         `{recorded}`, the replay gives `{replayed}`; the log was not changed"
    )]
    Diverged {
        /// The committed event's seq.
        seq: u64,
        /// The committed event, compact.
        recorded: String,
        /// What the replay gives, compact.
        replayed: String,
    },
}

/// Who sees each event (the command line prints progress from them).
pub type Observer<'a> = dyn FnMut(&Event, bool) + 'a;

/// Where a session's events go. See the module documentation.
pub struct Journal<'a> {
    log: Option<EventLog>,
    recorded: Vec<Event>,
    cursor: usize,
    memory: Vec<Event>,
    observer: Option<Box<Observer<'a>>>,
}

impl<'a> Journal<'a> {
    /// A journal kept in memory only (`lwirc repair` without a session directory).
    pub fn in_memory() -> Self {
        Self {
            log: None,
            recorded: Vec::new(),
            cursor: 0,
            memory: Vec::new(),
            observer: None,
        }
    }

    /// A journal appending to a fresh event log.
    pub fn new(log: EventLog) -> Self {
        Self {
            log: Some(log),
            ..Self::in_memory()
        }
    }

    /// A journal that first replays `recorded` (the committed events of `log`, from
    /// [`EventLog::resume`]), skipping the first `already_checked` of them, which the caller
    /// has checked itself (the `harness.session.started` event).
    pub fn resumed(log: EventLog, recorded: Vec<Event>, already_checked: usize) -> Self {
        Self {
            log: Some(log),
            cursor: already_checked.min(recorded.len()),
            recorded,
            ..Self::in_memory()
        }
    }

    /// Calls `observer` with every event recorded or replayed from now on (the flag says
    /// whether it was replayed from the log).
    pub fn observe(&mut self, observer: impl FnMut(&Event, bool) + 'a) {
        self.observer = Some(Box::new(observer));
    }

    /// Every event of this run that was not replayed, in order (for a journal in memory:
    /// every event).
    pub fn written(&self) -> &[Event] {
        &self.memory
    }

    /// Records `event` with `data`: compared with the committed event while replaying,
    /// appended (and fsynced) otherwise.
    pub fn record(&mut self, event: &str, data: Value) -> Result<(), JournalError> {
        if let Some(committed) = self.recorded.get(self.cursor) {
            if committed.event != event || committed.data != data {
                return Err(JournalError::Diverged {
                    seq: committed.seq,
                    recorded: compact(&committed.event, &committed.data),
                    replayed: compact(event, &data),
                });
            }
            self.cursor += 1;
            let committed = committed.clone();
            self.notify(&committed, true);
            return Ok(());
        }
        let written = match &mut self.log {
            Some(log) => log.append(event, data)?,
            None => Event {
                seq: self.memory.len() as u64 + 1,
                time: lwir_spec::time::rfc3339_millis(std::time::SystemTime::now()),
                event: event.to_owned(),
                data,
            },
        };
        self.notify(&written, false);
        self.memory.push(written);
        Ok(())
    }

    /// One planner call: `harness.model.called`, then the answer — from the log when it was
    /// committed, else from `planner` — and `harness.model.responded` or
    /// `harness.tool_call.failed`.
    pub fn call(
        &mut self,
        request: &Request,
        planner: &mut dyn Planner,
    ) -> Result<Result<Response, PlannerFailure>, JournalError> {
        let bytes = request.to_bytes();
        let mut called = json!({
            "call": request.call(),
            "kind": request.kind(),
            "request_sha256": hex(&Sha256::digest(&bytes)),
            "request_bytes": bytes.len(),
        });
        if let Some(attempt) = request.attempt() {
            called["attempt"] = json!(attempt);
        }
        self.record("harness.model.called", called)?;

        if let Some(committed) = self.recorded.get(self.cursor).cloned() {
            let outcome = replayed_outcome(&committed, request.call())?;
            self.cursor += 1;
            self.notify(&committed, true);
            return Ok(outcome);
        }
        let outcome = planner.call(request, &bytes);
        match &outcome {
            Ok(response) => self.record(
                "harness.model.responded",
                json!({
                    "call": request.call(),
                    "answer": response.answer_kind(),
                    "elapsed_ms": millis(response.elapsed),
                    "stdout": response.stdout,
                }),
            )?,
            Err(failure) => self.record(
                "harness.tool_call.failed",
                json!({
                    "call": request.call(),
                    "code": failure.code().as_str(),
                    "message": failure.message,
                    "stderr_tail": failure.stderr_tail,
                    "elapsed_ms": millis(failure.elapsed),
                }),
            )?,
        }
        Ok(outcome)
    }

    fn notify(&mut self, event: &Event, replayed: bool) {
        if let Some(observer) = &mut self.observer {
            observer(event, replayed);
        }
    }
}

/// The answer of a committed `harness.model.responded` / `harness.tool_call.failed`.
fn replayed_outcome(
    committed: &Event,
    call: u32,
) -> Result<Result<Response, PlannerFailure>, JournalError> {
    let diverged = |why: &str| JournalError::Diverged {
        seq: committed.seq,
        recorded: compact(&committed.event, &committed.data),
        replayed: format!("the response to planner call {call} ({why})"),
    };
    if committed.data.get("call").and_then(Value::as_u64) != Some(u64::from(call)) {
        return Err(diverged("another call number"));
    }
    let text = |key: &str| {
        committed
            .data
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let elapsed = Duration::from_millis(
        committed
            .data
            .get("elapsed_ms")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    );
    match committed.event.as_str() {
        "harness.model.responded" => {
            let stdout = text("stdout").ok_or_else(|| diverged("no `stdout`"))?;
            let answer = protocol::parse_answer(stdout.as_bytes())
                .map_err(|_| diverged("its `stdout` is not an answer"))?;
            Ok(Ok(Response {
                answer,
                stdout,
                elapsed,
            }))
        }
        "harness.tool_call.failed" => {
            let kind = text("code")
                .and_then(|c| lwir_spec::Code::parse(&c))
                .and_then(crate::harness::FailureKind::of_code)
                .ok_or_else(|| diverged("no known planner failure `code`"))?;
            Ok(Err(PlannerFailure {
                kind,
                message: text("message").unwrap_or_default(),
                stderr_tail: text("stderr_tail").unwrap_or_default(),
                elapsed,
            }))
        }
        _ => Err(diverged("a different event")),
    }
}

fn compact(event: &str, data: &Value) -> String {
    let data = data.to_string();
    let data = match data.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &data[..cut]),
        None => data,
    };
    format!("{event} {data}")
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
