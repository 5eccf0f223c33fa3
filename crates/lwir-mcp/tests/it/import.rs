//! `tools_entries`: a server's tools as definition entries, in the normal form, which
//! lwirc's own validator takes without a schema finding (LW1xx).

use lwir_mcp::{Server, entries, tools_entries};
use serde_json::{Value, json};

use crate::common::*;

/// The LW1xx findings of a definition whose tools are `tools`.
fn schema_findings(tools: &Value) -> Vec<String> {
    let definition = json!({
        "name": "imported",
        "models": {"fast": {"model": "acme/small-2", "quality": "standard"}},
        "tools": tools["tools"],
        "planner": {"model": "fast"}
    });
    let bytes = serde_json::to_vec(&definition).unwrap();
    let (document, read) = lwir_spec::document::read_document(bytes);
    assert!(read.is_empty(), "{read:?}");
    let document = document.unwrap();
    lwir_validators::validate_definition(&document)
        .into_iter()
        .filter(|f| f.code.to_string().starts_with("LW1"))
        .map(|f| format!("{} {}: {}", f.code, f.pointer, f.message))
        .collect()
}

fn check(server: &Server, prefix: &str) -> Value {
    let (tools, dropped) = tools_entries(server, Some(prefix)).unwrap();
    let findings = schema_findings(&tools);
    assert!(findings.is_empty(), "{findings:#?}\n{tools:#}");
    for d in &dropped {
        // Each drop can be told on standard error.
        assert!(!d.to_string().is_empty());
    }
    // The same server, listed again, gives the same bytes.
    let (again, _) = entries(&server.list_tools().unwrap(), Some(prefix));
    assert_eq!(
        serde_json::to_vec(&tools).unwrap(),
        serde_json::to_vec(&again).unwrap()
    );
    tools
}

#[test]
fn server_everything_imports_into_the_subset() {
    let Some(server) = everything() else { return };
    let tools = check(&server, "util.");
    let echo = &tools["tools"]["util.echo"];
    assert_eq!(echo["output"], json!({}));
    assert_eq!(echo["input"]["required"], json!(["message"]));
    assert!(echo["input"].get("$schema").is_none());
    let structured = &tools["tools"]["util.get-structured-content"];
    assert_eq!(structured["output"]["type"], "object");
}

#[test]
fn mcp_server_time_imports_into_the_subset() {
    let Some(server) = time_server() else { return };
    let (tools, dropped) = tools_entries(&server, None).unwrap();
    assert!(schema_findings(&tools).is_empty());
    let output = &tools["tools"]["convert_time"]["output"];
    assert!(!output.to_string().contains("$ref"), "{output}");
    assert!(dropped.iter().any(|d| d.keyword == "title"));
    check(&server, "time.");
}

#[test]
fn unruly_imports_into_the_subset() {
    let server = unruly(&[]);
    let tools = check(&server, "");
    assert_eq!(
        tools["tools"]["meta"]["output"]["properties"]["meta"],
        json!({"type": "object"})
    );
}
