//! `lwirc repair`: the bounded loop with scripted planners — converging, safe fixes alone,
//! each cap, cycles, and each way a planner can fail to propose, each attributed.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// The example's clean draft with `github.add_label`'s required `number` removed: LW302,
/// which has no safe fix.
fn missing_number() -> Value {
    let mut draft = example_draft();
    let args = draft["steps"][1]["steps"][1]["args"]
        .as_object_mut()
        .unwrap();
    args.remove("number");
    draft
}

/// The example's clean draft with a `state` its tool does not accept: LW304, no safe fix.
fn wrong_state() -> Value {
    let mut draft = example_draft();
    draft["steps"][0]["args"]["state"] = json!("everything");
    draft
}

/// The example's clean draft with a misspelt tool: LW301, with a machine-applicable fix.
fn misspelt_tool() -> Value {
    let mut draft = example_draft();
    draft["steps"][0]["tool"] = json!("github.list_isues");
    draft
}

struct Run {
    code: i32,
    report: Value,
    stderr: String,
    elapsed: Duration,
}

/// Runs `lwirc repair` on `draft` with `planner` and `extra` flags, JSON report, `-o out.json`.
fn repair(dir: &Path, draft: &Value, planner: &str, extra: &[&str]) -> Run {
    let draft = write_json(dir, "draft.json", draft);
    let definition = write_json(dir, "workflow.json", &example_definition());
    let mut args = vec![
        "repair",
        &draft,
        "-d",
        &definition,
        "--planner",
        planner,
        "--format",
        "json",
        "-o",
        "out.json",
    ];
    args.extend_from_slice(extra);
    let started = Instant::now();
    let out = lwirc(dir, &args);
    let elapsed = started.elapsed();
    let report: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(&out), stderr(&out)));
    Run {
        code: out.status.code().unwrap(),
        report,
        stderr: stderr(&out),
        elapsed,
    }
}

fn planner_codes(run: &Run) -> Vec<String> {
    run.report["report"]["planner_findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn converges_on_the_second_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let answers = answers(
        dir.path(),
        &[draft_answer(&wrong_state()), draft_answer(&example_draft())],
    );
    let run = repair(
        dir.path(),
        &missing_number(),
        &scripted_planner(&answers),
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = &run.report["report"];
    assert_eq!(r["outcome"], "converged");
    assert_eq!(r["attempts_used"], 2);
    assert_eq!(r["planner_calls"], 2);
    assert_eq!(r["proposals"], 2);
    assert_eq!(r["proposals_failed"], 1);
    assert_eq!(r["errors"], 0);
    assert!(r["version"].as_str().unwrap().starts_with("sha256:"));
    let written: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out.json")).unwrap()).unwrap();
    assert_eq!(written, example_draft());
}

#[test]
fn safe_fixes_alone_converge_without_calling_the_planner() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("called");
    let planner = script(
        dir.path(),
        "planner.sh",
        &format!("touch '{}'; exit 1", marker.display()),
    );
    let run = repair(dir.path(), &misspelt_tool(), &planner, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = &run.report["report"];
    assert_eq!(r["planner_calls"], 0);
    assert_eq!(r["fixes_applied"], 1);
    assert!(!marker.exists(), "the planner was called");
    let written: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out.json")).unwrap()).unwrap();
    assert_eq!(written, example_draft());
}

#[test]
fn the_attempt_cap_stops_proposals_that_keep_failing() {
    let dir = tempfile::tempdir().unwrap();
    // Three different failing drafts, so that no state repeats.
    let mut third = wrong_state();
    third["steps"][0]["args"]["state"] = json!("all of them");
    let answers = answers(
        dir.path(),
        &[
            draft_answer(&wrong_state()),
            draft_answer(&third),
            draft_answer(&example_draft()),
        ],
    );
    let run = repair(
        dir.path(),
        &missing_number(),
        &scripted_planner(&answers),
        &["--max-attempts", "2"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let r = &run.report["report"];
    assert_eq!(r["outcome"], "exhausted");
    assert_eq!(r["stopped_by"], "attempt-cap");
    assert_eq!(r["cause"], "proposals-kept-failing");
    assert_eq!(r["attempts_used"], 2);
    assert_eq!(r["proposals_failed"], 2);
    assert_eq!(r["no_proposal"]["crashed"], 0);
    assert!(
        run.report["reason"]
            .as_str()
            .unwrap()
            .contains("max_repair_attempts reached: the planner's proposals kept failing")
    );
    // The last findings are there, and nothing was written.
    assert_eq!(run.report["findings"][0]["code"], "LW304");
    assert!(!dir.path().join("out.json").exists());
}

#[test]
fn the_call_cap_stops_a_planner_that_keeps_crashing() {
    let dir = tempfile::tempdir().unwrap();
    let planner = script(
        dir.path(),
        "planner.sh",
        "cat >/dev/null; echo 'model server unreachable' >&2; exit 3",
    );
    let run = repair(
        dir.path(),
        &missing_number(),
        &planner,
        &["--max-attempts", "5", "--max-planner-calls", "2"],
    );
    assert_eq!(run.code, 1);
    let r = &run.report["report"];
    assert_eq!(r["stopped_by"], "call-cap");
    assert_eq!(r["cause"], "planner-gave-no-proposal");
    assert_eq!(r["planner_calls"], 2);
    assert_eq!(r["no_proposal"]["crashed"], 2);
    assert_eq!(r["proposals"], 0);
    assert_eq!(planner_codes(&run), ["LW802", "LW802"]);
    let first = &r["planner_findings"][0];
    assert!(first["message"].as_str().unwrap().contains("status 3"));
    assert!(
        first["stderr_tail"]
            .as_str()
            .unwrap()
            .contains("model server unreachable")
    );
}

#[test]
fn a_repeated_state_is_detected_and_named() {
    let dir = tempfile::tempdir().unwrap();
    // A (missing number) → B (wrong state) → A again.
    let answers = answers(
        dir.path(),
        &[
            draft_answer(&wrong_state()),
            draft_answer(&missing_number()),
            draft_answer(&example_draft()),
        ],
    );
    let run = repair(
        dir.path(),
        &missing_number(),
        &scripted_planner(&answers),
        &["--max-attempts", "5"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let r = &run.report["report"];
    assert_eq!(r["stopped_by"], "cycle");
    assert_eq!(r["cause"], "repeated-state");
    assert_eq!(r["planner_calls"], 2, "stops at once, not at the cap");
    assert_eq!(r["proposals"], 2);
    assert_eq!(
        r["proposals_failed"], 2,
        "the proposal that came back failed too"
    );
    let codes: Vec<&str> = r["cycle_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(codes, ["LW302", "LW304"]);
    assert_eq!(planner_codes(&run), ["LW808"]);
}

#[test]
fn a_hanging_planner_is_killed_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // `sleep` is a child of the script: the whole process group must go.
    let planner = script(dir.path(), "planner.sh", "sleep 30; echo '{}'");
    let run = repair(
        dir.path(),
        &missing_number(),
        &planner,
        &["--planner-timeout", "0.3", "--max-planner-calls", "2"],
    );
    assert_eq!(run.code, 1);
    let r = &run.report["report"];
    assert_eq!(r["no_proposal"]["timed_out"], 2);
    assert_eq!(r["cause"], "planner-gave-no-proposal");
    assert_eq!(planner_codes(&run), ["LW803", "LW803"]);
    // Generous: two 0.3 s timeouts, far from the planner's 30 s.
    assert!(run.elapsed < Duration::from_secs(20), "{:?}", run.elapsed);
}

#[test]
fn garbage_and_invalid_answers_are_findings() {
    let dir = tempfile::tempdir().unwrap();
    let answers_dir = dir.path().join("answers");
    std::fs::create_dir_all(&answers_dir).unwrap();
    std::fs::write(
        answers_dir.join("call-1.json"),
        "Sure! Here is your plan:\n{}",
    )
    .unwrap();
    std::fs::write(
        answers_dir.join("call-2.json"),
        r#"{"kind":"draft","lwir":[1,2]}"#,
    )
    .unwrap();
    let run = repair(
        dir.path(),
        &missing_number(),
        &scripted_planner(&answers_dir.display().to_string()),
        &["--max-attempts", "2"],
    );
    assert_eq!(run.code, 1);
    let r = &run.report["report"];
    assert_eq!(r["stopped_by"], "attempt-cap");
    assert_eq!(r["no_proposal"]["not_json"], 1);
    assert_eq!(r["no_proposal"]["invalid"], 1);
    assert_eq!(planner_codes(&run), ["LW805", "LW806"]);
    let messages = r["planner_findings"].to_string();
    assert!(messages.contains("not JSON"), "{messages}");
    assert!(messages.contains("`lwir` is an array"), "{messages}");
}

#[test]
fn attention_stops_the_loop_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let planner = root().join("examples/planners/attention.sh");
    let run = repair(
        dir.path(),
        &missing_number(),
        &planner.display().to_string(),
        &[],
    );
    assert_eq!(run.code, 1);
    let r = &run.report["report"];
    assert_eq!(r["stopped_by"], "attention");
    assert_eq!(r["cause"], "planner-gave-no-proposal");
    assert_eq!(r["planner_calls"], 1, "budget left, but attention is final");
    assert_eq!(r["no_proposal"]["attention"], 1);
    assert_eq!(planner_codes(&run), ["LW807"]);
}

#[test]
fn a_planner_that_cannot_start_is_a_finding() {
    let dir = tempfile::tempdir().unwrap();
    let run = repair(
        dir.path(),
        &missing_number(),
        "./no-such-planner --flag",
        &["--max-planner-calls", "1"],
    );
    assert_eq!(run.code, 1);
    assert_eq!(planner_codes(&run), ["LW801"]);
    assert!(
        run.report["report"]["planner_findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("no-such-planner")
    );
}

#[test]
fn the_human_report_says_why_and_shows_the_last_findings() {
    let dir = tempfile::tempdir().unwrap();
    let draft = write_json(dir.path(), "draft.json", &missing_number());
    let definition = write_json(dir.path(), "workflow.json", &example_definition());
    let planner = root().join("examples/planners/attention.sh");
    let out = lwirc(
        dir.path(),
        &[
            "repair",
            &draft,
            "-d",
            &definition,
            "--planner",
            &planner.display().to_string(),
        ],
    );
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("planner call 1: repair attempt 1"), "{err}");
    assert!(err.contains("LW302"), "{err}");
    assert!(err.contains("error[LW807]"), "{err}");
    assert!(
        err.contains("not converged: the planner gave up and asked for attention"),
        "{err}"
    );
    assert!(stdout(&out).is_empty(), "nothing on stdout on failure");
}

#[test]
fn the_planner_receives_the_protocol_request() {
    let dir = tempfile::tempdir().unwrap();
    let request = dir.path().join("request.json");
    let planner = script(
        dir.path(),
        "planner.sh",
        &format!(
            "cat > '{}'; echo '{{\"kind\":\"attention\",\"rationale\":\"seen\"}}'",
            request.display()
        ),
    );
    let run = repair(dir.path(), &missing_number(), &planner, &[]);
    assert_eq!(run.code, 1);
    let request: Value = serde_json::from_slice(&std::fs::read(&request).unwrap()).unwrap();
    assert_eq!(request["protocol"], "lwir-planner/1");
    assert_eq!(request["kind"], "repair");
    assert_eq!(request["call"], 1);
    assert_eq!(request["attempt"], 1);
    assert_eq!(request["max_attempts"], 3);
    assert_eq!(request["draft"], missing_number());
    assert_eq!(request["findings"][0]["code"], "LW302");
    assert_eq!(request["findings"][0]["pointer"], "/steps/1/steps/1/args");
    assert_eq!(request["workflow"]["name"], "issue-triage");
    assert_eq!(request["manifest"]["plannerModelSlotId"], "deep");
}

/// Whether process `pid` still runs (a killed zombie waiting for its parent does not).
#[cfg(target_os = "linux")]
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !matches!(
            stat.rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next()),
            Some('Z' | 'X')
        )
    })
}

#[cfg(target_os = "linux")]
#[test]
fn a_complete_answer_counts_though_the_planner_left_children_holding_its_output() {
    // Each call answers correctly, then leaves two processes behind holding standard output
    // open: one in its process group, one that left it with `setsid`.
    let dir = tempfile::tempdir().unwrap();
    let answer = write_json(dir.path(), "answer.json", &draft_answer(&example_draft()));
    let pids = dir.path().join("pids");
    let planner = script(
        dir.path(),
        "planner.sh",
        &format!(
            "cat >/dev/null; cat '{answer}'\n\
             sleep 30 & echo $! >> '{pids}'\n\
             setsid sleep 30 & echo $! >> '{pids}'",
            pids = pids.display()
        ),
    );
    // A timeout the call would hit, were it waiting for those children.
    let run = repair(
        dir.path(),
        &missing_number(),
        &planner,
        &["--planner-timeout", "20"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report["report"]["outcome"], "converged");
    assert_eq!(planner_codes(&run), Vec::<String>::new());
    let written: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out.json")).unwrap()).unwrap();
    assert_eq!(written, example_draft());
    // Nothing the planner started outlives its call.
    let pids = std::fs::read_to_string(&pids).unwrap();
    let pids: Vec<&str> = pids.lines().collect();
    assert_eq!(pids.len(), 2);
    let until = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|pid| running(pid)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    for pid in pids {
        assert!(!running(pid), "the planner's child {pid} still runs");
    }
}

/// The example draft's own text with mistakes typed into it, each with a safe fix (and an
/// escape, `\u0023` for `#`, that must survive): the mistakes, and the text as fixed.
fn mistyped_text() -> (String, String) {
    let text = std::fs::read_to_string(example("draft.json"))
        .unwrap()
        .replace("Classify issue #", "Classify issue \\u0023");
    let mistyped = text
        .replacen(
            r#""tool": "github.list_issues","#,
            r#""tool": "github.list_isues","#,
            1,
        )
        .replace(r#""max_parallel": 8"#, r#""max_parallel": 64"#)
        .replace(
            r#""model": "fast","#,
            r#""model": "fast", "descripton": "pick one label","#,
        )
        .replace(r#""type": "string""#, r#""type": "strng""#);
    let fixed = text
        .replace(r#""max_parallel": 8"#, r#""max_parallel": 16"#)
        .replace(
            r#""model": "fast","#,
            r#""model": "fast", "description": "pick one label","#,
        );
    (mistyped, fixed)
}

/// Safe fixes edit the draft's text: everything outside the fixed values — key order,
/// spacing, line breaks, escapes — is byte for byte what the author wrote (they used to
/// come back pretty-printed with every object's keys re-sorted).
#[test]
fn safe_fixes_keep_the_draft_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let (mistyped, fixed) = mistyped_text();
    let draft = dir.path().join("draft.json");
    std::fs::write(&draft, &mistyped).unwrap();
    let out = lwirc(
        dir.path(),
        &[
            "repair",
            draft.to_str().unwrap(),
            "-d",
            &example("workflow.json"),
            "--planner",
            "false",
            "--max-planner-calls",
            "0",
            "-o",
            "out.json",
            "--format",
            "json",
        ],
    );
    assert_exit(&out, 0);
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["report"]["fixes_applied"], 4, "{report}");
    let written = std::fs::read_to_string(dir.path().join("out.json")).unwrap();
    assert_eq!(written, fixed);
}

/// After a pass of safe fixes, findings point into the fixed text (a fix that lengthens a
/// value moves everything after it).
#[test]
fn findings_after_fixes_point_into_the_fixed_text() {
    use lwir_repair::fixes::{Check, MAX_FIX_PASSES, Seen, apply_safe_fixes};
    let (mistyped, _) = mistyped_text();
    let draft = mistyped.replace(r#""github.add_label""#, r#""nothing.at_all""#);
    let typed_at = draft.find(r#""nothing.at_all""#).unwrap();
    let definition = lwir_validators::pipeline::Source {
        name: "workflow.json".into(),
        bytes: std::fs::read(example("workflow.json")).unwrap(),
    };
    let mut check = lwir_session::PipelineCheck::new(definition, "draft.json");
    let checked = check.check(draft.as_bytes());
    let mut seen = Seen::default();
    seen.visit(&checked);
    let outcome = apply_safe_fixes(
        &mut check,
        draft.into_bytes(),
        checked,
        &mut seen,
        MAX_FIX_PASSES,
        &mut |_| {},
    );
    let applied: usize = outcome.passes.iter().map(|p| p.applied.len()).sum();
    assert_eq!(applied, 4, "{:?}", outcome.passes);
    let [left] = outcome.checked.findings.as_slice() else {
        panic!("{:?}", outcome.checked.findings);
    };
    assert_eq!(left.code.as_str(), "LW301");
    assert_eq!(&outcome.draft[left.span.range()], br#""nothing.at_all""#);
    // Where the author wrote it, moved by the two fixes before it that add a byte each
    // (`list_isues`, `descripton`); `64` to `16` keeps its length.
    assert_eq!(left.span.start(), typed_at + 2);
}
