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

use super::{Locators, Report};

#[derive(Serialize)]
struct ReportView<'a> {
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

/// The findings as in the JSON report (the `findings` array), for a program that embeds
/// them (the planner's repair request).
pub fn findings<'a>(report: impl Into<Report<'a>>) -> serde_json::Value {
    // Serialising plain structs of strings and numbers cannot fail.
    serde_json::to_value(finding_views(&report.into())).unwrap_or_default()
}

fn finding_views<'a>(report: &Report<'a>) -> Vec<FindingView<'a>> {
    let mut locators = Locators::new(report);
    let mut span = |origin: Origin, span: Span| {
        let at = locators.locate(origin, span.start());
        SpanView {
            start: span.start(),
            end: span.end(),
            line: at.line,
            column: at.column,
        }
    };
    report
        .findings
        .iter()
        .map(|f: &'a Finding| FindingView {
            code: f.code.as_str(),
            severity: f.severity.as_str(),
            message: &f.message,
            file: (f.origin == Origin::Definition).then(|| report.file(f.origin).name),
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

/// The JSON report, of a [`Validation`](lwir_validators::pipeline::Validation) or any [`Report`],
/// as a value: what [`render`] prints, for a program that keeps it (a registration record).
pub fn value<'a>(report: impl Into<Report<'a>>) -> serde_json::Value {
    // Serialising plain structs of strings and numbers cannot fail.
    serde_json::to_value(view(&report.into())).unwrap_or_default()
}

/// The JSON report, of a [`Validation`](lwir_validators::pipeline::Validation) or any [`Report`],
/// pretty-printed, without a trailing newline.
pub fn render<'a>(report: impl Into<Report<'a>>) -> String {
    // Serialising plain structs of strings and numbers cannot fail.
    serde_json::to_string_pretty(&view(&report.into())).unwrap_or_default()
}

fn view<'a>(report: &Report<'a>) -> ReportView<'a> {
    let summary = report.summary();
    ReportView {
        file: report.name(),
        version: report.version,
        findings: finding_views(report),
        summary: SummaryView {
            errors: summary.errors,
            warnings: summary.warnings,
        },
    }
}
