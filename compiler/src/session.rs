//! What `lwirc repair` and `lwirc compile` add to the repair loop of `lwir-repair`: the
//! validation pipeline as its checker, the bounds from the definition, and the session's
//! first event.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use lwir_repair::fixes::{Check, Checked};
use lwir_repair::session::Bounds;
use lwir_spec::{Finding, Origin};
use serde_json::Value;

use crate::canon::{sha256_of, version_of};
use crate::manifest::PlannerManifest;
use crate::pipeline::{self, Definition, Source, Validation};

/// The repair loop's checker: the whole validation pipeline against one definition, read
/// and checked once.
#[derive(Clone, Debug)]
pub struct PipelineCheck {
    definition: Arc<Definition>,
    draft_name: String,
}

impl PipelineCheck {
    /// Checks drafts (reported as `draft_name`) against `definition`.
    pub fn new(definition: Source, draft_name: impl Into<String>) -> Self {
        Self::against(Arc::new(Definition::read(definition)), draft_name)
    }

    /// Checks drafts (reported as `draft_name`) against a definition already read.
    pub fn against(definition: Arc<Definition>, draft_name: impl Into<String>) -> Self {
        Self {
            definition,
            draft_name: draft_name.into(),
        }
    }

    /// The full validation of `bytes`, for the renderers.
    pub fn validation(&self, bytes: &[u8]) -> Validation {
        pipeline::validate_against(self.source(bytes), &self.definition)
    }

    /// The validation of `bytes` with the compiled expression plan, for registering.
    pub fn compiled(&self, bytes: &[u8]) -> Validation {
        pipeline::compile_against(self.source(bytes), &self.definition)
    }

    fn source(&self, bytes: &[u8]) -> Source {
        Source {
            name: self.draft_name.clone(),
            bytes: bytes.to_vec(),
        }
    }
}

impl Check for PipelineCheck {
    fn check(&mut self, bytes: &[u8]) -> Checked {
        checked(self.validation(bytes))
    }
}

/// What the repair loop needs of a validation.
pub fn checked(validation: Validation) -> Checked {
    let document = validation.document(Origin::Draft);
    let state = match document {
        Some(d) => version_of(d.root()),
        None => format!("bytes:{}", sha256_of(&validation.draft.bytes)),
    };
    Checked {
        findings_json: crate::render::json::findings(&validation),
        document: document.map(|d| d.root().to_json()),
        state,
        version: validation.version,
        findings: validation.findings,
    }
}

/// The errors of the definition itself: a session cannot succeed against a definition with
/// errors, so they are reported before any planner call.
pub fn definition_errors(definition: &Source) -> Option<Validation> {
    let mut validation = pipeline::validate_definition(definition.clone());
    validation.findings.retain(Finding::is_error);
    (!validation.findings.is_empty()).then_some(validation)
}

/// The bounds a definition sets in its `planner` block (`max_repair_attempts`,
/// `max_planner_calls`), with the defaults where it sets none.
pub fn bounds_of(definition: &Value) -> Bounds {
    let mut bounds = Bounds::default();
    let planner = definition.get("planner");
    let field = |key: &str| {
        planner
            .and_then(|p| p.get(key))
            .and_then(Value::as_u64)
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    };
    if let Some(n) = field("max_repair_attempts") {
        bounds.max_repair_attempts = n;
    }
    if let Some(n) = field("max_planner_calls") {
        bounds.max_planner_calls = n;
    }
    bounds
}

/// The data of `harness.session.started`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Started {
    /// `compile`.
    pub command: String,
    /// The definition's `name`.
    pub workflow: String,
    /// The definition file as given.
    pub definition: String,
    /// The planner command, shell-quoted.
    pub planner: String,
    /// The PlannerManifest.
    pub manifest: PlannerManifest,
    /// The workflow input, `null` without one.
    pub input: Value,
    /// `max_repair_attempts`.
    pub max_repair_attempts: u32,
    /// `max_planner_calls`.
    pub max_planner_calls: u32,
    /// Per-call timeout in milliseconds.
    pub planner_timeout_ms: u64,
    /// Answer size limit in bytes.
    pub planner_max_output: usize,
}

/// A new session directory under `base`: the time and the process id, so that sessions sort
/// by start and two started in the same second do not collide.
pub fn new_session_dir(base: &Path) -> PathBuf {
    let stamp = lwir_spec::time::rfc3339(SystemTime::now())
        .replace(['-', ':'], "")
        .replace('Z', "");
    base.join(format!("{stamp}-{}", std::process::id()))
}
