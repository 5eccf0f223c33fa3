//! `lwirc goal serve` and `goal tick`: many goals at once, planner calls bounded across
//! them without holding up ready work, and a clean stop on SIGTERM.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

fn setup() -> tempfile::TempDir {
    goal_registry()
}

/// The example goal, made distinct by `n`.
fn goal(d: &Path, n: usize) -> String {
    let mut file = example_goal();
    file["objective"] = json!(format!("Triage number {n}."));
    create_goal(d, &format!("goal-{n}.json"), &file)
}

fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A runner script in `d` whose every attempt succeeds with the summary `s`.
fn succeeding_runner(d: &Path) -> String {
    script(
        d,
        "ok.sh",
        "cat >/dev/null; echo '{\"kind\":\"succeeded\",\"output\":{\"summary\":\"s\"}}'",
    )
}

/// `lwirc goal serve --runner RUNNER --interval 0.05` and `extra` arguments, started in `d`.
fn serve(d: &Path, runner: &str, extra: &[&str]) -> std::process::Child {
    let mut args = vec!["goal", "serve", "--runner", runner, "--interval", "0.05"];
    args.extend_from_slice(extra);
    command(d, &args).spawn().unwrap()
}

/// Sends SIGTERM to `child`.
fn sigterm(child: &std::process::Child) {
    // SAFETY: `kill` has no memory-safety preconditions; the pid is our child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
}

#[test]
fn serve_bounds_planner_calls_keeps_dispatching_and_stops_cleanly_on_sigterm() {
    let dir = setup();
    let d = dir.path();
    let goals: Vec<String> = (0..5).map(|n| goal(d, n)).collect();
    // Goals 0–2 are eligible: their root failed twice.
    for g in &goals[..3] {
        for e in ["e1", "e2"] {
            assert_exit(
                &lwirc(d, &["goal", "report", g, "triage", "failed", "--error", e]),
                0,
            );
        }
    }
    let planners = d.join("planners");
    std::fs::create_dir(&planners).unwrap();
    let log = d.join("planner.log");
    let answer = root()
        .join("examples/goals/planner/call-1.json")
        .display()
        .to_string();
    // A slow planner that counts how many planners run at once.
    let planner = script(
        d,
        "slow-planner.sh",
        &format!(
            "cat >/dev/null; me={p}/$LWIRC_GOAL; : > $me; echo \"start $(ls {p} | wc -l)\" >> {l}; sleep 2; rm $me; echo end >> {l}; cat {answer}",
            p = planners.display(),
            l = log.display()
        ),
    );
    let runner = succeeding_runner(d);
    let mut serve = serve(
        d,
        &runner,
        &["--planner", &planner, "--max-planner-calls", "2"],
    );
    // Goals 3 and 4 had ready work: it is done while the planners are still thinking.
    wait_for("the ready goals to succeed", || {
        goals[3..]
            .iter()
            .all(|g| show_goal(d, g)["status"] == "succeeded")
    });
    let so_far = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !so_far.contains("end"),
        "ready work waited for a planner: {so_far}"
    );
    // Every eligible goal gets its replan, never more than two at once.
    wait_for("the replans", || {
        goals[..3]
            .iter()
            .all(|g| show_goal(d, g)["status"] == "awaiting-review")
    });
    let starts: Vec<u32> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("start "))
        .map(|n| n.trim().parse().unwrap())
        .collect();
    assert_eq!(starts.len(), 3, "one planner call per eligible goal");
    assert!(starts.iter().all(|&n| n <= 2), "{starts:?}");
    assert!(
        starts.contains(&2),
        "the planner calls did not overlap: {starts:?}"
    );

    // An approval wakes a quiescent goal: its new generation is dispatched.
    assert_exit(&lwirc(d, &["goal", "approve", &goals[0], "p1"]), 0);
    wait_for("the approved goal to succeed", || {
        show_goal(d, &goals[0])["status"] == "succeeded"
    });

    // SIGTERM: a clean stop.
    sigterm(&serve);
    let status = serve.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    for g in &goals {
        let p = show_goal(d, g);
        assert!(
            p["work"]
                .as_array()
                .unwrap()
                .iter()
                .all(|w| w["status"] != "running"),
            "{p}"
        );
        assert!(
            p["plans"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["status"] != "in-progress" && p["status"] != "interrupted")
        );
    }
    // Nothing holds a goal any more: a `goal run` can take one.
    let out = lwirc(d, &["goal", "run", &goals[1], "--runner", &runner]);
    assert_exit(&out, 1);
    assert_stdout_has(&out, "awaiting-review");
}

#[test]
fn tick_does_one_step_per_goal() {
    let dir = setup();
    let d = dir.path();
    let a = goal(d, 0);
    let b = goal(d, 1);
    let runner = script(
        d,
        "fail.sh",
        "cat >/dev/null; echo '{\"kind\":\"failed\",\"error\":\"nope\"}'",
    );
    let out = lwirc(
        d,
        &["goal", "tick", "--runner", &runner, "--format", "json"],
    );
    assert_exit(&out, 0);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["dispatched"], 2);
    assert_eq!(report["failed"], 2);
    for g in [&a, &b] {
        assert_eq!(
            show_goal(d, g)["attempts"]["used"],
            1,
            "one step, one attempt"
        );
    }
    // Without a planner an eligible goal is left as it is.
    assert_exit(&lwirc(d, &["goal", "tick", "--runner", &runner]), 0);
    assert_exit(&lwirc(d, &["goal", "tick", "--runner", &runner]), 0);
    for g in [&a, &b] {
        let p = show_goal(d, g);
        assert_eq!(p["status"], "eligible");
        assert_eq!(p["attempts"]["used"], 2);
    }
}

#[test]
fn a_killed_serve_loses_nothing() {
    let dir = setup();
    let d = dir.path();
    let goals: Vec<String> = (0..2).map(|n| goal(d, n)).collect();
    let started = d.join("started");
    let runner = script(
        d,
        "hang-first.sh",
        &format!(
            "cat >/dev/null; echo x >> {s}; if [ \"$LWIRC_ATTEMPT\" = 1 ]; then sleep 30; fi; echo '{{\"kind\":\"succeeded\",\"output\":{{\"summary\":\"s\"}}}}'",
            s = started.display()
        ),
    );
    let mut serve = serve(d, &runner, &[]);
    wait_for("both runners", || {
        std::fs::read_to_string(&started).map_or(0, |t| t.lines().count()) >= 2
    });
    serve.kill().unwrap();
    serve.wait().unwrap();
    for g in &goals {
        assert_eq!(
            show_goal(d, g)["status"],
            "running",
            "the attempt in flight still shows"
        );
    }
    // The next driver records both as interrupted and goes on.
    let out = lwirc(
        d,
        &["goal", "tick", "--runner", &runner, "--format", "json"],
    );
    assert_exit(&out, 0);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["interrupted"], 2);
    for g in &goals {
        let p = show_goal(d, g);
        assert_eq!(p["status"], "succeeded", "{p}");
        assert_eq!(p["attempts"]["used"], 2);
        assert!(
            p["work"][0]["errors"][0]
                .as_str()
                .unwrap()
                .contains("interrupted")
        );
    }
}

#[test]
fn sigterm_gives_runners_a_grace_then_records_them_interrupted() {
    let dir = setup();
    let d = dir.path();
    let g = goal(d, 0);
    let started = d.join("started");
    let runner = script(
        d,
        "slow.sh",
        &format!(
            "cat >/dev/null; echo $$ >> {}; exec sleep 30",
            started.display()
        ),
    );
    let mut serve = serve(d, &runner, &["--stop-grace", "0.5"]);
    wait_for("the runner", || {
        std::fs::read_to_string(&started).is_ok_and(|t| !t.trim().is_empty())
    });
    let begun = Instant::now();
    sigterm(&serve);
    assert_eq!(serve.wait().unwrap().code(), Some(0));
    assert!(
        begun.elapsed() < Duration::from_secs(15),
        "stopped after {:?}",
        begun.elapsed()
    );
    let p = show_goal(d, &g);
    assert_eq!(p["attempts"]["used"], 1);
    assert!(
        p["work"][0]["errors"][0]
            .as_str()
            .unwrap()
            .contains("interrupted"),
        "{p}"
    );
    assert_ne!(p["status"], "running");
    let pid: i32 = std::fs::read_to_string(&started)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signal 0 only asks whether the process exists.
    assert_ne!(unsafe { libc::kill(pid, 0) }, 0, "the runner was killed");
}

#[test]
fn serve_with_a_planner_drives_a_goal_without_replanning_and_stops_on_sigterm() {
    let dir = setup();
    let d = dir.path();
    let mut file = example_goal();
    file.as_object_mut().unwrap().remove("replanning");
    let g = create_goal(d, "no-replanning.json", &file);
    let called = d.join("planner-called");
    let planner = script(
        d,
        "planner.sh",
        &format!("touch {}; exit 1", called.display()),
    );
    let runner = succeeding_runner(d);
    let mut serve = serve(d, &runner, &["--planner", &planner]);
    wait_for("the goal to succeed", || {
        show_goal(d, &g)["status"] == "succeeded"
    });
    // A few more passes over the goal that succeeded.
    std::thread::sleep(Duration::from_millis(300));
    let begun = Instant::now();
    sigterm(&serve);
    while serve.try_wait().unwrap().is_none() && begun.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopped = serve.try_wait().unwrap().is_some();
    if !stopped {
        let _ = serve.kill();
    }
    let out = serve.wait_with_output().unwrap();
    assert!(stopped, "still running 5 s after SIGTERM: {}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    assert_exit(&out, 0);
    assert!(!called.exists(), "the planner was called");
}
