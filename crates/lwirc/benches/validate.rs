//! `lwirc validate` on generated drafts of 10 to 100 000 steps, next to plain `serde_json`
//! parsing of the same bytes (the baseline, measured in the same run).
//!
//! Run with `cargo bench -p lwirc --bench validate`; compare the `validate/N` and
//! `serde_json/N` times (or throughputs) of the same N.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lwir_validators::pipeline::{Source, validate};

mod generated;
use generated::{definition, draft};

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
