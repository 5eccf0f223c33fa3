//! `lwirc manifest` and the PlannerManifest comparison: the contract's field names, each
//! hash as `crates/lwir-spec/README.md` defines it (checked against an independent RFC 8785
//! implementation), and drift naming each differing field.

use crate::common;

use common::*;
use lwir_repair::manifest::{PlannerManifest, compare};
use serde_json::{Value, json};

/// `sha256:` of the RFC 8785 form of `value`, by `serde_json_canonicalizer`.
fn jcs_hash(value: &Value) -> String {
    lwir_spec::canon::sha256_of(&serde_json_canonicalizer::to_vec(value).unwrap())
}

fn manifest_of(dir: &std::path::Path, definition: &Value) -> Value {
    let path = write_json(dir, "workflow.json", definition);
    let out = lwirc(dir, &["manifest", &path]);
    assert_exit(&out, 0);
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn the_manifest_has_the_contract_fields_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let out = lwirc(tmp.path(), &["manifest", &example("workflow.json")]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let manifest: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = manifest.keys().map(String::as_str).collect();
    let mut sorted = [
        "harnessId",
        "plannerModelSlotId",
        "systemPromptHash",
        "skillsHash",
        "workflowDefinitionHash",
        "globalToolsHash",
        "memoryStoreIds",
    ];
    // Printed in contract order (the map above sorts its keys).
    let positions: Vec<usize> = sorted.iter().map(|k| text.find(k).unwrap()).collect();
    assert!(positions.is_sorted(), "{text}");
    sorted.sort_unstable();
    assert_eq!(keys, sorted);
}

#[test]
fn each_hash_is_over_the_canonical_json_of_its_part() {
    let tmp = tempfile::tempdir().unwrap();
    let mut definition = example_definition();
    definition["planner"]["memory_stores"] = json!(["triage-notes", "labels"]);
    definition["planner"]["skills"] = json!([
        { "name": "writing-loop-lwir", "description": "Bounded loops.", "x-body": "not frontmatter" },
        { "description": "Labels.", "name": "labelling" }
    ]);
    let manifest = manifest_of(tmp.path(), &definition);
    assert_eq!(
        manifest["harnessId"],
        format!("lwirc/{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(manifest["plannerModelSlotId"], "deep");
    assert_eq!(
        manifest["systemPromptHash"],
        jcs_hash(&definition["planner"]["system"])
    );
    assert_eq!(
        manifest["skillsHash"],
        jcs_hash(&json!([
            { "name": "writing-loop-lwir", "description": "Bounded loops." },
            { "name": "labelling", "description": "Labels." }
        ]))
    );
    assert_eq!(manifest["workflowDefinitionHash"], jcs_hash(&definition));
    assert_eq!(manifest["globalToolsHash"], jcs_hash(&definition["tools"]));
    assert_eq!(
        manifest["memoryStoreIds"],
        json!(["triage-notes", "labels"])
    );
    // workflowDefinitionHash is what `lwirc hash` prints for the definition.
    let hash = lwirc(tmp.path(), &["hash", "workflow.json"]);
    assert_eq!(stdout(&hash).trim(), manifest["workflowDefinitionHash"]);
}

#[test]
fn absent_parts_are_null_or_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let mut definition = example_definition();
    definition.as_object_mut().unwrap().remove("planner");
    let manifest = manifest_of(tmp.path(), &definition);
    assert_eq!(manifest["plannerModelSlotId"], Value::Null);
    assert_eq!(manifest["systemPromptHash"], jcs_hash(&Value::Null));
    assert_eq!(manifest["skillsHash"], jcs_hash(&json!([])));
    assert_eq!(manifest["memoryStoreIds"], json!([]));
}

#[test]
fn against_a_recorded_manifest_names_each_differing_field() {
    let tmp = tempfile::tempdir().unwrap();
    let recorded = lwirc(tmp.path(), &["manifest", &example("workflow.json")]);
    std::fs::write(tmp.path().join("recorded.json"), &recorded.stdout).unwrap();
    let same = lwirc(
        tmp.path(),
        &[
            "manifest",
            &example("workflow.json"),
            "--against",
            "recorded.json",
        ],
    );
    assert_exit(&same, 0);
    assert_eq!(same.stdout, recorded.stdout);

    let mut definition = example_definition();
    definition["tools"]["github.add_label"]["description"] = "Add labels.".into();
    definition["planner"]["skills"][0]["description"] = "Loops, bounded.".into();
    let path = write_json(tmp.path(), "today.json", &definition);
    let out = lwirc(
        tmp.path(),
        &["manifest", &path, "--against", "recorded.json"],
    );
    assert_exit(&out, 3);
    let text = stderr(&out);
    assert!(
        text.contains(
            "capability drift: skillsHash, workflowDefinitionHash, globalToolsHash changed"
        ),
        "{text}"
    );
    assert!(text.contains("  - globalToolsHash: sha256:"), "{text}");
    assert!(!text.contains("systemPromptHash"), "{text}");

    std::fs::write(tmp.path().join("bad.json"), b"{\"harnessId\": 1}").unwrap();
    let out = lwirc(tmp.path(), &["manifest", &path, "--against", "bad.json"]);
    assert_exit(&out, 2);
}

#[test]
fn capability_drift_error_names_the_fields() {
    let definition = |planner_model: &str, stores: Value| {
        let mut d = example_definition();
        d["planner"]["model"] = planner_model.into();
        d["planner"]["memory_stores"] = stores;
        let read = lwir_spec::document::read(serde_json::to_vec(&d).unwrap());
        PlannerManifest::of(read.document.unwrap().root(), "lwirc/test")
    };
    let recorded = definition("deep", json!(["a"]));
    assert_eq!(compare(&recorded, &recorded.clone()), Ok(()));
    let current = definition("fast", json!(["a", "b"]));
    let error = compare(&recorded, &current).unwrap_err();
    assert_eq!(
        error.fields(),
        [
            "plannerModelSlotId",
            "workflowDefinitionHash",
            "memoryStoreIds"
        ]
    );
    let message = error.to_string();
    for field in error.fields() {
        assert!(message.contains(field), "{message}");
    }
    assert_eq!(
        error.differences[2].to_string(),
        "memoryStoreIds: [a] → [a, b]"
    );
    let mut other_harness = recorded.clone();
    other_harness.harness_id = "lwirc/9.9.9".into();
    assert_eq!(
        compare(&recorded, &other_harness).unwrap_err().fields(),
        ["harnessId"]
    );
}

#[test]
fn a_definition_that_is_not_i_json_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let out = lwirc_with_stdin(tmp.path(), &["manifest", "-"], br#"{"a": 1, "a": 2}"#);
    assert_exit(&out, 1);
    assert_stderr_has(&out, "LW002/duplicate-key");
}
