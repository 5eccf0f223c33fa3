//! Registering a draft in a temporary registry and running it with fake effects.

use std::sync::Mutex;
use std::time::SystemTime;

use lwir_registry::{Directory, Registered, Registration, Registry};
use lwir_runtime::bindings::Bindings;
use lwir_runtime::effects::Effects;
use lwir_runtime::effects::fake::Fake;
use lwir_runtime::{NewRun, Observer, OnDrift, Outcome, RunEvent, RunStore, Runtime};
use lwir_validators::pipeline::{self, Source};
use serde_json::{Value, json};

/// A definition with the tools `tools` (id → {input, output}), slots `fast` and `deep`,
/// and `input`/`output` schemas.
pub(crate) fn definition(tools: Value, input: Value, output: Value) -> Value {
    let tools: serde_json::Map<String, Value> = tools
        .as_object()
        .unwrap()
        .iter()
        .map(|(id, t)| {
            (
                id.clone(),
                json!({
                    "description": format!("the tool {id}"),
                    "input": t["input"],
                    "output": t["output"],
                }),
            )
        })
        .collect();
    json!({
        "name": "w",
        "input": input,
        "output": output,
        "models": {
            "fast": { "model": "acme/small", "quality": "standard", "capabilities": ["json_output", "tool_use"] },
            "deep": { "model": "acme/large", "quality": "high", "capabilities": ["json_output", "tool_use"] }
        },
        "tools": tools,
        "limits": { "max_steps": 200, "max_parallel": 64, "max_loop_iterations": 50 }
    })
}

/// A tool whose input is any object and whose output is `output`.
pub(crate) fn tool(output: Value) -> Value {
    json!({ "input": { "type": "object" }, "output": output })
}

/// A version registered in a registry of its own.
pub(crate) struct Version {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) registry: Registry<Directory>,
    pub(crate) version: String,
    tools: Vec<String>,
}

impl Version {
    /// Registers `draft` (its steps and output; `lwir` and `workflow` are added) against
    /// `definition`, which it must fit without errors.
    pub(crate) fn new(draft: Value, definition: &Value) -> Self {
        let mut draft = draft;
        draft["lwir"] = json!("1");
        draft["workflow"] = json!("w");
        let source = |name: &str, v: &Value| Source {
            name: name.to_owned(),
            bytes: serde_json::to_vec_pretty(v).unwrap(),
        };
        let validation = pipeline::compile(
            source("draft.json", &draft),
            Some(source("workflow.json", definition)),
        );
        let errors: Vec<String> = validation
            .findings
            .iter()
            .filter(|f| f.is_error())
            .map(|f| format!("{} {} {}", f.code, f.pointer, f.message))
            .collect();
        assert!(
            errors.is_empty(),
            "the draft does not validate: {errors:#?}"
        );
        let registration = Registration::new(&validation, SystemTime::now()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::at(dir.path().join("registry"));
        let version = match registry.register(&registration, false).unwrap() {
            Registered::New(entry) => entry.version.to_string(),
            other => panic!("{other:?}"),
        };
        Self {
            dir,
            registry,
            version,
            tools: definition["tools"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect(),
        }
    }

    /// Bindings that bind every tool of the definition and every slot (the fake answers
    /// them all).
    pub(crate) fn bindings(&self) -> Bindings {
        let tools: serde_json::Map<String, Value> = self
            .tools
            .iter()
            .map(|t| (t.clone(), json!({ "command": ["unused"] })))
            .collect();
        let text = json!({
            "bindings": "lwir.bindings/1",
            "tools": tools,
            "models": { "*": { "command": ["unused"] } }
        });
        lwir_runtime::bindings::read(serde_json::to_vec(&text).unwrap())
            .bindings
            .unwrap()
    }

    pub(crate) fn store(&self) -> RunStore {
        RunStore::new(self.dir.path().join("runs"))
    }

    pub(crate) fn runtime(&self) -> Runtime<'_, Directory> {
        Runtime::new(self.store(), &self.registry)
    }

    /// Runs the version with `input` and `effects`, at most `max_parallel` at once.
    pub(crate) fn run_with(
        &self,
        input: Value,
        effects: &std::sync::Arc<Fake>,
        max_parallel: usize,
        observer: &dyn Observer,
    ) -> Outcome {
        let input = document(&input);
        let bindings = self.bindings();
        let fake = std::sync::Arc::clone(effects);
        let effects_for = move |_: &Bindings| -> Box<dyn Effects> { Box::new(fake.clone()) };
        self.runtime()
            .start(
                &NewRun {
                    version: &self.version,
                    input: &input,
                    bindings: &bindings,
                    bindings_document: None,
                    definition: None,
                    max_parallel,
                    on_drift: OnDrift::Fail,
                },
                &effects_for,
                observer,
            )
            .unwrap()
    }

    /// Runs the version with `input` and `effects`, four at once.
    pub(crate) fn run(&self, input: Value, effects: &std::sync::Arc<Fake>) -> Outcome {
        self.run_with(input, effects, 4, &Events::default())
    }

    /// The events of run `run`, as `(name, data)`.
    pub(crate) fn events(&self, run: &str) -> Vec<(String, Value)> {
        self.store()
            .read(run)
            .unwrap()
            .raw
            .into_iter()
            .map(|e| (e.event, e.data))
            .collect()
    }
}

/// `value` as a spanned document.
pub(crate) fn document(value: &Value) -> lwir_spec::SpannedDocument {
    lwir_spec::document::read(serde_json::to_vec_pretty(value).unwrap())
        .document
        .unwrap()
}

/// An observer that keeps every event.
#[derive(Default)]
pub(crate) struct Events(pub(crate) Mutex<Vec<(RunEvent, bool)>>);

impl Observer for Events {
    fn event(&self, event: &RunEvent, fresh: bool) {
        self.0.lock().unwrap().push((event.clone(), fresh));
    }
}

/// The output of a run that must have succeeded.
/// The `step.started` events of a run's log, as (step, attempt), in order.
pub(crate) fn step_starts(events: &[(String, Value)]) -> Vec<(String, u64)> {
    events
        .iter()
        .filter(|(n, _)| n == "step.started")
        .map(|(_, d)| {
            (
                d["step"].as_str().unwrap().to_owned(),
                d["attempt"].as_u64().unwrap(),
            )
        })
        .collect()
}

pub(crate) fn output(report: &Outcome) -> Value {
    match &report.status {
        lwir_runtime::Status::Succeeded { output } => output.clone(),
        other => panic!("the run did not succeed: {other:#?}"),
    }
}

/// The failure of a run that must have failed: (step, code, error, pointer, keyword).
pub(crate) fn failure(
    report: &Outcome,
) -> (
    Option<String>,
    String,
    String,
    Option<String>,
    Option<String>,
) {
    match &report.status {
        lwir_runtime::Status::Failed { step, failure } => (
            step.clone(),
            failure.code.as_str().to_owned(),
            failure.error.clone(),
            failure.pointer.clone(),
            failure.keyword.clone(),
        ),
        other => panic!("the run did not fail: {other:#?}"),
    }
}
