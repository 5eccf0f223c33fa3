//! Strings: lengths in code points, and patterns. Patterns are evaluated with the
//! `jsonschema` crate's own regular expressions (the engine that validates the values), and
//! candidate strings for a pattern are built from its syntax tree (`regex-syntax`): a string
//! the tree describes is then confirmed by that engine, so differences between the two
//! dialects can cost a counterexample but never make a wrong one.

use std::collections::HashMap;

use crate::types::StringTy;
use regex_syntax::hir::{Class, Hir, HirKind};
use serde_json::Value as Json;

use super::{Checker, Compat, MAX_STRING_LEN};

/// Compiled patterns, by source text.
#[derive(Default)]
pub(super) struct Patterns {
    compiled: HashMap<String, Option<jsonschema::Validator>>,
}

impl Patterns {
    /// Whether `pattern` matches somewhere in `text`; `None` when it does not compile.
    pub(super) fn is_match(&mut self, pattern: &str, text: &str) -> Option<bool> {
        if !self.compiled.contains_key(pattern) {
            let validator =
                jsonschema::validator_for(&serde_json::json!({ "pattern": pattern })).ok();
            self.compiled.insert(pattern.to_owned(), validator);
        }
        let validator = self.compiled.get(pattern)?.as_ref()?;
        Some(validator.is_valid(&Json::String(text.to_owned())))
    }
}

/// How many lengths (and candidate strings) a search tries before giving up.
const TRIES: u64 = 16;

pub(super) fn check(cx: &mut Checker, p: &StringTy, c: &StringTy) -> Compat {
    let p_max = p.max_len.unwrap_or(u64::MAX);
    if p_max < p.min_len {
        return Compat::Compatible;
    }
    let mut unknown: Option<String> = None;
    if p.min_len < c.min_len {
        let top = p_max.min(c.min_len - 1);
        for len in p.min_len..=top.min(p.min_len + TRIES) {
            if let Some(s) = string_of(cx, p, len) {
                return cx.no(
                    Json::String(s),
                    format!(
                        "the producer may emit a string of {len} characters, but the consumer's `minLength` is {}",
                        c.min_len
                    ),
                );
            }
        }
        unknown.get_or_insert_with(|| {
            cx.located(format!(
                "the consumer's `minLength` {}: no shorter string matching the producer's `pattern` was found",
                c.min_len
            ))
        });
    }
    if let Some(c_max) = c.max_len
        && p_max > c_max
    {
        let first = (c_max + 1).max(p.min_len);
        if first > MAX_STRING_LEN {
            unknown.get_or_insert_with(|| {
                cx.located(format!(
                    "the consumer's `maxLength` {c_max}: a counterexample would be longer than {MAX_STRING_LEN} characters"
                ))
            });
        } else {
            for len in first..=p_max.min(first + TRIES).min(MAX_STRING_LEN) {
                if let Some(s) = string_of(cx, p, len) {
                    return cx.no(
                        Json::String(s),
                        format!(
                            "the producer may emit a string of {len} characters, but the consumer's `maxLength` is {c_max}"
                        ),
                    );
                }
            }
            unknown.get_or_insert_with(|| {
                cx.located(format!(
                    "the consumer's `maxLength` {c_max}: no longer string matching the producer's `pattern` was found"
                ))
            });
        }
    }
    match (&p.pattern, &c.pattern) {
        (_, None) => {}
        (Some(a), Some(b)) if a == b => {}
        (ours, Some(theirs)) => {
            let samples = string_samples(cx, p, 32);
            // A producer of at most zero characters has just the one string: all were tried.
            let exhaustive = p.max_len == Some(0);
            for s in samples {
                if cx.patterns.is_match(theirs, &s) == Some(false) {
                    let shown = Json::String(s);
                    return cx.no(
                        shown.clone(),
                        format!(
                            "the producer may emit {shown}, which does not match the consumer's `pattern` `{theirs}`"
                        ),
                    );
                }
            }
            if exhaustive {
                return unknown.map_or(Compat::Compatible, |reason| Compat::Unknown { reason });
            }
            unknown.get_or_insert_with(|| {
                cx.located(match ours {
                    Some(ours) => format!(
                        "two different `pattern`s: the producer's `{ours}` and the consumer's `{theirs}`"
                    ),
                    None => format!(
                        "the consumer's `pattern` `{theirs}`, which the producer does not have, and no string it rejects was found"
                    ),
                })
            });
        }
    }
    unknown.map_or(Compat::Compatible, |reason| Compat::Unknown { reason })
}

/// A string of `p` with exactly `len` characters.
pub(super) fn string_of(cx: &mut Checker, p: &StringTy, len: u64) -> Option<String> {
    if len > MAX_STRING_LEN || len < p.min_len || p.max_len.is_some_and(|m| len > m) {
        return None;
    }
    let Some(pattern) = &p.pattern else {
        return Some("a".repeat(len as usize));
    };
    let mut candidates = Vec::new();
    if let Some(hir) = parse(pattern) {
        for extra in 0..=len.min(64) {
            for choice in 0..3 {
                if let Some(s) = generate(&hir, extra as u32, choice, 0) {
                    candidates.push(s);
                }
            }
        }
    }
    candidates.extend(simple(len));
    let len = len as usize;
    for s in candidates {
        let n = s.chars().count();
        let fitted = if n == len {
            vec![s]
        } else if n < len {
            padded(&s, len - n)
        } else {
            continue;
        };
        for s in fitted {
            if cx.patterns.is_match(pattern, &s) == Some(true) {
                return Some(s);
            }
        }
    }
    None
}

/// Up to `n` distinct strings of `p`, shortest first.
pub(super) fn string_samples(cx: &mut Checker, p: &StringTy, n: usize) -> Vec<String> {
    let mut candidates: Vec<String> = Vec::new();
    if let Some(hir) = p.pattern.as_deref().and_then(parse) {
        for extra in [0, 1, 2, 3, 5, 8] {
            for choice in 0..3 {
                for pick in 0..2 {
                    if let Some(s) = generate(&hir, extra, choice, pick) {
                        candidates.push(s);
                    }
                }
            }
        }
        let mut longer: Vec<String> = Vec::new();
        for s in &candidates {
            let short = p.min_len.saturating_sub(s.chars().count() as u64);
            if short <= MAX_STRING_LEN {
                longer.extend(padded(s, short.max(1) as usize));
            }
        }
        candidates.extend(longer);
    }
    for len in p.min_len..=p.min_len + 2 {
        candidates.extend(simple(len));
    }
    let mut out: Vec<String> = Vec::new();
    for s in candidates {
        if out.len() >= n {
            break;
        }
        if out.contains(&s) || !p.length_allows(&s) {
            continue;
        }
        let fits = match &p.pattern {
            Some(pattern) => cx.patterns.is_match(pattern, &s) == Some(true),
            None => true,
        };
        if fits {
            out.push(s);
        }
    }
    out
}

/// `s` lengthened by `n` characters at its end or its start: a pattern matches anywhere in
/// a string, so one end usually keeps the match (`b$` survives a prefix, `^a` a suffix).
fn padded(s: &str, n: usize) -> Vec<String> {
    ['a', '0', ' ']
        .iter()
        .flat_map(|c| {
            let pad = c.to_string().repeat(n);
            [format!("{s}{pad}"), format!("{pad}{s}")]
        })
        .collect()
}

/// Simple strings of `len` characters: one character repeated, and a mix.
fn simple(len: u64) -> Vec<String> {
    if len > MAX_STRING_LEN {
        return Vec::new();
    }
    if len == 0 {
        return vec![String::new()];
    }
    let len = len as usize;
    let mut out: Vec<String> = ['a', '0', 'A', ' ', '-', '_', '.', 'é', 'z', '\n']
        .iter()
        .map(|c| c.to_string().repeat(len))
        .collect();
    out.push("a0".chars().cycle().take(len).collect());
    out
}

/// The pattern's syntax tree, when `regex-syntax` reads it (it rejects look-around and
/// back-references, which ECMA-262 has).
fn parse(pattern: &str) -> Option<Hir> {
    regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .ok()
}

/// A string the syntax tree describes: each repetition taken `min + extra` times (within
/// its maximum), the `choice`-th branch of each alternation, the `pick`-th preferred
/// character of each class.
fn generate(hir: &Hir, extra: u32, choice: usize, pick: usize) -> Option<String> {
    let mut out = String::new();
    let variant = Variant {
        extra,
        choice,
        pick,
    };
    emit(hir, variant, &mut out).then_some(out)
}

#[derive(Clone, Copy)]
struct Variant {
    extra: u32,
    choice: usize,
    pick: usize,
}

fn emit(hir: &Hir, v: Variant, out: &mut String) -> bool {
    if out.len() as u64 > MAX_STRING_LEN {
        return false;
    }
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => true,
        HirKind::Literal(lit) => match std::str::from_utf8(&lit.0) {
            Ok(s) => {
                out.push_str(s);
                true
            }
            Err(_) => false,
        },
        HirKind::Class(Class::Unicode(class)) => {
            let contains = |ch: char| {
                class
                    .ranges()
                    .iter()
                    .any(|r| r.start() <= ch && ch <= r.end())
            };
            let preferred: Vec<char> = ['a', 'b', '0', '1', 'A', ' ', '_', '-']
                .into_iter()
                .filter(|&ch| contains(ch))
                .collect();
            let ch = preferred
                .get(v.pick.min(preferred.len().saturating_sub(1)))
                .copied()
                .or_else(|| class.ranges().first().map(|r| r.start()));
            match ch {
                Some(ch) => {
                    out.push(ch);
                    true
                }
                None => false,
            }
        }
        HirKind::Class(Class::Bytes(class)) => match class.ranges().first() {
            Some(r) if r.start().is_ascii() => {
                out.push(char::from(r.start()));
                true
            }
            _ => false,
        },
        HirKind::Repetition(rep) => {
            let mut count = rep.min.saturating_add(v.extra);
            if let Some(max) = rep.max {
                count = count.min(max);
            }
            (0..count.min(1_000)).all(|_| emit(&rep.sub, v, out))
        }
        HirKind::Capture(cap) => emit(&cap.sub, v, out),
        HirKind::Concat(parts) => parts.iter().all(|h| emit(h, v, out)),
        HirKind::Alternation(branches) => {
            !branches.is_empty() && emit(&branches[v.choice % branches.len()], v, out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_strings_follow_the_pattern() {
        let hir = parse("^[a-z]+-[0-9]{2}$").unwrap();
        assert_eq!(generate(&hir, 0, 0, 0).as_deref(), Some("a-00"));
        let hir = parse("^(foo|bar)x*$").unwrap();
        assert_eq!(generate(&hir, 2, 1, 0).as_deref(), Some("barxx"));
        assert!(parse("(?<=a)b").is_none());
        let mut cx = Checker::default();
        let p = StringTy {
            min_len: 0,
            max_len: None,
            pattern: Some("^[a-z]+$".into()),
        };
        assert_eq!(string_of(&mut cx, &p, 6).as_deref(), Some("aaaaaa"));
        assert_eq!(string_of(&mut cx, &p, 0), None);
    }
}
