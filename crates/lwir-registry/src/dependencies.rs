//! What a version depends on: the capability and model-slot snapshot of the tools and slots
//! a draft references, taken from its definition at registration, and how two snapshots
//! differ.
//!
//! A snapshot pins each referenced tool by the SHA-256 (over RFC 8785 canonical JSON) of its
//! description, its input schema and its output schema, and each referenced model slot by its
//! model id, quality, capabilities, context size and the hash of the whole slot object. Tools
//! and slots the draft does not reference are not part of it, so changing them is not drift.
//! It also keeps the definition's own interface — its `input` and `output` schemas, whole —
//! which what runs the version (a goal's work) reads and writes through.

use std::collections::BTreeSet;
use std::fmt;

use lwir_spec::Node;
use lwir_spec::canon::version_of;
use lwir_spec::ir::{Definition, Draft, Quality, StepKind};
use serde::{Deserialize, Serialize};

/// The tools and model slots a version depends on, as they were when it was registered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// One entry per referenced tool, by id.
    pub tools: Vec<ToolSnapshot>,
    /// One entry per referenced model slot, by id.
    pub model_slots: Vec<ModelSlotSnapshot>,
    /// The definition's `input` and `output` schemas; `None` in records written before
    /// lwirc kept them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<Interface>,
}

/// A definition's interface: its `input` and `output` schemas as JSON (`null` when it has
/// none), kept whole so that what runs a version can type its input and read its output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    /// The `input` schema.
    pub input: serde_json::Value,
    /// The `output` schema.
    pub output: serde_json::Value,
}

impl Interface {
    /// The interface of `definition`.
    pub fn of(definition: &Definition<'_>) -> Self {
        let schema = |key: &str| {
            definition
                .root
                .get(key)
                .map_or(serde_json::Value::Null, Node::to_json)
        };
        Self {
            input: schema("input"),
            output: schema("output"),
        }
    }
}

/// A referenced tool's definition, whole: what a run checks the values flowing into and
/// out of the tool against (the snapshot pins only their hashes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSchemas {
    /// Its `description` (`null` when it has none).
    pub description: serde_json::Value,
    /// Its `input` schema (`null` when it has none).
    pub input: serde_json::Value,
    /// Its `output` schema (`null` when it has none).
    pub output: serde_json::Value,
}

impl ToolSchemas {
    /// The schemas of the tools `snapshot` pins, taken from `definition`: each must hash as
    /// pinned. A record written before lwirc kept the schemas is read with the definition
    /// it was compiled against this way; a tool the definition lacks or that changed is
    /// refused, named.
    pub fn of_pinned(
        snapshot: &Snapshot,
        definition: &Definition<'_>,
    ) -> Result<std::collections::BTreeMap<String, ToolSchemas>, String> {
        let current = snapshot.current(definition);
        let mut out = std::collections::BTreeMap::new();
        for pinned in &snapshot.tools {
            let Some(tool) = definition.tool(&pinned.id) else {
                return Err(format!("tool `{}` is not in the definition", pinned.id));
            };
            if current.tool(&pinned.id) != Some(pinned) {
                return Err(format!(
                    "tool `{}` differs from the one the version was registered against",
                    pinned.id
                ));
            }
            out.insert(pinned.id.clone(), Self::of(tool));
        }
        Ok(out)
    }

    /// The schemas of `tool`.
    pub fn of(tool: &lwir_spec::ir::Tool<'_>) -> Self {
        let json = |node: Option<&Node>| node.map_or(serde_json::Value::Null, Node::to_json);
        Self {
            description: json(tool.node.get("description")),
            input: json(tool.input()),
            output: json(tool.output()),
        }
    }
}

/// A tool as a version depends on it. Each hash is `sha256:<hex>` over the RFC 8785 form of
/// the part, `null` when the tool lacks it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSnapshot {
    /// The tool id (its key under `tools`).
    pub id: String,
    /// Hash of `description`.
    pub description: Option<String>,
    /// Hash of the `input` schema.
    pub input: Option<String>,
    /// Hash of the `output` schema.
    pub output: Option<String>,
}

/// A model slot as a version depends on it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSlotSnapshot {
    /// The slot id (its key under `models`).
    pub id: String,
    /// The concrete model.
    pub model: Option<String>,
    /// The quality tier, as written.
    pub quality: Option<String>,
    /// The capabilities, in definition order.
    pub capabilities: Vec<String>,
    /// The context window, in tokens.
    pub context_tokens: Option<i64>,
    /// `sha256:<hex>` over the RFC 8785 form of the whole slot object.
    pub hash: String,
}

/// The ids of the tools and model slots a draft references: every `tool.call`'s `tool`,
/// every `model.call`'s `tools` entries and its `model`, nested steps included. Sorted.
pub fn referenced<'d>(draft: &Draft<'d>) -> (BTreeSet<&'d str>, BTreeSet<&'d str>) {
    let mut tools = BTreeSet::new();
    let mut slots = BTreeSet::new();
    draft.walk(&mut |step| match step.kind {
        Some(StepKind::ToolCall) => {
            tools.extend(step.field("tool").and_then(Node::as_str));
        }
        Some(StepKind::ModelCall) => {
            slots.extend(step.field("model").and_then(Node::as_str));
            let listed = step.field("tools").and_then(Node::as_array);
            tools.extend(listed.unwrap_or_default().iter().filter_map(Node::as_str));
        }
        _ => {}
    });
    (tools, slots)
}

impl Snapshot {
    /// The snapshot of the tools and slots `draft` references, from `definition`. A
    /// referenced id the definition lacks is left out (validation reports it).
    pub fn of_draft(definition: &Definition<'_>, draft: &Draft<'_>) -> Self {
        let (tools, slots) = referenced(draft);
        Self::of_ids(definition, tools, slots)
    }

    /// The snapshot of the tools and slots named by `tools` and `slots` that `definition`
    /// has, in the order given.
    pub fn of_ids<'a>(
        definition: &Definition<'_>,
        tools: impl IntoIterator<Item = &'a str>,
        slots: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let hash = |node: Option<&Node>| node.map(version_of);
        Self {
            tools: tools
                .into_iter()
                .filter_map(|id| definition.tool(id))
                .map(|tool| ToolSnapshot {
                    id: tool.id.to_owned(),
                    description: hash(tool.node.get("description")),
                    input: hash(tool.input()),
                    output: hash(tool.output()),
                })
                .collect(),
            interface: Some(Interface::of(definition)),
            model_slots: slots
                .into_iter()
                .filter_map(|id| definition.model(id))
                .map(|slot| ModelSlotSnapshot {
                    id: slot.id.to_owned(),
                    model: slot
                        .node
                        .get("model")
                        .and_then(Node::as_str)
                        .map(Into::into),
                    quality: slot
                        .node
                        .get("quality")
                        .and_then(Node::as_str)
                        .map(Into::into),
                    capabilities: slot.capabilities().map(Into::into).collect(),
                    context_tokens: slot.context_tokens(),
                    hash: version_of(slot.node),
                })
                .collect(),
        }
    }

    /// Today's state of everything `self` pins, from `definition`: the same tool and slot
    /// ids, those the definition no longer has left out.
    pub fn current(&self, definition: &Definition<'_>) -> Self {
        Self::of_ids(
            definition,
            self.tools.iter().map(|t| t.id.as_str()),
            self.model_slots.iter().map(|m| m.id.as_str()),
        )
    }

    /// Whether the two pin the same things. An interface is compared only when both have
    /// one (a record written before interfaces were kept does not differ by lacking it).
    pub fn agrees_with(&self, other: &Snapshot) -> bool {
        self.tools == other.tools
            && self.model_slots == other.model_slots
            && match (&self.interface, &other.interface) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }

    /// The tool `id`.
    pub fn tool(&self, id: &str) -> Option<&ToolSnapshot> {
        self.tools.iter().find(|t| t.id == id)
    }

    /// The model slot `id`.
    pub fn model_slot(&self, id: &str) -> Option<&ModelSlotSnapshot> {
        self.model_slots.iter().find(|m| m.id == id)
    }
}

/// One way a pinned tool or model slot differs from its current state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// The tool's description changed.
    ToolDescription {
        /// Tool id.
        tool: String,
    },
    /// The tool's input schema changed.
    ToolInput {
        /// Tool id.
        tool: String,
    },
    /// The tool's output schema changed.
    ToolOutput {
        /// Tool id.
        tool: String,
    },
    /// The tool is no longer in the allowlist.
    ToolRemoved {
        /// Tool id.
        tool: String,
    },
    /// The model slot no longer exists.
    SlotRemoved {
        /// Slot id.
        slot: String,
    },
    /// The slot names another model.
    Model {
        /// Slot id.
        slot: String,
        /// Pinned model.
        from: Option<String>,
        /// Current model.
        to: Option<String>,
    },
    /// The slot's quality tier changed.
    Quality {
        /// Slot id.
        slot: String,
        /// Pinned tier.
        from: Option<String>,
        /// Current tier.
        to: Option<String>,
        /// Whether it is lower now (an unknown or missing tier counts as lower).
        lowered: bool,
    },
    /// The slot lost a capability.
    CapabilityLost {
        /// Slot id.
        slot: String,
        /// The capability it no longer has.
        capability: String,
    },
    /// The slot's context window shrank (or is no longer declared).
    ContextReduced {
        /// Slot id.
        slot: String,
        /// Pinned size.
        from: Option<i64>,
        /// Current size.
        to: Option<i64>,
    },
    /// The slot object changed in a way that weakens nothing the version relies on: its
    /// description, an added capability, a larger context window, an extension field.
    SlotOtherwise {
        /// Slot id.
        slot: String,
    },
    /// The definition's `input` schema changed.
    WorkflowInput,
    /// The definition's `output` schema changed.
    WorkflowOutput,
}

impl Change {
    /// The tool or slot id it is about.
    pub fn subject(&self) -> &str {
        match self {
            Change::ToolDescription { tool }
            | Change::ToolInput { tool }
            | Change::ToolOutput { tool }
            | Change::ToolRemoved { tool } => tool,
            Change::SlotRemoved { slot }
            | Change::Model { slot, .. }
            | Change::Quality { slot, .. }
            | Change::CapabilityLost { slot, .. }
            | Change::ContextReduced { slot, .. }
            | Change::SlotOtherwise { slot } => slot,
            Change::WorkflowInput => "input",
            Change::WorkflowOutput => "output",
        }
    }
}

fn shown<T: fmt::Display>(value: &Option<T>) -> String {
    value
        .as_ref()
        .map_or_else(|| "nothing".to_owned(), |v| format!("`{v}`"))
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::ToolDescription { tool } => write!(f, "tool `{tool}`: description changed"),
            Change::ToolInput { tool } => write!(f, "tool `{tool}`: input schema changed"),
            Change::ToolOutput { tool } => write!(f, "tool `{tool}`: output schema changed"),
            Change::ToolRemoved { tool } => write!(f, "tool `{tool}`: removed"),
            Change::WorkflowInput => write!(f, "the workflow's input schema changed"),
            Change::WorkflowOutput => write!(f, "the workflow's output schema changed"),
            Change::SlotRemoved { slot } => write!(f, "model slot `{slot}`: removed"),
            Change::Model { slot, from, to } => write!(
                f,
                "model slot `{slot}`: model changed from {} to {}",
                shown(from),
                shown(to)
            ),
            Change::Quality {
                slot,
                from,
                to,
                lowered,
            } => write!(
                f,
                "model slot `{slot}`: quality {} from {} to {}",
                if *lowered { "lowered" } else { "raised" },
                shown(from),
                shown(to)
            ),
            Change::CapabilityLost { slot, capability } => {
                write!(f, "model slot `{slot}`: lost capability `{capability}`")
            }
            Change::ContextReduced { slot, from, to } => write!(
                f,
                "model slot `{slot}`: context window reduced from {} to {} tokens",
                shown(from),
                shown(to)
            ),
            Change::SlotOtherwise { slot } => write!(
                f,
                "model slot `{slot}`: changed (description, added capabilities, larger context or extensions)"
            ),
        }
    }
}

/// Every way `current` differs from `pinned`, for the tools and slots `pinned` has, in its
/// order. Tools and slots only `current` has are not changes: nothing pinned uses them.
pub fn compare(pinned: &Snapshot, current: &Snapshot) -> Vec<Change> {
    let mut changes = Vec::new();
    if let (Some(was), Some(now)) = (&pinned.interface, &current.interface) {
        if was.input != now.input {
            changes.push(Change::WorkflowInput);
        }
        if was.output != now.output {
            changes.push(Change::WorkflowOutput);
        }
    }
    for was in &pinned.tools {
        let tool = || was.id.clone();
        let Some(now) = current.tool(&was.id) else {
            changes.push(Change::ToolRemoved { tool: tool() });
            continue;
        };
        if was.description != now.description {
            changes.push(Change::ToolDescription { tool: tool() });
        }
        if was.input != now.input {
            changes.push(Change::ToolInput { tool: tool() });
        }
        if was.output != now.output {
            changes.push(Change::ToolOutput { tool: tool() });
        }
    }
    for was in &pinned.model_slots {
        let slot = || was.id.clone();
        let Some(now) = current.model_slot(&was.id) else {
            changes.push(Change::SlotRemoved { slot: slot() });
            continue;
        };
        let before = changes.len();
        if was.model != now.model {
            changes.push(Change::Model {
                slot: slot(),
                from: was.model.clone(),
                to: now.model.clone(),
            });
        }
        if was.quality != now.quality {
            let tier = |q: &Option<String>| q.as_deref().and_then(Quality::parse);
            changes.push(Change::Quality {
                slot: slot(),
                from: was.quality.clone(),
                to: now.quality.clone(),
                lowered: tier(&now.quality) < tier(&was.quality) || tier(&now.quality).is_none(),
            });
        }
        for capability in &was.capabilities {
            if !now.capabilities.contains(capability) {
                changes.push(Change::CapabilityLost {
                    slot: slot(),
                    capability: capability.clone(),
                });
            }
        }
        let reduced = match (was.context_tokens, now.context_tokens) {
            (Some(a), Some(b)) => b < a,
            (Some(_), None) => true,
            _ => false,
        };
        if reduced {
            changes.push(Change::ContextReduced {
                slot: slot(),
                from: was.context_tokens,
                to: now.context_tokens,
            });
        }
        if changes.len() == before && was.hash != now.hash {
            changes.push(Change::SlotOtherwise { slot: slot() });
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use lwir_spec::document::read;

    fn definition(json: serde_json::Value) -> lwir_spec::SpannedDocument {
        read(serde_json::to_vec(&json).unwrap()).document.unwrap()
    }

    fn base() -> serde_json::Value {
        serde_json::json!({
            "name": "w",
            "models": {
                "fast": { "model": "a/1", "quality": "high", "capabilities": ["json_output", "tool_use"], "context_tokens": 1000 },
                "idle": { "model": "a/2", "quality": "basic" }
            },
            "tools": {
                "t.used": { "description": "d", "input": { "type": "object" }, "output": { "type": "object" } },
                "t.idle": { "description": "d", "input": {}, "output": {} }
            }
        })
    }

    fn snapshot(def: &serde_json::Value) -> Snapshot {
        let doc = definition(def.clone());
        let d = Definition::new(doc.root());
        Snapshot::of_ids(&d, ["t.used"], ["fast"])
    }

    fn changes(edit: impl FnOnce(&mut serde_json::Value)) -> Vec<Change> {
        let pinned = snapshot(&base());
        let mut now = base();
        edit(&mut now);
        let doc = definition(now);
        compare(&pinned, &pinned.current(&Definition::new(doc.root())))
    }

    #[test]
    fn referenced_walks_nested_steps_and_model_tools() {
        let doc = definition(serde_json::json!({ "lwir": "1", "workflow": "w", "steps": [
            { "id": "a", "kind": "tool.call", "tool": "t.one" },
            { "id": "m", "kind": "map", "over": "x", "as": "i", "result": "x", "steps": [
                { "id": "b", "kind": "model.call", "model": "fast", "tools": ["t.two", "t.one"] } ] } ] }));
        let draft = Draft::new(doc.root());
        let (tools, slots) = referenced(&draft);
        assert_eq!(tools.into_iter().collect::<Vec<_>>(), ["t.one", "t.two"]);
        assert_eq!(slots.into_iter().collect::<Vec<_>>(), ["fast"]);
    }

    #[test]
    fn hashes_are_over_canonical_json() {
        let s = snapshot(&base());
        assert_eq!(
            s.tools[0].input.as_deref(),
            Some(lwir_spec::canon::sha256_of(br#"{"type":"object"}"#).as_str())
        );
        assert_eq!(
            s.tools[0].description.as_deref(),
            Some(lwir_spec::canon::sha256_of(br#""d""#).as_str())
        );
    }

    #[test]
    fn each_kind_of_change_is_named() {
        assert_eq!(changes(|_| {}), []);
        assert_eq!(
            changes(|d| d["tools"]["t.used"]["input"]["title"] = "x".into()),
            [Change::ToolInput {
                tool: "t.used".into()
            }]
        );
        assert_eq!(
            changes(|d| d["models"]["fast"]["quality"] = "standard".into()),
            [Change::Quality {
                slot: "fast".into(),
                from: Some("high".into()),
                to: Some("standard".into()),
                lowered: true
            }]
        );
        assert!(matches!(
            changes(|d| d["models"]["fast"]["quality"] = "frontier".into()).as_slice(),
            [Change::Quality { lowered: false, .. }]
        ));
        assert_eq!(
            changes(|d| d["models"]["fast"]["capabilities"] =
                serde_json::json!(["json_output", "vision"])),
            [Change::CapabilityLost {
                slot: "fast".into(),
                capability: "tool_use".into()
            }]
        );
        assert_eq!(
            changes(|d| d["models"]["fast"]["description"] = "new".into()),
            [Change::SlotOtherwise {
                slot: "fast".into()
            }]
        );
        assert_eq!(
            changes(|d| {
                d["tools"].as_object_mut().unwrap().remove("t.used");
                d["models"].as_object_mut().unwrap().remove("fast");
            }),
            [
                Change::ToolRemoved {
                    tool: "t.used".into()
                },
                Change::SlotRemoved {
                    slot: "fast".into()
                }
            ]
        );
    }

    #[test]
    fn unreferenced_tools_and_slots_are_not_compared() {
        assert_eq!(
            changes(|d| {
                d["tools"]["t.idle"]["description"] = "changed".into();
                d["models"]["idle"]["quality"] = "frontier".into();
            }),
            []
        );
    }

    /// A record written before interfaces were kept agrees with today's snapshot of the
    /// same tools and slots (registering it again is idempotent); two interfaces that
    /// differ do not, and compare as the change.
    #[test]
    fn an_interface_is_compared_only_when_both_have_one() {
        let mut def = serde_json::json!({
            "name": "w", "tools": {}, "models": {},
            "input": { "type": "object" }, "output": { "type": "string" }
        });
        let now = snapshot(&def);
        let old = Snapshot {
            interface: None,
            ..now.clone()
        };
        assert!(old.agrees_with(&now) && now.agrees_with(&old));
        assert!(compare(&old, &now).is_empty());
        def["output"] = serde_json::json!({ "type": "integer" });
        let changed = snapshot(&def);
        assert!(!now.agrees_with(&changed));
        assert_eq!(compare(&now, &changed), [Change::WorkflowOutput]);
    }
}
