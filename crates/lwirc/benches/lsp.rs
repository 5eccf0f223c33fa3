//! The editor's wait: from a `textDocument/didChange` of one character in a 1 000-step
//! draft (and in a 10 000-step draft with real expressions: macros, ternaries, several
//! interpolations per template) to the `textDocument/publishDiagnostics` it causes, through the language server on
//! an in-memory connection (the real handshake and message loop; no debounce). The draft
//! sits beside its definition (`workflow.json`), which the server reads once and keeps
//! while its bytes are unchanged.
//!
//! Run with `cargo bench -p lwirc --bench lsp`.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::json;

mod generated;
use generated::{definition, draft, real_definition, real_draft};

fn bench(c: &mut Criterion) {
    edit(
        c,
        "1000 steps",
        definition(1_000),
        draft(1_000),
        "Classify:",
        200,
    );
    edit(
        c,
        "10000 steps, real expressions",
        real_definition(10_000),
        real_draft(10_000),
        "Classify the",
        1_000,
    );
}

/// Benchmarks typing one character at the `nth` `marker` of `draft` and back.
fn edit(c: &mut Criterion, name: &str, def: Vec<u8>, draft: Vec<u8>, marker: &str, nth: usize) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("workflow.json"), def).unwrap();
    let path = dir.path().join("draft.json");
    let text = String::from_utf8(draft).unwrap();
    let uri = lwir_lsp::path_uri(&path).as_str().to_owned();
    // One character of a prompt in the middle of the draft, typed and typed back.
    let at = text.match_indices(marker).nth(nth).unwrap().0;
    let line = text[..at].matches('\n').count() as u32;
    let character = (at - text[..at].rfind('\n').map_or(0, |i| i + 1)) as u32;

    let (server, client) = Connection::memory();
    let handle = std::thread::spawn(move || {
        let ended = lwir_lsp::serve(&server, lwir_lsp::Config::default());
        drop(server);
        ended
    });
    let wait = Duration::from_secs(30);
    let send = |m: Message| client.sender.send(m).unwrap();
    let published = || loop {
        match client.receiver.recv_timeout(wait).unwrap() {
            Message::Notification(n) if n.method == "textDocument/publishDiagnostics" => {
                return n.params["diagnostics"].as_array().map_or(0, Vec::len);
            }
            _ => {}
        }
    };
    send(
        Request::new(
            RequestId::from(1),
            "initialize".into(),
            json!({ "processId": null, "rootUri": null,
                    "capabilities": { "general": { "positionEncodings": ["utf-16"] } },
                    "initializationOptions": { "debounceMs": 0 } }),
        )
        .into(),
    );
    client.receiver.recv_timeout(wait).unwrap();
    send(Notification::new("initialized".into(), json!({})).into());
    send(
        Notification::new(
            "textDocument/didOpen".into(),
            json!({ "textDocument": { "uri": uri, "languageId": "json", "version": 1, "text": text } }),
        )
        .into(),
    );
    assert_eq!(published(), 0, "the generated draft is clean");
    let mut version = 1;
    let mut group = c.benchmark_group("lsp");
    group.bench_function(format!("didChange to publishDiagnostics, {name}"), |b| {
        b.iter(|| {
            version += 1;
            let ch = if version % 2 == 0 { "c" } else { "C" };
            let start = json!({ "line": line, "character": character });
            let end = json!({ "line": line, "character": character + 1 });
            send(
                Notification::new(
                    "textDocument/didChange".into(),
                    json!({ "textDocument": { "uri": uri, "version": version },
                            "contentChanges": [{ "range": { "start": start, "end": end }, "text": ch }] }),
                )
                .into(),
            );
            published()
        })
    });
    group.finish();
    send(Request::new(RequestId::from(2), "shutdown".into(), json!(null)).into());
    send(Notification::new("exit".into(), json!(null)).into());
    drop(client);
    handle.join().unwrap().unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
