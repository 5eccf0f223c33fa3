//! The goal corpus: for every goal code, `tests/corpus/<CODE>/` holds `invalid_*` fixtures
//! that report exactly that code (and no other error) and `valid_*` fixtures that report no
//! error. A `*.json` fixture is a goal file, given to `goal create`; a `*.proposal.json`
//! fixture is a planner's answer to a replan of `base-goal.json` after its root failed.
//! Each invalid fixture's findings are snapshotted beside it (`<name>.snap`).
//!
//! LW1012 (work-output-mismatch) is a refused `goal report`, not a finding in a document,
//! and LW1019 (alters-finished-work) and LW1020 (work-input-too-large) need a goal part-way
//! through a run; `tests/it/goals.rs`, `tests/it/adapt.rs` and the resolver's own tests cover
//! them.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use lwir_goals::GoalError;
use lwir_goals::goal::Replanned;
use lwir_spec::codes::Stage;
use lwir_spec::{Code, Finding};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// The findings of `fixture` (`None`: accepted).
fn findings_of(fixture: &Path) -> Option<Vec<Finding>> {
    let bytes = fs::read(fixture).expect("readable fixture");
    let world = World::new();
    if fixture.to_string_lossy().ends_with(".proposal.json") {
        let base: serde_json::Value =
            serde_json::from_slice(&fs::read(corpus().join("base-goal.json")).unwrap()).unwrap();
        let goal = world.create(&base);
        fail_until_spent(&world, &goal, "notes");
        let answer: serde_json::Value = serde_json::from_slice(&bytes).expect("fixture is JSON");
        match world
            .goals()
            .replan(&goal, &mut Script::new(vec![Ok(answer)]), None)
        {
            Ok(Replanned::Failed {
                findings: Some((_, findings)),
                ..
            }) => Some(findings),
            Ok(Replanned::AwaitingReview { .. }) => None,
            other => panic!("{}: unexpected outcome {other:?}", fixture.display()),
        }
    } else {
        match world.goals().create(bytes) {
            Ok(_) => None,
            Err(GoalError::Findings { findings, .. }) => Some(findings),
            Err(e) => panic!("{}: {e}", fixture.display()),
        }
    }
}

fn render(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        out.push_str(&format!(
            "{} {} {} at `{}` (bytes {}..{}): {}\n",
            f.code,
            f.code.name(),
            f.severity.as_str(),
            f.pointer,
            f.span.start(),
            f.span.end(),
            f.message
        ));
        if let Some(help) = &f.help {
            out.push_str(&format!("  help: {help}\n"));
        }
        for r in &f.related {
            out.push_str(&format!("  related `{}`: {}\n", r.pointer, r.message));
        }
    }
    out
}

fn fixtures() -> Vec<(Code, PathBuf)> {
    let mut all = Vec::new();
    for entry in fs::read_dir(corpus()).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let code = Code::parse(&name).unwrap_or_else(|| panic!("folder {name} is not a code"));
        for file in fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_some_and(|e| e == "json") {
                all.push((code, file));
            }
        }
    }
    all.sort();
    all
}

#[test]
fn every_fixture_reports_its_code_alone() {
    for (code, path) in fixtures() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let findings = findings_of(&path);
        if name.starts_with("valid_") {
            let errors: Vec<String> = findings
                .unwrap_or_default()
                .iter()
                .filter(|f| f.is_error())
                .map(|f| format!("{} {}", f.code, f.message))
                .collect();
            assert!(errors.is_empty(), "{name}: {errors:#?}");
            continue;
        }
        assert!(
            name.starts_with("invalid_"),
            "{name} is neither valid_* nor invalid_*"
        );
        let findings = findings.unwrap_or_else(|| panic!("{name}: accepted, expected {code}"));
        let codes: Vec<Code> = findings
            .iter()
            .filter(|f| f.is_error())
            .map(|f| f.code)
            .collect();
        assert!(
            codes.contains(&code),
            "{name}: expected {code}, found {codes:?}"
        );
        assert!(
            codes.iter().all(|c| *c == code),
            "{name}: only {code} expected, found {codes:?}"
        );
        let stem = name.trim_end_matches(".json").replace('.', "_");
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(path.parent().unwrap());
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        settings.bind(|| insta::assert_snapshot!(stem, render(&findings)));
    }
}

#[test]
fn every_goal_code_has_fixtures() {
    let all = fixtures();
    for &code in Code::ALL {
        if code.stage() != Stage::Goal
            || matches!(
                code,
                Code::WorkOutputMismatch | Code::AltersFinishedWork | Code::WorkInputTooLarge
            )
        {
            continue;
        }
        let names: Vec<String> = all
            .iter()
            .filter(|(c, _)| *c == code)
            .map(|(_, p)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().any(|n| n.starts_with("invalid_")),
            "{code} has no invalid_* fixture"
        );
        assert!(
            names.iter().any(|n| n.starts_with("valid_")),
            "{code} has no valid_* fixture"
        );
    }
}
