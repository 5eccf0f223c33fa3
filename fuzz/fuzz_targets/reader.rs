//! The spanned I-JSON reader, on its own and against `serde_json`.
//!
//! - Reading never panics; every finding's span lies inside the input, and the pointer of
//!   every finding with a document resolves to a span inside the input (or is absent).
//! - Accepted without findings ⇒ `serde_json` parses the same bytes to an equal value.
//! - Read on two threads (the second from an element of a member of the root object), it
//!   builds the same tree with the same findings.
//! - `serde_json` accepts ⇒ the reader builds a document, and its only findings are the
//!   documented I-JSON differences (duplicate keys, integers beyond ±(2^53 − 1)); with no
//!   findings the values are equal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lwir_spec::Code;
use lwir_spec::document::{self, MAX_DEPTH};
use lwirc_fuzz::same_json;

fuzz_target!(init: lwirc_fuzz::init(), |data: &[u8]| {
    let outcome = document::read(data.to_vec());
    for f in &outcome.findings {
        assert!(
            f.span.start() <= f.span.end() && f.span.end() <= data.len(),
            "finding {} span {:?} outside input of {} bytes",
            f.code.as_str(),
            f.span,
            data.len()
        );
    }
    if let Some(doc) = &outcome.document {
        assert_eq!(doc.source(), data);
        let root = doc.root();
        assert!(root.span.end() <= data.len());
        for f in &outcome.findings {
            if let Some(span) = doc.span_of(&f.pointer) {
                assert!(span.end() <= data.len());
            }
            let _ = doc.key_span_of(&f.pointer);
        }
        let _ = document::display_text(data);
    }

    // Read on two threads, the second starting at the first element after a few places
    // (see `document::read_document`): the same tree and findings.
    let one = (
        outcome.document.as_ref().map(|d| d.root().clone()),
        &outcome.findings,
    );
    let chosen = usize::from(data.first().copied().unwrap_or(0)) * data.len() / 256;
    for at in [0, data.len() / 3, data.len() / 2, chosen] {
        let two = document::with_read_split(Some(at), || document::read(data.to_vec()));
        assert!(
            two.document.as_ref().map(|d| d.root().clone()) == one.0 && &two.findings == one.1,
            "reading on two threads from byte {at} differs from reading on one"
        );
    }

    // Differential against serde_json (which also enforces a nesting limit of its own).
    let ours = outcome
        .document
        .as_ref()
        .map(|d| d.root().to_json());
    let depth = nesting(data);
    if depth > MAX_DEPTH {
        // Beyond the limit the reader must refuse; serde_json is not asked (its own limit
        // differs, and unbounded it could overflow the stack).
        assert!(ours.is_none(), "the reader accepted nesting {depth} > {MAX_DEPTH}");
        return;
    }
    let theirs = {
        let mut de = serde_json::Deserializer::from_slice(data);
        // Depth is ours to judge (checked above), syntax is what is compared.
        de.disable_recursion_limit();
        serde::Deserialize::deserialize(&mut de)
            .and_then(|v: serde_json::Value| de.end().map(|()| v))
            .ok()
    };
    let clean = outcome.findings.is_empty();
    match (&ours, &theirs) {
        (Some(a), Some(b)) if clean => assert!(
            same_json(a, b),
            "reader and serde_json disagree:\n ours   {a}\n theirs {b}"
        ),
        (Some(_), None) if clean => panic!("the reader accepts what serde_json rejects"),
        (None, Some(_)) => panic!(
            "serde_json accepts what the reader rejects: {:?}",
            outcome.findings.first().map(|f| (f.code.as_str(), &f.message))
        ),
        (Some(_), Some(_)) => {
            for f in &outcome.findings {
                assert!(
                    matches!(f.code, Code::DuplicateKey | Code::IntegerOutOfRange),
                    "serde_json accepts a document the reader flags with {} ({})",
                    f.code.as_str(),
                    f.message
                );
            }
        }
        _ => {}
    }
});

/// The deepest nesting of arrays and objects in `data`, brackets inside strings not
/// counted (exact for JSON, and for the prefix of non-JSON that a parser reads before its
/// first error).
fn nesting(data: &[u8]) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in data {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}
