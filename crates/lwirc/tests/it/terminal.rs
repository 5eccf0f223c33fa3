//! Model output is hostile input: escape sequences and bidirectional controls in a draft or
//! in a planner's answer never reach the terminal raw. Human output shows them escaped
//! (`\u{1b}`); JSON output keeps the exact strings.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

/// Retitles the window, then clears the screen.
const HIJACK: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J";
/// How human output shows it.
const SHOWN: &str = "\\u{1b}]0;pwned\\u{7}\\u{1b}[2J";

/// Whether `bytes` contain anything a terminal would act on.
fn has_controls(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.chars().any(|c| {
        matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
            | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    })
}

#[track_caller]
fn assert_clean(out: &std::process::Output) {
    assert!(
        !has_controls(&out.stdout),
        "control characters on stdout:\n{}",
        String::from_utf8_lossy(&out.stdout).escape_debug()
    );
    assert!(
        !has_controls(&out.stderr),
        "control characters on stderr:\n{}",
        String::from_utf8_lossy(&out.stderr).escape_debug()
    );
}

/// The example draft with escape sequences in a tool name and in the workflow name.
fn hostile_draft() -> Value {
    let mut draft = example_draft();
    draft["steps"][0]["tool"] = json!(format!("github.list_issues{HIJACK}"));
    draft["workflow"] = json!(format!("issue-triage{HIJACK}"));
    draft
}

/// `lwirc validate DRAFT -d` the example's definition, human output without color.
fn validate_without_color(dir: &Path, draft: &str) -> std::process::Output {
    lwirc(
        dir,
        &[
            "validate",
            draft,
            "-d",
            &example("workflow.json"),
            "--color",
            "never",
        ],
    )
}

#[test]
fn validate_shows_escape_sequences_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let draft = write_json(dir.path(), "draft.json", &hostile_draft());
    let out = validate_without_color(dir.path(), &draft);
    assert_exit(&out, 1);
    assert_clean(&out);
    let text = stdout(&out);
    assert!(
        text.contains(&format!("github.list_issues{SHOWN}")),
        "{text}"
    );
    assert!(text.contains(&format!("issue-triage{SHOWN}")), "{text}");
}

#[test]
fn json_and_sarif_keep_the_exact_strings() {
    let dir = tempfile::tempdir().unwrap();
    let draft = write_json(dir.path(), "draft.json", &hostile_draft());
    let workflow = example("workflow.json");
    let out = lwirc(
        dir.path(),
        &["validate", &draft, "-d", &workflow, "--format", "json"],
    );
    assert_exit(&out, 1);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let messages: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["message"].as_str())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains(&format!("github.list_issues{HIJACK}"))),
        "{messages:?}"
    );
    let out = lwirc(
        dir.path(),
        &["validate", &draft, "-d", &workflow, "--format", "sarif"],
    );
    let sarif: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = sarif.to_string();
    assert!(
        text.contains(
            &serde_json::to_string(HIJACK)
                .unwrap()
                .trim_matches('"')
                .to_owned()
        ),
        "{text}"
    );
}

#[test]
fn raw_bidi_controls_and_raw_control_bytes_are_not_shown_raw() {
    let dir = tempfile::tempdir().unwrap();
    // U+202E and U+009B (an 8-bit CSI) may appear raw in a JSON string.
    let mut draft = example_draft();
    draft["steps"][0]["tool"] = json!("github.\u{202e}seussi_tsil\u{9b}2J");
    let bidi = write_json(dir.path(), "bidi.json", &draft);
    // A raw ESC outside a string is not JSON: the reader's finding shows the line.
    let raw = dir.path().join("raw.json");
    std::fs::write(&raw, b"{\"lwir\": \"0.1\", \x1b]0;pwned\x07 \"x\": 1}\n").unwrap();
    let raw = raw.display().to_string();
    for file in [&bidi, &raw] {
        let out = validate_without_color(dir.path(), file);
        assert_exit(&out, 1);
        assert_clean(&out);
    }
}

/// Runs `lwirc repair` on the example's draft with a misspelt `number` argument (no safe
/// fix) with `planner` (a script body), human output.
fn repair_with(dir: &Path, planner_body: &str) -> std::process::Output {
    let mut draft = example_draft();
    let args = draft["steps"][1]["steps"][1]["args"]
        .as_object_mut()
        .unwrap();
    args.remove("number");
    let draft = write_json(dir, "draft.json", &draft);
    let planner = script(dir, "planner.sh", planner_body);
    lwirc(
        dir,
        &[
            "repair",
            &draft,
            "-d",
            &example("workflow.json"),
            "--planner",
            &planner,
            "--color",
            "never",
        ],
    )
}

#[test]
fn an_attention_rationale_is_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let answer = json!({ "kind": "attention", "rationale": format!("cannot{HIJACK}") });
    let answer_file = write_json(dir.path(), "answer.json", &answer);
    let out = repair_with(dir.path(), &format!("cat >/dev/null; cat '{answer_file}'"));
    assert_exit(&out, 1);
    assert_clean(&out);
    let text = stderr(&out);
    assert!(text.contains(&format!("cannot{SHOWN}")), "{text}");
}

#[test]
fn a_planners_standard_error_and_garbage_are_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    // Crashes, with escape sequences on standard error.
    let out = repair_with(
        dir.path(),
        "cat >/dev/null; printf 'oops\\033]0;pwned\\007\\033[2J\\n' >&2; exit 1",
    );
    assert_exit(&out, 1);
    assert_clean(&out);
    assert!(
        stderr(&out).contains(&format!("oops{SHOWN}")),
        "{}",
        stderr(&out)
    );
    // Answers an unknown kind full of escape sequences.
    let out = repair_with(
        dir.path(),
        "cat >/dev/null; printf '{\"kind\": \"\\\\u001b]0;pwned\\\\u0007\\\\u001b[2J\"}'",
    );
    assert_exit(&out, 1);
    assert_clean(&out);
    assert!(stderr(&out).contains(SHOWN), "{}", stderr(&out));
}
