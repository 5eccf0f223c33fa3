//! The validators' tests: one binary, one module per subject.

mod compat;
mod eval_props;
mod expr;
mod graph;
mod messages;
mod pipeline;
