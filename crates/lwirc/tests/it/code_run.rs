//! `code.run` in the sandbox: `lwirc run` runs a body (and replay does not run it again),
//! `lwirc test-code` runs a draft's body as a run would, and without bubblewrap both
//! refuse, naming it. Tests that need the sandbox say they are skipped where it does not
//! run, unless `LWIRC_REQUIRE_ENGINES` is set (CI sets it).

use crate::common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

fn definition() -> Value {
    json!({
        "name": "w",
        "input": { "type": "object" },
        "output": {},
        "models": {},
        "tools": {},
        "limits": { "max_steps": 10, "max_parallel": 4, "max_loop_iterations": 10 }
    })
}

/// A draft of one `code.run` step `c` with `body` and `output`, its input the run's input.
fn draft(language: &str, body: &str, output: Value) -> Value {
    json!({ "lwir": "1", "workflow": "w",
            "steps": [ { "id": "c", "kind": "code.run", "language": language, "body": body,
                         "input": "${ input }", "output": output } ],
            "output": "${ steps.c.output }" })
}

/// Registers `draft` in `dir`; its version.
fn register(dir: &Path, draft: &Value) -> String {
    let d = write_json(dir, "draft.json", draft);
    let w = write_json(dir, "workflow.json", &definition());
    register_files(dir, &d, &w)
}

fn run(dir: &Path, version: &str, path: Option<&str>) -> std::process::Output {
    let input = write_json(dir, "input.json", &json!({ "n": 4 }));
    let bindings = write_json(
        dir,
        "bindings.json",
        &json!({ "bindings": "lwir.bindings/1" }),
    );
    let mut c = command(
        dir,
        &["run", version, "--input", &input, "--bindings", &bindings],
    );
    if let Some(path) = path {
        c.env("PATH", path);
    }
    c.env("OPENAI_API_KEY", "sk-test-123");
    c.output().unwrap()
}

/// The run id, the second word of the first line `lwirc run` writes to standard error.
fn run_id(err: &str) -> &str {
    err.lines()
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
}

/// The log of the run `err` names.
fn run_log(dir: &Path, err: &str) -> String {
    let run = run_id(err);
    std::fs::read_to_string(dir.join(".lwir/runs").join(run).join("events.jsonl")).unwrap()
}

/// A body whose result changes every time it runs runs once: replay takes its recorded
/// result (a body run again would give another and be a difference).
#[test]
fn a_code_run_step_runs_in_the_sandbox_and_replay_does_not_run_it_again() {
    if !sandbox_runs("code.run in a run") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let body = "import json, os, sys, time\nd = json.load(sys.stdin)\n\
                print(json.dumps({'n': d['n'] * 2, 't': time.time_ns() // 1000, 'key': os.environ.get('OPENAI_API_KEY')}))";
    let output = json!({ "type": "object", "properties": { "n": { "type": "integer" }, "t": { "type": "integer" } },
                         "required": ["n", "t"] });
    let version = register(d, &draft("python", body, output));
    let out = run(d, &version, None);
    assert_exit(&out, 0);
    let result: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(result["n"], 8);
    assert_eq!(
        result["key"],
        Value::Null,
        "lwirc's environment reached the body"
    );
    let err = stderr(&out);
    let log = run_log(d, &err);
    assert!(log.contains(r#""event":"code.started""#), "{log}");
    assert!(log.contains(r#""event":"code.finished""#), "{log}");
    assert!(!log.contains("sk-test-123"));
    let run = run_id(&err);
    let out = lwirc(d, &["runs", "replay", run]);
    assert_exit(&out, 0);
    assert_stdout_has(&out, "no difference");
}

/// A body that breaks its limits or its schema fails its step with the code and the reason.
#[test]
fn hostile_and_wrong_bodies_fail_their_step() {
    if !sandbox_runs("hostile code.run bodies") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases = [
        (
            "python",
            "import os\nwhile True:\n    os.fork()",
            "LW1106",
            "processes limit",
        ),
        ("bash", "echo '{\"n\": \"x\"}'", "LW1102", "keyword `type`"),
        (
            "javascript",
            "console.log('not json')",
            "LW1106",
            "not one JSON value",
        ),
        (
            "bash",
            "printf '\\033[2J\\033]0;pwned\\007gone' >&2; exit 3",
            "LW1106",
            "exited with status 3: \\u{1b}[2J\\u{1b}]0;pwned\\u{7}gone",
        ),
    ];
    for (language, body, code, why) in cases {
        let output = json!({ "type": "object", "properties": { "n": { "type": "integer" } } });
        let version = register(d, &draft(language, body, output));
        let out = run(d, &version, None);
        assert_exit(&out, 1);
        let err = stderr(&out);
        assert!(
            err.contains(&format!("step `c`: {code}")) && err.contains(why),
            "{language} {body}: {err}"
        );
        // Shown cleaned on the terminal; kept exact in the run log.
        assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err}");
        if body.contains("pwned") {
            let log = run_log(d, &err);
            assert!(
                log.contains(r#""stderr":"\u001b[2J\u001b]0;pwned\u0007gone""#),
                "{log}"
            );
        }
    }
}

/// Without bubblewrap a `code.run` step fails closed, naming what to install.
#[test]
fn without_bubblewrap_code_run_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let version = register(
        d,
        &draft("python", "print(1)", json!({ "type": "integer" })),
    );
    let out = run(d, &version, Some("/nonexistent"));
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("step `c`: LW1108"), "{err}");
    assert!(
        err.contains("nothing runs unconfined") && err.contains("apt-get install bubblewrap"),
        "{err}"
    );
    let d2 = write_json(
        d,
        "draft.json",
        &draft("python", "print(1)", json!({ "type": "integer" })),
    );
    let mut c = command(d, &["test-code", "/steps/0", &d2]);
    let out = c.env("PATH", "/nonexistent").output().unwrap();
    assert_exit(&out, 1);
    assert_stderr_has(&out, "apt-get install bubblewrap");
}

/// `lwirc test-code` runs a step's body as a run would: the result and whether it fits;
/// the body's output cleaned on the terminal, exact in JSON.
#[test]
fn test_code_runs_a_drafts_body_and_says_whether_it_fits() {
    if !sandbox_runs("lwirc test-code") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let body = "import json, sys\nd = json.load(sys.stdin)\n\
                print('\\x1b[31mworking\\x1b]0;pwned\\x07', file=sys.stderr)\n\
                print(json.dumps({'n': d['n'] + 1}))";
    let output = json!({ "type": "object", "properties": { "n": { "type": "integer", "maximum": 5 } },
                         "required": ["n"] });
    let path = write_json(d, "draft.json", &draft("python", body, output));
    let input = write_json(d, "input.json", &json!({ "n": 4 }));
    let out = lwirc(d, &["test-code", "/steps/0", &path, "--input", &input]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "{\"n\":5}\n");
    let err = stderr(&out);
    assert!(
        err.contains("ran /steps/0 (python) in the sandbox: exit status 0"),
        "{err}"
    );
    assert!(err.contains(r"\u{1b}[31mworking"), "{err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err}");
    assert!(
        err.contains("the result fits the step's output schema"),
        "{err}"
    );

    let input = write_json(d, "input.json", &json!({ "n": 7 }));
    let out = lwirc(
        d,
        &[
            "test-code",
            "c",
            &path,
            "--input",
            &input,
            "--format",
            "json",
        ],
    );
    assert_exit(&out, 1);
    let answer: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(answer["step"], "/steps/0");
    assert_eq!(answer["result"], json!({ "n": 8 }));
    assert_eq!(answer["fits"], false);
    assert_eq!(answer["finding"]["code"], "LW1102");
    assert_eq!(answer["finding"]["pointer"], "/n");
    assert_eq!(answer["finding"]["keyword"], "maximum");
    assert_eq!(answer["stderr"], "\u{1b}[31mworking\u{1b}]0;pwned\u{7}\n");

    let out = lwirc(d, &["test-code", "/output", &path]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("not `code.run`") || stderr(&out).contains("names no step"));
}
