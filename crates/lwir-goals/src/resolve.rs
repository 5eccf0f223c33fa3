//! Resolving a work item's input: its literals as they are, each `${ … }` expression and
//! template evaluated (CEL semantics, `lwir_spec::expr::eval`) over `goal.input` and the
//! recorded outputs of the work it reads.
//!
//! A resolved input is at most [`MAX_INPUT_BYTES`] as compact JSON, counted while it is
//! built: a template that reads an output many times stops growing at the bound, and a list
//! of shared values is not copied out past it (LW1020).

use lwir_spec::Code;
use lwir_spec::expr::eval::{self, Bindings, Val, format_double, template_text};
use lwir_spec::expr::{Part, StringValue, parse_string_value};

/// Why an input could not be resolved: where (a JSON Pointer into the input) and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if pointer.is_empty() { String::new() } else { format!("at `{pointer}`: ") })]
pub struct ResolveError {
    /// Where in the input (empty: the input as a whole).
    pub pointer: String,
    /// What went wrong.
    pub message: String,
    /// The finding's code, when it has one: LW1020 for an input over [`MAX_INPUT_BYTES`]
    /// (`${ work.a.output.text }` written two thousand times in one template, say).
    pub code: Option<Code>,
}

/// Units of evaluation work each expression of an input may take.
pub const INPUT_BUDGET: u64 = eval::DEFAULT_BUDGET;

/// The most bytes a resolved input takes as compact JSON: what a runner may answer
/// (`lwir_repair::process::DEFAULT_MAX_OUTPUT`, 16 MiB), since inputs are made of outputs
/// and are handed to a runner the same way.
pub const MAX_INPUT_BYTES: usize = lwir_repair::process::DEFAULT_MAX_OUTPUT;

/// `input` with every expression and template evaluated under `bindings`, at most
/// [`MAX_INPUT_BYTES`] as compact JSON.
pub fn resolve(
    input: &serde_json::Value,
    bindings: &Bindings,
) -> Result<serde_json::Value, ResolveError> {
    resolve_within(input, bindings, MAX_INPUT_BYTES)
}

/// [`resolve`], at most `limit` bytes as compact JSON.
pub fn resolve_within(
    input: &serde_json::Value,
    bindings: &Bindings,
    limit: usize,
) -> Result<serde_json::Value, ResolveError> {
    let mut size = Size { left: limit, limit };
    value(input, bindings, String::new(), 0, &mut size)
}

/// What is left of the size bound as the input is built.
struct Size {
    left: usize,
    limit: usize,
}

impl Size {
    /// Takes `bytes` of the bound for the value at `at`, or says that the input would pass
    /// it there.
    fn take(&mut self, bytes: usize, at: &str) -> Result<(), ResolveError> {
        match self.left.checked_sub(bytes) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => {
                self.left = 0;
                Err(ResolveError {
                    pointer: at.to_owned(),
                    message: format!(
                        "the resolved input is larger than {} bytes as JSON, the most a work \
                         item's input may be (as its output may be)",
                        self.limit
                    ),
                    code: Some(Code::WorkInputTooLarge),
                })
            }
        }
    }
}

fn value(
    v: &serde_json::Value,
    bindings: &Bindings,
    at: String,
    depth: usize,
    size: &mut Size,
) -> Result<serde_json::Value, ResolveError> {
    // A stored input was read by the strict reader, which bounds nesting; this is a guard.
    if depth > 512 {
        return Err(ResolveError {
            pointer: at,
            message: "the input is nested too deeply".into(),
            code: None,
        });
    }
    Ok(match v {
        serde_json::Value::String(text) => string(text, bindings, &at, size)?,
        serde_json::Value::Array(items) => {
            size.take(2 + items.len().saturating_sub(1), &at)?;
            serde_json::Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| value(item, bindings, format!("{at}/{i}"), depth + 1, size))
                    .collect::<Result<_, _>>()?,
            )
        }
        serde_json::Value::Object(members) => {
            size.take(2 + members.len().saturating_sub(1), &at)?;
            serde_json::Value::Object(
                members
                    .iter()
                    .map(|(k, item)| {
                        let p = lwir_spec::pointer::join(&at, k);
                        size.take(json_string_len(k) + 3, &p)?;
                        value(item, bindings, p, depth + 1, size).map(|v| (k.clone(), v))
                    })
                    .collect::<Result<_, _>>()?,
            )
        }
        other => {
            size.take(other.to_string().len(), &at)?;
            other.clone()
        }
    })
}

fn string(
    text: &str,
    bindings: &Bindings,
    at: &str,
    size: &mut Size,
) -> Result<serde_json::Value, ResolveError> {
    let fail = |message: String| ResolveError {
        pointer: at.to_owned(),
        message,
        code: None,
    };
    let parsed = parse_string_value(text).map_err(|e| fail(e.message))?;
    let run = |expr: &lwir_spec::expr::Expr| {
        eval::evaluate(expr, bindings, INPUT_BUDGET).map_err(|e| fail(e.message))
    };
    match parsed {
        StringValue::Literal(s) => {
            size.take(json_string_len(&s) + 2, at)?;
            Ok(serde_json::Value::String(s))
        }
        StringValue::Expression(e) => json(&run(&e)?, at, size),
        StringValue::Template(parts) => {
            size.take(2, at)?;
            let mut out = String::new();
            for part in &parts {
                let value;
                let text = match part {
                    Part::Text(t) => std::borrow::Cow::Borrowed(t.as_str()),
                    Part::Expr(e) => {
                        value = run(e)?;
                        std::borrow::Cow::Owned(template_text(&value).map_err(fail)?)
                    }
                };
                // Taken before the text is copied in: the template stops growing at the bound.
                size.take(json_string_len(&text), at)?;
                out.push_str(&text);
            }
            Ok(serde_json::Value::String(out))
        }
    }
}

/// `v` (the value of the expression at `at`) as JSON, each part taken from the size bound
/// before it is copied out of the value: lists and maps of the evaluator share their items,
/// so a short expression can stand for a value far larger than the bound.
fn json(v: &Val, at: &str, size: &mut Size) -> Result<serde_json::Value, ResolveError> {
    use serde_json::Value as J;
    Ok(match v {
        Val::Null => {
            size.take(4, at)?;
            J::Null
        }
        Val::Bool(b) => {
            size.take(if *b { 4 } else { 5 }, at)?;
            J::Bool(*b)
        }
        Val::Int(i) => {
            size.take(i.to_string().len(), at)?;
            J::from(*i)
        }
        Val::Double(d) => {
            let n = serde_json::Number::from_f64(*d).ok_or_else(|| ResolveError {
                pointer: at.to_owned(),
                message: format!("the value {} has no JSON form", format_double(*d)),
                code: None,
            })?;
            size.take(n.to_string().len(), at)?;
            J::Number(n)
        }
        Val::String(s) => {
            size.take(json_string_len(s) + 2, at)?;
            J::String(s.to_string())
        }
        Val::List(items) => {
            size.take(2 + items.len().saturating_sub(1), at)?;
            J::Array(
                items
                    .iter()
                    .map(|item| json(item, at, size))
                    .collect::<Result<_, _>>()?,
            )
        }
        Val::Map(members) => {
            size.take(2 + members.len().saturating_sub(1), at)?;
            J::Object(
                members
                    .iter()
                    .map(|(k, item)| {
                        size.take(json_string_len(k) + 3, at)?;
                        Ok((k.clone(), json(item, at, size)?))
                    })
                    .collect::<Result<_, ResolveError>>()?,
            )
        }
    })
}

/// The length of `s` as the inside of a compact JSON string (serde_json's escapes).
fn json_string_len(s: &str) -> usize {
    s.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\x08' | b'\x0c' | b'\n' | b'\r' | b'\t' => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bindings(summary: &str) -> Bindings {
        let mut a = std::collections::BTreeMap::new();
        a.insert(
            "output".to_owned(),
            Val::from_json(&json!({ "summary": summary, "n": 1.5, "list": [1, null, true] })),
        );
        let mut work = std::collections::BTreeMap::new();
        work.insert("a".to_owned(), Val::Map(std::rc::Rc::new(a)));
        let mut b = Bindings::new();
        b.insert("work".into(), Val::Map(std::rc::Rc::new(work)));
        b
    }

    /// What the bound counts is the compact JSON of the resolved input, byte for byte.
    #[test]
    fn the_bound_is_the_compact_json_size() {
        let b = bindings("a \"quoted\"\n\u{1}é");
        let input = json!({
            "text": "${ work.a.output.summary }",
            "t": "x ${ work.a.output.summary } ${ work.a.output.n } y",
            "all": "${ work.a.output }",
            "literal": ["é\t", 3, -2.5, null, false, { "k\"": {} }],
        });
        let resolved = resolve(&input, &b).unwrap();
        let exact = serde_json::to_vec(&resolved).unwrap().len();
        assert_eq!(resolve_within(&input, &b, exact).unwrap(), resolved);
        let e = resolve_within(&input, &b, exact - 1).unwrap_err();
        assert_eq!(e.code, Some(Code::WorkInputTooLarge));
    }

    #[test]
    fn a_template_stops_growing_at_the_bound() {
        let b = bindings(&"x".repeat(1000));
        let input = json!({ "repo": "${ work.a.output.summary }".repeat(100) });
        let e = resolve_within(&input, &b, 10_000).unwrap_err();
        assert_eq!(e.pointer, "/repo");
        assert_eq!(e.code, Some(Code::WorkInputTooLarge));
        assert!(e.message.contains("10000 bytes"), "{e}");
    }

    #[test]
    fn a_list_of_shared_values_is_not_copied_past_the_bound() {
        let b = bindings(&"x".repeat(1000));
        let refs = vec!["work.a.output.summary"; 100].join(", ");
        let input = json!({ "all": format!("${{ [{refs}] }}") });
        let e = resolve_within(&input, &b, 10_000).unwrap_err();
        assert_eq!(e.pointer, "/all");
        assert_eq!(e.code, Some(Code::WorkInputTooLarge));
    }

    #[test]
    fn other_failures_have_no_code() {
        let b = bindings("s");
        let e = resolve(&json!({ "x": "${ work.b.output }" }), &b).unwrap_err();
        assert_eq!(e.code, None);
    }
}
