//! The fixture corpus under `cases/`: for every code, drafts that trigger it (snapshotted,
//! human and JSON reports) and drafts near them that must not; that every code is covered;
//! that every fix applies and fixes; and that the issue-triage example reports what it shows.
//!
//! See `README.md` for the layout of `cases/`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use lwir_render::human::HumanOptions;
use lwir_spec::codes::Stage;
use lwir_spec::document::{self, SpannedDocument};
use lwir_spec::{Code, Finding, Origin, PatchOp, Span, Value};
use lwir_validators::expr::Memo;
use lwir_validators::pipeline::{Definition, Source, Validation, validate, validate_read};
use std::sync::Arc;

#[path = "../../../lwirc/benches/generated/mod.rs"]
mod generated;

/// The content of a definition file that means "validate without a definition".
const NO_DEFINITION: &[u8] = b"null";

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn cases_dir() -> PathBuf {
    crate_dir().join("cases")
}

/// `workflow.json` and `*.workflow.json` are definitions, never fixtures.
fn is_definition(path: &Path) -> bool {
    let name = file_name(path);
    name == "workflow.json" || name.ends_with(".workflow.json")
}

fn file_name(path: &Path) -> &str {
    path.file_name()
        .and_then(|n| n.to_str())
        .expect("UTF-8 file name")
}

/// `LW301/invalid_typo.json` for `…/cases/LW301/invalid_typo.json`: the stable name the
/// reports show, whatever the checkout's absolute path.
fn case_name(path: &Path) -> String {
    let folder = path.parent().map_or("", file_name);
    format!("{folder}/{}", file_name(path))
}

fn read(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// `invalid_*`: must report the folder's code.
    Invalid,
    /// `valid_*`: must report no error and nothing of the folder's code.
    Valid,
}

/// A fixture: a draft in a code's folder.
struct Fixture {
    path: PathBuf,
    code: Code,
    expect: Expect,
}

impl Fixture {
    fn new(path: &Path) -> Self {
        let folder = path.parent().map_or("", file_name);
        let code = Code::parse(folder)
            .filter(|c| c.as_str() == folder)
            .unwrap_or_else(|| panic!("{}: folder `{folder}` is not a code", path.display()));
        let name = file_name(path);
        let expect = if name.starts_with("invalid_") {
            Expect::Invalid
        } else if name.starts_with("valid_") {
            Expect::Valid
        } else {
            panic!(
                "{}: fixture names start with `invalid_` or `valid_`",
                case_name(path)
            );
        };
        Self {
            path: path.to_owned(),
            code,
            expect,
        }
    }

    fn stem(&self) -> &str {
        let name = file_name(&self.path);
        name.strip_suffix(".json").unwrap_or(name)
    }

    /// The draft as given to the pipeline.
    fn draft(&self) -> Source {
        Source {
            name: case_name(&self.path),
            bytes: read(&self.path),
        }
    }

    /// The fixture's definition: `<stem>.workflow.json` beside it, else its folder's
    /// `workflow.json`, else the shared `cases/workflow.json`; `null` means none.
    fn definition(&self) -> Option<Source> {
        let dir = self.path.parent().expect("fixture in a folder");
        let candidates = [
            dir.join(format!("{}.workflow.json", self.stem())),
            dir.join("workflow.json"),
            cases_dir().join("workflow.json"),
        ];
        let path = candidates
            .iter()
            .find(|p| p.is_file())
            .expect("the shared workflow.json exists");
        let bytes = read(path);
        if bytes.trim_ascii() == NO_DEFINITION {
            return None;
        }
        let name = if path.parent() == Some(cases_dir().as_path()) {
            file_name(path).to_owned()
        } else {
            case_name(path)
        };
        Some(Source { name, bytes })
    }

    fn validate(&self) -> Validation {
        validate(self.draft(), self.definition())
    }
}

/// Every fixture under `cases/`, sorted by path.
fn all_fixtures() -> Vec<Fixture> {
    let mut paths = Vec::new();
    for folder in fs::read_dir(cases_dir()).expect("cases/ exists") {
        let folder = folder.expect("readable cases/").path();
        if !folder.is_dir() {
            continue;
        }
        for entry in fs::read_dir(&folder).expect("readable case folder") {
            let path = entry.expect("readable case folder").path();
            if path.extension().is_some_and(|e| e == "json") && !is_definition(&path) {
                paths.push(path);
            }
        }
    }
    paths.sort();
    paths.iter().map(|p| Fixture::new(p)).collect()
}

fn codes_of(validation: &Validation) -> BTreeSet<&'static str> {
    validation
        .findings
        .iter()
        .map(|f| f.code.as_str())
        .collect()
}

/// The human report without colour at width 100, then the JSON report.
fn report(validation: &Validation) -> String {
    let human = lwir_render::human::render(
        validation,
        HumanOptions {
            color: false,
            width: 100,
        },
    );
    let json = lwir_render::json::render(validation);
    format!("{human}\n{json}\n")
}

/// The expression validator's caches (parsed string values, derived output types) change
/// nothing: every fixture's reports are the same with them off.
#[test]
fn caches_change_no_report() {
    for fixture in all_fixtures() {
        let cached = report(&fixture.validate());
        let straight = lwir_validators::expr::without_caches(|| report(&fixture.validate()));
        assert_eq!(cached, straight, "{}", case_name(&fixture.path));
    }
}

/// The expression pass split over two threads finds what it finds on one: every fixture's
/// reports are the same split before each of its top-level steps (a large draft is split
/// near the middle; here the split is forced wherever it can be).
#[test]
fn halves_change_no_report() {
    use lwir_validators::expr::with_split;
    let mut splits = 0;
    for fixture in all_fixtures() {
        let whole = with_split(None, || report(&fixture.validate()));
        let steps = serde_json::from_slice::<serde_json::Value>(&fixture.draft().bytes)
            .ok()
            .and_then(|d| Some(d.get("steps")?.as_array()?.len()))
            .unwrap_or(0);
        for k in 1..steps {
            let split = with_split(Some(k), || report(&fixture.validate()));
            assert_eq!(
                split,
                whole,
                "{}: split before top-level step {k}",
                case_name(&fixture.path)
            );
            splits += 1;
        }
    }
    // Many fixtures have several top-level steps (a hundred splits in all).
    assert!(splits > 50, "only {splits} splits were tried");
}

/// Each `invalid_*` fixture reports its folder's code and its reports are snapshotted
/// beside it (`invalid_typo.json` → `invalid_typo.snap`); each `valid_*` fixture reports no
/// error and nothing of its folder's code.
#[test]
fn fixtures_report_their_code() {
    insta::glob!("../../cases", "*/*.json", |path| {
        if is_definition(path) {
            return;
        }
        let fixture = Fixture::new(path);
        let validation = fixture.validate();
        let code = fixture.code;
        let found = codes_of(&validation);
        match fixture.expect {
            Expect::Invalid => {
                assert!(
                    found.contains(code.as_str()),
                    "{}: expected {code}, found {found:?}",
                    case_name(path)
                );
                // One fixture, one problem: nothing else is reported, except that a draft
                // validated without a definition says so.
                let others: Vec<&str> = found
                    .iter()
                    .copied()
                    .filter(|c| *c != code.as_str())
                    .filter(|c| {
                        !(*c == Code::DefinitionNotProvided.as_str()
                            && validation.definition.is_none())
                    })
                    .collect();
                assert!(
                    others.is_empty(),
                    "{}: only {code} expected, also found {others:?}",
                    case_name(path)
                );
                let report = report(&validation);
                let mut settings = insta::Settings::clone_current();
                // `glob!` names snapshots `<name>@<path>`; the file beside the fixture
                // is named after the fixture alone.
                settings.remove_snapshot_suffix();
                settings.set_snapshot_path(path.parent().expect("fixture in a folder"));
                settings.set_prepend_module_to_snapshot(false);
                settings.set_input_file(path);
                settings.set_omit_expression(true);
                settings.bind(|| insta::assert_snapshot!(fixture.stem(), report));
            }
            Expect::Valid => {
                let unexpected: Vec<String> = validation
                    .findings
                    .iter()
                    .filter(|f| f.is_error() || f.code == code)
                    .map(|f| format!("{} at {:?}: {}", f.code, f.pointer, f.message))
                    .collect();
                assert!(
                    unexpected.is_empty(),
                    "{}: a valid fixture must report no error and no {code}, found {unexpected:#?}",
                    case_name(path)
                );
            }
        }
    });
}

/// Every code of the table has a folder with an `invalid_*` fixture that reports it and a
/// `valid_*` fixture, and documentation.
#[test]
fn every_code_is_covered() {
    let fixtures = all_fixtures();
    let mut problems = Vec::new();
    for &code in Code::ALL {
        if code.docs().trim().is_empty() || code.summary().is_empty() {
            problems.push(format!("{code} has no documentation"));
        }
        // Drift codes compare a registered version with today's definition (`lwirc drift`);
        // `validate` never reports them, so a draft fixture cannot. The compiler's drift
        // tests cover each of them. Planner codes are about the planner process and the
        // repair loop (`lwirc repair`/`compile`), covered by the compiler's repair tests.
        // Goal codes are about goal files and replan proposals: `crates/lwir-goals/tests/corpus/`
        // has their fixtures, checked the same way by `crates/lwir-goals/tests/it/corpus.rs`. Runner
        // codes are about runner processes, covered by the goals' run tests. Runtime codes
        // are about running a version, covered by `crates/lwir-runtime/tests/`.
        if matches!(
            code.stage(),
            Stage::Drift | Stage::Planner | Stage::Goal | Stage::Runner | Stage::Runtime
        ) {
            continue;
        }
        let mine: Vec<&Fixture> = fixtures.iter().filter(|f| f.code == code).collect();
        let reporting = mine
            .iter()
            .filter(|f| f.expect == Expect::Invalid)
            .filter(|f| f.validate().findings.iter().any(|x| x.code == code))
            .count();
        if reporting == 0 {
            problems.push(format!("{code} has no invalid_* fixture that reports it"));
        }
        if !mine.iter().any(|f| f.expect == Expect::Valid) {
            problems.push(format!("{code} has no valid_* fixture"));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// `cases/` holds the shared definition and one folder per code; a folder holds fixtures,
/// definitions and the snapshots of its `invalid_*` fixtures, nothing else.
#[test]
fn cases_holds_only_code_folders() {
    let mut problems = Vec::new();
    for entry in fs::read_dir(cases_dir()).expect("cases/ exists") {
        let path = entry.expect("readable cases/").path();
        let name = file_name(&path).to_owned();
        if path.is_file() {
            if name != "workflow.json" {
                problems.push(format!("unexpected file cases/{name}"));
            }
            continue;
        }
        if Code::parse(&name).is_none_or(|c| c.as_str() != name) {
            problems.push(format!("folder cases/{name} is not a code"));
            continue;
        }
        for entry in fs::read_dir(&path).expect("readable case folder") {
            let file = entry.expect("readable case folder").path();
            let file_name = file_name(&file);
            if is_definition(&file) {
                if let Some(stem) = file_name.strip_suffix(".workflow.json")
                    && !path.join(format!("{stem}.json")).is_file()
                {
                    problems.push(format!("{name}/{file_name} belongs to no fixture"));
                }
            } else if file_name.ends_with(".json") {
                if !(file_name.starts_with("invalid_") || file_name.starts_with("valid_")) {
                    problems.push(format!(
                        "{name}/{file_name} is neither invalid_* nor valid_*"
                    ));
                }
            } else if let Some(stem) = file_name.strip_suffix(".fixed.snap") {
                if !stem.starts_with("invalid_") || !path.join(format!("{stem}.json")).is_file() {
                    problems.push(format!(
                        "{name}/{file_name} is the fixed snapshot of no invalid_* fixture"
                    ));
                }
            } else if let Some(stem) = file_name.strip_suffix(".snap") {
                if !stem.starts_with("invalid_") || !path.join(format!("{stem}.json")).is_file() {
                    problems.push(format!(
                        "{name}/{file_name} is the snapshot of no invalid_* fixture"
                    ));
                }
            } else if !file_name.ends_with(".snap.new") {
                problems.push(format!("unexpected file {name}/{file_name}"));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Every fix offered on a draft applies as an RFC 6902 patch, and the patched draft no
/// longer reports what the fix was for: the same code at the same pointer (for a rename,
/// the pointer the key is moved from).
#[test]
fn fixes_apply_and_resolve_their_finding() {
    let mut checked = 0;
    for fixture in all_fixtures()
        .iter()
        .filter(|f| f.expect == Expect::Invalid)
    {
        let name = case_name(&fixture.path);
        let validation = fixture.validate();
        let fixes: Vec<&Finding> = validation
            .findings
            .iter()
            .filter(|f| f.origin == Origin::Draft && f.fix.is_some())
            .collect();
        if fixes.is_empty() {
            continue;
        }
        let draft: serde_json::Value = serde_json::from_slice(&read(&fixture.path))
            .unwrap_or_else(|e| panic!("{name}: a draft with fixes is JSON: {e}"));
        for finding in fixes {
            let fix = finding.fix.as_ref().expect("filtered on fixes");
            let what = format!("{name}: fix of {} at {:?}", finding.code, finding.pointer);
            let ops = serde_json::to_value(&fix.patch).expect("patches serialise");
            let patch: json_patch::Patch = serde_json::from_value(ops)
                .unwrap_or_else(|e| panic!("{what} is not RFC 6902: {e}"));
            let mut patched = draft.clone();
            json_patch::patch(&mut patched, &patch)
                .unwrap_or_else(|e| panic!("{what} does not apply: {e}"));

            let bytes = serde_json::to_vec_pretty(&patched).expect("a JSON value serialises");
            let again = validate(
                Source {
                    name: name.clone(),
                    bytes,
                },
                fixture.definition(),
            );
            // A rename (`move`) takes the offending key away from the finding's pointer.
            if let Some(PatchOp::Move { from, .. }) = fix.patch.first() {
                assert_eq!(
                    from, &finding.pointer,
                    "{what}: a rename moves the offending key"
                );
            }
            let left: Vec<&Finding> = again
                .findings
                .iter()
                .filter(|f| {
                    f.origin == Origin::Draft
                        && f.code == finding.code
                        && f.pointer == finding.pointer
                })
                .collect();
            assert!(left.is_empty(), "{what} does not resolve it: {left:#?}");
            checked += 1;
        }
    }
    assert!(checked > 0, "the corpus offers fixes");
}

/// The repair loop's checker for a fixture: the pipeline against the fixture's definition.
struct FixtureCheck<'f>(&'f Fixture);

impl lwir_repair::fixes::Check for FixtureCheck<'_> {
    fn check(&mut self, bytes: &[u8]) -> lwir_repair::fixes::Checked {
        let mut validation = validate(
            Source {
                name: case_name(&self.0.path),
                bytes: bytes.to_vec(),
            },
            self.0.definition(),
        );
        let findings_json = lwir_render::json::findings(&validation);
        let state = validation
            .digest
            .take()
            .unwrap_or_else(|| format!("bytes:{}", lwir_spec::canon::sha256_of(bytes)));
        lwir_repair::fixes::Checked {
            findings: std::mem::take(&mut validation.findings),
            findings_json,
            state,
            version: validation.version.take(),
            document: validation.into_document().map(std::sync::Arc::new),
        }
    }
}

/// Every `invalid_*` fixture with a machine-applicable fix, fixed as `lwirc fix` fixes it:
/// each such fix is kept (never rolled back), its finding (code and pointer) is gone, no
/// error appears that was not there, and the fixed draft is snapshotted beside the fixture
/// (`invalid_typo.fixed.snap`): the fixes applied, then the draft's bytes.
#[test]
fn safe_fixes_remove_their_finding_and_add_none() {
    let mut fixed = 0;
    for fixture in all_fixtures()
        .iter()
        .filter(|f| f.expect == Expect::Invalid)
    {
        let name = case_name(&fixture.path);
        let mut check = FixtureCheck(fixture);
        let before = lwir_repair::fixes::Check::check(&mut check, &read(&fixture.path));
        let safe: Vec<(Code, String)> = before
            .findings
            .iter()
            .filter(|f| {
                f.is_error()
                    && f.origin == Origin::Draft
                    && f.fix.as_ref().is_some_and(|x| {
                        x.applicability == lwir_spec::Applicability::MachineApplicable
                    })
            })
            .map(|f| (f.code, f.pointer.clone()))
            .collect();
        if safe.is_empty() {
            continue;
        }
        let outcome = lwir_repair::fixes::fix_draft(&mut check, read(&fixture.path), false);
        let rolled_back: Vec<_> = outcome
            .passes
            .iter()
            .flat_map(|p| p.rolled_back.iter())
            .collect();
        assert!(
            rolled_back.is_empty(),
            "{name}: a machine-applicable fix was rolled back: {rolled_back:#?}"
        );
        let errors = |findings: &[Finding]| -> BTreeSet<(Code, String)> {
            findings
                .iter()
                .filter(|f| f.is_error())
                .map(|f| (f.code, f.pointer.clone()))
                .collect()
        };
        let old = errors(&before.findings);
        let new = errors(&outcome.checked.findings);
        let added: Vec<_> = new.difference(&old).collect();
        assert!(added.is_empty(), "{name}: the fixes add {added:?}");
        for key in &safe {
            assert!(!new.contains(key), "{name}: the fix of {key:?} leaves it");
        }
        let mut snapshot = String::new();
        for fix in outcome.passes.iter().flat_map(|p| p.applied.iter()) {
            snapshot.push_str(&format!(
                "fixed {} at {:?}: {}\n",
                fix.code, fix.pointer, fix.message
            ));
        }
        snapshot.push_str(&format!(
            "errors left: {}\n---\n{}",
            outcome.checked.errors(),
            String::from_utf8_lossy(&outcome.draft)
        ));
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(fixture.path.parent().expect("fixture in a folder"));
        settings.set_prepend_module_to_snapshot(false);
        settings.set_input_file(&fixture.path);
        settings.set_omit_expression(true);
        settings.bind(|| insta::assert_snapshot!(format!("{}.fixed", fixture.stem()), snapshot));
        fixed += 1;
    }
    assert!(fixed > 0, "the corpus has machine-applicable fixes");
}

fn example(name: &str) -> Source {
    let path = crate_dir().join("../../examples/issue-triage").join(name);
    Source {
        name: format!("examples/issue-triage/{name}"),
        bytes: read(&path),
    }
}

fn head(span: Span) -> Span {
    Span::new(span.start(), (span.start() + 1).min(span.end()))
}

/// Whether `finding` points where its pointer says, in `doc` (the file it points into):
/// - inside the string at its pointer, for a bad byte or escape (LW003, LW004);
/// - at the key, for a problem with a member's name: a repeated key, an unknown field,
///   keyword or argument, an invalid tool or slot id in a definition;
/// - at the first byte of the value, for an object that lacks something (LW101, and LW302
///   when `args` is given), an oversized `code.run` body, the `steps` of a draft with too
///   many steps (LW605) and the whole document (LW901);
/// - at the value otherwise.
fn check_span(doc: &SpannedDocument, finding: &Finding) -> Result<(), String> {
    let at = &finding.pointer;
    let node = doc
        .root()
        .at(at)
        .ok_or_else(|| format!("pointer {at:?} does not resolve"))?;
    let ok = match finding.code {
        Code::LoneSurrogate | Code::InvalidUtf8 => {
            matches!(node.value, Value::String(_))
                && node.span.start() < finding.span.start()
                && finding.span.end() < node.span.end()
        }
        Code::DuplicateKey => {
            // The repeat is dropped from the document: the span is a later key of the same
            // name in the same object, after the first one (which `key_span_of` finds).
            let parent = at.rsplit_once('/').and_then(|(p, _)| doc.root().at(p));
            let name = lwir_spec::pointer::tokens(at).and_then(|t| t.last().cloned());
            let first = doc.key_span_of(at);
            let text = doc.source().get(finding.span.range());
            let key = text.and_then(|t| serde_json::from_slice::<String>(t).ok());
            match (parent, name, first) {
                (Some(parent), Some(name), Some(first)) => {
                    key == Some(name)
                        && parent.span.start() < finding.span.start()
                        && finding.span.end() < parent.span.end()
                        && first.end() <= finding.span.start()
                }
                _ => false,
            }
        }
        Code::UnknownField | Code::UnsupportedSchemaKeyword | Code::UnknownToolArgument => {
            Some(finding.span) == doc.key_span_of(at)
        }
        Code::InvalidIdentifier if finding.origin == Origin::Definition => {
            Some(finding.span) == doc.key_span_of(at)
        }
        Code::MissingField | Code::MissingToolArgument
            if matches!(node.value, Value::Object(_)) =>
        {
            finding.span == head(node.span)
        }
        Code::CodeBodyTooLarge | Code::DefinitionNotProvided | Code::TooManySteps => {
            finding.span == head(node.span)
        }
        // Inside an expression: the exact characters, within the string's quotes (a flow
        // of a whole value points at the value).
        code if matches!(code.stage(), Stage::Expression | Stage::Compat) => {
            finding.span == node.span
                || (matches!(node.value, Value::String(_))
                    && node.span.start() < finding.span.start()
                    && finding.span.end() < node.span.end())
        }
        _ => finding.span == node.span,
    };
    if !ok {
        return Err(format!(
            "{} at {at:?}: span {} is not where the pointer says",
            finding.code, finding.span
        ));
    }
    for related in &finding.related {
        let node = doc.root().at(&related.pointer);
        let places = [
            node.map(|n| n.span),
            doc.key_span_of(&related.pointer),
            node.map(|n| head(n.span)),
        ];
        if !places.contains(&Some(related.span)) {
            return Err(format!(
                "{} at {at:?}: related {:?} at {} is not where its pointer says",
                finding.code, related.pointer, related.span
            ));
        }
    }
    Ok(())
}

/// Every finding of the corpus, in the draft or the definition, points where its pointer
/// says (see [`check_span`]).
#[test]
fn every_span_is_where_its_pointer_says() {
    let mut problems = Vec::new();
    for fixture in all_fixtures() {
        let validation = fixture.validate();
        for finding in &validation.findings {
            // Without a document (a fatal LW001/LW007) there is no pointer to follow.
            let Some(doc) = validation.document(finding.origin) else {
                continue;
            };
            if let Err(problem) = check_span(doc, finding) {
                problems.push(format!("{}: {problem}", case_name(&fixture.path)));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The example draft is clean; the example with mistakes shows at least ten kinds of
/// finding, each pointing where its pointer says.
#[test]
fn issue_triage_example() {
    let clean = validate(example("draft.json"), Some(example("workflow.json")));
    let found: Vec<String> = clean
        .findings
        .iter()
        .map(|f| format!("{}: {}", f.code, f.message))
        .collect();
    assert!(found.is_empty(), "draft.json: {found:#?}");
    assert!(clean.version.is_some());

    let draft = example("draft-with-mistakes.json");
    let doc = document::read(draft.bytes.clone())
        .document
        .expect("the example is JSON");
    let validation = validate(draft, Some(example("workflow.json")));
    let codes = codes_of(&validation);
    assert!(
        codes.len() >= 10,
        "only {} distinct codes: {codes:?}",
        codes.len()
    );
    for finding in &validation.findings {
        assert_eq!(finding.origin, Origin::Draft, "{finding:#?}");
        assert!(
            doc.span_of(&finding.pointer).is_some(),
            "{} at {:?} does not resolve",
            finding.code,
            finding.pointer
        );
        if let Err(problem) = check_span(&doc, finding) {
            panic!("draft-with-mistakes.json: {problem}: {}", finding.message);
        }
    }
}

/// What an editor sends of `text` as it is typed: a character typed after each of many
/// quotes (into a key or a value, or breaking the JSON), one at a time from the text and
/// a few in a row; then, as a document, steps removed, swapped, renamed and made
/// conditional, and the whole text formatted anew.
fn revisions(text: &[u8]) -> Vec<Vec<u8>> {
    let quotes: Vec<usize> = text
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'"')
        .map(|(i, _)| i + 1)
        .collect();
    let every = quotes.len().div_ceil(20).max(1);
    let typed = |text: &[u8], at: usize, what: &[u8]| {
        let mut edited = text.to_vec();
        edited.splice(at..at, what.iter().copied());
        edited
    };
    let mut out = vec![text.to_vec()];
    for &at in quotes.iter().step_by(every) {
        out.push(typed(text, at, b"x"));
        out.push(text.to_vec());
    }
    let mut chain = text.to_vec();
    for &at in quotes.iter().step_by(every * 3).rev() {
        chain = typed(&chain, at, b"y");
        out.push(chain.clone());
    }
    out.push(text.to_vec());
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(text)
        && let Some(steps) = value["steps"].as_array()
    {
        let edit = |f: &dyn Fn(&mut Vec<serde_json::Value>)| {
            let mut value = value.clone();
            if let Some(steps) = value["steps"].as_array_mut() {
                f(steps);
            }
            serde_json::to_vec_pretty(&value).unwrap()
        };
        let n = steps.len();
        out.push(edit(&|s| {
            if n > 1 {
                s.remove(0);
            }
        }));
        out.push(edit(&|s| {
            if n > 1 {
                s.remove(n / 2);
            }
        }));
        out.push(edit(&|s| {
            if n > 1 {
                s.swap(0, n - 1);
            }
        }));
        out.push(edit(&|s| s[0]["id"] = "renamed".into()));
        out.push(edit(&|s| s[n - 1]["when"] = "${ input.flag }".into()));
        out.push(edit(&|s| {
            if let Some(o) = s[0].as_object_mut() {
                o.remove("output");
            }
        }));
        out.push(edit(&|_| {}));
        out.push(serde_json::to_vec(&value).unwrap());
        out.push(text.to_vec());
    }
    out
}

/// Each revision of `text` checked with the expression pass's memo kept from the one
/// before has the findings of a whole check of it.
/// Returns how many steps were taken from the memo.
fn memo_agrees(name: &str, text: &[u8], definition: Option<&Arc<Definition>>) -> usize {
    let mut memo = Memo::default();
    let mut reused = 0;
    for (i, revision) in revisions(text).into_iter().enumerate() {
        let kept = validate_read(
            name.to_owned(),
            document::read_document(revision.clone()),
            definition,
            Some(&mut memo),
        );
        let whole = validate_read(
            name.to_owned(),
            document::read_document(revision),
            definition,
            None,
        );
        assert_eq!(kept.findings, whole.findings, "{name}, revision {i}");
        reused += memo.reused();
    }
    reused
}

/// The expression pass's memo (an editor's: the steps a change left as they were are not
/// typed again) changes no finding, on every fixture and on generated drafts, through
/// edits of every kind.
#[test]
fn memo_changes_no_finding() {
    let mut reused = 0;
    for fixture in all_fixtures() {
        let definition = fixture.definition().map(|d| Arc::new(Definition::read(d)));
        reused += memo_agrees(
            &case_name(&fixture.path),
            &read(&fixture.path),
            definition.as_ref(),
        );
    }
    // The memo was used, and not only where a step's findings were none.
    assert!(reused > 1000, "{reused} steps reused");
    for (draft, definition) in [
        (generated::real_draft(40), generated::real_definition(40)),
        (generated::misspelt_draft(40, 7), generated::definition(40)),
    ] {
        let definition = Arc::new(Definition::read(Source {
            name: "workflow.json".into(),
            bytes: definition,
        }));
        let reused = memo_agrees("generated", &draft, Some(&definition));
        assert!(reused > 40 * 20, "{reused} steps reused");
    }
}
