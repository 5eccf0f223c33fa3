//! Findings: what every validator reports. They are data; rendering happens at the edge.

use serde::{Deserialize, Serialize};

use crate::codes::Code;
use crate::span::Span;

/// How serious a finding is. Any `Error` keeps a draft from being registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// The draft cannot be trusted as it is.
    Error,
    /// Worth a look; does not block registration.
    Warning,
}

impl Severity {
    /// The wire name: `error` or `warning`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// Which input file a finding points into.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// The LWIR draft being validated.
    #[default]
    Draft,
    /// The WorkflowDefinition it is validated against.
    Definition,
    /// No file: a planner call or the repair loop itself (codes LW801–LW808), with its
    /// [`PlannerContext`].
    Planner,
}

/// What a finding about the planner carries instead of a place in a file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlannerContext {
    /// The planner call it is about (1 for the first), if any.
    pub call: Option<u32>,
    /// The end of what the planner wrote on standard error, when it wrote anything.
    pub stderr_tail: String,
}

/// Whether a fix may be applied without a person or planner looking at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Applicability {
    /// Certain to express what the draft meant; the repair loop applies it unattended.
    MachineApplicable,
    /// Probably right, but it may change meaning; shown, never applied unattended.
    MaybeIncorrect,
}

impl Applicability {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Applicability::MachineApplicable => "machine-applicable",
            Applicability::MaybeIncorrect => "maybe-incorrect",
        }
    }
}

/// One RFC 6902 JSON Patch operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum PatchOp {
    /// Add `value` at `path`.
    Add {
        /// Target pointer.
        path: String,
        /// Value to add.
        value: serde_json::Value,
    },
    /// Remove the value at `path`.
    Remove {
        /// Target pointer.
        path: String,
    },
    /// Replace the value at `path` with `value`.
    Replace {
        /// Target pointer.
        path: String,
        /// New value.
        value: serde_json::Value,
    },
    /// Move the value at `from` to `path`.
    Move {
        /// Source pointer.
        from: String,
        /// Target pointer.
        path: String,
    },
}

/// A proposed edit that resolves a finding.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    /// Whether the fix may be applied unattended.
    pub applicability: Applicability,
    /// The edit, as an RFC 6902 JSON Patch against the file the finding points into: the
    /// draft, or the definition for a finding of [`Origin::Definition`]. The repair loop
    /// applies only fixes to the draft.
    pub patch: Vec<PatchOp>,
}

impl Fix {
    /// A fix that replaces the value at `path` with `value`.
    pub fn replace(
        applicability: Applicability,
        path: impl Into<String>,
        value: impl Into<serde_json::Value>,
    ) -> Self {
        Self {
            applicability,
            patch: vec![PatchOp::Replace {
                path: path.into(),
                value: value.into(),
            }],
        }
    }
}

/// Another place that explains a finding (the first of two duplicate keys, an edge of a cycle).
#[derive(Clone, Debug, PartialEq)]
pub struct Related {
    /// File the place is in.
    pub origin: Origin,
    /// JSON Pointer to it.
    pub pointer: String,
    /// Its bytes.
    pub span: Span,
    /// What it has to do with the finding.
    pub message: String,
}

/// One problem found in a draft (or in the definition it is checked against).
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// Stable code; see [`Code`].
    pub code: Code,
    /// Error or warning; the code's default unless a validator says otherwise.
    pub severity: Severity,
    /// One line saying what is wrong, naming the offending value.
    pub message: String,
    /// File the finding points into.
    pub origin: Origin,
    /// RFC 6901 pointer to the offending value (or key).
    pub pointer: String,
    /// The offending bytes of the file.
    pub span: Span,
    /// What to do about it, when there is something to say.
    pub help: Option<String>,
    /// Other places that explain the finding.
    pub related: Vec<Related>,
    /// An edit that resolves it, when one is known.
    pub fix: Option<Fix>,
    /// For a finding about the planner ([`Origin::Planner`]): the call and what it wrote.
    pub planner: Option<PlannerContext>,
}

impl Finding {
    /// A finding of `code` at `pointer`/`span` in the draft, with the code's default severity.
    pub fn new(
        code: Code,
        pointer: impl Into<String>,
        span: Span,
        message: impl Into<String>,
    ) -> Self {
        Self {
            code,
            severity: code.severity(),
            message: message.into(),
            origin: Origin::Draft,
            pointer: pointer.into(),
            span,
            help: None,
            related: Vec::new(),
            fix: None,
            planner: None,
        }
    }

    /// A finding about the planner (a failed call, an `attention`, a repair cycle): no
    /// place in a file, the code's severity and its help from the code table
    /// ([`Code::help`]).
    pub fn planner(code: Code, message: impl Into<String>, call: Option<u32>) -> Self {
        Self {
            origin: Origin::Planner,
            help: code.help().map(str::to_owned),
            planner: Some(PlannerContext {
                call,
                stderr_tail: String::new(),
            }),
            ..Self::new(code, "", Span::default(), message)
        }
    }

    /// Adds help text.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds a fix.
    pub fn with_fix(mut self, fix: Fix) -> Self {
        self.fix = Some(fix);
        self
    }

    /// Adds a related place in the same file as the finding.
    pub fn with_related(
        mut self,
        pointer: impl Into<String>,
        span: Span,
        message: impl Into<String>,
    ) -> Self {
        self.related.push(Related {
            origin: self.origin,
            pointer: pointer.into(),
            span,
            message: message.into(),
        });
        self
    }

    /// Marks the finding (and its related places so far) as pointing into the definition.
    pub fn in_definition(mut self) -> Self {
        self.origin = Origin::Definition;
        for r in &mut self.related {
            r.origin = Origin::Definition;
        }
        self
    }

    /// Whether it is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Sorts findings into reading order: draft before definition, then by position, then code.
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        (
            a.origin,
            a.span.start(),
            a.span.end(),
            a.code,
            &a.pointer,
            &a.message,
        )
            .cmp(&(
                b.origin,
                b.span.start(),
                b.span.end(),
                b.code,
                &b.pointer,
                &b.message,
            ))
    });
}

/// Error and warning counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Findings of severity error.
    pub errors: usize,
    /// Findings of severity warning.
    pub warnings: usize,
}

impl Summary {
    /// Counts `findings`.
    pub fn of(findings: &[Finding]) -> Self {
        let errors = findings.iter().filter(|f| f.is_error()).count();
        Self {
            errors,
            warnings: findings.len() - errors,
        }
    }
}
