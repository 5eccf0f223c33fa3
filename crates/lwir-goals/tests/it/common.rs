//! What the goal tests share: a catalog of templates held in memory, a store in a temporary
//! directory, scripted planners and reviewers, and goal files to start from.
#![allow(dead_code, unreachable_pub)]

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Mutex;

use lwir_goals::agent::{Agent, CallFailure};
use lwir_goals::catalog::{Template, TemplateError, Templates};
use lwir_goals::goal::Goals;
use lwir_goals::store::Directory;
use lwir_repair::harness::FailureKind;
use serde_json::{Value, json};

pub const NOTES: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
pub const NOTES_CACHED: &str =
    "sha256:2222222222222222222222222222222222222222222222222222222222222222";
pub const PUBLISH: &str = "sha256:3333333333333333333333333333333333333333333333333333333333333333";
pub const MIRROR: &str = "sha256:4444444444444444444444444444444444444444444444444444444444444444";
pub const UNREGISTERED: &str =
    "sha256:5555555555555555555555555555555555555555555555555555555555555555";
pub const CORRUPT: &str = "sha256:6666666666666666666666666666666666666666666666666666666666666666";
pub const NO_INTERFACE: &str =
    "sha256:7777777777777777777777777777777777777777777777777777777777777777";

/// Templates in memory; `tampered` makes a version stop verifying (as a flipped byte in a
/// registry would).
#[derive(Default)]
pub struct Catalog {
    pub tampered: Mutex<Vec<String>>,
    /// Versions this registry does not have (another `--registry`, say).
    pub missing: Mutex<Vec<String>>,
}

fn notes_input() -> Value {
    json!({
        "type": "object",
        "properties": { "repo": { "type": "string" }, "since": { "type": "string" } },
        "required": ["repo"],
        "additionalProperties": false
    })
}

fn notes_output() -> Value {
    json!({
        "type": "object",
        "properties": { "notes": { "type": "string" }, "count": { "type": "integer", "minimum": 0 } },
        "required": ["notes", "count"]
    })
}

impl Templates for Catalog {
    fn template(&self, version: &str) -> Result<Template, TemplateError> {
        if self.tampered.lock().unwrap().iter().any(|v| v == version) || version == CORRUPT {
            return Err(TemplateError::Corrupt {
                version: version.into(),
                detail: "objects/sha256/… does not hash to its name".into(),
            });
        }
        if self.missing.lock().unwrap().iter().any(|v| v == version) {
            return Err(TemplateError::NotRegistered {
                version: version.into(),
                registry: "another registry".into(),
            });
        }
        let (workflow, input, output) = match version {
            NOTES => ("notes", notes_input(), notes_output()),
            NOTES_CACHED => ("notes-cached", notes_input(), notes_output()),
            PUBLISH => (
                "publish",
                json!({
                    "type": "object",
                    "properties": { "text": { "type": "string" }, "count": { "type": "integer" } },
                    "required": ["text"],
                    "additionalProperties": false
                }),
                json!({ "type": "object", "properties": { "url": { "type": "string" } }, "required": ["url"] }),
            ),
            MIRROR => ("mirror-log", Value::Null, Value::Null),
            NO_INTERFACE => {
                return Err(TemplateError::NoInterface {
                    version: version.into(),
                });
            }
            _ => {
                return Err(TemplateError::NotRegistered {
                    version: version.into(),
                    registry: "the test catalog".into(),
                });
            }
        };
        Ok(Template {
            version: version.into(),
            workflow: workflow.into(),
            description: Some(format!("the {workflow} template")),
            input,
            output,
            lwir: json!({ "lwir": "1", "workflow": workflow, "steps": [] }),
        })
    }
}

pub fn now() -> u64 {
    1_800_000_000
}

pub fn later() -> u64 {
    1_800_000_000 + 10 * 24 * 3600
}

/// A store in a fresh temporary directory, and the catalog.
pub struct World {
    pub dir: tempfile::TempDir,
    pub store: Directory,
    pub catalog: Catalog,
}

impl World {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let store = Directory::at(dir.path().join("goals"));
        World {
            dir,
            store,
            catalog: Catalog::default(),
        }
    }

    pub fn goals(&self) -> Goals<'_> {
        self.goals_at(now)
    }

    pub fn goals_at(&self, now: fn() -> u64) -> Goals<'_> {
        Goals {
            store: &self.store,
            templates: &self.catalog,
            by: "tester".into(),
            now,
        }
    }

    /// Creates the goal `file`, which must be valid; its id.
    pub fn create(&self, file: &Value) -> String {
        match self
            .goals()
            .create(serde_json::to_vec_pretty(file).unwrap())
        {
            Ok(created) => created.id,
            Err(lwir_goals::GoalError::Findings { findings, .. }) => {
                panic!("the goal file has findings: {findings:#?}")
            }
            Err(e) => panic!("create failed: {e}"),
        }
    }

    /// The first event of `goal` named `name`.
    pub fn first_event(&self, goal: &str, name: &str) -> lwir_repair::events::Event {
        use lwir_goals::store::Store;
        self.store
            .events(goal)
            .unwrap()
            .into_iter()
            .find(|e| e.event == name)
            .unwrap()
    }

    /// The events of `goal`, by name.
    pub fn event_names(&self, goal: &str) -> Vec<String> {
        use lwir_goals::store::Store;
        self.store
            .events(goal)
            .unwrap()
            .into_iter()
            .map(|e| e.event)
            .collect()
    }
}

/// The release-notes goal of the brief: `notes` is generation 0's root (2 attempts).
pub fn goal_file() -> Value {
    json!({
        "goal": "release-notes-w49",
        "objective": "Publish release notes for acme/widgets for week 49.",
        "input": { "repo": "acme/widgets", "since": "v1.4.0" },
        "templates": {
            "notes": { "version": NOTES, "root": true, "max_attempts": 2 },
            "notes-cached": { "version": NOTES_CACHED, "root": true, "max_attempts": 2 },
            "publish": { "version": PUBLISH, "root": true, "max_attempts": 2 },
            "mirror-log": { "version": MIRROR, "root": false, "max_attempts": 3 }
        },
        "work": [ { "key": "notes", "template": "notes",
                    "input": { "repo": "${ goal.input.repo }", "since": "${ goal.input.since }" } } ],
        "root": "notes",
        "replanning": {
            "planner": { "model": "acme/large-5", "system": "Recover." },
            "auto_apply": false,
            "max_replans": 3,
            "max_items_per_plan": 4,
            "max_planned_items": 8,
            "max_review_rounds": 1
        },
        "limits": { "max_total_attempts": 10, "max_parallel": 4, "max_wall_time_s": 7200 }
    })
}

/// Fails `work` (an id or key) of `goal` until it has no attempt left.
pub fn fail_until_spent(world: &World, goal: &str, work: &str) {
    use lwir_goals::goal::Report;
    let goals = world.goals();
    while goals
        .report(goal, work, &Report::Failed("the API timed out".into()))
        .is_ok()
    {}
}

/// An answer a scripted agent gives.
pub type Scripted = Result<Value, FailureKind>;

/// An agent that answers from a script, one answer per call, and keeps the requests.
pub struct Script {
    pub answers: Vec<Scripted>,
    pub requests: Rc<RefCell<Vec<Value>>>,
    pub name: String,
}

impl Script {
    pub fn new(answers: Vec<Scripted>) -> Self {
        Script {
            answers,
            requests: Rc::default(),
            name: "scripted".into(),
        }
    }
}

impl Agent for Script {
    fn describe(&self) -> String {
        self.name.clone()
    }

    fn call(
        &mut self,
        _kind: &str,
        request: &[u8],
        _env: &[(&str, String)],
    ) -> Result<Vec<u8>, CallFailure> {
        self.requests
            .borrow_mut()
            .push(serde_json::from_slice(request).expect("requests are JSON"));
        assert!(!self.answers.is_empty(), "the script ran out of answers");
        match self.answers.remove(0) {
            Ok(answer) => Ok(serde_json::to_vec(&answer).unwrap()),
            Err(kind) => Err(CallFailure {
                kind,
                message: format!("scripted {kind:?}"),
            }),
        }
    }
}

/// A runner in memory, described as `.0`, answering each request (parsed) with what `.1`
/// returns for it.
pub struct By<F: Fn(&Value) -> Value + Sync>(pub &'static str, pub F);

impl<F: Fn(&Value) -> Value + Sync> lwir_goals::runner::Runner for By<F> {
    fn describe(&self) -> String {
        self.0.into()
    }

    fn run(
        &self,
        request: &[u8],
        _env: &[(&str, String)],
    ) -> Result<Vec<u8>, lwir_goals::runner::Failure> {
        let request: Value = serde_json::from_slice(request).unwrap();
        Ok(serde_json::to_vec(&(self.1)(&request)).unwrap())
    }
}

/// A runner's answer: succeeded, with the output of `notes-cached`.
pub fn ok() -> Value {
    json!({ "kind": "succeeded", "output": { "notes": "n", "count": 1 } })
}

/// An agent, described as `.0`, whose every call answers what `.1` returns (the request
/// unread).
pub struct Answering<F: FnMut() -> Result<Vec<u8>, CallFailure>>(pub &'static str, pub F);

impl<F: FnMut() -> Result<Vec<u8>, CallFailure>> Agent for Answering<F> {
    fn describe(&self) -> String {
        self.0.into()
    }

    fn call(
        &mut self,
        _kind: &str,
        _request: &[u8],
        _env: &[(&str, String)],
    ) -> Result<Vec<u8>, CallFailure> {
        (self.1)()
    }
}

/// A validator of `#/$defs/{def}` of the planner protocol's schema.
pub fn protocol(def: &str) -> jsonschema::Validator {
    let mut schema: Value =
        serde_json::from_str(lwir_spec::schemas::PLANNER_PROTOCOL_SCHEMA).unwrap();
    let root = schema.as_object_mut().unwrap();
    root.remove("oneOf");
    root.insert("$ref".into(), json!(format!("#/$defs/{def}")));
    jsonschema::draft202012::new(&schema).unwrap()
}

/// A recorded planner answer of `examples/goals/`, `path` below it.
pub fn example_answer(path: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/goals")
        .join(path);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `{"kind": "apply", items, root}`.
pub fn apply(items: Value, root: &str) -> Value {
    json!({ "kind": "apply", "items": items, "root": root })
}

/// A one-item recovery: `notes_cached` on `notes-cached`.
pub fn recovery() -> Value {
    apply(
        json!([{ "key": "notes_cached", "template": "notes-cached",
                 "input": { "repo": "${ goal.input.repo }" } }]),
        "notes_cached",
    )
}

pub fn attention(why: &str) -> Value {
    json!({ "kind": "attention", "rationale": why })
}

/// The URL of a new, empty database on the server `LWIRC_TEST_POSTGRES` names, called
/// `PREFIX_<pid>`; `None` (the test is skipped) when the variable names none, unless
/// `LWIRC_REQUIRE_ENGINES` is set.
pub fn postgres_database(prefix: &str) -> Option<String> {
    let Some(admin) = std::env::var("LWIRC_TEST_POSTGRES")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        assert!(
            std::env::var_os("LWIRC_REQUIRE_ENGINES").is_none(),
            "LWIRC_REQUIRE_ENGINES is set but LWIRC_TEST_POSTGRES names no server"
        );
        eprintln!("skipped: set LWIRC_TEST_POSTGRES=postgres://USER@127.0.0.1:PORT/postgres");
        return None;
    };
    let database = format!("{prefix}_{}", std::process::id());
    let mut admin_client = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
    // One statement a call: a database is never made inside a transaction block.
    for statement in [
        format!("DROP DATABASE IF EXISTS {database}"),
        format!("CREATE DATABASE {database}"),
    ] {
        admin_client.batch_execute(&statement).unwrap();
    }
    Some(format!("{}/{database}", admin.rsplit_once('/').unwrap().0))
}
