//! Fix application; never panics.
//!
//! - A draft (any input not starting with `[`): validated against the example definition;
//!   every fix of every finding on the draft is applied on its own with `lwir_repair::apply`
//!   (a failing patch leaves the document unchanged), then the repair loop's safe-fix passes
//!   run (`apply_safe_fixes`, as `lwirc repair` does). `Clean` means no errors and a version;
//!   each pass's draft is the validated one.
//! - `[document, [op, …]]`: an arbitrary RFC 6902 patch (`add`, `remove`, `replace`, `move`)
//!   applied to an arbitrary document; on error the document is unchanged. The same patch
//!   applied as text edits (`lwir_repair::edit`) to the document's text, pretty and compact,
//!   fails exactly when that fails and otherwise reads back as the same document.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lwir_repair::fixes::{Check, FixStop, MAX_FIX_PASSES, Seen, apply_safe_fixes};
use lwir_session::PipelineCheck;
use lwir_spec::{Origin, PatchOp};
use serde_json::Value as J;

fuzz_target!(init: lwirc_fuzz::init(), |data: &[u8]| {
    if data.first() == Some(&b'[') {
        patch(data);
    } else {
        draft(data);
    }
});

fn draft(data: &[u8]) {
    let mut check = PipelineCheck::new(lwirc_fuzz::definition(), "draft.json");
    let checked = check.check(data);
    if let Some(document) = checked.document.as_ref().map(|d| d.root().to_json()) {
        let document = &document;
        for f in &checked.findings {
            let Some(fix) = &f.fix else { continue };
            if f.origin != Origin::Draft {
                continue;
            }
            let mut doc = document.clone();
            if lwir_repair::apply(&mut doc, &fix.patch).is_err() {
                assert_eq!(&doc, document, "a failed patch changed the document");
            }
        }
    }
    let mut seen = Seen::default();
    seen.visit(&checked);
    let outcome = apply_safe_fixes(
        &mut check,
        data.to_vec(),
        checked,
        &mut seen,
        MAX_FIX_PASSES,
        &mut |_| {},
    );
    assert!(outcome.passes.len() <= MAX_FIX_PASSES as usize);
    if outcome.stop == FixStop::Clean {
        assert!(!outcome.checked.has_errors());
        assert!(outcome.checked.version.is_some());
    }
    if !outcome.passes.is_empty() {
        let again = check.check(&outcome.draft);
        assert_eq!(again.state, outcome.checked.state);
    }
}

fn patch(data: &[u8]) {
    let Ok(J::Array(parts)) = serde_json::from_slice::<J>(data) else {
        return;
    };
    let [document, J::Array(ops)] = parts.as_slice() else {
        return;
    };
    let Some(ops) = ops.iter().map(op).collect::<Option<Vec<_>>>() else {
        return;
    };
    let mut doc = document.clone();
    let applied = lwir_repair::apply(&mut doc, &ops);
    if applied.is_err() {
        assert_eq!(&doc, document, "a failed patch changed the document");
    }
    for text in [
        serde_json::to_vec_pretty(document).unwrap(),
        serde_json::to_vec(document).unwrap(),
    ] {
        // lwirc's reader refuses what serde_json nests deeper; nothing to edit then.
        if lwir_spec::document::read(text.clone()).document.is_none() {
            continue;
        }
        match (&applied, lwir_repair::edit::edit_text(&text, &ops)) {
            (Ok(()), Ok(edited)) => {
                let back: J = serde_json::from_slice(&edited).unwrap_or_else(|e| {
                    panic!(
                        "edited text is not JSON ({e}):\n{}",
                        String::from_utf8_lossy(&edited)
                    )
                });
                assert!(
                    lwirc_fuzz::same_json(&back, &doc),
                    "text edits made another document:\n{}",
                    String::from_utf8_lossy(&edited)
                );
            }
            (Err(_), Err(_)) => {}
            (applied, edited) => panic!(
                "json-patch: {:?}, text edits: {:?}",
                applied.as_ref().err().map(ToString::to_string),
                edited.map(|b| String::from_utf8_lossy(&b).into_owned())
            ),
        }
    }
}

fn op(value: &J) -> Option<PatchOp> {
    let path = value.get("path")?.as_str()?.to_owned();
    let val = || value.get("value").cloned();
    Some(match value.get("op")?.as_str()? {
        "add" => PatchOp::Add {
            path,
            value: val()?,
        },
        "remove" => PatchOp::Remove { path },
        "replace" => PatchOp::Replace {
            path,
            value: val()?,
        },
        "move" => PatchOp::Move {
            from: value.get("from")?.as_str()?.to_owned(),
            path,
        },
        _ => return None,
    })
}
