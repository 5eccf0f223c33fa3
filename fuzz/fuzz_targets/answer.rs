//! A planner's standard output through `parse_answer`, then the draft it carries through the
//! whole validation pipeline (with the compiled expression plan) against the shipped example
//! definition, `examples/issue-triage/workflow.json`, as `lwirc compile` does.
//!
//! Never panics; the human, JSON and SARIF reports render (the last two as JSON); a version is given exactly when there are no errors, and every finding on
//! the draft points inside the draft's bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lwir_render as render;
use lwir_repair::protocol::{Answer, MAX_RATIONALE_CHARS, parse_answer};
use lwir_session::{PipelineCheck, checked};
use lwir_spec::Origin;

fuzz_target!(init: lwirc_fuzz::init(), |data: &[u8]| {
    match parse_answer(data) {
        Ok(Answer::Draft { lwir }) => {
            let check = PipelineCheck::new(lwirc_fuzz::definition(), "draft.json");
            let validation = check.compiled(&lwir);
            assert_eq!(validation.version.is_some(), !validation.has_errors());
            for f in &validation.findings {
                let len = match f.origin {
                    Origin::Draft => lwir.len(),
                    Origin::Definition => lwirc_fuzz::DEFINITION.len(),
                    Origin::Planner => panic!("a planner finding from validation: {f:?}"),
                };
                assert!(
                    f.span.start() <= f.span.end() && f.span.end() <= len,
                    "{} {} span {:?} outside {len} bytes",
                    f.code.as_str(),
                    f.pointer,
                    f.span
                );
            }
            // The three reports `lwirc validate` prints; the JSON ones are JSON.
            // The human report (miette) costs more than the validation: one draft in four.
            if lwir.len() % 4 == 0 {
                let _ = render::human::render(&validation, render::human::HumanOptions::default());
            }
            for report in [render::json::render(&validation), render::sarif::render(&validation)] {
                if let Err(e) = serde_json::from_str::<serde_json::Value>(&report) {
                    panic!("a report is not JSON ({e}):\n{report}");
                }
            }
            // What the repair loop and the planner see of it.
            let c = checked(validation);
            let _ = serde_json::to_vec(&c.findings_json);
        }
        Ok(Answer::Attention { rationale }) => {
            // The cut keeps at most the limit, plus the `…` marking it.
            assert!(rationale.chars().count() <= MAX_RATIONALE_CHARS + 1);
        }
        Err(_) => {}
    }
});
