//! Evaluating expressions: the whitelisted language, with CEL's semantics for it.
//!
//! - Values are JSON's, with integers and doubles apart ([`Val`]): `1` is an int, `1.0` a
//!   double, and there is no implicit conversion between them — `1 + 1.0` is an error, as
//!   in CEL. Comparisons and equality do cross them (`1 == 1.0`, `1 < 1.5`: CEL's
//!   heterogeneous numeric equality and ordering).
//! - Integer arithmetic is 64-bit and checked: overflow, division or modulus by zero are
//!   errors, never a wrap; `/` truncates toward zero and `%` takes the sign of the dividend.
//!   Double arithmetic is IEEE 754 (`1.0 / 0.0` is infinity, which has no JSON form).
//! - `&&` and `||` are commutative over errors, as in CEL: `false && x` and `x && false` are
//!   `false` whatever `x` is (an error or a wrong type included); otherwise an error wins.
//!   `?:` evaluates only the branch it takes.
//! - Reading a missing field or index is an error (`has(a.b)` asks first); a missing
//!   variable is an error.
//! - Every step is charged against a budget (one unit per node, plus the length of what a
//!   function walks: a string, a list, each macro iteration), so an expression stops with an
//!   error instead of running long; [`DEFAULT_BUDGET`] unless the caller sets one (the
//!   compiled plan's cost bound, say).
//!
//! The syntax tree is at most [`super::MAX_DEPTH`] deep (the parser refuses deeper), so the
//! evaluator recurses safely.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::ast::{BinaryOp, Expr, ExprKind, UnaryOp};
use crate::span::Span;

/// The budget of [`evaluate`] when the caller sets none.
pub const DEFAULT_BUDGET: u64 = 10_000_000;

/// A value during evaluation: a JSON value with integers and doubles apart. Lists and maps
/// are shared, so reading a large input is not a copy.
#[derive(Clone, Debug)]
pub enum Val {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A double (possibly infinite or NaN, which JSON cannot hold).
    Double(f64),
    /// A string.
    String(Rc<str>),
    /// A list.
    List(Rc<Vec<Val>>),
    /// A map with string keys.
    Map(Rc<BTreeMap<String, Val>>),
}

impl Val {
    /// `value` as an evaluation value: a JSON number written as an integer that fits
    /// 64 bits is an int, any other number a double.
    pub fn from_json(value: &serde_json::Value) -> Val {
        use serde_json::Value as J;
        match value {
            J::Null => Val::Null,
            J::Bool(b) => Val::Bool(*b),
            J::Number(n) => match n.as_i64() {
                Some(i) => Val::Int(i),
                None => Val::Double(n.as_f64().unwrap_or(f64::NAN)),
            },
            J::String(s) => Val::String(s.as_str().into()),
            J::Array(items) => Val::List(Rc::new(items.iter().map(Val::from_json).collect())),
            J::Object(members) => Val::Map(Rc::new(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), Val::from_json(v)))
                    .collect(),
            )),
        }
    }

    /// The value as JSON; an error naming the place for a double that JSON cannot hold
    /// (infinite or NaN).
    pub fn to_json(&self) -> Result<serde_json::Value, String> {
        use serde_json::Value as J;
        Ok(match self {
            Val::Null => J::Null,
            Val::Bool(b) => J::Bool(*b),
            Val::Int(i) => J::from(*i),
            Val::Double(d) => serde_json::Number::from_f64(*d)
                .map(J::Number)
                .ok_or_else(|| format!("{} has no JSON form", format_double(*d)))?,
            Val::String(s) => J::String(s.to_string()),
            Val::List(items) => J::Array(items.iter().map(Val::to_json).collect::<Result<_, _>>()?),
            Val::Map(members) => J::Object(
                members
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), v.to_json()?)))
                    .collect::<Result<_, String>>()?,
            ),
        })
    }

    /// The name of its type, as messages give it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Null => "null",
            Val::Bool(_) => "bool",
            Val::Int(_) => "int",
            Val::Double(_) => "double",
            Val::String(_) => "string",
            Val::List(_) => "list",
            Val::Map(_) => "map",
        }
    }

    fn string(text: impl Into<Rc<str>>) -> Val {
        Val::String(text.into())
    }
}

impl PartialEq for Val {
    /// CEL's equality: numbers by value across int and double (NaN equals nothing), lists
    /// and maps element by element, values of different types unequal.
    fn eq(&self, other: &Val) -> bool {
        match (self, other) {
            (Val::Null, Val::Null) => true,
            (Val::Bool(a), Val::Bool(b)) => a == b,
            (Val::String(a), Val::String(b)) => a == b,
            (Val::List(a), Val::List(b)) => a == b,
            (Val::Map(a), Val::Map(b)) => a == b,
            (a, b) => compare_numbers(a, b) == Some(std::cmp::Ordering::Equal),
        }
    }
}

/// Why an expression has no value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EvalError {
    /// The part of the expression it is about (bytes of the expression's text).
    pub span: Span,
    /// What went wrong.
    pub message: String,
}

/// The variables an expression sees.
pub type Bindings = BTreeMap<String, Val>;

/// Evaluates `expr` with `bindings` (its root names: `input`, `goal`, `work`, …) within
/// `budget` units of work (see the module documentation).
pub fn evaluate(expr: &Expr, bindings: &Bindings, budget: u64) -> Result<Val, EvalError> {
    let mut evaluator = Evaluator {
        bindings,
        locals: Vec::new(),
        left: budget,
        regexes: std::collections::HashMap::new(),
    };
    evaluator.eval(expr)
}

struct Evaluator<'b> {
    bindings: &'b Bindings,
    /// Variables bound by macros, innermost last.
    locals: Vec<(String, Val)>,
    /// What is left of the budget.
    left: u64,
    /// The regular expressions compiled so far, by pattern, so that `matches` in a macro
    /// body compiles its pattern once (at most [`MAX_CACHED_REGEXES`] kept).
    regexes: std::collections::HashMap<Rc<str>, regex::Regex>,
}

/// How many compiled regular expressions an evaluation keeps.
const MAX_CACHED_REGEXES: usize = 64;

type Result<T, E = EvalError> = std::result::Result<T, E>;

fn error(span: Span, message: impl Into<String>) -> EvalError {
    EvalError {
        span,
        message: message.into(),
    }
}

fn no_overload(span: Span, what: &str, args: &[&Val]) -> EvalError {
    let types: Vec<&str> = args.iter().map(|v| v.type_name()).collect();
    error(
        span,
        format!("no such overload: {what}({})", types.join(", ")),
    )
}

impl Evaluator<'_> {
    fn charge(&mut self, units: u64, span: Span) -> Result<()> {
        match self.left.checked_sub(units) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => {
                self.left = 0;
                Err(error(span, "the expression exceeded its cost budget"))
            }
        }
    }

    fn eval(&mut self, expr: &Expr) -> Result<Val> {
        self.charge(1, expr.span)?;
        let span = expr.span;
        Ok(match &expr.kind {
            ExprKind::Null => Val::Null,
            ExprKind::Bool { value } => Val::Bool(*value),
            ExprKind::Int { value } => Val::Int(*value),
            ExprKind::Double { value } => Val::Double(*value),
            ExprKind::String { value } => Val::string(value.as_str()),
            ExprKind::List { items } => {
                let items = items
                    .iter()
                    .map(|e| self.eval(e))
                    .collect::<Result<Vec<_>>>()?;
                Val::List(Rc::new(items))
            }
            ExprKind::Map { entries } => {
                let mut map = BTreeMap::new();
                for (key, value) in entries {
                    let k = match self.eval(key)? {
                        Val::String(s) => s.to_string(),
                        other => {
                            return Err(error(
                                key.span,
                                format!("a map key must be a string, not {}", other.type_name()),
                            ));
                        }
                    };
                    let v = self.eval(value)?;
                    if map.insert(k.clone(), v).is_some() {
                        return Err(error(key.span, format!("repeated map key `{k}`")));
                    }
                }
                Val::Map(Rc::new(map))
            }
            ExprKind::Ident { name } => self.variable(name, span)?,
            ExprKind::Member {
                target,
                field,
                field_span,
            } => {
                let target = self.eval(target)?;
                field_of(&target, field, *field_span)?
            }
            ExprKind::Index { target, index } => {
                let target = self.eval(target)?;
                let index = self.eval(index)?;
                match (&target, &index) {
                    (Val::List(items), Val::Int(i)) => usize::try_from(*i)
                        .ok()
                        .and_then(|i| items.get(i))
                        .cloned()
                        .ok_or_else(|| {
                            error(
                                span,
                                format!("index {i} out of range (size {})", items.len()),
                            )
                        })?,
                    (Val::Map(_), Val::String(key)) => field_of(&target, key, span)?,
                    _ => return Err(no_overload(span, "_[_]", &[&target, &index])),
                }
            }
            ExprKind::Unary { op, operand } => {
                let value = self.eval(operand)?;
                match (op, &value) {
                    (UnaryOp::Not, Val::Bool(b)) => Val::Bool(!b),
                    (UnaryOp::Negate, Val::Int(i)) => Val::Int(
                        i.checked_neg()
                            .ok_or_else(|| error(span, "integer overflow"))?,
                    ),
                    (UnaryOp::Negate, Val::Double(d)) => Val::Double(-d),
                    (UnaryOp::Not, _) => return Err(no_overload(span, "!_", &[&value])),
                    (UnaryOp::Negate, _) => return Err(no_overload(span, "-_", &[&value])),
                }
            }
            ExprKind::Binary { op, lhs, rhs } => self.binary(*op, lhs, rhs, span)?,
            ExprKind::Conditional {
                condition,
                then,
                otherwise,
            } => match self.eval(condition)? {
                Val::Bool(true) => self.eval(then)?,
                Val::Bool(false) => self.eval(otherwise)?,
                other => {
                    return Err(error(
                        condition.span,
                        format!("a condition must be a bool, not {}", other.type_name()),
                    ));
                }
            },
            ExprKind::Call {
                target,
                function,
                args,
                function_span,
            } => self.call(target.as_deref(), function, args, *function_span, span)?,
        })
    }

    fn variable(&self, name: &str, span: Span) -> Result<Val> {
        if let Some((_, value)) = self.locals.iter().rev().find(|(n, _)| n == name) {
            return Ok(value.clone());
        }
        self.bindings
            .get(name)
            .cloned()
            .ok_or_else(|| error(span, format!("no variable `{name}`")))
    }

    /// A bool operand of `&&` / `||`: its value, or the error it is (a wrong type too).
    fn logical(&mut self, operand: &Expr) -> Result<bool> {
        match self.eval(operand)? {
            Val::Bool(b) => Ok(b),
            other => Err(error(
                operand.span,
                format!("`&&` and `||` need bools, not {}", other.type_name()),
            )),
        }
    }

    fn binary(&mut self, op: BinaryOp, lhs: &Expr, rhs: &Expr, span: Span) -> Result<Val> {
        match op {
            BinaryOp::And | BinaryOp::Or => {
                // The value that decides: `false` for `&&`, `true` for `||`.
                let decides = op == BinaryOp::Or;
                let left = self.logical(lhs);
                if left == Ok(decides) {
                    return Ok(Val::Bool(decides));
                }
                // A budget overrun is not absorbed.
                if self.left == 0 {
                    return left.map(Val::Bool);
                }
                let right = self.logical(rhs);
                if right == Ok(decides) {
                    return Ok(Val::Bool(decides));
                }
                left?;
                right?;
                return Ok(Val::Bool(!decides));
            }
            _ => {}
        }
        let l = self.eval(lhs)?;
        let r = self.eval(rhs)?;
        let sym = op.as_str();
        let overload = |l: &Val, r: &Val| no_overload(span, &format!("_{sym}_"), &[l, r]);
        Ok(match op {
            BinaryOp::Eq | BinaryOp::Ne => {
                self.charge(size_of(&l).min(size_of(&r)), span)?;
                Val::Bool((l == r) == (op == BinaryOp::Eq))
            }
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                let order = match (&l, &r) {
                    (Val::String(a), Val::String(b)) => Some(a.cmp(b)),
                    (Val::Bool(a), Val::Bool(b)) => Some(a.cmp(b)),
                    (Val::Int(_) | Val::Double(_), Val::Int(_) | Val::Double(_)) => {
                        compare_numbers(&l, &r)
                    }
                    _ => return Err(overload(&l, &r)),
                };
                use std::cmp::Ordering::{Greater, Less};
                Val::Bool(match (op, order) {
                    // NaN is unordered: every comparison with it is false.
                    (_, None) => false,
                    (BinaryOp::Lt, Some(o)) => o == Less,
                    (BinaryOp::Le, Some(o)) => o != Greater,
                    (BinaryOp::Gt, Some(o)) => o == Greater,
                    (_, Some(o)) => o != Less,
                })
            }
            BinaryOp::In => match &r {
                Val::List(items) => {
                    self.charge(items.len() as u64, span)?;
                    Val::Bool(items.contains(&l))
                }
                Val::Map(members) => match &l {
                    Val::String(key) => Val::Bool(members.contains_key(&**key)),
                    _ => return Err(overload(&l, &r)),
                },
                _ => return Err(overload(&l, &r)),
            },
            BinaryOp::Add => match (&l, &r) {
                (Val::Int(a), Val::Int(b)) => Val::Int(checked(a.checked_add(*b), span)?),
                (Val::Double(a), Val::Double(b)) => Val::Double(a + b),
                (Val::String(a), Val::String(b)) => {
                    self.charge((a.len() + b.len()) as u64, span)?;
                    Val::string(format!("{a}{b}"))
                }
                (Val::List(a), Val::List(b)) => {
                    self.charge((a.len() + b.len()) as u64, span)?;
                    Val::List(Rc::new(a.iter().chain(b.iter()).cloned().collect()))
                }
                _ => return Err(overload(&l, &r)),
            },
            BinaryOp::Sub | BinaryOp::Mul => match (&l, &r) {
                (Val::Int(a), Val::Int(b)) => Val::Int(checked(
                    if op == BinaryOp::Sub {
                        a.checked_sub(*b)
                    } else {
                        a.checked_mul(*b)
                    },
                    span,
                )?),
                (Val::Double(a), Val::Double(b)) => {
                    Val::Double(if op == BinaryOp::Sub { a - b } else { a * b })
                }
                _ => return Err(overload(&l, &r)),
            },
            BinaryOp::Div => match (&l, &r) {
                (Val::Int(_), Val::Int(0)) => return Err(error(span, "division by zero")),
                (Val::Int(a), Val::Int(b)) => Val::Int(checked(a.checked_div(*b), span)?),
                (Val::Double(a), Val::Double(b)) => Val::Double(a / b),
                _ => return Err(overload(&l, &r)),
            },
            BinaryOp::Rem => match (&l, &r) {
                (Val::Int(_), Val::Int(0)) => return Err(error(span, "modulus by zero")),
                (Val::Int(a), Val::Int(b)) => Val::Int(checked(a.checked_rem(*b), span)?),
                _ => return Err(overload(&l, &r)),
            },
            BinaryOp::And | BinaryOp::Or => unreachable!("handled above"),
        })
    }

    fn call(
        &mut self,
        target: Option<&Expr>,
        function: &str,
        args: &[Expr],
        function_span: Span,
        span: Span,
    ) -> Result<Val> {
        // The subject: the receiver of a method call, or the first argument.
        let (subject, rest) = match (target, args.split_first()) {
            (Some(t), _) => (t, args),
            (None, Some((first, rest))) => (first, rest),
            (None, None) => {
                return Err(error(
                    function_span,
                    format!("`{function}` needs an argument"),
                ));
            }
        };
        match function {
            "has" => return self.has(subject, span),
            "map" | "filter" | "all" | "exists" => {
                return self.comprehension(function, subject, rest, span);
            }
            _ => {}
        }
        let subject = self.eval(subject)?;
        let rest = rest
            .iter()
            .map(|e| self.eval(e))
            .collect::<Result<Vec<_>>>()?;
        self.charge(size_of(&subject), span)?;
        let all: Vec<&Val> = std::iter::once(&subject).chain(rest.iter()).collect();
        let wrong = || no_overload(function_span, function, &all);
        let text = |v: &Val| match v {
            Val::String(s) => Some(s.clone()),
            _ => None,
        };
        Ok(match (function, &subject, rest.as_slice()) {
            ("size", Val::String(s), []) => Val::Int(count(s.chars().count())),
            ("size", Val::List(items), []) => Val::Int(count(items.len())),
            ("size", Val::Map(members), []) => Val::Int(count(members.len())),
            ("string", Val::Null, []) => Val::string("null"),
            ("string", Val::Bool(b), []) => Val::string(if *b { "true" } else { "false" }),
            ("string", Val::Int(i), []) => Val::string(i.to_string()),
            ("string", Val::Double(d), []) => Val::string(format_double(*d)),
            ("string", Val::String(s), []) => Val::String(s.clone()),
            ("int", Val::Int(i), []) => Val::Int(*i),
            ("int", Val::Double(d), []) => Val::Int(double_to_int(*d).ok_or_else(|| {
                error(
                    span,
                    format!("{} is out of the int range", format_double(*d)),
                )
            })?),
            ("int", Val::String(s), []) => Val::Int(
                s.parse()
                    .map_err(|_| error(span, format!("`{s}` is not an int")))?,
            ),
            ("double", Val::Int(i), []) => Val::Double(*i as f64),
            ("double", Val::Double(d), []) => Val::Double(*d),
            ("double", Val::String(s), []) => Val::Double(
                s.parse()
                    .map_err(|_| error(span, format!("`{s}` is not a double")))?,
            ),
            ("contains", Val::String(s), [Val::String(t)]) => Val::Bool(s.contains(&**t)),
            ("startsWith", Val::String(s), [Val::String(t)]) => Val::Bool(s.starts_with(&**t)),
            ("endsWith", Val::String(s), [Val::String(t)]) => Val::Bool(s.ends_with(&**t)),
            ("lower", Val::String(s), []) => Val::string(s.to_lowercase()),
            ("upper", Val::String(s), []) => Val::string(s.to_uppercase()),
            ("trim", Val::String(s), []) => Val::string(s.trim()),
            ("join", Val::List(items), [] | [Val::String(_)]) => {
                let separator = rest.first().and_then(text).unwrap_or_else(|| "".into());
                let parts = items
                    .iter()
                    .map(|item| text(item).ok_or_else(wrong))
                    .collect::<Result<Vec<_>>>()?;
                Val::string(parts.join(&*separator))
            }
            ("split", Val::String(s), [Val::String(separator)]) => {
                let parts: Vec<Val> = if separator.is_empty() {
                    s.chars().map(|c| Val::string(c.to_string())).collect()
                } else {
                    s.split(&**separator).map(Val::string).collect()
                };
                Val::List(Rc::new(parts))
            }
            ("matches", Val::String(s), [Val::String(pattern)]) => {
                Val::Bool(self.regex(pattern, span)?.is_match(s))
            }
            _ => return Err(wrong()),
        })
    }

    /// `pattern` compiled (RE2 syntax, linear-time matching, at most 1 MiB compiled), from
    /// the cache when it was compiled before.
    fn regex(&mut self, pattern: &Rc<str>, span: Span) -> Result<&regex::Regex> {
        if !self.regexes.contains_key(pattern) {
            let re = regex::RegexBuilder::new(pattern)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| error(span, format!("invalid regular expression: {e}")))?;
            if self.regexes.len() == MAX_CACHED_REGEXES {
                self.regexes.clear();
            }
            self.regexes.insert(Rc::clone(pattern), re);
        }
        Ok(&self.regexes[pattern])
    }

    /// `has(a.b)`: whether map `a` has key `b`.
    fn has(&mut self, arg: &Expr, span: Span) -> Result<Val> {
        let ExprKind::Member { target, field, .. } = &arg.kind else {
            return Err(error(span, "`has` takes a field selection: `has(a.b)`"));
        };
        match self.eval(target)? {
            Val::Map(members) => Ok(Val::Bool(members.contains_key(field.as_str()))),
            other => Err(error(
                target.span,
                format!("`has` needs a map, not {}", other.type_name()),
            )),
        }
    }

    /// `xs.map(x, e)`, `xs.filter(x, p)`, `xs.all(x, p)`, `xs.exists(x, p)` over a list (or
    /// the keys of a map). `all` and `exists` absorb errors as `&&` and `||` do.
    fn comprehension(
        &mut self,
        function: &str,
        range: &Expr,
        args: &[Expr],
        span: Span,
    ) -> Result<Val> {
        let [variable, body] = args else {
            return Err(error(
                span,
                format!("`{function}` takes a variable and an expression"),
            ));
        };
        let ExprKind::Ident { name } = &variable.kind else {
            return Err(error(
                variable.span,
                format!("`{function}` binds a variable name"),
            ));
        };
        let elements: Vec<Val> = match self.eval(range)? {
            Val::List(items) => items.iter().cloned().collect(),
            Val::Map(members) => members.keys().map(|k| Val::string(k.as_str())).collect(),
            other => return Err(no_overload(span, function, &[&other])),
        };
        let mut out = Vec::new();
        let mut first_error = None;
        let mut decided = None;
        for element in elements {
            self.charge(1, span)?;
            self.locals.push((name.clone(), element.clone()));
            let value = self.eval(body);
            self.locals.pop();
            match function {
                "map" => out.push(value?),
                "filter" => match value? {
                    Val::Bool(true) => out.push(element),
                    Val::Bool(false) => {}
                    other => return Err(filter_type(body, &other)),
                },
                _ => {
                    // `all` stops at a false, `exists` at a true.
                    let decides = function == "exists";
                    match value {
                        Ok(Val::Bool(b)) if b == decides => {
                            decided = Some(b);
                            break;
                        }
                        Ok(Val::Bool(_)) => {}
                        Ok(other) => {
                            first_error.get_or_insert(filter_type(body, &other));
                        }
                        Err(e) if self.left == 0 => return Err(e),
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                }
            }
        }
        Ok(match function {
            "map" | "filter" => Val::List(Rc::new(out)),
            _ => match (decided, first_error) {
                (Some(b), _) => Val::Bool(b),
                (None, Some(e)) => return Err(e),
                (None, None) => Val::Bool(function == "all"),
            },
        })
    }
}

fn filter_type(body: &Expr, other: &Val) -> EvalError {
    error(
        body.span,
        format!("a predicate must give a bool, not {}", other.type_name()),
    )
}

/// `target.field`: the member of a map, else an error.
fn field_of(target: &Val, field: &str, span: Span) -> Result<Val> {
    match target {
        Val::Map(members) => members
            .get(field)
            .cloned()
            .ok_or_else(|| error(span, format!("no such key: `{field}`"))),
        other => Err(error(
            span,
            format!(
                "`.{field}` reads a field of a map, not of {}",
                other.type_name()
            ),
        )),
    }
}

fn checked(value: Option<i64>, span: Span) -> Result<i64> {
    value.ok_or_else(|| error(span, "integer overflow"))
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// What a value costs to walk: its length for strings, lists and maps, else 1.
fn size_of(value: &Val) -> u64 {
    match value {
        Val::String(s) => s.len() as u64,
        Val::List(items) => items.len() as u64,
        Val::Map(members) => members.len() as u64,
        _ => 1,
    }
}

/// Two numbers by value, across int and double; `None` when either is not a number or is
/// NaN.
fn compare_numbers(a: &Val, b: &Val) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => Some(x.cmp(y)),
        (Val::Double(x), Val::Double(y)) => x.partial_cmp(y),
        (Val::Int(x), Val::Double(y)) => compare_int_double(*x, *y),
        (Val::Double(x), Val::Int(y)) => {
            compare_int_double(*y, *x).map(std::cmp::Ordering::reverse)
        }
        _ => None,
    }
}

/// An int against a double, exactly (an `i64` does not always fit a double).
fn compare_int_double(i: i64, d: f64) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering;
    if d.is_nan() {
        return None;
    }
    // 2^63 as a double; every double at or past it is above every i64, and below -2^63 below.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if d >= TWO_63 {
        return Some(Ordering::Less);
    }
    if d < -TWO_63 {
        return Some(Ordering::Greater);
    }
    let whole = d.trunc();
    // In range: `whole` is an exact i64.
    #[allow(clippy::cast_possible_truncation)]
    let t = whole as i64;
    Some(match i.cmp(&t) {
        Ordering::Equal if d > whole => Ordering::Less,
        Ordering::Equal if d < whole => Ordering::Greater,
        other => other,
    })
}

/// A double truncated toward zero, when the result is an int. As in CEL, the range is
/// open at both ends: `int(-9223372036854775808.0)` is an error too.
fn double_to_int(d: f64) -> Option<i64> {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    (d.is_finite() && d.trunc() > -TWO_63 && d.trunc() < TWO_63).then(|| {
        #[allow(clippy::cast_possible_truncation)]
        let i = d.trunc() as i64;
        i
    })
}

/// How a value is written into a template: a scalar as `string()` writes it (`null`,
/// `true`, `42`, `1.5`, the string itself); why not for a list or a map, which templates
/// do not interpolate.
pub fn template_text(v: &Val) -> Result<String, String> {
    Ok(match v {
        Val::Null => "null".to_owned(),
        Val::Bool(b) => b.to_string(),
        Val::Int(i) => i.to_string(),
        Val::Double(d) => format_double(*d),
        Val::String(s) => s.to_string(),
        other => {
            return Err(format!(
                "a template interpolates {}, which is not a scalar",
                other.type_name()
            ));
        }
    })
}

/// A double as `string()` writes it: the shortest form that reads back (`1.5`, `1e+21`),
/// as RFC 8785 and ECMAScript do, and `Infinity`, `-Infinity`, `NaN`.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        "NaN".to_owned()
    } else if d.is_infinite() {
        if d > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else if d == 0.0 {
        if d.is_sign_negative() { "-0" } else { "0" }.to_owned()
    } else {
        ryu_js::Buffer::new().format_finite(d).to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::parse_expression;
    use serde_json::json;

    fn eval_with(text: &str, input: serde_json::Value) -> Result<serde_json::Value, String> {
        let expr = parse_expression(text).map_err(|e| format!("syntax: {e:?}"))?;
        let mut bindings = Bindings::new();
        bindings.insert("input".into(), Val::from_json(&input));
        evaluate(&expr, &bindings, DEFAULT_BUDGET)
            .map_err(|e| e.message)?
            .to_json()
    }

    fn eval(text: &str) -> serde_json::Value {
        eval_with(text, json!({})).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn fails(text: &str) -> String {
        eval_with(text, json!({ "a": 1, "xs": [1, 2] })).expect_err(text)
    }

    #[test]
    fn integer_arithmetic_is_checked_and_truncates() {
        assert_eq!(eval("7 / 2"), json!(3));
        assert_eq!(eval("-7 / 2"), json!(-3));
        assert_eq!(eval("-7 % 2"), json!(-1));
        assert_eq!(eval("7 % -2"), json!(1));
        assert_eq!(eval("2 * 3 + 1 - 4"), json!(3));
        assert!(fails("9223372036854775807 + 1").contains("overflow"));
        assert!(fails("-9223372036854775807 - 2").contains("overflow"));
        assert!(fails("1 / 0").contains("division by zero"));
        assert!(fails("1 % 0").contains("modulus by zero"));
        assert!(fails("4611686018427387904 * 2").contains("overflow"));
    }

    #[test]
    fn no_implicit_conversion_between_int_and_double() {
        assert!(fails("1 + 1.0").contains("no such overload"));
        assert!(fails("1.5 % 1.0").contains("no such overload"));
        assert_eq!(eval("1.5 + 1.0"), json!(2.5));
        assert_eq!(eval("double(1) + 1.0"), json!(2.0));
        assert_eq!(eval("int(2.9) + 1"), json!(3));
        assert_eq!(eval("int(-2.9)"), json!(-2));
        // Comparisons and equality cross them.
        assert_eq!(eval("1 == 1.0"), json!(true));
        assert_eq!(eval("1 < 1.5 && 2.5 > 2 && 3 >= 3.0"), json!(true));
        assert_eq!(eval("9007199254740993 > 9007199254740992.0"), json!(true));
        assert!(fails("1.0 / 0.0").contains("no JSON form"));
    }

    #[test]
    fn logic_absorbs_errors_like_cel() {
        assert_eq!(
            eval_with("false && input.missing", json!({})),
            Ok(json!(false))
        );
        assert_eq!(
            eval_with("input.missing && false", json!({})),
            Ok(json!(false))
        );
        assert_eq!(
            eval_with("input.missing || true", json!({})),
            Ok(json!(true))
        );
        assert!(eval_with("input.missing || false", json!({})).is_err());
        assert_eq!(eval_with("1 || true", json!({})), Ok(json!(true)));
        assert!(fails("1 && true").contains("need bools"));
        // Only the branch taken is evaluated.
        assert_eq!(eval("true ? 1 : 1 / 0"), json!(1));
        assert!(fails("1 ? 2 : 3").contains("must be a bool"));
    }

    #[test]
    fn fields_indices_and_has() {
        let input = json!({ "items": [{"title": "a"}, {"title": "b", "label": "bug"}], "n": 2 });
        let get = |t: &str| eval_with(t, input.clone());
        assert_eq!(get("input.items[1].title"), Ok(json!("b")));
        assert_eq!(get("input['n']"), Ok(json!(2)));
        assert_eq!(get("has(input.items[1].label)"), Ok(json!(true)));
        assert_eq!(get("has(input.items[0].label)"), Ok(json!(false)));
        assert!(
            get("input.items[0].label")
                .unwrap_err()
                .contains("no such key")
        );
        assert!(get("input.items[2]").unwrap_err().contains("out of range"));
        assert!(get("input.items[-1]").unwrap_err().contains("out of range"));
        assert!(get("input.n.x").unwrap_err().contains("not of int"));
        assert!(get("nope").unwrap_err().contains("no variable"));
        assert_eq!(get("'n' in input && 2 in [1, 2]"), Ok(json!(true)));
    }

    #[test]
    fn every_function_of_the_whitelist() {
        assert_eq!(eval("size('héllo')"), json!(5));
        assert_eq!(eval("[1, 2, 3].size()"), json!(3));
        assert_eq!(eval("size({'a': 1})"), json!(1));
        assert_eq!(
            eval("string(1.5) + string(2) + string(true) + string(null)"),
            json!("1.52truenull")
        );
        assert_eq!(eval("string(1e21)"), json!("1e+21"));
        assert_eq!(eval("int('42') + int(' 1'.trim())"), json!(43));
        assert!(fails("int('4x')").contains("not an int"));
        assert!(fails("int(1e19)").contains("out of the int range"));
        assert_eq!(eval("double('2.5')"), json!(2.5));
        assert_eq!(
            eval("'abc'.contains('b') && 'abc'.startsWith('ab') && 'abc'.endsWith('bc')"),
            json!(true)
        );
        assert_eq!(eval("'AbC'.lower() + 'aBc'.upper()"), json!("abcABC"));
        assert_eq!(eval("'  x '.trim()"), json!("x"));
        assert_eq!(
            eval("['a', 'b'].join() + ['a', 'b'].join('-')"),
            json!("aba-b")
        );
        assert!(fails("['a', 1].join()").contains("no such overload"));
        assert_eq!(eval("'a,b,,c'.split(',')"), json!(["a", "b", "", "c"]));
        assert_eq!(eval("'ab'.split('')"), json!(["a", "b"]));
        assert_eq!(
            eval("'issue-12'.matches('^issue-[0-9]+$') && matches('x', 'x')"),
            json!(true)
        );
        assert!(fails("'x'.matches('(')").contains("invalid regular expression"));
        assert_eq!(eval("[1, 2, 3].map(x, x * 2)"), json!([2, 4, 6]));
        assert_eq!(eval("[1, 2, 3].filter(x, x > 1)"), json!([2, 3]));
        assert_eq!(
            eval("[1, 2, 3].all(x, x > 0) && [1, 2, 3].exists(x, x == 2)"),
            json!(true)
        );
        assert_eq!(eval("{'a': 1, 'b': 2}.map(k, k)"), json!(["a", "b"]));
        // `all` and `exists` absorb errors when another element decides.
        assert_eq!(eval("[0, 1].exists(x, 1 / x == 1)"), json!(true));
        assert_eq!(eval("[0, 1].all(x, 1 / x == 5)"), json!(false));
        assert!(fails("[0].all(x, 1 / x == 1)").contains("division by zero"));
        assert!(fails("[1].filter(x, x)").contains("must give a bool"));
    }

    #[test]
    fn maps_lists_and_equality() {
        assert_eq!(
            eval("{'a': [1, {'b': 2.5}]}"),
            json!({"a": [1, {"b": 2.5}]})
        );
        assert!(fails("{'a': 1, 'a': 2}").contains("repeated map key"));
        assert!(fails("{1: 2}").contains("must be a string"));
        assert_eq!(eval("[1, 2] + [3] == [1, 2, 3]"), json!(true));
        assert_eq!(eval("{'a': 1} == {'a': 1.0}"), json!(true));
        assert_eq!(eval("[1] == ['1']"), json!(false));
        assert_eq!(eval("null == null && 'a' != 'b'"), json!(true));
        assert_eq!(eval("'b' > 'a' && true > false"), json!(true));
        assert!(fails("[1] < [2]").contains("no such overload"));
        assert!(fails("!1").contains("no such overload"));
        assert!(fails("-(-9223372036854775807 - 1)").contains("overflow"));
    }

    /// `matches` in a macro body: one pattern for every element, and more distinct patterns
    /// than the cache keeps, all give the right answers.
    #[test]
    fn matches_in_a_macro_body() {
        let words: Vec<String> = (0..200).map(|i| format!("w{i}")).collect();
        let input = json!({ "words": words });
        assert_eq!(
            eval_with(
                "input.words.filter(w, w.matches('^w1[0-9]$')).size()",
                input.clone()
            ),
            Ok(json!(10))
        );
        // 200 patterns, one per word: each matches its own word only.
        assert_eq!(
            eval_with(
                "input.words.all(w, w.matches('^' + w + '$') && !'x'.matches(w))",
                input
            ),
            Ok(json!(true))
        );
    }

    /// A budget bounds the work: a long list walked many times stops with an error.
    #[test]
    fn the_budget_stops_long_evaluations() {
        let expr = parse_expression("input.xs.map(x, input.xs.map(y, y)).size()").unwrap();
        let mut bindings = Bindings::new();
        bindings.insert(
            "input".into(),
            Val::from_json(&json!({ "xs": (0..2000).collect::<Vec<_>>() })),
        );
        let err = evaluate(&expr, &bindings, 100_000).unwrap_err();
        assert!(err.message.contains("cost budget"), "{err:?}");
        assert_eq!(
            evaluate(&expr, &bindings, DEFAULT_BUDGET)
                .unwrap()
                .to_json(),
            Ok(json!(2000))
        );
    }
}
