//! Finding the servers, and small helpers.

#![allow(dead_code, reason = "each test module uses a different subset")]

use std::time::Duration;

use lwir_mcp::{CallOptions, Server, StdioSpec, ToolResult, ToolValue};
use serde_json::Value;

/// Says on the terminal (past the test harness's capture of `eprintln!`, so that a passing
/// test still shows it) what a test left out.
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// The value of the variable `var` naming an installed server, or `None` after saying the
/// test is skipped; with `LWIRC_REQUIRE_ENGINES` set, a missing one fails the test.
fn engine(var: &str, what: &str) -> Option<String> {
    match std::env::var(var).ok().filter(|v| !v.is_empty()) {
        Some(path) => Some(path),
        None => {
            assert!(
                std::env::var_os("LWIRC_REQUIRE_ENGINES").is_none(),
                "LWIRC_REQUIRE_ENGINES is set but {var} is not (it names {what})"
            );
            skip_note!("skipped: set {var} to {what} (see .ci/engines.sh)");
            None
        }
    }
}

/// The command of `server-everything` over stdio, if it is installed.
pub(crate) fn everything_command() -> Option<Vec<String>> {
    let index = engine(
        "LWIRC_TEST_MCP_EVERYTHING",
        "the dist/index.js of @modelcontextprotocol/server-everything",
    )?;
    Some(vec!["node".into(), index, "stdio".into()])
}

/// The command of `mcp-server-time`, if it is installed.
pub(crate) fn time_command() -> Option<Vec<String>> {
    let bin = engine("LWIRC_TEST_MCP_TIME", "the mcp-server-time program")?;
    Some(vec![bin])
}

/// `server-everything`, started, if it is installed.
pub(crate) fn everything() -> Option<Server> {
    let command = everything_command()?;
    Some(
        Server::start_stdio(&StdioSpec::new("everything", command))
            .expect("server-everything starts"),
    )
}

/// `mcp-server-time`, started, if it is installed.
pub(crate) fn time_server() -> Option<Server> {
    let command = time_command()?;
    Some(Server::start_stdio(&StdioSpec::new("time", command)).expect("mcp-server-time starts"))
}

/// The Python interpreter `python3` runs (not a wrapper such as pyenv's shim, which adds
/// variables of its own to the server's environment).
fn python() -> &'static str {
    static PYTHON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 runs");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

/// The command of `servers/unruly.py` with `args`.
pub(crate) fn unruly_command(args: &[&str]) -> Vec<String> {
    let mut command = vec![
        python().to_owned(),
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/servers/unruly.py").to_owned(),
    ];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    command
}

/// The spec of `servers/unruly.py` with `args`, named `unruly`.
pub(crate) fn unruly_spec(args: &[&str]) -> StdioSpec {
    StdioSpec::new("unruly", unruly_command(args))
}

/// `servers/unruly.py`, started with `args`.
pub(crate) fn unruly(args: &[&str]) -> Server {
    Server::start_stdio(&unruly_spec(args)).expect("unruly.py starts")
}

/// Calls `tool` with the default options.
pub(crate) fn call(server: &Server, tool: &str, arguments: Value) -> ToolResult {
    server
        .call(tool, arguments, &CallOptions::default())
        .unwrap_or_else(|e| panic!("calling {tool}: {e}"))
}

/// Call options with a timeout of `ms` milliseconds.
pub(crate) fn within(ms: u64) -> CallOptions {
    CallOptions {
        timeout: Duration::from_millis(ms),
        ..CallOptions::default()
    }
}

/// The text of a text result.
pub(crate) fn text(result: &ToolResult) -> &str {
    match &result.value {
        ToolValue::Text(text) => text,
        other => panic!("a text result, not {other:?}"),
    }
}

/// The value of a structured result.
pub(crate) fn structured(result: &ToolResult) -> &Value {
    match &result.value {
        ToolValue::Structured(value) => value,
        other => panic!("a structured result, not {other:?}"),
    }
}

/// Whether the process `pid` is still running (a zombie, or no process, is not).
pub(crate) fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("");
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

/// Waits up to `limit` for `pid` to stop running.
pub(crate) fn gone_within(pid: u32, limit: Duration) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if !running(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !running(pid)
}
