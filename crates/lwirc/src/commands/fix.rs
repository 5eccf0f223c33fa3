//! `lwirc fix`: apply the fixes a draft's findings offer, in place, as text edits.

use std::sync::Arc;

use lwir_repair::fixes::{AppliedFix, FixOutcome, fix_draft};
use lwir_spec::PatchOp;
use lwir_validators::pipeline::Definition;
use serde_json::json;

use super::{ColorChoice, print, read_pair, stderr_color, write_atomically};
use crate::exit;

/// Fix a draft: apply every machine-applicable fix, in place, and report what remains.
///
/// Like `ruff check --fix` and `cargo fix`. Validates the draft, applies the fixes marked
/// `machine-applicable` (those whose intent is beyond doubt: a unique near name, a bound
/// above its limit, an exact literal conversion; `lwirc explain CODE` says which), and
/// validates again, in passes, until no fix is left. A fix that adds an error is rolled
/// back. The fixes edit the draft's text: everything they do not touch stays byte for byte
/// as written (key order, spacing, escapes). The file is replaced atomically, and only when
/// something changed.
///
/// It prints what it fixed and the findings that remain (on standard error when the draft
/// itself goes to standard output). The editor's "fix all" (`source.fixAll.lwirc`) gives
/// the same bytes.
///
/// Without `-d` the checks (and fixes) that need the workflow definition are skipped.
///
/// Exit status: 0 no error remains (warnings allowed), 1 errors remain, 2 usage error or
/// unreadable file. With `--diff`, the status is that of the draft the fixes would make.
///
/// Examples:
///   lwirc fix draft.json -d workflow.json
///   lwirc fix draft.json -d workflow.json --diff
///   lwirc fix draft.json -d workflow.json --unsafe-fixes -o fixed.json
///   planner-cli | lwirc fix - -d workflow.json > fixed.json
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    /// The LWIR draft to fix, in place (`-` reads standard input and writes the fixed draft
    /// to standard output).
    #[arg(value_name = "DRAFT")]
    draft: String,
    /// The WorkflowDefinition the draft is compiled against.
    #[arg(short = 'd', long = "definition", value_name = "WORKFLOW")]
    definition: Option<String>,
    /// Print a unified diff of the fixes to standard output; write nothing.
    #[arg(long, conflicts_with = "output")]
    diff: bool,
    /// Also apply `maybe-incorrect` fixes (a guess: read the result).
    #[arg(long = "unsafe-fixes")]
    unsafe_fixes: bool,
    /// Write the fixed draft to FILE instead of replacing DRAFT (`-` for standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<String>,
    /// Report format: `human`, or `json` (one object: what was fixed, what remains).
    #[arg(long, value_enum, default_value_t = FixFormat::Human)]
    format: FixFormat,
    /// When to colour human output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
}

/// Report formats of `lwirc fix`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FixFormat {
    /// For people.
    Human,
    /// One JSON object: `fixed`, `safe_fixes`, `findings` (those that remain), `summary`.
    Json,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let (draft, definition) = read_pair(&args.draft, args.definition.as_deref())?;
    let definition = definition.map(|d| Arc::new(Definition::read(d)));
    let mut check = lwir_session::DraftCheck::new(definition, draft.name.clone());
    let original = draft.bytes;
    let outcome = fix_draft(&mut check, original.clone(), args.unsafe_fixes);
    let changed = outcome.draft != original;

    // Where the fixed draft goes; the report goes to standard error when that is stdout.
    let destination = match (&args.output, args.draft.as_str()) {
        _ if args.diff => Destination::Nowhere,
        (Some(out), _) if out == "-" => Destination::Stdout,
        (Some(out), _) => Destination::File(out.clone()),
        (None, "-") => Destination::Stdout,
        (None, path) if changed => Destination::File(path.to_owned()),
        (None, _) => Destination::Nowhere,
    };
    let report_to_stderr = args.diff || destination == Destination::Stdout;
    if args.diff {
        print(&unified_diff(&draft.name, &original, &outcome.draft))?;
    }
    match &destination {
        Destination::File(path) => write_atomically(std::path::Path::new(path), &outcome.draft)?,
        Destination::Stdout => super::print_bytes(&outcome.draft)?,
        Destination::Nowhere => {}
    }

    let validation = check.validation(&outcome.draft);
    let report = match args.format {
        FixFormat::Json => {
            let fixed: Vec<_> = applied(&outcome).map(fix_json).collect();
            let rolled_back: Vec<_> = rolled_back(&outcome).collect();
            let mut out = json!({
                "file": draft.name,
                "fixed": fixed,
                "rolled_back": rolled_back,
                "safe_fixes": {
                    "applied": fixed.len(),
                    "findings_removed": outcome.passes.iter().map(|p| p.errors_removed).sum::<usize>(),
                },
                "findings": lwir_render::json::findings(&validation),
                "summary": {
                    "errors": validation.findings.iter().filter(|f| f.is_error()).count(),
                    "warnings": validation.findings.iter().filter(|f| !f.is_error()).count(),
                },
            });
            if let Destination::File(path) = &destination {
                out["written"] = json!(path);
            }
            serde_json::to_string_pretty(&out)? + "\n"
        }
        FixFormat::Human => {
            let color = match args.color {
                ColorChoice::Auto if report_to_stderr => stderr_color(),
                choice => choice.enabled(),
            };
            let mut text = String::new();
            if !validation.findings.is_empty() {
                text.push_str(&lwir_render::human::render(
                    &validation,
                    lwir_render::human::HumanOptions {
                        color,
                        ..Default::default()
                    },
                ));
            }
            text.push_str(&summary(&outcome, &validation, &destination, args.diff));
            text
        }
    };
    if report_to_stderr {
        eprint!("{report}");
    } else {
        print(&report)?;
    }
    Ok(if validation.has_errors() {
        exit::FINDINGS
    } else {
        exit::OK
    })
}

#[derive(Debug, PartialEq, Eq)]
enum Destination {
    File(String),
    Stdout,
    Nowhere,
}

fn applied(outcome: &FixOutcome) -> impl Iterator<Item = &AppliedFix> {
    outcome.passes.iter().flat_map(|p| p.applied.iter())
}

/// The fixes rolled back, in every pass.
fn rolled_back(outcome: &FixOutcome) -> impl Iterator<Item = &AppliedFix> {
    outcome
        .passes
        .iter()
        .flat_map(|p| p.rolled_back.iter())
        .chain(&outcome.rolled_back)
}

fn fix_json(fix: &AppliedFix) -> serde_json::Value {
    json!({
        "code": fix.code.as_str(),
        "pointer": fix.pointer,
        "message": fix.message,
        "patch": fix.patch,
    })
}

/// What was fixed and what remains, for people: one line per fix, then the counts.
fn summary(
    outcome: &FixOutcome,
    validation: &lwir_validators::pipeline::Validation,
    destination: &Destination,
    diff: bool,
) -> String {
    let mut text = String::new();
    let fixes: Vec<&AppliedFix> = applied(outcome).collect();
    for fix in &fixes {
        let pointer = if fix.pointer.is_empty() {
            "/"
        } else {
            &fix.pointer
        };
        text.push_str(&format!(
            "{} {pointer}: {} — {}\n",
            if diff { "would fix" } else { "fixed" },
            fix.code.as_str(),
            lwir_render::terminal::sanitize(&describe(&fix.patch, &fix.message)),
        ));
    }
    for fix in rolled_back(outcome) {
        let pointer = if fix.pointer.is_empty() {
            "/"
        } else {
            &fix.pointer
        };
        let why = if fix.added_errors.is_empty() {
            "it no longer applied".to_owned()
        } else {
            let added: Vec<String> = fix
                .added_errors
                .iter()
                .map(|e| format!("{} {}", e.code.as_str(), e.pointer))
                .collect();
            format!("it adds {}", added.join(", "))
        };
        text.push_str(&format!(
            "rolled back the fix of {} at {pointer}: {}\n",
            fix.code.as_str(),
            lwir_render::terminal::sanitize(&why),
        ));
    }
    let errors = validation.findings.iter().filter(|f| f.is_error()).count();
    let warnings = validation.findings.len() - errors;
    let with_fix = validation
        .findings
        .iter()
        .filter(|f| f.is_error() && f.fix.is_some())
        .count();
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let verb = if diff { "would fix" } else { "fixed" };
    text.push_str(&format!(
        "{} {}, {} and {} remain",
        verb,
        plural(fixes.len(), "finding"),
        plural(errors, "error"),
        plural(warnings, "warning"),
    ));
    match destination {
        Destination::File(path) if !fixes.is_empty() => {
            text.push_str(&format!(
                "; wrote {}",
                lwir_render::terminal::sanitize(path)
            ));
        }
        _ => {}
    }
    text.push('\n');
    if with_fix > 0 {
        let (what, verb) = if with_fix == 1 {
            ("1 remaining error offers".to_owned(), "it")
        } else {
            (format!("{with_fix} remaining errors offer"), "them")
        };
        text.push_str(&format!(
            "{what} a maybe-incorrect fix (apply {verb} with `--unsafe-fixes`, after reading {verb})\n"
        ));
    }
    text
}

/// `message (→ what the patch does)`.
fn describe(patch: &[PatchOp], message: &str) -> String {
    let what = match patch {
        [PatchOp::Replace { value, .. }] => format!("now {}", short(value)),
        [PatchOp::Move { path, .. }] => format!(
            "renamed to `{}`",
            path.rsplit('/').next().unwrap_or_default()
        ),
        [PatchOp::Remove { .. }, PatchOp::Add { .. }] => "kept once".to_owned(),
        ops => format!("{} edits", ops.len()),
    };
    format!("{message} ({what})")
}

/// A JSON value, cut to a readable length.
fn short(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(57).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// A unified diff (3 lines of context) of `old` to `new`, named `a/NAME` and `b/NAME`;
/// empty when they are equal.
fn unified_diff(name: &str, old: &[u8], new: &[u8]) -> String {
    if old == new {
        return String::new();
    }
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}
