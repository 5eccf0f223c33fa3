//! What of lwirc's environment a server gets: `PATH`, `HOME`, `LANG` and what its binding
//! names. The test runs itself again in a child process whose environment holds lwirc's
//! kind of secrets (setting them in this process would race with the other tests).

use std::collections::BTreeSet;

use lwir_mcp::StdioSpec;
use serde_json::{Value, json};

use crate::common::*;

const OPENAI: &str = "marker-openai-3f9c1d";
const REGISTRY: &str = "marker-registry-77ab02";
const CHILD: &str = "LWIR_MCP_TEST_ENV_CHILD";

/// Runs the test `name` (of this module) in a child with the secrets set; true in the
/// child, where the test goes on.
fn in_child(name: &str) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let test = format!("environment::{name}");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("OPENAI_API_KEY", OPENAI)
        .env("LWIR_REGISTRY_PASSWORD", REGISTRY)
        .env("LWIR_TEST_NAMED", "named-value")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What the child said about skipping, said here too.
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in stderr.lines().filter(|l| l.starts_with("skipped")) {
        skip_note!("{line}");
    }
    false
}

fn allowed() -> BTreeSet<&'static str> {
    ["PATH", "HOME", "LANG", "LWIR_TEST_NAMED"].into()
}

/// The names of the environment `env` (an object) lists.
fn names(env: &Value) -> BTreeSet<&str> {
    env.as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

#[test]
fn server_everything_sees_no_secret() {
    if !in_child("server_everything_sees_no_secret") {
        return;
    }
    assert_eq!(std::env::var("OPENAI_API_KEY").unwrap(), OPENAI);
    let Some(command) = everything_command() else {
        return;
    };
    let mut spec = StdioSpec::new("everything", command);
    spec.env = vec!["LWIR_TEST_NAMED".into()];
    let server = lwir_mcp::Server::start_stdio(&spec).unwrap();
    let answer = call(&server, "get-env", json!({}));
    let text = text(&answer);
    assert!(!text.contains(OPENAI) && !text.contains(REGISTRY), "{text}");
    let env: Value = serde_json::from_str(text).unwrap();
    let keys = names(&env);
    assert!(keys.is_subset(&allowed()), "{keys:?}");
    assert_eq!(env["LWIR_TEST_NAMED"], "named-value");
}

#[test]
fn a_server_gets_path_home_lang_and_what_is_named() {
    if !in_child("a_server_gets_path_home_lang_and_what_is_named") {
        return;
    }
    let mut spec = unruly_spec(&[]);
    spec.env = vec!["LWIR_TEST_NAMED".into(), "LWIR_TEST_ABSENT".into()];
    let server = lwir_mcp::Server::start_stdio(&spec).unwrap();
    let env = structured(&call(&server, "env", json!({}))).clone();
    let keys = names(&env);
    // Python adds nothing of its own but may set LC_CTYPE when LANG is absent.
    let keys: BTreeSet<&str> = keys.into_iter().filter(|k| *k != "LC_CTYPE").collect();
    assert!(keys.is_subset(&allowed()), "{keys:?}");
    assert!(keys.contains("PATH"));
    assert_eq!(env["LWIR_TEST_NAMED"], "named-value");
    assert!(!env.to_string().contains(OPENAI));
}
