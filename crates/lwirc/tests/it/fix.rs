//! `lwirc fix`: the machine-applicable fixes applied in place as text edits (the author's
//! bytes kept elsewhere), `--diff`, `-o`, `--unsafe-fixes`, the exit status; and
//! `lwirc repair` with safe fixes alone (`--max-planner-calls 0`, no planner) and
//! `--keep-partial`.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

/// A draft as an author wrote it: odd spacing, a key order of its own, an escape, and a
/// misspelt tool (LW301, machine-applicable) in the first step.
const DRAFT: &str = "{ \"workflow\" : \"issue-triage\",  \"lwir\":\"1\",\n  \"steps\": [\n    { \"id\": \"issues\", \"kind\": \"tool.call\", \"tool\": \"GitHub.list-issues\",\n      \"args\": { \"repo\": \"${ input.repo }\", \"state\": STATE }, \"x-note\": \"caf\\u00e9\" }\n  ],\n  \"output\": { \"summary\": \"${ string(size(steps.issues.output.items)) } open issues\" }\n}\n";

fn draft(state: &str) -> String {
    DRAFT.replace("STATE", state)
}

fn setup(dir: &Path, text: &str) -> (String, String) {
    let path = dir.join("draft.json");
    std::fs::write(&path, text).unwrap();
    let definition = write_json(dir, "workflow.json", &example_definition());
    (path.display().to_string(), definition)
}

/// `lwirc COMMAND DRAFT -d DEFINITION ARGS…` in `dir`, on `text` written as the draft beside
/// the example definition: the draft's path, the definition's, and what it did.
fn on_draft(
    dir: &Path,
    text: &str,
    command: &str,
    args: &[&str],
) -> (String, String, std::process::Output) {
    let (path, definition) = setup(dir, text);
    let mut all = vec![command, path.as_str(), "-d", definition.as_str()];
    all.extend_from_slice(args);
    let out = lwirc(dir, &all);
    (path, definition, out)
}

#[test]
fn fixes_in_place_keeping_every_other_byte() {
    let dir = tempfile::tempdir().unwrap();
    let text = draft("\"open\"");
    let (path, definition, out) = on_draft(dir.path(), &text, "fix", &["--color", "never"]);
    assert_exit(&out, 0);
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        fixed,
        text.replace("GitHub.list-issues", "github.list_issues"),
        "only the tool's bytes change"
    );
    let printed = stdout(&out);
    assert!(printed.contains("fixed /steps/0/tool: LW301"), "{printed}");
    assert!(
        printed.contains("fixed 1 finding, 0 errors and 0 warnings remain"),
        "{printed}"
    );
    // Nothing left to fix: the file is not written again, and the status is 0.
    let again = lwirc(dir.path(), &["fix", &path, "-d", &definition]);
    assert_exit(&again, 0);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), fixed);
}

#[test]
fn diff_shows_the_fixes_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let text = draft("\"open\"");
    let (path, _, out) = on_draft(dir.path(), &text, "fix", &["--diff", "--color", "never"]);
    assert_exit(&out, 0);
    let diff = stdout(&out);
    assert!(diff.contains(&format!("--- a/{path}")), "{diff}");
    assert!(diff.contains(&format!("+++ b/{path}")), "{diff}");
    assert!(
        diff.contains(
            "-    { \"id\": \"issues\", \"kind\": \"tool.call\", \"tool\": \"GitHub.list-issues\","
        ),
        "{diff}"
    );
    assert!(
        diff.contains(
            "+    { \"id\": \"issues\", \"kind\": \"tool.call\", \"tool\": \"github.list_issues\","
        ),
        "{diff}"
    );
    assert_stderr_has(&out, "would fix /steps/0/tool: LW301");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "--diff writes nothing"
    );
}

#[test]
fn errors_without_a_certain_fix_remain_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    // `opened` is two edits from `open`: a guess, maybe-incorrect.
    let text = draft("\"opened\"");
    let (path, definition, out) = on_draft(dir.path(), &text, "fix", &["--color", "never"]);
    assert_exit(&out, 1);
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert!(fixed.contains("\"github.list_issues\""), "{fixed}");
    assert!(fixed.contains("\"opened\""), "{fixed}");
    let printed = stdout(&out);
    assert!(printed.contains("LW304"), "{printed}");
    assert!(
        printed.contains("1 error and 0 warnings remain"),
        "{printed}"
    );
    assert!(printed.contains("--unsafe-fixes"), "{printed}");

    // With --unsafe-fixes, to another file: the maybe-incorrect fix too; DRAFT untouched.
    let out = lwirc(
        dir.path(),
        &[
            "fix",
            &path,
            "-d",
            &definition,
            "--unsafe-fixes",
            "-o",
            "other.json",
        ],
    );
    assert_exit(&out, 0);
    let other = std::fs::read_to_string(dir.path().join("other.json")).unwrap();
    assert_eq!(other, fixed.replace("\"opened\"", "\"open\""));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), fixed);
}

#[test]
fn the_json_report_says_what_was_fixed_and_what_remains() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, out) = on_draft(
        dir.path(),
        &draft("\"opened\""),
        "fix",
        &["--diff", "--format", "json"],
    );
    assert_exit(&out, 1);
    let report: Value = serde_json::from_str(&stderr(&out)).unwrap();
    assert_eq!(report["fixed"][0]["code"], "LW301");
    assert_eq!(report["fixed"][0]["pointer"], "/steps/0/tool");
    assert_eq!(
        report["safe_fixes"],
        json!({ "applied": 1, "findings_removed": 1 })
    );
    assert_eq!(report["findings"][0]["code"], "LW304");
    assert_eq!(report["summary"], json!({ "errors": 1, "warnings": 0 }));
}

#[test]
fn standard_input_is_fixed_to_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let text = draft("\"open\"");
    let (_, definition) = setup(dir.path(), &text);
    let out = lwirc_with_stdin(
        dir.path(),
        &["fix", "-", "-d", &definition],
        text.as_bytes(),
    );
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        text.replace("GitHub.list-issues", "github.list_issues")
    );
    assert!(stderr(&out).contains("fixed /steps/0/tool: LW301"));
}

#[test]
fn repair_with_no_planner_calls_needs_no_planner() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, out) = on_draft(
        dir.path(),
        &draft("\"open\""),
        "repair",
        &[
            "--max-planner-calls",
            "0",
            "--format",
            "json",
            "-o",
            "out.json",
        ],
    );
    assert_exit(&out, 0);
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["report"]["planner_calls"], 0);
    assert_eq!(
        report["report"]["safe_fixes"],
        json!({ "applied": 1, "findings_removed": 1 })
    );
    let written = std::fs::read_to_string(dir.path().join("out.json")).unwrap();
    assert!(written.contains("\"github.list_issues\""));
}

#[test]
fn repair_keep_partial_writes_the_partly_fixed_draft() {
    let dir = tempfile::tempdir().unwrap();
    let (path, definition) = setup(dir.path(), &draft("\"opened\""));
    let args = |keep: bool| {
        let mut args = vec![
            "repair",
            &path,
            "-d",
            &definition,
            "--max-planner-calls",
            "0",
            "-o",
            "out.json",
            "--quiet",
        ];
        if keep {
            args.push("--keep-partial");
        }
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let run = |keep: bool| {
        let args = args(keep);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        lwirc(dir.path(), &args)
    };
    let out = run(false);
    assert_exit(&out, 1);
    assert!(
        !dir.path().join("out.json").exists(),
        "nothing written without --keep-partial"
    );
    let out = run(true);
    assert_exit(&out, 1);
    let written = std::fs::read_to_string(dir.path().join("out.json")).unwrap();
    assert!(written.contains("\"github.list_issues\""), "{written}");
    assert!(written.contains("\"opened\""), "{written}");
}

#[test]
fn a_fix_that_breaks_another_step_is_rolled_back_and_said() {
    let dir = tempfile::tempdir().unwrap();
    // One edit from `github.add_label`, whose output has no `items` for the next step.
    let mut draft = example_draft();
    draft["steps"][0]["tool"] = json!("github.add_labl");
    let text = serde_json::to_string_pretty(&draft).unwrap();
    let (_, _, out) = on_draft(dir.path(), &text, "fix", &["--color", "never"]);
    assert_exit(&out, 1);
    let printed = stdout(&out);
    assert!(
        printed
            .contains("rolled back the fix of LW301 at /steps/0/tool: it adds LW207 /steps/1/over"),
        "{printed}"
    );
}

#[test]
fn without_a_definition_only_the_draft_checks_run() {
    let dir = tempfile::tempdir().unwrap();
    let text = draft("\"open\"").replace("\"lwir\":\"1\"", "\"lwir\":1");
    let path = dir.path().join("draft.json");
    std::fs::write(&path, &text).unwrap();
    let path = path.display().to_string();
    let out = lwirc(dir.path(), &["fix", &path, "--color", "never"]);
    assert_exit(&out, 0);
    // The header is fixed; the tool, which only the definition knows, is not.
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert_eq!(fixed, text.replace("\"lwir\":1", "\"lwir\":\"1\""));
    assert_stdout_has(&out, "LW901");
}
