//! Shape: both documents against their meta-schemas (through the `jsonschema` crate, its
//! errors mapped to codes, pointers and spans), the LWIR version, and the JSON Schema subset
//! of every schema inside them.

use std::collections::HashSet;
use std::sync::OnceLock;

use jsonschema::error::ValidationErrorKind;
use lwir_spec::document::Node;
use lwir_spec::ir::{COMMON_STEP_FIELDS, Definition, LWIR_VERSION, StepKind};
use lwir_spec::schemas::{
    BINDINGS_META_SCHEMA, GOAL_META_SCHEMA, LWIR_META_SCHEMA, WORKFLOW_META_SCHEMA,
};
use lwir_spec::suggest::suggest;
use lwir_spec::{Applicability, Code, Finding, Fix, Origin, PatchOp, SpannedDocument, pointer};

use crate::{Context, all_of, expected_types, head, one_of, subset};

mod spanned;

/// Which kind of document a meta-schema is for (messages name its parts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MetaKind {
    Lwir,
    Workflow,
    Goal,
    Proposal,
    Bindings,
}

/// A meta-schema: its JSON (to look up the fields a location allows) and its validator.
struct MetaSchema {
    kind: MetaKind,
    json: serde_json::Value,
    validator: jsonschema::Validator,
    /// For a meta-schema with a `$defs/step` (LWIR's): the same schema with `$defs/step` as
    /// its root, to validate the top-level steps one at a time.
    step: Option<jsonschema::Validator>,
    /// The same as `step`, for the spanned document itself: whether a step is valid is
    /// asked of it without a `serde_json` copy.
    spanned_step: Option<jsonschema::Validator<spanned::Spanned>>,
}

fn meta(
    kind: MetaKind,
    text: &'static str,
    cell: &'static OnceLock<MetaSchema>,
) -> &'static MetaSchema {
    cell.get_or_init(|| {
        // The meta-schemas are part of lwir-spec; a unit test builds them all.
        let json: serde_json::Value = serde_json::from_str(text).expect("meta-schema is JSON");
        let validator = match kind {
            MetaKind::Proposal => definition(&json, "proposal"),
            _ => jsonschema::draft202012::new(&json).expect("meta-schema compiles"),
        };
        let step = (kind == MetaKind::Lwir).then(|| definition(&json, "step"));
        let spanned_step = (kind == MetaKind::Lwir).then(|| {
            jsonschema::options_for::<spanned::Spanned>()
                .with_draft(jsonschema::Draft::Draft202012)
                .build(&definition_root(&json, "step"))
                .expect("a meta-schema definition compiles")
        });
        MetaSchema {
            kind,
            json,
            validator,
            step,
            spanned_step,
        }
    })
}

/// A validator of `$defs/<name>` of `json`, with the same `$id` and `$defs`, so every
/// location keeps its schema path (`/$defs/step/...`, `/$defs/identifier/pattern`, ...).
fn definition(json: &serde_json::Value, name: &str) -> jsonschema::Validator {
    jsonschema::draft202012::new(&definition_root(json, name))
        .expect("a meta-schema definition compiles")
}

/// The schema of `$defs/<name>` of `json`, with the same `$id` and `$defs`.
fn definition_root(json: &serde_json::Value, name: &str) -> serde_json::Value {
    let mut root = serde_json::Map::new();
    for key in ["$schema", "$id", "$defs"] {
        if let Some(value) = json.get(key) {
            root.insert(key.to_owned(), value.clone());
        }
    }
    root.insert("$ref".to_owned(), format!("#/$defs/{name}").into());
    serde_json::Value::Object(root)
}

fn lwir_meta() -> &'static MetaSchema {
    static CELL: OnceLock<MetaSchema> = OnceLock::new();
    meta(MetaKind::Lwir, LWIR_META_SCHEMA, &CELL)
}

fn workflow_meta() -> &'static MetaSchema {
    static CELL: OnceLock<MetaSchema> = OnceLock::new();
    meta(MetaKind::Workflow, WORKFLOW_META_SCHEMA, &CELL)
}

fn goal_meta() -> &'static MetaSchema {
    static CELL: OnceLock<MetaSchema> = OnceLock::new();
    meta(MetaKind::Goal, GOAL_META_SCHEMA, &CELL)
}

fn proposal_meta() -> &'static MetaSchema {
    static CELL: OnceLock<MetaSchema> = OnceLock::new();
    meta(MetaKind::Proposal, GOAL_META_SCHEMA, &CELL)
}

fn bindings_meta() -> &'static MetaSchema {
    static CELL: OnceLock<MetaSchema> = OnceLock::new();
    meta(MetaKind::Bindings, BINDINGS_META_SCHEMA, &CELL)
}

/// A bindings file against its meta-schema (`crates/lwir-spec/schema/bindings-1.schema.json`):
/// every finding, with codes of the shape range (LW101–LW106), pointers and spans into `doc`.
pub fn check_bindings(doc: &SpannedDocument) -> Vec<Finding> {
    let mut out = Vec::new();
    against_meta_schema(
        doc,
        bindings_meta(),
        Origin::Draft,
        &HashSet::new(),
        &mut out,
        None,
    );
    lwir_spec::finding::sort_findings(&mut out);
    out
}

/// A goal file against its meta-schema (`crates/lwir-spec/schema/goal-1.schema.json`): every
/// finding, with codes of the shape range (LW101–LW106), pointers and spans into `doc`.
pub fn check_goal_file(doc: &SpannedDocument) -> Vec<Finding> {
    let mut out = Vec::new();
    against_meta_schema(
        doc,
        goal_meta(),
        Origin::Draft,
        &HashSet::new(),
        &mut out,
        None,
    );
    lwir_spec::finding::sort_findings(&mut out);
    out
}

/// The `apply` answer of a replan against `#/$defs/proposal` of the goal meta-schema.
pub fn check_proposal(doc: &SpannedDocument) -> Vec<Finding> {
    let mut out = Vec::new();
    against_meta_schema(
        doc,
        proposal_meta(),
        Origin::Draft,
        &HashSet::new(),
        &mut out,
        None,
    );
    lwir_spec::finding::sort_findings(&mut out);
    out
}

/// The draft's shape: its meta-schema, the LWIR version, the subset of its output schemas.
/// The top-level steps of the last revision of a draft that met the meta-schema, by their
/// text: whether a step meets it is a function of its text, so the same text anywhere in the
/// next revision meets it too.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    valid: foldhash::HashSet<Box<[u8]>>,
}

pub(crate) fn check(cx: &Context<'_>, out: &mut Vec<Finding>, memo: Option<&mut Memo>) {
    // Steps whose kind is missing or unknown: their fields cannot be judged, so the
    // meta-schema's complaints about them are noise after the kind finding.
    let mut unjudged = HashSet::new();
    cx.draft.walk(&mut |step| {
        if step.kind.is_none() {
            unjudged.insert(step.pointer.clone());
        }
    });
    against_meta_schema(
        cx.draft_doc,
        lwir_meta(),
        Origin::Draft,
        &unjudged,
        out,
        memo,
    );
    lwir_version(cx, out);
    cx.draft.walk(&mut |step| {
        if matches!(step.kind, Some(StepKind::ModelCall | StepKind::CodeRun))
            && let Some(schema) = step.field("output")
        {
            subset::check(schema, step.pointer_to("output"), Origin::Draft, out);
        }
    });
}

/// The definition's own shape: its meta-schema and the JSON Schema subset of its schemas.
pub(crate) fn check_definition(
    doc: &SpannedDocument,
    def: &Definition<'_>,
    out: &mut Vec<Finding>,
) {
    against_meta_schema(
        doc,
        workflow_meta(),
        Origin::Definition,
        &HashSet::new(),
        out,
        None,
    );
    for key in ["input", "output"] {
        if let Some(schema) = def.root.get(key) {
            subset::check(schema, format!("/{key}"), Origin::Definition, out);
        }
    }
    for tool in &def.tools {
        for key in ["input", "output"] {
            if let Some(schema) = tool.node.get(key) {
                subset::check(
                    schema,
                    pointer::join(&tool.pointer, key),
                    Origin::Definition,
                    out,
                );
            }
        }
    }
}

fn lwir_version(cx: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(node) = cx.draft.lwir() else { return };
    let Some(version) = node.as_str() else { return };
    if version != LWIR_VERSION {
        out.push(
            Finding::new(
                Code::UnsupportedLwirVersion,
                "/lwir",
                node.span,
                format!("LWIR version `{version}` is not supported"),
            )
            .with_help(format!("this lwirc implements LWIR `{LWIR_VERSION}`"))
            // There is exactly one LWIR version a draft can be written in.
            .with_fix(Fix::replace(
                Applicability::MachineApplicable,
                "/lwir",
                LWIR_VERSION,
            )),
        );
    }
}

/// `doc` against `meta`.
///
/// The `jsonschema` crate validates a `serde_json::Value`, a second copy of the document
/// several times its size. For a draft, the top-level steps (nearly all of it) are therefore
/// validated one at a time, each as its own `serde_json` copy, against `$defs/step` — what
/// the meta-schema applies to each element of `steps` (`$defs/steps` is only `type` and
/// `items`) — and the rest of the document with `steps` empty. Error locations are the
/// same: instance paths get the step's prefix, and schema paths are absolute keyword
/// locations (`/$defs/step/...`) either way. Findings are sorted afterwards, so the order
/// in which they are met does not show.
///
/// With `memo`, the steps it holds as valid are not asked again, and it is left holding
/// this document's valid steps.
fn against_meta_schema(
    doc: &SpannedDocument,
    meta: &MetaSchema,
    origin: Origin,
    unjudged: &HashSet<String>,
    out: &mut Vec<Finding>,
    mut memo: Option<&mut Memo>,
) {
    let root = doc.root();
    let steps = match (
        &meta.step,
        &meta.spanned_step,
        root.as_object(),
        root.get("steps"),
    ) {
        (Some(step), Some(spanned), Some(members), Some(steps)) => {
            steps.as_array().map(|s| (step, spanned, members, s))
        }
        _ => None,
    };
    let Some((step_validator, spanned_validator, members, steps)) = steps else {
        let instance = if root.as_array().is_some() && only_object_keywords(&meta.json) {
            // An array where the meta-schema wants an object (an array of a million numbers,
            // say) meets only `type`: an empty array fails it the same way.
            serde_json::Value::Array(Vec::new())
        } else {
            root.to_json()
        };
        for error in meta.validator.iter_errors(&instance) {
            let at = error.instance_path().as_str().to_owned();
            meta_schema_error(doc, meta, origin, unjudged, &error, at, out);
        }
        return;
    };
    let mut old = memo.as_deref_mut().map(|m| std::mem::take(&mut m.valid));
    let mut valid = foldhash::HashSet::default();
    for (i, step) in steps.iter().enumerate() {
        let text = &doc.source()[step.span.range()];
        if let Some(old) = &mut old
            && let Some(known) = old.take(text)
        {
            valid.insert(known);
            continue;
        }
        // Nearly every step is valid: asking first, of the spanned step itself, is much
        // cheaper than collecting errors (which evaluates every branch,
        // `unevaluatedProperties` included) of a copy.
        if spanned_validator.is_valid(step) {
            if memo.is_some() {
                valid.insert(Box::from(text));
            }
            continue;
        }
        let instance = step.to_json();
        for error in step_validator.iter_errors(&instance) {
            let at = format!("/steps/{i}{}", error.instance_path().as_str());
            meta_schema_error(doc, meta, origin, unjudged, &error, at, out);
        }
    }
    if let Some(memo) = memo {
        memo.valid = valid;
    }
    let instance = serde_json::Value::Object(
        members
            .iter()
            .map(|m| {
                let value = if m.key == "steps" {
                    serde_json::Value::Array(Vec::new())
                } else {
                    m.value.to_json()
                };
                (m.key.as_str().to_owned(), value)
            })
            .collect(),
    );
    for error in meta.validator.iter_errors(&instance) {
        let at = error.instance_path().as_str().to_owned();
        meta_schema_error(doc, meta, origin, unjudged, &error, at, out);
    }
}

/// Whether every keyword of `schema` but `type` applies to objects alone (or is an
/// annotation), so that for an array it checks the type and nothing else.
fn only_object_keywords(schema: &serde_json::Value) -> bool {
    const KEYWORDS: &[&str] = &[
        "$schema",
        "$id",
        "$defs",
        "$comment",
        "title",
        "description",
        "type",
        "properties",
        "patternProperties",
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "required",
        "minProperties",
        "maxProperties",
        "dependentRequired",
        "dependentSchemas",
    ];
    schema
        .as_object()
        .is_some_and(|o| o.keys().all(|k| KEYWORDS.contains(&k.as_str())))
        && schema.get("type").and_then(serde_json::Value::as_str) == Some("object")
}

/// The findings of one meta-schema error at `at` (an instance path into `doc`).
fn meta_schema_error(
    doc: &SpannedDocument,
    meta: &MetaSchema,
    origin: Origin,
    unjudged: &HashSet<String>,
    error: &jsonschema::ValidationError<'_>,
    at: String,
    out: &mut Vec<Finding>,
) {
    {
        let Some(node) = doc.root().at(&at) else {
            return;
        };
        let schema_path = error.schema_path().as_str();
        let mut found = Vec::new();
        match error.kind() {
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                let what = match node
                    .get("kind")
                    .and_then(Node::as_str)
                    .and_then(StepKind::parse)
                {
                    Some(kind) if kind.fields().contains(&name) => {
                        format!("`{}` step", kind.as_str())
                    }
                    _ => describe(&at, origin),
                };
                found.push(Finding::new(
                    Code::MissingField,
                    at.clone(),
                    head(node.span),
                    format!("{what} is missing required field `{name}`"),
                ));
            }
            ValidationErrorKind::AdditionalProperties { unexpected }
            | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                if unjudged.contains(&at) {
                    return;
                }
                let known = known_fields(meta, schema_path, node);
                // A failed `then` drops its annotations, so a kind's own fields come back as
                // "unevaluated" when the step lacks a required one; they are not unknown.
                for key in unexpected.iter().filter(|k| !known.contains(k)) {
                    found.push(unknown_field(
                        doc,
                        node,
                        &at,
                        key,
                        &known,
                        &describe(&at, origin),
                    ));
                }
            }
            ValidationErrorKind::Type { kind } => {
                let expected = expected_types(kind);
                let finding = Finding::new(
                    Code::WrongType,
                    at.clone(),
                    node.span,
                    format!(
                        "{} must be {}, found {}",
                        describe(&at, origin),
                        article(&expected),
                        node.type_name()
                    ),
                );
                found.push(match wrong_type_fix(&at, node, &expected, origin) {
                    Some(value) => finding.with_fix(Fix::replace(
                        Applicability::MachineApplicable,
                        at.clone(),
                        value,
                    )),
                    None => finding,
                });
            }
            ValidationErrorKind::Enum { options } => {
                let options: Vec<&str> = options
                    .as_array()
                    .map(|o| o.iter().filter_map(|v| v.as_str()).collect())
                    .unwrap_or_default();
                found.push(not_one_of(&at, node, &options, origin));
            }
            ValidationErrorKind::Pattern { .. } => {
                let text = node.as_str().unwrap_or_default();
                found.push(
                    Finding::new(
                        Code::InvalidIdentifier,
                        at.clone(),
                        node.span,
                        format!(
                            "`{text}` is not a valid {}",
                            identifier_kind(&at, origin, meta.kind)
                        ),
                    )
                    .with_help(identifier_help(&at, origin, meta.kind)),
                );
            }
            ValidationErrorKind::PropertyNames { error } => {
                let name = error.instance().as_str().unwrap_or_default().to_owned();
                let key_pointer = pointer::join(&at, &name);
                let span = doc.key_span_of(&key_pointer).unwrap_or(node.span);
                found.push(
                    Finding::new(
                        Code::InvalidIdentifier,
                        key_pointer.clone(),
                        span,
                        format!(
                            "`{name}` is not a valid {}",
                            identifier_kind(&key_pointer, origin, meta.kind)
                        ),
                    )
                    .with_help(identifier_help(
                        &key_pointer,
                        origin,
                        meta.kind,
                    )),
                );
            }
            kind => {
                found.push(Finding::new(
                    Code::InvalidValue,
                    at.clone(),
                    node.span,
                    format!("{} {}", describe(&at, origin), limit_message(kind)),
                ));
            }
        }
        for f in found {
            out.push(if origin == Origin::Definition {
                f.in_definition()
            } else {
                f
            });
        }
    }
}

/// The certain fix of a draft value of the wrong JSON type, when there is one: the string
/// spelling exactly a number or boolean where one is wanted (`"max_iterations": "10"`),
/// one name where a list of names is wanted (`"after": "fetch"` → `["fetch"]`), and the
/// LWIR version written as a number (`"lwir": 1`).
fn wrong_type_fix(
    at: &str,
    node: &Node,
    expected: &str,
    origin: Origin,
) -> Option<serde_json::Value> {
    if origin != Origin::Draft {
        return None;
    }
    if at == "/lwir" {
        return Some(serde_json::Value::from(LWIR_VERSION));
    }
    if let Some(value) = crate::literal::exact_conversion(node, expected) {
        return Some(value);
    }
    let list_of_names = ["after", "capabilities", "tools"]
        .iter()
        .any(|field| at.ends_with(&format!("/{field}")));
    match node.as_str() {
        Some(name)
            if expected == "array" && list_of_names && !crate::literal::interpolates(name) =>
        {
            Some(serde_json::json!([name]))
        }
        _ => None,
    }
}

/// The fields an object at a meta-schema location may have: the `properties` beside the
/// failing `additionalProperties`/`unevaluatedProperties`, plus a step kind's own fields.
fn known_fields(meta: &MetaSchema, schema_path: &str, node: &Node) -> Vec<String> {
    let parent = schema_path.rsplit_once('/').map_or("", |(p, _)| p);
    let mut known: Vec<String> = meta
        .json
        .pointer(&format!("{parent}/properties"))
        .and_then(|p| p.as_object())
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    if parent == "/$defs/step" {
        known = COMMON_STEP_FIELDS.iter().map(|s| (*s).to_owned()).collect();
        if let Some(kind) = node
            .get("kind")
            .and_then(Node::as_str)
            .and_then(StepKind::parse)
        {
            known.extend(kind.fields().iter().map(|s| (*s).to_owned()));
        }
    }
    known
}

fn unknown_field(
    doc: &SpannedDocument,
    node: &Node,
    at: &str,
    key: &str,
    known: &[String],
    what: &str,
) -> Finding {
    let key_pointer = pointer::join(at, key);
    let span = doc.key_span_of(&key_pointer).unwrap_or(node.span);
    let mut finding = Finding::new(
        Code::UnknownField,
        key_pointer,
        span,
        format!("unknown field `{key}` in {what}"),
    );
    let absent = known
        .iter()
        .map(String::as_str)
        .filter(|k| node.get(k).is_none());
    match suggest(key, absent) {
        Some(suggested) => finding = did_you_mean(finding, suggested, at),
        None => {
            let names = all_of(known.iter().map(String::as_str));
            finding = finding.with_help(format!(
                "known fields are {names}; extensions must start with `x-`"
            ));
        }
    }
    finding
}

fn not_one_of(at: &str, node: &Node, options: &[&str], origin: Origin) -> Finding {
    let is_kind = at.ends_with("/kind") && origin == Origin::Draft;
    let code = if is_kind {
        Code::UnknownStepKind
    } else {
        Code::InvalidValue
    };
    let shown = match node.as_str() {
        Some(s) => format!("`{s}`"),
        None => node.type_name().to_owned(),
    };
    let what = if is_kind {
        "step kind".to_owned()
    } else {
        describe(at, origin)
    };
    let mut finding = Finding::new(
        code,
        at.to_owned(),
        node.span,
        format!("{shown} is not a known {what}"),
    );
    let suggestion = node
        .as_str()
        .and_then(|s| suggest(s, options.iter().copied()));
    match suggestion {
        Some((candidate, applicability)) => {
            finding = finding
                .with_help(format!("did you mean `{candidate}`?"))
                .with_fix(Fix::replace(applicability, at, candidate));
        }
        None => {
            finding = finding.with_help(format!("expected {}", one_of(options.iter().copied())))
        }
    }
    finding
}

fn limit_message(kind: &ValidationErrorKind) -> String {
    match kind {
        ValidationErrorKind::Minimum { limit } => format!("must be at least {limit}"),
        ValidationErrorKind::Maximum { limit } => format!("must be at most {limit}"),
        ValidationErrorKind::MinItems { limit: 1 } => "must not be empty".to_owned(),
        ValidationErrorKind::MinItems { limit } => format!("must have at least {limit} items"),
        ValidationErrorKind::MinLength { limit: 1 } => "must not be empty".to_owned(),
        ValidationErrorKind::MinLength { limit } => {
            format!("must be at least {limit} characters long")
        }
        ValidationErrorKind::UniqueItems => "must not list the same item twice".to_owned(),
        ValidationErrorKind::FalseSchema => "is not allowed here".to_owned(),
        other => format!("breaks the `{}` rule of the meta-schema", other.keyword()),
    }
}

/// A short description of what lives at `at`, for messages.
fn describe(at: &str, origin: Origin) -> String {
    let tokens = pointer::tokens(at).unwrap_or_default();
    let last = tokens.last().map(String::as_str);
    let in_steps = tokens.iter().any(|t| t == "steps" || t == "default");
    match (origin, tokens.len(), last) {
        (Origin::Draft, 0, _) => "the document".to_owned(),
        (_, _, Some(l))
            if l.parse::<usize>().is_ok() && tokens.len() == 2 && tokens[0] == "work" =>
        {
            format!("work item {l}")
        }
        (_, _, Some(l))
            if l.parse::<usize>().is_ok() && tokens.len() == 2 && tokens[0] == "items" =>
        {
            format!("proposed item {l}")
        }
        (Origin::Definition, 0, _) => "the definition".to_owned(),
        (_, _, Some(l)) if l.parse::<usize>().is_ok() && in_steps => "step".to_owned(),
        (_, _, Some(l)) if l.parse::<usize>().is_ok() => {
            format!("item {l} of `{}`", tokens[tokens.len() - 2])
        }
        (_, _, Some(l)) => format!("`{l}`"),
        _ => "value".to_owned(),
    }
}

fn identifier_kind(at: &str, origin: Origin, kind: MetaKind) -> &'static str {
    if kind == MetaKind::Bindings {
        return bindings_identifier(at).0;
    }
    if matches!(kind, MetaKind::Goal | MetaKind::Proposal) {
        return match at {
            "/goal" => "goal name",
            _ if at.ends_with("/version") => "version digest",
            _ if at.contains("/skills/") => "skill name",
            _ if at.starts_with("/templates/") || at.ends_with("/template") => "template name",
            _ => "work key",
        };
    }
    match origin {
        Origin::Definition if at.starts_with("/models/") => "model slot id",
        Origin::Definition if at.starts_with("/tools/") => "tool id",
        Origin::Definition => "workflow name",
        Origin::Draft if at.ends_with("/id") => "step id",
        Origin::Draft if at.contains("/after/") => "step id",
        Origin::Draft | Origin::Planner => "variable name",
    }
}

fn identifier_help(at: &str, origin: Origin, kind: MetaKind) -> &'static str {
    if kind == MetaKind::Bindings {
        return bindings_identifier(at).1;
    }
    if matches!(kind, MetaKind::Goal | MetaKind::Proposal) {
        return match at {
            "/goal" => {
                "goal names use lowercase letters, digits, `.`, `_` and `-`, starting with a \
                 letter or digit, at most 64 characters"
            }
            _ if at.ends_with("/version") => {
                "a template is pinned by its whole WorkflowVersion, `sha256:` and 64 lowercase \
                 hex digits, as `lwirc registry list` prints it"
            }
            _ if at.contains("/skills/") => "skill names use lowercase letters, digits and `-`",
            _ => {
                "keys and template names use lowercase letters, digits, `_` and `-`, do not \
                 start with a digit or `-`, and have at most 64 characters"
            }
        };
    }
    match origin {
        Origin::Definition if at.starts_with("/tools/") => {
            "tool ids use letters, digits, `_`, `.` and `-`, and do not start with `.` or `-`"
        }
        Origin::Definition if !at.starts_with("/models/") => {
            "workflow names use lowercase letters, digits, `.`, `_` and `-`, starting with a letter or digit"
        }
        _ => "identifiers use lowercase letters, digits and `_`, and do not start with a digit",
    }
}

/// What an identifier of a bindings file at `at` names, and how such names are written.
fn bindings_identifier(at: &str) -> (&'static str, &'static str) {
    let tokens = pointer::tokens(at).unwrap_or_default();
    let variable = (
        "environment variable name",
        "variable names use letters, digits and `_`, and do not start with a digit",
    );
    match tokens
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [_, _, "env", ..] | [_, _, "api_key_env"] | [_, _, "headers_env", _] => variable,
        ["servers", ..] | [_, _, "server"] => (
            "server name",
            "server names use letters, digits, `_`, `.` and `-`, at most 64, and do not start \
             with `.` or `-`",
        ),
        ["tools", ..] => (
            "tool id",
            "tool ids use letters, digits, `_`, `.` and `-`, and do not start with `.` or `-`",
        ),
        ["models", ..] => (
            "model slot id",
            "slot ids use lowercase letters, digits and `_`, and do not start with a digit; \
             `*` binds every slot without a binding of its own",
        ),
        _ => (
            "name",
            "names use letters, digits and `_`, and do not start with a digit",
        ),
    }
}

fn article(what: &str) -> String {
    match what.as_bytes().first() {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => format!("an {what}"),
        _ => format!("a {what}"),
    }
}

/// `finding`, about a key at its pointer in the object at `at`, with a help naming the key
/// `suggest` found and the fix that renames the key to it (a JSON Patch `move`).
pub(crate) fn did_you_mean(
    finding: Finding,
    (candidate, applicability): (&str, lwir_spec::finding::Applicability),
    at: &str,
) -> Finding {
    let from = finding.pointer.clone();
    finding
        .with_help(format!("did you mean `{candidate}`?"))
        .with_fix(Fix {
            applicability,
            patch: vec![PatchOp::Move {
                from,
                path: pointer::join(at, candidate),
            }],
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn meta_schemas_compile() {
        let _ = super::lwir_meta();
        let _ = super::workflow_meta();
        let _ = super::goal_meta();
        let _ = super::proposal_meta();
        let _ = super::bindings_meta();
    }
}
