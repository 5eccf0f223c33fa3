//! The PlannerManifest: what a planner session runs with, each part pinned by a hash, so
//! that a resumed session can tell whether anything changed underneath it.
//!
//! Every hash is `sha256:<hex>` over the RFC 8785 canonical JSON of its part; the parts are
//! defined in `crates/lwir-spec/README.md` (section "PlannerManifest"). The field names are a
//! contract (`harnessId`, `plannerModelSlotId`, …).

use std::fmt;

use lwir_spec::document::{Member, Value};
use lwir_spec::{Node, Span};
use serde::{Deserialize, Serialize};

use lwir_spec::canon::version_of;

/// The id of this harness: `lwirc/` and the lwirc version.
pub fn harness_id() -> String {
    format!("lwirc/{}", env!("CARGO_PKG_VERSION"))
}

/// What a planner session runs with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlannerManifest {
    /// The harness driving the planner (see [`harness_id`]).
    pub harness_id: String,
    /// `planner.model`: the model slot the planner runs on; `None` without one.
    pub planner_model_slot_id: Option<String>,
    /// Hash of `planner.system` (`null` when absent).
    pub system_prompt_hash: String,
    /// Hash of the list of active skills' frontmatter `{name, description}`.
    pub skills_hash: String,
    /// Hash of the whole definition.
    pub workflow_definition_hash: String,
    /// Hash of the definition's `tools` object (`null` when absent).
    pub global_tools_hash: String,
    /// `planner.memory_stores`, in definition order.
    pub memory_store_ids: Vec<String>,
}

impl PlannerManifest {
    /// The manifest of the definition `root` for the harness `harness_id`.
    pub fn of(root: &Node, harness_id: impl Into<String>) -> Self {
        let planner = root.get("planner");
        let planner_field = |key: &str| planner.and_then(|p| p.get(key));
        let strings = |node: Option<&Node>| -> Vec<String> {
            node.and_then(Node::as_array)
                .unwrap_or_default()
                .iter()
                .filter_map(Node::as_str)
                .map(Into::into)
                .collect()
        };
        Self {
            harness_id: harness_id.into(),
            planner_model_slot_id: planner_field("model")
                .and_then(Node::as_str)
                .map(Into::into),
            system_prompt_hash: hash_or_null(planner_field("system")),
            skills_hash: version_of(&skills_frontmatter(planner_field("skills"))),
            workflow_definition_hash: version_of(root),
            global_tools_hash: hash_or_null(root.get("tools")),
            memory_store_ids: strings(planner_field("memory_stores")),
        }
    }

    /// `Ok` when `current` is the same as `self` (the manifest recorded when a session
    /// started); otherwise the error names every field that differs.
    pub fn check(&self, current: &PlannerManifest) -> Result<(), CapabilityDriftError> {
        let mut differences = Vec::new();
        let mut field = |name: &'static str, recorded: String, now: String| {
            if recorded != now {
                differences.push(FieldDifference {
                    field: name,
                    recorded,
                    current: now,
                });
            }
        };
        let slot = |s: &Option<String>| s.clone().unwrap_or_else(|| "null".into());
        let ids = |v: &[String]| format!("[{}]", v.join(", "));
        field(
            "harnessId",
            self.harness_id.clone(),
            current.harness_id.clone(),
        );
        field(
            "plannerModelSlotId",
            slot(&self.planner_model_slot_id),
            slot(&current.planner_model_slot_id),
        );
        field(
            "systemPromptHash",
            self.system_prompt_hash.clone(),
            current.system_prompt_hash.clone(),
        );
        field(
            "skillsHash",
            self.skills_hash.clone(),
            current.skills_hash.clone(),
        );
        field(
            "workflowDefinitionHash",
            self.workflow_definition_hash.clone(),
            current.workflow_definition_hash.clone(),
        );
        field(
            "globalToolsHash",
            self.global_tools_hash.clone(),
            current.global_tools_hash.clone(),
        );
        field(
            "memoryStoreIds",
            ids(&self.memory_store_ids),
            ids(&current.memory_store_ids),
        );
        if differences.is_empty() {
            Ok(())
        } else {
            Err(CapabilityDriftError { differences })
        }
    }
}

/// Compares the manifest recorded when a session started with the one computed now:
/// [`PlannerManifest::check`] as a function.
pub fn compare(
    recorded: &PlannerManifest,
    current: &PlannerManifest,
) -> Result<(), CapabilityDriftError> {
    recorded.check(current)
}

/// What a planner session runs with changed since it started: a resumed session whose
/// definition's `tools` were edited in between gets one naming `globalToolsHash` (and
/// `workflowDefinitionHash`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("capability drift: {} changed since the session started", self.fields().join(", "))]
pub struct CapabilityDriftError {
    /// Each differing field, in manifest order.
    pub differences: Vec<FieldDifference>,
}

impl CapabilityDriftError {
    /// The names of the differing fields (`globalToolsHash`, …), in manifest order.
    pub fn fields(&self) -> Vec<&'static str> {
        self.differences.iter().map(|d| d.field).collect()
    }
}

/// One field of two manifests that differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDifference {
    /// The manifest field name, as in the JSON (`skillsHash`).
    pub field: &'static str,
    /// Its value when the session started.
    pub recorded: String,
    /// Its value now.
    pub current: String,
}

impl fmt::Display for FieldDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} → {}", self.field, self.recorded, self.current)
    }
}

/// `sha256:` of the canonical form of `node`, or of `null` when it is absent.
fn hash_or_null(node: Option<&Node>) -> String {
    match node {
        Some(node) => version_of(node),
        None => version_of(&Node {
            span: Span::default(),
            value: Value::Null,
        }),
    }
}

/// The skills' frontmatter: for each object of `skills`, in order, an object with only its
/// `name` and `description` members (those it has). Anything that is not an object is
/// skipped; no `skills` gives the empty list.
fn skills_frontmatter(skills: Option<&Node>) -> Node {
    let items = skills
        .and_then(Node::as_array)
        .unwrap_or_default()
        .iter()
        .filter_map(Node::as_object)
        .map(|members| Node {
            span: Span::default(),
            value: Value::Object(
                members
                    .iter()
                    .filter(|m| m.key == "name" || m.key == "description")
                    .cloned()
                    .collect::<Box<[Member]>>(),
            ),
        })
        .collect();
    Node {
        span: Span::default(),
        value: Value::Array(items),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lwir_spec::canon::sha256_of;
    use lwir_spec::document::read;

    fn manifest(json: &str) -> PlannerManifest {
        let doc = read(json.as_bytes().to_vec()).document.unwrap();
        PlannerManifest::of(doc.root(), "h/1")
    }

    #[test]
    fn parts_are_hashed_as_defined() {
        let m = manifest(
            r#"{ "name": "w", "tools": { "t": { "description": "d" } },
                 "planner": { "model": "deep", "system": "Be brief.",
                              "skills": [ { "description": "D", "name": "s", "body": "ignored" } ],
                              "memory_stores": ["notes", "facts"] } }"#,
        );
        assert_eq!(m.harness_id, "h/1");
        assert_eq!(m.planner_model_slot_id.as_deref(), Some("deep"));
        assert_eq!(m.system_prompt_hash, sha256_of(br#""Be brief.""#));
        assert_eq!(
            m.skills_hash,
            sha256_of(br#"[{"description":"D","name":"s"}]"#)
        );
        assert_eq!(
            m.global_tools_hash,
            sha256_of(br#"{"t":{"description":"d"}}"#)
        );
        assert_eq!(m.memory_store_ids, ["notes", "facts"]);
    }

    #[test]
    fn absent_parts_have_defined_hashes() {
        let m = manifest(r#"{ "name": "w" }"#);
        assert_eq!(m.planner_model_slot_id, None);
        assert_eq!(m.system_prompt_hash, sha256_of(b"null"));
        assert_eq!(m.skills_hash, sha256_of(b"[]"));
        assert_eq!(m.global_tools_hash, sha256_of(b"null"));
        assert_eq!(m.workflow_definition_hash, sha256_of(br#"{"name":"w"}"#));
        assert!(m.memory_store_ids.is_empty());
    }

    #[test]
    fn drift_error_names_each_differing_field() {
        let a = manifest(r#"{ "name": "w", "tools": {}, "planner": { "model": "deep" } }"#);
        assert_eq!(a.check(&a.clone()), Ok(()));
        let b = manifest(r#"{ "name": "w", "tools": {"t": {}}, "planner": { "model": "fast" } }"#);
        let error = compare(&a, &b).unwrap_err();
        assert_eq!(
            error.fields(),
            [
                "plannerModelSlotId",
                "workflowDefinitionHash",
                "globalToolsHash"
            ]
        );
        assert_eq!(
            error.to_string(),
            "capability drift: plannerModelSlotId, workflowDefinitionHash, globalToolsHash \
             changed since the session started"
        );
        assert_eq!(
            error.differences[0].to_string(),
            "plannerModelSlotId: deep → fast"
        );
    }
}
