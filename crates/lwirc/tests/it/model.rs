//! `lwirc compile --planner-url`: the built-in planner harness against a fake
//! OpenAI-compatible server inside the test (127.0.0.1, a free port) that serves scripted
//! responses and records every request.

use crate::common;

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

use common::*;
use serde_json::{Value, json};

/// One recorded request: its headers (lowercase names) and its JSON body.
#[derive(Clone, Debug)]
struct Recorded {
    headers: Vec<(String, String)>,
    body: Value,
}

impl Recorded {
    /// The last message of the request (the newest tool result, on a turn after a call).
    fn last_message(&self) -> &Value {
        self.body["messages"].as_array().unwrap().last().unwrap()
    }

    /// The names of the tools the request offers.
    fn tool_names(&self) -> Vec<&str> {
        self.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect()
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A scripted response: status, extra headers, body.
type Scripted = (u16, Vec<(&'static str, String)>, String);

struct Server {
    url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

/// Serves `script` in order (the last one again when it runs out).
impl Server {
    /// Kills `child` (SIGKILL) once this server was sent its `n`-th request, within 30 s.
    fn kill_at_turn(&self, child: &mut std::process::Child, n: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while self.requests.lock().unwrap().len() < n {
            assert!(
                std::time::Instant::now() < deadline,
                "turn {n} was never sent"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

fn serve(script: Vec<Scripted>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let recorded = requests.clone();
    let script = Arc::new(Mutex::new(script));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let (recorded, script) = (recorded.clone(), script.clone());
            std::thread::spawn(move || connection(stream, &recorded, &script));
        }
    });
    Server { url, requests }
}

fn connection(stream: TcpStream, recorded: &Mutex<Vec<Recorded>>, script: &Mutex<Vec<Scripted>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let Some(request) = common::fake::read_request(&mut reader) else {
            return;
        };
        recorded.lock().unwrap().push(Recorded {
            headers: request.headers,
            body: serde_json::from_slice(&request.body).unwrap_or(Value::Null),
        });
        let (status, extra, body) = {
            let mut script = script.lock().unwrap();
            if script.len() > 1 {
                script.remove(0)
            } else {
                script[0].clone()
            }
        };
        if status == 0 {
            // Never answers (the test kills the client meanwhile).
            std::thread::sleep(std::time::Duration::from_secs(60));
            return;
        }
        let mut response = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in extra {
            response.push_str(&format!("{name}: {value}\r\n"));
        }
        response.push_str("\r\n");
        response.push_str(&body);
        if stream.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// A chat completion whose message is `message`.
fn completion(message: Value, finish: &str) -> Scripted {
    let body = json!({
        "id": "chatcmpl-test", "object": "chat.completion", "model": "acme/large-5",
        "choices": [ { "index": 0, "message": message, "finish_reason": finish } ],
        "usage": { "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120 }
    });
    (200, vec![], body.to_string())
}

fn answer(content: &str) -> Scripted {
    completion(json!({ "role": "assistant", "content": content }), "stop")
}

fn tool_calls(calls: &[(&str, Value)]) -> Scripted {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| json!({ "id": format!("call_{i}"), "type": "function",
                                          "function": { "name": name, "arguments": args.to_string() } }))
        .collect();
    completion(
        json!({ "role": "assistant", "content": null, "tool_calls": calls }),
        "tool_calls",
    )
}

/// A model turn of one `bash` call running `command`.
fn bash_call(command: &str) -> Scripted {
    tool_calls(&[("bash", json!({ "command": command }))])
}

fn recorded_answer(n: u32) -> String {
    std::fs::read_to_string(root().join(format!("examples/issue-triage/planner/call-{n}.json")))
        .unwrap()
}

/// Compiles in `d` against a model that makes the tool `calls` and then answers with the
/// recorded drafts; the compilation succeeds. The requests the model got.
fn compile_after_tool_calls(d: &Path, calls: &[(&str, Value)]) -> Vec<Recorded> {
    let server = serve(vec![
        tool_calls(calls),
        answer(&recorded_answer(1)),
        answer(&recorded_answer(2)),
    ]);
    assert_exit(&compile(d, &server.url, &[]), 0);
    server.requests.lock().unwrap().clone()
}

/// A directory with the example definition and its skill beside it.
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(example("workflow.json"), dir.path().join("workflow.json")).unwrap();
    write_skill(
        dir.path(),
        "writing-loop-lwir",
        "Bound every loop with max_iterations.\n",
    );
    dir
}

/// Writes skill `name`, `text`, beside the definition in `dir`.
fn write_skill(dir: &Path, name: &str, text: &str) {
    let skill = dir.join(".agents/skills").join(name);
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(skill.join("SKILL.md"), text).unwrap();
}

/// `lwirc compile workflow.json --input INPUT --planner-url URL --session session` and
/// `extra` arguments in `d`, not started yet.
fn compile_command(d: &Path, input: &str, url: &str, extra: &[&str]) -> std::process::Command {
    let mut args = vec![
        "compile",
        "workflow.json",
        "--input",
        input,
        "--planner-url",
        url,
        "--session",
        "session",
    ];
    args.extend_from_slice(extra);
    command(d, &args)
}

fn compile(d: &Path, url: &str, extra: &[&str]) -> std::process::Output {
    compile_command(d, &example("input.json"), url, extra)
        .env("OPENAI_API_KEY", "sk-test-123")
        .output()
        .unwrap()
}

const VERSION: &str = "sha256:5c281a30701ece8463ea55bda73114d347b874931ef2b7cfd530b2c4cb6f9510";

/// The turn log of the session in `d/session`.
fn events(d: &Path) -> Vec<Value> {
    std::fs::read_to_string(d.join("session/model/events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A model server's URL where nothing listens.
fn unreachable_url() -> String {
    format!("http://127.0.0.1:{}/v1", unused_port())
}

/// No file of `files` holds the test's API key.
#[track_caller]
fn assert_no_key_in(files: &[std::path::PathBuf]) {
    for f in files {
        let text = String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned();
        assert!(
            !text.contains("sk-test-123"),
            "the key is in {}:\n{text}",
            f.display()
        );
    }
}

/// The names of the `harness.tool_call.*` events of the session in `d/session`, in order.
fn tool_call_events(d: &Path) -> Vec<String> {
    events(d)
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_owned())
        .filter(|n| n.starts_with("harness.tool_call."))
        .collect()
}

/// What [`tool_call_events`] are for `n` tool calls that each started and succeeded.
fn tool_calls_that_succeeded(n: usize) -> Vec<String> {
    ["harness.tool_call.started", "harness.tool_call.succeeded"]
        .repeat(n)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// Both streams.
fn both(out: &std::process::Output) -> String {
    format!("{}{}", stdout(out), stderr(out))
}

fn all_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            all_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[test]
fn a_plan_call_with_tools_then_a_repair_round_then_registration() {
    let dir = setup();
    let d = dir.path();
    let draft: Value = serde_json::from_str(&recorded_answer(1)).unwrap();
    let server = serve(vec![
        tool_calls(&[("read_skill", json!({ "name": "writing-loop-lwir" }))]),
        tool_calls(&[("validate_draft", json!({ "lwir": draft["lwir"] }))]),
        answer(&recorded_answer(1)),
        answer(&recorded_answer(2)),
    ]);
    let out = compile(d, &server.url, &[]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), VERSION);
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(
        requests.len(),
        4,
        "three turns for the plan call, one for the repair"
    );
    for r in &requests {
        assert_eq!(r.header("authorization"), Some("Bearer sk-test-123"));
        assert_eq!(r.body["model"], "acme/large-5", "the planner slot's model");
    }
    // The system prompt, in order.
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    let at = |text: &str| {
        system
            .find(text)
            .unwrap_or_else(|| panic!("no `{text}` in:\n{system}"))
    };
    assert_eq!(
        at("You compile workflow goals"),
        0,
        "the definition's planner.system first"
    );
    assert!(at("You are the planner of lwirc") < at("Skills:"));
    assert!(at("- writing-loop-lwir: How to write bounded loops in LWIR.") > at("Skills:"));
    assert!(at("Skills:") < at("Memory stores:"));
    assert!(at("Memory stores:") < at("Tools:"));
    assert!(system.contains("lessons-learned.md"));
    // The user message is the planner protocol's request.
    let user: Value =
        serde_json::from_str(requests[0].body["messages"][1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        user["manifest"]["harnessId"],
        format!("lwirc-model/{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        user["manifest"]["memoryStoreIds"],
        json!(["org", "workflow"])
    );
    assert_eq!(user["kind"], "plan");
    let tools: Vec<&str> = requests[0].tool_names();
    assert_eq!(
        tools[..6],
        [
            "read_skill",
            "read_memory",
            "append_memory",
            "write_scratch",
            "read_scratch",
            "validate_draft"
        ]
    );
    // And, where the sandbox runs, `bash` and `test_code`.
    assert!(
        tools[6..].is_empty() || tools[6..] == ["bash", "test_code"],
        "{tools:?}"
    );
    assert_eq!(requests[0].body["response_format"]["type"], "json_schema");
    // The tool results sent back.
    let messages = requests[1].body["messages"].as_array().unwrap();
    let result = messages.last().unwrap();
    assert_eq!(
        (result["role"].as_str(), result["tool_call_id"].as_str()),
        (Some("tool"), Some("call_0"))
    );
    assert_eq!(result["content"], "Bound every loop with max_iterations.\n");
    let report: Value =
        serde_json::from_str(requests[2].last_message()["content"].as_str().unwrap()).unwrap();
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "LW301"),
        "{report}"
    );
    let repair: Value =
        serde_json::from_str(requests[3].body["messages"][1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(repair["kind"], "repair");
    // The key is nowhere but in the header.
    assert!(!stdout(&out).contains("sk-test-123") && !stderr(&out).contains("sk-test-123"));
    let mut files = Vec::new();
    all_files(&d.join("session"), &mut files);
    assert!(files.iter().any(|f| f.ends_with("model/events.jsonl")));
    assert!(files.iter().any(|f| f.ends_with("model/system-prompt.txt")));
    assert_no_key_in(&files);
    let names = events(d)
        .into_iter()
        .map(|e| e["event"].as_str().unwrap().to_owned())
        .collect::<Vec<_>>();
    assert_eq!(
        names
            .iter()
            .filter(|n| *n == "harness.model.responded")
            .count(),
        4
    );
    assert_eq!(tool_call_events(d), tool_calls_that_succeeded(2));
}

#[test]
fn a_refused_response_format_falls_back_and_is_recorded() {
    let dir = setup();
    let d = dir.path();
    let server = serve(vec![
        (
            400,
            vec![],
            r#"{"error":{"message":"response_format json_schema is not supported"}}"#.into(),
        ),
        (
            400,
            vec![],
            r#"{"error":{"message":"response_format is not supported"}}"#.into(),
        ),
        answer(&recorded_answer(1)),
        answer(&recorded_answer(2)),
    ]);
    let out = compile(d, &server.url, &[]);
    assert_exit(&out, 0);
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests[0].body["response_format"]["type"], "json_schema");
    assert_eq!(requests[1].body["response_format"]["type"], "json_object");
    assert!(requests[2].body.get("response_format").is_none());
    let modes: Vec<String> = events(d)
        .into_iter()
        .filter(|e| e["event"] == "harness.model.responded")
        .map(|e| e["data"]["mode"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(modes, ["json_schema", "json_object", "text", "text"]);
}

#[test]
fn rate_limits_are_retried_and_server_errors_are_bounded() {
    let dir = setup();
    let d = dir.path();
    let server = serve(vec![
        (
            429,
            vec![("Retry-After", "1".into())],
            r#"{"error":"slow down"}"#.into(),
        ),
        answer(&recorded_answer(1)),
        answer(&recorded_answer(2)),
    ]);
    let out = compile(d, &server.url, &["--format", "json"]);
    assert_exit(&out, 0);
    assert_eq!(server.requests.lock().unwrap().len(), 3);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["model_usage"],
        json!({ "turns": 2, "prompt_tokens": 200, "completion_tokens": 40 })
    );

    let dir = setup();
    let d = dir.path();
    let server = serve(vec![(500, vec![], r#"{"error":"boom"}"#.into())]);
    let out = compile(
        d,
        &server.url,
        &["--max-planner-calls", "2", "--planner-timeout", "20"],
    );
    assert_exit(&out, 1);
    assert!(both(&out).contains("LW802"), "{}", both(&out));
    assert!(both(&out).contains("answered 500"), "{}", both(&out));
    assert!(!d.join(".lwir/registry").exists(), "nothing registered");
    let tries = server.requests.lock().unwrap().len();
    assert!((2..=10).contains(&tries), "bounded retries: {tries}");
}

#[test]
fn cut_off_answers_fenced_json_slow_and_unreachable_servers_are_findings() {
    let cases: Vec<(Vec<Scripted>, &str, &[&str])> = vec![
        (
            vec![completion(
                json!({ "role": "assistant", "content": "{\"kind\": \"dr" }),
                "length",
            )],
            "LW806",
            &[],
        ),
        (
            vec![answer(
                "```json\n{\"kind\": \"attention\", \"rationale\": \"x\"}\n```",
            )],
            "LW805",
            &[],
        ),
    ];
    for (script, code, extra) in cases {
        let dir = setup();
        let server = serve(script);
        let out = compile(
            dir.path(),
            &server.url,
            &[&["--max-planner-calls", "1"], extra].concat(),
        );
        assert_exit(&out, 1);
        assert!(both(&out).contains(code), "{code}: {}", both(&out));
    }
    // A server that never answers in time.
    let url = format!("http://{}/v1", silent_listener());
    let dir = setup();
    let out = compile(
        dir.path(),
        &url,
        &["--max-planner-calls", "1", "--planner-timeout", "1"],
    );
    assert_exit(&out, 1);
    assert!(both(&out).contains("LW803"), "{}", both(&out));
    // Nothing listens: an environment failure (LW801).
    let dir = setup();
    let out = compile(
        dir.path(),
        &unreachable_url(),
        &["--max-planner-calls", "1"],
    );
    assert_exit(&out, 1);
    assert!(both(&out).contains("LW801"), "{}", both(&out));
    assert!(
        both(&out).contains("cannot reach the model server"),
        "{}",
        both(&out)
    );
}

#[test]
fn memory_is_confined_org_is_read_only_and_lessons_reach_the_next_session() {
    let dir = setup();
    let d = dir.path();
    std::fs::create_dir_all(d.join(".lwir/memory/org")).unwrap();
    std::fs::write(d.join("outside.md"), "secret").unwrap();
    std::os::unix::fs::symlink(d.join("outside.md"), d.join(".lwir/memory/org/link.md")).unwrap();
    let requests = compile_after_tool_calls(
        d,
        &[
            (
                "append_memory",
                json!({ "store": "org", "path": "x.md", "text": "no" }),
            ),
            (
                "read_memory",
                json!({ "store": "workflow", "path": "../../../outside.md" }),
            ),
            (
                "read_memory",
                json!({ "store": "org", "path": "/etc/passwd" }),
            ),
            ("read_memory", json!({ "store": "org", "path": "link.md" })),
            (
                "append_memory",
                json!({ "store": "workflow", "path": "lessons-learned.md", "text": "Check tool names against the allowlist." }),
            ),
        ],
    );
    let results: Vec<String> = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert!(results[0].contains("read-only"), "{results:?}");
    assert!(
        results[1].starts_with("error:") && results[1].contains("not a plain relative path"),
        "{results:?}"
    );
    assert!(results[2].starts_with("error:"), "{results:?}");
    assert!(results[3].contains("symbolic link"), "{results:?}");
    assert!(!results.iter().any(|r| r.contains("secret")));
    assert_eq!(results[4], "appended 39 bytes");
    assert!(!d.join(".lwir/memory/org/x.md").exists());
    // The next session reads what this one learned.
    std::fs::remove_dir_all(d.join("session")).unwrap();
    std::fs::remove_dir_all(d.join(".lwir/registry")).unwrap();
    let requests = compile_after_tool_calls(
        d,
        &[(
            "read_memory",
            json!({ "store": "workflow", "path": "lessons-learned.md" }),
        )],
    );
    let lessons = requests[1].last_message()["content"].clone();
    assert_eq!(lessons, "Check tool names against the allowlist.\n");
}

#[test]
fn a_session_killed_while_turn_3_is_in_flight_resumes_that_turn_only() {
    let dir = setup();
    let d = dir.path();
    let draft: Value = serde_json::from_str(&recorded_answer(1)).unwrap();
    let first = serve(vec![
        tool_calls(&[("read_skill", json!({ "name": "writing-loop-lwir" }))]),
        tool_calls(&[
            ("validate_draft", json!({ "lwir": draft["lwir"] })),
            (
                "append_memory",
                json!({ "store": "workflow", "path": "lessons-learned.md", "text": "once" }),
            ),
        ]),
        (0, vec![], String::new()),
    ]);
    let input = example("input.json");
    let mut child = compile_command(d, &input, &first.url, &[])
        .env("OPENAI_API_KEY", "sk-test-123")
        .spawn()
        .unwrap();
    first.kill_at_turn(&mut child, 3);
    let turn3 = first.requests.lock().unwrap()[2].body.clone();

    let second = serve(vec![answer(&recorded_answer(2))]);
    let mut resume = compile_command(d, &input, &second.url, &["--resume"]);
    resume.env("OPENAI_API_KEY", "sk-test-123");
    let out = resume.output().unwrap();
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), VERSION);
    let requests = second.requests.lock().unwrap().clone();
    assert_eq!(
        requests.len(),
        1,
        "only the turn that was in flight is sent again"
    );
    assert_eq!(
        requests[0].body["messages"], turn3["messages"],
        "the same turn 3, tool results replayed"
    );
    let lessons =
        std::fs::read_to_string(d.join(".lwir/memory/workflow/issue-triage/lessons-learned.md"))
            .unwrap();
    assert_eq!(
        lessons, "once\n",
        "a completed append_memory is not repeated"
    );
}

#[test]
fn a_planner_command_may_delegate_a_call_to_the_built_in_harness() {
    let dir = setup();
    let d = dir.path();
    let delegating = script(
        d,
        "delegate.sh",
        "cat >/dev/null; echo '{\"kind\": \"delegate_to_default\"}'",
    );
    let server = serve(vec![
        answer(&recorded_answer(1)),
        answer(&recorded_answer(2)),
    ]);
    let out = compile(d, &server.url, &["--planner", &delegating]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), VERSION);
    assert_eq!(server.requests.lock().unwrap().len(), 2);
    let delegated = events(d)
        .iter()
        .filter(|e| e["event"] == "harness.delegated")
        .count();
    assert_eq!(delegated, 2, "each delegated call is recorded as such");

    // Without a model server, delegating is a finding that says what is missing.
    let dir = setup();
    let out = command(
        dir.path(),
        &[
            "compile",
            "workflow.json",
            "--planner",
            &delegating,
            "--max-planner-calls",
            "1",
        ],
    )
    .output()
    .unwrap();
    assert_exit(&out, 1);
    assert!(
        both(&out).contains("LW806") && both(&out).contains("--planner-url"),
        "{}",
        both(&out)
    );
}

#[test]
fn a_response_over_16_mib_is_cut_off_and_a_finding() {
    let dir = setup();
    let huge = format!("{{\"choices\": \"{}\"}}", "x".repeat(17 * 1024 * 1024));
    let server = serve(vec![(200, vec![], huge)]);
    let out = compile(dir.path(), &server.url, &["--max-planner-calls", "1"]);
    assert_exit(&out, 1);
    assert!(both(&out).contains("LW804"), "{}", both(&out));
}

#[test]
fn a_large_memory_file_is_cut_before_it_reaches_the_model() {
    let dir = setup();
    let d = dir.path();
    std::fs::create_dir_all(d.join(".lwir/memory/org")).unwrap();
    std::fs::write(d.join(".lwir/memory/org/big.md"), "y".repeat(300 * 1024)).unwrap();
    let requests = compile_after_tool_calls(
        d,
        &[("read_memory", json!({ "store": "org", "path": "big.md" }))],
    );
    let result = requests[1].last_message()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        result.ends_with("[… cut at 256 KiB]"),
        "{}",
        &result[result.len() - 40..]
    );
    assert!(result.len() < 256 * 1024 + 64);
}

#[test]
fn a_skill_that_links_out_of_the_skills_directory_is_not_sent_to_the_model() {
    let dir = setup();
    let d = dir.path();
    std::fs::write(d.join("outside.md"), "secret").unwrap();
    let skill = d.join(".agents/skills/writing-loop-lwir/SKILL.md");
    std::fs::remove_file(&skill).unwrap();
    // As a link committed in a repository would be.
    std::os::unix::fs::symlink(d.join("outside.md"), &skill).unwrap();
    let requests =
        compile_after_tool_calls(d, &[("read_skill", json!({ "name": "writing-loop-lwir" }))]);
    let result = requests[1].last_message()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        result.starts_with("error:") && result.contains("outside its directory"),
        "{result}"
    );
    assert!(
        requests
            .iter()
            .all(|r| !r.body.to_string().contains("secret")),
        "the linked file reached the model server"
    );
}

#[test]
fn a_server_that_echoes_the_key_in_its_error_has_it_neither_printed_nor_stored() {
    let dir = setup();
    let d = dir.path();
    let server = serve(vec![(
        401,
        vec![],
        json!({ "error": { "message": "Incorrect API key provided: Bearer sk-test-123. You can find your API key at …", "type": "invalid_request_error" } })
            .to_string(),
    )]);
    let out = compile(d, &server.url, &["--max-planner-calls", "1"]);
    assert_exit(&out, 1);
    let text = both(&out);
    assert!(
        text.contains("LW801") && text.contains("answered 401"),
        "{text}"
    );
    assert!(
        text.contains("Incorrect API key provided"),
        "the reason is kept: {text}"
    );
    assert!(!text.contains("sk-test-123"), "{text}");
    let mut files = Vec::new();
    all_files(&d.join("session"), &mut files);
    for name in ["session/events.jsonl", "session/model/events.jsonl"] {
        assert!(files.iter().any(|f| f.ends_with(name)), "{name}");
    }
    assert_no_key_in(&files);
}

/// A newcomer's model-server mistakes: nothing listening, or a URL without the API root.
/// Neither is the planner's fault, so the session stops at the first call instead of
/// spending all eight, and says what to check.
#[test]
fn an_unreachable_server_or_a_url_without_v1_stops_at_once_and_says_what_to_check() {
    let dir = setup();
    let out = compile(dir.path(), &unreachable_url(), &["--format", "json"]);
    assert_exit(&out, 1);
    let text = both(&out);
    assert!(text.contains("cannot reach the model server"), "{text}");
    assert!(text.contains("is it running"), "{text}");
    assert!(!text.contains("check the --planner command;"), "{text}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let report = &report["report"];
    assert_eq!(report["stopped_by"], "planner-unavailable", "{report}");
    assert_eq!(report["planner_calls"], 1, "{report}");
    assert_eq!(report["no_proposal"]["not_started"], 1, "{report}");
    assert_eq!(
        report["planner_findings"].as_array().unwrap().len(),
        1,
        "{report}"
    );
    assert_eq!(report["cause"], "planner-gave-no-proposal", "{report}");
    assert!(
        report["planner_findings"][0]["help"]
            .as_str()
            .unwrap()
            .contains("--planner-url, check that the model server is running"),
        "{report}"
    );

    // A server whose chat endpoint is under `/v1`, asked without it.
    let server = serve(vec![(404, vec![], String::new())]);
    let bare = server.url.trim_end_matches("/v1").to_owned();
    let dir = setup();
    let out = compile(dir.path(), &bare, &[]);
    assert_exit(&out, 1);
    let text = both(&out);
    assert!(text.contains("answered 404: (an empty body)"), "{text}");
    assert!(text.contains("usually `/v1`"), "{text}");
    assert!(text.contains("this URL has no `/v1`"), "{text}");
    assert_eq!(
        server.requests.lock().unwrap().len(),
        1,
        "asked once: {text}"
    );
}

/// The body the model tests and then drafts with.
const SUM_BODY: &str =
    "import json, sys\nd = json.load(sys.stdin)\nprint(json.dumps({'total': sum(d['items'])}))";

fn sum_output() -> Value {
    json!({ "type": "object", "properties": { "total": { "type": "integer" } }, "required": ["total"] })
}

/// A definition whose work is one `code.run` step, with a skill, in a directory.
fn code_setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let definition = json!({
        "name": "sum",
        "goal": "Sum the numbers of the input.",
        "input": { "type": "object", "properties": { "items": { "type": "array", "items": { "type": "integer" } } },
                   "required": ["items"] },
        "output": sum_output(),
        "models": { "deep": { "model": "acme/large-5", "quality": "high", "capabilities": ["json_output", "tool_use"] } },
        "tools": {},
        "planner": { "model": "deep", "system": "You write LWIR drafts.",
                     "skills": [ { "name": "writing-code", "description": "How to write code.run bodies." } ] },
        "limits": { "max_steps": 10, "max_parallel": 4, "max_loop_iterations": 10 }
    });
    write_json(dir.path(), "workflow.json", &definition);
    write_json(dir.path(), "input.json", &json!({ "items": [1, 2, 3] }));
    write_skill(
        dir.path(),
        "writing-code",
        "Read the input with json.load(sys.stdin); print one JSON value.\n",
    );
    dir
}

fn sum_draft() -> Value {
    json!({ "kind": "draft", "lwir": {
        "lwir": "1", "workflow": "sum",
        "steps": [ { "id": "sum", "kind": "code.run", "language": "python", "body": SUM_BODY,
                     "input": "${ input }", "output": sum_output() } ],
        "output": "${ steps.sum.output }" } })
}

fn compile_code(d: &Path, url: &str, extra: &[&str]) -> std::process::Output {
    compile_command(d, "input.json", url, extra)
        .env("OPENAI_API_KEY", "sk-test-123")
        .output()
        .unwrap()
}

/// The tool results sent back in request `n` (those of the turn before it).
fn tool_results(requests: &[Recorded], n: usize) -> Vec<Value> {
    let messages = requests[n].body["messages"].as_array().unwrap();
    let last_turn = messages
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .unwrap_or(0);
    messages[last_turn..]
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let text = m["content"].as_str().unwrap();
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
        })
        .collect()
}

/// The planner reads its skill with `bash`, tests its body with `test_code`, writes a
/// lesson, is refused the `org` store, prints escape sequences, then drafts with the body:
/// the draft compiles to a registered version, and the lesson is in the workflow's memory.
#[test]
fn the_planner_reads_a_skill_with_bash_tests_its_body_and_drafts_with_it() {
    if !sandbox_runs("the bash and test_code session") {
        return;
    }
    let dir = code_setup();
    let d = dir.path();
    let server = serve(vec![
        bash_call(
            "cat .agents/skills/writing-code/SKILL.md; cat /mnt/memory/workflow/lessons-learned.md",
        ),
        tool_calls(&[(
            "test_code",
            json!({ "language": "python", "body": SUM_BODY, "input": { "items": [1, 2, 3] }, "output": sum_output() }),
        )]),
        tool_calls(&[
            (
                "bash",
                json!({ "command": "echo 'Sum in Python: json.load(sys.stdin).' >> /mnt/memory/workflow/lessons-learned.md && echo x > /mnt/memory/org/x.md" }),
            ),
            (
                "bash",
                json!({ "command": "printf '\\033[31mred\\033]0;title\\007\\n'; env; cat /proc/1/environ; echo nope > .agents/skills/writing-code/SKILL.md; touch /usr/x; ln -s / root; cat root/etc/shadow; ls /root; head -c 1100000 /dev/zero | tr '\\0' y >&2" }),
            ),
        ]),
        answer(&sum_draft().to_string()),
    ]);
    let out = compile_code(d, &server.url, &[]);
    assert_exit(&out, 0);
    let version = stdout(&out).trim().to_owned();
    assert!(version.starts_with("sha256:"), "{version}");
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 4);
    let offered: Vec<&str> = requests[0].tool_names();
    assert_eq!(offered[offered.len() - 2..], ["bash", "test_code"]);
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    let at = |text: &str| {
        system
            .find(text)
            .unwrap_or_else(|| panic!("no `{text}` in:\n{system}"))
    };
    assert!(at("You are the planner of lwirc") < at("/mnt/memory/workflow/lessons-learned.md"));
    assert!(at("/mnt/memory/workflow/lessons-learned.md") < at("Skills:"));
    assert!(at("cat .agents/skills/writing-code/SKILL.md") > at("Skills:"));
    assert!(at("Skills:") < at("Memory stores:"));
    assert!(at("Memory stores:") < at("/mnt/memory/org/"));
    assert!(at("/mnt/scratch/own/") < at("Tools:"));
    assert!(at("Tools:") < at("- bash: Run `bash -c COMMAND`"));

    // bash: the skill, read-only, at its path; no lessons yet.
    let cat = &tool_results(&requests, 1)[0];
    assert_eq!(
        cat["stdout"],
        "Read the input with json.load(sys.stdin); print one JSON value.\n"
    );
    assert_eq!(cat["exit_status"], 1, "no lessons yet: {cat}");
    for key in [
        "exit_status",
        "signal",
        "limit",
        "stdout",
        "stderr",
        "stdout_truncated",
        "stderr_truncated",
    ] {
        assert!(cat.get(key).is_some(), "{key} in {cat}");
    }
    // test_code: the body's result, and that it fits.
    let tested = &tool_results(&requests, 2)[0];
    assert_eq!(tested["result"], json!({ "total": 6 }), "{tested}");
    assert_eq!(tested["fits"], true);
    assert_eq!(tested["finding"], Value::Null);
    // The lesson persists; the org store and the skill are read-only.
    let results = tool_results(&requests, 3);
    assert_eq!(results[0]["exit_status"], 1, "{}", results[0]);
    assert!(
        results[0]["stderr"]
            .as_str()
            .unwrap()
            .contains("Read-only file system"),
        "{}",
        results[0]
    );
    assert_eq!(
        std::fs::read_to_string(d.join(".lwir/memory/workflow/sum/lessons-learned.md")).unwrap(),
        "Sum in Python: json.load(sys.stdin).\n"
    );
    assert!(!d.join(".lwir/memory/org/x.md").exists());
    assert_eq!(
        std::fs::read_to_string(d.join(".agents/skills/writing-code/SKILL.md")).unwrap(),
        "Read the input with json.load(sys.stdin); print one JSON value.\n"
    );
    // No secret of lwirc's environment reaches the command; the skill, the system and
    // what a planted link points at stay out of reach.
    let env = results[1]["stdout"].as_str().unwrap();
    assert!(
        !env.contains("sk-test-123") && !env.contains("OPENAI"),
        "{env}"
    );
    assert!(env.contains("PATH=/usr/local/bin:/usr/bin:/bin"), "{env}");
    let refused = results[1]["stderr"].as_str().unwrap();
    // Each stream is kept up to 1 MiB, and marked when cut.
    assert_eq!(results[1]["stderr_truncated"], true);
    assert_eq!(results[1]["stdout_truncated"], false);
    assert_eq!(refused.len(), 1 << 20);
    for why in [
        "SKILL.md: Read-only file system",
        "/usr/x': Read-only file system",
        "root/etc/shadow: No such file or directory",
    ] {
        assert!(refused.contains(why), "{why}: {refused}");
    }
    // Escape sequences: exact in the turn log, cleaned on the terminal.
    let answers: Vec<Value> = events(d)
        .iter()
        .filter(|e| e["event"] == "harness.tool_call.succeeded")
        .map(|e| serde_json::from_str(e["data"]["result"].as_str().unwrap()).unwrap())
        .collect();
    assert!(
        answers[3]["stdout"]
            .as_str()
            .unwrap()
            .starts_with("\u{1b}[31mred\u{1b}]0;title\u{7}\n"),
        "{}",
        answers[3]
    );
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err}");
    assert!(err.contains(r"\u{1b}[31mred"), "{err}");
    assert!(
        err.contains("tool bash: cat .agents/skills/writing-code/SKILL.md"),
        "{err}"
    );
    assert!(
        err.contains("tool test_code (python): exit 0, fits its output schema"),
        "{err}"
    );
    // Each call is logged like the other tools.
    assert_eq!(tool_call_events(d), tool_calls_that_succeeded(4));
    // The version runs, and its body gives what test_code said.
    let bindings = write_json(
        d,
        "bindings.json",
        &json!({ "bindings": "lwir.bindings/1" }),
    );
    let out = command(
        d,
        &[
            "run",
            &version,
            "--input",
            "input.json",
            "--bindings",
            &bindings,
        ],
    )
    .output()
    .unwrap();
    assert_exit(&out, 0);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        json!({ "total": 6 })
    );
    print_shortened_log(d);
}

/// The session's turn log, one short line per event (for the closing note).
fn print_shortened_log(d: &Path) {
    let mut lines = Vec::new();
    for e in events(d) {
        let data = &e["data"];
        let detail = match e["event"].as_str().unwrap() {
            "harness.model.called" => format!(
                "call {} exchange {} tools [{}]",
                data["call"],
                data["exchange"],
                data["request"]["tools"]
                    .as_array()
                    .map(|t| t
                        .iter()
                        .map(|t| t["function"]["name"].as_str().unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join(", "))
                    .unwrap_or_default()
            ),
            "harness.model.responded" => {
                let message = &data["response"]["choices"][0]["message"];
                let calls: Vec<&str> = message["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| c["function"]["name"].as_str().unwrap_or_default())
                    .collect();
                if calls.is_empty() {
                    format!("status {} answer", data["status"])
                } else {
                    format!("status {} tool calls {}", data["status"], calls.join(", "))
                }
            }
            _ => format!(
                "{} {}",
                data["name"].as_str().unwrap_or_default(),
                data["result"]
                    .as_str()
                    .map(|r| r.chars().take(90).collect::<String>())
                    .unwrap_or_default()
            ),
        };
        lines.push(format!(
            "{:>2} {} {detail}",
            e["seq"],
            e["event"].as_str().unwrap()
        ));
    }
    let session: Vec<String> = std::fs::read_to_string(d.join("session/events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            let detail = match e["event"].as_str().unwrap() {
                "workflow.registered" => e["data"]["version"].to_string(),
                "validation.completed" => format!("errors {}", e["data"]["errors"]),
                _ => String::new(),
            };
            format!("{:>2} {} {detail}", e["seq"], e["event"].as_str().unwrap())
        })
        .collect();
    let _ = writeln!(
        std::io::stderr().lock(),
        "session/model/events.jsonl:\n{}\nsession/events.jsonl:\n{}",
        lines.join("\n"),
        session.join("\n")
    );
}

/// A completed `bash` call is not run again when a session killed later resumes.
#[test]
fn a_completed_bash_call_is_not_run_again_on_resume() {
    if !sandbox_runs("the bash resume session") {
        return;
    }
    let dir = code_setup();
    let d = dir.path();
    let first = serve(vec![
        bash_call(
            "echo once >> /mnt/memory/workflow/count.txt; wc -l < /mnt/memory/workflow/count.txt",
        ),
        (0, vec![], String::new()),
    ]);
    let mut child = compile_command(d, "input.json", &first.url, &[])
        .spawn()
        .unwrap();
    first.kill_at_turn(&mut child, 2);
    let second = serve(vec![answer(&sum_draft().to_string())]);
    // Resumed where the sandbox does not run, the harness offers other tools: drift.
    let mut hidden = compile_command(d, "input.json", &second.url, &["--resume"]);
    let out = hidden.env("PATH", "/nonexistent").output().unwrap();
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains("CapabilityDriftError") && err.contains("globalToolsHash"),
        "{err}"
    );
    assert!(second.requests.lock().unwrap().is_empty());
    let out = compile_code(d, &second.url, &["--resume"]);
    assert_exit(&out, 0);
    let requests = second.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1, "only the turn in flight is sent again");
    assert_eq!(tool_results(&requests, 0)[0]["stdout"], "1\n");
    assert_eq!(
        std::fs::read_to_string(d.join(".lwir/memory/workflow/sum/count.txt")).unwrap(),
        "once\n",
        "the completed bash call was not run again"
    );
}

/// With bubblewrap hidden from PATH, neither `bash` nor `test_code` is offered or named in
/// the system prompt, standard error says so once, and a call the model makes anyway is
/// answered "there is no tool"; the session still compiles.
#[test]
fn without_bubblewrap_the_planner_gets_no_bash_and_is_told_once() {
    let dir = code_setup();
    let d = dir.path();
    let server = serve(vec![bash_call("id"), answer(&sum_draft().to_string())]);
    let mut c = compile_command(d, "input.json", &server.url, &[]);
    c.env("PATH", "/nonexistent");
    let out = c.output().unwrap();
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert_eq!(
        err.matches("the planner is not offered `bash` or `test_code`")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("apt-get install bubblewrap"), "{err}");
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        let names: Vec<&str> = r.tool_names();
        assert!(
            !names.contains(&"bash") && !names.contains(&"test_code"),
            "{names:?}"
        );
        let system = r.body["messages"][0]["content"].as_str().unwrap();
        assert!(
            !system.contains("bash") && !system.contains("/mnt/"),
            "{system}"
        );
    }
    assert_eq!(
        tool_results(&requests, 1)[0],
        "error: there is no tool `bash`"
    );
    // The tools recorded as offered (the first model call) do not include them.
    let first = events(d)
        .into_iter()
        .find(|e| e["event"] == "harness.model.called")
        .unwrap();
    assert!(
        !first["data"]["request"]["tools"]
            .to_string()
            .contains("\"bash\"")
    );
}

/// A command that moves the skills' mount point away and plants a link there (`ln -s /
/// .agents`) does not redirect the next call's mount: the link is replaced, the skill is
/// where it should be.
#[test]
fn a_link_planted_at_the_skills_mount_point_is_replaced() {
    if !sandbox_runs("the planted-link session") {
        return;
    }
    let dir = code_setup();
    let d = dir.path();
    let server = serve(vec![
        bash_call(
            "mv .agents moved && ln -s / .agents && mkfifo /mnt/memory/workflow/lessons-learned.md && echo planted",
        ),
        tool_calls(&[
            (
                "bash",
                json!({ "command": "cat .agents/skills/writing-code/SKILL.md" }),
            ),
            (
                "append_memory",
                json!({ "store": "workflow", "path": "lessons-learned.md", "text": "x" }),
            ),
        ]),
        answer(&sum_draft().to_string()),
    ]);
    let c = compile_command(d, "input.json", &server.url, &[]);
    // A FIFO planted in the memory store does not hang the session.
    let out = output_within(c, std::time::Duration::from_secs(60));
    assert_exit(&out, 0);
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(tool_results(&requests, 1)[0]["stdout"], "planted\n");
    assert_eq!(
        tool_results(&requests, 2)[0]["stdout"],
        "Read the input with json.load(sys.stdin); print one JSON value.\n"
    );
    assert!(
        tool_results(&requests, 2)[1]
            .as_str()
            .unwrap()
            .contains("cannot append to the memory"),
        "{:?}",
        tool_results(&requests, 2)
    );
    let agents = std::fs::symlink_metadata(d.join("session/scratch/.agents")).unwrap();
    assert!(agents.is_dir(), "the link was replaced by a directory");
}
