//! Types derived from JSON Schemas of the supported subset: what the expression type checker
//! reads member types from, and what the compatibility validator compares.
//!
//! # The model
//! A [`Ty`] stands for a set of JSON values — the values a schema accepts. Keywords of one
//! schema object are conjunctive, so [`Ty::from_schema`] builds one type per keyword group
//! (`type` with the keywords of each listed type, `const`, `enum`, `$ref`, `allOf`, `anyOf`,
//! `oneOf`) and intersects them ([`Ty::intersect`]). Type-specific keywords without `type`
//! constrain only their own kind, as JSON Schema says: `{"minLength": 1}` is
//! `null | boolean | number | string | list<any> | object`, with the string part constrained.
//!
//! | schema | type |
//! |---|---|
//! | `{}`, `true` / `false` | [`Ty::Any`] / [`Ty::Never`] |
//! | `"integer"` + `minimum`… | [`Ty::Int`] with its [`Range`] as written |
//! | `"number"` + `minimum`… | [`Ty::Number`] (integers included) |
//! | `"string"` + `*Length`, `pattern` | [`Ty::String`]; lengths count code points |
//! | `"array"` + `prefixItems`, `items`, `*Items`, `uniqueItems` | [`Ty::List`] |
//! | `"object"` + `properties`, `required`, `additionalProperties`, `*Properties` | [`Ty::Object`]; a required name without a `properties` entry gets the `additionalProperties` type |
//! | `const`, one `enum` member | [`Ty::Literal`] (`null` is [`Ty::Null`]) |
//! | `enum`, `anyOf`, `type` lists | [`Ty::Union`] |
//! | `allOf` | the intersection of its members |
//!
//! # Exactness and limits
//! Every type is exact — the same set of values as its schema — except:
//! - `oneOf` in [`Ty::from_schema`] is the union of its branches, an over-approximation: a
//!   value matching two branches is rejected by `oneOf` but belongs to the union. The type
//!   checker wants that (what *may* flow). [`Ty::from_schema_exact`] is for the compatibility
//!   validator: a `oneOf` whose branches are not provably pairwise disjoint (at most
//!   [`MAX_ONE_OF_BRANCHES`] are compared) becomes [`Ty::Opaque`] there.
//! - [`Ty::Opaque`], which says why, for what the model cannot represent: a `$ref` that
//!   recurses (the first expansion is modelled, the recursive occurrence below it is
//!   `Opaque("recursive `$ref` to …")`); `allOf` of two different `pattern`s; `enum`/`const`
//!   together with a `pattern` (patterns are not evaluated here); `allOf` over unions with more
//!   than [`MAX_UNION_PRODUCT`] combinations; more than [`MAX_SUBSCHEMAS`] subschemas after
//!   expanding `$ref`s; nesting deeper than [`MAX_NESTING`]; a `$ref` that does not resolve.
//!
//! Annotations (`format`, `title`, …) are ignored. Malformed keyword values (which the subset
//! validator reports) are ignored too: nothing here panics on odd input.
//!
//! Every derivation is linear in the schema's size after `$ref` expansion (itself capped),
//! except `allOf` over unions (capped as above) and the `oneOf` disjointness check of
//! [`Ty::from_schema_exact`] (quadratic in the branch count, capped).
//!
//! # Where
//! The model and its algebra (intersection, unions, membership) are here; how a type is
//! written is `types/render.rs`; how one is derived from a schema, `types/schema.rs`.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::Value as Json;

use lwir_spec::document::Node;

mod render;
mod schema;

use render::summarize;
pub use render::{MAX_SUMMARY_CHARS, short};
use schema::Builder;

/// At most this many subschemas are visited while deriving one type (`$ref`s expanded);
/// beyond it the rest is [`Ty::Opaque`].
pub const MAX_SUBSCHEMAS: usize = 10_000;

/// Schemas nested deeper than this (counting `$ref` expansions) are [`Ty::Opaque`].
pub const MAX_NESTING: usize = 200;

/// `allOf` over unions: intersecting unions of `m` and `n` members makes `m × n` members;
/// beyond this many the intersection is [`Ty::Opaque`].
pub const MAX_UNION_PRODUCT: usize = 256;

/// [`Ty::from_schema_exact`] proves `oneOf` branches disjoint for at most this many branches.
pub const MAX_ONE_OF_BRANCHES: usize = 16;

/// A JSON type derived from a schema of the supported subset.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Ty {
    /// `{}` / `true`: any value (dyn).
    Any,
    /// `false`: no value.
    Never,
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool,
    /// JSON integers (numbers with a zero fraction, `1.0` included), within the bounds.
    Int(Range),
    /// Any JSON number (integers included), within the bounds.
    Number(Range),
    /// A string.
    String(StringTy),
    /// An array.
    List(Box<ListTy>),
    /// An object.
    Object(Box<ObjectTy>),
    /// Exactly this value (`const`, one `enum` member). Numbers compare by value (`1` = `1.0`).
    Literal(Json),
    /// Any of these (`anyOf`, `enum`, `type` lists, `oneOf` on the producer side).
    Union(Vec<Ty>),
    /// A schema the model cannot represent exactly; the text says why.
    Opaque(String),
}

/// Numeric bounds, as written in the schema (the tighter of `minimum`/`exclusiveMinimum`).
#[derive(Clone, Debug, PartialEq, Default, Serialize)]
pub struct Range {
    /// The lower bound, if any.
    pub min: Option<Bound>,
    /// The upper bound, if any.
    pub max: Option<Bound>,
}

/// One numeric bound.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Bound {
    /// The bound.
    pub value: f64,
    /// Whether the bound itself is excluded (`exclusiveMinimum`/`exclusiveMaximum`).
    pub exclusive: bool,
}

/// A string type. Lengths count Unicode code points, as JSON Schema does.
#[derive(Clone, Debug, PartialEq, Default, Serialize)]
pub struct StringTy {
    /// `minLength` (0 when absent).
    pub min_len: u64,
    /// `maxLength`.
    pub max_len: Option<u64>,
    /// `pattern`: an ECMA-262 regular expression that must match somewhere in the string.
    pub pattern: Option<String>,
}

/// A list type.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ListTy {
    /// `prefixItems`: the types of the first elements, by position.
    pub prefix: Vec<Ty>,
    /// `items`: the type of every element after the prefix ([`Ty::Any`] when absent).
    pub items: Ty,
    /// `minItems` (0 when absent).
    pub min_items: u64,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `uniqueItems`.
    pub unique: bool,
}

/// An object type.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ObjectTy {
    /// The named properties, in schema order.
    pub properties: Vec<(String, Prop)>,
    /// The type of every other property: [`Ty::Any`] when `additionalProperties` is absent
    /// or `true` (an *open* object), [`Ty::Never`] when `false` (*closed*), else its type.
    pub rest: Ty,
    /// Whether the object is open only because `additionalProperties` is not written: other
    /// properties are allowed, but the schema says nothing of them. Reading an undeclared
    /// property of such an object that declares properties is then most likely a typo
    /// (LW207), while an explicit `true` or schema makes it a maybe-absent read (LW210).
    pub open_by_default: bool,
    /// `minProperties` (0 when absent).
    pub min_properties: u64,
    /// `maxProperties`.
    pub max_properties: Option<u64>,
}

/// A named property.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prop {
    /// The type of its value when present.
    pub ty: Ty,
    /// Whether it must be present (`required`).
    pub required: bool,
}

/// The kind of a JSON value, as [`Ty::is_possibly`] and [`Ty::is_only`] ask about it.
/// Integers are numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Kind {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool,
    /// A number (integer or not).
    Number,
    /// A string.
    String,
    /// An array.
    List,
    /// An object.
    Object,
}

impl Kind {
    /// The kind of `value`.
    pub fn of(value: &Json) -> Kind {
        match value {
            Json::Null => Kind::Null,
            Json::Bool(_) => Kind::Bool,
            Json::Number(_) => Kind::Number,
            Json::String(_) => Kind::String,
            Json::Array(_) => Kind::List,
            Json::Object(_) => Kind::Object,
        }
    }
}

/// A set of kinds of JSON value, integers told apart from other numbers: what a type may
/// be ([`Ty::kinds`]), and what an operator or function takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Kinds(u8);

impl Kinds {
    /// No kind (the kinds of [`Ty::Never`]).
    pub const NONE: Kinds = Kinds(0);
    /// `null`.
    pub const NULL: Kinds = Kinds(1);
    /// `true` / `false`.
    pub const BOOL: Kinds = Kinds(2);
    /// An integer.
    pub const INT: Kinds = Kinds(4);
    /// A number with a fraction.
    pub const FRACTION: Kinds = Kinds(8);
    /// A string.
    pub const STRING: Kinds = Kinds(16);
    /// An array.
    pub const LIST: Kinds = Kinds(32);
    /// An object.
    pub const OBJECT: Kinds = Kinds(64);
    /// Any number.
    pub const NUMBER: Kinds = Kinds::INT.or(Kinds::FRACTION);
    /// Any value that is not an array or an object.
    pub const SCALAR: Kinds = Kinds::NULL
        .or(Kinds::BOOL)
        .or(Kinds::NUMBER)
        .or(Kinds::STRING);
    /// Every kind (the kinds of [`Ty::Any`]).
    pub const ALL: Kinds = Kinds(127);

    /// Both sets together.
    pub const fn or(self, other: Kinds) -> Kinds {
        Kinds(self.0 | other.0)
    }

    /// Whether the sets share a kind.
    pub const fn meets(self, other: Kinds) -> bool {
        self.0 & other.0 != 0
    }

    /// Whether every kind of this set is in `other`.
    pub const fn within(self, other: Kinds) -> bool {
        self.0 & !other.0 == 0
    }

    /// The kinds of [`Kind`] `kind` (a number: integers and others).
    pub const fn of(kind: Kind) -> Kinds {
        match kind {
            Kind::Null => Kinds::NULL,
            Kind::Bool => Kinds::BOOL,
            Kind::Number => Kinds::NUMBER,
            Kind::String => Kinds::STRING,
            Kind::List => Kinds::LIST,
            Kind::Object => Kinds::OBJECT,
        }
    }
}

impl Default for ListTy {
    /// `list<any>`: any array.
    fn default() -> Self {
        ListTy {
            prefix: Vec::new(),
            items: Ty::Any,
            min_items: 0,
            max_items: None,
            unique: false,
        }
    }
}

impl Default for ObjectTy {
    /// Any object.
    fn default() -> Self {
        ObjectTy {
            properties: Vec::new(),
            rest: Ty::Any,
            open_by_default: true,
            min_properties: 0,
            max_properties: None,
        }
    }
}

impl Bound {
    /// A bound that includes `value`.
    pub fn inclusive(value: f64) -> Bound {
        Bound {
            value,
            exclusive: false,
        }
    }

    /// A bound that excludes `value`.
    pub fn exclusive(value: f64) -> Bound {
        Bound {
            value,
            exclusive: true,
        }
    }
}

impl Range {
    /// Whether `x` is within the bounds.
    pub fn contains(&self, x: f64) -> bool {
        self.min
            .is_none_or(|b| x > b.value || (x == b.value && !b.exclusive))
            && self
                .max
                .is_none_or(|b| x < b.value || (x == b.value && !b.exclusive))
    }

    /// The values within both ranges.
    pub fn intersect(&self, other: &Range) -> Range {
        Range {
            min: tighter(self.min, other.min, true),
            max: tighter(self.max, other.max, false),
        }
    }

    /// The least and greatest integers within the bounds (`None`: unbounded on that side).
    /// When the range holds no integer, the first exceeds the second.
    pub fn integer_bounds(&self) -> (Option<f64>, Option<f64>) {
        let lo = self.min.map(|b| {
            if b.exclusive && b.value.fract() == 0.0 {
                next_integer(b.value, true)
            } else {
                b.value.ceil()
            }
        });
        let hi = self.max.map(|b| {
            if b.exclusive && b.value.fract() == 0.0 {
                next_integer(b.value, false)
            } else {
                b.value.floor()
            }
        });
        (lo, hi)
    }

    /// Whether no number (no integer, when `integral`) is within the bounds.
    pub fn is_empty(&self, integral: bool) -> bool {
        if integral {
            let (lo, hi) = self.integer_bounds();
            return matches!((lo, hi), (Some(l), Some(h)) if l > h);
        }
        match (self.min, self.max) {
            (Some(lo), Some(hi)) => {
                lo.value > hi.value || (lo.value == hi.value && (lo.exclusive || hi.exclusive))
            }
            _ => false,
        }
    }

    /// Whether neither bound is set.
    pub fn is_unbounded(&self) -> bool {
        self.min.is_none() && self.max.is_none()
    }
}

/// The integer just above (`up`) or below the integral `v`. Doubles beyond 2^53 are all
/// integers, so there the next double is the next integer.
fn next_integer(v: f64, up: bool) -> f64 {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match (v.abs() < EXACT, up) {
        (true, true) => v + 1.0,
        (true, false) => v - 1.0,
        (false, true) => v.next_up(),
        (false, false) => v.next_down(),
    }
}

/// The tighter of two lower (`lower`) or upper bounds; at equal values, the exclusive one.
fn tighter(a: Option<Bound>, b: Option<Bound>, lower: bool) -> Option<Bound> {
    match (a, b) {
        (Some(a), Some(b)) => {
            if a.value == b.value {
                Some(Bound {
                    value: a.value,
                    exclusive: a.exclusive || b.exclusive,
                })
            } else if (a.value > b.value) == lower {
                Some(a)
            } else {
                Some(b)
            }
        }
        (a, None) => a,
        (None, b) => b,
    }
}

impl StringTy {
    /// Whether `text` has an allowed length; the pattern is not looked at.
    pub fn length_allows(&self, text: &str) -> bool {
        let n = text.chars().count() as u64;
        n >= self.min_len && self.max_len.is_none_or(|m| n <= m)
    }
}

impl ListTy {
    /// The type of the element at `index`: its `prefixItems` entry, else `items`.
    pub fn at(&self, index: usize) -> &Ty {
        self.prefix.get(index).unwrap_or(&self.items)
    }
}

impl ObjectTy {
    /// The named property `name`, if declared.
    pub fn prop(&self, name: &str) -> Option<&Prop> {
        self.properties
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p)
    }

    /// The type a value of property `name` has when present: its declared type, else `rest`.
    pub fn type_of(&self, name: &str) -> &Ty {
        self.prop(name).map_or(&self.rest, |p| &p.ty)
    }

    /// Whether `name` is required.
    pub fn requires(&self, name: &str) -> bool {
        self.prop(name).is_some_and(|p| p.required)
    }
}

/// JSON equality as JSON Schema's `const`, `enum` and `uniqueItems` use it: numbers compare
/// by value (`1` equals `1.0`), objects regardless of key order.
pub fn json_equal(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Whether no two of `items` are [`json_equal`] (`uniqueItems`). Items are grouped by a key
/// that equal values share (numbers by their double), and compared only within a group, so
/// a long list costs about its length, not its length squared.
fn all_distinct(items: &[Json]) -> bool {
    fn key(value: &Json, out: &mut String) {
        match value {
            Json::Number(n) => {
                // Equal numbers have equal doubles (`json_equal` falls back to them).
                let d = n.as_f64().unwrap_or(f64::NAN);
                let d = if d == 0.0 { 0.0 } else { d };
                out.push_str(&format!("n{:?};", d.to_bits()));
            }
            Json::Array(items) => {
                out.push('[');
                for item in items {
                    key(item, out);
                }
                out.push(']');
            }
            Json::Object(members) => {
                // serde_json's map iterates its keys in order.
                out.push('{');
                for (k, v) in members {
                    out.push_str(&serde_json::to_string(k).unwrap_or_default());
                    key(v, out);
                }
                out.push('}');
            }
            other => {
                out.push_str(&other.to_string());
                out.push(';');
            }
        }
    }
    let mut groups: HashMap<String, Vec<&Json>> = HashMap::with_capacity(items.len());
    for item in items {
        let mut k = String::new();
        key(item, &mut k);
        let group = groups.entry(k).or_default();
        if group.iter().any(|seen| json_equal(seen, item)) {
            return false;
        }
        group.push(item);
    }
    true
}

/// Whether a JSON number is an integer as JSON Schema counts them (a zero fraction).
pub fn is_integral(n: &serde_json::Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// Evaluates a `pattern` (first argument) against a string (second): `Some(matched)`, or
/// `None` when it cannot tell. [`Ty::accepts`] calls it for every string with a pattern.
pub type PatternMatcher<'a> = dyn FnMut(&str, &str) -> Option<bool> + 'a;

impl Ty {
    /// The type of values `schema` (a schema node of the subset) accepts; `$ref`s resolve
    /// against `root`'s `$defs`. `oneOf` is over-approximated by the union of its branches.
    pub fn from_schema(schema: &Node, root: &Node) -> Ty {
        Builder::new(root, std::ptr::eq(schema, root), false).schema(schema)
    }

    /// Same as [`Ty::from_schema`], from `serde_json`.
    pub fn from_json_schema(schema: &Json, root: &Json) -> Ty {
        Builder::new(root, std::ptr::eq(schema, root), false).schema(schema)
    }

    /// Like [`Ty::from_schema`], but never over-approximates: a `oneOf` whose branches are
    /// not provably disjoint is [`Ty::Opaque`]. Use it for both sides of a compatibility
    /// check, so that a "compatible" answer is never wrong.
    pub fn from_schema_exact(schema: &Node, root: &Node) -> Ty {
        Builder::new(root, std::ptr::eq(schema, root), true).schema(schema)
    }

    /// Same as [`Ty::from_schema_exact`], from `serde_json`.
    pub fn from_json_schema_exact(schema: &Json, root: &Json) -> Ty {
        Builder::new(root, std::ptr::eq(schema, root), true).schema(schema)
    }

    /// The type of exactly this value: a scalar is a [`Ty::Literal`] (`null` is
    /// [`Ty::Null`]); an array is a fixed-length list of its elements' types and an object a
    /// closed object whose properties are all required, so that [`Ty::element`] and
    /// [`Ty::property`] answer precisely.
    pub fn of_value(value: &Json) -> Ty {
        match value {
            Json::Null => Ty::Null,
            Json::Array(items) => Ty::List(Box::new(ListTy {
                prefix: items.iter().map(Ty::of_value).collect(),
                items: Ty::Never,
                min_items: items.len() as u64,
                max_items: Some(items.len() as u64),
                unique: false,
            })),
            Json::Object(members) => Ty::Object(Box::new(ObjectTy {
                properties: members
                    .iter()
                    .map(|(k, v)| {
                        let prop = Prop {
                            ty: Ty::of_value(v),
                            required: true,
                        };
                        (k.clone(), prop)
                    })
                    .collect(),
                rest: Ty::Never,
                open_by_default: false,
                min_properties: 0,
                max_properties: None,
            })),
            scalar => Ty::Literal(scalar.clone()),
        }
    }

    /// The union of `members`, normalised.
    pub fn union(members: impl IntoIterator<Item = Ty>) -> Ty {
        // What `normalize` does to a union, with each member left as it is when normal.
        Ty::Union(members.into_iter().map(Ty::normalize).collect()).normalize_top()
    }

    /// The same shape without value-level constraints: literals become their base type
    /// (`3` → `integer`, `"a"` → `string`), bounds, lengths, patterns, counts and uniqueness
    /// are dropped; object properties and their `required` flags and open/closed rests stay.
    /// For typing what an expression computes from a literal (e.g. `reduce`'s `init: 0`).
    pub fn widen(&self) -> Ty {
        match self {
            Ty::Int(_) => Ty::Int(Range::default()),
            Ty::Number(_) => Ty::Number(Range::default()),
            Ty::String(_) => Ty::String(StringTy::default()),
            Ty::Literal(v) => match v {
                Json::Null => Ty::Null,
                Json::Bool(_) => Ty::Bool,
                Json::Number(n) if is_integral(n) => Ty::Int(Range::default()),
                Json::Number(_) => Ty::Number(Range::default()),
                Json::String(_) => Ty::String(StringTy::default()),
                compound => Ty::of_value(compound).widen(),
            },
            Ty::List(l) => {
                let element = Ty::union(l.prefix.iter().chain([&l.items]).map(Ty::widen));
                Ty::List(Box::new(ListTy {
                    items: element,
                    ..ListTy::default()
                }))
            }
            Ty::Object(o) => Ty::Object(Box::new(ObjectTy {
                properties: o
                    .properties
                    .iter()
                    .map(|(n, p)| {
                        let prop = Prop {
                            ty: p.ty.widen(),
                            required: p.required,
                        };
                        (n.clone(), prop)
                    })
                    .collect(),
                rest: o.rest.widen(),
                open_by_default: o.open_by_default,
                min_properties: 0,
                max_properties: None,
            })),
            Ty::Union(members) => Ty::union(members.iter().map(Ty::widen)),
            other => other.clone(),
        }
    }

    /// A short display form for messages: `string`, `integer`, `list<string>`,
    /// `object{label: "bug" | "feature"}`, `"bug" | "feature"`, `any`, … Bounds, lengths and
    /// patterns are not shown; optional properties are marked `?`, a typed
    /// `additionalProperties` appears as `*: T`; an [`Ty::Opaque`] shows as `opaque`.
    pub fn display(&self) -> String {
        self.to_string()
    }

    /// The display form for a finding message: [`Ty::display`] summarised to at most
    /// [`MAX_SUMMARY_CHARS`] characters. When the whole form is longer, objects and lists
    /// nested past a depth are elided (`object{…}`, `list<…>`, `[…]`) and fewer members of
    /// each object, tuple and union are shown (`a | b | … (12 more)`), shallower and fewer
    /// until it fits; the compiled plan keeps [`Ty::display`].
    pub fn summary(&self) -> String {
        summarize(self, false, MAX_SUMMARY_CHARS)
    }

    /// [`Ty::summary`] with the constraints written after each type, as their JSON Schema
    /// keywords: `string(minLength: 3)`, `integer(minimum: 1, exclusiveMaximum: 10)`,
    /// `list<string>(maxItems: 5, uniqueItems: true)`, `object{a: string}(minProperties: 1)`.
    /// Two types that differ only in constraints display differently this way.
    pub fn summary_with_constraints(&self) -> String {
        summarize(self, true, MAX_SUMMARY_CHARS)
    }

    /// The kinds a value of this type may have; every kind for [`Ty::Any`] and
    /// [`Ty::Opaque`], none for [`Ty::Never`].
    pub fn kinds(&self) -> Kinds {
        match self {
            Ty::Any | Ty::Opaque(_) => Kinds::ALL,
            Ty::Never => Kinds::NONE,
            Ty::Null => Kinds::NULL,
            Ty::Bool => Kinds::BOOL,
            Ty::Int(_) => Kinds::INT,
            Ty::Number(_) => Kinds::NUMBER,
            Ty::String(_) => Kinds::STRING,
            Ty::List(_) => Kinds::LIST,
            Ty::Object(_) => Kinds::OBJECT,
            Ty::Literal(v) => match v {
                Json::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => Kinds::INT,
                Json::Number(_) => Kinds::FRACTION,
                other => Kinds::of(Kind::of(other)),
            },
            Ty::Union(members) => members.iter().fold(Kinds::NONE, |k, m| k.or(m.kinds())),
        }
    }

    /// Whether a value of this type may be of one of the kinds in `want`.
    pub fn may_be(&self, want: Kinds) -> bool {
        self.kinds().meets(want)
    }

    /// Whether every value of this type is of one of the kinds in `want` (vacuously true
    /// for [`Ty::Never`]; false for [`Ty::Any`] and [`Ty::Opaque`], which could be
    /// anything).
    pub fn only(&self, want: Kinds) -> bool {
        let kinds = self.kinds();
        kinds != Kinds::ALL && kinds.within(want)
    }

    /// Whether this type could be anything ([`Ty::Any`], [`Ty::Opaque`], or a union
    /// covering every kind).
    pub fn is_unknown(&self) -> bool {
        self.kinds() == Kinds::ALL
    }

    /// Whether a value of this type could be of kind `kind` (integers are numbers).
    /// [`Ty::Any`] and [`Ty::Opaque`] could be anything.
    pub fn is_possibly(&self, kind: Kind) -> bool {
        self.may_be(Kinds::of(kind))
    }

    /// Whether every value of this type is of kind `kind` (vacuously true for
    /// [`Ty::Never`]; false for [`Ty::Any`] and [`Ty::Opaque`]).
    pub fn is_only(&self, kind: Kind) -> bool {
        self.only(Kinds::of(kind))
    }

    /// The type of member `name` and whether it may be absent, for member access:
    /// - an object: the property's type and `!required`; an undeclared name has the
    ///   `additionalProperties` type and may be absent, and is `None` on a closed object;
    /// - [`Ty::Any`] and [`Ty::Opaque`]: `(Any, true)`;
    /// - a union: the union over the members that can have it (`None` when none can); it
    ///   may be absent when any member that could be an object may lack it. Members that
    ///   cannot be objects are skipped: check [`Ty::is_only`] to report those;
    /// - a literal object: the literal member, present; anything else: `None`.
    pub fn property(&self, name: &str) -> Option<(Ty, bool)> {
        match self {
            Ty::Any | Ty::Opaque(_) => Some((Ty::Any, true)),
            Ty::Object(o) => match o.prop(name) {
                Some(p) if p.ty == Ty::Never => None,
                Some(p) => Some((p.ty.clone(), !p.required)),
                None if o.rest == Ty::Never => None,
                None => Some((o.rest.clone(), true)),
            },
            Ty::Literal(Json::Object(members)) => {
                members.get(name).map(|v| (Ty::of_value(v), false))
            }
            Ty::Union(members) => {
                let mut found = Vec::new();
                let mut absent = false;
                for m in members {
                    match m.property(name) {
                        Some((ty, maybe_absent)) => {
                            found.push(ty);
                            absent |= maybe_absent;
                        }
                        None => absent |= m.is_possibly(Kind::Object),
                    }
                }
                (!found.is_empty()).then(|| (Ty::union(found), absent))
            }
            _ => None,
        }
    }

    /// The type of a list's elements (the union of `prefixItems` and `items`; [`Ty::Never`]
    /// for a list that is always empty); [`Ty::Any`] for [`Ty::Any`] and [`Ty::Opaque`]; for
    /// a union, the union over its list members; `None` when it cannot be a list.
    pub fn element(&self) -> Option<Ty> {
        match self {
            Ty::Any | Ty::Opaque(_) => Some(Ty::Any),
            Ty::List(l) => {
                let mut members: Vec<Ty> = l.prefix.clone();
                if l.max_items.is_none_or(|m| m > l.prefix.len() as u64) {
                    members.push(l.items.clone());
                }
                Some(Ty::union(members))
            }
            Ty::Literal(Json::Array(items)) => Some(Ty::union(items.iter().map(Ty::of_value))),
            Ty::Union(members) => {
                let found: Vec<Ty> = members.iter().filter_map(Ty::element).collect();
                (!found.is_empty()).then(|| Ty::union(found))
            }
            _ => None,
        }
    }

    /// [`Ty::property`], borrowing the property's type from an object type instead of
    /// copying it.
    pub fn property_cow(&self, name: &str) -> Option<(Cow<'_, Ty>, bool)> {
        match self {
            Ty::Object(o) => match o.prop(name) {
                Some(p) if p.ty == Ty::Never => None,
                Some(p) => Some((Cow::Borrowed(&p.ty), !p.required)),
                None if o.rest == Ty::Never => None,
                None => Some((Cow::Borrowed(&o.rest), true)),
            },
            other => other.property(name).map(|(t, a)| (Cow::Owned(t), a)),
        }
    }

    /// [`Ty::element`] of a type no longer needed: the element type of a plain list is moved
    /// out of it rather than copied.
    pub fn into_element(self) -> Option<Ty> {
        match self {
            Ty::List(l) if l.prefix.is_empty() && l.max_items.is_none_or(|m| m > 0) => {
                // `Ty::union` of the one member.
                Some(Ty::union([l.items]))
            }
            other => other.element(),
        }
    }

    /// The same type in normal form, recursively: unions flattened, without [`Ty::Never`]
    /// members or duplicates (a union with [`Ty::Any`] is `Any`, of one member that member,
    /// of none `Never`); `Literal(null)` is [`Ty::Null`]; types that are empty by their
    /// bounds (an integer range without integers, `minLength` above `maxLength`, a required
    /// property of type `Never`, …) are `Never`.
    pub fn normalize(self) -> Ty {
        // Most types met are normal already (derived types are, and so is what the type
        // checker builds from them): asking is a read, rebuilding moves every part.
        if self.is_normal() {
            self
        } else {
            self.normalize_deep()
        }
    }

    /// [`Ty::normalize`] without first asking whether the type is normal.
    fn normalize_deep(self) -> Ty {
        match self {
            Ty::Union(members) => {
                Ty::Union(members.into_iter().map(Ty::normalize_deep).collect()).normalize_top()
            }
            Ty::List(mut l) => {
                l.prefix = std::mem::take(&mut l.prefix)
                    .into_iter()
                    .map(Ty::normalize_deep)
                    .collect();
                l.items = std::mem::replace(&mut l.items, Ty::Never).normalize_deep();
                Ty::List(l).normalize_top()
            }
            Ty::Object(mut o) => {
                for (_, p) in &mut o.properties {
                    p.ty = std::mem::replace(&mut p.ty, Ty::Never).normalize_deep();
                }
                o.rest = std::mem::replace(&mut o.rest, Ty::Never).normalize_deep();
                Ty::Object(o).normalize_top()
            }
            other => other.normalize_top(),
        }
    }

    /// Whether [`Ty::normalize`] leaves this type as it is: the conditions of
    /// [`Ty::normalize_deep`] and [`Ty::normalize_top`], read without moving anything. May
    /// answer `false` for a normal type (a union with literals other than strings), never
    /// `true` for one that is not.
    fn is_normal(&self) -> bool {
        match self {
            Ty::Union(members) => {
                members.len() >= 2
                    && members.iter().enumerate().all(|(i, m)| {
                        let distinct = match m {
                            // `push_member` keeps the first of literals that print the same:
                            // for strings, the equal ones.
                            Ty::Literal(Json::String(_)) => true,
                            Ty::Literal(_) | Ty::Union(_) | Ty::Never | Ty::Any => false,
                            _ => true,
                        };
                        distinct && !members[..i].contains(m) && m.is_normal()
                    })
            }
            Ty::Literal(Json::Null) => false,
            Ty::Int(r) => !r.is_empty(true),
            Ty::Number(r) => !r.is_empty(false),
            Ty::String(s) => s.max_len.is_none_or(|m| m >= s.min_len),
            Ty::List(l) => {
                l.prefix.iter().all(Ty::is_normal) && l.items.is_normal() && !list_is_empty(l)
            }
            Ty::Object(o) => {
                o.properties.iter().all(|(_, p)| p.ty.is_normal())
                    && o.rest.is_normal()
                    && !object_is_empty(o)
            }
            Ty::Any | Ty::Never | Ty::Null | Ty::Bool | Ty::Literal(_) | Ty::Opaque(_) => true,
        }
    }

    /// [`Ty::normalize`] for a type whose parts are already normal.
    fn normalize_top(self) -> Ty {
        match self {
            Ty::Union(members) => {
                let mut flat: Vec<Ty> = Vec::with_capacity(members.len());
                let mut literals: HashSet<String> = HashSet::new();
                for m in members {
                    match m {
                        Ty::Union(inner) => {
                            for t in inner {
                                push_member(t, &mut flat, &mut literals);
                            }
                        }
                        t => push_member(t, &mut flat, &mut literals),
                    }
                }
                if flat.contains(&Ty::Any) {
                    return Ty::Any;
                }
                match flat.len() {
                    0 => Ty::Never,
                    1 => flat.pop().unwrap_or(Ty::Never),
                    _ => Ty::Union(flat),
                }
            }
            Ty::Literal(Json::Null) => Ty::Null,
            Ty::Int(r) if r.is_empty(true) => Ty::Never,
            Ty::Number(r) if r.is_empty(false) => Ty::Never,
            Ty::String(s) if s.max_len.is_some_and(|m| m < s.min_len) => Ty::Never,
            Ty::List(l) if list_is_empty(&l) => Ty::Never,
            Ty::Object(o) if object_is_empty(&o) => Ty::Never,
            other => other,
        }
    }

    /// The values of both types (exactly, or [`Ty::Opaque`] saying why not): objects merge
    /// their properties, numbers tighten their bounds, lists their items, literals are kept
    /// when the other type accepts them. The result is normal.
    pub fn intersect(&self, other: &Ty) -> Ty {
        use Ty::*;
        match (self, other) {
            (Never, _) | (_, Never) => Never,
            (Any, t) | (t, Any) => t.clone(),
            (Opaque(r), _) | (_, Opaque(r)) => Opaque(r.clone()),
            (Union(a), Union(b)) if a.len().saturating_mul(b.len()) > MAX_UNION_PRODUCT => {
                Opaque(format!(
                    "`allOf` over unions of {} and {} members (more than {MAX_UNION_PRODUCT} combinations)",
                    a.len(),
                    b.len()
                ))
            }
            (Union(ms), t) => Union(ms.iter().map(|m| m.intersect(t)).collect()).normalize_top(),
            (t, Union(ms)) => Union(ms.iter().map(|m| t.intersect(m)).collect()).normalize_top(),
            (Literal(v), t) | (t, Literal(v)) => match t.accepts(v, &mut |_, _| None) {
                Some(true) => Literal(v.clone()).normalize_top(),
                Some(false) => Never,
                None => Opaque(
                    "`pattern` together with `enum` or `const` (patterns are not evaluated when types are derived)"
                        .to_owned(),
                ),
            },
            (Null, Null) => Null,
            (Bool, Bool) => Bool,
            (Int(a), Int(b) | Number(b)) | (Number(b), Int(a)) => Int(a.intersect(b)).normalize_top(),
            (Number(a), Number(b)) => Number(a.intersect(b)).normalize_top(),
            (String(a), String(b)) => {
                let pattern = match (&a.pattern, &b.pattern) {
                    (Some(x), Some(y)) if x != y => {
                        return Opaque(format!(
                            "`allOf` of two different `pattern`s (`{x}` and `{y}`)"
                        ));
                    }
                    (x, y) => x.clone().or_else(|| y.clone()),
                };
                String(StringTy {
                    min_len: a.min_len.max(b.min_len),
                    max_len: min_option(a.max_len, b.max_len),
                    pattern,
                })
                .normalize_top()
            }
            (List(a), List(b)) => {
                let n = a.prefix.len().max(b.prefix.len());
                List(Box::new(ListTy {
                    prefix: (0..n).map(|i| a.at(i).intersect(b.at(i))).collect(),
                    items: a.items.intersect(&b.items),
                    min_items: a.min_items.max(b.min_items),
                    max_items: min_option(a.max_items, b.max_items),
                    unique: a.unique || b.unique,
                }))
                .normalize_top()
            }
            (Object(a), Object(b)) => Object(Box::new(intersect_objects(a, b))).normalize_top(),
            _ => Never,
        }
    }

    /// Whether `value` is of this type: `Some(answer)`, or `None` when it cannot tell (an
    /// [`Ty::Opaque`] part, or a `pattern` that `matches` cannot evaluate). Patterns are
    /// evaluated by `matches(pattern, text)`; pass `&mut |_, _| None` to leave them open.
    pub fn accepts(&self, value: &Json, matches: &mut PatternMatcher<'_>) -> Option<bool> {
        match self {
            Ty::Any => Some(true),
            Ty::Never => Some(false),
            Ty::Opaque(_) => None,
            Ty::Null => Some(value.is_null()),
            Ty::Bool => Some(value.is_boolean()),
            Ty::Int(r) => Some(match value {
                Json::Number(n) => is_integral(n) && n.as_f64().is_some_and(|x| r.contains(x)),
                _ => false,
            }),
            Ty::Number(r) => Some(match value {
                Json::Number(n) => n.as_f64().is_some_and(|x| r.contains(x)),
                _ => false,
            }),
            Ty::String(s) => {
                let Json::String(text) = value else {
                    return Some(false);
                };
                if !s.length_allows(text) {
                    return Some(false);
                }
                match &s.pattern {
                    Some(p) => matches(p, text),
                    None => Some(true),
                }
            }
            Ty::Literal(w) => Some(json_equal(value, w)),
            Ty::Union(members) => {
                let mut answer = Some(false);
                for m in members {
                    match m.accepts(value, matches) {
                        Some(true) => return Some(true),
                        Some(false) => {}
                        None => answer = None,
                    }
                }
                answer
            }
            Ty::List(l) => {
                let Json::Array(items) = value else {
                    return Some(false);
                };
                let n = items.len() as u64;
                if n < l.min_items || l.max_items.is_some_and(|m| n > m) {
                    return Some(false);
                }
                if l.unique && !all_distinct(items) {
                    return Some(false);
                }
                all_of(items.iter().enumerate().map(|(i, v)| (l.at(i), v)), matches)
            }
            Ty::Object(o) => {
                let Json::Object(members) = value else {
                    return Some(false);
                };
                let n = members.len() as u64;
                if n < o.min_properties || o.max_properties.is_some_and(|m| n > m) {
                    return Some(false);
                }
                if o.properties
                    .iter()
                    .any(|(name, p)| p.required && !members.contains_key(name))
                {
                    return Some(false);
                }
                let index = PropIndex::new(o);
                all_of(
                    members.iter().map(|(k, v)| (index.type_of(o, k), v)),
                    matches,
                )
            }
        }
    }
}

/// Adds `t` to the flat member list of a union unless it is `Never` or already there.
/// Whether a list type has no values by its counts and prefix (its parts normal).
fn list_is_empty(l: &ListTy) -> bool {
    let max = l.max_items.unwrap_or(u64::MAX);
    let short = l.items == Ty::Never && l.min_items > l.prefix.len() as u64;
    let blocked = l
        .prefix
        .iter()
        .take(usize::try_from(l.min_items).unwrap_or(usize::MAX))
        .any(|t| *t == Ty::Never);
    max < l.min_items || short || blocked
}

/// Whether an object type has no values by its counts and required properties (its parts
/// normal).
fn object_is_empty(o: &ObjectTy) -> bool {
    let max = o.max_properties.unwrap_or(u64::MAX);
    let impossible = o
        .properties
        .iter()
        .any(|(_, p)| p.required && p.ty == Ty::Never);
    let possible = o
        .properties
        .iter()
        .filter(|(_, p)| p.ty != Ty::Never)
        .count();
    let required = o.properties.iter().filter(|(_, p)| p.required).count();
    let too_few = o.rest == Ty::Never && (possible as u64) < o.min_properties;
    max < o.min_properties || impossible || too_few || (required as u64) > max
}

fn push_member(t: Ty, flat: &mut Vec<Ty>, literals: &mut HashSet<String>) {
    match t {
        Ty::Never => {}
        Ty::Literal(Json::Null) => {
            if !flat.contains(&Ty::Null) {
                flat.push(Ty::Null);
            }
        }
        Ty::Literal(v) => {
            if literals.insert(v.to_string()) {
                flat.push(Ty::Literal(v));
            }
        }
        // Non-literal members are few; a linear scan keeps their order.
        t => {
            if !flat.contains(&t) {
                flat.push(t);
            }
        }
    }
}

/// Whether every value is of its type: false as soon as one is not, else `None` if any
/// answer was unknown.
fn all_of<'t>(
    pairs: impl Iterator<Item = (&'t Ty, &'t Json)>,
    matches: &mut PatternMatcher<'_>,
) -> Option<bool> {
    let mut answer = Some(true);
    for (ty, v) in pairs {
        match ty.accepts(v, matches) {
            Some(true) => {}
            Some(false) => return Some(false),
            None => answer = None,
        }
    }
    answer
}

/// Property lookup by name, hashed for objects with many properties.
struct PropIndex<'o> {
    map: Option<HashMap<&'o str, &'o Prop>>,
}

impl<'o> PropIndex<'o> {
    fn new(o: &'o ObjectTy) -> Self {
        let map = (o.properties.len() > 16)
            .then(|| o.properties.iter().map(|(n, p)| (n.as_str(), p)).collect());
        PropIndex { map }
    }

    fn get(&self, o: &'o ObjectTy, name: &str) -> Option<&'o Prop> {
        match &self.map {
            Some(map) => map.get(name).copied(),
            None => o.prop(name),
        }
    }

    fn type_of(&self, o: &'o ObjectTy, name: &str) -> &'o Ty {
        self.get(o, name).map_or(&o.rest, |p| &p.ty)
    }
}

fn min_option(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

fn intersect_objects(a: &ObjectTy, b: &ObjectTy) -> ObjectTy {
    let a_index = PropIndex::new(a);
    let b_index = PropIndex::new(b);
    let mut properties: Vec<(String, Prop)> = a
        .properties
        .iter()
        .map(|(name, pa)| {
            let prop = match b_index.get(b, name) {
                Some(pb) => Prop {
                    ty: pa.ty.intersect(&pb.ty),
                    required: pa.required || pb.required,
                },
                None => Prop {
                    ty: pa.ty.intersect(&b.rest),
                    required: pa.required,
                },
            };
            (name.clone(), prop)
        })
        .collect();
    for (name, pb) in &b.properties {
        if a_index.get(a, name).is_none() {
            let prop = Prop {
                ty: a.rest.intersect(&pb.ty),
                required: pb.required,
            };
            properties.push((name.clone(), prop));
        }
    }
    ObjectTy {
        properties,
        rest: a.rest.intersect(&b.rest),
        open_by_default: a.open_by_default && b.open_by_default,
        min_properties: a.min_properties.max(b.min_properties),
        max_properties: min_option(a.max_properties, b.max_properties),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ty(schema: Json) -> Ty {
        Ty::from_json_schema(&schema, &schema)
    }

    fn exact(schema: Json) -> Ty {
        Ty::from_json_schema_exact(&schema, &schema)
    }

    fn int(min: Option<f64>, max: Option<f64>) -> Ty {
        Ty::Int(Range {
            min: min.map(Bound::inclusive),
            max: max.map(Bound::inclusive),
        })
    }

    fn lit(v: Json) -> Ty {
        Ty::Literal(v)
    }

    fn string() -> Ty {
        Ty::String(StringTy::default())
    }

    #[test]
    fn boolean_and_empty_schemas() {
        assert_eq!(ty(json!(true)), Ty::Any);
        assert_eq!(ty(json!({})), Ty::Any);
        assert_eq!(ty(json!(false)), Ty::Never);
        assert_eq!(ty(json!({"title": "x", "format": "email"})), Ty::Any);
    }

    #[test]
    fn scalar_types_with_their_keywords() {
        assert_eq!(ty(json!({"type": "null"})), Ty::Null);
        assert_eq!(ty(json!({"type": "boolean"})), Ty::Bool);
        assert_eq!(
            ty(json!({"type": "integer", "minimum": 0, "maximum": 10})),
            int(Some(0.0), Some(10.0))
        );
        assert_eq!(
            ty(json!({"type": "number", "exclusiveMinimum": 0, "minimum": 0})),
            Ty::Number(Range {
                min: Some(Bound::exclusive(0.0)),
                max: None
            })
        );
        assert_eq!(
            ty(
                json!({"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^a", "format": "email"})
            ),
            Ty::String(StringTy {
                min_len: 1,
                max_len: Some(5),
                pattern: Some("^a".into())
            })
        );
        // Keywords of another type have no effect.
        assert_eq!(ty(json!({"type": "string", "minimum": 3})), string());
    }

    #[test]
    fn type_lists_and_enums_are_unions() {
        assert_eq!(
            ty(json!({"type": ["string", "null"]})),
            Ty::Union(vec![string(), Ty::Null])
        );
        assert_eq!(
            ty(json!({"enum": ["bug", "feature"]})),
            Ty::Union(vec![lit(json!("bug")), lit(json!("feature"))])
        );
        assert_eq!(ty(json!({"enum": ["bug"]})), lit(json!("bug")));
        assert_eq!(ty(json!({"const": 3})), lit(json!(3)));
        assert_eq!(ty(json!({"const": null})), Ty::Null);
        // `enum` members the other keywords reject are dropped.
        assert_eq!(
            ty(json!({"type": "string", "enum": ["a", 1, "bb"], "maxLength": 1})),
            lit(json!("a"))
        );
        assert_eq!(
            ty(json!({"type": "integer", "const": 1.0})),
            lit(json!(1.0))
        );
        assert_eq!(ty(json!({"type": "integer", "const": 1.5})), Ty::Never);
    }

    #[test]
    fn keywords_without_type_constrain_only_their_kind() {
        let t = ty(json!({"minLength": 2}));
        assert!(t.is_possibly(Kind::Null) && t.is_possibly(Kind::Object));
        assert!(
            matches!(&t, Ty::Union(m) if m.contains(&Ty::String(StringTy { min_len: 2, ..StringTy::default() })))
        );
        assert_eq!(t.accepts(&json!("a"), &mut |_, _| None), Some(false));
        assert_eq!(t.accepts(&json!(7), &mut |_, _| None), Some(true));
    }

    #[test]
    fn arrays_and_objects() {
        let t = ty(json!({
            "type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"},
            "minItems": 1, "maxItems": 3, "uniqueItems": true
        }));
        assert_eq!(
            t,
            Ty::List(Box::new(ListTy {
                prefix: vec![string()],
                items: int(None, None),
                min_items: 1,
                max_items: Some(3),
                unique: true
            }))
        );
        let t = ty(json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {}},
            "required": ["a", "c"],
            "additionalProperties": {"type": "integer"},
            "maxProperties": 4
        }));
        let Ty::Object(o) = &t else { panic!("{t:?}") };
        assert_eq!(o.type_of("a"), &string());
        assert!(o.requires("a") && !o.requires("b"));
        // `c` is required but not declared: its value is an additional property.
        assert_eq!(
            o.prop("c").map(|p| (&p.ty, p.required)),
            Some((&int(None, None), true))
        );
        assert_eq!(o.rest, int(None, None));
        assert_eq!(o.max_properties, Some(4));
        let closed = ty(json!({"type": "object", "additionalProperties": false}));
        assert!(matches!(&closed, Ty::Object(o) if o.rest == Ty::Never));
    }

    #[test]
    fn refs_resolve_and_recursion_becomes_opaque_below_the_first_level() {
        let schema = json!({
            "$defs": {"label": {"enum": ["bug", "feature"]}, "a~b": {"type": "null"}},
            "type": "object",
            "properties": {"label": {"$ref": "#/$defs/label"}, "n": {"$ref": "#/$defs/a~0b"}}
        });
        let Ty::Object(o) = ty(schema) else { panic!() };
        assert_eq!(o.type_of("label").display(), r#""bug" | "feature""#);
        assert_eq!(o.type_of("n"), &Ty::Null);

        let tree = json!({
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}
        });
        let t = ty(tree);
        let (children, _) = t.property("children").unwrap();
        assert_eq!(
            children.element(),
            Some(Ty::Opaque("recursive `$ref` to `#`".into()))
        );
        let defs = json!({
            "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
            "$ref": "#/$defs/node"
        });
        let t = ty(defs);
        let (next, maybe) = t.property("next").unwrap();
        assert!(maybe);
        assert_eq!(
            next,
            Ty::Opaque("recursive `$ref` to `#/$defs/node`".into())
        );
        assert!(matches!(ty(json!({"$ref": "#/$defs/nope"})), Ty::Opaque(r) if r.contains("nope")));
    }

    #[test]
    fn exponential_refs_are_capped() {
        let mut defs = serde_json::Map::new();
        defs.insert("d0".into(), json!({"type": "integer"}));
        for i in 1..30 {
            let prev = format!("#/$defs/d{}", i - 1);
            defs.insert(
                format!("d{i}"),
                json!({"type": "array", "prefixItems": [{"$ref": prev}, {"$ref": prev}]}),
            );
        }
        let schema = json!({"$defs": defs, "$ref": "#/$defs/d29"});
        let t = ty(schema);
        assert!(format!("{t:?}").contains("subschemas after expanding"));
    }

    #[test]
    fn all_of_intersects_exactly_or_says_why_not() {
        let t = ty(json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "number", "minimum": 0}}, "required": ["a"]},
            {"type": "object", "properties": {"a": {"type": "integer", "maximum": 9}, "b": {"type": "string"}}, "required": ["b"]}
        ]}));
        let Ty::Object(o) = &t else { panic!("{t:?}") };
        assert_eq!(o.type_of("a"), &int(Some(0.0), Some(9.0)));
        assert!(o.requires("a") && o.requires("b"));
        assert_eq!(
            ty(json!({"allOf": [{"type": "string", "pattern": "a"}, {"pattern": "b"}]})),
            Ty::Opaque("`allOf` of two different `pattern`s (`a` and `b`)".into())
        );
        assert_eq!(
            ty(
                json!({"allOf": [{"type": "string", "pattern": "a"}, {"minLength": 2, "pattern": "a"}]})
            ),
            Ty::String(StringTy {
                min_len: 2,
                max_len: None,
                pattern: Some("a".into())
            })
        );
        assert_eq!(
            ty(json!({"allOf": [{"type": "string"}, {"type": "integer"}]})),
            Ty::Never
        );
        assert_eq!(
            ty(json!({"allOf": [{"enum": [1, 2, 3]}, {"enum": [2, 3, 4]}]})),
            Ty::Union(vec![lit(json!(2)), lit(json!(3))])
        );
        assert!(matches!(
            ty(json!({"type": "string", "pattern": "^a", "enum": ["ab"]})),
            Ty::Opaque(r) if r.contains("`pattern` together with `enum`")
        ));
        // A closed object cannot hold a property the other side requires.
        assert_eq!(
            ty(json!({"allOf": [
                {"type": "object", "additionalProperties": false},
                {"required": ["x"]}
            ]})),
            Ty::Never
        );
    }

    #[test]
    fn any_of_and_one_of() {
        assert_eq!(
            ty(json!({"anyOf": [{"type": "string"}, {"type": "null"}, {"type": "string"}]})),
            Ty::Union(vec![string(), Ty::Null])
        );
        // `oneOf` over-approximates as a union…
        let overlapping = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
        assert!(matches!(ty(overlapping.clone()), Ty::Union(_)));
        // …except in exact mode, where only provably disjoint branches make a union.
        assert!(matches!(exact(overlapping), Ty::Opaque(r) if r.contains("may overlap")));
        let tagged = json!({"oneOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
            {"type": "object", "properties": {"kind": {"const": "b"}}, "required": ["kind"]},
            {"type": "string"}
        ]});
        assert!(matches!(exact(tagged), Ty::Union(m) if m.len() == 3));
    }

    #[test]
    fn unions_of_unions_in_all_of_are_capped() {
        let big: Vec<Json> = (0..20).map(|i| json!({"const": i})).collect();
        let t = ty(json!({"allOf": [{"anyOf": big.clone()}, {"anyOf": big}]}));
        assert!(matches!(t, Ty::Opaque(r) if r.contains("combinations")));
    }

    #[test]
    fn from_spanned_nodes_agrees_with_serde_json() {
        let text = r##"{"type": "object", "properties": {"n": {"type": "integer", "minimum": 1.0}},
                       "required": ["n"], "$defs": {"x": {"const": 1}}, "additionalProperties": {"$ref": "#/$defs/x"}}"##;
        let doc = lwir_spec::document::read(text.as_bytes().to_vec())
            .document
            .unwrap();
        let json: Json = serde_json::from_str(text).unwrap();
        assert_eq!(Ty::from_schema(doc.root(), doc.root()), ty(json.clone()));
        assert_eq!(Ty::from_schema_exact(doc.root(), doc.root()), exact(json));
    }

    #[test]
    fn robust_to_malformed_schemas() {
        for s in [
            json!(3),
            json!({"type": 3}),
            json!({"type": "strng"}),
            json!({"enum": 1}),
            json!({"anyOf": {}}),
            json!({"$ref": 7}),
            json!({"minimum": "x", "maxLength": -1, "required": "a", "properties": []}),
        ] {
            let _ = ty(s.clone()).display();
            let _ = exact(s);
        }
        let mut deep = json!({});
        for _ in 0..300 {
            deep = json!({"type": "array", "items": deep});
        }
        let _ = ty(deep);
    }

    #[test]
    fn display_forms() {
        let label = json!({"type": "object", "properties": {"label": {"enum": ["bug", "feature"]}}, "required": ["label"]});
        assert_eq!(ty(label).display(), r#"object{label: "bug" | "feature"}"#);
        assert_eq!(
            ty(json!({"type": "array", "items": {"type": "string"}})).display(),
            "list<string>"
        );
        assert_eq!(ty(json!({"type": "integer"})).to_string(), "integer");
        assert_eq!(ty(json!({})).display(), "any");
        assert_eq!(
            ty(json!({"type": "object", "properties": {"a": {"type": ["number", "null"]}}, "additionalProperties": {"type": "boolean"}})).display(),
            "object{a?: number | null, *: boolean}"
        );
        assert_eq!(
            ty(json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})).display(),
            "[string, integer]"
        );
        let many: Vec<Json> = (0..12).map(|i| json!(i)).collect();
        assert_eq!(
            ty(json!({"enum": many})).display(),
            "0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | … (4 more)"
        );
    }

    #[test]
    fn summaries_are_capped_and_elide_structure() {
        // Small types summarise as they display.
        let label = json!({"type": "object", "properties": {"label": {"enum": ["bug", "feature"]}}, "required": ["label"]});
        assert_eq!(ty(label.clone()).summary(), ty(label).display());
        // Six levels of four properties: nested objects are elided, the plan's form is not.
        let mut t = json!({"type": "string"});
        for level in 0..6 {
            let props: serde_json::Map<String, Json> = (0..4)
                .map(|i| (format!("p{level}_{i}"), t.clone()))
                .collect();
            t = json!({"type": "object", "properties": props});
        }
        let t = ty(t);
        assert!(t.display().chars().count() > 10_000);
        let s = t.summary();
        assert!(s.chars().count() <= MAX_SUMMARY_CHARS, "{s}");
        assert!(s.contains("object{…}"), "{s}");
        // A long union: its first members and how many more.
        let many: Vec<Json> = (0..40)
            .map(|i| json!(format!("label-number-{i}")))
            .collect();
        let s = ty(json!({"type": "array", "items": {"enum": many}})).summary();
        assert!(s.chars().count() <= MAX_SUMMARY_CHARS, "{s}");
        assert!(s.contains("more)"), "{s}");
        // Whatever the shape, the cap holds.
        let mut deep = json!({"type": "string"});
        for _ in 0..12 {
            deep = json!({"type": "array", "prefixItems": [deep.clone(), deep], "items": false});
        }
        assert!(ty(deep).summary().chars().count() <= MAX_SUMMARY_CHARS);
    }

    #[test]
    fn summaries_with_constraints_name_their_keywords() {
        let c = |s: Json| ty(s).summary_with_constraints();
        assert_eq!(c(json!({"type": "string"})), "string");
        assert_eq!(
            c(json!({"type": "string", "minLength": 3, "maxLength": 10, "pattern": "^a"})),
            r#"string(minLength: 3, maxLength: 10, pattern: "^a")"#
        );
        assert_eq!(
            c(json!({"type": "integer", "minimum": 1, "exclusiveMaximum": 10})),
            "integer(minimum: 1, exclusiveMaximum: 10)"
        );
        assert_eq!(
            c(json!({"type": "number", "maximum": 0.5})),
            "number(maximum: 0.5)"
        );
        assert_eq!(
            c(
                json!({"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 2, "uniqueItems": true})
            ),
            "list<string(maxLength: 5)>(maxItems: 2, uniqueItems: true)"
        );
        assert_eq!(
            c(
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 1})
            ),
            "object{a?: string}(minProperties: 1)"
        );
    }

    #[test]
    fn member_access_and_elements() {
        let t = ty(
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
                          "required": ["a"], "additionalProperties": false}),
        );
        assert_eq!(t.property("a"), Some((string(), false)));
        assert_eq!(t.property("b"), Some((int(None, None), true)));
        assert_eq!(t.property("c"), None);
        let open = ty(json!({"type": "object"}));
        assert_eq!(open.property("zz"), Some((Ty::Any, true)));
        assert_eq!(Ty::Any.property("x"), Some((Ty::Any, true)));
        assert_eq!(string().property("x"), None);
        let either = ty(json!({"anyOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false},
            {"type": "object", "properties": {"b": {"type": "null"}}, "required": ["b"], "additionalProperties": false},
            {"type": "string"}
        ]}));
        assert_eq!(either.property("a"), Some((string(), true)));
        assert_eq!(either.property("zzz"), None);

        let list = ty(
            json!({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "null"}}),
        );
        assert_eq!(list.element(), Some(Ty::Union(vec![string(), Ty::Null])));
        assert_eq!(string().element(), None);
        assert_eq!(
            ty(json!({"type": ["array", "null"], "items": {"type": "boolean"}})).element(),
            Some(Ty::Bool)
        );
    }

    #[test]
    fn kinds() {
        let t = ty(json!({"type": ["integer", "null"]}));
        assert!(
            t.is_possibly(Kind::Number)
                && t.is_possibly(Kind::Null)
                && !t.is_possibly(Kind::String)
        );
        assert!(!t.is_only(Kind::Number));
        assert!(ty(json!({"enum": [true, false]})).is_only(Kind::Bool));
        assert!(Ty::Any.is_possibly(Kind::List) && !Ty::Any.is_only(Kind::List));
        assert!(!Ty::Never.is_possibly(Kind::Null));
    }

    #[test]
    fn normalize_flattens_and_drops_never() {
        let t = Ty::Union(vec![
            Ty::Never,
            Ty::Union(vec![
                Ty::Null,
                lit(json!(1)),
                Ty::Union(vec![lit(json!(1))]),
            ]),
            lit(json!(null)),
        ]);
        assert_eq!(t.normalize(), Ty::Union(vec![Ty::Null, lit(json!(1))]));
        assert_eq!(Ty::Union(vec![Ty::Never, string()]).normalize(), string());
        assert_eq!(Ty::Union(vec![]).normalize(), Ty::Never);
        assert_eq!(Ty::Union(vec![string(), Ty::Any]).normalize(), Ty::Any);
        let empty_int = Ty::Int(Range {
            min: Some(Bound::exclusive(1.0)),
            max: Some(Bound::inclusive(1.5)),
        });
        assert_eq!(empty_int.normalize(), Ty::Never);
    }

    #[test]
    fn integer_bounds_round_inwards() {
        let r = Range {
            min: Some(Bound::exclusive(0.0)),
            max: Some(Bound::inclusive(9.5)),
        };
        assert_eq!(r.integer_bounds(), (Some(1.0), Some(9.0)));
        let r = Range {
            min: Some(Bound::inclusive(-0.5)),
            max: Some(Bound::exclusive(3.0)),
        };
        assert_eq!(r.integer_bounds(), (Some(-0.0), Some(2.0)));
        assert!(!Range::default().is_empty(true));
        assert!(
            Range {
                min: Some(Bound::exclusive(2.0)),
                max: Some(Bound::exclusive(3.0))
            }
            .is_empty(true)
        );
        assert!(
            !Range {
                min: Some(Bound::exclusive(2.0)),
                max: Some(Bound::exclusive(3.0))
            }
            .is_empty(false)
        );
    }

    #[test]
    fn literals_of_values_and_widening() {
        assert_eq!(Ty::of_value(&json!(3)), lit(json!(3)));
        assert_eq!(Ty::of_value(&json!(null)), Ty::Null);
        let t = Ty::of_value(&json!({"a": [1, "x"]}));
        assert_eq!(t.display(), r#"object{a: [1, "x"]}"#);
        assert_eq!(
            t.property("a").unwrap().0.element().unwrap().display(),
            r#"1 | "x""#
        );
        assert_eq!(Ty::of_value(&json!(0)).widen(), int(None, None));
        assert_eq!(Ty::of_value(&json!(0.5)).widen().display(), "number");
        assert_eq!(t.widen().display(), "object{a: list<integer | string>}");
        assert_eq!(ty(json!({"enum": ["a", "b"]})).widen(), string());
    }

    #[test]
    fn literal_membership_uses_json_schema_equality() {
        assert!(json_equal(&json!(1), &json!(1.0)));
        assert!(json_equal(
            &json!({"a": [1], "b": 2}),
            &json!({"b": 2.0, "a": [1.0]})
        ));
        assert!(!json_equal(&json!([1]), &json!([true])));
        // uniqueItems by json_equal: 1 and 1.0 are the same item, in objects too.
        let unique = ty(json!({"type": "array", "uniqueItems": true}));
        let accepts = |v: serde_json::Value| unique.accepts(&v, &mut |_, _| None);
        assert_eq!(accepts(json!([1, 2, "1", [1], {"a": 1}])), Some(true));
        assert_eq!(accepts(json!([1, 2, 1.0])), Some(false));
        assert_eq!(
            accepts(json!([{"a": [1], "b": 2}, {"b": 2.0, "a": [1.0]}])),
            Some(false)
        );
        assert_eq!(accepts(json!([0.0, -0.0])), Some(false));
        // A long list of distinct items (grouped, not compared pairwise), and one duplicate
        // at its end.
        let mut long: Vec<serde_json::Value> = (0..50_000).map(|i| json!(i)).collect();
        assert_eq!(accepts(serde_json::Value::Array(long.clone())), Some(true));
        long.push(json!(49_999.0));
        assert_eq!(accepts(serde_json::Value::Array(long)), Some(false));
        let one = ty(json!({"enum": [1]}));
        assert_eq!(one.accepts(&json!(1.0), &mut |_, _| None), Some(true));
        let s = ty(json!({"type": "string", "pattern": "^a"}));
        assert_eq!(s.accepts(&json!("ab"), &mut |_, _| None), None);
        assert_eq!(s.accepts(&json!(1), &mut |_, _| None), Some(false));
        assert_eq!(
            s.accepts(&json!("ab"), &mut |p, t| Some(
                p == "^a" && t.starts_with('a')
            )),
            Some(true)
        );
    }

    /// Types of every shape, with bounds that can make them empty and duplicate members.
    fn any_ty() -> impl proptest::strategy::Strategy<Value = Ty> {
        use proptest::prelude::*;
        let bound = prop_oneof![
            Just(None),
            (0i8..3, any::<bool>()).prop_map(|(v, exclusive)| Some(Bound {
                value: f64::from(v),
                exclusive
            })),
        ];
        let range = (bound.clone(), bound).prop_map(|(min, max)| Range { min, max });
        let literal = prop_oneof![
            Just(Json::Null),
            Just(json!("a")),
            Just(json!("b")),
            Just(json!(1)),
            Just(json!(1.0)),
            Just(json!([1, "a"])),
        ];
        let leaf = prop_oneof![
            Just(Ty::Any),
            Just(Ty::Never),
            Just(Ty::Null),
            Just(Ty::Bool),
            range.clone().prop_map(Ty::Int),
            range.prop_map(Ty::Number),
            (0u64..3, proptest::option::of(0u64..3)).prop_map(|(min_len, max_len)| Ty::String(
                StringTy {
                    min_len,
                    max_len,
                    pattern: None
                }
            )),
            literal.prop_map(Ty::Literal),
            Just(Ty::Opaque("why".to_owned())),
        ];
        leaf.prop_recursive(4, 48, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Ty::Union),
                (
                    proptest::collection::vec(inner.clone(), 0..3),
                    inner.clone(),
                    0u64..3,
                    proptest::option::of(0u64..4),
                    any::<bool>()
                )
                    .prop_map(|(prefix, items, min_items, max_items, unique)| {
                        Ty::List(Box::new(ListTy {
                            prefix,
                            items,
                            min_items,
                            max_items,
                            unique,
                        }))
                    }),
                (
                    proptest::collection::vec(
                        (
                            prop_oneof![Just("a"), Just("b")],
                            inner.clone(),
                            any::<bool>()
                        ),
                        0..3
                    ),
                    inner,
                    any::<bool>(),
                    0u64..3,
                    proptest::option::of(0u64..3)
                )
                    .prop_map(
                        |(properties, rest, open_by_default, min_properties, max_properties)| {
                            Ty::Object(Box::new(ObjectTy {
                                properties: properties
                                    .into_iter()
                                    .map(|(n, ty, required)| (n.to_owned(), Prop { ty, required }))
                                    .collect(),
                                rest,
                                open_by_default,
                                min_properties,
                                max_properties,
                            }))
                        }
                    ),
            ]
        })
    }

    proptest::proptest! {
        /// The shortcut of `normalize` for normal types changes nothing: a type it calls
        /// normal is its own normal form, and normalizing gives what the full rebuild gives.
        #[test]
        fn normal_types_are_left_as_they_are(t in any_ty()) {
            let deep = t.clone().normalize_deep();
            if t.is_normal() {
                proptest::prop_assert_eq!(&deep, &t);
            }
            proptest::prop_assert_eq!(&t.clone().normalize(), &deep);
            proptest::prop_assert_eq!(&deep.clone().normalize_deep(), &deep);
        }
    }
}
