//! The spanned document as a JSON representation the `jsonschema` crate validates directly
//! (its [`jsonschema::json`] traits), so that asking whether a step meets the meta-schema
//! builds no `serde_json` copy of it. Numbers and anything `jsonschema` wants as a
//! `serde_json::Value` are what [`Node::to_json`] gives, so every answer is the one for the
//! copy.

use std::borrow::Cow;

use jsonschema::json::{Array, Json, Node as JsonNode, NodeIdentity, Object};
use jsonschema::types::JsonType;
use lwir_spec::Span;
use lwir_spec::document::{Member, Node, Value};

/// The representation: a node is a `&Node`, an object its members, an array its items.
pub(super) struct Spanned;

impl Json for Spanned {
    type Node<'a> = &'a Node;
    type PreparedKey = String;
    type StringBuffer = ();

    // A lookup scans the members (few, in document order) as a pass over them does.
    const KEYS_PER_LOOKUP: usize = 8;
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> String {
        key.to_owned()
    }

    fn with_string_node<T>((): &mut (), string: &str, f: impl FnOnce(&Node) -> T) -> T {
        let node = Node {
            span: Span::new(0, 0),
            value: Value::String(string.into()),
        };
        f(&node)
    }
}

/// The number `Node::to_json` makes of `n`: an integer when written as one, else the double
/// (always finite in a read document; were it not, the copy would have `null`).
fn number(n: lwir_spec::document::Number) -> Option<serde_json::Number> {
    match n.integer() {
        Some(i) => Some(i.into()),
        None => serde_json::Number::from_f64(n.value),
    }
}

impl<'a> JsonNode<'a, Spanned> for &'a Node {
    type Object = &'a [Member];
    type Array = &'a [Node];
    type Number = serde_json::Number;

    fn as_object(&self) -> Option<&'a [Member]> {
        match &self.value {
            Value::Object(members) => Some(members),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<&'a [Node]> {
        match &self.value {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        match &self.value {
            Value::String(s) => Some(Cow::Borrowed(s.as_str())),
            _ => None,
        }
    }

    fn as_number(&self) -> Option<serde_json::Number> {
        match &self.value {
            Value::Number(n) => number(*n),
            _ => None,
        }
    }

    fn is_number(&self) -> bool {
        matches!(&self.value, Value::Number(n) if n.value.is_finite())
    }

    fn as_boolean(&self) -> Option<bool> {
        match &self.value {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        self.json_type() == JsonType::Null
    }

    fn json_type(&self) -> JsonType {
        match &self.value {
            Value::Null => JsonType::Null,
            Value::Bool(_) => JsonType::Boolean,
            Value::Number(n) if n.value.is_finite() => JsonType::Number,
            Value::Number(_) => JsonType::Null,
            Value::String(_) => JsonType::String,
            Value::Array(_) => JsonType::Array,
            Value::Object(_) => JsonType::Object,
        }
    }

    fn equals_value(&self, expected: &serde_json::Value) -> bool {
        match (&self.value, expected) {
            // `const` and `enum` of the meta-schemas are strings: no copy for those.
            (Value::String(s), serde_json::Value::String(e)) => s == e,
            (Value::String(_), _) => false,
            _ => jsonschema::json::cmp::equal(&self.to_json(), expected),
        }
    }

    fn to_value(&self) -> Cow<'a, serde_json::Value> {
        Cow::Owned(self.to_json())
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::new(std::ptr::from_ref::<Node>(*self) as usize))
    }
}

/// The members of an object, as `jsonschema` walks them.
pub(super) struct MembersIter<'a>(std::slice::Iter<'a, Member>);

impl<'a> Iterator for MembersIter<'a> {
    type Item = (&'a str, &'a Node);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|m| (m.key.as_str(), &m.value))
    }
}

impl<'a> Object<'a, Spanned> for &'a [Member] {
    type Node = &'a Node;
    type MemberName = &'a str;
    type MembersIter = MembersIter<'a>;

    fn len(&self) -> usize {
        <[Member]>::len(self)
    }

    fn get(&self, key: &String) -> Option<&'a Node> {
        self.iter().find(|m| m.key == *key).map(|m| &m.value)
    }

    fn members(&self) -> MembersIter<'a> {
        MembersIter(self.iter())
    }
}

impl<'a> Array<'a, Spanned> for &'a [Node] {
    type Node = &'a Node;
    type ElementsIter = std::slice::Iter<'a, Node>;

    fn len(&self) -> usize {
        <[Node]>::len(self)
    }

    fn elements(&self) -> std::slice::Iter<'a, Node> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meets_the_contract_of_a_representation() {
        let text = serde_json::to_vec(&jsonschema::json::conformance::document()).unwrap();
        let (doc, findings) = lwir_spec::document::read_document(text);
        assert!(findings.is_empty(), "{findings:?}");
        let doc = doc.expect("the conformance document reads");
        jsonschema::json::conformance::assert_conformance::<Spanned>(&doc.root());
    }

    /// Every value of `node`, depth first.
    fn values<'n>(node: &'n Node, out: &mut Vec<&'n Node>) {
        out.push(node);
        match &node.value {
            Value::Array(items) => items.iter().for_each(|n| values(n, out)),
            Value::Object(members) => members.iter().for_each(|m| values(&m.value, out)),
            _ => {}
        }
    }

    /// The spanned step validator answers as the `serde_json` one does, for every value of
    /// every JSON file of the corpus taken as a step (valid steps, broken ones, and
    /// anything else).
    #[test]
    fn agrees_with_the_serde_json_copy_on_the_corpus() {
        let meta = super::super::lwir_meta();
        let (serde, spanned) = (
            meta.step.as_ref().unwrap(),
            meta.spanned_step.as_ref().unwrap(),
        );
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lwir-corpus/cases");
        let mut stack = vec![dir];
        let (mut files, mut valid) = (0, 0);
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "json") {
                    continue;
                }
                let (doc, _) = lwir_spec::document::read_document(std::fs::read(&path).unwrap());
                let Ok(doc) = doc else { continue };
                files += 1;
                let mut all = Vec::new();
                values(doc.root(), &mut all);
                for node in all {
                    let expected = serde.is_valid(&node.to_json());
                    assert_eq!(
                        spanned.is_valid(node),
                        expected,
                        "{}: {node:?}",
                        path.display()
                    );
                    valid += usize::from(expected);
                }
            }
        }
        assert!(
            files > 100 && valid > 100,
            "{files} files, {valid} valid steps"
        );
    }
}
