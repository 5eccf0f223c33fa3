//! A registration record written before lwirc kept the tools' schemas and the interface:
//! its runs need the definition it was compiled against, and record what they took.

use std::sync::Arc;
use std::time::SystemTime;

use lwir_registry::{Registered, Registration, Registry};
use lwir_runtime::bindings::Bindings;
use lwir_runtime::effects::Effects;
use lwir_runtime::effects::fake::Fake;
use lwir_runtime::{Continue, NewRun, OnDrift, RunError, RunStore, Runtime};
use lwir_validators::pipeline::{self, Source};
use serde_json::{Value, json};

use crate::common::{Events, document, output};

#[test]
fn an_old_record_runs_with_the_definition_it_was_compiled_against() {
    let def = json!({
        "name": "w", "input": {"type": "object", "required": ["n"]}, "output": {},
        "models": {},
        "tools": {"t": {"description": "t", "input": {"type": "object"},
                        "output": {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]}}}
    });
    let draft = json!({"lwir": "1", "workflow": "w",
        "steps": [{"id": "t", "kind": "tool.call", "tool": "t", "args": {"n": "${ input.n }"}}],
        "output": "${ steps.t.output.v }"});
    let source = |v: &Value| Source {
        name: "x.json".into(),
        bytes: serde_json::to_vec(v).unwrap(),
    };
    let validation = pipeline::compile(source(&draft), Some(source(&def)));
    let mut registration = Registration::new(&validation, SystemTime::now()).unwrap();
    let kept = registration
        .record
        .tools
        .as_ref()
        .expect("a new record keeps the schemas");
    assert_eq!(kept["t"].output, def["tools"]["t"]["output"]);
    assert_eq!(kept["t"].description, json!("t"));
    registration.record.tools = None;
    registration.record.interface = None;
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::at(dir.path().join("registry"));
    let Registered::New(entry) = registry.register(&registration, false).unwrap() else {
        panic!()
    };
    let version = entry.version.to_string();
    let runtime = Runtime::new(RunStore::new(dir.path().join("runs")), &registry);
    let fake = Arc::new(Fake::new().tool_json("t", |a| json!({"v": a["n"].as_i64().unwrap() + 1})));
    let f = Arc::clone(&fake);
    let effects_for = move |_: &Bindings| -> Box<dyn Effects> { Box::new(f.clone()) };
    let bindings = lwir_runtime::bindings::read(
        br#"{"bindings": "lwir.bindings/1", "tools": {"t": {"command": ["x"]}}}"#.to_vec(),
    )
    .bindings
    .unwrap();
    let input = document(&json!({"n": 41}));
    let start = |definition: Option<&lwir_spec::SpannedDocument>| {
        runtime.start(
            &NewRun {
                version: &version,
                input: &input,
                bindings: &bindings,
                bindings_document: None,
                definition,
                max_parallel: 2,
                on_drift: OnDrift::Fail,
            },
            &effects_for,
            &Events::default(),
        )
    };
    let err = start(None).expect_err("refused without -d");
    assert!(matches!(err, RunError::NotRunnable { .. }), "{err}");
    assert!(err.to_string().contains("-d WORKFLOW"), "{err}");
    // A definition whose tool changed is refused, naming it.
    let mut changed = def.clone();
    changed["tools"]["t"]["output"]["required"] = json!([]);
    let err = start(Some(&document(&changed))).expect_err("refused");
    assert!(err.to_string().contains("tool `t` differs"), "{err}");
    // The right one: the run goes, its input checked against the definition's input.
    let report = start(Some(&document(&def))).unwrap();
    assert_eq!(output(&report), json!(42));
    // Its log holds the schemas: replay and resume need no definition.
    let run = report.run.unwrap();
    assert_eq!(runtime.replay(&run).unwrap().difference, None);
    let again = runtime
        .resume(
            &run,
            false,
            &Continue::by("t"),
            &effects_for,
            &Events::default(),
        )
        .unwrap();
    assert_eq!(output(&again), json!(42));
}
