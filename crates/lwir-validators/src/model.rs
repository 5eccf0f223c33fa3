//! Models: every `model.call` names a slot of the definition, and the slot meets the step's
//! `requires` (quality tier, capabilities, context size); `tools` needs `tool_use`.

use lwir_spec::document::Node;
use lwir_spec::ir::{Definition, ModelSlot, Quality, Step, StepKind};
use lwir_spec::{Applicability, Code, Finding, Fix, pointer};

use crate::{Context, all_of, replace_at, unknown_name};

pub(crate) fn check(cx: &Context<'_>, out: &mut Vec<Finding>) {
    let Some((_, def)) = &cx.definition else {
        return;
    };
    cx.draft.walk(&mut |step| {
        if step.kind == Some(StepKind::ModelCall) {
            model_call(def, step, out);
        }
    });
}

/// What a `model.call` asks of its slot.
struct Needs<'d> {
    quality: Option<(Quality, &'d Node)>,
    capabilities: Vec<(&'d str, usize, &'d Node)>,
    context: Option<(i64, &'d Node)>,
    tools: Option<&'d Node>,
}

impl Needs<'_> {
    fn met_by(&self, slot: &ModelSlot<'_>) -> bool {
        self.quality
            .is_none_or(|(q, _)| slot.quality().is_some_and(|s| s >= q))
            && self
                .capabilities
                .iter()
                .all(|(c, _, _)| slot.has_capability(c))
            && self
                .context
                .is_none_or(|(n, _)| slot.context_tokens().is_some_and(|s| s >= n))
            && (self.tools.is_none() || slot.has_capability("tool_use"))
    }
}

fn needs<'d>(step: &Step<'d>) -> Needs<'d> {
    let requires = step.field("requires");
    let get = |key: &str| requires.and_then(|r| r.get(key));
    Needs {
        quality: get("quality").and_then(|n| Some((Quality::parse(n.as_str()?)?, n))),
        capabilities: get("capabilities")
            .and_then(Node::as_array)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .filter_map(|(i, n)| Some((n.as_str()?, i, n)))
            .collect(),
        context: get("context_tokens").and_then(|n| Some((n.as_i64()?, n))),
        tools: step
            .field("tools")
            .filter(|t| t.as_array().is_some_and(|a| !a.is_empty())),
    }
}

fn model_call(def: &Definition<'_>, step: &Step<'_>, out: &mut Vec<Finding>) {
    let Some(model_node) = step.field("model") else {
        return;
    };
    let Some(id) = model_node.as_str() else {
        return;
    };
    let model_at = step.pointer_to("model");
    let needs = needs(step);
    let Some(slot) = def.model(id) else {
        let mut finding = Finding::new(
            Code::UnknownModelSlot,
            model_at.clone(),
            model_node.span,
            format!("unknown model slot `{id}`"),
        );
        finding = unknown_name(
            finding,
            id,
            def.models.iter().map(|m| m.id),
            replace_at(&model_at),
            slots_help,
        );
        out.push(finding);
        return;
    };

    // The one slot that would meet every requirement, offered as a switch.
    let fitting: Vec<&str> = def
        .models
        .iter()
        .filter(|m| needs.met_by(m))
        .map(|m| m.id)
        .collect();
    let switch = |finding: Finding| match fitting.as_slice() {
        [only] => finding
            .with_help(format!(
                "slot `{only}` meets every requirement of this step"
            ))
            .with_fix(Fix::replace(
                Applicability::MaybeIncorrect,
                model_at.clone(),
                *only,
            )),
        [] => finding.with_help("no slot of the definition meets every requirement of this step"),
        many => finding.with_help(format!(
            "slots {} meet every requirement of this step",
            all_of(many.iter().copied())
        )),
    };

    if let Some((quality, node)) = needs.quality {
        // A slot without a valid tier is the definition's shape finding, not this one.
        if let Some(has) = slot.quality()
            && has < quality
        {
            let has = has.as_str();
            out.push(switch(Finding::new(
                Code::ModelQualityTooLow,
                pointer::join(&step.pointer_to("requires"), "quality"),
                node.span,
                format!(
                    "slot `{id}` is `{has}` quality; this step requires `{}`",
                    quality.as_str()
                ),
            )));
        }
    }
    for (capability, i, node) in &needs.capabilities {
        if !slot.has_capability(capability) {
            out.push(switch(Finding::new(
                Code::ModelCapabilityMissing,
                pointer::join_index(
                    &pointer::join(&step.pointer_to("requires"), "capabilities"),
                    *i,
                ),
                node.span,
                format!("slot `{id}` lacks capability `{capability}`, which this step requires"),
            )));
        }
    }
    if let Some((tokens, node)) = needs.context {
        let has = slot.context_tokens();
        if has.is_none_or(|h| h < tokens) {
            let has = has.map_or_else(|| "an unknown".to_owned(), |h| format!("a {h}-token"));
            out.push(switch(Finding::new(
                Code::ModelContextTooSmall,
                pointer::join(&step.pointer_to("requires"), "context_tokens"),
                node.span,
                format!("slot `{id}` has {has} context; this step requires {tokens} tokens"),
            )));
        }
    }
    if let Some(tools) = needs.tools
        && !slot.has_capability("tool_use")
    {
        out.push(switch(Finding::new(
            Code::ModelToolsWithoutToolUse,
            step.pointer_to("tools"),
            tools.span,
            format!("slot `{id}` lacks `tool_use`, so it cannot call the tools listed here"),
        )));
    }
}

/// What there is when a model slot is unknown and none is close.
fn slots_help(all: &str) -> String {
    match all {
        "" => "the definition has no model slots".to_owned(),
        all => format!("the definition has {all}"),
    }
}

/// The definition's planner must name one of its own slots.
pub(crate) fn planner_slot(def: &Definition<'_>, out: &mut Vec<Finding>) {
    let Some(node) = def.root.get("planner").and_then(|p| p.get("model")) else {
        return;
    };
    let Some(id) = node.as_str() else { return };
    if def.model(id).is_some() {
        return;
    }
    let mut finding = Finding::new(
        Code::UnknownModelSlot,
        "/planner/model",
        node.span,
        format!("the planner uses unknown model slot `{id}`"),
    );
    // No fix: which slot the planner should use is the definition author's choice.
    finding = unknown_name(
        finding,
        id,
        def.models.iter().map(|m| m.id),
        |_, _| None,
        slots_help,
    );
    out.push(finding.in_definition());
}
