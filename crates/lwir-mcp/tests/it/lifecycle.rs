//! Starting and stopping servers: what is not there, what exits at once, what does not
//! answer, and what is left behind (nothing).

use std::time::{Duration, Instant};

use lwir_mcp::{ConnectOptions, Error, Server, StdioSpec};
use serde_json::json;

use crate::common::*;

#[test]
fn a_program_that_is_not_there_cannot_start() {
    let spec = StdioSpec::new("ghost", vec!["lwir-no-such-program".into()]);
    let error = Server::start_stdio(&spec).unwrap_err();
    let Error::Spawn { source, .. } = &error else {
        panic!("{error}")
    };
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    assert!(
        error
            .to_string()
            .starts_with("MCP server `ghost`: cannot start `lwir-no-such-program`"),
        "{error}"
    );
}

#[test]
fn a_server_that_exits_at_once_fails_the_start() {
    let error = Server::start_stdio(&unruly_spec(&["--exit", "4"])).unwrap_err();
    let Error::Exited {
        status,
        stderr,
        during,
        ..
    } = &error
    else {
        panic!("{error}")
    };
    assert_eq!(status.as_deref(), Some("exit status: 4"));
    assert_eq!(during, "starting");
    assert_eq!(stderr, "unruly: exiting at once");
}

#[test]
fn a_banner_on_standard_output_fails_the_start() {
    let error = Server::start_stdio(&unruly_spec(&["--banner"])).unwrap_err();
    assert!(matches!(error, Error::Protocol { .. }), "{error}");
    assert!(error.to_string().contains("Welcome to unruly"), "{error}");
}

#[test]
fn a_server_that_never_answers_times_out() {
    let mut spec = unruly_spec(&["--silent"]);
    spec.options = ConnectOptions {
        start_timeout: Duration::from_millis(500),
        ..ConnectOptions::default()
    };
    let started = Instant::now();
    let error = Server::start_stdio(&spec).unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_bad_spec_is_refused() {
    let error = Server::start_stdio(&StdioSpec::new("empty", vec![])).unwrap_err();
    assert!(matches!(error, Error::InvalidSpec { .. }), "{error}");
    let mut spec = unruly_spec(&[]);
    spec.env = vec!["A=B".into()];
    let error = Server::start_stdio(&spec).unwrap_err();
    assert!(
        error.to_string().contains("environment variable"),
        "{error}"
    );
}

#[test]
fn shutdown_leaves_no_process() {
    let server = unruly(&[]);
    let pids = structured(&call(&server, "spawn", json!({}))).clone();
    let (child, leader) = (
        pids["pid"].as_u64().unwrap() as u32,
        pids["server"].as_u64().unwrap() as u32,
    );
    assert!(running(child) && running(leader));
    server.shutdown();
    assert!(!running(leader), "the server {leader} runs on");
    assert!(
        gone_within(child, Duration::from_secs(2)),
        "its child {child} runs on"
    );
}

#[test]
fn dropping_a_server_stops_it() {
    let server = unruly(&[]);
    let pids = structured(&call(&server, "spawn", json!({}))).clone();
    let leader = pids["server"].as_u64().unwrap() as u32;
    let child = pids["pid"].as_u64().unwrap() as u32;
    drop(server);
    assert!(!running(leader));
    assert!(gone_within(child, Duration::from_secs(2)));
}

#[test]
fn a_server_is_shared_by_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Server>();
}

#[test]
fn a_caller_inside_another_runtime_is_served() {
    let server = unruly(&[]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    // Blocking inside async code is the caller's business; it must not panic here.
    let answer = runtime
        .block_on(async { text(&call(&server, "echo", json!({"message": "in"}))).to_owned() });
    assert_eq!(answer, "Echo: in");
}

#[test]
fn a_server_outlives_the_thread_that_started_it() {
    // On Linux a server is told to stop when the thread that started it ends; that thread
    // is one of the runtime's, not the caller's.
    let server = std::thread::spawn(|| unruly(&[])).join().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        text(&call(&server, "echo", json!({"message": "alive"}))),
        "Echo: alive"
    );
}
