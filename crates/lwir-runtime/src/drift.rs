//! Drift at execution time: before the first step, the live surface — each referenced
//! tool as its server lists it now, each referenced slot's model as the bindings name it —
//! is compared with the version's registration record. Each difference is one of the
//! findings `lwirc drift` gives (LW701–LW712), pointing at the binding in the bindings file.

use lwir_registry::Record;
use lwir_registry::dependencies::{Change, Snapshot, compare};
use lwir_registry::drift::code_of;
use lwir_spec::{Finding, SpannedDocument, pointer};
use serde_json::{Value, json};

use crate::bindings::Bindings;
use crate::effects::Surface;
use crate::values::digest_of;

/// The snapshot `surface` makes of what `record` pins: a live tool's hashes, a slot's
/// model as bound; what the surface does not say stays as pinned.
pub fn current(record: &Record, surface: &Surface) -> Snapshot {
    let mut current = record.snapshot();
    let hash = |v: &Value| (!v.is_null()).then(|| digest_of(v));
    current.tools.retain(|t| !surface.removed.contains(&t.id));
    for tool in &mut current.tools {
        if let Some(live) = surface.tools.get(&tool.id) {
            tool.description = hash(&live.description);
            tool.input = hash(&live.input);
            if let Some(output) = &live.output {
                tool.output = hash(output);
            }
        }
    }
    for slot in &mut current.model_slots {
        if let Some(model) = surface.models.get(&slot.id) {
            slot.model = Some(model.clone());
        }
    }
    current
}

/// The surface as `run.started` records it: per referenced tool the hashes of its
/// description, input and output, per referenced slot its model.
pub fn recorded(snapshot: &Snapshot) -> Value {
    let tools: serde_json::Map<String, Value> = snapshot
        .tools
        .iter()
        .map(|t| {
            (
                t.id.clone(),
                json!({"description": t.description, "input": t.input, "output": t.output}),
            )
        })
        .collect();
    let models: serde_json::Map<String, Value> = snapshot
        .model_slots
        .iter()
        .map(|m| (m.id.clone(), json!(m.model)))
        .collect();
    json!({"tools": tools, "models": models})
}

/// The drift of `surface` from `record`: one finding per change, at the binding of the tool
/// or slot in the bindings file (`document`, when there is one).
pub fn findings(
    record: &Record,
    surface: &Surface,
    bindings: &Bindings,
    document: Option<&SpannedDocument>,
) -> Vec<Finding> {
    let pinned = record.snapshot();
    let now = current(record, surface);
    let short = &record.version[..record.version.len().min("sha256:".len() + 12)];
    compare(&pinned, &now)
        .into_iter()
        .map(|change| {
            let at = match &change {
                Change::ToolDescription { tool }
                | Change::ToolInput { tool }
                | Change::ToolOutput { tool }
                | Change::ToolRemoved { tool } => pointer::join("/tools", tool),
                other => {
                    let slot = other.subject();
                    let key = if bindings.models.contains_key(slot) {
                        slot
                    } else {
                        "*"
                    };
                    pointer::join(&pointer::join("/models", key), "model")
                }
            };
            let span = document
                .and_then(|d| d.span_of(&at).or_else(|| Some(d.root().span)))
                .unwrap_or_default();
            Finding::new(
                code_of(&change),
                at,
                span,
                format!("{change} since {short} was registered (as bound now)"),
            )
            .with_help(
                "a registered version runs against what it was compiled against: bind what it \
                 was registered with, or accept the drift (`--on-drift pause`, then `lwirc \
                 runs resume RUN --accept-drift`)",
            )
        })
        .collect()
}
