//! Numbers: interval inclusion with inclusive and exclusive bounds, integers against
//! numbers, and picking small numbers inside intervals for counterexamples.

use crate::types::{Bound, Range};
use serde_json::Value as Json;

use super::{Checker, Compat};

/// What [`pick`] looks for.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Want {
    /// An integer.
    Integer,
    /// Any number, an integer if there is one.
    Any,
    /// A number with a fraction.
    Fraction,
}

/// Whether the numbers of `p` (integers when `p_int`) are all in `c` (integers when `c_int`).
pub(super) fn check(cx: &Checker, p: &Range, p_int: bool, c: &Range, c_int: bool) -> Compat {
    if p.is_empty(p_int) {
        return Compat::Compatible;
    }
    if c_int
        && !p_int
        && let Some(x) = pick(p, Want::Fraction)
    {
        let x = number(x);
        return cx.no(
            x.clone(),
            format!("the producer may emit {x}, but the consumer expects an integer"),
        );
    }
    let want = if p_int { Want::Integer } else { Want::Any };
    if let Some(lo) = c.min {
        let below = Range {
            min: None,
            max: Some(Bound {
                value: lo.value,
                exclusive: !lo.exclusive,
            }),
        };
        if let Some(x) = pick(&p.intersect(&below), want) {
            let x = number(x);
            return cx.no(
                x.clone(),
                format!(
                    "the producer may emit {x}, below the consumer's {}",
                    describe(lo, true)
                ),
            );
        }
    }
    if let Some(hi) = c.max {
        let above = Range {
            min: Some(Bound {
                value: hi.value,
                exclusive: !hi.exclusive,
            }),
            max: None,
        };
        if let Some(x) = pick(&p.intersect(&above), want) {
            let x = number(x);
            return cx.no(
                x.clone(),
                format!(
                    "the producer may emit {x}, above the consumer's {}",
                    describe(hi, false)
                ),
            );
        }
    }
    Compat::Compatible
}

/// A bound as its keyword: "`minimum` 0", "`exclusiveMaximum` 10".
pub(super) fn describe(b: Bound, lower: bool) -> String {
    let keyword = match (lower, b.exclusive) {
        (true, false) => "minimum",
        (true, true) => "exclusiveMinimum",
        (false, false) => "maximum",
        (false, true) => "exclusiveMaximum",
    };
    format!("`{keyword}` {}", number(b.value))
}

/// A number in `r`, as close to zero as convenient.
pub(super) fn pick(r: &Range, want: Want) -> Option<f64> {
    if r.is_empty(false) {
        return None;
    }
    let int = nearest_integer(r);
    match want {
        Want::Integer => int,
        Want::Any => int.or_else(|| fraction(r, None)),
        Want::Fraction => fraction(r, int),
    }
}

/// Up to `n` integers of `r`, nearest to zero first.
pub(super) fn integers(r: &Range, n: usize) -> Vec<f64> {
    let Some(first) = nearest_integer(r) else {
        return Vec::new();
    };
    let mut out = vec![first];
    let mut step = 1.0;
    while out.len() < n && step <= 2.0 * n as f64 {
        for x in [first + step, first - step] {
            if out.len() < n && r.contains(x) && x != first {
                out.push(x);
            }
        }
        step += 1.0;
    }
    out
}

/// Up to `n` numbers of `r`: an integer, a fraction, then more integers.
pub(super) fn reals(r: &Range, n: usize) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for x in [pick(r, Want::Any), pick(r, Want::Fraction)]
        .into_iter()
        .flatten()
        .chain(integers(r, n))
    {
        if out.len() < n && !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

fn nearest_integer(r: &Range) -> Option<f64> {
    let (lo, hi) = r.integer_bounds();
    if let (Some(l), Some(h)) = (lo, hi)
        && l > h
    {
        return None;
    }
    let x = match (lo, hi) {
        (Some(l), _) if l > 0.0 => l,
        (_, Some(h)) if h < 0.0 => h,
        _ => 0.0,
    };
    x.is_finite().then_some(x)
}

fn fraction(r: &Range, int: Option<f64>) -> Option<f64> {
    let mut candidates = Vec::new();
    if let Some(n) = int {
        candidates.extend([n + 0.5, n - 0.5]);
    }
    if let (Some(a), Some(b)) = (r.min, r.max) {
        candidates.push(a.value / 2.0 + b.value / 2.0);
    }
    if let Some(a) = r.min {
        candidates.extend([a.value, a.value + 0.5]);
    }
    if let Some(b) = r.max {
        candidates.extend([b.value, b.value - 0.5]);
    }
    candidates
        .into_iter()
        .find(|&x| x.is_finite() && x.fract() != 0.0 && r.contains(x))
}

/// `x` as JSON: an integer when it is one (and exact), else a double.
pub(super) fn number(x: f64) -> Json {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Json::from(x as i64)
    } else {
        serde_json::Number::from_f64(x).map_or(Json::Null, Json::Number)
    }
}
