//! Arbitrary bytes as a goal file (the strict reader, the meta-schema, the typed view, the
//! checks of generation 0) and as a planner's `apply` proposal (the proposal schema and the
//! seven invariants' checks against an active generation), with the catalog of
//! `examples/goals/goal.json` and the issue-triage interface.
//!
//! Never panics; every finding's span lies inside the bytes, and a plan is returned exactly
//! when there is no error.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use lwir_goals::catalog::Template;
use lwir_goals::check::{self, Active, Bounds, Mode};
use lwir_goals::file::{self, ItemSpec, TemplateRef};
use lwir_spec::{Finding, SpannedDocument};

const GOAL: &[u8] = include_bytes!("../../examples/goals/goal.json");

fn catalog() -> (BTreeMap<String, TemplateRef>, BTreeMap<String, Template>) {
    let goal = file::read(GOAL.to_vec()).file.expect("the example goal file is valid");
    let definition: serde_json::Value =
        serde_json::from_slice(lwirc_fuzz::DEFINITION).expect("the example definition is JSON");
    let templates = goal
        .templates
        .iter()
        .map(|(name, t)| {
            let template = Template {
                version: t.version.clone(),
                workflow: "issue-triage".into(),
                description: None,
                input: definition["input"].clone(),
                output: definition["output"].clone(),
                lwir: serde_json::Value::Null,
            };
            (name.clone(), template)
        })
        .collect();
    (goal.templates, templates)
}

fn spans_inside(document: &SpannedDocument, findings: &[Finding]) {
    let len = document.source().len();
    for f in findings {
        assert!(
            f.span.start() <= f.span.end() && f.span.end() <= len,
            "{} {} span {:?} outside {len} bytes",
            f.code,
            f.pointer,
            f.span
        );
    }
}

fuzz_target!(init: lwirc_fuzz::init(), |data: &[u8]| {
    let (refs, templates) = catalog();
    let input = serde_json::json!({ "repo": "acme/widgets" });
    // As a goal file.
    let read = file::read(data.to_vec());
    if let Some(document) = &read.document {
        spans_inside(document, &read.findings);
        if let Some(goal) = &read.file {
            let cx = check::Context {
                document,
                catalog: &refs,
                templates: &templates,
                goal_input: &goal.input,
                mode: Mode::Initial,
            };
            let (findings, plan) = check::check(&cx, &goal.work, &goal.root);
            spans_inside(document, &findings);
            assert_eq!(plan.is_some(), !findings.iter().any(Finding::is_error));
        }
    }
    // As a proposal.
    let read = lwir_spec::document::read(data.to_vec());
    let Some(document) = read.document else { return };
    let shape = lwir_validators::shape::check_proposal(&document);
    spans_inside(&document, &shape);
    if shape.iter().any(Finding::is_error) || read.findings.iter().any(Finding::is_error) {
        return;
    }
    let Some(Ok(items)) = document
        .root()
        .get("items")
        .map(|n| serde_json::from_value::<Vec<ItemSpec>>(n.to_json()))
    else {
        return;
    };
    let root = document.root().get("root").and_then(|r| r.as_str()).unwrap_or_default().to_owned();
    let cx = check::Context {
        document: &document,
        catalog: &refs,
        templates: &templates,
        goal_input: &input,
        mode: Mode::Proposal {
            active: vec![Active { key: "triage".into(), id: "triage-62ee20577966".into(), template: "triage".into() }],
            bounds: Bounds {
                max_items_per_plan: 2,
                max_planned_items: 4,
                planned_items: 0,
                max_replans: 2,
                replans_used: 1,
                max_total_attempts: 6,
                attempts_used: 2,
                wall_time_left_s: 3600,
                adaptation: false,
            },
        },
    };
    let (findings, plan) = check::check(&cx, &items, &root);
    spans_inside(&document, &findings);
    assert_eq!(plan.is_some(), !findings.iter().any(Finding::is_error));
});
