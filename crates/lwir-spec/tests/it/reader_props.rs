//! Properties of the spanned reader: it never panics, its spans stay inside the input, and
//! on documents `serde_json` accepts (and that have no I-JSON problem) it agrees with it.

use lwir_spec::Code;
use lwir_spec::document::read;
use proptest::prelude::*;

/// Arbitrary JSON-ish text: mostly structural characters, so that the reader gets deep.
fn jsonish() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("{".to_owned()),
            Just("}".to_owned()),
            Just("[".to_owned()),
            Just("]".to_owned()),
            Just(",".to_owned()),
            Just(":".to_owned()),
            Just("\"a\"".to_owned()),
            Just("\"\\ud800\"".to_owned()),
            Just("\"\\u00e9\\n\"".to_owned()),
            Just("1e400".to_owned()),
            Just("-0.5".to_owned()),
            Just("9007199254740993".to_owned()),
            Just("true".to_owned()),
            Just("null".to_owned()),
            Just(" ".to_owned()),
            "\\PC{0,3}",
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

/// Valid JSON values built from serde_json, rendered compactly or pretty.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        (-(1i64 << 53) + 1..(1i64 << 53)).prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        "\\PC{0,8}".prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            proptest::collection::btree_map("\\PC{0,6}", inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_and_spans_stay_inside(text in jsonish(), bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        for input in [text.into_bytes(), bytes] {
            let len = input.len();
            let out = read(input);
            for f in &out.findings {
                prop_assert!(f.span.start() <= f.span.end() && f.span.end() <= len, "{f:?}");
                for r in &f.related {
                    prop_assert!(r.span.end() <= len);
                }
            }
            if out.document.is_none() {
                prop_assert!(out.findings.iter().any(|f| matches!(f.code, Code::JsonSyntax | Code::NestingTooDeep)));
            }
        }
    }

    #[test]
    fn agrees_with_serde_json_on_valid_documents(value in json_value(), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) }.unwrap();
        let out = read(text.clone().into_bytes());
        prop_assert!(out.findings.is_empty(), "{:?}", out.findings);
        let doc = out.document.unwrap();
        let reparsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(doc.root().to_json(), reparsed);
        prop_assert_eq!(doc.root().span.start(), text.len() - text.trim_start().len());
    }
}

/// A document whose root object holds an array of many elements, as a draft's `steps`:
/// well-formed elements (objects with repeated keys among them) and, now and then, a
/// JSON-ish fragment that may break it.
fn document_with_an_array() -> impl Strategy<Value = String> {
    let element = prop_oneof![
        8 => json_value().prop_map(|v| serde_json::to_string_pretty(&v).unwrap()),
        2 => Just(r#"{"id": "a", "id": "a", "x": [1, {"k": 2, "k": 3}]}"#.to_owned()),
        1 => Just(r#""a \"quoted\" [string], with {brackets}""#.to_owned()),
        1 => jsonish(),
    ];
    (
        proptest::collection::vec(element, 1..24),
        proptest::sample::select(vec!["steps", "a\\u0073", "x", "steps"]),
        any::<bool>(),
    )
        .prop_map(|(elements, key, before)| {
            let head = if before {
                r#""lwir": "1", "list": [1, 2], "#
            } else {
                ""
            };
            format!(
                "{{{head}\"{key}\": [\n  {}\n], \"output\": {{\"a\": [3, 4]}}}}",
                elements.join(",\n  ")
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Reading a document on two threads — from wherever the second one starts — gives the
    /// tree and the findings of reading it on one.
    #[test]
    fn reading_on_two_threads_is_reading_on_one(text in document_with_an_array()) {
        use lwir_spec::document::with_read_split;
        let bytes = text.into_bytes();
        let read_at = |at| {
            let out = with_read_split(at, || read(bytes.clone()));
            (out.document.map(|d| d.root().clone()), out.findings)
        };
        let one = read_at(None);
        for at in (0..bytes.len()).step_by(7) {
            prop_assert_eq!(&read_at(Some(at)), &one, "split after byte {}", at);
        }
    }
}

/// Problems in the part of a large document that the second thread reads — bytes that are
/// not UTF-8, a syntax error, nesting past the limit, a repeated key, an unterminated
/// string — are found where reading on one thread finds them, and the second thread's
/// findings are not lost.
#[test]
fn problems_past_the_split_of_a_large_document_are_found_as_on_one_thread() {
    use lwir_spec::document::with_read_split;
    let step = r#"{"id": "s", "kind": "tool.call", "tool": "t", "args": {"text": "a \"quoted\" [x], {y}"}}"#;
    let steps: Vec<&str> = std::iter::repeat_n(step, 20_000).collect();
    let clean = format!(
        "{{\"lwir\": \"1\", \"steps\": [\n{}\n], \"output\": {{}}}}",
        steps.join(",\n")
    );
    assert!(
        clean.len() > 1 << 20,
        "large enough to be read on two threads"
    );
    let at = clean.len() / 10 * 8;
    let at = at + clean[at..].find("{\"id\"").unwrap();
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let cases: [(&str, Vec<u8>, Code); 5] = [
        (
            "not UTF-8",
            splice(&clean, at, b"\"\xff\xfe\", "),
            Code::InvalidUtf8,
        ),
        (
            "a syntax error",
            splice(&clean, at, b"{\"id\" 1}, "),
            Code::JsonSyntax,
        ),
        (
            "nesting past the limit",
            splice(&clean, at, format!("{deep}, ").as_bytes()),
            Code::NestingTooDeep,
        ),
        (
            "a repeated key",
            splice(&clean, at, br#"{"id": "a", "id": "b"}, "#),
            Code::DuplicateKey,
        ),
        (
            "an unterminated string",
            clean.as_bytes()[..at + 10].to_vec(),
            Code::JsonSyntax,
        ),
    ];
    for (what, bytes, code) in cases {
        let two = read(bytes.clone());
        let one = with_read_split(None, || read(bytes.clone()));
        assert!(
            two.findings.iter().any(|f| f.code == code),
            "{what}: {:?}",
            two.findings
        );
        assert!(
            two.findings.iter().all(|f| f.span.start() >= at),
            "{what}: found before it"
        );
        assert_eq!(two.findings, one.findings, "{what}");
        assert_eq!(
            two.document.map(|d| d.root().clone()),
            one.document.map(|d| d.root().clone()),
            "{what}"
        );
    }
}

/// `text` with `insert` put in at byte `at`.
fn splice(text: &str, at: usize, insert: &[u8]) -> Vec<u8> {
    [&text.as_bytes()[..at], insert, &text.as_bytes()[at..]].concat()
}
