//! The runtime's tests: one binary, one module per subject.

mod common;
mod log;
mod records;
mod semantics;
