//! The expression parser never panics, and every syntax error has a span inside the text.

use lwir_spec::expr::{parse_expression, parse_string_value};
use proptest::prelude::*;

/// Expression-like text: operators, brackets, names, literals and arbitrary characters.
fn expression_like() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("${".to_owned()),
            Just("$${".to_owned()),
            Just("}".to_owned()),
            Just("(".to_owned()),
            Just(")".to_owned()),
            Just("[".to_owned()),
            Just("]".to_owned()),
            Just("{".to_owned()),
            Just(".".to_owned()),
            Just(",".to_owned()),
            Just("?".to_owned()),
            Just(":".to_owned()),
            Just(" && ".to_owned()),
            Just(" in ".to_owned()),
            Just("'s\\'t'".to_owned()),
            Just("\"\\u00e9\"".to_owned()),
            Just("'\\q'".to_owned()),
            Just("steps.a.output".to_owned()),
            Just("size(x)".to_owned()),
            Just("1.5e3".to_owned()),
            Just("99999999999999999999".to_owned()),
            Just("-".to_owned()),
            Just("!".to_owned()),
            "\\PC{0,3}",
        ],
        0..30,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn never_panics_and_errors_stay_inside(text in expression_like()) {
        if let Err(e) = parse_expression(&text) {
            prop_assert!(e.span.start() <= e.span.end() && e.span.end() <= text.len(), "{e:?} in {text:?}");
            prop_assert!(text.is_char_boundary(e.span.start()) && text.is_char_boundary(e.span.end()));
        }
        if let Err(e) = parse_string_value(&text) {
            prop_assert!(e.span.start() <= e.span.end() && e.span.end() <= text.len(), "{e:?} in {text:?}");
            prop_assert!(text.is_char_boundary(e.span.start()) && text.is_char_boundary(e.span.end()));
        }
    }

    #[test]
    fn arbitrary_unicode_never_panics(text in "\\PC{0,64}") {
        let _ = parse_expression(&text);
        let _ = parse_string_value(&text);
    }
}

// The hand-written reader in front of the grammar gives exactly the grammar's result —
// the tree, every span, the end of each interpolation, and the same error — on random
// well-formed expressions (with random blanks), on those expressions cut and spliced, on
// expression-like noise, and on every expression of the corpus and the examples.

/// A random well-formed expression, with blanks (or none) between its tokens.
fn well_formed() -> impl Strategy<Value = String> {
    let blank = prop_oneof![
        4 => Just(""),
        4 => Just(" "),
        1 => Just("\n\t"),
        1 => Just("  "),
    ];
    let leaf = prop_oneof![
        Just("x".to_owned()),
        Just("input.repo".to_owned()),
        Just("steps.a.output.items".to_owned()),
        Just("null".to_owned()),
        Just("nullable".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        Just("in".to_owned()),
        Just("index".to_owned()),
        Just("_a1".to_owned()),
        Just("0".to_owned()),
        Just("42".to_owned()),
        Just("0x1F".to_owned()),
        Just("1.5".to_owned()),
        Just("1e3".to_owned()),
        Just("2.5E-3".to_owned()),
        Just(".5".to_owned()),
        Just("9223372036854775807".to_owned()),
        Just("9223372036854775808".to_owned()),
        Just("'it\\'s'".to_owned()),
        Just("\"a\\nb\"".to_owned()),
        Just("'\\x41\\u00e9\\101'".to_owned()),
        Just("'}'".to_owned()),
        Just("'é ${'".to_owned()),
        Just("''".to_owned()),
    ];
    leaf.prop_recursive(6, 48, 4, move |inner| {
        let b = blank.clone();
        let op = prop_oneof![
            Just("||"),
            Just("&&"),
            Just("=="),
            Just("!="),
            Just("<"),
            Just("<="),
            Just(">"),
            Just(">="),
            Just("in"),
            Just("+"),
            Just("-"),
            Just("*"),
            Just("/"),
            Just("%"),
        ];
        prop_oneof![
            (inner.clone(), b.clone(), op, b.clone(), inner.clone()).prop_map(
                |(l, b1, op, b2, r)| {
                    // `in` needs a blank to be an operator between names.
                    let (b1, b2) = if op == "in" { (" ", " ") } else { (b1, b2) };
                    format!("{l}{b1}{op}{b2}{r}")
                }
            ),
            (
                prop_oneof![Just("!"), Just("-"), Just("- "), Just("!!")],
                inner.clone()
            )
                .prop_map(|(op, e)| format!("{op}{e}")),
            (inner.clone(), b.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, b, t, o)| format!("{c}{b}?{b}{t}{b}:{b}{o}")),
            (inner.clone(), b.clone()).prop_map(|(e, b)| format!("({b}{e}{b})")),
            (
                inner.clone(),
                b.clone(),
                prop_oneof![Just("f"), Just("x"), Just("size")]
            )
                .prop_map(|(e, b, n)| format!("{e}{b}.{b}{n}")),
            (
                inner.clone(),
                b.clone(),
                prop_oneof![Just("size"), Just("map"), Just("lower")],
                proptest::collection::vec(inner.clone(), 0..3),
                any::<bool>()
            )
                .prop_map(|(e, b, n, args, trailing)| {
                    let comma = if trailing && !args.is_empty() {
                        ","
                    } else {
                        ""
                    };
                    format!(
                        "{e}{b}.{b}{n}{b}({b}{}{comma}{b})",
                        args.join(&format!("{b},{b}"))
                    )
                }),
            (
                prop_oneof![Just("size"), Just("has"), Just("string")],
                proptest::collection::vec(inner.clone(), 0..3),
                b.clone()
            )
                .prop_map(|(n, args, b)| format!("{n}{b}({}{b})", args.join(", "))),
            (inner.clone(), b.clone(), inner.clone())
                .prop_map(|(e, b, i)| format!("{e}{b}[{b}{i}{b}]")),
            (
                proptest::collection::vec(inner.clone(), 0..4),
                any::<bool>(),
                b.clone()
            )
                .prop_map(|(items, trailing, b)| {
                    let comma = if trailing && !items.is_empty() {
                        ","
                    } else {
                        ""
                    };
                    format!("[{b}{}{comma}{b}]", items.join(&format!("{b},{b}")))
                }),
            (proptest::collection::vec((inner.clone(), inner), 0..3), b).prop_map(
                |(entries, b)| {
                    let entries: Vec<String> = entries
                        .iter()
                        .map(|(k, v)| format!("{k}{b}:{b}{v}"))
                        .collect();
                    format!("{{{b}{}{b}}}", entries.join(","))
                }
            ),
        ]
    })
}

/// Same result from the reader and from the grammar alone, spans included.
fn agrees(text: &str) -> Result<(), TestCaseError> {
    let fast = format!("{:?}", lwir_spec::expr::parse_expression(text));
    let reference = format!("{:?}", lwir_spec::expr::parse_expression_reference(text));
    prop_assert_eq!(fast, reference, "expression {:?}", text);
    let fast = format!("{:?}", parse_string_value(text));
    let reference = format!("{:?}", lwir_spec::expr::parse_string_value_reference(text));
    prop_assert_eq!(fast, reference, "string value {:?}", text);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn the_reader_agrees_with_the_grammar_on_well_formed_expressions(
        e in well_formed(),
        before in prop_oneof![Just(""), Just(" "), Just("\n")],
        after in prop_oneof![Just(""), Just(" "), Just("\t ")],
    ) {
        agrees(&e)?;
        agrees(&format!("{before}{e}{after}"))?;
        agrees(&format!("${{{before}{e}{after}}}"))?;
        agrees(&format!("a ${{{e}}} b ${{ {e} }}${{{before}x{after}}}"))?;
    }

    #[test]
    fn the_reader_agrees_with_the_grammar_on_broken_expressions(
        e in well_formed(),
        cut in any::<proptest::sample::Index>(),
        other in well_formed(),
        insert in prop_oneof![Just(""), Just(")"), Just("("), Just("]"), Just(","), Just("?"),
                              Just(":"), Just("'"), Just("\\"), Just("."), Just("}"), Just("${"),
                              Just("="), Just("|"), Just("\n"), Just("é"), Just("1x")],
    ) {
        let at = cut.index(e.len() + 1);
        let at = (0..=at).rev().find(|&i| e.is_char_boundary(i)).unwrap_or(0);
        let tail = (0..=other.len().min(at)).rev().find(|&i| other.is_char_boundary(i)).unwrap_or(0);
        let broken = format!("{}{insert}{}", &e[..at], &other[tail..]);
        agrees(&broken)?;
        agrees(&format!("${{ {broken} }}"))?;
        agrees(&format!("${{ {} }}", &e[..at]))?;
    }

    #[test]
    fn the_reader_agrees_with_the_grammar_on_noise(text in expression_like()) {
        agrees(&text)?;
    }
}

/// Every string of the corpus and the examples, and some hostile ones, read the same way.
#[test]
fn the_reader_agrees_with_the_grammar_on_the_corpus() {
    fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            serde_json::Value::Object(members) => members.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut paths = Vec::new();
    files(&root.join("crates/lwir-corpus/cases"), &mut paths);
    files(&root.join("examples"), &mut paths);
    files(&root.join("crates/lwir-spec/tests/data"), &mut paths);
    let mut texts = Vec::new();
    for path in &paths {
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes) {
            strings(&value, &mut texts);
        }
    }
    assert!(texts.len() > 500, "only {} strings found", texts.len());
    texts.extend([
        "(".repeat(10_000) + "1" + &")".repeat(10_000),
        vec!["a"; 7000].join(" + "),
        "a ? b : ".repeat(100) + "c",
        "a ? b : ".repeat(5000) + "c",
        "a ? (b ? c : d) : ".repeat(40) + "e",
        "{".to_owned() + &"'k': a ? b : c, ".repeat(500) + "}",
        "!".repeat(7000) + "x",
        "x".to_owned() + &".f()".repeat(7000),
        "[".repeat(40) + &"]".repeat(40),
        "-9223372036854775808".to_owned(),
        "- 9223372036854775808 .x".to_owned(),
        format!("'{}'", "x".repeat(1 << 20)),
    ]);
    let mut expressions = 0;
    for text in &texts {
        agrees(text).unwrap();
        if text.contains("${") {
            expressions += 1;
            if let Some(inner) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) {
                agrees(inner).unwrap();
            }
        }
    }
    assert!(
        expressions > 100,
        "only {expressions} strings with expressions"
    );
}
