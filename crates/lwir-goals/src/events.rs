//! The events of a goal's log, typed. The names and payloads are a contract, documented in
//! `crates/lwir-spec/README.md` ("Goals").
//!
//! A store appends a [`GoalEvent`] (its [`GoalEvent::name`] and [`GoalEvent::data`]: no
//! event is written by name), and a reader reads one back with [`GoalEvent::parse`] or
//! compares a record's name with the kind's constant ([`GoalEvent::CANCELLED`], …). An event
//! of a kind this lwirc does not know is kept as [`GoalEvent::Other`], with its payload (a
//! newer lwirc may add kinds); one it knows with a payload it cannot read is an error. A
//! plan's own log holds the goal events of that plan and the start of its planner session
//! ([`PlanEvent`]).

use serde::{Deserialize, Serialize};

/// `goal.created`: the goal file was frozen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Created {
    /// The goal id.
    pub goal: String,
    /// The goal's name.
    pub name: String,
    /// `sha256:` of the frozen goal file (its RFC 8785 canonical bytes).
    pub digest: String,
    /// When, in seconds since the Unix epoch (the wall-time bound counts from it).
    pub created_unix_s: u64,
    /// The planner profile's manifest, frozen (`null` for a goal that never replans).
    pub planner_manifest: serde_json::Value,
    /// Who created it.
    pub by: String,
    /// The catalog frozen with it: each template's name, with its version and schemas as
    /// the registry held them (absent only in a hand-made log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `work.materialized`: one work item exists.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Materialized {
    /// The work id (deterministic: goal, plan, key).
    pub work: String,
    /// Its key.
    pub key: String,
    /// Its template's name in the catalog.
    pub template: String,
    /// The template's version.
    pub version: String,
    /// The plan it belongs to (`p0` for generation 0).
    pub plan: String,
    /// The generation its plan creates.
    pub generation: u32,
    /// The ids of the work it depends on.
    pub after: Vec<String>,
    /// The keys its input reads as `work.<key>`, each with the id it names.
    pub reads: std::collections::BTreeMap<String, String>,
    /// Its input, unresolved.
    pub input: serde_json::Value,
    /// Whether it is its plan's root.
    pub root: bool,
}

/// `work.started`: an attempt began.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Started {
    /// The work id.
    pub work: String,
    /// The attempt, 1 for the first.
    pub attempt: u32,
    /// Whether `goal run` (or `goal serve`) dispatched it to a runner, which it then
    /// watches; `false` for a start an external runtime reported.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dispatched: bool,
    /// The generation when it was dispatched (an adaptation trigger compares it with the
    /// generation when it ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u32>,
}

/// `work.succeeded`: an attempt succeeded with an output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Succeeded {
    /// The work id.
    pub work: String,
    /// The attempt.
    pub attempt: u32,
    /// The output, checked against the template's output schema.
    pub output: serde_json::Value,
    /// The run that was this attempt, when the runner named one (lwirc's built-in runner
    /// does: `lwirc runs show RUN`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// `work.failed`: an attempt failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failed {
    /// The work id.
    pub work: String,
    /// The attempt.
    pub attempt: u32,
    /// What went wrong, as the runtime said it.
    pub error: String,
    /// Whether the attempt was cut short (its runner or lwirc killed) rather than failing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The finding code of a failure lwirc saw itself (a runner that timed out, an output
    /// that breaks the schema: LW1012–LW1018).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The run that was this attempt, when the runner named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// `plan.requested`: a replan began (the slot is charged from here).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Requested {
    /// The plan id (`p1`, `p2`, …).
    pub plan: String,
    /// `replan` or `adapt`.
    pub kind: String,
    /// The generation the replan starts from.
    pub generation: u32,
    /// The JCS hash of the prior cycles' context the planner is given.
    pub context_hash: String,
    /// Who asked.
    pub by: String,
}

/// `plan.proposed`: the planner proposed a plan that passed every check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Proposed {
    /// The plan id.
    pub plan: String,
    /// The planner round (1, then one per revision a reviewer asked for).
    pub round: u32,
    /// The proposed items.
    pub items: Vec<crate::file::ItemSpec>,
    /// The proposed root's key.
    pub root: String,
}

/// `plan.reviewed`: a review receipt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reviewed {
    /// The plan id.
    pub plan: String,
    /// The round reviewed.
    pub round: u32,
    /// `passed`, `rejected` or `attention`.
    pub verdict: String,
    /// `reviewer` (a process) or `person`.
    pub reviewer: String,
    /// Who: the reviewer command, or the person.
    pub by: String,
    /// The feedback or rationale, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

/// `plan.rejected`: the plan will not be applied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rejected {
    /// The plan id.
    pub plan: String,
    /// Who rejected it.
    pub by: String,
    /// Why, for the next replan.
    pub feedback: String,
}

/// `plan.applied`: the plan's items are materialized and its root is the active root.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    /// The plan id.
    pub plan: String,
    /// The new generation.
    pub generation: u32,
    /// The root's work id.
    pub root: String,
    /// Who applied it (`auto_apply`, or the person who approved it).
    pub by: String,
    /// The pending items a revision left out: `obsolete` from now on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub obsoleted: Vec<String>,
}

/// `plan.kept`: an adaptation's planner kept the plan as it is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    /// The plan id.
    pub plan: String,
}

/// `plan.attention`: the planner (or its reviewer) asked for a person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attention {
    /// The plan id.
    pub plan: String,
    /// Why.
    pub rationale: String,
    /// `planner` or `reviewer`.
    pub from: String,
}

/// `plan.interrupted`: a replan's process went away before it ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interrupted {
    /// The plan id.
    pub plan: String,
    /// What was seen.
    pub detail: String,
}

/// `plan.failed`: the replan produced no plan: the planner failed, or its proposal was refused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanFailed {
    /// The plan id.
    pub plan: String,
    /// Whether it counts against `max_replans` (an environment failure does not).
    pub charged: bool,
    /// The finding code of the failure (`LW802`, `LW1001`, …).
    pub code: String,
    /// What happened.
    pub message: String,
    /// The findings of a refused proposal (each as in `lwirc validate --format json`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<serde_json::Value>,
}

/// `plan.retry`: an operator asks for another replan after an attention.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Retry {
    /// The plan that ended in attention.
    pub plan: String,
    /// Who asked.
    pub by: String,
}

/// `goal.cancelled`: the goal is stopped for good.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cancelled {
    /// Who cancelled it.
    pub by: String,
    /// Why, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One event of a goal's log.
#[derive(Clone, Debug, PartialEq)]
pub enum GoalEvent {
    /// `goal.created`
    Created(Created),
    /// `work.materialized`
    Materialized(Materialized),
    /// `work.started`
    Started(Started),
    /// `work.succeeded`
    Succeeded(Succeeded),
    /// `work.failed`
    Failed(Failed),
    /// `plan.requested`
    Requested(Requested),
    /// `plan.proposed`
    Proposed(Proposed),
    /// `plan.reviewed`
    Reviewed(Reviewed),
    /// `plan.rejected`
    Rejected(Rejected),
    /// `plan.applied`
    Applied(Applied),
    /// `plan.attention`
    Attention(Attention),
    /// `plan.interrupted`
    Interrupted(Interrupted),
    /// `plan.failed`
    PlanFailed(PlanFailed),
    /// `plan.retry`
    Retry(Retry),
    /// `goal.cancelled`
    Cancelled(Cancelled),
    /// `plan.kept`
    Kept(Kept),
    /// A kind this lwirc does not know: its name and payload, kept as they were.
    Other(String, serde_json::Value),
}

macro_rules! kinds {
    ($($variant:ident = $constant:ident = $name:literal),* $(,)?) => {
        impl GoalEvent {
            $(
                #[doc = concat!("The name of [`GoalEvent::", stringify!($variant), "`] in the log: `", $name, "`.")]
                pub const $constant: &'static str = $name;
            )*

            /// The event's name in the log.
            pub fn name(&self) -> &str {
                match self {
                    $(GoalEvent::$variant(_) => $name,)*
                    GoalEvent::Other(name, _) => name,
                }
            }

            /// The event's payload.
            pub fn data(&self) -> serde_json::Value {
                match self {
                    // Plain data types: serialising them cannot fail.
                    $(GoalEvent::$variant(e) => serde_json::to_value(e).unwrap_or_default(),)*
                    GoalEvent::Other(_, data) => data.clone(),
                }
            }

            /// Reads an event back from its name and payload.
            pub fn parse(name: &str, data: &serde_json::Value) -> Result<GoalEvent, String> {
                match name {
                    $($name => serde_json::from_value(data.clone())
                        .map(GoalEvent::$variant)
                        .map_err(|e| format!("`{name}` event with unreadable data: {e}")),)*
                    other => Ok(GoalEvent::Other(other.to_owned(), data.clone())),
                }
            }
        }
    };
}

kinds! {
    Created = CREATED = "goal.created",
    Materialized = MATERIALIZED = "work.materialized",
    Started = STARTED = "work.started",
    Succeeded = SUCCEEDED = "work.succeeded",
    Failed = FAILED = "work.failed",
    Requested = REQUESTED = "plan.requested",
    Proposed = PROPOSED = "plan.proposed",
    Reviewed = REVIEWED = "plan.reviewed",
    Rejected = REJECTED = "plan.rejected",
    Applied = APPLIED = "plan.applied",
    Attention = ATTENTION = "plan.attention",
    Interrupted = INTERRUPTED = "plan.interrupted",
    PlanFailed = PLAN_FAILED = "plan.failed",
    Retry = RETRY = "plan.retry",
    Cancelled = CANCELLED = "goal.cancelled",
    Kept = KEPT = "plan.kept",
}

/// `plan.session.started`, in a plan's own log only: the planner session of a replan or an
/// adaptation began.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionStarted {
    /// The session's manifest (with the hash of the prior cycles' context it is given).
    pub manifest: serde_json::Value,
    /// The planner, as its harness describes it.
    pub planner: String,
}

/// One event of a plan's own log: a goal event of the plan (also in the goal's log), or the
/// start of its planner session.
#[derive(Clone, Copy, Debug)]
pub enum PlanEvent<'a> {
    /// `plan.session.started`
    SessionStarted(&'a SessionStarted),
    /// A goal event of the plan.
    Goal(&'a GoalEvent),
}

impl PlanEvent<'_> {
    /// The name of `plan.session.started`.
    pub const SESSION_STARTED: &'static str = "plan.session.started";

    /// The event's name in the plan's log.
    pub fn name(&self) -> &str {
        match self {
            PlanEvent::SessionStarted(_) => Self::SESSION_STARTED,
            PlanEvent::Goal(e) => e.name(),
        }
    }

    /// The event's payload.
    pub fn data(&self) -> serde_json::Value {
        match self {
            PlanEvent::SessionStarted(e) => serde_json::to_value(e).unwrap_or_default(),
            PlanEvent::Goal(e) => e.data(),
        }
    }
}
