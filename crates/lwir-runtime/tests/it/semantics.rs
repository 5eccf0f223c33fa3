//! Every step kind, run with fake effects: what it does, what it records.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lwir_runtime::effects::fake::Fake;
use lwir_runtime::effects::{EffectError, ModelAnswer, ModelToolCall};
use lwir_runtime::{MAX_MODEL_ROUNDS, Status};
use lwir_spec::Code;
use serde_json::{Value, json};

use crate::common::{Version, definition, failure, output, step_starts, tool};

fn obj() -> Value {
    json!({"type": "object"})
}

/// Steps wait for the steps they read; the workflow's output reads the last.
/// Asserts that the run failed at (step, code, pointer, keyword); its error message.
#[track_caller]
fn fails_at(
    report: &lwir_runtime::Outcome,
    at: (Option<&str>, &str, Option<&str>, Option<&str>),
) -> String {
    let (step, code, error, pointer, keyword) = failure(report);
    assert_eq!(
        (
            step.as_deref(),
            code.as_str(),
            pointer.as_deref(),
            keyword.as_deref()
        ),
        at
    );
    error
}

#[test]
fn dependencies_order_steps_and_the_output_is_checked() {
    let n = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let def = definition(
        json!({"a": tool(n.clone()), "b": tool(n)}),
        obj(),
        json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}),
    );
    let v = Version::new(
        json!({
            "steps": [
                {"id": "x", "kind": "tool.call", "tool": "a", "after": ["a"], "args": {"x": 2}},
                {"id": "a", "kind": "tool.call", "tool": "a", "args": {"x": 1}},
                {"id": "b", "kind": "tool.call", "tool": "b", "args": {"n": "${ steps.a.output.n }"}}
            ],
            "output": "${ {'sum': steps.b.output.n} }"
        }),
        &def,
    );
    let fake = Arc::new(
        Fake::new()
            .tool_json("a", |_| json!({"n": 2}))
            .tool_json("b", |args| json!({"n": args["n"].as_i64().unwrap() * 10})),
    );
    let report = v.run(json!({}), &fake);
    assert_eq!(output(&report), json!({"sum": 20}));
    let order: Vec<String> = fake
        .calls()
        .iter()
        .map(|c| match c {
            lwir_runtime::effects::fake::Called::Tool(t) => t.tool.clone(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(order[0], "a");
    assert_eq!(order.len(), 3);
    // `x` waits for `a` though it comes first; `b` reads `a`.
    let calls = fake.calls();
    let first = match &calls[0] {
        lwir_runtime::effects::fake::Called::Tool(t) => t.args.clone(),
        _ => Value::Null,
    };
    assert_eq!(first, json!({"x": 1}));
    let events = v.events(report.run.as_deref().unwrap());
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"run.started"));
    assert_eq!(names.last(), Some(&"run.succeeded"));
    assert!(report.stats.fsyncs <= report.stats.events);
}

/// `when` false: the step is skipped, its output absent, and `has()` says so — as for
/// every step of a branch case not taken.
#[test]
fn skipped_steps_and_cases_not_taken_have_no_output() {
    let n = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let def = definition(
        json!({"a": tool(n), "t": tool(obj()), "r": tool(obj())}),
        obj(),
        obj(),
    );
    let v = Version::new(
        json!({
            "steps": [
                {"id": "a", "kind": "tool.call", "tool": "a"},
                {"id": "s", "kind": "tool.call", "tool": "t", "when": "${ steps.a.output.n > 5 }"},
                {"id": "br", "kind": "branch",
                 "cases": [
                    {"when": "${ steps.a.output.n > 10 }", "steps": [{"id": "big", "kind": "tool.call", "tool": "t"}]},
                    {"when": "${ steps.a.output.n > 5 }", "steps": [{"id": "mid", "kind": "tool.call", "tool": "t"}]}
                 ],
                 "default": [{"id": "low", "kind": "tool.call", "tool": "t"}]},
                {"id": "r", "kind": "tool.call", "tool": "r", "after": ["br", "s"],
                 "args": {"s": "${ has(steps.s.output) }", "big": "${ has(steps.big.output) }",
                          "mid": "${ has(steps.mid.output) }", "low": "${ has(steps.low.output) }"}}
            ],
            "output": "${ steps.r.output }"
        }),
        &def,
    );
    for (n, expected, case) in [
        (
            1,
            json!({"s": false, "big": false, "mid": false, "low": true}),
            json!("default"),
        ),
        (
            7,
            json!({"s": true, "big": false, "mid": true, "low": false}),
            json!(1),
        ),
        (
            20,
            json!({"s": true, "big": true, "mid": false, "low": false}),
            json!(0),
        ),
    ] {
        let fake = Arc::new(
            Fake::new()
                .tool_json("a", move |_| json!({"n": n}))
                .tool_json("t", |_| json!({}))
                .tool_json("r", Value::clone),
        );
        let report = v.run(json!({}), &fake);
        assert_eq!(output(&report), expected, "n = {n}");
        let events = v.events(report.run.as_deref().unwrap());
        let skipped = events
            .iter()
            .filter(|(name, _)| name == "step.skipped")
            .count();
        assert_eq!(skipped, usize::from(n <= 5), "n = {n}");
        let branch = events
            .iter()
            .find(|(name, d)| name == "step.started" && d["step"] == "br")
            .unwrap();
        assert_eq!(branch.1["case"], case);
        // Steps of cases not taken have no event at all.
        let not_taken = ["big", "mid", "low"]
            .into_iter()
            .filter(|s| expected[*s] == false)
            .collect::<Vec<_>>();
        for s in not_taken {
            assert!(!events.iter().any(|(_, d)| d["step"] == s), "{s} (n = {n})");
        }
    }
}

/// A loop runs until `until` holds; its steps' paths carry the iteration; past
/// `max_iterations` the loop fails with LW1107.
#[test]
fn loops_until_and_fail_when_exhausted() {
    let done = json!({"type": "object", "properties": {"done": {"type": "boolean"}}, "required": ["done"]});
    let def = definition(json!({"check": tool(done)}), obj(), json!({}));
    for (max, calls_to_done, ok) in [(5, 3, true), (2, 3, false)] {
        let v = Version::new(
            json!({
                "steps": [
                    {"id": "poll", "kind": "loop", "max_iterations": max,
                     "steps": [{"id": "check", "kind": "tool.call", "tool": "check"}],
                     "until": "${ steps.check.output.done }"}
                ]
            }),
            &def,
        );
        let count = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&count);
        let fake = Arc::new(Fake::new().tool_json(
            "check",
            move |_| json!({"done": c.fetch_add(1, Ordering::SeqCst) + 1 >= calls_to_done}),
        ));
        let report = v.run(json!({}), &fake);
        let events = v.events(report.run.as_deref().unwrap());
        let paths: Vec<String> = events
            .iter()
            .filter(|(n, _)| n == "tool.called")
            .map(|(_, d)| d["step"].as_str().unwrap().to_owned())
            .collect();
        if ok {
            assert_eq!(output(&report), Value::Null);
            assert_eq!(paths, ["poll#1/check", "poll#2/check", "poll#3/check"]);
            let untils: Vec<&Value> = events
                .iter()
                .filter(|(n, d)| n == "step.succeeded" && d.get("until").is_some())
                .map(|(_, d)| &d["until"])
                .collect();
            assert_eq!(untils, [&json!(false), &json!(false), &json!(true)]);
        } else {
            let (step, code, error, ..) = failure(&report);
            assert_eq!((step.as_deref(), code.as_str()), (Some("poll"), "LW1107"));
            assert!(error.contains("2 iterations"), "{error}");
            assert_eq!(paths, ["poll#1/check", "poll#2/check"]);
        }
    }
}

/// `retry.max_attempts` bounds attempts; each has its number in the log.
#[test]
fn retries_count_attempts() {
    let def = definition(json!({"flaky": tool(obj())}), obj(), obj());
    for (attempts, fails, ok) in [(3, 2, true), (2, 2, false)] {
        let v = Version::new(
            json!({
                "steps": [{"id": "f", "kind": "tool.call", "tool": "flaky", "retry": {"max_attempts": attempts}}],
                "output": "${ steps.f.output }"
            }),
            &def,
        );
        let count = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&count);
        let fake = Arc::new(Fake::new().tool("flaky", move |_| {
            if c.fetch_add(1, Ordering::SeqCst) < fails {
                Err(EffectError::new(Code::ToolCallFailed, "not now"))
            } else {
                Ok(lwir_runtime::effects::ToolAnswer {
                    value: lwir_runtime::effects::ToolValue::Json(json!({"ok": true})),
                    is_error: false,
                })
            }
        }));
        let report = v.run(json!({}), &fake);
        let events = v.events(report.run.as_deref().unwrap());
        let started: Vec<u64> = events
            .iter()
            .filter(|(n, _)| n == "step.started")
            .map(|(_, d)| d["attempt"].as_u64().unwrap())
            .collect();
        let keys: std::collections::BTreeSet<&str> = events
            .iter()
            .filter(|(n, _)| n == "tool.called")
            .map(|(_, d)| d["idempotency_key"].as_str().unwrap())
            .collect();
        if ok {
            assert_eq!(output(&report), json!({"ok": true}));
            assert_eq!(started, [1, 2, 3]);
            assert_eq!(keys.len(), 3, "each attempt has its own key");
        } else {
            let (step, code, error, ..) = failure(&report);
            assert_eq!((step.as_deref(), code.as_str()), (Some("f"), "LW1104"));
            assert!(error.contains("not now"));
            assert_eq!(started, [1, 2]);
        }
    }
}

/// A map's results are in the order of its list, whatever order its items finish in; at
/// most `max_parallel` run at once (the run's and the map's).
#[test]
fn map_results_keep_their_order_and_parallelism_is_bounded() {
    let list = json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
                      "required": ["items"]});
    let v_out =
        json!({"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]});
    let def = definition(
        json!({"list": tool(list), "slow": tool(v_out)}),
        obj(),
        json!({}),
    );
    for (map_parallel, run_parallel, bound) in [(16, 4, 4), (2, 8, 2)] {
        let v = Version::new(
            json!({
                "steps": [
                    {"id": "items", "kind": "tool.call", "tool": "list"},
                    {"id": "each", "kind": "map", "over": "${ steps.items.output.items }", "as": "x",
                     "max_parallel": map_parallel,
                     "steps": [{"id": "slow", "kind": "tool.call", "tool": "slow", "args": {"x": "${ x }"}}],
                     "result": "${ steps.slow.output.v }"}
                ],
                "output": "${ steps.each.output }"
            }),
            &def,
        );
        let now = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (n2, p2) = (Arc::clone(&now), Arc::clone(&peak));
        let fake = Arc::new(
            Fake::new()
                .tool_json("list", |_| json!({"items": (0..20).collect::<Vec<i64>>()}))
                .tool_json("slow", move |args| {
                    let running = n2.fetch_add(1, Ordering::SeqCst) + 1;
                    p2.fetch_max(running, Ordering::SeqCst);
                    let x = args["x"].as_i64().unwrap();
                    // Later items finish first.
                    std::thread::sleep(Duration::from_millis(u64::try_from(20 - x).unwrap()));
                    n2.fetch_sub(1, Ordering::SeqCst);
                    json!({"v": x * x})
                }),
        );
        let report = v.run_with(
            json!({}),
            &fake,
            run_parallel,
            &crate::common::Events::default(),
        );
        let expected: Vec<i64> = (0..20).map(|x| x * x).collect();
        assert_eq!(output(&report), json!(expected));
        let peak = peak.load(Ordering::SeqCst);
        assert!(peak <= bound && peak >= 2, "peak {peak}, bound {bound}");
        // Group commit: fewer syncs than events.
        assert!(
            report.stats.fsyncs < report.stats.events,
            "{:?}",
            report.stats
        );
    }
}

/// `reduce` folds its list with `with`, `acc` and `as` bound.
#[test]
fn reduce_folds() {
    let list = json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
                      "required": ["items"]});
    let def = definition(json!({"list": tool(list)}), obj(), json!({}));
    let v = Version::new(
        json!({
            "steps": [
                {"id": "items", "kind": "tool.call", "tool": "list"},
                {"id": "sum", "kind": "reduce", "over": "${ steps.items.output.items }", "init": 100,
                 "acc": "n", "as": "x", "with": "${ n + x }"},
                {"id": "none", "kind": "reduce", "over": "${ [] }", "init": "start", "acc": "s", "as": "x",
                 "with": "${ s + 'x' }"}
            ],
            "output": "${ [steps.sum.output, steps.none.output] }"
        }),
        &def,
    );
    let fake = Arc::new(Fake::new().tool_json("list", |_| json!({"items": [1, 2, 3, 4]})));
    assert_eq!(output(&v.run(json!({}), &fake)), json!([110, "start"]));
}

/// Values that do not fit their schema fail the step with the pointer into the value and
/// the keyword: a tool's result, a model's answer, a tool's arguments typed `dyn`, the
/// workflow's output.
#[test]
fn values_outside_their_schema_fail_with_pointer_and_keyword() {
    let ok =
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    let strict_in = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                           "additionalProperties": false});
    let def = definition(
        json!({"t": tool(ok), "a": {"input": strict_in, "output": {}}}),
        json!({}),
        json!({"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}),
    );
    // A tool's result.
    let v = Version::new(
        json!({"steps": [{"id": "t", "kind": "tool.call", "tool": "t"}]}),
        &def,
    );
    let fake = Arc::new(Fake::new().tool_json("t", |_| json!({"ok": "yes"})));
    let error = fails_at(
        &v.run(json!({}), &fake),
        (Some("t"), "LW1102", Some("/ok"), Some("type")),
    );
    assert!(error.contains("the result of tool `t`"), "{error}");

    // A model's answer.
    let v = Version::new(
        json!({"steps": [{"id": "classify", "kind": "model.call", "model": "fast", "prompt": "label it",
            "output": {"type": "object", "properties": {"label": {"enum": ["bug", "feature"]}}, "required": ["label"]}}]}),
        &def,
    );
    let fake = Arc::new(Fake::new().model_text("fast", |_| "{\"label\": \"urgent\"}".into()));
    let error = fails_at(
        &v.run(json!({}), &fake),
        (Some("classify"), "LW1102", Some("/label"), Some("enum")),
    );
    assert!(error.contains("model slot `fast`"), "{error}");

    // Arguments the checker could only type `dyn` (the input schema is `{}`): the tool is
    // not called.
    let v = Version::new(
        json!({"steps": [{"id": "a", "kind": "tool.call", "tool": "a", "args": {"n": "${ input.n }"}}]}),
        &def,
    );
    let fake = Arc::new(Fake::new().tool_json("a", |_| json!({"summary": "s"})));
    let (_, code, _, pointer, keyword) = failure(&v.run(json!({"n": "seven"}), &fake));
    assert_eq!(
        (code.as_str(), pointer.as_deref(), keyword.as_deref()),
        ("LW1102", Some("/n"), Some("type"))
    );
    assert_eq!(fake.tool_calls("a"), 0);
    // The same with a fitting value runs, and its output must fit the workflow's.
    let v = Version::new(
        json!({"steps": [{"id": "a", "kind": "tool.call", "tool": "a", "args": {"n": "${ input.n }"}}],
               "output": "${ steps.a.output }"}),
        &def,
    );
    let fake = Arc::new(Fake::new().tool_json("a", |_| json!({"title": "s"})));
    let (step, code, error, pointer, keyword) = failure(&v.run(json!({"n": 7}), &fake));
    assert_eq!(
        (step, code.as_str(), pointer.as_deref(), keyword.as_deref()),
        (None, "LW1102", Some(""), Some("required"))
    );
    assert!(error.contains("the workflow's output"), "{error}");
    let fake = Arc::new(Fake::new().tool_json("a", |_| json!({"summary": "s"})));
    assert_eq!(
        output(&v.run(json!({"n": 7}), &fake)),
        json!({"summary": "s"})
    );
}

/// An input that breaks the input schema: findings at pointers into it, nothing called,
/// nothing recorded.
#[test]
fn a_bad_input_is_refused_with_findings() {
    let def = definition(
        json!({"t": tool(obj())}),
        json!({"type": "object", "properties": {"repo": {"type": "string", "pattern": "^[^/]+/[^/]+$"},
                                                "n": {"type": "integer"}},
               "required": ["repo"], "additionalProperties": false}),
        json!({}),
    );
    let v = Version::new(
        json!({"steps": [{"id": "t", "kind": "tool.call", "tool": "t"}]}),
        &def,
    );
    let fake = Arc::new(Fake::new().tool_json("t", |_| json!({})));
    let report = v.run(json!({"repo": "widgets", "n": "x", "extra": 1}), &fake);
    let Status::Refused {
        input: true,
        findings,
    } = &report.status
    else {
        panic!("{:?}", report.status);
    };
    let mut found: Vec<(String, &str)> = findings
        .iter()
        .map(|f| (f.pointer.clone(), f.code.as_str()))
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("".to_owned(), "LW1101"),
            ("/n".to_owned(), "LW1101"),
            ("/repo".to_owned(), "LW1101")
        ]
    );
    assert!(findings.iter().any(|f| f.message.contains("`pattern`")));
    assert!(report.run.is_none());
    assert_eq!(fake.calls().len(), 0);
    assert!(v.store().ids().unwrap().is_empty());
}

/// Paths compose: step `fetch` of iteration 2 of loop `poll` of item 1 of map `outer`.
#[test]
fn step_paths_compose() {
    let done = json!({"type": "object", "properties": {"done": {"type": "boolean"}}, "required": ["done"]});
    let def = definition(json!({"fetch": tool(done)}), obj(), json!({}));
    let v = Version::new(
        json!({
            "steps": [
                {"id": "outer", "kind": "map", "over": "${ [10, 20] }", "as": "x",
                 "steps": [
                    {"id": "poll", "kind": "loop", "max_iterations": 3,
                     "steps": [{"id": "fetch", "kind": "tool.call", "tool": "fetch", "args": {"x": "${ x }"}}],
                     "until": "${ steps.fetch.output.done }"}
                 ],
                 "result": "${ x }"}
            ],
            "output": "${ steps.outer.output }"
        }),
        &def,
    );
    let seen = Arc::new(std::sync::Mutex::new(
        std::collections::HashMap::<i64, usize>::new(),
    ));
    let s = Arc::clone(&seen);
    let fake = Arc::new(Fake::new().tool_json("fetch", move |args| {
        let mut seen = s.lock().unwrap();
        let n = seen.entry(args["x"].as_i64().unwrap()).or_default();
        *n += 1;
        json!({"done": *n >= 2})
    }));
    let report = v.run(json!({}), &fake);
    assert_eq!(output(&report), json!([10, 20]));
    let events = v.events(report.run.as_deref().unwrap());
    let mut paths: Vec<&str> = events
        .iter()
        .filter(|(n, _)| n == "tool.called")
        .map(|(_, d)| d["step"].as_str().unwrap())
        .collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        [
            "outer[0]/poll#1/fetch",
            "outer[0]/poll#2/fetch",
            "outer[1]/poll#1/fetch",
            "outer[1]/poll#2/fetch"
        ]
    );
}

/// A model's tool loop goes through the bindings' tools and back; one that never ends is
/// bounded.
#[test]
fn model_tool_loops_are_bounded() {
    let echo_out =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    let def = definition(json!({"echo": tool(echo_out)}), obj(), json!({}));
    let v = Version::new(
        json!({
            "steps": [{"id": "ask", "kind": "model.call", "model": "deep", "prompt": "use echo", "tools": ["echo"],
                       "output": {"type": "object", "properties": {"said": {"type": "string"}}, "required": ["said"]}}],
            "output": "${ steps.ask.output }"
        }),
        &def,
    );
    let call = |n: usize| ModelAnswer {
        content: None,
        tool_calls: vec![ModelToolCall {
            id: format!("c{n}"),
            name: "echo".into(),
            arguments: json!({"text": "hi"}),
        }],
        ..ModelAnswer::default()
    };
    // One round of tools, then an answer built from the tool's result.
    let fake = Arc::new(
        Fake::new()
            .tool_json(
                "echo",
                |args| json!({"text": format!("Echo: {}", args["text"].as_str().unwrap())}),
            )
            .model("deep", move |m| {
                let messages = m.request["messages"].as_array().unwrap();
                match messages.iter().rev().find(|x| x["role"] == "tool") {
                    None => Ok(call(1)),
                    Some(result) => {
                        let said: Value =
                            serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
                        Ok(ModelAnswer {
                            content: Some(json!({"said": said["text"]}).to_string()),
                            ..ModelAnswer::default()
                        })
                    }
                }
            }),
    );
    let report = v.run(json!({}), &fake);
    assert_eq!(output(&report), json!({"said": "Echo: hi"}));
    assert_eq!((fake.model_calls(), fake.tool_calls("echo")), (2, 1));

    // A model that always asks for another call.
    let fake = Arc::new(
        Fake::new()
            .tool_json("echo", |_| json!({"text": "again"}))
            .model("deep", move |_| Ok(call(0))),
    );
    let report = v.run(json!({}), &fake);
    let (step, code, error, ..) = failure(&report);
    assert_eq!((step.as_deref(), code.as_str()), (Some("ask"), "LW1105"));
    assert!(error.contains("rounds"), "{error}");
    assert_eq!(fake.model_calls(), MAX_MODEL_ROUNDS as usize);
    assert_eq!(fake.tool_calls("echo"), MAX_MODEL_ROUNDS as usize - 1);
    let events = v.events(report.run.as_deref().unwrap());
    let keys: std::collections::BTreeSet<&str> = events
        .iter()
        .filter(|(n, _)| n == "tool.called")
        .map(|(_, d)| d["idempotency_key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), MAX_MODEL_ROUNDS as usize - 1);
}

/// `code.run` goes through the effects like the rest; its standard output is its result.
#[test]
fn code_runs_through_its_effect() {
    let def = definition(json!({}), obj(), json!({}));
    let v = Version::new(
        json!({
            "steps": [{"id": "c", "kind": "code.run", "language": "python", "body": "print(1)",
                       "input": "${ input }",
                       "output": {"type": "object", "properties": {"doubled": {"type": "integer"}}, "required": ["doubled"]}}],
            "output": "${ steps.c.output.doubled }"
        }),
        &def,
    );
    let fake = Arc::new(Fake::new().code(|run| {
        Ok(lwir_runtime::effects::CodeOutcome {
            exit_status: Some(0),
            stdout: json!({"doubled": run.input["n"].as_i64().unwrap() * 2}).to_string(),
            ..Default::default()
        })
    }));
    assert_eq!(output(&v.run(json!({"n": 21}), &fake)), json!(42));
    let fake = Arc::new(Fake::new().code(|_| {
        Ok(lwir_runtime::effects::CodeOutcome {
            exit_status: Some(1),
            stderr: "Traceback: boom".into(),
            ..Default::default()
        })
    }));
    let (_, code, error, ..) = failure(&v.run(json!({"n": 1}), &fake));
    assert_eq!(code, "LW1106");
    assert!(error.contains("boom"), "{error}");
}

/// `retry` on a map runs its body again: the failed item's step gets a new attempt, the
/// items that succeeded keep their results.
#[test]
fn a_map_retry_runs_only_its_failed_items_again() {
    let v_out =
        json!({"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]});
    let def = definition(json!({"flaky": tool(v_out)}), obj(), json!({}));
    let v = Version::new(
        json!({
            "steps": [
                {"id": "each", "kind": "map", "over": "${ [1, 2, 3, 4] }", "as": "x", "retry": {"max_attempts": 2},
                 "steps": [{"id": "f", "kind": "tool.call", "tool": "flaky", "args": {"x": "${ x }"}}],
                 "result": "${ steps.f.output.v }"}
            ],
            "output": "${ steps.each.output }"
        }),
        &def,
    );
    let failed_once = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&failed_once);
    let fake = Arc::new(Fake::new().tool("flaky", move |call| {
        let x = call.args["x"].as_i64().unwrap();
        if x == 3 && c.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err(EffectError::new(Code::ToolCallFailed, "once"));
        }
        Ok(lwir_runtime::effects::ToolAnswer {
            value: lwir_runtime::effects::ToolValue::Json(json!({"v": x * 10})),
            is_error: false,
        })
    }));
    let report = v.run_with(json!({}), &fake, 1, &crate::common::Events::default());
    assert_eq!(output(&report), json!([10, 20, 30, 40]));
    let events = v.events(report.run.as_deref().unwrap());
    let starts = step_starts(&events);
    // With one slot, items 1 and 2 succeeded before 3 failed; 4 never started in attempt 1.
    assert_eq!(
        starts,
        [
            ("each".to_owned(), 1),
            ("each[0]/f".to_owned(), 1),
            ("each[1]/f".to_owned(), 1),
            ("each[2]/f".to_owned(), 1),
            ("each".to_owned(), 2),
            ("each[2]/f".to_owned(), 2),
            ("each[3]/f".to_owned(), 1),
        ]
    );
    assert_eq!(fake.tool_calls("flaky"), 5);
    assert_eq!(
        v.runtime()
            .replay(report.run.as_deref().unwrap())
            .unwrap()
            .difference,
        None
    );
}
