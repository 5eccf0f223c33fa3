//! Capabilities: every tool a draft names is in the definition's allowlist, and the literal
//! arguments of a `tool.call` fit the tool's input schema. Arguments given as expressions
//! or templates are the expression validator's to check.

use std::collections::HashMap;

use jsonschema::error::ValidationErrorKind;
use lwir_spec::document::Node;
use lwir_spec::ir::{Definition, Step, StepKind, Tool};
use lwir_spec::{Applicability, Code, Finding, Fix, PatchOp, pointer};

use crate::literal::is_literal;
use crate::{Context, expected_types, head, one_of, replace_at, unknown_name};

pub(crate) fn check(cx: &Context<'_>, out: &mut Vec<Finding>) {
    let Some((_, def)) = &cx.definition else {
        return;
    };
    // One compiled input schema per tool, however many steps call it.
    let mut compiled: HashMap<&str, Option<jsonschema::Validator>> = HashMap::new();
    cx.draft.walk(&mut |step| match step.kind {
        Some(StepKind::ToolCall) => {
            let Some(tool_node) = step.field("tool") else {
                return;
            };
            let Some(tool) = resolve(def, tool_node, step.pointer_to("tool"), out) else {
                return;
            };
            arguments(step, tool_node, tool, &mut compiled, out);
        }
        Some(StepKind::ModelCall) => {
            let Some(tools) = step.field("tools").and_then(Node::as_array) else {
                return;
            };
            for (i, node) in tools.iter().enumerate() {
                resolve(
                    def,
                    node,
                    pointer::join_index(&step.pointer_to("tools"), i),
                    out,
                );
            }
        }
        _ => {}
    });
}

/// The tool `node` names, or a finding when the allowlist has no such tool.
fn resolve<'d, 'a>(
    def: &'a Definition<'d>,
    node: &Node,
    at: String,
    out: &mut Vec<Finding>,
) -> Option<&'a Tool<'d>> {
    let id = node.as_str()?;
    if let Some(tool) = def.tool(id) {
        return Some(tool);
    }
    let mut finding = Finding::new(
        Code::UnknownTool,
        at.clone(),
        node.span,
        format!("unknown tool `{id}`"),
    );
    finding = unknown_name(
        finding,
        id,
        def.tools.iter().map(|t| t.id),
        replace_at(&at),
        |all| match all {
            "" => "the definition allows no tools".to_owned(),
            all => format!("the definition allows {all}"),
        },
    );
    out.push(finding);
    None
}

fn arguments<'d>(
    step: &Step<'_>,
    tool_node: &Node,
    tool: &Tool<'d>,
    compiled: &mut HashMap<&'d str, Option<jsonschema::Validator>>,
    out: &mut Vec<Finding>,
) {
    let Some(schema) = tool.input() else { return };
    let args = step.field("args");
    let args_at = step.pointer_to("args");
    if args.is_some_and(|a| a.as_object().is_none()) {
        return; // The shape validator reports the wrong type.
    }
    let given = |name: &str| args.and_then(|a| a.get(name)).is_some();

    let required = schema
        .get("required")
        .and_then(Node::as_array)
        .unwrap_or_default();
    for name in required
        .iter()
        .filter_map(Node::as_str)
        .filter(|n| !given(n))
    {
        let (at, span) = match args {
            Some(a) => (args_at.clone(), head(a.span)),
            None => (step.pointer_to("tool"), tool_node.span),
        };
        out.push(
            Finding::new(
                Code::MissingToolArgument,
                at,
                span,
                format!("missing argument `{name}`, which `{}` requires", tool.id),
            )
            .with_help(format!("add `\"{name}\"` to `args`")),
        );
    }

    let Some(args) = args else { return };
    let properties = schema
        .get("properties")
        .and_then(Node::as_object)
        .unwrap_or_default();
    let closed = matches!(
        schema.get("additionalProperties").map(|n| &n.value),
        Some(lwir_spec::Value::Bool(false))
    );
    if closed {
        for member in args.as_object().unwrap_or_default() {
            if properties.iter().any(|p| p.key == member.key) {
                continue;
            }
            let at = pointer::join(&args_at, &member.key);
            let mut finding = Finding::new(
                Code::UnknownToolArgument,
                at.clone(),
                member.key_span,
                format!("`{}` takes no argument `{}`", tool.id, member.key),
            );
            let absent = properties
                .iter()
                .map(|p| p.key.as_str())
                .filter(|k| !given(k));
            let rename = |candidate: &str, applicability| {
                Some(Fix {
                    applicability,
                    patch: vec![PatchOp::Move {
                        from: at,
                        path: pointer::join(&args_at, candidate),
                    }],
                })
            };
            finding = unknown_name(finding, &member.key, absent, rename, |_| {
                format!(
                    "`{}` takes {}",
                    tool.id,
                    one_of(properties.iter().map(|p| p.key.as_str()))
                )
            });
            out.push(finding);
        }
    }

    let Some(validator) = compiled
        .entry(tool.id)
        .or_insert_with(|| jsonschema::validator_for(&schema.to_json()).ok())
    else {
        return; // An invalid input schema is reported by the shape validator.
    };
    let literals: serde_json::Map<String, serde_json::Value> = args
        .as_object()
        .unwrap_or_default()
        .iter()
        .filter(|m| is_literal(&m.value))
        .map(|m| (m.key.as_str().to_owned(), m.value.to_json()))
        .collect();
    let instance = serde_json::Value::Object(literals);
    let mut tried = 0;
    for error in validator.iter_errors(&instance) {
        let path = error.instance_path().as_str();
        let top_level = path.is_empty();
        if top_level
            && matches!(
                error.kind(),
                ValidationErrorKind::Required { .. }
                    | ValidationErrorKind::AdditionalProperties { .. }
                    | ValidationErrorKind::UnevaluatedProperties { .. }
            )
        {
            continue; // Reported above, with better places and fixes.
        }
        let Some(node) = args.at(path) else { continue };
        let name = pointer::tokens(path)
            .and_then(|t| t.into_iter().next())
            .unwrap_or_default();
        let at = format!("{args_at}{path}");
        let mut finding = Finding::new(
            Code::ToolArgumentMismatch,
            at.clone(),
            node.span,
            format!(
                "argument `{name}` does not fit `{}`: {}",
                tool.id,
                mismatch(&error, node)
            ),
        );
        // Each candidate fix validates the step's arguments again: a bounded number per step.
        if tried < MAX_ARGUMENT_FIXES
            && let Some((value, applicability)) = argument_fix(&error, node)
            && {
                tried += 1;
                fits(validator, &instance, path, &value)
            }
        {
            finding = finding.with_fix(Fix::replace(applicability, at, value));
        }
        out.push(finding);
    }
}

/// Most argument fixes tried per step (each validates its arguments once more).
const MAX_ARGUMENT_FIXES: usize = 32;

/// The fix of a literal argument that breaks its schema, when one value is meant beyond
/// doubt: a string spelling exactly the integer or boolean the schema wants (`"5"` → `5`),
/// or a string one enum value differs from in case or separators only, or by one edit
/// ([`lwir_spec::suggest::suggest`]; further ones are maybe-incorrect).
fn argument_fix(
    error: &jsonschema::ValidationError<'_>,
    node: &Node,
) -> Option<(serde_json::Value, Applicability)> {
    match error.kind() {
        ValidationErrorKind::Type { kind } => {
            crate::literal::exact_conversion(node, &expected_types(kind))
                .map(|v| (v, Applicability::MachineApplicable))
        }
        ValidationErrorKind::Enum { options } => {
            let wrong = node.as_str()?;
            let options = options.as_array()?;
            let names = options.iter().filter_map(serde_json::Value::as_str);
            let (name, applicability) = lwir_spec::suggest::suggest(wrong, names)?;
            Some((serde_json::Value::from(name), applicability))
        }
        _ => None,
    }
}

/// Whether the literal arguments `instance` with `value` at `path` have no error at or
/// inside `path`: the fixed argument fits its schema.
fn fits(
    validator: &jsonschema::Validator,
    instance: &serde_json::Value,
    path: &str,
    value: &serde_json::Value,
) -> bool {
    let mut fixed = instance.clone();
    let Some(slot) = fixed.pointer_mut(path) else {
        return false;
    };
    *slot = value.clone();
    !validator.iter_errors(&fixed).any(|e| {
        let at = e.instance_path().as_str();
        at == path || at.starts_with(&format!("{path}/"))
    })
}

fn mismatch(error: &jsonschema::ValidationError<'_>, node: &Node) -> String {
    match error.kind() {
        ValidationErrorKind::Type { kind } => {
            format!(
                "expected {}, found {}",
                expected_types(kind),
                node.type_name()
            )
        }
        ValidationErrorKind::Enum { options } => {
            let shown: Vec<String> = options
                .as_array()
                .map(|o| o.iter().map(|v| v.to_string()).collect())
                .unwrap_or_default();
            format!("expected one of {}", shown.join(", "))
        }
        _ => {
            // jsonschema's message names the value; keep it readable for big ones.
            let text = error.to_string();
            if text.len() > 160 {
                format!("{}…", &text[..text.floor_char_boundary(160)])
            } else {
                text
            }
        }
    }
}
