//! The safe-fix passes of the repair loop on generated drafts of 10 to 100 000 steps with a
//! misspelt tool in every 30th step, next to plain `serde_json` parsing and one `lwirc
//! validate` of the same bytes (the baselines, measured in the same run).
//!
//! `fixes` validates the draft, applies every disjoint machine-applicable fix in one pass,
//! and validates the result: about twice `validate`, and linear in the draft. `round` is the
//! same without the first validation (the findings are known): the edits, one reading of
//! the edited text to judge them, and the validation of the result. `read` is the spanned
//! reader alone.
//! Run with `cargo bench -p lwirc --bench repair`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lwir_repair::fixes::{Check, FixStop, Seen, apply_safe_fixes};
use lwir_session::PipelineCheck;
use lwir_validators::pipeline::Source;

mod generated;
use generated::{definition, misspelt_draft};

/// The safe fixes of `checked` (the findings of `bytes`) applied, at most 16 passes.
fn one_round(
    check: &mut PipelineCheck,
    bytes: &[u8],
    checked: lwir_repair::fixes::Checked,
) -> lwir_repair::fixes::FixOutcome {
    apply_safe_fixes(
        check,
        bytes.to_vec(),
        checked,
        &mut Seen::default(),
        16,
        &mut |_| {},
    )
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("repair");
    for steps in [10, 1_000, 10_000, 100_000] {
        let bytes = misspelt_draft(steps, 30);
        let check = PipelineCheck::new(
            Source {
                name: "workflow.json".into(),
                bytes: definition(steps),
            },
            "bench.json",
        );
        let fix = |bytes: &Vec<u8>| {
            let mut check = check.clone();
            let checked = check.check(bytes);
            one_round(&mut check, bytes, checked)
        };
        // Sanity: one pass of fixes leaves a clean draft.
        let outcome = fix(&bytes);
        assert_eq!(outcome.stop, FixStop::Clean);
        assert_eq!(outcome.passes.len(), 1);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        if steps >= 10_000 {
            group.sample_size(10);
        }
        group.bench_with_input(BenchmarkId::new("serde_json", steps), &bytes, |b, bytes| {
            b.iter(|| black_box(serde_json::from_slice::<serde_json::Value>(bytes).unwrap()))
        });
        group.bench_with_input(BenchmarkId::new("validate", steps), &bytes, |b, bytes| {
            b.iter(|| black_box(check.validation(bytes)))
        });
        group.bench_with_input(BenchmarkId::new("read", steps), &bytes, |b, bytes| {
            b.iter(|| black_box(lwir_spec::document::read(bytes.clone())))
        });
        // The round alone: the draft's findings are known (from the validation that found
        // them); the fixes are applied and the result validated.
        group.bench_with_input(BenchmarkId::new("round", steps), &bytes, |b, bytes| {
            b.iter_batched(
                || {
                    let mut check = check.clone();
                    let checked = check.check(bytes);
                    (check, checked)
                },
                |(mut check, checked)| black_box(one_round(&mut check, bytes, checked)),
                criterion::BatchSize::LargeInput,
            )
        });
        group.bench_with_input(BenchmarkId::new("fixes", steps), &bytes, |b, bytes| {
            b.iter(|| black_box(fix(bytes)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
