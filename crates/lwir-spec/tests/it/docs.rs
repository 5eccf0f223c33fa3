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

/// `CONTRIBUTING.md`'s layout table names every crate under `crates/` and, for each, the
/// workspace crates its `Cargo.toml` may depend on: exactly those (the `lwirc` row: any crate
/// listed above it).
#[test]
fn contributing_lists_every_crate_and_what_it_may_use() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("CONTRIBUTING.md")).unwrap();
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() != 5 || !cells[1].starts_with('`') {
            continue;
        }
        let uses = cells[3]
            .split_whitespace()
            .filter_map(|w| w.strip_prefix('`')?.strip_suffix('`'))
            .map(str::to_owned)
            .collect();
        rows.push((cells[1].trim_matches('`').to_owned(), uses));
    }
    let mut crates: Vec<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    crates.sort();
    let mut listed: Vec<String> = rows.iter().map(|(c, _)| c.clone()).collect();
    listed.sort();
    assert_eq!(listed, crates, "CONTRIBUTING.md's table and crates/ differ");
    for (i, (name, uses)) in rows.iter().enumerate() {
        let manifest =
            std::fs::read_to_string(root.join("crates").join(name).join("Cargo.toml")).unwrap();
        let mut deps: Vec<String> = manifest
            .split("\n[")
            .find(|section| section.starts_with("dependencies]"))
            .unwrap_or("")
            .lines()
            .filter_map(|l| l.split(['.', ' ', '=']).next())
            .filter(|d| crates.iter().any(|c| c == d))
            .map(str::to_owned)
            .collect();
        deps.sort();
        if name == "lwirc" {
            let above: Vec<&String> = rows[..i].iter().map(|(c, _)| c).collect();
            for d in &deps {
                assert!(
                    above.contains(&d),
                    "lwirc uses {d}, which is not listed above it"
                );
            }
            continue;
        }
        let mut uses = uses.clone();
        uses.sort();
        assert_eq!(
            deps, uses,
            "CONTRIBUTING.md: what `{name}` may use differs from its Cargo.toml"
        );
    }
}
