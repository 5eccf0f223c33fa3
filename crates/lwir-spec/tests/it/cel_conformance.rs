//! The CEL conformance cases (google/cel-spec `tests/simple/testdata`, vendored in
//! `tests/data/cel-spec/` with its licence) that fall inside LWIR's subset, run through
//! `lwir_spec::expr::eval`.
//!
//! A case is outside the subset, and skipped, when (the rules, each counted in the output):
//! - its expression does not parse as LWIR (unsigned and bytes literals, raw and triple-quoted
//!   strings, protobuf messages, `dyn`, `type`, …);
//! - it calls a function LWIR does not whitelist (timestamps, durations, `type()`, …);
//! - its expected value or a binding is of a type LWIR has no value for (uint, bytes, type,
//!   message, enum, unknown), or it declares a type environment or a container (messages);
//! - it expects a parse or check error (LWIR's checker is its own and not CEL's).
//!
//! Every other case must give exactly the expected value (same type: `1` is not `1.0`), or
//! an error when an evaluation error is expected — except the [`EXPECTED_FAILURES`], each
//! with why LWIR differs on purpose. A case there that starts passing fails the test, so
//! the list stays true.

use std::collections::BTreeMap;
use std::rc::Rc;

use lwir_spec::expr::eval::{self, Bindings, Val};
use lwir_spec::expr::functions::function;
use lwir_spec::expr::{Expr, ExprKind, parse_expression};

/// The vendored files (all of `tests/simple/testdata` whose cases can be in the subset).
const FILES: &[&str] = &[
    "basic",
    "comparisons",
    "conversions",
    "fp_math",
    "integer_math",
    "lists",
    "logic",
    "macros",
    "string",
];

/// Cases inside the subset where LWIR gives another result than CEL, on purpose.
const EXPECTED_FAILURES: &[(&str, &str)] = &[
    // LWIR's values are JSON's: map keys are strings (a draft's maps are JSON objects), so
    // a map literal with an int key is an error, not a map.
    (
        "comparisons/eq_literal/eq_map_value_mixed_types",
        "int map key",
    ),
    (
        "comparisons/eq_literal/not_eq_map_value_null",
        "int map key",
    ),
    (
        "comparisons/ne_literal/not_ne_map_int_to_float",
        "int map key",
    ),
    ("lists/size/map", "int map key"),
    ("macros/exists/map_key_type_shortcircuit", "int map key"),
    ("macros/exists/map_key_type_exhaustive", "int map key"),
];

// ---------------------------------------------------------------------------------------
// A small reader of the protobuf text format, enough for the test files.

#[derive(Clone, Debug)]
enum Field {
    Scalar(Scalar),
    Message(Message),
}

#[derive(Clone, Debug)]
enum Scalar {
    String(String),
    Number(String),
    Ident(String),
}

type Message = Vec<(String, Field)>;

struct TextProto<'a> {
    text: &'a [u8],
    at: usize,
}

impl TextProto<'_> {
    fn skip(&mut self) {
        while let Some(&b) = self.text.get(self.at) {
            if b == b'#' {
                while self.text.get(self.at).is_some_and(|&b| b != b'\n') {
                    self.at += 1;
                }
            } else if b.is_ascii_whitespace() || b == b',' || b == b';' {
                self.at += 1;
            } else {
                break;
            }
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip();
        self.text.get(self.at).copied()
    }

    fn message(&mut self, close: Option<u8>) -> Message {
        let mut fields = Vec::new();
        loop {
            match self.peek() {
                None => {
                    assert!(close.is_none(), "unclosed message");
                    return fields;
                }
                Some(b) if Some(b) == close => {
                    self.at += 1;
                    return fields;
                }
                Some(_) => {}
            }
            let name = self.word();
            if self.peek() == Some(b':') {
                self.at += 1;
            }
            let value = match self.peek() {
                Some(open @ (b'{' | b'<')) => {
                    self.at += 1;
                    Field::Message(self.message(Some(if open == b'{' { b'}' } else { b'>' })))
                }
                Some(b'[') => {
                    // A list of values: each becomes a repeated field.
                    self.at += 1;
                    while self.peek() != Some(b']') {
                        let item = self.value();
                        fields.push((name.clone(), item));
                    }
                    self.at += 1;
                    continue;
                }
                _ => self.value(),
            };
            fields.push((name, value));
        }
    }

    fn value(&mut self) -> Field {
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                Field::Message(self.message(Some(b'}')))
            }
            Some(q @ (b'"' | b'\'')) => {
                // Adjacent strings concatenate.
                let mut text = Vec::new();
                while self.peek() == Some(q)
                    || self.peek() == Some(b'"')
                    || self.peek() == Some(b'\'')
                {
                    let quote = self.text[self.at];
                    self.at += 1;
                    text.extend(self.string(quote));
                }
                // Only `bytes_value`s, which are skipped, hold bytes that are not UTF-8.
                Field::Scalar(Scalar::String(String::from_utf8_lossy(&text).into_owned()))
            }
            Some(b'-' | b'0'..=b'9' | b'.') => {
                let start = self.at;
                self.at += 1;
                while self
                    .text
                    .get(self.at)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-'))
                {
                    self.at += 1;
                }
                Field::Scalar(Scalar::Number(
                    String::from_utf8_lossy(&self.text[start..self.at]).into_owned(),
                ))
            }
            _ => Field::Scalar(Scalar::Ident(self.word())),
        }
    }

    fn word(&mut self) -> String {
        self.skip();
        let start = self.at;
        while self.text.get(self.at).is_some_and(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'[' | b']')
        }) {
            // `[ext.name]` field names: keep the brackets with the word.
            self.at += 1;
        }
        assert!(self.at > start, "expected a name at byte {}", self.at);
        String::from_utf8_lossy(&self.text[start..self.at]).into_owned()
    }

    /// A quoted string's bytes after its opening quote, up to the closing one.
    fn string(&mut self, quote: u8) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = self.text[self.at];
            self.at += 1;
            if b == quote {
                return out;
            }
            if b != b'\\' {
                out.push(b);
                continue;
            }
            let e = self.text[self.at];
            self.at += 1;
            match e {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'a' => out.push(7),
                b'b' => out.push(8),
                b'f' => out.push(12),
                b'v' => out.push(11),
                b'x' => {
                    let mut n = 0u32;
                    let mut digits = 0;
                    while digits < 2 && self.text[self.at].is_ascii_hexdigit() {
                        n = n * 16 + char::from(self.text[self.at]).to_digit(16).unwrap_or(0);
                        self.at += 1;
                        digits += 1;
                    }
                    out.push(n as u8);
                }
                b'0'..=b'7' => {
                    let mut n = u32::from(e - b'0');
                    for _ in 0..2 {
                        match self.text[self.at] {
                            d @ b'0'..=b'7' => {
                                n = n * 8 + u32::from(d - b'0');
                                self.at += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push(n as u8);
                }
                b'u' | b'U' => {
                    let len = if e == b'u' { 4 } else { 8 };
                    let hex = std::str::from_utf8(&self.text[self.at..self.at + len]).unwrap();
                    self.at += len;
                    let c =
                        char::from_u32(u32::from_str_radix(hex, 16).unwrap()).unwrap_or('\u{FFFD}');
                    out.extend(c.to_string().bytes());
                }
                other => out.push(other),
            }
        }
    }
}

fn get<'m>(message: &'m Message, name: &str) -> Option<&'m Field> {
    message.iter().find(|(n, _)| n == name).map(|(_, f)| f)
}

fn all<'m>(message: &'m Message, name: &'m str) -> impl Iterator<Item = &'m Field> {
    message
        .iter()
        .filter(move |(n, _)| n == name)
        .map(|(_, f)| f)
}

fn text(field: Option<&Field>) -> Option<&str> {
    match field {
        Some(Field::Scalar(Scalar::String(s) | Scalar::Number(s) | Scalar::Ident(s))) => Some(s),
        _ => None,
    }
}

fn message(field: Option<&Field>) -> Option<&Message> {
    match field {
        Some(Field::Message(m)) => Some(m),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Values.

/// A `cel.expr.Value` as an LWIR value; why not, when LWIR has none of its type.
fn value_of(value: &Message) -> Result<Val, String> {
    let [(kind, field)] = value.as_slice() else {
        return Err(format!("a value with {} fields", value.len()));
    };
    Ok(match kind.as_str() {
        "null_value" => Val::Null,
        "bool_value" => Val::Bool(text(Some(field)) == Some("true")),
        "int64_value" => Val::Int(
            text(Some(field))
                .unwrap_or("0")
                .parse()
                .map_err(|e| format!("{e}"))?,
        ),
        "double_value" => Val::Double(parse_double(text(Some(field)).unwrap_or("0"))),
        "string_value" => Val::String(text(Some(field)).unwrap_or("").into()),
        "list_value" => {
            let m = message(Some(field)).ok_or("a list that is not a message")?;
            let items = all(m, "values")
                .map(|v| value_of(message(Some(v)).ok_or("a list item")?))
                .collect::<Result<Vec<_>, _>>()?;
            Val::List(Rc::new(items))
        }
        "map_value" => {
            let m = message(Some(field)).ok_or("a map that is not a message")?;
            let mut map = BTreeMap::new();
            for entry in all(m, "entries") {
                let entry = message(Some(entry)).ok_or("a map entry")?;
                let key = value_of(message(get(entry, "key")).ok_or("a map key")?)?;
                let Val::String(key) = key else {
                    return Err("a map key that is not a string".into());
                };
                let value = value_of(message(get(entry, "value")).ok_or("a map value")?)?;
                map.insert(key.to_string(), value);
            }
            Val::Map(Rc::new(map))
        }
        other => return Err(format!("a `{other}`")),
    })
}

fn parse_double(text: &str) -> f64 {
    match text {
        "inf" | "infinity" | "Infinity" => f64::INFINITY,
        "-inf" | "-infinity" | "-Infinity" => f64::NEG_INFINITY,
        "nan" | "NaN" => f64::NAN,
        // A float suffix, `1.5f`.
        t => t.trim_end_matches(['f', 'F']).parse().unwrap_or(f64::NAN),
    }
}

/// Equal as values and as types: what a conformance case expects (`1` is not `1.0`; NaN
/// is NaN).
fn same(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Null, Val::Null) => true,
        (Val::Bool(x), Val::Bool(y)) => x == y,
        (Val::Int(x), Val::Int(y)) => x == y,
        (Val::Double(x), Val::Double(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Val::String(x), Val::String(y)) => x == y,
        (Val::List(x), Val::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| same(a, b))
        }
        (Val::Map(x), Val::Map(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => false,
    }
}

/// A function the expression calls that LWIR does not whitelist, if any.
fn unlisted_call(expr: &Expr) -> Option<String> {
    let mut found = None;
    expr.walk(&mut |e| {
        if let ExprKind::Call { function: name, .. } = &e.kind
            && function(name).is_none()
            && found.is_none()
        {
            found = Some(name.clone());
        }
    });
    found
}

// ---------------------------------------------------------------------------------------

#[derive(Default)]
struct Tally {
    passed: usize,
    expected_failures: Vec<String>,
    skipped: BTreeMap<&'static str, usize>,
    failures: Vec<String>,
}

fn run_case(file: &str, section: &str, case: &Message, tally: &mut Tally) {
    let name = format!(
        "{file}/{section}/{}",
        text(get(case, "name")).unwrap_or("?")
    );
    let expected_failure = EXPECTED_FAILURES.iter().find(|(n, _)| *n == name);
    let mut skip = |why: &'static str| *tally.skipped.entry(why).or_default() += 1;
    if get(case, "type_env").is_some() || get(case, "container").is_some() {
        return skip("declares types or a container (protobuf messages)");
    }
    if get(case, "disable_macros").is_some() {
        return skip("disables macros");
    }
    let Some(source) = text(get(case, "expr")) else {
        return skip("no expression");
    };
    let Ok(expr) = parse_expression(source) else {
        return skip("syntax outside the subset");
    };
    if unlisted_call(&expr).is_some() {
        return skip("calls a function outside the whitelist");
    }
    let mut bindings = Bindings::new();
    for binding in all(case, "bindings") {
        let Some(binding) = message(Some(binding)) else {
            return skip("a binding that is not a message");
        };
        let key = text(get(binding, "key")).unwrap_or("").to_owned();
        let value = message(get(binding, "value")).and_then(|v| message(get(v, "value")));
        match value.map(value_of) {
            Some(Ok(v)) => {
                bindings.insert(key, v);
            }
            _ => return skip("a binding of a type outside the subset"),
        }
    }
    enum Expect {
        Value(Val),
        Error,
    }
    let expect = if let Some(value) = message(get(case, "value")) {
        match value_of(value) {
            Ok(v) => Expect::Value(v),
            Err(_) => return skip("expects a value of a type outside the subset"),
        }
    } else if get(case, "eval_error").is_some() {
        Expect::Error
    } else if get(case, "parse_error").is_some() || get(case, "check_error").is_some() {
        return skip("expects a parse or check error");
    } else if get(case, "typed_result").is_some()
        || get(case, "any_eval_errors").is_some()
        || get(case, "unknown").is_some()
        || get(case, "any_unknowns").is_some()
    {
        return skip("expects typed results or unknowns");
    } else {
        Expect::Value(Val::Bool(true))
    };
    let got = eval::evaluate(&expr, &bindings, eval::DEFAULT_BUDGET);
    let ok = match (&expect, &got) {
        (Expect::Value(want), Ok(value)) => same(want, value),
        (Expect::Error, Err(_)) => true,
        _ => false,
    };
    match (ok, expected_failure) {
        (true, None) => tally.passed += 1,
        (false, Some(_)) => tally.expected_failures.push(name),
        (true, Some((_, why))) => tally.failures.push(format!(
            "{name}: passes, but is listed as an expected failure ({why})"
        )),
        (false, None) => {
            let want = match &expect {
                Expect::Value(v) => format!("{v:?}"),
                Expect::Error => "an error".to_owned(),
            };
            let got = match got {
                Ok(v) => format!("{v:?}"),
                Err(e) => format!("error: {}", e.message),
            };
            tally
                .failures
                .push(format!("{name}: `{source}` gave {got}, expected {want}"));
        }
    }
}

#[test]
fn cel_conformance_cases_in_the_subset() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cel-spec");
    let mut tally = Tally::default();
    for file in FILES {
        let bytes = std::fs::read(dir.join(format!("{file}.textproto"))).unwrap();
        let root = TextProto {
            text: &bytes,
            at: 0,
        }
        .message(None);
        for section in all(&root, "section") {
            let section = message(Some(section)).unwrap();
            let section_name = text(get(section, "name")).unwrap_or("?");
            for case in all(section, "test") {
                run_case(file, section_name, message(Some(case)).unwrap(), &mut tally);
            }
        }
    }
    let skipped: usize = tally.skipped.values().sum();
    eprintln!(
        "CEL conformance: {} passed, {} expected failures, {skipped} skipped: {:?}",
        tally.passed,
        tally.expected_failures.len(),
        tally.skipped
    );
    assert!(
        tally.failures.is_empty(),
        "{} failures:\n{}",
        tally.failures.len(),
        tally.failures.join("\n")
    );
    // The subset's share of the suite: a parser or reader change that skips cases by
    // mistake shows here.
    assert!(tally.passed >= 399, "only {} cases ran", tally.passed);
}
