//! Expression checks beyond the single-code fixtures: spans through JSON escapes, scopes,
//! the compiled plan and its cost bounds, data references in the cycle check.

use lwir_spec::Code;
use lwir_spec::document::read;

const DEFINITION: &str = r#"{
  "name": "w",
  "input": { "type": "object", "properties": { "repo": { "type": "string" } }, "required": ["repo"],
             "additionalProperties": false },
  "models": { "m": { "model": "x/y", "quality": "high", "capabilities": ["json_output"] } },
  "tools": {
    "list": { "description": "d", "input": { "type": "object", "properties": { "repo": { "type": "string" } } },
              "output": { "type": "object", "properties": {
                 "items": { "type": "array", "maxItems": 50,
                            "items": { "type": "object", "properties": { "number": { "type": "integer" }, "title": { "type": "string" } },
                                       "required": ["number", "title"], "additionalProperties": false } } },
                 "required": ["items"], "additionalProperties": false } },
    "label": { "description": "d", "input": { "type": "object", "properties": { "number": { "type": "integer" }, "label": { "type": "string" } },
                                              "required": ["number", "label"] },
               "output": {} }
  }
}"#;

fn findings(
    draft: &str,
) -> (
    Vec<lwir_spec::Finding>,
    lwir_validators::expr::Plan,
    Vec<u8>,
) {
    let doc = read(draft.as_bytes().to_vec())
        .document
        .expect("draft is JSON");
    let def = read(DEFINITION.as_bytes().to_vec())
        .document
        .expect("definition is JSON");
    let report = lwir_validators::run(&doc, Some(&def));
    (report.findings, report.plan, draft.as_bytes().to_vec())
}

fn draft(steps: &str) -> String {
    format!(r#"{{ "lwir": "1", "workflow": "w", "steps": [ {steps} ] }}"#)
}

#[test]
fn spans_point_at_the_characters_inside_the_string_after_escapes() {
    // `\n`, `\u00e9` and a surrogate-pair escape come before the misspelt property.
    let text = draft(
        r#"{ "id": "l", "kind": "tool.call", "tool": "list", "args": { "repo": "${ input.repo }" } },
           { "id": "m", "kind": "model.call", "model": "m", "output": {},
             "prompt": "caf\u00e9\n\ud83d\ude00 ${ steps.l.output.itemz }" }"#,
    );
    let (found, _, bytes) = findings(&text);
    let f = found
        .iter()
        .find(|f| f.code == Code::UnknownProperty)
        .expect("LW207");
    assert_eq!(&bytes[f.span.range()], b"itemz");
    assert_eq!(f.pointer, "/steps/1/prompt");
    assert_eq!(f.help.as_deref(), Some("did you mean `items`?"));
}

#[test]
fn the_example_shape_types_cleanly() {
    let text = draft(
        r#"{ "id": "l", "kind": "tool.call", "tool": "list", "args": { "repo": "${ input.repo }" } },
           { "id": "each", "kind": "map", "over": "${ steps.l.output.items }", "as": "issue",
             "steps": [ { "id": "t", "kind": "tool.call", "tool": "label",
                          "args": { "number": "${ issue.number }", "label": "${ issue.title.lower() }" } } ],
             "result": "${ issue.number * 2 }" },
           { "id": "n", "kind": "reduce", "over": "${ steps.each.output }", "init": 0, "acc": "acc", "as": "x",
             "with": "${ acc + x }" }"#,
    );
    let (found, plan, _) = findings(&text);
    assert!(found.is_empty(), "{found:#?}");
    let over = plan
        .entries
        .iter()
        .find(|p| p.pointer == "/steps/1/over")
        .unwrap();
    assert_eq!(over.kind, "expression");
    let root = over.root().unwrap();
    assert!(
        plan.type_of(root).unwrap().starts_with("list<"),
        "{root} in {:?}",
        plan.types
    );
    // `with` runs once per element of a list of at most 50 items.
    let result = plan
        .entries
        .iter()
        .find(|p| p.pointer == "/steps/1/result")
        .unwrap();
    assert!(result.cost >= 3, "{}", result.cost);
}

#[test]
fn macro_costs_multiply_by_the_list_bound() {
    let text = draft(
        r#"{ "id": "l", "kind": "tool.call", "tool": "list", "args": { "repo": "${ input.repo }" } },
           { "id": "m", "kind": "model.call", "model": "m", "output": {},
             "prompt": "${ steps.l.output.items.filter(i, i.number > 3).map(i, i.title).join(', ') }" }"#,
    );
    let (found, plan, _) = findings(&text);
    assert!(found.is_empty(), "{found:#?}");
    let prompt = plan
        .entries
        .iter()
        .find(|p| p.pointer == "/steps/1/prompt")
        .unwrap();
    // Two passes over at most 50 items, a few nodes each.
    assert!(prompt.cost >= 100 && prompt.cost < 1000, "{}", prompt.cost);
    assert_eq!(plan.type_of(prompt.root().unwrap()), Some("string"));
}

#[test]
fn data_references_close_cycles_with_after() {
    let text = draft(
        r#"{ "id": "a", "kind": "tool.call", "tool": "list", "args": { "repo": "${ input.repo }" }, "after": ["b"] },
           { "id": "b", "kind": "model.call", "model": "m", "output": {},
             "prompt": "${ size(steps.a.output.items) }" }"#,
    );
    let (found, _, _) = findings(&text);
    let cycle = found
        .iter()
        .find(|f| f.code == Code::DependencyCycle)
        .expect("LW603");
    assert_eq!(cycle.message, "dependency cycle: a → b → a");
    // The edge that closes the cycle is the finding; the others are related places.
    assert_eq!(cycle.pointer, "/steps/1/prompt");
    assert!(
        cycle
            .related
            .iter()
            .any(|r| r.message == "`a` runs after `b`"),
        "{cycle:#?}"
    );
}

#[test]
fn steps_in_a_branch_are_visible_after_it_as_maybe_absent() {
    let text = draft(
        r#"{ "id": "br", "kind": "branch", "cases": [ { "when": "${ size(input.repo) > 3 }", "steps": [
               { "id": "l", "kind": "tool.call", "tool": "list", "args": { "repo": "${ input.repo }" } } ] } ] },
           { "id": "m", "kind": "model.call", "model": "m", "output": {},
             "prompt": "${ size(steps.l.output.items) } / ${ has(steps.l.output) ? 1 : 0 }" }"#,
    );
    let (found, _, _) = findings(&text);
    let codes: Vec<Code> = found.iter().map(|f| f.code).collect();
    assert_eq!(codes, vec![Code::MaybeAbsentRead], "{found:#?}");
}

#[test]
fn sandbox_names_and_unknown_functions_are_distinct_findings() {
    let text = draft(
        r#"{ "id": "m", "kind": "model.call", "model": "m", "output": {},
             "prompt": "${ secrets.token } ${ process.env } ${ exec('ls') } ${ input.repo.reverse() }" }"#,
    );
    let (found, _, bytes) = findings(&text);
    let got: Vec<(Code, String)> = found
        .iter()
        .map(|f| {
            (
                f.code,
                String::from_utf8(bytes[f.span.range()].to_vec()).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (Code::SandboxEscape, "secrets".to_owned()),
            (Code::SandboxEscape, "process".to_owned()),
            (Code::SandboxEscape, "exec".to_owned()),
            (Code::UnknownFunction, "reverse".to_owned()),
        ]
    );
    assert!(
        found[0]
            .help
            .as_deref()
            .unwrap()
            .contains("pass the value in the workflow input instead")
    );
}

/// `"\n"` in the JSON file is a real line break inside the CEL string: the finding says so
/// and points at the `\n` in the file.
#[test]
fn a_json_line_break_inside_a_cel_string_is_named_at_its_escape() {
    let text = draft(
        r#"{ "id": "m", "kind": "model.call", "model": "m", "output": {},
             "prompt": "${ input.repo.split('\n').join(', ') }" }"#,
    );
    let (found, _, bytes) = findings(&text);
    let f = found
        .iter()
        .find(|f| f.code == Code::ExpressionSyntax)
        .unwrap_or_else(|| panic!("LW201 in {found:#?}"));
    assert_eq!(&bytes[f.span.range()], br"\n");
    assert_eq!(f.pointer, "/steps/0/prompt");
    assert!(
        f.message.contains("cannot contain a raw line break"),
        "{}",
        f.message
    );
    assert!(
        f.help.as_deref().is_some_and(|h| h.contains(r"`\\n`")),
        "{:?}",
        f.help
    );
}
