//! Producer ⊆ consumer compatibility on JSON Schema pairs.
//!
//! `schema_pairs` holds pairs written as JSON text with the expected answer; for every
//! Incompatible answer the `jsonschema` crate confirms that the counterexample is valid under
//! the producer and invalid under the consumer. The property test does the same on generated
//! pairs, and for Compatible answers draws producer values and checks the consumer takes them.

use std::time::Instant;

use lwir_validators::compat::{Compat, check};
use lwir_validators::types::Ty;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};

/// `(name, producer, consumer, expected)`. `expected` is `compatible`, `incompatible` (any
/// counterexample), `incompatible <json>` (exactly that one) or `unknown <text in reason>`.
const CASES: &[(&str, &str, &str, &str)] = &[
    // Objects: open vs closed, required, property types, rests, counts.
    (
        "open object into a closed one",
        r#"{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}"#,
        r#"{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}"#,
        r#"incompatible {"a": "", "extra": null}"#,
    ),
    (
        "closed object into a closed one",
        r#"{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}"#,
        r#"{"type": "object", "properties": {"a": {"type": "string"}, "b": {}}, "additionalProperties": false}"#,
        "compatible",
    ),
    (
        "closed object into an open one",
        r#"{"type": "object", "properties": {"a": {"const": 1}}, "additionalProperties": false}"#,
        r#"{"type": "object", "properties": {"a": {"type": "integer"}}}"#,
        "compatible",
    ),
    (
        "optional property into a required one",
        r#"{"type": "object", "properties": {"a": {"type": "string"}}}"#,
        r#"{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}"#,
        "incompatible {}",
    ),
    (
        "required property into an optional one",
        r#"{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}"#,
        r#"{"type": "object", "properties": {"a": {"type": "string"}}}"#,
        "compatible",
    ),
    (
        "nested property of another type",
        r#"{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}}, "required": ["a"]}"#,
        r#"{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}}"#,
        r#"incompatible {"a": {"b": 0}}"#,
    ),
    (
        "typed additionalProperties into wider ones",
        r#"{"type": "object", "additionalProperties": {"type": "integer"}}"#,
        r#"{"type": "object", "additionalProperties": {"type": "number"}}"#,
        "compatible",
    ),
    (
        "typed additionalProperties into narrower ones",
        r#"{"type": "object", "additionalProperties": {"type": "number"}}"#,
        r#"{"type": "object", "additionalProperties": {"type": "integer"}}"#,
        r#"incompatible {"extra": 0.5}"#,
    ),
    (
        "open rest into a declared property",
        r#"{"type": "object"}"#,
        r#"{"type": "object", "properties": {"a": {"type": "string"}}}"#,
        r#"incompatible {"a": null}"#,
    ),
    (
        "minProperties",
        r#"{"type": "object"}"#,
        r#"{"type": "object", "minProperties": 1}"#,
        "incompatible {}",
    ),
    (
        "maxProperties within",
        r#"{"type": "object", "maxProperties": 2}"#,
        r#"{"type": "object", "maxProperties": 3}"#,
        "compatible",
    ),
    (
        "maxProperties on an open producer",
        r#"{"type": "object"}"#,
        r#"{"type": "object", "maxProperties": 1}"#,
        r#"incompatible {"extra": null, "extra2": null}"#,
    ),
    (
        "required properties satisfy minProperties",
        r#"{"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"]}"#,
        r#"{"type": "object", "minProperties": 2}"#,
        "compatible",
    ),
    // Enums, consts, literals.
    (
        "the triage label",
        r#"{"type": "object", "properties": {"label": {"enum": ["bug", "feature", "question"]}}, "required": ["label"]}"#,
        r#"{"type": "object", "properties": {"label": {"enum": ["bug", "feature"]}}, "required": ["label"]}"#,
        r#"incompatible {"label": "question"}"#,
    ),
    (
        "enum into a larger enum",
        r#"{"enum": ["bug"]}"#,
        r#"{"enum": ["bug", "feature"]}"#,
        "compatible",
    ),
    (
        "const into an enum",
        r#"{"const": "bug"}"#,
        r#"{"enum": ["bug", "feature"]}"#,
        "compatible",
    ),
    (
        "const into its base type",
        r#"{"const": "x"}"#,
        r#"{"type": "string", "maxLength": 1}"#,
        "compatible",
    ),
    (
        "const out of range",
        r#"{"const": 3}"#,
        r#"{"type": "integer", "maximum": 2}"#,
        "incompatible 3",
    ),
    (
        "string into an enum",
        r#"{"type": "string"}"#,
        r#"{"enum": ["a", "b"]}"#,
        r#"incompatible """#,
    ),
    (
        "boolean into both boolean literals",
        r#"{"type": "boolean"}"#,
        r#"{"enum": [true, false]}"#,
        "compatible",
    ),
    (
        "boolean into one literal",
        r#"{"type": "boolean"}"#,
        r#"{"const": true}"#,
        "incompatible false",
    ),
    (
        "1.0 is an integer",
        r#"{"const": 1.0}"#,
        r#"{"type": "integer"}"#,
        "compatible",
    ),
    (
        "enum of integers into a range",
        r#"{"enum": [1, 2]}"#,
        r#"{"type": "integer", "minimum": 1, "maximum": 2}"#,
        "compatible",
    ),
    (
        "small integer range into an enum",
        r#"{"type": "integer", "minimum": 1, "maximum": 3}"#,
        r#"{"enum": [3, 2, 1]}"#,
        "compatible",
    ),
    // Numbers.
    (
        "integer into number",
        r#"{"type": "integer"}"#,
        r#"{"type": "number"}"#,
        "compatible",
    ),
    (
        "number into integer",
        r#"{"type": "number"}"#,
        r#"{"type": "integer"}"#,
        "incompatible 0.5",
    ),
    (
        "narrower integer range",
        r#"{"type": "integer", "minimum": 1, "maximum": 5}"#,
        r#"{"type": "integer", "minimum": 0, "maximum": 10}"#,
        "compatible",
    ),
    (
        "integer into minimum 0",
        r#"{"type": "integer"}"#,
        r#"{"type": "integer", "minimum": 0}"#,
        "incompatible -1",
    ),
    (
        "maximum 10 into maximum 5",
        r#"{"type": "integer", "maximum": 10}"#,
        r#"{"type": "integer", "maximum": 5}"#,
        "incompatible 6",
    ),
    (
        "exclusiveMinimum into minimum",
        r#"{"type": "number", "exclusiveMinimum": 0}"#,
        r#"{"type": "number", "minimum": 0}"#,
        "compatible",
    ),
    (
        "minimum into exclusiveMinimum",
        r#"{"type": "number", "minimum": 0}"#,
        r#"{"type": "number", "exclusiveMinimum": 0}"#,
        "incompatible 0",
    ),
    (
        "maximum into exclusiveMaximum",
        r#"{"type": "number", "maximum": 1}"#,
        r#"{"type": "number", "exclusiveMaximum": 1}"#,
        "incompatible 1",
    ),
    (
        "integers above 0 start at 1",
        r#"{"type": "integer", "exclusiveMinimum": 0}"#,
        r#"{"type": "integer", "minimum": 1}"#,
        "compatible",
    ),
    (
        "bounded number into integer",
        r#"{"type": "number", "minimum": 2, "maximum": 3}"#,
        r#"{"type": "integer"}"#,
        "incompatible 2.5",
    ),
    (
        "integer range split across anyOf",
        r#"{"type": "integer", "minimum": 0, "maximum": 10}"#,
        r#"{"anyOf": [{"type": "integer", "minimum": 0, "maximum": 5}, {"type": "integer", "minimum": 6, "maximum": 10}]}"#,
        "compatible",
    ),
    (
        "number range covered only jointly",
        r#"{"type": "number", "minimum": 0, "maximum": 10}"#,
        r#"{"anyOf": [{"type": "number", "maximum": 5}, {"type": "number", "minimum": 5}]}"#,
        "unknown together is not decided",
    ),
    // Strings.
    (
        "minLength into string",
        r#"{"type": "string", "minLength": 1}"#,
        r#"{"type": "string"}"#,
        "compatible",
    ),
    (
        "string into minLength",
        r#"{"type": "string"}"#,
        r#"{"type": "string", "minLength": 1}"#,
        r#"incompatible """#,
    ),
    (
        "maxLength 10 into maxLength 5",
        r#"{"type": "string", "maxLength": 10}"#,
        r#"{"type": "string", "maxLength": 5}"#,
        r#"incompatible "aaaaaa""#,
    ),
    (
        "lengths within",
        r#"{"type": "string", "minLength": 2, "maxLength": 3}"#,
        r#"{"type": "string", "minLength": 1, "maxLength": 5}"#,
        "compatible",
    ),
    (
        "lengths count code points",
        r#"{"enum": ["éé", "😀"]}"#,
        r#"{"type": "string", "maxLength": 2}"#,
        "compatible",
    ),
    (
        "the same pattern",
        r#"{"type": "string", "pattern": "^[a-z]+$", "maxLength": 4}"#,
        r#"{"type": "string", "pattern": "^[a-z]+$"}"#,
        "compatible",
    ),
    (
        "producer pattern, consumer none",
        r#"{"type": "string", "pattern": "^[a-z]+$"}"#,
        r#"{"type": "string"}"#,
        "compatible",
    ),
    (
        "consumer pattern, producer none",
        r#"{"type": "string"}"#,
        r#"{"type": "string", "pattern": "^[a-z]+$"}"#,
        r#"incompatible """#,
    ),
    (
        "consumer pattern that matches everything",
        r#"{"type": "string"}"#,
        r#"{"type": "string", "pattern": "a*"}"#,
        "unknown the consumer's `pattern` `a*`",
    ),
    (
        "two patterns with a counterexample",
        r#"{"type": "string", "pattern": "^[a-z]+$"}"#,
        r#"{"type": "string", "pattern": "^[a-z]{1,5}$"}"#,
        "incompatible",
    ),
    (
        "two different patterns",
        r#"{"type": "string", "pattern": "^ab"}"#,
        r#"{"type": "string", "pattern": "^a"}"#,
        "unknown two different `pattern`s",
    ),
    (
        "pattern producer into maxLength",
        r#"{"type": "string", "pattern": "^[0-9]+$"}"#,
        r#"{"type": "string", "maxLength": 3}"#,
        r#"incompatible "0000""#,
    ),
    (
        "pattern producer into another kind",
        r#"{"type": "string", "pattern": "^[a-z]+-[0-9]{2}$"}"#,
        r#"{"type": "integer"}"#,
        r#"incompatible "a-00""#,
    ),
    (
        "format is an annotation",
        r#"{"type": "string", "format": "email"}"#,
        r#"{"type": "string", "format": "uri"}"#,
        "compatible",
    ),
    // Arrays.
    (
        "items into wider items",
        r#"{"type": "array", "items": {"type": "string"}}"#,
        r#"{"type": "array", "items": {"type": ["string", "null"]}}"#,
        "compatible",
    ),
    (
        "number items into integer items",
        r#"{"type": "array", "items": {"type": "number"}, "minItems": 1}"#,
        r#"{"type": "array", "items": {"type": "integer"}}"#,
        "incompatible [0.5]",
    ),
    (
        "minItems",
        r#"{"type": "array"}"#,
        r#"{"type": "array", "minItems": 1}"#,
        "incompatible []",
    ),
    (
        "maxItems",
        r#"{"type": "array", "maxItems": 3}"#,
        r#"{"type": "array", "maxItems": 2}"#,
        "incompatible [null, null, null]",
    ),
    (
        "uniqueItems on the consumer only",
        r#"{"type": "array", "items": {"type": "integer"}}"#,
        r#"{"type": "array", "uniqueItems": true}"#,
        "incompatible [0, 0]",
    ),
    (
        "uniqueItems on both",
        r#"{"type": "array", "items": {"type": "integer"}, "uniqueItems": true}"#,
        r#"{"type": "array", "uniqueItems": true}"#,
        "compatible",
    ),
    (
        "distinct constants cannot repeat",
        r#"{"type": "array", "prefixItems": [{"const": 1}, {"const": 2}], "items": false}"#,
        r#"{"type": "array", "uniqueItems": true}"#,
        "compatible",
    ),
    (
        "tuple into a wider tuple",
        r#"{"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}"#,
        r#"{"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]}"#,
        "compatible",
    ),
    (
        "tuple position of another type",
        r#"{"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}"#,
        r#"{"type": "array", "prefixItems": [{"type": "string"}, {"type": "string"}]}"#,
        r#"incompatible ["", 0]"#,
    ),
    (
        "closed tuple within maxItems",
        r#"{"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}"#,
        r#"{"type": "array", "maxItems": 2}"#,
        "compatible",
    ),
    // Unions.
    (
        "anyOf into a type list",
        r#"{"anyOf": [{"type": "string"}, {"type": "null"}]}"#,
        r#"{"type": ["string", "null"]}"#,
        "compatible",
    ),
    (
        "anyOf with a member that does not fit",
        r#"{"anyOf": [{"type": "string"}, {"type": "integer"}]}"#,
        r#"{"type": "string"}"#,
        "incompatible 0",
    ),
    (
        "nullable into non-null",
        r#"{"type": ["string", "null"]}"#,
        r#"{"type": "string"}"#,
        "incompatible null",
    ),
    (
        "disjoint oneOf producer",
        r#"{"oneOf": [{"type": "string"}, {"type": "integer"}]}"#,
        r#"{"type": ["string", "integer"]}"#,
        "compatible",
    ),
    (
        "discriminated union covered case by case",
        r#"{"type": "object", "properties": {"kind": {"enum": ["a", "b"]}, "n": {"type": "integer"}}, "required": ["kind", "n"], "additionalProperties": false}"#,
        r#"{"oneOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}, "n": {"type": "number"}}, "required": ["kind"]},
            {"type": "object", "properties": {"kind": {"const": "b"}}, "required": ["kind"]}]}"#,
        "compatible",
    ),
    (
        "discriminated union with a missing case",
        r#"{"type": "object", "properties": {"kind": {"enum": ["a", "b", "c"]}, "n": {"type": "integer"}}, "required": ["kind", "n"], "additionalProperties": false}"#,
        r#"{"oneOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}, "n": {"type": "number"}}, "required": ["kind"]},
            {"type": "object", "properties": {"kind": {"const": "b"}}, "required": ["kind"]}]}"#,
        r#"incompatible {"kind": "c", "n": 0}"#,
    ),
    (
        "overlapping oneOf consumer",
        r#"{"type": "integer"}"#,
        r#"{"oneOf": [{"type": "integer"}, {"type": "number"}]}"#,
        "unknown may overlap",
    ),
    // Any, Never, Opaque, $ref, allOf.
    (
        "any into string",
        "{}",
        r#"{"type": "string"}"#,
        "incompatible null",
    ),
    ("any into any", "true", "{}", "compatible"),
    (
        "any into every kind",
        "{}",
        r#"{"type": ["null", "boolean", "number", "string", "array", "object"]}"#,
        "compatible",
    ),
    (
        "false into anything",
        "false",
        r#"{"type": "string"}"#,
        "compatible",
    ),
    (
        "anything into false",
        r#"{"type": "string"}"#,
        "false",
        r#"incompatible """#,
    ),
    (
        "allOf of two patterns",
        r#"{"allOf": [{"type": "string", "pattern": "^a"}, {"pattern": "b$"}]}"#,
        r#"{"type": "string"}"#,
        "unknown `allOf` of two different `pattern`s",
    ),
    (
        "recursive $ref on both sides",
        r##"{"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}"##,
        r##"{"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}"##,
        "unknown recursive `$ref`",
    ),
    (
        "recursive $ref into an open object",
        r##"{"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}"##,
        r#"{"type": "object"}"#,
        "compatible",
    ),
    (
        "$ref into an enum",
        r##"{"$defs": {"label": {"enum": ["x", "y"]}}, "$ref": "#/$defs/label"}"##,
        r#"{"enum": ["x"]}"#,
        r#"incompatible "y""#,
    ),
    (
        "allOf merges object properties",
        r#"{"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                      {"properties": {"b": {"type": "integer"}}, "required": ["b"]}]}"#,
        r#"{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}, "required": ["a", "b"]}"#,
        "compatible",
    ),
    (
        "allOf tightens numbers",
        r#"{"type": "integer", "allOf": [{"minimum": 0}, {"maximum": 10}]}"#,
        r#"{"type": "integer", "minimum": 0, "maximum": 10}"#,
        "compatible",
    ),
];

fn decide(producer: &Value, consumer: &Value) -> Compat {
    check(
        &Ty::from_json_schema_exact(producer, producer),
        &Ty::from_json_schema_exact(consumer, consumer),
    )
}

/// Why `x` is not a real counterexample, if it is not one.
fn refute(producer: &Value, consumer: &Value, x: &Value) -> Option<String> {
    let p = jsonschema::validator_for(producer).expect("producer schema compiles");
    let c = jsonschema::validator_for(consumer).expect("consumer schema compiles");
    if !p.is_valid(x) {
        return Some(format!(
            "counterexample {x} is not valid under the producer"
        ));
    }
    if c.is_valid(x) {
        return Some(format!("counterexample {x} is valid under the consumer"));
    }
    None
}

#[test]
fn schema_pairs() {
    assert!(CASES.len() >= 40);
    let mut failures = Vec::new();
    let mut counts = [0; 3];
    for (name, producer, consumer, expected) in CASES {
        let p: Value = serde_json::from_str(producer).unwrap_or_else(|e| panic!("{name}: {e}"));
        let c: Value = serde_json::from_str(consumer).unwrap_or_else(|e| panic!("{name}: {e}"));
        let answer = decide(&p, &c);
        let (kind, rest) = expected.split_once(' ').unwrap_or((expected, ""));
        let ok = match (&answer, kind) {
            (Compat::Compatible, "compatible") => {
                counts[0] += 1;
                true
            }
            (Compat::Incompatible { counterexample, .. }, "incompatible") => {
                counts[1] += 1;
                if let Some(why) = refute(&p, &c, counterexample) {
                    failures.push(format!("{name}: {why}"));
                }
                rest.is_empty() || serde_json::from_str::<Value>(rest).unwrap() == *counterexample
            }
            (Compat::Unknown { reason }, "unknown") => {
                counts[2] += 1;
                reason.contains(rest)
            }
            _ => false,
        };
        if !ok {
            failures.push(format!("{name}: expected {expected}, got {answer:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        counts.iter().all(|&n| n >= 5),
        "compatible/incompatible/unknown: {counts:?}"
    );
}

#[test]
fn reasons_say_where_and_why() {
    let p = json!({"type": "object", "properties": {"label": {"enum": ["bug", "question"]}}, "required": ["label"]});
    let c = json!({"type": "object", "properties": {"label": {"enum": ["bug", "feature"]}}, "required": ["label"]});
    let Compat::Incompatible { reason, .. } = decide(&p, &c) else {
        panic!()
    };
    assert_eq!(
        reason,
        r#"at `/label`: the producer may emit "question", but the consumer allows only "bug" | "feature""#
    );
    let open = json!({"type": "object"});
    let closed = json!({"type": "object", "additionalProperties": false});
    let Compat::Incompatible { reason, .. } = decide(&open, &closed) else {
        panic!()
    };
    assert!(
        reason.contains("open") && reason.contains("`extra`"),
        "{reason}"
    );
    let Compat::Incompatible { reason, .. } = decide(
        &json!({"type": "number"}),
        &json!({"type": "integer", "minimum": 0}),
    ) else {
        panic!()
    };
    assert_eq!(
        reason,
        "the producer may emit 0.5, but the consumer expects an integer"
    );
}

#[test]
fn large_enums_are_linear_and_unions_of_unions_are_capped() {
    let big: Vec<Value> = (0..5_000).map(|i| json!(format!("v{i}"))).collect();
    let enum_schema = json!({"enum": big});
    assert_eq!(decide(&enum_schema, &enum_schema), Compat::Compatible);
    let mut fewer = big.clone();
    fewer.pop();
    assert!(matches!(
        decide(&enum_schema, &json!({"enum": fewer})),
        Compat::Incompatible { counterexample, .. } if counterexample == json!("v4999")
    ));
    assert!(matches!(
        decide(&json!({"type": "string"}), &enum_schema),
        Compat::Incompatible { counterexample, .. } if counterexample == json!("")
    ));

    // 150 object shapes against the same 150 in reverse order: each producer member fits
    // one consumer member, found only after trying the others, so the product of the two
    // unions exceeds the step budget, which answers Unknown instead of working on.
    let shapes = |reverse: bool| -> Value {
        let mut members: Vec<Value> = (0..150)
            .map(|i| {
                json!({"type": "object", "properties": {
                    "k": {"const": i}, "v": {"type": "string"}
                }, "required": ["k", "v"]})
            })
            .collect();
        if reverse {
            members.reverse();
        }
        json!({"anyOf": members})
    };
    let start = Instant::now();
    let answer = decide(&shapes(false), &shapes(true));
    assert!(
        matches!(&answer, Compat::Unknown { reason } if reason.contains("steps")),
        "{answer:?}"
    );
    // Not a timing assertion: a sanity bound far above the expected milliseconds, to catch
    // an exponential regression without flaking.
    assert!(start.elapsed().as_secs() < 60);
}

#[test]
fn counterexamples_respect_unique_items_and_counts() {
    let p = json!({"type": "array", "items": {"type": "integer", "minimum": 0}, "uniqueItems": true, "minItems": 2});
    let c = json!({"type": "array", "maxItems": 2});
    let Compat::Incompatible { counterexample, .. } = decide(&p, &c) else {
        panic!()
    };
    assert_eq!(counterexample, json!([0, 1, 2]));
    assert_eq!(refute(&p, &c, &counterexample), None);
    let p = json!({"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 2, "additionalProperties": {"type": "integer"}});
    let c = json!({"type": "object", "additionalProperties": false, "properties": {"a": {}}});
    let Compat::Incompatible { counterexample, .. } = decide(&p, &c) else {
        panic!()
    };
    assert_eq!(refute(&p, &c, &counterexample), None);
}

// ---------------------------------------------------------------------------------------
// Property test.

fn bound() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        2 => Just(None),
        3 => (-2i32..=3, prop_oneof![Just(0.0), Just(0.5)]).prop_map(|(n, f)| Some(f64::from(n) + f)),
    ]
}

fn number_schema() -> impl Strategy<Value = Value> {
    (
        prop_oneof![Just("integer"), Just("number")],
        bound(),
        bound(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(t, lo, hi, ex_lo, ex_hi)| {
            let mut s = json!({ "type": t });
            if let Some(lo) = lo {
                s[if ex_lo { "exclusiveMinimum" } else { "minimum" }] = json!(lo);
            }
            if let Some(hi) = hi {
                s[if ex_hi { "exclusiveMaximum" } else { "maximum" }] = json!(hi);
            }
            s
        })
}

fn string_schema() -> impl Strategy<Value = Value> {
    (
        proptest::option::of(0u64..3),
        proptest::option::of(0u64..4),
        proptest::option::of(prop_oneof![
            Just("^a"),
            Just("b$"),
            Just("^[ab]*$"),
            Just("^[a-z]+$"),
        ]),
    )
        .prop_map(|(min, max, pattern)| {
            let mut s = json!({"type": "string"});
            if let Some(n) = min {
                s["minLength"] = json!(n);
            }
            if let Some(n) = max {
                s["maxLength"] = json!(n);
            }
            if let Some(p) = pattern {
                s["pattern"] = json!(p);
            }
            s
        })
}

fn pool_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(null)),
        Just(json!(true)),
        Just(json!(false)),
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(1.5)),
        Just(json!(-1)),
        Just(json!("")),
        Just(json!("a")),
        Just(json!("b")),
        Just(json!("ab")),
        Just(json!([1])),
        Just(json!({"a": 1})),
    ]
}

fn enum_schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        proptest::collection::vec(pool_value(), 1..4).prop_map(|v| json!({ "enum": v })),
        pool_value().prop_map(|v| json!({ "const": v })),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({})),
        Just(json!(false)),
        Just(json!({"type": "null"})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": ["string", "null"]})),
        number_schema(),
        string_schema(),
        enum_schema(),
    ]
}

fn leaf_pair() -> impl Strategy<Value = (Value, Value)> {
    prop_oneof![
        (leaf(), leaf()),
        (number_schema(), number_schema()),
        (string_schema(), string_schema()),
        (enum_schema(), enum_schema()),
        (enum_schema(), prop_oneof![number_schema(), string_schema()]),
        (prop_oneof![number_schema(), string_schema()], enum_schema()),
    ]
}

fn array_schema(
    items: Value,
    (min, max, unique, tuple): (Option<u64>, Option<u64>, bool, u8),
) -> Value {
    let mut s = json!({"type": "array"});
    match tuple {
        0 => s["items"] = items,
        1 => {
            s["prefixItems"] = json!([items]);
            s["items"] = json!(false);
        }
        _ => s["prefixItems"] = json!([items, {"type": "integer"}]),
    }
    if let Some(n) = min {
        s["minItems"] = json!(n);
    }
    if let Some(n) = max {
        s["maxItems"] = json!(n);
    }
    if unique {
        s["uniqueItems"] = json!(true);
    }
    s
}

type ObjectParams = (bool, bool, u8, Option<u64>, Option<u64>);

fn object_schema(a: Value, b: Value, (req_a, req_b, rest, min, max): ObjectParams) -> Value {
    let mut s = json!({"type": "object", "properties": {"a": a, "b": b}});
    let required: Vec<&str> = [("a", req_a), ("b", req_b)]
        .into_iter()
        .filter_map(|(n, r)| r.then_some(n))
        .collect();
    if !required.is_empty() {
        s["required"] = json!(required);
    }
    match rest {
        0 => {}
        1 => s["additionalProperties"] = json!(false),
        2 => s["additionalProperties"] = json!({"type": "integer"}),
        _ => s["additionalProperties"] = json!(true),
    }
    if let Some(n) = min {
        s["minProperties"] = json!(n);
    }
    if let Some(n) = max {
        s["maxProperties"] = json!(n);
    }
    s
}

/// Pairs with the same structure and independent constraints, so that many are close calls.
fn pair() -> impl Strategy<Value = (Value, Value)> {
    let array_params = || {
        (
            proptest::option::of(0u64..3),
            proptest::option::of(0u64..4),
            any::<bool>(),
            0u8..3,
        )
    };
    let object_params = || {
        (
            any::<bool>(),
            any::<bool>(),
            0u8..4,
            proptest::option::of(0u64..3),
            proptest::option::of(1u64..4),
        )
    };
    leaf_pair().prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            (inner.clone(), array_params(), array_params())
                .prop_map(|((p, c), pa, ca)| (array_schema(p, pa), array_schema(c, ca))),
            (
                inner.clone(),
                inner.clone(),
                object_params(),
                object_params()
            )
                .prop_map(|((pa, ca), (pb, cb), po, co)| (
                    object_schema(pa, pb, po),
                    object_schema(ca, cb, co)
                )),
            (inner.clone(), inner.clone(), 0u8..3).prop_map(|((p1, c1), (p2, c2), shape)| {
                match shape {
                    0 => (json!({"anyOf": [p1, p2]}), json!({"anyOf": [c1, c2]})),
                    1 => (json!({"anyOf": [p1, p2]}), c1),
                    _ => (p1, json!({"anyOf": [c1, c2]})),
                }
            }),
        ]
    })
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A random value that is probably of `ty` (callers filter with the producer's schema).
fn generate(ty: &Ty, rng: &mut Rng) -> Option<Value> {
    Some(match ty {
        Ty::Never | Ty::Opaque(_) => return None,
        Ty::Any => {
            let pool = [
                json!(null),
                json!(true),
                json!(1),
                json!(0.5),
                json!("a"),
                json!([]),
                json!({}),
            ];
            pool[rng.below(pool.len() as u64) as usize].clone()
        }
        Ty::Null => json!(null),
        Ty::Bool => json!(rng.chance(50)),
        Ty::Literal(v) => v.clone(),
        Ty::Int(r) | Ty::Number(r) => {
            let (lo, hi) = r.integer_bounds();
            let lo = lo.unwrap_or_else(|| hi.unwrap_or(0.0) - 6.0);
            let hi = hi.unwrap_or(lo + 6.0);
            let mut x = lo + rng.below((hi - lo).max(0.0) as u64 + 1) as f64;
            if matches!(ty, Ty::Number(_)) && rng.chance(50) {
                x += if rng.chance(50) { 0.5 } else { -0.5 };
            }
            if matches!(ty, Ty::Number(_)) && rng.chance(20) {
                x = r.min.or(r.max).map_or(x, |b| b.value);
            }
            if x.fract() == 0.0 {
                json!(x as i64)
            } else {
                json!(x)
            }
        }
        Ty::String(s) => {
            let top = s.max_len.unwrap_or(s.min_len + 4).min(s.min_len + 4);
            let len = s.min_len + rng.below(top.saturating_sub(s.min_len) + 1);
            let text: String = (0..len)
                .map(|_| ['a', 'b', '0'][rng.below(3) as usize])
                .collect();
            json!(text)
        }
        Ty::Union(members) => {
            return generate(&members[rng.below(members.len() as u64) as usize], rng);
        }
        Ty::List(l) => {
            let top = l.max_items.unwrap_or(l.min_items + 3).min(l.min_items + 3);
            let len = l.min_items + rng.below(top.saturating_sub(l.min_items) + 1);
            let items: Option<Vec<Value>> =
                (0..len as usize).map(|i| generate(l.at(i), rng)).collect();
            json!(items?)
        }
        Ty::Object(o) => {
            let mut map = serde_json::Map::new();
            for (name, prop) in &o.properties {
                if prop.required || rng.chance(50) {
                    if let Some(v) = generate(&prop.ty, rng) {
                        map.insert(name.clone(), v);
                    } else if prop.required {
                        return None;
                    }
                }
            }
            if rng.chance(40)
                && let Some(v) = generate(&o.rest, rng)
            {
                map.insert(format!("x{}", rng.below(3)), v);
            }
            json!(map)
        }
    })
}

/// Checks one pair; returns the answer's kind (0 compatible, 1 incompatible, 2 unknown).
fn holds(p: &Value, c: &Value, seed: u64) -> Result<usize, TestCaseError> {
    let producer = jsonschema::validator_for(p).expect("producer compiles");
    let consumer = jsonschema::validator_for(c).expect("consumer compiles");
    match decide(p, c) {
        Compat::Incompatible {
            counterexample,
            reason,
            ..
        } => {
            prop_assert!(
                producer.is_valid(&counterexample),
                "{counterexample} not valid under the producer ({reason})"
            );
            prop_assert!(
                !consumer.is_valid(&counterexample),
                "{counterexample} valid under the consumer ({reason})"
            );
            Ok(1)
        }
        Compat::Compatible => {
            let ty = Ty::from_json_schema_exact(p, p);
            let mut rng = Rng(seed | 1);
            for _ in 0..24 {
                if let Some(v) = generate(&ty, &mut rng)
                    && producer.is_valid(&v)
                {
                    prop_assert!(
                        consumer.is_valid(&v),
                        "compatible, but the consumer rejects {v}"
                    );
                }
            }
            Ok(0)
        }
        Compat::Unknown { .. } => Ok(2),
    }
}

proptest! {
    // 256 cases by default; `PROPTEST_CASES=20000` for a longer hunt.
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn counterexamples_are_real_and_compatible_answers_hold((p, c) in pair(), seed in any::<u64>()) {
        holds(&p, &c, seed)?;
    }
}

/// The property test is not vacuous: on a fixed sample, all three answers occur, and most
/// pairs are decided.
#[test]
fn generated_pairs_get_every_answer() {
    let config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let strategy = pair();
    let mut counts = [0usize; 3];
    for seed in 0..300u64 {
        let (p, c) = strategy.new_tree(&mut runner).expect("generates").current();
        let kind = holds(&p, &c, seed).unwrap_or_else(|e| panic!("{p} ⊆ {c}: {e}"));
        counts[kind] += 1;
    }
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
    assert!(
        counts[2] * 4 < counts[0] + counts[1],
        "too many unknown: {counts:?}"
    );
}
