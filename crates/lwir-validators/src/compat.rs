//! Producer ⊆ consumer compatibility: whether every value a producer may emit is accepted by
//! its consumer, decided over [`Ty`]s derived from their JSON Schemas.
//!
//! # Answers
//! [`check`] answers [`Compat::Compatible`] (proven), [`Compat::Incompatible`] with a
//! counterexample — a JSON value the producer may emit and the consumer rejects, built
//! deliberately and small (`{"label": "question"}`, `0.5`, `""`), and re-checked against both
//! types before it is returned — or [`Compat::Unknown`], naming what stopped it.
//!
//! Derive both types with [`Ty::from_schema_exact`]: [`Ty::from_schema`] over-approximates
//! `oneOf`, which makes a Compatible answer unsound when the consumer uses an overlapping
//! `oneOf`, and may make a counterexample match two branches of a producer's `oneOf`.
//!
//! # How
//! Structurally, kind by kind, on normalised types:
//! - objects: every property the consumer requires must be required by the producer
//!   (else the counterexample omits it); each property's producer type (declared, else the
//!   producer's `additionalProperties`) must fit the consumer's (declared, else its
//!   `additionalProperties`); the producer's other properties must fit the consumer's
//!   other properties — an open producer against a closed consumer fails with an `extra`
//!   property; the producer's possible property counts must lie within the consumer's;
//! - lists: lengths, each position (`prefixItems`, then `items`), and `uniqueItems`;
//! - numbers: interval inclusion with inclusive and exclusive bounds, integers against
//!   numbers (`0.5` for a number against an integer);
//! - strings: lengths in code points; patterns by identity, else by searching for a
//!   counterexample among strings built from the producer's pattern (its syntax tree) and
//!   simple strings, evaluated with the `jsonschema` crate's own regular expressions;
//! - literals by membership; a producer union member by member; a consumer union by
//!   finding one member that holds the whole producer type, else by splitting the producer
//!   (booleans, small integer ranges, an object on a union-typed property such as a
//!   discriminator) and retrying, else by testing counterexamples against the whole union;
//! - [`Ty::Any`] as a producer is the union of all kinds; [`Ty::Never`] fits everything.
//!
//! # Limits: what answers Unknown
//! - an [`Ty::Opaque`] type on either side (recursive `$ref`s, `allOf` of two patterns, an
//!   overlapping `oneOf` in exact mode, …), with its reason;
//! - two different `pattern`s, or a consumer `pattern` the producer does not have, when no
//!   counterexample is found among the candidates (pattern inclusion is not decided);
//! - a producer whose values only several consumer alternatives cover *together* beyond
//!   what splitting shows (e.g. `number` against `anyOf: [{maximum: 5}, {minimum: 5}]`);
//! - `uniqueItems` on the consumer only, when no repeatable item is found;
//! - a counterexample that would be larger than [`MAX_STRING_LEN`] characters,
//!   [`MAX_ITEMS`] items or [`MAX_PROPERTIES`] properties;
//! - more than [`MAX_STEPS`] sub-checks: unions against unions cost the product of their
//!   sizes, so large ones stop here instead of blowing up; splitting nests at most
//!   [`MAX_SPLITS`] deep into at most [`MAX_SPLIT_PARTS`] parts.

use std::fmt::Display;

use crate::types::{Bound, Kind, Ty, is_integral};
use lwir_spec::{Code, Finding, Span};
use serde_json::Value as Json;

mod lists;
mod numbers;
mod objects;
mod strings;
mod values;

/// At most this many sub-checks per [`check`]; beyond it the answer is Unknown.
pub const MAX_STEPS: usize = 10_000;
/// Splitting a producer to cover a consumer union nests at most this deep.
pub const MAX_SPLITS: usize = 3;
/// A producer is split into at most this many parts (literals of a range, union members).
pub const MAX_SPLIT_PARTS: usize = 16;
/// Counterexample strings are at most this many characters long.
pub const MAX_STRING_LEN: u64 = 10_000;
/// Counterexample lists have at most this many items.
pub const MAX_ITEMS: u64 = 1_000;
/// Counterexample objects have at most this many properties.
pub const MAX_PROPERTIES: u64 = 1_000;

/// The answer to "does every value of the producer fit the consumer?".
#[derive(Clone, Debug, PartialEq)]
pub enum Compat {
    /// Every value the producer may emit is accepted: `integer` into `number`.
    Compatible,
    /// `counterexample` is a JSON value the producer may emit and the consumer rejects:
    /// `number` into `integer` gives `0.5`.
    Incompatible {
        /// The value.
        counterexample: Json,
        /// Why the consumer rejects it, located by a JSON Pointer into the value when nested.
        reason: String,
        /// The consumer's constraint that rejects it, as its schema keyword and where in the
        /// value, for a message to name: `` `minLength: 3` ``, `` `maximum: 10` at `/count` ``,
        /// `` `required` (`title`) ``, `` `type: integer` ``; `None` when no single keyword
        /// can be named.
        constraint: Option<String>,
    },
    /// Cannot decide; `reason` names the keyword that stopped it: a string with
    /// `pattern: "^a"` into one with `pattern: "a"` gives "two different `pattern`s".
    Unknown {
        /// What stopped the decision.
        reason: String,
    },
}

/// Whether every value of `producer` is accepted by `consumer` (producer ⊆ consumer).
pub fn check(producer: &Ty, consumer: &Ty) -> Compat {
    let p = producer.clone().normalize();
    let c = consumer.clone().normalize();
    let mut cx = Checker::default();
    match cx.sub(&p, &c) {
        Compat::Incompatible {
            counterexample,
            reason,
            ..
        } => {
            // The construction is deliberate; this re-check keeps a slip from becoming a
            // false "incompatible".
            let in_producer = cx.accepts(&p, &counterexample);
            let in_consumer = cx.accepts(&c, &counterexample);
            if in_producer == Some(true) && in_consumer == Some(false) {
                let mut at = String::new();
                let constraint = cx.rejection(&c, &counterexample, &mut at);
                Compat::Incompatible {
                    counterexample,
                    reason,
                    constraint,
                }
            } else {
                Compat::Unknown {
                    reason: format!("no counterexample could be confirmed ({reason})"),
                }
            }
        }
        other => other,
    }
}

/// The state of one [`check`].
#[derive(Default)]
struct Checker {
    steps: usize,
    splits: usize,
    patterns: strings::Patterns,
    /// Where in the value the current comparison is, as pointer tokens.
    path: Vec<String>,
}

impl Checker {
    /// Whether `ty` accepts `value`, evaluating patterns.
    fn accepts(&mut self, ty: &Ty, value: &Json) -> Option<bool> {
        let patterns = &mut self.patterns;
        ty.accepts(value, &mut |p, s| patterns.is_match(p, s))
    }

    fn located(&self, message: impl Display) -> String {
        if self.path.is_empty() {
            return message.to_string();
        }
        let mut at = String::new();
        for token in &self.path {
            lwir_spec::pointer::push_token(&mut at, token);
        }
        format!("at `{at}`: {message}")
    }

    fn no(&self, counterexample: Json, message: impl Display) -> Compat {
        Compat::Incompatible {
            counterexample,
            reason: self.located(message),
            constraint: None,
        }
    }

    /// The consumer keyword that rejects `v` (which `c` does not accept), and where in `v`
    /// (`at`, a JSON Pointer built on the way down): what a message names.
    fn rejection(&mut self, c: &Ty, v: &Json, at: &mut String) -> Option<String> {
        let located = |keyword: String, at: &str| {
            if at.is_empty() {
                keyword
            } else {
                format!("{keyword} at `{at}`")
            }
        };
        let kind_mismatch = |c: &Ty, at: &str| {
            let name = match c {
                Ty::Null => "null",
                Ty::Bool => "boolean",
                Ty::Int(_) => "integer",
                Ty::Number(_) => "number",
                Ty::String(_) => "string",
                Ty::List(_) => "array",
                Ty::Object(_) => "object",
                _ => return None,
            };
            Some(located(format!("`type: {name}`"), at))
        };
        match (c, v) {
            (Ty::Any | Ty::Opaque(_), _) => None,
            (Ty::Never, _) => Some(located("`false`".to_owned(), at)),
            (Ty::Literal(w), _) => Some(located(format!("`const: {}`", show(w)), at)),
            (Ty::Union(members), _) => {
                let kind = Kind::of(v);
                let same_kind: Vec<&Ty> = members.iter().filter(|m| m.is_possibly(kind)).collect();
                match same_kind.as_slice() {
                    [one] if !matches!(one, Ty::Literal(_)) => {
                        let one = (*one).clone();
                        self.rejection(&one, v, at)
                    }
                    _ if members
                        .iter()
                        .all(|m| matches!(m, Ty::Literal(_) | Ty::Null)) =>
                    {
                        Some(located(format!("`enum` ({})", c.summary()), at))
                    }
                    _ => Some(located(
                        format!("`anyOf` ({})", c.summary_with_constraints()),
                        at,
                    )),
                }
            }
            (Ty::Null, Json::Null) | (Ty::Bool, Json::Bool(_)) => None,
            (Ty::Int(_), Json::Number(n)) if !is_integral(n) => kind_mismatch(c, at),
            (Ty::Int(r) | Ty::Number(r), Json::Number(n)) => {
                let x = n.as_f64()?;
                let (min, max) = (r.min, r.max);
                if let Some(b) = min.filter(|b| x < b.value || (x == b.value && b.exclusive)) {
                    let kw = if b.exclusive {
                        "exclusiveMinimum"
                    } else {
                        "minimum"
                    };
                    return Some(located(format!("`{kw}: {}`", numbers::number(b.value)), at));
                }
                let b = max.filter(|b| x > b.value || (x == b.value && b.exclusive))?;
                let kw = if b.exclusive {
                    "exclusiveMaximum"
                } else {
                    "maximum"
                };
                Some(located(format!("`{kw}: {}`", numbers::number(b.value)), at))
            }
            (Ty::String(st), Json::String(text)) => {
                let n = text.chars().count() as u64;
                if n < st.min_len {
                    return Some(located(format!("`minLength: {}`", st.min_len), at));
                }
                if let Some(max) = st.max_len.filter(|&m| n > m) {
                    return Some(located(format!("`maxLength: {max}`"), at));
                }
                let pattern = st.pattern.as_ref()?;
                (self.patterns.is_match(pattern, text) == Some(false)).then(|| {
                    located(
                        format!("`pattern: {}`", show(&Json::String(pattern.clone()))),
                        at,
                    )
                })
            }
            (Ty::List(l), Json::Array(items)) => {
                let n = items.len() as u64;
                if n < l.min_items {
                    return Some(located(format!("`minItems: {}`", l.min_items), at));
                }
                if let Some(max) = l.max_items.filter(|&m| n > m) {
                    return Some(located(format!("`maxItems: {max}`"), at));
                }
                for (i, item) in items.iter().enumerate() {
                    let t = l.at(i).clone();
                    if self.accepts(&t, item) == Some(false) {
                        let len = at.len();
                        lwir_spec::pointer::push_token(at, &i.to_string());
                        let found = if matches!(t, Ty::Never) && i >= l.prefix.len() {
                            Some(located(
                                format!("`items: false` after {} `prefixItems`", l.prefix.len()),
                                at,
                            ))
                        } else {
                            self.rejection(&t, item, at)
                        };
                        at.truncate(len);
                        return found;
                    }
                }
                l.unique
                    .then(|| located("`uniqueItems: true`".to_owned(), at))
            }
            (Ty::Object(o), Json::Object(members)) => {
                if let Some((name, _)) = o
                    .properties
                    .iter()
                    .find(|(name, p)| p.required && !members.contains_key(name))
                {
                    return Some(located(format!("`required` (`{name}`)"), at));
                }
                let n = members.len() as u64;
                if n < o.min_properties {
                    return Some(located(
                        format!("`minProperties: {}`", o.min_properties),
                        at,
                    ));
                }
                if let Some(max) = o.max_properties.filter(|&m| n > m) {
                    return Some(located(format!("`maxProperties: {max}`"), at));
                }
                for (name, value) in members {
                    let declared = o.prop(name).map(|p| p.ty.clone());
                    let t = declared.clone().unwrap_or_else(|| o.rest.clone());
                    if self.accepts(&t, value) == Some(false) {
                        let len = at.len();
                        lwir_spec::pointer::push_token(at, name);
                        let found = if declared.is_none() && matches!(t, Ty::Never) {
                            Some(located("`additionalProperties: false`".to_owned(), at))
                        } else {
                            self.rejection(&t, value, at)
                        };
                        at.truncate(len);
                        return found;
                    }
                }
                None
            }
            _ => kind_mismatch(c, at),
        }
    }

    fn unknown(&self, message: impl Display) -> Compat {
        Compat::Unknown {
            reason: self.located(message),
        }
    }

    /// Compares at `segment` below the current path.
    fn sub_at(&mut self, segment: String, p: &Ty, c: &Ty) -> Compat {
        self.path.push(segment);
        let answer = self.sub(p, c);
        self.path.pop();
        answer
    }

    /// Compares at the current path.
    fn sub(&mut self, p: &Ty, c: &Ty) -> Compat {
        use Ty::*;
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return self.unknown(format!(
                "the comparison needs more than {MAX_STEPS} steps (unions or enums on both sides are too large)"
            ));
        }
        match (p, c) {
            (_, Any) | (Never, _) => Compat::Compatible,
            (Opaque(why), _) => self.unknown(format!("the producer's schema: {why}")),
            (Union(members), _) => self.producer_union(members, c),
            (Literal(v), _) => self.literal(v, c),
            (_, Opaque(why)) => self.unknown(format!("the consumer's schema: {why}")),
            (Any, _) => self.sub(&any_value(), c),
            (_, Union(members)) => self.consumer_union(p, c, members),
            (_, Never) => self.refute(p, |_| "the consumer accepts no value (`false`)".to_owned()),
            (_, Literal(w)) => self.against_literal(p, w),
            (Null, Null) | (Bool, Bool) => Compat::Compatible,
            (Int(a) | Number(a), Int(b) | Number(b)) => {
                numbers::check(self, a, matches!(p, Int(_)), b, matches!(c, Int(_)))
            }
            (String(a), String(b)) => strings::check(self, a, b),
            (List(a), List(b)) => lists::check(self, a, b),
            (Object(a), Object(b)) => objects::check(self, a, b),
            _ => self.refute(p, |x| {
                format!(
                    "the producer may emit {} ({}), where the consumer expects {}",
                    kind_name(x),
                    show(x),
                    c.summary()
                )
            }),
        }
    }

    /// A producer union fits when each member does; a member's counterexample is one of
    /// the whole producer.
    fn producer_union(&mut self, members: &[Ty], c: &Ty) -> Compat {
        let mut unknown = None;
        for m in members {
            match self.sub(m, c) {
                Compat::Compatible => {}
                no @ Compat::Incompatible { .. } => return no,
                Compat::Unknown { reason } => {
                    unknown.get_or_insert(reason);
                }
            }
        }
        unknown.map_or(Compat::Compatible, |reason| Compat::Unknown { reason })
    }

    fn literal(&mut self, v: &Json, c: &Ty) -> Compat {
        match self.accepts(c, v) {
            Some(true) => Compat::Compatible,
            Some(false) => {
                let why = why(c, v);
                self.no(
                    v.clone(),
                    format!("the producer may emit {}, but {why}", show(v)),
                )
            }
            None => {
                let why = opaque_reason(c).map_or_else(
                    || "a `pattern` that cannot be evaluated".to_owned(),
                    str::to_owned,
                );
                self.unknown(format!(
                    "cannot tell whether the consumer accepts {}: {why}",
                    show(v)
                ))
            }
        }
    }

    /// A non-literal producer against one literal: two distinct producer values show the
    /// difference, unless the producer has a single value.
    fn against_literal(&mut self, p: &Ty, w: &Json) -> Compat {
        let samples = self.samples(p, 2);
        if let Some(x) = samples.iter().find(|x| !crate::types::json_equal(x, w)) {
            let x = x.clone();
            return self.no(
                x.clone(),
                format!(
                    "the producer may emit {}, but the consumer accepts only {}",
                    show(&x),
                    show(w)
                ),
            );
        }
        if samples.is_empty() {
            return self.cannot_build(p, "a value of the producer's type");
        }
        if values::singleton(p) {
            Compat::Compatible
        } else {
            self.unknown(format!(
                "could not construct a producer value other than {}, the consumer's only value",
                show(w)
            ))
        }
    }

    /// Incompatible with any producer value as the counterexample (the consumer rejects
    /// every value of the producer's kind).
    fn refute(&mut self, p: &Ty, message: impl FnOnce(&Json) -> String) -> Compat {
        match self.witness(p) {
            Some(x) => {
                let m = message(&x);
                self.no(x, m)
            }
            None => self.cannot_build(p, "a value of the producer's type"),
        }
    }

    /// A consumer union: some member must hold the whole producer, or the producer splits
    /// into parts that each fit; otherwise a counterexample must miss every member.
    fn consumer_union(&mut self, p: &Ty, c: &Ty, members: &[Ty]) -> Compat {
        let mut candidates = Vec::new();
        let mut unknown = None;
        // A large enum holds a non-literal producer only when the producer is finite: its
        // samples and parts are tested against the whole enum instead of member by member.
        let large_enum = members.len() > MAX_SPLIT_PARTS
            && members
                .iter()
                .all(|m| matches!(m, Ty::Literal(_) | Ty::Null));
        if large_enum && values::singleton(p) {
            return match self.witness(p) {
                Some(x) => self.literal(&x, c),
                None => self.cannot_build(p, "a value of the producer's type"),
            };
        }
        for m in members
            .iter()
            .take(if large_enum { 0 } else { members.len() })
        {
            match self.sub(p, m) {
                Compat::Compatible => return Compat::Compatible,
                Compat::Incompatible { counterexample, .. } => candidates.push(counterexample),
                Compat::Unknown { reason } => {
                    unknown.get_or_insert(reason);
                }
            }
            if self.steps > MAX_STEPS {
                break;
            }
        }
        candidates.extend(self.samples(p, 8));
        for x in candidates {
            if self.accepts(p, &x) == Some(true) && self.accepts(c, &x) == Some(false) {
                let why = why(c, &x);
                return self.no(
                    x.clone(),
                    format!("the producer may emit {}, but {why}", show(&x)),
                );
            }
        }
        if self.splits < MAX_SPLITS
            && let Some(parts) = split(p)
        {
            self.splits += 1;
            let answer = self.producer_union(&parts, c);
            self.splits -= 1;
            match answer {
                Compat::Unknown { reason } => {
                    unknown.get_or_insert(reason);
                }
                decided => return decided,
            }
        }
        let reason = unknown.unwrap_or_else(|| {
            self.located(format!(
                "no single alternative of the consumer ({}) accepts every value of the producer ({}), and whether they do together is not decided",
                c.summary(),
                p.summary()
            ))
        });
        Compat::Unknown { reason }
    }

    /// Compatible when `p` has no value at all, else Unknown: `what` could not be built.
    fn cannot_build(&mut self, p: &Ty, what: &str) -> Compat {
        match self.inhabited(p) {
            Some(false) => Compat::Compatible,
            _ => {
                let why = opaque_reason(p).map_or_else(
                    || {
                        if has_pattern(p) {
                            "a `pattern` no candidate string matched".to_owned()
                        } else {
                            "the producer's constraints".to_owned()
                        }
                    },
                    str::to_owned,
                );
                self.unknown(format!("could not construct {what} ({why})"))
            }
        }
    }
}

/// Why the consumer `c` rejects `v`, as the end of a sentence.
fn why(c: &Ty, v: &Json) -> String {
    let all_literal = |ms: &[Ty]| ms.iter().all(|m| matches!(m, Ty::Literal(_) | Ty::Null));
    match (c, v) {
        (Ty::Never, _) => "the consumer accepts no value (`false`)".to_owned(),
        (Ty::Literal(w), _) => format!("the consumer accepts only {}", show(w)),
        (Ty::Union(ms), _) if all_literal(ms) => {
            format!("the consumer allows only {}", c.summary())
        }
        (Ty::Union(_), _) => format!(
            "it matches none of the consumer's alternatives ({})",
            c.summary()
        ),
        (Ty::Int(_), Json::Number(n)) if !is_integral(n) => {
            "the consumer expects an integer".to_owned()
        }
        (Ty::Int(r) | Ty::Number(r), Json::Number(n)) => {
            let x = n.as_f64().unwrap_or(0.0);
            let below = |b: Bound| x < b.value || (x == b.value && b.exclusive);
            match (r.min, r.max) {
                (Some(b), _) if below(b) => {
                    format!("the consumer's {}", numbers::describe(b, true))
                }
                (_, Some(b)) => format!("the consumer's {}", numbers::describe(b, false)),
                _ => format!("the consumer expects {}", c.summary()),
            }
        }
        (Ty::String(s), Json::String(text)) => {
            let n = text.chars().count() as u64;
            match s.max_len {
                _ if n < s.min_len => format!("the consumer's `minLength` is {}", s.min_len),
                Some(max) if n > max => format!("the consumer's `maxLength` is {max}"),
                _ => format!(
                    "it does not match the consumer's `pattern` `{}`",
                    s.pattern.as_deref().unwrap_or("")
                ),
            }
        }
        _ if !c.is_possibly(Kind::of(v)) => format!("the consumer expects {}", c.summary()),
        _ => format!("the consumer rejects it ({})", c.summary()),
    }
}

/// Every JSON value, kind by kind: how an `Any` producer is compared.
fn any_value() -> Ty {
    Ty::Union(vec![
        Ty::Null,
        Ty::Bool,
        Ty::Number(Default::default()),
        Ty::String(Default::default()),
        Ty::List(Box::default()),
        Ty::Object(Box::default()),
    ])
}

/// An exact partition of `p` into parts a consumer union may cover one by one.
fn split(p: &Ty) -> Option<Vec<Ty>> {
    let booleans = || {
        vec![
            Ty::Literal(Json::Bool(false)),
            Ty::Literal(Json::Bool(true)),
        ]
    };
    match p {
        Ty::Bool => Some(booleans()),
        Ty::Int(r) => {
            let (lo, hi) = r.integer_bounds();
            let (lo, hi) = (lo?, hi?);
            (hi >= lo && hi - lo < MAX_SPLIT_PARTS as f64).then(|| {
                (0..=(hi - lo) as i64)
                    .map(|k| Ty::Literal(numbers::number(lo + k as f64)))
                    .collect()
            })
        }
        Ty::Object(o) => {
            let splittable = |t: &Ty, literal_only: bool| match t {
                Ty::Bool => true,
                Ty::Union(ms) => {
                    ms.len() <= MAX_SPLIT_PARTS
                        && (!literal_only
                            || ms.iter().all(|m| matches!(m, Ty::Literal(_) | Ty::Null)))
                }
                _ => false,
            };
            // Discriminators (enums, booleans) first.
            let index = o
                .properties
                .iter()
                .position(|(_, prop)| splittable(&prop.ty, true))
                .or_else(|| {
                    o.properties
                        .iter()
                        .position(|(_, prop)| splittable(&prop.ty, false))
                })?;
            let prop = &o.properties[index].1;
            let mut parts: Vec<Ty> = match &prop.ty {
                Ty::Union(ms) => ms.clone(),
                _ => booleans(),
            };
            if !prop.required {
                parts.push(Ty::Never);
            }
            Some(
                parts
                    .into_iter()
                    .map(|t| {
                        let mut part = o.clone();
                        part.properties[index].1.ty = t;
                        Ty::Object(part).normalize()
                    })
                    .collect(),
            )
        }
        _ => None,
    }
}

/// The first opaque part of `ty`'s reason, if any.
fn opaque_reason(ty: &Ty) -> Option<&str> {
    match ty {
        Ty::Opaque(why) => Some(why),
        Ty::Union(ms) => ms.iter().find_map(opaque_reason),
        Ty::List(l) => l.prefix.iter().chain([&l.items]).find_map(opaque_reason),
        Ty::Object(o) => o
            .properties
            .iter()
            .map(|(_, p)| &p.ty)
            .chain([&o.rest])
            .find_map(opaque_reason),
        _ => None,
    }
}

fn has_pattern(ty: &Ty) -> bool {
    match ty {
        Ty::String(s) => s.pattern.is_some(),
        Ty::Union(ms) => ms.iter().any(has_pattern),
        Ty::List(l) => l.prefix.iter().chain([&l.items]).any(has_pattern),
        Ty::Object(o) => o
            .properties
            .iter()
            .map(|(_, p)| &p.ty)
            .chain([&o.rest])
            .any(has_pattern),
        _ => false,
    }
}

/// A value for a message: compact JSON, shortened past 60 characters.
/// The finding, if any, for a value of `producer` flowing into `consumer` at `at`/`span`
/// (LW501 when some value may not fit, with an example; LW502 when it cannot be decided):
/// `names` gives what names the value and where it goes, and is called only for a
/// finding (most flows fit). A dyn producer (`{}` schemas, or a value after an earlier
/// finding) is left to run time.
pub fn flow_finding(
    producer: &Ty,
    consumer: &Ty,
    at: &str,
    span: Span,
    names: impl FnOnce() -> (String, String),
) -> Option<Finding> {
    if matches!(producer, Ty::Any) {
        return None;
    }
    match check(producer, consumer) {
        Compat::Compatible => None,
        Compat::Incompatible {
            counterexample,
            reason,
            constraint,
        } => {
            let (what, into) = names();
            let gives = producer.summary_with_constraints();
            let example = show(&counterexample);
            let message = match constraint {
                Some(constraint) => format!(
                    "{what} may not fit {into}: it gives {gives}, which the consumer's \
                     {constraint} does not accept (e.g. {example})"
                ),
                None => format!(
                    "{what} may not fit {into}: it gives {gives}, which accepts {} (e.g. \
                     {example})",
                    consumer.summary_with_constraints(),
                ),
            };
            Some(
                Finding::new(Code::IncompatibleValueFlow, at, span, message)
                    .with_help(format!("for example {counterexample}: {reason}")),
            )
        }
        Compat::Unknown { reason } => {
            let (what, into) = names();
            Some(
                Finding::new(
                    Code::UndecidableValueFlow,
                    at,
                    span,
                    format!("cannot tell whether {what} fits {into}"),
                )
                .with_help(reason),
            )
        }
    }
}

pub(crate) fn show(v: &Json) -> String {
    crate::types::short(v, 60)
}

fn kind_name(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(n) if is_integral(n) => "an integer",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

/// Keeps the first reason an answer was not decided; a Compatible answer (the producer
/// turned out to be empty) changes nothing here.
impl Compat {
    /// The counterexample and reason of an `Incompatible` answer, for the caller to embed
    /// in a value of its own; an `Unknown` answer's reason is kept in `unknown` (the first
    /// one kept stays), and a compatible answer is nothing.
    fn refuted(self, unknown: &mut Option<String>) -> Option<(Json, String)> {
        match self {
            Compat::Compatible => None,
            Compat::Unknown { reason } => {
                unknown.get_or_insert(reason);
                None
            }
            Compat::Incompatible {
                counterexample,
                reason,
                ..
            } => Some((counterexample, reason)),
        }
    }

    /// `Incompatible` with the value `built` that embeds a part's counterexample, for the
    /// part's `reason`; when no such value could be built, nothing (and why, in `unknown`).
    fn embedded(
        built: Option<Json>,
        reason: String,
        unknown: &mut Option<String>,
        cannot: impl FnOnce() -> Compat,
    ) -> Option<Compat> {
        match built {
            Some(counterexample) => Some(Compat::Incompatible {
                counterexample,
                reason,
                constraint: None,
            }),
            None => {
                note(unknown, cannot());
                None
            }
        }
    }
}

fn note(unknown: &mut Option<String>, answer: Compat) {
    if let Compat::Unknown { reason } = answer {
        unknown.get_or_insert(reason);
    }
}
