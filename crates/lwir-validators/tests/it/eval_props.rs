//! The checker and the evaluator agree: an expression the checker accepts (no error
//! finding) never makes the evaluator panic, and when it has a value, the value is of the
//! type the checker gave it. Expressions are generated over literals, a typed `input`, the
//! operators, and every whitelisted function and macro.

use lwir_spec::document::read;
use lwir_spec::expr::eval::{self, Bindings, Val};
use lwir_spec::expr::parse_expression;
use lwir_validators::expr::type_of_value;
use lwir_validators::types::{Kinds, Ty};
use proptest::prelude::*;
use serde_json::json;

/// `input`'s schema and a value of it.
fn input() -> (serde_json::Value, serde_json::Value) {
    let schema = json!({
        "type": "object",
        "required": ["n", "d", "s", "xs", "ss", "m", "b"],
        "properties": {
            "n": { "type": "integer" },
            "d": { "type": "number" },
            "s": { "type": "string" },
            "xs": { "type": "array", "items": { "type": "integer" } },
            "ss": { "type": "array", "items": { "type": "string" } },
            "m": { "type": "object", "additionalProperties": { "type": "integer" } },
            "b": { "type": "boolean" }
        },
        "additionalProperties": false
    });
    let value = json!({
        "n": 7, "d": 2.5, "s": "Issue-12 ok", "xs": [3, 0, -2], "ss": ["a", "b c"],
        "m": { "k": 1, "j": 0 }, "b": true
    });
    (schema, value)
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        (-20i64..20).prop_map(|i| i.to_string()),
        prop_oneof![Just("0.5"), Just("2.0"), Just("-1.25"), Just("0.0")].prop_map(str::to_owned),
        prop_oneof![Just("'a'"), Just("'Issue'"), Just("''"), Just("' x '")]
            .prop_map(str::to_owned),
        prop_oneof![Just("true"), Just("false"), Just("null")].prop_map(str::to_owned),
        prop_oneof![
            Just("input.n"),
            Just("input.d"),
            Just("input.s"),
            Just("input.xs"),
            Just("input.ss"),
            Just("input.m"),
            Just("input.b"),
            Just("input.xs[0]"),
            Just("input.m.k"),
            Just("input['s']"),
        ]
        .prop_map(str::to_owned),
    ]
}

fn expression() -> impl Strategy<Value = String> {
    leaf().prop_recursive(4, 40, 3, |inner| {
        let op = prop_oneof![
            Just("+"),
            Just("-"),
            Just("*"),
            Just("/"),
            Just("%"),
            Just("=="),
            Just("!="),
            Just("<"),
            Just("<="),
            Just(">"),
            Just(">="),
            Just("&&"),
            Just("||"),
            Just("in"),
        ];
        let unary_fn = prop_oneof![Just("size"), Just("string"), Just("int"), Just("double"),];
        let method0 = prop_oneof![
            Just("lower"),
            Just("upper"),
            Just("trim"),
            Just("size"),
            Just("join")
        ];
        let method1 = prop_oneof![
            Just("contains"),
            Just("startsWith"),
            Just("endsWith"),
            Just("split"),
            Just("matches"),
            Just("join"),
        ];
        let macro_ = prop_oneof![Just("map"), Just("filter"), Just("all"), Just("exists")];
        prop_oneof![
            (inner.clone(), op, inner.clone()).prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (prop_oneof![Just("!"), Just("-")], inner.clone())
                .prop_map(|(u, a)| format!("{u}({a})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| format!("({c} ? {a} : {b})")),
            (unary_fn, inner.clone()).prop_map(|(f, a)| format!("{f}({a})")),
            (inner.clone(), method0).prop_map(|(a, m)| format!("({a}).{m}()")),
            (inner.clone(), method1, inner.clone()).prop_map(|(a, m, b)| format!("({a}).{m}({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("[{a}, {b}]")),
            (inner.clone(), macro_, inner.clone())
                .prop_map(|(a, m, b)| format!("({a}).{m}(v, {b})")),
            (prop_oneof![Just("map"), Just("filter"), Just("all"), Just("exists")])
                .prop_map(|m| format!("input.xs.{m}(v, v > 0)")),
            inner.clone().prop_map(|a| format!("{{'k': {a}}}")),
        ]
    })
}

/// The kinds a value is of: a double with no fraction is also an integer-valued number.
fn kinds_of(value: &Val) -> Kinds {
    match value {
        Val::Null => Kinds::NULL,
        Val::Bool(_) => Kinds::BOOL,
        Val::Int(_) => Kinds::INT,
        Val::Double(d) if d.fract() == 0.0 => Kinds::NUMBER,
        Val::Double(_) => Kinds::FRACTION,
        Val::String(_) => Kinds::STRING,
        Val::List(_) => Kinds::LIST,
        Val::Map(_) => Kinds::OBJECT,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(1500)
    ))]

    #[test]
    fn well_typed_expressions_evaluate_to_their_static_type(text in expression()) {
        let (schema, value) = input();
        let schema_doc = read(serde_json::to_vec(&schema).unwrap()).document.unwrap();
        let input_ty = Ty::from_schema(schema_doc.root(), schema_doc.root());
        let document = read(serde_json::to_vec(&json!({ "e": format!("${{ {text} }}") })).unwrap())
            .document
            .unwrap();
        let node = document.root().get("e").unwrap();
        let (ty, findings) = type_of_value(&document, node, "/e", &[("input", input_ty)]);
        if findings.iter().any(|f| f.is_error()) {
            return Ok(());
        }
        let expr = parse_expression(&text).expect("it type-checked, so it parses");
        let mut bindings = Bindings::new();
        bindings.insert("input".into(), Val::from_json(&value));
        if let Ok(got) = eval::evaluate(&expr, &bindings, 1_000_000) {
            prop_assert!(
                ty.kinds().meets(kinds_of(&got)),
                "`{}` has static type {} but evaluated to {:?}",
                text,
                ty.summary(),
                got
            );
        }
    }
}
