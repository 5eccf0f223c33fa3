//! Helpers shared by the session's tests: find the shipped example.

use std::path::{Path, PathBuf};

/// The workspace root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A file of the shipped example, as an absolute path.
pub(crate) fn example(name: &str) -> String {
    root()
        .join("examples/issue-triage")
        .join(name)
        .display()
        .to_string()
}
