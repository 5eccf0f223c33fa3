//! `lwirc run` and `lwirc runs`: the built binary with command tools and models, killed
//! and resumed, retried, replayed, and faced with hostile tools.

use crate::common;
#[path = "run_mcp/mod.rs"]
mod mcp;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{
    assert_exit, assert_stderr_has, assert_stdout_has, command, example, lwirc, register_example,
    register_files, root, script, stderr, stdout, write_json,
};
use serde_json::{Value, json};

/// Registers `draft` against `definition` in `dir/.lwir/registry`; its version.
fn register(dir: &Path, draft: &Value, definition: &Value) -> String {
    let d = write_json(dir, "draft.json", draft);
    let w = write_json(dir, "workflow.json", definition);
    register_files(dir, &d, &w)
}

/// A draft of workflow `w`: `steps` and `output`.
fn draft(steps: Value, output: Value) -> Value {
    json!({"lwir": "1", "workflow": "w", "steps": steps, "output": output})
}

/// A draft of a `map` over the input's `xs` (4 at a time) calling `tool` as step `id` on
/// each `x`, its output the list of the calls' `v`; and the input of 50 items, 0 to 49, in
/// `dir`. What the kill tests run.
fn map_of_50_calls(dir: &Path, id: &str, tool: &str) -> (Value, String) {
    let draft = draft(
        json!([
            {"id": "each", "kind": "map", "over": "${ input.xs }", "as": "x", "max_parallel": 4,
             "steps": [{"id": id, "kind": "tool.call", "tool": tool, "args": {"x": "${ x }"}}],
             "result": format!("${{ steps.{id}.output.v }}")}
        ]),
        json!("${ steps.each.output }"),
    );
    let input = write_json(
        dir,
        "input.json",
        &json!({"xs": (0..50).collect::<Vec<_>>()}),
    );
    (draft, input)
}

/// Asserts that `out` printed what the kill tests' map gives: each `x` doubled.
#[track_caller]
fn assert_doubled(out: &std::process::Output) {
    let expected: Vec<i64> = (0..50).map(|x| x * 2).collect();
    assert_eq!(stdout_json(out), json!(expected));
}

/// A definition with tools `tools` (id → output schema, any object as input).
fn definition(tools: &[(&str, Value)]) -> Value {
    let tools: serde_json::Map<String, Value> = tools
        .iter()
        .map(|(id, output)| {
            (
                (*id).to_owned(),
                json!({"description": format!("tool {id}"), "input": {"type": "object"}, "output": output}),
            )
        })
        .collect();
    json!({
        "name": "w",
        "input": {"type": "object"},
        "output": {},
        "models": {"fast": {"model": "acme/small", "quality": "standard", "capabilities": ["json_output", "tool_use"]}},
        "tools": tools,
        "limits": {"max_steps": 100, "max_parallel": 64, "max_loop_iterations": 10}
    })
}

fn bindings(dir: &Path, tools: &[(&str, Value)], models: Value) -> String {
    let tools: serde_json::Map<String, Value> = tools
        .iter()
        .map(|(id, b)| ((*id).to_owned(), b.clone()))
        .collect();
    write_json(
        dir,
        "bindings.json",
        &json!({"bindings": "lwir.bindings/1", "tools": tools, "models": models}),
    )
}

fn run_id(err: &str) -> String {
    let first = err.lines().next().unwrap_or_default();
    assert!(first.starts_with("run "), "the run id comes first: {err}");
    first.split_whitespace().nth(1).unwrap().to_owned()
}

/// `lwirc run VERSION --input INPUT --bindings B` in `dir`.
fn run_bound(dir: &Path, version: &str, input: &str, b: &str) -> std::process::Output {
    lwirc(dir, &["run", version, "--input", input, "--bindings", b])
}

/// `lwirc bindings check B --version VERSION` in `dir`.
fn check_bindings(dir: &Path, b: &str, version: &str) -> std::process::Output {
    lwirc(dir, &["bindings", "check", b, "--version", version])
}

/// Standard output, parsed as JSON.
fn stdout_json(out: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(out)).unwrap()
}

/// `lwirc runs replay RUN` in `dir`, which finds no difference.
#[track_caller]
fn replays_without_difference(dir: &Path, run: &str) {
    let out = lwirc(dir, &["runs", "replay", run]);
    assert_exit(&out, 0);
    assert_stdout_has(&out, "no difference");
}

/// The event log of run `run` in `dir`'s default store.
fn run_events(dir: &Path, run: &str) -> String {
    std::fs::read_to_string(dir.join(".lwir/runs").join(run).join("events.jsonl")).unwrap()
}

/// Starts `lwirc args` in `dir` and kills it with SIGKILL (nothing of lwirc runs after it)
/// once `made()` calls were made, `at()` of them (asked once the first line on standard
/// error came), or it ended, or a minute passed; the run id that line names.
fn kill_at(
    dir: &Path,
    args: &[&str],
    made: impl Fn() -> usize,
    at: impl FnOnce() -> usize,
    poll: Duration,
) -> Option<String> {
    let mut child = command(dir, args).stderr(Stdio::piped()).spawn().unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = rx.recv_timeout(Duration::from_secs(30)).ok();
    let deadline = Instant::now() + Duration::from_secs(60);
    let at = at();
    while made() < at && Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(poll);
    }
    let _ = child.kill();
    let _ = child.wait();
    first.and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
}

/// A run of `version` on `input` with bindings `b` whose bindings drifted (`code`): refused,
/// with no run recorded; with `--on-drift pause` it pauses, a plain resume is refused again,
/// and a resume with `--accept-drift --by ops` finishes. `nothing_called` is checked after
/// the refusal and the pause. The run id and the output of the accepted resume.
fn drifts_then_resumes_when_accepted(
    dir: &Path,
    [version, input, b]: [&str; 3],
    code: &str,
    nothing_called: impl Fn(),
) -> (String, std::process::Output) {
    let out = lwirc(dir, &["run", version, "--input", input, "--bindings", b]);
    assert_exit(&out, 3);
    assert!(stderr(&out).contains(code), "{}", stderr(&out));
    assert!(!dir.join(".lwir/runs").exists());
    nothing_called();
    let out = lwirc(
        dir,
        &[
            "run",
            version,
            "--input",
            input,
            "--bindings",
            b,
            "--on-drift",
            "pause",
        ],
    );
    assert_exit(&out, 3);
    let run = run_id(&stderr(&out));
    nothing_called();
    let out = lwirc(dir, &["runs", "resume", &run]);
    assert_exit(&out, 3);
    let out = lwirc(
        dir,
        &["runs", "resume", &run, "--accept-drift", "--by", "ops"],
    );
    assert_exit(&out, 0);
    (run, out)
}

/// The shipped example, end to end: its output on standard output, the run id first on
/// standard error, a log that replays without a difference and verifies.
#[test]
fn the_example_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let version = register_example(dir.path());
    let bindings = json!({
        "bindings": "lwir.bindings/1",
        "tools": {
            "github.list_issues": {"command": [example("tools/github.sh")]},
            "github.add_label": {"command": [example("tools/github.sh")]}
        },
        "models": {"*": {"command": [root().join("examples/models/scripted.sh").display().to_string()]}}
    });
    let b = write_json(dir.path(), "bindings.json", &bindings);
    let out = lwirc(
        dir.path(),
        &[
            "run",
            &version[7..15],
            "--input",
            &example("input.json"),
            "--bindings",
            &b,
        ],
    );
    assert_exit(&out, 0);
    assert_eq!(stdout_json(&out), json!({"summary": "3 issues, 1 bugs."}));
    let err = stderr(&out);
    let run = run_id(&err);
    assert!(err.contains("ok each[2]/label"), "{err}");
    assert!(err.contains("fsyncs per step"), "{err}");
    let out = lwirc(dir.path(), &["runs", "replay", &run[..5]]);
    assert_exit(&out, 0);
    assert_stdout_has(&out, "no difference");
    let out = lwirc(dir.path(), &["runs", "verify"]);
    assert_exit(&out, 0);
    let out = lwirc(dir.path(), &["runs", "list", "--format", "json"]);
    assert_exit(&out, 0);
    let list: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(list[0]["status"], "succeeded");
    assert_eq!(list[0]["run"], run.as_str());
    let out = lwirc(dir.path(), &["runs", "show", &run, "--format", "json"]);
    assert_exit(&out, 0);
    let show: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(show["output"], json!({"summary": "3 issues, 1 bugs."}));
    assert_eq!(show["steps"].as_array().unwrap().len(), 10);
    // The record keeps the tools' schemas; the run records its bindings.
    let log = run_events(dir.path(), &run);
    let started: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(started["data"]["bindings"], bindings);
    assert!(started["chain"].is_string());
}

/// An input outside the input schema: findings at pointers into it, exit 1, nothing run
/// or recorded. A bad bindings file: findings at pointers into it, exit 2.
#[test]
fn bad_input_and_bad_bindings_are_findings() {
    let dir = tempfile::tempdir().unwrap();
    let version = register_example(dir.path());
    let calls = dir.path().join("calls");
    let tool = script(
        dir.path(),
        "tool.sh",
        &format!("cat >> {}\necho '{{}}'", calls.display()),
    );
    let good = bindings(
        dir.path(),
        &[
            ("github.list_issues", json!({"command": [tool]})),
            ("github.add_label", json!({"command": [tool]})),
        ],
        json!({"*": {"command": [tool]}}),
    );
    let input = write_json(
        dir.path(),
        "input.json",
        &json!({"repo": "widgets", "extra": 1}),
    );
    let out = run_bound(dir.path(), &version, &input, &good);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("LW1101"), "{err}");
    assert!(err.contains("/repo") || err.contains("pattern"), "{err}");
    assert!(!calls.exists(), "a tool was called");
    assert!(!dir.path().join(".lwir/runs").exists());

    let bad = write_json(
        dir.path(),
        "bad.json",
        &json!({"bindings": "lwir.bindings/1", "tools": {"github.list_issues": {"comand": ["x"]}}}),
    );
    let input = write_json(dir.path(), "input.json", &json!({"repo": "acme/widgets"}));
    let out = run_bound(dir.path(), &version, &input, &bad);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("LW102") && err.contains("comand"), "{err}");

    // A tool the version calls, not bound.
    let partial = bindings(
        dir.path(),
        &[("github.list_issues", json!({"command": [tool]}))],
        json!({"*": {"command": [tool]}}),
    );
    let out = run_bound(dir.path(), &version, &input, &partial);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("`github.add_label` is called by the version but not bound"));
    assert!(!calls.exists());
}

/// A map of 50 command-tool calls, its `lwirc` killed with SIGKILL three times along the
/// way and resumed each time: the same output as an uninterrupted run, and the tool saw
/// each call once, or twice with the same idempotency key.
#[test]
fn kill_9_and_resume_calls_each_tool_once_or_again_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let def = definition(&[(
        "echo",
        json!({"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]}),
    )]);
    let (map, input) = map_of_50_calls(dir.path(), "echo", "echo");
    let version = register(dir.path(), &map, &def);
    let keys = dir.path().join("keys");
    // Appends the call's key, takes a while, answers x * 2.
    let tool = script(
        dir.path(),
        "echo.sh",
        &format!(
            "req=$(cat)\nkey=$(printf '%s' \"$req\" | sed 's/.*\"idempotency_key\":\"\\([^\"]*\\)\".*/\\1/')\n\
             x=$(printf '%s' \"$req\" | sed 's/.*\"x\":\\([0-9]*\\).*/\\1/')\n\
             printf '%s\\n' \"$key\" >> {}\nsleep 0.05\nprintf '{{\"v\":%d}}\\n' $((x * 2))",
            keys.display()
        ),
    );
    let b = bindings(
        dir.path(),
        &[("echo", json!({"command": [tool]}))],
        json!({}),
    );
    let lines = || {
        std::fs::read_to_string(&keys)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    // Start the run, kill it once `at` calls were made; its id.
    let kill_at = |args: &[&str], at: usize| {
        kill_at(dir.path(), args, lines, || at, Duration::from_millis(5))
    };
    let run = kill_at(&["run", &version, "--input", &input, "--bindings", &b], 8).unwrap();
    assert!(lines() >= 8 && lines() < 50, "{} calls", lines());
    for at in [20, 36] {
        kill_at(&["runs", "resume", &run], at);
    }
    let out = lwirc(dir.path(), &["runs", "resume", &run]);
    assert_exit(&out, 0);
    assert_doubled(&out);
    let text = std::fs::read_to_string(&keys).unwrap();
    let mut counts = std::collections::BTreeMap::new();
    for key in text.lines() {
        *counts.entry(key.to_owned()).or_insert(0) += 1;
    }
    assert_eq!(counts.len(), 50, "one key per call");
    assert!(counts.values().all(|&n| n <= 2), "{counts:?}");
    assert!(
        counts
            .keys()
            .all(|k| k.starts_with("lwir:") && k.len() == 37)
    );
    let out = lwirc(dir.path(), &["runs", "show", &run, "--format", "json"]);
    let show: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(show["status"], "succeeded");
    assert_eq!(show["resumed"], 3);
    replays_without_difference(dir.path(), &run);
}

/// A run whose third step fails; after the tool is fixed, `runs retry` calls neither of
/// the first two again; replay makes no call and finds no difference.
#[test]
fn retry_after_a_fix_calls_only_the_failed_step() {
    let dir = tempfile::tempdir().unwrap();
    let n = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let def = definition(&[("one", n.clone()), ("two", n.clone()), ("three", n)]);
    let version = register(
        dir.path(),
        &draft(
            json!([
                {"id": "a", "kind": "tool.call", "tool": "one"},
                {"id": "b", "kind": "tool.call", "tool": "two", "args": {"n": "${ steps.a.output.n }"}},
                {"id": "c", "kind": "tool.call", "tool": "three", "args": {"n": "${ steps.b.output.n }"}}
            ]),
            json!("${ steps.c.output }"),
        ),
        &def,
    );
    let calls = dir.path().join("calls");
    let fixed = dir.path().join("fixed");
    let tool = script(
        dir.path(),
        "tool.sh",
        &format!(
            "req=$(cat)\ncase $req in *'\"tool\":\"one\"'*) t=one;; *'\"tool\":\"two\"'*) t=two;; *) t=three;; esac\n\
             echo $t >> {calls}\n\
             if [ $t = three ] && [ ! -e {fixed} ]; then echo 'three is broken' >&2; exit 1; fi\n\
             echo '{{\"n\": 3}}'",
            calls = calls.display(),
            fixed = fixed.display()
        ),
    );
    let b = bindings(
        dir.path(),
        &[
            ("one", json!({"command": [tool]})),
            ("two", json!({"command": [tool]})),
            ("three", json!({"command": [tool]})),
        ],
        json!({}),
    );
    let input = write_json(dir.path(), "input.json", &json!({}));
    let out = run_bound(dir.path(), &version, &input, &b);
    assert_exit(&out, 1);
    let err = stderr(&out);
    let run = run_id(&err);
    assert!(err.contains("step `c`: LW1104"), "{err}");
    assert!(err.contains("three is broken"), "{err}");
    assert!(err.contains(&format!("lwirc runs retry {run}")), "{err}");
    let out = lwirc(dir.path(), &["runs", "resume", &run]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("runs retry"));

    std::fs::write(&fixed, "").unwrap();
    let out = lwirc(dir.path(), &["runs", "retry", &run[..8], "--by", "fixer"]);
    assert_exit(&out, 0);
    assert_eq!(stdout_json(&out), json!({"n": 3}));
    assert_eq!(
        std::fs::read_to_string(&calls).unwrap(),
        "one\ntwo\nthree\nthree\n"
    );
    let before = std::fs::read_to_string(&calls).unwrap();
    let out = lwirc(dir.path(), &["runs", "replay", "--all"]);
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("no difference"));
    assert_eq!(
        std::fs::read_to_string(&calls).unwrap(),
        before,
        "replay called a tool"
    );

    // An edited result is found: by the chain, and `verify` reports the run.
    let path = dir
        .path()
        .join(".lwir/runs")
        .join(&run)
        .join("events.jsonl");
    let log = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        log.replacen("\"result\":{\"n\":3}", "\"result\":{\"n\":4}", 1),
    )
    .unwrap();
    let out = lwirc(dir.path(), &["runs", "replay", &run]);
    assert_exit(&out, 1);
    assert_stdout_has(&out, "chain hash");
    let out = lwirc(dir.path(), &["runs", "verify"]);
    assert_exit(&out, 1);
    assert_stdout_has(&out, "1 damaged");
}

/// What a hostile tool does is a step's failure, named, and never reaches the terminal raw:
/// a 100 MB answer, escape sequences, a result outside its schema, no answer, an exit in
/// the middle; and it sees none of lwirc's environment.
#[test]
fn hostile_tools_fail_their_step_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out_schema =
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    let def = definition(&[("t", out_schema)]);
    let version = register(
        dir.path(),
        &draft(
            json!([{"id": "t", "kind": "tool.call", "tool": "t"}]),
            json!("${ steps.t.output }"),
        ),
        &def,
    );
    let input = write_json(dir.path(), "input.json", &json!({}));
    let run_with = |body: &str, extra: Value| {
        let tool = script(dir.path(), "hostile.sh", body);
        let mut binding = json!({"command": [tool], "env": ["VISIBLE"]});
        for (k, v) in extra.as_object().unwrap() {
            binding[k] = v.clone();
        }
        let b = bindings(dir.path(), &[("t", binding)], json!({}));
        command(
            dir.path(),
            &["run", &version, "--input", &input, "--bindings", &b],
        )
        .env("OPENAI_API_KEY", "sk-secret")
        .env("VISIBLE", "yes")
        .output()
        .unwrap()
    };
    // 100 MB on standard output: stopped at the 16 MiB cap.
    let out = run_with(
        "cat >/dev/null\nhead -c 104857600 /dev/zero | tr '\\0' 'a'",
        json!({}),
    );
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("LW1104") && err.contains("more than 16777216 bytes"),
        "{err}"
    );

    // Escape sequences: cleaned on the terminal, exact in the log.
    let out = run_with(
        "cat >/dev/null\nprintf '{\"ok\": \"\\\\u001b[31mred\\\\u001b]0;title\\\\u0007\"}'",
        json!({}),
    );
    assert_exit(&out, 1);
    assert!(!out.stderr.contains(&0x1b) && !out.stdout.contains(&0x1b));
    let err = stderr(&out);
    assert!(
        err.contains("LW1102") && err.contains("at `/ok`") && err.contains("keyword `type`"),
        "{err}"
    );
    let run = run_id(&err);
    let log = run_events(dir.path(), &run);
    assert!(
        log.contains(r#""result":{"ok":"\u001b[31mred\u001b]0;title\u0007"}"#),
        "{log}"
    );

    // No answer within the binding's timeout.
    let started = Instant::now();
    let out = run_with("cat >/dev/null\nsleep 30", json!({"timeout_s": 0.5}));
    assert_exit(&out, 1);
    assert_stderr_has(&out, "did not answer within 0.5 s");
    assert!(started.elapsed() < Duration::from_secs(20));

    // Exits in the middle of its answer.
    let out = run_with(
        "cat >/dev/null\nprintf '{\"ok\": tr'\nkill -9 $$",
        json!({}),
    );
    assert_exit(&out, 1);
    assert_stderr_has(&out, "killed by signal 9");
    let out = run_with("cat >/dev/null\necho 'half' >&2\nexit 3", json!({}));
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("exited with status 3") && err.contains("half"),
        "{err}"
    );

    // Its environment: PATH, HOME, LANG and what its binding names.
    let out = run_with(
        "cat >/dev/null\nif [ -n \"${OPENAI_API_KEY:-}\" ] || [ \"${VISIBLE:-}\" != yes ]; then exit 9; fi\necho '{\"ok\": true}'",
        json!({}),
    );
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), r#"{"ok":true}"#);
}

/// A command model: an answer outside the step's output schema fails the step with the
/// pointer and keyword; a model that keeps asking for tools is stopped.
#[test]
fn command_models_are_checked_and_their_tool_loops_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let def = definition(&[("echo", json!({"type": "object"}))]);
    let version = register(
        dir.path(),
        &draft(
            json!([{"id": "classify", "kind": "model.call", "model": "fast", "prompt": "Label ${ input.title }",
                           "tools": ["echo"],
                           "output": {"type": "object", "properties": {"label": {"enum": ["bug", "feature"]}}, "required": ["label"]}}]),
            json!("${ steps.classify.output }"),
        ),
        &def,
    );
    let input = write_json(dir.path(), "input.json", &json!({"title": "it crashes"}));
    let tool = script(dir.path(), "echo.sh", "cat\n");
    let model = |body: &str| {
        let m = script(dir.path(), "model.sh", body);
        let b = bindings(
            dir.path(),
            &[("echo", json!({"command": [tool]}))],
            json!({"fast": {"command": [m]}}),
        );
        run_bound(dir.path(), &version, &input, &b)
    };
    let out = model("cat >/dev/null\necho '{\"label\": \"urgent\"}'");
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("LW1102") && err.contains("at `/label`") && err.contains("keyword `enum`"),
        "{err}"
    );
    let out = model("cat >/dev/null\necho '{\"label\": \"bug\"}'");
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), r#"{"label":"bug"}"#);
    // Always another tool call.
    let out = model(
        "cat >/dev/null\necho '{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\", \"function\": {\"name\": \"echo\", \"arguments\": \"{}\"}}]}'",
    );
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("LW1105") && err.contains("rounds"), "{err}");
}

/// The model the bindings name for a slot differs from the record's: drift. `fail` runs
/// nothing (exit 3); `pause` records a paused run, which `runs resume --accept-drift` goes
/// on with.
#[test]
fn drift_fails_or_pauses_and_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let def = definition(&[]);
    let version = register(
        dir.path(),
        &draft(
            json!([{"id": "m", "kind": "model.call", "model": "fast", "prompt": "hi",
                           "output": {"type": "object"}}]),
            json!("${ steps.m.output }"),
        ),
        &def,
    );
    let input = write_json(dir.path(), "input.json", &json!({}));
    let m = script(
        dir.path(),
        "model.sh",
        "cat >/dev/null\necho '{\"hello\": 1}'",
    );
    let b = bindings(
        dir.path(),
        &[],
        json!({"fast": {"command": [m], "model": "acme/other"}}),
    );
    let (run, out) =
        drifts_then_resumes_when_accepted(dir.path(), [&version, &input, &b], "LW706", || {});
    assert_eq!(stdout(&out).trim(), r#"{"hello":1}"#);
    let log = run_events(dir.path(), &run);
    assert!(log.contains("\"event\":\"run.paused\""));
    assert!(log.contains("\"accept_drift\":true") && log.contains("\"by\":\"ops\""));
}

/// What the fake model server was sent: the `Authorization` header and the body of each
/// request.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Value)>>>;

/// A fake OpenAI-compatible server: answers 400 to `json_schema`, then the answer; what
/// it was sent.
fn model_server() -> (String, Seen) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut bytes = Vec::new();
            let mut buf = [0u8; 4096];
            let (head, body) = loop {
                let n = stream.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    break (String::new(), Vec::new());
                }
                bytes.extend_from_slice(&buf[..n]);
                if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&bytes[..end]).to_string();
                    let length: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    let mut body = bytes[end + 4..].to_vec();
                    while body.len() < length {
                        let n = stream.read(&mut buf).unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        body.extend_from_slice(&buf[..n]);
                    }
                    break (head, body);
                }
            };
            let auth = head
                .lines()
                .find_map(|l| {
                    l.strip_prefix("Authorization: ")
                        .or_else(|| l.strip_prefix("authorization: "))
                })
                .unwrap_or_default()
                .to_owned();
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let schema_mode = request["response_format"]["type"] == "json_schema";
            log.lock().unwrap().push((auth, request));
            let (status, answer) = if schema_mode {
                (
                    "400 Bad Request",
                    json!({"error": {"message": "response_format json_schema is not supported"}}),
                )
            } else {
                (
                    "200 OK",
                    json!({"choices": [{"message": {"role": "assistant", "content": "{\"label\": \"bug\"}"}}],
                                  "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}}),
                )
            };
            let text = answer.to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (url, seen)
}

/// A slot bound to an OpenAI-compatible server: the key from its variable as a bearer
/// token, the output schema as `response_format`, a weaker format when the server refuses
/// it; the usage summed in the run's end.
#[test]
fn a_model_server_is_asked_with_a_fallback_ladder() {
    let dir = tempfile::tempdir().unwrap();
    let def = definition(&[]);
    let version = register(
        dir.path(),
        &draft(
            json!([{"id": "m", "kind": "model.call", "model": "fast", "prompt": "Label ${ input.title }",
                           "output": {"type": "object", "properties": {"label": {"enum": ["bug", "feature"]}}, "required": ["label"]}}]),
            json!("${ steps.m.output }"),
        ),
        &def,
    );
    let (url, seen) = model_server();
    let b = bindings(
        dir.path(),
        &[],
        json!({"fast": {"url": url, "api_key_env": "TEST_MODEL_KEY"}}),
    );
    let input = write_json(dir.path(), "input.json", &json!({"title": "it crashes"}));
    let out = command(
        dir.path(),
        &["run", &version, "--input", &input, "--bindings", &b],
    )
    .env("TEST_MODEL_KEY", "sk-test")
    .output()
    .unwrap();
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), r#"{"label":"bug"}"#);
    assert!(!stderr(&out).contains("sk-test"));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].0, "Bearer sk-test");
    assert_eq!(seen[0].1["model"], "acme/small");
    assert_eq!(seen[0].1["messages"][0]["content"], "Label it crashes");
    assert_eq!(
        seen[0].1["response_format"]["json_schema"]["schema"]["required"],
        json!(["label"])
    );
    assert_eq!(seen[1].1["response_format"], json!({"type": "json_object"}));
    let run = run_id(&stderr(&out));
    let log = run_events(dir.path(), &run);
    assert!(!log.contains("sk-test"), "the key reached the log");
    assert!(log.contains(r#""mode":"json_object""#));
    assert!(
        log.contains(r#""usage":{"completion_tokens":5,"prompt_tokens":11,"total_tokens":16}"#)
    );
}

/// What cannot run fails closed, naming the missing piece: a tool bound to an MCP server
/// that does not start (nothing runs: its surface cannot be listed), a `code.run` step
/// (this build has no sandbox wired in).
#[test]
fn a_server_that_does_not_start_stops_the_run_and_code_run_is_not_available_yet() {
    let dir = tempfile::tempdir().unwrap();
    let def = definition(&[("t", json!({}))]);
    let version = register(
        dir.path(),
        &json!({"lwir": "1", "workflow": "w", "steps": [{"id": "t", "kind": "tool.call", "tool": "t"}]}),
        &def,
    );
    let input = write_json(dir.path(), "input.json", &json!({}));
    let b = write_json(
        dir.path(),
        "mcp.json",
        &json!({"bindings": "lwir.bindings/1", "servers": {"s": {"command": ["true"]}},
                "tools": {"t": {"server": "s", "name": "echo"}}}),
    );
    let out = run_bound(dir.path(), &version, &input, &b);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("LW1108")
            && err.contains("MCP server `s`")
            && err.contains("cannot be listed"),
        "{err}"
    );
    assert!(!dir.path().join(".lwir/runs").exists());

    let version = register(
        dir.path(),
        &json!({"lwir": "1", "workflow": "w", "steps": [{"id": "c", "kind": "code.run", "language": "python",
                 "body": "print(1)", "output": {"type": "integer"}}]}),
        &def,
    );
    let b = bindings(dir.path(), &[], json!({}));
    // With bubblewrap hidden (where it runs, `code.run` does: tests/it/code_run.rs).
    let out = command(
        dir.path(),
        &["run", &version, "--input", &input, "--bindings", &b],
    )
    .env("PATH", "/nonexistent")
    .output()
    .unwrap();
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("step `c`: LW1108") && err.contains("sandbox"),
        "{err}"
    );
}

/// `goal run|tick --bindings FILE`: each attempt of a goal is a run of its template's
/// version on lwirc's runtime. A tool that fails fails the attempt with the step and the
/// code; each attempt records its own run, which `goal show` names and `lwirc runs show`
/// knows; a good binding makes the goal succeed with the run's output; every run replays
/// without a call; bindings with mistakes are a usage error before anything is dispatched.
#[test]
fn goals_run_their_attempts_on_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let version = register_example(dir.path());
    let goal = |name: &str| {
        let file = write_json(
            dir.path(),
            &format!("{name}.json"),
            &json!({
                "goal": name,
                "objective": "Label every open issue of acme/widgets.",
                "input": {"repo": "acme/widgets"},
                "templates": {"triage": {"version": version, "root": true, "max_attempts": 2}},
                "work": [{"key": "triage", "template": "triage",
                          "input": {"repo": "${ goal.input.repo }"}}],
                "root": "triage",
                "limits": {"max_total_attempts": 4, "max_parallel": 2, "max_wall_time_s": 86400}
            }),
        );
        let out = lwirc(dir.path(), &["goal", "create", &file]);
        assert_exit(&out, 0);
        stdout(&out).trim().to_owned()
    };
    let tool = example("tools/github.sh");
    let model = root()
        .join("examples/models/scripted.sh")
        .display()
        .to_string();
    let write_bindings = |name: &str, add_label: Value| {
        write_json(
            dir.path(),
            name,
            &json!({
                "bindings": "lwir.bindings/1",
                "tools": {"github.list_issues": {"command": [tool]}, "github.add_label": add_label},
                "models": {"*": {"command": [model]}}
            }),
        )
    };
    let show = |id: &str| -> Value {
        let out = lwirc(dir.path(), &["goal", "show", id, "--format", "json"]);
        assert_exit(&out, 0);
        serde_json::from_str(&stdout(&out)).unwrap()
    };

    // Bindings with mistakes: exit 2, nothing dispatched.
    let failing_goal = goal("failing");
    let bad = write_json(
        dir.path(),
        "bad.json",
        &json!({"bindings": "lwir.bindings/2"}),
    );
    let out = lwirc(
        dir.path(),
        &["goal", "run", &failing_goal, "--bindings", &bad],
    );
    assert_exit(&out, 2);
    assert_stderr_has(&out, "bad.json");
    assert_eq!(show(&failing_goal)["attempts"]["used"], 0);

    // A tool that fails: both attempts fail at a `label` step, each its own run.
    let failing = write_bindings("failing-bindings.json", json!({"command": ["false"]}));
    let out = lwirc(
        dir.path(),
        &["goal", "run", &failing_goal, "--bindings", &failing],
    );
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("attempt 2 failed (run "), "{err}");
    let work = &show(&failing_goal)["work"][0];
    assert_eq!(work["status"], "failed", "{work}");
    let runs: Vec<String> = work["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(runs.len(), 2, "{work}");
    assert_ne!(runs[0], runs[1]);
    assert_eq!(work["runs"][1]["attempt"], 2);
    for e in work["errors"].as_array().unwrap() {
        let e = e.as_str().unwrap();
        // Whichever label call of the map failed first.
        assert!(e.contains("/label`: LW1104"), "{e}");
    }
    for run in &runs {
        let out = lwirc(dir.path(), &["runs", "show", run, "--format", "json"]);
        assert_exit(&out, 0);
        let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(shown["status"], "failed", "{shown}");
    }
    let human = lwirc(dir.path(), &["goal", "show", &failing_goal]);
    assert!(
        stdout(&human).contains(&format!("attempt 2: run {}", runs[1])),
        "{}",
        stdout(&human)
    );

    // The same version, bound well, through `goal tick`: the run's output is the work's.
    let good_goal = goal("good");
    let good = write_bindings("good-bindings.json", json!({"command": [tool]}));
    let out = lwirc(dir.path(), &["goal", "tick", "--bindings", &good]);
    assert_exit(&out, 0);
    let shown = show(&good_goal);
    assert_eq!(shown["status"], "succeeded", "{shown}");
    let run = shown["work"][0]["runs"][0]["run"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = lwirc(dir.path(), &["runs", "show", &run, "--format", "json"]);
    assert_exit(&out, 0);
    let run_shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(run_shown["output"], json!({"summary": "3 issues, 1 bugs."}));
    let out = lwirc(dir.path(), &["goal", "next", &good_goal]);
    assert_exit(&out, 0);

    // `lwirc runner` given what is not a run request: exit 2, said on one clean line.
    for request in [
        "not json \u{1b}[2J".to_owned(),
        json!({"kind": "run", "protocol": "lwir-runner/0"}).to_string(),
        json!({"kind": "run", "protocol": "lwir-runner/1", "work": {"version": "x\u{1b}[31m"}})
            .to_string(),
    ] {
        let mut child = command(dir.path(), &["runner", "--bindings", &good])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(request.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(err.contains("is not a lwir-runner/1 run request"), "{err}");
        assert!(!err.contains('\u{1b}'), "{err:?}");
        assert!(out.stdout.is_empty());
    }

    // Three runs in the store, each rebuilt from its log with nothing called.
    let out = lwirc(dir.path(), &["runs", "replay", "--all"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out).matches("no difference").count(),
        3,
        "{}",
        stdout(&out)
    );
}

/// A `map` whose items end out of order — the second fails first while the first is still
/// running, and nothing starts after a failure — replays without a difference: replay
/// takes recorded results in the order the run saw them, not the order it sent the calls.
#[test]
fn a_map_whose_items_end_out_of_order_replays_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let version = register(
        dir.path(),
        &draft(
            json!([
                {"id": "each", "kind": "map", "over": "${ input.xs }", "as": "x", "max_parallel": 2,
                 "steps": [{"id": "t", "kind": "tool.call", "tool": "slow", "args": {"x": "${ x }"}}],
                 "result": "${ steps.t.output }"}
            ]),
            json!("${ steps.each.output }"),
        ),
        &definition(&[("slow", json!({}))]),
    );
    let tool = script(
        dir.path(),
        "slow.py",
        "exec python3 -c '\nimport json, sys, time\nx = json.load(sys.stdin)[\"args\"][\"x\"]\n\
         time.sleep(x[\"delay\"])\nif x[\"fail\"]:\n    sys.exit(\"item failed\")\nprint(json.dumps(x))\n'",
    );
    let b = bindings(
        dir.path(),
        &[("slow", json!({"command": [tool]}))],
        json!({}),
    );
    let xs: Vec<Value> = [(0.6, true), (0.0, true), (0.0, false), (0.0, false)]
        .iter()
        .map(|&(delay, fail)| json!({"delay": delay, "fail": fail}))
        .collect();
    let input = write_json(dir.path(), "input.json", &json!({"xs": xs}));
    let out = run_bound(dir.path(), &version, &input, &b);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("each[1]/t"),
        "the second item failed first: {err}"
    );
    let run = run_id(&err);
    replays_without_difference(dir.path(), &run);
}
