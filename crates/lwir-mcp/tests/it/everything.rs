//! Against `@modelcontextprotocol/server-everything` over stdio.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use lwir_mcp::{Error, ToolValue};
use serde_json::json;

use crate::common::*;

#[test]
fn its_tools_are_listed_once_the_list_settled() {
    let Some(server) = everything() else { return };
    assert_eq!(server.info().protocol_version, "2025-11-25");
    let tools = server.list_tools().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for name in ["echo", "get-sum", "get-structured-content", "get-env"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    // The list changes right after `initialized` (tools that depend on the client's
    // capabilities): a second connection, declaring the same capabilities, lists the same.
    let again = everything().unwrap().list_tools().unwrap();
    assert_eq!(tools, again);
    let structured = tools
        .iter()
        .find(|t| t.name == "get-structured-content")
        .unwrap();
    assert!(structured.output_schema.is_some());
}

#[test]
fn echo_answers_text() {
    let Some(server) = everything() else { return };
    let result = call(&server, "echo", json!({"message": "hi"}));
    assert!(!result.is_error);
    assert_eq!(text(&result), "Echo: hi");
    let sum = call(&server, "get-sum", json!({"a": 2, "b": 3}));
    assert_eq!(text(&sum), "The sum of 2 and 3 is 5.");
}

#[test]
fn structured_content_is_the_result() {
    let Some(server) = everything() else { return };
    let result = call(
        &server,
        "get-structured-content",
        json!({"location": "Chicago"}),
    );
    assert!(!result.is_error);
    let value = structured(&result);
    for key in ["temperature", "conditions", "humidity"] {
        assert!(value.get(key).is_some(), "{key} in {value}");
    }
}

#[test]
fn bad_arguments_are_a_tool_error() {
    let Some(server) = everything() else { return };
    let result = call(&server, "get-sum", json!({"a": "two"}));
    assert!(result.is_error, "{result:?}");
    assert!(!text(&result).is_empty());
    let result = call(&server, "echo", json!({}));
    assert!(result.is_error, "{result:?}");
    // Not a JSON object: refused before anything is sent.
    let error = server
        .call("echo", json!(["hi"]), &Default::default())
        .unwrap_err();
    assert!(matches!(error, Error::InvalidArguments { .. }), "{error}");
    // The connection goes on.
    assert_eq!(
        text(&call(&server, "echo", json!({"message": "still"}))),
        "Echo: still"
    );
}

#[test]
fn an_unknown_tool_is_an_error_or_a_tool_error() {
    let Some(server) = everything() else { return };
    match server.call("no-such-tool", json!({}), &Default::default()) {
        Ok(result) => assert!(result.is_error, "{result:?}"),
        Err(Error::Rpc { code, message, .. }) => {
            assert_eq!(code, -32602, "{message}");
        }
        Err(other) => panic!("{other}"),
    }
}

#[test]
fn two_hundred_calls_at_once_over_one_connection() {
    let Some(server) = everything() else { return };
    let server = Arc::new(server);
    let start = Arc::new(Barrier::new(200));
    let threads: Vec<_> = (0..200)
        .map(|i| {
            let server = Arc::clone(&server);
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                let result = call(&server, "echo", json!({"message": format!("m{i}")}));
                assert_eq!(text(&result), format!("Echo: m{i}"));
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

#[test]
fn a_call_past_its_timeout_fails_and_the_connection_goes_on() {
    let Some(server) = everything() else { return };
    let started = Instant::now();
    let error = server
        .call(
            "trigger-long-running-operation",
            json!({"duration": 10, "steps": 5}),
            &within(300),
        )
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    let Error::Timeout { after, .. } = &error else {
        panic!("{error}")
    };
    assert_eq!(*after, Duration::from_millis(300));
    assert!(error.to_string().contains("within 0.300 s"), "{error}");
    let result = call(&server, "echo", json!({"message": "after"}));
    assert_eq!(result.value, ToolValue::Text("Echo: after".into()));
}
