//! Capabilities: every tool a draft names is in the definition's allowlist, and the literal
//! arguments of a `tool.call` fit the tool's input schema. Arguments given as expressions
//! or templates are the expression validator's to check.

use std::collections::HashMap;

use jsonschema::error::ValidationErrorKind;
use lwir_spec::document::Node;
use lwir_spec::ir::{Definition, Step, StepKind, Tool};
use lwir_spec::{Code, Finding, Fix, PatchOp, pointer};

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
        .map(|m| (m.key.to_string(), m.value.to_json()))
        .collect();
    let instance = serde_json::Value::Object(literals);
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
        out.push(Finding::new(
            Code::ToolArgumentMismatch,
            format!("{args_at}{path}"),
            node.span,
            format!(
                "argument `{name}` does not fit `{}`: {}",
                tool.id,
                mismatch(&error, node)
            ),
        ));
    }
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
