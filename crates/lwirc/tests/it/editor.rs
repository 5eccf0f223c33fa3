//! A real editor's LSP client: Neovim, headless, opens the shipped example with its ten
//! mistakes under `lwirc lsp`, receives the ten diagnostics at their places, applies the
//! fix-all code action, and receives only the findings that have no safe fix
//! (`tests/editors/nvim.lua`). Without `nvim` on the PATH the test says so and passes,
//! unless `LWIRC_REQUIRE_EDITOR` is set (CI sets it, and installs Neovim).

use std::path::Path;
use std::process::Command;

/// Whether `nvim` runs; where not, says the test is skipped (and fails where
/// `LWIRC_REQUIRE_EDITOR` is set).
fn nvim_is_on_the_path() -> bool {
    if Command::new("nvim").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("LWIRC_REQUIRE_EDITOR").is_none(),
            "LWIRC_REQUIRE_EDITOR is set but `nvim` is not on the PATH"
        );
        skip_note!("skipped: `nvim` is not on the PATH (install Neovim to run this test)");
        return false;
    }
    true
}

#[test]
fn neovim_shows_the_findings_and_the_fix_all_leaves_those_without_a_safe_fix() {
    if !nvim_is_on_the_path() {
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

/// The guide's Neovim configuration (docs/guide/editors.md), exactly as written, with `lwirc` on the PATH: the
/// packaged Neovim (Debian's is 0.7) attaches `lwirc lsp` to a JSON file and shows its
/// findings.
#[test]
fn the_guides_neovim_configuration_works_as_written() {
    if !nvim_is_on_the_path() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("docs/guide/editors.md")).unwrap();
    let after = &readme[readme.find("**Neovim**").expect("a Neovim section")..];
    let start = after.find("```lua\n").expect("a lua block") + "```lua\n".len();
    let snippet = &after[start..start + after[start..].find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    for name in ["draft-with-mistakes.json", "workflow.json"] {
        std::fs::copy(
            root.join("examples/issue-triage").join(name),
            dir.path().join(name),
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("init.lua"), snippet).unwrap();
    std::fs::write(
        dir.path().join("check.lua"),
        "vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 50)\n\
         local f = io.open('seen.txt', 'w')\n\
         f:write(#vim.diagnostic.get(0) .. '\\n')\n\
         f:close()\n\
         vim.cmd('qa!')\n",
    )
    .unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_lwirc")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let status = Command::new("nvim")
        .args(["--headless", "-u", "init.lua", "-c", "luafile check.lua"])
        .arg("draft-with-mistakes.json")
        .env("PATH", path)
        .env("XDG_CONFIG_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .env("XDG_STATE_HOME", dir.path())
        .current_dir(dir.path())
        .status()
        .expect("nvim runs");
    let seen = std::fs::read_to_string(dir.path().join("seen.txt")).unwrap_or_default();
    assert!(status.success(), "nvim exited {status}");
    assert_eq!(
        seen.trim(),
        "10",
        "diagnostics shown with the README's configuration"
    );
}
