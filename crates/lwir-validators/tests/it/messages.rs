//! What finding messages say about types: summarised to a cap however large the type
//! (nested `$ref`s, wide objects), and, for value flows, the constraint that rejects.

use lwir_spec::document::read;
use lwir_spec::{Code, Finding};
use lwir_validators::types::MAX_SUMMARY_CHARS;
use serde_json::{Value, json};

/// A tool output schema whose `$defs` nest six levels deep, four properties each: 4⁶
/// leaves, tens of kilobytes when displayed in full.
fn nested_refs() -> Value {
    let mut defs = serde_json::Map::new();
    for level in 0..6 {
        let next = if level == 5 {
            json!({ "type": "string" })
        } else {
            json!({ "$ref": format!("#/$defs/level{}", level + 1) })
        };
        let properties: serde_json::Map<String, Value> = ["alpha", "beta", "gamma", "delta"]
            .iter()
            .map(|p| (format!("{p}_{level}"), next.clone()))
            .collect();
        defs.insert(
            format!("level{level}"),
            json!({ "type": "object", "properties": properties }),
        );
    }
    json!({ "$defs": defs, "$ref": "#/$defs/level0" })
}

/// A recursive schema: a tree whose nodes hold lists of nodes.
fn recursive_ref() -> Value {
    json!({
        "$defs": { "node": { "type": "object", "properties": {
            "name": { "type": "string" },
            "children": { "type": "array", "items": { "$ref": "#/$defs/node" } },
            "parent": { "$ref": "#/$defs/node" } },
            "required": ["name"] } },
        "$ref": "#/$defs/node"
    })
}

/// An object of 300 properties, each an object of three.
fn wide_object() -> Value {
    let properties: serde_json::Map<String, Value> = (0..300)
        .map(|i| {
            (
                format!("field_{i:03}"),
                json!({ "type": "object", "properties": {
                    "a": { "type": "integer" }, "b": { "type": "string" }, "c": { "type": "boolean" } } }),
            )
        })
        .collect();
    json!({ "type": "object", "properties": properties })
}

fn definition(tools: Value) -> String {
    json!({
        "name": "w",
        "input": { "type": "object", "properties": { "repo": { "type": "string" } },
                   "required": ["repo"], "additionalProperties": false },
        "models": { "m": { "model": "x/y", "quality": "high", "capabilities": ["json_output"] } },
        "tools": tools
    })
    .to_string()
}

fn run(definition: &str, steps: Value) -> Vec<Finding> {
    let draft = json!({ "lwir": "1", "workflow": "w", "steps": steps }).to_string();
    let doc = read(draft.into_bytes()).document.expect("draft is JSON");
    let def = read(definition.as_bytes().to_vec())
        .document
        .expect("definition is JSON");
    lwir_validators::run(&doc, Some(&def)).findings
}

fn big_tools() -> Value {
    let tool = |output: Value| json!({ "description": "d", "input": { "type": "object" }, "output": output });
    json!({
        "nested": tool(nested_refs()),
        "tree": tool(recursive_ref()),
        "wide": tool(wide_object()),
        "post": { "description": "d",
                  "input": { "type": "object", "properties": { "body": { "type": "string" } }, "required": ["body"] },
                  "output": {} }
    })
}

/// Every place a type is shown — LW207, LW208, LW209, LW501 — stays under the cap for each
/// of the large types, and says which structure it elided.
#[test]
fn large_types_are_summarised_in_every_message() {
    let def = definition(big_tools());
    for tool in ["nested", "tree", "wide"] {
        let out = "${ steps.t.output }";
        let steps = json!([
            { "id": "t", "kind": "tool.call", "tool": tool, "args": {} },
            { "id": "m", "kind": "model.call", "model": "m", "output": {},
              "prompt": format!("Summarise {out}") },
            { "id": "p", "kind": "tool.call", "tool": "post", "when": out, "args": { "body": out } },
            { "id": "r", "kind": "tool.call", "tool": "post",
              "args": { "body": "${ steps.t.output.no_such_field }" } }
        ]);
        let found = run(&def, steps);
        let codes: Vec<Code> = found.iter().map(|f| f.code).collect();
        for code in [
            Code::NonScalarInTemplate,
            Code::TypeMismatch,
            Code::IncompatibleValueFlow,
            Code::UnknownProperty,
        ] {
            assert!(codes.contains(&code), "{tool}: no {code:?} in {found:#?}");
        }
        for f in &found {
            let n = f.message.chars().count();
            assert!(
                n < MAX_SUMMARY_CHARS * 2 + 150,
                "{tool}: {:?} is {n} characters: {}",
                f.code,
                f.message
            );
            if let Some(help) = &f.help {
                assert!(help.chars().count() < MAX_SUMMARY_CHARS * 2 + 150, "{help}");
            }
        }
        let template = found
            .iter()
            .find(|f| f.code == Code::NonScalarInTemplate)
            .unwrap();
        assert!(
            template
                .message
                .starts_with("a template cannot interpolate object{")
        );
        let shown = match tool {
            // Nested objects past a depth, and the fifth property on, are elided.
            "nested" => "object{…}, …",
            // The recursive occurrence.
            "tree" => "opaque",
            _ => ", …",
        };
        assert!(
            template.message.contains(shown),
            "{tool}: {}",
            template.message
        );
    }
}

/// LW501 names the consumer's keyword that rejects, where in the value, and the value —
/// also where both sides display as the same kind (`string` into `string`).
#[test]
fn incompatible_flows_name_the_rejecting_constraint_and_the_value() {
    let def = json!({
        "name": "w",
        "input": { "type": "object", "additionalProperties": false,
                   "required": ["text", "count", "tags", "meta", "score"],
                   "properties": {
            "text": { "type": "string" },
            "count": { "type": "integer" },
            "score": { "type": "number", "minimum": 0 },
            "tags": { "type": "array", "items": { "type": "string" } },
            "meta": { "type": "object", "properties": { "title": { "type": "string" } },
                      "additionalProperties": false } } },
        "models": { "m": { "model": "x/y", "quality": "high", "capabilities": ["json_output"] } },
        "tools": { "strict": { "description": "d", "output": {}, "input": { "type": "object", "properties": {
            "min_length": { "type": "string", "minLength": 3 },
            "max_length": { "type": "string", "maxLength": 0 },
            "pattern": { "type": "string", "pattern": "^[a-z]+$" },
            "maximum": { "type": "integer", "maximum": 10 },
            "exclusive": { "type": "number", "exclusiveMinimum": 0 },
            "enum": { "enum": ["bug", "feature"] },
            "type": { "type": "integer" },
            "max_items": { "type": "array", "maxItems": 2 },
            "nested": { "type": "array", "items": { "type": "string", "minLength": 1 } },
            "required": { "type": "object", "required": ["title"] },
            "deep": { "type": "object", "properties": { "title": { "type": "string", "minLength": 5 } } },
            "closed": { "type": "object", "properties": {}, "additionalProperties": false },
            "any_of": { "anyOf": [ { "type": "integer" }, { "type": "null" } ] }
        } } } }
    })
    .to_string();
    let args = json!({
        "min_length": "${ input.text }",
        "max_length": "${ input.text }",
        "pattern": "${ input.text }",
        "maximum": "${ input.count }",
        "exclusive": "${ input.score }",
        "enum": "${ input.text }",
        "type": "${ input.text }",
        "max_items": "${ input.tags }",
        "nested": "${ input.tags }",
        "required": "${ input.meta }",
        "deep": "${ input.meta }",
        "closed": "${ {'x': 1} }",
        "any_of": "${ input.text }"
    });
    let found = run(
        &def,
        json!([{ "id": "t", "kind": "tool.call", "tool": "strict", "args": args }]),
    );
    let message = |arg: &str| {
        let at = format!("/steps/0/args/{arg}");
        found
            .iter()
            .find(|f| f.pointer == at && f.code == Code::IncompatibleValueFlow)
            .map(|f| f.message.clone())
            .unwrap_or_else(|| panic!("no LW501 at {at} in {found:#?}"))
    };
    for (arg, says) in [
        (
            "min_length",
            "it gives string, which the consumer's `minLength: 3` does not accept (e.g. \"\")",
        ),
        ("max_length", "`maxLength: 0` does not accept (e.g. \"a\")"),
        (
            "pattern",
            "`pattern: \"^[a-z]+$\"` does not accept (e.g. \"\")",
        ),
        ("maximum", "`maximum: 10` does not accept (e.g. 11)"),
        (
            "exclusive",
            "it gives number(minimum: 0), which the consumer's `exclusiveMinimum: 0` does not accept (e.g. 0)",
        ),
        ("enum", "`enum` (\"bug\" | \"feature\") does not accept"),
        ("type", "`type: integer` does not accept (e.g. \"\")"),
        ("max_items", "`maxItems: 2` does not accept"),
        (
            "nested",
            "`minLength: 1` at `/0` does not accept (e.g. [\"\"])",
        ),
        ("required", "`required` (`title`) does not accept (e.g. {})"),
        (
            "deep",
            "`minLength: 5` at `/title` does not accept (e.g. {\"title\":\"\"})",
        ),
        (
            "closed",
            "`additionalProperties: false` at `/x` does not accept",
        ),
        (
            "any_of",
            "`anyOf` (integer | null) does not accept (e.g. \"\")",
        ),
    ] {
        let m = message(arg);
        assert!(m.contains(says), "{arg}: {m}\n  wanted: {says}");
        assert!(!m.contains("which accepts"), "{arg}: {m}");
    }
}
