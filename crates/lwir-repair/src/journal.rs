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
//! Events are typed ([`SessionEvent`]); the committed ones are read back into the same types
//! and compared as such. A replayed event that differs from the committed one (or a
//! committed one that is not a session event) means the log does not describe this session
//! (edited, or written by another lwirc): that is an error, never skipped.

use std::time::Duration;

use serde_json::Value;

use crate::events::{
    CallFailed, Event, EventLog, LogError, ModelCalled, ModelResponded, SessionEvent,
};
use crate::harness::{FailureKind, Planner, PlannerFailure, Response};
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

/// Who sees each event (the command line prints progress from them), and whether it was
/// replayed from the log.
pub type Observer<'a> = dyn FnMut(&SessionEvent, bool) + 'a;

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
    pub fn observe(&mut self, observer: impl FnMut(&SessionEvent, bool) + 'a) {
        self.observer = Some(Box::new(observer));
    }

    /// Every event of this run that was not replayed, in order (for a journal in memory:
    /// every event).
    pub fn written(&self) -> &[Event] {
        &self.memory
    }

    /// Records `event`: compared with the committed event while replaying, appended (and
    /// fsynced) otherwise.
    pub fn record(&mut self, event: SessionEvent) -> Result<(), JournalError> {
        if let Some(committed) = self.recorded.get(self.cursor) {
            let same = SessionEvent::parse(committed).is_ok_and(|c| c == event);
            if !same {
                return Err(JournalError::Diverged {
                    seq: committed.seq,
                    recorded: compact(&committed.event, &committed.data),
                    replayed: compact(event.name(), &event.data()),
                });
            }
            self.cursor += 1;
            self.notify(&event, true);
            return Ok(());
        }
        let (name, data) = (event.name(), event.data());
        let written = match &mut self.log {
            Some(log) => log.append(name, data)?,
            None => Event {
                seq: self.memory.len() as u64 + 1,
                time: lwir_spec::time::rfc3339_millis(std::time::SystemTime::now()),
                event: name.to_owned(),
                data,
            },
        };
        self.notify(&event, false);
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
        self.record(SessionEvent::ModelCalled(ModelCalled {
            call: request.call(),
            kind: request.kind().to_owned(),
            request_sha256: lwir_spec::digest::sha256_hex(&bytes),
            request_bytes: bytes.len() as u64,
            attempt: request.attempt(),
        }))?;

        if let Some(committed) = self.recorded.get(self.cursor).cloned() {
            let (event, outcome) = replayed_outcome(&committed, request.call())?;
            self.cursor += 1;
            self.notify(&event, true);
            return Ok(outcome);
        }
        let outcome = planner
            .call(request, &bytes)
            .map_err(PlannerFailure::redacted);
        self.record(match &outcome {
            Ok(response) => SessionEvent::ModelResponded(ModelResponded {
                call: request.call(),
                answer: response.answer_kind().to_owned(),
                elapsed_ms: millis(response.elapsed),
                stdout: response.stdout.clone(),
            }),
            Err(failure) => SessionEvent::CallFailed(CallFailed {
                call: request.call(),
                code: failure.code(),
                message: failure.message.clone(),
                stderr_tail: failure.stderr_tail.clone(),
                elapsed_ms: millis(failure.elapsed),
            }),
        })?;
        Ok(outcome)
    }

    fn notify(&mut self, event: &SessionEvent, replayed: bool) {
        if let Some(observer) = &mut self.observer {
            observer(event, replayed);
        }
    }
}

/// The answer of a committed `harness.model.responded` / `harness.tool_call.failed`, with
/// the event typed.
fn replayed_outcome(
    committed: &Event,
    call: u32,
) -> Result<(SessionEvent, Result<Response, PlannerFailure>), JournalError> {
    let diverged = |why: &str| JournalError::Diverged {
        seq: committed.seq,
        recorded: compact(&committed.event, &committed.data),
        replayed: format!("the response to planner call {call} ({why})"),
    };
    let event = SessionEvent::parse(committed).map_err(|why| diverged(&why))?;
    let outcome = match &event {
        SessionEvent::ModelResponded(r) if r.call == call => {
            let answer = protocol::parse_answer(r.stdout.as_bytes())
                .map_err(|_| diverged("its `stdout` is not an answer"))?;
            Ok(Response {
                answer,
                stdout: r.stdout.clone(),
                elapsed: Duration::from_millis(r.elapsed_ms),
            })
        }
        SessionEvent::CallFailed(f) if f.call == call => Err(PlannerFailure {
            kind: FailureKind::of_code(f.code)
                .ok_or_else(|| diverged("no known planner failure `code`"))?,
            message: f.message.clone(),
            stderr_tail: f.stderr_tail.clone(),
            elapsed: Duration::from_millis(f.elapsed_ms),
        }
        .redacted()),
        SessionEvent::ModelResponded(_) | SessionEvent::CallFailed(_) => {
            return Err(diverged("another call number"));
        }
        _ => return Err(diverged("a different event")),
    };
    Ok((event, outcome))
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
