//! The run log: resume from any prefix, retry of failed steps, replay without effects, and
//! what edits of a log are found.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use lwir_runtime::bindings::Bindings;
use lwir_runtime::effects::Effects;
use lwir_runtime::effects::fake::{Called, Fake};
use lwir_runtime::{Continue, RunStore, Runtime, Status};
use lwir_spec::Code;
use serde_json::{Value, json};

use crate::common::{Events, Version, definition, output, step_starts, tool};

/// A map of `n` tool calls over the input's list, each reading an outer step.
fn mapped(n: usize) -> (Version, Value) {
    let base =
        json!({"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"]});
    let v_out =
        json!({"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]});
    let def = definition(
        json!({"a": tool(base), "echo": tool(v_out)}),
        json!({"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}, "required": ["xs"]}),
        json!({}),
    );
    let v = Version::new(
        json!({
            "steps": [
                {"id": "base", "kind": "tool.call", "tool": "a"},
                {"id": "each", "kind": "map", "over": "${ input.xs }", "as": "x", "max_parallel": 8,
                 "steps": [{"id": "echo", "kind": "tool.call", "tool": "echo",
                            "args": {"x": "${ x }", "k": "${ steps.base.output.k }"}}],
                 "result": "${ steps.echo.output.v }"},
                {"id": "sum", "kind": "reduce", "over": "${ steps.each.output }", "init": 0, "acc": "s", "as": "v",
                 "with": "${ s + v }"}
            ],
            "output": "${ {'sum': steps.sum.output, 'all': steps.each.output} }"
        }),
        &def,
    );
    (v, json!({"xs": (0..n).collect::<Vec<_>>()}))
}

fn mapped_fake() -> Arc<Fake> {
    Arc::new(
        Fake::new()
            .tool_json("a", |_| json!({"k": 1000}))
            .tool_json(
                "echo",
                |args| json!({"v": args["x"].as_i64().unwrap() + args["k"].as_i64().unwrap()}),
            ),
    )
}

fn effects_for(fake: &Arc<Fake>) -> impl Fn(&Bindings) -> Box<dyn Effects> + use<> {
    let fake = Arc::clone(fake);
    move |_: &Bindings| -> Box<dyn Effects> { Box::new(fake.clone()) }
}

/// `runtime.resume` of `run` (a retry when `retry`) by `me` on `fake`.
fn resume_by_me(
    runtime: &Runtime<'_, lwir_registry::Directory>,
    run: &str,
    retry: bool,
    fake: &Arc<Fake>,
) -> Result<lwir_runtime::Outcome, lwir_runtime::RunError> {
    runtime.resume(
        run,
        retry,
        &Continue::by("me"),
        &effects_for(fake),
        &Events::default(),
    )
}

/// The idempotency keys of the tool calls of `fake`.
fn keys(fake: &Fake) -> Vec<String> {
    fake.calls()
        .into_iter()
        .filter_map(|c| match c {
            Called::Tool(t) => Some(t.idempotency_key),
            _ => None,
        })
        .collect()
}

/// Cut the log after any line (a crash there), resume: the same output, and every call
/// made again is one the log shows in flight, with the same key.
#[test]
fn resume_from_every_prefix_runs_only_what_was_in_flight() {
    let (v, input) = mapped(12);
    let fake = mapped_fake();
    let report = v.run(input.clone(), &fake);
    let expected = output(&report);
    let run = report.run.unwrap();
    let log = std::fs::read_to_string(v.store().root().join(&run).join("events.jsonl")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    let all_keys = keys(&fake);
    for cut in 1..lines.len() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::new(dir.path());
        std::fs::create_dir_all(dir.path().join(&run)).unwrap();
        let mut prefix = lines[..cut].join("\n");
        prefix.push('\n');
        // A torn line after the prefix, as a crash mid-write leaves.
        prefix.push_str(&lines[cut][..lines[cut].len() / 2]);
        std::fs::write(dir.path().join(&run).join("events.jsonl"), prefix).unwrap();
        let again = mapped_fake();
        let runtime = Runtime::new(store, &v.registry);
        let resumed = runtime
            .resume(
                &run,
                false,
                &Continue::by("test"),
                &effects_for(&again),
                &Events::default(),
            )
            .unwrap();
        assert_eq!(output(&resumed), expected, "cut after line {cut}");
        // Every call made again was made before (same key), none twice.
        let made = keys(&again);
        let mut unique = made.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), made.len(), "cut after line {cut}");
        for key in &made {
            assert!(
                all_keys.contains(key),
                "cut after line {cut}: new key {key}"
            );
        }
        // Calls whose response was committed are not made again.
        let committed = lines[..cut]
            .iter()
            .filter(|l| l.contains("\"event\":\"tool.responded\""))
            .count();
        assert_eq!(
            made.len(),
            all_keys.len() - committed,
            "cut after line {cut}"
        );
        // And the whole log replays without a difference.
        let replay = runtime.replay(&run).unwrap();
        assert_eq!(replay.difference, None, "cut after line {cut}");
        assert_eq!(replay.ended, Some("succeeded"));
    }
}

/// A run whose third step fails: after the tool is fixed, `runs retry` runs that step
/// again as attempt 2, and not the two before it.
#[test]
fn retry_runs_only_the_failed_step_and_what_follows() {
    let out =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let def = definition(
        json!({"a": tool(out.clone()), "b": tool(out.clone()), "c": tool(out.clone()), "t": tool(out)}),
        json!({"type": "object"}),
        json!({}),
    );
    let v = Version::new(
        json!({
            "steps": [
                {"id": "one", "kind": "tool.call", "tool": "a"},
                {"id": "two", "kind": "tool.call", "tool": "b", "args": {"n": "${ steps.one.output.n }"}},
                {"id": "three", "kind": "tool.call", "tool": "c", "args": {"n": "${ steps.two.output.n }"}},
                {"id": "four", "kind": "tool.call", "tool": "t", "args": {"n": "${ steps.three.output.n }"}}
            ],
            "output": "${ steps.four.output.n }"
        }),
        &def,
    );
    let fixed = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&fixed);
    let fake = Arc::new(
        Fake::new()
            .tool_json("a", |_| json!({"n": 1}))
            .tool_json("b", |a| json!({"n": a["n"].as_i64().unwrap() + 1}))
            .tool("c", move |call| {
                if f.load(Ordering::SeqCst) {
                    Ok(lwir_runtime::effects::ToolAnswer {
                        value: lwir_runtime::effects::ToolValue::Json(
                            json!({"n": call.args["n"].as_i64().unwrap() + 1}),
                        ),
                        is_error: false,
                    })
                } else {
                    Err(lwir_runtime::effects::EffectError::new(
                        Code::ToolCallFailed,
                        "broken",
                    ))
                }
            })
            .tool_json("t", |a| json!({"n": a["n"].as_i64().unwrap() * 10})),
    );
    let report = v.run(json!({}), &fake);
    let run = report.run.clone().unwrap();
    assert!(matches!(&report.status, Status::Failed { step: Some(s), .. } if s == "three"));
    assert_eq!(
        ["a", "b", "c", "t"].map(|t| fake.tool_calls(t)),
        [1, 1, 1, 0]
    );
    // Resume refuses a failed run.
    let runtime = v.runtime();
    let refused = resume_by_me(&runtime, &run, false, &fake);
    assert!(refused.is_err());

    fixed.store(true, Ordering::SeqCst);
    let retried = resume_by_me(&runtime, &run[..6], true, &fake).unwrap();
    assert_eq!(output(&retried), json!(30));
    assert_eq!(
        ["a", "b", "c", "t"].map(|t| fake.tool_calls(t)),
        [1, 1, 2, 1]
    );
    let events = v.events(&run);
    let attempts = step_starts(&events);
    assert_eq!(
        attempts,
        [
            ("one".into(), 1),
            ("two".into(), 1),
            ("three".into(), 1),
            ("three".into(), 2),
            ("four".into(), 1)
        ]
    );
    assert!(
        events
            .iter()
            .any(|(n, d)| n == "run.resumed" && d["mode"] == "retry" && d["by"] == "me")
    );
    // A succeeded run has nothing to retry; replay gives no difference.
    let again = resume_by_me(&runtime, &run, true, &fake).unwrap();
    assert_eq!(output(&again), json!(30));
    assert_eq!(fake.tool_calls("c"), 2);
    let replay = runtime.replay(&run).unwrap();
    assert_eq!(replay.difference, None);
    assert_eq!(replay.ended, Some("succeeded"));
}

/// A retry inside a map: the failed item's step runs again, the others' results are
/// kept.
#[test]
fn retry_inside_a_map_runs_only_the_failed_items() {
    let (v, input) = mapped(10);
    let broken = Arc::new(AtomicBool::new(true));
    let b = Arc::clone(&broken);
    let fake = Arc::new(Fake::new().tool_json("a", |_| json!({"k": 1000})).tool(
        "echo",
        move |call| {
            let x = call.args["x"].as_i64().unwrap();
            if x == 3 && b.load(Ordering::SeqCst) {
                return Err(lwir_runtime::effects::EffectError::new(
                    Code::ToolCallFailed,
                    "item 3 is broken",
                ));
            }
            Ok(lwir_runtime::effects::ToolAnswer {
                value: lwir_runtime::effects::ToolValue::Json(json!({"v": x + 1000})),
                is_error: false,
            })
        },
    ));
    let report = v.run(input, &fake);
    let run = report.run.clone().unwrap();
    let Status::Failed { step, .. } = &report.status else {
        panic!("{:?}", report.status)
    };
    assert_eq!(step.as_deref(), Some("each[3]/echo"));
    let before = fake.tool_calls("echo");
    assert_eq!(fake.tool_calls("a"), 1);
    let succeeded_before = v
        .events(&run)
        .iter()
        .filter(|(n, d)| {
            n == "step.succeeded" && d["step"].as_str().is_some_and(|s| s.ends_with("/echo"))
        })
        .count();
    broken.store(false, Ordering::SeqCst);
    let retried = resume_by_me(&v.runtime(), &run, true, &fake).unwrap();
    let out = output(&retried);
    assert_eq!(out["sum"], json!((0..10).map(|x| x + 1000).sum::<i64>()));
    // Item 3 once more, and the items that never started; none that succeeded.
    assert_eq!(fake.tool_calls("a"), 1);
    assert_eq!(fake.tool_calls("echo") - before, 10 - succeeded_before);
    assert_eq!(v.runtime().replay(&run).unwrap().difference, None);
}

/// Replay performs nothing and finds no difference in an untouched log; a recorded result
/// edited (and the chain recomputed, so that only replay can tell) is a difference at
/// that step; edited without the chain, the chain finds it.
#[test]
fn replay_performs_nothing_and_finds_edits() {
    let (v, input) = mapped(5);
    let fake = mapped_fake();
    let run = v.run(input, &fake).run.unwrap();
    let calls = fake.calls().len();
    let replay = v.runtime().replay(&run).unwrap();
    assert_eq!(replay.difference, None);
    assert_eq!(fake.calls().len(), calls, "replay called an effect");

    let path = v.store().root().join(&run).join("events.jsonl");
    let original = std::fs::read_to_string(&path).unwrap();
    // Change item 2's result: its `v` becomes 7.
    let edit = |line: &str| -> Option<String> {
        let mut e: Value = serde_json::from_str(line).unwrap();
        (e["event"] == "tool.responded" && e["data"]["step"] == "each[2]/echo").then(|| {
            e["data"]["result"]["v"] = json!(7);
            e.as_object_mut().unwrap().remove("chain");
            serde_json::to_string(&e).unwrap()
        })
    };
    // Edited in place: the chain no longer matches.
    let tampered: Vec<String> = original
        .lines()
        .map(|l| {
            edit(l).map_or_else(
                || l.to_owned(),
                |_| {
                    let mut e: Value = serde_json::from_str(l).unwrap();
                    e["data"]["result"]["v"] = json!(7);
                    serde_json::to_string(&e).unwrap()
                },
            )
        })
        .collect();
    std::fs::write(&path, tampered.join("\n") + "\n").unwrap();
    let err = v.runtime().replay(&run).unwrap_err();
    assert!(err.to_string().contains("chain hash"), "{err}");
    let verified = v.runtime().verify().unwrap();
    assert_eq!(verified.len(), 1);
    assert!(verified[0].1[0].contains("chain hash"), "{verified:?}");

    // Edited and re-chained: the chain is whole, and replay finds the difference.
    let mut previous = String::new();
    let mut rechained = Vec::new();
    for l in original.lines() {
        let line = edit(l).unwrap_or_else(|| {
            let mut e: Value = serde_json::from_str(l).unwrap();
            e.as_object_mut().unwrap().remove("chain");
            serde_json::to_string(&e).unwrap()
        });
        let event: lwir_runtime::log::Event = serde_json::from_str(&line).unwrap();
        let chain = lwir_repair::events::chain_of(&previous, &event);
        let mut e: Value = serde_json::from_str(&line).unwrap();
        e["chain"] = json!(chain);
        previous = chain;
        rechained.push(serde_json::to_string(&e).unwrap());
    }
    std::fs::write(&path, rechained.join("\n") + "\n").unwrap();
    let replay = v.runtime().replay(&run).unwrap();
    let d = replay.difference.expect("a difference");
    assert_eq!(d.step.as_deref(), Some("each[2]/echo"), "{d:?}");
    assert_eq!(d.event, "step.succeeded");
    assert_eq!(d.pointer, "/output/v");
    assert_eq!(
        (&d.recorded, &d.replayed),
        (&Some(json!(1002)), &Some(json!(7)))
    );
    assert_eq!(d.failure().code, Code::ReplayNondeterminism);
}

/// The idempotency key is a function of the run, the path and the attempt.
#[test]
fn idempotency_keys_are_deterministic() {
    let a = lwir_runtime::idempotency_key("r1", "each[3]/classify", 1, None);
    assert_eq!(
        a,
        lwir_runtime::idempotency_key("r1", "each[3]/classify", 1, None)
    );
    assert!(a.starts_with("lwir:") && a.len() == 5 + 32);
    assert_ne!(
        a,
        lwir_runtime::idempotency_key("r1", "each[3]/classify", 2, None)
    );
    assert_ne!(
        a,
        lwir_runtime::idempotency_key("r2", "each[3]/classify", 1, None)
    );
    assert_ne!(
        a,
        lwir_runtime::idempotency_key("r1", "each[3]/classify", 1, Some((1, 0)))
    );
}
