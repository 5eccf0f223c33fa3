//! The repair crate's tests: one binary, one module per subject.

mod edit_props;
mod r#loop;
mod protocol;
mod shared_log;
