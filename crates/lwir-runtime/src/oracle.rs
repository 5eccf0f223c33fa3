//! The oracle: what the recorded log says, and what each mode of running does with it. One
//! interpreter runs every mode; only the oracle differs.
//!
//! | mode | a step whose attempt the log closed | an effect | an event |
//! |---|---|---|---|
//! | live | — | performed | written |
//! | resume | its recorded outcome is reused, not re-walked | recorded result, else performed again (same idempotency key) | compared when recorded, else written |
//! | retry | as resume; a top-level step whose last attempt failed starts a new attempt | as resume | as resume |
//! | replay | walked again | recorded result only; none is performed | compared; never written |
//!
//! A difference between a recomputed event and the recorded one is nondeterminism
//! (LW1109): replay reports the first one; resume and retry refuse to go on.

use std::collections::{BTreeMap, HashMap};

use lwir_spec::Code;
use serde_json::Value;

use crate::log::{Failure, Key, Phase, RunEvent, Writer, first_difference};

/// How a run is being run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A new run.
    Live,
    /// Going on after a crash or a pause.
    Resume,
    /// Again after a failure: failed steps get new attempts.
    Retry,
    /// Rebuilt from the log without performing anything.
    Replay,
}

/// The latest recorded attempt of a step.
#[derive(Clone, Debug)]
pub(crate) enum Latest {
    /// It succeeded with this output (`None`: a branch or loop, which have none).
    Succeeded(Option<Value>),
    /// Its `when` was false.
    Skipped,
    /// It failed.
    Failed(Failure),
    /// It started and has no end yet: it was in flight.
    Open,
}

/// The first difference replay (or resume) found between what a run recorded and what
/// rebuilding it gives.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// The step path, when it is about a step.
    pub step: Option<String>,
    /// The event compared (`tool.called`, `step.succeeded`, …).
    pub event: String,
    /// Where in the event's data the values differ.
    pub pointer: String,
    /// What the log holds there (`None`: the log has no such event or member).
    pub recorded: Option<Value>,
    /// What rebuilding gives (`None`: rebuilding gives no such event or member).
    pub replayed: Option<Value>,
}

impl Difference {
    /// The difference as a failure (LW1109), with both values.
    pub fn failure(&self) -> Failure {
        let show = |v: &Option<Value>| match v {
            None => "nothing".to_owned(),
            Some(v) => {
                let text = v.to_string();
                if text.chars().count() > 200 {
                    format!("{}…", text.chars().take(199).collect::<String>())
                } else {
                    text
                }
            }
        };
        let at = if self.pointer.is_empty() {
            String::new()
        } else {
            format!(" at `{}`", self.pointer)
        };
        let step = self
            .step
            .as_ref()
            .map_or(String::new(), |s| format!("step `{s}`: "));
        let mut failure = Failure::new(
            Code::ReplayNondeterminism,
            format!(
                "{step}`{}`{at} differs from the log: recorded {}, rebuilt {}",
                self.event,
                show(&self.recorded),
                show(&self.replayed)
            ),
        );
        failure.pointer = Some(self.pointer.clone());
        failure
    }
}

/// One recorded keyed event.
struct Entry {
    seq: u64,
    event: RunEvent,
    matched: bool,
}

/// The attempts of one step path: attempt → (its start entry, its end entry).
type Attempts = BTreeMap<u32, (Option<usize>, Option<usize>)>;

/// The recorded log, indexed.
#[derive(Default)]
pub(crate) struct Recorded {
    entries: Vec<Entry>,
    index: HashMap<Key, usize>,
    /// Per step path, its attempts.
    attempts: HashMap<String, Attempts>,
    /// The seq of the last `run.resumed` of mode `retry` (0: none).
    last_retry: u64,
    /// How the log ends: the final `run.succeeded` / `run.failed` after the last start or
    /// resumption, if there is one.
    end: Option<RunEvent>,
}

impl Recorded {
    /// The index of `events` (seq, event), in log order.
    pub(crate) fn of(events: &[(u64, RunEvent)]) -> Self {
        let mut r = Recorded::default();
        for (seq, event) in events {
            match event {
                RunEvent::RunResumed(e) => {
                    if e.mode == "retry" {
                        r.last_retry = *seq;
                    }
                    r.end = None;
                }
                RunEvent::RunSucceeded(_) | RunEvent::RunFailed(_) => r.end = Some(event.clone()),
                _ => {}
            }
            let Some(key) = event.key() else {
                continue;
            };
            let i = r.entries.len();
            if r.index.contains_key(&key) {
                // Written twice (the one writer compares before it writes): the first counts.
                continue;
            }
            match key.phase {
                Phase::Start => {
                    r.attempts
                        .entry(key.step.clone())
                        .or_default()
                        .entry(key.attempt)
                        .or_default()
                        .0 = Some(i);
                }
                Phase::End => {
                    r.attempts
                        .entry(key.step.clone())
                        .or_default()
                        .entry(key.attempt)
                        .or_default()
                        .1 = Some(i);
                }
                _ => {}
            }
            r.index.insert(key, i);
            r.entries.push(Entry {
                seq: *seq,
                event: event.clone(),
                matched: false,
            });
        }
        r
    }

    /// Whether the run ended successfully in the log.
    pub(crate) fn succeeded(&self) -> bool {
        matches!(self.end, Some(RunEvent::RunSucceeded(_)))
    }

    /// How the log ends, if it does.
    pub(crate) fn end(&self) -> Option<&RunEvent> {
        self.end.as_ref()
    }
}

/// The oracle of one run in one mode.
pub(crate) struct Oracle {
    mode: Mode,
    recorded: Recorded,
    writer: Option<Writer>,
    difference: Option<Difference>,
}

/// What emitting an event gave.
pub(crate) enum Emitted {
    /// Written (or already in the log): its ticket, durable once the writer says so (0: it
    /// was already durable).
    Ticket(u64),
    /// It differs from what the log recorded: the run must stop.
    Differs,
}

impl Oracle {
    /// The oracle of `mode` over `recorded`, writing new events with `writer` (none for
    /// replay).
    pub(crate) fn new(mode: Mode, recorded: Recorded, writer: Option<Writer>) -> Self {
        Self {
            mode,
            recorded,
            writer,
            difference: None,
        }
    }

    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    /// Whether effects are performed (all modes but replay).
    pub(crate) fn performs(&self) -> bool {
        self.mode != Mode::Replay
    }

    /// Whether recorded outcomes of closed attempts are reused instead of walked again.
    pub(crate) fn reuses(&self) -> bool {
        matches!(self.mode, Mode::Resume | Mode::Retry)
    }

    pub(crate) fn take_writer(&mut self) -> Option<Writer> {
        self.writer.take()
    }

    pub(crate) fn recorded(&self) -> &Recorded {
        &self.recorded
    }

    /// The first difference found.
    pub(crate) fn difference(&self) -> Option<&Difference> {
        self.difference.as_ref()
    }

    /// Records that the rebuilt run differs from the log.
    pub(crate) fn differ(&mut self, difference: Difference) {
        self.difference.get_or_insert(difference);
    }

    /// Emits `event`: written in live mode; compared with the recorded one when the log
    /// has it; written in resume and retry when it does not.
    pub(crate) fn emit(&mut self, event: RunEvent) -> Emitted {
        if let Some(key) = event.key()
            && let Some(&i) = self.recorded.index.get(&key)
        {
            let entry = &mut self.recorded.entries[i];
            entry.matched = true;
            let recorded = entry.event.decision();
            let rebuilt = event.decision();
            if recorded != rebuilt {
                let (pointer, a, b) = if entry.event.name() == event.name() {
                    first_difference(&recorded, &rebuilt)
                        .map(|(p, a, b)| (p, a.cloned(), b.cloned()))
                        .unwrap_or_default()
                } else {
                    (
                        String::new(),
                        Some(Value::String(entry.event.name().into())),
                        Some(Value::String(event.name().into())),
                    )
                };
                let difference = Difference {
                    step: Some(key.step.clone()),
                    event: entry.event.name().to_owned(),
                    pointer,
                    recorded: a,
                    replayed: b,
                };
                self.differ(difference);
                return Emitted::Differs;
            }
            return Emitted::Ticket(0);
        }
        match self.mode {
            Mode::Replay => {
                // In a run that succeeded every event the rebuilt run gives was recorded;
                // in one that failed or did not end, rebuilding may reach what the run
                // never did (it stopped first).
                if self.recorded.succeeded() && event.key().is_some() {
                    self.differ(Difference {
                        step: event.step().map(str::to_owned),
                        event: event.name().to_owned(),
                        pointer: String::new(),
                        recorded: None,
                        replayed: Some(event.decision()),
                    });
                    return Emitted::Differs;
                }
                Emitted::Ticket(0)
            }
            _ => match &mut self.writer {
                Some(w) => Emitted::Ticket(w.append(event)),
                None => Emitted::Ticket(0),
            },
        }
    }

    /// The recorded event at `key` (an effect's result) and its seq, marked as used.
    pub(crate) fn recorded_effect(&mut self, key: &Key) -> Option<(u64, RunEvent)> {
        if self.mode == Mode::Live {
            return None;
        }
        let &i = self.recorded.index.get(key)?;
        let entry = &mut self.recorded.entries[i];
        entry.matched = true;
        Some((entry.seq, entry.event.clone()))
    }

    /// The latest recorded attempt of step `path` and what became of it; for the modes that
    /// reuse recorded outcomes.
    pub(crate) fn latest(&self, path: &str) -> Option<(u32, Latest)> {
        let attempts = self.recorded.attempts.get(path)?;
        let (&attempt, &(start, end)) = attempts.iter().next_back()?;
        let event = |i: Option<usize>| i.map(|i| &self.recorded.entries[i].event);
        let latest = match (event(start), event(end)) {
            (Some(RunEvent::StepSkipped(_)), _) => Latest::Skipped,
            (_, Some(RunEvent::StepSucceeded(e))) => Latest::Succeeded(e.output.clone()),
            (_, Some(RunEvent::StepFailed(e))) => Latest::Failed(e.failure.clone()),
            (Some(_), _) => Latest::Open,
            _ => return None,
        };
        Some((attempt, latest))
    }

    /// The seq of the `step.started` of `path`'s attempt `attempt`; `None` when the log
    /// has none.
    pub(crate) fn start_seq(&self, path: &str, attempt: u32) -> Option<u64> {
        let &(start, _) = self.recorded.attempts.get(path)?.get(&attempt)?;
        start.map(|i| self.recorded.entries[i].seq)
    }

    /// How many recorded attempts of `path` started after seq `boundary`: the attempts of
    /// the current execution of the step, which its `retry.max_attempts` bounds.
    pub(crate) fn tries_since(&self, path: &str, boundary: u64) -> u32 {
        self.recorded.attempts.get(path).map_or(0, |attempts| {
            let n = attempts
                .values()
                .filter_map(|(start, _)| *start)
                .filter(|&i| self.recorded.entries[i].seq > boundary)
                .count();
            u32::try_from(n).unwrap_or(u32::MAX)
        })
    }

    /// Where the current execution of top-level steps began: the last retry (a retry now
    /// begins after everything recorded).
    pub(crate) fn top_boundary(&self) -> u64 {
        match self.mode {
            Mode::Retry => u64::MAX,
            _ => self.recorded.last_retry,
        }
    }

    /// Whether attempt `attempt` of `path` may start: always, except in replay, where only what
    /// the run started is started again (in a run that succeeded, anything: a step it
    /// never started is then a difference).
    pub(crate) fn may_start(&self, path: &str, attempt: u32) -> bool {
        self.mode != Mode::Replay
            || self.start_seq(path, attempt).is_some()
            || self.recorded.succeeded()
    }

    /// Whether a top-level step whose attempts ran out gets another: in replay, when the
    /// run did (a retry gave it one); otherwise a retry's own new attempts come from
    /// [`Oracle::top_boundary`].
    pub(crate) fn grant(&self, path: &str, attempt: u32) -> bool {
        self.mode == Mode::Replay && self.start_seq(path, attempt + 1).is_some()
    }

    /// After a replay: the first recorded step event the rebuilt run did not give, when
    /// the run ended (a run that did not end may have recorded events of steps in flight
    /// that rebuilding cannot reach).
    pub(crate) fn unmatched(&self) -> Option<Difference> {
        self.recorded.end.as_ref()?;
        let entry = self.recorded.entries.iter().find(|e| !e.matched)?;
        Some(Difference {
            step: entry.event.step().map(str::to_owned),
            event: entry.event.name().to_owned(),
            pointer: String::new(),
            recorded: Some(entry.event.decision()),
            replayed: None,
        })
    }
}
