//! What an editor does on every keystroke: re-validate a 1 000-step draft after a
//! one-character edit, against a definition read once (`pipeline::Definition`, kept between
//! runs: the definition's document and its own findings do not change while the draft is
//! typed). Nothing of the draft is cached: each run reads, checks and hashes the edited
//! bytes whole, so a result can never be stale.
//!
//! Run with `cargo bench -p lwirc --bench revalidate`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use lwir_validators::pipeline::{Definition, Source, validate_against};

mod generated;
use generated::{definition, draft};

fn bench(c: &mut Criterion) {
    let definition = Arc::new(Definition::read(Source {
        name: "workflow.json".into(),
        bytes: definition(1_000),
    }));
    let clean = draft(1_000);
    // The edit: one character of a prompt, in the middle of the draft.
    let at = clean
        .windows(9)
        .enumerate()
        .filter(|(_, w)| *w == b"Classify:")
        .nth(200)
        .map(|(i, _)| i)
        .expect("the draft has prompts");
    let mut edited = clean.clone();
    edited[at] = b'c';
    let run = |bytes: &[u8]| {
        validate_against(
            Source {
                name: "draft.json".into(),
                bytes: bytes.to_vec(),
            },
            &definition,
        )
    };
    assert!(!run(&edited).has_errors());
    let mut group = c.benchmark_group("revalidate");
    group.bench_function("1000 steps after a one-character edit", |b| {
        b.iter(|| black_box(run(&edited)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
