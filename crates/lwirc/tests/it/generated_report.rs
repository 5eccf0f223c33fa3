//! The findings on a generated 10 000-step draft (the benchmarks' draft with a misspelt model
//! slot in every 7th step and a misspelt input field in every 11th) stay what they are while
//! the validators are made faster: the whole JSON report is pinned by its SHA-256, and its
//! first findings are shown in the snapshot.

#[path = "../../benches/generated/mod.rs"]
mod generated;

use lwir_validators::pipeline::{self, Source};

/// `draft` with `edit` made to each of its top-level steps (given its index), pretty-printed.
fn edit_steps(draft: Vec<u8>, mut edit: impl FnMut(usize, &mut serde_json::Value)) -> Vec<u8> {
    let mut value: serde_json::Value = serde_json::from_slice(&draft).unwrap();
    for (i, step) in value["steps"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        edit(i, step);
    }
    serde_json::to_vec_pretty(&value).unwrap()
}

/// The JSON report of validating `draft` (`draft.json`) against `definition`
/// (`workflow.json`).
fn report(draft: Vec<u8>, definition: Vec<u8>) -> String {
    let validation = pipeline::validate(
        Source {
            name: "draft.json".into(),
            bytes: draft,
        },
        Some(Source {
            name: "workflow.json".into(),
            bytes: definition,
        }),
    );
    lwir_render::json::render(&validation)
}

/// The draft with a mistake in every 7th and every 11th step.
fn with_mistakes(draft: Vec<u8>) -> Vec<u8> {
    edit_steps(draft, |i, step| {
        if i % 7 == 0 && step["kind"] == "model.call" {
            step["model"] = "fats".into();
        }
        if i % 11 == 0 && step["kind"] == "map" {
            step["over"] = "${ input.itmes }".into();
        }
    })
}

#[test]
fn the_report_of_a_generated_10000_step_draft_is_unchanged() {
    let report = report(
        with_mistakes(generated::draft(10_000)),
        generated::definition(10_000),
    );
    let json: serde_json::Value = serde_json::from_str(&report).unwrap();
    let findings = json["findings"].as_array().unwrap();
    let mut summary = format!(
        "{} findings, {} errors; report sha256 {}\n",
        findings.len(),
        json["summary"]["errors"],
        lwir_spec::digest::sha256_hex(report.as_bytes())
    );
    for f in findings.iter().take(5) {
        summary.push_str(&format!(
            "{} {} {}..{}: {}\n",
            f["code"].as_str().unwrap(),
            f["pointer"].as_str().unwrap(),
            f["span"]["start"],
            f["span"]["end"],
            f["message"].as_str().unwrap()
        ));
    }
    insta::assert_snapshot!(summary);
}

/// The real-expression draft with mistakes: a misspelt field read in every 7th template, a
/// step that does not exist in every 13th and a syntax error in every 17th, each the same
/// text in many places (so that the caches are hit with findings to report).
fn real_with_mistakes(draft: Vec<u8>) -> Vec<u8> {
    edit_steps(draft, |i, step| {
        let Some(args) = step.get_mut("args").and_then(|a| a.as_object_mut()) else {
            return;
        };
        if i % 7 == 0 {
            args.insert(
                "repo".into(),
                "${ input.rpeo.lower() } of ${ input.repo }".into(),
            );
        }
        if i % 13 == 0 {
            args.insert("repo".into(), "${ steps.nope.output.items[0] }".into());
        }
        if i % 17 == 0 {
            args.insert("repo".into(), "x ${ size(input.repo) + } y".into());
        }
    })
}

/// The expression validator's caches change nothing in the reports of the generated drafts,
/// both shapes, with mistakes.
#[test]
fn caches_change_no_generated_report() {
    let drafts = [
        (
            with_mistakes(generated::draft(2_000)),
            generated::definition(2_000),
        ),
        (
            generated::real_draft(2_000),
            generated::real_definition(2_000),
        ),
        (
            real_with_mistakes(generated::real_draft(2_000)),
            generated::real_definition(2_000),
        ),
    ];
    for (draft, definition) in drafts {
        let run = || report(draft.clone(), definition.clone());
        let cached = run();
        let straight = lwir_validators::expr::without_caches(run);
        assert!(cached.contains("\"findings\""));
        assert_eq!(cached, straight);
    }
}

/// The expression pass split over two threads (as it is, near the middle, on drafts this
/// large, and at a few other places) finds what it finds on one thread: the generated
/// drafts' reports, both shapes, with mistakes.
#[test]
fn halves_change_no_generated_report() {
    use lwir_validators::expr::with_split;
    let drafts = [
        (
            with_mistakes(generated::draft(2_000)),
            generated::definition(2_000),
        ),
        (
            real_with_mistakes(generated::real_draft(2_000)),
            generated::real_definition(2_000),
        ),
    ];
    for (draft, definition) in drafts {
        let steps = serde_json::from_slice::<serde_json::Value>(&draft).unwrap()["steps"]
            .as_array()
            .unwrap()
            .len();
        let run = || report(draft.clone(), definition.clone());
        let whole = with_split(None, run);
        assert!(whole.contains("\"findings\""));
        // Where a large draft is split depends on how fast each thread goes: any
        // boundary gives the same report.
        for round in 0..6 {
            assert_eq!(run(), whole, "split where the threads met, round {round}");
        }
        for k in [1, 2, steps / 3, steps - 1] {
            assert_eq!(with_split(Some(k), run), whole, "split before step {k}");
        }
    }
}

/// A draft read on two threads (as one of a mebibyte or more is, and from a few other
/// places) is reported as when it is read on one: the generated drafts, both shapes, with
/// mistakes.
#[test]
fn reading_on_two_threads_changes_no_generated_report() {
    use lwir_spec::document::with_read_split;
    let drafts = [
        (
            with_mistakes(generated::draft(4_000)),
            generated::definition(4_000),
        ),
        (
            real_with_mistakes(generated::real_draft(3_000)),
            generated::real_definition(3_000),
        ),
    ];
    for (draft, definition) in drafts {
        assert!(
            draft.len() > 1 << 20,
            "large enough to be read on two threads"
        );
        let run = || report(draft.clone(), definition.clone());
        let one = with_read_split(None, run);
        assert!(one.contains("\"findings\""));
        assert_eq!(run(), one, "read on two threads where a large draft is");
        for at in [0, 1, draft.len() / 3, draft.len() - 100] {
            assert_eq!(
                with_read_split(Some(at), run),
                one,
                "second thread from byte {at}"
            );
        }
    }
}
