//! The independent LWIR validators. Each module checks one concern over the typed views of
//! `lwir-spec` and pushes every finding it sees; none stops at the first. [`validate`] runs
//! them all and merges their findings in reading order.
//!
//! | module | checks |
//! |---|---|
//! | [`shape`] | the meta-schemas of both documents, the LWIR version, the JSON Schema subset |
//! | `capability` | tool references and literal arguments |
//! | `model` | model-slot references and requirements |
//! | [`expr`] | expressions: syntax, whitelist, scopes, types (`scope`, `typer`, `calls`, `plan`) |
//! | [`compat`] | values flowing into schemas (LW501, LW502), for `expr` |
//! | `graph` | ids, `after`, data references, cycles, the workflow name and the bounds |
//!
//! [`pipeline`] is the validation pipeline over them: the bytes of a draft and of its
//! definition in, the findings and the draft's version out.

use lwir_spec::finding::sort_findings;
use lwir_spec::ir::{Definition, Draft};
use lwir_spec::suggest::suggest;
use lwir_spec::{Applicability, Code, Finding, Fix, Span, SpannedDocument};

mod capability;
pub mod compat;
pub mod expr;
mod graph;
mod literal;
mod model;
pub mod pipeline;
pub mod shape;
mod subset;
pub mod types;

/// What the validators look at: the draft and, when given, the definition.
pub(crate) struct Context<'d> {
    pub(crate) draft_doc: &'d SpannedDocument,
    pub(crate) draft: Draft<'d>,
    pub(crate) definition: Option<(&'d SpannedDocument, Definition<'d>)>,
}

/// Everything the validators say about a draft.
#[derive(Debug)]
pub struct Checked {
    /// Every finding, sorted by position.
    pub findings: Vec<Finding>,
    /// The compiled expression plan: each expression and template, typed, with its cost bound.
    pub plan: expr::Plan,
}

/// Runs every validator over `draft` (and `definition`, when given) and returns their
/// findings sorted by position: the draft's, then the definition's own
/// ([`validate_definition`]). Without a definition the checks that need one are skipped
/// and one [`Code::DefinitionNotProvided`] warning says so.
pub fn validate(draft: &SpannedDocument, definition: Option<&SpannedDocument>) -> Vec<Finding> {
    check(draft, definition, false).findings
}

/// Like [`validate`], and also returns the compiled expression plan.
pub fn run(draft: &SpannedDocument, definition: Option<&SpannedDocument>) -> Checked {
    check(draft, definition, true)
}

/// [`check_draft`] and the definition's own findings, in reading order.
fn check(draft: &SpannedDocument, definition: Option<&SpannedDocument>, plan: bool) -> Checked {
    let mut report = check_draft(draft, definition, plan);
    if let Some(definition) = definition {
        report.findings.extend(validate_definition(definition));
        sort_findings(&mut report.findings);
    }
    report
}

/// The definition's own findings, which no draft changes: its meta-schema, the JSON Schema
/// subset of its schemas, and its planner's model slot. Each is marked as being in the
/// definition.
pub fn validate_definition(definition: &SpannedDocument) -> Vec<Finding> {
    let def = Definition::new(definition.root());
    let mut findings = Vec::new();
    shape::check_definition(definition, &def, &mut findings);
    model::planner_slot(&def, &mut findings);
    sort_findings(&mut findings);
    findings
}

/// The draft's findings against `definition` (when given), without the definition's own
/// ([`validate_definition`]): for a definition checked once and used for many drafts.
/// With `plan`, also the compiled expression plan.
pub fn check_draft(
    draft: &SpannedDocument,
    definition: Option<&SpannedDocument>,
    plan: bool,
) -> Checked {
    check_draft_memo(draft, definition, plan, None)
}

/// [`check_draft`] of a revision of a draft, with what the expression pass kept of the
/// last revision it checked (`memo`): the steps whose checks would read the same are not
/// checked again, and `memo` is left holding this revision's results. The findings are
/// the same as [`check_draft`]'s.
pub fn check_draft_memo(
    draft: &SpannedDocument,
    definition: Option<&SpannedDocument>,
    plan: bool,
    memo: Option<&mut expr::Memo>,
) -> Checked {
    check_draft_beside(draft, definition, plan, memo, None::<fn()>).0
}

/// [`check_draft_memo`], and `beside` run on another thread from the end of the expression
/// pass on: until then both cores have passes to run, and from then on only the graph
/// pass is left (one core) — the hash of the version is worked out there.
pub(crate) fn check_draft_beside<T: Send>(
    draft: &SpannedDocument,
    definition: Option<&SpannedDocument>,
    plan: bool,
    memo: Option<&mut expr::Memo>,
    beside: Option<impl FnOnce() -> T + Send>,
) -> (Checked, Option<T>) {
    let cx = Context {
        draft_doc: draft,
        draft: Draft::new(draft.root()),
        definition: definition.map(|d| (d, Definition::new(d.root()))),
    };
    // The meta-schema, capability and model passes are independent of the expression and
    // graph passes: they run on another thread while those run here (the expression pass
    // itself on two threads when the draft is large). The findings are put together in
    // the order the passes ran in one after the other (shape, expressions, graph,
    // capabilities, models), so the order — and the sort after — is the same.
    let (steps_memo, shape_memo) = match memo {
        Some(m) => (Some(&mut m.steps), Some(&mut m.shape)),
        None => (None, None),
    };
    let other = |memo: Option<&mut shape::Memo>| {
        let mut first = Vec::new();
        shape::check(&cx, &mut first, memo);
        let mut last = Vec::new();
        if cx.definition.is_some() {
            capability::check(&cx, &mut last);
            model::check(&cx, &mut last);
        }
        (first, last)
    };
    let beside = beside.map(|f| std::sync::Mutex::new(Some(f)));
    let ((mut findings, mut last), mut rest, analysis, ran) = std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("lwirc-shape".into())
            // The main thread's stack: the passes recurse as deep as the document nests.
            .stack_size(8 * 1024 * 1024)
            .spawn_scoped(scope, || other(shape_memo));
        let mut rest = Vec::new();
        let analysis = expr::check(&cx, &mut rest, plan, steps_memo);
        let beside = beside.as_ref().map(|f| {
            std::thread::Builder::new()
                .name("lwirc-beside".into())
                .stack_size(8 * 1024 * 1024)
                .spawn_scoped(scope, || {
                    f.lock().ok().and_then(|mut f| f.take()).map(|f| f())
                })
        });
        let (first, last) = match handle {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No thread to be had: the passes run here (without the memo, which went with
            // the thread; what it holds is keyed by text, and stays true).
            Err(_) => other(None),
        };
        graph::check(&cx, analysis.all_references(), &mut rest);
        let beside = beside.and_then(|thread| match thread {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No thread to be had: it runs here.
            Err(_) => None,
        });
        ((first, last), rest, analysis, beside)
    });
    // What the thread did not run (there was none) runs here.
    let beside = ran.or_else(|| {
        let f = beside?.into_inner().ok()??;
        Some(f())
    });
    findings.append(&mut rest);
    findings.append(&mut last);
    if cx.definition.is_none() {
        let root = draft.root().span;
        findings.push(
            Finding::new(
                Code::DefinitionNotProvided,
                "",
                Span::new(root.start(), root.start() + 1),
                "validated without a definition: tools, model slots, the workflow name and limits were not checked",
            )
            .with_help("pass the workflow definition with `-d workflow.json`"),
        );
    }
    sort_findings(&mut findings);
    let checked = Checked {
        findings,
        plan: analysis.plan,
    };
    (checked, beside)
}

/// The first byte of a value: where a finding about a whole object or array points, so
/// that it underlines `{` rather than a hundred lines.
pub(crate) fn head(span: Span) -> Span {
    Span::new(span.start(), (span.start() + 1).min(span.end()))
}

/// `finding` about the unknown name `wrong`, with help: "did you mean" the closest of
/// `names` (and the fix `fix` makes of it, if any) when one is close, else what
/// `otherwise` says given the names listed ("`a`, `b` or `c`", empty when there are none).
pub(crate) fn unknown_name<'a>(
    finding: Finding,
    wrong: &str,
    names: impl Iterator<Item = &'a str> + Clone,
    fix: impl FnOnce(&'a str, Applicability) -> Option<Fix>,
    otherwise: impl FnOnce(&str) -> String,
) -> Finding {
    match suggest(wrong, names.clone()) {
        Some((candidate, applicability)) => {
            let finding = finding.with_help(format!("did you mean `{candidate}`?"));
            match fix(candidate, applicability) {
                Some(fix) => finding.with_fix(fix),
                None => finding,
            }
        }
        None => finding.with_help(otherwise(&one_of(names))),
    }
}

/// The fix replacing the value at `at` with the suggested name.
pub(crate) fn replace_at(at: &str) -> impl FnOnce(&str, Applicability) -> Option<Fix> + '_ {
    move |candidate, applicability| Some(Fix::replace(applicability, at, candidate))
}

/// `a`, `b` and `c` as "`a`, `b` or `c`": alternatives.
pub(crate) fn one_of<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    listing(names, "or")
}

/// `a`, `b` and `c` as "`a`, `b` and `c`": all of them.
pub(crate) fn all_of<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    listing(names, "and")
}

fn listing<'a>(names: impl IntoIterator<Item = &'a str>, conjunction: &str) -> String {
    let names: Vec<String> = names.into_iter().map(|n| format!("`{n}`")).collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} {conjunction} {last}", rest.join(", ")),
    }
}

/// The types a JSON Schema `type` error expected, as `string` or `integer or null`.
pub(crate) fn expected_types(kind: &jsonschema::error::TypeKind) -> String {
    match kind {
        jsonschema::error::TypeKind::Single(t) => t.to_string(),
        jsonschema::error::TypeKind::Multiple(set) => set
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(" or "),
    }
}
