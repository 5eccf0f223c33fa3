//! `lwirc goal` as a user runs it: the shipped example from start to finish, findings in a
//! goal file, a replan killed with SIGKILL, and many processes writing one goal at once.

use crate::common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

fn setup() -> tempfile::TempDir {
    goal_registry()
}

fn create(dir: &Path, file: &Value) -> String {
    create_goal(dir, "goal.json", file)
}

fn report(dir: &Path, goal: &str, work: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["goal", "report", goal, work];
    all.extend_from_slice(args);
    lwirc(dir, &all)
}

fn planner() -> String {
    scripted_planner(&root().join("examples/goals/planner").display().to_string())
}

#[test]
fn the_example_runs_to_success_and_keeps_both_roots() {
    let dir = setup();
    let d = dir.path();
    let goal = create(d, &example_goal());
    assert!(goal.starts_with("triage-acme-w49-"), "{goal}");
    // Again: the same id, nothing written.
    let again = lwirc(
        d,
        &["goal", "create", &d.join("goal.json").display().to_string()],
    );
    assert_exit(&again, 0);
    assert_eq!(stdout(&again).trim(), goal);
    assert!(stderr(&again).contains("nothing was written"));

    let next = lwirc(d, &["goal", "next", "triage-acme-w49"]);
    assert_exit(&next, 0);
    let next: Value = serde_json::from_slice(&next.stdout).unwrap();
    assert_eq!(next[0]["key"], "triage");
    assert_eq!(next[0]["input"], json!({ "repo": "acme/widgets" }));
    let first = next[0]["id"].as_str().unwrap().to_owned();

    assert_exit(&report(d, &goal, &first, &["started"]), 0);
    assert_exit(
        &report(d, &goal, &first, &["failed", "--error", "rate limited"]),
        0,
    );
    assert_exit(
        &report(
            d,
            &goal,
            "triage",
            &["failed", "--error", "rate limited again"],
        ),
        0,
    );
    let over = report(d, &goal, "triage", &["started"]);
    assert_exit(&over, 1);
    assert_stderr_has(&over, "2 of 2 attempt");
    assert_eq!(show_goal(d, &goal)["status"], "eligible");

    let replan = lwirc(d, &["goal", "replan", &goal, "--planner", &planner()]);
    assert_exit(&replan, 0);
    assert_eq!(stdout(&replan).trim(), "p1");
    assert_stderr_has(&replan, "waits for review");
    assert_eq!(show_goal(d, &goal)["status"], "awaiting-review");

    assert_exit(
        &lwirc(d, &["goal", "approve", &goal, "p1", "--by", "alice"]),
        0,
    );
    let p = show_goal(d, &goal);
    assert_eq!(p["generation"], 1);
    assert_eq!(p["active_root"]["key"], "triage_lite");
    let output = root()
        .join("examples/goals/output.json")
        .display()
        .to_string();
    assert_exit(
        &report(d, &goal, "triage_lite", &["succeeded", "--output", &output]),
        0,
    );

    let p = show_goal(d, &goal);
    assert_eq!(p["status"], "succeeded");
    assert_eq!(p["attempts"], json!({ "used": 3, "max": 6 }));
    assert_eq!(p["replans"], json!({ "used": 1, "max": 2 }));
    assert_eq!(p["governed_work_ids"].as_array().unwrap().len(), 2);
    assert_eq!(p["generations"].as_array().unwrap().len(), 2);
    assert_eq!(p["plans"][1]["receipt"]["by"], "alice");
    let old = &p["governed_work"][0];
    assert_eq!(
        (
            old["key"].as_str(),
            old["status"].as_str(),
            old["attempts"].as_u64()
        ),
        (Some("triage"), Some("superseded"), Some(2))
    );
    assert!(p["fingerprint"].as_str().unwrap().starts_with("sha256:"));
    assert!(p.get("replan_consumption").is_none());

    let human = lwirc(d, &["goal", "show", &goal]);
    assert_exit(&human, 0);
    let text = stdout(&human);
    assert!(text.contains("status: succeeded"), "{text}");
    assert!(
        text.contains("outside the active generation (kept, not dispatched)"),
        "{text}"
    );
    assert!(text.contains("attempt 2: rate limited again"), "{text}");
    assert!(text.contains("receipt: passed by person alice"), "{text}");

    let list = lwirc(d, &["goal", "list"]);
    assert_exit(&list, 0);
    assert!(stdout(&list).contains(&goal));
    assert!(stdout(&list).contains("succeeded"));
    let list = lwirc(d, &["goal", "list", "--format", "json"]);
    let rows: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(rows[0]["status"], "succeeded");
    assert_eq!(rows[0]["generation"], 1);
}

#[test]
fn a_goal_file_with_problems_gets_every_finding_with_its_place() {
    let dir = setup();
    let d = dir.path();
    let mut file = example_goal();
    file["work"][0]["template"] = json!("triage-lit");
    file["work"][0]["input"] = json!({ "repo": "${ goal.input.repository }" });
    file["templates"]["triage"]["version"] =
        json!("sha256:0000000000000000000000000000000000000000000000000000000000000000");
    let path = write_json(d, "goal.json", &file);
    let out = lwirc(d, &["goal", "create", &path, "--color", "never"]);
    assert_exit(&out, 1);
    let text = stdout(&out);
    for code in ["LW1001", "LW1009", "LW207"] {
        assert!(text.contains(code), "{code} missing in:\n{text}");
    }
    assert!(text.contains("did you mean `triage-lite`?"), "{text}");
    assert!(text.contains("goal.json:"), "{text}");
    let json = lwirc(d, &["goal", "create", &path, "--format", "json"]);
    assert_exit(&json, 1);
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    let pointers: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["pointer"].as_str().unwrap())
        .collect();
    assert!(pointers.contains(&"/work/0/template"), "{pointers:?}");
    assert!(
        pointers.contains(&"/templates/triage/version"),
        "{pointers:?}"
    );
    assert!(
        !d.join(".lwir/goals").exists(),
        "nothing is written for a goal with errors"
    );
}

/// Waits until `check` holds, for at most 20 s.
fn wait_for(mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An eligible goal: its root failed twice.
fn eligible(d: &Path) -> String {
    let goal = create(d, &example_goal());
    assert_exit(&report(d, &goal, "triage", &["failed", "--error", "e1"]), 0);
    assert_exit(&report(d, &goal, "triage", &["failed", "--error", "e2"]), 0);
    goal
}

#[test]
fn a_replan_killed_with_sigkill_is_interrupted_charged_and_leaves_no_half_plan() {
    let dir = setup();
    let d = dir.path();
    let goal = eligible(d);
    let slow = script(d, "slow.sh", "cat >/dev/null; exec sleep 5");
    let mut child = command(d, &["goal", "replan", &goal, "--planner", &slow])
        .spawn()
        .unwrap();
    wait_for(|| show_goal(d, &goal)["status"] == "running");
    // SIGKILL: no chance to record anything.
    child.kill().unwrap();
    child.wait().unwrap();
    let p = show_goal(d, &goal);
    assert_eq!(p["plans"][1]["status"], "interrupted");
    assert_eq!(p["replans"]["used"], 1, "the interrupted replan is charged");
    assert_eq!(p["status"], "eligible");
    assert_eq!(
        p["governed_work_ids"].as_array().unwrap().len(),
        1,
        "no half-plan"
    );
    assert_eq!(p["replan_consumption"]["planner_no_proposal"], 1);

    // The next replan records the interruption, then runs.
    let out = lwirc(d, &["goal", "replan", &goal, "--planner", &planner()]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), "p2");
    let names: Vec<String> = goal_events(d, &goal)
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_owned())
        .collect();
    let tail: Vec<&str> = names
        .iter()
        .rev()
        .take(4)
        .rev()
        .map(String::as_str)
        .collect();
    assert_eq!(
        tail,
        [
            "plan.requested",
            "plan.interrupted",
            "plan.requested",
            "plan.proposed"
        ]
    );
}

/// A goal whose root runs after eight independent items.
fn wide_goal(d: &Path) -> String {
    let mut file = example_goal();
    let mut work = Vec::new();
    for i in 0..8 {
        work.push(json!({ "key": format!("k{i}"), "template": "triage-lite", "input": { "repo": "acme/widgets" } }));
    }
    work.push(
        json!({ "key": "all", "template": "triage", "input": { "repo": "acme/widgets" },
                      "after": (0..8).map(|i| format!("k{i}")).collect::<Vec<_>>() }),
    );
    file["work"] = Value::Array(work);
    file["root"] = json!("all");
    file["limits"] = json!({ "max_total_attempts": 40, "max_parallel": 8 });
    create(d, &file)
}

/// `lwirc goal replan GOAL` with the scripted planner on `answers` and `extra` arguments.
fn replan_with(d: &Path, goal: &str, answers: &str, extra: &[&str]) -> std::process::Output {
    let planner = scripted_planner(answers);
    let mut args = vec!["goal", "replan", goal, "--planner", &planner];
    args.extend_from_slice(extra);
    lwirc(d, &args)
}

/// `n` copies of the command line `args`.
fn copies(n: usize, args: &[&str]) -> Vec<Vec<String>> {
    vec![args.iter().map(|a| (*a).to_owned()).collect(); n]
}

/// The goal's event log in `d`'s default store, one value per line.
fn goal_events(d: &Path, goal: &str) -> Vec<Value> {
    std::fs::read_to_string(d.join(".lwir/goals").join(goal).join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn spawn_all(d: &Path, runs: Vec<Vec<String>>) -> Vec<std::process::Output> {
    let children: Vec<Child> = runs
        .iter()
        .map(|args| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            command(d, &args).stdout(Stdio::piped()).spawn().unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

#[test]
fn eight_processes_reporting_at_once_lose_nothing() {
    let dir = setup();
    let d = dir.path();
    let goal = wide_goal(d);
    let output = root()
        .join("examples/goals/output.json")
        .display()
        .to_string();
    for args in [vec!["started"], vec!["succeeded", "--output", &output]] {
        let runs = (0..8)
            .map(|i| {
                let mut a = vec![
                    "goal".to_owned(),
                    "report".into(),
                    goal.clone(),
                    format!("k{i}"),
                ];
                a.extend(args.iter().map(|s| (*s).to_owned()));
                a
            })
            .collect();
        for out in spawn_all(d, runs) {
            assert_exit(&out, 0);
        }
    }
    let p = show_goal(d, &goal);
    assert_eq!(p["attempts"]["used"], 8);
    let done = p["work"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["status"] == "succeeded")
        .count();
    assert_eq!(done, 8);
    let seqs: Vec<u64> = goal_events(d, &goal)
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "no gaps, no repeats"
    );

    // Eight processes starting the same item: exactly one attempt begins.
    let runs = copies(8, &["goal", "report", &goal, "all", "started"]);
    let codes: Vec<i32> = spawn_all(d, runs)
        .iter()
        .map(|o| o.status.code().unwrap())
        .collect();
    assert_eq!(codes.iter().filter(|&&c| c == 0).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|&&c| c == 1).count(), 7, "{codes:?}");
    assert_eq!(show_goal(d, &goal)["attempts"]["used"], 9);
}

#[test]
fn two_concurrent_replans_make_exactly_one_planner_call() {
    let dir = setup();
    let d = dir.path();
    let goal = eligible(d);
    let answer = root()
        .join("examples/goals/planner/call-1.json")
        .display()
        .to_string();
    let calls = d.join("calls");
    let counting = script(
        d,
        "counting.sh",
        &format!(
            "cat >/dev/null; echo call >> '{}'; sleep 1; cat '{answer}'",
            calls.display()
        ),
    );
    let runs = copies(2, &["goal", "replan", &goal, "--planner", &counting]);
    let outs = spawn_all(d, runs);
    let mut codes: Vec<i32> = outs.iter().map(|o| o.status.code().unwrap()).collect();
    codes.sort_unstable();
    assert_eq!(
        codes,
        [0, 1],
        "{:?}",
        outs.iter().map(stderr).collect::<Vec<_>>()
    );
    let refused = outs.iter().find(|o| o.status.code() == Some(1)).unwrap();
    assert!(
        stderr(refused).contains("not eligible"),
        "{}",
        stderr(refused)
    );
    assert_eq!(std::fs::read_to_string(&calls).unwrap().lines().count(), 1);
    let p = show_goal(d, &goal);
    assert_eq!(p["replans"]["used"], 1);
    assert_eq!(p["plans"].as_array().unwrap().len(), 2);
}

#[test]
fn hostile_planner_text_never_reaches_the_terminal_raw() {
    let dir = setup();
    let d = dir.path();
    let goal = eligible(d);
    let answers = answers(
        d,
        &[json!({ "kind": "attention", "rationale": "stop\u{1b}[2J\u{1b}]0;owned\u{7} here" })],
    );
    let out = replan_with(d, &goal, &answers, &[]);
    assert_exit(&out, 1);
    assert!(!stderr(&out).contains('\u{1b}'), "{:?}", stderr(&out));
    let human = lwirc(d, &["goal", "show", &goal]);
    assert!(!stdout(&human).contains('\u{1b}'));
    assert_stdout_has(&human, "status: attention");
    let retry = lwirc(d, &["goal", "retry", &goal, "p1"]);
    assert_exit(&retry, 0);
    assert_eq!(show_goal(d, &goal)["status"], "eligible");
}

#[test]
fn goal_commands_explain_what_is_wrong() {
    let dir = setup();
    let d = dir.path();
    let missing = lwirc(d, &["goal", "show", "nope"]);
    assert_exit(&missing, 1);
    assert_stderr_has(&missing, "no goal `nope`");
    let goal = create(d, &example_goal());
    let not_eligible = lwirc(d, &["goal", "replan", &goal, "--planner", "true"]);
    assert_exit(&not_eligible, 1);
    assert_stderr_has(&not_eligible, "not eligible");
    assert_stderr_has(&not_eligible, "ready");
    // Usage errors are exit 2, as everywhere in lwirc.
    let no_output = report(d, &goal, "triage", &["succeeded"]);
    assert_exit(&no_output, 2);
    let unreadable = lwirc(d, &["goal", "create", "no-such-goal.json"]);
    assert_exit(&unreadable, 2);
    assert_stderr_has(&unreadable, "cannot read");
    assert_stderr_has(&no_output, "--output");
    let bad = write_json(d, "bad.json", &json!({ "summary": 5 }));
    let refused = report(d, &goal, "triage", &["succeeded", "--output", &bad]);
    assert_exit(&refused, 1);
    assert_stderr_has(&refused, "LW1012");
    let cancel = lwirc(d, &["goal", "cancel", &goal, "--reason", "wrong repo"]);
    assert_exit(&cancel, 0);
    let p = show_goal(d, &goal);
    assert_eq!(p["status"], "cancelled");
    assert_eq!(p["cancelled"]["reason"], "wrong repo");
    assert_exit(&lwirc(d, &["goal", "cancel", &goal]), 1);
}

#[test]
fn an_exhausted_goal_says_why_in_show_list_and_json_alike() {
    let dir = setup();
    let d = dir.path();
    let goal = eligible(d);
    let answers = answers(
        d,
        &[json!({ "kind": "attention", "rationale": "no template reads a cache" })],
    );
    let give_up = scripted_planner(&answers);
    for plan in ["p1", "p2"] {
        let out = lwirc(d, &["goal", "replan", &goal, "--planner", &give_up]);
        assert_exit(&out, 1);
        assert_stderr_has(&out, "ended in attention");
        if plan == "p1" {
            assert_exit(&lwirc(d, &["goal", "retry", &goal, plan]), 0);
        }
    }
    let p = show_goal(d, &goal);
    assert_eq!(p["status"], "exhausted");
    assert_eq!(
        p["replan_consumption"],
        json!({ "reviewer_rejection": 0, "planner_no_proposal": 2 })
    );
    let reason = p["reason"].as_str().unwrap();
    assert!(
        reason.contains("the replan budget is spent (2 of 2 replans used)"),
        "{reason}"
    );
    assert!(
        reason.contains(
            "the latest plan p2: the planner asked for attention: no template reads a cache"
        ),
        "{reason}"
    );
    assert!(
        reason.contains("2 of 2 consumed replan(s) ended without a proposal from the planner"),
        "{reason}"
    );

    let human = stdout(&lwirc(d, &["goal", "show", &goal]));
    assert!(human.contains("status: exhausted"), "{human}");
    assert!(human.contains(&format!("reason: {reason}")), "{human}");
    assert!(
        human.contains("replan consumption: reviewer_rejection 0, planner_no_proposal 2"),
        "{human}"
    );
    let list = stdout(&lwirc(d, &["goal", "list"]));
    assert!(
        list.contains("reviewer_rejection 0, planner_no_proposal 2"),
        "{list}"
    );
    assert!(list.contains(reason), "{list}");
    let rows: Value =
        serde_json::from_slice(&lwirc(d, &["goal", "list", "--format", "json"]).stdout).unwrap();
    assert_eq!(rows[0]["replan_consumption"], p["replan_consumption"]);
    assert_eq!(rows[0]["reason"], p["reason"]);
    // Each replan is its own planner session, with its own manifest.
    let plan_log = std::fs::read_to_string(
        d.join(".lwir/goals")
            .join(&goal)
            .join("plans/p1/events.jsonl"),
    )
    .unwrap();
    let started: Value = serde_json::from_str(plan_log.lines().nth(1).unwrap()).unwrap();
    assert_eq!(started["event"], "plan.session.started");
    assert!(
        started["data"]["manifest"]["outerLoopContextHash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
}

#[test]
fn unreadable_goal_files_and_refused_proposals_are_shown_with_their_place() {
    let dir = setup();
    let d = dir.path();
    std::fs::write(d.join("bad.json"), "{\"goal\": \"x\", bad").unwrap();
    let out = lwirc(d, &["goal", "create", "bad.json", "--color", "never"]);
    assert_exit(&out, 1);
    assert_stdout_has(&out, "bad.json:1:15");
    assert!(!stdout(&out).contains("OutOfBounds"), "{}", stdout(&out));

    let goal = eligible(d);
    let answers = answers(
        d,
        &[json!({ "kind": "apply", "root": "x",
                  "items": [ { "key": "x", "template": "triage-heavy", "input": { "repo": "acme/widgets" } } ] })],
    );
    let out = replan_with(d, &goal, &answers, &["--color", "never"]);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("LW1001"), "{err}");
    assert!(err.contains("plan p1 (the planner's answer)"), "{err}");
    assert!(err.contains("the replan is spent"), "{err}");
    let findings = std::fs::read_to_string(
        d.join(".lwir/goals")
            .join(&goal)
            .join("plans/p1/findings.json"),
    )
    .unwrap();
    assert!(findings.contains("LW1001"), "{findings}");
}

#[test]
fn an_output_larger_than_a_runner_may_answer_is_refused_and_nothing_recorded() {
    let dir = setup();
    let d = dir.path();
    let goal = create(d, &example_goal());
    let before = show_goal(d, &goal)["attempts"].clone();
    assert_exit(&report(d, &goal, "triage", &["started"]), 0);
    let huge = d.join("huge.json");
    let summary = "x".repeat(17 * 1024 * 1024);
    std::fs::write(&huge, format!(r#"{{"summary":"{summary}"}}"#)).unwrap();
    let out = report(
        d,
        &goal,
        "triage",
        &["succeeded", "--output", &huge.display().to_string()],
    );
    assert_exit(&out, 1);
    assert_stderr_has(&out, "at most 16777216 bytes");
    let p = show_goal(d, &goal);
    assert_eq!(p["status"], "running", "the attempt is still running: {p}");
    assert_ne!(p["attempts"], before);
}

/// A registry with the templates of `examples/goals/`, registered against the example
/// definition without the pattern of its `repo` input (so that any string may flow there).
fn registry_without_pattern() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut definition: Value =
        serde_json::from_slice(&std::fs::read(example("workflow.json")).unwrap()).unwrap();
    definition["input"]["properties"]["repo"] = json!({ "type": "string" });
    let definition = write_json(dir.path(), "workflow.json", &definition);
    for draft in [
        "examples/issue-triage/draft.json",
        "examples/goals/triage-lite.json",
    ] {
        let draft = root().join(draft).display().to_string();
        assert_exit(
            &lwirc(dir.path(), &["register", &draft, "-d", &definition]),
            0,
        );
    }
    dir
}

/// A goal whose `echo` reads the summary of `a` 2 000 times in one template, after `a`
/// answered a 2 MB summary (under the output cap): 4 GB if the input were built whole.
fn echoing_goal(d: &Path) -> String {
    let mut file = example_goal();
    file["work"] = json!([
        { "key": "a", "template": "triage-lite", "input": { "repo": "acme/widgets" } },
        { "key": "echo", "template": "triage-lite",
          "input": { "repo": "${ work.a.output.summary }".repeat(2000) } }
    ]);
    file["root"] = json!("echo");
    let goal = create(d, &file);
    let output = d.join("big-output.json");
    std::fs::write(
        &output,
        format!(r#"{{"summary":"{}"}}"#, "x".repeat(2_000_000)),
    )
    .unwrap();
    assert_exit(
        &report(
            d,
            &goal,
            "a",
            &["succeeded", "--output", &output.display().to_string()],
        ),
        0,
    );
    goal
}

/// `lwirc args` in `dir` with at most `kb` KiB of address space, its standard input what
/// the shell command `input` writes (else nothing).
fn lwirc_within(dir: &Path, kb: u64, input: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut line = format!("ulimit -v {kb} && ");
    if let Some(input) = input {
        line.push_str(&format!("{input} | "));
    }
    line.push_str(&format!("'{}'", env!("CARGO_BIN_EXE_lwirc")));
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    if input.is_none() {
        line.push_str(" </dev/null");
    }
    std::process::Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env_remove("LWIR_REGISTRY")
        .env_remove("LWIR_GOALS")
        .output()
        .unwrap()
}

#[test]
fn an_input_that_would_pass_16_mib_is_not_built_and_not_dispatched() {
    let dir = registry_without_pattern();
    let d = dir.path();
    let goal = echoing_goal(d);
    let out = lwirc_within(d, 2_000_000, None, &["goal", "next", &goal]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), "[]");
    assert!(
        stderr(&out).contains("LW1020 work-input-too-large")
            && stderr(&out).contains("16777216 bytes"),
        "{}",
        stderr(&out)
    );
    // goal run fails the attempt with its finding; the runner never sees it.
    let seen = d.join("seen");
    let runner = script(
        d,
        "runner.sh",
        &format!(
            "cat > {}; echo '{{\"kind\":\"succeeded\",\"output\":{{\"summary\":\"s\"}}}}'",
            seen.display()
        ),
    );
    let out = lwirc_within(
        d,
        2_000_000,
        None,
        &["goal", "run", &goal, "--runner", &runner],
    );
    assert_exit(&out, 1);
    assert!(!seen.exists(), "the runner was started");
    let p = show_goal(d, &goal);
    let echo = p["work"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["key"] == "echo")
        .unwrap();
    assert_eq!(echo["status"], "failed", "{p}");
    assert!(
        echo["errors"][0]
            .as_str()
            .unwrap()
            .contains("larger than 16777216 bytes"),
        "{p}"
    );
    let codes: Vec<String> =
        std::fs::read_to_string(d.join(".lwir/goals").join(&goal).join("events.jsonl"))
            .unwrap()
            .lines()
            .filter(|l| l.contains("\"work.failed\""))
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["data"]["code"].to_string())
            .collect();
    assert!(codes.iter().all(|c| c == "\"LW1020\""), "{codes:?}");
}

#[test]
fn an_oversized_output_file_or_stream_is_refused_before_it_is_read() {
    let dir = setup();
    let d = dir.path();
    let goal = create(d, &example_goal());
    assert_exit(&report(d, &goal, "triage", &["started"]), 0);
    let before = show_goal(d, &goal)["fingerprint"].clone();
    // 1 GiB that takes no disk, and 600 MB on standard input: neither is read whole (the
    // address space is smaller than either).
    let sparse = d.join("sparse.json");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let sparse = sparse.display().to_string();
    let args = ["goal", "report", &goal, "triage", "succeeded", "--output"];
    let cases = [
        (
            None,
            [&args[..], &[sparse.as_str()]].concat(),
            "is 1073741824 bytes",
        ),
        (
            Some("head -c 600000000 /dev/zero"),
            [&args[..], &["-"]].concat(),
            "on standard input is more than 16777216 bytes",
        ),
    ];
    for (input, args, said) in cases {
        let out = lwirc_within(d, 400_000, input, &args);
        assert_exit(&out, 1);
        assert!(
            stderr(&out).contains(said)
                && stderr(&out).contains("a work item's output is at most 16777216 bytes"),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(
        show_goal(d, &goal)["fingerprint"],
        before,
        "nothing was recorded"
    );
}
