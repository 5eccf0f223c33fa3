//! A `map` of N tool calls with an in-process effect, whose body reads an outer step's
//! large output: the engine's own cost, durable (group commit) on the local disk. Prints,
//! for N = 1 000 and 10 000 (`LWIR_BENCH_N=…` for others): the run, fsyncs per step, a
//! resume of its log cut before its last 1% of events, and a replay of the whole log.
//! Times are wall clock; a linear engine takes about 10× from 1 000 to 10 000.
//!
//!   cargo bench -p lwir-runtime --bench map

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use lwir_registry::{Registered, Registration, Registry};
use lwir_runtime::bindings::Bindings;
use lwir_runtime::effects::Effects;
use lwir_runtime::effects::fake::Fake;
use lwir_runtime::{Continue, NewRun, OnDrift, Quiet, RunStore, Runtime, Status};
use lwir_validators::pipeline::{self, Source};
use serde_json::{Value, json};

fn main() {
    let sizes: Vec<usize> = std::env::var("LWIR_BENCH_N")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000]);
    println!("| items | run | events | fsyncs | fsyncs per step | resume (last 1% cut) | replay |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for n in sizes {
        bench(n);
    }
}

fn bench(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let definition = json!({
        "name": "w",
        "input": {"type": "object"},
        "output": {},
        "models": {},
        "tools": {
            "outer": {"description": "a large output", "input": {"type": "object"},
                      "output": {"type": "object", "properties": {
                          "items": {"type": "array", "items": {"type": "integer"}},
                          "k": {"type": "integer"},
                          "blob": {"type": "array"}}, "required": ["items", "k", "blob"]}},
            "echo": {"description": "echo", "input": {"type": "object"},
                     "output": {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]}}
        },
        "limits": {"max_steps": 10, "max_parallel": 64, "max_loop_iterations": 1}
    });
    let draft = json!({
        "lwir": "1", "workflow": "w",
        "steps": [
            {"id": "outer", "kind": "tool.call", "tool": "outer"},
            {"id": "each", "kind": "map", "over": "${ steps.outer.output.items }", "as": "x", "max_parallel": 64,
             "steps": [{"id": "echo", "kind": "tool.call", "tool": "echo",
                        "args": {"x": "${ x }", "k": "${ steps.outer.output.k }",
                                 "n": "${ size(steps.outer.output.blob) }"}}],
             "result": "${ steps.echo.output.v }"},
            {"id": "sum", "kind": "reduce", "over": "${ steps.each.output }", "init": 0, "acc": "s", "as": "v",
             "with": "${ s + v }"}
        ],
        "output": "${ steps.sum.output }"
    });
    let source = |name: &str, v: &Value| Source {
        name: name.into(),
        bytes: serde_json::to_vec(v).unwrap(),
    };
    let validation = pipeline::compile(
        source("d.json", &draft),
        Some(source("w.json", &definition)),
    );
    assert!(!validation.has_errors());
    let registry = Registry::at(dir.path().join("registry"));
    let version = match registry
        .register(
            &Registration::new(&validation, SystemTime::now()).unwrap(),
            false,
        )
        .unwrap()
    {
        Registered::New(e) => e.version.to_string(),
        other => panic!("{other:?}"),
    };
    let fake = Arc::new(
        Fake::new()
            .tool_json("outer", move |_| {
                json!({"items": (0..n).collect::<Vec<_>>(), "k": 1,
                       "blob": (0..n).map(|i| json!({"i": i, "text": "some text"})).collect::<Vec<_>>()})
            })
            .tool_json("echo", |a| json!({"v": a["x"].as_i64().unwrap() + a["k"].as_i64().unwrap()})),
    );
    let f = Arc::clone(&fake);
    let effects_for = move |_: &Bindings| -> Box<dyn Effects> { Box::new(f.clone()) };
    let bindings = lwir_runtime::bindings::read(
        serde_json::to_vec(&json!({"bindings": "lwir.bindings/1",
            "tools": {"outer": {"command": ["x"]}, "echo": {"command": ["x"]}}}))
        .unwrap(),
    )
    .bindings
    .unwrap();
    let input = lwir_spec::document::read(b"{}".to_vec()).document.unwrap();
    let store = RunStore::new(dir.path().join("runs"));
    let runtime = Runtime::new(store.clone(), &registry);
    let started = Instant::now();
    let report = runtime
        .start(
            &NewRun {
                version: &version,
                input: &input,
                bindings: &bindings,
                bindings_document: None,
                definition: None,
                max_parallel: 16,
                on_drift: OnDrift::Fail,
            },
            &effects_for,
            &Quiet,
        )
        .unwrap();
    let run_time = started.elapsed();
    assert!(
        matches!(report.status, Status::Succeeded { .. }),
        "{:?}",
        report.status
    );
    let run = report.run.clone().unwrap();

    // A copy of the log cut before its last 1% of events, resumed.
    let log = std::fs::read_to_string(store.root().join(&run).join("events.jsonl")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    let keep = lines.len() - lines.len() / 100;
    let cut_store = RunStore::new(dir.path().join("cut"));
    std::fs::create_dir_all(cut_store.root().join(&run)).unwrap();
    std::fs::write(
        cut_store.root().join(&run).join("events.jsonl"),
        lines[..keep].join("\n") + "\n",
    )
    .unwrap();
    let cut_runtime = Runtime::new(cut_store, &registry);
    let started = Instant::now();
    let resumed = cut_runtime
        .resume(&run, false, &Continue::by("bench"), &effects_for, &Quiet)
        .unwrap();
    let resume_time = started.elapsed();
    assert!(
        matches!(resumed.status, Status::Succeeded { .. }),
        "{:?}",
        resumed.status
    );

    let started = Instant::now();
    let replay = runtime.replay(&run).unwrap();
    let replay_time = started.elapsed();
    assert!(replay.difference.is_none(), "{:?}", replay.difference);

    println!(
        "| {n} | {:.3} s | {} | {} | {:.3} | {:.3} s | {:.3} s |",
        run_time.as_secs_f64(),
        report.stats.events,
        report.stats.fsyncs,
        report.stats.fsyncs as f64 / report.stats.steps.max(1) as f64,
        resume_time.as_secs_f64(),
        replay_time.as_secs_f64()
    );
}
