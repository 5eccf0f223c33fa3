//! Goals end to end through the library: create, next, report, replan, review, apply,
//! attribution, and the history that stays readable after every step.

use crate::common;

use common::*;
use lwir_goals::GoalError;
use lwir_goals::events::GoalEvent;
use lwir_goals::goal::{Replanned, Report};
use lwir_goals::projection::{Status, WorkStatus};
use lwir_goals::store::{Store, StoreError};
use lwir_repair::harness::FailureKind;
use lwir_spec::Code;
use serde_json::{Value, json};

fn codes(findings: &[lwir_spec::Finding]) -> Vec<&'static str> {
    findings.iter().map(|f| f.code.as_str()).collect()
}

/// The goal is created, and the root of generation 0 has failed for good: it is eligible.
fn eligible(world: &World) -> String {
    let goal = world.create(&goal_file());
    fail_until_spent(world, &goal, "notes");
    assert_eq!(world.goals().show(&goal).unwrap().status, Status::Eligible);
    goal
}

#[test]
fn the_same_file_again_is_the_same_goal_and_writes_nothing() {
    let world = World::new();
    let goal = world.create(&goal_file());
    let events = world.store.events(&goal).unwrap();
    assert_eq!(
        world.event_names(&goal),
        ["goal.created", "work.materialized", "plan.applied"]
    );
    // The same JSON written differently (compact, members reordered) is the same goal.
    let mut reordered = serde_json::Map::new();
    for (k, v) in goal_file().as_object().unwrap().iter().rev() {
        reordered.insert(k.clone(), v.clone());
    }
    let again = world
        .goals()
        .create(serde_json::to_vec(&Value::Object(reordered)).unwrap())
        .unwrap();
    assert_eq!(again.id, goal);
    assert!(!again.new);
    assert_eq!(world.store.events(&goal).unwrap(), events);
    // Another objective is another goal.
    let mut other = goal_file();
    other["objective"] = json!("Something else.");
    assert_ne!(world.create(&other), goal);
    assert_eq!(world.store.goals().unwrap().len(), 2);
}

#[test]
fn next_resolves_inputs_and_report_records_attempts() {
    let world = World::new();
    let goal = world.create(&goal_file());
    let (ready, unresolved) = world.goals().next(&goal).unwrap();
    assert!(unresolved.is_empty());
    assert_eq!(ready.len(), 1);
    assert_eq!(ready[0].key, "notes");
    assert_eq!(ready[0].attempt, 1);
    assert_eq!(
        ready[0].input,
        json!({ "repo": "acme/widgets", "since": "v1.4.0" })
    );
    let id = ready[0].id.clone();
    // Deterministic ids: from goal, plan and key.
    assert_eq!(id, lwir_goals::goal::work_id(&goal, "p0", "notes"));

    let goals = world.goals();
    goals.report(&goal, &id, &Report::Started).unwrap();
    let p = goals.show(&goal).unwrap();
    assert_eq!(p.status, Status::Running);
    assert!(
        goals.next(&goal).unwrap().0.is_empty(),
        "nothing more to dispatch while it runs"
    );
    let refused = goals.report(&goal, &id, &Report::Started).unwrap_err();
    assert!(refused.to_string().contains("already running"), "{refused}");

    // An output that breaks the template's output schema is refused, nothing recorded.
    let before = world.store.events(&goal).unwrap().len();
    let bad = goals
        .report(&goal, &id, &Report::Succeeded(json!({ "notes": 3 })))
        .unwrap_err();
    assert!(bad.to_string().contains("LW1012"), "{bad}");
    assert!(bad.to_string().contains("/notes"), "{bad}");
    assert_eq!(world.store.events(&goal).unwrap().len(), before);

    goals
        .report(
            &goal,
            &id,
            &Report::Succeeded(json!({ "notes": "…", "count": 3 })),
        )
        .unwrap();
    let p = goals.show(&goal).unwrap();
    assert_eq!(p.status, Status::Succeeded);
    assert_eq!(p.attempts.used, 1);
    // Finished work takes no more reports.
    let again = goals
        .report(&goal, &id, &Report::Failed("late".into()))
        .unwrap_err();
    assert!(again.to_string().contains("already succeeded"), "{again}");
}

#[test]
fn attempts_stop_at_the_templates_ceiling_and_the_goal_becomes_eligible() {
    let world = World::new();
    let goal = world.create(&goal_file());
    let goals = world.goals();
    goals
        .report(&goal, "notes", &Report::Failed("timeout".into()))
        .unwrap();
    assert_eq!(
        goals.show(&goal).unwrap().status,
        Status::Ready,
        "a retry is left"
    );
    goals
        .report(&goal, "notes", &Report::Failed("timeout again".into()))
        .unwrap();
    let over = goals.report(&goal, "notes", &Report::Started).unwrap_err();
    assert!(over.to_string().contains("2 of 2 attempt"), "{over}");
    let p = goals.show(&goal).unwrap();
    assert_eq!(p.status, Status::Eligible);
    assert_eq!(p.work[0].status, WorkStatus::Failed);
    assert_eq!(p.work[0].errors.len(), 2);
    assert!(p.reason.contains("lwirc goal replan"), "{}", p.reason);
}

#[test]
fn a_goal_without_replanning_is_exhausted_when_its_root_fails() {
    let world = World::new();
    let mut file = goal_file();
    file.as_object_mut().unwrap().remove("replanning");
    let goal = world.create(&file);
    fail_until_spent(&world, &goal, "notes");
    let p = world.goals().show(&goal).unwrap();
    assert_eq!(p.status, Status::Exhausted);
    assert!(p.reason.contains("does not replan"), "{}", p.reason);
    let refused = world
        .goals()
        .replan(&goal, &mut Script::new(vec![]), None)
        .unwrap_err();
    assert!(matches!(refused, GoalError::Refused(_)), "{refused}");
}

#[test]
fn replan_then_approve_keeps_both_generations_and_counts_every_attempt() {
    let world = World::new();
    let goal = eligible(&world);
    let goals = world.goals();
    let mut planner = Script::new(vec![Ok(recovery())]);
    let requests = planner.requests.clone();
    let outcome = goals.replan(&goal, &mut planner, None).unwrap();
    assert!(
        matches!(outcome, Replanned::AwaitingReview { ref plan, .. } if plan == "p1"),
        "{outcome:?}"
    );

    // The request: the goal, the projection with each failed attempt's error, the catalog
    // with each template's interface and description, the remaining bounds, the manifest
    // with the context hash.
    let request = &requests.borrow()[0];
    assert_eq!(request["kind"], "replan");
    assert_eq!(request["protocol"], "lwir-planner/1");
    assert_eq!(request["goal"]["input"]["repo"], "acme/widgets");
    assert_eq!(request["failures"].as_array().unwrap().len(), 2);
    assert_eq!(request["failures"][0]["error"], "the API timed out");
    assert_eq!(request["projection"]["status"], "eligible");
    let catalog = request["catalog"].as_array().unwrap();
    assert_eq!(catalog.len(), 4);
    let cached = catalog
        .iter()
        .find(|t| t["name"] == "notes-cached")
        .unwrap();
    assert_eq!(cached["input"]["required"], json!(["repo"]));
    assert_eq!(cached["description"], "the notes-cached template");
    assert_eq!(request["bounds"]["replans_left"], 2);
    assert_eq!(request["bounds"]["attempts_left"], 8);
    assert!(
        request["manifest"]["outerLoopContextHash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(request["manifest"]["plannerModelSlotId"], "acme/large-5");

    let p = goals.show(&goal).unwrap();
    assert_eq!(p.status, Status::AwaitingReview);
    assert_eq!(p.generation, 0, "nothing is applied before review");
    assert!(goals.next(&goal).unwrap().0.is_empty());

    assert_eq!(goals.approve(&goal, "p1").unwrap(), 1);
    let p = goals.show(&goal).unwrap();
    assert_eq!(p.status, Status::Ready);
    assert_eq!(p.generation, 1);
    assert_eq!(p.active_root.as_ref().unwrap().key, "notes_cached");
    assert_eq!(p.governed_work_ids.len(), 2);
    let old = p.governed_work.iter().find(|w| w.key == "notes").unwrap();
    assert_eq!(old.status, WorkStatus::Superseded);
    assert_eq!(old.attempts, 2, "the failed attempts stay counted");
    assert_eq!(p.attempts.used, 2);
    assert_eq!(p.plans[1].receipt.as_ref().unwrap().reviewer, "person");
    // Reports on superseded work are refused.
    let refused = goals.report(&goal, &old.id, &Report::Started).unwrap_err();
    assert!(refused.to_string().contains("superseded"), "{refused}");

    goals
        .report(
            &goal,
            "notes_cached",
            &Report::Succeeded(json!({ "notes": "n", "count": 0 })),
        )
        .unwrap();
    let p = goals.show(&goal).unwrap();
    assert_eq!(p.status, Status::Succeeded);
    assert_eq!(p.attempts.used, 3);
    assert_eq!(p.generations.len(), 2);
    assert!(
        p.replan_consumption.is_none(),
        "a plan that advanced counts as neither"
    );
}

#[test]
fn a_multi_item_plan_reads_its_dependencys_output() {
    let world = World::new();
    let goal = eligible(&world);
    let goals = world.goals();
    let proposal = apply(
        json!([
            { "key": "draft", "template": "notes-cached", "input": { "repo": "${ goal.input.repo }" } },
            { "key": "post", "template": "publish",
              "input": { "text": "Notes (${ work.draft.output.count } changes): ${ work.draft.output.notes }",
                         "count": "${ work.draft.output.count + 1 }" } }
        ]),
        "post",
    );
    let mut planner = Script::new(vec![Ok(proposal)]);
    goals.replan(&goal, &mut planner, None).unwrap();
    goals.approve(&goal, "p1").unwrap();
    let (ready, _) = goals.next(&goal).unwrap();
    assert_eq!(
        ready.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(),
        ["draft"],
        "`post` waits for `draft`"
    );
    goals
        .report(
            &goal,
            "draft",
            &Report::Succeeded(json!({ "notes": "fixed #12", "count": 4 })),
        )
        .unwrap();
    let (ready, _) = goals.next(&goal).unwrap();
    assert_eq!(ready.len(), 1);
    assert_eq!(ready[0].key, "post");
    assert_eq!(
        ready[0].input,
        json!({ "text": "Notes (4 changes): fixed #12", "count": 5 })
    );
    let p = goals.show(&goal).unwrap();
    let post = p.work.iter().find(|w| w.key == "post").unwrap();
    let draft = p.work.iter().find(|w| w.key == "draft").unwrap();
    assert_eq!(
        post.after,
        std::slice::from_ref(&draft.id),
        "a `work.<key>` read is a dependency"
    );
}

/// A proposal refused with `code`: nothing materialized, the replan spent and counted as
/// no proposal.
fn refused_with(proposal: Value, code: Code) -> Vec<lwir_spec::Finding> {
    let world = World::new();
    let goal = eligible(&world);
    let goals = world.goals();
    let before = world.goals().show(&goal).unwrap();
    let outcome = goals
        .replan(&goal, &mut Script::new(vec![Ok(proposal)]), None)
        .unwrap();
    let Replanned::Failed {
        charged,
        findings: Some((_, findings)),
        ..
    } = outcome
    else {
        panic!("expected a refusal, got {outcome:?}");
    };
    assert!(charged);
    assert!(
        findings.iter().any(|f| f.code == code),
        "expected {code}, found {:?}",
        codes(&findings)
    );
    let p = goals.show(&goal).unwrap();
    assert_eq!(
        p.governed_work_ids, before.governed_work_ids,
        "nothing materialized"
    );
    assert_eq!(p.generation, 0);
    assert_eq!(p.replans.used, 1, "the replan is spent");
    assert_eq!(p.plans[1].status, "failed");
    assert_eq!(p.replan_consumption.unwrap().planner_no_proposal, 1);
    assert_eq!(
        world
            .event_names(&goal)
            .iter()
            .filter(|e| *e == "plan.applied")
            .count(),
        1,
        "only generation 0 was applied"
    );
    findings
}

/// An eligible goal whose replan proposed [`recovery`], which waits for review.
fn awaiting_review(world: &World) -> String {
    let goal = eligible(world);
    world
        .goals()
        .replan(&goal, &mut Script::new(vec![Ok(recovery())]), None)
        .unwrap();
    goal
}

/// [`refused_with`] a plan of `items` rooted at `root`.
fn refused_plan(items: Value, root: &str, code: Code) -> Vec<lwir_spec::Finding> {
    refused_with(apply(items, root), code)
}

#[test]
fn invariant_1_every_template_is_in_the_catalog() {
    let findings = refused_plan(
        json!([{ "key": "x", "template": "notes-cachd", "input": { "repo": "r" } }]),
        "x",
        Code::UnknownTemplate,
    );
    let f = findings
        .iter()
        .find(|f| f.code == Code::UnknownTemplate)
        .unwrap();
    assert_eq!(f.pointer, "/items/0/template");
    assert_eq!(f.help.as_deref(), Some("did you mean `notes-cached`?"));
}

#[test]
fn invariant_2_dependencies_name_active_work_or_earlier_items() {
    let findings = refused_plan(
        json!([
            { "key": "a", "template": "notes-cached", "after": ["b"], "input": { "repo": "r" } },
            { "key": "b", "template": "notes-cached", "after": ["ghost"], "input": { "repo": "r" } }
        ]),
        "a",
        Code::UnknownDependency,
    );
    let pointers: Vec<&str> = findings
        .iter()
        .filter(|f| f.code == Code::UnknownDependency)
        .map(|f| f.pointer.as_str())
        .collect();
    assert_eq!(pointers, ["/items/0/after/0", "/items/1/after/0"]);
}

#[test]
fn invariant_2_an_item_may_depend_on_active_work() {
    let world = World::new();
    let goal = eligible(&world);
    let proposal = apply(
        json!([{ "key": "again", "template": "notes-cached", "after": ["notes"], "input": { "repo": "r" } }]),
        "again",
    );
    let outcome = world
        .goals()
        .replan(&goal, &mut Script::new(vec![Ok(proposal)]), None)
        .unwrap();
    assert!(
        matches!(outcome, Replanned::AwaitingReview { .. }),
        "{outcome:?}"
    );
}

#[test]
fn invariant_3_the_root_is_new_and_root_capable() {
    refused_plan(
        json!([{ "key": "x", "template": "notes-cached", "input": { "repo": "r" } }]),
        "notes",
        Code::RootNotNew,
    );
    let findings = refused_plan(
        json!([{ "key": "m", "template": "mirror-log", "input": {} }]),
        "m",
        Code::RootNotRootCapable,
    );
    assert_eq!(findings[0].pointer, "/root");
}

#[test]
fn invariant_4_every_item_is_reachable_from_the_root() {
    let findings = refused_plan(
        json!([
            { "key": "side", "template": "mirror-log", "input": {} },
            { "key": "x", "template": "notes-cached", "input": { "repo": "r" } }
        ]),
        "x",
        Code::UnreachableWork,
    );
    assert_eq!(findings[0].pointer, "/items/0");
}

#[test]
fn invariant_5_the_bounds_hold() {
    let items: Vec<Value> = (0..5)
        .map(|i| {
            json!({ "key": format!("k{i}"), "template": "notes-cached", "input": { "repo": "r" },
                         "after": if i > 0 { json!([format!("k{}", i - 1)]) } else { json!([]) } })
        })
        .collect();
    let findings = refused_with(apply(Value::Array(items), "k4"), Code::PlanOverBounds);
    assert!(
        findings[0].message.contains("max_items_per_plan"),
        "{}",
        findings[0].message
    );
}

#[test]
fn invariant_6_templates_are_re_hashed_when_the_plan_is_materialized() {
    let world = World::new();
    let goal = awaiting_review(&world);
    let goals = world.goals();
    world
        .catalog
        .tampered
        .lock()
        .unwrap()
        .push(NOTES_CACHED.into());
    let before = goals.show(&goal).unwrap();
    let refused = goals.approve(&goal, "p1").unwrap_err();
    let GoalError::Findings { findings, .. } = refused else {
        panic!("expected findings, got {refused}");
    };
    assert_eq!(codes(&findings), ["LW1008"]);
    assert_eq!(findings[0].pointer, "/items/0/template");
    let p = goals.show(&goal).unwrap();
    assert_eq!(
        p.governed_work_ids, before.governed_work_ids,
        "nothing materialized"
    );
    assert_eq!(p.plans[1].status, "failed");
    assert_eq!(p.replans.used, 1);
}

#[test]
fn invariant_7_inputs_type_check_against_the_template_expressions_included() {
    let findings = refused_plan(
        json!([{ "key": "x", "template": "notes-cached",
                     "input": { "repo": "${ goal.input.nope }", "extra": 1 } }]),
        "x",
        Code::UnknownProperty,
    );
    assert!(
        findings.iter().any(|f| f.pointer == "/items/0/input/repo"),
        "{findings:#?}"
    );
    let findings = refused_plan(
        json!([{ "key": "x", "template": "notes-cached", "input": { "repo": 42 } }]),
        "x",
        Code::IncompatibleValueFlow,
    );
    // At the member, as a literal tool argument in a draft is.
    assert_eq!(findings[0].pointer, "/items/0/input/repo");
}

#[test]
fn all_findings_of_a_proposal_are_reported_at_once() {
    let findings = refused_plan(
        json!([
            { "key": "a", "template": "nope", "input": {} },
            { "key": "a", "template": "mirror-log", "after": ["zz"], "input": {} }
        ]),
        "b",
        Code::UnknownTemplate,
    );
    let mut got = codes(&findings);
    got.sort_unstable();
    got.dedup();
    assert_eq!(got, ["LW1001", "LW1002", "LW1003", "LW1004"]);
}

#[test]
fn an_answer_that_is_not_a_proposal_is_refused_and_spent() {
    refused_with(
        json!({ "kind": "draft", "lwir": {} }),
        Code::InvalidProposal,
    );
    refused_with(
        json!({ "kind": "apply", "items": "none", "root": "x" }),
        Code::WrongType,
    );
}

#[test]
fn attention_stands_until_retry_and_only_attention_exhausts_with_attribution() {
    let world = World::new();
    let goal = eligible(&world);
    let goals = world.goals();
    for n in 1..=3 {
        let outcome = goals
            .replan(
                &goal,
                &mut Script::new(vec![Ok(attention("no template fits"))]),
                None,
            )
            .unwrap();
        assert!(matches!(outcome, Replanned::Attention { .. }));
        let p = goals.show(&goal).unwrap();
        if n < 3 {
            assert_eq!(p.status, Status::Attention);
            // Quiescent: no planner call while the attention stands.
            let refused = goals
                .replan(&goal, &mut Script::new(vec![]), None)
                .unwrap_err();
            assert!(refused.to_string().contains("attention"), "{refused}");
            goals.retry(&goal, &format!("p{n}")).unwrap();
            assert_eq!(goals.show(&goal).unwrap().status, Status::Eligible);
        }
    }
    // The third attention spends the last replan: the goal is exhausted.
    let p = goals.show(&goal).unwrap();
    assert_eq!(p.status, Status::Exhausted);
    let c = p.replan_consumption.expect("a breakdown");
    assert_eq!((c.reviewer_rejection, c.planner_no_proposal), (0, 3));
    assert!(
        p.reason.contains("replan budget is spent (3 of 3"),
        "{}",
        p.reason
    );
    assert!(
        p.reason
            .contains("the latest plan p3: the planner asked for attention: no template fits"),
        "{}",
        p.reason
    );
    assert!(
        p.reason
            .contains("3 of 3 consumed replan(s) ended without a proposal"),
        "{}",
        p.reason
    );
    // The latest plan's own reason comes before the no-proposal share.
    assert!(p.reason.find("latest plan").unwrap() < p.reason.find("planner_no_proposal").unwrap());
}

#[test]
fn review_only_exhaustion_has_no_breakdown() {
    let world = World::new();
    let goal = eligible(&world);
    let goals = world.goals();
    for n in 1..=3 {
        goals
            .replan(&goal, &mut Script::new(vec![Ok(recovery())]), None)
            .unwrap();
        goals
            .reject(&goal, &format!("p{n}"), "not what we need")
            .unwrap();
    }
    let p = goals.show(&goal).unwrap();
    assert_eq!(p.status, Status::Exhausted);
    assert!(p.replan_consumption.is_none(), "{:?}", p.replan_consumption);
    assert!(!p.reason.contains("planner_no_proposal"), "{}", p.reason);
    assert!(
        p.reason.contains("rejected by tester: not what we need"),
        "{}",
        p.reason
    );
    assert_eq!(p.plans[3].receipt.as_ref().unwrap().verdict, "rejected");
    let json = serde_json::to_value(&p).unwrap();
    assert!(json.get("replan_consumption").is_none());
}

#[test]
fn mixed_exhaustion_counts_both_causes() {
    let world = World::new();
    let goal = eligible(&world);
    let goals = world.goals();
    // p1: the reviewer rejects both rounds; p2: refused proposal; p3: planner failed.
    let mut reviewer = Script::new(vec![
        Ok(json!({ "kind": "rejected", "feedback": "cache is stale" })),
        Ok(json!({ "kind": "rejected", "feedback": "still stale" })),
    ]);
    let outcome = goals
        .replan(
            &goal,
            &mut Script::new(vec![Ok(recovery()), Ok(recovery())]),
            Some(&mut reviewer),
        )
        .unwrap();
    assert!(matches!(outcome, Replanned::Rejected { .. }), "{outcome:?}");
    goals
        .replan(
            &goal,
            &mut Script::new(vec![Ok(apply(json!([]), "x"))]),
            None,
        )
        .unwrap();
    goals
        .replan(
            &goal,
            &mut Script::new(vec![Err(FailureKind::TimedOut)]),
            None,
        )
        .unwrap();
    let p = goals.show(&goal).unwrap();
    assert_eq!(p.status, Status::Exhausted);
    let c = p.replan_consumption.unwrap();
    assert_eq!((c.reviewer_rejection, c.planner_no_proposal), (1, 2));
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(
        json["replan_consumption"],
        json!({ "reviewer_rejection": 1, "planner_no_proposal": 2 })
    );
    assert!(
        p.reason
            .contains("2 of 3 consumed replan(s) ended without a proposal"),
        "{}",
        p.reason
    );
}

#[test]
fn an_environment_failure_is_not_charged() {
    let world = World::new();
    let goal = eligible(&world);
    let goals = world.goals();
    let outcome = goals
        .replan(
            &goal,
            &mut Script::new(vec![Err(FailureKind::NotStarted)]),
            None,
        )
        .unwrap();
    assert!(
        matches!(outcome, Replanned::Failed { charged: false, .. }),
        "{outcome:?}"
    );
    let p = goals.show(&goal).unwrap();
    assert_eq!(p.replans.used, 0);
    assert_eq!(p.status, Status::Eligible);
    assert!(p.replan_consumption.is_none());
    assert!(!p.plans[1].charged);
}

#[test]
fn a_reviewer_revision_round_then_pass_leaves_a_receipt() {
    let world = World::new();
    let goal = eligible(&world);
    let goals = world.goals();
    let mut planner = Script::new(vec![Ok(recovery()), Ok(recovery())]);
    let requests = planner.requests.clone();
    let mut reviewer = Script::new(vec![
        Ok(json!({ "kind": "rejected", "feedback": "say since" })),
        Ok(json!({ "kind": "passed" })),
    ]);
    let outcome = goals
        .replan(&goal, &mut planner, Some(&mut reviewer))
        .unwrap();
    assert!(
        matches!(outcome, Replanned::AwaitingReview { .. }),
        "passed review still waits for a person"
    );
    assert_eq!(requests.borrow()[1]["feedback"][0]["feedback"], "say since");
    let p = goals.show(&goal).unwrap();
    let receipt = p.plans[1].receipt.as_ref().unwrap();
    assert_eq!(
        (
            receipt.verdict.as_str(),
            receipt.reviewer.as_str(),
            receipt.round
        ),
        ("passed", "reviewer", 2)
    );
    assert_eq!(p.replans.used, 1, "revision rounds are one replan");
}

#[test]
fn auto_apply_applies_a_valid_proposal() {
    let world = World::new();
    let mut file = goal_file();
    file["replanning"]["auto_apply"] = json!(true);
    let goal = world.create(&file);
    fail_until_spent(&world, &goal, "notes");
    let outcome = world
        .goals()
        .replan(&goal, &mut Script::new(vec![Ok(recovery())]), None)
        .unwrap();
    assert!(
        matches!(outcome, Replanned::Applied { generation: 1, .. }),
        "{outcome:?}"
    );
    let p = world.goals().show(&goal).unwrap();
    assert_eq!(
        p.plans[1].reason.as_deref(),
        Some("applied by auto_apply as generation 1")
    );
}

/// What an approval of plan `p1` of `goal` that died part way leaves: the person's review,
/// then work `key` of the plan (on `notes-cached`, with `input`, the plan's root when `root`)
/// materialized in generation 1. The work's id.
fn approval_died_after(world: &World, goal: &str, key: &str, input: Value, root: bool) -> String {
    let last = world.store.events(goal).unwrap().last().unwrap().seq;
    world
        .store
        .append(goal, &event_of("plan.reviewed", json!({ "plan": "p1", "round": 1, "verdict": "passed", "reviewer": "person", "by": "tester" })), last)
        .unwrap();
    let id = lwir_goals::goal::work_id(goal, "p1", key);
    world
        .store
        .append(goal, &event_of("work.materialized", json!({
            "work": id, "key": key, "template": "notes-cached", "version": NOTES_CACHED, "plan": "p1",
            "generation": 1, "after": [], "reads": {}, "input": input, "root": root
        })), last + 1)
        .unwrap();
    id
}

#[test]
fn applying_again_after_a_crash_part_way_converges_to_one_generation() {
    let world = World::new();
    let goal = eligible(&world);
    let goals = world.goals();
    let proposal = apply(
        json!([
            { "key": "a", "template": "notes-cached", "input": { "repo": "r" } },
            { "key": "b", "template": "publish", "input": { "text": "${ work.a.output.notes }" } }
        ]),
        "b",
    );
    goals
        .replan(&goal, &mut Script::new(vec![Ok(proposal)]), None)
        .unwrap();
    // An approval that died after materializing the first item.
    let a = approval_died_after(&world, &goal, "a", json!({ "repo": "r" }), false);
    let p = goals.show(&goal).unwrap();
    assert_eq!(p.status, Status::AwaitingReview);
    assert_eq!(p.plans[1].status, "approved");
    assert!(p.reason.contains("approve"), "{}", p.reason);
    assert_eq!(goals.approve(&goal, "p1").unwrap(), 1);
    let p = goals.show(&goal).unwrap();
    assert_eq!(p.generation, 1);
    assert_eq!(p.generations.len(), 2);
    let ids: Vec<&str> = p.work.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            a.as_str(),
            lwir_goals::goal::work_id(&goal, "p1", "b").as_str()
        ]
    );
    let names = world.event_names(&goal);
    assert_eq!(
        names.iter().filter(|n| *n == "work.materialized").count(),
        3,
        "{names:?}"
    );
    assert_eq!(names.iter().filter(|n| *n == "plan.applied").count(), 2);
    // Approving once more changes nothing.
    assert!(goals.approve(&goal, "p1").is_err());
}

#[test]
fn conflicting_partial_work_fails_closed() {
    let world = World::new();
    let goal = awaiting_review(&world);
    let goals = world.goals();
    approval_died_after(
        &world,
        &goal,
        "notes_cached",
        json!({ "repo": "someone else's" }),
        true,
    );
    let e = goals.approve(&goal, "p1").unwrap_err();
    assert!(e.to_string().contains("other contents"), "{e}");
    assert_eq!(goals.show(&goal).unwrap().generation, 0);
}

#[test]
fn a_torn_last_line_is_dropped_and_the_history_reads_back() {
    use std::io::Write;
    let world = World::new();
    let goal = world.create(&goal_file());
    world
        .goals()
        .report(&goal, "notes", &Report::Started)
        .unwrap();
    let log = world.store.goal_dir(&goal).join("events.jsonl");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .unwrap()
        .write_all(br#"{"seq":5,"time":"2026-12-01T00:00:00.000Z","event":"work.fai"#)
        .unwrap();
    let p = world.goals().show(&goal).unwrap();
    assert_eq!(p.status, Status::Running);
    world
        .goals()
        .report(&goal, "notes", &Report::Failed("boom".into()))
        .unwrap();
    let events = world.store.events(&goal).unwrap();
    assert_eq!(events.last().unwrap().seq, 5);
    assert_eq!(events.last().unwrap().event, "work.failed");
}

#[test]
fn a_goal_file_that_changed_on_disk_is_refused() {
    let world = World::new();
    let goal = world.create(&goal_file());
    let path = world.store.goal_dir(&goal).join("goal.json");
    let tampered = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"max_attempts\":2", "\"max_attempts\":99");
    std::fs::write(&path, tampered).unwrap();
    let e = world.goals().show(&goal).unwrap_err();
    assert!(matches!(e, GoalError::Damaged { .. }), "{e}");
}

#[test]
fn cancel_stops_the_goal_for_good() {
    let world = World::new();
    let goal = world.create(&goal_file());
    let goals = world.goals();
    goals
        .cancel(&goal, Some("superseded by a new goal"))
        .unwrap();
    let p = goals.show(&goal).unwrap();
    assert_eq!(p.status, Status::Cancelled);
    let c = p.cancelled.unwrap();
    assert_eq!(c.by, "tester");
    assert!(!c.at.is_empty());
    assert!(goals.next(&goal).unwrap().0.is_empty());
    assert!(goals.report(&goal, "notes", &Report::Started).is_err());
    assert!(goals.replan(&goal, &mut Script::new(vec![]), None).is_err());
    assert!(goals.cancel(&goal, None).is_err());
}

#[test]
fn the_wall_time_bound_exhausts_the_goal() {
    let world = World::new();
    let goal = world.create(&goal_file());
    let p = world.goals_at(later).show(&goal).unwrap();
    assert_eq!(p.status, Status::Exhausted);
    assert!(p.reason.contains("wall time"), "{}", p.reason);
    assert!(world.goals_at(later).next(&goal).unwrap().0.is_empty());
}

#[test]
fn the_fingerprint_changes_with_what_a_scheduler_acts_on() {
    let world = World::new();
    let goal = world.create(&goal_file());
    let goals = world.goals();
    let a = goals.show(&goal).unwrap().fingerprint;
    assert_eq!(
        goals.show(&goal).unwrap().fingerprint,
        a,
        "stable when nothing changed"
    );
    goals.report(&goal, "notes", &Report::Started).unwrap();
    assert_ne!(goals.show(&goal).unwrap().fingerprint, a);
}

#[test]
fn a_drifted_planner_manifest_is_refused_and_not_charged() {
    let world = World::new();
    let goal = eligible(&world);
    // The goal was created by another lwirc: its frozen manifest names that harness.
    let log = world.store.goal_dir(&goal).join("events.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let harness = lwir_repair::manifest::harness_id();
    // Written so by that lwirc: the log's chain is whole.
    std::fs::write(&log, rechained(&text.replacen(&harness, "lwirc/0.0.1", 1))).unwrap();
    let e = world
        .goals()
        .replan(&goal, &mut Script::new(vec![Ok(recovery())]), None)
        .unwrap_err();
    assert!(matches!(e, GoalError::Drift(_)), "{e}");
    assert!(e.to_string().contains("harnessId"), "{e}");
    let p = world.goals().show(&goal).unwrap();
    assert_eq!(p.replans.used, 0);
    assert_eq!(p.plans.len(), 1);
}

#[test]
fn replan_and_review_requests_satisfy_the_protocol_schema() {
    let world = World::new();
    let goal = eligible(&world);
    let mut planner = Script::new(vec![Ok(recovery()), Ok(recovery())]);
    let mut reviewer = Script::new(vec![
        Ok(json!({ "kind": "rejected", "feedback": "more" })),
        Ok(json!({ "kind": "passed" })),
    ]);
    let (asked, reviewed) = (planner.requests.clone(), reviewer.requests.clone());
    world
        .goals()
        .replan(&goal, &mut planner, Some(&mut reviewer))
        .unwrap();
    let replan = protocol("replan_request");
    let review = protocol("review_request");
    for request in asked.borrow().iter() {
        let errors: Vec<String> = replan.iter_errors(request).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}");
    }
    for request in reviewed.borrow().iter() {
        let errors: Vec<String> = review.iter_errors(request).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}");
    }
    assert_eq!(asked.borrow()[1]["call"], 2);
    // The answers too: the example's proposal, a review verdict, an attention.
    let answer = protocol("answer");
    let example = example_answer("planner/call-1.json");
    for a in [
        example,
        recovery(),
        attention("why"),
        json!({ "kind": "passed" }),
        json!({ "kind": "rejected", "feedback": "f" }),
    ] {
        assert!(answer.is_valid(&a), "{a}");
    }
    assert!(!answer.is_valid(&json!({ "kind": "rejected" })));
}

#[test]
fn a_goal_cancelled_during_a_replan_applies_nothing() {
    let world = World::new();
    let mut file = goal_file();
    file["replanning"]["auto_apply"] = json!(true);
    let goal = world.create(&file);
    fail_until_spent(&world, &goal, "notes");
    // A planner that cancels the goal while it "thinks", then proposes.
    let mut planner = Answering("cancelling", || {
        world.goals().cancel(&goal, Some("mid-replan")).unwrap();
        Ok(serde_json::to_vec(&recovery()).unwrap())
    });
    let e = world.goals().replan(&goal, &mut planner, None).unwrap_err();
    assert!(e.to_string().contains("cancelled"), "{e}");
    let p = world.goals().show(&goal).unwrap();
    assert_eq!(p.status, Status::Cancelled);
    assert_eq!(p.generation, 0);
    assert_eq!(p.governed_work_ids.len(), 1);
    assert!(world.goals().approve(&goal, "p1").is_err());
}

#[test]
fn starts_beyond_max_parallel_and_attempts_of_an_exhausted_goal_are_refused() {
    let world = World::new();
    let mut file = goal_file();
    file["work"] = json!([
        { "key": "a", "template": "notes", "input": { "repo": "r" } },
        { "key": "b", "template": "notes", "input": { "repo": "r" } },
        { "key": "c", "template": "notes-cached", "after": ["a", "b"], "input": { "repo": "r" } }
    ]);
    file["root"] = json!("c");
    file["limits"] = json!({ "max_total_attempts": 3, "max_parallel": 1 });
    let goal = world.create(&file);
    let goals = world.goals();
    assert_eq!(
        goals.next(&goal).unwrap().0.len(),
        1,
        "next hands out at most max_parallel"
    );
    goals.report(&goal, "a", &Report::Started).unwrap();
    let e = goals.report(&goal, "b", &Report::Started).unwrap_err();
    assert!(e.to_string().contains("max_parallel"), "{e}");
    goals
        .report(&goal, "a", &Report::Failed("x".into()))
        .unwrap();
    goals
        .report(&goal, "a", &Report::Failed("y".into()))
        .unwrap();
    goals
        .report(&goal, "b", &Report::Failed("z".into()))
        .unwrap();
    let p = goals.show(&goal).unwrap();
    assert_eq!(p.attempts.used, 3);
    let e = goals.report(&goal, "b", &Report::Started).unwrap_err();
    assert!(
        e.to_string().contains("attempt budget is spent (3 of 3"),
        "{e}"
    );
}

#[test]
fn approving_against_a_registry_without_the_template_records_nothing() {
    let world = World::new();
    let goal = awaiting_review(&world);
    let goals = world.goals();
    world
        .catalog
        .missing
        .lock()
        .unwrap()
        .push(NOTES_CACHED.into());
    let before = world.store.events(&goal).unwrap().len();
    let e = goals.approve(&goal, "p1").unwrap_err();
    assert!(matches!(e, GoalError::Templates(_)), "{e}");
    // The person's approval is recorded; nothing else is, and the plan can be applied
    // once the registry is the right one.
    assert_eq!(world.store.events(&goal).unwrap().len(), before + 1);
    world.catalog.missing.lock().unwrap().clear();
    assert_eq!(goals.approve(&goal, "p1").unwrap(), 1);
}

/// A runner in memory that keeps the requests and answers from a script.
struct Recording {
    requests: std::sync::Mutex<Vec<Value>>,
    answer: Value,
}

impl lwir_goals::runner::Runner for Recording {
    fn describe(&self) -> String {
        "recording".into()
    }

    fn run(
        &self,
        request: &[u8],
        _env: &[(&str, String)],
    ) -> Result<Vec<u8>, lwir_goals::runner::Failure> {
        self.requests
            .lock()
            .unwrap()
            .push(serde_json::from_slice(request).unwrap());
        Ok(serde_json::to_vec(&self.answer).unwrap())
    }
}

#[test]
fn run_requests_satisfy_the_runner_protocol_schema() {
    let world = World::new();
    let goal = world.create(&goal_file());
    let runner = Recording {
        requests: Default::default(),
        answer: ok(),
    };
    let report = world
        .goals()
        .run(&goal, &runner, None, None, &mut lwir_goals::run::Quiet)
        .unwrap();
    assert_eq!(report.status, Status::Succeeded);
    let mut schema: Value =
        serde_json::from_str(lwir_spec::schemas::RUNNER_PROTOCOL_SCHEMA).unwrap();
    let root = schema.as_object_mut().unwrap();
    root.remove("oneOf");
    root.insert("$ref".into(), json!("#/$defs/request"));
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let requests = runner.requests.lock().unwrap();
    assert_eq!(requests.len(), 1);
    let errors: Vec<String> = validator
        .iter_errors(&requests[0])
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(
        requests[0]["work"]["input"],
        json!({ "repo": "acme/widgets", "since": "v1.4.0" })
    );
    assert_eq!(
        requests[0]["lwir"]["workflow"], "notes",
        "the registered LWIR of the version"
    );
}

/// A goal log's text with every line's chain hash computed again, as if it had been written
/// so.
fn rechained(text: &str) -> String {
    let mut previous = String::new();
    let mut out = String::new();
    for line in text.lines() {
        let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
        value.as_object_mut().unwrap().remove("chain");
        let event: lwir_repair::events::Event = serde_json::from_value(value.clone()).unwrap();
        previous = lwir_repair::events::chain_of(&previous, &event);
        value["chain"] = serde_json::Value::String(previous.clone());
        out.push_str(&value.to_string());
        out.push('\n');
    }
    out
}

/// A service over `runner`, with `planner` when given, passing every 10 ms.
fn service<'a>(
    runner: &'a dyn lwir_goals::runner::Runner,
    planner: Option<lwir_goals::run::AgentFactory<'a>>,
) -> lwir_goals::run::Service<'a> {
    lwir_goals::run::Service {
        runner,
        planner,
        reviewer: None,
        max_planner_calls: 1,
        interval: std::time::Duration::from_millis(10),
        grace: std::time::Duration::from_secs(1),
    }
}

/// Runs `f` in a thread of its own and waits at most a minute for what it returns.
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("it ended within a minute")
}

#[test]
fn a_replan_that_panics_under_serve_is_that_goals_error_and_the_service_stops() {
    let (goal, skipped, replanned, p1) = within_a_minute(|| {
        let world = World::new();
        let goal = eligible(&world);
        let runner = Recording {
            requests: Default::default(),
            answer: ok(),
        };
        // A planner whose call panics: a bug in lwirc's agent code, as far as a service can
        // tell.
        let make = || {
            Box::new(Answering("panicking", || {
                panic!("the planner harness broke")
            })) as Box<dyn lwir_goals::agent::Agent + Send>
        };
        let stop = std::sync::atomic::AtomicBool::new(false);
        let report = world
            .goals()
            .serve(
                &service(&runner, Some(&make)),
                true,
                &stop,
                &mut lwir_goals::run::Quiet,
            )
            .unwrap();
        // The replan that died consumed its slot; the next one goes on.
        let mut planner = Script::new(vec![Ok(recovery())]);
        let replanned = world.goals().replan(&goal, &mut planner, None).unwrap();
        let p = world.goals().show(&goal).unwrap();
        let p1 = p.plans.iter().find(|p| p.id == "p1").unwrap().status;
        (goal, report.skipped, format!("{replanned:?}"), p1)
    });
    let why = &skipped[&goal];
    assert!(why.contains("lwirc failed internally"), "{why}");
    assert!(why.contains("the planner harness broke"), "{why}");
    assert_eq!(p1, "interrupted");
    assert!(
        replanned.starts_with("AwaitingReview { plan: \"p2\""),
        "{replanned}"
    );
}

#[test]
fn a_runner_call_that_panics_is_a_failed_attempt_not_a_hang() {
    let (status, failures) = within_a_minute(|| {
        let panics = By("panics", |_| panic!("the runner harness broke"));
        let world = World::new();
        let goal = world.create(&goal_file());
        let report = world
            .goals()
            .run(&goal, &panics, None, None, &mut lwir_goals::run::Quiet)
            .unwrap();
        let failures: Vec<Value> = world
            .store
            .events(&goal)
            .unwrap()
            .into_iter()
            .filter(|e| e.event == "work.failed")
            .map(|e| e.data)
            .collect();
        (report.status, failures)
    });
    assert_eq!(status, Status::Eligible);
    assert_eq!(failures.len(), 2, "both attempts of `notes`");
    assert_eq!(failures[0]["code"], "LW1014");
    assert!(
        failures[0]["error"]
            .as_str()
            .unwrap()
            .contains("the runner harness broke"),
        "{failures:?}"
    );
}

#[test]
fn a_goal_whose_answer_cannot_be_recorded_under_serve_does_not_stop_the_others() {
    let world = World::new();
    let mut second = goal_file();
    second["objective"] = json!("Another week.");
    let damaged = world.create(&goal_file());
    let fine = world.create(&second);
    let frozen = world.store.goal_dir(&damaged).join("goal.json");
    // The runner of the first goal's work changes its frozen file behind lwirc's back.
    let runner = By("tampering", |request| {
        if request["goal"] == damaged.as_str() {
            let text = std::fs::read_to_string(&frozen).unwrap();
            std::fs::write(
                &frozen,
                text.replace("\"max_attempts\":2", "\"max_attempts\":9"),
            )
            .unwrap();
        }
        ok()
    });
    let stop = std::sync::atomic::AtomicBool::new(false);
    let report = world
        .goals()
        .serve(
            &service(&runner, None),
            true,
            &stop,
            &mut lwir_goals::run::Quiet,
        )
        .unwrap();
    assert!(
        report.skipped[&damaged].contains("damaged"),
        "{:?}",
        report.skipped
    );
    assert_eq!(report.succeeded, 1);
    assert_eq!(world.goals().show(&fine).unwrap().status, Status::Succeeded);
}

/// The world's directory store, whose first append of `fail` (an event name) fails, as a
/// database that drops the connection once would; whose listing fails after `lists`
/// listings; whose every append of `conflict` finds the log changed, as a damaged one
/// could; and, with `approve`, where a person approves a proposed plan the moment after a
/// read of its goal's log.
struct Flaky<'a> {
    world: &'a World,
    inner: lwir_goals::store::Directory,
    fail: std::sync::Mutex<Option<&'static str>>,
    lists: std::sync::Mutex<u32>,
    conflict: Option<&'static str>,
    approve: std::sync::atomic::AtomicBool,
}

impl<'a> Flaky<'a> {
    fn new(world: &'a World) -> Self {
        Flaky {
            world,
            inner: world.store.clone(),
            fail: std::sync::Mutex::new(None),
            lists: std::sync::Mutex::new(u32::MAX),
            conflict: None,
            approve: Default::default(),
        }
    }

    fn goals(&'a self, world: &'a World) -> lwir_goals::Goals<'a> {
        lwir_goals::Goals {
            store: self,
            templates: &world.catalog,
            by: "tester".into(),
            now,
        }
    }
}

impl Store for Flaky<'_> {
    fn location(&self) -> String {
        self.inner.location()
    }
    fn freeze(&self, goal: &str, bytes: &[u8]) -> Result<bool, StoreError> {
        self.inner.freeze(goal, bytes)
    }
    fn frozen(&self, goal: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.frozen(goal)
    }
    fn goals(&self) -> Result<Vec<String>, StoreError> {
        let mut lists = self.lists.lock().unwrap();
        if *lists == 0 {
            return Err(StoreError::Io {
                location: self.location(),
                detail: "the database went away".into(),
            });
        }
        *lists -= 1;
        self.inner.goals()
    }
    fn events(&self, goal: &str) -> Result<Vec<lwir_repair::events::Event>, StoreError> {
        let events = self.inner.events(goal)?;
        if let Some(last) = events.last().filter(|e| e.event == "plan.proposed")
            && self
                .approve
                .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            let plan = last.data["plan"].as_str().unwrap();
            self.world.goals().approve(goal, plan).unwrap();
        }
        Ok(events)
    }
    fn append(
        &self,
        goal: &str,
        event: &GoalEvent,
        expected_last: u64,
    ) -> Result<lwir_repair::events::Event, StoreError> {
        if self.conflict == Some(event.name()) {
            return Err(StoreError::Conflict {
                expected: expected_last,
                found: expected_last + 1,
            });
        }
        let mut fail = self.fail.lock().unwrap();
        if *fail == Some(event.name()) {
            *fail = None;
            return Err(StoreError::Io {
                location: self.location(),
                detail: "the connection was lost".into(),
            });
        }
        self.inner.append(goal, event, expected_last)
    }
    fn open_plan(
        &self,
        goal: &str,
        plan: &str,
    ) -> Result<Box<dyn lwir_goals::store::PlanLog>, StoreError> {
        self.inner.open_plan(goal, plan)
    }
    fn plan_in_progress(&self, goal: &str, plan: &str) -> Result<bool, StoreError> {
        self.inner.plan_in_progress(goal, plan)
    }
    fn plan_file(&self, goal: &str, plan: &str, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.plan_file(goal, plan, name)
    }
    fn lock_run(&self, goal: &str) -> Result<lwir_goals::store::RunGuard, StoreError> {
        self.inner.lock_run(goal)
    }
    fn import(&self, goal: &str, event: &lwir_repair::events::Event) -> Result<(), StoreError> {
        self.inner.import(goal, event)
    }
    fn plans(&self, goal: &str) -> Result<Vec<String>, StoreError> {
        self.inner.plans(goal)
    }
    fn plan_events(
        &self,
        goal: &str,
        plan: &str,
    ) -> Result<Vec<lwir_repair::events::Event>, StoreError> {
        self.inner.plan_events(goal, plan)
    }
    fn plan_files(&self, goal: &str, plan: &str) -> Result<Vec<String>, StoreError> {
        self.inner.plan_files(goal, plan)
    }
    fn import_plan(
        &self,
        goal: &str,
        plan: &str,
        events: &[lwir_repair::events::Event],
        files: &[(String, Vec<u8>)],
    ) -> Result<(), StoreError> {
        self.inner.import_plan(goal, plan, events, files)
    }
}

#[test]
fn an_answer_serve_could_not_record_is_an_interrupted_attempt_and_the_goal_goes_on() {
    let world = World::new();
    let mut file = goal_file();
    file["work"] = json!([
        { "key": "quick", "template": "notes", "input": { "repo": "r" } },
        { "key": "slow", "template": "notes", "input": { "repo": "r" } },
        { "key": "all", "template": "notes", "after": ["quick", "slow"], "input": { "repo": "r" } }
    ]);
    file["root"] = json!("all");
    let goal = world.create(&file);
    let store = Flaky {
        fail: std::sync::Mutex::new(Some("work.succeeded")),
        ..Flaky::new(&world)
    };
    let goals = store.goals(&world);
    // `slow` is still in flight when the answer of `quick` cannot be recorded.
    let slow_and_quick = By("slow and quick", |request| {
        if request["work"]["key"] == "slow" {
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        ok()
    });
    let stop = std::sync::atomic::AtomicBool::new(false);
    let report = std::thread::scope(|scope| {
        let serving = scope.spawn(|| {
            goals.serve(
                &service(&slow_and_quick, None),
                false,
                &stop,
                &mut lwir_goals::run::Quiet,
            )
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while world.goals().show(&goal).unwrap().status != Status::Succeeded
            && std::time::Instant::now() < deadline
            && !serving.is_finished()
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        serving.join().unwrap()
    })
    .unwrap();
    let p = world.goals().show(&goal).unwrap();
    assert_eq!(p.status, Status::Succeeded, "{}", p.reason);
    let quick = p.work.iter().find(|w| w.key == "quick").unwrap();
    assert_eq!(quick.attempts, 2, "the lost answer's attempt counts");
    assert!(
        quick.errors[0].contains("its runner was lost"),
        "{:?}",
        quick.errors
    );
    assert_eq!(report.interrupted, 1);
}

#[test]
fn a_store_that_cannot_be_listed_stops_serve_with_its_runners_recorded_interrupted() {
    let world = World::new();
    let goal = world.create(&goal_file());
    let store = Flaky {
        lists: std::sync::Mutex::new(1),
        ..Flaky::new(&world)
    };
    let goals = store.goals(&world);
    let runner = lwir_goals::runner::ProcessRunner::new(
        lwir_repair::process::PlannerCommand::shell("cat >/dev/null; exec sleep 30"),
        lwir_repair::process::Limits::default(),
    );
    let stop = std::sync::atomic::AtomicBool::new(false);
    let e = goals
        .serve(
            &service(&runner, None),
            false,
            &stop,
            &mut lwir_goals::run::Quiet,
        )
        .unwrap_err();
    assert!(e.to_string().contains("the database went away"), "{e}");
    // The runner was stopped, not waited for: its attempt is recorded, and counts.
    let p = world.goals().show(&goal).unwrap();
    let notes = &p.work[0];
    assert_eq!(notes.status, WorkStatus::Ready, "{}", p.reason);
    assert_eq!(notes.attempts, 1);
    assert!(
        notes.errors[0].contains("its runner was stopped"),
        "{:?}",
        notes.errors
    );
}

#[test]
fn a_log_that_always_seems_changed_is_refused_not_a_hang() {
    let (interrupting, replanning) = within_a_minute(|| {
        let world = World::new();
        // An attempt a dead driver left in flight, whose interruption never lands.
        let goal = world.create(&goal_file());
        world
            .goals()
            .report(&goal, "notes", &Report::Dispatched)
            .unwrap();
        let store = Flaky {
            conflict: Some("work.failed"),
            ..Flaky::new(&world)
        };
        let runner = Recording {
            requests: Default::default(),
            answer: json!({ "kind": "failed", "error": "unused" }),
        };
        let interrupting = store
            .goals(&world)
            .run(&goal, &runner, None, None, &mut lwir_goals::run::Quiet)
            .map(|r| r.status)
            .map_err(|e| e.to_string());
        // A replan whose proposal never lands.
        let world = World::new();
        let goal = eligible(&world);
        let store = Flaky {
            conflict: Some("plan.proposed"),
            ..Flaky::new(&world)
        };
        let mut planner = Script::new(vec![Ok(recovery())]);
        let replanning = store
            .goals(&world)
            .replan(&goal, &mut planner, None)
            .map(|r| format!("{r:?}"))
            .map_err(|e| e.to_string());
        (interrupting, replanning)
    });
    for outcome in [interrupting.map(|s| format!("{s:?}")), replanning] {
        let e = outcome.unwrap_err();
        assert!(e.contains("kept changing under this command"), "{e}");
    }
}

#[test]
fn an_approval_landing_while_serve_looks_at_the_goal_wakes_it() {
    let world = World::new();
    let goal = eligible(&world);
    // The approval lands just after serve read the log that still waits for review.
    let store = Flaky {
        approve: true.into(),
        ..Flaky::new(&world)
    };
    let goals = store.goals(&world);
    let runner = Recording {
        requests: Default::default(),
        answer: ok(),
    };
    // A planner that answers the recovery to every call, from any thread.
    let make = || {
        Box::new(Answering("answers", || {
            Ok(serde_json::to_vec(&recovery()).unwrap())
        })) as Box<dyn lwir_goals::agent::Agent + Send>
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let serving = scope.spawn(|| {
            goals.serve(
                &service(&runner, Some(&make)),
                false,
                &stop,
                &mut lwir_goals::run::Quiet,
            )
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while world.goals().show(&goal).unwrap().status != Status::Succeeded
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        serving.join().unwrap().unwrap();
    });
    let p = world.goals().show(&goal).unwrap();
    assert_eq!(p.generation, 1);
    assert_eq!(p.status, Status::Succeeded, "{}", p.reason);
}

/// An event written by hand, as a test makes one: its kind and payload.
fn event_of(name: &str, data: Value) -> GoalEvent {
    GoalEvent::parse(name, &data).unwrap()
}
