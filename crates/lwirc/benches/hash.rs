//! `lwirc hash` on a ~10 MiB generated document — the canonical form (RFC 8785) made while
//! reading, SHA-256 — next to plain `serde_json` parsing of the same bytes (the baseline,
//! measured in the same run), the tree path `validate` takes (read into a spanned tree,
//! canonicalise it, SHA-256), and each stage on its own.
//!
//! Run with `cargo bench -p lwirc --bench hash`; compare the throughputs of `hash` and
//! `serde_json`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lwir_spec::canon::{canonical_bytes, canonicalize, sha256_of, version_of};

/// A pretty-printed document of workflow-like steps (strings, integers, doubles, nested
/// schemas, non-ASCII text) whose steps alone take `target` bytes when pretty-printed on
/// their own; nested in the document, with its indentation, the whole is about 1.25 times
/// that.
fn document(target: usize) -> Vec<u8> {
    let mut steps = Vec::new();
    let mut size = 0;
    let mut i = 0u64;
    while size < target {
        let step = serde_json::json!({
            "id": format!("step_{i}"),
            "kind": if i.is_multiple_of(2) { "tool.call" } else { "model.call" },
            "tool": "github.list_issues",
            "args": { "repo": "${ input.repo }", "state": "open", "per_page": i % 100 + 1 },
            "prompt": format!("Classify issue #{i}: «${{ issue.title }}» — résumé ✓"),
            "weights": [0.1 * i as f64, 1.5e-7, 333_333_333.333_333_3, -0.0, 1e21],
            "output": { "type": "object", "required": ["label"],
                        "properties": { "label": { "enum": ["bug", "feature", "question"] },
                                        "score": { "type": "number", "minimum": 0, "maximum": 1 } } },
            "after": [format!("step_{}", i.saturating_sub(1))]
        });
        size += serde_json::to_vec_pretty(&step).unwrap().len();
        steps.push(step);
        i += 1;
    }
    serde_json::to_vec_pretty(
        &serde_json::json!({ "lwir": "1", "workflow": "bench", "steps": steps }),
    )
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let bytes = document(8 << 20);
    let mut group = c.benchmark_group("hash");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.sample_size(10);
    group.bench_function("serde_json", |b| {
        b.iter(|| black_box(serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()))
    });
    group.bench_function("hash", |b| {
        b.iter(|| black_box(sha256_of(&canonicalize(&bytes).unwrap())))
    });
    group.bench_function("tree_hash", |b| {
        b.iter(|| {
            let read = lwir_spec::document::read(bytes.clone());
            let document = read.document.unwrap();
            black_box(version_of(document.root()))
        })
    });
    group.bench_function("read", |b| {
        b.iter(|| black_box(lwir_spec::document::read(bytes.clone())))
    });
    let read = lwir_spec::document::read(bytes.clone());
    assert!(read.findings.is_empty());
    let document = read.document.unwrap();
    group.bench_function("canon", |b| {
        b.iter(|| black_box(canonical_bytes(document.root())))
    });
    let canonical = canonical_bytes(document.root());
    group.bench_function("sha256", |b| b.iter(|| black_box(sha256_of(&canonical))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
