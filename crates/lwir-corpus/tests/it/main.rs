//! The corpus's tests: one binary, one module per subject.

mod corpus;
mod fix_props;
