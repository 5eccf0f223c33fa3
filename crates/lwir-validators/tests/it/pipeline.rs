//! The editor's entry to the pipeline, `validate_read`: the same findings as a validation
//! of the same bytes, without the version it does not hash.

use std::path::PathBuf;
use std::sync::Arc;

use lwir_validators::pipeline::{self, Definition, Source};

fn example(name: &str) -> Source {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/issue-triage")
        .join(name);
    Source {
        name: name.to_owned(),
        bytes: std::fs::read(&path).unwrap(),
    }
}

#[test]
fn an_editors_validation_finds_what_a_validation_finds_and_hashes_nothing() {
    let definition = Arc::new(Definition::read(example("workflow.json")));
    for (draft, clean) in [("draft.json", true), ("draft-with-mistakes.json", false)] {
        let whole = pipeline::validate_against(example(draft), &definition);
        let read = lwir_spec::document::read_document(example(draft).bytes);
        let editor = pipeline::validate_read(draft.to_owned(), read, Some(&definition), None);
        assert_eq!(editor.findings, whole.findings, "{draft}");
        assert_eq!(whole.version.is_some(), clean, "{draft}");
        assert!(whole.digest.is_some(), "{draft}");
        assert_eq!(editor.version, None, "{draft}");
        assert_eq!(editor.digest, None, "{draft}");
    }
}
