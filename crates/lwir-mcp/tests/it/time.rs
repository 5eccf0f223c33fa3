//! Against `mcp-server-time` (its output schemas use `$ref` and `$defs`).

use lwir_mcp::normalize;
use serde_json::json;

use crate::common::*;

#[test]
fn its_output_schemas_are_inlined() {
    let Some(server) = time_server() else { return };
    let tools = server.list_tools().unwrap();
    let convert = tools.iter().find(|t| t.name == "convert_time").unwrap();
    let output = convert.output_schema.as_ref().expect("an outputSchema");
    assert!(output.to_string().contains("$ref"), "{output}");
    let (normal, dropped) = normalize(output);
    let text = normal.to_string();
    assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
    assert!(!text.contains("\"title\""), "{text}");
    // Where `source` pointed, the definition is now.
    let source = &normal["properties"]["source"];
    assert_eq!(source["type"], "object", "{text}");
    assert!(source["properties"]["timezone"].is_object(), "{text}");
    assert!(dropped.iter().any(|d| d.keyword == "title"), "{dropped:?}");
    // Every schema is the same in its normal form when listed again.
    let again = time_server().unwrap().list_tools().unwrap();
    for (a, b) in tools.iter().zip(&again) {
        assert_eq!(normalize(&a.input_schema).0, normalize(&b.input_schema).0);
    }
}

#[test]
fn its_results_are_structured() {
    let Some(server) = time_server() else { return };
    let now = call(&server, "get_current_time", json!({"timezone": "UTC"}));
    assert!(!now.is_error, "{now:?}");
    assert_eq!(structured(&now)["timezone"], "UTC");
    let converted = call(
        &server,
        "convert_time",
        json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    );
    let value = structured(&converted);
    assert_eq!(value["target"]["timezone"], "Asia/Tokyo", "{value}");
    assert!(
        value["target"]["datetime"]
            .as_str()
            .unwrap()
            .contains("21:00"),
        "{value}"
    );
}

#[test]
fn a_bad_timezone_is_a_tool_error() {
    let Some(server) = time_server() else { return };
    let result = call(
        &server,
        "get_current_time",
        json!({"timezone": "Mars/Olympus"}),
    );
    assert!(result.is_error, "{result:?}");
    assert!(text(&result).contains("Mars/Olympus"), "{result:?}");
}
