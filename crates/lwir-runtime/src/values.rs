//! Values at run time: JSON Schema checks of every value that flows into a schema (each
//! schema compiled once per run), the decoding of a tool's or model's text by its schema,
//! and the evaluation of LWIR values (literals, expressions, templates) with the
//! evaluator `lwirc eval` uses.

use std::collections::HashMap;
use std::rc::Rc;

use lwir_spec::Code;
use lwir_spec::expr::eval::{self, Bindings, Val, template_text};
use serde_json::Value;

use crate::log::Failure;
use crate::program::VTree;

/// The most bytes a rendered template may have (16 MiB), as goals cap a resolved input.
/// Other values are bounded by the evaluator's work budget, which charges for every
/// character and element an expression makes.
pub const MAX_RENDERED_BYTES: usize = 16 * 1024 * 1024;

/// `sha256:` over the RFC 8785 form of `value`.
pub fn digest_of(value: &Value) -> String {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    let canonical = lwir_spec::canon::canonicalize(&bytes).unwrap_or(bytes);
    lwir_spec::canon::sha256_of(&canonical)
}

/// A value that does not fit its schema: where, and which keyword says no.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaMismatch {
    /// Pointer into the value.
    pub pointer: String,
    /// The keyword that rejects it (`enum`, `required`, `minLength`, …).
    pub keyword: String,
    /// Pointer into the schema, to that keyword.
    pub schema_pointer: String,
    /// The validator's message.
    pub message: String,
    /// How many other places do not fit.
    pub more: usize,
}

/// The schemas of one run, each compiled the first time it is used.
#[derive(Default)]
pub(crate) struct Schemas {
    compiled: HashMap<String, Rc<Compiled>>,
}

enum Compiled {
    /// `null` or `{}` or `true`: every value fits.
    Any,
    Validator(jsonschema::Validator),
    /// The schema does not compile (a record from another lwirc): why.
    Broken(String),
}

impl Schemas {
    /// Checks `value` against `schema`, known as `key` (compiled once per key).
    pub(crate) fn check(
        &mut self,
        key: &str,
        schema: &Value,
        value: &Value,
    ) -> Result<(), SchemaMismatch> {
        let compiled = match self.compiled.get(key) {
            Some(c) => Rc::clone(c),
            None => {
                let c = Rc::new(compile(schema));
                self.compiled.insert(key.to_owned(), Rc::clone(&c));
                c
            }
        };
        check_with(&compiled, value)
    }
}

fn compile(schema: &Value) -> Compiled {
    match schema {
        Value::Null | Value::Bool(true) => Compiled::Any,
        Value::Object(o) if o.is_empty() => Compiled::Any,
        _ => match jsonschema::draft202012::new(schema) {
            Ok(v) => Compiled::Validator(v),
            Err(e) => Compiled::Broken(e.to_string()),
        },
    }
}

fn check_with(compiled: &Compiled, value: &Value) -> Result<(), SchemaMismatch> {
    let validator = match compiled {
        Compiled::Any => return Ok(()),
        Compiled::Broken(why) => return Err(SchemaMismatch::broken(why)),
        Compiled::Validator(v) => v,
    };
    if validator.is_valid(value) {
        return Ok(());
    }
    let mut errors = validator.iter_errors(value);
    let Some(first) = errors.next() else {
        return Ok(());
    };
    let more = errors.take(999).count();
    Err(SchemaMismatch::of(&first, more))
}

/// Every place `value` does not fit `schema` (at most 100), for findings.
pub fn mismatches(schema: &Value, value: &Value) -> Vec<SchemaMismatch> {
    let validator = match compile(schema) {
        Compiled::Any => return Vec::new(),
        Compiled::Broken(why) => return vec![SchemaMismatch::broken(&why)],
        Compiled::Validator(v) => v,
    };
    validator
        .iter_errors(value)
        .take(100)
        .map(|e| SchemaMismatch::of(&e, 0))
        .collect()
}

impl SchemaMismatch {
    /// The one mismatch of a schema that does not compile, for `why`.
    fn broken(why: &str) -> Self {
        SchemaMismatch {
            pointer: String::new(),
            keyword: String::new(),
            schema_pointer: String::new(),
            message: format!("the schema does not compile: {why}"),
            more: 0,
        }
    }

    /// The mismatch `error` says, with `more` other places that do not fit.
    fn of(error: &jsonschema::ValidationError<'_>, more: usize) -> Self {
        SchemaMismatch {
            pointer: error.instance_path().as_str().to_owned(),
            keyword: error.kind().keyword().to_owned(),
            schema_pointer: error.schema_path().as_str().to_owned(),
            message: error.to_string(),
            more,
        }
    }

    /// The failure of a step whose `what` (`the result of tool \`x\``) does not fit.
    pub(crate) fn failure(&self, what: &str) -> Failure {
        let at = if self.pointer.is_empty() {
            String::new()
        } else {
            format!(" at `{}`", self.pointer)
        };
        let more = match self.more {
            0 => String::new(),
            1 => " (and 1 more place)".to_owned(),
            n => format!(" (and {n} more places)"),
        };
        Failure {
            cause: None,
            error: format!(
                "{what} does not fit its schema{at}: {} (keyword `{}`){more}",
                self.message, self.keyword
            ),
            code: Code::ValueSchemaMismatch,
            pointer: Some(self.pointer.clone()),
            keyword: (!self.keyword.is_empty()).then(|| self.keyword.clone()),
            schema_pointer: (!self.schema_pointer.is_empty()).then(|| self.schema_pointer.clone()),
        }
    }
}

/// Whether every value `schema` accepts is a string (`{"type": "string", …}`): then a
/// tool's or model's text is that string, not JSON to parse.
pub(crate) fn is_string_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("string")
}

/// Text a tool or model gave, as the value its schema describes: parsed as strict I-JSON
/// when the schema is not a string schema and the text parses, else the text itself.
pub(crate) fn decode_text(text: &str, schema: &Value) -> Value {
    if !is_string_schema(schema)
        && let Some(value) = parse_strict(text.as_bytes())
    {
        return value;
    }
    Value::String(text.to_owned())
}

/// `bytes` as one strict I-JSON value (duplicate keys, lone surrogates and the like
/// refused); `None` when they are not.
pub(crate) fn parse_strict(bytes: &[u8]) -> Option<Value> {
    let read = lwir_spec::document::read(bytes.to_vec());
    match read.document {
        Some(doc) if read.findings.is_empty() => Some(doc.root().to_json()),
        _ => None,
    }
}

/// Evaluates an LWIR value: its literals as they are, each expression and template with
/// `bindings` within `budget`; a failure names the pointer into the value and why.
pub(crate) fn evaluate(tree: &VTree, bindings: &Bindings, budget: u64) -> Result<Val, Failure> {
    let fail = |at: &str, message: String| {
        let at = if at.is_empty() {
            String::new()
        } else {
            format!(" at `{at}`")
        };
        Failure::new(Code::ExpressionFailed, format!("{message}{at}"))
    };
    fn go(
        tree: &VTree,
        bindings: &Bindings,
        budget: u64,
        at: &mut String,
        fail: &dyn Fn(&str, String) -> Failure,
    ) -> Result<Val, Failure> {
        Ok(match tree {
            VTree::Literal(v) => Val::from_json(v),
            VTree::Expr { expr, source } => eval::evaluate(expr, bindings, budget)
                .map_err(|e| fail(at, format!("`{}`: {}", excerpt(source), e.message)))?,
            VTree::Template { parts, source } => {
                let mut out = String::new();
                for part in parts {
                    match part {
                        lwir_spec::expr::Part::Text(t) => out.push_str(t),
                        lwir_spec::expr::Part::Expr(e) => {
                            let v = eval::evaluate(e, bindings, budget).map_err(|e| {
                                fail(at, format!("`{}`: {}", excerpt(source), e.message))
                            })?;
                            let text = template_text(&v)
                                .map_err(|why| fail(at, format!("`{}`: {why}", excerpt(source))))?;
                            out.push_str(&text);
                        }
                    }
                    if out.len() > MAX_RENDERED_BYTES {
                        return Err(fail(
                            at,
                            format!(
                                "`{}` renders more than {MAX_RENDERED_BYTES} bytes",
                                excerpt(source)
                            ),
                        ));
                    }
                }
                Val::String(out.into())
            }
            VTree::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&i.to_string());
                    out.push(go(item, bindings, budget, at, fail)?);
                    at.truncate(len);
                }
                Val::List(Rc::new(out))
            }
            VTree::Object(members) => {
                let mut out = std::collections::BTreeMap::new();
                for (k, item) in members {
                    let len = at.len();
                    lwir_spec::pointer::push_token(at, k);
                    out.insert(k.clone(), go(item, bindings, budget, at, fail)?);
                    at.truncate(len);
                }
                Val::Map(Rc::new(out))
            }
        })
    }
    go(tree, bindings, budget, &mut String::new(), &fail)
}

/// A value as JSON; an expression that made a double JSON cannot hold fails.
pub(crate) fn to_json(value: &Val) -> Result<Value, Failure> {
    value
        .to_json()
        .map_err(|why| Failure::new(Code::ExpressionFailed, format!("the value {why}")))
}

/// At most 80 characters of an expression's source, for messages.
fn excerpt(source: &str) -> String {
    lwir_spec::text::ellipsis(source, 80)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_mismatch_has_its_pointer_and_keyword() {
        let schema = json!({"type": "object", "properties": {"label": {"enum": ["bug", "feature"]}},
                            "required": ["label"]});
        let mut schemas = Schemas::default();
        assert!(
            schemas
                .check("s", &schema, &json!({"label": "bug"}))
                .is_ok()
        );
        let m = schemas
            .check("s", &schema, &json!({"label": "urgent"}))
            .unwrap_err();
        assert_eq!((m.pointer.as_str(), m.keyword.as_str()), ("/label", "enum"));
        assert_eq!(m.schema_pointer, "/properties/label/enum");
        let m = schemas.check("s", &schema, &json!({})).unwrap_err();
        assert_eq!((m.pointer.as_str(), m.keyword.as_str()), ("", "required"));
        let f = m.failure("the answer of `classify`");
        assert_eq!(f.code, Code::ValueSchemaMismatch);
        assert!(f.error.contains("keyword `required`"), "{}", f.error);
    }

    #[test]
    fn text_is_decoded_by_its_schema() {
        assert_eq!(
            decode_text("{\"a\": 1}", &json!({"type": "object"})),
            json!({"a": 1})
        );
        assert_eq!(
            decode_text("Echo: hi", &json!({"type": "object"})),
            json!("Echo: hi")
        );
        assert_eq!(decode_text("42", &json!({"type": "string"})), json!("42"));
        assert_eq!(decode_text("42", &json!({})), json!(42));
        // Duplicate keys are not JSON lwirc reads.
        assert_eq!(
            decode_text("{\"a\": 1, \"a\": 2}", &json!({})),
            json!("{\"a\": 1, \"a\": 2}")
        );
    }
}
