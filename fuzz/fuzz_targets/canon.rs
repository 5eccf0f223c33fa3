//! RFC 8785 canonical JSON.
//!
//! For every document the reader builds (findings or not): its canonical bytes read back
//! as a document, canonicalise to the same bytes (canon → read → canon is the identity),
//! and parse with `serde_json` to the same value. For a document accepted without findings,
//! the canonical bytes also read back without findings and to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lwir_spec::canon::{canonical_bytes, canonicalize, sha256_of, version_of};
use lwir_spec::document;
use lwirc_fuzz::same_json;

fuzz_target!(init: lwirc_fuzz::init(), |data: &[u8]| {
    let outcome = document::read(data.to_vec());
    let streamed = canonicalize(data);
    let Some(doc) = outcome.document else {
        assert!(streamed.is_none(), "a canonical form of what does not read");
        return;
    };
    let clean = outcome.findings.is_empty();
    let canon = canonical_bytes(doc.root());
    if clean {
        assert!(
            streamed.as_deref() == Some(&canon[..]),
            "canonical while reading differs:\n tree {}\n read {:?}",
            String::from_utf8_lossy(&canon),
            streamed.as_deref().map(String::from_utf8_lossy)
        );
    } else {
        assert!(streamed.is_none(), "a canonical form despite findings");
    }
    assert_eq!(version_of(doc.root()), sha256_of(&canon));

    let again = document::read(canon.clone());
    let Some(again_doc) = again.document else {
        panic!(
            "canonical bytes do not read back: {:?}\n{}",
            again.findings.first().map(|f| (f.code.as_str(), &f.message)),
            String::from_utf8_lossy(&canon)
        );
    };
    if clean {
        assert!(
            again.findings.is_empty(),
            "canonical bytes of an accepted document have findings: {:?}\n{}",
            again
                .findings
                .iter()
                .map(|f| (f.code.as_str(), &f.message))
                .collect::<Vec<_>>(),
            String::from_utf8_lossy(&canon)
        );
        assert!(
            same_json(&doc.root().to_json(), &again_doc.root().to_json()),
            "canonical bytes read back to another value:\n{}",
            String::from_utf8_lossy(&canon)
        );
    }
    let canon2 = canonical_bytes(again_doc.root());
    assert!(
        canon == canon2,
        "canon is not idempotent:\n 1st {}\n 2nd {}",
        String::from_utf8_lossy(&canon),
        String::from_utf8_lossy(&canon2)
    );

    // serde_json reads the canonical bytes (no whitespace, minimal escapes) too.
    let theirs: serde_json::Value = match serde_json::from_slice(&canon) {
        Ok(v) => v,
        Err(e) if e.to_string().contains("recursion limit") => return,
        Err(e) => panic!("serde_json rejects canonical bytes ({e}):\n{}", String::from_utf8_lossy(&canon)),
    };
    if clean {
        assert!(
            same_json(&doc.root().to_json(), &theirs),
            "serde_json reads the canonical bytes to another value:\n{}",
            String::from_utf8_lossy(&canon)
        );
    }
});
