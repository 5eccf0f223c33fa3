//! The projection: a goal's state computed from its events when it is read, never stored.
//!
//! [`Fold`] replays the log into plain state (every item of every generation, every attempt,
//! every plan); [`project`] turns it, with the frozen goal file, the time and which plans
//! are in progress, into the [`Projection`] that `goal show` prints. Its field and status
//! names are a contract (`crates/lwir-spec/README.md` §9.5).

use std::collections::HashMap;

use lwir_repair::events::Event;
use serde::{Deserialize, Serialize};

use crate::events::GoalEvent;
use crate::file::GoalFile;
pub use crate::statuses::Statuses;

/// One attempt of a work item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// 1 for the first.
    pub n: u32,
    /// Where it stands.
    pub state: AttemptState,
    /// Whether `goal run`/`goal serve` dispatched it (and so watches it).
    pub dispatched: bool,
    /// The generation when it was dispatched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u32>,
    /// The run that was this attempt, when its runner named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// An attempt's state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum AttemptState {
    /// Started, not ended.
    Running,
    /// Succeeded with this output.
    Succeeded(serde_json::Value),
    /// Failed with this error (interrupted: cut short).
    Failed {
        /// The error.
        error: String,
        /// Whether it was an interruption.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        interrupted: bool,
        /// The code of a failure lwirc saw itself.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
}

/// One materialized work item and its attempts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// What `work.materialized` said.
    pub spec: crate::events::Materialized,
    /// Its attempts, in order.
    pub attempts: Vec<Attempt>,
}

impl Item {
    /// Its output, when an attempt succeeded.
    pub fn output(&self) -> Option<&serde_json::Value> {
        self.attempts.iter().find_map(|a| match &a.state {
            AttemptState::Succeeded(output) => Some(output),
            _ => None,
        })
    }

    /// The attempt in flight.
    pub fn running(&self) -> Option<u32> {
        self.attempts
            .iter()
            .find(|a| a.state == AttemptState::Running)
            .map(|a| a.n)
    }

    /// The error of its last failed attempt.
    pub fn last_error(&self) -> Option<&str> {
        self.attempts.iter().rev().find_map(|a| match &a.state {
            AttemptState::Failed { error, .. } => Some(error.as_str()),
            _ => None,
        })
    }
}

/// Where a plan stands, as its events say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanState {
    /// Requested; its planner has not answered with a valid proposal yet.
    Requested,
    /// A valid proposal, not applied or rejected.
    Proposed,
    /// Applied: it advanced the active root.
    Applied,
    /// Rejected in review.
    Rejected,
    /// Ended in attention (the planner's or the reviewer's).
    Attention,
    /// Its process went away before it ended.
    Interrupted,
    /// No plan came of it: the planner failed or its proposal was refused.
    Failed,
    /// An adaptation whose planner kept the plan as it is.
    Kept,
}

/// A review receipt: the last verdict on a plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    /// `passed`, `rejected` or `attention`.
    pub verdict: String,
    /// `reviewer` (a process) or `person`.
    pub reviewer: String,
    /// Who.
    pub by: String,
    /// The round reviewed.
    pub round: u32,
    /// The feedback or rationale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

/// One plan and what became of it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// `p0` (generation 0), `p1`, ….
    pub id: String,
    /// `initial`, `replan` or `adapt`.
    pub kind: &'static str,
    /// Where it stands.
    pub state: PlanState,
    /// Whether it counts against `max_replans`.
    pub charged: bool,
    /// The generation it started from (a replan), or created (`p0`).
    pub generation: u32,
    /// When it was requested.
    pub requested_at: String,
    /// The latest valid proposal: its items and root.
    pub proposal: Option<crate::events::Proposed>,
    /// The review receipt.
    pub receipt: Option<Receipt>,
    /// Its own reason: the rationale, the feedback, the failure.
    pub outcome: Option<String>,
    /// The failure's code, for a failed plan.
    pub code: Option<String>,
    /// Who asked for another replan after its attention.
    pub retried_by: Option<String>,
    /// The work ids it materialized so far.
    pub materialized: Vec<String>,
}

impl<'de> Deserialize<'de> for Plan {
    /// A plan read back (from a checkpoint): its kind one of the three this lwirc writes.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Read {
            id: String,
            kind: String,
            state: PlanState,
            charged: bool,
            generation: u32,
            requested_at: String,
            proposal: Option<crate::events::Proposed>,
            receipt: Option<Receipt>,
            outcome: Option<String>,
            code: Option<String>,
            retried_by: Option<String>,
            materialized: Vec<String>,
        }
        let r = Read::deserialize(d)?;
        let kind = match r.kind.as_str() {
            "initial" => "initial",
            "replan" => "replan",
            "adapt" => "adapt",
            other => {
                return Err(serde::de::Error::custom(format!("no plan kind `{other}`")));
            }
        };
        Ok(Plan {
            id: r.id,
            kind,
            state: r.state,
            charged: r.charged,
            generation: r.generation,
            requested_at: r.requested_at,
            proposal: r.proposal,
            receipt: r.receipt,
            outcome: r.outcome,
            code: r.code,
            retried_by: r.retried_by,
            materialized: r.materialized,
        })
    }
}

/// A goal's events, replayed.
///
/// It serialises (a checkpoint keeps it, [`crate::checkpoint`]); its index is not kept but
/// rebuilt ([`Fold::reindexed`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fold {
    /// `goal.created`, when the log has it.
    pub created: Option<crate::events::Created>,
    /// When the goal was created (the event's time).
    pub created_at: String,
    /// Every item of every generation, in materialization order.
    pub items: Vec<Item>,
    #[serde(skip)]
    index: HashMap<String, usize>,
    /// Every plan, in order.
    pub plans: Vec<Plan>,
    /// The active generation, once generation 0 is applied.
    pub generation: Option<u32>,
    /// The active root's work id.
    pub active_root: Option<String>,
    /// Attempts over every generation.
    pub attempts_used: u32,
    /// `goal.cancelled`, with its time.
    pub cancelled: Option<(crate::events::Cancelled, String)>,
    /// The seq of the last event.
    pub last_seq: u64,
    /// Pending items revisions left out.
    pub obsolete: std::collections::BTreeSet<String>,
    /// The `catalog` member of the first event's data (`goal.created`'s frozen catalog).
    #[serde(default)]
    catalog: Option<serde_json::Value>,
    /// Every item's status, once kept ([`Fold::keep_statuses`]): brought up to date by each
    /// event folded after that. Not part of what the fold is (never stored, never compared).
    #[serde(skip)]
    live: Live,
}

/// The statuses a fold keeps; equal to any other (a cache of what the fold says).
#[derive(Clone, Default)]
struct Live(Option<Box<Statuses>>);

impl PartialEq for Live {
    fn eq(&self, _: &Live) -> bool {
        true
    }
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "kept" } else { "not kept" })
    }
}

impl Fold {
    /// Replays `events`; an event that contradicts the ones before it is an error naming it.
    pub fn of(events: &[Event]) -> Result<Fold, String> {
        let mut fold = Fold::default();
        for event in events {
            fold.apply_event(event)?;
        }
        Ok(fold)
    }

    /// Replays one more event, the next after [`Fold::last_seq`]; an event that contradicts
    /// the ones before it is an error naming it (the fold is then not to be used further).
    pub fn apply_event(&mut self, event: &Event) -> Result<(), String> {
        let parsed = GoalEvent::parse(&event.event, &event.data)
            .map_err(|e| format!("event {}: {e}", event.seq))?;
        if self.last_seq == 0 {
            self.catalog = event.data.get("catalog").cloned();
        }
        self.apply(parsed, &event.time)
            .map_err(|e| format!("event {} (`{}`): {e}", event.seq, event.event))?;
        self.last_seq = event.seq;
        Ok(())
    }

    /// The `catalog` member of the first event's data, when it has one: the goal's catalog
    /// as `goal.created` froze it.
    pub fn frozen_catalog(&self) -> Option<&serde_json::Value> {
        self.catalog.as_ref()
    }

    /// The fold with its index of items rebuilt (after it was read back from a checkpoint);
    /// `None` when two items have the same work id, which no replay produces.
    pub fn reindexed(mut self) -> Option<Fold> {
        self.index = HashMap::with_capacity(self.items.len());
        for (i, item) in self.items.iter().enumerate() {
            if self.index.insert(item.spec.work.clone(), i).is_some() {
                return None;
            }
        }
        Some(self)
    }

    /// The item `id`.
    pub fn item(&self, id: &str) -> Option<&Item> {
        self.index.get(id).map(|&i| &self.items[i])
    }

    /// Where item `id` is in [`Fold::items`].
    pub fn position(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// Where the active root is in [`Fold::items`].
    pub fn active_root_index(&self) -> Option<usize> {
        self.active_root
            .as_ref()
            .and_then(|r| self.index.get(r).copied())
    }

    /// The goal id `goal.created` gave (`GOAL` before it).
    pub fn goal_id(&self) -> &str {
        self.created.as_ref().map_or("GOAL", |c| c.goal.as_str())
    }

    fn root_ref(&self, i: usize) -> RootRef {
        RootRef {
            id: self.items[i].spec.work.clone(),
            key: self.items[i].spec.key.clone(),
        }
    }

    /// Every item's status now: the ones this fold keeps when they were computed for the
    /// same budgets ([`Fold::keep_statuses`]), else computed from the whole fold.
    pub fn statuses(&self, file: &GoalFile, now_unix_s: u64) -> std::borrow::Cow<'_, Statuses> {
        let budget_left = budget_left(self, file, now_unix_s);
        match &self.live.0 {
            Some(kept) if kept.budget_left() == budget_left => std::borrow::Cow::Borrowed(kept),
            _ => std::borrow::Cow::Owned(Statuses::of(self, file, budget_left)),
        }
    }

    /// Keeps every item's status from now on, so that [`Fold::statuses`] costs nothing and
    /// each event folded costs what it changes: computed now unless kept already for the
    /// same budgets. What a driver, which reads the goal again and again, does after each
    /// look. A fold read back from a checkpoint, or an event that changes the plan
    /// (materialized items, an applied plan, a cancellation), leaves them to be computed
    /// again.
    pub fn keep_statuses(&mut self, file: &GoalFile, now_unix_s: u64) {
        let budget_left = budget_left(self, file, now_unix_s);
        if self
            .live
            .0
            .as_ref()
            .is_none_or(|kept| kept.budget_left() != budget_left)
        {
            self.live.0 = Some(Box::new(Statuses::of(self, file, budget_left)));
        }
    }

    /// Whether [`Fold::keep_statuses`] keeps them now (for tests of the kept path).
    pub fn keeps_statuses(&self) -> bool {
        self.live.0.is_some()
    }

    /// The items with an attempt in flight, in materialization order.
    pub fn running_items(&self) -> Vec<usize> {
        match &self.live.0 {
            Some(kept) => kept.running().collect(),
            None => (0..self.items.len())
                .filter(|&i| self.items[i].running().is_some())
                .collect(),
        }
    }

    /// Brings the kept statuses up to date with a change to the attempts of item `id`.
    fn touched(&mut self, id: &str) {
        if let (Some(mut kept), Some(&i)) = (self.live.0.take(), self.index.get(id)) {
            kept.touch(self, i);
            self.live.0 = Some(kept);
        }
    }

    /// The plan `id`.
    pub fn plan(&self, id: &str) -> Option<&Plan> {
        self.plans.iter().find(|p| p.id == id)
    }

    fn plan_mut(&mut self, id: &str) -> Result<&mut Plan, String> {
        self.plans
            .iter_mut()
            .find(|p| p.id == id)
            .ok_or_else(|| format!("plan `{id}` was never requested"))
    }

    fn item_mut(&mut self, id: &str) -> Result<&mut Item, String> {
        match self.index.get(id) {
            Some(&i) => Ok(&mut self.items[i]),
            None => Err(format!("work `{id}` was never materialized")),
        }
    }

    fn apply(&mut self, event: GoalEvent, time: &str) -> Result<(), String> {
        let touched = match &event {
            GoalEvent::Started(e) => Some(e.work.clone()),
            GoalEvent::Succeeded(e) => Some(e.work.clone()),
            GoalEvent::Failed(e) => Some(e.work.clone()),
            // What changes the plan or the budgets of every item: computed again.
            GoalEvent::Materialized(_) | GoalEvent::Applied(_) | GoalEvent::Cancelled(_) => {
                self.live.0 = None;
                None
            }
            _ => None,
        };
        self.apply_unkept(event, time)?;
        if let Some(id) = touched {
            self.touched(&id);
        }
        Ok(())
    }

    fn apply_unkept(&mut self, event: GoalEvent, time: &str) -> Result<(), String> {
        match event {
            GoalEvent::Created(created) => {
                if self.created.is_some() {
                    return Err("the goal was created twice".into());
                }
                self.created = Some(created);
                self.created_at = time.to_owned();
            }
            GoalEvent::Materialized(spec) => {
                if let Some(&i) = self.index.get(&spec.work) {
                    if self.items[i].spec != spec {
                        return Err(format!(
                            "work `{}` materialized twice, differently",
                            spec.work
                        ));
                    }
                    return Ok(());
                }
                if spec.plan == "p0" && self.plan("p0").is_none() {
                    self.plans.push(Plan {
                        id: "p0".into(),
                        kind: "initial",
                        state: PlanState::Proposed,
                        charged: false,
                        generation: 0,
                        requested_at: time.to_owned(),
                        proposal: None,
                        receipt: None,
                        outcome: None,
                        code: None,
                        retried_by: None,
                        materialized: Vec::new(),
                    });
                }
                let id = spec.work.clone();
                self.plan_mut(&spec.plan)?.materialized.push(id.clone());
                self.index.insert(id, self.items.len());
                self.items.push(Item {
                    spec,
                    attempts: Vec::new(),
                });
            }
            GoalEvent::Started(e) => {
                let item = self.item_mut(&e.work)?;
                item.attempts.push(Attempt {
                    n: e.attempt,
                    state: AttemptState::Running,
                    dispatched: e.dispatched,
                    generation: e.generation,
                    run: None,
                });
                self.attempts_used += 1;
            }
            GoalEvent::Succeeded(e) => {
                self.end(&e.work, e.attempt, AttemptState::Succeeded(e.output), e.run)?
            }
            GoalEvent::Failed(e) => self.end(
                &e.work,
                e.attempt,
                AttemptState::Failed {
                    error: e.error,
                    interrupted: e.interrupted,
                    code: e.code,
                },
                e.run,
            )?,
            GoalEvent::Requested(e) => {
                if self.plan(&e.plan).is_some() {
                    return Err(format!("plan `{}` requested twice", e.plan));
                }
                self.plans.push(Plan {
                    id: e.plan,
                    kind: if e.kind == "adapt" { "adapt" } else { "replan" },
                    state: PlanState::Requested,
                    charged: true,
                    generation: e.generation,
                    requested_at: time.to_owned(),
                    proposal: None,
                    receipt: None,
                    outcome: None,
                    code: None,
                    retried_by: None,
                    materialized: Vec::new(),
                });
            }
            GoalEvent::Proposed(e) => {
                let plan = self.plan_mut(&e.plan)?;
                plan.state = PlanState::Proposed;
                plan.proposal = Some(e);
            }
            GoalEvent::Reviewed(e) => {
                let plan = self.plan_mut(&e.plan)?;
                plan.receipt = Some(Receipt {
                    verdict: e.verdict,
                    reviewer: e.reviewer,
                    by: e.by,
                    round: e.round,
                    feedback: e.feedback,
                });
            }
            GoalEvent::Rejected(e) => {
                let plan = self.plan_mut(&e.plan)?;
                plan.state = PlanState::Rejected;
                let round = plan.proposal.as_ref().map_or(0, |p| p.round);
                // A rejection is a review verdict, whoever gives it.
                if plan.receipt.as_ref().is_none_or(|r| r.verdict == "passed") {
                    plan.receipt = Some(Receipt {
                        verdict: "rejected".into(),
                        reviewer: "person".into(),
                        by: e.by.clone(),
                        round,
                        feedback: Some(e.feedback.clone()),
                    });
                }
                plan.outcome = Some(format!("rejected by {}: {}", e.by, e.feedback));
            }
            GoalEvent::Applied(e) => {
                let plan = self.plan_mut(&e.plan)?;
                plan.state = PlanState::Applied;
                plan.outcome = Some(format!(
                    "applied by {} as generation {}",
                    e.by, e.generation
                ));
                if self.item(&e.root).is_none() {
                    return Err(format!("its root `{}` was never materialized", e.root));
                }
                self.generation = Some(e.generation);
                self.active_root = Some(e.root);
                self.obsolete.extend(e.obsoleted);
            }
            GoalEvent::Attention(e) => {
                let plan = self.plan_mut(&e.plan)?;
                plan.state = PlanState::Attention;
                plan.outcome = Some(match e.from.as_str() {
                    "reviewer" => format!("its reviewer asked for attention: {}", e.rationale),
                    _ => format!("the planner asked for attention: {}", e.rationale),
                });
            }
            GoalEvent::Interrupted(e) => {
                let plan = self.plan_mut(&e.plan)?;
                plan.state = PlanState::Interrupted;
                plan.outcome = Some(format!("interrupted: {}", e.detail));
            }
            GoalEvent::PlanFailed(e) => {
                let plan = self.plan_mut(&e.plan)?;
                plan.state = PlanState::Failed;
                plan.charged = e.charged;
                plan.code = Some(e.code.clone());
                plan.outcome = Some(e.message);
            }
            GoalEvent::Retry(e) => {
                self.plan_mut(&e.plan)?.retried_by = Some(e.by);
            }
            GoalEvent::Cancelled(e) => self.cancelled = Some((e, time.to_owned())),
            GoalEvent::Kept(e) => {
                let plan = self.plan_mut(&e.plan)?;
                plan.state = PlanState::Kept;
                plan.outcome = Some("the planner kept the plan as it is".into());
            }
            GoalEvent::Other(..) => {}
        }
        Ok(())
    }

    fn end(
        &mut self,
        work: &str,
        attempt: u32,
        state: AttemptState,
        run: Option<String>,
    ) -> Result<(), String> {
        let item = self.item_mut(work)?;
        match item.attempts.iter_mut().find(|a| a.n == attempt) {
            Some(a) if a.state == AttemptState::Running => {
                a.state = state;
                a.run = run;
            }
            Some(_) => return Err(format!("attempt {attempt} of `{work}` ended twice")),
            None => {
                // Reported without a start: the attempt begins and ends here.
                item.attempts.push(Attempt {
                    n: attempt,
                    state,
                    dispatched: false,
                    generation: None,
                    run,
                });
                self.attempts_used += 1;
            }
        }
        Ok(())
    }

    /// The active generation's closure: the root and everything it depends on, in
    /// materialization order.
    pub fn active(&self) -> Vec<usize> {
        let Some(root) = self.active_root.as_ref().and_then(|r| self.index.get(r)) else {
            return Vec::new();
        };
        let mut seen = vec![false; self.items.len()];
        let mut stack = vec![*root];
        while let Some(i) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            for dep in &self.items[i].spec.after {
                if let Some(&j) = self.index.get(dep) {
                    stack.push(j);
                }
            }
        }
        (0..self.items.len()).filter(|&i| seen[i]).collect()
    }
}

/// A goal's status (`crates/lwir-spec/README.md` §9.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Work is running, or a replan is in progress.
    Running,
    /// Work can be dispatched (`goal next`).
    Ready,
    /// Nothing can run and the root has not succeeded: a replan may be asked for.
    Eligible,
    /// A valid proposal waits for a person (`goal approve` / `goal reject`).
    AwaitingReview,
    /// The latest replan ended in attention; `goal retry` asks for another.
    Attention,
    /// The active root succeeded.
    Succeeded,
    /// Nothing can run and no replan is left.
    Exhausted,
    /// Stopped for good by `goal cancel`.
    Cancelled,
}

impl Status {
    /// Its name, as in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Ready => "ready",
            Status::Eligible => "eligible",
            Status::AwaitingReview => "awaiting-review",
            Status::Attention => "attention",
            Status::Succeeded => "succeeded",
            Status::Exhausted => "exhausted",
            Status::Cancelled => "cancelled",
        }
    }
}

/// A work item's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkStatus {
    /// Waiting for its dependencies.
    Pending,
    /// Can be dispatched.
    Ready,
    /// An attempt is in flight.
    Running,
    /// An attempt succeeded.
    Succeeded,
    /// No attempt is left (its template's ceiling, or the goal's budget), and none succeeded.
    Failed,
    /// A dependency failed for good.
    Blocked,
    /// Not in the active generation.
    Superseded,
    /// A pending item a revision of the plan left out.
    Obsolete,
}

/// `{id, key}` of a root.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RootRef {
    /// The work id.
    pub id: String,
    /// Its key.
    pub key: String,
}

/// A work item in the projection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkView {
    /// The work id.
    pub id: String,
    /// Its key.
    pub key: String,
    /// Its template's name.
    pub template: String,
    /// The template's version.
    pub version: String,
    /// The plan that materialized it.
    pub plan: String,
    /// The generation of that plan.
    pub generation: u32,
    /// Its status.
    pub status: WorkStatus,
    /// Attempts taken.
    pub attempts: u32,
    /// Its template's ceiling.
    pub max_attempts: u32,
    /// The work ids it depends on.
    pub after: Vec<String>,
    /// Each attempt's error, in order (interrupted ones say so).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// The runs its attempts were, in order, where the runner named them (lwirc's built-in
    /// runner, `goal run --bindings`, does).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<AttemptRun>,
}

/// An attempt and the run it was.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AttemptRun {
    /// The attempt, 1 for the first.
    pub attempt: u32,
    /// The run id (`lwirc runs show RUN`).
    pub run: String,
}

/// `{used, max}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Used {
    /// Used.
    pub used: u32,
    /// Allowed.
    pub max: u32,
}

/// A plan in the projection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanView {
    /// Its id.
    pub id: String,
    /// `initial` or `replan`.
    pub kind: &'static str,
    /// `requested`, `awaiting-review`, `approved`, `applied`, `rejected`, `attention`,
    /// `interrupted`, `failed`, `in-progress`.
    pub status: &'static str,
    /// Whether it counts against `max_replans`.
    pub charged: bool,
    /// The generation it started from (a replan) or created (`p0`).
    pub generation: u32,
    /// When it was requested.
    pub requested_at: String,
    /// The keys of its proposal, root last-named in `root`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<String>,
    /// The proposal's root key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// Its review receipt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Receipt>,
    /// Its own reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who asked for another replan after its attention.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retried_by: Option<String>,
}

/// How consumed replans ended, when any ended without a proposal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Consumption {
    /// Replans whose plan has a review receipt that is not `passed`.
    pub reviewer_rejection: u32,
    /// Charged replans without a receipt that ended in attention, interruption, failure or
    /// a retry request.
    pub planner_no_proposal: u32,
}

/// A generation: the plan that made it and its root.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GenerationView {
    /// Its number.
    pub generation: u32,
    /// The plan that created it.
    pub plan: String,
    /// Its root.
    pub root: RootRef,
}

/// Who cancelled the goal, and when.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CancelView {
    /// Who.
    pub by: String,
    /// When.
    pub at: String,
    /// Why, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A goal as `goal show --format json` prints it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Projection {
    /// The goal id.
    pub goal: String,
    /// The goal's name.
    pub name: String,
    /// Its objective.
    pub objective: String,
    /// Its status.
    pub status: Status,
    /// Whether ready work may be dispatched now: the goal is `ready`, or `running` only
    /// because work items run while others are ready (no replan in progress, no plan
    /// waiting for review). Not in the JSON: `status` says what the goal is.
    #[serde(skip)]
    pub dispatchable: bool,
    /// Why it has that status, and what to do next.
    pub reason: String,
    /// The active generation.
    pub generation: u32,
    /// The active root.
    pub active_root: Option<RootRef>,
    /// The active generation's items.
    pub work: Vec<WorkView>,
    /// Every generation's item ids.
    pub governed_work_ids: Vec<String>,
    /// Every generation's items (those not in the active generation are `superseded`).
    pub governed_work: Vec<WorkView>,
    /// Every generation.
    pub generations: Vec<GenerationView>,
    /// Work attempts over every generation.
    pub attempts: Used,
    /// Charged replans.
    pub replans: Used,
    /// Charged adaptations (revisions of the remaining plan by `goal run`).
    pub adaptations: Used,
    /// Items planned by applied replans.
    pub planned_items: Used,
    /// Every plan, generation 0's first.
    pub plans: Vec<PlanView>,
    /// How consumed replans ended; present only when one ended without a proposal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replan_consumption: Option<Consumption>,
    /// Who cancelled the goal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<CancelView>,
    /// When it was created.
    pub created_at: String,
    /// The seq of the last event the projection read.
    pub seq: u64,
    /// Changes whenever anything a scheduler would act on changes.
    pub fingerprint: String,
}

/// What the projection needs besides the events.
pub struct Inputs<'a> {
    /// The frozen goal file.
    pub file: &'a GoalFile,
    /// Now, in seconds since the Unix epoch.
    pub now_unix_s: u64,
    /// Whether a plan's replan is still running (its log is held).
    pub in_progress: &'a dyn Fn(&str) -> bool,
}

/// The projection of `fold`.
pub fn project(fold: &Fold, inputs: &Inputs<'_>) -> Projection {
    let mut projection = project_unsealed(fold, inputs);
    projection.seal();
    projection
}

impl Projection {
    /// Computes its fingerprint (of a projection [`project_unsealed`] made).
    pub fn seal(&mut self) {
        self.fingerprint = fingerprint(self);
    }

    /// The text `serde_json::to_string_pretty` makes of it (what `goal show --format json`
    /// prints), made faster: while one generation governs, `governed_work` is `work`, and
    /// the text of its views is written once and copied.
    pub fn to_string_pretty(&mut self) -> String {
        let whole = |p: &Projection| serde_json::to_string_pretty(p).unwrap_or_default();
        if self.work.is_empty() || !self.governed_is_work() {
            return whole(self);
        }
        let governed = std::mem::take(&mut self.governed_work);
        let text = whole(self);
        self.governed_work = governed;
        // Both are members of the top-level object: the only lines indented by two spaces
        // that start with their keys (a string holds no raw line break, and a quote in it
        // is escaped), and `work`'s array ends at the first line that is `  ]` after it.
        const WORK: &str = "\n  \"work\": [";
        const GOVERNED: &str = "\n  \"governed_work\": []";
        let copied = text.find(WORK).and_then(|at| {
            let from = at + WORK.len() - 1;
            let end = from + text[from..].find("\n  ]")? + "\n  ]".len();
            let place = text[end..].find(GOVERNED)? + end + GOVERNED.len() - 2;
            Some((from..end, place))
        });
        match copied {
            Some((work, place)) => {
                let mut out = String::with_capacity(text.len() + work.len());
                out.push_str(&text[..place]);
                out.push_str(&text[work]);
                out.push_str(&text[place + 2..]);
                out
            }
            None => whole(self),
        }
    }

    /// Whether `governed_work` holds what `work` does (while one generation governs), so
    /// that what is written of it can be a copy of what is written of `work`.
    fn governed_is_work(&self) -> bool {
        self.governed_work == self.work
    }
}

/// [`project`] without the fingerprint (left empty). A decision inside lwirc reads
/// [`outlook`] instead, which leaves out every work item's view too.
pub fn project_unsealed(fold: &Fold, inputs: &Inputs<'_>) -> Projection {
    let file = inputs.file;
    let outlook = outlook(fold, inputs);
    let statuses = &outlook.statuses;
    let view = |i: usize| work_view(fold, statuses, i);
    let work: Vec<WorkView> = statuses.active().map(view).collect();
    let governed: Vec<WorkView> = (0..fold.items.len()).map(view).collect();
    let root = fold.active_root_index();
    let generations = fold
        .plans
        .iter()
        .filter(|p| p.state == PlanState::Applied)
        .filter_map(|p| {
            let root = fold
                .items
                .iter()
                .position(|i| i.spec.plan == p.id && i.spec.root)?;
            Some(GenerationView {
                generation: fold.items[root].spec.generation,
                plan: p.id.clone(),
                root: fold.root_ref(root),
            })
        })
        .collect();
    Projection {
        goal: fold.goal_id().to_owned(),
        name: file.goal.clone(),
        objective: file.objective.clone(),
        status: outlook.status,
        dispatchable: outlook.dispatchable,
        reason: outlook.reason,
        generation: fold.generation.unwrap_or(0),
        active_root: root.map(|r| fold.root_ref(r)),
        work,
        governed_work_ids: fold.items.iter().map(|i| i.spec.work.clone()).collect(),
        governed_work: governed,
        generations,
        attempts: outlook.attempts,
        replans: outlook.replans,
        adaptations: outlook.adaptations,
        planned_items: outlook.planned_items,
        plans: outlook.plans,
        replan_consumption: outlook.replan_consumption,
        cancelled: outlook.cancelled,
        created_at: fold.created_at.clone(),
        seq: fold.last_seq,
        fingerprint: String::new(),
    }
}

/// The view of item `i` of `fold`, with its status among `statuses`.
pub(crate) fn work_view(fold: &Fold, statuses: &Statuses, i: usize) -> WorkView {
    let item = &fold.items[i];
    WorkView {
        id: item.spec.work.clone(),
        key: item.spec.key.clone(),
        template: item.spec.template.clone(),
        version: item.spec.version.clone(),
        plan: item.spec.plan.clone(),
        generation: item.spec.generation,
        status: statuses.status(i),
        attempts: item.attempts.len() as u32,
        max_attempts: statuses.max_attempts(i),
        after: item.spec.after.clone(),
        errors: item
            .attempts
            .iter()
            .filter_map(|a| match &a.state {
                AttemptState::Failed {
                    error,
                    interrupted,
                    code,
                } => Some(match (interrupted, code) {
                    (true, _) => format!("attempt {} interrupted: {error}", a.n),
                    (false, Some(code)) => format!("attempt {} ({code}): {error}", a.n),
                    (false, None) => format!("attempt {}: {error}", a.n),
                }),
                _ => None,
            })
            .collect(),
        runs: item
            .attempts
            .iter()
            .filter_map(|a| {
                a.run.as_ref().map(|run| AttemptRun {
                    attempt: a.n,
                    run: run.clone(),
                })
            })
            .collect(),
    }
}

/// What a decision reads of a goal: the projection without its work items' views (which
/// cost what the goal holds, however little changed) — its status and why, the budgets, the
/// plans, and every item's status ([`Statuses`], kept up to date by a fold that keeps them,
/// [`Fold::keep_statuses`]). Its fields are the [`Projection`]'s of the same names.
#[derive(Debug)]
pub struct Outlook<'f> {
    /// The goal's status.
    pub status: Status,
    /// Why it has that status, and what to do next.
    pub reason: String,
    /// Whether ready work may be dispatched now ([`Projection::dispatchable`]).
    pub dispatchable: bool,
    /// Work attempts over every generation.
    pub attempts: Used,
    /// Charged replans.
    pub replans: Used,
    /// Charged adaptations.
    pub adaptations: Used,
    /// Items planned by applied replans.
    pub planned_items: Used,
    /// Every plan, generation 0's first.
    pub plans: Vec<PlanView>,
    /// How consumed replans ended, when one ended without a proposal.
    pub replan_consumption: Option<Consumption>,
    /// Who cancelled the goal.
    pub cancelled: Option<CancelView>,
    /// Every item's status.
    pub statuses: std::borrow::Cow<'f, Statuses>,
}

/// The seconds of wall time the goal has left now.
fn wall_left(fold: &Fold, file: &GoalFile, now_unix_s: u64) -> u64 {
    fold.created.as_ref().map_or(0, |c| {
        (c.created_unix_s + file.limits.max_wall_time_s).saturating_sub(now_unix_s)
    })
}

/// Whether a new attempt may start now as far as the goal's budgets go: attempts and wall
/// time left, and not cancelled.
pub(crate) fn budget_left(fold: &Fold, file: &GoalFile, now_unix_s: u64) -> bool {
    fold.attempts_used < file.limits.max_total_attempts
        && wall_left(fold, file, now_unix_s) > 0
        && fold.cancelled.is_none()
}

/// The [`Outlook`] of `fold`: what it costs is the plans', not the items'.
pub fn outlook<'f>(fold: &'f Fold, inputs: &Inputs<'_>) -> Outlook<'f> {
    let file = inputs.file;
    let statuses = fold.statuses(file, inputs.now_unix_s);
    let max_total = file.limits.max_total_attempts;
    let wall_left = wall_left(fold, file, inputs.now_unix_s);
    let root = fold.active_root_index();
    let root_status = root.map(|r| statuses.status(r));

    // Plans.
    let plan_status = |p: &Plan| -> &'static str {
        match p.state {
            PlanState::Requested if (inputs.in_progress)(&p.id) => "in-progress",
            PlanState::Requested => "interrupted",
            PlanState::Proposed if p.kind == "initial" => "applying",
            PlanState::Proposed if (inputs.in_progress)(&p.id) => "in-progress",
            PlanState::Proposed if p.receipt.as_ref().is_some_and(|r| r.reviewer == "person") => {
                "approved"
            }
            PlanState::Proposed => "awaiting-review",
            PlanState::Applied => "applied",
            PlanState::Rejected => "rejected",
            PlanState::Attention => "attention",
            PlanState::Interrupted => "interrupted",
            PlanState::Failed => "failed",
            PlanState::Kept => "kept",
        }
    };
    let plans: Vec<PlanView> = fold
        .plans
        .iter()
        .map(|p| PlanView {
            id: p.id.clone(),
            kind: p.kind,
            status: plan_status(p),
            charged: p.charged,
            generation: p.generation,
            requested_at: p.requested_at.clone(),
            items: p
                .proposal
                .as_ref()
                .map(|x| x.items.iter().map(|i| i.key.clone()).collect())
                .unwrap_or_default(),
            root: p.proposal.as_ref().map(|x| x.root.clone()),
            receipt: p.receipt.clone(),
            reason: match plan_status(p) {
                "interrupted" if p.state == PlanState::Requested => {
                    Some("interrupted: its replan is no longer running".into())
                }
                _ => p.outcome.clone(),
            },
            retried_by: p.retried_by.clone(),
        })
        .collect();
    let replans = fold.plans.iter().filter(|p| p.kind == "replan");
    let replans_used = replans.clone().filter(|p| p.charged).count() as u32;
    let adaptations_used = fold
        .plans
        .iter()
        .filter(|p| p.kind == "adapt" && p.charged)
        .count() as u32;
    // Items planned by replans and revisions alike.
    let planned_used: u32 = fold
        .plans
        .iter()
        .filter(|p| p.kind != "initial" && p.state == PlanState::Applied)
        .map(|p| p.materialized.len() as u32)
        .sum();

    // Attribution (spec §9.5): read from records that already exist.
    let mut consumption = Consumption {
        reviewer_rejection: 0,
        planner_no_proposal: 0,
    };
    for (p, v) in fold.plans.iter().zip(&plans) {
        if p.kind == "initial" || !p.charged {
            continue;
        }
        let ended_without_plan = matches!(
            v.status,
            "rejected" | "attention" | "interrupted" | "failed"
        ) || p.retried_by.is_some();
        if !ended_without_plan {
            continue;
        }
        match &p.receipt {
            Some(r) if r.verdict != "passed" => consumption.reviewer_rejection += 1,
            Some(_) => {}
            None => consumption.planner_no_proposal += 1,
        }
    }

    // The goal's status.
    let replanning = file.replanning.as_ref();
    let max_replans = replanning.map_or(0, |r| r.max_replans);
    let max_planned = replanning.map_or(0, |r| r.max_planned_items);
    let latest = fold
        .plans
        .iter()
        .zip(&plans)
        .rev()
        .find(|(p, _)| p.kind == "replan");
    let goal_id = fold.goal_id();
    let stuck = || match root {
        Some(r) => describe_stuck(fold, &statuses, r),
        None => "generation 0 is not materialized yet".to_owned(),
    };
    let waiting_plan = plans
        .iter()
        .any(|v| matches!(v.status, "in-progress" | "awaiting-review" | "approved"));
    let succeeded = root_status == Some(WorkStatus::Succeeded);
    let ready = statuses.ready_count();
    let running = statuses.active_running();
    let dispatchable = fold.cancelled.is_none()
        && fold.generation.is_some()
        && !waiting_plan
        && !succeeded
        && ready > 0;
    let (status_now, reason) = if let Some((c, at)) = &fold.cancelled {
        (
            Status::Cancelled,
            format!(
                "cancelled by {} at {at}{}",
                c.by,
                c.reason
                    .as_ref()
                    .map_or(String::new(), |r| format!(": {r}"))
            ),
        )
    } else if let Some(r) = root.filter(|_| succeeded) {
        let r = fold.root_ref(r).key;
        (Status::Succeeded, format!("the root `{r}` succeeded"))
    } else if let Some(v) = plans.iter().find(|v| v.status == "in-progress") {
        (Status::Running, format!("replan {} is in progress", v.id))
    } else if running > 0 {
        (
            Status::Running,
            format!(
                "{running} work item(s) running; report them with `lwirc goal report {goal_id} WORK succeeded|failed`"
            ),
        )
    } else if fold.generation.is_none() {
        (
            Status::Running,
            "generation 0 is being materialized; run `lwirc goal create` again to finish it"
                .to_owned(),
        )
    } else if let Some(v) = plans
        .iter()
        .find(|v| matches!(v.status, "awaiting-review" | "approved"))
    {
        let what = if v.status == "approved" {
            format!(
                "plan {} was approved but is not fully applied; run `lwirc goal approve {goal_id} {}` again",
                v.id, v.id
            )
        } else {
            format!(
                "plan {} waits for review: `lwirc goal approve {goal_id} {}` or `lwirc goal reject {goal_id} {} --feedback TEXT`",
                v.id, v.id, v.id
            )
        };
        (Status::AwaitingReview, what)
    } else if ready > 0 {
        (
            Status::Ready,
            format!("{ready} work item(s) ready; `lwirc goal next {goal_id}` lists them"),
        )
    } else {
        let cause = if replanning.is_none() {
            Some("the goal does not replan (no `replanning`)".to_owned())
        } else if replans_used >= max_replans {
            Some(format!(
                "the replan budget is spent ({replans_used} of {max_replans} replans used)"
            ))
        } else if fold.attempts_used >= max_total {
            Some(format!(
                "the attempt budget is spent ({} of {max_total} attempts used)",
                fold.attempts_used
            ))
        } else if wall_left == 0 {
            Some(format!(
                "the wall time is spent ({} s)",
                file.limits.max_wall_time_s
            ))
        } else if planned_used >= max_planned {
            Some(format!(
                "the planned-item budget is spent ({planned_used} of {max_planned} items planned)"
            ))
        } else {
            None
        };
        let attention = latest.filter(|(p, v)| v.status == "attention" && p.retried_by.is_none());
        match (cause, attention) {
            // A standing attention waits for a person, unless no replan could follow it.
            (None, Some((p, v))) => (
                Status::Attention,
                format!(
                    "plan {}: {}; after a person has looked, `lwirc goal retry {goal_id} {}` asks for another replan",
                    v.id,
                    p.outcome.clone().unwrap_or_default(),
                    v.id
                ),
            ),
            (None, None) => (
                Status::Eligible,
                format!(
                    "{}; `lwirc goal replan {goal_id} --planner CMD` asks for a new plan",
                    stuck()
                ),
            ),
            (Some(cause), _) => {
                let mut reason = format!("{}, and {cause}", stuck());
                if let Some((p, v)) = latest {
                    let own = v
                        .reason
                        .clone()
                        .or_else(|| p.outcome.clone())
                        .unwrap_or_else(|| v.status.to_owned());
                    reason.push_str(&format!("; the latest plan {}: {own}", v.id));
                }
                if consumption.planner_no_proposal >= 1 {
                    let consumed = consumption.planner_no_proposal + consumption.reviewer_rejection;
                    reason.push_str(&format!(
                        "; {} of {consumed} consumed replan(s) ended without a proposal from the planner (planner_no_proposal: {}, reviewer_rejection: {})",
                        consumption.planner_no_proposal,
                        consumption.planner_no_proposal,
                        consumption.reviewer_rejection
                    ));
                }
                (Status::Exhausted, reason)
            }
        }
    };
    Outlook {
        status: status_now,
        reason,
        dispatchable,
        attempts: Used {
            used: fold.attempts_used,
            max: max_total,
        },
        replans: Used {
            used: replans_used,
            max: max_replans,
        },
        adaptations: Used {
            used: adaptations_used,
            max: replanning.map_or(0, |r| r.max_adaptations),
        },
        planned_items: Used {
            used: planned_used,
            max: max_planned,
        },
        plans,
        replan_consumption: (consumption.planner_no_proposal >= 1).then_some(consumption),
        cancelled: fold.cancelled.as_ref().map(|(c, at)| CancelView {
            by: c.by.clone(),
            at: at.clone(),
            reason: c.reason.clone(),
        }),
        statuses,
    }
}

/// Why the active generation cannot go on, from its root.
fn describe_stuck(fold: &Fold, statuses: &Statuses, root: usize) -> String {
    let item = &fold.items[root];
    let key = &item.spec.key;
    match statuses.status(root) {
        WorkStatus::Failed => format!(
            "the root `{key}` failed after {} of {} attempt(s){}",
            item.attempts.len(),
            statuses.max_attempts(root),
            item.last_error()
                .map_or(String::new(), |e| format!(" (last error: {e})"))
        ),
        WorkStatus::Blocked => {
            let failed = statuses
                .active()
                .find(|&i| statuses.status(i) == WorkStatus::Failed)
                .map(|i| fold.items[i].spec.key.clone())
                .unwrap_or_default();
            format!("the root `{key}` is blocked: `{failed}` failed for good")
        }
        _ => format!("the root `{key}` cannot go on"),
    }
}

/// `sha256:` of the canonical JSON of the projection without its fingerprint (and the seq,
/// which every event changes: the fingerprint changes only with what a scheduler acts on).
fn fingerprint(projection: &Projection) -> String {
    // While one generation governs, `governed_work` is `work`: its bytes are written once.
    let same: &[(&str, &str)] = if projection.governed_is_work() {
        &[("governed_work", "work")]
    } else {
        &[]
    };
    match lwir_spec::canon::serialized_as(projection, &["fingerprint", "seq"], same) {
        Some(canonical) => lwir_spec::canon::sha256_of(&canonical),
        None => fingerprint_of_value(projection),
    }
}

/// The fingerprint the long way: the canonical form of the projection's JSON text, for one
/// holding what the straight writer does not spell (and for tests to check that writer
/// against).
#[doc(hidden)]
pub fn fingerprint_of_value(projection: &Projection) -> String {
    let mut value = serde_json::to_value(projection).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.remove("fingerprint");
        object.remove("seq");
    }
    let bytes = serde_json::to_vec(&value).unwrap_or_default();
    let canonical = lwir_spec::canon::canonicalize(&bytes).unwrap_or(bytes);
    lwir_spec::canon::sha256_of(&canonical)
}
