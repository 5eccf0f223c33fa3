//! A hand-written reader for the grammar of `grammar.pest`, for the expressions that parse.
//!
//! It follows the grammar's ordered choices and repetitions exactly (a PEG commits to the
//! first alternative that matches), builds the same tree with the same spans and depths as
//! [`super::build_node`] does from the grammar's pairs, and gives up — `None` — wherever the
//! grammar would backtrack in a way that can still fail, and on every error: a syntax error, a
//! number out of range, a bad escape, a tree deeper than [`MAX_DEPTH`]. The grammar then reads
//! the text again and reports. So what this reader accepts, the grammar accepts with the same
//! result (a differential test checks it on the corpus and on random expressions), and every
//! finding still comes from the grammar.
//!
//! Recursion happens only where the grammar nests (brackets, calls, `?:`), and is bounded by a
//! counter: past it the grammar takes over (and reports the limit).

use super::{MAX_DEPTH, decode_string, number};
use crate::expr::ast::{BinaryOp, Expr, ExprKind, UnaryOp};
use crate::span::Span;

/// How deeply `conditional`s may nest before this reader leaves the text to the grammar.
const MAX_RECURSION: usize = MAX_DEPTH + 8;

/// Parses the interpolation whose expression starts at `base` (just after `${`), up to and
/// including its `}`: the tree and the offset after the `}`.
pub(super) fn interpolation(text: &str, base: usize) -> Option<(Expr, usize)> {
    let mut p = Reader {
        text,
        bytes: text.as_bytes(),
        pos: base,
        recursion: 0,
    };
    p.skip();
    let (expr, _) = p.conditional()?;
    p.skip();
    p.eat(b'}').then_some((expr, p.pos))
}

/// Parses a whole expression (`text` from its start to its end).
pub(super) fn expression(text: &str) -> Option<Expr> {
    let mut p = Reader {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        recursion: 0,
    };
    p.skip();
    let (expr, _) = p.conditional()?;
    p.skip();
    (p.pos == text.len()).then_some(expr)
}

/// An expression and the depth of its tree, as in [`super::build_node`].
type Built = (Expr, usize);

struct Reader<'t> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
    recursion: usize,
}

const fn ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

const fn ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// One more level above a child of depth `depth`; `None` past the limit.
fn deeper(depth: usize) -> Option<usize> {
    (depth < MAX_DEPTH).then_some(depth + 1)
}

fn boxed(expr: Expr) -> Box<Expr> {
    Box::new(expr)
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.pos + offset).copied()
    }

    /// The grammar's implicit `WHITESPACE*`.
    fn skip(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.peek() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// `identifier`: its span, or `None` (nothing consumed).
    fn identifier(&mut self) -> Option<Span> {
        let start = self.pos;
        if !ident_start(self.peek()?) {
            return None;
        }
        self.pos += 1;
        while self.peek().is_some_and(ident_char) {
            self.pos += 1;
        }
        Some(Span::new(start, self.pos))
    }

    /// `conditional = { logical_or ~ ("?" ~ conditional ~ ":" ~ conditional)? }`.
    fn conditional(&mut self) -> Option<Built> {
        self.recursion += 1;
        if self.recursion > MAX_RECURSION {
            return None;
        }
        let start = self.pos;
        let (condition, d0) = self.binary(0)?;
        // The implicit whitespace before the optional part is the rule's whether or not
        // the part follows.
        self.skip();
        let built = if self.eat(b'?') {
            self.skip();
            let (then, d1) = self.conditional()?;
            self.skip();
            if !self.eat(b':') {
                return None;
            }
            self.skip();
            let (otherwise, d2) = self.conditional()?;
            let depth = deeper(d0.max(d1).max(d2))?;
            let kind = ExprKind::Conditional {
                condition: boxed(condition),
                then: boxed(then),
                otherwise: boxed(otherwise),
            };
            (
                Expr {
                    kind,
                    span: Span::new(start, self.pos),
                },
                depth,
            )
        } else {
            (condition, d0)
        };
        self.recursion -= 1;
        Some(built)
    }

    /// The binary operator at the current position for precedence `level` (0 `||`,
    /// 1 `&&`, 2 relations, 3 `+ -`, 4 `* / %`) and its length.
    fn operator(&self, level: usize) -> Option<(BinaryOp, usize)> {
        let b = self.peek()?;
        let next = self.peek_at(1);
        match level {
            0 => (b == b'|' && next == Some(b'|')).then_some((BinaryOp::Or, 2)),
            1 => (b == b'&' && next == Some(b'&')).then_some((BinaryOp::And, 2)),
            2 => match (b, next) {
                (b'<', Some(b'=')) => Some((BinaryOp::Le, 2)),
                (b'>', Some(b'=')) => Some((BinaryOp::Ge, 2)),
                (b'=', Some(b'=')) => Some((BinaryOp::Eq, 2)),
                (b'!', Some(b'=')) => Some((BinaryOp::Ne, 2)),
                (b'<', _) => Some((BinaryOp::Lt, 1)),
                (b'>', _) => Some((BinaryOp::Gt, 1)),
                (b'i', Some(b'n')) if !self.peek_at(2).is_some_and(ident_char) => {
                    Some((BinaryOp::In, 2))
                }
                _ => None,
            },
            3 => match b {
                b'+' => Some((BinaryOp::Add, 1)),
                b'-' => Some((BinaryOp::Sub, 1)),
                _ => None,
            },
            _ => match b {
                b'*' => Some((BinaryOp::Mul, 1)),
                b'/' => Some((BinaryOp::Div, 1)),
                b'%' => Some((BinaryOp::Rem, 1)),
                _ => None,
            },
        }
    }

    /// `logical_or`, `logical_and`, `relation`, `addition` and `multiplication`: operands
    /// of the next level joined by this level's operators, folded to the left.
    fn binary(&mut self, level: usize) -> Option<Built> {
        let operand = |p: &mut Self| {
            if level == 4 {
                p.unary()
            } else {
                p.binary(level + 1)
            }
        };
        let (mut lhs, mut depth) = operand(self)?;
        loop {
            let before = self.pos;
            self.skip();
            let Some((op, len)) = self.operator(level) else {
                self.pos = before;
                break;
            };
            self.pos += len;
            self.skip();
            // An operator without an operand fails the repetition; the grammar would back
            // out of it, and what follows cannot then be read: leave it to the grammar.
            let (rhs, rhs_depth) = operand(self)?;
            depth = deeper(depth.max(rhs_depth))?;
            let span = Span::new(lhs.span.start(), rhs.span.end());
            lhs = Expr {
                kind: ExprKind::Binary {
                    op,
                    lhs: boxed(lhs),
                    rhs: boxed(rhs),
                },
                span,
            };
        }
        Some((lhs, depth))
    }

    /// `unary = { prefix_op* ~ member }`.
    fn unary(&mut self) -> Option<Built> {
        let mut ops: Vec<(usize, UnaryOp)> = Vec::new();
        loop {
            match self.peek() {
                Some(b'!') => ops.push((self.pos, UnaryOp::Not)),
                Some(b'-') => ops.push((self.pos, UnaryOp::Negate)),
                _ => break,
            }
            self.pos += 1;
            self.skip();
        }
        let (mut result, mut depth) = self.member()?;
        for &(start, op) in ops.iter().rev() {
            depth = deeper(depth)?;
            let span = Span::new(start, result.span.end());
            result = Expr {
                span,
                kind: ExprKind::Unary {
                    op,
                    operand: boxed(result),
                },
            };
        }
        Some((result, depth))
    }

    /// `member = { primary ~ (method_call | field | index)* }`.
    fn member(&mut self) -> Option<Built> {
        let start = self.pos;
        let (mut target, mut depth) = self.primary()?;
        loop {
            let before = self.pos;
            self.skip();
            match self.peek() {
                Some(b'.') => {
                    self.pos += 1;
                    self.skip();
                    let Some(name) = self.identifier() else {
                        // Neither a method call nor a field: the repetition ends here, and
                        // what follows (`.` then not a name) cannot be read.
                        return None;
                    };
                    let after_name = self.pos;
                    self.skip();
                    if self.eat(b'(') {
                        let (args, args_depth) = self.arguments(b')')?;
                        depth = deeper(depth.max(args_depth))?;
                        target = Expr {
                            kind: ExprKind::Call {
                                target: Some(boxed(target)),
                                function: self.text[name.range()].to_owned(),
                                function_span: name,
                                args,
                            },
                            span: Span::new(start, self.pos),
                        };
                    } else {
                        self.pos = after_name;
                        depth = deeper(depth)?;
                        target = Expr {
                            kind: ExprKind::Member {
                                target: boxed(target),
                                field: self.text[name.range()].to_owned(),
                                field_span: name,
                            },
                            span: Span::new(start, self.pos),
                        };
                    }
                }
                Some(b'[') => {
                    self.pos += 1;
                    self.skip();
                    let (index, index_depth) = self.conditional()?;
                    self.skip();
                    if !self.eat(b']') {
                        return None;
                    }
                    depth = deeper(depth.max(index_depth))?;
                    target = Expr {
                        kind: ExprKind::Index {
                            target: boxed(target),
                            index: boxed(index),
                        },
                        span: Span::new(start, self.pos),
                    };
                }
                _ => {
                    self.pos = before;
                    break;
                }
            }
        }
        Some((target, depth))
    }

    /// Comma-separated `conditional`s, an optional trailing comma, then `close` (after the
    /// opening bracket, which is consumed): `arguments?` of a call, or a list's items.
    fn arguments(&mut self, close: u8) -> Option<(Vec<Expr>, usize)> {
        let mut items = Vec::new();
        let mut depth = 0;
        self.skip();
        if self.eat(close) {
            return Some((items, depth));
        }
        loop {
            let (item, d) = self.conditional()?;
            depth = depth.max(d);
            items.push(item);
            self.skip();
            if self.eat(close) {
                return Some((items, depth));
            }
            if !self.eat(b',') {
                return None;
            }
            self.skip();
            if self.eat(close) {
                return Some((items, depth));
            }
        }
    }

    /// `map`'s entries after its `{`, up to and including its `}`.
    fn entries(&mut self) -> Option<(Vec<(Expr, Expr)>, usize)> {
        let mut entries = Vec::new();
        let mut depth = 0;
        self.skip();
        if self.eat(b'}') {
            return Some((entries, depth));
        }
        loop {
            let (key, dk) = self.conditional()?;
            self.skip();
            if !self.eat(b':') {
                return None;
            }
            self.skip();
            let (value, dv) = self.conditional()?;
            depth = depth.max(dk).max(dv);
            entries.push((key, value));
            self.skip();
            if self.eat(b'}') {
                return Some((entries, depth));
            }
            if !self.eat(b',') {
                return None;
            }
            self.skip();
            if self.eat(b'}') {
                return Some((entries, depth));
            }
        }
    }

    /// `primary = _{ literal | function_call | identifier | parenthesized | list | map }`.
    fn primary(&mut self) -> Option<Built> {
        let start = self.pos;
        let leaf = |kind, end| {
            Some((
                Expr {
                    kind,
                    span: Span::new(start, end),
                },
                1,
            ))
        };
        let b = self.peek()?;
        match b {
            b'\'' | b'"' => {
                let end = self.string_end(b)?;
                self.pos = end;
                let value = decode_string(&self.text[start..end], start).ok()?;
                leaf(ExprKind::String { value }, end)
            }
            b'0'..=b'9' | b'.' => {
                let end = self.number_end()?;
                self.pos = end;
                let expr = number(&self.text[start..end], Span::new(start, end)).ok()?;
                Some((expr, 1))
            }
            b'(' => {
                self.pos += 1;
                self.skip();
                let (inner, depth) = self.conditional()?;
                self.skip();
                if !self.eat(b')') {
                    return None;
                }
                Some((
                    Expr {
                        kind: inner.kind,
                        span: Span::new(start, self.pos),
                    },
                    depth,
                ))
            }
            b'[' => {
                self.pos += 1;
                let (items, depth) = self.arguments(b']')?;
                let depth = deeper(depth)?;
                leaf(ExprKind::List { items }, self.pos).map(|(e, _)| (e, depth))
            }
            b'{' => {
                self.pos += 1;
                let (entries, depth) = self.entries()?;
                let depth = deeper(depth)?;
                leaf(ExprKind::Map { entries }, self.pos).map(|(e, _)| (e, depth))
            }
            _ => {
                let name = self.identifier()?;
                let word = &self.text[name.range()];
                // `null`, `true` and `false` are literals when no name character follows;
                // `identifier` reads them whole, so the name is exactly the keyword then.
                match word {
                    "null" => return leaf(ExprKind::Null, name.end()),
                    "true" | "false" => {
                        return leaf(
                            ExprKind::Bool {
                                value: word == "true",
                            },
                            name.end(),
                        );
                    }
                    _ => {}
                }
                let after_name = self.pos;
                self.skip();
                if self.eat(b'(') {
                    let (args, args_depth) = self.arguments(b')')?;
                    let depth = deeper(args_depth)?;
                    return Some((
                        Expr {
                            kind: ExprKind::Call {
                                target: None,
                                function: word.to_owned(),
                                function_span: name,
                                args,
                            },
                            span: Span::new(start, self.pos),
                        },
                        depth,
                    ));
                }
                self.pos = after_name;
                leaf(
                    ExprKind::Ident {
                        name: word.to_owned(),
                    },
                    name.end(),
                )
            }
        }
    }

    /// The end of the string literal opened by `quote` at the current position (`sq_string`
    /// or `dq_string`): an escape is a backslash and any character; a raw line break or the
    /// end of the text is an error.
    fn string_end(&self, quote: u8) -> Option<usize> {
        let mut i = self.pos + 1;
        loop {
            match *self.bytes.get(i)? {
                b'\\' => {
                    // `"\\" ~ ANY`: one character, which may be several bytes.
                    let c = self.text.get(i + 1..)?.chars().next()?;
                    i += 1 + c.len_utf8();
                }
                b'\n' | b'\r' => return None,
                b if b == quote => return Some(i + 1),
                _ => i += 1,
            }
        }
    }

    /// The end of the `number` at the current position: `(double | int) ~ !ident_char`.
    fn number_end(&self) -> Option<usize> {
        let bytes = self.bytes;
        let digits = |i: usize| {
            let mut j = i;
            while bytes.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
            (j > i).then_some(j)
        };
        let exponent = |i: usize| {
            let mut j = i;
            if !matches!(bytes.get(j), Some(b'e' | b'E')) {
                return None;
            }
            j += 1;
            if matches!(bytes.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            digits(j)
        };
        let i = self.pos;
        // double = digits "." digits exponent? | digits exponent | "." digits exponent?
        let double = || {
            if let Some(d) = digits(i) {
                if bytes.get(d) == Some(&b'.')
                    && let Some(f) = digits(d + 1)
                {
                    return Some(exponent(f).unwrap_or(f));
                }
                return exponent(d);
            }
            if bytes.get(i) == Some(&b'.') {
                let f = digits(i + 1)?;
                return Some(exponent(f).unwrap_or(f));
            }
            None
        };
        // int = ("0x" | "0X") ~ ASCII_HEX_DIGIT+ | digits
        let int = || {
            if bytes.get(i) == Some(&b'0') && matches!(bytes.get(i + 1), Some(b'x' | b'X')) {
                let mut j = i + 2;
                while bytes.get(j).is_some_and(u8::is_ascii_hexdigit) {
                    j += 1;
                }
                if j > i + 2 {
                    return Some(j);
                }
            }
            digits(i)
        };
        let end = double().or_else(int)?;
        (!bytes.get(end).copied().is_some_and(ident_char)).then_some(end)
    }
}
