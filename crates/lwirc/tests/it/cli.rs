//! Tests of the built `lwirc` binary: exit codes, output formats, standard input.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use crate::common::{assert_stderr_has, example, root};

fn lwirc(args: &[&str]) -> Output {
    lwirc_with_stdin(args, None)
}

fn lwirc_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lwirc"))
        .args(args)
        .current_dir(root())
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        input.write_all(bytes).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

const DRAFT: &str = "examples/issue-triage/draft.json";
const MISTAKES: &str = "examples/issue-triage/draft-with-mistakes.json";
const WORKFLOW: &str = "examples/issue-triage/workflow.json";

#[test]
fn clean_draft_exits_zero_and_prints_its_version() {
    let out = lwirc(&["validate", DRAFT, "-d", WORKFLOW]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("no problems found; version sha256:"),
        "{text}"
    );
}

#[test]
fn draft_with_errors_exits_one() {
    let out = lwirc(&["validate", MISTAKES, "--definition", WORKFLOW]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("LW301/unknown-tool"));
}

#[test]
fn unreadable_files_and_bad_usage_exit_two() {
    let out = lwirc(&["validate", "no/such/draft.json", "-d", WORKFLOW]);
    assert_eq!(out.status.code(), Some(2));
    assert_stderr_has(&out, "cannot read `no/such/draft.json`");
    let out = lwirc(&["validate", DRAFT, "-d", "no/such/workflow.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(lwirc(&["validate"]).status.code(), Some(2));
    assert_eq!(
        lwirc(&["validate", DRAFT, "--format", "xml"]).status.code(),
        Some(2)
    );
    assert_eq!(lwirc(&["frobnicate"]).status.code(), Some(2));
    let out = lwirc(&["validate", "-", "-d", "-"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("only one of"));
}

#[test]
fn reads_the_draft_from_standard_input() {
    let bytes = std::fs::read(example("draft.json")).unwrap();
    let out = lwirc_with_stdin(
        &["validate", "-", "-d", WORKFLOW, "--format", "json"],
        Some(&bytes),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["file"], "<stdin>");
    // The same bytes give the same version whichever way they come in.
    let from_file: serde_json::Value = serde_json::from_str(&stdout(&lwirc(&[
        "validate", DRAFT, "-d", WORKFLOW, "--format", "json",
    ])))
    .unwrap();
    assert_eq!(report["version"], from_file["version"]);
}

#[test]
fn without_a_definition_one_warning_says_what_was_skipped() {
    let out = lwirc(&["validate", DRAFT, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0]["code"], "LW901");
    assert_eq!(findings[0]["severity"], "warning");
    assert_eq!(report["summary"]["warnings"], 1);
    assert!(report["version"].as_str().unwrap().starts_with("sha256:"));
}

#[test]
fn json_report_has_the_contract_fields() {
    let out = lwirc(&["validate", MISTAKES, "-d", WORKFLOW, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["file"], MISTAKES);
    assert!(
        report.get("version").is_none(),
        "no version when there are errors"
    );
    let source = std::fs::read(example("draft-with-mistakes.json")).unwrap();
    let findings = report["findings"].as_array().unwrap();
    let mut errors = 0;
    for f in findings {
        for key in ["code", "severity", "message", "pointer", "span", "related"] {
            assert!(f.get(key).is_some(), "finding lacks `{key}`: {f}");
        }
        let code = f["code"].as_str().unwrap();
        assert!(lwir_spec::Code::parse(code).is_some(), "{code}");
        let span = &f["span"];
        let (start, end) = (
            span["start"].as_u64().unwrap() as usize,
            span["end"].as_u64().unwrap() as usize,
        );
        assert!(start <= end && end <= source.len());
        // line/column are 1-based and agree with the byte offset.
        let line = source[..start].iter().filter(|&&b| b == b'\n').count() + 1;
        assert_eq!(span["line"].as_u64().unwrap() as usize, line);
        let line_start = source[..start]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let column = std::str::from_utf8(&source[line_start..start])
            .unwrap()
            .chars()
            .count()
            + 1;
        assert_eq!(span["column"].as_u64().unwrap() as usize, column);
        if f["severity"] == "error" {
            errors += 1;
        }
        if let Some(fix) = f.get("fix") {
            let applicability = fix["applicability"].as_str().unwrap();
            assert!(["machine-applicable", "maybe-incorrect"].contains(&applicability));
            assert!(!fix["patch"].as_array().unwrap().is_empty());
        }
    }
    assert_eq!(report["summary"]["errors"], errors);
    let tool = findings.iter().find(|f| f["code"] == "LW301").unwrap();
    assert_eq!(tool["pointer"], "/steps/0/tool");
    let (s, e) = (
        tool["span"]["start"].as_u64().unwrap() as usize,
        tool["span"]["end"].as_u64().unwrap() as usize,
    );
    assert_eq!(&source[s..e], br#""github.list_isues""#);
    assert_eq!(tool["help"], "did you mean `github.list_issues`?");
    assert_eq!(
        tool["fix"],
        serde_json::json!({ "applicability": "machine-applicable",
            "patch": [ { "op": "replace", "path": "/steps/0/tool", "value": "github.list_issues" } ] })
    );
}

#[test]
fn sarif_output_validates_against_the_sarif_2_1_0_schema() {
    // The OASIS schema's `run.language` pattern ends in an unbalanced `]`, a literal in
    // ECMA-262 regexes but an error for Rust's regex engines: escape it, change nothing else.
    let text = include_str!("../data/sarif-schema-2.1.0.json")
        .replace(r#"[a-zA-Z]{2}]?$"#, r#"[a-zA-Z]{2}\\]?$"#);
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for draft in [MISTAKES, DRAFT] {
        let out = lwirc(&["validate", draft, "-d", WORKFLOW, "--format", "sarif"]);
        let log: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&log)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{draft}: {errors:#?}");
        assert_eq!(log["version"], "2.1.0");
    }
    let out = lwirc(&["validate", MISTAKES, "-d", WORKFLOW, "--format", "sarif"]);
    let log: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let results = log["runs"][0]["results"].as_array().unwrap();
    let tool = results.iter().find(|r| r["ruleId"] == "LW301").unwrap();
    let region = &tool["locations"][0]["physicalLocation"]["region"];
    assert_eq!(region["startLine"], 5);
    // The fix is also a text edit that turns the typo into the right id.
    let replacement = &tool["fixes"][0]["artifactChanges"][0]["replacements"][0];
    assert_eq!(
        replacement["insertedContent"]["text"],
        "\"github.list_issues\""
    );
    assert_eq!(
        replacement["deletedRegion"]["byteOffset"],
        region["byteOffset"]
    );
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let plain = stdout(&lwirc(&["validate", MISTAKES, "-d", WORKFLOW]));
    assert!(
        !plain.contains('\u{1b}'),
        "piped output has no escape codes"
    );
    let coloured = stdout(&lwirc(&[
        "validate", MISTAKES, "-d", WORKFLOW, "--color", "always",
    ]));
    assert!(coloured.contains('\u{1b}'));
}

#[test]
fn explain_prints_the_code_docs() {
    let out = lwirc(&["explain", "LW301"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.starts_with("# LW301: unknown-tool"));
    assert_eq!(text.matches("## ").count(), 4, "{text}");
    assert_eq!(stdout(&lwirc(&["explain", "unknown-tool"])), text);
    let out = lwirc(&["explain", "LW999"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown code `LW999`"));
    let list = stdout(&lwirc(&["explain"]));
    for code in lwir_spec::Code::ALL {
        assert!(list.contains(code.as_str()), "{code} missing from the list");
    }
}

#[test]
fn human_report_of_the_mistakes_example() {
    let out = lwirc(&["validate", MISTAKES, "-d", WORKFLOW]);
    insta::assert_snapshot!(stdout(&out));
}

#[test]
fn ten_mistakes_give_ten_findings_in_one_run() {
    let out = lwirc(&["validate", MISTAKES, "-d", WORKFLOW, "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let source = std::fs::read(example("draft-with-mistakes.json")).unwrap();
    let found: Vec<(String, String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let (s, e) = (
                f["span"]["start"].as_u64().unwrap() as usize,
                f["span"]["end"].as_u64().unwrap() as usize,
            );
            (
                f["code"].as_str().unwrap().to_owned(),
                f["pointer"].as_str().unwrap().to_owned(),
                String::from_utf8(source[s..e].to_vec()).unwrap(),
            )
        })
        .collect();
    let expected = [
        ("LW301", "/steps/0/tool", r#""github.list_isues""#),
        ("LW606", "/steps/1/max_parallel", "64"),
        ("LW102", "/steps/1/steps/0/descripton", r#""descripton""#),
        ("LW107", "/steps/1/steps/0/output/if", r#""if""#),
        ("LW602", "/steps/1/steps/1/after/0", r#""clasify""#),
        ("LW302", "/steps/1/steps/1/args", "{"),
        ("LW603", "/steps/3/after/0", r#""tally""#),
        (
            "LW111",
            "/steps/3/output/properties/summary/type",
            r#""strng""#,
        ),
        ("LW101", "/steps/4", "{"),
        ("LW304", "/steps/4/steps/0/args/state", r#""opened""#),
    ];
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(c, p, t)| ((*c).to_owned(), (*p).to_owned(), (*t).to_owned()))
        .collect();
    assert_eq!(found, expected);
}

#[test]
fn a_problem_at_the_end_of_the_file_is_drawn_there() {
    let out = lwirc_with_stdin(&["validate", "-"], Some(br#"{"a": [1, 2"#));
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("found the end of the file"), "{text}");
    assert!(
        text.contains("╰── /a"),
        "the label is drawn after the last byte: {text}"
    );
    let json = lwirc_with_stdin(
        &["validate", "-", "--format", "json"],
        Some(br#"{"a": [1, 2"#),
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(report["findings"][0]["span"]["start"], 11);
    assert_eq!(report["findings"][0]["span"]["end"], 11);
}

#[test]
fn explain_functions_lists_the_whitelist() {
    let out = lwirc(&["explain", "functions"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    for name in [
        "size", "has", "matches", "map", "filter", "all", "exists", "join", "split",
    ] {
        assert!(
            text.contains(&format!("| `{name}` |")),
            "{name} missing:\n{text}"
        );
    }
}
