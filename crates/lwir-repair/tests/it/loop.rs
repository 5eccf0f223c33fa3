//! The rules of the safe-fix passes (`fixes::apply_safe_fixes`) and of the bounded repair
//! loop (`session::run`) in isolation: a fake checker over small JSON documents and a
//! scripted fake planner, so no process is started and no real validator runs.
//!
//! The fake checker's rules, one per top-level field, in this order (its reading order):
//!
//! | field      | value         | finding                   | fix                             |
//! |------------|---------------|---------------------------|---------------------------------|
//! | `a`        | `"wrong"`     | LW301 at `/a`             | machine: `"right"`              |
//! | `a`        | `"p"` / `"q"` | LW106 at `/a`             | machine: `"q"` / `"p"`          |
//! | `b`        | `"bad"`       | LW103 at `/b`             | maybe-incorrect: `"good"`       |
//! | `c`        | `"wrong"`     | LW303 at `/c`             | machine: `"right"`              |
//! | `d`        | `"trap"`      | LW304 at `/d`             | machine: `"worse"`              |
//! | `d`        | `"worse"`     | LW602 at `/d` (new code)  | none                            |
//! | `n`        | number < 100  | LW106 at `/n`, says `n`   | machine: `n + 1`                |
//! | `m`        | number < 100  | LW106 at `/m`, same words | machine: `m + 1`                |
//! | `x.legacy` | any           | LW102 at `/x`             | machine: `/x` = `{"y": legacy}` |
//! | `x.y`      | `"wrong"`     | LW301 at `/x/y`           | machine: `"right"`              |
//! | `w`        | `"old"`       | LW210 warning at `/w`     | machine: `"new"`                |
//! | `stuck`    | any           | LW101 at `/stuck`         | none                            |
//! | `traps[i]` | `"trap"`      | LW304 at `/traps/i`       | machine: `"worse"`              |
//! | `traps[i]` | `"worse"`     | LW602 at `/traps/i`       | none                            |
//!
//! A state is the compact JSON of the document (keys sorted), and the version is the state
//! when there is no error.

use std::collections::VecDeque;
use std::time::Duration;

use lwir_repair::events::Event;
use lwir_repair::fixes::{self, Check, Checked, FixOutcome, FixStop, Seen};
use lwir_repair::harness::{FailureKind, Planner, PlannerFailure, Response};
use lwir_repair::journal::Journal;
use lwir_repair::protocol::{Request, parse_answer};
use lwir_repair::repair_loop::{self, Bounds, Cause, Context, Outcome, Start, StoppedBy};
use lwir_spec::{Applicability, Code, Finding, Fix, PatchOp, Span};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// The fake checker
// ---------------------------------------------------------------------------------------

/// Validates drafts with the rules of the module documentation, counting its calls.
#[derive(Default)]
struct FakeCheck {
    calls: usize,
}

impl Check for FakeCheck {
    fn check(&mut self, bytes: &[u8]) -> Checked {
        self.calls += 1;
        check(bytes)
    }
}

fn machine(path: &str, value: Value) -> Fix {
    Fix::replace(Applicability::MachineApplicable, path, value)
}

/// The fake checker's verdict on `bytes` (always a JSON object in these tests).
fn check(bytes: &[u8]) -> Checked {
    let document: Value = serde_json::from_slice(bytes).expect("fake drafts are JSON");
    let mut findings: Vec<Finding> = Vec::new();
    let mut report = |code: Code, pointer: &str, message: String, fix: Option<Fix>| {
        let at = findings.len();
        let finding = Finding::new(code, pointer, Span::new(at, at + 1), message);
        findings.push(match fix {
            Some(fix) => finding.with_fix(fix),
            None => finding,
        });
    };
    let field = |name: &str| document.get(name).and_then(Value::as_str);

    match field("a") {
        Some("wrong") => report(
            Code::UnknownTool,
            "/a",
            "`a` is \"wrong\"".into(),
            Some(machine("/a", json!("right"))),
        ),
        Some("p") => report(
            Code::InvalidValue,
            "/a",
            "`a` is \"p\", should be \"q\"".into(),
            Some(machine("/a", json!("q"))),
        ),
        Some("q") => report(
            Code::InvalidValue,
            "/a",
            "`a` is \"q\", should be \"p\"".into(),
            Some(machine("/a", json!("p"))),
        ),
        _ => {}
    }
    if field("b") == Some("bad") {
        report(
            Code::WrongType,
            "/b",
            "`b` is \"bad\"".into(),
            Some(Fix::replace(
                Applicability::MaybeIncorrect,
                "/b",
                json!("good"),
            )),
        );
    }
    if field("c") == Some("wrong") {
        report(
            Code::UnknownToolArgument,
            "/c",
            "`c` is \"wrong\"".into(),
            Some(machine("/c", json!("right"))),
        );
    }
    match field("d") {
        Some("trap") => report(
            Code::ToolArgumentMismatch,
            "/d",
            "`d` is \"trap\"".into(),
            Some(machine("/d", json!("worse"))),
        ),
        Some("worse") => report(Code::DanglingAfter, "/d", "`d` is \"worse\"".into(), None),
        _ => {}
    }
    if let Some(n) = document.get("n").and_then(Value::as_u64)
        && n < 100
    {
        report(
            Code::InvalidValue,
            "/n",
            format!("`n` is {n}, must reach 100"),
            Some(machine("/n", json!(n + 1))),
        );
    }
    if let Some(m) = document.get("m").and_then(Value::as_u64)
        && m < 100
    {
        report(
            Code::InvalidValue,
            "/m",
            "`m` is too small".into(),
            Some(machine("/m", json!(m + 1))),
        );
    }
    if let Some(x) = document.get("x") {
        if let Some(legacy) = x.get("legacy") {
            report(
                Code::UnknownField,
                "/x",
                "`x` has the legacy shape".into(),
                Some(machine("/x", json!({ "y": legacy }))),
            );
        }
        if x.get("y").and_then(Value::as_str) == Some("wrong") {
            report(
                Code::UnknownTool,
                "/x/y",
                "`x.y` is \"wrong\"".into(),
                Some(machine("/x/y", json!("right"))),
            );
        }
    }
    if field("w") == Some("old") {
        report(
            Code::MaybeAbsentRead,
            "/w",
            "`w` is \"old\"".into(),
            Some(machine("/w", json!("new"))),
        );
    }
    if let Some(traps) = document.get("traps").and_then(Value::as_array) {
        for (i, t) in traps.iter().enumerate() {
            let at = format!("/traps/{i}");
            match t.as_str() {
                Some("trap") => report(
                    Code::ToolArgumentMismatch,
                    &at,
                    "a trap".into(),
                    Some(machine(&at, json!("worse"))),
                ),
                Some("worse") => report(Code::DanglingAfter, &at, "worse".into(), None),
                _ => {}
            }
        }
    }
    if document.get("stuck").is_some() {
        report(Code::MissingField, "/stuck", "`stuck` is set".into(), None);
    }

    let findings_json = Value::Array(
        findings
            .iter()
            .map(|f| json!({ "code": f.code.as_str(), "pointer": f.pointer }))
            .collect(),
    );
    let state = serde_json::to_string(&document).expect("a JSON value serialises");
    let version = (!findings.iter().any(Finding::is_error)).then(|| state.clone());
    Checked {
        findings,
        findings_json,
        document: lwir_spec::document::read(bytes.to_vec())
            .document
            .map(std::sync::Arc::new),
        state,
        version,
    }
}

fn bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("a JSON value serialises")
}

fn parsed(draft: &[u8]) -> Value {
    serde_json::from_slice(draft).expect("drafts are JSON")
}

/// Fix passes over `draft` as the loop runs them: the starting state is visited first.
/// Returns the outcome and how many times the checker ran (the start included).
fn fix(draft: Value, max_passes: u32) -> (FixOutcome, usize) {
    let mut check = FakeCheck::default();
    let draft = bytes(&draft);
    let checked = check.check(&draft);
    let mut seen = Seen::default();
    assert_eq!(seen.visit(&checked), None);
    let mut told = Vec::new();
    let outcome = fixes::apply_safe_fixes(
        &mut check,
        draft,
        checked,
        &mut seen,
        max_passes,
        &mut |pass| told.push(pass.clone()),
    );
    assert_eq!(told, outcome.passes, "on_pass is told of each kept pass");
    (outcome, check.calls)
}

/// The pointers of the fixes of a list of applied (or rolled-back) fixes.
fn pointers(fixes: &[fixes::AppliedFix]) -> Vec<&str> {
    fixes.iter().map(|f| f.pointer.as_str()).collect()
}

// ---------------------------------------------------------------------------------------
// The fake planner
// ---------------------------------------------------------------------------------------

type Turn = Result<Response, PlannerFailure>;

/// Answers from a script, in order, and keeps every request it got.
struct ScriptedPlanner {
    script: VecDeque<Turn>,
    requests: Vec<Request>,
}

impl ScriptedPlanner {
    fn new(script: impl IntoIterator<Item = Turn>) -> Self {
        Self {
            script: script.into_iter().collect(),
            requests: Vec::new(),
        }
    }

    /// Each request as its wire JSON.
    fn requests_json(&self) -> Vec<Value> {
        self.requests
            .iter()
            .map(|r| parsed(&r.to_bytes()))
            .collect()
    }
}

impl Planner for ScriptedPlanner {
    fn call(&mut self, request: &Request, bytes: &[u8]) -> Turn {
        assert_eq!(
            bytes,
            request.to_bytes(),
            "the planner gets the request's bytes"
        );
        self.requests.push(request.clone());
        self.script
            .pop_front()
            .unwrap_or_else(|| panic!("planner call {} was not scripted", request.call()))
    }
}

fn answer(stdout: String) -> Turn {
    let answer = parse_answer(stdout.as_bytes()).expect("scripted answers are answers");
    Ok(Response {
        answer,
        stdout,
        elapsed: Duration::from_millis(5),
    })
}

/// A draft answer proposing `lwir`.
fn proposal(lwir: Value) -> Turn {
    answer(json!({ "kind": "draft", "lwir": lwir }).to_string())
}

/// An attention answer.
fn attention(rationale: &str) -> Turn {
    answer(json!({ "kind": "attention", "rationale": rationale }).to_string())
}

/// A call that failed with `code`.
fn failure(code: Code) -> Turn {
    Err(PlannerFailure {
        kind: FailureKind::of_code(code).expect("a planner failure code"),
        message: format!("scripted failure {code}"),
        stderr_tail: "boom".into(),
        elapsed: Duration::from_millis(5),
    })
}

fn bounds(max_repair_attempts: u32, max_planner_calls: u32) -> Bounds {
    Bounds {
        max_repair_attempts,
        max_planner_calls,
        ..Bounds::default()
    }
}

/// One session with the fake checker; the outcome and every event written.
fn session(start: Start, bounds: Bounds, planner: &mut ScriptedPlanner) -> (Outcome, Vec<Event>) {
    let context = Context {
        workflow: json!({ "name": "wf" }),
        manifest: json!({ "harnessId": "test" }),
        input: Value::Null,
    };
    let mut journal = Journal::in_memory();
    let outcome = repair_loop::run(
        start,
        &context,
        bounds,
        &mut FakeCheck::default(),
        planner,
        &mut journal,
    )
    .expect("an in-memory journal does not fail");
    (outcome, journal.written().to_vec())
}

fn event_names(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.event.as_str()).collect()
}

fn last_draft(outcome: &Outcome) -> Value {
    parsed(
        outcome
            .draft
            .as_deref()
            .expect("the session ended with a draft"),
    )
}

// ---------------------------------------------------------------------------------------
// Safe-fix passes
// ---------------------------------------------------------------------------------------

#[test]
fn disjoint_fixes_are_applied_together_in_one_pass() {
    let (outcome, _) = fix(json!({ "a": "wrong", "c": "wrong", "keep": 1 }), 16);
    assert_eq!(outcome.stop, FixStop::Clean);
    assert_eq!(outcome.passes.len(), 1);
    let pass = &outcome.passes[0];
    assert_eq!(pointers(&pass.applied), ["/a", "/c"]);
    assert_eq!(
        pass.applied
            .iter()
            .map(|f| f.code.as_str())
            .collect::<Vec<_>>(),
        ["LW301", "LW303"]
    );
    assert_eq!(
        pass.applied[0].patch,
        [PatchOp::Replace {
            path: "/a".into(),
            value: json!("right")
        }]
    );
    assert!(pass.rolled_back.is_empty());
    assert_eq!((pass.errors_before, pass.errors_after), (2, 0));
    assert_eq!(
        parsed(&outcome.draft),
        json!({ "a": "right", "c": "right", "keep": 1 })
    );
    assert_eq!(pass.state, outcome.checked.state);
    assert_eq!(outcome.checked.version, Some(outcome.checked.state.clone()));
}

#[test]
fn overlapping_fixes_take_separate_passes_and_the_inner_one_is_dropped_when_no_longer_needed() {
    // The fix at `/x` rewrites `x` to `{"y": "right"}`, which also settles `/x/y`.
    let (outcome, _) = fix(json!({ "x": { "legacy": "right", "y": "wrong" } }), 16);
    assert_eq!(outcome.stop, FixStop::Clean);
    assert_eq!(outcome.passes.len(), 1);
    assert_eq!(pointers(&outcome.passes[0].applied), ["/x"]);
    assert!(outcome.passes[0].rolled_back.is_empty());
    assert_eq!(
        (
            outcome.passes[0].errors_before,
            outcome.passes[0].errors_after
        ),
        (2, 0)
    );
    assert_eq!(parsed(&outcome.draft), json!({ "x": { "y": "right" } }));
}

#[test]
fn overlapping_fixes_take_separate_passes_and_the_inner_one_follows_when_still_needed() {
    // The fix at `/x` rewrites `x` to `{"y": "wrong"}`: `/x/y` still needs its fix.
    let (outcome, _) = fix(json!({ "x": { "legacy": "wrong", "y": "wrong" } }), 16);
    assert_eq!(outcome.stop, FixStop::Clean);
    assert_eq!(outcome.passes.len(), 2);
    assert_eq!(pointers(&outcome.passes[0].applied), ["/x"]);
    assert!(outcome.passes[0].rolled_back.is_empty());
    assert_eq!(
        (
            outcome.passes[0].errors_before,
            outcome.passes[0].errors_after
        ),
        (2, 1)
    );
    assert_eq!(pointers(&outcome.passes[1].applied), ["/x/y"]);
    assert_eq!(
        (
            outcome.passes[1].errors_before,
            outcome.passes[1].errors_after
        ),
        (1, 0)
    );
    assert_eq!(parsed(&outcome.draft), json!({ "x": { "y": "right" } }));
}

#[test]
fn a_fix_that_adds_an_error_is_rolled_back_and_the_others_in_its_pass_are_kept() {
    // `/d`: "trap" → "worse" turns LW304 into LW602 at `/d`, an error the draft did not have.
    let (outcome, checks) = fix(json!({ "a": "wrong", "d": "trap" }), 16);
    assert_eq!(outcome.passes.len(), 1);
    let pass = &outcome.passes[0];
    assert_eq!(pointers(&pass.applied), ["/a"]);
    assert_eq!(pointers(&pass.rolled_back), ["/d"]);
    assert_eq!(pass.rolled_back[0].code.as_str(), "LW304");
    assert_eq!((pass.errors_before, pass.errors_after), (2, 1));
    assert_eq!(parsed(&outcome.draft), json!({ "a": "right", "d": "trap" }));
    assert_eq!(outcome.checked.error_codes(), [Code::ToolArgumentMismatch]);
    // The `/d` fix is not tried again (it would add its error again): no second pass, and
    // the passes stop for want of a fix that helps.
    assert_eq!(outcome.stop, FixStop::NoFixes);
    assert!(outcome.rolled_back.is_empty());
    // 1 start + (both at once + without the one whose place has the new error).
    assert_eq!(checks, 3);
}

/// A thousand fixes that each add an error where they apply, next to a good one, cost a
/// few validations, not one each: the fixes near the new errors are undone together.
#[test]
fn many_bad_fixes_cost_a_few_validations() {
    let traps = vec![json!("trap"); 1000];
    let (outcome, checks) = fix(json!({ "a": "wrong", "traps": traps }), 16);
    let pass = &outcome.passes[0];
    assert_eq!(pointers(&pass.applied), ["/a"]);
    assert_eq!(pass.rolled_back.len(), 1000);
    assert_eq!(pass.rolled_back[7].added_errors[0].pointer, "/traps/7");
    // 1 start + (all at once + without the thousand); the next pass: (the thousand alone,
    // all suspects: nothing to keep).
    assert!(checks <= 5, "{checks} validations");
}

/// When the harm crosses places, fixes are tried one by one, but at most 32 a pass.
#[test]
fn one_at_a_time_is_bounded() {
    let traps = vec![json!("trap"); 100];
    let mut fake = FakeCheck::default();
    let draft = bytes(&json!({ "traps": traps }));
    let checked = fake.check(&draft);
    // A checker for which every fix also breaks a place no fix touches.
    struct Spiteful(FakeCheck);
    impl Check for Spiteful {
        fn check(&mut self, bytes: &[u8]) -> Checked {
            let mut checked = self.0.check(bytes);
            let text = String::from_utf8_lossy(bytes);
            if text.contains("worse") {
                checked.findings.push(Finding::new(
                    Code::MissingField,
                    "/elsewhere",
                    Span::new(0, 1),
                    "elsewhere".to_owned(),
                ));
            }
            checked
        }
    }
    let mut spiteful = Spiteful(fake);
    let outcome = fixes::apply_safe_fixes(
        &mut spiteful,
        draft,
        checked,
        &mut Seen::default(),
        16,
        &mut |_| {},
    );
    assert!(outcome.passes.is_empty(), "nothing helps");
    assert!(outcome.stop == FixStop::NoFixes, "{:?}", outcome.stop);
    // 1 start; per pass: all at once, without suspects, then at most 32 one at a time.
    assert!(
        spiteful.0.calls <= 1 + 2 + 32,
        "{} validations",
        spiteful.0.calls
    );
}

#[test]
fn maybe_incorrect_fixes_are_never_applied() {
    let draft = json!({ "b": "bad" });
    let (outcome, _) = fix(draft.clone(), 16);
    assert_eq!(outcome.stop, FixStop::NoFixes);
    assert!(outcome.passes.is_empty());
    assert_eq!(
        outcome.draft,
        bytes(&draft),
        "the draft's bytes are untouched"
    );
    assert_eq!(outcome.checked.error_codes(), [Code::WrongType]);
}

#[test]
fn fixes_of_warnings_are_not_applied() {
    let (outcome, _) = fix(json!({ "a": "wrong", "w": "old" }), 16);
    assert_eq!(outcome.stop, FixStop::Clean);
    assert_eq!(outcome.passes.len(), 1);
    assert_eq!(pointers(&outcome.passes[0].applied), ["/a"]);
    assert_eq!(parsed(&outcome.draft), json!({ "a": "right", "w": "old" }));
    assert_eq!(outcome.checked.warnings(), 1);
}

#[test]
fn fixes_that_undo_each_other_stop_as_a_cycle_before_the_pass_cap() {
    // "p" → "q" → "p": the third state is the first one again.
    let (outcome, _) = fix(json!({ "a": "p" }), 16);
    assert_eq!(outcome.stop, FixStop::Cycle(vec![Code::InvalidValue]));
    assert_eq!(outcome.passes.len(), 2);
    assert_eq!(parsed(&outcome.draft), json!({ "a": "p" }));
}

#[test]
fn fixes_that_keep_finding_work_stop_at_the_pass_cap() {
    let (outcome, _) = fix(json!({ "n": 0 }), 3);
    assert_eq!(outcome.stop, FixStop::PassCap);
    assert_eq!(outcome.passes.len(), 3);
    assert!(
        outcome
            .passes
            .iter()
            .all(|p| pointers(&p.applied) == ["/n"])
    );
    assert_eq!(parsed(&outcome.draft), json!({ "n": 3 }));
    assert_eq!(outcome.checked.errors(), 1);
}

#[test]
fn fixes_that_change_the_draft_but_not_the_findings_stop_as_a_cycle() {
    // Every state is new, but after the second pass the findings are those after the first.
    let (outcome, _) = fix(json!({ "m": 0 }), 16);
    assert_eq!(outcome.stop, FixStop::Cycle(vec![Code::InvalidValue]));
    assert_eq!(outcome.passes.len(), 2);
    assert_eq!(parsed(&outcome.draft), json!({ "m": 2 }));
}

// ---------------------------------------------------------------------------------------
// The loop
// ---------------------------------------------------------------------------------------

#[test]
fn plan_calls_are_retried_after_a_failure_and_are_not_repair_attempts() {
    let mut planner =
        ScriptedPlanner::new([failure(Code::PlannerFailed), proposal(json!({ "a": "ok" }))]);
    let (outcome, _) = session(Start::Plan, bounds(3, 8), &mut planner);
    let report = &outcome.report;
    assert!(report.converged(), "{}", report.reason());
    assert_eq!(report.outcome, "converged");
    assert_eq!(report.cause, None);
    assert_eq!(report.planner_calls, 2);
    assert_eq!(report.no_proposal.crashed, 1);
    assert_eq!(report.no_proposal.total(), 1);
    assert_eq!(report.proposals, 1);
    assert_eq!(report.proposals_failed, 0);
    assert_eq!(report.attempts_used, 0);
    assert_eq!(report.planner_findings.len(), 1);
    assert_eq!(report.planner_findings[0].code.as_str(), "LW802");
    assert_eq!(
        report.planner_findings[0].planner.as_ref().unwrap().call,
        Some(1)
    );
    assert_eq!(report.version.as_deref(), Some(r#"{"a":"ok"}"#));
    let requests = planner.requests_json();
    assert_eq!(
        requests
            .iter()
            .map(|r| (r["kind"].clone(), r["call"].clone()))
            .collect::<Vec<_>>(),
        [(json!("plan"), json!(1)), (json!("plan"), json!(2))]
    );
    assert_eq!(last_draft(&outcome), json!({ "a": "ok" }));
}

#[test]
fn without_planner_budget_the_loop_stops_after_safe_fixes_without_calling_the_planner() {
    let mut planner = ScriptedPlanner::new([]);
    let start = json!({ "b": "bad" });
    let (outcome, _) = session(Start::Draft(bytes(&start)), bounds(3, 0), &mut planner);
    let report = &outcome.report;
    assert_eq!(report.stopped_by, StoppedBy::CallCap);
    assert_eq!(report.cause, Some(Cause::NoPlannerBudget));
    assert_eq!(report.outcome, "exhausted");
    assert!(planner.requests.is_empty());
    assert_eq!((report.planner_calls, report.attempts_used), (0, 0));
    assert_eq!(report.errors, 1);
    assert!(
        report.reason().contains("no planner call was allowed"),
        "{}",
        report.reason()
    );
    assert_eq!(last_draft(&outcome), start);
}

#[test]
fn safe_fixes_alone_converge_without_the_planner() {
    let mut planner = ScriptedPlanner::new([]);
    let (outcome, events) = session(
        Start::Draft(bytes(&json!({ "a": "wrong" }))),
        bounds(3, 8),
        &mut planner,
    );
    let report = &outcome.report;
    assert!(report.converged(), "{}", report.reason());
    assert!(planner.requests.is_empty());
    assert_eq!(report.planner_calls, 0);
    assert_eq!(report.fixes_applied, 1);
    assert_eq!(report.fixes_rolled_back, 0);
    assert_eq!(
        event_names(&events),
        [
            "validation.completed",
            "repair.applied",
            "validation.completed"
        ]
    );
    assert_eq!(events[0].data["errors"], 1);
    assert_eq!(events[0].data["findings"][0]["fix"], "machine-applicable");
    assert_eq!(events[1].data["applied"][0]["pointer"], "/a");
    assert_eq!(events[2].data["errors"], 0);
    assert_eq!(events[2].data["version"], r#"{"a":"right"}"#);
    assert_eq!(last_draft(&outcome), json!({ "a": "right" }));
}

#[test]
fn repair_requests_number_attempts_and_calls_and_resend_the_draft_after_a_failure() {
    let mut planner = ScriptedPlanner::new([
        // Plan: `a` has a safe fix, `b` has not.
        proposal(json!({ "a": "wrong", "b": "bad" })),
        // Repair attempt 1 fails; attempt 2 must carry the same draft.
        failure(Code::PlannerTimedOut),
        // Attempt 2 trades the `b` error for a `stuck` one.
        proposal(json!({ "a": "right", "b": "good", "stuck": true })),
        // Attempt 3 converges.
        proposal(json!({ "a": "right", "b": "good" })),
    ]);
    let (outcome, _) = session(Start::Plan, bounds(3, 8), &mut planner);
    let report = &outcome.report;
    assert!(report.converged(), "{}", report.reason());
    assert_eq!(report.planner_calls, 4);
    assert_eq!(report.attempts_used, 3);
    assert_eq!(report.proposals, 3);
    assert_eq!(report.proposals_failed, 2);
    assert_eq!(report.no_proposal.timed_out, 1);
    assert_eq!(report.fixes_applied, 1);

    let requests = planner.requests_json();
    assert_eq!(requests.len(), 4);
    let summary: Vec<_> = requests
        .iter()
        .map(|r| (r["kind"].clone(), r["call"].clone(), r["attempt"].clone()))
        .collect();
    assert_eq!(
        summary,
        [
            (json!("plan"), json!(1), Value::Null),
            (json!("repair"), json!(2), json!(1)),
            (json!("repair"), json!(3), json!(2)),
            (json!("repair"), json!(4), json!(3)),
        ]
    );
    for repair in &requests[1..] {
        assert_eq!(repair["max_attempts"], 3);
        assert_eq!(repair["workflow"], json!({ "name": "wf" }));
        assert_eq!(repair["manifest"], json!({ "harnessId": "test" }));
    }
    // The first repair gets the draft after its safe fix, and the checker's findings of it.
    let fixed = json!({ "a": "right", "b": "bad" });
    assert_eq!(requests[1]["draft"], fixed);
    assert_eq!(requests[1]["findings"], check(&bytes(&fixed)).findings_json);
    assert_eq!(
        requests[1]["findings"],
        json!([{ "code": "LW103", "pointer": "/b" }])
    );
    // After the failed call the same draft and findings go out again.
    assert_eq!(requests[2]["draft"], requests[1]["draft"]);
    assert_eq!(requests[2]["findings"], requests[1]["findings"]);
    // Then the proposal's own findings.
    assert_eq!(
        requests[3]["draft"],
        json!({ "a": "right", "b": "good", "stuck": true })
    );
    assert_eq!(
        requests[3]["findings"],
        json!([{ "code": "LW101", "pointer": "/stuck" }])
    );
}

#[test]
fn a_proposal_that_returns_to_an_earlier_state_stops_as_a_cycle() {
    let start = json!({ "b": "bad" });
    let mut planner = ScriptedPlanner::new([
        proposal(json!({ "b": "bad", "stuck": true })),
        proposal(start.clone()),
    ]);
    let (outcome, _) = session(Start::Draft(bytes(&start)), bounds(3, 8), &mut planner);
    let report = &outcome.report;
    assert_eq!(report.stopped_by, StoppedBy::Cycle);
    assert_eq!(report.cause, Some(Cause::RepeatedState));
    assert_eq!(report.planner_calls, 2);
    assert_eq!(report.attempts_used, 2);
    assert_eq!(report.proposals, 2);
    // Left A with LW103, B with LW101 and LW103, and back in A with LW103.
    assert_eq!(report.cycle_codes, ["LW101", "LW103"]);
    let last = report.planner_findings.last().expect("a cycle finding");
    assert_eq!(last.code.as_str(), "LW808");
    assert_eq!(last.planner.as_ref().unwrap().call, None);
    assert!(last.message.contains("LW101, LW103"), "{}", last.message);
    assert!(report.reason().contains("circle"), "{}", report.reason());
    assert_eq!(last_draft(&outcome), start);
}

#[test]
fn attention_on_the_first_repair_stops_the_loop_with_budget_left() {
    let start = json!({ "b": "bad" });
    let mut planner = ScriptedPlanner::new([attention("cannot tell what b should be")]);
    let (outcome, _) = session(Start::Draft(bytes(&start)), bounds(3, 8), &mut planner);
    let report = &outcome.report;
    assert_eq!(report.stopped_by, StoppedBy::Attention);
    assert_eq!(report.cause, Some(Cause::PlannerGaveNoProposal));
    assert_eq!(report.planner_calls, 1);
    assert_eq!(report.attempts_used, 1);
    assert_eq!(report.no_proposal.attention, 1);
    assert_eq!(report.planner_findings.len(), 1);
    assert_eq!(report.planner_findings[0].code.as_str(), "LW807");
    assert!(
        report.planner_findings[0]
            .message
            .contains("cannot tell what b should be")
    );
    assert!(report.reason().contains("attention"), "{}", report.reason());
    assert_eq!(last_draft(&outcome), start);
}

#[test]
fn failed_repair_calls_use_up_the_attempts() {
    let mut planner = ScriptedPlanner::new([
        failure(Code::PlannerAnswerNotJson),
        failure(Code::PlannerFailed),
    ]);
    let (outcome, _) = session(
        Start::Draft(bytes(&json!({ "b": "bad" }))),
        bounds(2, 8),
        &mut planner,
    );
    let report = &outcome.report;
    assert_eq!(report.stopped_by, StoppedBy::AttemptCap);
    assert_eq!(report.cause, Some(Cause::PlannerGaveNoProposal));
    assert_eq!((report.planner_calls, report.attempts_used), (2, 2));
    assert_eq!(
        (report.no_proposal.not_json, report.no_proposal.crashed),
        (1, 1)
    );
    assert!(
        report
            .reason()
            .starts_with("max_repair_attempts reached: the planner gave no proposal"),
        "{}",
        report.reason()
    );
}

/// Same planner behaviour as the test below, without a safe fix: the loop goes on.
#[test]
fn an_unchanged_finding_set_without_fix_passes_is_not_a_cycle() {
    let mut planner = ScriptedPlanner::new([
        proposal(json!({ "b": "bad", "note": "tried" })),
        proposal(json!({ "b": "good" })),
    ]);
    let (outcome, _) = session(
        Start::Draft(bytes(&json!({ "b": "bad" }))),
        bounds(3, 8),
        &mut planner,
    );
    assert!(outcome.report.converged(), "{}", outcome.report.reason());
    assert_eq!(outcome.report.planner_calls, 2);
}

#[test]
fn a_new_proposal_that_needs_a_safe_fix_is_not_a_cycle_when_no_state_repeats() {
    // Round 1: {a: wrong, b: bad} --fix--> {a: right, b: bad}, findings {LW103 /b}.
    // The planner proposes a new draft, {a: wrong, b: bad, note}: a state never seen. Its fix
    // pass gives {a: right, b: bad, note}, also never seen, whose findings are {LW103 /b}
    // again: a repeated finding set across rounds is not a cycle.
    let mut planner = ScriptedPlanner::new([
        proposal(json!({ "a": "wrong", "b": "bad", "note": "tried" })),
        proposal(json!({ "b": "good" })),
    ]);
    let (outcome, _) = session(
        Start::Draft(bytes(&json!({ "a": "wrong", "b": "bad" }))),
        bounds(3, 8),
        &mut planner,
    );
    assert_eq!(
        outcome.report.stopped_by,
        StoppedBy::Converged,
        "{}",
        outcome.report.reason()
    );
    assert_eq!(outcome.report.planner_calls, 2);
}
