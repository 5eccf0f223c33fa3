//! `lwirc drift`: each kind of change to what a version depends on is named, in human, JSON
//! and SARIF form, and points into today's definition; changes to what it does not use are
//! not drift.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

/// The example definition plus a tool and a model slot the example draft does not use.
fn definition() -> Value {
    let mut definition = example_definition();
    definition["tools"]["github.close_issue"] = json!({
        "description": "Close an issue.",
        "input": { "type": "object", "properties": { "number": { "type": "integer" } } },
        "output": { "type": "object" } });
    definition["models"]["spare"] = json!({ "model": "acme/spare-1", "quality": "basic" });
    definition
}

/// A temporary directory with the example draft registered against [`definition`], and
/// its version.
fn registered() -> (tempfile::TempDir, String) {
    let tmp = tempfile::tempdir().unwrap();
    let workflow = write_json(tmp.path(), "registered.json", &definition());
    let out = lwirc(
        tmp.path(),
        &["register", &example("draft.json"), "-d", &workflow],
    );
    assert_exit(&out, 0);
    (tmp, stdout(&out).trim().to_owned())
}

/// `lwirc drift` of `version` against [`definition`] edited by `edit`, as JSON, with the
/// definition's bytes.
fn drift_json(
    dir: &Path,
    version: &str,
    edit: impl FnOnce(&mut Value),
) -> (i32, Value, Vec<u8>, String) {
    let mut today = definition();
    edit(&mut today);
    let path = write_json(dir, "today.json", &today);
    let out = lwirc(
        dir,
        &["drift", &version[..15], "-d", &path, "--format", "json"],
    );
    let report = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    (
        out.status.code().unwrap(),
        report,
        std::fs::read(&path).unwrap(),
        path,
    )
}

/// Checks that a drift run reports exactly one finding, of `code` at `pointer`, whose span
/// is that value's bytes in the definition, and returns its message.
#[track_caller]
fn one_finding(
    (status, report, source, path): (i32, Value, Vec<u8>, String),
    code: &str,
    pointer: &str,
) -> String {
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{report:#}");
    let f = &findings[0];
    assert_eq!(f["code"], code, "{report:#}");
    assert_eq!(f["pointer"], pointer);
    assert_eq!(
        f["file"],
        path.as_str(),
        "drift findings point into the definition"
    );
    let (start, end) = (
        f["span"]["start"].as_u64().unwrap() as usize,
        f["span"]["end"].as_u64().unwrap() as usize,
    );
    let today: Value = serde_json::from_slice(&source).unwrap();
    let expected = today.pointer(pointer).unwrap();
    let spanned: Value = serde_json::from_slice(&source[start..end]).unwrap();
    assert_eq!(
        &spanned, expected,
        "the span covers the value at the pointer"
    );
    let severity = f["severity"].as_str().unwrap();
    assert_eq!(status, if severity == "error" { 3 } else { 0 });
    assert_eq!(report.get("version").is_none(), severity == "error");
    f["message"].as_str().unwrap().to_owned()
}

#[test]
fn no_change_is_no_drift() {
    let (tmp, version) = registered();
    let (status, report, _, _) = drift_json(tmp.path(), &version, |_| {});
    assert_eq!(status, 0);
    assert_eq!(report["findings"], json!([]));
    assert_eq!(report["version"], version.as_str());
    let human = lwirc(tmp.path(), &["drift", &version, "-d", "registered.json"]);
    assert_exit(&human, 0);
    assert!(stdout(&human).contains("pinned: 2 tools and 2 model slots; no drift"));
}

#[test]
fn each_kind_of_tool_change_is_named() {
    let (tmp, version) = registered();
    let dir = tmp.path();
    let message = one_finding(
        drift_json(dir, &version, |d| {
            d["tools"]["github.add_label"]["description"] = "Add or create a label.".into()
        }),
        "LW701",
        "/tools/github.add_label/description",
    );
    assert!(
        message.starts_with("tool `github.add_label`: description changed since sha256:"),
        "{message}"
    );
    one_finding(
        drift_json(dir, &version, |d| {
            d["tools"]["github.add_label"]["input"]["required"] = json!(["repo", "number"])
        }),
        "LW702",
        "/tools/github.add_label/input",
    );
    one_finding(
        drift_json(dir, &version, |d| {
            d["tools"]["github.list_issues"]["output"]["required"] = json!([])
        }),
        "LW703",
        "/tools/github.list_issues/output",
    );
    let message = one_finding(
        drift_json(dir, &version, |d| {
            d["tools"]
                .as_object_mut()
                .unwrap()
                .remove("github.add_label");
        }),
        "LW704",
        "/tools",
    );
    assert!(
        message.contains("tool `github.add_label`: removed"),
        "{message}"
    );
}

#[test]
fn each_kind_of_model_slot_change_is_named() {
    let (tmp, version) = registered();
    let dir = tmp.path();
    let message = one_finding(
        drift_json(dir, &version, |d| {
            d["models"].as_object_mut().unwrap().remove("fast");
        }),
        "LW705",
        "/models",
    );
    assert!(message.contains("model slot `fast`: removed"), "{message}");
    let message = one_finding(
        drift_json(dir, &version, |d| {
            d["models"]["deep"]["model"] = "acme/large-6".into()
        }),
        "LW706",
        "/models/deep/model",
    );
    assert!(
        message.contains("model changed from `acme/large-5` to `acme/large-6`"),
        "{message}"
    );
    let message = one_finding(
        drift_json(dir, &version, |d| {
            d["models"]["fast"]["quality"] = "basic".into()
        }),
        "LW707",
        "/models/fast/quality",
    );
    assert!(
        message.contains("quality lowered from `standard` to `basic`"),
        "{message}"
    );
    let message = one_finding(
        drift_json(dir, &version, |d| {
            d["models"]["fast"]["quality"] = "frontier".into()
        }),
        "LW707",
        "/models/fast/quality",
    );
    assert!(message.contains("quality raised"), "{message}");
    let message = one_finding(
        drift_json(dir, &version, |d| {
            d["models"]["deep"]["capabilities"] = json!(["json_output"])
        }),
        "LW708",
        "/models/deep/capabilities",
    );
    assert!(message.contains("lost capability `tool_use`"), "{message}");
    let message = one_finding(
        drift_json(dir, &version, |d| {
            d["models"]["deep"]["context_tokens"] = 100_000.into()
        }),
        "LW709",
        "/models/deep/context_tokens",
    );
    assert!(
        message.contains("context window reduced from `200000` to `100000` tokens"),
        "{message}"
    );
    // A change that weakens nothing is a warning, and not drift.
    one_finding(
        drift_json(dir, &version, |d| {
            d["models"]["fast"]["capabilities"] = json!(["json_output", "vision"]);
            d["models"]["fast"]["context_tokens"] = 64_000.into();
        }),
        "LW710",
        "/models/fast",
    );
}

#[test]
fn changes_to_what_the_version_does_not_use_are_not_drift() {
    let (tmp, version) = registered();
    let (status, report, _, _) = drift_json(tmp.path(), &version, |d| {
        d["tools"]["github.close_issue"]["input"] = json!({ "type": "object" });
        d["tools"]["github.close_issue"]["description"] = "Close it.".into();
        d["models"]["spare"]["quality"] = "standard".into();
        d["goal"] = "Something else.".into();
        d["planner"]["system"] = "Another prompt.".into();
        d["limits"]["max_steps"] = 50.into();
    });
    assert_eq!(status, 0, "{report:#}");
    assert_eq!(report["findings"], json!([]));
    let (status, report, _, _) = drift_json(tmp.path(), &version, |d| {
        d["tools"]
            .as_object_mut()
            .unwrap()
            .remove("github.close_issue");
        d["models"].as_object_mut().unwrap().remove("spare");
    });
    assert_eq!(status, 0, "{report:#}");
}

#[test]
fn several_changes_give_one_finding_each_in_every_format() {
    let (tmp, version) = registered();
    let mut today = definition();
    today["tools"]["github.add_label"]["input"]["required"] = json!(["repo"]);
    today["models"]["fast"]["quality"] = "basic".into();
    let path = write_json(tmp.path(), "today.json", &today);

    let human = lwirc(tmp.path(), &["drift", &version, "-d", &path]);
    assert_exit(&human, 3);
    let text = stdout(&human);
    assert!(text.contains("LW702/tool-input-changed"), "{text}");
    assert!(text.contains("LW707/model-quality-changed"), "{text}");
    assert!(
        text.contains("pinned: 2 tools and 2 model slots; drifted"),
        "{text}"
    );

    let json = lwirc(
        tmp.path(),
        &["drift", &version, "-d", &path, "--format", "json"],
    );
    assert_exit(&json, 3);
    let report: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(report["summary"], json!({ "errors": 2, "warnings": 0 }));

    let sarif = lwirc(
        tmp.path(),
        &["drift", &version, "-d", &path, "--format", "sarif"],
    );
    assert_exit(&sarif, 3);
    let log: Value = serde_json::from_str(&stdout(&sarif)).unwrap();
    // The OASIS schema's `run.language` pattern ends in an unbalanced `]`, a literal in
    // ECMA-262 regexes but an error for Rust's regex engines: escape it, change nothing else.
    let text = include_str!("../data/sarif-schema-2.1.0.json")
        .replace(r#"[a-zA-Z]{2}]?$"#, r#"[a-zA-Z]{2}\\]?$"#);
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&log).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let results = log["runs"][0]["results"].as_array().unwrap();
    let rules: Vec<&str> = results
        .iter()
        .map(|r| r["ruleId"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        ["LW707", "LW702"],
        "in reading order of the definition"
    );
    let location = &results[1]["locations"][0]["physicalLocation"];
    let artifact = location["artifactLocation"]["index"].as_u64().unwrap() as usize;
    assert_eq!(
        log["runs"][0]["artifacts"][artifact]["location"]["uri"],
        path.as_str()
    );
}

#[test]
fn unknown_versions_and_unreadable_definitions_fail() {
    let (tmp, version) = registered();
    // Only one version is registered: a prefix with another first digit matches nothing.
    let absent = if version.starts_with("sha256:0") {
        "1"
    } else {
        "0"
    };
    let out = lwirc(tmp.path(), &["drift", absent, "-d", "registered.json"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("no registered version matches"));
    std::fs::write(
        tmp.path().join("broken.json"),
        br#"{"tools": {}, "tools": {}}"#,
    )
    .unwrap();
    let out = lwirc(tmp.path(), &["drift", &version, "-d", "broken.json"]);
    assert_exit(&out, 1);
    assert_stdout_has(&out, "LW002/duplicate-key");
    let out = lwirc(tmp.path(), &["drift", &version, "-d", "missing.json"]);
    assert_exit(&out, 2);
}

/// A record keeps the definition's own input and output schemas, whole, and drift reports
/// a change to either (LW711, LW712) at that schema.
#[test]
fn the_workflow_interface_is_recorded_and_its_changes_are_drift() {
    let (tmp, version) = registered();
    let show = lwirc(tmp.path(), &["registry", "show", &version[..15]]);
    assert_exit(&show, 0);
    let record: Value = serde_json::from_str(&stdout(&show)).unwrap();
    assert_eq!(record["interface"]["input"], definition()["input"]);
    assert_eq!(record["interface"]["output"], definition()["output"]);

    let message = one_finding(
        drift_json(tmp.path(), &version, |d| {
            d["input"]["required"] = json!(["repo", "since"]);
        }),
        "LW711",
        "/input",
    );
    assert!(
        message.contains("the workflow's input schema changed"),
        "{message}"
    );
    one_finding(
        drift_json(tmp.path(), &version, |d| {
            d["output"] = json!({ "type": "object" });
        }),
        "LW712",
        "/output",
    );
}
