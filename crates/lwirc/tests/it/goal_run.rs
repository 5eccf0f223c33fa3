//! `lwirc goal run`: runners and what can go wrong with them, parallelism and budgets
//! observed by the runners themselves, and a `goal run` killed with SIGKILL.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

fn setup() -> tempfile::TempDir {
    goal_registry()
}

/// A goal of `n` independent `triage-lite` items (`max_attempts` each) under a `triage`
/// root, with the given limits.
fn wide_goal(d: &Path, n: usize, max_attempts: u32, limits: Value) -> String {
    let mut file = example_goal();
    file["templates"]["triage-lite"]["max_attempts"] = json!(max_attempts);
    file["templates"]["triage"]["max_attempts"] = json!(1);
    let mut work: Vec<Value> = (0..n)
        .map(|i| json!({ "key": format!("k{i}"), "template": "triage-lite", "input": { "repo": "acme/widgets" } }))
        .collect();
    work.push(
        json!({ "key": "all", "template": "triage", "input": { "repo": "acme/widgets" },
                      "after": (0..n).map(|i| format!("k{i}")).collect::<Vec<_>>() }),
    );
    file["work"] = Value::Array(work);
    file["root"] = json!("all");
    file["limits"] = limits;
    create_goal(d, "goal.json", &file)
}

const OK: &str = r#"{"kind":"succeeded","output":{"summary":"done"}}"#;

#[test]
fn every_way_a_runner_fails_is_a_failed_attempt_with_its_finding() {
    let dir = setup();
    let d = dir.path();
    let cases = [
        (
            "missing",
            format!("{}/no-such-runner", d.display()),
            "LW1013",
        ),
        (
            "exit",
            script(d, "exit.sh", "cat >/dev/null; echo boom >&2; exit 3"),
            "LW1014",
        ),
        (
            "slow",
            script(d, "slow.sh", "cat >/dev/null; exec sleep 10"),
            "LW1015",
        ),
        (
            "big",
            script(
                d,
                "big.sh",
                "cat >/dev/null; head -c 100000 /dev/zero | tr '\\0' x",
            ),
            "LW1016",
        ),
        (
            "text",
            script(d, "text.sh", "cat >/dev/null; echo 'Done!'"),
            "LW1017",
        ),
        (
            "shape",
            script(d, "shape.sh", "cat >/dev/null; echo '{\"status\": \"ok\"}'"),
            "LW1018",
        ),
        (
            "schema",
            script(
                d,
                "schema.sh",
                "cat >/dev/null; echo '{\"kind\":\"succeeded\",\"output\":{\"summary\":5}}'",
            ),
            "LW1012",
        ),
    ];
    for (name, runner, code) in cases {
        let goals = d.join(name);
        let goal = {
            let mut file: Value = serde_json::from_slice(
                &std::fs::read(root().join("examples/goals/goal.json")).unwrap(),
            )
            .unwrap();
            file["templates"]["triage"]["max_attempts"] = json!(1);
            file.as_object_mut().unwrap().remove("replanning");
            let path = write_json(d, &format!("{name}.json"), &file);
            let out = lwirc(
                d,
                &[
                    "goal",
                    "create",
                    &path,
                    "--goals",
                    &goals.display().to_string(),
                ],
            );
            assert_exit(&out, 0);
            stdout(&out).trim().to_owned()
        };
        let out = lwirc(
            d,
            &[
                "goal",
                "run",
                &goal,
                "--goals",
                &goals.display().to_string(),
                "--runner",
                &runner,
                "--runner-timeout",
                "0.5",
                "--runner-max-output",
                "1000",
            ],
        );
        assert_exit(&out, 1);
        let p: Value = serde_json::from_slice(
            &lwirc(
                d,
                &[
                    "goal",
                    "show",
                    &goal,
                    "--goals",
                    &goals.display().to_string(),
                    "--format",
                    "json",
                ],
            )
            .stdout,
        )
        .unwrap();
        assert_eq!(p["status"], "exhausted", "{name}");
        assert_eq!(p["attempts"]["used"], 1, "{name}");
        let error = p["work"][0]["errors"][0].as_str().unwrap();
        assert!(error.contains(&format!("({code})")), "{name}: {error}");
        assert!(
            stderr(&out).contains("attempt 1 failed"),
            "{name}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn never_more_than_max_parallel_runners_and_retries_stop_at_each_ceiling() {
    let dir = setup();
    let d = dir.path();
    let goal = wide_goal(
        d,
        8,
        2,
        json!({ "max_total_attempts": 40, "max_parallel": 3 }),
    );
    let running = d.join("running");
    std::fs::create_dir(&running).unwrap();
    let seen = d.join("seen");
    // Each runner registers itself, counts who is running, and leaves: the count it saw is
    // at least the number alive at once. First attempts of k0..k7 fail, second ones succeed.
    let runner = script(
        d,
        "count.sh",
        &format!(
            "cat >/dev/null; me=\"{r}/$LWIRC_WORK.$LWIRC_ATTEMPT\"; : > \"$me\"; ls {r} | wc -l >> {s}; sleep 0.2; rm \"$me\"\n\
             if [ \"$LWIRC_WORK_KEY\" != all ] && [ \"$LWIRC_ATTEMPT\" = 1 ]; then echo '{{\"kind\":\"failed\",\"error\":\"flaky\"}}'; else echo '{OK}'; fi",
            r = running.display(),
            s = seen.display()
        ),
    );
    let out = lwirc(d, &["goal", "run", &goal, "--runner", &runner]);
    assert_exit(&out, 0);
    let counts: Vec<u32> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 17, "8 items × 2 attempts and the root");
    assert!(
        counts.iter().all(|&c| c <= 3),
        "more than 3 runners at once: {counts:?}"
    );
    assert!(counts.contains(&3), "never 3 at once: {counts:?}");
    let p = show_goal(d, &goal);
    assert_eq!(p["status"], "succeeded");
    assert_eq!(p["attempts"]["used"], 17);
    assert!(
        p["work"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["key"] != "all")
            .all(|w| w["attempts"] == 2)
    );
}

/// Ready work starts as soon as a slot is free, not when the whole batch has ended: with
/// two slots and one slow item, every fast item runs and ends while the slow one still
/// runs; and `goal next` lists ready work while other work runs.
#[test]
fn ready_work_starts_while_other_work_runs() {
    let dir = setup();
    let d = dir.path();
    let goal = wide_goal(
        d,
        5,
        1,
        json!({ "max_total_attempts": 20, "max_parallel": 2 }),
    );
    let ends = d.join("ends");
    let runner = script(
        d,
        "slow-k0.sh",
        &format!(
            "cat >/dev/null; [ \"$LWIRC_WORK_KEY\" = k0 ] && sleep 3; echo \"$LWIRC_WORK_KEY\" >> {e}; echo '{OK}'",
            e = ends.display()
        ),
    );
    let out = lwirc(d, &["goal", "run", &goal, "--runner", &runner]);
    assert_exit(&out, 0);
    let order: Vec<String> = std::fs::read_to_string(&ends)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(order.len(), 6, "{order:?}");
    assert_eq!(
        &order[4..],
        ["k0", "all"],
        "k1..k4 ran in the other slot while k0 ran: {order:?}"
    );

    // `goal next` while an item runs (reported started by hand): the others are listed.
    let goal = {
        let mut file: Value =
            serde_json::from_slice(&std::fs::read(d.join("goal.json")).unwrap()).unwrap();
        file["goal"] = json!("by-hand");
        let path = write_json(d, "by-hand.json", &file);
        let out = lwirc(d, &["goal", "create", &path]);
        assert_exit(&out, 0);
        stdout(&out).trim().to_owned()
    };
    assert_exit(&lwirc(d, &["goal", "report", &goal, "k0", "started"]), 0);
    let out = lwirc(d, &["goal", "next", &goal]);
    assert_exit(&out, 0);
    let next: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&str> = next
        .as_array()
        .map(|a| a.iter().filter_map(|w| w["key"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(keys, ["k1"], "one slot left of two: {next}");
    assert_eq!(show_goal(d, &goal)["status"], "running");
}

#[test]
fn the_goal_wide_budget_stops_everything_even_when_ceilings_remain() {
    let dir = setup();
    let d = dir.path();
    let goal = wide_goal(
        d,
        8,
        3,
        json!({ "max_total_attempts": 5, "max_parallel": 2 }),
    );
    let runner = script(
        d,
        "fail.sh",
        "cat >/dev/null; echo '{\"kind\":\"failed\",\"error\":\"always\"}'",
    );
    let out = lwirc(
        d,
        &[
            "goal", "run", &goal, "--runner", &runner, "--format", "json",
        ],
    );
    assert_exit(&out, 1);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["dispatched"], 5);
    assert_eq!(report["status"], "exhausted");
    let p = show_goal(d, &goal);
    assert_eq!(p["attempts"], json!({ "used": 5, "max": 5 }));
    assert!(
        p["reason"]
            .as_str()
            .unwrap()
            .contains("attempt budget is spent"),
        "{}",
        p["reason"]
    );
}

#[test]
fn a_killed_goal_run_loses_nothing_and_its_attempts_are_interrupted_once() {
    let dir = setup();
    let d = dir.path();
    let goal = wide_goal(
        d,
        2,
        2,
        json!({ "max_total_attempts": 10, "max_parallel": 2 }),
    );
    let log = d.join("runs.log");
    // First attempts hang (until killed); later ones succeed at once. Every start and end is logged.
    let runner = script(
        d,
        "hang.sh",
        &format!(
            "cat >/dev/null; echo \"start $LWIRC_WORK_KEY $LWIRC_ATTEMPT\" >> {l}\n\
             if [ \"$LWIRC_ATTEMPT\" = 1 ] && [ \"$LWIRC_WORK_KEY\" != all ]; then sleep 30; fi\n\
             echo \"end $LWIRC_WORK_KEY $LWIRC_ATTEMPT\" >> {l}; echo '{OK}'",
            l = log.display()
        ),
    );
    let mut child = command(d, &["goal", "run", &goal, "--runner", &runner])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&log).map_or(0, |t| t.lines().count()) < 2 {
        assert!(Instant::now() < deadline, "the runners did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let p = show_goal(d, &goal);
    assert_eq!(p["attempts"]["used"], 2);
    assert_eq!(p["status"], "running", "the attempts in flight still show");

    let out = lwirc(d, &["goal", "run", &goal, "--runner", &runner]);
    assert_exit(&out, 0);
    assert_eq!(
        stderr(&out).matches("recorded as interrupted").count(),
        2,
        "{}",
        stderr(&out)
    );
    let p = show_goal(d, &goal);
    assert_eq!(p["status"], "succeeded");
    assert_eq!(
        p["attempts"]["used"], 5,
        "2 interrupted + 2 retries + the root"
    );
    for w in p["work"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["key"] != "all")
    {
        assert_eq!(w["attempts"], 2);
        assert!(
            w["errors"][0].as_str().unwrap().contains("interrupted"),
            "{w}"
        );
    }
    // The hung first attempts never finished: they were killed before anything ran again.
    let runs = std::fs::read_to_string(&log).unwrap();
    assert!(
        !runs.contains("end k0 1") && !runs.contains("end k1 1"),
        "{runs}"
    );
    // A second run of a finished goal does nothing.
    let again = lwirc(d, &["goal", "run", &goal, "--runner", &runner]);
    assert_exit(&again, 0);
    assert_eq!(show_goal(d, &goal)["attempts"]["used"], 5);
}

#[test]
fn two_goal_runs_of_one_goal_do_not_both_drive_it() {
    let dir = setup();
    let d = dir.path();
    let goal = wide_goal(
        d,
        1,
        1,
        json!({ "max_total_attempts": 10, "max_parallel": 2 }),
    );
    let runner = script(
        d,
        "slow.sh",
        &format!("cat >/dev/null; sleep 1; echo '{OK}'"),
    );
    let mut first = command(d, &["goal", "run", &goal, "--runner", &runner])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while show_goal(d, &goal)["attempts"]["used"] == 0 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = lwirc(d, &["goal", "run", &goal, "--runner", &runner]);
    assert_exit(&second, 1);
    assert_stderr_has(&second, "another `lwirc goal run`");
    assert!(first.wait().unwrap().success());
    assert_eq!(show_goal(d, &goal)["attempts"]["used"], 2);
}

#[test]
fn the_example_runs_with_goal_run() {
    let dir = setup();
    let d = dir.path();
    let path = root()
        .join("examples/goals/goal.json")
        .display()
        .to_string();
    assert_exit(&lwirc(d, &["goal", "create", &path]), 0);
    let runner = format!(
        "{} {}",
        root().join("examples/runners/scripted.sh").display(),
        root().join("examples/goals/runner").display()
    );
    let planner = scripted_planner(&root().join("examples/goals/planner").display().to_string());
    let out = lwirc(
        d,
        &[
            "goal",
            "run",
            "triage-acme-w49",
            "--runner",
            &runner,
            "--planner",
            &planner,
        ],
    );
    assert_exit(&out, 1);
    assert_stdout_has(&out, "awaiting-review");
    assert_stderr_has(
        &out,
        "triage: attempt 2 failed: GitHub API rate limited again",
    );
    assert_exit(&lwirc(d, &["goal", "approve", "triage-acme-w49", "p1"]), 0);
    let out = lwirc(d, &["goal", "run", "triage-acme-w49", "--runner", &runner]);
    assert_exit(&out, 0);
    let p = show_goal(d, "triage-acme-w49");
    assert_eq!(p["status"], "succeeded");
    assert_eq!(p["attempts"]["used"], 3);
    assert_eq!(p["generations"].as_array().unwrap().len(), 2);
}

#[test]
fn goal_run_does_not_wait_without_end_for_work_it_did_not_start() {
    let dir = setup();
    let d = dir.path();
    let goal = wide_goal(
        d,
        1,
        1,
        json!({ "max_total_attempts": 10, "max_parallel": 2 }),
    );
    // Another runtime started the only ready item and has not reported back.
    assert_exit(&lwirc(d, &["goal", "report", &goal, "k0", "started"]), 0);
    let runner = script(
        d,
        "never.sh",
        "cat >/dev/null; echo should-not-run >&2; exit 1",
    );
    let begun = Instant::now();
    let out = lwirc(d, &["goal", "run", &goal, "--runner", &runner]);
    assert_exit(&out, 1);
    assert!(
        begun.elapsed() < Duration::from_secs(10),
        "{:?}",
        begun.elapsed()
    );
    assert_stdout_has(&out, "running");
    assert_eq!(
        show_goal(d, &goal)["attempts"]["used"],
        1,
        "nothing was dispatched"
    );
}

#[test]
fn a_runners_hostile_error_text_never_reaches_the_terminal_raw() {
    let dir = setup();
    let d = dir.path();
    let goal = wide_goal(
        d,
        1,
        1,
        json!({ "max_total_attempts": 10, "max_parallel": 2 }),
    );
    let runner = script(
        d,
        "hostile.sh",
        "cat >/dev/null; printf '{\"kind\":\"failed\",\"error\":\"boom\\u001b[2J\\u001b]0;owned\\u0007\"}'",
    );
    let out = lwirc(d, &["goal", "run", &goal, "--runner", &runner]);
    assert_exit(&out, 1);
    assert_stderr_has(&out, "boom");
    assert!(
        !stderr(&out).contains('\u{1b}') && !stdout(&out).contains('\u{1b}'),
        "{:?}",
        stderr(&out)
    );
    let human = lwirc(d, &["goal", "show", &goal]);
    assert!(!stdout(&human).contains('\u{1b}'), "{:?}", stdout(&human));
}

/// The example goal without its `replanning` block, made distinct by `objective`.
fn goal_without_replanning(d: &Path, objective: &str) -> String {
    let mut file = example_goal();
    file.as_object_mut().unwrap().remove("replanning");
    file["objective"] = json!(objective);
    create_goal(d, "no-replanning.json", &file)
}

#[test]
fn a_goal_without_replanning_runs_with_a_planner_given_and_never_calls_it() {
    let dir = setup();
    let d = dir.path();
    let called = d.join("planner-called");
    let planner = script(
        d,
        "planner.sh",
        &format!("touch {}; exit 1", called.display()),
    );
    for (name, answer, status, exit) in [
        ("succeeds", OK, "succeeded", 0),
        (
            "fails",
            r#"{"kind":"failed","error":"API down"}"#,
            "exhausted",
            1,
        ),
    ] {
        let goal = goal_without_replanning(d, name);
        let runner = script(
            d,
            &format!("{name}.sh"),
            &format!("cat >/dev/null; echo '{answer}'"),
        );
        let out = lwirc(
            d,
            &[
                "goal",
                "run",
                &goal,
                "--runner",
                &runner,
                "--planner",
                &planner,
            ],
        );
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
        assert_exit(&out, exit);
        assert_eq!(show_goal(d, &goal)["status"], status);
    }
    assert!(!called.exists(), "the planner was called");
}
