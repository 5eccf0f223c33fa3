//! Arbitrary bytes as what an editor writes to `lwirc lsp`: frames read by `lsp::wire`,
//! headers included, until the input ends or the stream breaks, and each body decoded.
//!
//! Never panics, and nothing is allocated for what a header only announces (libFuzzer's
//! malloc limit fails a run that does); every body is as long as its header said and no
//! longer than the limit; a body that is no message gets a JSON-RPC error answer whose `id`
//! is null, a string or a number; a message, written back as lsp-server writes it, reads
//! back as the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lwir_lsp::wire::{self, Incoming, MAX_MESSAGE_BYTES};
use serde_json::Value;

fuzz_target!(init: lwirc_fuzz::init(), |data: &[u8]| {
    let mut input = data;
    // Each frame takes at least its header line, so this ends.
    while let Ok(Some(body)) = wire::read_frame(&mut input) {
        assert!(body.len() <= MAX_MESSAGE_BYTES);
        // Grown as bytes arrive (doubling at most), never sized by the header.
        assert!(body.capacity() <= (2 * data.len()).max(64 * 1024));
        match wire::decode(&body) {
            Incoming::Invalid(answer) => {
                let code = answer["error"]["code"].as_i64();
                assert!(matches!(code, Some(-32700 | -32600)), "{answer}");
                assert!(
                    matches!(answer["id"], Value::Null | Value::String(_) | Value::Number(_)),
                    "{answer}"
                );
            }
            Incoming::Message(message) => {
                let mut written = Vec::new();
                message.write(&mut written).expect("a message can be written");
                let mut again = written.as_slice();
                let body = wire::read_frame(&mut again)
                    .expect("a written frame reads")
                    .expect("a written frame is there");
                assert!(again.is_empty());
                let Incoming::Message(back) = wire::decode(&body) else {
                    panic!("a written message reads back as none: {message:?}");
                };
                assert_eq!(
                    serde_json::to_value(&back).unwrap(),
                    serde_json::to_value(&message).unwrap()
                );
            }
        }
    }
});
