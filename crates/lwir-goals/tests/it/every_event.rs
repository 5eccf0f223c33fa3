//! One event of every kind the goal log knows, and one of a kind it does not, appended
//! through each store (a directory, and PostgreSQL when `LWIRC_TEST_POSTGRES` names a
//! server) and read back as log lines: each line, but for its `time` and `chain` values,
//! must be byte for byte its line in `tests/data/every-event.jsonl`. That file was written
//! by the lwirc whose log format is the contract: a log written before must still read, and
//! a log written now must read in an older lwirc. Every line's chain must check, too.

use std::collections::BTreeMap;

use lwir_goals::events::{self, GoalEvent};
use lwir_goals::store::{Directory, Store};
use serde_json::json;

const GOLDEN: &str = include_str!("../data/every-event.jsonl");

/// One event of each kind, every optional field given, and one of a kind lwirc does not
/// know (a newer lwirc's).
fn every_kind() -> Vec<GoalEvent> {
    let item = lwir_goals::file::ItemSpec {
        key: "k1".into(),
        template: "triage-lite".into(),
        input: json!({ "repo": "${ work.k0.output.summary }" }),
        after: vec!["k0".into()],
    };
    vec![
        GoalEvent::Created(events::Created {
            goal: "g-1".into(),
            name: "triage".into(),
            digest: format!("sha256:{}", "a".repeat(64)),
            created_unix_s: 1_764_547_200,
            planner_manifest: json!({ "model": "deep", "skills": [] }),
            by: "tester".into(),
            catalog: None,
        }),
        GoalEvent::Materialized(events::Materialized {
            work: "w-1".into(),
            key: "k0".into(),
            template: "triage-lite".into(),
            version: format!("sha256:{}", "b".repeat(64)),
            plan: "p0".into(),
            generation: 0,
            after: vec!["w-0".into()],
            reads: BTreeMap::from([("k9".into(), "w-0".into())]),
            input: json!({ "repo": "acme/widgets", "n": 1.5, "big": 1e300, "neg": -0.0 }),
            root: true,
        }),
        GoalEvent::Started(events::Started {
            work: "w-1".into(),
            attempt: 1,
            dispatched: true,
            generation: Some(0),
        }),
        GoalEvent::Succeeded(events::Succeeded {
            work: "w-1".into(),
            attempt: 1,
            output: json!({ "summary": "done \u{1b}[31m \u{2028} \"q\" é" }),
            run: Some("66b56fabbbafd95a".into()),
        }),
        GoalEvent::Failed(events::Failed {
            work: "w-1".into(),
            attempt: 2,
            error: "boom\nline two".into(),
            interrupted: true,
            code: Some("LW1012".into()),
            run: Some("r-2".into()),
        }),
        GoalEvent::Requested(events::Requested {
            plan: "p1".into(),
            kind: "replan".into(),
            generation: 0,
            context_hash: format!("sha256:{}", "c".repeat(64)),
            by: "tester".into(),
        }),
        GoalEvent::Proposed(events::Proposed {
            plan: "p1".into(),
            round: 1,
            items: vec![item],
            root: "k1".into(),
        }),
        GoalEvent::Reviewed(events::Reviewed {
            plan: "p1".into(),
            round: 1,
            verdict: "passed".into(),
            reviewer: "reviewer".into(),
            by: "review.sh".into(),
            feedback: Some("fine".into()),
        }),
        GoalEvent::Rejected(events::Rejected {
            plan: "p1".into(),
            by: "tester".into(),
            feedback: "too much".into(),
        }),
        GoalEvent::Applied(events::Applied {
            plan: "p1".into(),
            generation: 1,
            root: "w-2".into(),
            by: "auto_apply".into(),
            obsoleted: vec!["w-1".into()],
        }),
        GoalEvent::Attention(events::Attention {
            plan: "p2".into(),
            rationale: "ask a person".into(),
            from: "planner".into(),
        }),
        GoalEvent::Interrupted(events::Interrupted {
            plan: "p2".into(),
            detail: "the process went away".into(),
        }),
        GoalEvent::PlanFailed(events::PlanFailed {
            plan: "p3".into(),
            charged: true,
            code: "LW1001".into(),
            message: "refused".into(),
            findings: vec![json!({ "code": "LW1001", "pointer": "/items/0" })],
        }),
        GoalEvent::Retry(events::Retry {
            plan: "p2".into(),
            by: "tester".into(),
        }),
        GoalEvent::Kept(events::Kept { plan: "p4".into() }),
        GoalEvent::Cancelled(events::Cancelled {
            by: "tester".into(),
            reason: Some("done with it".into()),
        }),
        GoalEvent::Other("goal.noted".into(), json!({ "note": 7 })),
    ]
}

/// A log line with its `time` value as `T` and without its `chain` member.
fn masked(line: &str) -> String {
    let (head, rest) = line.split_once(r#""time":""#).expect("a line has a time");
    let (_, rest) = rest.split_once('"').expect("a time ends");
    let line = format!(r#"{head}"time":"T"{rest}"#);
    match line.rsplit_once(r#","chain":""#) {
        Some((head, _)) => format!("{head}}}"),
        None => line,
    }
}

/// Appends every kind to `goal` in `store`, and checks that the store reads them back.
fn append_every_kind(store: &dyn Store, goal: &str) {
    for (last, event) in every_kind().iter().enumerate() {
        store.append(goal, event, last as u64).unwrap();
    }
    let read = store.events(goal).expect("every chain checks");
    assert_eq!(read.len(), every_kind().len());
    for (event, record) in every_kind().iter().zip(&read) {
        assert_eq!(record.event, event.name());
        assert_eq!(
            &GoalEvent::parse(&record.event, &record.data).unwrap(),
            event
        );
    }
}

fn assert_golden(lines: Vec<String>) {
    let written: Vec<String> = lines.iter().map(|l| masked(l)).collect();
    let golden: Vec<&str> = GOLDEN.lines().collect();
    assert_eq!(written.len(), golden.len());
    for (i, (w, g)) in written.iter().zip(golden).enumerate() {
        assert_eq!(w, g, "line {} differs from today's format", i + 1);
    }
}

#[test]
fn every_kind_is_written_as_today_in_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let store = Directory::at(dir.path().join("goals"));
    append_every_kind(&store, "g-1");
    let log = dir.path().join("goals/g-1/events.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.lines().all(|l| l.contains(r#","chain":""#)));
    assert_golden(text.lines().map(str::to_owned).collect());
}

#[test]
fn every_kind_is_written_as_today_in_postgres() {
    let Some(url) = crate::common::postgres_database("lwirc_every_event") else {
        return;
    };
    let store = lwir_goals::postgres::Postgres::connect(&url).unwrap();
    append_every_kind(&store, "g-1");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let lines = client
        .query(
            "SELECT line FROM lwir_goal_events WHERE goal = 'g-1' ORDER BY seq",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get::<_, String>(0))
        .collect();
    assert_golden(lines);
}
