//! The language's tests: one binary, one module per subject.

mod canon;
mod cel_conformance;
mod docs;
mod expr_props;
mod reader_props;
