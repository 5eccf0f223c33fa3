//! A workflow definition on its own: `lwirc validate -d workflow.json` without a draft, and
//! a definition read once for many drafts (`pipeline::Definition`).

use crate::common;

use std::sync::Arc;

use common::*;
use lwir_validators::pipeline::{self, Definition, Source};
use serde_json::{Value, json};

/// The example definition with three problems of its own: a planner naming a slot it does
/// not have (LW401), a tool input schema outside the subset (`if`), a model slot that is
/// not an object.
fn broken_definition() -> Value {
    let mut def = example_definition();
    def["planner"]["model"] = json!("huge");
    def["tools"]["github.list_issues"]["input"]["if"] = json!({ "required": ["repo"] });
    def
}

fn report(out: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

#[test]
fn a_clean_definition_validates_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let out = lwirc(dir.path(), &["validate", "-d", &example("workflow.json")]);
    assert_exit(&out, 0);
    assert_stdout_has(&out, "no problems found");
}

#[test]
fn a_definition_alone_reports_its_own_findings_against_itself() {
    let dir = tempfile::tempdir().unwrap();
    let def = write_json(dir.path(), "workflow.json", &broken_definition());
    let out = lwirc(dir.path(), &["validate", "-d", &def, "--format", "json"]);
    assert_exit(&out, 1);
    let alone = report(&out);
    assert_eq!(alone["file"], def.as_str());
    assert!(alone.get("version").is_none());
    let findings = alone["findings"].as_array().unwrap();
    let codes: Vec<&str> = findings
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"LW401"), "{codes:?}");
    assert!(codes.contains(&"LW107"), "{codes:?}");
    assert!(
        findings.iter().all(|f| f["file"] == def.as_str()),
        "{alone}"
    );

    // The same findings a draft validated against it carries for the definition.
    let draft = write_json(dir.path(), "draft.json", &example_draft());
    let with = report(&lwirc(
        dir.path(),
        &["validate", &draft, "-d", &def, "--format", "json"],
    ));
    let of_definition: Vec<&Value> = with["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["file"] == def.as_str())
        .collect();
    assert_eq!(of_definition, findings.iter().collect::<Vec<_>>());

    // SARIF names one file, the definition, with its length.
    let sarif: Value = serde_json::from_str(&stdout(&lwirc(
        dir.path(),
        &["validate", "-d", &def, "--format", "sarif"],
    )))
    .unwrap();
    let artifacts = sarif["runs"][0]["artifacts"].as_array().unwrap();
    assert_eq!(artifacts.len(), 1, "{artifacts:?}");
    assert_eq!(
        artifacts[0]["length"],
        std::fs::metadata(&def).unwrap().len()
    );
}

#[test]
fn without_draft_or_definition_validate_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = lwirc(dir.path(), &["validate"]);
    assert_exit(&out, 2);
    assert_stderr_has(&out, "<DRAFT>");
}

/// A definition read once gives every draft the findings and version that reading it
/// with each draft gives.
#[test]
fn a_definition_read_once_validates_many_drafts() {
    let bytes = serde_json::to_vec_pretty(&broken_definition()).unwrap();
    let source = || Source {
        name: "workflow.json".into(),
        bytes: bytes.clone(),
    };
    let definition = Arc::new(Definition::read(source()));
    let mut drafts = vec![example_draft()];
    let mut typo = example_draft();
    typo["steps"][0]["tool"] = json!("github.list_isues");
    drafts.push(typo);
    drafts.push(json!({ "lwir": "1" }));
    for draft in drafts {
        let draft = Source {
            name: "draft.json".into(),
            bytes: serde_json::to_vec_pretty(&draft).unwrap(),
        };
        let once = pipeline::validate_against(draft.clone(), &definition);
        let each = pipeline::validate(draft, Some(source()));
        assert_eq!(once.findings, each.findings);
        assert_eq!(once.version, each.version);
        assert_eq!(
            lwir_render::json::render(&once),
            lwir_render::json::render(&each)
        );
    }
}
