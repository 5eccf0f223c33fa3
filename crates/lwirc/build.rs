//! Puts the commit lwirc is built from into `lwirc --version`: `0.1.0 (commit abc123def456)`.
//! Outside a git checkout (a source archive),
//! or without `git`, the version alone.

use std::path::Path;
use std::process::Command;

fn main() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&manifest)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let line = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(commit) if !commit.is_empty() => format!("{version} (commit {commit})"),
        _ => version,
    };
    println!("cargo:rustc-env=LWIRC_VERSION_LINE={line}");
    // Built again when the checkout moves to another commit; not on every edit.
    let mut watched = vec!["HEAD".to_owned()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            let path = Path::new(&manifest).join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
