//! RFC 8785 canonicalization and content hashing (`lwir_spec::canon`).

use lwir_spec::canon::{canonical_bytes, canonicalize, version_of, write_canonical};
use lwir_spec::document::{Number, read};
use lwir_spec::{Code, Node, Span, Value};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

/// Reads `src`, insisting that it is clean I-JSON.
fn node(src: &str) -> Node {
    let out = read(src.as_bytes().to_vec());
    assert!(out.findings.is_empty(), "{src}: {:?}", out.findings);
    out.document.expect("a document").root().clone()
}

/// Reads canonical bytes back: they must be clean I-JSON to lwirc's own reader. A large
/// integral double is written without a fraction (`1e+20` is `100000000000000000000`), and
/// the reader takes exactly that spelling as the double (spec §1).
fn reread(src: &str) -> Node {
    node(src)
}

/// The canonical form of `src`, as a string: made from its tree, and the same made while
/// reading it (what `lwirc hash` and `lwirc canon` do).
fn canon(src: &str) -> String {
    let bytes = canonical_bytes(&node(src));
    let streamed = canonicalize(src.as_bytes()).map(|b| String::from_utf8_lossy(&b).into_owned());
    assert_eq!(
        streamed.as_deref(),
        Some(&*String::from_utf8_lossy(&bytes)),
        "canonical while reading {src}"
    );
    String::from_utf8(bytes).expect("canonical form is UTF-8")
}

fn number(value: f64) -> Node {
    Node {
        span: Span::default(),
        value: Value::Number(Number {
            value,
            exact_integer: false,
        }),
    }
}

// ---------------------------------------------------------------------------------------
// RFC 8785's published examples.

/// §3.2.2 / §3.2.3: numbers, string escapes and literals in one object.
#[test]
fn rfc_example_numbers_strings_literals() {
    let src = r#"{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"#;
    let expected = r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#;
    assert_eq!(canon(src), expected);
}

/// §3.2.3: keys sorted by UTF-16 code units.
#[test]
fn rfc_example_utf16_key_order() {
    let src = r#"{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}"#;
    let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
                    \"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\
                    \"\u{1f600}\":\"Emoji: Grinning Face\",\
                    \"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
    assert_eq!(canon(src), expected);
    // The emoji (a surrogate pair D83D DE00) sorts before U+FB33, unlike in UTF-8 order.
    assert!("\u{1f600}".as_bytes() > "\u{fb33}".as_bytes());
}

/// Appendix B: IEEE 754 doubles and their canonical form.
#[test]
fn rfc_appendix_b_numbers() {
    let cases: &[(u64, &str)] = &[
        (0x0000000000000000, "0"),
        (0x8000000000000000, "0"),
        (0x0000000000000001, "5e-324"),
        (0x8000000000000001, "-5e-324"),
        (0x7fefffffffffffff, "1.7976931348623157e+308"),
        (0xffefffffffffffff, "-1.7976931348623157e+308"),
        (0x4340000000000000, "9007199254740992"),
        (0xc340000000000000, "-9007199254740992"),
        (0x4430000000000000, "295147905179352830000"),
        (0x44b52d02c7e14af5, "9.999999999999997e+22"),
        (0x44b52d02c7e14af6, "1e+23"),
        (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
        (0x444b1ae4d6e2ef4e, "999999999999999700000"),
        (0x444b1ae4d6e2ef4f, "999999999999999900000"),
        (0x444b1ae4d6e2ef50, "1e+21"),
        (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
        (0x3eb0c6f7a0b5ed8d, "0.000001"),
        (0x41b3de4355555553, "333333333.3333332"),
        (0x41b3de4355555554, "333333333.33333325"),
        (0x41b3de4355555555, "333333333.3333333"),
        (0x41b3de4355555556, "333333333.3333334"),
        (0x41b3de4355555557, "333333333.33333343"),
        (0xbecbf647612f3696, "-0.0000033333333333333333"),
        (0x43143ff3c1cb0959, "1424953923781206.2"),
    ];
    for &(bits, expected) in cases {
        let got = canonical_bytes(&number(f64::from_bits(bits)));
        assert_eq!(String::from_utf8(got).unwrap(), expected, "{bits:#018x}");
        // Reading the canonical form back gives the same double.
        let back = reread(expected).as_number().unwrap().value;
        assert_eq!(back.to_bits() & !(1 << 63), bits & !(1 << 63), "{expected}");
    }
}

// ---------------------------------------------------------------------------------------
// Hand cases.

#[test]
fn numbers_are_formatted_like_ecmascript() {
    let cases: &[(&str, &str)] = &[
        ("1e21", "1e+21"),
        ("1e20", "100000000000000000000"),
        ("1e-7", "1e-7"),
        ("1.5e-7", "1.5e-7"),
        ("-0", "0"),
        ("-0.0", "0"),
        ("-1e-400", "0"),
        ("5e-324", "5e-324"),
        ("333333333.33333329", "333333333.3333333"),
        ("9007199254740991", "9007199254740991"),
        ("-9007199254740991", "-9007199254740991"),
        ("100", "100"),
        ("1E2", "100"),
        ("1.0", "1"),
        ("0.1", "0.1"),
        ("1e-6", "0.000001"),
        // 1.23e22 is at least 1e21, so ECMAScript uses the exponent form.
        ("123e20", "1.23e+22"),
        ("123e18", "123000000000000000000"),
        ("-12.5", "-12.5"),
        ("0.30000000000000004", "0.30000000000000004"),
    ];
    for (src, expected) in cases {
        assert_eq!(canon(src), *expected, "{src}");
        assert_eq!(
            canon(&format!("[{src}]")),
            format!("[{expected}]"),
            "[{src}]"
        );
    }
}

#[test]
fn integers_beyond_the_safe_range_go_through_their_double() {
    // The reader flags them, but they still canonicalise via f64 as RFC 8785 requires.
    let out = read(b"[9007199254740993, 18446744073709551616, 1152921504606846976]".to_vec());
    assert!(
        out.findings
            .iter()
            .all(|f| f.code == Code::IntegerOutOfRange)
    );
    let root = out.document.unwrap().root().clone();
    let bytes = canonical_bytes(&root);
    assert_eq!(
        String::from_utf8(bytes.clone()).unwrap(),
        "[9007199254740992,18446744073709552000,1152921504606847000]"
    );
    assert_eq!(
        serde_json_canonicalizer::to_vec(&root.to_json()).unwrap(),
        bytes
    );
}

/// What `lwirc canon` writes reads back, canonicalises to the same bytes and hashes to the
/// same version: `1e20` once came out as `100000000000000000000`, which the reader refused.
#[test]
fn canonical_bytes_read_back_to_the_same_version() {
    // The fuzzer's finds among them: 1e16, 9007199254740992.0, 444505050050000e2 and
    // 444555555155155555.55 (fuzz/regressions/canon/).
    let src = r#"{"big": [1e20, -1e20, 9007199254740992.0, 1.152921504606847e18, 1e21,
                  123456789e12, 1.7976931348623157e308, 5e-324, 4.5, 0.1, -0.0, 2e53,
                  1e16, 444505050050000e2, 444555555155155555.55]}"#;
    let once = canonical_bytes(&node(src));
    let text = String::from_utf8(once.clone()).unwrap();
    assert!(text.contains("100000000000000000000,-100000000000000000000,9007199254740992"));
    let twice = canonical_bytes(&node(&text));
    assert_eq!(once, twice);
    assert_eq!(version_of(&node(src)), version_of(&node(&text)));
}

#[test]
fn numbers_that_overflow_a_double_are_reported_by_the_reader() {
    // `1E400` has no double; it is the reader's problem, not the canonicaliser's.
    let out = read(b"[1E400]".to_vec());
    assert!(
        out.findings
            .iter()
            .any(|f| f.code == Code::NumberOutOfRange),
        "{:?}",
        out.findings
    );
}

#[test]
fn strings_escape_only_quote_backslash_and_controls() {
    let cases: &[(&str, &str)] = &[
        // Controls: short escapes where they exist, else \u00xx in lowercase hex.
        (r#""\u001f""#, r#""\u001f""#),
        (r#""\u001F\u000B\u0000""#, r#""\u001f\u000b\u0000""#),
        (r#""\b\f\n\r\t""#, r#""\b\f\n\r\t""#),
        (r#""\u0008\u000c""#, r#""\b\f""#),
        // Quote and backslash.
        (r#""a\"b\\c""#, r#""a\"b\\c""#),
        // The solidus is not escaped.
        (r#""\/""#, r#""/""#),
        // U+007F, U+2028, U+2029 and non-ASCII are written raw.
        (r#""\u007f""#, "\"\u{7f}\""),
        (r#""\u2028\u2029""#, "\"\u{2028}\u{2029}\""),
        (r#""\u00e9\u20ac\ud83d\ude00""#, "\"é€😀\""),
        ("\"é€😀\u{7f}\"", "\"é€😀\u{7f}\""),
        (r#""""#, r#""""#),
    ];
    for (src, expected) in cases {
        assert_eq!(canon(src), *expected, "{src}");
    }
}

#[test]
fn whitespace_is_removed_and_nested_objects_are_sorted() {
    let src =
        " { \"b\" : [ 1 , { \"z\" : null , \"a\" : true } , [ ] , { } ] ,\n\t\"a\" : false } ";
    assert_eq!(
        canon(src),
        r#"{"a":false,"b":[1,{"a":true,"z":null},[],{}]}"#
    );
    // Keys that are prefixes of each other sort shortest first.
    assert_eq!(
        canon(r#"{"ab":1,"a":2,"":3,"b":4}"#),
        r#"{"":3,"a":2,"ab":1,"b":4}"#
    );
    // Escaped keys sort by their decoded value.
    assert_eq!(canon(r#"{"\u0062":1,"\u0061":2}"#), r#"{"a":2,"b":1}"#);
}

#[test]
fn write_canonical_appends() {
    let mut out = b"prefix:".to_vec();
    write_canonical(&node("[1, 2]"), &mut out);
    assert_eq!(out, b"prefix:[1,2]");
}

#[test]
fn large_objects_sort_correctly() {
    // Many keys mixing the UTF-16 / UTF-8 order differences, in reverse order.
    let chars = [
        'a',
        'é',
        '\u{e000}',
        '\u{fb33}',
        '\u{ffff}',
        '\u{10000}',
        '\u{1f600}',
    ];
    let mut keys = Vec::new();
    for a in chars {
        for b in chars {
            for c in chars {
                keys.push(format!("{a}{b}{c}"));
            }
        }
    }
    keys.reverse();
    let src = format!(
        "{{{}}}",
        keys.iter()
            .enumerate()
            .map(|(i, k)| format!("\"{k}\":{i}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let canonical = canon(&src);
    let mut sorted: Vec<_> = keys.iter().enumerate().collect();
    sorted.sort_by(|a, b| a.1.encode_utf16().cmp(b.1.encode_utf16()));
    let expected = format!(
        "{{{}}}",
        sorted
            .iter()
            .map(|(i, k)| format!("\"{k}\":{i}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    assert_eq!(canonical, expected);
}

/// Keys that need escapes order by their text, not by their escaped spelling: `"\n"` (U+000A,
/// written `\n`) sorts before `"A"` although the backslash is after `A`.
#[test]
fn escaped_keys_sort_by_their_text() {
    let src = r#"{"b": {"z": 1, "A": 2, "\n": 3, "\"": 4, "\\": 5, "\u0001": 6, "a\"b": 7, "a\\b": 8, "a": 9}, "a": []}"#;
    assert_eq!(
        canon(src),
        r#"{"a":[],"b":{"\u0001":6,"\n":3,"\"":4,"A":2,"\\":5,"a":9,"a\"b":7,"a\\b":8,"z":1}}"#
    );
}

/// What is not clean I-JSON has no canonical form made while reading: the reader's findings
/// are for the caller to report (`lwirc hash` reads it again for them).
#[test]
fn canonical_while_reading_refuses_what_the_reader_reports() {
    for src in [
        r#"{"a": 1, "b": 2, "a": 3}"#,
        r#"{"b": 1, "a": 2, "b": 3}"#,
        r#"{"k": {"x": 1, "x": 1}}"#,
        r#"["\ud800"]"#,
        "[\"\u{1}\"]",
        "[9007199254740993]",
        "[1e400]",
        "[1, 2",
        "",
        "{} {}",
    ] {
        assert_eq!(canonicalize(src.as_bytes()), None, "{src}");
    }
    assert_eq!(canonicalize(b"[\"\xff\"]"), None);
    assert_eq!(canonicalize(b"{}").as_deref(), Some(&b"{}"[..]));
    assert_eq!(canonicalize(b" [ ] ").as_deref(), Some(&b"[]"[..]));
}

// ---------------------------------------------------------------------------------------
// Versions.

#[test]
fn version_is_the_sha256_of_the_canonical_bytes() {
    let doc = node(r#"{"name": "w", "steps": [1, 2.50, "x"]}"#);
    let version = version_of(&doc);
    let digest = Sha256::digest(br#"{"name":"w","steps":[1,2.5,"x"]}"#);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(version, format!("sha256:{hex}"));
    let tail = version.strip_prefix("sha256:").unwrap();
    assert_eq!(tail.len(), 64);
    assert!(
        tail.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
}

#[test]
fn equivalent_documents_have_the_same_version() {
    let a = node(r#"{"b":1.0,"a":"\u00e9","c":{"y":[1e2],"x":null}}"#);
    let b = node("{\n  \"a\": \"é\",\n  \"c\": { \"x\": null, \"y\": [ 100 ] },\n  \"b\": 1\n}\n");
    assert_eq!(version_of(&a), version_of(&b));
    let c = node(r#"{"a":"é","b":2,"c":{"x":null,"y":[100]}}"#);
    assert_ne!(version_of(&a), version_of(&c));
}

// ---------------------------------------------------------------------------------------
// Generated documents: idempotence and a differential test.

/// A JSON value to write out as text in various styles.
#[derive(Clone, Debug)]
enum J {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

/// How a generated document is spelled.
#[derive(Clone, Copy, Debug)]
struct Style {
    /// Whitespace around tokens.
    spaces: bool,
    /// Escape every non-ASCII character (non-BMP as a surrogate pair).
    escape_non_ascii: bool,
    /// Write floats in `{:e}` form instead of `{:?}`.
    exponent: bool,
}

fn interesting_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => any::<char>(),
        3 => proptest::char::range('a', 'e'),
        2 => (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap()),
        2 => prop::sample::select(vec![
            '"', '\\', '/', '\u{7f}', '\u{80}', '\u{f6}', '\u{20ac}', '\u{2028}', '\u{2029}',
            '\u{d7ff}', '\u{e000}', '\u{fb33}', '\u{fffd}', '\u{ffff}', '\u{10000}',
            '\u{1f600}', '\u{10ffff}',
        ]),
    ]
}

fn string(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(interesting_char(), 0..max).prop_map(|cs| cs.into_iter().collect())
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
        (-1e6f64..1e6),
        (-1e-5f64..1e-5),
        prop::sample::select(vec![
            0.0,
            -0.0,
            1e21,
            1e-7,
            9.999999999999999e20,
            5e-324,
            -5e-324,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            0.1,
            1e-6,
            123e20,
            // RFC 8785's 333333333.33333329.
            f64::from_bits(0x41b3de4355555555),
        ]),
    ]
}

fn json() -> impl Strategy<Value = J> {
    const SAFE: i64 = (1 << 53) - 1;
    let leaf = prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        (-SAFE..=SAFE).prop_map(J::Int),
        (-1000i64..1000).prop_map(J::Int),
        float().prop_map(J::Float),
        string(12).prop_map(J::Str),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(J::Arr),
            prop::collection::vec((string(4), inner), 0..8).prop_map(|members| {
                // Keys must be unique in I-JSON: keep the first of each.
                let mut seen = std::collections::HashSet::new();
                J::Obj(
                    members
                        .into_iter()
                        .filter(|(k, _)| seen.insert(k.clone()))
                        .collect(),
                )
            }),
        ]
    })
}

fn style() -> impl Strategy<Value = Style> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(spaces, escape_non_ascii, exponent)| Style {
            spaces,
            escape_non_ascii,
            exponent,
        },
    )
}

fn write_json(j: &J, style: Style, out: &mut String) {
    let sp = if style.spaces { " \n\t" } else { "" };
    match j {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Int(i) => out.push_str(&i.to_string()),
        J::Float(f) if style.exponent => out.push_str(&format!("{f:e}")),
        J::Float(f) => out.push_str(&format!("{f:?}")),
        J::Str(s) => write_json_string(s, style, out),
        J::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(sp);
                write_json(item, style, out);
                out.push_str(sp);
            }
            out.push(']');
        }
        J::Obj(members) => {
            out.push('{');
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(sp);
                write_json_string(k, style, out);
                out.push_str(sp);
                out.push(':');
                out.push_str(sp);
                write_json(v, style, out);
            }
            out.push_str(sp);
            out.push('}');
        }
    }
}

fn write_json_string(s: &str, style: Style, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' if style.escape_non_ascii => out.push_str("\\/"),
            c if u32::from(c) < 0x20 || (style.escape_non_ascii && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A reference implementation, as plain as possible, to compare against.
fn reference(j: &J, out: &mut String) {
    match j {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Int(i) => reference_number(*i as f64, out),
        J::Float(f) => reference_number(*f, out),
        J::Str(s) => reference_string(s, out),
        J::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reference(item, out);
            }
            out.push(']');
        }
        J::Obj(members) => {
            let mut sorted: Vec<_> = members.iter().collect();
            sorted.sort_by_key(|(k, _)| k.encode_utf16().collect::<Vec<u16>>());
            out.push('{');
            for (i, (k, v)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reference_string(k, out);
                out.push(':');
                reference(v, out);
            }
            out.push('}');
        }
    }
}

fn reference_number(f: f64, out: &mut String) {
    if f == 0.0 {
        out.push('0');
    } else {
        out.push_str(ryu_js::Buffer::new().format_finite(f));
    }
}

fn reference_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// canon(read(canon(x))) == canon(x), and the canonical form does not depend on how the
    /// document was spelled.
    #[test]
    fn canonical_form_is_idempotent_and_spelling_independent(
        j in json(), a in style(), b in style()
    ) {
        let mut text_a = String::new();
        write_json(&j, a, &mut text_a);
        let mut text_b = String::new();
        write_json(&j, b, &mut text_b);
        let once = canonical_bytes(&node(&text_a));
        let twice = canonical_bytes(&reread(std::str::from_utf8(&once).unwrap()));
        prop_assert_eq!(&once, &twice);
        prop_assert_eq!(&once, &canonical_bytes(&node(&text_b)));
        prop_assert_eq!(canonicalize(text_a.as_bytes()), Some(once.clone()));
        prop_assert_eq!(canonicalize(text_b.as_bytes()), Some(once.clone()));
        let mut expected = String::new();
        reference(&j, &mut expected);
        prop_assert_eq!(String::from_utf8(once).unwrap(), expected);
    }

    /// Our bytes equal `serde_json_canonicalizer`'s on the same value.
    ///
    /// No class of input found where they differ: both sort keys by UTF-16 code units,
    /// escape only `"`, `\` and U+0000–U+001F (lowercase `\u00xx`), and format every number
    /// from its double with `ryu-js`. (It writes `-0` as `0` through `ryu-js` too.)
    #[test]
    fn agrees_with_serde_json_canonicalizer(j in json(), s in style()) {
        let mut text = String::new();
        write_json(&j, s, &mut text);
        let doc = node(&text);
        let theirs = serde_json_canonicalizer::to_vec(&doc.to_json()).unwrap();
        prop_assert_eq!(
            String::from_utf8(canonical_bytes(&doc)).unwrap(),
            String::from_utf8(theirs).unwrap()
        );
    }
}
