//! Building values of a type: small samples (simplest first), lists and objects around a
//! given item or property, and whether a type has any value at all.

use std::collections::HashSet;

use crate::types::{ListTy, ObjectTy, Ty, json_equal};
use serde_json::{Map, Value as Json};

use super::{Checker, MAX_ITEMS, MAX_PROPERTIES, numbers, strings};

impl Checker {
    /// Up to `n` distinct values of `ty`, simplest first, each confirmed to be of `ty`.
    pub(super) fn samples(&mut self, ty: &Ty, n: usize) -> Vec<Json> {
        let mut out: Vec<Json> = Vec::new();
        for v in self.candidates(ty, n) {
            if out.len() >= n {
                break;
            }
            if !out.iter().any(|w| json_equal(w, &v)) && self.accepts(ty, &v) == Some(true) {
                out.push(v);
            }
        }
        out
    }

    /// The simplest value of `ty` that could be built.
    pub(super) fn witness(&mut self, ty: &Ty) -> Option<Json> {
        self.samples(ty, 1).pop()
    }

    /// `Some(true)` when a value was built, `Some(false)` when `ty` provably has none.
    pub(super) fn inhabited(&mut self, ty: &Ty) -> Option<bool> {
        if self.witness(ty).is_some() {
            Some(true)
        } else if self.empty(ty) {
            Some(false)
        } else {
            None
        }
    }

    /// Whether `ty` provably has no value: empty by its bounds (see [`Ty::normalize`]), or
    /// by a string of at most zero characters whose pattern rejects `""`.
    fn empty(&mut self, ty: &Ty) -> bool {
        match ty {
            Ty::String(s) if s.max_len == Some(0) => match &s.pattern {
                Some(p) => self.patterns.is_match(p, "") == Some(false),
                None => false,
            },
            Ty::Union(ms) => ms.iter().all(|m| self.empty(m)),
            Ty::List(l) => {
                let min = usize::try_from(l.min_items).unwrap_or(usize::MAX);
                (0..min.min(l.prefix.len() + 1)).any(|i| self.empty(l.at(i)))
            }
            Ty::Object(o) => o
                .properties
                .iter()
                .any(|(_, p)| p.required && self.empty(&p.ty)),
            other => other.clone().normalize() == Ty::Never,
        }
    }

    fn candidates(&mut self, ty: &Ty, n: usize) -> Vec<Json> {
        match ty {
            Ty::Any => vec![
                Json::Null,
                Json::Bool(false),
                Json::from(0),
                Json::from(""),
                Json::Array(Vec::new()),
                Json::Object(Map::new()),
            ],
            Ty::Never | Ty::Opaque(_) => Vec::new(),
            Ty::Null => vec![Json::Null],
            Ty::Bool => vec![Json::Bool(false), Json::Bool(true)],
            Ty::Literal(v) => vec![v.clone()],
            Ty::Int(r) => numbers::integers(r, n)
                .into_iter()
                .map(numbers::number)
                .collect(),
            Ty::Number(r) => numbers::reals(r, n)
                .into_iter()
                .map(numbers::number)
                .collect(),
            Ty::String(s) => strings::string_samples(self, s, n)
                .into_iter()
                .map(Json::String)
                .collect(),
            Ty::Union(members) => {
                let mut out = Vec::new();
                for m in members {
                    if out.len() >= n {
                        break;
                    }
                    out.extend(self.samples(m, n - out.len()));
                }
                out
            }
            Ty::List(l) => self.list_samples(l, n),
            Ty::Object(o) => self.object_samples(o, n),
        }
    }

    fn list_samples(&mut self, l: &ListTy, n: usize) -> Vec<Json> {
        let min = l.min_items;
        let mut out: Vec<Json> = self.list_with(l, &[], min).into_iter().collect();
        if out.len() < n
            && let Some(x) = self.list_with(l, &[], min + 1)
        {
            out.push(x);
        }
        if out.len() < n
            && min > 0
            && let Some(second) = self.samples(l.at(0), 2).get(1).cloned()
            && let Some(x) = self.list_with(l, &[(0, second)], min)
        {
            out.push(x);
        }
        out
    }

    fn object_samples(&mut self, o: &ObjectTy, n: usize) -> Vec<Json> {
        let mut out: Vec<Json> = self.object_with(o, &[], None, 0).into_iter().collect();
        for (name, prop) in &o.properties {
            if out.len() >= n {
                break;
            }
            let value = if prop.required {
                self.samples(&prop.ty, 2).get(1).cloned()
            } else {
                self.witness(&prop.ty)
            };
            if let Some(v) = value
                && let Some(x) = self.object_with(o, &[(name.clone(), v)], None, 0)
            {
                out.push(x);
            }
        }
        out
    }

    /// A list of `l` with `len` items, `fixed` ones at their positions and the simplest
    /// values elsewhere (distinct ones when `l` wants unique items).
    pub(super) fn list_with(
        &mut self,
        l: &ListTy,
        fixed: &[(usize, Json)],
        len: u64,
    ) -> Option<Json> {
        if len > MAX_ITEMS || len < l.min_items || l.max_items.is_some_and(|m| len > m) {
            return None;
        }
        let len = len as usize;
        let mut used: Vec<Json> = fixed.iter().map(|(_, v)| v.clone()).collect();
        let mut tail: Option<Vec<Json>> = None;
        let mut out = Vec::with_capacity(len);
        for i in 0..len {
            if let Some((_, v)) = fixed.iter().find(|(j, _)| *j == i) {
                out.push(v.clone());
                continue;
            }
            let wanted = if l.unique { used.len() + 1 } else { 1 };
            let pool = if i < l.prefix.len() {
                self.samples(&l.prefix[i], wanted)
            } else {
                if tail.is_none() {
                    let count = if l.unique { len + fixed.len() } else { 1 };
                    tail = Some(self.samples(&l.items, count));
                }
                tail.clone().unwrap_or_default()
            };
            let choice = pool
                .into_iter()
                .find(|v| !l.unique || !used.iter().any(|u| json_equal(u, v)))?;
            if l.unique {
                used.push(choice.clone());
            }
            out.push(choice);
        }
        Some(Json::Array(out))
    }

    /// An object of `o` holding `fixed`, every required property but `omit` (none when
    /// `omit` is required), and at least `at_least` (and `minProperties`) properties.
    pub(super) fn object_with(
        &mut self,
        o: &ObjectTy,
        fixed: &[(String, Json)],
        omit: Option<&str>,
        at_least: u64,
    ) -> Option<Json> {
        let mut map: Map<String, Json> = fixed.iter().cloned().collect();
        for (name, prop) in &o.properties {
            if !prop.required || map.contains_key(name) {
                continue;
            }
            if omit == Some(name.as_str()) {
                return None;
            }
            let v = self.witness(&prop.ty)?;
            map.insert(name.clone(), v);
        }
        let target = o.min_properties.max(at_least);
        if target > MAX_PROPERTIES {
            return None;
        }
        for (name, prop) in &o.properties {
            if map.len() as u64 >= target {
                break;
            }
            if map.contains_key(name) || omit == Some(name.as_str()) {
                continue;
            }
            if let Some(v) = self.witness(&prop.ty) {
                map.insert(name.clone(), v);
            }
        }
        if (map.len() as u64) < target {
            let value = self.witness(&o.rest)?;
            let declared: HashSet<&str> = o.properties.iter().map(|(n, _)| n.as_str()).collect();
            let mut i = 1;
            while (map.len() as u64) < target {
                let key = if i == 1 {
                    "extra".to_owned()
                } else {
                    format!("extra{i}")
                };
                i += 1;
                if !declared.contains(key.as_str()) && !map.contains_key(&key) {
                    map.insert(key, value.clone());
                }
            }
        }
        if o.max_properties.is_some_and(|m| map.len() as u64 > m) {
            return None;
        }
        Some(Json::Object(map))
    }
}

/// Whether `ty` has exactly one value (as far as its structure shows).
pub(super) fn singleton(ty: &Ty) -> bool {
    match ty {
        Ty::Null | Ty::Literal(_) => true,
        Ty::Int(r) => {
            let (lo, hi) = r.integer_bounds();
            lo.is_some() && lo == hi
        }
        Ty::Number(r) => matches!(
            (r.min, r.max),
            (Some(a), Some(b)) if a.value == b.value && !a.exclusive && !b.exclusive
        ),
        Ty::String(s) => s.max_len == Some(0),
        Ty::List(l) => {
            let fixed_len = if l.items == Ty::Never {
                Some(l.prefix.len() as u64)
            } else {
                l.max_items
            };
            match fixed_len {
                Some(0) => true,
                Some(n) if n == l.min_items => (0..n as usize).all(|i| singleton(l.at(i))),
                _ => l.max_items == Some(0),
            }
        }
        Ty::Object(o) => {
            o.max_properties == Some(0)
                || (o.rest == Ty::Never
                    && o.properties
                        .iter()
                        .all(|(_, p)| p.required && singleton(&p.ty)))
        }
        _ => false,
    }
}
