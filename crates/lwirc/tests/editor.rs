//! A real editor's LSP client: Neovim, headless, opens the shipped example with its ten
//! mistakes under `lwirc lsp`, receives the ten diagnostics at their places, applies the
//! fix-all code action, and receives only the findings that have no safe fix
//! (`tests/editors/nvim.lua`). Without `nvim` on the PATH the test says so and passes,
//! unless `LWIRC_REQUIRE_EDITOR` is set (CI sets it, and installs Neovim).

use std::path::Path;
use std::process::Command;

#[macro_use]
mod common;

#[test]
fn neovim_shows_the_findings_and_the_fix_all_leaves_those_without_a_safe_fix() {
    if Command::new("nvim").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("LWIRC_REQUIRE_EDITOR").is_none(),
            "LWIRC_REQUIRE_EDITOR is set but `nvim` is not on the PATH"
        );
        skip_note!("skipped: `nvim` is not on the PATH (install Neovim to run this test)");
        return;
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/issue-triage");
    let dir = tempfile::tempdir().unwrap();
    for name in ["draft-with-mistakes.json", "workflow.json"] {
        std::fs::copy(examples.join(name), dir.path().join(name)).unwrap();
    }
    let out = dir.path().join("seen.txt");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/editors/nvim.lua");
    let status = Command::new("nvim")
        .args(["--headless", "--clean", "-u", "NONE", "-c"])
        .arg(format!("luafile {}", script.display()))
        .env("LWIRC_BIN", env!("CARGO_BIN_EXE_lwirc"))
        .env("LWIRC_DRAFT", dir.path().join("draft-with-mistakes.json"))
        .env("LWIRC_OUT", &out)
        .current_dir(dir.path())
        .status()
        .expect("nvim runs");
    let seen = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(status.success(), "nvim exited {status}; it wrote:\n{seen}");
    assert!(seen.ends_with("done\n"), "nvim wrote:\n{seen}");
    let lines = |tag: &str| -> Vec<String> {
        seen.lines()
            .filter_map(|l| l.strip_prefix(tag).map(|r| r.trim().to_owned()))
            .collect()
    };
    // The ten findings, each where `lwirc validate` puts it (0-based line:column).
    assert_eq!(
        lines("before "),
        [
            "LW301 4:51",
            "LW606 6:108",
            "LW102 8:67",
            "LW107 12:45",
            "LW602 13:84",
            "LW302 14:18",
            "LW603 19:70",
            "LW111 21:73",
            "LW101 22:4",
            "LW304 24:56",
        ]
    );
    // After the fix-all: the five that have no machine-applicable fix.
    let after: Vec<String> = lines("after ")
        .iter()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect();
    assert_eq!(after, ["LW107", "LW302", "LW603", "LW101", "LW304"]);
}
