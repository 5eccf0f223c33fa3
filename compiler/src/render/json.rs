//! The JSON findings report: the wire contract of `lwirc validate --format json`.
//!
//! ```json
//! { "file": "draft.json", "version": "sha256:…",
//!   "findings": [ { "code": "LW301", "severity": "error", "message": "…", "pointer": "/steps/0/tool",
//!                   "span": { "start": 118, "end": 138, "line": 4, "column": 48 },
//!                   "help": "…", "related": [ … ],
//!                   "fix": { "applicability": "machine-applicable", "patch": [ … ] } } ],
//!   "summary": { "errors": 1, "warnings": 0 } }
//! ```
//! `version` is present only when there are no errors; `help` and `fix` only when known;
//! `related` is always a list. A finding inside the definition carries `"file"` naming it.

use lwir_spec::{Finding, Origin, PatchOp, Span};
use serde::Serialize;

use super::Locators;
use crate::pipeline::Validation;

#[derive(Serialize)]
struct Report<'a> {
    file: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<&'a str>,
    findings: Vec<FindingView<'a>>,
    summary: SummaryView,
}

#[derive(Serialize)]
struct FindingView<'a> {
    code: &'static str,
    severity: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    pointer: &'a str,
    span: SpanView,
    #[serde(skip_serializing_if = "Option::is_none")]
    help: Option<&'a str>,
    related: Vec<RelatedView<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<FixView<'a>>,
}

#[derive(Serialize)]
struct SpanView {
    start: usize,
    end: usize,
    line: usize,
    column: usize,
}

#[derive(Serialize)]
struct RelatedView<'a> {
    pointer: &'a str,
    span: SpanView,
    message: &'a str,
}

#[derive(Serialize)]
struct FixView<'a> {
    applicability: &'static str,
    patch: &'a [PatchOp],
}

#[derive(Serialize)]
struct SummaryView {
    errors: usize,
    warnings: usize,
}

/// The findings of `validation` as in the JSON report (the `findings` array), for a program
/// that embeds them (the planner's repair request).
pub fn findings(validation: &Validation) -> serde_json::Value {
    // Serialising plain structs of strings and numbers cannot fail.
    serde_json::to_value(finding_views(validation)).unwrap_or_default()
}

fn finding_views(validation: &Validation) -> Vec<FindingView<'_>> {
    let mut locators = Locators::new(validation);
    let mut span = |origin: Origin, span: Span| {
        let at = locators.locate(origin, span.start());
        SpanView {
            start: span.start(),
            end: span.end(),
            line: at.line,
            column: at.column,
        }
    };
    validation
        .findings
        .iter()
        .map(|f: &Finding| FindingView {
            code: f.code.as_str(),
            severity: f.severity.as_str(),
            message: &f.message,
            file: (f.origin == Origin::Definition)
                .then(|| validation.source(f.origin).name.as_str()),
            pointer: &f.pointer,
            span: span(f.origin, f.span),
            help: f.help.as_deref(),
            related: f
                .related
                .iter()
                .map(|r| RelatedView {
                    pointer: &r.pointer,
                    span: span(r.origin, r.span),
                    message: &r.message,
                })
                .collect(),
            fix: f.fix.as_ref().map(|fix| FixView {
                applicability: fix.applicability.as_str(),
                patch: &fix.patch,
            }),
        })
        .collect()
}

/// The JSON report of `validation`, pretty-printed, without a trailing newline.
pub fn render(validation: &Validation) -> String {
    let findings = finding_views(validation);
    let summary = validation.summary();
    let report = Report {
        file: &validation.draft.name,
        version: validation.version.as_deref(),
        findings,
        summary: SummaryView {
            errors: summary.errors,
            warnings: summary.warnings,
        },
    };
    // Serialising plain structs of strings and numbers cannot fail.
    serde_json::to_string_pretty(&report).unwrap_or_default()
}
