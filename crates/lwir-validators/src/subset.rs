//! The JSON Schema subset: every schema inside a draft or a definition may use only the
//! keywords listed in `lwir_spec::schemas`, with well-formed values, and only local `$ref`s
//! into its own `$defs`.

use lwir_spec::document::{Node, Value};
use lwir_spec::schemas::{ANNOTATION_KEYWORDS, SUBSET_KEYWORDS, TYPE_NAMES, UNSUPPORTED_KEYWORDS};
use lwir_spec::suggest::suggest;
use lwir_spec::{Code, Finding, Fix, Origin, pointer};

/// Checks the schema `schema` found at `at`, reporting into `out`.
pub(crate) fn check(schema: &Node, at: String, origin: Origin, out: &mut Vec<Finding>) {
    let defs: Vec<&str> = schema
        .get("$defs")
        .and_then(Node::as_object)
        .map(|m| m.iter().map(|m| m.key.as_str()).collect())
        .unwrap_or_default();
    let mut walker = Walker { defs, origin, out };
    walker.schema(schema, &at);
}

struct Walker<'a, 'o> {
    /// Definition names of the schema's root `$defs`, which local `$ref`s may name.
    defs: Vec<&'a str>,
    origin: Origin,
    out: &'o mut Vec<Finding>,
}

impl Walker<'_, '_> {
    fn push(&mut self, finding: Finding) {
        self.out.push(match self.origin {
            Origin::Definition => finding.in_definition(),
            Origin::Draft | Origin::Planner => finding,
        });
    }

    fn invalid(&mut self, at: &str, node: &Node, message: String) {
        self.push(Finding::new(Code::InvalidSchema, at, node.span, message));
    }

    fn schema(&mut self, node: &Node, at: &str) {
        let members = match &node.value {
            Value::Bool(_) => return,
            Value::Object(members) => members,
            _ => {
                let message = format!(
                    "a schema must be an object or a boolean, found {}",
                    node.type_name()
                );
                self.invalid(at, node, message);
                return;
            }
        };
        for member in members {
            let key = member.key.as_str();
            let here = pointer::join(at, key);
            if SUBSET_KEYWORDS.contains(&key) {
                self.keyword(key, &member.value, &here);
            } else if ANNOTATION_KEYWORDS.contains(&key) || key.starts_with("x-") {
                continue;
            } else if let Some((_, why)) = UNSUPPORTED_KEYWORDS.iter().find(|(k, _)| *k == key) {
                self.push(
                    Finding::new(
                        Code::UnsupportedSchemaKeyword,
                        here,
                        member.key_span,
                        format!("`{key}` is outside the supported JSON Schema subset"),
                    )
                    .with_help(*why),
                );
            } else {
                let absent = SUBSET_KEYWORDS
                    .iter()
                    .copied()
                    .filter(|k| node.get(k).is_none());
                let mut finding = Finding::new(
                    Code::UnsupportedSchemaKeyword,
                    here.clone(),
                    member.key_span,
                    format!("unknown JSON Schema keyword `{key}`"),
                );
                finding = match suggest(key, absent) {
                    Some(suggested) => crate::shape::did_you_mean(finding, suggested, at),
                    None => finding.with_help(
                        "unknown keywords are silently ignored by validators; use `x-` for extensions",
                    ),
                };
                self.push(finding);
            }
        }
    }

    fn keyword(&mut self, key: &str, value: &Node, at: &str) {
        match key {
            "type" => self.type_keyword(value, at),
            "properties" | "$defs" => match value.as_object() {
                Some(members) => {
                    for m in members {
                        self.schema(&m.value, &pointer::join(at, &m.key));
                    }
                }
                None => self.invalid(at, value, format!("`{key}` must be an object of schemas")),
            },
            "additionalProperties" | "items" => self.schema(value, at),
            "prefixItems" | "anyOf" | "oneOf" | "allOf" => match value.as_array() {
                Some(items) if !items.is_empty() => {
                    for (i, item) in items.iter().enumerate() {
                        self.schema(item, &pointer::join_index(at, i));
                    }
                }
                _ => self.invalid(
                    at,
                    value,
                    format!("`{key}` must be a non-empty list of schemas"),
                ),
            },
            "required" => {
                let ok = value.as_array().is_some_and(|items| {
                    items.iter().all(|i| i.as_str().is_some())
                        && items
                            .iter()
                            .enumerate()
                            .all(|(n, i)| !items[..n].contains(i))
                });
                if !ok {
                    self.invalid(
                        at,
                        value,
                        "`required` must be a list of distinct property names".to_owned(),
                    );
                }
            }
            "enum" if value.as_array().is_none_or(<[Node]>::is_empty) => {
                self.invalid(at, value, "`enum` must be a non-empty list".to_owned());
            }
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum"
                if value.as_number().is_none() =>
            {
                self.invalid(at, value, format!("`{key}` must be a number"));
            }
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
            | "maxProperties"
                if value.as_i64().is_none_or(|n| n < 0) =>
            {
                self.invalid(at, value, format!("`{key}` must be a non-negative integer"));
            }
            "uniqueItems" if !matches!(value.value, Value::Bool(_)) => {
                self.invalid(at, value, "`uniqueItems` must be a boolean".to_owned());
            }
            "pattern" => self.pattern(value, at),
            "$ref" => self.reference(value, at),
            // Well-formed values of the keywords above; `const` takes any value.
            _ => {}
        }
    }

    fn type_keyword(&mut self, value: &Node, at: &str) {
        let names: Vec<(&Node, String)> = match &value.value {
            Value::String(_) => vec![(value, at.to_owned())],
            Value::Array(items) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(i, n)| (n, pointer::join_index(at, i)))
                .collect(),
            _ => {
                self.invalid(
                    at,
                    value,
                    "`type` must be a type name or a non-empty list of them".to_owned(),
                );
                return;
            }
        };
        for (node, here) in names {
            let Some(name) = node.as_str() else {
                self.invalid(
                    &here,
                    node,
                    "`type` lists type names, which are strings".to_owned(),
                );
                continue;
            };
            if TYPE_NAMES.contains(&name) {
                continue;
            }
            let mut finding = Finding::new(
                Code::InvalidSchema,
                here.clone(),
                node.span,
                format!("unknown type name `{name}`"),
            );
            finding = match suggest(name, TYPE_NAMES.iter().copied()) {
                Some((candidate, applicability)) => finding
                    .with_help(format!("did you mean `{candidate}`?"))
                    .with_fix(Fix::replace(applicability, here, candidate)),
                None => finding.with_help(format!(
                    "type names are {}",
                    crate::one_of(TYPE_NAMES.iter().copied())
                )),
            };
            self.push(finding);
        }
    }

    fn pattern(&mut self, value: &Node, at: &str) {
        let Some(text) = value.as_str() else {
            self.invalid(at, value, "`pattern` must be a string".to_owned());
            return;
        };
        // The same regex engine that will evaluate the pattern judges it.
        if jsonschema::validator_for(&serde_json::json!({ "pattern": text })).is_err() {
            self.invalid(
                at,
                value,
                format!("`{text}` is not a valid regular expression"),
            );
        }
    }

    fn reference(&mut self, value: &Node, at: &str) {
        let Some(target) = value.as_str() else {
            self.invalid(at, value, "`$ref` must be a string".to_owned());
            return;
        };
        if target == "#" {
            return;
        }
        let name = target.strip_prefix("#/$defs/").and_then(|rest| {
            let tokens = pointer::tokens(&format!("/{rest}"))?;
            (tokens.len() == 1)
                .then(|| tokens.into_iter().next())
                .flatten()
        });
        let Some(name) = name else {
            self.push(
                Finding::new(
                    Code::UnsupportedSchemaRef,
                    at,
                    value.span,
                    format!("`$ref` to `{target}` is not a local `#/$defs/<name>` reference"),
                )
                .with_help("copy the referenced schema into this schema's `$defs`: a pinned workflow cannot depend on documents outside it"),
            );
            return;
        };
        if self.defs.contains(&name.as_str()) {
            return;
        }
        let mut finding = Finding::new(
            Code::DanglingSchemaRef,
            at,
            value.span,
            format!("`$ref` names `{name}`, which is not in this schema's `$defs`"),
        );
        finding = match suggest(&name, self.defs.iter().copied()) {
            Some((candidate, applicability)) => {
                let mut fixed = String::from("#/$defs");
                pointer::push_token(&mut fixed, candidate);
                finding
                    .with_help(format!("did you mean `{candidate}`?"))
                    .with_fix(Fix::replace(applicability, at, fixed))
            }
            None if self.defs.is_empty() => finding.with_help("this schema has no `$defs`"),
            None => finding.with_help(format!(
                "`$defs` has {}",
                crate::one_of(self.defs.iter().copied())
            )),
        };
        self.push(finding);
    }
}
