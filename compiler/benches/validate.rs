//! `lwirc validate` on generated drafts of 10 to 100 000 steps, next to plain `serde_json`
//! parsing of the same bytes (the baseline, measured in the same run).
//!
//! Run with `cargo bench -p lwirc --bench validate`; compare the `validate/N` and
//! `serde_json/N` times (or throughputs) of the same N.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lwirc::pipeline::{Source, validate};

/// A definition with two tools and two slots, and limits that admit `steps` steps.
fn definition(steps: usize) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "name": "bench",
        "models": {
            "fast": { "model": "acme/small-2", "quality": "standard", "capabilities": ["json_output"], "context_tokens": 32000 },
            "deep": { "model": "acme/large-5", "quality": "high", "capabilities": ["json_output", "tool_use"], "context_tokens": 200000 }
        },
        "tools": {
            "github.list_issues": {
                "description": "List issues",
                "input": { "type": "object", "properties": { "repo": { "type": "string" }, "state": { "enum": ["open", "closed"] } },
                           "required": ["repo"], "additionalProperties": false },
                "output": { "type": "object", "properties": { "items": { "type": "array" } }, "required": ["items"] }
            },
            "github.add_label": {
                "description": "Add a label",
                "input": { "type": "object", "properties": { "repo": { "type": "string" }, "number": { "type": "integer" }, "label": { "type": "string" } },
                           "required": ["repo", "number", "label"], "additionalProperties": false },
                "output": { "type": "object", "properties": { "ok": { "type": "boolean" } } }
            }
        },
        "limits": { "max_steps": steps + 1, "max_parallel": 16, "max_loop_iterations": 100 }
    }))
    .unwrap()
}

/// A clean draft of `steps` steps: tool calls, model calls and maps, each after the one before.
pub fn draft(steps: usize) -> Vec<u8> {
    let mut list = Vec::with_capacity(steps);
    let mut i = 0;
    while i < steps {
        let id = format!("s{i}");
        let after = if i == 0 {
            vec![]
        } else {
            vec![format!("s{}", i - 1)]
        };
        let step = match i % 3 {
            0 => {
                serde_json::json!({ "id": id, "kind": "tool.call", "tool": "github.list_issues", "after": after,
                                     "args": { "repo": "${ input.repo }", "state": "open" } })
            }
            1 => {
                serde_json::json!({ "id": id, "kind": "model.call", "model": "fast", "after": after,
                                     "prompt": "Classify: ${ input.repo }",
                                     "requires": { "quality": "standard", "capabilities": ["json_output"] },
                                     "output": { "type": "object", "properties": { "label": { "enum": ["bug", "feature"] } }, "required": ["label"] } })
            }
            _ if i + 1 < steps => {
                i += 1;
                serde_json::json!({ "id": id, "kind": "map", "over": "${ input.items }", "as": "item", "max_parallel": 8, "after": after,
                                    "steps": [ { "id": format!("s{i}"), "kind": "tool.call", "tool": "github.add_label",
                                                 "args": { "repo": "${ input.repo }", "number": 1, "label": "bug" } } ],
                                    "result": "${ item }" })
            }
            _ => {
                serde_json::json!({ "id": id, "kind": "tool.call", "tool": "github.list_issues", "after": after,
                                     "args": { "repo": "${ input.repo }" } })
            }
        };
        list.push(step);
        i += 1;
    }
    serde_json::to_vec_pretty(
        &serde_json::json!({ "lwir": "1", "workflow": "bench", "steps": list }),
    )
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("validate");
    for steps in [10, 1_000, 10_000, 100_000] {
        let bytes = draft(steps);
        let def = definition(steps);
        let run = |bytes: &Vec<u8>| {
            validate(
                Source {
                    name: "bench.json".into(),
                    bytes: bytes.clone(),
                },
                Some(Source {
                    name: "workflow.json".into(),
                    bytes: def.clone(),
                }),
            )
        };
        // Sanity: the generated draft is clean, so the whole pipeline (hash included) runs.
        let check = run(&bytes);
        assert!(!check.has_errors(), "{:?}", check.findings.first());
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        if steps >= 10_000 {
            group.sample_size(10);
        }
        group.bench_with_input(BenchmarkId::new("serde_json", steps), &bytes, |b, bytes| {
            b.iter(|| black_box(serde_json::from_slice::<serde_json::Value>(bytes).unwrap()))
        });
        group.bench_with_input(BenchmarkId::new("read", steps), &bytes, |b, bytes| {
            b.iter(|| black_box(lwir_spec::document::read(bytes.clone())))
        });
        group.bench_with_input(BenchmarkId::new("lwirc", steps), &bytes, |b, bytes| {
            b.iter(|| black_box(run(bytes)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
