//! The compile session's tests: one binary, one module per subject.

mod common;

mod session;
