//! Graph checks that the single-code fixture corpus cannot show: findings of two codes on
//! one step.

use lwir_spec::Code;
use lwir_spec::document::read;

fn codes(draft: &str) -> Vec<(Code, String)> {
    let doc = read(draft.as_bytes().to_vec()).document.unwrap();
    lwir_validators::validate(&doc, None)
        .into_iter()
        .filter(|f| f.code != Code::DefinitionNotProvided)
        .map(|f| (f.code, f.pointer))
        .collect()
}

#[test]
fn after_entries_of_a_step_with_a_repeated_id_are_still_checked() {
    let draft = r#"{ "lwir": "1", "workflow": "w", "steps": [
        { "id": "a", "kind": "tool.call", "tool": "t" },
        { "id": "a", "kind": "tool.call", "tool": "t", "after": ["nope"] } ] }"#;
    assert_eq!(
        codes(draft),
        vec![
            (Code::DuplicateStepId, "/steps/1/id".to_owned()),
            (Code::DanglingAfter, "/steps/1/after/0".to_owned()),
        ]
    );
}

#[test]
fn after_entries_of_a_step_without_an_id_are_still_checked() {
    let draft = r#"{ "lwir": "1", "workflow": "w", "steps": [
        { "kind": "tool.call", "tool": "t", "after": ["nope"] } ] }"#;
    assert_eq!(
        codes(draft),
        vec![
            (Code::MissingField, "/steps/0".to_owned()),
            (Code::DanglingAfter, "/steps/0/after/0".to_owned()),
        ]
    );
}

#[test]
fn every_cycle_through_new_steps_is_reported_once() {
    // Two cycles sharing `b`, and a third that only repeats steps already shown.
    let draft = r#"{ "lwir": "1", "workflow": "w", "steps": [
        { "id": "a", "kind": "tool.call", "tool": "t", "after": ["b"] },
        { "id": "b", "kind": "tool.call", "tool": "t", "after": ["a", "c"] },
        { "id": "c", "kind": "tool.call", "tool": "t", "after": ["b", "a"] } ] }"#;
    let cycles: Vec<String> = codes(draft)
        .into_iter()
        .filter(|(c, _)| *c == Code::DependencyCycle)
        .map(|(_, p)| p)
        .collect();
    assert_eq!(
        cycles,
        vec!["/steps/1/after/0".to_owned(), "/steps/2/after/0".to_owned()]
    );
}
