//! Property: applying every machine-applicable fix (as `lwirc fix` does) never adds an
//! error, on drafts generated with injected mistakes, and each mistake that has one unique
//! answer is fixed.
//!
//! A clean draft (issue-triage-like: a tool call, a map over a model call, a loop) has
//! placeholders; each is filled with its correct text or with one of several mistakes:
//! names in closed sets off by case, separators or one edit (tools, kinds, slots, argument
//! names, enum values, roots and functions of expressions, `after` entries), bounds above
//! the limits, literals of the wrong type, duplicate keys, wrong header fields, and some
//! mistakes that have no certain fix.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use lwir_repair::fixes::{Check, Checked, fix_draft};
use lwir_spec::Code;
use lwir_validators::pipeline::{Definition, Source, validate_against};
use proptest::prelude::*;

const DRAFT: &str = r#"{
  "lwir": LWIR,
  "workflow": WORKFLOW,
  "steps": [
    { "id": "issues", "kind": KIND, "tool": TOOL,
      "args": { "repo": "${ ROOT.repo }", STATE_KEY: STATE, "per_page": PER_PAGEDUPLICATE } },
    { "id": "each", "kind": "map", "over": "${ steps.issues.output.items }", "as": "issue", "max_parallel": PARALLEL,
      "steps": [
        { "id": "classify", "kind": "model.call", "model": SLOT,
          "prompt": "Classify issue #${ issue.number }: ${ FUNCTION(issue.title) }",
          "output": { "type": "object", "properties": { "label": { "enum": ["bug", "feature", "question"] } }, "required": ["label"] } }
      ],
      "result": "${ steps.classify.output.label }" },
    { "id": "wait", "kind": "loop", "max_iterations": ITERATIONS, "after": AFTER,
      "until": "${ size(steps.poll.output.items) == 0 }",
      "steps": [
        { "id": "poll", "kind": "tool.call", "tool": "github.list_issues", "args": { "repo": "${ input.repo }" } } ] }
  ]
}
"#;

/// A placeholder's name, the part of the draft it is in, and its texts.
type Place = (&'static str, &'static str, &'static [(&'static str, bool)]);

/// Each placeholder, the part of the draft it is in (a mistake there may hide others in
/// it: a step of an unknown kind is not checked further), and its correct text first, then
/// mistakes: `(text, certain)`, where `certain` says the mistake has exactly one right
/// answer that `lwirc fix` must find.
const PLACES: &[Place] = &[
    (
        "LWIR",
        "/lwir",
        &[
            ("\"1\"", true),
            ("\"2\"", true),
            ("1", true),
            ("\"1.0\"", true),
        ],
    ),
    (
        "WORKFLOW",
        "/workflow",
        &[
            ("\"issue-triage\"", true),
            ("\"issue-triag\"", true),
            ("\"other\"", true),
        ],
    ),
    (
        "KIND",
        "/steps/0",
        &[
            ("\"tool.call\"", true),
            ("\"tool_call\"", true),
            ("\"Tool.Call\"", true),
            ("\"tool.cal\"", true),
            ("\"call\"", false),
        ],
    ),
    (
        "TOOL",
        "/steps/0",
        &[
            ("\"github.list_issues\"", true),
            ("\"GitHub.list-issues\"", true),
            ("\"github.list_isues\"", true),
            ("\"github_list_issues\"", true),
            ("\"slack.post\"", false),
        ],
    ),
    (
        "ROOT",
        "/steps/0/args/repo",
        &[
            ("input", true),
            ("Input", true),
            ("inptu", true),
            ("env", false),
        ],
    ),
    (
        "STATE_KEY",
        "/steps/0/args",
        &[("\"state\"", true), ("\"State\"", true), ("\"stat\"", true)],
    ),
    (
        "STATE",
        "/steps/0/args/state",
        &[
            ("\"open\"", true),
            ("\"Open\"", true),
            ("\"OPEN\"", true),
            ("\"opened\"", false),
            ("5", false),
        ],
    ),
    (
        "PER_PAGE",
        "/steps/0/args/per_page",
        &[
            ("50", true),
            ("\"50\"", true),
            ("\"050\"", false),
            ("\"fifty\"", false),
            ("500", false),
        ],
    ),
    (
        "DUPLICATE",
        "/steps/0/args/per_page",
        &[
            ("", true),
            (", \"per_page\": 50", true),
            (", \"per_page\": 7", false),
        ],
    ),
    (
        "PARALLEL",
        "/steps/1/max_parallel",
        &[("8", true), ("16", true), ("17", true), ("100000", true)],
    ),
    (
        "SLOT",
        "/steps/1/steps/0/model",
        &[
            ("\"fast\"", true),
            ("\"Fast\"", true),
            ("\"fats\"", true),
            ("\"tiny\"", false),
        ],
    ),
    (
        "FUNCTION",
        "/steps/1/steps/0/prompt",
        &[
            ("size", true),
            ("Size", true),
            ("sise", true),
            ("shout", false),
        ],
    ),
    (
        "ITERATIONS",
        "/steps/2/max_iterations",
        &[
            ("10", true),
            ("\"10\"", true),
            ("1000", true),
            ("\"ten\"", false),
        ],
    ),
    (
        "AFTER",
        "/steps/2/after",
        &[
            ("[\"each\"]", true),
            ("\"each\"", true),
            ("[\"eahc\"]", true),
            ("[\"nothing_like_it\"]", false),
        ],
    ),
];

fn definition() -> Arc<Definition> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/workflow.json");
    Arc::new(Definition::read(Source {
        name: "workflow.json".to_owned(),
        bytes: std::fs::read(path).expect("the shared definition"),
    }))
}

struct PipelineCheck(Arc<Definition>);

impl Check for PipelineCheck {
    fn check(&mut self, bytes: &[u8]) -> Checked {
        let mut validation = validate_against(
            Source {
                name: "draft.json".to_owned(),
                bytes: bytes.to_vec(),
            },
            &self.0,
        );
        let findings_json = lwir_render::json::findings(&validation);
        let state = validation
            .digest
            .take()
            .unwrap_or_else(|| format!("bytes:{}", lwir_spec::canon::sha256_of(bytes)));
        Checked {
            findings: std::mem::take(&mut validation.findings),
            findings_json,
            state,
            version: validation.version.take(),
            document: validation.into_document().map(Arc::new),
        }
    }
}

fn errors(checked: &Checked) -> BTreeSet<(Code, String)> {
    checked
        .findings
        .iter()
        .filter(|f| f.is_error())
        .map(|f| (f.code, f.pointer.clone()))
        .collect()
}

/// One choice per placeholder: an index into its variants.
fn choices() -> impl Strategy<Value = Vec<usize>> {
    let per_place: Vec<BoxedStrategy<usize>> = PLACES
        .iter()
        .map(|(_, _, variants)| {
            // Mostly correct, so that drafts hold a few mistakes rather than all of them.
            prop_oneof![3 => Just(0usize), 2 => 0..variants.len()].boxed()
        })
        .collect();
    per_place
}

/// The draft for `choice`, whether every mistake in it is certain, and the parts of the
/// draft that hold a mistake.
fn draft(choice: &[usize]) -> (String, bool, Vec<&'static str>) {
    let mut text = DRAFT.to_owned();
    let mut all_certain = true;
    let mut wrong = Vec::new();
    for ((name, at, variants), &i) in PLACES.iter().zip(choice) {
        let (value, certain) = variants[i];
        all_certain &= certain;
        if i > 0 {
            wrong.push(*at);
        }
        text = text.replacen(name, value, 1);
    }
    (text, all_certain, wrong)
}

/// Whether `pointer` is `at` or inside it.
fn inside(pointer: &str, at: &str) -> bool {
    pointer == at || pointer.starts_with(&format!("{at}/"))
}

#[test]
fn the_template_is_clean() {
    let mut check = PipelineCheck(definition());
    let (text, _, _) = draft(&vec![0; PLACES.len()]);
    let checked = check.check(text.as_bytes());
    assert!(errors(&checked).is_empty(), "{:#?}", checked.findings);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn machine_applicable_fixes_never_add_an_error(choice in choices()) {
        let mut check = PipelineCheck(definition());
        let (text, all_certain, wrong) = draft(&choice);
        let before = check.check(text.as_bytes());
        let outcome = fix_draft(&mut check, text.clone().into_bytes(), false);
        let old = errors(&before);
        let new = errors(&outcome.checked);
        // An error the draft did not report may only be one its own mistakes hid (a tool
        // not checked while its step's kind was unknown), never one at a place the author
        // got right.
        let added: Vec<_> = new
            .difference(&old)
            .filter(|(_, pointer)| !wrong.iter().any(|at| inside(pointer, at)))
            .collect();
        prop_assert!(added.is_empty(), "the fixes add {:?} to\n{}\ngiving\n{}", added, text,
            String::from_utf8_lossy(&outcome.draft));
        // Every injected mistake had one right answer: nothing is left.
        if all_certain {
            prop_assert!(new.is_empty(), "left {:?} in\n{}\nfrom\n{}", new,
                String::from_utf8_lossy(&outcome.draft), text);
        }
    }
}
