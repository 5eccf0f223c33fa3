//! Goals: plans that advance only through validated proposals into new immutable
//! generations.
//!
//! A goal freezes its authority when it is created — what it is for, which registered
//! templates its work may run, who may propose new plans and every bound — and from then on
//! its state is an append-only event log. Nothing is edited: work items are materialized
//! once with deterministic ids, attempts and plans are events, and what `lwirc goal show`
//! prints is computed from the events when it is read.
//!
//! | module | what |
//! |---|---|
//! | [`file`](mod@file) | the goal file: strict reader, meta-schema, typed view |
//! | [`check`] | the host's checks of a plan (generation 0 or a proposal): the invariants |
//! | [`catalog`] | registered templates, behind [`catalog::Templates`] |
//! | [`templates`] | the registry as that source of templates |
//! | [`store`] | where goals live: [`store::Store`], [`store::Directory`] |
//! | [`postgres`] | the same in PostgreSQL |
//! | [`events`] | the log's events, typed |
//! | [`projection`] | the state computed from the events |
//! | [`statuses`] | every work item's status, kept as events are folded |
//! | [`checkpoint`] | the fold of a prefix of the log, kept so that reads fold only what follows |
//! | [`resolve`] | a work item's input, evaluated |
//! | [`agent`] | planners and reviewers (external commands) |
//! | [`runner`] | runners: the `lwir-runner/1` protocol, answers read strictly |
//! | [`adapt`] | revising the remaining plan while a goal runs |
//! | [`run`] | driving a goal: dispatch, record, retry, replan (`goal run`, `goal serve`) |
//! | [`goal`] | the operations of `lwirc goal` on a goal and its work |
//! | [`replan`] | plans after the first: replan, review, apply |
//!
//! The goal file, the events, the replan and review requests and the invariants are
//! specified in `crates/lwir-spec/README.md` ("Goals").

pub mod adapt;
pub mod agent;
pub mod catalog;
pub mod check;
pub mod checkpoint;
pub mod events;
pub mod file;
pub mod goal;
pub mod postgres;
pub mod projection;
pub mod replan;
pub mod resolve;
pub mod run;
pub mod runner;
pub mod statuses;
pub mod store;
pub mod templates;

pub use goal::{GoalError, Goals};
