//! A draft, an edit of it, and the draft again, as an editor sends them, checked with the
//! expression pass's memo kept from each revision to the next (`lwirc lsp`) and whole.
//!
//! The input's first four bytes are the edit (where, little-endian, modulo the length; the
//! byte typed; how many bytes it replaces, 0–3); the rest is the draft, checked against
//! the example definition. The findings are the same both ways, at every revision — and
//! the same again with the expression pass split over two threads before the top-level
//! step the typed byte picks.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use lwir_spec::document::read_document;
use lwir_validators::expr::{Memo, with_split};
use lwir_validators::pipeline::{Definition, validate_read};

fuzz_target!(init: lwirc_fuzz::init(), |data: &[u8]| {
    let Some((head, text)) = data.split_first_chunk::<4>() else {
        return;
    };
    let at = usize::from(u16::from_le_bytes([head[0], head[1]])) % (text.len() + 1);
    let replaced = usize::from(head[3] % 4).min(text.len() - at);
    let mut edited = text.to_vec();
    edited.splice(at..at + replaced, [head[2]]);
    let definition = Arc::new(Definition::read(lwirc_fuzz::definition()));
    let mut memo = Memo::default();
    for revision in [text, &edited[..], text] {
        let check = |memo: Option<&mut Memo>| {
            validate_read(
                "draft.json".into(),
                read_document(revision.to_vec()),
                Some(&definition),
                memo,
            )
            .findings
        };
        let kept = check(Some(&mut memo));
        let whole = with_split(None, || check(None));
        assert_eq!(kept, whole, "the memo changed the findings");
        let split = with_split(Some(usize::from(head[2] % 8) + 1), || check(None));
        assert_eq!(split, whole, "splitting the expression pass changed the findings");
    }
});
