//! The bounded repair loop (`crates/lwir-spec/README.md` §8.6): validate → safe fixes →
//! planner repair → …, until the draft has no errors or the bounds are spent.
//!
//! 1. Validate. No errors: converged.
//! 2. Apply machine-applicable fixes in passes ([`crate::fixes`]). No errors: converged.
//! 3. Ask the planner for a repair: the draft, its findings and the definition. A draft
//!    answer starts again at 1; `attention` stops the loop at once; a failed call (crash,
//!    timeout, garbage) leaves the draft as it was and the loop asks again while the bounds
//!    allow.
//! 4. Bounds: `max_planner_calls` counts every call (the first `plan` call included);
//!    `max_repair_attempts` counts every repair request, answered or not. A state seen
//!    before (A → B → A) stops the loop too.
//!
//! The loop never registers anything; it ends with the last draft, its validation and a
//! [`Attribution`] that attributes the stop: the planner gave no proposal, or its proposals kept
//! failing validation — with the counts of each.

use lwir_spec::{Code, Finding};
use serde::Serialize;
use serde_json::Value;

use crate::events::{LoggedFinding, RepairApplied, SessionEvent, ValidationCompleted};
use crate::fixes::{self, AppliedFix, Check, Checked, FixStop, Seen};
use crate::harness::{FailureKind, Planner};
use crate::journal::{Journal, JournalError};
use crate::protocol::{Answer, PROTOCOL, Request};

/// Default `max_repair_attempts` when the definition's `planner` block has none.
pub const DEFAULT_MAX_REPAIR_ATTEMPTS: u32 = 3;
/// Default `max_planner_calls` when the definition's `planner` block has none.
pub const DEFAULT_MAX_PLANNER_CALLS: u32 = 8;

/// The bounds of one session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Bounds {
    /// Repair requests allowed.
    pub max_repair_attempts: u32,
    /// Planner calls allowed (plan and repair).
    pub max_planner_calls: u32,
    /// Fix passes allowed per round.
    pub max_fix_passes: u32,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            max_repair_attempts: DEFAULT_MAX_REPAIR_ATTEMPTS,
            max_planner_calls: DEFAULT_MAX_PLANNER_CALLS,
            max_fix_passes: fixes::MAX_FIX_PASSES,
        }
    }
}

/// What the planner is told besides the draft.
#[derive(Clone, Debug)]
pub struct Context {
    /// The WorkflowDefinition.
    pub workflow: Value,
    /// The PlannerManifest.
    pub manifest: Value,
    /// The workflow input (`null` without one).
    pub input: Value,
}

/// Where a session starts.
#[derive(Clone, Debug)]
pub enum Start {
    /// Ask the planner for a first draft (`lwirc compile`).
    Plan,
    /// Start from this draft (`lwirc repair`).
    Draft(Vec<u8>),
}

/// What ended a session that did not converge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoppedBy {
    /// The draft has no errors.
    Converged,
    /// The planner answered `attention`.
    Attention,
    /// `max_repair_attempts` was reached.
    AttemptCap,
    /// `max_planner_calls` was reached.
    CallCap,
    /// A state repeated (A → B → A).
    Cycle,
    /// The planner could not be started, or its model server could not be reached
    /// (LW801): asking again would fail the same way.
    PlannerUnavailable,
}

/// Why the session failed (spec §8.6: the report's `cause`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// The last planner turn gave no draft: attention, a crash, a timeout, garbage.
    PlannerGaveNoProposal,
    /// The planner proposed drafts, and they kept failing validation.
    ProposalsKeptFailing,
    /// The loop came back to an earlier state.
    RepeatedState,
    /// The bounds allowed no planner call, and safe fixes alone did not remove every error.
    NoPlannerBudget,
}

/// Turns without a proposal, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NoProposal {
    /// `attention` answers.
    pub attention: u32,
    /// The planner could not be started (LW801).
    pub not_started: u32,
    /// It exited non-zero or was killed (LW802).
    pub crashed: u32,
    /// It timed out (LW803).
    pub timed_out: u32,
    /// Its answer was too large (LW804).
    pub too_large: u32,
    /// Its answer was not JSON (LW805).
    pub not_json: u32,
    /// Its answer was JSON but not an answer (LW806).
    pub invalid: u32,
}

impl NoProposal {
    /// Counts a failed call: every kind has its own count.
    fn count(&mut self, kind: FailureKind) {
        let slot = match kind {
            FailureKind::NotStarted => &mut self.not_started,
            FailureKind::Failed => &mut self.crashed,
            FailureKind::TimedOut => &mut self.timed_out,
            FailureKind::TooLarge => &mut self.too_large,
            FailureKind::NotJson => &mut self.not_json,
            FailureKind::Invalid => &mut self.invalid,
        };
        *slot += 1;
    }

    /// All turns without a proposal.
    pub fn total(&self) -> u32 {
        self.attention
            + self.not_started
            + self.crashed
            + self.timed_out
            + self.too_large
            + self.not_json
            + self.invalid
    }
}

/// The planner findings of a report as the report shows them: code, severity, message,
/// help, the call, the end of the planner's standard error.
fn planner_findings_json<S: serde::Serializer>(
    findings: &[Finding],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct View<'a> {
        code: &'static str,
        severity: &'static str,
        message: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        help: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        call: Option<u32>,
        #[serde(skip_serializing_if = "str::is_empty")]
        stderr_tail: &'a str,
    }
    serializer.collect_seq(findings.iter().map(|f| {
        let planner = f.planner.as_ref();
        View {
            code: f.code.as_str(),
            severity: f.severity.as_str(),
            message: &f.message,
            help: f.help.as_deref(),
            call: planner.and_then(|p| p.call),
            stderr_tail: planner.map_or("", |p| p.stderr_tail.as_str()),
        }
    }))
}

/// How a session went: the attribution report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Attribution {
    /// `converged` or `exhausted`.
    pub outcome: &'static str,
    /// What ended the session.
    pub stopped_by: StoppedBy,
    /// Why it failed (absent when it converged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    /// Repair requests made.
    pub attempts_used: u32,
    /// Repair requests allowed.
    pub max_repair_attempts: u32,
    /// Planner calls made (plan and repair).
    pub planner_calls: u32,
    /// Planner calls allowed.
    pub max_planner_calls: u32,
    /// Drafts the planner proposed.
    pub proposals: u32,
    /// Proposals that still had errors after safe fixes.
    pub proposals_failed: u32,
    /// Turns that gave no proposal, by kind.
    pub no_proposal: NoProposal,
    /// Fixes applied unattended, over all passes.
    pub fixes_applied: u32,
    /// Fixes rolled back because they added an error.
    pub fixes_rolled_back: u32,
    /// What the safe fixes saved: each error they removed is one the planner did not have
    /// to be called for.
    pub safe_fixes: SafeFixes,
    /// Those fixes, each with the errors it added (when that is why it was rolled back).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rolled_back: Vec<AppliedFix>,
    /// Codes involved in a repeated state.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cycle_codes: Vec<&'static str>,
    /// Problems with the planner (origin [`lwir_spec::Origin::Planner`]), in order.
    #[serde(serialize_with = "planner_findings_json")]
    pub planner_findings: Vec<Finding>,
    /// Errors in the last draft.
    pub errors: usize,
    /// Warnings in the last draft.
    pub warnings: usize,
    /// The WorkflowVersion of the last draft, when it has no errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// What the machine-applicable fixes did over a session (`safe_fixes` of the report).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SafeFixes {
    /// Fixes applied and kept.
    pub applied: u32,
    /// Errors (by code and pointer) they removed.
    pub findings_removed: u32,
}

impl Attribution {
    /// Whether the draft converged (no errors).
    pub fn converged(&self) -> bool {
        self.stopped_by == StoppedBy::Converged
    }

    /// One sentence saying why the session stopped.
    pub fn reason(&self) -> String {
        let calls = format!(
            "{} of {} planner calls, {} of {} repair attempts",
            self.planner_calls,
            self.max_planner_calls,
            self.attempts_used,
            self.max_repair_attempts
        );
        let proposals = format!(
            "{} proposal{} failed validation, {} turn{} gave no proposal",
            self.proposals_failed,
            plural(self.proposals_failed),
            self.no_proposal.total(),
            plural(self.no_proposal.total())
        );
        match (self.stopped_by, self.cause) {
            (StoppedBy::Converged, _) => format!("converged ({calls})"),
            (StoppedBy::Attention, _) => {
                format!("the planner gave up and asked for attention ({calls}; {proposals})")
            }
            (StoppedBy::PlannerUnavailable, _) => format!(
                "the planner could not be started or its model server could not be reached, \
                 so the session stopped without asking again ({calls}; see LW801 below)"
            ),
            (StoppedBy::Cycle, _) => format!(
                "the repair went in a circle: a draft came back to an earlier state (codes \
                 involved: {}; {calls})",
                self.cycle_codes.join(", ")
            ),
            // Without a planner call a plan session has no draft, so no errors were counted.
            (_, Some(Cause::NoPlannerBudget)) if self.proposals == 0 && self.errors == 0 => {
                format!(
                    "no planner call was allowed, so there was no draft to validate or fix \
                     ({calls})"
                )
            }
            (_, Some(Cause::NoPlannerBudget)) => format!(
                "safe fixes alone did not remove every error and no planner call was allowed \
                 ({calls})"
            ),
            (by, cause) => {
                let cap = if by == StoppedBy::AttemptCap {
                    "max_repair_attempts"
                } else {
                    "max_planner_calls"
                };
                let why = if cause == Some(Cause::PlannerGaveNoProposal) {
                    "the planner gave no proposal"
                } else {
                    "the planner's proposals kept failing validation"
                };
                format!("{cap} reached: {why} ({proposals}; {calls})")
            }
        }
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The end of a session: the last draft, its validation and the report.
#[derive(Debug)]
pub struct Outcome {
    /// The last draft (absent when the planner never gave one).
    pub draft: Option<Vec<u8>>,
    /// Its validation.
    pub checked: Option<Checked>,
    /// The report.
    pub report: Attribution,
}

/// Runs one session. Events go to `journal`; see the module documentation for the rules.
pub fn run(
    start: Start,
    context: &Context,
    bounds: Bounds,
    check: &mut dyn Check,
    planner: &mut dyn Planner,
    journal: &mut Journal<'_>,
) -> Result<Outcome, JournalError> {
    Loop {
        context,
        bounds,
        check,
        planner,
        journal,
        seen: Seen::default(),
        report: Attribution {
            outcome: "exhausted",
            stopped_by: StoppedBy::CallCap,
            cause: None,
            attempts_used: 0,
            max_repair_attempts: bounds.max_repair_attempts,
            planner_calls: 0,
            max_planner_calls: bounds.max_planner_calls,
            proposals: 0,
            proposals_failed: 0,
            no_proposal: NoProposal::default(),
            fixes_applied: 0,
            fixes_rolled_back: 0,
            safe_fixes: SafeFixes::default(),
            rolled_back: Vec::new(),
            cycle_codes: Vec::new(),
            planner_findings: Vec::new(),
            errors: 0,
            warnings: 0,
            version: None,
        },
        last_turn: None,
    }
    .run(start)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Turn {
    Proposal,
    NoProposal,
}

struct Loop<'s, 'j> {
    context: &'s Context,
    bounds: Bounds,
    check: &'s mut dyn Check,
    planner: &'s mut dyn Planner,
    journal: &'s mut Journal<'j>,
    seen: Seen,
    report: Attribution,
    last_turn: Option<Turn>,
}

impl Loop<'_, '_> {
    fn run(mut self, start: Start) -> Result<Outcome, JournalError> {
        let mut draft = match start {
            Start::Draft(bytes) => bytes,
            Start::Plan => loop {
                if self.report.planner_calls >= self.bounds.max_planner_calls {
                    return self.stop(StoppedBy::CallCap, None, None);
                }
                let request = Request::Plan {
                    protocol: PROTOCOL,
                    call: self.report.planner_calls + 1,
                    workflow: self.context.workflow.clone(),
                    input: self.context.input.clone(),
                    manifest: self.context.manifest.clone(),
                };
                match self.ask(&request)? {
                    Asked::Draft(bytes) => break bytes,
                    Asked::Attention => return self.stop(StoppedBy::Attention, None, None),
                    Asked::Failed => continue,
                    Asked::Unavailable => {
                        return self.stop(StoppedBy::PlannerUnavailable, None, None);
                    }
                }
            },
        };
        let mut from_planner = self.report.proposals > 0;
        loop {
            let checked = self.check.check(&draft);
            self.validated(&checked)?;
            if let Some(codes) = self.seen.visit(&checked) {
                if from_planner {
                    // A proposal that brings back an earlier state failed too.
                    self.report.proposals_failed += 1;
                }
                return self.cycle(codes, draft, checked);
            }
            // Each pass is logged as it is kept, before the next pass validates anything.
            let (journal, report) = (&mut *self.journal, &mut self.report);
            let mut logged = Ok(());
            let fixed = fixes::apply_safe_fixes(
                &mut *self.check,
                draft,
                checked,
                &mut self.seen,
                self.bounds.max_fix_passes,
                &mut |pass| {
                    if logged.is_ok() {
                        report.fixes_applied += pass.applied.len() as u32;
                        report.fixes_rolled_back += pass.rolled_back.len() as u32;
                        report.safe_fixes.applied += pass.applied.len() as u32;
                        report.safe_fixes.findings_removed += pass.errors_removed as u32;
                        report.rolled_back.extend(pass.rolled_back.iter().cloned());
                        logged = journal.record(SessionEvent::RepairApplied(RepairApplied {
                            applied: pass.applied.clone(),
                            rolled_back: pass.rolled_back.clone(),
                            errors_before: pass.errors_before,
                            errors_after: pass.errors_after,
                            state: pass.state.clone(),
                        }));
                    }
                },
            );
            logged?;
            // A last pass that kept nothing rolled its fixes back all the same.
            self.report.fixes_rolled_back += fixed.rolled_back.len() as u32;
            self.report
                .rolled_back
                .extend(fixed.rolled_back.iter().cloned());
            draft = fixed.draft;
            let checked = fixed.checked;
            if !fixed.passes.is_empty() {
                self.validated(&checked)?;
            }
            if !checked.has_errors() {
                return self.stop(StoppedBy::Converged, Some(draft), Some(checked));
            }
            if let FixStop::Cycle(codes) = fixed.stop {
                return self.cycle(codes, draft, checked);
            }
            if from_planner {
                self.report.proposals_failed += 1;
            }
            // Ask the planner until it proposes a draft or the bounds are spent.
            loop {
                if self.report.attempts_used >= self.bounds.max_repair_attempts {
                    return self.stop(StoppedBy::AttemptCap, Some(draft), Some(checked));
                }
                if self.report.planner_calls >= self.bounds.max_planner_calls {
                    return self.stop(StoppedBy::CallCap, Some(draft), Some(checked));
                }
                self.seen.leave_with(checked.error_codes());
                self.report.attempts_used += 1;
                let request = Request::Repair {
                    protocol: PROTOCOL,
                    call: self.report.planner_calls + 1,
                    attempt: self.report.attempts_used,
                    max_attempts: self.bounds.max_repair_attempts,
                    // An object as JSON; anything else (unreadable, or not an object) as
                    // its text, as the protocol says.
                    draft: checked
                        .document
                        .as_ref()
                        .map(|d| d.root().to_json())
                        .filter(Value::is_object)
                        .unwrap_or_else(|| {
                            Value::String(String::from_utf8_lossy(&draft).into_owned())
                        }),
                    findings: checked.findings_json.clone(),
                    workflow: self.context.workflow.clone(),
                    manifest: self.context.manifest.clone(),
                };
                match self.ask(&request)? {
                    Asked::Draft(bytes) => {
                        draft = bytes;
                        from_planner = true;
                        break;
                    }
                    Asked::Attention => {
                        return self.stop(StoppedBy::Attention, Some(draft), Some(checked));
                    }
                    Asked::Failed => {}
                    Asked::Unavailable => {
                        return self.stop(
                            StoppedBy::PlannerUnavailable,
                            Some(draft),
                            Some(checked),
                        );
                    }
                }
            }
        }
    }

    /// One planner call, counted and attributed.
    fn ask(&mut self, request: &Request) -> Result<Asked, JournalError> {
        self.report.planner_calls += 1;
        let call = request.call();
        match self.journal.call(request, &mut *self.planner)? {
            Ok(response) => match response.answer {
                Answer::Draft { lwir } => {
                    self.report.proposals += 1;
                    self.last_turn = Some(Turn::Proposal);
                    Ok(Asked::Draft(lwir))
                }
                Answer::Attention { rationale } => {
                    self.report.no_proposal.attention += 1;
                    self.last_turn = Some(Turn::NoProposal);
                    self.report.planner_findings.push(Finding::planner(
                        Code::PlannerNeedsAttention,
                        format!("the planner asked for attention: {rationale}"),
                        Some(call),
                    ));
                    Ok(Asked::Attention)
                }
            },
            Err(failure) => {
                let unavailable = failure.kind == FailureKind::NotStarted;
                self.report.no_proposal.count(failure.kind);
                self.last_turn = Some(Turn::NoProposal);
                let mut finding = Finding::planner(failure.code(), failure.message, Some(call));
                if let Some(planner) = &mut finding.planner {
                    planner.stderr_tail = failure.stderr_tail;
                }
                self.report.planner_findings.push(finding);
                Ok(if unavailable {
                    Asked::Unavailable
                } else {
                    Asked::Failed
                })
            }
        }
    }

    fn validated(&mut self, checked: &Checked) -> Result<(), JournalError> {
        self.journal
            .record(SessionEvent::ValidationCompleted(ValidationCompleted {
                errors: checked.errors(),
                warnings: checked.warnings(),
                state: checked.state.clone(),
                findings: checked.findings.iter().map(LoggedFinding::of).collect(),
                version: checked.version.clone(),
            }))
    }

    fn cycle(
        mut self,
        codes: Vec<Code>,
        draft: Vec<u8>,
        checked: Checked,
    ) -> Result<Outcome, JournalError> {
        self.report.cycle_codes = codes.iter().map(|c| c.as_str()).collect();
        let names: Vec<&str> = self.report.cycle_codes.clone();
        self.report.planner_findings.push(Finding::planner(
            Code::RepairCycle,
            format!(
                "the repair went in a circle: the draft came back to an earlier state (codes \
                 involved: {})",
                names.join(", ")
            ),
            None,
        ));
        self.stop(StoppedBy::Cycle, Some(draft), Some(checked))
    }

    fn stop(
        mut self,
        by: StoppedBy,
        draft: Option<Vec<u8>>,
        checked: Option<Checked>,
    ) -> Result<Outcome, JournalError> {
        self.report.stopped_by = by;
        if let Some(checked) = &checked {
            self.report.errors = checked.errors();
            self.report.warnings = checked.warnings();
            self.report.version = checked.version.clone();
        }
        if by == StoppedBy::Converged {
            self.report.outcome = "converged";
        } else {
            self.report.cause = Some(match (by, self.last_turn) {
                (StoppedBy::Cycle, _) => Cause::RepeatedState,
                (_, None) => Cause::NoPlannerBudget,
                (_, Some(Turn::NoProposal)) => Cause::PlannerGaveNoProposal,
                (_, Some(Turn::Proposal)) => Cause::ProposalsKeptFailing,
            });
        }
        Ok(Outcome {
            draft,
            checked,
            report: self.report,
        })
    }
}

enum Asked {
    Draft(Vec<u8>),
    Attention,
    Failed,
    /// A failure that asking again would repeat (LW801).
    Unavailable,
}
