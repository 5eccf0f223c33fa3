//! Parsing expressions and template strings with the pest grammar in `grammar.pest`.

use pest::Parser as _;
use pest::error::{ErrorVariant, InputLocation};
use pest::iterators::Pair;

use super::ast::{BinaryOp, Expr, ExprKind, UnaryOp};
use crate::span::Span;

/// The generated parser (`Rule` names the grammar's rules).
#[allow(missing_docs)] // reason: pest_derive generates the `Rule` enum without docs
mod grammar {
    #[derive(pest_derive::Parser)]
    #[grammar = "expr/grammar.pest"]
    pub(super) struct Grammar;
}
use grammar::{Grammar, Rule};

mod fast;

/// How deeply brackets, braces, parentheses and `?:` may nest in one expression. Parsing
/// is recursive; the limit keeps it safe on any input.
pub const MAX_NESTING: usize = 32;

/// How deep the syntax tree of one expression may be. Every operator, prefix operator,
/// call, member access and index is one level, so a chain of 200 `+` is 200 levels deep
/// even without a bracket. Every walk over a tree (typing, cost, the compiled plan,
/// evaluation) recurses at most this deep.
pub const MAX_DEPTH: usize = 64;

/// What kind of problem a [`SyntaxError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyntaxErrorKind {
    /// The text is not an expression (`steps.x.output = 0`, an unclosed `${`).
    Syntax,
    /// The expression is well-formed but past a limit: nested deeper than [`MAX_NESTING`]
    /// or a tree deeper than [`MAX_DEPTH`] (`a + a + …` with 100 terms).
    TooComplex,
}

/// A syntax error, with the span of the offending bytes in the text that was parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntaxError {
    /// The offending bytes.
    pub span: Span,
    /// What is wrong.
    pub message: String,
    /// How to fix it, when there is something to say.
    pub help: Option<String>,
    /// Whether it is a syntax error or a limit.
    pub kind: SyntaxErrorKind,
}

/// A JSON string value, as LWIR reads it.
#[derive(Clone, Debug, PartialEq)]
pub enum StringValue {
    /// No interpolation: the string is a literal (with `$${` already turned into `${`).
    Literal(String),
    /// Exactly `${ expr }`: an expression that keeps `expr`'s type.
    Expression(Expr),
    /// Text mixed with interpolations: a string.
    Template(Vec<Part>),
}

/// A piece of a template.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    /// Literal text.
    Text(String),
    /// An interpolated expression.
    Expr(Expr),
}

/// Parses a whole expression (no `${ }` around it).
pub fn parse_expression(text: &str) -> Result<Expr, SyntaxError> {
    check_nesting(text, 0, false)?;
    if let Some(expr) = fast::expression(text) {
        return Ok(expr);
    }
    parse_expression_pest(text)
}

/// The grammar's reading of an expression, without the hand-written reader in front of it:
/// what [`parse_expression`] must agree with (the differential tests and fuzz target).
#[doc(hidden)]
pub fn parse_expression_reference(text: &str) -> Result<Expr, SyntaxError> {
    check_nesting(text, 0, false)?;
    parse_expression_pest(text)
}

fn parse_expression_pest(text: &str) -> Result<Expr, SyntaxError> {
    let mut pairs =
        Grammar::parse(Rule::expression, text).map_err(|e| syntax_error(e, text, 0, false))?;
    let expression = pairs.next().and_then(|p| p.into_inner().next());
    build(expression, 0)
}

/// Reads a JSON string value: a literal, an expression (`${ expr }`) or a template.
/// Stops at the first syntax error.
pub fn parse_string_value(text: &str) -> Result<StringValue, SyntaxError> {
    string_value(text, true)
}

/// [`parse_string_value`] with every interpolation read by the grammar alone: what it must
/// agree with (the differential tests and fuzz target).
#[doc(hidden)]
pub fn parse_string_value_reference(text: &str) -> Result<StringValue, SyntaxError> {
    string_value(text, false)
}

fn string_value(text: &str, fast: bool) -> Result<StringValue, SyntaxError> {
    let bytes = text.as_bytes();
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut i = 0;
    let mut run = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        if text[i..].starts_with("$${") {
            literal.push_str(&text[run..i]);
            literal.push_str("${");
            i += 3;
            run = i;
        } else if text[i..].starts_with("${") {
            literal.push_str(&text[run..i]);
            if !literal.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut literal)));
            }
            let (expr, end) = if fast {
                parse_interpolation(text, i)?
            } else {
                parse_interpolation_pest(text, i)?
            };
            parts.push(Part::Expr(expr));
            i = end;
            run = i;
        } else {
            i += 1;
        }
    }
    literal.push_str(&text[run..]);
    if parts.is_empty() {
        return Ok(StringValue::Literal(literal));
    }
    if !literal.is_empty() {
        parts.push(Part::Text(literal));
    }
    if let [Part::Expr(_)] = parts.as_slice() {
        // One interpolation and no text: it spans the whole string.
        if let Some(Part::Expr(expr)) = parts.pop() {
            return Ok(StringValue::Expression(expr));
        }
    }
    Ok(StringValue::Template(parts))
}

/// Parses the interpolation whose `${` is at `at`; returns it and the offset after its `}`.
/// A plain path is read by [`simple_path`], any other expression that parses by the
/// hand-written reader ([`fast`]); an error, or anything that reader leaves, by the grammar.
fn parse_interpolation(text: &str, at: usize) -> Result<(Expr, usize), SyntaxError> {
    if let Some(parsed) = simple_path(text, at + 2) {
        return Ok(parsed);
    }
    check_nesting(&text[at + 2..], at + 2, true)?;
    match fast::interpolation(text, at + 2) {
        Some(parsed) => Ok(parsed),
        None => parse_interpolation_pest(text, at),
    }
}

/// The longest chain [`simple_path`] reads itself; longer ones go to the grammar (which
/// bounds their depth).
const MAX_SIMPLE_PATH: usize = 16;

/// The interpolation at `base` (just after its `${`) when it is a plain path — a name and
/// `.field`s, with blanks around the tokens, then `}` — read without the grammar: most
/// interpolations of a draft are such paths (`input.repo`, `steps.fetch.output.items`), and
/// this is the tree and the end the grammar gives for them, spans included. Anything else
/// (a literal, a call, an operator, an index, a longer chain) is `None`, for the grammar.
fn simple_path(text: &str, base: usize) -> Option<(Expr, usize)> {
    let bytes = text.as_bytes();
    let blank = |b: u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let skip = |mut i: usize| {
        while i < bytes.len() && blank(bytes[i]) {
            i += 1;
        }
        i
    };
    let ident = |i: usize| -> Option<usize> {
        let first = *bytes.get(i)?;
        if !(first.is_ascii_alphabetic() || first == b'_') {
            return None;
        }
        let mut j = i + 1;
        while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
            j += 1;
        }
        Some(j)
    };
    let start = skip(base);
    let end = ident(start)?;
    let name = &text[start..end];
    if matches!(name, "null" | "true" | "false") {
        return None;
    }
    let mut expr = Expr {
        kind: ExprKind::Ident {
            name: name.to_owned(),
        },
        span: Span::new(start, end),
    };
    let mut i = skip(end);
    let mut links = 1;
    while bytes.get(i) == Some(&b'.') {
        let field_start = skip(i + 1);
        let field_end = ident(field_start)?;
        links += 1;
        if links > MAX_SIMPLE_PATH {
            return None;
        }
        expr = Expr {
            kind: ExprKind::Member {
                target: Box::new(expr),
                field: text[field_start..field_end].to_owned(),
                field_span: Span::new(field_start, field_end),
            },
            span: Span::new(start, field_end),
        };
        i = skip(field_end);
    }
    (bytes.get(i) == Some(&b'}')).then_some((expr, i + 1))
}

/// [`parse_interpolation`] through the grammar.
fn parse_interpolation_pest(text: &str, at: usize) -> Result<(Expr, usize), SyntaxError> {
    let base = at + 2;
    let rest = &text[base..];
    check_nesting(rest, base, true)?;
    let mut pairs = Grammar::parse(Rule::interpolation, rest).map_err(|e| {
        let mut error = syntax_error(e, rest, base, true);
        if error.span.start() == text.len() {
            error.span = Span::new(at, at + 2);
            error.message = "`${` is not closed".to_owned();
            error.help =
                Some("close the interpolation with `}`; write `$${` for a literal `${`".to_owned());
        }
        error
    })?;
    let pair = pairs.next();
    let end = pair
        .as_ref()
        .map_or(text.len(), |p| base + p.as_span().end());
    let expr = build(pair.and_then(|p| p.into_inner().next()), base)?;
    Ok((expr, end))
}

/// Rejects nesting deeper than [`MAX_NESTING`] before the recursive parser sees it. With
/// `interpolation`, stops at the `}` that closes it: a template of n interpolations is then
/// scanned once in all, not n times to its end.
fn check_nesting(text: &str, base: usize, interpolation: bool) -> Result<(), SyntaxError> {
    // The open brackets and `?`s, innermost last; a `:` closes a `?` but not a map's `{`.
    let mut open: Vec<u8> = Vec::new();
    // The `else` branches of `?:` open at each level of `open` (one more entry than `open`):
    // `a ? b : c ? d : e` nests the second conditional in the first without a bracket, and
    // the grammar recurses once for each. A `,`, a map's `:` or the closing bracket ends them.
    let mut tails: Vec<usize> = vec![0];
    let mut chained = 0usize;
    let mut quote: Option<u8> = None;
    let mut escaped = false;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if let Some(q) = quote {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                _ if b == q => quote = None,
                _ => {}
            }
            continue;
        }
        match b {
            b'\'' | b'"' => quote = Some(b),
            b'(' | b'[' | b'{' | b'?' => {
                open.push(b);
                tails.push(0);
                if open.len() > MAX_NESTING {
                    return Err(SyntaxError {
                        span: Span::new(base + i, base + i + 1),
                        message: format!("expression nested deeper than {MAX_NESTING} levels"),
                        help: Some("split it into steps".to_owned()),
                        kind: SyntaxErrorKind::TooComplex,
                    });
                }
            }
            b':' | b',' => {
                // What was open since the `?`, the `{` or the `,` ends here.
                if let Some(inner) = tails.last_mut() {
                    chained -= std::mem::take(inner);
                }
                if b == b':' && open.last() == Some(&b'?') {
                    open.pop();
                    tails.pop();
                    if let Some(level) = tails.last_mut() {
                        *level += 1;
                    }
                    chained += 1;
                    if chained > MAX_CHAINED_CONDITIONALS {
                        return Err(SyntaxError {
                            span: Span::new(base + i, base + i + 1),
                            message: format!(
                                "expression is more than {MAX_DEPTH} levels deep (each `?:` of \
                                 a chain is one level)"
                            ),
                            help: Some("split it into steps".to_owned()),
                            kind: SyntaxErrorKind::TooComplex,
                        });
                    }
                }
            }
            b')' | b']' | b'}' => {
                // A `?` left open inside the bracket is the parser's to report.
                while open.last() == Some(&b'?') {
                    open.pop();
                    chained -= tails.pop().unwrap_or(0);
                }
                if open.pop().is_some() {
                    chained -= tails.pop().unwrap_or(0);
                } else if b == b'}' && interpolation {
                    break;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// How many `?:` may be chained (`a ? b : c ? d : …`, each nested in the one before) before
/// the grammar sees the text: twice [`MAX_DEPTH`], so no tree within the depth limit is
/// refused here, and the grammar's recursion stays bounded.
const MAX_CHAINED_CONDITIONALS: usize = 2 * MAX_DEPTH;

fn syntax_error(
    error: pest::error::Error<Rule>,
    text: &str,
    base: usize,
    in_interpolation: bool,
) -> SyntaxError {
    let at = match error.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    if let Some(unclosed) = unclosed_string(text, at, base) {
        return unclosed;
    }
    let expected = match &error.variant {
        ErrorVariant::ParsingError { positives, .. } => expected(positives, in_interpolation),
        ErrorVariant::CustomError { message } => message.clone(),
    };
    let found = text[at..].chars().next();
    let end = at + found.map_or(0, char::len_utf8);
    let found = match found {
        None => "the end".to_owned(),
        Some(c) => format!("`{c}`"),
    };
    let help = match text[at..].chars().next() {
        Some('=') if text[at..].starts_with("=") && !text[at..].starts_with("==") => {
            Some("compare with `==`; expressions cannot assign".to_owned())
        }
        _ => None,
    };
    SyntaxError {
        span: Span::new(base + at, base + end),
        message: format!("expected {expected}, found {found}"),
        help,
        kind: SyntaxErrorKind::Syntax,
    }
}

/// When the parser stopped at a quote whose string literal is not closed: at a raw line
/// break (the grammar forbids them in strings, and a JSON `"\n"` is one by the time the
/// expression is read), or nowhere at all.
fn unclosed_string(text: &str, at: usize, base: usize) -> Option<SyntaxError> {
    let quote = text[at..]
        .chars()
        .next()
        .filter(|c| matches!(c, '\'' | '"'))?;
    let mut escaped = false;
    for (i, c) in text[at + 1..].char_indices() {
        let pos = at + 1 + i;
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '\n' | '\r' => {
                return Some(SyntaxError {
                    span: Span::new(base + pos, base + pos + 1),
                    message: format!(
                        "the string literal opened by `{quote}` is not closed before this line break: a CEL string literal cannot contain a raw line break"
                    ),
                    help: Some(
                        "in the JSON file write `\\\\n`, which JSON decodes into the CEL escape `\\n` (a line break in the string); JSON decodes `\\n` into a real line break before CEL reads the expression".to_owned(),
                    ),
                    kind: SyntaxErrorKind::Syntax,
                });
            }
            _ if c == quote => return None,
            _ => {}
        }
    }
    Some(SyntaxError {
        span: Span::new(base + at, base + at + 1),
        message: format!("the string literal opened by `{quote}` is not closed"),
        help: Some(format!(
            "close it with `{quote}`; write `\\{quote}` for a `{quote}` inside it"
        )),
        kind: SyntaxErrorKind::Syntax,
    })
}

/// What the parser expected, in words.
fn expected(positives: &[Rule], in_interpolation: bool) -> String {
    let mut names: Vec<&str> = Vec::new();
    let mut operand = false;
    for rule in positives {
        let name = match rule {
            Rule::or_op | Rule::and_op | Rule::rel_op | Rule::add_op | Rule::mul_op => {
                "an operator"
            }
            Rule::method_call | Rule::field | Rule::index => "`.` or `[`",
            Rule::EOI => "the end of the expression",
            Rule::entry => "a map entry",
            Rule::arguments => "an argument",
            Rule::identifier => "a name",
            _ => {
                operand = true;
                "an expression"
            }
        };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    if in_interpolation && !operand {
        names.push("`}`");
    }
    match names.split_last() {
        None => "an expression".to_owned(),
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

fn span_of(pair: &Pair<'_, Rule>, base: usize) -> Span {
    let s = pair.as_span();
    Span::new(base + s.start(), base + s.end())
}

fn missing(base: usize) -> SyntaxError {
    SyntaxError {
        span: Span::new(base, base),
        message: "expected an expression".to_owned(),
        help: None,
        kind: SyntaxErrorKind::Syntax,
    }
}

/// An expression and the depth of its tree (a leaf is 1).
type Built = (Expr, usize);

/// Builds the syntax tree of `pair`, refusing a tree deeper than [`MAX_DEPTH`] as soon as
/// it gets there: chains (`a + a + …`, `!!…x`, `.x.x…`) are folded iteratively, and every
/// walk over the finished tree may then recurse safely.
fn build(pair: Option<Pair<'_, Rule>>, base: usize) -> Result<Expr, SyntaxError> {
    build_node(pair, base).map(|(expr, _)| expr)
}

fn deeper(depth: usize, span: Span) -> Result<usize, SyntaxError> {
    let depth = depth + 1;
    if depth > MAX_DEPTH {
        return Err(SyntaxError {
            span,
            message: format!(
                "expression is more than {MAX_DEPTH} levels deep (each operator, call, member \
                 access or index of a chain is one level)"
            ),
            help: Some(
                "split it into steps, or use a macro such as `.all(x, …)` instead of a long chain"
                    .to_owned(),
            ),
            kind: SyntaxErrorKind::TooComplex,
        });
    }
    Ok(depth)
}

fn build_node(pair: Option<Pair<'_, Rule>>, base: usize) -> Result<Built, SyntaxError> {
    let pair = pair.ok_or_else(|| missing(base))?;
    let span = span_of(&pair, base);
    let leaf = |kind| Ok((Expr { kind, span }, 1));
    match pair.as_rule() {
        Rule::conditional => {
            let mut inner = pair.into_inner();
            let (condition, d0) = build_node(inner.next(), base)?;
            match (inner.next(), inner.next()) {
                (Some(then), Some(otherwise)) => {
                    let (then, d1) = build_node(Some(then), base)?;
                    let (otherwise, d2) = build_node(Some(otherwise), base)?;
                    let depth = deeper(d0.max(d1).max(d2), span)?;
                    let kind = ExprKind::Conditional {
                        condition: Box::new(condition),
                        then: Box::new(then),
                        otherwise: Box::new(otherwise),
                    };
                    Ok((Expr { kind, span }, depth))
                }
                _ => Ok((condition, d0)),
            }
        }
        Rule::logical_or
        | Rule::logical_and
        | Rule::relation
        | Rule::addition
        | Rule::multiplication => {
            let mut inner = pair.into_inner();
            let (mut lhs, mut depth) = build_node(inner.next(), base)?;
            while let (Some(op), Some(rhs)) = (inner.next(), inner.next()) {
                let (rhs, rhs_depth) = build_node(Some(rhs), base)?;
                let span = Span::new(lhs.span.start(), rhs.span.end());
                depth = deeper(depth.max(rhs_depth), span)?;
                lhs = Expr {
                    kind: ExprKind::Binary {
                        op: binary_op(op.as_str()),
                        lhs: Box::new(lhs),
                        rhs: Box::new(rhs),
                    },
                    span,
                };
            }
            Ok((lhs, depth))
        }
        Rule::unary => {
            let inner: Vec<Pair<'_, Rule>> = pair.into_inner().collect();
            let (operand, mut ops) = inner.split_last().ok_or_else(|| missing(base))?;
            // `-9223372036854775808` is a literal (the least int), not the negation of an
            // out-of-range one.
            let least = operand.as_str().trim() == "9223372036854775808"
                && ops.last().is_some_and(|op| op.as_str() == "-");
            let (mut result, mut depth) =
                if let (true, Some((minus, rest))) = (least, ops.split_last()) {
                    ops = rest;
                    let literal = Expr {
                        kind: ExprKind::Int { value: i64::MIN },
                        span: Span::new(
                            base + minus.as_span().start(),
                            base + operand.as_span().start() + "9223372036854775808".len(),
                        ),
                    };
                    (literal, 1)
                } else {
                    build_node(Some(operand.clone()), base)?
                };
            for op in ops.iter().rev() {
                let start = base + op.as_span().start();
                let op = if op.as_str() == "!" {
                    UnaryOp::Not
                } else {
                    UnaryOp::Negate
                };
                let span = Span::new(start, result.span.end());
                depth = deeper(depth, span)?;
                result = Expr {
                    span,
                    kind: ExprKind::Unary {
                        op,
                        operand: Box::new(result),
                    },
                };
            }
            Ok((result, depth))
        }
        Rule::member => {
            let mut inner = pair.into_inner();
            let (mut target, mut depth) = build_node(inner.next(), base)?;
            for postfix in inner {
                let end = base + postfix.as_span().end();
                let node_span = Span::new(span.start(), end);
                let rule = postfix.as_rule();
                let mut parts = postfix.into_inner();
                let (kind, child_depth) = match rule {
                    Rule::field => {
                        let name = parts.next().ok_or_else(|| missing(base))?;
                        let kind = ExprKind::Member {
                            target: Box::new(target),
                            field: name.as_str().to_owned(),
                            field_span: span_of(&name, base),
                        };
                        (kind, depth)
                    }
                    Rule::method_call => {
                        let name = parts.next().ok_or_else(|| missing(base))?;
                        let (args, args_depth) = arguments(parts.next(), base)?;
                        let kind = ExprKind::Call {
                            target: Some(Box::new(target)),
                            function: name.as_str().to_owned(),
                            function_span: span_of(&name, base),
                            args,
                        };
                        (kind, depth.max(args_depth))
                    }
                    _ => {
                        let (index, index_depth) = build_node(parts.next(), base)?;
                        let kind = ExprKind::Index {
                            target: Box::new(target),
                            index: Box::new(index),
                        };
                        (kind, depth.max(index_depth))
                    }
                };
                depth = deeper(child_depth, node_span)?;
                target = Expr {
                    kind,
                    span: node_span,
                };
            }
            Ok((target, depth))
        }
        Rule::function_call => {
            let mut inner = pair.into_inner();
            let name = inner.next().ok_or_else(|| missing(base))?;
            let (args, args_depth) = arguments(inner.next(), base)?;
            let depth = deeper(args_depth, span)?;
            let kind = ExprKind::Call {
                target: None,
                function: name.as_str().to_owned(),
                function_span: span_of(&name, base),
                args,
            };
            Ok((Expr { kind, span }, depth))
        }
        Rule::parenthesized => {
            let (inner, depth) = build_node(pair.into_inner().next(), base)?;
            Ok((
                Expr {
                    kind: inner.kind,
                    span,
                },
                depth,
            ))
        }
        Rule::list => {
            let mut items = Vec::new();
            let mut depth = 0;
            for p in pair.into_inner() {
                let (item, d) = build_node(Some(p), base)?;
                depth = depth.max(d);
                items.push(item);
            }
            let depth = deeper(depth, span)?;
            Ok((
                Expr {
                    kind: ExprKind::List { items },
                    span,
                },
                depth,
            ))
        }
        Rule::map => {
            let mut entries = Vec::new();
            let mut depth = 0;
            for entry in pair.into_inner() {
                let mut kv = entry.into_inner();
                let (key, dk) = build_node(kv.next(), base)?;
                let (value, dv) = build_node(kv.next(), base)?;
                depth = depth.max(dk).max(dv);
                entries.push((key, value));
            }
            let depth = deeper(depth, span)?;
            Ok((
                Expr {
                    kind: ExprKind::Map { entries },
                    span,
                },
                depth,
            ))
        }
        Rule::identifier => leaf(ExprKind::Ident {
            name: pair.as_str().to_owned(),
        }),
        Rule::null => leaf(ExprKind::Null),
        Rule::boolean => leaf(ExprKind::Bool {
            value: pair.as_str() == "true",
        }),
        Rule::number => Ok((number(pair.as_str(), span)?, 1)),
        Rule::string => {
            let value = decode_string(pair.as_str(), span.start())?;
            leaf(ExprKind::String { value })
        }
        _ => Err(missing(span.start())),
    }
}

/// The arguments of a call and the depth of the deepest.
fn arguments(pair: Option<Pair<'_, Rule>>, base: usize) -> Result<(Vec<Expr>, usize), SyntaxError> {
    let mut args = Vec::new();
    let mut depth = 0;
    if let Some(pair) = pair {
        for p in pair.into_inner() {
            let (arg, d) = build_node(Some(p), base)?;
            depth = depth.max(d);
            args.push(arg);
        }
    }
    Ok((args, depth))
}

fn binary_op(text: &str) -> BinaryOp {
    match text {
        "||" => BinaryOp::Or,
        "&&" => BinaryOp::And,
        "==" => BinaryOp::Eq,
        "!=" => BinaryOp::Ne,
        "<" => BinaryOp::Lt,
        "<=" => BinaryOp::Le,
        ">" => BinaryOp::Gt,
        ">=" => BinaryOp::Ge,
        "in" => BinaryOp::In,
        "+" => BinaryOp::Add,
        "-" => BinaryOp::Sub,
        "*" => BinaryOp::Mul,
        "/" => BinaryOp::Div,
        _ => BinaryOp::Rem,
    }
}

fn number(text: &str, span: Span) -> Result<Expr, SyntaxError> {
    let out_of_range = || SyntaxError {
        span,
        message: format!("number `{text}` is out of range"),
        help: Some("integers are 64-bit signed; doubles must be finite".to_owned()),
        kind: SyntaxErrorKind::Syntax,
    };
    let is_double =
        !(text.starts_with("0x") || text.starts_with("0X")) && text.contains(['.', 'e', 'E']);
    let kind = if is_double {
        let value: f64 = text.parse().map_err(|_| out_of_range())?;
        if !value.is_finite() {
            return Err(out_of_range());
        }
        ExprKind::Double { value }
    } else if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        ExprKind::Int {
            value: i64::from_str_radix(hex, 16).map_err(|_| out_of_range())?,
        }
    } else {
        ExprKind::Int {
            value: text.parse().map_err(|_| out_of_range())?,
        }
    };
    Ok(Expr { kind, span })
}

/// Decodes a quoted CEL string literal (quotes included) starting at `start`.
fn decode_string(raw: &str, start: usize) -> Result<String, SyntaxError> {
    let inner = &raw[1..raw.len() - 1];
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let at = start + 1 + i;
        let bad = |len: usize, message: String| {
            SyntaxError {
            span: Span::new(at, at + len),
            message,
            help: Some(
                "escapes are \\\\ \\' \\\" \\n \\r \\t \\b \\f \\v \\a \\? \\` \\xHH \\uHHHH \\UHHHHHHHH and \\ooo".to_owned(),
            ),
            kind: SyntaxErrorKind::Syntax,
        }
        };
        let Some((_, e)) = chars.next() else {
            return Err(bad(1, "unfinished escape".to_owned()));
        };
        let simple = match e {
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            '?' => Some('?'),
            '`' => Some('`'),
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            continue;
        }
        let (digits, radix) = match e {
            'x' | 'X' => (2, 16),
            'u' => (4, 16),
            'U' => (8, 16),
            '0'..='3' => (2, 8),
            _ => return Err(bad(1 + e.len_utf8(), format!("unknown escape `\\{e}`"))),
        };
        let mut value = if radix == 8 {
            e.to_digit(8).unwrap_or(0)
        } else {
            0
        };
        for _ in 0..digits {
            let digit = chars.peek().and_then(|&(_, d)| d.to_digit(radix));
            let Some(d) = digit else {
                return Err(bad(2, format!("`\\{e}` needs {digits} more digits")));
            };
            value = value * radix + d;
            chars.next();
        }
        let len = 2 + digits as usize;
        match char::from_u32(value) {
            Some(c) => out.push(c),
            None => {
                return Err(bad(
                    len,
                    format!("escape does not name a Unicode character (U+{value:X})"),
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod simple_path_tests {
    use super::*;

    /// The same tree, spans and end as the grammar, for paths and for what is not one.
    #[test]
    fn a_plain_path_reads_as_the_grammar_reads_it() {
        let cases = [
            "${input}",
            "${ input.repo }",
            "${steps.fetch.output.items}",
            "x ${ a . b .c } y",
            "${\n\tinput\n.\nrepo\n}",
            "${ _a1.B_2 }",
            "${ nullable.truex }",
            "${ x.true }",
            "${ null }",
            "${ true }",
            "${ f(x) }",
            "${ a.b() }",
            "${ a[0] }",
            "${ a + b }",
            "${ a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t }",
            "${ a. }",
            "${ a.1 }",
            "${ a b }",
            "${ 1 }",
            "${ 'x' }",
            "${ a }${ b.c }",
            "${ é }",
            "${ a.b",
        ];
        for text in cases {
            let mut at = 0;
            while let Some(offset) = text[at..].find("${") {
                let start = at + offset;
                let fast = simple_path(text, start + 2);
                let slow = parse_interpolation_pest(text, start).ok();
                if let Some(fast) = &fast {
                    assert_eq!(Some(fast), slow.as_ref(), "{text:?} at {start}");
                    assert_eq!(
                        format!("{:?}", fast.0),
                        format!("{:?}", slow.as_ref().unwrap().0),
                        "spans of {text:?}"
                    );
                }
                match slow {
                    Some((_, end)) => at = end,
                    None => break,
                }
            }
        }
        assert!(simple_path("${ input.repo }", 2).is_some());
        assert!(simple_path("${ a.b() }", 2).is_none());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Expr {
        parse_expression(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    fn error(text: &str) -> SyntaxError {
        parse_expression(text).expect_err(text)
    }

    /// A compact rendering of the tree, to assert structure and precedence.
    fn sexp(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Null => "null".into(),
            ExprKind::Bool { value } => value.to_string(),
            ExprKind::Int { value } => value.to_string(),
            ExprKind::Double { value } => format!("{value:?}"),
            ExprKind::String { value } => format!("{value:?}"),
            ExprKind::List { items } => {
                format!("[{}]", items.iter().map(sexp).collect::<Vec<_>>().join(" "))
            }
            ExprKind::Map { entries } => format!(
                "{{{}}}",
                entries
                    .iter()
                    .map(|(k, v)| format!("{}:{}", sexp(k), sexp(v)))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            ExprKind::Ident { name } => name.clone(),
            ExprKind::Member { target, field, .. } => format!("{}.{field}", sexp(target)),
            ExprKind::Index { target, index } => format!("{}[{}]", sexp(target), sexp(index)),
            ExprKind::Call {
                target,
                function,
                args,
                ..
            } => format!(
                "({}{function} {})",
                target
                    .as_ref()
                    .map(|t| format!("{}.", sexp(t)))
                    .unwrap_or_default(),
                args.iter().map(sexp).collect::<Vec<_>>().join(" ")
            ),
            ExprKind::Unary { op, operand } => format!("({op:?} {})", sexp(operand)),
            ExprKind::Binary { op, lhs, rhs } => {
                format!("({} {} {})", op.as_str(), sexp(lhs), sexp(rhs))
            }
            ExprKind::Conditional {
                condition,
                then,
                otherwise,
            } => {
                format!("(? {} {} {})", sexp(condition), sexp(then), sexp(otherwise))
            }
        }
    }

    fn tree(text: &str) -> String {
        sexp(&parse(text))
    }

    // One test per grammar rule.

    #[test]
    fn rule_conditional() {
        assert_eq!(tree("a ? b : c ? d : e"), "(? a b (? c d e))");
        assert_eq!(tree("a || b ? 1 : 2"), "(? (|| a b) 1 2)");
    }

    #[test]
    fn rule_logical_or_and() {
        assert_eq!(tree("a || b && c"), "(|| a (&& b c))");
        assert_eq!(tree("a && b || c"), "(|| (&& a b) c)");
    }

    #[test]
    fn rule_relation() {
        assert_eq!(tree("a + 1 < b * 2"), "(< (+ a 1) (* b 2))");
        assert_eq!(tree("'x' in list"), "(in \"x\" list)");
        assert_eq!(tree("a == b != c"), "(!= (== a b) c)");
        assert_eq!(tree("a <= 1 && b >= 2"), "(&& (<= a 1) (>= b 2))");
        // `in` is an operator only as a whole word.
        assert_eq!(tree("a + index"), "(+ a index)");
    }

    #[test]
    fn rule_addition_and_multiplication() {
        assert_eq!(
            tree("1 + 2 * 3 - 4 % 5 / 6"),
            "(- (+ 1 (* 2 3)) (/ (% 4 5) 6))"
        );
    }

    #[test]
    fn rule_unary() {
        assert_eq!(tree("!a"), "(Not a)");
        assert_eq!(tree("--x"), "(Negate (Negate x))");
        // The least int is a literal; negating it again is the evaluator's overflow.
        assert_eq!(tree("-9223372036854775808"), "-9223372036854775808");
        assert_eq!(
            tree("- -9223372036854775808"),
            "(Negate -9223372036854775808)"
        );
        let least = parse_expression("-9223372036854775808 + 1").unwrap();
        let ExprKind::Binary { lhs, .. } = least.kind else {
            panic!("{least:?}")
        };
        assert_eq!(lhs.span, Span::new(0, 20));
        assert!(parse_expression("-(9223372036854775808)").is_err());
        assert_eq!(tree("-a.b"), "(Negate a.b)");
    }

    #[test]
    fn rule_member_field_index_method() {
        assert_eq!(
            tree("steps.issues.output.items[0].title"),
            "steps.issues.output.items[0].title"
        );
        assert_eq!(tree("a.b(1, 2).c"), "(a.b 1 2).c");
        assert_eq!(tree("m['k']"), "m[\"k\"]");
    }

    #[test]
    fn rule_function_call_and_arguments() {
        assert_eq!(tree("size(x)"), "(size x)");
        assert_eq!(tree("f()"), "(f )");
        assert_eq!(tree("f(a, b,)"), "(f a b)");
        assert_eq!(tree("xs.map(x, x * 2)"), "(xs.map x (* x 2))");
    }

    #[test]
    fn rule_parenthesized() {
        assert_eq!(tree("(1 + 2) * 3"), "(* (+ 1 2) 3)");
    }

    #[test]
    fn rule_list_and_map() {
        assert_eq!(tree("[1, 'a', [true]]"), "[1 \"a\" [true]]");
        assert_eq!(tree("[]"), "[]");
        assert_eq!(tree("{'a': 1, 'b': {}}"), "{\"a\":1 \"b\":{}}");
    }

    #[test]
    fn rule_literals() {
        assert_eq!(tree("null"), "null");
        assert_eq!(tree("true"), "true");
        assert_eq!(tree("nullable"), "nullable");
        assert_eq!(tree("0x1F"), "31");
        assert_eq!(tree("1.5"), "1.5");
        assert_eq!(tree("1e3"), "1000.0");
        assert_eq!(tree(".5"), "0.5");
        assert_eq!(tree("9223372036854775807"), "9223372036854775807");
        assert!(
            error("9223372036854775808")
                .message
                .contains("out of range")
        );
    }

    #[test]
    fn rule_strings_and_escapes() {
        assert_eq!(tree(r#"'it\'s'"#), r#""it's""#);
        assert_eq!(tree(r#""a\nb""#), r#""a\nb""#);
        assert_eq!(tree(r#"'\x41\u00e9\U0001F600\101'"#), "\"Aé😀A\"");
        assert_eq!(tree("'}'"), "\"}\"");
        let e = error(r"'bad \q escape'");
        assert_eq!(
            (e.span, e.message.as_str()),
            (Span::new(5, 7), "unknown escape `\\q`")
        );
    }

    #[test]
    fn rule_identifier() {
        assert_eq!(tree("_x1"), "_x1");
        assert!(parse_expression("1x").is_err());
    }

    #[test]
    fn errors_point_at_the_offending_character() {
        let e = error("a +");
        assert_eq!(e.span, Span::new(3, 3));
        assert!(
            e.message.starts_with("expected an expression"),
            "{}",
            e.message
        );
        let e = error("a = b");
        assert_eq!(e.span, Span::new(2, 3));
        assert_eq!(
            e.help.as_deref(),
            Some("compare with `==`; expressions cannot assign")
        );
        let e = error("f(a b)");
        assert_eq!(e.span, Span::new(4, 5));
        let e = error("'open");
        assert_eq!(e.span, Span::new(0, 1));
    }

    /// A JSON `"\n"` is a real line break by the time the expression is parsed: the CEL
    /// string it was meant to escape is then not closed on its line.
    #[test]
    fn a_raw_line_break_in_a_string_literal_says_so() {
        let text = "${ x.split('\n') }";
        let e = parse_string_value(text).unwrap_err();
        assert_eq!(&text[e.span.range()], "\n", "{e:?}");
        assert!(
            e.message.contains("cannot contain a raw line break"),
            "{}",
            e.message
        );
        let help = e.help.unwrap_or_default();
        assert!(help.contains(r"`\\n`") && help.contains(r"`\n`"), "{help}");
        // Double quotes, `\r`, and after an escape.
        let e = error("\"a\\\"b\r\n\" + 1");
        assert_eq!(e.span, Span::new(5, 6));
        assert!(e.message.contains("`\"`"), "{}", e.message);
        // Not closed at all: the opening quote, and what to do.
        let e = error("'open");
        assert_eq!(e.span, Span::new(0, 1));
        assert!(e.message.contains("not closed"), "{}", e.message);
        let e = parse_string_value("${ 'abc }").unwrap_err();
        assert_eq!(e.span, Span::new(3, 4));
        assert!(e.message.contains("not closed"), "{}", e.message);
        // A closed string before the error is not blamed.
        let e = error("'a' 'b'");
        assert!(e.message.starts_with("expected"), "{}", e.message);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "(".repeat(10_000) + "1" + &")".repeat(10_000);
        let e = error(&deep);
        assert_eq!(e.span, Span::new(MAX_NESTING, MAX_NESTING + 1));
        assert_eq!(e.kind, SyntaxErrorKind::TooComplex);
        let ok = "(".repeat(MAX_NESTING) + "1" + &")".repeat(MAX_NESTING);
        assert!(parse_expression(&ok).is_ok());
    }

    /// Chains fold without brackets, so the nesting cap does not see them; the tree depth
    /// cap does, before anything walks the tree (a chain of 7 000 terms used to overflow the
    /// stack while typing it, dropping it or writing it into a record).
    #[test]
    fn long_chains_are_too_complex_not_a_crash() {
        let chains = [
            vec!["a"; 7000].join(" + "),
            vec!["x"; 7000].join(" && "),
            "!".repeat(7000) + "x",
            "-".repeat(7000) + "1",
            "x".to_owned() + &".x".repeat(7000),
            "s".to_owned() + &".lower()".repeat(7000),
            "x".to_owned() + &"[0]".repeat(7000),
            vec!["a"; 7000].join(" == "),
        ];
        for chain in &chains {
            let e = error(chain);
            assert_eq!(e.kind, SyntaxErrorKind::TooComplex, "{}", &chain[..20]);
            assert!(e.span.end() <= chain.len() && e.span.start() < e.span.end());
            assert!(e.message.contains("64 levels"), "{}", e.message);
        }
        // Inside a template, the span is inside the string.
        let text = format!("n = ${{ {} }}", vec!["a"; 200].join(" * "));
        let e = parse_string_value(&text).unwrap_err();
        assert_eq!(e.kind, SyntaxErrorKind::TooComplex);
        assert!(
            e.span.start() >= 6 && e.span.end() < text.len(),
            "{:?}",
            e.span
        );
    }

    /// A chain of `?:` nests each conditional in the one before, without a bracket: a long
    /// one is too complex, not a stack overflow (5 000 of them used to overflow it).
    #[test]
    fn long_conditional_chains_are_too_complex_not_a_crash() {
        for chain in [
            "a ? b : ".repeat(5000) + "c",
            "a ? b ? c : ".repeat(5000) + "d" + &" : e".repeat(5000),
        ] {
            assert_eq!(error(&chain).kind, SyntaxErrorKind::TooComplex);
            let text = format!("${{ {chain} }}");
            assert_eq!(
                parse_string_value(&text).unwrap_err().kind,
                SyntaxErrorKind::TooComplex
            );
        }
        // Within the depth limit a chain parses, and so do many conditionals side by side.
        assert!(parse_expression(&("a ? b : ".repeat(MAX_DEPTH - 1) + "c")).is_ok());
        let wide = format!("[{}]", vec!["a ? b : c"; 1000].join(", "));
        assert!(parse_expression(&wide).is_ok());
        let map = format!("{{{}}}", vec!["'k': a ? b : c"; 1000].join(", "));
        assert!(parse_expression(&map).is_ok());
    }

    /// A map entry's `:` does not close its `{` (it used to count as closing a `?`, so maps
    /// nested thousands deep got past the cap to the recursive parser).
    #[test]
    fn nested_maps_count_as_nesting() {
        let deep = "{'a': ".repeat(5000) + "1" + &"}".repeat(5000);
        let e = error(&deep);
        assert_eq!(e.kind, SyntaxErrorKind::TooComplex);
        let text = format!("x ${{ {deep} }}");
        assert_eq!(
            parse_string_value(&text).unwrap_err().kind,
            SyntaxErrorKind::TooComplex
        );
        let ok = "{'a': ".repeat(MAX_NESTING) + "1" + &"}".repeat(MAX_NESTING);
        assert!(parse_expression(&ok).is_ok());
        // `?:` inside maps, and the `}` that ends an interpolation after a map.
        let text = "${ {'k': a ? {'x': 1} : {'y': 2}}['k'] } and ${ b }";
        assert!(matches!(
            parse_string_value(text).unwrap(),
            StringValue::Template(parts) if parts.len() == 3
        ));
    }

    /// Each interpolation of a template is scanned up to its own `}`, not to the end of the
    /// string: 50 000 interpolations used to take minutes.
    #[test]
    fn many_interpolations_are_parsed_in_one_pass() {
        let text = "${ a } ".repeat(50_000);
        match parse_string_value(&text).unwrap() {
            StringValue::Template(parts) => assert_eq!(parts.len(), 100_000),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn chains_up_to_the_depth_limit_parse() {
        // A chain of n binary operators is n levels above its leaves.
        let ok = vec!["a"; MAX_DEPTH].join(" + ");
        assert!(parse_expression(&ok).is_ok());
        let too_deep = vec!["a"; MAX_DEPTH + 2].join(" + ");
        assert_eq!(error(&too_deep).kind, SyntaxErrorKind::TooComplex);
        let ok = "x".to_owned() + &".a".repeat(MAX_DEPTH - 1);
        assert!(parse_expression(&ok).is_ok());
        // Wide is fine: a list of 10 000 items is two levels deep.
        let wide = format!("[{}]", vec!["1"; 10_000].join(", "));
        assert!(parse_expression(&wide).is_ok());
    }

    #[test]
    fn string_values_are_literals_expressions_or_templates() {
        assert_eq!(
            parse_string_value("plain").unwrap(),
            StringValue::Literal("plain".into())
        );
        assert_eq!(
            parse_string_value("cost $5 {x}").unwrap(),
            StringValue::Literal("cost $5 {x}".into())
        );
        assert_eq!(
            parse_string_value("a $${ b }").unwrap(),
            StringValue::Literal("a ${ b }".into())
        );
        let StringValue::Expression(e) = parse_string_value("${ a.b }").unwrap() else {
            panic!()
        };
        assert_eq!((sexp(&e), e.span), ("a.b".to_owned(), Span::new(3, 6)));
        let StringValue::Template(parts) =
            parse_string_value("#${ n }: ${ {'k': '}'}['k'] }!").unwrap()
        else {
            panic!()
        };
        assert_eq!(parts.len(), 5);
        assert!(matches!(&parts[0], Part::Text(t) if t == "#"));
        assert!(matches!(&parts[3], Part::Expr(e) if sexp(e) == "{\"k\":\"}\"}[\"k\"]"));
        assert!(matches!(&parts[4], Part::Text(t) if t == "!"));
        // Whitespace around a single interpolation makes it a template.
        assert!(matches!(
            parse_string_value(" ${ a } ").unwrap(),
            StringValue::Template(_)
        ));
    }

    #[test]
    fn template_errors_point_inside_the_string() {
        let e = parse_string_value("x ${ a + } y").unwrap_err();
        assert_eq!(e.span, Span::new(9, 10));
        let e = parse_string_value("x ${ a").unwrap_err();
        assert_eq!(
            (e.span, e.message.as_str()),
            (Span::new(2, 4), "`${` is not closed")
        );
        let e = parse_string_value("${ a b }").unwrap_err();
        assert_eq!(e.span, Span::new(5, 6));
        assert!(e.message.contains("`}`"), "{}", e.message);
    }
}
