//! `docs/codes.md` is generated from the code table; this test fails when it is stale.

use std::path::Path;

#[test]
fn codes_reference_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/codes.md");
    let expected = lwir_spec::codes::reference_markdown();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "docs/codes.md is stale: run `UPDATE_DOCS=1 cargo test -p lwir-spec --test docs`"
    );
}
