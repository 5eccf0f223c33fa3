//! Against `servers/unruly.py`: what the real servers cannot show.

use std::time::{Duration, Instant};

use lwir_mcp::{CallOptions, Error, IDEMPOTENCY_KEY, ToolValue, clean};
use serde_json::json;

use crate::common::*;

#[test]
fn the_idempotency_key_reaches_the_server() {
    let server = unruly(&[]);
    let options = CallOptions {
        idempotency_key: Some("run-7/step-3/attempt-1".into()),
        ..CallOptions::default()
    };
    let result = server.call("meta", json!({"x": 1}), &options).unwrap();
    let value = structured(&result);
    assert_eq!(
        value["meta"][IDEMPOTENCY_KEY], "run-7/step-3/attempt-1",
        "{value}"
    );
    assert_eq!(value["arguments"], json!({"x": 1}));
    // rmcp adds a progress token to every request's `_meta`.
    assert!(value["meta"]["progressToken"].is_number(), "{value}");
    let without = call(&server, "meta", json!(null));
    let meta = &structured(&without)["meta"];
    assert!(meta.get(IDEMPOTENCY_KEY).is_none(), "{meta}");
    assert_eq!(structured(&without)["arguments"], json!({}));
}

#[test]
fn a_tool_error_is_a_result_as_sent() {
    let server = unruly(&[]);
    let result = call(&server, "fail", json!({}));
    assert!(result.is_error);
    assert!(text(&result).contains('\u{1b}'));
    assert_eq!(clean(text(&result)), "it failed\\u{7}");
}

#[test]
fn a_server_that_crashes_mid_call_fails_the_call() {
    let server = unruly(&[]);
    let error = server
        .call("crash", json!({}), &within(10_000))
        .unwrap_err();
    let Error::Exited { status, stderr, .. } = &error else {
        panic!("{error}")
    };
    assert_eq!(status.as_deref(), Some("exit status: 3"));
    assert_eq!(stderr, "unruly: crashing on purpose");
    let message = error.to_string();
    assert!(
        message.starts_with("MCP server `unruly` exited (exit status: 3) while calling `crash`"),
        "{message}"
    );
    // Later calls fail the same way, at once.
    let again = server.call("echo", json!({}), &within(10_000)).unwrap_err();
    assert!(matches!(again, Error::Exited { .. }), "{again}");
}

#[test]
fn a_call_that_hangs_times_out_and_others_go_on() {
    let server = unruly(&[]);
    let started = Instant::now();
    let error = server.call("hang", json!({}), &within(200)).unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        text(&call(&server, "echo", json!({"message": 1}))),
        "Echo: 1"
    );
}

#[test]
fn garbage_on_standard_output_ends_the_connection() {
    let server = unruly(&[]);
    let error = server
        .call("garbage", json!({}), &within(10_000))
        .unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, Error::Protocol { .. }), "{message}");
    assert!(
        message.contains("not JSON") && message.contains("<html>this is not json</html>"),
        "{message}"
    );
    let again = server.call("echo", json!({}), &within(10_000)).unwrap_err();
    assert!(again.to_string().contains("not JSON"), "{again}");

    let server = unruly(&[]);
    let error = server
        .call("not-rpc", json!({}), &within(10_000))
        .unwrap_err();
    assert!(
        error.to_string().contains("not a JSON-RPC message"),
        "{error}"
    );
}

#[test]
fn an_answer_of_the_wrong_shape_fails_only_its_call() {
    let server = unruly(&[]);
    let error = server
        .call("bad-shape", json!({}), &within(10_000))
        .unwrap_err();
    assert!(error.to_string().contains("not a tool result"), "{error}");
    let error = server
        .call("bad-answer", json!({}), &within(10_000))
        .unwrap_err();
    assert!(
        error.to_string().contains("not a JSON-RPC response"),
        "{error}"
    );
    assert_eq!(
        text(&call(&server, "echo", json!({"message": 2}))),
        "Echo: 2"
    );
}

/// The peak of this process's resident memory, in KiB.
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_hundred_megabyte_answer_is_refused_without_being_held() {
    let server = unruly(&[]);
    let error = server.call("huge", json!({}), &within(60_000)).unwrap_err();
    let Error::ResultTooLarge { limit, size, .. } = &error else {
        panic!("{error}")
    };
    assert_eq!(*limit, 16 << 20);
    assert!(*size > 100 << 20, "{size}");
    // The reader held at most the limit (16 MiB) of it.
    assert!(peak_kib() < 80 * 1024, "peak {} KiB", peak_kib());
    // The connection goes on.
    assert_eq!(
        text(&call(&server, "echo", json!({"message": 3}))),
        "Echo: 3"
    );
}

#[test]
fn a_call_has_its_own_answer_limit() {
    let server = unruly(&[]);
    let small = CallOptions {
        max_result_bytes: 1000,
        ..CallOptions::default()
    };
    let error = server
        .call("big", json!({"size": 2000}), &small)
        .unwrap_err();
    assert!(
        matches!(error, Error::ResultTooLarge { limit: 1000, .. }),
        "{error}"
    );
    let fine = server.call("big", json!({"size": 500}), &small).unwrap();
    assert_eq!(text(&fine).len(), 500);
    let default = call(&server, "big", json!({"size": 200_000}));
    assert_eq!(default.value, ToolValue::Text("x".repeat(200_000)));
}

#[test]
fn the_list_is_read_after_it_changed() {
    let server = unruly(&["--list-changed"]);
    let tools = server.list_tools().unwrap();
    assert!(tools.iter().any(|t| t.name == "late"), "{tools:?}");
}

#[test]
fn pages_are_followed_and_bounded() {
    let tools = unruly(&["--pages", "4"]).list_tools().unwrap();
    assert_eq!(tools.len(), 16);
    assert_eq!(tools[15].name, "spawn");
    let error = unruly(&["--cursor-loop"]).list_tools().unwrap_err();
    assert!(error.to_string().contains("never ends"), "{error}");
}

#[test]
fn one_tool_with_a_schema_that_is_no_object_spoils_the_list() {
    // rmcp reads a tool's `inputSchema` as a JSON object; a list with one that is not
    // cannot be read as a tool list at all.
    let error = unruly(&["--bool-schema"]).list_tools().unwrap_err();
    assert!(error.to_string().contains("not a tool list"), "{error}");
}

#[test]
fn structured_content_reaches_the_caller_unchecked() {
    // rmcp's client checks nothing against a tool's outputSchema: the caller does.
    let server = unruly(&[]);
    let tools = server.list_tools().unwrap();
    let mismatch = tools.iter().find(|t| t.name == "mismatch").unwrap();
    assert_eq!(
        mismatch.output_schema.as_ref().unwrap()["required"],
        json!(["n"])
    );
    let result = call(&server, "mismatch", json!({}));
    assert_eq!(structured(&result), &json!({"n": "not an integer"}));
    let result = call(&server, "list", json!({}));
    assert_eq!(structured(&result), &json!([1, 2]));
}
