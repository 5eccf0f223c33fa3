//! RFC 8785 JSON Canonicalization Scheme (JCS) and the content hash of a document.
//!
//! A workflow version is named by the SHA-256 of its document's canonical form, so two
//! documents that differ only in whitespace, key order, escape choices or number spelling
//! (`1.0` vs `1`, `1E2` vs `100`) get the same version.
//!
//! # Why it is implemented here
//! The `canonical_json` crate implements a *different* scheme (OLPC-style canonical JSON):
//! it orders keys by UTF-8 bytes rather than by UTF-16 code units, escapes non-ASCII
//! characters, and does not format numbers like ECMAScript, so its bytes are not RFC 8785's.
//! `serde_json_canonicalizer` is RFC 8785 but works on `serde_json::Value`, which would mean
//! converting the whole spanned document first and re-buffering every object member. JCS
//! over our own [`Node`] is a short recursive writer into one buffer: the only non-trivial
//! part, the ECMAScript number formatting, comes from `ryu-js`.
//!
//! # The rules (RFC 8785 §3.2)
//! - No whitespace between tokens.
//! - Object members sorted by their keys as arrays of UTF-16 code units (so a character
//!   outside the BMP, written as a surrogate pair `D800`–`DBFF`, sorts *before*
//!   `U+E000`–`U+FFFF`, unlike in UTF-8 byte order).
//! - Strings: only `"`, `\` and the controls U+0000–U+001F are escaped, as `\b \t \n \f \r`
//!   where those exist and `\u00xx` (lowercase hex) otherwise; everything else, U+007F,
//!   U+2028 and all non-ASCII included, is written as raw UTF-8.
//! - Numbers: every number is taken as its IEEE 754 double and written as ECMAScript's
//!   `Number.prototype.toString` does (shortest round-trip digits, exponent form outside
//!   `1e-6 <= |x| < 1e21`, `-0` as `0`). Integers written exactly in the source are still
//!   formatted from their double, as the RFC requires.
//!
//! Nodes from [`crate::document::read`] are always finite and their object keys unique,
//! which are the two I-JSON preconditions JCS needs.

use std::cmp::Ordering;
use std::io::{self, Write};

use crate::Node;
use crate::document::{self, Build, Context, Member, Str, Value};
use crate::span::Span;
use sha2::{Digest, Sha256};

/// Writes the RFC 8785 canonical form of `node` into `out`.
///
/// The bytes are appended; `out` is not cleared first. Work is linear in the size of the
/// document plus the `n log n` sorting of each object's keys.
pub fn write_canonical(node: &crate::Node, out: &mut Vec<u8>) {
    let mut numbers = ryu_js::Buffer::new();
    write_node(node, out, &mut numbers);
}

/// Writes the RFC 8785 canonical form of `node` to `writer`, through a 64 KiB buffer,
/// without holding the whole form in memory. Stops writing at the first error and returns
/// it.
pub fn write_canonical_to(node: &crate::Node, writer: &mut impl Write) -> io::Result<()> {
    let mut out = Buffered {
        writer: io::BufWriter::with_capacity(64 << 10, writer),
        error: None,
    };
    write_node(node, &mut out, &mut ryu_js::Buffer::new());
    match out.error {
        Some(error) => Err(error),
        None => out.writer.flush(),
    }
}

/// The RFC 8785 canonical bytes of `node`.
pub fn canonical_bytes(node: &crate::Node) -> Vec<u8> {
    // The source is usually a little larger than its canonical form. The span is only a
    // hint (a node built by hand may carry any span), so it is bounded.
    let hint = node.span.end().saturating_sub(node.span.start());
    let mut out = Vec::with_capacity(hint.clamp(16, 1 << 20));
    write_canonical(node, &mut out);
    out
}

/// `"sha256:"` followed by the lowercase hex SHA-256 of the canonical bytes of `node`: the
/// WorkflowVersion of a document.
///
/// The canonical form is hashed as it is written, 64 KiB at a time, never held whole.
pub fn version_of(node: &crate::Node) -> String {
    let mut hasher = Sha256::new();
    write_canonical_to(node, &mut hasher).expect("writing into a hasher cannot fail");
    hex_digest(hasher)
}

mod serialize;

/// The canonical bytes of `value` written straight from its `Serialize` implementation,
/// without the members of its top-level object named in `leave_out`; `None` when it holds
/// what this writer does not spell — a number that is not an integer of at most 2^53 in
/// magnitude, bytes, a tuple or struct variant — for which the caller goes through
/// [`canonicalize`] of its JSON text.
pub fn serialized<T: serde::Serialize + ?Sized>(value: &T, leave_out: &[&str]) -> Option<Vec<u8>> {
    serialize::to_vec(value, leave_out)
}

/// [`serialized`], with each member `to` of the top-level object named in `same_as`
/// (`(to, from)`) written with the bytes of member `from` instead of being serialized again:
/// for a value that holds the same large member twice. The caller vouches that the two are
/// equal (what is written is what [`serialized`] writes only then); `None` also when there
/// is no member `from`.
pub fn serialized_as<T: serde::Serialize + ?Sized>(
    value: &T,
    leave_out: &[&str],
    same_as: &[(&str, &str)],
) -> Option<Vec<u8>> {
    serialize::to_vec_as(value, leave_out, same_as)
}

/// The RFC 8785 canonical form of the JSON text `bytes`, made in the reader's one pass over
/// them without building a document; `None` when they are not clean I-JSON (any finding of
/// [`document::read`], which reports them).
///
/// This is what `lwirc hash` and `lwirc canon` use: memory is the canonical bytes plus an
/// offset for each member of the objects being read, and, while an object whose keys are
/// out of order is reordered, a copy of its canonical bytes — not a tree of the document,
/// which takes several times the size of the text.
pub fn canonicalize(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut build = Canonical {
        // Canonical bytes are usually a little shorter than the text.
        out: Vec::with_capacity(bytes.len()),
        scratch: Vec::new(),
        numbers: ryu_js::Buffer::new(),
        duplicate: false,
    };
    let (root, findings) = document::read_into(bytes, &mut build);
    let clean = root.is_some() && findings.is_empty() && !build.duplicate;
    clean.then(|| {
        let mut out = build.out;
        out.shrink_to_fit();
        out
    })
}

/// The [`Build`]er of [`canonicalize`]: writes each value's canonical bytes as it is read.
///
/// An object's members are written in document order as `"key":value,` each (its `{`
/// already written), with the offset at which each starts. When the object ends, members
/// that are already in key order only need the last `,` made `}`; otherwise the members'
/// bytes are copied aside and written back in key order.
struct Canonical {
    out: Vec<u8>,
    /// The bytes of the object being reordered (kept to reuse its allocation).
    scratch: Vec<u8>,
    numbers: ryu_js::Buffer,
    /// Whether an object had a key twice (the reader reports it; the bytes are no form).
    duplicate: bool,
}

impl Build for Canonical {
    type Value = ();
    /// Where each member's `"key":` starts in `out`.
    type Object = Vec<usize>;
    /// Whether the array has an element yet.
    type Array = bool;

    fn scalar(&mut self, value: Value, span: Span) {
        write_node(&Node { span, value }, &mut self.out, &mut self.numbers);
    }

    fn string(&mut self, text: Str, _: Span) {
        write_string(&text, &mut self.out);
    }

    fn begin_object(&mut self) -> Vec<usize> {
        self.out.push(b'{');
        Vec::new()
    }

    fn key(&mut self, members: &mut Vec<usize>, key: &str) {
        members.push(self.out.len());
        write_string(key, &mut self.out);
        self.out.push(b':');
    }

    fn member(&mut self, _: &mut Vec<usize>, _: Str, _: Span, (): ()) {
        self.out.push(b',');
    }

    fn end_object(&mut self, starts: Vec<usize>, _: Span, _: &mut Context) {
        let Some(&first) = starts.first() else {
            self.out.push(b'}');
            return;
        };
        let out = &self.out;
        let in_order = starts
            .windows(2)
            .all(|w| compare_keys(key_at(out, w[0]), key_at(out, w[1])) == Ordering::Less);
        if !in_order {
            // Each member's bytes, without its `,`: up to where the next one starts.
            let mut members: Vec<(usize, usize)> = starts
                .iter()
                .zip(starts.iter().skip(1).chain([&out.len()]))
                .map(|(&start, &next)| (start - first, next - 1 - first))
                .collect();
            drop(starts);
            self.scratch.clear();
            self.scratch.extend_from_slice(&self.out[first..]);
            let scratch = &self.scratch;
            members.sort_by(|a, b| compare_keys(key_at(scratch, a.0), key_at(scratch, b.0)));
            self.duplicate |= members
                .windows(2)
                .any(|w| compare_keys(key_at(scratch, w[0].0), key_at(scratch, w[1].0)).is_eq());
            self.out.truncate(first);
            for (start, end) in members {
                self.out.extend_from_slice(&scratch[start..end]);
                self.out.push(b',');
            }
        }
        // The last member's `,`.
        self.out.pop();
        self.out.push(b'}');
    }

    fn begin_array(&mut self) -> bool {
        self.out.push(b'[');
        false
    }

    fn element(&mut self, any: &mut bool, (): ()) {
        self.out.push(b',');
        *any = true;
    }

    fn end_array(&mut self, any: bool, _: Span) {
        if any {
            self.out.pop();
        }
        self.out.push(b']');
    }
}

/// The canonical key written at `at` in `out` (`"key":…`), without its quotes, escaped as
/// [`write_string`] escapes it.
fn key_at(out: &[u8], at: usize) -> &[u8] {
    let rest = &out[at + 1..];
    &rest[..document::string_rest(rest)]
}

/// Orders two keys written by [`write_string`] as their decoded texts order in UTF-16.
fn compare_keys(a: &[u8], b: &[u8]) -> Ordering {
    if a.contains(&b'\\') || b.contains(&b'\\') {
        return utf16_cmp(&unescape(a), &unescape(b));
    }
    // Written from `str`s, so UTF-8; unescaped, so the texts themselves.
    utf16_cmp(
        std::str::from_utf8(a).unwrap_or_default(),
        std::str::from_utf8(b).unwrap_or_default(),
    )
}

/// The text of a string body written by [`write_string`] (its only escapes are `\"`,
/// `\\`, `\b \t \n \f \r` and `\u00xx`).
fn unescape(escaped: &[u8]) -> String {
    let mut out = Vec::with_capacity(escaped.len());
    let mut bytes = escaped.iter();
    while let Some(&b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        out.push(match bytes.next() {
            Some(b'b') => 0x08,
            Some(b't') => b'\t',
            Some(b'n') => b'\n',
            Some(b'f') => 0x0c,
            Some(b'r') => b'\r',
            Some(b'u') => {
                let hex: Vec<u8> = bytes.by_ref().take(4).copied().collect();
                std::str::from_utf8(&hex)
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .unwrap_or(0)
            }
            Some(&other) => other,
            None => break,
        });
    }
    String::from_utf8(out).unwrap_or_default()
}

/// `"sha256:"` followed by the lowercase hex SHA-256 of `bytes`. For bytes that are already
/// canonical (a stored version, say) this is [`version_of`] without reading them.
pub fn sha256_of(bytes: &[u8]) -> String {
    hex_digest(Sha256::new_with_prefix(bytes))
}

fn hex_digest(hasher: Sha256) -> String {
    crate::digest::prefixed(hasher)
}

/// Where canonical bytes go: a `Vec` (the whole form) or a [`Buffered`] writer.
trait Out {
    fn push(&mut self, byte: u8);
    fn extend_from_slice(&mut self, bytes: &[u8]);
}

impl Out for Vec<u8> {
    fn push(&mut self, byte: u8) {
        Vec::push(self, byte);
    }

    fn extend_from_slice(&mut self, bytes: &[u8]) {
        Vec::extend_from_slice(self, bytes);
    }
}

/// A buffered writer that keeps its first error (the canonical writer has no error path of
/// its own).
struct Buffered<W: Write> {
    writer: io::BufWriter<W>,
    error: Option<io::Error>,
}

impl<W: Write> Out for Buffered<W> {
    fn push(&mut self, byte: u8) {
        self.extend_from_slice(&[byte]);
    }

    fn extend_from_slice(&mut self, bytes: &[u8]) {
        if self.error.is_none()
            && let Err(error) = self.writer.write_all(bytes)
        {
            self.error = Some(error);
        }
    }
}

fn write_node(node: &Node, out: &mut impl Out, numbers: &mut ryu_js::Buffer) {
    match &node.value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n.value, out, numbers),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_node(item, out, numbers);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            let mut sorted: Vec<&Member> = members.iter().collect();
            // Keys are unique, so an unstable sort gives the one order.
            sorted.sort_unstable_by(|a, b| utf16_cmp(&a.key, &b.key));
            for (i, member) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(&member.key, out);
                out.push(b':');
                write_node(&member.value, out, numbers);
            }
            out.push(b'}');
        }
    }
}

/// ECMAScript `Number.prototype.toString` of a finite double.
fn write_number(value: f64, out: &mut impl Out, numbers: &mut ryu_js::Buffer) {
    if value == 0.0 {
        // Both zeros: RFC 8785 writes -0 as `0`.
        out.push(b'0');
    } else if value.is_finite() {
        out.extend_from_slice(numbers.format_finite(value).as_bytes());
    } else {
        // Unreachable for read documents (the reader clamps overflow to ±f64::MAX). JCS has
        // no spelling for these; `null` is what ECMAScript's JSON.stringify writes.
        out.extend_from_slice(b"null");
    }
}

/// A JSON string with RFC 8785's minimal escaping.
fn write_string(s: &str, out: &mut impl Out) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.push(b'"');
    let (mut run, mut i) = (0, 0);
    loop {
        i += document::plain_prefix(&bytes[i..]);
        let Some(&b) = bytes.get(i) else { break };
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\x08' => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            b'\x0c' => b"\\f",
            b'\r' => b"\\r",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 0x0f) as usize],
            ],
            // Every other byte, including all of multi-byte UTF-8, is copied as it is
            // (`plain_prefix` stops at none of them).
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[run..i]);
        out.extend_from_slice(escape);
        i += 1;
        run = i;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// Compares two strings as sequences of UTF-16 code units, without encoding them.
///
/// UTF-8 byte order is code point order, which agrees with UTF-16 order except between a
/// character outside the BMP (a surrogate pair, first unit `D800`–`DBFF`) and one in
/// `U+E000`–`U+FFFF`. So: skip the common byte prefix, and compare the first differing
/// characters by their UTF-16 rank.
fn utf16_cmp(a: &str, b: &str) -> Ordering {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    let common = ab.iter().zip(bb).take_while(|(x, y)| x == y).count();
    if common == ab.len() || common == bb.len() {
        // One is a prefix of the other (in bytes, hence in characters and in code units).
        return ab.len().cmp(&bb.len());
    }
    // UTF-8 is prefix-free, so the differing characters start at the same byte in both.
    let mut start = common;
    while !a.is_char_boundary(start) {
        start -= 1;
    }
    let ca = a[start..].chars().next().map_or(0, utf16_rank);
    let cb = b[start..].chars().next().map_or(0, utf16_rank);
    ca.cmp(&cb)
}

/// A key that orders characters as their UTF-16 encodings order: BMP characters below the
/// surrogates, then the supplementary characters (code point order is their pair order),
/// then `U+E000`–`U+FFFF`.
fn utf16_rank(c: char) -> u32 {
    let c = u32::from(c);
    if (0xE000..=0xFFFF).contains(&c) {
        c + 0x11_0000
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_order_matches_encode_utf16() {
        let keys = [
            "",
            "a",
            "ab",
            "b",
            "\u{7f}",
            "\u{80}",
            "\u{d7ff}",
            "\u{e000}",
            "\u{ffff}",
            "\u{10000}",
            "\u{1f600}",
            "\u{10ffff}",
            "a\u{1f600}",
            "a\u{fb33}",
            "\u{fb33}x",
            "\u{20ac}",
            "é",
            "éa",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(
                    utf16_cmp(a, b),
                    a.encode_utf16().cmp(b.encode_utf16()),
                    "{a:?} {b:?}"
                );
            }
        }
    }
}
