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
use crate::goal::{GoalError, Goals, Replanned, Report};
use crate::projection::{AttemptState, Status};
use crate::runner::{self, Answer, Runner};
use crate::store::{RunGuard, StoreError};

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
    },
    /// A replan ended.
    Replanned(&'a Replanned),
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
}

/// One goal being driven.
pub struct Driver<'g> {
    goals: &'g Goals<'g>,
    id: String,
    _guard: RunGuard,
    /// Attempts in flight: work id → attempt.
    inflight: BTreeMap<String, u32>,
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
            report: RunReport {
                goal: id.to_owned(),
                status: Status::Running,
                reason: String::new(),
                dispatched: 0,
                succeeded: 0,
                failed: 0,
                interrupted: 0,
                replans: Vec::new(),
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
        let loaded = self.goals.load(&self.id)?;
        for item in &loaded.fold.items {
            for a in &item.attempts {
                if a.state != AttemptState::Running || !a.dispatched {
                    continue;
                }
                let mark = format!("{}/{}/{}", self.id, item.spec.work, a.n);
                lwir_repair::process::kill_marked(runner::ATTEMPT_VAR, &mark);
                self.goals.interrupt(
                    &self.id,
                    &item.spec.work,
                    a.n,
                    "its runner was lost: the `goal run` or `goal serve` that dispatched it stopped",
                )?;
                self.report.interrupted += 1;
                observer.progress(
                    &self.id,
                    Progress::Interrupted {
                        work: &item.spec.work,
                        attempt: a.n,
                    },
                );
            }
        }
        Ok(())
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
        let loaded = self.goals.load(&self.id)?;
        let projection = self.goals.project(&loaded);
        self.report.status = projection.status;
        self.report.reason = projection.reason.clone();
        let wait_or_stop = |busy: bool| if busy { Step::Wait } else { Step::Stop };
        Ok(match projection.status {
            Status::Succeeded
            | Status::Cancelled
            | Status::Exhausted
            | Status::AwaitingReview
            | Status::Attention => wait_or_stop(self.busy()),
            Status::Running => Step::Wait,
            Status::Eligible if self.busy() => Step::Wait,
            Status::Eligible => Step::Replan,
            Status::Ready => {
                if self.dispatch(scope, runner, done, observer)? {
                    Step::Acted
                } else {
                    Step::Wait
                }
            }
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
        let (ready, unresolved) = self.goals.next(&self.id)?;
        let mut acted = false;
        for u in unresolved {
            let message = format!("its input cannot be resolved: {}", u.error);
            if self
                .goals
                .report(&self.id, &u.id, &Report::Failed(message.clone()))
                .is_ok()
            {
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
                    self.goals.report(
                        &self.id,
                        &d.id,
                        &Report::FailedWith {
                            code: Code::TemplateDigestMismatch,
                            message: message.clone(),
                        },
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
                        },
                    );
                    acted = true;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let event = match self.goals.report(&self.id, &d.id, &Report::Dispatched) {
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
                let result = runner.run(&bytes, &env);
                let _ = done.send(Done {
                    goal,
                    work,
                    key,
                    attempt,
                    result,
                });
            });
            self.inflight.insert(d.id.clone(), attempt);
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
        self.inflight.remove(&done.work);
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
                Ok(Answer::Failed(error)) => Report::Failed(error),
                Ok(Answer::Succeeded(output)) => {
                    let loaded = self.goals.load(&self.id)?;
                    let template = loaded
                        .fold
                        .item(&done.work)
                        .map(|i| i.spec.template.clone())
                        .unwrap_or_default();
                    match self.goals.check_output(&loaded, &template, &output) {
                        Ok(()) => Report::Succeeded(output),
                        Err(GoalError::Refused(message)) => Report::FailedWith {
                            code: Code::WorkOutputMismatch,
                            message,
                        },
                        Err(e) => return Err(e),
                    }
                }
            },
        };
        let (succeeded, error) = match &report {
            Report::Succeeded(_) => (true, None),
            Report::Failed(e) | Report::FailedWith { message: e, .. } => (false, Some(e.clone())),
            Report::Started | Report::Dispatched => (false, None),
        };
        match self.goals.report(&self.id, &done.work, &report) {
            Ok(_) => {
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

    /// The report so far, with the goal's status now.
    pub fn finish(mut self) -> Result<RunReport, GoalError> {
        let projection = self.goals.show(&self.id)?;
        self.report.status = projection.status;
        self.report.reason = projection.reason;
        Ok(self.report)
    }
}

/// How long a driver with nothing in flight waits before it looks at the goal again.
pub const POLL: std::time::Duration = std::time::Duration::from_millis(200);

impl Goals<'_> {
    /// Records attempt `attempt` of `work` as interrupted (it counts).
    pub fn interrupt(
        &self,
        id: &str,
        work: &str,
        attempt: u32,
        detail: &str,
    ) -> Result<(), GoalError> {
        loop {
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
                    Step::Wait => std::thread::sleep(POLL),
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
