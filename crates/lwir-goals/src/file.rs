//! The goal file: read by the strict I-JSON reader, checked against its meta-schema
//! (`crates/lwir-spec/schema/goal-1.schema.json`), then typed.
//!
//! Every field has its place in the typed view; bounds the file leaves out get the
//! defaults documented in `crates/lwir-spec/README.md` (section "Goals"), and the frozen goal keeps
//! the file exactly as written, so what the defaults were is part of the lwirc that created
//! it — [`Bounds`](crate::check::Bounds) is what every later command reads.

use std::collections::BTreeMap;

use lwir_spec::{Finding, SpannedDocument, document};
use serde::{Deserialize, Serialize};

/// A goal file, typed. Only made from a document without shape findings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoalFile {
    /// The goal's name (`goal`).
    pub goal: String,
    /// What the goal is for, for people and the planner.
    pub objective: String,
    /// The goal input, read by `goal.input` expressions (`null` when absent).
    #[serde(default)]
    pub input: serde_json::Value,
    /// The frozen template catalog, by name.
    pub templates: BTreeMap<String, TemplateRef>,
    /// Generation 0's work, in order.
    pub work: Vec<ItemSpec>,
    /// The key of generation 0's root.
    pub root: String,
    /// Who may propose new plans and within which bounds; absent: the goal never replans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replanning: Option<Replanning>,
    /// The goal-wide limits.
    #[serde(default)]
    pub limits: Limits,
    /// `$schema` and `x-` extensions, kept but without meaning.
    #[serde(flatten)]
    pub extensions: BTreeMap<String, serde_json::Value>,
}

/// A catalog entry: a registered version, pinned by its digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateRef {
    /// The WorkflowVersion, `sha256:<64 hex>`.
    pub version: String,
    /// Whether the template may be a plan root (default `false`).
    #[serde(default)]
    pub root: bool,
    /// How many attempts one work item of this template may take (default 1).
    #[serde(default = "one")]
    pub max_attempts: u32,
}

/// One work item as a goal file or a proposal writes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemSpec {
    /// Its key, unique in the goal.
    pub key: String,
    /// Its template's name in the catalog.
    pub template: String,
    /// Its input: literals, `${ … }` expressions and templates.
    pub input: serde_json::Value,
    /// Keys of the items it runs after (besides those its input reads).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
}

/// `replanning`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replanning {
    /// The planner profile: `model`, `system`, `skills` (its manifest is frozen with the goal).
    pub planner: serde_json::Value,
    /// Apply a valid (and reviewed, when a reviewer runs) proposal without a person.
    #[serde(default)]
    pub auto_apply: bool,
    /// Replans allowed over the goal's life (default 3).
    #[serde(default = "three")]
    pub max_replans: u32,
    /// Items one proposal may add (default 4).
    #[serde(default = "four")]
    pub max_items_per_plan: u32,
    /// Items all proposals together may add (default 8).
    #[serde(default = "eight")]
    pub max_planned_items: u32,
    /// Revision rounds a reviewer may ask for in one replan (default 2).
    #[serde(default = "two")]
    pub max_review_rounds: u32,
    /// `off`, `on-failure` or `every-step`, or a preset: `conservative` (on-failure),
    /// `adaptive` (every-step); default `off`. See [`Replanning::adaptation_mode`].
    #[serde(default = "off")]
    pub adaptation: String,
    /// Adaptations allowed over the goal's life (default 0).
    #[serde(default)]
    pub max_adaptations: u32,
}

/// When `goal run` asks the planner to revise the remaining plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adaptation {
    /// Never.
    Off,
    /// After a failed attempt.
    OnFailure,
    /// After every attempt that ends.
    EveryStep,
}

impl Replanning {
    /// `adaptation` with its presets resolved (`conservative` is `on-failure`, `adaptive`
    /// is `every-step`). The goal file is frozen as written, so the resolution is too.
    pub fn adaptation_mode(&self) -> Adaptation {
        match self.adaptation.as_str() {
            "on-failure" | "conservative" => Adaptation::OnFailure,
            "every-step" | "adaptive" => Adaptation::EveryStep,
            _ => Adaptation::Off,
        }
    }
}

/// `limits`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Work attempts over every generation (default 10).
    #[serde(default = "ten")]
    pub max_total_attempts: u32,
    /// Work items running at once (default 4).
    #[serde(default = "four")]
    pub max_parallel: u32,
    /// Seconds from `goal create` after which nothing new starts (default 7 days).
    #[serde(default = "week")]
    pub max_wall_time_s: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_total_attempts: 10,
            max_parallel: 4,
            max_wall_time_s: week(),
        }
    }
}

fn one() -> u32 {
    1
}
fn two() -> u32 {
    2
}
fn three() -> u32 {
    3
}
fn four() -> u32 {
    4
}
fn eight() -> u32 {
    8
}
fn ten() -> u32 {
    10
}
fn week() -> u64 {
    7 * 24 * 3600
}
fn off() -> String {
    "off".to_owned()
}

/// A goal file as read: the document (absent when the bytes are not JSON), the typed file
/// (absent when there are shape findings), and the reader's and the meta-schema's findings.
#[derive(Debug)]
pub struct Read {
    /// The spanned document, for findings' spans.
    pub document: Option<SpannedDocument>,
    /// The typed goal file.
    pub file: Option<GoalFile>,
    /// Reader and shape findings, in reading order.
    pub findings: Vec<Finding>,
}

/// Reads `bytes` as a goal file: the strict reader, then the meta-schema, then the typed view.
pub fn read(bytes: Vec<u8>) -> Read {
    let read = document::read(bytes);
    let mut findings = read.findings;
    let Some(doc) = read.document else {
        return Read {
            document: None,
            file: None,
            findings,
        };
    };
    if findings.iter().any(Finding::is_error) {
        return Read {
            document: Some(doc),
            file: None,
            findings,
        };
    }
    findings.extend(lwir_validators::shape::check_goal_file(&doc));
    let file = if findings.iter().any(Finding::is_error) {
        None
    } else {
        // The meta-schema admits exactly what the typed view reads; should they ever
        // disagree, the file is refused rather than half-read.
        match serde_json::from_value(doc.root().to_json()) {
            Ok(file) => Some(file),
            Err(e) => {
                findings.push(Finding::new(
                    lwir_spec::Code::InvalidValue,
                    "",
                    doc.root().span,
                    format!("the goal file cannot be read: {e}"),
                ));
                None
            }
        }
    };
    Read {
        document: Some(doc),
        file,
        findings,
    }
}

/// The typed view of a frozen goal file: `bytes` that hash to the digest its goal's log
/// recorded, so the very bytes [`read`] checked when the goal was created (the canonical
/// form of a file without findings). They are not checked against the meta-schema again —
/// the costliest part of a read, for a file of 1 000 items — only typed; `None` when they do
/// not type (a file frozen by an lwirc whose goal files differ).
pub fn read_frozen(bytes: &[u8]) -> Option<GoalFile> {
    serde_json::from_slice(bytes).ok()
}
