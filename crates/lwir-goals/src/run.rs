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

    /// [`Goals::report`] on the held goal: decided on it brought up to date, and the event
    /// appended folded into it.
    fn report_held(
        &mut self,
        work: &str,
        report: &Report,
        run: Option<&str>,
    ) -> Result<lwir_repair::events::Event, GoalError> {
        for _ in 0..crate::goal::MAX_CONFLICTS {
            self.look()?;
            let Some(held) = self.held.as_mut() else {
                continue;
            };
            match self.goals.report_on(&held.loaded, work, report, run) {
                Ok(event) => {
                    if held.appended(&event).is_err() {
                        // Folded as the log will be read: the next look reads it whole.
                        self.held = None;
                    }
                    return Ok(event);
                }
                Err(GoalError::Store(StoreError::Conflict { .. })) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(crate::goal::busy(&self.id))
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
        let held = self.held.insert(held);
        if lost? {
            return Ok(Step::Acted);
        }
        if let Some(trigger) = self.ended.take()
            && self.goals.adaptation_due(&held.loaded, &trigger).is_none()
        {
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
        Ok(match status {
            Status::Succeeded
            | Status::Cancelled
            | Status::Exhausted
            | Status::AwaitingReview
            | Status::Attention => wait_or_stop(self.busy()),
            Status::Eligible if self.busy() => Step::Wait,
            Status::Eligible => Step::Replan,
            // Ready work starts now, also beside work that runs (not after the batch).
            Status::Ready | Status::Running if dispatchable => {
                if self.dispatch(scope, runner, done, observer)? {
                    Step::Acted
                } else {
                    Step::Wait
                }
            }
            Status::Ready | Status::Running => Step::Wait,
        })
    }

    /// Dispatches every item `goal next` gives; whether anything happened.
    fn dispatch<'scope, 'env>(
        &mut self,
        scope: &'scope std::thread::Scope<'scope, 'env>,
        runner: &'env dyn Runner,
        done: &Sender<Done>,
        observer: &mut dyn Observer,
    ) -> Result<bool, GoalError>
    where
        'g: 'env,
    {
        let (ready, unresolved) = match &self.held {
            Some(held) => self.goals.next_on(&held.loaded)?,
            None => self.goals.next(&self.id)?,
        };
        let mut acted = false;
        for u in unresolved {
            let message = format!("its input cannot be resolved: {}", u.error);
            let report = match u.code {
                Some(code) => Report::FailedWith {
                    code,
                    message: message.clone(),
                },
                None => Report::Failed(message.clone()),
            };
            if self.report_held(&u.id, &report, None).is_ok() {
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
        for d in ready {
            if self.inflight.contains_key(&d.id) {
                continue;
            }
            let lwir = match self.goals.templates.template(&d.version) {
                Ok(t) if t.version == d.version => t.lwir,
                Ok(_) | Err(TemplateError::Corrupt { .. }) => {
                    // Code that does not hash to its version never runs.
                    let message = format!(
                        "template `{}` ({}) no longer verifies in the registry; nothing was run",
                        d.template, d.version
                    );
                    self.report_held(
                        &d.id,
                        &Report::FailedWith {
                            code: Code::TemplateDigestMismatch,
                            message: message.clone(),
                        },
                        None,
                    )?;
                    self.report.failed += 1;
                    observer.progress(
                        &self.id,
                        Progress::Finished {
                            work: &d.id,
                            key: &d.key,
                            attempt: d.attempt,
                            succeeded: false,
                            error: Some(&message),
                            run: None,
                        },
                    );
                    acted = true;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let event = match self.report_held(&d.id, &Report::Dispatched, None) {
                Ok(event) => event,
                // Someone else started it, or max_parallel filled meanwhile.
                Err(GoalError::Refused(_)) => continue,
                Err(e) => return Err(e),
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
        Ok(acted)
    }

    /// Records what a runner answered for one of this driver's attempts.
    pub fn record(&mut self, done: Done, observer: &mut dyn Observer) -> Result<(), GoalError> {
        let flight = self.inflight.remove(&done.work);
        if self.aborted {
            self.goals.interrupt(
                &self.id,
                &done.work,
                done.attempt,
                "its runner was stopped: `goal serve` was shutting down",
            )?;
            self.report.interrupted += 1;
            observer.progress(
                &self.id,
                Progress::Interrupted {
                    work: &done.work,
                    attempt: done.attempt,
                },
            );
            return Ok(());
        }
        let mut run = None;
        let report = match done.result {
            Err(f) => Report::FailedWith {
                code: f.code,
                message: f.message,
            },
            Ok(bytes) => match runner::read_answer(&bytes) {
                Err(f) => Report::FailedWith {
                    code: f.code,
                    message: f.message,
                },
                Ok((answer, named)) => {
                    run = named;
                    match answer {
                        Answer::Failed(error) => Report::Failed(error),
                        Answer::Succeeded(output) => {
                            let template = flight.as_ref().map_or("", |f| f.template.as_str());
                            match self.goals.check_output(
                                &self.id,
                                &self.catalog,
                                template,
                                &output,
                            ) {
                                Ok(()) => Report::Succeeded(output),
                                Err(GoalError::Refused(message)) => Report::FailedWith {
                                    code: Code::WorkOutputMismatch,
                                    message,
                                },
                                Err(e) => return Err(e),
                            }
                        }
                    }
                }
            },
        };
        let (succeeded, error) = match &report {
            Report::Succeeded(_) => (true, None),
            Report::Failed(e) | Report::FailedWith { message: e, .. } => (false, Some(e.clone())),
            Report::Started | Report::Dispatched => (false, None),
        };
        match self.report_held(&done.work, &report, run.as_deref()) {
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
            Err(e) => return Err(e),
        }
        Ok(())
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
            let data = GoalEvent::Failed(events::Failed {
                work: work.to_owned(),
                attempt,
                error: detail.to_owned(),
                interrupted: true,
                code: None,
                run: None,
            })
            .data();
            match self
                .store
                .append(id, "work.failed", data, loaded.fold.last_seq)
            {
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
            let result: Result<(), GoalError> = (|| loop {
                while let Ok(done) = rx.try_recv() {
                    driver.record(done, observer)?;
                }
                match driver.step(scope, runner, &tx, observer)? {
                    Step::Acted => {}
                    Step::Wait if driver.busy() => {
                        if let Ok(done) = rx.recv() {
                            driver.record(done, observer)?;
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
            // Runners still in flight after an error are waited for and recorded.
            while driver.busy() {
                match rx.recv() {
                    Ok(done) => {
                        let _ = driver.record(done, observer);
                    }
                    Err(_) => break,
                }
            }
            result
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
                loop {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    match done_rx.recv_timeout(left.min(std::time::Duration::from_millis(50))) {
                        Ok(done) => {
                            let goal = done.goal.clone();
                            if let Some(driver) = drivers.get_mut(&goal) {
                                let (s, f) = (driver.report.succeeded, driver.report.failed);
                                let recorded = driver.record(done, observer);
                                report.succeeded += driver.report.succeeded - s;
                                report.failed += driver.report.failed - f;
                                if let Err(e) = recorded {
                                    // The attempt is recorded as interrupted at the
                                    // goal's next step; the other goals go on.
                                    report.skipped.insert(goal.clone(), e.to_string());
                                    if !driver.busy() {
                                        drivers.remove(&goal);
                                    }
                                }
                            }
                        }
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
