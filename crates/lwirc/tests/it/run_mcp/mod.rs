//! `lwirc run` with tools over MCP: a test server of our own (`tests/data/mcp/counter.py`,
//! plain JSON-RPC, which counts every call it receives and its idempotency key), and the real
//! servers `.ci/engines.sh` installs (`@modelcontextprotocol/server-everything`,
//! `mcp-server-time`), which are skipped, saying so, when their variables are not set
//! (unless `LWIRC_REQUIRE_ENGINES` is).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{
    assert_doubled, check_bindings, draft, drifts_then_resumes_when_accepted, kill_at,
    map_of_50_calls, register, replays_without_difference, run_bound, run_events, run_id,
    stdout_json,
};
use crate::common::{
    assert_exit, assert_stderr_has, command, lwirc, output_within, register_files, root, stderr,
    stdout, unused_port, write_json,
};

/// A temporary directory, and the file in it the test server counts its calls into.
fn counting_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls");
    (dir, log)
}

/// The test server's path.
fn counter() -> String {
    root()
        .join("crates/lwirc/tests/data/mcp/counter.py")
        .display()
        .to_string()
}

/// The test server's command line, counting calls into `log`, with `add` at `variant`.
fn counter_command(log: &Path, variant: u32, extra: &[&str]) -> Value {
    let mut command = vec![
        "python3".to_owned(),
        counter(),
        "--log".to_owned(),
        log.display().to_string(),
        "--variant".to_owned(),
        variant.to_string(),
    ];
    command.extend(extra.iter().map(|s| (*s).to_owned()));
    json!(command)
}

/// `lwirc tools import --mcp LINE --prefix PREFIX` in `dir`: the `tools` entries, and what
/// it said on standard error.
fn import(dir: &Path, line: &str, prefix: &str) -> (Value, String) {
    let out = lwirc(dir, &["tools", "import", "--mcp", line, "--prefix", prefix]);
    assert_exit(&out, 0);
    let entries: Value = serde_json::from_str(&stdout(&out)).unwrap();
    (entries["tools"].clone(), stderr(&out))
}

/// A definition with `tools` (as `tools import` printed them).
fn definition(tools: &Value) -> Value {
    json!({
        "name": "w",
        "input": {"type": "object"},
        "output": {},
        "models": {},
        "tools": tools,
        "limits": {"max_steps": 100, "max_parallel": 64, "max_loop_iterations": 10}
    })
}

/// A bindings file `dir/name` binding each of `tools` (id → name) to server `s` run as
/// `server`.
fn bindings(dir: &Path, name: &str, server: &Value, tools: &[(&str, &str)]) -> String {
    let tools: serde_json::Map<String, Value> = tools
        .iter()
        .map(|(id, n)| ((*id).to_owned(), json!({"server": "s", "name": n})))
        .collect();
    write_json(
        dir,
        name,
        &json!({"bindings": "lwir.bindings/1", "servers": {"s": {"command": server}}, "tools": tools}),
    )
}

/// The test server's tools imported in `dir` (no prefix), and `draft` registered against a
/// definition of them: its version.
fn register_on_counter(dir: &Path, draft: &Value) -> String {
    let (tools, _) = import(dir, &format!("python3 {}", counter()), "");
    register(dir, draft, &definition(&tools))
}

/// `lwirc runs replay RUN` in `dir` finds no difference, and the test server (logging into
/// `log`) has counted `counted` calls after it, as before: the replay called nothing.
#[track_caller]
fn replays_calling_nothing(dir: &Path, run: &str, log: &Path, counted: usize) {
    replays_without_difference(dir, run);
    assert_eq!(calls(log).len(), counted, "replay calls nothing");
}

/// [`bindings`] of `tools` to the test server counting into `log`, `add` at `variant`, with
/// `extra` arguments.
fn counter_bindings(
    dir: &Path,
    name: &str,
    log: &Path,
    variant: u32,
    extra: &[&str],
    tools: &[(&str, &str)],
) -> String {
    bindings(dir, name, &counter_command(log, variant, extra), tools)
}

/// `lwirc bindings check B --version VERSION` in `dir` finds drift, `code`.
#[track_caller]
fn check_finds_drift(dir: &Path, b: &str, version: &str, code: &str) {
    let out = check_bindings(dir, b, version);
    assert_exit(&out, 3);
    assert_stderr_has(&out, code);
}

/// The calls the test server counted: `(tool, key)` per line.
fn calls(log: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect()
}

/// The counter's tools imported (the normal form: `$ref` inlined, annotations dropped and
/// said), a workflow of a `map` over `add` (structured) and `echo` (text) run over it, the
/// idempotency keys at the server, `bindings check`, and a replay that calls nothing.
#[test]
fn a_map_over_mcp_tools_runs_checks_and_replays_without_calls() {
    let (dir, log) = counting_dir();
    let line = format!("python3 {} --log {}", counter(), log.display());
    let (tools, said) = import(dir.path(), &line, "c.");
    assert!(
        said.contains("`$schema`") && said.contains("`title`") && said.contains("`default`"),
        "{said}"
    );
    assert_eq!(
        tools["c.add"]["output"],
        json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]})
    );
    assert!(tools["c.add"]["input"].get("$schema").is_none());
    assert!(calls(&log).is_empty(), "listing calls nothing");
    let version = register(
        dir.path(),
        &draft(
            json!([
                {"id": "each", "kind": "map", "over": "${ input.xs }", "as": "x", "max_parallel": 3,
                 "steps": [{"id": "add", "kind": "tool.call", "tool": "c.add", "args": {"a": "${ x }", "b": 10}}],
                 "result": "${ steps.add.output.sum }"},
                {"id": "say", "kind": "tool.call", "tool": "c.echo", "args": {"message": "done"}}
            ]),
            json!({"sums": "${ steps.each.output }", "said": "${ steps.say.output }"}),
        ),
        &definition(&tools),
    );
    let b = counter_bindings(
        dir.path(),
        "bindings.json",
        &log,
        1,
        &[],
        &[("c.add", "add"), ("c.echo", "echo")],
    );
    let out = check_bindings(dir.path(), &b, &version);
    assert_exit(&out, 0);
    assert_stderr_has(&out, "no drift");
    let input = write_json(dir.path(), "input.json", &json!({"xs": [1, 2, 3, 4, 5]}));
    let out = run_bound(dir.path(), &version, &input, &b);
    assert_exit(&out, 0);
    assert_eq!(
        stdout_json(&out),
        json!({"sums": [11, 12, 13, 14, 15], "said": "Echo: done"})
    );
    let run = run_id(&stderr(&out));
    let seen = calls(&log);
    assert_eq!(seen.len(), 6, "{seen:?}");
    let keys: std::collections::BTreeSet<&str> = seen.iter().map(|(_, k)| k.as_str()).collect();
    assert_eq!(keys.len(), 6, "one key per call: {seen:?}");
    assert!(keys.iter().all(|k| k.starts_with("lwir:") && k.len() == 37));
    let log_text = run_events(dir.path(), &run);
    assert!(
        log_text.contains(r#""via":{"name":"add","server":"s"}"#),
        "{log_text}"
    );
    replays_calling_nothing(dir.path(), &run, &log, 6);
}

/// A tool whose input schema changed at its server between registration and run: drift
/// (LW702) fails the run (exit 3, nothing recorded, nothing called), or pauses it; `runs
/// resume --accept-drift` goes on and the log records who accepted it; `bindings check`
/// says so too (exit 3); a tool the server no longer lists is LW704.
#[test]
fn a_tool_that_changed_at_its_server_is_drift() {
    let (dir, log) = counting_dir();
    let line = format!("python3 {} --log {} --variant 1", counter(), log.display());
    let (tools, _) = import(dir.path(), &line, "");
    let version = register(
        dir.path(),
        &draft(
            json!([{"id": "add", "kind": "tool.call", "tool": "add", "args": {"a": 1, "b": 2}}]),
            json!("${ steps.add.output }"),
        ),
        &definition(&tools),
    );
    let input = write_json(dir.path(), "input.json", &json!({}));
    let b = counter_bindings(dir.path(), "bindings.json", &log, 2, &[], &[("add", "add")]);
    check_finds_drift(dir.path(), &b, &version, "LW702");
    let (run, out) =
        drifts_then_resumes_when_accepted(dir.path(), [&version, &input, &b], "LW702", || {
            assert!(calls(&log).is_empty())
        });
    assert_eq!(stdout(&out).trim(), r#"{"sum":3}"#);
    let text = run_events(dir.path(), &run);
    assert!(text.contains(r#""event":"run.paused""#));
    assert!(text.contains(r#""accept_drift":true"#) && text.contains(r#""by":"ops""#));
    assert!(text.contains("LW702"));
    assert_eq!(calls(&log).len(), 1);
    let out = lwirc(dir.path(), &["runs", "replay", &run]);
    assert_exit(&out, 0);
    assert_eq!(calls(&log).len(), 1, "replay calls nothing");

    // The tool is bound to a name the server does not list: removed.
    let gone = counter_bindings(
        dir.path(),
        "gone.json",
        &log,
        1,
        &[],
        &[("add", "subtract")],
    );
    check_finds_drift(dir.path(), &gone, &version, "LW704");
    // A server that does not start: the run does not start either (exit 2).
    let dead = bindings(
        dir.path(),
        "dead.json",
        &json!(["sh", "-c", "exit 7"]),
        &[("add", "add")],
    );
    for args in [
        vec![
            "bindings",
            "check",
            dead.as_str(),
            "--version",
            version.as_str(),
        ],
        vec![
            "run",
            version.as_str(),
            "--input",
            input.as_str(),
            "--bindings",
            dead.as_str(),
        ],
    ] {
        let out = lwirc(dir.path(), &args);
        assert_exit(&out, 2);
        assert!(
            stderr(&out).contains("LW1108")
                && stderr(&out).contains("exit")
                && stderr(&out).contains("/servers/s"),
            "{}",
            stderr(&out)
        );
    }
}

/// `kill -9` at points spread over a `map` of 50 MCP calls, then `runs resume`: the same
/// output, and every call the server saw again carried the same idempotency key. A call is
/// sent again only by a resume after a kill that caught it in flight, so no key is seen more
/// than once per kill plus once, and the calls sent again are at most `max_parallel` per kill.
#[test]
fn kill_9_during_a_map_of_mcp_calls_and_resume() {
    let (dir, log) = counting_dir();
    let (map, input) = map_of_50_calls(dir.path(), "d", "double");
    let version = register_on_counter(dir.path(), &map);
    let b = counter_bindings(
        dir.path(),
        "bindings.json",
        &log,
        1,
        &["--delay-ms", "40"],
        &[("double", "double")],
    );
    let count = || calls(&log).len();
    let kill_at = |args: &[&str], at: usize| {
        // Each process makes progress before it is killed: at least one new call.
        let at = || at.max(count() + 1);
        kill_at(dir.path(), args, count, at, Duration::from_millis(2))
    };
    let run = kill_at(&["run", &version, "--input", &input, "--bindings", &b], 5).unwrap();
    assert!(count() >= 5 && count() < 50, "{} calls", count());
    let resumes = [10, 15, 20, 25, 30, 35, 40, 45];
    for at in resumes {
        kill_at(&["runs", "resume", &run], at);
    }
    let kills = 1 + resumes.len();
    let out = lwirc(dir.path(), &["runs", "resume", &run]);
    assert_exit(&out, 0);
    assert_doubled(&out);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (_, key) in calls(&log) {
        *counts.entry(key).or_insert(0) += 1;
    }
    assert_eq!(counts.len(), 50, "one key per call: {counts:?}");
    assert!(counts.values().all(|&n| n <= 1 + kills), "{counts:?}");
    let again: usize = counts.values().map(|n| n - 1).sum();
    assert!(again <= 4 * kills, "{again} calls sent again: {counts:?}");
    let before = count();
    replays_calling_nothing(dir.path(), &run, &log, before);
}

/// Hostile servers fail the step that needed them, cleanly: a 100 MB result (refused at
/// the cap), terminal escapes (recorded as sent, never printed raw), a server that never
/// answers (the call's timeout), one that exits mid-call.
#[test]
fn hostile_mcp_servers_fail_their_step_cleanly() {
    let (dir, log) = counting_dir();
    let (tools, _) = import(dir.path(), &format!("python3 {}", counter()), "");
    let def = definition(&tools);
    let input = write_json(dir.path(), "input.json", &json!({}));
    // A run of one call of `tool`, bound to the server's tool of that name with `limits`.
    let one = |tool: &str, limits: Value| {
        let mut binding = json!({"server": "s", "name": tool});
        binding
            .as_object_mut()
            .unwrap()
            .extend(limits.as_object().unwrap().clone());
        let version = register(
            dir.path(),
            &draft(
                json!([{"id": "t", "kind": "tool.call", "tool": tool}]),
                json!("${ steps.t.output }"),
            ),
            &def,
        );
        let b = write_json(
            dir.path(),
            "b.json",
            &json!({"bindings": "lwir.bindings/1",
                    "servers": {"s": {"command": counter_command(&log, 1, &[])}},
                    "tools": {tool: binding}}),
        );
        output_within(
            command(
                dir.path(),
                &["run", &version, "--input", &input, "--bindings", &b],
            ),
            Duration::from_secs(60),
        )
    };
    // The step fails at its server, saying `what`; what the run printed on standard error.
    let fails_at_the_server = |out: &std::process::Output, what: &str| -> String {
        assert_exit(out, 1);
        let err = stderr(out);
        assert!(
            err.contains("step `t`: LW1104") && err.contains(what),
            "{err}"
        );
        err
    };
    let started = Instant::now();
    let out = one("huge", json!({"max_result_bytes": 1_000_000}));
    fails_at_the_server(&out, "refused");
    assert!(started.elapsed() < Duration::from_secs(30));

    let out = one("escapes", json!({}));
    assert_exit(&out, 0);
    let printed = stdout(&out);
    for c in ['\x1b', '\x07', '\u{9b}', '\u{202e}'] {
        assert!(!printed.contains(c), "{printed:?}");
    }
    // The same value, its characters escaped the JSON way.
    assert_eq!(
        serde_json::from_str::<Value>(&printed).unwrap(),
        json!("\x1b]0;owned\x07\x1b[2J\x1b[31mred\x1b[0m \u{202e} evil \u{9b}31m")
    );
    assert!(!stderr(&out).contains('\x1b'), "{:?}", stderr(&out));

    let started = Instant::now();
    let out = one("hang", json!({"timeout_s": 1}));
    fails_at_the_server(&out, "no answer");
    assert!(started.elapsed() < Duration::from_secs(20));

    let out = one("crash", json!({}));
    let err = fails_at_the_server(&out, "exited");
    assert!(
        err.contains("crashing mid-call"),
        "its standard error is told: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    let out = one("garbage", json!({}));
    fails_at_the_server(&out, "not JSON");

    // isError: the step fails with the server's text, cleaned.
    let out = one("flaky", json!({}));
    let err = fails_at_the_server(&out, "not yet");
    assert!(!err.contains('\x1b'), "{err:?}");
}

/// A run whose third step fails at its MCP server (`isError`); once the tool is fixed,
/// `runs retry` calls only that step again, and a replay calls nothing.
#[test]
fn retry_calls_only_the_failed_mcp_step_again() {
    let (dir, log) = counting_dir();
    let fixed = dir.path().join("fixed");
    let version = register_on_counter(
        dir.path(),
        &draft(
            json!([
                {"id": "a", "kind": "tool.call", "tool": "add", "args": {"a": 1, "b": 2}},
                {"id": "b", "kind": "tool.call", "tool": "echo", "args": {"message": "sum ${ steps.a.output.sum }"}, "after": ["a"]},
                {"id": "c", "kind": "tool.call", "tool": "flaky", "after": ["b"]}
            ]),
            json!({"a": "${ steps.a.output.sum }", "b": "${ steps.b.output }", "c": "${ steps.c.output }"}),
        ),
    );
    let fixed_arg = fixed.display().to_string();
    let b = counter_bindings(
        dir.path(),
        "bindings.json",
        &log,
        1,
        &["--fixed", &fixed_arg],
        &[("add", "add"), ("echo", "echo"), ("flaky", "flaky")],
    );
    let input = write_json(dir.path(), "input.json", &json!({}));
    let out = run_bound(dir.path(), &version, &input, &b);
    assert_exit(&out, 1);
    let run = run_id(&stderr(&out));
    let names = |log: &Path| calls(log).into_iter().map(|(n, _)| n).collect::<Vec<_>>();
    assert_eq!(names(&log), ["add", "echo", "flaky"]);
    std::fs::write(&fixed, "").unwrap();
    let out = lwirc(dir.path(), &["runs", "retry", &run]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout_json(&out),
        json!({"a": 3, "b": "Echo: sum 3", "c": {"ok": true}})
    );
    assert_eq!(names(&log), ["add", "echo", "flaky", "flaky"]);
    let keys: Vec<String> = calls(&log).into_iter().map(|(_, k)| k).collect();
    assert_ne!(keys[2], keys[3], "a new attempt has a new key");
    replays_calling_nothing(dir.path(), &run, &log, 4);
}

/// A stdio server that crashes mid-call fails that attempt; the step's retry finds it
/// started again (its tools listed again: unchanged), and the step after it uses the new
/// one. A server that crashes at every call is started again three times, then not again:
/// the step fails saying so.
#[test]
fn a_server_that_crashed_is_started_again_for_the_next_call() {
    let (dir, log) = counting_dir();
    let version = register_on_counter(
        dir.path(),
        &draft(
            json!([
                {"id": "a", "kind": "tool.call", "tool": "crash", "retry": {"max_attempts": 5}},
                {"id": "b", "kind": "tool.call", "tool": "add", "args": {"a": 1, "b": 2}, "after": ["a"]}
            ]),
            json!({"a": "${ steps.a.output }", "b": "${ steps.b.output.sum }"}),
        ),
    );
    let once = dir.path().join("crashed").display().to_string();
    let b = counter_bindings(
        dir.path(),
        "bindings.json",
        &log,
        1,
        &["--crash-once", &once],
        &[("crash", "crash"), ("add", "add")],
    );
    let input = write_json(dir.path(), "input.json", &json!({}));
    let out = run_bound(dir.path(), &version, &input, &b);
    assert_exit(&out, 0);
    assert_eq!(stdout_json(&out), json!({"a": "survived", "b": 3}));
    let names: Vec<String> = calls(&log).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["crash", "crash", "add"]);

    // Crashing at every call: attempts 2, 3 and 4 get a server started again, attempt 5 none.
    std::fs::remove_file(&log).unwrap();
    let b = counter_bindings(
        dir.path(),
        "always.json",
        &log,
        1,
        &[],
        &[("crash", "crash"), ("add", "add")],
    );
    let out = run_bound(dir.path(), &version, &input, &b);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("started again 3 times already") && err.contains("crashing mid-call"),
        "{err}"
    );
    assert_eq!(
        calls(&log).len(),
        4,
        "the first server and three started again"
    );
}

/// Whether a real server's variable is set: else the test is skipped, saying so, unless
/// `LWIRC_REQUIRE_ENGINES` is set.
fn engine(var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            assert!(
                std::env::var_os("LWIRC_REQUIRE_ENGINES").is_none(),
                "LWIRC_REQUIRE_ENGINES is set but {var} is not (it names {what})"
            );
            skip_note!("skipped: {var} is not set (it names {what}; `. .ci/engines.sh` sets it)");
            None
        }
    }
}

/// The real servers: server-everything's and mcp-server-time's tools imported, a workflow
/// of a `map` over `get-sum`, `get-structured-content` and `convert_time` (whose output
/// schema uses `$ref`/`$defs`) registered and run; `get-env`, called while lwirc has an
/// API key and a registry password, sees neither.
#[test]
fn real_servers_everything_and_time() {
    let Some(everything) = engine(
        "LWIRC_TEST_MCP_EVERYTHING",
        "server-everything's dist/index.js",
    ) else {
        return;
    };
    let Some(time) = engine("LWIRC_TEST_MCP_TIME", "the mcp-server-time program") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (mut tools, said) = import(dir.path(), &format!("node {everything} stdio"), "every.");
    assert!(said.contains("dropped"), "{said}");
    let (time_tools, said) = import(dir.path(), &time, "time.");
    assert!(said.contains("tool"), "{said}");
    tools
        .as_object_mut()
        .unwrap()
        .extend(time_tools.as_object().unwrap().clone());
    assert!(
        !tools["time.convert_time"]["output"]
            .to_string()
            .contains("$ref"),
        "{}",
        tools["time.convert_time"]["output"]
    );
    let version = register(
        dir.path(),
        &draft(
            json!([
                {"id": "each", "kind": "map", "over": "${ input.cities }", "as": "c", "max_parallel": 2,
                 "steps": [
                    {"id": "sum", "kind": "tool.call", "tool": "every.get-sum", "args": {"a": "${ c.a }", "b": 2}},
                    {"id": "weather", "kind": "tool.call", "tool": "every.get-structured-content",
                     "args": {"location": "${ c.name }"}},
                    {"id": "conv", "kind": "tool.call", "tool": "time.convert_time",
                     "args": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "${ c.tz }"}}
                 ],
                 "result": {"sum": "${ steps.sum.output }", "temperature": "${ steps.weather.output.temperature }",
                            "tz": "${ steps.conv.output.target.timezone }"}},
                {"id": "env", "kind": "tool.call", "tool": "every.get-env"}
            ]),
            json!({"each": "${ steps.each.output }", "env": "${ steps.env.output }"}),
        ),
        &definition(&tools),
    );
    let b = write_json(
        dir.path(),
        "bindings.json",
        &json!({"bindings": "lwir.bindings/1",
        "servers": {"everything": {"command": ["node", everything, "stdio"]},
                    "time": {"command": [time]}},
        "tools": {
            "every.get-sum": {"server": "everything", "name": "get-sum"},
            "every.get-structured-content": {"server": "everything", "name": "get-structured-content"},
            "every.get-env": {"server": "everything", "name": "get-env"},
            "time.convert_time": {"server": "time", "name": "convert_time"}
        }}),
    );
    let out = check_bindings(dir.path(), &b, &version);
    assert_exit(&out, 0);
    let input = write_json(
        dir.path(),
        "input.json",
        &json!({"cities": [
            {"name": "New York", "a": 1, "tz": "America/New_York"},
            {"name": "Chicago", "a": 2, "tz": "America/Chicago"},
            {"name": "Los Angeles", "a": 3, "tz": "America/Los_Angeles"}
        ]}),
    );
    let key = "sk-test-0123456789abcdefSECRET";
    let password = "registry-pa55word-SECRET";
    let out = command(
        dir.path(),
        &["run", &version, "--input", &input, "--bindings", &b],
    )
    .env("OPENAI_API_KEY", key)
    .env("LWIR_REGISTRY_USER", "lwir")
    .env("LWIR_REGISTRY_PASSWORD", password)
    .output()
    .unwrap();
    assert_exit(&out, 0);
    let output: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        output["each"],
        json!([
            {"sum": "The sum of 1 and 2 is 3.", "temperature": 33, "tz": "America/New_York"},
            {"sum": "The sum of 2 and 2 is 4.", "temperature": 36, "tz": "America/Chicago"},
            {"sum": "The sum of 3 and 2 is 5.", "temperature": 73, "tz": "America/Los_Angeles"}
        ])
    );
    let env = output["env"].to_string();
    assert!(env.contains("PATH"), "{env}");
    let run = run_id(&stderr(&out));
    let logged = run_events(dir.path(), &run);
    for secret in [key, password, "OPENAI_API_KEY", "LWIR_REGISTRY_PASSWORD"] {
        assert!(!env.contains(secret), "{secret} reached the server: {env}");
        assert!(!logged.contains(secret), "{secret} in the log");
    }
    replays_without_difference(dir.path(), &run);
}

/// server-everything over streamable HTTP (`node dist/index.js streamableHttp`, on a free
/// port): `tools import --mcp-url`, `bindings check` and a run by URL.
#[test]
fn a_real_server_over_streamable_http() {
    let Some(everything) = engine(
        "LWIRC_TEST_MCP_EVERYTHING",
        "server-everything's dist/index.js",
    ) else {
        return;
    };
    let port = unused_port();
    let mut server = std::process::Command::new("node")
        .args([everything.as_str(), "streamableHttp"])
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let err = server.stderr.take().unwrap();
    let _server = Kill(server);
    let mut lines = BufReader::new(err).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        match lines.next() {
            Some(Ok(line)) if line.contains("listening") => break,
            Some(Ok(_)) => {}
            _ => panic!("server-everything did not start over HTTP"),
        }
    }
    std::thread::spawn(move || for _ in lines {});
    let url = format!("http://127.0.0.1:{port}/mcp");
    let dir = tempfile::tempdir().unwrap();
    let out = lwirc(
        dir.path(),
        &["tools", "import", "--mcp-url", &url, "--prefix", "util."],
    );
    assert_exit(&out, 0);
    let tools = stdout_json(&out)["tools"].clone();
    let version = register(
        dir.path(),
        &draft(
            json!([{"id": "e", "kind": "tool.call", "tool": "util.echo", "args": {"message": "over HTTP"}}]),
            json!("${ steps.e.output }"),
        ),
        &definition(&tools),
    );
    let b = write_json(
        dir.path(),
        "bindings.json",
        &json!({"bindings": "lwir.bindings/1", "servers": {"e": {"url": url}},
                "tools": {"util.echo": {"server": "e", "name": "echo"}}}),
    );
    let out = check_bindings(dir.path(), &b, &version);
    assert_exit(&out, 0);
    let input = write_json(dir.path(), "input.json", &json!({}));
    let out = run_bound(dir.path(), &version, &input, &b);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), r#""Echo: over HTTP""#);
}

/// `examples/everything` as the README runs it, with its `npx` command replaced by the
/// server-everything `.ci/engines.sh` installed (no network): registered, its bindings
/// checked, run, replayed; its definition's tools are what `tools import` gives today.
#[test]
fn the_everything_example_runs() {
    let Some(everything) = engine(
        "LWIRC_TEST_MCP_EVERYTHING",
        "server-everything's dist/index.js",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let example = |name: &str| {
        root()
            .join("examples/everything")
            .join(name)
            .display()
            .to_string()
    };
    let read = |name: &str| -> Value {
        serde_json::from_slice(&std::fs::read(example(name)).unwrap()).unwrap()
    };
    let (tools, _) = import(dir.path(), &format!("node {everything} stdio"), "util.");
    for (id, entry) in read("workflow.json")["tools"].as_object().unwrap() {
        assert_eq!(&tools[id], entry, "{id} as imported today");
    }
    let version = register_files(
        dir.path(),
        &example("draft.json"),
        &example("workflow.json"),
    );
    let mut bindings = read("bindings.json");
    bindings["servers"]["everything"]["command"] = json!(["node", everything, "stdio"]);
    let b = write_json(dir.path(), "bindings.json", &bindings);
    let out = check_bindings(dir.path(), &b, &version);
    assert_exit(&out, 0);
    let out = lwirc(
        dir.path(),
        &[
            "run",
            &version,
            "--input",
            &example("input.json"),
            "--bindings",
            &b,
        ],
    );
    assert_exit(&out, 0);
    let output: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(output["sum"], "The sum of 2 and 3 is 5.");
    assert_eq!(output["echo"], "Echo: checked New York and more");
    assert_eq!(output["weather"][2]["conditions"], "Sunny / Clear");
    let run = run_id(&stderr(&out));
    replays_without_difference(dir.path(), &run);
}

/// `tools import`: a command line that is empty or unbalanced is a usage error; a server
/// that exits or a URL where nothing listens is exit 1, naming what happened.
#[test]
fn tools_import_refuses_what_it_cannot_list() {
    let dir = tempfile::tempdir().unwrap();
    for line in ["", "python3 'unbalanced"] {
        let out = lwirc(dir.path(), &["tools", "import", "--mcp", line]);
        assert_exit(&out, 2);
    }
    let out = lwirc(dir.path(), &["tools", "import", "--mcp", "sh -c 'exit 4'"]);
    assert_exit(&out, 1);
    assert_stderr_has(&out, "exit");
    let out = lwirc(
        dir.path(),
        &[
            "tools",
            "import",
            "--mcp-url",
            "http://127.0.0.1:1/mcp",
            "--timeout",
            "5",
        ],
    );
    assert_exit(&out, 1);
    assert_stderr_has(&out, "127.0.0.1:1");
    assert!(stdout(&out).is_empty());
}

/// A server that changes a tool during the run (`notifications/tools/list_changed`, then a
/// new input schema) fails the step that calls it next; the calls before it stand.
#[test]
fn a_tool_that_changes_during_the_run_fails_the_step_that_calls_it() {
    let (dir, log) = counting_dir();
    let version = register_on_counter(
        dir.path(),
        &draft(
            json!([
                {"id": "a", "kind": "tool.call", "tool": "add", "args": {"a": 1, "b": 2}},
                {"id": "b", "kind": "tool.call", "tool": "echo", "args": {"message": "x"}, "after": ["a"]},
                {"id": "c", "kind": "tool.call", "tool": "add", "args": {"a": 3, "b": 4}, "after": ["b"]}
            ]),
            json!("${ steps.c.output }"),
        ),
    );
    let b = counter_bindings(
        dir.path(),
        "bindings.json",
        &log,
        1,
        &["--change-after", "1"],
        &[("add", "add"), ("echo", "echo")],
    );
    let input = write_json(dir.path(), "input.json", &json!({}));
    let out = run_bound(dir.path(), &version, &input, &b);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("step `c`: LW1104") && err.contains("changed its tool `add` during the run"),
        "{err}"
    );
    let names: Vec<String> = calls(&log).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["add", "echo"], "the changed tool is not called");
}
