//! `docs/codes.md` is generated from the code table; this test fails when it is stale.

use std::path::Path;

#[test]
fn codes_reference_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/codes.md");
    let expected = lwir_spec::codes::reference_markdown();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "docs/codes.md is stale: run `UPDATE_DOCS=1 cargo test -p lwir-spec --test it docs::`"
    );
}

#[test]
fn spec_lists_the_current_function_whitelist() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (start, end) = ("<!-- functions:start -->\n", "<!-- functions:end -->");
    let (Some(a), Some(b)) = (text.find(start), text.find(end)) else {
        panic!("crates/lwir-spec/README.md lacks the functions markers");
    };
    let table = lwir_spec::expr::functions::reference_markdown();
    let expected = format!("{}{start}{table}{}", &text[..a], &text[b..]);
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let actual = std::fs::read_to_string(&path).unwrap();
    assert!(
        actual == expected,
        "the function table in crates/lwir-spec/README.md is stale: run `UPDATE_DOCS=1 cargo test -p lwir-spec --test it docs::`"
    );
}
