//! Helpers shared by the CLI tests: run the built `lwirc`, find the example, make registries
//! and definitions in temporary directories.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::io::Write;

pub(crate) mod fake;

/// Says on the terminal (past the test harness's capture of `eprintln!`, so that a passing
/// test still shows it) what a test left out.
#[allow(unused_macros, reason = "each test file uses a different subset")]
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The workspace root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A file of the shipped example, as an absolute path.
pub(crate) fn example(name: &str) -> String {
    root()
        .join("examples/issue-triage")
        .join(name)
        .display()
        .to_string()
}

/// The example's definition, parsed (to edit it).
pub(crate) fn example_definition() -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(example("workflow.json")).unwrap()).unwrap()
}

/// The example's clean draft, parsed.
pub(crate) fn example_draft() -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(example("draft.json")).unwrap()).unwrap()
}

/// Writes `value` pretty-printed to `dir/name` and returns its path.
pub(crate) fn write_json(dir: &Path, name: &str, value: &serde_json::Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    path.display().to_string()
}

/// Asserts that `out`'s standard error contains `needle`; where not, it shows what it says.
#[track_caller]
pub(crate) fn assert_stderr_has(out: &Output, needle: impl std::fmt::Display) {
    let needle = needle.to_string();
    assert!(stderr(out).contains(&needle), "{}", stderr(out));
}

/// Asserts that `out`'s standard output contains `needle`; where not, it shows what it says.
#[track_caller]
pub(crate) fn assert_stdout_has(out: &Output, needle: impl std::fmt::Display) {
    let needle = needle.to_string();
    assert!(stdout(out).contains(&needle), "{}", stdout(out));
}

/// Registers the example draft against the example definition in `dir`'s default
/// registry; the version.
pub(crate) fn register_example(dir: &Path) -> String {
    let out = register_example_with(dir, &[]);
    assert_exit(&out, 0);
    stdout(&out).trim().to_owned()
}

/// `lwirc register DRAFT -d DEFINITION` in `dir`'s default registry, which must succeed;
/// the version.
pub(crate) fn register_files(dir: &Path, draft: &str, definition: &str) -> String {
    let out = lwirc(dir, &["register", draft, "-d", definition]);
    assert_exit(&out, 0);
    stdout(&out).trim().to_owned()
}

/// `lwirc register` of the example draft against the example definition in `dir`, with
/// `extra` arguments (`--registry R`, say); what it did.
pub(crate) fn register_example_with(dir: &Path, extra: &[&str]) -> Output {
    register_against_example(dir, "draft.json", extra)
}

/// `lwirc register` of the example's file `draft` against the example definition in `dir`,
/// with `extra` arguments; what it did.
pub(crate) fn register_against_example(dir: &Path, draft: &str, extra: &[&str]) -> Output {
    let draft = example(draft);
    let definition = example("workflow.json");
    let mut args = vec!["register", draft.as_str(), "-d", definition.as_str()];
    args.extend_from_slice(extra);
    lwirc(dir, &args)
}

/// A command that runs the built `lwirc` in `dir`, with no `LWIR_REGISTRY` or `NO_COLOR`.
pub(crate) fn command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lwirc"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove("LWIR_REGISTRY")
        .env_remove("LWIR_GOALS")
        .env_remove("LWIR_RUNS")
        .env_remove("LWIRC_PLANNER_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `command` to its end, or kills it after `limit` and fails the test: a wait that
/// should be bounded must not hang the suite when it is not.
#[track_caller]
pub(crate) fn output_within(mut command: Command, limit: std::time::Duration) -> Output {
    let started = std::time::Instant::now();
    let mut child = command.spawn().unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Runs `lwirc args` in `dir`.
pub(crate) fn lwirc(dir: &Path, args: &[&str]) -> Output {
    command(dir, args).output().unwrap()
}

/// Runs `lwirc args` in `dir` with `stdin` as standard input.
pub(crate) fn lwirc_with_stdin(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = command(dir, args).stdin(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// Standard output as text.
pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Standard error as text.
pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// The exit code, with both streams shown when it is not `expected`.
#[track_caller]
pub(crate) fn assert_exit(out: &Output, expected: i32) {
    assert_eq!(
        out.status.code(),
        Some(expected),
        "stdout:\n{}\nstderr:\n{}",
        stdout(out),
        stderr(out)
    );
}

/// Whether the sandbox runs here; where it does not, the test that needs it says it is
/// skipped, unless `LWIRC_REQUIRE_ENGINES` is set (CI sets it).
pub(crate) fn sandbox_runs(test: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let out = lwirc(dir.path(), &["sandbox", "check"]);
    if out.status.code() == Some(0) {
        return true;
    }
    assert!(
        std::env::var_os("LWIRC_REQUIRE_ENGINES").is_none(),
        "the sandbox does not run: {}",
        stderr(&out)
    );
    skip_note!("skipped {test}: the sandbox does not run here");
    false
}

/// Makes the read-only stored file at `path` writable, for a test that tampers with it.
pub(crate) fn make_writable(path: &Path) {
    let mut permissions = std::fs::metadata(path).unwrap().permissions();
    #[allow(
        clippy::permissions_set_readonly_false,
        reason = "a test tampers with a stored file on purpose"
    )]
    permissions.set_readonly(false);
    std::fs::set_permissions(path, permissions).unwrap();
}

/// A port on the loopback that nothing listens on (it was free a moment ago).
pub(crate) fn unused_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A listener on the loopback that takes every connection and says nothing, each held open
/// for as long as the test runs: its address.
pub(crate) fn silent_listener() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let _held: Vec<_> = listener.incoming().flatten().collect();
    });
    address
}

/// Writes an executable `sh` script `dir/name` with `body` and returns its path.
pub(crate) fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// A directory of recorded planner answers for `examples/planners/scripted.sh`: answer `i`
/// (0-based) is `call-{i+1}.json`.
pub(crate) fn answers(dir: &Path, answers: &[serde_json::Value]) -> String {
    let answers_dir = dir.join("answers");
    std::fs::create_dir_all(&answers_dir).unwrap();
    for (i, answer) in answers.iter().enumerate() {
        write_json(&answers_dir, &format!("call-{}.json", i + 1), answer);
    }
    answers_dir.display().to_string()
}

/// A draft answer proposing `lwir`.
pub(crate) fn draft_answer(lwir: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({ "kind": "draft", "lwir": lwir })
}

/// The `--planner` value running the example scripted planner on `answers_dir`.
pub(crate) fn scripted_planner(answers_dir: &str) -> String {
    format!(
        "{} {answers_dir}",
        root().join("examples/planners/scripted.sh").display()
    )
}

/// The example goal file (`examples/goals/goal.json`), parsed (to edit it).
pub(crate) fn example_goal() -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(root().join("examples/goals/goal.json")).unwrap())
        .unwrap()
}

/// `lwirc goal create` in `dir` of `file`, written as `dir/name`; the goal's id.
pub(crate) fn create_goal(dir: &Path, name: &str, file: &serde_json::Value) -> String {
    let path = write_json(dir, name, file);
    let out = lwirc(dir, &["goal", "create", &path]);
    assert_exit(&out, 0);
    stdout(&out).trim().to_owned()
}

/// `lwirc goal show GOAL --format json` in `dir`, parsed.
pub(crate) fn show_goal(dir: &Path, goal: &str) -> serde_json::Value {
    let out = lwirc(dir, &["goal", "show", goal, "--format", "json"]);
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A temporary directory whose `.lwir/registry` holds the two templates of
/// `examples/goals/` (the issue-triage draft and `triage-lite.json`).
pub(crate) fn goal_registry() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for draft in [
        "examples/issue-triage/draft.json",
        "examples/goals/triage-lite.json",
    ] {
        let out = lwirc(
            dir.path(),
            &[
                "register",
                &root().join(draft).display().to_string(),
                "-d",
                &example("workflow.json"),
            ],
        );
        assert_exit(&out, 0);
    }
    dir
}
