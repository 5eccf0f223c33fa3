//! What the sandbox costs a call: `true` and `python3 -c 'print(1)'` run in a sandbox
//! (bubblewrap, namespaces, the per-call cgroup, the poll loop, waiting for the pid
//! namespace to empty) next to the same commands started directly with `std::process`,
//! and, to tell bubblewrap's share from the crate's, `true` under a bare `bwrap
//! --unshare-all` with only `/usr` bound.
//!
//! Run with `cargo bench -p lwir-sandbox --bench sandbox`; compare `sandboxed/*` with
//! `direct/*`. Without a working sandbox only the direct runs are measured.

use std::hint::black_box;
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};
use lwir_sandbox::{Job, Sandbox};

/// The two commands, as the sandbox finds them on its `PATH`.
const COMMANDS: [(&str, &[&str]); 2] = [
    ("true", &["/usr/bin/true"]),
    ("python3", &["/usr/bin/python3", "-c", "print(1)"]),
];

fn bench(c: &mut Criterion) {
    let sandbox = Sandbox::probe()
        .map_err(|e| eprintln!("the sandbox cannot run here, only direct runs: {e}"))
        .ok();
    let mut group = c.benchmark_group("sandbox");
    group.sample_size(30);
    for (name, argv) in COMMANDS {
        group.bench_function(format!("direct/{name}"), |b| {
            b.iter(|| {
                let output = Command::new(argv[0])
                    .args(&argv[1..])
                    .env_clear()
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                assert!(output.status.success());
                black_box(output)
            })
        });
        if let Some(sandbox) = &sandbox {
            let job = Job::new(argv.iter().copied());
            group.bench_function(format!("sandboxed/{name}"), |b| {
                b.iter(|| {
                    let outcome = sandbox.run(&job).unwrap();
                    assert!(outcome.success(), "{outcome:?}");
                    black_box(outcome)
                })
            });
        }
    }
    if let Some(sandbox) = &sandbox {
        let bare = [
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "/usr/bin/true",
        ];
        group.bench_function("bare_bwrap/true", |b| {
            b.iter(|| {
                let output = Command::new(sandbox.bwrap())
                    .args(bare)
                    .env_clear()
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                assert!(output.status.success(), "{output:?}");
                black_box(output)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
