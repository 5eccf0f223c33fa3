//! The LWIR language: what a draft and a workflow definition are, how they are read, and
//! what can be said about them.
//!
//! - [`document`]: the spanned I-JSON reader (bytes → [`document::SpannedDocument`]).
//! - [`ir`]: typed views of drafts and definitions over a spanned document.
//! - [`schemas`]: the meta JSON Schemas of both documents and the supported JSON Schema subset.
//! - [`finding`] and [`codes`]: the one `Finding` type and the one table of codes.
//! - [`redact`]: the one pass that keeps secrets out of what lwirc prints, logs and stores.

pub mod canon;
pub mod codes;
pub mod digest;
pub mod document;
pub mod expr;
pub mod finding;
pub mod ir;
pub mod kind;
pub mod pointer;
pub mod redact;
pub mod retry;
pub mod schemas;
pub mod span;
pub mod suggest;
pub mod text;
pub mod time;

pub use codes::Code;
pub use document::{Node, SpannedDocument, Value};
pub use finding::{Applicability, Finding, Fix, Origin, PatchOp, PlannerContext, Severity};
pub use span::Span;
