//! Arbitrary text as a document open in `lwirc lsp` (a draft against the example
//! definition, a definition, a goal file, as its content says): the analysis, then hover,
//! go-to-definition, completion and the outline at offsets across it, and the position
//! conversions in both encodings.
//!
//! Never panics; a position converted from an offset converts back to it (in either
//! encoding); the smallest edit between two texts turns one into the other.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use lwir_lsp::analysis::{Analysis, DefinitionFrom, Kind, LinkedDefinition, Patterns};
use lwir_lsp::features;
use lwir_lsp::text::{self, Encoding, Text};
use lwir_validators::pipeline::Definition;

fuzz_target!(init: lwirc_fuzz::init(), |data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let read = lwir_spec::document::read_document(text.as_bytes().to_vec());
    let kind = Kind::of(None, &text, read.0.as_ref().ok().map(|d| d.root()), &Patterns::default())
        .unwrap_or(Kind::Draft);
    let definition = (kind == Kind::Draft).then(|| LinkedDefinition {
        path: "workflow.json".into(),
        from: DefinitionFrom::Beside,
        definition: Arc::new(Definition::read(lwirc_fuzz::definition())),
    });
    let analysis = Analysis::new(kind, "draft.json", read, definition, Vec::new(), &mut Default::default());
    let mut doc = Text::new(text.clone(), 1);
    // At most 64 offsets, spread over the text, and its end.
    let step = (text.len() / 64).max(1);
    for offset in (0..=text.len()).step_by(step).chain([text.len()]) {
        let _ = features::hover(&analysis, &text, offset);
        let _ = features::definition(&analysis, offset);
        if text.is_char_boundary(offset) {
            let _ = features::complete(Some(&analysis), &text, offset);
        }
        let at = text.floor_char_boundary(offset);
        // Between `\r` and `\n` is no position of its own.
        if at > 0 && text.as_bytes()[at - 1] == b'\r' {
            continue;
        }
        for encoding in [Encoding::Utf8, Encoding::Utf16] {
            let position = doc.position(at, encoding);
            assert_eq!(doc.offset(position, encoding), Ok(at), "{position:?} in {encoding:?}");
        }
    }
    let _ = features::symbols(&analysis);
    for f in analysis.findings() {
        assert!(f.span.end() <= text.len());
    }
    // The smallest edit from the text to its first half and back.
    let half = &text[..text.floor_char_boundary(text.len() / 2)];
    for (old, new) in [(text.as_str(), half), (half, text.as_str())] {
        if let Some((span, replacement)) = text::diff(old, new) {
            let mut edited = old.to_owned();
            edited.replace_range(span.range(), &replacement);
            assert_eq!(edited, new);
        }
    }
});
