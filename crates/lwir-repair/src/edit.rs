//! Fixes as text edits: an RFC 6902 patch applied to the bytes a draft was written in,
//! through its spanned document, so that everything outside the edited values is byte for
//! byte what its author wrote — key order, spacing, escapes, number spellings.
//!
//! JSON Patch stays the contract (findings carry patches, planners read them); only how
//! lwirc applies one changes. Each operation becomes edits of byte ranges:
//!
//! - `replace` (and `add` of a member that exists) rewrites the value's bytes;
//! - `add` of a new member writes `, "key": value` after the last member, spaced like it; of
//!   an array element, the element and a `,` before the element it goes in front of (or
//!   after the last); into an empty object or array, the container;
//! - `remove` deletes the member or element with the comma and spacing that separate it;
//! - `move` within one object to a new key rewrites the key alone; any other move is a
//!   `remove` and an `add` of the value's own bytes.
//!
//! New values are written compactly inside a one-line container and pretty-printed at the
//! surrounding indentation otherwise. Operations whose edits are independent (disjoint
//! paths and bytes, no array index shifted) are made against one reading of the text;
//! otherwise the text is read again before the next, so that every operation sees the
//! document the ones before it made, as RFC 6902 says.
//!
//! [`apply_text`] is what the repair loop and `lwirc repair` use: `json-patch` decides
//! whether the patch applies and what the document becomes, and the edited text is kept
//! when it reads back as exactly that document (else the document is pretty-printed, as
//! before, rather than anything else written).

use std::collections::VecDeque;

use lwir_spec::PatchOp;
use lwir_spec::document::{self, Node, SpannedDocument, Value};
use lwir_spec::pointer;

use crate::ApplyError;

/// Why a patch does not apply to a text as edits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The text is not a JSON document (a fatal reader finding).
    #[error("the text is not a JSON document")]
    NotJson,
    /// A path is not an RFC 6901 JSON Pointer.
    #[error("`{0}` is not a JSON Pointer")]
    BadPointer(String),
    /// Nothing is at a path the operation needs (or its parent is not an object or array,
    /// or an array index is out of range).
    #[error("nothing at `{0}`")]
    Missing(String),
    /// A `move` into the value being moved.
    #[error("`{from}` cannot be moved inside itself (to `{path}`)")]
    IntoItself {
        /// The `from` of the move.
        from: String,
        /// Its `path`.
        path: String,
    },
    /// A `remove` (or `move`) of the whole document.
    #[error("the whole document cannot be removed")]
    RemoveRoot,
}

/// Applies `patch` to the JSON text `source` as text edits, atomically: the edited text,
/// or the error that stopped it (the source is never half-patched).
///
/// `json-patch` is the judge of what the patch means: when the edits read back as anything
/// other than the document it makes (which the property tests and the `fixes` fuzz target
/// look for), that document is written pretty-printed instead.
pub fn apply_text(source: &[u8], patch: &[PatchOp]) -> Result<Vec<u8>, ApplyError> {
    let read = document::read(source.to_vec());
    let Some(doc) = read.document else {
        return Err(ApplyError::NotJson);
    };
    apply_to_document(&doc, patch)
}

/// [`apply_text`] on a text already read: `doc`, whose bytes are edited. (The repair loop
/// holds the document its validation read and so reads nothing twice.)
pub fn apply_to_document(doc: &SpannedDocument, patch: &[PatchOp]) -> Result<Vec<u8>, ApplyError> {
    if let Some(text) = replacements(doc, patch) {
        return Ok(text);
    }
    let expected = crate::apply_owned(doc.root().to_json(), patch)?;
    if let Ok(text) = edit_document(doc.clone(), patch)
        && reads_as(&text, &expected)
    {
        return Ok(text);
    }
    Ok(crate::fixes::to_bytes(&expected))
}

/// A patch of `replace` operations alone — nearly every safe fix — applied as text edits and
/// judged on the spanned trees instead of through `serde_json` copies of the whole document:
/// the edited text, read again, must be the document `doc` with exactly those values
/// replaced, as `json-patch` would replace them. `None` (for the general path) when the
/// patch has other operations, a path that does not exist, the root, or one path inside
/// another, or when the edits do not read back as they should.
///
/// The replaced paths are disjoint, so every edit is planned against the one reading `doc`
/// is, and the text is read once more, to judge it.
fn replacements(doc: &SpannedDocument, patch: &[PatchOp]) -> Option<Vec<u8>> {
    let mut trie = Trie::default();
    let mut edits = Vec::with_capacity(patch.len());
    for op in patch {
        let PatchOp::Replace { path, .. } = op else {
            return None;
        };
        let tokens = pointer::tokens(path)?;
        if tokens.is_empty() || doc.root().at(path).is_none() || !trie.insert(&tokens) {
            return None;
        }
        match plan(doc, &Op::from(op)).ok()? {
            Planned::Edits {
                edits: planned,
                shifts: false,
            } => edits.extend(planned),
            _ => return None,
        }
    }
    let text = splice(doc.source(), edits)?;
    let edited = document::read(text).document?;
    for op in patch {
        let PatchOp::Replace { path, value } = op else {
            return None;
        };
        if edited.root().at(path)?.to_json() != *value {
            return None;
        }
    }
    same_except(doc.root(), edited.root(), Some(&trie)).then(|| edited.into_source())
}

/// `source` with `edits` (planned against it) made; `None` when two edits overlap.
fn splice(source: &[u8], mut edits: Vec<Edit>) -> Option<Vec<u8>> {
    // An insertion before an edit starting at the same byte.
    edits.sort_by_key(|e| (e.start, e.end));
    let grown: usize = edits.iter().map(|e| e.text.len()).sum();
    let mut out = Vec::with_capacity(source.len() + grown);
    let mut at = 0;
    for edit in &edits {
        if edit.start < at || edit.end > source.len() {
            return None;
        }
        out.extend_from_slice(&source[at..edit.start]);
        out.extend_from_slice(&edit.text);
        at = edit.end;
    }
    out.extend_from_slice(&source[at..]);
    Some(out)
}

/// The replaced paths, as a tree of pointer tokens.
#[derive(Debug, Default)]
struct Trie {
    replaced: bool,
    children: std::collections::BTreeMap<String, Trie>,
}

impl Trie {
    /// Adds `tokens`; `false` when it is inside, or contains, a path already added.
    fn insert(&mut self, tokens: &[String]) -> bool {
        let mut node = self;
        for token in tokens {
            if node.replaced {
                return false;
            }
            node = node.children.entry(token.clone()).or_default();
        }
        if node.replaced || !node.children.is_empty() {
            return false;
        }
        node.replaced = true;
        true
    }
}

/// Whether `a` and `b` are the same value (members in the same order, numbers alike to the
/// bit) everywhere but at the replaced paths of `trie`, which are not compared.
fn same_except(a: &Node, b: &Node, trie: Option<&Trie>) -> bool {
    if trie.is_some_and(|t| t.replaced) {
        return true;
    }
    let child = |token: &str| trie.and_then(|t| t.children.get(token));
    match (&a.value, &b.value) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => {
            x.value.to_bits() == y.value.to_bits() && x.exact_integer == y.exact_integer
        }
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len()
                && x.iter().zip(y.iter()).enumerate().all(|(i, (p, q))| {
                    let sub = match trie {
                        Some(t) if !t.children.is_empty() => child(&i.to_string()),
                        _ => None,
                    };
                    same_except(p, q, sub)
                })
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(p, q)| p.key == q.key && same_except(&p.value, &q.value, child(&p.key)))
        }
        _ => false,
    }
}

/// Whether `text` reads as a document equal to `expected`.
fn reads_as(text: &[u8], expected: &serde_json::Value) -> bool {
    document::read(text.to_vec())
        .document
        .is_some_and(|doc| doc.root().to_json() == *expected)
}

/// Applies `patch` to the JSON text `source` as text edits alone, without `json-patch`'s
/// judgement: what [`apply_text`] keeps when it agrees. For tests and fuzzing.
pub fn edit_text(source: &[u8], patch: &[PatchOp]) -> Result<Vec<u8>, EditError> {
    let (doc, _) = document::read_document(source.to_vec());
    edit_document(doc.map_err(|_| EditError::NotJson)?, patch)
}

fn edit_document(mut doc: SpannedDocument, patch: &[PatchOp]) -> Result<Vec<u8>, EditError> {
    let mut queue: VecDeque<Op> = patch.iter().map(Op::from).collect();
    let mut batch = Batch::default();
    while let Some(op) = queue.pop_front() {
        let planned = match plan(&doc, &op) {
            Ok(planned) => planned,
            // Against a text with edits pending, an operation may need what they make.
            Err(_) if !batch.is_empty() => {
                doc = batch.flush(doc)?;
                queue.push_front(op);
                continue;
            }
            Err(e) => return Err(e),
        };
        match planned {
            Planned::Edits { edits, shifts } => {
                if !batch.is_empty() && !batch.admits(&op, &edits) {
                    doc = batch.flush(doc)?;
                    queue.push_front(op);
                    continue;
                }
                batch.add(&op, edits);
                if shifts {
                    // Later paths count array elements after this one: read it again.
                    doc = batch.flush(doc)?;
                }
            }
            Planned::Then(ops) => {
                if !batch.is_empty() {
                    // Planned against the text before the pending edits: plan it again.
                    doc = batch.flush(doc)?;
                    queue.push_front(op);
                    continue;
                }
                for op in ops.into_iter().rev() {
                    queue.push_front(op);
                }
            }
        }
    }
    if !batch.is_empty() {
        doc = batch.flush(doc)?;
    }
    Ok(doc.into_source())
}

/// An operation as the editor runs it: a patch operation, with the value to add as JSON
/// or as the text of a moved value.
#[derive(Clone, Debug)]
enum Op {
    Add { path: String, value: New },
    Remove { path: String },
    Replace { path: String, value: New },
    Move { from: String, path: String },
}

/// A value to write.
#[derive(Clone, Debug)]
enum New {
    Json(serde_json::Value),
    /// The bytes of a value moved from elsewhere in the text.
    Text(Vec<u8>),
}

impl From<&PatchOp> for Op {
    fn from(op: &PatchOp) -> Self {
        match op {
            PatchOp::Add { path, value } => Op::Add {
                path: path.clone(),
                value: New::Json(value.clone()),
            },
            PatchOp::Remove { path } => Op::Remove { path: path.clone() },
            PatchOp::Replace { path, value } => Op::Replace {
                path: path.clone(),
                value: New::Json(value.clone()),
            },
            PatchOp::Move { from, path } => Op::Move {
                from: from.clone(),
                path: path.clone(),
            },
        }
    }
}

impl Op {
    /// The paths whose meaning it changes.
    fn paths(&self) -> Vec<&str> {
        match self {
            Op::Add { path, .. } | Op::Remove { path } | Op::Replace { path, .. } => vec![path],
            Op::Move { from, path } => vec![from, path],
        }
    }
}

/// What an operation comes to against one reading of the text.
enum Planned {
    /// These edits of its bytes; `shifts` when they add or remove an array element, so
    /// that later indices into that array mean other elements.
    Edits { edits: Vec<Edit>, shifts: bool },
    /// These operations, each against the text the one before it leaves.
    Then(Vec<Op>),
}

/// Replace the bytes `start..end` with `text` (an insertion when the range is empty).
#[derive(Clone, Debug)]
struct Edit {
    start: usize,
    end: usize,
    text: Vec<u8>,
}

/// Edits made against one reading of the text, and the paths of their operations.
#[derive(Default)]
struct Batch {
    edits: Vec<Edit>,
    paths: Vec<String>,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.edits.is_empty() && self.paths.is_empty()
    }

    /// Whether `op`, planned as `edits` against the same reading, is independent of every
    /// operation in the batch: no path equal to, inside or around one of theirs, and no
    /// byte range meeting one of theirs (two insertions at one place conflict too).
    fn admits(&self, op: &Op, edits: &[Edit]) -> bool {
        let paths_apart = op
            .paths()
            .iter()
            .all(|p| self.paths.iter().all(|q| !related(p, q)));
        let bytes_apart = edits.iter().all(|e| {
            self.edits.iter().all(|f| {
                if e.start == e.end || f.start == f.end {
                    // An insertion conflicts with an edit it touches (its text may assume
                    // what that edit takes away, the comma of a removed member say) and
                    // with another insertion at the same place.
                    let touches = |at: usize, g: &Edit| g.start <= at && at <= g.end;
                    let meets = (e.start == e.end && touches(e.start, f))
                        || (f.start == f.end && touches(f.start, e));
                    !meets
                } else {
                    e.end <= f.start || f.end <= e.start
                }
            })
        });
        paths_apart && bytes_apart
    }

    fn add(&mut self, op: &Op, edits: Vec<Edit>) {
        self.paths.extend(op.paths().into_iter().map(str::to_owned));
        self.edits.extend(edits);
    }

    /// The document with the batch's edits made, read again.
    fn flush(&mut self, doc: SpannedDocument) -> Result<SpannedDocument, EditError> {
        let source = doc.into_source();
        let edits = std::mem::take(&mut self.edits);
        self.paths.clear();
        // The batch admits only edits apart from each other.
        let out = splice(&source, edits).ok_or(EditError::NotJson)?;
        drop(source);
        document::read_document(out)
            .0
            .map_err(|_| EditError::NotJson)
    }
}

/// Whether one pointer is the other or inside it.
fn related(a: &str, b: &str) -> bool {
    inside_or_equal(a, b) || inside_or_equal(b, a)
}

/// Whether `inner` is `outer` or a pointer below it (at a token boundary).
fn inside_or_equal(inner: &str, outer: &str) -> bool {
    inner.starts_with(outer)
        && (inner.len() == outer.len() || inner.as_bytes()[outer.len()] == b'/')
}

/// The node at `tokens` below `node`, RFC 6901 style (array indices without leading zeros).
fn walk<'a>(mut node: &'a Node, tokens: &[String]) -> Option<&'a Node> {
    for token in tokens {
        node = match &node.value {
            Value::Object(members) => &members.iter().find(|m| m.key == token)?.value,
            Value::Array(items) => items.get(pointer::array_index(token)?)?,
            _ => return None,
        };
    }
    Some(node)
}

/// `path` split into its parent's node and its last token; `None` for the root.
fn parent_of<'a>(
    doc: &'a SpannedDocument,
    path: &str,
) -> Result<Option<(&'a Node, String)>, EditError> {
    let mut tokens = pointer::tokens(path).ok_or_else(|| EditError::BadPointer(path.into()))?;
    let Some(last) = tokens.pop() else {
        return Ok(None);
    };
    let parent = walk(doc.root(), &tokens).ok_or_else(|| EditError::Missing(path.into()))?;
    Ok(Some((parent, last)))
}

fn plan(doc: &SpannedDocument, op: &Op) -> Result<Planned, EditError> {
    let source = doc.source();
    let edits = |edits, shifts| Ok(Planned::Edits { edits, shifts });
    match op {
        Op::Replace { path, value } => {
            let (node, around) = match parent_of(doc, path)? {
                Some((parent, last)) => {
                    let node =
                        child(parent, &last).ok_or_else(|| EditError::Missing(path.clone()))?;
                    (node, &source[parent.span.range()])
                }
                None => (doc.root(), source),
            };
            edits(
                vec![replace_node(source, node, value, contains_newline(around))],
                false,
            )
        }
        Op::Add { path, value } => match parent_of(doc, path)? {
            Some((parent, last)) => edits(
                add(source, parent, &last, value, path)?,
                parent.as_array().is_some(),
            ),
            None => edits(
                vec![replace_node(
                    source,
                    doc.root(),
                    value,
                    contains_newline(source),
                )],
                false,
            ),
        },
        Op::Remove { path } => {
            let (parent, last) = parent_of(doc, path)?.ok_or(EditError::RemoveRoot)?;
            edits(remove(parent, &last, path)?, parent.as_array().is_some())
        }
        Op::Move { from, path } => plan_move(doc, from, path),
    }
}

fn plan_move(doc: &SpannedDocument, from: &str, path: &str) -> Result<Planned, EditError> {
    if inside_or_equal(path, from) && path.len() != from.len() {
        return Err(EditError::IntoItself {
            from: from.into(),
            path: path.into(),
        });
    }
    pointer::tokens(path).ok_or_else(|| EditError::BadPointer(path.into()))?;
    let (from_parent, from_last) = parent_of(doc, from)?.ok_or(EditError::RemoveRoot)?;
    // What is moved must exist where a `remove` finds it.
    let moved = child(from_parent, &from_last).ok_or_else(|| EditError::Missing(from.into()))?;
    if from == path {
        return Ok(Planned::Edits {
            edits: Vec::new(),
            shifts: false,
        });
    }
    // A rename within one object, to a key it does not have: the key's bytes alone.
    if let (Some(members), Ok(Some((to_parent, to_last)))) =
        (from_parent.as_object(), parent_of(doc, path))
        && std::ptr::eq(from_parent, to_parent)
        && !members.iter().any(|m| m.key == to_last)
        && let Some(member) = members.iter().find(|m| m.key == from_last)
    {
        return Ok(Planned::Edits {
            edits: vec![Edit {
                start: member.key_span.start(),
                end: member.key_span.end(),
                text: json_string(&to_last),
            }],
            shifts: false,
        });
    }
    let text = doc.source()[moved.span.range()].to_vec();
    Ok(Planned::Then(vec![
        Op::Remove { path: from.into() },
        Op::Add {
            path: path.into(),
            value: New::Text(text),
        },
    ]))
}

/// The member `token` of an object or element `token` of an array.
fn child<'a>(parent: &'a Node, token: &str) -> Option<&'a Node> {
    match &parent.value {
        Value::Object(members) => members.iter().find(|m| m.key == token).map(|m| &m.value),
        Value::Array(items) => items.get(pointer::array_index(token)?),
        _ => None,
    }
}

fn add(
    source: &[u8],
    parent: &Node,
    last: &str,
    value: &New,
    path: &str,
) -> Result<Vec<Edit>, EditError> {
    let multiline = contains_newline(&source[parent.span.range()]);
    match &parent.value {
        Value::Object(members) => {
            if let Some(member) = members.iter().find(|m| m.key == last) {
                return Ok(vec![replace_node(source, &member.value, value, multiline)]);
            }
            let Some(tail) = members.last() else {
                // An empty object: written again with its one member.
                let text = [
                    b"{".as_slice(),
                    &json_string(last),
                    b": ",
                    &render(source, parent.span.start(), value, false),
                    b"}",
                ]
                .concat();
                return Ok(vec![Edit {
                    start: parent.span.start(),
                    end: parent.span.end(),
                    text,
                }]);
            };
            let colon = &source[tail.key_span.end()..tail.value.span.start()];
            let spacing = space_before(source, tail.key_span.start());
            let text = [
                b",".as_slice(),
                spacing,
                &json_string(last),
                colon,
                &render(source, tail.key_span.start(), value, multiline),
            ]
            .concat();
            let at = tail.value.span.end();
            Ok(vec![Edit {
                start: at,
                end: at,
                text,
            }])
        }
        Value::Array(items) => {
            let index = if last == "-" {
                items.len()
            } else {
                pointer::array_index(last).ok_or_else(|| EditError::Missing(path.into()))?
            };
            if index > items.len() {
                return Err(EditError::Missing(path.into()));
            }
            let Some(tail) = items.last() else {
                let text = [
                    b"[".as_slice(),
                    &render(source, parent.span.start(), value, false),
                    b"]",
                ]
                .concat();
                return Ok(vec![Edit {
                    start: parent.span.start(),
                    end: parent.span.end(),
                    text,
                }]);
            };
            if let Some(before) = items.get(index) {
                // In front of the element now at `index`, spaced as it is.
                let at = before.span.start();
                let spacing = space_before(source, at);
                let text = [
                    render(source, at, value, multiline).as_slice(),
                    b",",
                    spacing,
                ]
                .concat();
                Ok(vec![Edit {
                    start: at,
                    end: at,
                    text,
                }])
            } else {
                let spacing = space_before(source, tail.span.start());
                let text = [
                    b",".as_slice(),
                    spacing,
                    &render(source, tail.span.start(), value, multiline),
                ]
                .concat();
                let at = tail.span.end();
                Ok(vec![Edit {
                    start: at,
                    end: at,
                    text,
                }])
            }
        }
        _ => Err(EditError::Missing(path.into())),
    }
}

fn remove(parent: &Node, last: &str, path: &str) -> Result<Vec<Edit>, EditError> {
    // Each item as (its first byte, its last byte + 1).
    let (items, index): (Vec<(usize, usize)>, usize) = match &parent.value {
        Value::Object(members) => {
            let index = members
                .iter()
                .position(|m| m.key == last)
                .ok_or_else(|| EditError::Missing(path.into()))?;
            let items = members
                .iter()
                .map(|m| (m.key_span.start(), m.value.span.end()))
                .collect();
            (items, index)
        }
        Value::Array(elements) => {
            let index = pointer::array_index(last)
                .filter(|&i| i < elements.len())
                .ok_or_else(|| EditError::Missing(path.into()))?;
            let items = elements
                .iter()
                .map(|n| (n.span.start(), n.span.end()))
                .collect();
            (items, index)
        }
        _ => return Err(EditError::Missing(path.into())),
    };
    let (start, end) = if let Some(next) = items.get(index + 1) {
        // Up to the next item: this one, its comma and the spacing after it.
        (items[index].0, next.0)
    } else if index > 0 {
        // The last of several: from the end of the one before, taking the comma before it.
        (items[index - 1].1, items[index].1)
    } else {
        // The only one: the container's inside, spacing included.
        (parent.span.start() + 1, parent.span.end() - 1)
    };
    Ok(vec![Edit {
        start,
        end,
        text: Vec::new(),
    }])
}

/// An edit writing `value` over `node`.
fn replace_node(source: &[u8], node: &Node, value: &New, multiline: bool) -> Edit {
    Edit {
        start: node.span.start(),
        end: node.span.end(),
        text: render(source, node.span.start(), value, multiline),
    }
}

fn contains_newline(bytes: &[u8]) -> bool {
    bytes.contains(&b'\n')
}

/// The whitespace right before byte `at` (back to the comma or bracket before it).
fn space_before(source: &[u8], at: usize) -> &[u8] {
    let start = source[..at]
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .map_or(0, |i| i + 1);
    &source[start..at]
}

/// The indentation of the line byte `at` is on.
fn indentation(source: &[u8], at: usize) -> &[u8] {
    let line = source[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let width = source[line..at]
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count();
    &source[line..line + width]
}

/// The bytes of `value` to write at byte `at`: a moved value's own bytes; JSON compact, or
/// pretty-printed (two spaces a level) and indented like the line at `at`.
fn render(source: &[u8], at: usize, value: &New, multiline: bool) -> Vec<u8> {
    let json = match value {
        New::Text(text) => return text.clone(),
        New::Json(json) => json,
    };
    if !multiline {
        return serde_json::to_vec(json).unwrap_or_default();
    }
    let pretty = serde_json::to_vec_pretty(json).unwrap_or_default();
    let indent = indentation(source, at);
    let mut out = Vec::with_capacity(pretty.len());
    for &b in &pretty {
        out.push(b);
        if b == b'\n' {
            out.extend_from_slice(indent);
        }
    }
    out
}

/// `text` as a JSON string.
fn json_string(text: &str) -> Vec<u8> {
    serde_json::to_vec(text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn edit(source: &str, patch: &[PatchOp]) -> String {
        String::from_utf8(edit_text(source.as_bytes(), patch).unwrap()).unwrap()
    }

    fn replace(path: &str, value: serde_json::Value) -> PatchOp {
        PatchOp::Replace {
            path: path.into(),
            value,
        }
    }

    fn add(path: &str, value: serde_json::Value) -> PatchOp {
        PatchOp::Add {
            path: path.into(),
            value,
        }
    }

    fn remove(path: &str) -> PatchOp {
        PatchOp::Remove { path: path.into() }
    }

    fn mv(from: &str, path: &str) -> PatchOp {
        PatchOp::Move {
            from: from.into(),
            path: path.into(),
        }
    }

    #[test]
    fn replace_touches_only_the_value() {
        let src = "{\n  \"z\": 1.50,\n  \"tool\": \"a.b\",  \"s\": \"\\u00e9\"\n}\n";
        assert_eq!(
            edit(src, &[replace("/tool", json!("a.c"))]),
            "{\n  \"z\": 1.50,\n  \"tool\": \"a.c\",  \"s\": \"\\u00e9\"\n}\n"
        );
    }

    #[test]
    fn a_rename_rewrites_the_key_alone() {
        let src = r#"{"b": 1, "agrs": {"x" : [1,2]}, "a": 2}"#;
        assert_eq!(
            edit(src, &[mv("/agrs", "/args")]),
            r#"{"b": 1, "args": {"x" : [1,2]}, "a": 2}"#
        );
    }

    #[test]
    fn members_are_removed_with_their_comma() {
        let src = "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}";
        assert_eq!(edit(src, &[remove("/a")]), "{\n  \"b\": 2,\n  \"c\": 3\n}");
        assert_eq!(edit(src, &[remove("/b")]), "{\n  \"a\": 1,\n  \"c\": 3\n}");
        assert_eq!(edit(src, &[remove("/c")]), "{\n  \"a\": 1,\n  \"b\": 2\n}");
        assert_eq!(edit("{ \"a\": 1 }", &[remove("/a")]), "{}");
        assert_eq!(edit("[1, 2, 3]", &[remove("/1")]), "[1, 3]");
        assert_eq!(edit("[1, 2, 3]", &[remove("/2")]), "[1, 2]");
    }

    #[test]
    fn added_members_are_spaced_like_their_neighbours() {
        let src = "{\n  \"a\": 1\n}";
        assert_eq!(
            edit(src, &[add("/b", json!({"x": [1]}))]),
            "{\n  \"a\": 1,\n  \"b\": {\n    \"x\": [\n      1\n    ]\n  }\n}"
        );
        assert_eq!(
            edit(r#"{"a":1}"#, &[add("/b", json!({"x": 2}))]),
            r#"{"a":1,"b":{"x":2}}"#
        );
        assert_eq!(edit("{ }", &[add("/b", json!(2))]), r#"{"b": 2}"#);
        assert_eq!(edit("[1, 3]", &[add("/1", json!(2))]), "[1, 2, 3]");
        assert_eq!(edit("[1, 2]", &[add("/-", json!(3))]), "[1, 2, 3]");
        assert_eq!(edit("[]", &[add("/0", json!(1))]), "[1]");
    }

    #[test]
    fn operations_see_what_the_ones_before_made() {
        let src = r#"{"steps": [{"id": "a"}, {"id": "b"}], "x": 1}"#;
        // The second index counts after the first removal.
        assert_eq!(
            edit(
                src,
                &[remove("/steps/0"), replace("/steps/0/id", json!("c"))]
            ),
            r#"{"steps": [{"id": "c"}], "x": 1}"#
        );
        // A rename, then the renamed member.
        assert_eq!(
            edit(src, &[mv("/x", "/y"), replace("/y", json!(2))]),
            r#"{"steps": [{"id": "a"}, {"id": "b"}], "y": 2}"#
        );
        // Independent edits in one reading.
        assert_eq!(
            edit(
                src,
                &[
                    replace("/steps/0/id", json!("p")),
                    replace("/steps/1/id", json!("q")),
                    remove("/x")
                ]
            ),
            r#"{"steps": [{"id": "p"}, {"id": "q"}]}"#
        );
    }

    #[test]
    fn a_move_elsewhere_carries_the_value_bytes() {
        let src = r#"{"a": {"k": 1.0E2}, "b": {}}"#;
        assert_eq!(
            edit(src, &[mv("/a/k", "/b/k")]),
            r#"{"a": {}, "b": {"k": 1.0E2}}"#
        );
    }

    #[test]
    fn what_does_not_apply_is_an_error() {
        assert_eq!(
            edit_text(b"{}", &[remove("/a")]),
            Err(EditError::Missing("/a".into()))
        );
        assert_eq!(edit_text(b"{}", &[remove("")]), Err(EditError::RemoveRoot));
        assert_eq!(
            edit_text(b"{\"a\":{}}", &[mv("/a", "/a/b")]),
            Err(EditError::IntoItself {
                from: "/a".into(),
                path: "/a/b".into()
            })
        );
        assert_eq!(edit_text(b"[1", &[remove("/0")]), Err(EditError::NotJson));
        assert_eq!(
            edit_text(b"[1]", &[add("/3", json!(1))]),
            Err(EditError::Missing("/3".into()))
        );
    }
}
