//! Lists: lengths, each position (`prefixItems`, then `items`), and `uniqueItems`.

use crate::types::{ListTy, Ty};

use super::{Checker, Compat, MAX_ITEMS, note};

/// Positions compared pairwise when looking for an item the producer may repeat.
const UNIQUE_WINDOW: usize = 8;

pub(super) fn check(cx: &mut Checker, p: &ListTy, c: &ListTy) -> Compat {
    let p_max = longest(p);
    if p_max < p.min_items {
        return Compat::Compatible;
    }
    let mut unknown: Option<String> = None;
    if p.min_items < c.min_items {
        let len = p.min_items;
        match cx.list_with(p, &[], len) {
            Some(x) => {
                return cx.no(
                    x,
                    format!(
                        "the producer may emit a list of {len} items, but the consumer's `minItems` is {}",
                        c.min_items
                    ),
                );
            }
            None => note(
                &mut unknown,
                cx.cannot_build(&list(p), "a short enough list"),
            ),
        }
    }
    if let Some(c_max) = c.max_items
        && p_max > c_max
    {
        let len = (c_max + 1).max(p.min_items);
        if len > MAX_ITEMS {
            note(
                &mut unknown,
                cx.unknown(format!(
                    "the consumer's `maxItems` {c_max}: a counterexample would have more than {MAX_ITEMS} items"
                )),
            );
        } else {
            match cx.list_with(p, &[], len) {
                Some(x) => {
                    return cx.no(
                        x,
                        format!(
                            "the producer may emit a list of {len} items, but the consumer's `maxItems` is {c_max}"
                        ),
                    );
                }
                None => note(
                    &mut unknown,
                    cx.cannot_build(&list(p), "a long enough list"),
                ),
            }
        }
    }
    // Each position where the prefixes differ, then the common tail.
    let positions = p.prefix.len().max(c.prefix.len());
    for i in 0..=positions {
        if i as u64 >= p_max {
            break;
        }
        let (pt, ct) = (p.at(i), c.at(i));
        if *pt == Ty::Never {
            break;
        }
        let answer = cx.sub_at(i.to_string(), pt, ct);
        if let Some((counterexample, reason)) = answer.refuted(&mut unknown) {
            let len = p.min_items.max(i as u64 + 1);
            let built = cx.list_with(p, &[(i, counterexample)], len);
            let cannot = || cx.cannot_build(&list(p), "a list around the item");
            if let Some(no) = Compat::embedded(built, reason, &mut unknown, cannot) {
                return no;
            }
        }
    }
    if c.unique && !p.unique && p_max >= 2 {
        match repeat(cx, p, p_max) {
            Repeat::Found(x) => {
                return cx.no(
                    x,
                    "the producer may repeat an item, but the consumer requires `uniqueItems`",
                );
            }
            Repeat::Impossible => {}
            Repeat::NotFound => {
                unknown.get_or_insert_with(|| {
                    cx.located(
                        "the consumer's `uniqueItems`, which the producer does not have: no list with a repeated item was found",
                    )
                });
            }
        }
    }
    unknown.map_or(Compat::Compatible, |reason| Compat::Unknown { reason })
}

enum Repeat {
    /// A list of the producer with a repeated item.
    Found(serde_json::Value),
    /// No two positions of the producer can hold the same value.
    Impossible,
    /// Neither shown.
    NotFound,
}

/// A list of `p` with the same value at two positions. Positions past the prefix all have
/// the `items` type, so the pairs among the prefix and two more positions cover every list.
fn repeat(cx: &mut Checker, p: &ListTy, p_max: u64) -> Repeat {
    let all = p.prefix.len() + 2;
    let window = all
        .min(UNIQUE_WINDOW)
        .min(usize::try_from(p_max).unwrap_or(usize::MAX));
    let mut disjoint = true;
    for j in 1..window {
        for i in 0..j {
            let both = p.at(i).intersect(p.at(j));
            if both == Ty::Never {
                continue;
            }
            disjoint = false;
            if let Some(w) = cx.witness(&both) {
                let len = p.min_items.max(j as u64 + 1);
                if let Some(x) = cx.list_with(p, &[(i, w.clone()), (j, w)], len) {
                    return Repeat::Found(x);
                }
            }
        }
    }
    let covered = window == all || window as u64 == p_max;
    if disjoint && covered {
        Repeat::Impossible
    } else {
        Repeat::NotFound
    }
}

/// The most items a list of `p` can have (`u64::MAX`: unbounded).
fn longest(p: &ListTy) -> u64 {
    let mut max = p.max_items.unwrap_or(u64::MAX);
    if let Some(blocked) = p.prefix.iter().position(|t| *t == Ty::Never) {
        max = max.min(blocked as u64);
    }
    if p.items == Ty::Never {
        max = max.min(p.prefix.len() as u64);
    }
    if p.unique
        && let Some(n) = distinct_values(&p.items)
    {
        // Past the prefix every item has the `items` type, and no two may be equal.
        max = max.min((p.prefix.len() as u64).saturating_add(n));
    }
    max
}

/// How many values `ty` has, when it is a small finite type.
fn distinct_values(ty: &Ty) -> Option<u64> {
    match ty {
        Ty::Never => Some(0),
        Ty::Null | Ty::Literal(_) => Some(1),
        Ty::Bool => Some(2),
        Ty::Int(r) => match r.integer_bounds() {
            (Some(lo), Some(hi)) if hi - lo < 1e6 => Some((hi - lo + 1.0).max(0.0) as u64),
            _ => None,
        },
        // Literal members are distinct up to `1` = `1.0`: counting both over-counts, which
        // only makes the bound looser.
        Ty::Union(ms) => ms
            .iter()
            .try_fold(0u64, |n, m| Some(n + distinct_values(m)?)),
        _ => None,
    }
}

fn list(p: &ListTy) -> Ty {
    Ty::List(Box::new(p.clone()))
}
