//! Drift: how today's definition differs from what a registered version was compiled
//! against, as findings that point into the definition.
//!
//! Only the tools and model slots in the version's snapshot are compared, so a change to a
//! tool or slot the version does not use is not drift. Each change is one finding (codes
//! LW701–LW712) at the part of today's definition that changed — `/tools/<id>/input` for a
//! changed input schema — or, for a removed tool or slot, at `/tools` or `/models`.

use lwir_spec::finding::sort_findings;
use lwir_spec::ir::Definition;
use lwir_spec::pointer;
use lwir_spec::{Code, Finding, SpannedDocument};

use crate::dependencies::{Change, Snapshot, compare};

/// The drift of the version `version`, whose pinned snapshot is `pinned`, against today's
/// `definition`: one finding per change, in reading order. Empty when nothing it depends
/// on changed.
pub fn findings(pinned: &Snapshot, version: &str, definition: &SpannedDocument) -> Vec<Finding> {
    let current = pinned.current(&Definition::new(definition.root()));
    let short = short_version(version);
    let mut found: Vec<Finding> = compare(pinned, &current)
        .into_iter()
        .map(|change| {
            let (code, path) = code_and_path(&change);
            let (pointer, span) = locate(definition, &path);
            let help = match code {
                Code::ToolRemoved | Code::ModelSlotRemoved => {
                    "restore it, or compile and register a draft that does without it"
                }
                Code::ModelSlotChanged => {
                    "nothing the version relies on is weaker; `lwirc register DRAFT -d \
                     WORKFLOW --rebase` pins today's slot (a new registration of the same \
                     version; the earlier one is kept)"
                }
                _ => {
                    "a registered version is immutable: validate the draft against today's \
                     definition; if it is clean, `lwirc register DRAFT -d WORKFLOW --rebase` \
                     pins today's snapshot as a new registration of the same version, else \
                     compile a new draft"
                }
            };
            Finding::new(
                code,
                pointer,
                span,
                format!("{change} since {short} was registered"),
            )
            .with_help(help)
            .in_definition()
        })
        .collect();
    sort_findings(&mut found);
    found
}

/// The drift code of a change (LW701–LW712): what `lwirc drift` reports it as, and what a
/// run reports when the live surface differs from the version's snapshot.
pub fn code_of(change: &Change) -> Code {
    code_and_path(change).0
}

/// The code of a change and the path (pointer tokens) of what changed in the definition.
fn code_and_path(change: &Change) -> (Code, Vec<&str>) {
    match change {
        Change::ToolDescription { tool } => (
            Code::ToolDescriptionChanged,
            vec!["tools", tool, "description"],
        ),
        Change::ToolInput { tool } => (Code::ToolInputChanged, vec!["tools", tool, "input"]),
        Change::WorkflowInput => (Code::WorkflowInputChanged, vec!["input"]),
        Change::WorkflowOutput => (Code::WorkflowOutputChanged, vec!["output"]),
        Change::ToolOutput { tool } => (Code::ToolOutputChanged, vec!["tools", tool, "output"]),
        Change::ToolRemoved { .. } => (Code::ToolRemoved, vec!["tools"]),
        Change::SlotRemoved { .. } => (Code::ModelSlotRemoved, vec!["models"]),
        Change::Model { slot, .. } => (Code::ModelChanged, vec!["models", slot, "model"]),
        Change::Quality { slot, .. } => {
            (Code::ModelQualityChanged, vec!["models", slot, "quality"])
        }
        Change::CapabilityLost { slot, .. } => (
            Code::ModelCapabilityLost,
            vec!["models", slot, "capabilities"],
        ),
        Change::ContextReduced { slot, .. } => (
            Code::ModelContextReduced,
            vec!["models", slot, "context_tokens"],
        ),
        Change::SlotOtherwise { slot } => (Code::ModelSlotChanged, vec!["models", slot]),
    }
}

/// The pointer and span of the deepest part of `path` that `document` has (a removed
/// `description` is reported at its tool).
fn locate(document: &SpannedDocument, path: &[&str]) -> (String, lwir_spec::Span) {
    for len in (0..=path.len()).rev() {
        let at = path[..len]
            .iter()
            .fold(String::new(), |p, token| pointer::join(&p, token));
        if let Some(span) = document.span_of(&at) {
            return (at, span);
        }
    }
    (String::new(), document.root().span)
}

/// `sha256:` and the first 12 hex digits: enough to name a version in a message.
fn short_version(version: &str) -> &str {
    let end = ("sha256:".len() + 12).min(version.len());
    version.get(..end).unwrap_or(version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lwir_spec::document::read;

    #[test]
    fn findings_point_at_what_changed_or_its_nearest_parent() {
        let before = read(
            br#"{"name":"w","models":{},"tools":{"t":{"description":"a","input":{},"output":{}},"u":{"description":"b","input":{},"output":{}}}}"#.to_vec(),
        )
        .document
        .unwrap();
        let pinned = Snapshot::of_ids(&Definition::new(before.root()), ["t", "u"], []);
        let after = read(
            br#"{"name":"w","models":{},"tools":{"t":{"input":{"type":"object"},"output":{}}}}"#
                .to_vec(),
        )
        .document
        .unwrap();
        let found = findings(&pinned, "sha256:0123456789abcdef", &after);
        let summary: Vec<(Code, &str)> =
            found.iter().map(|f| (f.code, f.pointer.as_str())).collect();
        assert_eq!(
            summary,
            [
                (Code::ToolRemoved, "/tools"),
                (Code::ToolDescriptionChanged, "/tools/t"),
                (Code::ToolInputChanged, "/tools/t/input"),
            ]
        );
        let source = after.source();
        let input = &found[2];
        assert_eq!(&source[input.span.range()], br#"{"type":"object"}"#);
        assert_eq!(input.origin, lwir_spec::Origin::Definition);
        assert!(
            found[0].message.contains("sha256:0123456789ab "),
            "{}",
            found[0].message
        );
    }
}
