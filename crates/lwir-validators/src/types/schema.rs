//! The schema builder: a type derived from a JSON Schema of the subset, read from the
//! spanned document or from `serde_json` ([`super::Ty::from_schema`] and its kin).

use serde_json::Value as Json;

use lwir_spec::document::{Node, Value};
use lwir_spec::pointer;

use super::*;

/// What a schema is read from: the spanned document or `serde_json`.
pub(super) trait Source: Sized {
    fn boolean(&self) -> Option<bool>;
    fn is_object(&self) -> bool;
    fn get(&self, key: &str) -> Option<&Self>;
    fn string(&self) -> Option<&str>;
    fn array(&self) -> Option<&[Self]>;
    fn members(&self) -> Vec<(&str, &Self)>;
    fn number(&self) -> Option<f64>;
    fn count(&self) -> Option<u64>;
    fn json(&self) -> Json;
}

impl Source for Node {
    fn boolean(&self) -> Option<bool> {
        match self.value {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }
    fn is_object(&self) -> bool {
        matches!(self.value, Value::Object(_))
    }
    fn get(&self, key: &str) -> Option<&Self> {
        Node::get(self, key)
    }
    fn string(&self) -> Option<&str> {
        self.as_str()
    }
    fn array(&self) -> Option<&[Self]> {
        self.as_array()
    }
    fn members(&self) -> Vec<(&str, &Self)> {
        self.as_object()
            .map(|ms| ms.iter().map(|m| (m.key.as_str(), &m.value)).collect())
            .unwrap_or_default()
    }
    fn number(&self) -> Option<f64> {
        self.as_number().map(|n| n.value)
    }
    fn count(&self) -> Option<u64> {
        self.as_i64().and_then(|n| u64::try_from(n).ok())
    }
    fn json(&self) -> Json {
        self.to_json()
    }
}

impl Source for Json {
    fn boolean(&self) -> Option<bool> {
        self.as_bool()
    }
    fn is_object(&self) -> bool {
        self.is_object()
    }
    fn get(&self, key: &str) -> Option<&Self> {
        self.as_object().and_then(|m| m.get(key))
    }
    fn string(&self) -> Option<&str> {
        self.as_str()
    }
    fn array(&self) -> Option<&[Self]> {
        self.as_array().map(Vec::as_slice)
    }
    fn members(&self) -> Vec<(&str, &Self)> {
        self.as_object()
            .map(|m| m.iter().map(|(k, v)| (k.as_str(), v)).collect())
            .unwrap_or_default()
    }
    fn number(&self) -> Option<f64> {
        self.as_f64()
    }
    fn count(&self) -> Option<u64> {
        self.as_u64().or_else(|| {
            let f = self.as_f64()?;
            (f >= 0.0 && f.fract() == 0.0 && f < 1.8e19).then_some(f as u64)
        })
    }
    fn json(&self) -> Json {
        self.clone()
    }
}

const NUMBER_KEYWORDS: &[&str] = &["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
const STRING_KEYWORDS: &[&str] = &["minLength", "maxLength", "pattern"];
const ARRAY_KEYWORDS: &[&str] = &[
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
];
const OBJECT_KEYWORDS: &[&str] = &[
    "properties",
    "required",
    "additionalProperties",
    "minProperties",
    "maxProperties",
];

/// Derives one type; holds the `$ref`s being expanded and the work done so far.
pub(super) struct Builder<'r, S> {
    root: &'r S,
    /// `$ref` targets being expanded, outermost first.
    expanding: Vec<String>,
    visited: usize,
    depth: usize,
    exact: bool,
}

impl<'r, S: Source> Builder<'r, S> {
    pub(super) fn new(root: &'r S, at_root: bool, exact: bool) -> Self {
        Builder {
            root,
            // The root is already being expanded: a `$ref` to `#` inside it recurses.
            expanding: if at_root {
                vec!["#".to_owned()]
            } else {
                Vec::new()
            },
            visited: 0,
            depth: 0,
            exact,
        }
    }

    pub(super) fn schema(&mut self, s: &'r S) -> Ty {
        self.visited += 1;
        if self.visited > MAX_SUBSCHEMAS {
            return Ty::Opaque(format!(
                "more than {MAX_SUBSCHEMAS} subschemas after expanding `$ref`s"
            ));
        }
        if self.depth >= MAX_NESTING {
            return Ty::Opaque(format!("schemas nested deeper than {MAX_NESTING} levels"));
        }
        self.depth += 1;
        let ty = self.schema_object(s);
        self.depth -= 1;
        ty
    }

    fn schema_object(&mut self, s: &'r S) -> Ty {
        if let Some(b) = s.boolean() {
            return if b { Ty::Any } else { Ty::Never };
        }
        if !s.is_object() {
            return Ty::Opaque("a schema that is neither an object nor a boolean".to_owned());
        }
        let mut ty = self.base(s);
        if let Some(c) = s.get("const") {
            ty = ty.intersect(&Ty::Literal(c.json()));
        }
        if let Some(e) = s.get("enum") {
            let literals = match e.array() {
                Some(items) => {
                    Ty::Union(items.iter().map(|v| Ty::Literal(v.json())).collect()).normalize_top()
                }
                None => Ty::Opaque("`enum` that is not a list".to_owned()),
            };
            ty = ty.intersect(&literals);
        }
        if let Some(r) = s.get("$ref") {
            let target = self.reference(r);
            ty = ty.intersect(&target);
        }
        if let Some(all) = s.get("allOf") {
            for sub in all.array().unwrap_or_default() {
                if ty == Ty::Never {
                    break;
                }
                let t = self.schema(sub);
                ty = ty.intersect(&t);
            }
        }
        if let Some(any) = s.get("anyOf") {
            let branches = self.list(any);
            ty = ty.intersect(&Ty::Union(branches).normalize_top());
        }
        if let Some(one) = s.get("oneOf") {
            let branches = self.list(one);
            let t = self.one_of(branches);
            ty = ty.intersect(&t);
        }
        ty.normalize_top()
    }

    fn list(&mut self, node: &'r S) -> Vec<Ty> {
        match node.array() {
            Some(items) => items.iter().map(|s| self.schema(s)).collect(),
            None => vec![Ty::Opaque(
                "a list of schemas that is not a list".to_owned(),
            )],
        }
    }

    fn one_of(&self, branches: Vec<Ty>) -> Ty {
        if self.exact && branches.len() > 1 {
            if branches.len() > MAX_ONE_OF_BRANCHES {
                return Ty::Opaque(format!(
                    "`oneOf` with more than {MAX_ONE_OF_BRANCHES} branches (their disjointness is not checked)"
                ));
            }
            for (j, b) in branches.iter().enumerate() {
                for (i, a) in branches[..j].iter().enumerate() {
                    if a.intersect(b) != Ty::Never {
                        return Ty::Opaque(format!(
                            "`oneOf` whose branches {i} and {j} may overlap (a value matching both is rejected)"
                        ));
                    }
                }
            }
        }
        Ty::Union(branches).normalize_top()
    }

    /// The type from `type` and the keywords of each type.
    fn base(&mut self, s: &'r S) -> Ty {
        let has = |keys: &[&str]| keys.iter().any(|k| s.get(k).is_some());
        let Some(types) = s.get("type") else {
            let (num, text, array, object) = (
                has(NUMBER_KEYWORDS),
                has(STRING_KEYWORDS),
                has(ARRAY_KEYWORDS),
                has(OBJECT_KEYWORDS),
            );
            if !(num || text || array || object) {
                return Ty::Any;
            }
            return Ty::Union(vec![
                Ty::Null,
                Ty::Bool,
                Ty::Number(if num { range(s) } else { Range::default() }),
                Ty::String(if text { string(s) } else { StringTy::default() }),
                if array {
                    self.array(s)
                } else {
                    Ty::List(Box::default())
                },
                if object {
                    self.object(s)
                } else {
                    Ty::Object(Box::default())
                },
            ])
            .normalize_top();
        };
        let names: Vec<&str> = match (types.string(), types.array()) {
            (Some(name), _) => vec![name],
            (_, Some(items)) => items.iter().filter_map(Source::string).collect(),
            _ => return Ty::Opaque("`type` that is neither a name nor a list".to_owned()),
        };
        let members = names
            .into_iter()
            .map(|name| match name {
                "null" => Ty::Null,
                "boolean" => Ty::Bool,
                "integer" => Ty::Int(range(s)).normalize_top(),
                "number" => Ty::Number(range(s)).normalize_top(),
                "string" => Ty::String(string(s)).normalize_top(),
                "array" => self.array(s),
                "object" => self.object(s),
                other => Ty::Opaque(format!("unknown type name `{other}`")),
            })
            .collect();
        Ty::Union(members).normalize_top()
    }

    fn array(&mut self, s: &'r S) -> Ty {
        let prefix = match s.get("prefixItems") {
            Some(p) => self.list(p),
            None => Vec::new(),
        };
        let items = match s.get("items") {
            Some(i) => self.schema(i),
            None => Ty::Any,
        };
        Ty::List(Box::new(ListTy {
            prefix,
            items,
            min_items: s.get("minItems").and_then(Source::count).unwrap_or(0),
            max_items: s.get("maxItems").and_then(Source::count),
            unique: s
                .get("uniqueItems")
                .and_then(Source::boolean)
                .unwrap_or(false),
        }))
        .normalize_top()
    }

    fn object(&mut self, s: &'r S) -> Ty {
        let rest = match s.get("additionalProperties") {
            Some(a) => self.schema(a),
            None => Ty::Any,
        };
        let required: Vec<&str> = s
            .get("required")
            .and_then(Source::array)
            .map(|r| r.iter().filter_map(Source::string).collect())
            .unwrap_or_default();
        let mut properties: Vec<(String, Prop)> = Vec::new();
        for (name, sub) in s.get("properties").map(Source::members).unwrap_or_default() {
            let ty = self.schema(sub);
            let prop = Prop {
                ty,
                required: required.contains(&name),
            };
            properties.push((name.to_owned(), prop));
        }
        let declared: HashSet<String> = properties.iter().map(|(n, _)| n.clone()).collect();
        let mut seen = HashSet::new();
        for name in required {
            if !declared.contains(name) && seen.insert(name) {
                let prop = Prop {
                    ty: rest.clone(),
                    required: true,
                };
                properties.push((name.to_owned(), prop));
            }
        }
        Ty::Object(Box::new(ObjectTy {
            properties,
            rest,
            open_by_default: s.get("additionalProperties").is_none(),
            min_properties: s.get("minProperties").and_then(Source::count).unwrap_or(0),
            max_properties: s.get("maxProperties").and_then(Source::count),
        }))
        .normalize_top()
    }

    fn reference(&mut self, r: &'r S) -> Ty {
        let Some(target) = r.string() else {
            return Ty::Opaque("a `$ref` that is not a string".to_owned());
        };
        if self.expanding.iter().any(|t| t == target) {
            return Ty::Opaque(format!("recursive `$ref` to `{target}`"));
        }
        let node = if target == "#" {
            Some(self.root)
        } else {
            target
                .strip_prefix("#/$defs/")
                .and_then(|rest| pointer::tokens(&format!("/{rest}")))
                .filter(|tokens| tokens.len() == 1)
                .and_then(|tokens| self.root.get("$defs")?.get(&tokens[0]))
        };
        let Some(node) = node else {
            return Ty::Opaque(format!(
                "`$ref` to `{target}`, which is not in this schema's `$defs`"
            ));
        };
        self.expanding.push(target.to_owned());
        let ty = self.schema(node);
        self.expanding.pop();
        ty
    }
}

fn range<S: Source>(s: &S) -> Range {
    let get = |k: &str| s.get(k).and_then(Source::number);
    Range {
        min: tighter(
            get("minimum").map(Bound::inclusive),
            get("exclusiveMinimum").map(Bound::exclusive),
            true,
        ),
        max: tighter(
            get("maximum").map(Bound::inclusive),
            get("exclusiveMaximum").map(Bound::exclusive),
            false,
        ),
    }
}

fn string<S: Source>(s: &S) -> StringTy {
    StringTy {
        min_len: s.get("minLength").and_then(Source::count).unwrap_or(0),
        max_len: s.get("maxLength").and_then(Source::count),
        pattern: s.get("pattern").and_then(Source::string).map(str::to_owned),
    }
}
