//! Fixes as text edits (`lwir_repair::edit`) against `json-patch` on values: for any
//! document, however it is spelt, and any patch, editing the text gives the document that
//! applying the patch to its value gives, and fails exactly when that fails.

use lwir_repair::edit::{apply_text, edit_text};
use lwir_spec::PatchOp;
use proptest::prelude::*;
use serde_json::{Value as J, json};

/// Small keys, some needing escapes in a pointer or in JSON.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_owned()),
        Just("b".to_owned()),
        Just("c".to_owned()),
        Just("-".to_owned()),
        Just("0".to_owned()),
        Just("~x".to_owned()),
        Just("a/b".to_owned()),
        Just("é\"q".to_owned()),
    ]
}

fn json() -> impl Strategy<Value = J> {
    let leaf = prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        (-1000i64..1000).prop_map(|i| json!(i)),
        (-100.0f64..100.0).prop_map(|f| json!(f)),
        "[a-z \\n\"\\\\]{0,6}".prop_map(J::String),
    ];
    leaf.prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(J::Array),
            prop::collection::btree_map(key(), inner, 0..5)
                .prop_map(|m| J::Object(m.into_iter().collect())),
        ]
    })
}

/// The pointer of every value in `value`, the root included.
fn paths(value: &J, at: &str, out: &mut Vec<String>) {
    out.push(at.to_owned());
    match value {
        J::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                paths(item, &format!("{at}/{i}"), out);
            }
        }
        J::Object(members) => {
            for (k, v) in members {
                let token = k.replace('~', "~0").replace('/', "~1");
                paths(v, &format!("{at}/{token}"), out);
            }
        }
        _ => {}
    }
}

/// A path for an operation: one of the document's, one below it, `-`, or out of range.
fn pick(paths: &[String], choice: (usize, u8)) -> String {
    let base = &paths[choice.0 % paths.len()];
    match choice.1 % 6 {
        0..=2 => base.clone(),
        3 => format!("{base}/-"),
        4 => format!("{base}/new"),
        _ => format!("{base}/9"),
    }
}

fn op(paths: &[String], kind: u8, a: (usize, u8), b: (usize, u8), value: J) -> PatchOp {
    let path = pick(paths, a);
    match kind % 4 {
        0 => PatchOp::Add { path, value },
        1 => PatchOp::Remove { path },
        2 => PatchOp::Replace { path, value },
        _ => PatchOp::Move {
            from: path,
            path: pick(paths, b),
        },
    }
}

/// `value` spelt one of three ways: pretty, compact, or with odd spacing.
fn spell(value: &J, style: u8) -> String {
    match style % 3 {
        0 => serde_json::to_string_pretty(value).unwrap(),
        1 => serde_json::to_string(value).unwrap(),
        _ => serde_json::to_string(value)
            .unwrap()
            .replace(',', " ,\t")
            .replace(':', " : ")
            .replace('[', "[ "),
    }
}

proptest! {
    // 2 000 cases; `PROPTEST_CASES=N` for another number.
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(2000)
    ))]

    #[test]
    fn text_edits_agree_with_json_patch(
        doc in json(),
        style in any::<u8>(),
        ops in prop::collection::vec(
            (any::<u8>(), (any::<usize>(), any::<u8>()), (any::<usize>(), any::<u8>()), json()),
            1..5,
        ),
    ) {
        let mut all = Vec::new();
        paths(&doc, "", &mut all);
        let patch: Vec<PatchOp> = ops
            .into_iter()
            .map(|(kind, a, b, value)| op(&all, kind, a, b, value))
            .collect();
        let text = spell(&doc, style);
        let mut expected = doc.clone();
        let applied = lwir_repair::apply(&mut expected, &patch);
        let edited = edit_text(text.as_bytes(), &patch);
        match (applied, edited) {
            (Ok(()), Ok(bytes)) => {
                let got: J = serde_json::from_slice(&bytes).map_err(|e| {
                    TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(&bytes)))
                })?;
                prop_assert_eq!(got, expected, "{}\n{:?}\n{}", text, patch, String::from_utf8_lossy(&bytes));
            }
            (Err(_), Err(_)) => {}
            (applied, edited) => prop_assert!(
                false,
                "json-patch {:?}, text edits {:?}\n{}\n{:?}",
                applied.err().map(|e| e.to_string()),
                edited.map(|b| String::from_utf8_lossy(&b).into_owned()),
                text,
                patch
            ),
        }
    }

    /// `apply_text` — which judges patches of `replace` operations alone on the spanned trees
    /// rather than through json-patch — gives what json-patch gives, and fails when it fails.
    #[test]
    fn replacements_agree_with_json_patch(
        doc in json(),
        style in any::<u8>(),
        ops in prop::collection::vec(((any::<usize>(), any::<u8>()), json()), 1..5),
    ) {
        let mut all = Vec::new();
        paths(&doc, "", &mut all);
        let patch: Vec<PatchOp> = ops
            .into_iter()
            .map(|(a, value)| PatchOp::Replace { path: pick(&all, a), value })
            .collect();
        let text = spell(&doc, style);
        let mut expected = doc.clone();
        let applied = lwir_repair::apply(&mut expected, &patch);
        let edited = apply_text(text.as_bytes(), &patch);
        match (applied, edited) {
            (Ok(()), Ok(bytes)) => {
                let got: J = serde_json::from_slice(&bytes).map_err(|e| {
                    TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(&bytes)))
                })?;
                prop_assert_eq!(got, expected, "{}\n{:?}", text, patch);
            }
            (Err(_), Err(_)) => {}
            (applied, edited) => prop_assert!(
                false,
                "json-patch {:?}, apply_text {:?}\n{}\n{:?}",
                applied.err().map(|e| e.to_string()),
                edited.map(|b| String::from_utf8_lossy(&b).into_owned()),
                text,
                patch
            ),
        }
    }
}
