//! The compile session as a library (`lwir_session::compile`): driven by any `Planner`
//! and any registry, as the goals layer, a model harness or an editor server drive it.

use crate::common;

use std::time::Duration;

use common::*;
use lwir_registry::Registry;
use lwir_repair::events::{self, SessionEvent};
use lwir_repair::harness::{Planner, PlannerFailure, Response};
use lwir_repair::process::Limits;
use lwir_repair::protocol::{Request, parse_answer};
use lwir_session::{self as session, End, Observer, Prepared, Settings};
use lwir_validators::pipeline::Source;

/// Answers call `n` with the `n`-th of `answers` (the example's recorded planner answers),
/// and `attention` after them.
struct Scripted {
    answers: Vec<String>,
    calls: u32,
}

impl Planner for Scripted {
    fn call(&mut self, request: &Request, _: &[u8]) -> Result<Response, PlannerFailure> {
        self.calls += 1;
        assert_eq!(request.call(), self.calls);
        let stdout = self
            .answers
            .get(self.calls as usize - 1)
            .cloned()
            .unwrap_or_else(|| r#"{"kind":"attention","rationale":"out of ideas"}"#.to_owned());
        Ok(Response {
            answer: parse_answer(stdout.as_bytes()).unwrap(),
            stdout,
            elapsed: Duration::from_millis(1),
        })
    }
}

fn example_answers(n: usize) -> Vec<String> {
    (1..=n)
        .map(|i| std::fs::read_to_string(example(&format!("planner/call-{i}.json"))).unwrap())
        .collect()
}

fn prepared() -> Prepared {
    Prepared::new(Source {
        name: "workflow.json".into(),
        bytes: std::fs::read(example("workflow.json")).unwrap(),
    })
    .unwrap()
}

fn settings(dir: &std::path::Path) -> Settings {
    Settings {
        dir: dir.join("session"),
        resume: false,
        input: None,
        max_repair_attempts: None,
        max_planner_calls: None,
        planner: "in-process".into(),
        limits: Limits::default(),
    }
}

/// Counts what it is told.
#[derive(Default)]
struct Seen {
    begun: u32,
    events: Vec<&'static str>,
}

impl Observer for Seen {
    fn begun(
        &mut self,
        _: &std::path::Path,
        _: lwir_repair::repair_loop::Bounds,
        resumed: Option<usize>,
    ) {
        assert_eq!(resumed, None);
        self.begun += 1;
    }

    fn event(&mut self, event: &SessionEvent, replayed: bool) {
        assert!(!replayed);
        self.events.push(event.name());
    }
}

#[test]
fn a_library_session_registers_the_converged_draft() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::at(dir.path().join("registry"));
    let mut planner = Scripted {
        answers: example_answers(2),
        calls: 0,
    };
    let mut seen = Seen::default();
    let settings = settings(dir.path());
    let compiled =
        session::compile(&prepared(), &settings, &mut planner, &registry, &mut seen).unwrap();
    let End::Registered(entry) = &compiled.end else {
        panic!("{:?}", compiled.end);
    };
    assert_eq!(
        entry.version.to_string(),
        "sha256:5c281a30701ece8463ea55bda73114d347b874931ef2b7cfd530b2c4cb6f9510"
    );
    assert_eq!(planner.calls, 2);
    assert_eq!(compiled.outcome.report.planner_calls, 2);
    assert!(registry.entry(&entry.version).unwrap().is_some());
    assert!(settings.dir.join("draft.json").exists());
    // The observer saw every event the log holds, in order.
    let log = events::read(&settings.dir.join(events::LOG_FILE)).unwrap();
    let names: Vec<&str> = log.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(seen.begun, 1);
    assert_eq!(seen.events, names);
    assert_eq!(names.first(), Some(&"harness.session.started"));
    assert_eq!(names.last(), Some(&"workflow.registered"));
}

#[test]
fn a_library_session_that_does_not_converge_keeps_the_last_draft_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::at(dir.path().join("registry"));
    // The first draft only; the repair request gets `attention`.
    let mut planner = Scripted {
        answers: example_answers(1),
        calls: 0,
    };
    let settings = settings(dir.path());
    let compiled =
        session::compile(&prepared(), &settings, &mut planner, &registry, &mut ()).unwrap();
    assert!(
        matches!(compiled.end, End::NotConverged),
        "{:?}",
        compiled.end
    );
    let report = &compiled.outcome.report;
    assert_eq!(
        report.planner_findings.last().unwrap().code.as_str(),
        "LW807"
    );
    assert!(settings.dir.join("last-draft.json").exists());
    let log = events::read(&settings.dir.join(events::LOG_FILE)).unwrap();
    assert_eq!(log.last().unwrap().event, "session.failed");
    assert!(registry.list().unwrap().0.is_empty());
}
