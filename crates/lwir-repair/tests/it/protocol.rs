//! The planner protocol `lwir-planner/1` against its published JSON Schema
//! (`crates/lwir-spec/schema/planner-protocol-1.schema.json`): the requests lwirc serialises, the
//! answers `parse_answer` accepts or rejects, the recorded answers of the issue-triage
//! example, and the example planners in `examples/planners/`.

use std::path::{Path, PathBuf};

use lwir_repair::protocol::{Answer, PROTOCOL, Request, parse_answer};
use lwir_spec::Code;
use lwir_spec::schemas::PLANNER_PROTOCOL_SCHEMA;
use serde_json::{Value, json};

fn schema() -> Value {
    serde_json::from_str(PLANNER_PROTOCOL_SCHEMA).expect("the protocol schema is JSON")
}

/// A validator for one definition of the schema, `#/$defs/{def}`, or for the whole schema.
fn validator(def: Option<&str>) -> jsonschema::Validator {
    let mut schema = schema();
    if let Some(def) = def {
        let root = schema.as_object_mut().expect("the schema is an object");
        assert!(root["$defs"].get(def).is_some(), "no #/$defs/{def}");
        root.remove("oneOf");
        root.insert("$ref".to_owned(), json!(format!("#/$defs/{def}")));
    }
    jsonschema::draft202012::options()
        .build(&schema)
        .expect("the protocol schema compiles")
}

/// Every reason `instance` is invalid, for assertion messages; empty when it is valid.
fn errors(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn read_json(path: &str) -> Value {
    let text = std::fs::read_to_string(repo_file(path)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn manifest() -> Value {
    json!({
        "harnessId": "lwirc/0.1.0",
        "plannerModelSlotId": "deep",
        "systemPromptHash": format!("sha256:{}", "3".repeat(64)),
        "skillsHash": format!("sha256:{}", "a".repeat(64)),
        "workflowDefinitionHash": format!("sha256:{}", "0f".repeat(32)),
        "globalToolsHash": format!("sha256:{}", "9".repeat(64)),
        "memoryStoreIds": []
    })
}

/// Findings as `lwirc validate --format json` writes them: with a fix, with related places,
/// and one in the definition.
fn findings() -> Value {
    json!([
        {
            "code": "LW301", "severity": "error",
            "message": "unknown tool `github.list_isues`",
            "pointer": "/steps/0/tool",
            "span": { "start": 111, "end": 130, "line": 5, "column": 52 },
            "help": "did you mean `github.list_issues`?",
            "related": [],
            "fix": { "applicability": "machine-applicable",
                     "patch": [ { "op": "replace", "path": "/steps/0/tool", "value": "github.list_issues" } ] }
        },
        {
            "code": "LW601", "severity": "error",
            "message": "duplicate step id `label`",
            "pointer": "/steps/1/steps/1/id",
            "span": { "start": 640, "end": 647, "line": 14, "column": 17 },
            "related": [ { "pointer": "/steps/1/steps/0/id",
                           "span": { "start": 402, "end": 409, "line": 9, "column": 17 },
                           "message": "first used here" } ],
            "fix": { "applicability": "maybe-incorrect",
                     "patch": [ { "op": "move", "from": "/steps/1/steps/1/x-id", "path": "/steps/1/steps/1/id" },
                                { "op": "remove", "path": "/steps/1/steps/1/after" } ] }
        },
        {
            "code": "LW210", "severity": "warning",
            "message": "`steps.classify.output.label` may be absent",
            "file": "workflow.json",
            "pointer": "/tools/github~1add_label/input/properties/a~0b",
            "span": { "start": 10, "end": 20, "line": 2, "column": 3 },
            "related": []
        }
    ])
}

fn plan_request() -> Request {
    plan_request_with(json!({ "repo": "acme/widgets" }))
}

fn plan_request_with(input: Value) -> Request {
    Request::Plan {
        protocol: PROTOCOL,
        call: 1,
        workflow: read_json("examples/issue-triage/workflow.json"),
        input,
        manifest: manifest(),
    }
}

fn repair_request(draft: Value) -> Request {
    repair_request_at(2, draft)
}

fn repair_request_at(call: u32, draft: Value) -> Request {
    Request::Repair {
        protocol: PROTOCOL,
        call,
        attempt: 1,
        max_attempts: 3,
        draft,
        findings: findings(),
        workflow: read_json("examples/issue-triage/workflow.json"),
        manifest: manifest(),
    }
}

fn serialised(request: &Request) -> Value {
    serde_json::from_slice(&request.to_bytes()).expect("a request is JSON")
}

#[test]
fn the_schema_is_a_valid_draft_2020_12_schema_for_requests_and_answers() {
    let schema = schema();
    jsonschema::meta::validate(&schema).expect("valid against the 2020-12 meta-schema");
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(
        schema["$id"],
        "https://lwir.dev/schema/planner-protocol-1.schema.json"
    );
    let whole = validator(None);
    assert!(whole.is_valid(&serialised(&plan_request())));
    assert!(whole.is_valid(&json!({"kind": "attention", "rationale": "no"})));
    assert!(!whole.is_valid(&json!({"kind": "plan"})));
    assert!(!whole.is_valid(&json!([])));
}

#[test]
fn serialised_requests_are_valid_requests() {
    let request = validator(Some("request"));
    let draft = read_json("examples/issue-triage/draft-with-mistakes.json");
    for r in [
        plan_request(),
        plan_request_with(Value::Null),
        repair_request(draft),
        // A draft that is not readable JSON travels as its text.
        repair_request(json!("{\"lwir\": \"1\", \"steps\": [")),
    ] {
        let v = serialised(&r);
        assert_eq!(errors(&request, &v), Vec::<String>::new(), "{v:#}");
    }
}

#[test]
fn the_schema_names_exactly_the_members_a_request_has() {
    let schema = schema();
    for (def, r) in [
        ("plan_request", plan_request()),
        ("repair_request", repair_request(json!({}))),
    ] {
        let v = serialised(&r);
        let mut members: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        members.sort_unstable();
        let mut properties: Vec<&str> = schema["$defs"][def]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        properties.sort_unstable();
        let mut required: Vec<&str> = schema["$defs"][def]["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        required.sort_unstable();
        assert_eq!(members, properties, "{def}");
        assert_eq!(members, required, "{def}");
        assert_eq!(
            schema["$defs"][def]["properties"]["kind"]["const"],
            r.kind()
        );
    }
    assert_eq!(schema["$defs"]["protocol"]["const"], PROTOCOL);
}

/// An edit that breaks a request.
type Mutation = fn(&mut Value);

#[test]
fn malformed_requests_are_invalid() {
    let request = validator(Some("request"));
    let good = serialised(&repair_request(json!({"lwir": "1"})));
    let mutations: &[(&str, Mutation)] = &[
        ("call 0", |v| v["call"] = json!(0)),
        ("attempt 0", |v| v["attempt"] = json!(0)),
        ("another protocol", |v| {
            v["protocol"] = json!("lwir-planner/2")
        }),
        ("unknown kind", |v| v["kind"] = json!("revise")),
        ("draft an array", |v| v["draft"] = json!([])),
        ("findings not a list", |v| v["findings"] = json!({})),
        ("a bad code", |v| v["findings"][0]["code"] = json!("E301")),
        ("a bad severity", |v| {
            v["findings"][0]["severity"] = json!("fatal")
        }),
        ("no related", |v| {
            v["findings"][0].as_object_mut().unwrap().remove("related");
        }),
    ];
    assert!(request.is_valid(&good));
    for (what, mutate) in mutations {
        let mut v = good.clone();
        mutate(&mut v);
        assert!(!request.is_valid(&v), "{what} should be invalid");
    }
    let mut plan = serialised(&plan_request());
    plan.as_object_mut().unwrap().remove("input");
    assert!(
        !request.is_valid(&plan),
        "a plan request always has `input`"
    );
}

/// Answers `parse_answer` accepts, with the kind it reads.
const ACCEPTED: &[(&str, &str)] = &[
    (r#"{"kind":"draft","lwir":{}}"#, "draft"),
    (
        "\n  {\"kind\": \"draft\",\n   \"lwir\": {\"lwir\": \"1\", \"workflow\": \"issue-triage\", \"steps\": []}}\n\n",
        "draft",
    ),
    (
        r#"{"model":"acme/large-5","tokens":{"in":1200,"out":800},"kind":"draft","lwir":{"lwir":"1"}}"#,
        "draft",
    ),
    (r#"{"kind":"draft","lwir":{"a":1,"a":2}}"#, "draft"),
    (
        r#"{"kind":"draft","lwir":{"steps":[]},"rationale":7}"#,
        "draft",
    ),
    (
        r#"{"kind":"attention","rationale":"no tool sends e-mail"}"#,
        "attention",
    ),
    (r#"{"kind":"attention","rationale":""}"#, "attention"),
    (r#"{"kind":"attention","rationale":"  \n"}"#, "attention"),
    (
        r#"{"kind":"attention","rationale":"x","lwir":[]}"#,
        "attention",
    ),
    (
        r#"{"rationale":"the definition has no tools","kind":"attention","x-cost":0.02}"#,
        "attention",
    ),
];

/// JSON that is not an answer: `parse_answer` says LW806 and the schema rejects it.
const WRONG_SHAPE: &[&str] = &[
    "[1]",
    "\"draft\"",
    "null",
    "42",
    "{}",
    r#"{"kind":3}"#,
    r#"{"kind":null,"lwir":{}}"#,
    r#"{"kind":"plan"}"#,
    r#"{"kind":"Draft","lwir":{}}"#,
    r#"{"kind":"draft"}"#,
    r#"{"kind":"draft","rationale":"no"}"#,
    r#"{"kind":"draft","lwir":"{}"}"#,
    r#"{"kind":"draft","lwir":[]}"#,
    r#"{"kind":"draft","lwir":null}"#,
    r#"{"kind":"attention"}"#,
    r#"{"kind":"attention","lwir":{}}"#,
    r#"{"kind":"attention","rationale":null}"#,
    r#"{"kind":"attention","rationale":["a"]}"#,
    r#"{"kind":"attention","rationale":{"why":"x"}}"#,
];

#[test]
fn parse_answer_and_the_answer_schema_agree() {
    let answer = validator(Some("answer"));
    let draft = validator(Some("draft_answer"));
    let attention = validator(Some("attention_answer"));
    for &(out, kind) in ACCEPTED {
        let parsed = parse_answer(out.as_bytes())
            .unwrap_or_else(|e| panic!("{out}: rejected by parse_answer: {e}"));
        let v: Value = serde_json::from_str(out).unwrap();
        assert_eq!(errors(&answer, &v), Vec::<String>::new(), "{out}");
        match (parsed, kind) {
            (Answer::Draft { lwir }, "draft") => {
                assert!(draft.is_valid(&v) && !attention.is_valid(&v), "{out}");
                // The draft is the exact bytes of `lwir` as written.
                let lwir: Value = serde_json::from_slice(&lwir).unwrap();
                assert_eq!(lwir, v["lwir"], "{out}");
            }
            (Answer::Attention { .. }, "attention") => {
                assert!(attention.is_valid(&v) && !draft.is_valid(&v), "{out}");
            }
            (parsed, kind) => panic!("{out}: read as {parsed:?}, expected {kind}"),
        }
    }
    for &out in WRONG_SHAPE {
        let e = parse_answer(out.as_bytes())
            .err()
            .unwrap_or_else(|| panic!("{out}: accepted by parse_answer"));
        assert_eq!(e.kind.code(), Code::PlannerAnswerInvalid, "{out}: {e}");
        let v: Value = serde_json::from_str(out).unwrap();
        assert!(!answer.is_valid(&v), "{out}: valid against the schema");
    }
}

#[test]
fn what_the_schema_cannot_see_is_left_to_the_strict_reader() {
    // Not JSON at all: LW805, and no schema applies.
    for out in [
        "",
        "  \n",
        "```json\n{\"kind\":\"draft\",\"lwir\":{}}\n```",
        "{\"kind\":",
    ] {
        let e = parse_answer(out.as_bytes()).unwrap_err();
        assert_eq!(e.kind.code(), Code::PlannerAnswerNotJson, "{out:?}: {e}");
    }
    // Strict I-JSON problems outside `lwir` make an answer ambiguous (LW806), although
    // serde_json, and so the schema, would take it.
    for out in [
        r#"{"kind":"draft","lwir":{},"lwir":{"steps":[]}}"#,
        r#"{"kind":"draft","lwir":{},"tokens":9007199254740993}"#,
        r#"{"kind":"attention","rationale":"\ud800"}"#,
    ] {
        let e = parse_answer(out.as_bytes()).unwrap_err();
        assert_eq!(e.kind.code(), Code::PlannerAnswerInvalid, "{out}: {e}");
        assert!(e.message.contains("ambiguous"), "{out}: {e}");
    }
}

#[test]
fn the_recorded_answers_of_the_example_are_answers() {
    let dir = repo_file("examples/issue-triage/planner");
    if !dir.is_dir() {
        eprintln!("{} does not exist (yet); nothing to check", dir.display());
        return;
    }
    let answer = validator(Some("answer"));
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        if let Err(e) = parse_answer(&bytes) {
            panic!("{}: {} {e}", path.display(), e.kind.code().as_str());
        }
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            errors(&answer, &v),
            Vec::<String>::new(),
            "{}",
            path.display()
        );
        checked += 1;
    }
    assert!(checked > 0, "no *.json answers in {}", dir.display());
}

#[cfg(unix)]
mod example_planners {
    use std::io::Write;
    use std::process::{Command, Output, Stdio};

    use super::*;

    const ENV: [&str; 4] = [
        "LWIRC_PLANNER_PROTOCOL",
        "LWIRC_PLANNER_KIND",
        "LWIRC_PLANNER_CALL",
        "LWIRC_PLANNER_ATTEMPT",
    ];

    /// Runs an example planner the way lwirc does: the request's environment, the request
    /// on standard input (then closed). Without a request, standard input is empty and no
    /// `LWIRC_PLANNER_*` variable is set.
    fn run(script: &str, args: &[&Path], request: Option<&Request>) -> Output {
        let mut command = Command::new(repo_file(&format!("examples/planners/{script}")));
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for name in ENV {
            command.env_remove(name);
        }
        if let Some(r) = request {
            command.envs(r.env());
        }
        let mut child = command.spawn().expect("the example planner starts");
        let mut stdin = child.stdin.take().unwrap();
        if let Some(r) = request {
            // A script that stops early (a usage error) may close its end first.
            if let Err(e) = stdin.write_all(&r.to_bytes()) {
                assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
            }
        }
        drop(stdin);
        child.wait_with_output().unwrap()
    }

    fn answer_of(output: &Output) -> Answer {
        assert_eq!(
            output.status.code(),
            Some(0),
            "stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        parse_answer(&output.stdout)
            .unwrap_or_else(|e| panic!("{e}; stdout: {}", String::from_utf8_lossy(&output.stdout)))
    }

    fn repair_call(call: u32) -> Request {
        repair_request_at(
            call,
            json!({"lwir": "1", "workflow": "issue-triage", "steps": []}),
        )
    }

    #[test]
    fn scripted_replays_the_answer_recorded_for_the_call() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("answers \"q\" \\");
        std::fs::create_dir(&dir).unwrap();
        let recorded = "{ \"kind\": \"draft\", \"model\": \"recorded\",\n  \"lwir\": {\"lwir\": \"1\",  \"workflow\": \"issue-triage\", \"steps\": []} }\n";
        std::fs::write(dir.join("call-2.json"), recorded).unwrap();
        std::fs::write(
            dir.join("call-1.json"),
            r#"{"kind":"attention","rationale":"call 1"}"#,
        )
        .unwrap();

        let output = run("scripted.sh", &[&dir], Some(&repair_call(2)));
        assert_eq!(output.stdout, recorded.as_bytes(), "replayed verbatim");
        assert_eq!(
            answer_of(&output),
            Answer::Draft {
                lwir: br#"{"lwir": "1",  "workflow": "issue-triage", "steps": []}"#.to_vec()
            }
        );

        let output = run("scripted.sh", &[&dir], Some(&plan_request()));
        assert_eq!(
            answer_of(&output),
            Answer::Attention {
                rationale: "call 1".to_owned()
            }
        );

        let output = run("scripted.sh", &[&dir], Some(&repair_call(3)));
        let Answer::Attention { rationale } = answer_of(&output) else {
            panic!("no answer recorded for call 3: expected attention")
        };
        assert!(
            rationale.starts_with("scripted planner: no answer recorded for call 3 in "),
            "{rationale}"
        );
        assert!(
            rationale.ends_with(&dir.display().to_string()),
            "{rationale}"
        );
        let v: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert!(validator(Some("attention_answer")).is_valid(&v));
    }

    #[test]
    fn scripted_refuses_to_run_without_lwirc_or_a_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let not_a_dir = tmp.path().join("missing");
        for (args, request) in [
            (vec![tmp.path()], None),
            (vec![], Some(repair_call(2))),
            (vec![not_a_dir.as_path()], Some(repair_call(2))),
            (vec![tmp.path(), tmp.path()], Some(repair_call(2))),
        ] {
            let output = run("scripted.sh", &args, request.as_ref());
            assert_eq!(output.status.code(), Some(2), "{args:?}");
            assert!(output.stdout.is_empty(), "{args:?}");
            assert!(!output.stderr.is_empty(), "{args:?}: a usage message");
        }
    }

    #[test]
    fn attention_always_gives_up() {
        for request in [plan_request(), repair_call(2)] {
            let output = run("attention.sh", &[], Some(&request));
            let Answer::Attention { rationale } = answer_of(&output) else {
                panic!("attention.sh drafted")
            };
            assert!(rationale.contains("example planner"), "{rationale}");
            let v: Value = serde_json::from_slice(&output.stdout).unwrap();
            assert!(validator(Some("attention_answer")).is_valid(&v));
        }
    }
}
