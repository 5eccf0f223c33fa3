//! The spanned I-JSON reader: bytes → a document in which every value and key has its byte
//! span, plus every I-JSON problem as a finding.
//!
//! # Why our own reader
//! `serde_json` keeps the last of duplicate keys silently and has no spans. Of the spanned
//! readers, `json-syntax` 0.12 is strict but ~40% slower than `serde_json` and stops at the
//! first error; `jsonc-parser` is not strict RFC 8259 even with its extensions off. Our needs
//! are narrow — strict RFC 8259, I-JSON (RFC 7493) checks that *continue* after a problem so
//! that one run reports them all, and spans for keys and values — and a recursive-descent
//! reader over bytes does exactly that in a few hundred lines, at `serde_json`'s speed.
//!
//! # What it reports
//! Fatal (reading stops, no document): malformed JSON ([`Code::JsonSyntax`]) and nesting
//! deeper than [`MAX_DEPTH`] ([`Code::NestingTooDeep`]). Recoverable (reading goes on and the
//! document is built): duplicate keys (both places; the first value is kept), lone
//! surrogates and invalid UTF-8 in strings (kept as U+FFFD), unescaped control characters,
//! integers outside ±(2^53 − 1), and numbers that overflow a double.

use crate::codes::Code;
use crate::finding::{Applicability, Finding, Fix, PatchOp};
use crate::pointer::{self, PathStack, array_index};
use crate::span::Span;

/// The deepest nesting of arrays and objects the reader accepts. (`serde_json` by default
/// refuses one level sooner: what lwirc writes for serde_json readers is checked on its own.)
pub const MAX_DEPTH: usize = 128;

/// Whether the integer literal `text` is exactly how RFC 8785 (ECMAScript) writes the
/// double `value` it denotes: `100000000000000000000` for 1e20, as `lwirc canon` writes it.
/// Such a literal beyond ±(2^53 − 1) came from a double and reads back as that double with
/// nothing lost; any other (`9007199254740993`, which becomes …992) would be rounded.
fn is_canonical_double(text: &str, value: f64) -> bool {
    value.is_finite() && ryu_js::Buffer::new().format_finite(value) == text
}

/// The largest document the reader reads, in bytes (4 GiB − 1): its spans are 32-bit.
pub const MAX_BYTES: usize = Span::MAX_OFFSET;

/// The largest integer magnitude that every JSON reader represents exactly (2^53 − 1).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// A JSON value with the span of its bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The bytes of the value, from its first to its last character.
    pub span: Span,
    /// The value.
    pub value: Value,
}

/// A JSON value whose children are spanned [`Node`]s.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(Number),
    /// A string, decoded.
    String(Str),
    /// An array.
    Array(Box<[Node]>),
    /// An object, members in document order. Duplicate keys are reported and dropped
    /// (the first is kept), so keys are unique.
    Object(Box<[Member]>),
}

/// A decoded string or key: a [`compact_str::CompactString`], which keeps up to 24 bytes
/// (most keys and many values) inside itself, without a heap allocation of their own. It
/// reads as a `str` and compares with `str`, `&str` and `String`.
pub type Str = compact_str::CompactString;

/// A number as read: its double value, and whether it was written as an integer that the
/// double holds exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Number {
    /// The value as the nearest double (always finite in a document).
    pub value: f64,
    /// Whether the number was written without fraction or exponent and is within
    /// ±(2^53 − 1), so that `value` is exactly that integer ([`Number::integer`]).
    pub exact_integer: bool,
}

impl Number {
    /// The exact value of a number written as an integer within ±(2^53 − 1) (`7`, not
    /// `7.0` or `7e0`).
    pub fn integer(self) -> Option<i64> {
        // Exact: |value| <= 2^53 - 1, an integer.
        #[allow(clippy::cast_possible_truncation)]
        self.exact_integer.then_some(self.value as i64)
    }
}

// A document is mostly these: keep them small (checked where it is built, on 64-bit).
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(std::mem::size_of::<Value>() == 24);
    assert!(std::mem::size_of::<Node>() == 32);
    assert!(std::mem::size_of::<Member>() == 64);
};

/// An object member.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// The decoded key.
    pub key: Str,
    /// The bytes of the key, quotes included.
    pub key_span: Span,
    /// The value.
    pub value: Node,
}

impl Node {
    /// The string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The members, if it is an object.
    pub fn as_object(&self) -> Option<&[Member]> {
        match &self.value {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The elements, if it is an array.
    pub fn as_array(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The number, if it is one.
    pub fn as_number(&self) -> Option<Number> {
        match &self.value {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    /// The exact integer, if it is a number with an integral value that fits an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        let n = self.as_number()?;
        n.integer().or_else(|| {
            let v = n.value;
            // Written as `10.0` or `1e2`: still an integer value.
            (v.fract() == 0.0 && v.abs() < 9.2e18).then_some(v as i64)
        })
    }

    /// The member `key`, if it is an object that has it.
    pub fn member(&self, key: &str) -> Option<&Member> {
        self.as_object()?.iter().find(|m| m.key == key)
    }

    /// The value of member `key`, if it is an object that has it.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.member(key).map(|m| &m.value)
    }

    /// The JSON type name: `null`, `boolean`, `integer`, `number`, `string`, `array`,
    /// `object` (`integer` for numbers with an integral value, as JSON Schema counts them).
    pub fn type_name(&self) -> &'static str {
        match &self.value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.value.fract() == 0.0 => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    /// The node at `pointer` below this one, walking the document (linear in the pointer's
    /// length and in the sizes of the objects it passes through).
    pub fn at(&self, pointer: &str) -> Option<&Node> {
        let mut node = self;
        for token in pointer::tokens(pointer)? {
            node = match &node.value {
                Value::Object(members) => &members.iter().find(|m| m.key == token)?.value,
                Value::Array(items) => items.get(array_index(&token)?)?,
                _ => return None,
            };
        }
        Some(node)
    }

    /// Converts to a `serde_json::Value` (for the JSON Schema validator and for fixes).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Number(n) => match n.integer() {
                Some(i) => J::from(i),
                // Finite by construction; `from_f64` only refuses non-finite values.
                None => serde_json::Number::from_f64(n.value).map_or(J::Null, J::Number),
            },
            Value::String(s) => J::String(s.as_str().to_owned()),
            Value::Array(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Object(members) => J::Object(
                members
                    .iter()
                    .map(|m| (m.key.as_str().to_owned(), m.value.to_json()))
                    .collect(),
            ),
        }
    }
}

/// A read document: its bytes and its spanned root.
#[derive(Clone, Debug)]
pub struct SpannedDocument {
    source: Vec<u8>,
    root: Node,
}

impl SpannedDocument {
    /// The root value.
    pub fn root(&self) -> &Node {
        &self.root
    }

    /// The bytes it was read from.
    pub fn source(&self) -> &[u8] {
        &self.source
    }

    /// The bytes it was read from, taken back (the document is dropped).
    pub fn into_source(self) -> Vec<u8> {
        self.source
    }

    /// The span of the value at `pointer`.
    pub fn span_of(&self, pointer: &str) -> Option<Span> {
        self.root.at(pointer).map(|n| n.span)
    }

    /// The span of the *key* at `pointer` (for a problem with a member's name), falling back
    /// to the value's span for array elements and the root.
    pub fn key_span_of(&self, pointer: &str) -> Option<Span> {
        let tokens = pointer::tokens(pointer)?;
        let Some((last, parents)) = tokens.split_last() else {
            return Some(self.root.span);
        };
        let mut node = &self.root;
        for token in parents {
            node = match &node.value {
                Value::Object(members) => &members.iter().find(|m| m.key == token)?.value,
                Value::Array(items) => items.get(array_index(token)?)?,
                _ => return None,
            };
        }
        match &node.value {
            Value::Object(members) => members.iter().find(|m| m.key == last).map(|m| m.key_span),
            Value::Array(items) => items.get(array_index(last)?).map(|n| n.span),
            _ => None,
        }
    }
}

/// What reading gives: the document when the bytes are JSON, and every problem found.
#[derive(Clone, Debug)]
pub struct ReadOutcome {
    /// The document; `None` after a fatal problem.
    pub document: Option<SpannedDocument>,
    /// Every problem found, in the order met.
    pub findings: Vec<Finding>,
}

/// Reads `bytes` as strict I-JSON.
pub fn read(bytes: Vec<u8>) -> ReadOutcome {
    let (document, findings) = read_document(bytes);
    ReadOutcome {
        document: document.ok(),
        findings,
    }
}

/// Reads `bytes` as strict I-JSON, like [`read`], but gives the bytes back when they hold
/// no document (after a fatal problem), so that a caller can report on them without having
/// kept a copy. A document of a mebibyte or more is read on two threads (the second from
/// an element, a little past the middle, of an array that is a member of the root object:
/// a draft's `steps`), to the same tree and findings.
pub fn read_document(bytes: Vec<u8>) -> (Result<SpannedDocument, Vec<u8>>, Vec<Finding>) {
    let (root, findings) = match split_target(bytes.len()) {
        Some(target) => read_in_two(&bytes, target),
        None => read_into(&bytes, &mut Tree::default()),
    };
    let document = match root {
        Some(root) => Ok(SpannedDocument {
            source: bytes,
            root,
        }),
        None => Err(bytes),
    };
    (document, findings)
}

/// Below this many bytes a document is read on one thread: a second costs more than it
/// saves.
const FEWEST_BYTES_IN_TWO: usize = 1 << 20;

thread_local! {
    /// Where [`read_document`] splits: `None` by the size; `Some(None)` never;
    /// `Some(Some(at))` at the first element after byte `at` whatever the size (tests).
    static SPLIT: std::cell::Cell<Option<Option<usize>>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with this thread's [`read_document`]s split at the first element of an array
/// (a member of the root object) after byte `at`, or with `None` never split — so that
/// tests can compare each split with the read on one thread, on documents of any size.
#[doc(hidden)]
pub fn with_read_split<R>(at: Option<usize>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Option<usize>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SPLIT.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(SPLIT.with(|c| c.replace(Some(at))));
    f()
}

/// Where to look for the element a second thread starts reading at, if anywhere.
fn split_target(len: usize) -> Option<usize> {
    match SPLIT.with(std::cell::Cell::get) {
        Some(at) => at,
        // The second thread first skims to the split (several times faster than reading):
        // a little past the middle, the two are done at about the same time.
        None => (FEWEST_BYTES_IN_TWO..=MAX_BYTES)
            .contains(&len)
            .then_some(len / 100 * 58),
    }
}

/// Where a second thread starts reading: element `index` of the array at `array` (its
/// `[`), the value of the root object's member `key`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Resume<'a> {
    key: &'a str,
    array: usize,
    element: usize,
    index: usize,
}

/// What the second thread read: the array's elements from the resume point on, the
/// offset after its `]`, and the findings, in reading order.
struct Tail<V> {
    items: Vec<V>,
    end: usize,
    findings: Vec<Finding>,
}

/// How the reader of the first part meets the second thread.
struct Handoff<'a, V> {
    resume: &'a std::sync::OnceLock<Resume<'a>>,
    /// Set once the first reader is past the resume point (or done) without taking the
    /// tail: the second thread stops.
    passed: &'a std::sync::atomic::AtomicBool,
    tail: std::sync::mpsc::Receiver<Option<Tail<V>>>,
}

/// [`read_into`] a tree, on two threads: a second one skims to the first element after
/// `target` of an array that is a member of the root object (the top-level `steps` of a
/// draft) and reads from there to the end of that array, while this one reads from the
/// start. When this reader arrives at that element — at the same offset, in the same
/// array, member and index, so in the same state — it takes what the other read instead
/// of reading it again, and goes on after the array. Reading is a function of the offset
/// and that state, so the tree and the findings are those of reading on one thread. If
/// the other thread found no such element, or failed (a fatal problem, which this reader
/// then finds and reports itself), or this reader passed the point first, this one reads
/// everything.
fn read_in_two(bytes: &[u8], target: usize) -> (Option<Node>, Vec<Finding>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    if bytes.len() > MAX_BYTES {
        return read_into(bytes, &mut Tree::default());
    }
    let text = std::str::from_utf8(bytes).ok();
    let resume = std::sync::OnceLock::new();
    let passed = AtomicBool::new(false);
    let (send, tail) = std::sync::mpsc::sync_channel(1);
    let mut tree = Tree::default();
    std::thread::scope(|threads| {
        let (resume, passed) = (&resume, &passed);
        let second = std::thread::Builder::new()
            .name("lwirc-read".into())
            // The main thread's stack: reading recurses as deep as the document nests.
            .stack_size(8 * 1024 * 1024)
            .spawn_scoped(threads, move || {
                let read = skim(bytes, target, passed)
                    .filter(|r| resume.set(*r).is_ok())
                    .and_then(|r| read_tail(bytes, text, r, passed));
                // This reader may be done already (and the receiver gone).
                let _ = send.send(read);
            });
        let mut reader = Reader {
            bytes,
            text,
            pos: 0,
            depth: 0,
            context: Context::default(),
            build: &mut tree,
            handoff: second.is_ok().then_some(Handoff {
                resume,
                passed,
                tail,
            }),
        };
        let root = reader.document().ok();
        passed.store(true, Ordering::Release);
        (root, reader.context.findings)
    })
}

/// The second thread's part of [`read_in_two`]: the elements from `resume` to the end of
/// the array, or `None` on a fatal problem or once the first reader has passed.
fn read_tail<'a>(
    bytes: &'a [u8],
    text: Option<&'a str>,
    resume: Resume<'a>,
    passed: &std::sync::atomic::AtomicBool,
) -> Option<Tail<Node>> {
    let mut tree = Tree::default();
    let mut reader: Reader<'_, Tree> = Reader {
        bytes,
        text,
        pos: resume.element,
        // In the root object and the array.
        depth: 2,
        context: Context::default(),
        build: &mut tree,
        handoff: None,
    };
    reader.context.path.push_key(Str::from(resume.key));
    let mut items = Vec::new();
    let mut index = resume.index;
    loop {
        if passed.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        reader.skip_whitespace();
        reader.context.path.push_index(index);
        items.push(reader.value().ok()?);
        reader.context.path.pop();
        index += 1;
        reader.skip_whitespace();
        match reader.peek() {
            Some(b',') => reader.pos += 1,
            Some(b']') => {
                reader.pos += 1;
                break;
            }
            _ => return None,
        }
    }
    Some(Tail {
        items,
        end: reader.pos,
        findings: reader.context.findings,
    })
}

/// Skims `bytes` — strings, brackets and commas only — for the first element after
/// `target` of an array that is the value of a member of the root object, whose key has no
/// escapes. Nothing else is checked: the reader of the first part checks that it arrives
/// there in the same state.
fn skim<'a>(
    bytes: &'a [u8],
    target: usize,
    passed: &std::sync::atomic::AtomicBool,
) -> Option<Resume<'a>> {
    let mut pos = 0;
    // The first reader may be done early (a fatal problem at the start of a large
    // document): whether it is, is asked every mebibyte.
    let mut ask_at = 0;
    let mut depth = 0usize;
    let mut root_object = false;
    // The last string read in the root object (a key, when an array follows it), and the
    // array of the root object being skimmed, with its key and its element index.
    let mut key: Option<&str> = None;
    let mut array: Option<(usize, &str)> = None;
    let mut index = 0;
    while pos < bytes.len() {
        if pos >= ask_at {
            if passed.load(std::sync::atomic::Ordering::Acquire) {
                return None;
            }
            ask_at = pos + (1 << 20);
        }
        match bytes[pos] {
            b'"' => {
                let end = pos + 1 + string_rest(&bytes[pos + 1..]);
                if depth == 1 {
                    let raw = bytes.get(pos + 1..end)?;
                    key = (!raw.contains(&b'\\'))
                        .then(|| std::str::from_utf8(raw).ok())
                        .flatten();
                }
                pos = end + 1;
            }
            b'{' | b'[' => {
                if depth == 0 {
                    root_object = bytes[pos] == b'{';
                } else if depth == 1 && bytes[pos] == b'[' && root_object {
                    array = key.map(|k| (pos, k));
                    index = 0;
                }
                depth += 1;
                pos += 1;
            }
            b'}' | b']' => {
                if depth == 2 {
                    array = None;
                }
                depth = depth.checked_sub(1)?;
                pos += 1;
            }
            b',' => {
                pos += 1;
                if depth == 2
                    && let Some((at, key)) = array
                {
                    index += 1;
                    if pos > target {
                        while matches!(bytes.get(pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
                            pos += 1;
                        }
                        return Some(Resume {
                            key,
                            array: at,
                            element: pos,
                            index,
                        });
                    }
                }
            }
            _ => pos += 1,
        }
    }
    None
}

/// Reads `bytes` as strict I-JSON into what `build` makes of them: the reader's one pass
/// over the bytes, with every check and finding of [`read`], for a consumer that wants
/// something other than a [`Node`] tree (the canonical form of the bytes, say, made without
/// holding a tree). Gives what the root value was built into, or `None` after a fatal
/// problem, and every problem found.
pub fn read_into<B: Build>(bytes: &[u8], build: &mut B) -> (Option<B::Value>, Vec<Finding>) {
    let mut reader = Reader {
        bytes,
        text: None,
        pos: 0,
        depth: 0,
        context: Context::default(),
        build,
        handoff: None,
    };
    if bytes.len() > MAX_BYTES {
        reader.fatal(
            Code::JsonSyntax,
            Span::new(0, 0),
            format!(
                "the document is {} bytes; lwirc reads documents of up to {MAX_BYTES} bytes \
                 (4 GiB)",
                bytes.len()
            ),
            None,
        );
        return (None, reader.context.findings);
    }
    reader.text = std::str::from_utf8(bytes).ok();
    let root = reader.document().ok();
    (root, reader.context.findings)
}

/// What the reader makes of the values it reads, in document order: a value's children are
/// built before the value. [`read`] builds a [`Node`] tree with one; [`read_into`] takes any.
pub trait Build {
    /// What a value becomes.
    type Value;
    /// An object being read.
    type Object;
    /// An array being read.
    type Array;

    /// `null`, `true`, `false` or a number (never a string, array or object), at `span`.
    fn scalar(&mut self, value: Value, span: Span) -> Self::Value;
    /// A string, decoded, at `span` (quotes included).
    fn string(&mut self, text: Str, span: Span) -> Self::Value;
    /// An object starts (its `{` is read).
    fn begin_object(&mut self) -> Self::Object;
    /// A member's key is read, before its value is.
    fn key(&mut self, object: &mut Self::Object, key: &str);
    /// A member is read: its key (with the key's span) and its built value.
    fn member(&mut self, object: &mut Self::Object, key: Str, key_span: Span, value: Self::Value);
    /// The object ends at `span`. Duplicate keys are the builder's to find: `context`
    /// reports them as [`read`] does.
    fn end_object(
        &mut self,
        object: Self::Object,
        span: Span,
        context: &mut Context,
    ) -> Self::Value;
    /// An array starts (its `[` is read).
    fn begin_array(&mut self) -> Self::Array;
    /// An element is read.
    fn element(&mut self, array: &mut Self::Array, value: Self::Value);
    /// `additional` more elements are about to be added: room for them may be made.
    fn reserve(&mut self, array: &mut Self::Array, additional: usize) {
        let _ = (array, additional);
    }
    /// The array ends at `span`.
    fn end_array(&mut self, array: Self::Array, span: Span) -> Self::Value;
}

/// Where the reader is and what it has found, for a [`Build`]er reporting a problem.
#[derive(Default)]
pub struct Context {
    path: PathStack,
    findings: Vec<Finding>,
}

impl Context {
    /// Reports every repeated key of `members` against its first occurrence and drops the
    /// repeat.
    pub(crate) fn remove_duplicates(&mut self, members: &mut Vec<Member>) {
        let mut duplicates = Vec::new();
        if members.len() <= 16 {
            for (i, m) in members.iter().enumerate() {
                if let Some(first) = members[..i].iter().position(|p| p.key == m.key) {
                    duplicates.push((first, i));
                }
            }
        } else {
            let mut seen = std::collections::HashMap::with_capacity(members.len());
            for (i, m) in members.iter().enumerate() {
                if let Some(&first) = seen.get(m.key.as_str()) {
                    duplicates.push((first, i));
                } else {
                    seen.insert(m.key.as_str(), i);
                }
            }
        }
        if duplicates.is_empty() {
            return;
        }
        let base = self.path.pointer();
        for &(first, repeat) in &duplicates {
            let (f, r) = (&members[first], &members[repeat]);
            let pointer = pointer::join(&base, &r.key);
            let equal = same_value(&f.value, &r.value);
            let mut finding = Finding::new(
                Code::DuplicateKey,
                pointer.clone(),
                r.key_span,
                format!("duplicate key `{}`", r.key),
            )
            .with_help(if equal {
                "both values are equal; keep one of them"
            } else {
                "readers disagree on which value wins; keep one of them"
            })
            .with_related(pointer.clone(), f.key_span, "first defined here");
            // Equal values mean the same to every reader: keeping one is certain. As text
            // edits, `remove` drops the first member and `add` then finds the repeat.
            if equal {
                finding = finding.with_fix(Fix {
                    applicability: Applicability::MachineApplicable,
                    patch: vec![
                        PatchOp::Remove {
                            path: pointer.clone(),
                        },
                        PatchOp::Add {
                            path: pointer,
                            value: f.value.to_json(),
                        },
                    ],
                });
            }
            self.findings.push(finding);
        }
        let mut drop = vec![false; members.len()];
        for &(_, repeat) in &duplicates {
            drop[repeat] = true;
        }
        let mut i = 0;
        members.retain(|_| {
            i += 1;
            !drop[i - 1]
        });
    }
}

/// Whether two values are the same JSON value, spans aside, with object members in the
/// same order (the copy of a member pasted twice). Stops at the first difference, so a
/// large value against a small one costs nothing.
fn same_value(a: &Node, b: &Node) -> bool {
    match (&a.value, &b.value) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(x, y)| x.key == y.key && same_value(&x.value, &y.value))
        }
        _ => false,
    }
}

/// The [`Build`]er of [`read`]: a [`Node`] tree.
///
/// The members and elements of the objects and arrays being read wait on two stacks, and
/// each becomes a slice of exactly its length when it ends: the tree is most of a
/// document's memory, so none of it is spare capacity (growing a `Vec` per object would
/// leave up to half of each unused, and the allocator's free lists fragmented).
#[derive(Default)]
struct Tree {
    members: Vec<Member>,
    items: Vec<Node>,
}

/// The items of `stack` from `start` on, taken off it as a slice of exactly their length.
fn take_from<T>(stack: &mut Vec<T>, start: usize) -> Vec<T> {
    if start == 0 {
        // The outermost container (or the only one open): its items are the whole stack,
        // which is handed over (shrunk in place) rather than copied, so a huge array is
        // never held twice.
        let mut all = std::mem::take(stack);
        all.shrink_to_fit();
        all
    } else {
        stack.drain(start..).collect()
    }
}

impl Build for Tree {
    type Value = Node;
    /// Where its members start on the stack.
    type Object = usize;
    /// Where its elements start on the stack.
    type Array = usize;

    fn scalar(&mut self, value: Value, span: Span) -> Node {
        Node { span, value }
    }

    fn string(&mut self, text: Str, span: Span) -> Node {
        Node {
            span,
            value: Value::String(text),
        }
    }

    fn begin_object(&mut self) -> usize {
        self.members.len()
    }

    fn key(&mut self, _: &mut usize, _: &str) {}

    fn member(&mut self, _: &mut usize, key: Str, key_span: Span, value: Node) {
        self.members.push(Member {
            key,
            key_span,
            value,
        });
    }

    fn end_object(&mut self, start: usize, span: Span, context: &mut Context) -> Node {
        let mut members = take_from(&mut self.members, start);
        context.remove_duplicates(&mut members);
        Node {
            span,
            value: Value::Object(members.into_boxed_slice()),
        }
    }

    fn begin_array(&mut self) -> usize {
        self.items.len()
    }

    fn element(&mut self, _: &mut usize, item: Node) {
        self.items.push(item);
    }

    fn reserve(&mut self, _: &mut usize, additional: usize) {
        self.items.reserve_exact(additional);
    }

    fn end_array(&mut self, start: usize, span: Span) -> Node {
        Node {
            span,
            value: Value::Array(take_from(&mut self.items, start).into_boxed_slice()),
        }
    }
}

/// Reading stopped; the finding is already recorded.
struct Fatal;

struct Reader<'a, B: Build> {
    bytes: &'a [u8],
    /// The bytes as text, when they are UTF-8 throughout (checked once, for the whole
    /// document): a string's runs are then sliced from it, not checked one by one.
    text: Option<&'a str>,
    pos: usize,
    depth: usize,
    context: Context,
    build: &'a mut B,
    /// Where a second thread reads the rest of an array (see [`read_in_two`]).
    handoff: Option<Handoff<'a, B::Value>>,
}

impl<B: Build> Reader<'_, B> {
    fn document(&mut self) -> Result<B::Value, Fatal> {
        if self.bytes.starts_with(b"\xEF\xBB\xBF") {
            return Err(self.fatal(
                Code::JsonSyntax,
                Span::new(0, 3),
                "byte order mark before the document",
                Some("save the file as UTF-8 without a BOM (RFC 8259 §8.1)"),
            ));
        }
        self.skip_whitespace();
        if self.pos == self.bytes.len() {
            return Err(self.fatal(
                Code::JsonSyntax,
                Span::new(self.pos, self.pos),
                "empty document: expected a JSON value",
                None,
            ));
        }
        let root = self.value()?;
        self.skip_whitespace();
        if self.pos < self.bytes.len() {
            let span = Span::new(self.pos, self.bytes.len().min(self.pos + 1));
            return Err(self.fatal(
                Code::JsonSyntax,
                span,
                "unexpected text after the end of the document",
                Some("a document holds exactly one JSON value"),
            ));
        }
        Ok(root)
    }

    fn value(&mut self) -> Result<B::Value, Fatal> {
        let start = self.pos;
        let value = match self.peek() {
            Some(b'{') => return self.object(),
            Some(b'[') => return self.array(),
            Some(b'"') => {
                let (text, span) = self.string()?;
                return Ok(self.build.string(text, span));
            }
            Some(b'-' | b'0'..=b'9') => return self.number(),
            Some(b't') => self.literal(b"true", Value::Bool(true))?,
            Some(b'f') => self.literal(b"false", Value::Bool(false))?,
            Some(b'n') => self.literal(b"null", Value::Null)?,
            _ => return Err(self.unexpected("a value")),
        };
        Ok(self.build.scalar(value, Span::new(start, self.pos)))
    }

    fn literal(&mut self, word: &[u8], value: Value) -> Result<Value, Fatal> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.unexpected("a value"))
        }
    }

    fn enter(&mut self) -> Result<(), Fatal> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let span = Span::new(self.pos, self.pos + 1);
            return Err(self.fatal(
                Code::NestingTooDeep,
                span,
                format!("arrays and objects nested deeper than {MAX_DEPTH} levels"),
                None,
            ));
        }
        Ok(())
    }

    fn object(&mut self) -> Result<B::Value, Fatal> {
        let start = self.pos;
        self.enter()?;
        self.pos += 1;
        let mut object = self.build.begin_object();
        let mut empty = true;
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.skip_whitespace();
                if self.peek() != Some(b'"') {
                    let what = if empty {
                        "a string key or `}`"
                    } else {
                        "a string key"
                    };
                    return Err(self.unexpected(what));
                }
                let (key, key_span) = self.string()?;
                self.skip_whitespace();
                if self.peek() != Some(b':') {
                    return Err(self.unexpected("`:` after the key"));
                }
                self.pos += 1;
                self.skip_whitespace();
                self.build.key(&mut object, &key);
                self.context.path.push_key(key);
                let value = self.value()?;
                let key = self.context.path.pop().unwrap_or_default();
                self.build.member(&mut object, key, key_span, value);
                empty = false;
                self.skip_whitespace();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(b'}') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.unexpected("`,` or `}` after an object member")),
                }
            }
        }
        self.depth -= 1;
        let span = Span::new(start, self.pos);
        Ok(self.build.end_object(object, span, &mut self.context))
    }

    fn array(&mut self) -> Result<B::Value, Fatal> {
        let start = self.pos;
        self.enter()?;
        self.pos += 1;
        let mut array = self.build.begin_array();
        let mut index = 0;
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
        } else {
            loop {
                self.skip_whitespace();
                if self.handoff.is_some()
                    && self.depth == 2
                    && self.take_tail(start, index, &mut array)
                {
                    break;
                }
                self.context.path.push_index(index);
                let item = self.value()?;
                self.context.path.pop();
                self.build.element(&mut array, item);
                index += 1;
                self.skip_whitespace();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(b']') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.unexpected("`,` or `]` after an array element")),
                }
            }
        }
        self.depth -= 1;
        Ok(self.build.end_array(array, Span::new(start, self.pos)))
    }

    /// At element `index` of the array that starts at `start`, a member of the root
    /// object: when the second thread of [`read_in_two`] read the rest of it from here,
    /// takes its elements and findings and goes on after the array (`true`). Once past the
    /// point it started at, the second thread is told to stop.
    fn take_tail(&mut self, start: usize, index: usize, array: &mut B::Array) -> bool {
        use std::sync::atomic::Ordering;
        let Some(handoff) = &self.handoff else {
            return false;
        };
        let Some(resume) = handoff.resume.get() else {
            return false;
        };
        if self.pos < resume.element {
            return false;
        }
        let here = self.pos == resume.element
            && start == resume.array
            && index == resume.index
            && self.context.path.only_key() == Some(resume.key);
        let handoff = self.handoff.take().expect("checked above");
        if !here {
            handoff.passed.store(true, Ordering::Release);
            return false;
        }
        let Ok(Some(tail)) = handoff.tail.recv() else {
            return false;
        };
        self.build.reserve(array, tail.items.len());
        for item in tail.items {
            self.build.element(array, item);
        }
        self.context.findings.extend(tail.findings);
        self.pos = tail.end;
        true
    }

    /// Reads a string starting at its opening quote; returns it decoded with its span.
    // Decoded into a `Str` itself: a short string (most keys and many values) is kept
    // inline, never allocated to be copied and freed.
    fn string(&mut self) -> Result<(Str, Span), Fatal> {
        let start = self.pos;
        self.pos += 1;
        let mut out = Str::default();
        let mut reserved = false;
        loop {
            let run = self.pos;
            self.pos += plain_prefix(&self.bytes[self.pos..]);
            self.push_utf8(&mut out, run, self.pos);
            match self.peek() {
                None => {
                    return Err(self.fatal(
                        Code::JsonSyntax,
                        Span::new(start, self.pos),
                        "unterminated string",
                        Some("add the closing `\"`"),
                    ));
                }
                Some(b'"') => {
                    self.pos += 1;
                    out.shrink_to_fit();
                    return Ok((out, Span::new(start, self.pos)));
                }
                Some(b'\\') => {
                    if !reserved {
                        // A string with escapes grows as it is decoded: it is made as long
                        // as the rest of its text (which decoding only shortens, but for a
                        // byte of bad UTF-8) once, not grown again and again — a string of
                        // 100 MB would otherwise be copied at each growth, and held twice
                        // while it is.
                        reserved = true;
                        out.reserve(string_rest(&self.bytes[self.pos..]));
                    }
                    self.escape(&mut out)?;
                }
                Some(c) => {
                    // A raw control character: recoverable, the string's extent is clear.
                    self.context.findings.push(
                        Finding::new(
                            Code::JsonSyntax,
                            self.context.path.pointer(),
                            Span::new(self.pos, self.pos + 1),
                            format!("unescaped control character U+{c:04X} in a string"),
                        )
                        .with_help(control_help(c)),
                    );
                    out.push(c as char);
                    self.pos += 1;
                }
            }
        }
    }

    /// Appends `bytes[from..to]` (no quotes, backslashes or controls) to `out`, reporting
    /// each invalid UTF-8 sequence and keeping U+FFFD in its place.
    fn push_utf8(&mut self, out: &mut Str, mut from: usize, to: usize) {
        if let Some(s) = self.text.and_then(|text| text.get(from..to)) {
            if out.is_empty() {
                *out = Str::from(s);
            } else {
                out.push_str(s);
            }
            return;
        }
        while from < to {
            match std::str::from_utf8(&self.bytes[from..to]) {
                // A string without escapes (nearly all): made at its size, once.
                Ok(s) if out.is_empty() => {
                    *out = Str::from(s);
                    return;
                }
                Ok(s) => {
                    out.push_str(s);
                    return;
                }
                Err(e) => {
                    let valid = from + e.valid_up_to();
                    // Valid by `valid_up_to`'s contract.
                    out.push_str(std::str::from_utf8(&self.bytes[from..valid]).unwrap_or_default());
                    let bad = e.error_len().unwrap_or(to - valid);
                    let span = Span::new(valid, valid + bad);
                    self.context.findings.push(
                        Finding::new(
                            Code::InvalidUtf8,
                            self.context.path.pointer(),
                            span,
                            format!(
                                "invalid UTF-8: {}",
                                hex_bytes(&self.bytes[valid..valid + bad])
                            ),
                        )
                        .with_help("JSON must be UTF-8; re-save the file as UTF-8"),
                    );
                    out.push('\u{FFFD}');
                    from = valid + bad;
                }
            }
        }
    }

    fn escape(&mut self, out: &mut Str) -> Result<(), Fatal> {
        let start = self.pos;
        let Some(&c) = self.bytes.get(self.pos + 1) else {
            return Err(self.fatal(
                Code::JsonSyntax,
                Span::new(start, self.pos + 1),
                "unterminated escape",
                None,
            ));
        };
        self.pos += 2;
        let decoded = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode_escape(start, out),
            _ => {
                let end = self.char_end(start + 1);
                return Err(self.fatal(
                    Code::JsonSyntax,
                    Span::new(start, end),
                    format!(
                        "invalid escape `\\{}`",
                        String::from_utf8_lossy(&self.bytes[start + 1..end])
                    ),
                    Some("JSON escapes are \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX"),
                ));
            }
        };
        out.push(decoded);
        Ok(())
    }

    /// `\uXXXX` (the `\u` already consumed, starting at `start`), pairing surrogates.
    fn unicode_escape(&mut self, start: usize, out: &mut Str) -> Result<(), Fatal> {
        let unit = self.hex4(start)?;
        if (0xD800..0xDC00).contains(&unit) {
            let low_start = self.pos;
            if self.bytes[self.pos..].starts_with(b"\\u") {
                self.pos += 2;
                let low = self.hex4(low_start)?;
                if (0xDC00..0xE000).contains(&low) {
                    let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    out.push(char::from_u32(c).unwrap_or('\u{FFFD}'));
                    return Ok(());
                }
                // The second escape is read again on its own: it may start a pair.
                self.pos = low_start;
            }
            self.lone_surrogate(start, unit);
            out.push('\u{FFFD}');
            return Ok(());
        }
        self.push_unit(start, unit, out);
        Ok(())
    }

    fn push_unit(&mut self, start: usize, unit: u32, out: &mut Str) {
        match char::from_u32(unit) {
            Some(c) => out.push(c),
            None => {
                self.lone_surrogate(start, unit);
                out.push('\u{FFFD}');
            }
        }
    }

    fn lone_surrogate(&mut self, start: usize, unit: u32) {
        let half = if unit < 0xDC00 { "high" } else { "low" };
        self.context.findings.push(
            Finding::new(
                Code::LoneSurrogate,
                self.context.path.pointer(),
                Span::new(start, start + 6),
                format!("lone {half} surrogate `\\u{unit:04X}`"),
            )
            .with_help(
                "a surrogate escape must be a high (D800–DBFF) followed by a low (DC00–DFFF) half",
            ),
        );
    }

    fn hex4(&mut self, start: usize) -> Result<u32, Fatal> {
        let digits = self.bytes.get(self.pos..self.pos + 4);
        let value = digits
            .filter(|d| d.iter().all(u8::is_ascii_hexdigit))
            .and_then(|d| u32::from_str_radix(std::str::from_utf8(d).ok()?, 16).ok());
        match value {
            Some(v) => {
                self.pos += 4;
                Ok(v)
            }
            None => {
                let end = (self.pos + 4).min(self.bytes.len());
                Err(self.fatal(
                    Code::JsonSyntax,
                    Span::new(start, end),
                    "`\\u` must be followed by four hex digits",
                    None,
                ))
            }
        }
    }

    fn number(&mut self) -> Result<B::Value, Fatal> {
        let start = self.pos;
        let mut integral = true;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return Err(self.fatal(
                        Code::JsonSyntax,
                        Span::new(start, self.pos + 1),
                        "numbers cannot have leading zeros",
                        None,
                    ));
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.unexpected("a digit")),
        }
        if self.peek() == Some(b'.') {
            integral = false;
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.unexpected("a digit after `.`"));
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            integral = false;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.unexpected("a digit in the exponent"));
            }
            self.digits();
        }
        let span = Span::new(start, self.pos);
        // The lexeme is ASCII by construction.
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).unwrap_or("0");
        let value: f64 = text.parse().unwrap_or(f64::INFINITY);
        let mut integer = None;
        if integral {
            integer = text
                .parse::<i64>()
                .ok()
                .filter(|i| i.unsigned_abs() <= MAX_SAFE_INTEGER as u64);
            if integer.is_none() && !is_canonical_double(text, value) {
                let help = if value.is_finite() {
                    format!(
                        "readers that use doubles read it as {}; write it as a string, or as \
                         that double",
                        ryu_js::Buffer::new().format_finite(value)
                    )
                } else {
                    "write it as a string".to_owned()
                };
                self.context.findings.push(
                    Finding::new(
                        Code::IntegerOutOfRange,
                        self.context.path.pointer(),
                        span,
                        format!("integer {text} is outside ±(2^53 − 1)"),
                    )
                    .with_help(help),
                );
            }
        }
        let value = if value.is_finite() {
            value
        } else {
            self.context.findings.push(
                Finding::new(
                    Code::NumberOutOfRange,
                    self.context.path.pointer(),
                    span,
                    format!("number {text} overflows a double"),
                )
                .with_help("the largest finite double is about 1.8e308"),
            );
            f64::MAX.copysign(value)
        };
        Ok(self.build.scalar(
            Value::Number(Number {
                value,
                exact_integer: integer.is_some(),
            }),
            span,
        ))
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// The end of the (possibly multi-byte) character starting at `at`.
    fn char_end(&self, at: usize) -> usize {
        let mut end = (at + 1).min(self.bytes.len());
        while end < self.bytes.len() && (self.bytes[end] & 0xC0) == 0x80 {
            end += 1;
        }
        end
    }

    /// A syntax error at the current position: "expected X, found Y".
    fn unexpected(&mut self, expected: &str) -> Fatal {
        let (span, found, help) = match self.peek() {
            None => (
                Span::new(self.pos, self.pos),
                "the end of the file".to_owned(),
                None,
            ),
            Some(b) => {
                let end = self.char_end(self.pos);
                let text = String::from_utf8_lossy(&self.bytes[self.pos..end]).into_owned();
                let help = match b {
                    b'}' | b']'
                        if expected.starts_with("a string key") || expected == "a value" =>
                    {
                        Some("JSON does not allow a trailing comma")
                    }
                    b'\'' => Some("JSON strings use double quotes"),
                    b'/' => Some("JSON does not allow comments"),
                    b'`' if self.bytes[self.pos..].starts_with(b"```") => Some(
                        "this is plain JSON, not Markdown: remove the ``` fence (and the \
                         `json` after it) around the document",
                    ),
                    _ => None,
                };
                let found = match text.chars().next() {
                    Some(c) if c.is_control() => format!("U+{:04X}", c as u32),
                    _ => format!("`{text}`"),
                };
                (Span::new(self.pos, end), found, help)
            }
        };
        self.fatal(
            Code::JsonSyntax,
            span,
            format!("expected {expected}, found {found}"),
            help,
        )
    }

    fn fatal(
        &mut self,
        code: Code,
        span: Span,
        message: impl Into<String>,
        help: Option<&str>,
    ) -> Fatal {
        let mut finding = Finding::new(code, self.context.path.pointer(), span, message);
        finding.help = help.map(str::to_owned);
        self.context.findings.push(finding);
        Fatal
    }
}

fn control_help(c: u8) -> String {
    let escape = match c {
        b'\n' => "\\n".to_owned(),
        b'\t' => "\\t".to_owned(),
        b'\r' => "\\r".to_owned(),
        c => format!("\\u{c:04x}"),
    };
    format!("write it as `{escape}`")
}

fn hex_bytes(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("0x{b:02X}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The text of `bytes` for display, with each byte that is not part of valid UTF-8 shown as
/// `?` so that byte offsets into the display text equal offsets into the file.
pub fn display_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                out.push_str(std::str::from_utf8(&rest[..valid]).unwrap_or_default());
                let bad = e.error_len().unwrap_or(rest.len() - valid);
                out.extend(std::iter::repeat_n('?', bad));
                rest = &rest[valid + bad..];
            }
        }
    }
}

/// Maps a byte offset inside the *decoded* value of the string at `span` (quotes included)
/// to the offset in the source bytes, accounting for escapes: a surrogate-pair escape is 12
/// source bytes for 4 decoded, another `\uXXXX` 6 for 1–3, other escapes 2 for 1.
pub fn string_source_offset(source: &[u8], span: Span, decoded_offset: usize) -> usize {
    let mut src = span.start() + 1;
    let mut decoded = 0;
    let end = span.end().saturating_sub(1);
    while src < end && decoded < decoded_offset {
        if source[src] == b'\\' {
            let (src_len, dec_len) = escape_lengths(&source[src..end]);
            src += src_len;
            decoded += dec_len;
        } else {
            src += 1;
            decoded += 1;
        }
    }
    src
}

/// [`string_source_offset`] for many offsets into one string: the string's escapes are
/// found once (a string without any, most of them, keeps none), and each offset is then a
/// binary search instead of a walk from the string's start. The results are those of
/// `string_source_offset` for every offset (a property test compares them).
#[derive(Debug, Clone)]
pub struct StringOffsets {
    /// The source offset of the first byte after the opening quote.
    start: usize,
    /// The end of the walk: the closing quote (as `string_source_offset` stops there).
    end: usize,
    /// Each escape as (decoded offset, source offset) before it and after it.
    escapes: Vec<[(usize, usize); 2]>,
}

impl StringOffsets {
    /// The escapes of the string at `span` (quotes included) in `source`.
    pub fn new(source: &[u8], span: Span) -> Self {
        let start = span.start() + 1;
        let end = span.end().saturating_sub(1);
        let mut escapes = Vec::new();
        let (mut src, mut decoded) = (start, 0);
        // A span past the source (never one the reader gave) is read as far as there are
        // bytes, where the walk would panic.
        let end = end.min(source.len());
        while src < end {
            // Plain bytes up to the next escape are one decoded byte each.
            let plain = source[src..end]
                .iter()
                .position(|&b| b == b'\\')
                .unwrap_or(end - src);
            src += plain;
            decoded += plain;
            if src >= end {
                break;
            }
            let (src_len, dec_len) = escape_lengths(&source[src..end]);
            let before = (decoded, src);
            src += src_len;
            decoded += dec_len;
            escapes.push([before, (decoded, src)]);
        }
        StringOffsets {
            start,
            end: span.end().saturating_sub(1),
            escapes,
        }
    }

    /// The source offset of `decoded_offset`, as [`string_source_offset`] maps it.
    pub fn offset(&self, decoded_offset: usize) -> usize {
        // The walk consumes every escape that starts before `decoded_offset`.
        let passed = self
            .escapes
            .partition_point(|[(before, _), _]| *before < decoded_offset);
        let (decoded, src) = match passed.checked_sub(1) {
            Some(last) => self.escapes[last][1],
            None => (0, self.start),
        };
        if src >= self.end || decoded >= decoded_offset {
            return src;
        }
        // Then plain bytes, up to the end (the next escape starts at or past the offset).
        (src + (decoded_offset - decoded)).min(self.end)
    }
}

/// Source and decoded lengths of the escape at the start of `rest`.
fn escape_lengths(rest: &[u8]) -> (usize, usize) {
    if rest.get(1) != Some(&b'u') {
        return (2, 1);
    }
    let unit = |at: usize| {
        rest.get(at..at + 4)
            .and_then(|d| u32::from_str_radix(std::str::from_utf8(d).ok()?, 16).ok())
    };
    match unit(2) {
        Some(0xD800..=0xDBFF) if rest.get(6..8) == Some(b"\\u") => match unit(8) {
            Some(0xDC00..=0xDFFF) => (12, 4),
            _ => (6, 3),
        },
        Some(u) => (6, char::from_u32(u).map_or(3, char::len_utf8)),
        None => (2, 1),
    }
}

/// How many bytes of a string's text are left in `bytes`, which start inside it: up to its
/// closing quote (all of them when there is none).
pub(crate) fn string_rest(bytes: &[u8]) -> usize {
    let mut at = 0;
    while let Some(i) = memchr::memchr2(b'"', b'\\', &bytes[at..]) {
        if bytes[at + i] == b'"' {
            return at + i;
        }
        // An escape: what follows the backslash is not the end.
        at = (at + i + 2).min(bytes.len());
    }
    bytes.len()
}

/// The length of the longest prefix of `bytes` without a `"`, a `\\` or a control character
/// (below U+0020): what a JSON string holds as it is, in the reader and in the canonical
/// writer. Eight bytes at a time (each word tested at once for the three kinds of byte,
/// by the exact any-byte tests of SWAR arithmetic), then byte by byte from the word that
/// has one.
pub(crate) fn plain_prefix(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // Whether some byte of `x` is below `n` (`n` at most 0x80): exact as a yes or no.
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGHS != 0;
    let special = |b: u8| b == b'"' || b == b'\\' || b < 0x20;
    let mut at = 0;
    for chunk in bytes.chunks_exact(8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_ne_bytes(word);
        // A byte equal to `c` is a zero byte of `x ^ c…c`, a byte below 1.
        if below(x, 0x20)
            || below(x ^ (ONES * u64::from(b'"')), 1)
            || below(x ^ (ONES * u64::from(b'\\')), 1)
        {
            break;
        }
        at += 8;
    }
    at + bytes[at..]
        .iter()
        .position(|&b| special(b))
        .unwrap_or(bytes.len() - at)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// `string_rest` finds the quote that closes a string, past escaped quotes and
        /// backslashes.
        #[test]
        fn string_rest_ends_at_the_closing_quote(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![
                    6 => 0x20u8..=0x7e,
                    1 => proptest::strategy::Just(b'"'),
                    2 => proptest::strategy::Just(b'\\'),
                ],
                0..80,
            )
        ) {
            // The closing quote: the first `"` not escaped by the backslash before it.
            let mut expected = bytes.len();
            let mut i = 0;
            while i < bytes.len() {
                match bytes[i] {
                    b'\\' => i += 2,
                    b'"' => {
                        expected = i;
                        break;
                    }
                    _ => i += 1,
                }
            }
            proptest::prop_assert_eq!(string_rest(&bytes), expected);
        }

        /// `plain_prefix` stops where a byte-by-byte scan stops, wherever the special byte
        /// falls in a word of eight.
        #[test]
        fn plain_prefix_is_the_byte_scan(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![
                    30 => 0x20u8..=0xff,
                    1 => proptest::strategy::Just(b'"'),
                    1 => proptest::strategy::Just(b'\\'),
                    1 => 0u8..0x20,
                ],
                0..80,
            )
        ) {
            let expected = bytes
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .unwrap_or(bytes.len());
            proptest::prop_assert_eq!(plain_prefix(&bytes), expected);
        }
    }

    fn codes(src: &str) -> Vec<(Code, String, Span)> {
        read(src.as_bytes().to_vec())
            .findings
            .into_iter()
            .map(|f| (f.code, f.pointer, f.span))
            .collect()
    }

    #[test]
    fn spans_keys_and_values() {
        let src = r#"{ "a": [1, "x\n"], "b": {"c": null} }"#;
        let doc = read(src.as_bytes().to_vec()).document.unwrap();
        let a = doc.root().get("a").unwrap();
        assert_eq!(&src[a.span.range()], r#"[1, "x\n"]"#);
        assert_eq!(
            doc.span_of("/a/1").map(|s| &src[s.range()]),
            Some(r#""x\n""#)
        );
        assert_eq!(
            doc.key_span_of("/b/c").map(|s| &src[s.range()]),
            Some(r#""c""#)
        );
        assert_eq!(doc.span_of("/b/c").map(|s| &src[s.range()]), Some("null"));
        assert_eq!(doc.span_of("/a/01"), None);
        assert_eq!(
            doc.root().get("a").unwrap().as_array().unwrap()[1].as_str(),
            Some("x\n")
        );
    }

    #[test]
    fn reports_every_duplicate_key_with_both_places() {
        let src = r#"{"a":1,"b":2,"a":3,"a":4}"#;
        let out = read(src.as_bytes().to_vec());
        let dups: Vec<_> = out
            .findings
            .iter()
            .filter(|f| f.code == Code::DuplicateKey)
            .collect();
        assert_eq!(dups.len(), 2);
        assert_eq!(dups[0].span, Span::new(13, 16));
        assert_eq!(dups[0].related[0].span, Span::new(1, 4));
        assert_eq!(dups[1].span, Span::new(19, 22));
        // The first value is kept, and keys stay unique.
        let doc = out.document.unwrap();
        assert_eq!(doc.root().get("a").unwrap().as_i64(), Some(1));
        assert_eq!(doc.root().as_object().unwrap().len(), 2);
    }

    #[test]
    fn equal_duplicates_have_a_certain_fix_and_different_ones_none() {
        let src = r#"{"a":{"x":[1,"s"]},"b":2,"a":{ "x": [1, "s"] },"b":3}"#;
        let out = read(src.as_bytes().to_vec());
        let fixes: Vec<_> = out
            .findings
            .iter()
            .map(|f| (f.pointer.as_str(), f.fix.as_ref().map(|x| x.applicability)))
            .collect();
        assert_eq!(
            fixes,
            [("/a", Some(Applicability::MachineApplicable)), ("/b", None)]
        );
    }

    #[test]
    fn duplicate_keys_in_large_objects() {
        let mut src = String::from("{");
        for i in 0..40 {
            src.push_str(&format!("\"k{i}\":{i},"));
        }
        src.push_str("\"k7\":0}");
        let found = codes(&src);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, Code::DuplicateKey);
        assert_eq!(found[0].1, "/k7");
    }

    #[test]
    fn reports_lone_surrogates_at_the_escape() {
        let src = r#"{"s": "a\ud800b\udc00c\ud83d\ude00"}"#;
        let found = codes(src);
        assert_eq!(found.len(), 2);
        assert_eq!(
            found[0],
            (Code::LoneSurrogate, "/s".into(), Span::new(8, 14))
        );
        assert_eq!(
            found[1],
            (Code::LoneSurrogate, "/s".into(), Span::new(15, 21))
        );
        // A high half followed by a non-surrogate escape.
        let found = codes(r#"["\ud800\u0041"]"#);
        assert_eq!(
            found,
            vec![(Code::LoneSurrogate, "/0".into(), Span::new(2, 8))]
        );
        let doc = read(br#"["\ud800\u0041"]"#.to_vec()).document.unwrap();
        assert_eq!(doc.root().at("/0").unwrap().as_str(), Some("\u{FFFD}A"));
    }

    #[test]
    fn reports_invalid_utf8_bytes() {
        let mut src = br#"{"k": "ab"#.to_vec();
        src.extend_from_slice(&[0xE9, b'c', 0xFF, 0xFE]);
        src.extend_from_slice(br#""}"#);
        let out = read(src);
        let found: Vec<_> = out.findings.iter().map(|f| (f.code, f.span)).collect();
        assert_eq!(
            found,
            vec![
                (Code::InvalidUtf8, Span::new(9, 10)),
                (Code::InvalidUtf8, Span::new(11, 12)),
                (Code::InvalidUtf8, Span::new(12, 13)),
            ]
        );
        let doc = out.document.unwrap();
        assert_eq!(
            doc.root().get("k").unwrap().as_str(),
            Some("ab\u{FFFD}c\u{FFFD}\u{FFFD}")
        );
        assert_eq!(display_text(doc.source()).len(), doc.source().len());
    }

    #[test]
    fn reports_integers_beyond_the_safe_range() {
        let src =
            "[9007199254740991, 9007199254740993, -9007199254740993, 123456789012345678901234]";
        let found = codes(src);
        assert_eq!(
            found,
            vec![
                (Code::IntegerOutOfRange, "/1".into(), Span::new(19, 35)),
                (Code::IntegerOutOfRange, "/2".into(), Span::new(37, 54)),
                (Code::IntegerOutOfRange, "/3".into(), Span::new(56, 80)),
            ]
        );
        // How RFC 8785 writes a double beyond the range (what `lwirc canon` writes for 1e20,
        // 2^53 and 2^60) reads back as that double: nothing is rounded.
        let src = "[100000000000000000000, 9007199254740992, -1152921504606847000]";
        assert_eq!(codes(src), vec![]);
        let doc = read(src.as_bytes().to_vec()).document.unwrap();
        let first = doc.root().as_array().unwrap()[0].as_number().unwrap();
        assert_eq!((first.value, first.integer()), (1e20, None));
        // The exact digits of 2^60 are not how RFC 8785 writes it: they would be rewritten.
        assert_eq!(codes("[1152921504606846976]").len(), 1);
    }

    #[test]
    fn reports_numbers_that_overflow_a_double() {
        let found = codes("[1e308, 1e400, -2.5E999, 1e-400]");
        assert_eq!(
            found,
            vec![
                (Code::NumberOutOfRange, "/1".into(), Span::new(8, 13)),
                (Code::NumberOutOfRange, "/2".into(), Span::new(15, 23)),
            ]
        );
    }

    #[test]
    fn stops_at_nesting_deeper_than_the_limit() {
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(codes(&ok).is_empty());
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        let out = read(deep.into_bytes());
        assert!(out.document.is_none());
        assert_eq!(out.findings[0].code, Code::NestingTooDeep);
        assert_eq!(out.findings[0].span, Span::new(MAX_DEPTH, MAX_DEPTH + 1));
        // Very deep input does not overflow the stack.
        assert!(read("[".repeat(1_000_000).into_bytes()).document.is_none());
    }

    #[test]
    fn syntax_errors_point_at_the_offending_byte() {
        let cases: &[(&str, Span, &str)] = &[
            (
                r#"{"a": 1,}"#,
                Span::new(8, 9),
                "expected a string key, found `}`",
            ),
            (
                r#"[1 2]"#,
                Span::new(3, 4),
                "expected `,` or `]` after an array element, found `2`",
            ),
            (
                r#"{"a" 1}"#,
                Span::new(5, 6),
                "expected `:` after the key, found `1`",
            ),
            (
                r#"{'a': 1}"#,
                Span::new(1, 2),
                "expected a string key or `}`, found `'`",
            ),
            ("[01]", Span::new(1, 3), "numbers cannot have leading zeros"),
            (
                "[1.]",
                Span::new(3, 4),
                "expected a digit after `.`, found `]`",
            ),
            (r#"["ab"#, Span::new(1, 4), "unterminated string"),
            (r#"["\x"]"#, Span::new(2, 4), "invalid escape `\\x`"),
            (
                r#"["\u12G4"]"#,
                Span::new(2, 8),
                "`\\u` must be followed by four hex digits",
            ),
            (
                "[1] x",
                Span::new(4, 5),
                "unexpected text after the end of the document",
            ),
            ("", Span::new(0, 0), "empty document: expected a JSON value"),
            ("[tru]", Span::new(1, 2), "expected a value, found `t`"),
            (
                "\u{feff}{}",
                Span::new(0, 3),
                "byte order mark before the document",
            ),
        ];
        for (src, span, message) in cases {
            let out = read(src.as_bytes().to_vec());
            assert!(out.document.is_none(), "{src}");
            let f = &out.findings[0];
            assert_eq!(
                (f.code, f.span, f.message.as_str()),
                (Code::JsonSyntax, *span, *message),
                "{src}"
            );
        }
    }

    #[test]
    fn control_characters_are_reported_and_reading_goes_on() {
        let out = read(b"[\"a\tb\", 1e400]".to_vec());
        let found: Vec<_> = out.findings.iter().map(|f| (f.code, f.span)).collect();
        assert_eq!(
            found,
            vec![
                (Code::JsonSyntax, Span::new(3, 4)),
                (Code::NumberOutOfRange, Span::new(8, 13))
            ]
        );
        assert!(out.document.is_some());
    }

    #[test]
    fn converts_to_serde_json_losslessly() {
        let src = r#"{"a":[1,-0.5,true,null,"\u00e9"],"b":{}}"#;
        let doc = read(src.as_bytes().to_vec()).document.unwrap();
        let expected: serde_json::Value = serde_json::from_str(src).unwrap();
        assert_eq!(doc.root().to_json(), expected);
    }

    #[test]
    fn maps_decoded_offsets_to_source_bytes() {
        // Decoded: `a\né😀x`; `x` is at decoded byte 1+1+2+4 = 8.
        let src = r#""a\n\u00e9\ud83d\ude00x""#;
        let span = Span::new(0, src.len());
        assert_eq!(string_source_offset(src.as_bytes(), span, 0), 1);
        assert_eq!(string_source_offset(src.as_bytes(), span, 1), 2);
        assert_eq!(string_source_offset(src.as_bytes(), span, 2), 4);
        assert_eq!(string_source_offset(src.as_bytes(), span, 4), 10);
        assert_eq!(string_source_offset(src.as_bytes(), span, 8), 22);
        assert_eq!(&src[22..23], "x");
    }

    proptest::proptest! {
        /// The index gives what the walk gives, for every decoded offset (past the end too),
        /// on strings of plain bytes and escapes of every kind, broken ones included.
        #[test]
        fn string_offsets_agree_with_the_walk(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "a", "é", "😀", r"\n", r#"\""#, r"\\", r"\u00e9", r"\u0041", r"\u20ac",
                r"\ud83d\ude00", r"\ud83d", r"\ud83dx", r"\ud83d\u0041", r"\u12", r"\uzzzz",
                r"\",
            ]), 0..24),
            cut in 0usize..3,
        ) {
            let src = format!("\"{}\"", pieces.concat());
            // Whole strings, and spans that end early (the walk stops at `end - 1`).
            let span = Span::new(0, src.len().saturating_sub(cut));
            let index = StringOffsets::new(src.as_bytes(), span);
            for k in 0..src.len() + 4 {
                proptest::prop_assert_eq!(
                    index.offset(k),
                    string_source_offset(src.as_bytes(), span, k),
                    "offset {} of {}", k, src
                );
            }
        }
    }

    #[test]
    fn string_offsets_of_empty_and_short_spans() {
        for (src, span) in [
            ("\"\"", Span::new(0, 2)),
            ("\"", Span::new(0, 1)),
            ("", Span::new(0, 0)),
        ] {
            let index = StringOffsets::new(src.as_bytes(), span);
            for k in 0..4 {
                assert_eq!(
                    index.offset(k),
                    string_source_offset(src.as_bytes(), span, k)
                );
            }
        }
    }
}
