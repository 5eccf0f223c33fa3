//! Messages a newcomer reads: each says what happened, once, in the terms of what they did.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

/// The example's clean draft with a misspelt tool one edit from the wrong tool (its fix
/// to `github.add_label` breaks the next step, which reads `items` of the first one's
/// output, so it is rolled back), and a `max_parallel` over the limit (its fix is kept).
/// (The arguments `github.add_label` then rejects are the draft's own mistakes, revealed:
/// they alone would not roll the fix back.)
fn draft_with_a_bad_fix() -> Value {
    let mut draft = example_draft();
    draft["steps"][0]["tool"] = json!("github.add_labl");
    draft["steps"][1]["max_parallel"] = json!(64);
    draft
}

fn repair(dir: &Path, draft: &Value, planner: &str, extra: &[&str]) -> std::process::Output {
    let draft = write_json(dir, "draft.json", draft);
    let workflow = example("workflow.json");
    let mut args = vec![
        "repair",
        &draft,
        "-d",
        &workflow,
        "--planner",
        planner,
        "--color",
        "never",
    ];
    args.extend_from_slice(extra);
    lwirc(dir, &args)
}

#[test]
fn a_rolled_back_fix_names_the_error_it_added() {
    let dir = tempfile::tempdir().unwrap();
    let out = repair(
        dir.path(),
        &draft_with_a_bad_fix(),
        "false",
        &["--max-planner-calls", "0"],
    );
    assert_exit(&out, 1);
    let text = stderr(&out);
    let line = text
        .lines()
        .find(|l| l.contains("rolled back"))
        .unwrap_or_else(|| panic!("no rollback line:\n{text}"));
    assert!(
        line.contains("LW301 /steps/0/tool") && line.contains("LW207 /steps/1/over"),
        "{line}"
    );
    // The final report says it too.
    let report = text.split("the last draft:").nth(1).unwrap();
    assert!(
        report.contains("rolled back") && report.contains("LW207 /steps/1/over"),
        "{report}"
    );
    // And the JSON report carries it.
    let out = repair(
        dir.path(),
        &draft_with_a_bad_fix(),
        "false",
        &["--max-planner-calls", "0", "--format", "json"],
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rolled_back = &report["report"]["rolled_back"][0];
    assert_eq!(rolled_back["code"], "LW301", "{report:#}");
    assert_eq!(rolled_back["pointer"], "/steps/0/tool");
    assert_eq!(
        rolled_back["added_errors"],
        json!([{ "code": "LW207", "pointer": "/steps/1/over" }])
    );
}

/// `lwirc compile` of the example in `dir`, with `planner` and `extra` flags.
fn compile(dir: &Path, planner: &str, extra: &[&str]) -> std::process::Output {
    let workflow = example("workflow.json");
    let input = example("input.json");
    let mut args = vec![
        "compile",
        &workflow,
        "--input",
        &input,
        "--planner",
        planner,
        "--registry",
        "registry",
        "--session",
        "session",
        "--color",
        "never",
    ];
    args.extend_from_slice(extra);
    lwirc(dir, &args)
}

#[test]
fn no_planner_call_allowed_says_there_was_no_draft() {
    let dir = tempfile::tempdir().unwrap();
    let out = compile(dir.path(), "false", &["--max-planner-calls", "0"]);
    assert_exit(&out, 1);
    let text = stderr(&out);
    assert!(!text.contains("safe fixes alone"), "{text}");
    assert!(
        text.contains("no planner call was allowed") && text.contains("no draft"),
        "{text}"
    );
}

#[test]
fn a_failed_compile_names_the_draft_file_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut draft = example_draft();
    draft["steps"][0]["args"]["state"] = json!("everything");
    let answers = answers(dir.path(), &[draft_answer(&draft)]);
    let out = compile(dir.path(), &scripted_planner(&answers), &[]);
    assert_exit(&out, 1);
    let text = stderr(&out);
    assert!(dir.path().join("session/last-draft.json").exists());
    assert!(text.contains("session/last-draft.json:"), "{text}");
    assert!(!text.contains("session/draft.json"), "{text}");
}

#[test]
fn a_garbage_answer_is_shown_as_a_short_excerpt() {
    let dir = tempfile::tempdir().unwrap();
    let kind = "x".repeat(4000);
    let answer = write_json(dir.path(), "answer.json", &json!({ "kind": kind }));
    let planner = script(dir.path(), "planner.sh", &format!("cat '{answer}'"));
    let mut draft = example_draft();
    draft["steps"][0]["args"]["state"] = json!("everything");
    let out = repair(dir.path(), &draft, &planner, &["--max-attempts", "1"]);
    assert_exit(&out, 1);
    let text = stderr(&out);
    assert!(text.contains("LW806"), "{text}");
    assert!(!text.contains(&"x".repeat(300)), "{text}");
    assert!(text.contains("(4000 bytes)"), "{text}");
}

#[test]
fn registry_commands_refuse_a_registry_that_does_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["registry", "verify", "--registry", "no-such-registry"][..],
        &["registry", "list", "--registry", "no-such-registry"],
        &[
            "registry",
            "show",
            "5c281a30",
            "--registry",
            "no-such-registry",
        ],
    ] {
        let out = lwirc(dir.path(), args);
        assert_exit(&out, 2);
        assert_stderr_has(&out, "no-such-registry");
        assert!(!stdout(&out).contains("ok"), "{}", stdout(&out));
    }
    // Registering creates it.
    let out = register_example_with(dir.path(), &["--registry", "no-such-registry"]);
    assert_exit(&out, 0);
    let out = lwirc(
        dir.path(),
        &["registry", "verify", "--registry", "no-such-registry"],
    );
    assert_exit(&out, 0);
}

#[test]
fn a_storage_error_says_the_os_error_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a-file"), b"").unwrap();
    let out = register_example_with(dir.path(), &["--registry", "a-file/registry"]);
    assert_exit(&out, 2);
    let text = stderr(&out);
    assert_eq!(text.matches("(os error").count(), 1, "{text}");
    assert!(text.contains("a-file/registry"), "{text}");
}

#[test]
fn sarif_uris_are_percent_encoded_and_stay_relative() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("dé jà")).unwrap();
    write_json(
        &dir.path().join("dé jà"),
        "my draft#1%?.json",
        &example_draft(),
    );
    let out = lwirc(
        dir.path(),
        &[
            "validate",
            "dé jà/my draft#1%?.json",
            "-d",
            &example("workflow.json"),
            "--format",
            "sarif",
        ],
    );
    assert_exit(&out, 0);
    let log: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        log["runs"][0]["artifacts"][0]["location"]["uri"],
        "d%C3%A9%20j%C3%A0/my%20draft%231%25%3F.json"
    );
}

#[test]
fn help_says_where_output_goes_and_names_every_validator() {
    let dir = tempfile::tempdir().unwrap();
    let out = lwirc(dir.path(), &["validate", "--help"]);
    let help = stdout(&out);
    for validator in [
        "document",
        "shape",
        "expression",
        "capability",
        "model",
        "compat",
        "graph",
    ] {
        assert!(help.contains(validator), "{validator} missing:\n{help}");
    }
    // A draft with errors: its findings are on standard output, and the help says so.
    let out = register_against_example(
        dir.path(),
        "draft-with-mistakes.json",
        &["--registry", "registry", "--color", "never"],
    );
    assert_exit(&out, 1);
    assert_stdout_has(&out, "LW301");
    let help = stdout(&lwirc(dir.path(), &["register", "--help"])).replace('\n', " ");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        !help.contains("everything else goes to standard error"),
        "{help}"
    );
    assert!(
        help.contains("findings of a draft with errors are printed on standard output"),
        "{help}"
    );
}

#[test]
fn the_guides_drift_example_runs_as_shown() {
    let readme = std::fs::read_to_string(root().join("docs/guide/registering.md")).unwrap();
    let shell = "$ lwirc drift 5c281a30 -d examples/issue-triage/today.json\n";
    let shown = readme
        .split(shell)
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/guide/registering.md shows `lwirc drift 5c281a30 -d examples/issue-triage/today.json`");
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry").display().to_string();
    let run = |args: &[&str]| {
        command(&root(), args)
            .env("LWIR_REGISTRY", &registry)
            .output()
            .unwrap()
    };
    assert_exit(
        &run(&[
            "register",
            "examples/issue-triage/draft.json",
            "-d",
            "examples/issue-triage/workflow.json",
        ]),
        0,
    );
    let out = run(&[
        "drift",
        "5c281a30",
        "-d",
        "examples/issue-triage/today.json",
        "--color",
        "never",
    ]);
    assert_exit(&out, 3);
    assert_eq!(stdout(&out), shown);
}

#[test]
fn help_names_every_network_wait_and_how_to_change_it() {
    let dir = tempfile::tempdir().unwrap();
    let help = |args: &[&str]| {
        let text = stdout(&lwirc(dir.path(), args));
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    for args in [
        &["registry", "--help"][..],
        &["register", "--help"],
        &["compile", "--help"],
        &["drift", "--help"],
        &["goal", "--help"],
    ] {
        assert!(
            help(args).contains("`$LWIR_REGISTRY_TIMEOUT` seconds (30)")
                || help(args).contains("`LWIR_REGISTRY_TIMEOUT` seconds (30 by default)"),
            "{args:?}: {}",
            help(args)
        );
    }
    for args in [&["goal", "--help"][..], &["goals", "--help"]] {
        let text = help(args);
        assert!(
            text.contains("`?connect_timeout=SECONDS`, 10")
                && text.contains("`statement_timeout=SECONDS`, 30"),
            "{args:?}: {text}"
        );
    }
    let text = help(&["compile", "--help"]);
    assert!(
        text.contains(
            "must accept the connection within 10 s, and answer within --planner-timeout"
        ),
        "{text}"
    );
}

/// `goal` is one goal, `goals` the whole store: a subcommand given to the other one gets
/// a tip naming the command that has it.
#[test]
fn a_subcommand_of_goals_given_to_goal_or_the_other_way_names_the_right_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = lwirc(dir.path(), &["goal", "copy", "a", "b"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("unrecognized subcommand 'copy'"), "{err}");
    assert!(
        err.contains("tip: `copy` is a command of `lwirc goals`")
            && err.contains("lwirc goals copy a b"),
        "{err}"
    );
    let out = lwirc(dir.path(), &["goals", "list"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("lwirc goal list"), "{err}");
    // A subcommand nobody has: clap's own message, no invented tip.
    let out = lwirc(dir.path(), &["goal", "frobnicate"]);
    assert_exit(&out, 2);
    assert!(
        !stderr(&out).contains("tip: `frobnicate`"),
        "{}",
        stderr(&out)
    );
}

/// A file given in the wrong place is named as such before its findings.
#[test]
fn a_file_of_the_wrong_kind_is_named_before_its_findings() {
    let dir = tempfile::tempdir().unwrap();
    let draft = example("draft.json");
    let workflow = example("workflow.json");
    // Swapped.
    let out = lwirc(dir.path(), &["validate", &workflow, "-d", &draft]);
    assert_exit(&out, 1);
    assert_stderr_has(&out, "did you swap them?");
    // A draft to `goal create`.
    let out = lwirc(dir.path(), &["goal", "create", &draft]);
    assert_ne!(out.status.code(), Some(0));
    assert_stderr_has(&out, "is an LWIR draft, not a goal file");
    // A draft fenced as Markdown, as a model might answer.
    let fenced = dir.path().join("fenced.json");
    let mut text = b"```json\n".to_vec();
    text.extend(std::fs::read(&draft).unwrap());
    text.extend(b"\n```\n");
    std::fs::write(&fenced, text).unwrap();
    let out = lwirc(
        dir.path(),
        &[
            "validate",
            fenced.to_str().unwrap(),
            "-d",
            &workflow,
            "--color",
            "never",
        ],
    );
    assert_exit(&out, 1);
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(all.contains("remove the ``` fence"), "{all}");
    // The right files: no note.
    let out = lwirc(dir.path(), &["validate", &draft, "-d", &workflow]);
    assert_exit(&out, 0);
    assert!(!stderr(&out).contains("lwirc: `"), "{}", stderr(&out));
}

/// `--version` names the commit lwirc was built from, and `registry show` takes the
/// workflow's name.
#[test]
fn the_version_names_its_commit_and_registry_show_takes_a_workflow_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = lwirc(dir.path(), &["--version"]);
    assert_exit(&out, 0);
    let line = stdout(&out);
    assert!(line.starts_with("lwirc 0."), "{line}");
    if root().join(".git").exists() {
        assert!(line.contains("(commit "), "{line}");
    }
    let registry = dir.path().join("registry");
    let registry = registry.to_str().unwrap();
    let out = register_example_with(dir.path(), &["--registry", registry]);
    assert_exit(&out, 0);
    let version = stdout(&out).trim().to_owned();
    let name = example_definition()["name"].as_str().unwrap().to_owned();
    let out = lwirc(
        dir.path(),
        &["registry", "show", &name, "--registry", registry],
    );
    assert_exit(&out, 0);
    let record: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(record["version"], version.as_str(), "{record}");
    let out = lwirc(
        dir.path(),
        &[
            "registry",
            "show",
            "no-such-workflow",
            "--registry",
            registry,
        ],
    );
    assert_exit(&out, 1);
    assert_stderr_has(&out, "registered workflow's name");
}

/// A compile whose version was registered before against another snapshot (the README's
/// `--rebase` section leaves the shared registry so) says how to go on.
#[test]
fn a_compile_refused_for_an_earlier_snapshot_says_how_to_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry");
    let registry = registry.to_str().unwrap();
    let out = lwirc(
        dir.path(),
        &[
            "register",
            &example("draft.json"),
            "-d",
            &example("today.json"),
            "--registry",
            registry,
        ],
    );
    assert_exit(&out, 0);
    let planner = format!(
        "{} {}",
        root().join("examples/planners/scripted.sh").display(),
        root().join("examples/issue-triage/planner").display()
    );
    let out = lwirc(
        dir.path(),
        &[
            "compile",
            &example("workflow.json"),
            "--input",
            &example("input.json"),
            "--planner",
            &planner,
            "--registry",
            registry,
            "--session",
            "session",
        ],
    );
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("already registered against a different snapshot"),
        "{err}"
    );
    assert!(
        err.contains("session/draft.json -d WORKFLOW --rebase"),
        "{err}"
    );
}
