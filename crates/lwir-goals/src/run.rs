//! Driving a goal: dispatch ready work to a runner, record every attempt, retry within the
//! ceilings, replan when eligible, and stop when the goal succeeded or waits for a person.
//!
//! A [`Driver`] drives one goal and holds its run lock, so that one process at a time
//! watches the runners of a goal. It never blocks: [`Driver::step`] looks at the goal and
//! does what can be done now (dispatching starts runner threads in the caller's scope);
//! [`Driver::record`] records what a runner answered. `goal run` is one driver stepped
//! until it stops ([`Goals::run`]); `goal serve` steps many.
//!
//! A killed driver loses nothing: its attempts in flight were recorded as started with
//! `dispatched`, and the next driver of the goal — the first to take the run lock after it —
//! kills what those runners left running and records each attempt as interrupted (it
//! counts), before it dispatches anything.

use std::collections::BTreeMap;
use std::sync::mpsc::Sender;

use lwir_spec::Code;
use serde::Serialize;

use crate::agent::Agent;
use crate::catalog::TemplateError;
use crate::events::{self, GoalEvent};
use crate::goal::{GoalError, Goals, Held, Replanned, Report};
use crate::projection::{AttemptState, Status};
use crate::runner::{self, Answer, Runner};
use crate::store::{Position, RunGuard, StoreError};

/// What a runner thread sends back.
#[derive(Debug)]
pub struct Done {
    /// The goal.
    pub goal: String,
    /// The work id.
    pub work: String,
    /// Its key.
    pub key: String,
    /// The attempt.
    pub attempt: u32,
    /// What the runner gave.
    pub result: Result<Vec<u8>, runner::Failure>,
}

/// Something a driver did, for progress lines.
#[derive(Debug)]
pub enum Progress<'a> {
    /// An attempt a dead driver left in flight was recorded as interrupted.
    Interrupted {
        /// The work id.
        work: &'a str,
        /// The attempt.
        attempt: u32,
    },
    /// An attempt was handed to the runner.
    Dispatched {
        /// The work id.
        work: &'a str,
        /// Its key.
        key: &'a str,
        /// The attempt.
        attempt: u32,
    },
    /// An attempt ended.
    Finished {
        /// The work id.
        work: &'a str,
        /// Its key.
        key: &'a str,
        /// The attempt.
        attempt: u32,
        /// Whether it succeeded.
        succeeded: bool,
        /// The error of a failed attempt.
        error: Option<&'a str>,
        /// The run the attempt was, when its runner named one.
        run: Option<&'a str>,
    },
    /// A replan ended.
    Replanned(&'a Replanned),
    /// An adaptation ended.
    Adapted(&'a crate::adapt::Adapted),
    /// A finished attempt could not be recorded (the goal refused it).
    NotRecorded {
        /// The work id.
        work: &'a str,
        /// Why.
        reason: &'a str,
    },
}

/// Receives progress.
pub trait Observer {
    /// One step of progress.
    fn progress(&mut self, goal: &str, progress: Progress<'_>);
}

/// An observer that ignores everything.
pub struct Quiet;

impl Observer for Quiet {
    fn progress(&mut self, _goal: &str, _progress: Progress<'_>) {}
}

/// What one [`Driver::step`] found.
#[derive(Debug)]
pub enum Step {
    /// It did something (dispatched, recorded an interruption): step again.
    Acted,
    /// Nothing to do until a runner answers (or, with nothing in flight, until someone
    /// else acts on the goal).
    Wait,
    /// The goal is eligible: a replan is what can be done next.
    Replan,
    /// An attempt's end triggers an adaptation of the remaining plan.
    Adapt(crate::adapt::Trigger),
    /// Nothing more can be done by this driver: the goal's status says why.
    Stop,
}

/// How `goal run` ended.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// The goal id.
    pub goal: String,
    /// Its status when the run stopped.
    pub status: Status,
    /// Why, and what to do next.
    pub reason: String,
    /// Attempts dispatched by this run.
    pub dispatched: u32,
    /// Of those, succeeded.
    pub succeeded: u32,
    /// Of those, failed.
    pub failed: u32,
    /// Attempts of an earlier run recorded as interrupted.
    pub interrupted: u32,
    /// The replans this run asked for: plan id and how each ended.
    pub replans: Vec<(String, String)>,
    /// The adaptations this run asked for: plan id and how each ended.
    pub adaptations: Vec<(String, String)>,
}

/// An attempt in flight: what its answer is recorded with.
#[derive(Debug)]
struct Flight {
    attempt: u32,
    template: String,
    /// The generation it was dispatched in, for the adaptation trigger.
    generation: u32,
}

/// A report's outcome in a decision: the index of its event among those to append, or why
/// it was not decided.
type Decided = Result<usize, GoalError>;

/// Each outcome with its event among `events` (those appended).
fn resolve(
    outcomes: Vec<Decided>,
    events: &[lwir_repair::events::Event],
) -> Vec<Result<lwir_repair::events::Event, GoalError>> {
    outcomes
        .into_iter()
        .map(|o| {
            o.and_then(|i| {
                events
                    .get(i)
                    .cloned()
                    .ok_or_else(|| GoalError::Internal("an event decided was not appended".into()))
            })
        })
        .collect()
}

/// The reports of `answered`, to decide.
fn reports_of(answered: &[Answered]) -> Vec<(&str, &Report, Option<&str>)> {
    answered
        .iter()
        .map(|a| (a.done.work.as_str(), &a.report, a.run.as_deref()))
        .collect()
}

/// A runner's answer, read: what to record of it.
struct Answered {
    done: Done,
    flight: Option<Flight>,
    report: Report,
    run: Option<String>,
}

/// One goal being driven.
pub struct Driver<'g> {
    goals: &'g Goals<'g>,
    id: String,
    _guard: RunGuard,
    /// Attempts in flight: work id → attempt.
    inflight: BTreeMap<String, Flight>,
    /// The goal's catalog, frozen at creation: what outputs are checked against.
    catalog: BTreeMap<String, crate::catalog::Template>,
    /// The first attempt that ended since the last look, for the adaptation trigger.
    ended: Option<crate::adapt::Trigger>,
    /// Set when the runners in flight were killed: what they answer is an interruption.
    aborted: bool,
    /// Whether the last [`Driver::step`] decided on the held goal (whose fingerprint is
    /// computed only when the goal is parked), and the position of the log it read.
    seen: Option<Option<Position>>,
    /// The goal as this driver last read it, kept between steps: each look reads only the
    /// events appended since ([`Goals::refresh`]), and the driver's own appends are folded
    /// as they are made. Only the driver holding the run lock keeps one.
    held: Option<Held>,
    /// Events decided and folded into the held goal in this step, to append in one write
    /// ([`Driver::commit`]), and the seq of the last event of the log they follow.
    pending: Vec<GoalEvent>,
    pending_from: u64,
    /// Runners' answers `goal run` took in, to record with the next step's decision (in its
    /// write): a goal that does not adapt records an attempt's end and starts the work it
    /// frees in one write ([`Driver::stage_all`]).
    staged: Vec<Answered>,
    /// The seq the last checkpoint this driver stored covers (0: none yet): it stores one
    /// as readers do ([`crate::checkpoint::due`]), so that a driver killed leaves one near
    /// the log's end.
    kept: u64,
    report: RunReport,
}

impl<'g> Driver<'g> {
    /// Takes the run lock of goal `id` and records as interrupted every attempt a dead
    /// driver left in flight (killing what its runners left running first).
    pub fn new(
        goals: &'g Goals<'g>,
        id: &str,
        observer: &mut dyn Observer,
    ) -> Result<Self, GoalError> {
        let guard = goals.store.lock_run(id).map_err(|e| match e {
            StoreError::Busy { what } => GoalError::Refused(format!("{what}; one driver per goal")),
            e => e.into(),
        })?;
        let mut driver = Driver {
            goals,
            id: id.to_owned(),
            _guard: guard,
            inflight: BTreeMap::new(),
            catalog: BTreeMap::new(),
            ended: None,
            aborted: false,
            seen: None,
            held: None,
            pending: Vec::new(),
            pending_from: 0,
            staged: Vec::new(),
            kept: 0,
            report: RunReport {
                goal: id.to_owned(),
                status: Status::Running,
                reason: String::new(),
                dispatched: 0,
                succeeded: 0,
                failed: 0,
                interrupted: 0,
                replans: Vec::new(),
                adaptations: Vec::new(),
            },
        };
        driver.recover(observer)?;
        Ok(driver)
    }

    /// The goal id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether a runner of this driver is in flight.
    pub fn busy(&self) -> bool {
        !self.inflight.is_empty()
    }

    fn recover(&mut self, observer: &mut dyn Observer) -> Result<(), GoalError> {
        // The whole log, once, when the run lock is taken: every chain hash is checked by
        // each driver; from then on it reads only what follows.
        let held = self.goals.load_held(&self.id, false)?;
        // (Stored as the whole log was read, when it was due.)
        self.kept = held.loaded.fold.last_seq;
        self.catalog = held.loaded.catalog.clone();
        self.interrupt_lost(&held.loaded, observer)?;
        self.held = Some(held);
        Ok(())
    }

    /// The goal now: the held one brought up to date (only what was appended since it was
    /// read is read), or read whole when none is held.
    fn look(&mut self) -> Result<&Held, GoalError> {
        let mut held = match self.held.take() {
            Some(held) => self.goals.refresh(held)?,
            None => self.goals.load_held(&self.id, true)?,
        };
        held.loaded
            .fold
            .keep_statuses(&held.loaded.file, (self.goals.now)());
        if let Some(position) = &held.position {
            let fold = &held.loaded.fold;
            let since = fold.last_seq.saturating_sub(self.kept);
            if crate::checkpoint::due(since, fold) {
                self.goals.keep(&self.id, fold, position);
                self.kept = fold.last_seq;
            }
        }
        Ok(self.held.insert(held))
    }

    /// [`Goals::report`] of several reports on the held goal, brought up to date: each decided
    /// on it as the ones before it leave it, and every event decided appended in one write (one fsync)
    /// — a driver's whole decision is as durable as one append, and costs one. One result per
    /// report, in order: its event, or why it was refused; after an error that is not a
    /// refusal, the reports left are not decided (their error says so).
    fn report_all(
        &mut self,
        reports: &[(&str, &Report, Option<&str>)],
    ) -> Result<Vec<Result<lwir_repair::events::Event, GoalError>>, GoalError> {
        for _ in 0..crate::goal::MAX_CONFLICTS {
            self.look()?;
            if self.held.is_none() {
                continue;
            }
            let outcomes = self.decide(reports);
            match self.commit() {
                Ok(events) => return Ok(resolve(outcomes, &events)),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(crate::goal::busy(&self.id))
    }

    /// Decides `reports` in order on the held goal, each folded into it (and kept among the
    /// events to append, [`Driver::commit`]) before the next is decided. Each report's
    /// outcome: the index of its event among those to append, or why it was refused; after
    /// an error that is not a refusal, the reports left are not decided (their error says so).
    fn decide(&mut self, reports: &[(&str, &Report, Option<&str>)]) -> Vec<Decided> {
        let mut outcomes: Vec<Decided> = Vec::with_capacity(reports.len());
        let Some(held) = self.held.as_mut() else {
            return reports
                .iter()
                .map(|_| Err(crate::goal::busy(&self.id)))
                .collect();
        };
        if self.pending.is_empty() {
            self.pending_from = held.loaded.fold.last_seq;
        }
        // Whether a report of this decision failed otherwise than by a refusal: the ones
        // after it are not decided.
        let mut stopped = false;
        for &(work, report, run) in reports {
            if stopped {
                outcomes.push(Err(GoalError::Internal(format!(
                    "`{work}` was not recorded: an earlier report of the same decision failed"
                ))));
                continue;
            }
            match self.goals.report_event(&held.loaded, work, report, run) {
                Ok(decided) => {
                    // Folded now, so that the next report is decided on the goal as this one
                    // leaves it (a work event's fold does not read its time).
                    let event = lwir_repair::events::Event {
                        seq: held.loaded.fold.last_seq + 1,
                        time: String::new(),
                        event: decided.name().to_owned(),
                        data: decided.data(),
                    };
                    if let Err(detail) = held.loaded.fold.apply_event(&event) {
                        stopped = true;
                        outcomes.push(Err(GoalError::Damaged {
                            goal: self.id.clone(),
                            detail,
                        }));
                        continue;
                    }
                    outcomes.push(Ok(self.pending.len()));
                    self.pending.push(decided);
                }
                Err(e) => {
                    stopped |= !matches!(e, GoalError::Refused(_));
                    outcomes.push(Err(e));
                }
            }
        }
        outcomes
    }

    /// Appends the events [`Driver::decide`] folded, in one write (one fsync), if the log
    /// is still as it was read; the events appended. On any error nothing is appended and
    /// the held goal, which folded them, is let go (the next look reads it whole).
    fn commit(&mut self) -> Result<Vec<lwir_repair::events::Event>, StoreError> {
        let pending = std::mem::take(&mut self.pending);
        if pending.is_empty() {
            return Ok(Vec::new());
        }
        match self
            .goals
            .store
            .append_all(&self.id, &pending, self.pending_from)
        {
            Ok(events) => {
                if let Some(held) = self.held.as_mut() {
                    held.own.extend(events.iter().cloned());
                }
                Ok(events)
            }
            Err(e) => {
                self.held = None;
                Err(e)
            }
        }
    }

    /// Records as interrupted every attempt dispatched to a runner that no runner of this
    /// driver watches — a dead driver's, or one of this driver's whose answer could not be
    /// recorded — killing what its runner left running first; whether there was one. The
    /// run lock makes this driver the only one that dispatches the goal's work.
    fn interrupt_lost(
        &mut self,
        loaded: &crate::goal::Loaded,
        observer: &mut dyn Observer,
    ) -> Result<bool, GoalError> {
        let mut any = false;
        for i in loaded.fold.running_items() {
            let item = &loaded.fold.items[i];
            for a in &item.attempts {
                if a.state != AttemptState::Running
                    || !a.dispatched
                    || self.inflight.contains_key(&item.spec.work)
                    || self.staged.iter().any(|s| s.done.work == item.spec.work)
                {
                    continue;
                }
                let mark = format!("{}/{}/{}", self.id, item.spec.work, a.n);
                lwir_repair::process::kill_marked(runner::ATTEMPT_VAR, &mark);
                self.goals.interrupt(
                    &self.id,
                    &item.spec.work,
                    a.n,
                    "its runner was lost: the `goal run` or `goal serve` that dispatched it stopped, or could not record its answer",
                )?;
                self.report.interrupted += 1;
                any = true;
                observer.progress(
                    &self.id,
                    Progress::Interrupted {
                        work: &item.spec.work,
                        attempt: a.n,
                    },
                );
            }
        }
        Ok(any)
    }

    /// Looks at the goal and does what can be done now: dispatches ready work (starting
    /// runner threads in `scope`, which send to `done`), or says what is next.
    pub fn step<'scope, 'env>(
        &mut self,
        scope: &'scope std::thread::Scope<'scope, 'env>,
        runner: &'env dyn Runner,
        done: &Sender<Done>,
        observer: &mut dyn Observer,
    ) -> Result<Step, GoalError>
    where
        'g: 'env,
    {
        self.look()?;
        let Some(held) = self.held.take() else {
            return Ok(Step::Acted);
        };
        let lost = self.interrupt_lost(&held.loaded, observer);
        self.held = Some(held);
        if lost? {
            return Ok(Step::Acted);
        }
        // The staged answers first: what follows is decided on the goal as their ends leave
        // it, and appended with them.
        let staged = std::mem::take(&mut self.staged);
        let outcomes = self.decide(&reports_of(&staged));
        let staged = (staged, outcomes);
        let Some(held) = self.held.as_ref() else {
            return Ok(Step::Acted);
        };
        if let Some(trigger) = self.ended.take()
            && self.goals.adaptation_due(&held.loaded, &trigger).is_none()
        {
            if self.settle(staged, observer)?.is_none() {
                return Ok(Step::Acted);
            }
            return Ok(Step::Adapt(trigger));
        }
        let (status, reason, dispatchable) = {
            let outlook = self.goals.outlook(&held.loaded);
            (outlook.status, outlook.reason, outlook.dispatchable)
        };
        self.seen = Some(held.position.clone());
        self.report.status = status;
        self.report.reason = reason;
        let wait_or_stop = |busy: bool| if busy { Step::Wait } else { Step::Stop };
        let step = match status {
            Status::Succeeded
            | Status::Cancelled
            | Status::Exhausted
            | Status::AwaitingReview
            | Status::Attention => wait_or_stop(self.busy()),
            Status::Eligible if self.busy() => Step::Wait,
            Status::Eligible => Step::Replan,
            // Ready work starts now, also beside work that runs (not after the batch).
            Status::Ready | Status::Running if dispatchable => {
                return Ok(if self.dispatch(scope, runner, done, staged, observer)? {
                    Step::Acted
                } else {
                    Step::Wait
                });
            }
            Status::Ready | Status::Running => Step::Wait,
        };
        Ok(match self.settle(staged, observer)? {
            Some(_) => step,
            None => Step::Acted,
        })
    }

    /// Dispatches every item `goal next` gives, in the write of the `staged` answers
    /// decided before it; whether anything happened.
    fn dispatch<'scope, 'env>(
        &mut self,
        scope: &'scope std::thread::Scope<'scope, 'env>,
        runner: &'env dyn Runner,
        done: &Sender<Done>,
        staged: (Vec<Answered>, Vec<Decided>),
        observer: &mut dyn Observer,
    ) -> Result<bool, GoalError>
    where
        'g: 'env,
    {
        let acted = !staged.0.is_empty();
        let next = match &self.held {
            Some(held) => self.goals.next_on(&held.loaded),
            None => return Ok(self.settle(staged, observer)?.is_none() || acted),
        };
        let (ready, unresolved) = match next {
            Ok(next) => next,
            Err(e) => {
                self.settle(staged, observer)?;
                return Err(e);
            }
        };
        // Every event of this decision — the failures of what cannot run, the starts of what
        // can — decided in order and appended in one write.
        let mut reports: Vec<(String, Report)> = Vec::new();
        let mut messages: Vec<Option<String>> = Vec::new();
        for u in &unresolved {
            let message = format!("its input cannot be resolved: {}", u.error);
            let report = match u.code {
                Some(code) => Report::FailedWith {
                    code,
                    message: message.clone(),
                },
                None => Report::Failed(message.clone()),
            };
            reports.push((u.id.clone(), report));
            messages.push(Some(message));
        }
        let mut starting = Vec::new();
        let mut unreadable = None;
        for d in ready {
            if self.inflight.contains_key(&d.id) {
                continue;
            }
            match self.goals.templates.template(&d.version) {
                Ok(t) if t.version == d.version => {
                    reports.push((d.id.clone(), Report::Dispatched));
                    messages.push(None);
                    starting.push((d, Some(t.lwir)));
                }
                Ok(_) | Err(TemplateError::Corrupt { .. }) => {
                    // Code that does not hash to its version never runs.
                    let message = format!(
                        "template `{}` ({}) no longer verifies in the registry; nothing was run",
                        d.template, d.version
                    );
                    reports.push((
                        d.id.clone(),
                        Report::FailedWith {
                            code: Code::TemplateDigestMismatch,
                            message: message.clone(),
                        },
                    ));
                    messages.push(Some(message));
                    starting.push((d, None));
                }
                Err(e) => {
                    // What was decided before it is still recorded and run.
                    unreadable = Some(GoalError::from(e));
                    break;
                }
            }
        }
        let batch: Vec<(&str, &Report, Option<&str>)> = reports
            .iter()
            .map(|(work, report)| (work.as_str(), report, None))
            .collect();
        let outcomes = self.decide(&batch);
        let Some(events) = self.settle(staged, observer)? else {
            // Nothing was appended (the log changed meanwhile): decided again next step.
            return Ok(true);
        };
        let mut results = resolve(outcomes, &events).into_iter();
        let mut acted = acted;
        let mut messages = messages.into_iter();
        for u in &unresolved {
            let message = messages.next().flatten().unwrap_or_default();
            if results.next().is_some_and(|r| r.is_ok()) {
                acted = true;
                self.report.failed += 1;
                observer.progress(
                    &self.id,
                    Progress::Finished {
                        work: &u.id,
                        key: &u.key,
                        attempt: 0,
                        succeeded: false,
                        error: Some(&message),
                        run: None,
                    },
                );
            }
        }
        // The first error of the decision, returned once every start it recorded runs.
        let mut failed = None;
        for (d, lwir) in starting {
            let message = messages.next().flatten();
            let result = results
                .next()
                .unwrap_or_else(|| Err(crate::goal::busy(&self.id)));
            let Some(lwir) = lwir else {
                if let Err(e) = result {
                    failed.get_or_insert(e);
                    continue;
                }
                self.report.failed += 1;
                observer.progress(
                    &self.id,
                    Progress::Finished {
                        work: &d.id,
                        key: &d.key,
                        attempt: d.attempt,
                        succeeded: false,
                        error: message.as_deref(),
                        run: None,
                    },
                );
                acted = true;
                continue;
            };
            let event = match result {
                Ok(event) => event,
                // Someone else started it, or max_parallel filled meanwhile.
                Err(GoalError::Refused(_)) => continue,
                // The starts after it in the same write are run all the same.
                Err(e) => {
                    failed.get_or_insert(e);
                    continue;
                }
            };
            let attempt = event
                .data
                .get("attempt")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0) as u32;
            let request = serde_json::json!({
                "kind": "run",
                "protocol": runner::PROTOCOL,
                "goal": self.id,
                "work": {
                    "id": d.id,
                    "key": d.key,
                    "template": d.template,
                    "version": d.version,
                    "attempt": attempt,
                    "input": d.input,
                },
                "lwir": lwir,
            });
            let bytes = serde_json::to_vec(&request).unwrap_or_default();
            let env = vec![
                (
                    runner::ATTEMPT_VAR,
                    format!("{}/{}/{attempt}", self.id, d.id),
                ),
                ("LWIRC_GOAL", self.id.clone()),
                ("LWIRC_WORK", d.id.clone()),
                ("LWIRC_WORK_KEY", d.key.clone()),
                ("LWIRC_ATTEMPT", attempt.to_string()),
            ];
            let done = done.clone();
            let (goal, work, key) = (self.id.clone(), d.id.clone(), d.key.clone());
            scope.spawn(move || {
                let env: Vec<(&str, String)> = env;
                // An answer is always sent: a driver waits for one per attempt in flight.
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    runner.run(&bytes, &env)
                }))
                .unwrap_or_else(|payload| {
                    Err(runner::Failure {
                        code: Code::RunnerFailed,
                        message: format!(
                            "lwirc failed while it ran the runner: {}",
                            panic_message(&*payload)
                        ),
                    })
                });
                let _ = done.send(Done {
                    goal,
                    work,
                    key,
                    attempt,
                    result,
                });
            });
            let generation = event
                .data
                .get("generation")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0) as u32;
            self.inflight.insert(
                d.id.clone(),
                Flight {
                    attempt,
                    template: d.template.clone(),
                    generation,
                },
            );
            self.report.dispatched += 1;
            observer.progress(
                &self.id,
                Progress::Dispatched {
                    work: &d.id,
                    key: &d.key,
                    attempt,
                },
            );
            acted = true;
        }
        match failed.or(unreadable) {
            Some(e) => Err(e),
            None => Ok(acted),
        }
    }

    /// Records what a runner answered for one of this driver's attempts.
    pub fn record(&mut self, done: Done, observer: &mut dyn Observer) -> Result<(), GoalError> {
        self.record_all(vec![done], observer)
    }

    /// Records what runners answered for several of this driver's attempts, in one write
    /// (one fsync). The first error, once every answer that could be recorded is.
    pub fn record_all(
        &mut self,
        dones: Vec<Done>,
        observer: &mut dyn Observer,
    ) -> Result<(), GoalError> {
        let (answered, failed) = self.answers(dones, observer);
        let recorded = self.record_answered(answered, observer);
        failed.map_or(recorded, Err)
    }

    /// What `goal run` does with the answers that came while it was busy: staged, to be
    /// recorded in the write of the next [`Driver::step`] with the work their ends free —
    /// unless the goal may adapt to an attempt's end (which is then decided first), or the
    /// runners were stopped: then recorded now ([`Driver::record_all`]).
    pub fn stage_all(
        &mut self,
        dones: Vec<Done>,
        observer: &mut dyn Observer,
    ) -> Result<(), GoalError> {
        let adapts = self.held.as_ref().is_none_or(|held| {
            held.loaded
                .file
                .replanning
                .as_ref()
                .is_some_and(|r| r.adaptation_mode() != crate::file::Adaptation::Off)
        });
        if adapts || self.aborted {
            return self.record_all(dones, observer);
        }
        let (answered, failed) = self.answers(dones, observer);
        self.staged.extend(answered);
        failed.map_or(Ok(()), Err)
    }

    /// Records the answers still staged ([`Driver::stage_all`]).
    pub fn flush(&mut self, observer: &mut dyn Observer) -> Result<(), GoalError> {
        let staged = std::mem::take(&mut self.staged);
        self.record_answered(staged, observer)
    }

    /// Records `answered` in one write.
    fn record_answered(
        &mut self,
        answered: Vec<Answered>,
        observer: &mut dyn Observer,
    ) -> Result<(), GoalError> {
        if answered.is_empty() {
            return Ok(());
        }
        let batch = reports_of(&answered);
        let results = self.report_all(&batch)?;
        self.finished(answered, results, observer)
            .map_or(Ok(()), Err)
    }

    /// The answers `dones` read (what to record of each), and the first error; an answer
    /// that came after the runners were stopped is recorded as an interruption now.
    fn answers(
        &mut self,
        dones: Vec<Done>,
        observer: &mut dyn Observer,
    ) -> (Vec<Answered>, Option<GoalError>) {
        let mut answered = Vec::with_capacity(dones.len());
        let mut failed = None;
        for done in dones {
            let flight = self.inflight.remove(&done.work);
            if self.aborted {
                if let Err(e) = self.goals.interrupt(
                    &self.id,
                    &done.work,
                    done.attempt,
                    "its runner was stopped: `goal serve` was shutting down",
                ) {
                    failed.get_or_insert(e);
                    continue;
                }
                self.report.interrupted += 1;
                observer.progress(
                    &self.id,
                    Progress::Interrupted {
                        work: &done.work,
                        attempt: done.attempt,
                    },
                );
                continue;
            }
            match self.answer(&done, flight.as_ref()) {
                Ok((report, run)) => answered.push(Answered {
                    done,
                    flight,
                    report,
                    run,
                }),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        (answered, failed)
    }

    /// Tells what became of each of `answered` (`results`, in order); the first error that
    /// is not a refusal.
    fn finished(
        &mut self,
        answered: Vec<Answered>,
        results: Vec<Result<lwir_repair::events::Event, GoalError>>,
        observer: &mut dyn Observer,
    ) -> Option<GoalError> {
        let mut failed = None;
        for (
            Answered {
                done,
                flight,
                report,
                run,
            },
            result,
        ) in answered.into_iter().zip(results)
        {
            let (succeeded, error) = match &report {
                Report::Succeeded(_) => (true, None),
                Report::Failed(e) | Report::FailedWith { message: e, .. } => {
                    (false, Some(e.clone()))
                }
                Report::Started | Report::Dispatched => (false, None),
            };
            match result {
                Ok(_) => {
                    if self.ended.is_none() {
                        let generation = flight.as_ref().map(|f| f.generation);
                        self.ended = Some(crate::adapt::Trigger {
                            work: done.work.clone(),
                            key: done.key.clone(),
                            attempt: done.attempt,
                            succeeded,
                            generation: generation.unwrap_or(0),
                        });
                    }
                    if succeeded {
                        self.report.succeeded += 1;
                    } else {
                        self.report.failed += 1;
                    }
                    observer.progress(
                        &self.id,
                        Progress::Finished {
                            work: &done.work,
                            key: &done.key,
                            attempt: done.attempt,
                            succeeded,
                            error: error.as_deref(),
                            run: run.as_deref(),
                        },
                    );
                }
                Err(GoalError::Refused(reason)) => {
                    observer.progress(
                        &self.id,
                        Progress::NotRecorded {
                            work: &done.work,
                            reason: &reason,
                        },
                    );
                }
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        failed
    }

    /// Appends what this step decided — the staged answers `staged`, decided as
    /// `outcomes`, and whatever was decided after them — and tells what became of the
    /// answers; the events appended. `None` when the log changed meanwhile: nothing was
    /// appended, the answers are staged again, and the step is to be taken again.
    fn settle(
        &mut self,
        (staged, outcomes): (Vec<Answered>, Vec<Decided>),
        observer: &mut dyn Observer,
    ) -> Result<Option<Vec<lwir_repair::events::Event>>, GoalError> {
        match self.commit() {
            Ok(events) => {
                let results = resolve(outcomes, &events);
                match self.finished(staged, results, observer) {
                    Some(e) => Err(e),
                    None => Ok(Some(events)),
                }
            }
            Err(e) => {
                self.staged = staged;
                match e {
                    StoreError::Conflict { .. } => Ok(None),
                    e => Err(e.into()),
                }
            }
        }
    }

    /// What to record of a runner's answer `done` (its attempt in flight `flight`): the
    /// report, and the run the runner named.
    fn answer(
        &self,
        done: &Done,
        flight: Option<&Flight>,
    ) -> Result<(Report, Option<String>), GoalError> {
        let bytes = match &done.result {
            Err(f) => {
                return Ok((
                    Report::FailedWith {
                        code: f.code,
                        message: f.message.clone(),
                    },
                    None,
                ));
            }
            Ok(bytes) => bytes,
        };
        let (answer, run) = match runner::read_answer(bytes) {
            Err(f) => {
                return Ok((
                    Report::FailedWith {
                        code: f.code,
                        message: f.message,
                    },
                    None,
                ));
            }
            Ok(read) => read,
        };
        let report = match answer {
            Answer::Failed(error) => Report::Failed(error),
            Answer::Succeeded(output) => {
                let template = flight.map_or("", |f| f.template.as_str());
                match self
                    .goals
                    .check_output(&self.id, &self.catalog, template, &output)
                {
                    Ok(()) => Report::Succeeded(output),
                    Err(GoalError::Refused(message)) => Report::FailedWith {
                        code: Code::WorkOutputMismatch,
                        message,
                    },
                    Err(e) => return Err(e),
                }
            }
        };
        Ok((report, run))
    }

    /// Kills the runners in flight (their process groups and every process marked with their
    /// attempt); their answers are then recorded as interruptions.
    pub fn abort(&mut self) {
        self.aborted = true;
        for (work, Flight { attempt, .. }) in &self.inflight {
            let mark = format!("{}/{work}/{attempt}", self.id);
            lwir_repair::process::kill_marked(runner::ATTEMPT_VAR, &mark);
        }
    }

    /// Notes a replan's outcome in the report.
    pub fn replanned(&mut self, outcome: &Replanned) {
        let (plan, how) = match outcome {
            Replanned::Applied { plan, generation } => {
                (plan, format!("applied as generation {generation}"))
            }
            Replanned::AwaitingReview { plan, .. } => (plan, "awaiting review".to_owned()),
            Replanned::Attention { plan, .. } => (plan, "attention".to_owned()),
            Replanned::Rejected { plan, .. } => (plan, "rejected".to_owned()),
            Replanned::Failed {
                plan,
                charged: true,
                ..
            } => (plan, "failed".to_owned()),
            Replanned::Failed {
                plan,
                charged: false,
                ..
            } => (plan, "failed (not charged)".to_owned()),
        };
        self.report.replans.push((plan.clone(), how));
    }

    /// Notes an adaptation's outcome in the report.
    pub fn adapted(&mut self, outcome: &crate::adapt::Adapted) {
        use crate::adapt::Adapted;
        let (plan, how) = match outcome {
            Adapted::NotTriggered(_) => return,
            Adapted::Kept { plan } => (plan, "kept".to_owned()),
            Adapted::Revised {
                plan, generation, ..
            } => (plan, format!("revised, generation {generation}")),
            Adapted::AwaitingReview { plan } => (plan, "awaiting review".to_owned()),
            Adapted::Attention { plan, .. } => (plan, "attention".to_owned()),
            Adapted::Failed { plan, .. } => (plan, "failed".to_owned()),
        };
        self.report.adaptations.push((plan.clone(), how));
    }

    /// The report so far, with the goal's status now. The fold the driver kept is left as
    /// the store's checkpoint, for the next reader.
    pub fn finish(mut self) -> Result<RunReport, GoalError> {
        self.look()?;
        let Some(held) = &self.held else {
            return Err(crate::goal::busy(&self.id));
        };
        if let Some(position) = &held.position {
            self.goals.keep(&self.id, &held.loaded.fold, position);
        }
        let outlook = self.goals.outlook(&held.loaded);
        self.report.status = outlook.status;
        self.report.reason = outlook.reason;
        Ok(self.report)
    }

    /// The fingerprint of the projection the last step decided on (of the goal as it held
    /// it then), and the position of the log it read.
    fn seen(self) -> Option<(String, Option<Position>)> {
        let position = self.seen?;
        let held = self.held.as_ref()?;
        Some((self.goals.project(&held.loaded).fingerprint, position))
    }
}

impl Goals<'_> {
    /// Records attempt `attempt` of `work` as interrupted (it counts).
    pub fn interrupt(
        &self,
        id: &str,
        work: &str,
        attempt: u32,
        detail: &str,
    ) -> Result<(), GoalError> {
        for _ in 0..crate::goal::MAX_CONFLICTS {
            let loaded = self.load(id)?;
            let still_running = loaded
                .fold
                .item(work)
                .is_some_and(|i| i.running() == Some(attempt));
            if !still_running {
                return Ok(());
            }
            let event = GoalEvent::Failed(events::Failed {
                work: work.to_owned(),
                attempt,
                error: detail.to_owned(),
                interrupted: true,
                code: None,
                run: None,
            });
            match self.store.append(id, &event, loaded.fold.last_seq) {
                Ok(_) => return Ok(()),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(crate::goal::busy(id))
    }

    /// `goal run`: drives goal `id` until it succeeded or nothing more can be done without a
    /// person — dispatching ready work to `runner` (at most `max_parallel` at once),
    /// recording every attempt, and replanning with `planner` (and `reviewer`) when the
    /// goal is eligible.
    pub fn run(
        &self,
        id: &str,
        runner: &dyn Runner,
        mut planner: Option<&mut dyn Agent>,
        mut reviewer: Option<&mut dyn Agent>,
        observer: &mut dyn Observer,
    ) -> Result<RunReport, GoalError> {
        let mut driver = Driver::new(self, id, observer)?;
        let (tx, rx) = std::sync::mpsc::channel::<Done>();
        std::thread::scope(|scope| {
            // The answers that came meanwhile are recorded together (one write, one fsync).
            let result: Result<(), GoalError> = (|| loop {
                let answered: Vec<Done> = rx.try_iter().collect();
                if !answered.is_empty() {
                    driver.stage_all(answered, observer)?;
                }
                match driver.step(scope, runner, &tx, observer)? {
                    Step::Acted => {}
                    Step::Wait if driver.busy() => {
                        if let Ok(done) = rx.recv() {
                            let mut answered = vec![done];
                            answered.extend(rx.try_iter());
                            driver.stage_all(answered, observer)?;
                        }
                    }
                    // Nothing of this run's is in flight, and the goal waits for someone
                    // else's (an attempt a runtime reported started, another process's
                    // replan): `goal run` does not wait for them without end.
                    Step::Wait => return Ok(()),
                    Step::Replan => {
                        let Some(planner) = planner.as_deref_mut() else {
                            return Ok(());
                        };
                        let reviewer = reviewer.as_deref_mut().map(|r| r as &mut dyn Agent);
                        let outcome = self.replan(id, planner, reviewer)?;
                        driver.replanned(&outcome);
                        observer.progress(id, Progress::Replanned(&outcome));
                        if matches!(outcome, Replanned::Failed { charged: false, .. }) {
                            // The planner cannot be started: asking again would only loop.
                            return Ok(());
                        }
                    }
                    Step::Adapt(trigger) => {
                        let Some(planner) = planner.as_deref_mut() else {
                            continue;
                        };
                        let outcome = self.adapt(id, &trigger, planner)?;
                        driver.adapted(&outcome);
                        observer.progress(id, Progress::Adapted(&outcome));
                    }
                    Step::Stop => return Ok(()),
                }
            })();
            // Answers still staged, and runners still in flight after an error, are
            // recorded.
            let flushed = driver.flush(observer);
            while driver.busy() {
                match rx.recv() {
                    Ok(done) => {
                        let _ = driver.record(done, observer);
                    }
                    Err(_) => break,
                }
            }
            result.and(flushed)
        })?;
        driver.finish()
    }
}

/// `f()`, with a panic turned into [`GoalError::Internal`] about `what`: a thread of
/// `goal serve` always sends its goal's outcome, so that the goal's planner slot is freed
/// and a stop is not left waiting for it.
fn contained<T>(what: &str, f: impl FnOnce() -> Result<T, GoalError>) -> Result<T, GoalError> {
    // Nothing the closure shares is left half-changed in memory by a panic: the goal's
    // state is its log, which a torn write leaves readable.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        Err(GoalError::Internal(format!(
            "{what} stopped: {}",
            panic_message(&*payload)
        )))
    })
}

/// The message a panic was raised with.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

/// Makes a planner (or reviewer) for one replan: `goal serve` runs replans in threads of
/// their own, each with its own agent.
pub type AgentFactory<'a> = &'a (dyn Fn() -> Box<dyn Agent + Send> + Sync);

/// What `goal serve` and `goal tick` work with.
pub struct Service<'a> {
    /// The runner of every goal.
    pub runner: &'a dyn Runner,
    /// The planner, to replan eligible goals; without one they are left eligible.
    pub planner: Option<AgentFactory<'a>>,
    /// The reviewer of every replan, when there is one.
    pub reviewer: Option<AgentFactory<'a>>,
    /// At most this many planner calls (replans) at once, over every goal.
    pub max_planner_calls: usize,
    /// How often every goal is looked at.
    pub interval: std::time::Duration,
    /// How long a stopping service waits for the runners in flight before it kills them
    /// (their attempts are then recorded as interrupted, and count).
    pub grace: std::time::Duration,
}

/// A goal `goal serve` parked: the fingerprint of its projection then, and the position of
/// its log it was read at. While nothing is appended after that position it is not read
/// again; else its fingerprint decides.
struct Quiescent {
    fingerprint: String,
    position: Option<Position>,
}

/// What a service run did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServiceReport {
    /// Passes over the store.
    pub ticks: u64,
    /// Attempts dispatched.
    pub dispatched: u32,
    /// Of those, succeeded.
    pub succeeded: u32,
    /// Of those, failed.
    pub failed: u32,
    /// Attempts whose runner was lost (a dead driver's, or one whose answer could not be
    /// recorded) recorded as interrupted.
    pub interrupted: u32,
    /// Replans run.
    pub replans: u32,
    /// Goals that could not be driven, with why (another process drives them, a damaged
    /// log, …), as of the last time each was looked at.
    pub skipped: BTreeMap<String, String>,
}

impl Goals<'_> {
    /// `goal serve`: passes over every goal of the store until `stop` is set; `goal tick`
    /// (`once`): one pass, then waits for what it started. Each goal that can act does one
    /// step a pass — dispatching its ready work, recording what its runners answered,
    /// replanning when eligible (in a thread of its own, at most
    /// `service.max_planner_calls` at once, so slow planners do not hold up dispatch); a
    /// goal found quiescent (awaiting review, attention, done, or eligible without a
    /// planner) is skipped until its projection's fingerprint changes. When `stop` is set,
    /// nothing new starts; runners and replans in flight are waited for and recorded.
    pub fn serve(
        &self,
        service: &Service<'_>,
        once: bool,
        stop: &std::sync::atomic::AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<ServiceReport, GoalError> {
        use std::sync::atomic::Ordering;
        let mut report = ServiceReport::default();
        let mut drivers: BTreeMap<String, Driver<'_>> = BTreeMap::new();
        let mut quiescent: BTreeMap<String, Quiescent> = BTreeMap::new();
        let mut planning: std::collections::BTreeSet<String> = Default::default();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<Done>();
        let (plan_tx, plan_rx) =
            std::sync::mpsc::channel::<(String, Result<Replanned, GoalError>)>();
        let (adapt_tx, adapt_rx) =
            std::sync::mpsc::channel::<(String, Result<crate::adapt::Adapted, GoalError>)>();
        std::thread::scope(|scope| -> Result<(), GoalError> {
            let mut first = true;
            let mut stopping_since: Option<std::time::Instant> = None;
            // The store could not be listed: the service stops now, its runners killed (not
            // waited for), and ends with this error.
            let mut fatal: Option<GoalError> = None;
            loop {
                let stopping = fatal.is_some() || stop.load(Ordering::SeqCst) || (once && !first);
                let abort_now = fatal.is_some()
                    || (stop.load(Ordering::SeqCst)
                        && stopping_since
                            .get_or_insert_with(std::time::Instant::now)
                            .elapsed()
                            >= service.grace);
                if abort_now {
                    for driver in drivers.values_mut().filter(|d| d.busy() && !d.aborted) {
                        driver.abort();
                    }
                }
                if !stopping {
                    report.ticks += 1;
                    let ids = match self.store.goals() {
                        Ok(ids) => ids,
                        Err(e) => {
                            fatal = Some(e.into());
                            continue;
                        }
                    };
                    for id in ids {
                        if planning.contains(&id) {
                            continue;
                        }
                        if let Some(seen) = quiescent.get(&id) {
                            // Nothing appended since it was parked: still quiescent, told by
                            // reading the log's last event only.
                            let unchanged = seen.position.as_ref().is_some_and(|position| {
                                matches!(
                                    self.store.events_since(&id, Some(position)),
                                    Ok(Some((tail, _))) if tail.is_empty()
                                )
                            });
                            if unchanged {
                                continue;
                            }
                            match self.show(&id) {
                                Ok(p) if p.fingerprint == seen.fingerprint => continue,
                                _ => {
                                    quiescent.remove(&id);
                                }
                            }
                        }
                        if !drivers.contains_key(&id) {
                            match Driver::new(self, &id, observer) {
                                Ok(driver) => {
                                    report.interrupted += driver.report.interrupted;
                                    report.skipped.remove(&id);
                                    drivers.insert(id.clone(), driver);
                                }
                                Err(e) => {
                                    report.skipped.insert(id.clone(), e.to_string());
                                    continue;
                                }
                            }
                        }
                        let Some(driver) = drivers.get_mut(&id) else {
                            continue;
                        };
                        let before = (driver.report.dispatched, driver.report.interrupted);
                        let step = match driver.step(scope, service.runner, &done_tx, observer) {
                            Ok(step) => step,
                            Err(e) => {
                                report.skipped.insert(id.clone(), e.to_string());
                                if !driver.busy() {
                                    drivers.remove(&id);
                                }
                                continue;
                            }
                        };
                        report.dispatched += driver.report.dispatched - before.0;
                        report.interrupted += driver.report.interrupted - before.1;
                        match step {
                            Step::Acted | Step::Wait => {}
                            Step::Replan => match service.planner {
                                Some(make) if planning.len() < service.max_planner_calls => {
                                    planning.insert(id.clone());
                                    report.replans += 1;
                                    let tx = plan_tx.clone();
                                    let reviewer = service.reviewer;
                                    let goal = id.clone();
                                    scope.spawn(move || {
                                        let outcome = contained("a replan", || {
                                            let mut planner = make();
                                            let mut reviewer = reviewer.map(|r| r());
                                            self.replan(
                                                &goal,
                                                &mut *planner,
                                                reviewer
                                                    .as_deref_mut()
                                                    .map(|r| r as &mut dyn Agent),
                                            )
                                        });
                                        let _ = tx.send((goal, outcome));
                                    });
                                }
                                // Waits for a free planner slot.
                                Some(_) => {}
                                None => {
                                    Self::park(self, &id, &mut quiescent, &mut drivers, true);
                                }
                            },
                            Step::Adapt(trigger) => match service.planner {
                                Some(make) if planning.len() < service.max_planner_calls => {
                                    planning.insert(id.clone());
                                    let tx = adapt_tx.clone();
                                    let goal = id.clone();
                                    scope.spawn(move || {
                                        let outcome = contained("an adaptation", || {
                                            let mut planner = make();
                                            self.adapt(&goal, &trigger, &mut *planner)
                                        });
                                        let _ = tx.send((goal, outcome));
                                    });
                                }
                                // No planner, or no free slot: the plan goes on as it is.
                                _ => {}
                            },
                            Step::Stop => Self::park(self, &id, &mut quiescent, &mut drivers, true),
                        }
                    }
                }
                first = false;
                let busy = drivers.values().any(Driver::busy) || !planning.is_empty();
                if stopping && !busy {
                    return fatal.map_or(Ok(()), Err);
                }
                // Wait for answers (a tick's worth, or until one comes).
                let wait = if busy {
                    std::time::Duration::from_millis(50)
                } else {
                    service.interval
                };
                let deadline = std::time::Instant::now() + wait;
                // The answers that come meanwhile, by goal: each goal's are recorded together
                // when the wait ends (one write, one fsync), before its next step.
                let mut answered: BTreeMap<String, Vec<Done>> = BTreeMap::new();
                loop {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    match done_rx.recv_timeout(left.min(std::time::Duration::from_millis(50))) {
                        Ok(done) => answered.entry(done.goal.clone()).or_default().push(done),
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                    }
                    while let Ok((goal, outcome)) = plan_rx.try_recv() {
                        planning.remove(&goal);
                        match outcome {
                            Ok(outcome) => {
                                if let Some(driver) = drivers.get_mut(&goal) {
                                    driver.replanned(&outcome);
                                }
                                observer.progress(&goal, Progress::Replanned(&outcome));
                                if matches!(outcome, Replanned::Failed { charged: false, .. }) {
                                    // The planner cannot be started: not again until the goal changes.
                                    Self::park(self, &goal, &mut quiescent, &mut drivers, false);
                                }
                            }
                            Err(e) => {
                                report.skipped.insert(goal.clone(), e.to_string());
                                Self::park(self, &goal, &mut quiescent, &mut drivers, false);
                            }
                        }
                    }
                    while let Ok((goal, outcome)) = adapt_rx.try_recv() {
                        planning.remove(&goal);
                        match outcome {
                            Ok(outcome) => {
                                if let Some(driver) = drivers.get_mut(&goal) {
                                    driver.adapted(&outcome);
                                }
                                observer.progress(&goal, Progress::Adapted(&outcome));
                            }
                            Err(e) => {
                                report.skipped.insert(goal.clone(), e.to_string());
                            }
                        }
                    }
                    if std::time::Instant::now() >= deadline || stop.load(Ordering::SeqCst) {
                        break;
                    }
                }
                for (goal, dones) in answered {
                    let Some(driver) = drivers.get_mut(&goal) else {
                        continue;
                    };
                    let (s, f) = (driver.report.succeeded, driver.report.failed);
                    let recorded = driver.record_all(dones, observer);
                    report.succeeded += driver.report.succeeded - s;
                    report.failed += driver.report.failed - f;
                    if let Err(e) = recorded {
                        // The attempts are recorded as interrupted at the goal's next step;
                        // the other goals go on.
                        report.skipped.insert(goal.clone(), e.to_string());
                        if !driver.busy() {
                            drivers.remove(&goal);
                        }
                    }
                }
            }
        })?;
        Ok(report)
    }

    /// Remembers goal `id` as quiescent and lets go of its run lock, unless its driver still
    /// has runners in flight. Quiescent at the fingerprint its driver's last step decided on
    /// (`stepped`), so that a change made since — an approval landing meanwhile — wakes it;
    /// else (after a replan's outcome) at its fingerprint now.
    fn park(
        &self,
        id: &str,
        quiescent: &mut BTreeMap<String, Quiescent>,
        drivers: &mut BTreeMap<String, Driver<'_>>,
        stepped: bool,
    ) {
        if drivers.get(id).is_some_and(Driver::busy) {
            return;
        }
        let seen = drivers
            .remove(id)
            .and_then(Driver::seen)
            .filter(|_| stepped);
        let seen = seen.or_else(|| self.show(id).ok().map(|p| (p.fingerprint, None)));
        if let Some((fingerprint, position)) = seen {
            quiescent.insert(
                id.to_owned(),
                Quiescent {
                    fingerprint,
                    position,
                },
            );
        }
    }
}
