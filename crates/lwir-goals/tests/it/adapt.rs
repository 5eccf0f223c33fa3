//! Plan adaptation under `goal run`: when it fires, what a revision keeps and obsoletes,
//! what it may not change, and near-simultaneous completions.

use crate::common;

use std::sync::Barrier;

use common::*;
use lwir_goals::projection::{Status, WorkStatus};
use lwir_goals::run::Quiet;
use lwir_goals::store::Store;
use serde_json::{Value, json};

/// A goal `a → b → c` (root `c`), all on `notes-cached`, adapting as `mode`.
fn chain(mode: &str, max_adaptations: u32) -> Value {
    let mut file = goal_file();
    file["work"] = json!([
        { "key": "a", "template": "notes-cached", "input": { "repo": "r" } },
        { "key": "b", "template": "notes-cached", "after": ["a"], "input": { "repo": "${ work.a.output.notes }" } },
        { "key": "c", "template": "notes-cached", "after": ["b"], "input": { "repo": "r" } }
    ]);
    file["root"] = json!("c");
    file["replanning"]["adaptation"] = json!(mode);
    file["replanning"]["max_adaptations"] = json!(max_adaptations);
    file["replanning"]["auto_apply"] = json!(true);
    file
}

fn keep() -> Value {
    json!({ "kind": "keep" })
}

/// `goal run` of `goal` on `runner`, adapting with `planner`, quietly.
fn run_adapting(
    world: &World,
    goal: &str,
    runner: &dyn lwir_goals::runner::Runner,
    planner: &mut dyn lwir_goals::agent::Agent,
) -> Result<lwir_goals::run::RunReport, lwir_goals::GoalError> {
    world
        .goals()
        .run(goal, runner, Some(planner), None, &mut Quiet)
}

#[test]
fn on_failure_fires_only_on_a_failure() {
    let world = World::new();
    let goal = world.create(&chain("conservative", 3));
    let failed_once = std::sync::Mutex::new(false);
    let runner = By("in memory", |r: &Value| {
        if r["work"]["key"] == "b" && !std::mem::replace(&mut *failed_once.lock().unwrap(), true) {
            json!({ "kind": "failed", "error": "flaky" })
        } else {
            ok()
        }
    });
    let mut planner = Script::new(vec![Ok(keep())]);
    let requests = planner.requests.clone();
    let report = run_adapting(&world, &goal, &runner, &mut planner).unwrap();
    assert_eq!(report.status, Status::Succeeded);
    let requests = requests.borrow();
    assert_eq!(requests.len(), 1, "one failure, one adaptation");
    assert_eq!(requests[0]["kind"], "adapt");
    assert_eq!(requests[0]["trigger"]["key"], "b");
    assert_eq!(requests[0]["trigger"]["succeeded"], false);
    assert_eq!(requests[0]["completed"][0]["key"], "a");
    assert_eq!(
        requests[0]["completed"][0]["output"],
        json!({ "notes": "n", "count": 1 })
    );
    assert_eq!(report.adaptations, [("p1".to_owned(), "kept".to_owned())]);
}

#[test]
fn every_step_fires_after_each_attempt_and_keep_changes_nothing_but_is_recorded() {
    let world = World::new();
    let goal = world.create(&chain("every-step", 5));
    let runner = By("in memory", |_| ok());
    let mut planner = Script::new(vec![Ok(keep()), Ok(keep())]);
    let requests = planner.requests.clone();
    let report = run_adapting(&world, &goal, &runner, &mut planner).unwrap();
    assert_eq!(report.status, Status::Succeeded);
    // After `a` and after `b`; after `c` the goal has succeeded and nothing remains.
    let keys: Vec<Value> = requests
        .borrow()
        .iter()
        .map(|r| r["trigger"]["key"].clone())
        .collect();
    assert_eq!(keys, [json!("a"), json!("b")]);
    let p = world.goals().show(&goal).unwrap();
    assert_eq!(p.generation, 0, "keep does not advance the generation");
    assert_eq!(p.adaptations.used, 2);
    assert_eq!(p.plans[1].status, "kept");
    assert_eq!(p.plans[1].kind, "adapt");
    assert_eq!(
        world
            .event_names(&goal)
            .iter()
            .filter(|e| *e == "plan.kept")
            .count(),
        2
    );
}

#[test]
fn a_revision_keeps_finished_work_obsoletes_dropped_pending_items_and_advances() {
    let world = World::new();
    let goal = world.create(&chain("every-step", 1));
    let runner = By("in memory", |_| ok());
    let revise = json!({ "kind": "revise", "root": "c2", "items": [
        { "key": "a", "template": "notes-cached", "input": { "repo": "r" } },
        { "key": "c2", "template": "notes-cached", "after": ["a"], "input": { "repo": "${ work.a.output.notes }" } }
    ] });
    let mut planner = Script::new(vec![Ok(revise)]);
    let before_a = world.first_event(&goal, "work.materialized");
    let report = run_adapting(&world, &goal, &runner, &mut planner).unwrap();
    assert_eq!(report.status, Status::Succeeded, "{}", report.reason);
    let p = world.goals().show(&goal).unwrap();
    assert_eq!(p.generation, 1);
    assert_eq!(p.active_root.as_ref().unwrap().key, "c2");
    let status = |key: &str| {
        p.governed_work
            .iter()
            .find(|w| w.key == key)
            .unwrap()
            .status
    };
    assert_eq!(status("a"), WorkStatus::Succeeded);
    assert_eq!(status("b"), WorkStatus::Obsolete);
    assert_eq!(status("c"), WorkStatus::Obsolete);
    assert_eq!(status("c2"), WorkStatus::Succeeded);
    assert_eq!(p.attempts.used, 2, "b and c never ran");
    // `a` is the same item, byte for byte: its one materialization is the first one.
    let events = world.store.events(&goal).unwrap();
    let a: Vec<_> = events
        .iter()
        .filter(|e| e.event == "work.materialized" && e.data["key"] == "a")
        .collect();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].data, before_a.data);
    let applied = events
        .iter()
        .rev()
        .find(|e| e.event == "plan.applied")
        .unwrap();
    assert_eq!(applied.data["obsoleted"].as_array().unwrap().len(), 2);
    assert_eq!(report.adaptations[0].1, "revised, generation 1");
}

#[test]
fn a_revision_that_alters_completed_work_is_refused() {
    let world = World::new();
    let goal = world.create(&chain("every-step", 1));
    let runner = By("in memory", |_| ok());
    let revise = json!({ "kind": "revise", "root": "c2", "items": [
        { "key": "a", "template": "notes-cached", "input": { "repo": "another" } },
        { "key": "c2", "template": "notes-cached", "after": ["a"], "input": { "repo": "r" } }
    ] });
    let mut planner = Script::new(vec![Ok(revise)]);
    let report = run_adapting(&world, &goal, &runner, &mut planner).unwrap();
    assert_eq!(
        report.status,
        Status::Succeeded,
        "the plan goes on as it was"
    );
    let p = world.goals().show(&goal).unwrap();
    assert_eq!(p.generation, 0);
    assert_eq!(p.plans[1].status, "failed");
    let failed = world.first_event(&goal, "plan.failed");
    assert_eq!(failed.data["code"], "LW1019");
    assert_eq!(failed.data["findings"][0]["pointer"], "/items/0/key");
    // As `lwirc validate --format json` prints a finding, by the same renderer: a span
    // with its line and column in the planner's answer, `related`, no extra members.
    let finding = failed.data["findings"][0].as_object().unwrap();
    let keys: Vec<&str> = finding.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "code", "help", "message", "pointer", "related", "severity", "span"
        ]
    );
    assert!(finding["span"]["line"].as_u64().unwrap() >= 1);
    assert!(finding["span"]["column"].as_u64().unwrap() >= 1);
    assert_eq!(
        p.replan_consumption.unwrap().planner_no_proposal,
        1,
        "attributed like a replan"
    );
}

#[test]
fn two_near_simultaneous_completions_give_exactly_one_revision() {
    let world = World::new();
    let mut file = chain("every-step", 4);
    file["work"] = json!([
        { "key": "a", "template": "notes-cached", "input": { "repo": "r" } },
        { "key": "b", "template": "notes-cached", "input": { "repo": "r" } },
        { "key": "c", "template": "notes-cached", "after": ["a", "b"], "input": { "repo": "r" } }
    ]);
    let goal = world.create(&file);
    let together = Barrier::new(2);
    let runner = By("in memory", |r: &Value| {
        if r["work"]["key"] != "c" && r["work"]["key"] != "d" {
            together.wait();
        }
        ok()
    });
    let revise = json!({ "kind": "revise", "root": "d", "items": [
        { "key": "d", "template": "notes-cached", "after": ["a", "b"], "input": { "repo": "r" } }
    ] });
    let mut planner = Script::new(vec![Ok(revise)]);
    let requests = planner.requests.clone();
    let report = run_adapting(&world, &goal, &runner, &mut planner).unwrap();
    assert_eq!(report.status, Status::Succeeded);
    assert_eq!(
        requests.borrow().len(),
        1,
        "the second completion saw the plan had changed"
    );
    let p = world.goals().show(&goal).unwrap();
    assert_eq!(p.generation, 1);
    assert_eq!(p.adaptations.used, 1);
}

#[test]
fn adapt_requests_and_answers_satisfy_the_protocol_schema() {
    let world = World::new();
    let goal = world.create(&chain("every-step", 1));
    let runner = By("in memory", |_| ok());
    let mut planner = Script::new(vec![Ok(keep())]);
    let requests = planner.requests.clone();
    run_adapting(&world, &goal, &runner, &mut planner).unwrap();
    let request = &requests.borrow()[0];
    let errors: Vec<String> = protocol("adapt_request")
        .iter_errors(request)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let answer = protocol("answer");
    assert!(answer.is_valid(&keep()));
    assert!(answer.is_valid(&json!({ "kind": "revise", "items": [{ "key": "x", "template": "t", "input": {} }], "root": "x" })));
    let example = example_answer("adaptive/planner/call-1.json");
    assert!(answer.is_valid(&example));
}

#[test]
fn a_goal_cancelled_during_an_adaptation_is_not_revised() {
    let world = World::new();
    let goal = world.create(&chain("every-step", 1));
    let runner = By("in memory", |_| ok());
    // A planner that cancels the goal while it "thinks", then revises.
    let mut planner = Answering("cancelling", || {
        world.goals().cancel(&goal, Some("mid-adaptation")).unwrap();
        let revise = json!({ "kind": "revise", "root": "c2", "items": [
            { "key": "c2", "template": "notes-cached", "after": ["a"], "input": { "repo": "r" } }
        ] });
        Ok(serde_json::to_vec(&revise).unwrap())
    });
    let e = run_adapting(&world, &goal, &runner, &mut planner).unwrap_err();
    assert!(
        e.to_string()
            .contains("cancelled while it was being adapted"),
        "{e}"
    );
    let p = world.goals().show(&goal).unwrap();
    assert_eq!(p.status, Status::Cancelled);
    assert_eq!(p.generation, 0);
    assert!(
        !world
            .event_names(&goal)
            .iter()
            .any(|n| n == "plan.proposed")
    );
}

#[test]
fn a_goal_without_replanning_runs_with_a_planner_and_never_asks_it() {
    let world = World::new();
    let mut file = goal_file();
    file.as_object_mut().unwrap().remove("replanning");
    let goal = world.create(&file);
    let runner = By("in memory", |_| ok());
    // No answers: a call would fail the test.
    let mut planner = Script::new(Vec::new());
    let requests = planner.requests.clone();
    let report = run_adapting(&world, &goal, &runner, &mut planner).unwrap();
    assert_eq!(report.status, Status::Succeeded, "{}", report.reason);
    assert!(requests.borrow().is_empty());
    assert!(report.adaptations.is_empty());
}

#[test]
fn a_goal_without_replanning_is_never_due_to_adapt_nor_refused_by_a_panic() {
    let world = World::new();
    let mut file = goal_file();
    file.as_object_mut().unwrap().remove("replanning");
    let goal = world.create(&file);
    let goals = world.goals();
    fail_until_spent(&world, &goal, "notes");
    let loaded = goals.load(&goal).unwrap();
    let notes = &loaded.fold.items[0].spec;
    let trigger = lwir_goals::adapt::Trigger {
        work: notes.work.clone(),
        key: notes.key.clone(),
        attempt: 1,
        succeeded: false,
        generation: 0,
    };
    assert!(goals.adaptation_due(&loaded, &trigger).is_some());
    let mut planner = Script::new(Vec::new());
    match goals.adapt(&goal, &trigger, &mut planner).unwrap() {
        lwir_goals::adapt::Adapted::NotTriggered(why) => {
            assert!(why.contains("replanning"), "{why}")
        }
        other => panic!("adapted: {other:?}"),
    }
    // A replan of it is refused with the reason, not a panic.
    let e = goals.replan(&goal, &mut planner, None).unwrap_err();
    assert!(e.to_string().contains("does not replan"), "{e}");
}
