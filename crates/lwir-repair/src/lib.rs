//! Repair: from a draft with findings to a draft without errors, within bounds.
//!
//! - [`apply`]: one fix's RFC 6902 patch, atomically, to a JSON value; [`edit`]: the same
//!   to the text a draft was written in, as edits of its bytes.
//! - [`fixes`]: machine-applicable fixes in passes, with rollback and cycle detection.
//! - [`protocol`], [`process`] and [`harness`]: the planner, an external command speaking
//!   `lwir-planner/1` over stdin/stdout, with a timeout and a size limit.
//! - [`repair_loop`]: the bounded loop (validate → fixes → planner → …) and its report; it
//!   registers and logs nothing of its own (`lwir_session` is the compile session around it).
//! - [`events`] and [`journal`]: the session's append-only event log, and replaying it to
//!   resume a crashed session.
//! - [`manifest`]: the PlannerManifest a planner session runs with, and its drift check.
//! - [`files`]: atomic writes and directory syncs, for everything lwirc writes.

pub mod edit;
pub mod events;
pub mod files;
pub mod fixes;
pub mod harness;
pub mod journal;
pub mod manifest;
pub mod process;
pub mod protocol;
pub mod repair_loop;

use lwir_spec::PatchOp;

/// A fix's patch could not be applied to the document it was computed for.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The patch is not a valid RFC 6902 document (cannot happen for patches built from
    /// [`PatchOp`]s, kept for robustness).
    #[error("malformed patch: {0}")]
    Malformed(#[from] serde_json::Error),
    /// An operation failed, e.g. `replace` at a pointer that no longer exists because an
    /// earlier fix moved it.
    #[error("patch does not apply: {0}")]
    Rejected(#[from] json_patch::PatchError),
    /// The text to patch is not a JSON document.
    #[error("the draft is not a JSON document")]
    NotJson,
}

/// Applies `patch` (RFC 6902) to `document` atomically: on error, `document` is unchanged.
pub fn apply(document: &mut serde_json::Value, patch: &[PatchOp]) -> Result<(), ApplyError> {
    let patch = to_patch(patch)?;
    if has_move(&patch) {
        *document = apply_parsed(document.clone(), &patch)?;
    } else {
        // In place: json-patch undoes a failed `add`, `remove` or `replace` exactly.
        json_patch::patch(document, &patch)?;
    }
    Ok(())
}

/// `document` with `patch` (RFC 6902) applied, or the error that stopped it (the document
/// is then dropped).
pub fn apply_owned(
    document: serde_json::Value,
    patch: &[PatchOp],
) -> Result<serde_json::Value, ApplyError> {
    apply_parsed(document, &to_patch(patch)?)
}

fn to_patch(patch: &[PatchOp]) -> Result<json_patch::Patch, ApplyError> {
    Ok(serde_json::from_value(serde_json::to_value(patch)?)?)
}

fn has_move(patch: &json_patch::Patch) -> bool {
    patch
        .iter()
        .any(|op| matches!(op, json_patch::PatchOperation::Move(_)))
}

/// Runs `patch` with `patch_unsafe`, on a document thrown away when it fails.
///
/// `json-patch`'s atomic `patch` undoes a failed patch with inverse operations, and a
/// `move`'s inverse can fail and panic (json-patch 5.0.0: the inverse of moving `/a/b` to
/// `/a` moves `/a` inside itself: `unable to undo applied patches`); a failed `move` also
/// loses its value. Without undo there is neither.
fn apply_parsed(
    mut document: serde_json::Value,
    patch: &json_patch::Patch,
) -> Result<serde_json::Value, ApplyError> {
    json_patch::patch_unsafe(&mut document, patch)?;
    Ok(document)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Replace `/steps/0/tool`, then move `/steps/0/agrs` to `to`.
    fn fix_tool_and_move_to(to: &str) -> Vec<PatchOp> {
        vec![
            PatchOp::Replace {
                path: "/steps/0/tool".into(),
                value: json!("a.c"),
            },
            PatchOp::Move {
                from: "/steps/0/agrs".into(),
                path: to.into(),
            },
        ]
    }

    #[test]
    fn applies_replace_and_move() {
        let mut doc = json!({ "steps": [ { "tool": "a.b", "agrs": {} } ] });
        apply(&mut doc, &fix_tool_and_move_to("/steps/0/args")).unwrap();
        assert_eq!(doc, json!({ "steps": [ { "tool": "a.c", "args": {} } ] }));
    }

    /// Found by the `fixes` fuzz target: a move whose destination does not exist used to
    /// lose the value it moved (the earlier replace was undone, the removal was not).
    #[test]
    fn a_failing_move_leaves_the_document_unchanged() {
        let original = json!({ "steps": [ { "tool": "a.b", "agrs": {} } ] });
        let mut doc = original.clone();
        let err = apply(&mut doc, &fix_tool_and_move_to("/messsteps/0/args"));
        assert!(err.is_err());
        assert_eq!(doc, original);
    }

    /// Found by the text-edit property test: json-patch's undo of a move up (`/a/b` to
    /// `/a`) moves `/a` inside itself and panics (`unable to undo applied patches`) when a
    /// later operation fails. A planner's patch must never crash lwirc.
    #[test]
    fn a_failing_patch_after_a_move_up_does_not_panic() {
        let original = json!({ "a": { "b": 1 } });
        let mut doc = original.clone();
        let err = apply(
            &mut doc,
            &[
                PatchOp::Move {
                    from: "/a/b".into(),
                    path: "/a".into(),
                },
                PatchOp::Remove {
                    path: "/missing".into(),
                },
            ],
        );
        assert!(matches!(err, Err(ApplyError::Rejected(_))), "{err:?}");
        assert_eq!(doc, original);
    }

    #[test]
    fn a_failing_patch_leaves_the_document_unchanged() {
        let mut doc = json!({ "a": 1 });
        let err = apply(
            &mut doc,
            &[
                PatchOp::Replace {
                    path: "/a".into(),
                    value: json!(2),
                },
                PatchOp::Remove {
                    path: "/missing".into(),
                },
            ],
        );
        assert!(matches!(err, Err(ApplyError::Rejected(_))));
        assert_eq!(doc, json!({ "a": 1 }));
    }
}
