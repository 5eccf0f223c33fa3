//! Objects: `required`, each property's type, the open or closed rest, and property counts.

use std::collections::HashSet;

use crate::types::{ObjectTy, Ty};
use serde_json::Value as Json;

use super::{Checker, Compat, MAX_PROPERTIES, note};

pub(super) fn check(cx: &mut Checker, p: &ObjectTy, c: &ObjectTy) -> Compat {
    let mut unknown: Option<String> = None;
    let whole = || Ty::Object(Box::new(p.clone()));

    for (name, prop) in &c.properties {
        if prop.required && !p.requires(name) {
            match cx.object_with(p, &[], Some(name), 0) {
                Some(x) => {
                    return cx.no(
                        x,
                        format!(
                            "the producer may omit property `{name}`, which the consumer requires"
                        ),
                    );
                }
                None => note(
                    &mut unknown,
                    cx.cannot_build(&whole(), "an object without it"),
                ),
            }
        }
    }

    // The producer's declared properties, then the consumer's others (which the producer's
    // rest may fill).
    let declared: HashSet<&str> = p.properties.iter().map(|(n, _)| n.as_str()).collect();
    let names = p.properties.iter().map(|(n, _)| n).chain(
        c.properties
            .iter()
            .map(|(n, _)| n)
            .filter(|n| !declared.contains(n.as_str())),
    );
    for name in names {
        let pt = p.type_of(name);
        if *pt == Ty::Never {
            continue;
        }
        let answer = cx.sub_at(name.clone(), pt, c.type_of(name));
        if let Some((counterexample, reason)) = answer.refuted(&mut unknown) {
            let built = cx.object_with(p, &[(name.clone(), counterexample)], None, 0);
            let cannot = || cx.cannot_build(&whole(), "an object around the property");
            if let Some(no) = Compat::embedded(built, reason, &mut unknown, cannot) {
                return no;
            }
        }
    }

    // Every other property name: the producer's rest against the consumer's.
    if p.rest != Ty::Never && c.rest != Ty::Any {
        let key = fresh_key(p, Some(c), &serde_json::Map::new());
        let answer = cx.sub_at(key.clone(), &p.rest, &c.rest);
        if let Some((counterexample, reason)) = answer.refuted(&mut unknown) {
            let reason = if c.rest == Ty::Never {
                cx.located(format!(
                    "the producer's object is open (no `additionalProperties: false`) but the consumer's is closed: it rejects the extra property `{key}`"
                ))
            } else {
                reason
            };
            let built = cx.object_with(p, &[(key, counterexample)], None, 0);
            let cannot = || cx.cannot_build(&whole(), "an object with an extra property");
            if let Some(no) = Compat::embedded(built, reason, &mut unknown, cannot) {
                return no;
            }
        }
    }

    let required = p.properties.iter().filter(|(_, q)| q.required).count() as u64;
    let fewest = p.min_properties.max(required);
    if fewest < c.min_properties {
        match cx.object_with(p, &[], None, 0) {
            Some(x) => {
                let n = x.as_object().map_or(0, serde_json::Map::len);
                return cx.no(
                    x,
                    format!(
                        "the producer may emit an object with {n} properties, but the consumer's `minProperties` is {}",
                        c.min_properties
                    ),
                );
            }
            None => note(
                &mut unknown,
                cx.cannot_build(&whole(), "an object with few properties"),
            ),
        }
    }
    if let Some(c_max) = c.max_properties
        && most(p) > c_max
    {
        let n = c_max + 1;
        if n > MAX_PROPERTIES {
            unknown.get_or_insert_with(|| {
                cx.located(format!(
                    "the consumer's `maxProperties` {c_max}: a counterexample would have more than {MAX_PROPERTIES} properties"
                ))
            });
        } else {
            match cx.object_with(p, &[], None, n) {
                Some(x) => {
                    return cx.no(
                        x,
                        format!(
                            "the producer may emit an object with {n} properties, but the consumer's `maxProperties` is {c_max}"
                        ),
                    );
                }
                None => note(
                    &mut unknown,
                    cx.cannot_build(&whole(), "an object with many properties"),
                ),
            }
        }
    }
    unknown.map_or(Compat::Compatible, |reason| Compat::Unknown { reason })
}

/// The most properties an object of `p` can have (`u64::MAX`: unbounded).
fn most(p: &ObjectTy) -> u64 {
    let max = p.max_properties.unwrap_or(u64::MAX);
    if p.rest == Ty::Never {
        let possible = p
            .properties
            .iter()
            .filter(|(_, q)| q.ty != Ty::Never)
            .count();
        max.min(possible as u64)
    } else {
        max
    }
}

/// A property name neither object declares and `taken` does not hold: `extra`, `extra2`, …
pub(super) fn fresh_key(
    p: &ObjectTy,
    c: Option<&ObjectTy>,
    taken: &serde_json::Map<String, Json>,
) -> String {
    let free = |k: &str| {
        p.prop(k).is_none() && c.is_none_or(|c| c.prop(k).is_none()) && !taken.contains_key(k)
    };
    if free("extra") {
        return "extra".to_owned();
    }
    (2..)
        .map(|i| format!("extra{i}"))
        .find(|k| free(k))
        .unwrap_or_default()
}
