//! Resolving a work item's input: its literals as they are, each `${ … }` expression and
//! template evaluated (CEL semantics, `lwir_spec::expr::eval`) over `goal.input` and the
//! recorded outputs of the work it reads.

use lwir_spec::expr::eval::{self, Bindings, template_text};
use lwir_spec::expr::{Part, StringValue, parse_string_value};

/// Why an input could not be resolved: where (a JSON Pointer into the input) and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("at `{pointer}`: {message}")]
pub struct ResolveError {
    /// Where in the input.
    pub pointer: String,
    /// What went wrong.
    pub message: String,
}

/// Units of evaluation work each expression of an input may take.
pub const INPUT_BUDGET: u64 = eval::DEFAULT_BUDGET;

/// `input` with every expression and template evaluated under `bindings`.
pub fn resolve(
    input: &serde_json::Value,
    bindings: &Bindings,
) -> Result<serde_json::Value, ResolveError> {
    value(input, bindings, String::new(), 0)
}

fn value(
    v: &serde_json::Value,
    bindings: &Bindings,
    at: String,
    depth: usize,
) -> Result<serde_json::Value, ResolveError> {
    // A stored input was read by the strict reader, which bounds nesting; this is a guard.
    if depth > 512 {
        return Err(ResolveError {
            pointer: at,
            message: "the input is nested too deeply".into(),
        });
    }
    Ok(match v {
        serde_json::Value::String(text) => string(text, bindings, &at)?,
        serde_json::Value::Array(items) => serde_json::Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| value(item, bindings, format!("{at}/{i}"), depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        serde_json::Value::Object(members) => serde_json::Value::Object(
            members
                .iter()
                .map(|(k, item)| {
                    let p = lwir_spec::pointer::join(&at, k);
                    value(item, bindings, p, depth + 1).map(|v| (k.clone(), v))
                })
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

fn string(text: &str, bindings: &Bindings, at: &str) -> Result<serde_json::Value, ResolveError> {
    let fail = |message: String| ResolveError {
        pointer: at.to_owned(),
        message,
    };
    let parsed = parse_string_value(text).map_err(|e| fail(e.message))?;
    let run = |expr: &lwir_spec::expr::Expr| {
        eval::evaluate(expr, bindings, INPUT_BUDGET).map_err(|e| fail(e.message))
    };
    match parsed {
        StringValue::Literal(s) => Ok(serde_json::Value::String(s)),
        StringValue::Expression(e) => run(&e)?
            .to_json()
            .map_err(|why| fail(format!("the value {why}"))),
        StringValue::Template(parts) => {
            let mut out = String::new();
            for part in &parts {
                match part {
                    Part::Text(t) => out.push_str(t),
                    Part::Expr(e) => out.push_str(&template_text(&run(e)?).map_err(fail)?),
                }
            }
            Ok(serde_json::Value::String(out))
        }
    }
}
