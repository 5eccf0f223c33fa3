//! The expression syntax tree. Spans are byte ranges into the text the expression was
//! parsed from (the decoded JSON string); [`crate::document::string_source_offset`] maps
//! them to bytes of the file.

use serde::Serialize;

use crate::span::Span;

/// An expression with its span.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Expr {
    /// What the expression is.
    #[serde(flatten)]
    pub kind: ExprKind,
    /// Its bytes in the text it was parsed from.
    #[serde(skip)]
    pub span: Span,
}

/// The kinds of expression.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "node", rename_all = "snake_case")]
pub enum ExprKind {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool {
        /// The value.
        value: bool,
    },
    /// An integer literal (64-bit signed).
    Int {
        /// The value.
        value: i64,
    },
    /// A floating-point literal.
    Double {
        /// The value.
        value: f64,
    },
    /// A string literal, decoded.
    String {
        /// The value.
        value: String,
    },
    /// `[a, b]`.
    List {
        /// The elements.
        items: Vec<Expr>,
    },
    /// `{k: v}`.
    Map {
        /// Keys and values.
        entries: Vec<(Expr, Expr)>,
    },
    /// A name: `input`, `steps`, or a bound variable.
    Ident {
        /// The name.
        name: String,
    },
    /// `target.field`.
    Member {
        /// What the field is read from.
        target: Box<Expr>,
        /// The field name.
        field: String,
        /// The span of the field name.
        #[serde(skip)]
        field_span: Span,
    },
    /// `target[index]`.
    Index {
        /// What is indexed.
        target: Box<Expr>,
        /// The index or key.
        index: Box<Expr>,
    },
    /// `f(args)` or `target.f(args)`.
    Call {
        /// The receiver of a method call.
        target: Option<Box<Expr>>,
        /// The function name.
        function: String,
        /// The span of the function name.
        #[serde(skip)]
        function_span: Span,
        /// The arguments.
        args: Vec<Expr>,
    },
    /// `!x` or `-x`.
    Unary {
        /// The operator.
        op: UnaryOp,
        /// The operand.
        operand: Box<Expr>,
    },
    /// `a op b`.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `c ? a : b`.
    Conditional {
        /// The condition.
        condition: Box<Expr>,
        /// Value when it holds.
        then: Box<Expr>,
        /// Value otherwise.
        otherwise: Box<Expr>,
    },
}

/// Prefix operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnaryOp {
    /// `!`.
    Not,
    /// `-`.
    Negate,
}

/// Infix operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BinaryOp {
    /// `||`.
    Or,
    /// `&&`.
    And,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `in`.
    In,
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `%`.
    Rem,
}

impl BinaryOp {
    /// The operator as written.
    pub const fn as_str(self) -> &'static str {
        match self {
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::In => "in",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
        }
    }
}

impl Expr {
    /// Visits this expression and every sub-expression, parents first.
    pub fn walk<'a>(&'a self, visit: &mut impl FnMut(&'a Expr)) {
        visit(self);
        self.children(&mut |e| e.walk(visit));
    }

    /// Visits the direct sub-expressions, in source order: a walk's one step, for walkers
    /// that treat some shapes themselves and leave the rest to it.
    pub fn children<'a>(&'a self, visit: &mut impl FnMut(&'a Expr)) {
        match &self.kind {
            ExprKind::List { items } => items.iter().for_each(visit),
            ExprKind::Map { entries } => {
                for (k, v) in entries {
                    visit(k);
                    visit(v);
                }
            }
            ExprKind::Member { target, .. } => visit(target),
            ExprKind::Index { target, index } => {
                visit(target);
                visit(index);
            }
            ExprKind::Call { target, args, .. } => {
                if let Some(t) = target {
                    visit(t);
                }
                args.iter().for_each(visit);
            }
            ExprKind::Unary { operand, .. } => visit(operand),
            ExprKind::Binary { lhs, rhs, .. } => {
                visit(lhs);
                visit(rhs);
            }
            ExprKind::Conditional {
                condition,
                then,
                otherwise,
            } => {
                visit(condition);
                visit(then);
                visit(otherwise);
            }
            ExprKind::Null
            | ExprKind::Bool { .. }
            | ExprKind::Int { .. }
            | ExprKind::Double { .. }
            | ExprKind::String { .. }
            | ExprKind::Ident { .. } => {}
        }
    }
}
