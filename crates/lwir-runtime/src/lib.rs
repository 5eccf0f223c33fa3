//! The LWIR runtime: runs registered workflow versions.
//!
//! # What it owns
//!
//! - [`run`]: the operations on runs — a new run ([`Runtime::start`]), going on after a crash
//!   or a pause and retrying after a failure ([`Runtime::resume`]), rebuilding a run from
//!   its log without performing anything ([`Runtime::replay`]), checking the store
//!   ([`Runtime::verify`]) and what a log says of its run ([`summary`]).
//! - the interpreter (private): every step kind with the semantics of spec §3 — dependencies
//!   and parallelism, `when`, retries, `map`, `reduce`, `branch`, `loop`, the workflow's
//!   output — deterministic given its effects' results; one interpreter for every mode,
//!   the mode being an oracle over the recorded log.
//! - [`log`]: the typed run events ([`RunEvent`], serialized only at the edge), the store of
//!   runs (`.lwir/runs/<run-id>/events.jsonl`), and the writer thread that commits in
//!   groups.
//! - [`values`]: values at run time — every value that flows into a schema is checked
//!   (each schema compiled once per run), with the pointer into the value and the keyword.
//! - [`effects`]: the trait the interpreter calls for a tool, a model round or a code body,
//!   and the live-surface check drift needs; the implementation a bindings file describes
//!   ([`effects::Bound`]) and a fake for tests ([`effects::fake::Fake`]).
//! - [`bindings`]: the `lwir.bindings/1` file, read strictly with findings at pointers.
//! - [`drift`]: the surface found before the first step against the registration record.
//!
//! Nothing here prints or exits: operations return typed reports, and progress goes to an
//! [`Observer`].

#![allow(
    clippy::result_large_err,
    reason = "a step's `Failure` is its record (code, message, pointer, keyword); it is built on \
              the rare failing path only, and boxing it would only move the cost"
)]

pub mod bindings;
pub mod drift;
pub mod effects;
mod exec;
pub mod log;
mod oracle;
mod program;
pub mod run;
pub mod values;

pub use exec::{MAX_MODEL_ROUNDS, MAX_TOOL_CALLS_PER_ROUND, idempotency_key};
pub use log::{RunEvent, RunStore};
pub use oracle::Difference;
pub use run::{
    BindingsCheck, Continue, NewRun, OnDrift, Outcome, Replay, RunError, Runtime, Stats, Status,
    summary,
};

/// What a run tells as it goes: every event, `fresh` when it was written now (not one the
/// log already held).
pub trait Observer {
    /// An event of the run.
    fn event(&self, event: &RunEvent, fresh: bool);
}

/// An observer that ignores everything.
pub struct Quiet;

impl Observer for Quiet {
    fn event(&self, _event: &RunEvent, _fresh: bool) {}
}
