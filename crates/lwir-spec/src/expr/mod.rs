//! The LWIR expression language: a whitelisted subset of CEL syntax, parsed with pest.
//!
//! - [`parse`]: the grammar (`grammar.pest`), expressions, and template strings;
//! - [`ast`]: the syntax tree, with spans into the string it was read from;
//! - [`eval`]: evaluating an expression, with CEL's semantics;
//! - [`functions`]: the whitelist — every function and macro an expression may call, with its
//!   signatures and cost class — and the names that reach outside the sandbox.

pub mod ast;
pub mod eval;
pub mod functions;
pub mod parse;

pub use ast::{BinaryOp, Expr, ExprKind, UnaryOp};
pub use parse::{
    MAX_DEPTH, MAX_NESTING, Part, StringValue, SyntaxError, SyntaxErrorKind, parse_expression,
    parse_expression_reference, parse_string_value, parse_string_value_reference,
};
