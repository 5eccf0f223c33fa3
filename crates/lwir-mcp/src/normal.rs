//! The schema normal form: an MCP tool's `inputSchema` or `outputSchema` as a schema of
//! LWIR's JSON Schema subset (`lwir-spec/README.md` §4), which definitions hold and drift
//! compares.
//!
//! - Local references (`$ref` to `#`, `#/$defs/…`, `#/definitions/…` or any pointer into
//!   the same schema) are inlined and `$defs`/`definitions` removed. A reference that
//!   would inline itself (a recursive schema), a remote one and one to nothing become `{}`.
//! - The constraints of the subset are kept, with malformed values dropped; `description`
//!   and `format` are kept (they help a planner and constrain nothing); every other
//!   annotation (`$schema`, `title`, `default`, `examples`, `$comment`, `x-…` …) and every
//!   keyword outside the subset (`not`, `if`, `patternProperties`, `$id`, unknown ones) is
//!   dropped.
//! - Draft-04/07 spellings are rewritten to the 2020-12 ones they mean: `items` as a list
//!   (with `additionalItems`) becomes `prefixItems` (with `items`), a boolean
//!   `exclusiveMinimum` becomes a number.
//! - A drop never makes the schema refuse what the server's accepts: `additionalProperties`
//!   goes with a dropped `patternProperties`, and a `oneOf` whose branches lost a
//!   constraint becomes `anyOf` (looser branches could overlap). Beside `$ref`, other
//!   keywords are ignored in draft-07 and earlier (and dropped), and apply in later drafts
//!   (kept, with `allOf`).
//!
//! Every drop is reported as a [`Dropped`], at the place it was in the server's schema.
//! The output is deterministic: members are written in key order, whatever order the
//! server used, so the same schema always gives the same bytes.

use std::collections::HashSet;

use lwir_spec::pointer;
use lwir_spec::schemas::TYPE_NAMES;
use serde_json::{Map, Value};

/// At most this many schema objects are written for one schema (inlining a reference
/// copies its target; a chain of references can double the size at each link).
const MAX_NODES: usize = 20_000;

/// At most this deep (in schemas inside schemas) is a schema written.
const MAX_DEPTH: usize = 64;

/// Annotations kept in the normal form.
const KEPT_ANNOTATIONS: &[&str] = &["description", "format"];

/// Annotations dropped from the normal form (the rest of the subset's annotations).
const DROPPED_ANNOTATIONS: &[&str] = &[
    "$schema",
    "$comment",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
];

/// Which of a tool's schemas a drop was in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaRole {
    /// Its `inputSchema`.
    Input,
    /// Its `outputSchema`.
    Output,
}

impl SchemaRole {
    /// The MCP name of the schema: `inputSchema`, `outputSchema`.
    pub fn mcp_name(self) -> &'static str {
        match self {
            SchemaRole::Input => "inputSchema",
            SchemaRole::Output => "outputSchema",
        }
    }
}

/// Why something was dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// An annotation the normal form does not keep (`title`, `default`, `$schema` …).
    Annotation,
    /// A keyword outside LWIR's subset (`not`, `if`, `patternProperties`, `$id`, unknown).
    Unsupported,
    /// A keyword of the subset with a value it cannot have (`"type": "text"`, a `required`
    /// that is no list of names, a `pattern` that is no regular expression).
    Invalid(String),
    /// Kept, it would refuse what the server's schema accepts, because the named keyword
    /// was dropped (`additionalProperties` beside a dropped `patternProperties`).
    Depends(String),
    /// A `oneOf` written as `anyOf`, because a branch lost a constraint.
    Loosened,
    /// Beside `$ref` in a draft-07 (or earlier) schema, where it has no effect.
    BesideRef,
    /// A `$ref` to another document: it is `{}` in the normal form.
    RemoteRef,
    /// A `$ref` to nothing in this schema: it is `{}`.
    UnresolvedRef,
    /// A `$ref` to a schema that contains it: a recursive schema cannot be inlined, the
    /// reference is `{}`.
    RecursiveRef,
    /// Inlining passed the size or depth bound: the rest is `{}`.
    TooLarge,
    /// Not a schema where a schema must be (`"properties": {"a": 5}`): it is `{}`.
    NotASchema,
    /// The tool was left out of an import (its name cannot be a tool id, or a tool of
    /// that name was listed before).
    SkippedTool(String),
}

/// Something the normal form left out or changed, and where it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The tool, when the schema was one of a listed tool's.
    pub tool: Option<String>,
    /// Which of its schemas, when known.
    pub schema: Option<SchemaRole>,
    /// RFC 6901 pointer to the schema object the keyword was in, within the server's
    /// schema (`""` for its root, `/properties/timezone`).
    pub pointer: String,
    /// The keyword (`title`, `$ref`); empty for a whole schema or tool.
    pub keyword: String,
    /// Why.
    pub reason: Reason,
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(tool) = &self.tool {
            write!(f, "tool `{}`", crate::text::show_message(tool))?;
            match self.schema {
                Some(role) => write!(f, ", {}: ", role.mcp_name())?,
                None => f.write_str(": ")?,
            }
        }
        let at = if self.pointer.is_empty() {
            "the root".to_owned()
        } else {
            crate::text::show_message(&self.pointer)
        };
        let keyword = crate::text::show_message(&self.keyword);
        match &self.reason {
            Reason::Annotation => write!(f, "dropped the annotation `{keyword}` at {at}"),
            Reason::Unsupported => write!(
                f,
                "dropped `{keyword}` at {at}: it is outside LWIR's JSON Schema subset"
            ),
            Reason::Invalid(why) => write!(f, "dropped `{keyword}` at {at}: {why}"),
            Reason::Depends(on) => write!(
                f,
                "dropped `{keyword}` at {at}: without the dropped `{on}` it would refuse what the server accepts"
            ),
            Reason::Loosened => write!(
                f,
                "wrote `oneOf` at {at} as `anyOf`: its branches lost constraints and could overlap"
            ),
            Reason::BesideRef => write!(
                f,
                "dropped `{keyword}` at {at}: beside `$ref` it has no effect in this draft"
            ),
            Reason::RemoteRef => write!(
                f,
                "`$ref` at {at} names another document; it is `{{}}` here"
            ),
            Reason::UnresolvedRef => {
                write!(
                    f,
                    "`$ref` at {at} names nothing in the schema; it is `{{}}` here"
                )
            }
            Reason::RecursiveRef => write!(
                f,
                "`$ref` at {at} is recursive and cannot be inlined; it is `{{}}` here"
            ),
            Reason::TooLarge => write!(
                f,
                "the schema at {at} is too large or deep once references are inlined; it is `{{}}` here"
            ),
            Reason::NotASchema => write!(f, "the value at {at} is not a schema; it is `{{}}` here"),
            Reason::SkippedTool(why) => write!(f, "left out: {why}"),
        }
    }
}

/// `schema` in the normal form, and what was dropped (see the module documentation).
pub fn normalize(schema: &Value) -> (Value, Vec<Dropped>) {
    let draft07 = schema
        .get("$schema")
        .and_then(Value::as_str)
        .is_some_and(|s| {
            ["draft-04", "draft-06", "draft-07"]
                .iter()
                .any(|d| s.contains(d))
        });
    let mut walker = Walker {
        root: schema,
        draft07,
        dropped: Vec::new(),
        seen: HashSet::new(),
        expanding: vec![String::new()],
        nodes: 0,
        losses: 0,
    };
    let out = walker.schema(schema, "", 0);
    (out, walker.dropped)
}

struct Walker<'a> {
    root: &'a Value,
    draft07: bool,
    dropped: Vec<Dropped>,
    seen: HashSet<(String, String)>,
    /// Pointers of the schemas being written, innermost last: a `$ref` to one of them is
    /// recursive.
    expanding: Vec<String>,
    nodes: usize,
    /// How many constraints were dropped so far (for `oneOf`).
    losses: usize,
}

fn empty() -> Value {
    Value::Object(Map::new())
}

impl Walker<'_> {
    fn drop(&mut self, at: &str, keyword: &str, reason: Reason) {
        if !matches!(reason, Reason::Annotation | Reason::BesideRef) {
            self.losses += 1;
        }
        if self.seen.insert((at.to_owned(), keyword.to_owned())) {
            self.dropped.push(Dropped {
                tool: None,
                schema: None,
                pointer: at.to_owned(),
                keyword: keyword.to_owned(),
                reason,
            });
        }
    }

    fn invalid(&mut self, at: &str, keyword: &str, why: &str) {
        self.drop(at, keyword, Reason::Invalid(why.to_owned()));
    }

    /// The schema `node`, found at `at` in the server's schema.
    fn schema(&mut self, node: &Value, at: &str, depth: usize) -> Value {
        match node {
            Value::Bool(b) => Value::Bool(*b),
            Value::Object(members) => {
                self.nodes += 1;
                if self.nodes > MAX_NODES || depth > MAX_DEPTH {
                    self.drop(at, "", Reason::TooLarge);
                    return empty();
                }
                self.object(members, at, depth)
            }
            _ => {
                self.drop(at, "", Reason::NotASchema);
                empty()
            }
        }
    }

    fn object(&mut self, members: &Map<String, Value>, at: &str, depth: usize) -> Value {
        let mut keys: Vec<&String> = members.keys().collect();
        keys.sort();
        let mut out: Vec<(String, Value)> = Vec::new();
        let reference = members.get("$ref");
        let beside_ref_ignored = reference.is_some() && self.draft07;
        let items_list = members.get("items").is_some_and(Value::is_array);
        let mut loosened = None;
        for key in keys {
            let value = &members[key];
            let key = key.as_str();
            if beside_ref_ignored && key != "$ref" && key != "description" {
                if !matches!(key, "$defs" | "definitions") {
                    self.drop(at, key, Reason::BesideRef);
                }
                continue;
            }
            match key {
                "$ref" | "$defs" | "definitions" => {}
                "type" => match type_names(value) {
                    Ok(()) => out.push((key.into(), value.clone())),
                    Err(why) => self.invalid(at, key, why),
                },
                "properties" => match value.as_object() {
                    Some(properties) => {
                        let here = pointer::join(at, key);
                        let mut names: Vec<&String> = properties.keys().collect();
                        names.sort();
                        let mut written = Map::new();
                        for name in names {
                            let schema = self.schema(
                                &properties[name],
                                &pointer::join(&here, name),
                                depth + 1,
                            );
                            written.insert(name.clone(), schema);
                        }
                        out.push((key.into(), Value::Object(written)));
                    }
                    None => self.invalid(at, key, "it must be an object of schemas"),
                },
                "additionalProperties" => {
                    let dropped_patterns = members.contains_key("patternProperties");
                    if dropped_patterns && value != &Value::Bool(true) {
                        self.drop(at, key, Reason::Depends("patternProperties".into()));
                    } else {
                        out.push((
                            key.into(),
                            self.schema(value, &pointer::join(at, key), depth + 1),
                        ));
                    }
                }
                "items" if items_list => {
                    // Draft-07's tuple form: `items` as a list is `prefixItems`.
                    if members.contains_key("prefixItems") {
                        self.invalid(at, key, "a list of schemas beside `prefixItems`");
                    } else if let Some(list) = self.schema_list(value, at, key, depth) {
                        out.push(("prefixItems".into(), list));
                    }
                }
                "additionalItems" if items_list && !members.contains_key("prefixItems") => {
                    out.push((
                        "items".into(),
                        self.schema(value, &pointer::join(at, key), depth + 1),
                    ));
                }
                "items" => {
                    out.push((
                        key.into(),
                        self.schema(value, &pointer::join(at, key), depth + 1),
                    ));
                }
                "prefixItems" | "anyOf" | "allOf" => {
                    if let Some(list) = self.schema_list(value, at, key, depth) {
                        out.push((key.into(), list));
                    }
                }
                "oneOf" => {
                    let before = self.losses;
                    if let Some(list) = self.schema_list(value, at, key, depth) {
                        if self.losses > before {
                            self.drop(at, key, Reason::Loosened);
                            loosened = Some(list);
                        } else {
                            out.push((key.into(), list));
                        }
                    }
                }
                "required" => match value.as_array() {
                    Some(names) if names.iter().all(Value::is_string) => {
                        let mut distinct: Vec<Value> = Vec::with_capacity(names.len());
                        for name in names {
                            if !distinct.contains(name) {
                                distinct.push(name.clone());
                            }
                        }
                        out.push((key.into(), Value::Array(distinct)));
                    }
                    _ => self.invalid(at, key, "it must be a list of property names"),
                },
                "enum" => match value.as_array() {
                    Some(values) if !values.is_empty() => out.push((key.into(), value.clone())),
                    _ => self.invalid(at, key, "it must be a non-empty list"),
                },
                "const" => out.push((key.into(), value.clone())),
                "minimum" | "maximum" => {
                    let exclusive = if key == "minimum" {
                        "exclusiveMinimum"
                    } else {
                        "exclusiveMaximum"
                    };
                    if members.get(exclusive) == Some(&Value::Bool(true)) {
                        // Draft-04: the bound is exclusive; written as `exclusive…` below.
                        continue;
                    }
                    match value {
                        Value::Number(_) => out.push((key.into(), value.clone())),
                        _ => self.invalid(at, key, "it must be a number"),
                    }
                }
                "exclusiveMinimum" | "exclusiveMaximum" => match value {
                    Value::Number(_) => out.push((key.into(), value.clone())),
                    Value::Bool(exclusive) => {
                        let bound = if key == "exclusiveMinimum" {
                            "minimum"
                        } else {
                            "maximum"
                        };
                        match members.get(bound) {
                            Some(n @ Value::Number(_)) if *exclusive => {
                                out.push((key.into(), n.clone()));
                            }
                            Some(Value::Number(_)) | None => {}
                            Some(_) => self.invalid(at, bound, "it must be a number"),
                        }
                    }
                    _ => self.invalid(at, key, "it must be a number"),
                },
                "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
                | "maxProperties" => match count(value) {
                    Some(n) => out.push((key.into(), Value::from(n))),
                    None => self.invalid(at, key, "it must be a non-negative integer"),
                },
                "uniqueItems" => match value {
                    Value::Bool(_) => out.push((key.into(), value.clone())),
                    _ => self.invalid(at, key, "it must be a boolean"),
                },
                "pattern" => match value.as_str() {
                    Some(p) if valid_pattern(p) => out.push((key.into(), value.clone())),
                    Some(_) => {
                        self.invalid(at, key, "it is not a regular expression lwirc can evaluate")
                    }
                    None => self.invalid(at, key, "it must be a string"),
                },
                _ if KEPT_ANNOTATIONS.contains(&key) => match value {
                    Value::String(_) => out.push((key.into(), value.clone())),
                    _ => self.invalid(at, key, "it must be a string"),
                },
                _ if DROPPED_ANNOTATIONS.contains(&key) || key.starts_with("x-") => {
                    self.drop(at, key, Reason::Annotation);
                }
                _ => self.drop(at, key, Reason::Unsupported),
            }
        }
        let mut own: Map<String, Value> = out.into_iter().collect();
        if let Some(any) = loosened {
            if own.contains_key("anyOf") {
                let mut wrapped = Map::new();
                wrapped.insert("anyOf".into(), any);
                match own.get_mut("allOf") {
                    Some(Value::Array(all)) => all.push(Value::Object(wrapped)),
                    _ => {
                        own.insert("allOf".into(), Value::Array(vec![Value::Object(wrapped)]));
                    }
                }
            } else {
                own.insert("anyOf".into(), any);
            }
        }
        let own = sorted(own);
        match reference {
            None => own,
            Some(target) => self.with_reference(target, own, at, depth),
        }
    }

    /// The schema of an object with `$ref` to `target`, whose other keywords wrote `own`.
    fn with_reference(&mut self, target: &Value, own: Value, at: &str, depth: usize) -> Value {
        let referenced = match target.as_str() {
            Some(target) => self.reference(target, at, depth),
            None => {
                self.invalid(at, "$ref", "it must be a string");
                empty()
            }
        };
        let Value::Object(mut own) = own else {
            return referenced;
        };
        let description = own.remove("description");
        let merged = if own.is_empty() {
            referenced
        } else if referenced == empty() {
            Value::Object(own)
        } else {
            let mut all = Map::new();
            all.insert(
                "allOf".into(),
                Value::Array(vec![referenced, Value::Object(own)]),
            );
            Value::Object(all)
        };
        match (merged, description) {
            (Value::Object(mut m), Some(d)) => {
                m.insert("description".into(), d);
                sorted(m)
            }
            (merged, _) => merged,
        }
    }

    /// The inlined target of the local reference `target` found at `at`.
    fn reference(&mut self, target: &str, at: &str, depth: usize) -> Value {
        let Some(fragment) = target.strip_prefix('#') else {
            self.drop(at, "$ref", Reason::RemoteRef);
            return empty();
        };
        let Some(pointer) = percent_decode(fragment) else {
            self.drop(at, "$ref", Reason::UnresolvedRef);
            return empty();
        };
        if self.expanding.contains(&pointer) {
            self.drop(at, "$ref", Reason::RecursiveRef);
            return empty();
        }
        let Some(node) = self.root.pointer(&pointer) else {
            self.drop(at, "$ref", Reason::UnresolvedRef);
            return empty();
        };
        self.expanding.push(pointer.clone());
        let out = self.schema(node, &pointer, depth + 1);
        self.expanding.pop();
        out
    }

    /// A non-empty list of schemas, or `None` (reported) when `value` is none.
    fn schema_list(&mut self, value: &Value, at: &str, key: &str, depth: usize) -> Option<Value> {
        match value.as_array() {
            Some(items) if !items.is_empty() => {
                let here = pointer::join(at, key);
                Some(Value::Array(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, item)| {
                            self.schema(item, &pointer::join_index(&here, i), depth + 1)
                        })
                        .collect(),
                ))
            }
            _ => {
                self.invalid(at, key, "it must be a non-empty list of schemas");
                None
            }
        }
    }
}

/// `members` as an object whose members are in key order (also where serde_json keeps
/// insertion order).
fn sorted(members: Map<String, Value>) -> Value {
    let mut members: Vec<(String, Value)> = members.into_iter().collect();
    members.sort_by(|a, b| a.0.cmp(&b.0));
    Value::Object(members.into_iter().collect())
}

fn type_names(value: &Value) -> Result<(), &'static str> {
    let known = |v: &Value| v.as_str().is_some_and(|name| TYPE_NAMES.contains(&name));
    match value {
        Value::String(_) if known(value) => Ok(()),
        Value::Array(names)
            if !names.is_empty()
                && names.iter().all(known)
                && names
                    .iter()
                    .enumerate()
                    .all(|(i, n)| !names[..i].contains(n)) =>
        {
            Ok(())
        }
        _ => Err("it must be a type name, or a list of distinct ones"),
    }
}

/// A non-negative integer, also when written as a float without a fraction (`3.0`).
fn count(value: &Value) -> Option<u64> {
    let n = value.as_number()?;
    n.as_u64().or_else(|| {
        let f = n.as_f64()?;
        (f >= 0.0 && f.fract() == 0.0 && f <= 9_007_199_254_740_992.0).then_some(f as u64)
    })
}

/// Whether lwirc's schema engine (the one its validator judges patterns with) takes `p`.
fn valid_pattern(p: &str) -> bool {
    jsonschema::validator_for(&serde_json::json!({ "pattern": p })).is_ok()
}

/// A URI fragment's JSON Pointer, `%XX` escapes decoded; `None` when it is none.
fn percent_decode(fragment: &str) -> Option<String> {
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = fragment.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let pointer = String::from_utf8(out).ok()?;
    (pointer.is_empty() || pointer.starts_with('/')).then_some(pointer)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn norm(schema: Value) -> (Value, Vec<(String, String, Reason)>) {
        let (out, dropped) = normalize(&schema);
        (
            out,
            dropped
                .into_iter()
                .map(|d| (d.pointer, d.keyword, d.reason))
                .collect(),
        )
    }

    #[test]
    fn annotations_go_and_constraints_stay() {
        let (out, dropped) = norm(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "title": "Args",
            "properties": {
                "a": {"type": "string", "default": "x", "description": "the a", "minLength": 1.0},
                "b": {"type": "integer", "examples": [1], "x-order": 2}
            },
            "required": ["a", "a"],
            "additionalProperties": false
        }));
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "string", "description": "the a", "minLength": 1},
                    "b": {"type": "integer"}
                },
                "required": ["a"],
                "additionalProperties": false
            })
        );
        let keywords: Vec<&str> = dropped.iter().map(|d| d.1.as_str()).collect();
        assert_eq!(
            keywords,
            ["$schema", "default", "examples", "x-order", "title"]
        );
        assert!(dropped.iter().all(|d| d.2 == Reason::Annotation));
        assert_eq!(dropped[1].0, "/properties/a");
    }

    #[test]
    fn references_are_inlined() {
        let (out, dropped) = norm(json!({
            "type": "object",
            "properties": {
                "source": {"$ref": "#/$defs/TimeResult"},
                "target": {"$ref": "#/definitions/TimeResult", "description": "where"}
            },
            "$defs": {"TimeResult": {"type": "object", "title": "TimeResult",
                                     "properties": {"tz": {"type": "string"}}}},
            "definitions": {"TimeResult": {"type": "string"}}
        }));
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "source": {"type": "object", "properties": {"tz": {"type": "string"}}},
                    "target": {"type": "string", "description": "where"}
                }
            })
        );
        assert_eq!(
            dropped,
            [(
                "/$defs/TimeResult".into(),
                "title".into(),
                Reason::Annotation
            )]
        );
    }

    #[test]
    fn a_recursive_reference_becomes_empty_and_is_reported() {
        let (out, dropped) = norm(json!({
            "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
            "$ref": "#/$defs/node"
        }));
        assert_eq!(out, json!({"type": "object", "properties": {"next": {}}}));
        assert_eq!(
            dropped,
            [(
                "/$defs/node/properties/next".into(),
                "$ref".into(),
                Reason::RecursiveRef
            )]
        );
        let (out, dropped) = norm(json!({"properties": {"self": {"$ref": "#"}}}));
        assert_eq!(out, json!({"properties": {"self": {}}}));
        assert_eq!(dropped[0].2, Reason::RecursiveRef);
    }

    #[test]
    fn remote_and_dangling_references_become_empty() {
        let (out, dropped) = norm(json!({"properties": {
            "a": {"$ref": "https://example.com/s.json"},
            "b": {"$ref": "#/$defs/missing"},
            "c": {"$ref": "#/$defs/a%20b"}
        }, "$defs": {"a b": {"type": "null"}}}));
        assert_eq!(
            out,
            json!({"properties": {"a": {}, "b": {}, "c": {"type": "null"}}})
        );
        let reasons: Vec<&Reason> = dropped.iter().map(|d| &d.2).collect();
        assert_eq!(reasons, [&Reason::RemoteRef, &Reason::UnresolvedRef]);
    }

    #[test]
    fn an_exponential_schema_is_cut() {
        let mut defs = Map::new();
        defs.insert("d0".into(), json!({"type": "string"}));
        for i in 1..40 {
            let prev = format!("#/$defs/d{}", i - 1);
            defs.insert(
                format!("d{i}"),
                json!({"allOf": [{"$ref": prev}, {"$ref": prev}]}),
            );
        }
        let (out, dropped) = norm(json!({"$defs": defs, "$ref": "#/$defs/d39"}));
        assert!(serde_json::to_vec(&out).unwrap().len() < 2_000_000);
        assert!(dropped.iter().any(|d| d.2 == Reason::TooLarge));
    }

    #[test]
    fn drops_never_tighten() {
        let (out, dropped) = norm(json!({
            "type": "object",
            "patternProperties": {"^x": {"type": "string"}},
            "additionalProperties": false,
            "oneOf": [{"required": ["a"], "not": {"required": ["b"]}}, {"required": ["b"]}]
        }));
        assert_eq!(
            out,
            json!({"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]})
        );
        let reasons: Vec<&Reason> = dropped.iter().map(|d| &d.2).collect();
        assert_eq!(
            reasons,
            [
                &Reason::Depends("patternProperties".into()),
                &Reason::Unsupported,
                &Reason::Loosened,
                &Reason::Unsupported
            ]
        );
    }

    #[test]
    fn old_drafts_are_rewritten() {
        let (out, dropped) = norm(json!({
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "array",
            "items": [{"type": "string"}, {"type": "number", "minimum": 0, "exclusiveMinimum": true}],
            "additionalItems": false
        }));
        assert_eq!(
            out,
            json!({
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "number", "exclusiveMinimum": 0}],
                "items": false
            })
        );
        assert_eq!(dropped.len(), 1);
        let (out, dropped) = norm(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "properties": {"a": {"$ref": "#/$defs/s", "maxLength": 3, "description": "d"}},
            "$defs": {"s": {"type": "string"}}
        }));
        assert_eq!(
            out,
            json!({"properties": {"a": {"type": "string", "description": "d"}}})
        );
        assert_eq!(dropped[1].2, Reason::BesideRef);
        let (out, _) = norm(json!({
            "properties": {"a": {"$ref": "#/$defs/s", "maxLength": 3}},
            "$defs": {"s": {"type": "string"}}
        }));
        assert_eq!(
            out,
            json!({"properties": {"a": {"allOf": [{"type": "string"}, {"maxLength": 3}]}}})
        );
    }

    #[test]
    fn malformed_values_are_dropped() {
        let (out, dropped) = norm(json!({
            "type": "text",
            "required": "a",
            "minimum": "3",
            "pattern": "(",
            "enum": [],
            "anyOf": [],
            "properties": {"a": 5}
        }));
        assert_eq!(out, json!({"properties": {"a": {}}}));
        assert_eq!(dropped.len(), 7);
    }

    #[test]
    fn the_normal_form_is_stable_and_ordered() {
        let schema = json!({
            "required": ["b"], "type": "object",
            "properties": {"b": {"type": "string", "title": "B"}, "a": {"$ref": "#/$defs/x"}},
            "$defs": {"x": {"enum": [1, 2]}}
        });
        let (once, _) = normalize(&schema);
        let (twice, dropped) = normalize(&once);
        assert_eq!(once, twice);
        assert!(dropped.is_empty());
        let bytes = serde_json::to_string(&once).unwrap();
        assert_eq!(
            bytes,
            r#"{"properties":{"a":{"enum":[1,2]},"b":{"type":"string"}},"required":["b"],"type":"object"}"#
        );
    }
}
