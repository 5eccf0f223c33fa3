//! Safe fixes: applying the `machine-applicable` fixes of a finding set, unattended, in
//! passes, under a hard pass cap.
//!
//! A pass takes the machine-applicable fixes of the draft's errors, keeps the ones that touch
//! disjoint parts of the document (no fix's path equal to, inside or around another's),
//! applies them together and revalidates. A pass whose result has an error the draft did not
//! have before — made, not revealed: an error with a machine-applicable fix of its own (the
//! next pass applies it), or one inside a step whose `kind`, `tool` or `model` a fix
//! corrected and outside every value the fixes wrote (the step checked further at last), is
//! the draft's own — is redone without the fixes in whose steps the new errors are (one more
//! validation), and only when the harm crosses steps one fix at a time (at most 32
//! validations a pass), rolling back each fix that adds an error, so one bad fix does not
//! cost the good ones and ten thousand bad ones do not cost ten thousand validations.
//! `maybe-incorrect` fixes are never applied unattended: they go to the planner with the
//! findings ([`apply_fixes`] applies them too only when asked, as `lwirc fix
//! --unsafe-fixes`). Fixes edit the draft's text ([`crate::edit`]): what they do not touch stays as
//! the planner wrote it.
//!
//! Passes stop when the draft has no errors, when no fix is left to apply, at the pass cap,
//! or when a state repeats: the same draft (by canonical hash) as anywhere earlier in the
//! session, or the same set of findings as after an earlier pass of this round — a fix
//! undoing another (A → B → A) would otherwise spin until the cap.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use lwir_spec::{Applicability, Code, Finding, PatchOp, SpannedDocument};
use serde::{Deserialize, Serialize};

/// A hard cap on fix passes per round (each pass validates the draft at least once).
pub const MAX_FIX_PASSES: u32 = 16;

/// What validating one state of the draft tells the repair loop.
#[derive(Clone, Debug)]
pub struct Checked {
    /// Every finding, in reading order.
    pub findings: Vec<Finding>,
    /// The same findings as the planner sees them: the `findings` of
    /// `lwirc validate --format json`.
    pub findings_json: serde_json::Value,
    /// The draft's spanned document (its bytes and tree, held once), when it could be read.
    pub document: Option<Arc<SpannedDocument>>,
    /// The identity of this state: the hash of the canonical draft when it could be read,
    /// else of its bytes.
    pub state: String,
    /// The WorkflowVersion, present only when there are no errors.
    pub version: Option<String>,
}

impl Checked {
    /// Error count.
    pub fn errors(&self) -> usize {
        self.findings.iter().filter(|f| f.is_error()).count()
    }

    /// Warning count.
    pub fn warnings(&self) -> usize {
        self.findings.len() - self.errors()
    }

    /// Whether any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(Finding::is_error)
    }

    /// The codes of the errors, sorted, each once.
    pub fn error_codes(&self) -> Vec<Code> {
        let codes: BTreeSet<Code> = self
            .findings
            .iter()
            .filter(|f| f.is_error())
            .map(|f| f.code)
            .collect();
        codes.into_iter().collect()
    }

    fn error_keys(&self) -> HashSet<(Code, &str)> {
        self.findings
            .iter()
            .filter(|f| f.is_error())
            .map(|f| (f.code, f.pointer.as_str()))
            .collect()
    }

    /// A fingerprint of the finding set (codes, pointers, messages), for cycle detection.
    fn fingerprint(&self) -> Vec<(Code, String, String)> {
        let mut keys: Vec<_> = self
            .findings
            .iter()
            .map(|f| (f.code, f.pointer.clone(), f.message.clone()))
            .collect();
        keys.sort();
        keys
    }
}

/// Validates drafts for the repair loop.
pub trait Check {
    /// Validates the draft `bytes`.
    fn check(&mut self, bytes: &[u8]) -> Checked;
}

/// The states a repair session has been in, to detect A → B → A.
#[derive(Debug, Default)]
pub struct Seen {
    states: HashMap<String, usize>,
    /// Codes of the findings fixed or handed to the planner on leaving each state, in order.
    left_with: Vec<BTreeSet<Code>>,
}

impl Seen {
    /// Records `checked` as the current state. Returns the codes involved in the cycle when
    /// the draft was in this state before.
    pub fn visit(&mut self, checked: &Checked) -> Option<Vec<Code>> {
        if let Some(&earlier) = self.states.get(&checked.state) {
            let mut codes: BTreeSet<Code> = self.left_with[earlier..]
                .iter()
                .flatten()
                .copied()
                .collect();
            codes.extend(checked.error_codes());
            return Some(codes.into_iter().collect());
        }
        self.states
            .insert(checked.state.clone(), self.left_with.len());
        self.left_with.push(BTreeSet::new());
        None
    }

    /// Records the codes the current state is being left with (fixed, or sent to the planner).
    pub fn leave_with(&mut self, codes: impl IntoIterator<Item = Code>) {
        if let Some(last) = self.left_with.last_mut() {
            last.extend(codes);
        }
    }
}

/// One fix as applied (or rolled back).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppliedFix {
    /// The finding's code.
    #[serde(with = "crate::events::code")]
    pub code: Code,
    /// The finding's pointer.
    pub pointer: String,
    /// The finding's message.
    pub message: String,
    /// The patch.
    pub patch: Vec<PatchOp>,
    /// For a fix rolled back because the draft had new errors after it: those errors. Empty
    /// for a fix kept, and for one whose patch no longer applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_errors: Vec<AddedError>,
    /// For a fix rolled back untried: its pass had spent its one-by-one validations on
    /// others. Its finding stays: a later pass, or the planner, takes it up.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untried: bool,
}

/// An error a fix added (by code and pointer), which made it be rolled back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddedError {
    /// The new error's code.
    #[serde(with = "crate::events::code")]
    pub code: Code,
    /// Its pointer.
    pub pointer: String,
}

/// One pass of fixes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pass {
    /// Fixes kept.
    pub applied: Vec<AppliedFix>,
    /// Fixes undone because the draft had a new error after them, or whose patch no longer
    /// applied.
    pub rolled_back: Vec<AppliedFix>,
    /// Errors before the pass.
    pub errors_before: usize,
    /// Errors after it.
    pub errors_after: usize,
    /// Errors (by code and pointer) the draft had before the pass and not after it: what
    /// the fixes removed.
    pub errors_removed: usize,
    /// The state after the pass.
    pub state: String,
}

/// Why fix passes stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FixStop {
    /// No errors left.
    Clean,
    /// Errors left, none with a machine-applicable fix that helps.
    NoFixes,
    /// The pass cap was reached.
    PassCap,
    /// A state repeated; the codes involved.
    Cycle(Vec<Code>),
}

/// The result of [`apply_safe_fixes`].
#[derive(Debug)]
pub struct FixOutcome {
    /// The draft after the passes kept.
    pub draft: Vec<u8>,
    /// Its validation.
    pub checked: Checked,
    /// Every pass that applied something.
    pub passes: Vec<Pass>,
    /// The fixes of a last pass that kept none, rolled back (each with the errors it
    /// added) or no longer applying. (A pass that kept some lists its own.)
    pub rolled_back: Vec<AppliedFix>,
    /// Why the passes stopped.
    pub stop: FixStop,
}

/// Applies machine-applicable fixes to `draft` (whose validation is `checked`) in passes, at
/// most `max_passes`, calling `on_pass` after each pass that changed the draft. See the
/// module documentation for the rules.
pub fn apply_safe_fixes(
    check: &mut dyn Check,
    draft: Vec<u8>,
    checked: Checked,
    seen: &mut Seen,
    max_passes: u32,
    on_pass: &mut dyn FnMut(&Pass),
) -> FixOutcome {
    apply_fixes(
        check,
        draft,
        checked,
        seen,
        max_passes,
        Applicability::MachineApplicable,
        on_pass,
    )
}

/// Every fix a draft's findings offer, applied as `lwirc fix` and the editor's fix-all
/// apply them: validates `draft`, then [`apply_fixes`] from a fresh session, at most
/// [`MAX_FIX_PASSES`] passes. With `unsafe_fixes`, `maybe-incorrect` fixes are applied
/// too (`lwirc fix --unsafe-fixes`).
pub fn fix_draft(check: &mut dyn Check, draft: Vec<u8>, unsafe_fixes: bool) -> FixOutcome {
    let checked = check.check(&draft);
    let mut seen = Seen::default();
    seen.visit(&checked);
    let least = if unsafe_fixes {
        Applicability::MaybeIncorrect
    } else {
        Applicability::MachineApplicable
    };
    apply_fixes(
        check,
        draft,
        checked,
        &mut seen,
        MAX_FIX_PASSES,
        least,
        &mut |_| {},
    )
}

/// [`apply_safe_fixes`] with the fixes of applicability `least` or safer:
/// [`Applicability::MachineApplicable`] for the unattended loop, or
/// [`Applicability::MaybeIncorrect`] for every fix offered (still rolled back when they add
/// an error).
pub fn apply_fixes(
    check: &mut dyn Check,
    draft: Vec<u8>,
    checked: Checked,
    seen: &mut Seen,
    max_passes: u32,
    least: Applicability,
    on_pass: &mut dyn FnMut(&Pass),
) -> FixOutcome {
    let mut outcome = FixOutcome {
        draft,
        checked,
        passes: Vec::new(),
        rolled_back: Vec::new(),
        stop: FixStop::NoFixes,
    };
    // Finding sets after each pass of this round: the same set again means the fixes are
    // going round without progress. (Across rounds a repeated set is normal: a planner's new
    // draft may well have the findings an earlier one had.)
    let mut finding_sets: HashSet<Vec<(Code, String, String)>> = HashSet::new();
    // Fixes rolled back in this round for the errors they added: not tried again (they
    // would add them again), and not reported twice.
    let mut refused: HashSet<(Code, String, String)> = HashSet::new();
    let key = |f: &AppliedFix| {
        (
            f.code,
            f.pointer.clone(),
            serde_json::to_string(&f.patch).unwrap_or_default(),
        )
    };
    for _ in 0..max_passes {
        if !outcome.checked.has_errors() {
            outcome.stop = FixStop::Clean;
            return outcome;
        }
        let Some(document) = outcome.checked.document.as_ref().map(Arc::clone) else {
            outcome.stop = FixStop::NoFixes;
            return outcome;
        };
        let draft = Draft {
            bytes: &outcome.draft,
            document: &document,
        };
        let mut candidates = disjoint_fixes(&outcome.checked.findings, least);
        candidates.retain(|f| !refused.contains(&key(f)));
        if candidates.is_empty() {
            outcome.stop = FixStop::NoFixes;
            return outcome;
        }
        let errors_before = outcome.checked.errors();
        let (draft, checked, applied, rolled_back) =
            match run_pass(check, draft, &outcome.checked, candidates) {
                Ok(pass) => pass,
                Err(rolled_back) => {
                    outcome.rolled_back = rolled_back;
                    outcome.stop = FixStop::NoFixes;
                    return outcome;
                }
            };
        seen.leave_with(applied.iter().map(|f| f.code));
        refused.extend(
            rolled_back
                .iter()
                .filter(|f| !f.added_errors.is_empty())
                .map(key),
        );
        let still = checked.error_keys();
        let errors_removed = outcome
            .checked
            .error_keys()
            .iter()
            .filter(|k| !still.contains(k))
            .count();
        let pass = Pass {
            applied,
            rolled_back,
            errors_before,
            errors_after: checked.errors(),
            errors_removed,
            state: checked.state.clone(),
        };
        on_pass(&pass);
        outcome.passes.push(pass);
        outcome.draft = draft;
        outcome.checked = checked;
        if let Some(codes) = seen.visit(&outcome.checked) {
            outcome.stop = FixStop::Cycle(codes);
            return outcome;
        }
        if !finding_sets.insert(outcome.checked.fingerprint()) {
            outcome.stop = FixStop::Cycle(outcome.checked.error_codes());
            return outcome;
        }
    }
    outcome.stop = if outcome.checked.has_errors() {
        FixStop::PassCap
    } else {
        FixStop::Clean
    };
    outcome
}

type PassResult = (Vec<u8>, Checked, Vec<AppliedFix>, Vec<AppliedFix>);

/// The draft a pass starts from: its bytes (which fixes edit) and its value (which tells
/// which fixes apply).
#[derive(Clone, Copy)]
struct Draft<'a> {
    bytes: &'a [u8],
    document: &'a SpannedDocument,
}

impl Draft<'_> {
    /// The draft's text with `patch` applied as text edits, on the document its validation
    /// read (when that was read from these bytes, as it is in the loop) rather than a new
    /// reading.
    fn apply(&self, patch: &[PatchOp]) -> Result<Vec<u8>, crate::ApplyError> {
        if self.document.source() == self.bytes {
            crate::edit::apply_to_document(self.document, patch)
        } else {
            crate::edit::apply_text(self.bytes, patch)
        }
    }
}

/// One pass: all candidates at once; when that adds an error, one at a time with rollback.
/// When nothing could be kept, the fixes rolled back.
fn run_pass(
    check: &mut dyn Check,
    draft: Draft<'_>,
    before: &Checked,
    candidates: Vec<AppliedFix>,
) -> Result<PassResult, Vec<AppliedFix>> {
    let mut rolled_back = Vec::new();
    let (bytes, applied) = apply_all(draft, candidates, &mut rolled_back);
    if applied.is_empty() {
        return Err(rolled_back);
    }
    let checked = check.check(&bytes);
    if !adds_errors(before, &checked, &applied) {
        return Ok((bytes, checked, applied, rolled_back));
    }
    // Some fix made things worse. First undo, in one go, the fixes in whose step an added
    // error is (usually each bad fix breaks its own step): one more validation, however many
    // fixes there are.
    let added = added_errors(before, &checked, &applied);
    let (suspects, innocent): (Vec<_>, Vec<_>) = applied
        .into_iter()
        .partition(|fix| added.iter().any(|e| near(fix, &e.pointer)));
    if !suspects.is_empty() {
        let blame = |mut fix: AppliedFix| {
            fix.added_errors = added
                .iter()
                .filter(|e| near(&fix, &e.pointer))
                .cloned()
                .collect();
            fix
        };
        let (trial_bytes, kept) = apply_all(draft, innocent, &mut rolled_back);
        if kept.is_empty() {
            // Every fix is a suspect: nothing to keep, and nothing to validate.
            rolled_back.extend(suspects.into_iter().map(blame));
            return Err(rolled_back);
        }
        let trial_checked = check.check(&trial_bytes);
        if !adds_errors(before, &trial_checked, &kept) {
            rolled_back.extend(suspects.into_iter().map(blame));
            return Ok((trial_bytes, trial_checked, kept, rolled_back));
        }
        // The effect crosses steps: try them one by one after all.
        let mut all_fixes = suspects;
        all_fixes.extend(kept);
        return one_at_a_time(check, draft.bytes, before, all_fixes, rolled_back);
    }
    one_at_a_time(check, draft.bytes, before, innocent, rolled_back)
}

/// The draft with every fix of `fixes` applied that applies, as text edits of its bytes
/// ([`crate::edit`]: the rest of the draft stays as written); those that no longer apply
/// go to `failed`. Returns the bytes and the fixes applied.
fn apply_all(
    draft: Draft<'_>,
    fixes: Vec<AppliedFix>,
    failed: &mut Vec<AppliedFix>,
) -> (Vec<u8>, Vec<AppliedFix>) {
    // The fixes touch disjoint places, so applying them in one patch is applying them one
    // after the other: one pass over the text instead of one per fix.
    let all: Vec<PatchOp> = fixes.iter().flat_map(|f| f.patch.iter().cloned()).collect();
    if let Ok(bytes) = draft.apply(&all) {
        return (bytes, fixes);
    }
    // Some fix no longer applies: find which on the value (cheap, no text), then edit the
    // text once with the others.
    let mut value = draft.document.root().to_json();
    let mut applied = Vec::new();
    for fix in fixes {
        if crate::apply(&mut value, &fix.patch).is_ok() {
            applied.push(fix);
        } else {
            failed.push(fix);
        }
    }
    let kept: Vec<PatchOp> = applied
        .iter()
        .flat_map(|f| f.patch.iter().cloned())
        .collect();
    let bytes = draft.apply(&kept).unwrap_or_else(|_| to_bytes(&value));
    (bytes, applied)
}

/// Most validations [`one_at_a_time`] spends in one pass; fixes past it are rolled back
/// untried (a hostile draft of ten thousand fixes would otherwise cost ten thousand
/// validations). Their findings stay, for a later pass or the planner.
const MAX_SINGLE_CHECKS: usize = 32;

/// Applies `fixes` one at a time, rolling back each that adds an error.
fn one_at_a_time(
    check: &mut dyn Check,
    draft: &[u8],
    before: &Checked,
    fixes: Vec<AppliedFix>,
    mut rolled_back: Vec<AppliedFix>,
) -> Result<PassResult, Vec<AppliedFix>> {
    let mut current = (draft.to_vec(), before.clone());
    let mut kept = Vec::new();
    let mut changed = false;
    let mut checks = 0;
    for mut fix in fixes {
        if checks == MAX_SINGLE_CHECKS {
            fix.untried = true;
            rolled_back.push(fix);
            continue;
        }
        let Ok(bytes) = crate::edit::apply_text(&current.0, &fix.patch) else {
            rolled_back.push(fix);
            continue;
        };
        let checked = check.check(&bytes);
        checks += 1;
        let added = added_errors(&current.1, &checked, std::slice::from_ref(&fix));
        if !added.is_empty() {
            fix.added_errors = added;
            rolled_back.push(fix);
        } else {
            current = (bytes, checked);
            changed = true;
            kept.push(fix);
        }
    }
    if changed {
        Ok((current.0, current.1, kept, rolled_back))
    } else {
        Err(rolled_back)
    }
}

/// Whether an error at `pointer` is in the part of the draft `fix` touches: the same step
/// (the innermost `/steps/<n>` of a patch path), or inside or around a patched path.
fn near(fix: &AppliedFix, pointer: &str) -> bool {
    fix.patch.iter().flat_map(paths_of).any(|path| {
        let scope = step_of(path);
        overlaps(path, pointer) || (!scope.is_empty() && overlaps(scope, pointer))
    })
}

/// The pointer of the innermost step `path` is in (`/steps/1/steps/0` for
/// `/steps/1/steps/0/tool`), or `""` when it is in no step.
fn step_of(path: &str) -> &str {
    let mut end = 0;
    let mut rest = path;
    let mut at = 0;
    while let Some(i) = rest.find("/steps/") {
        let index_start = at + i + "/steps/".len();
        let digits = path[index_start..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if digits == 0 {
            break;
        }
        end = index_start + digits;
        at = end;
        rest = &path[end..];
    }
    &path[..end]
}

/// Whether `after` has an error (by code and pointer) that `before` did not and that
/// `fixes` made rather than revealed ([`added_errors`]).
fn adds_errors(before: &Checked, after: &Checked, fixes: &[AppliedFix]) -> bool {
    !added_errors(before, after, fixes).is_empty()
}

/// The errors (by code and pointer) `after` has and `before` did not, in finding order,
/// that the fixes `fixes` made rather than revealed. A fix that lets the validators see
/// further reveals errors the draft had all along: a tool renamed to one in the allowlist
/// has its arguments checked, a step kind corrected has its fields checked. Those are not
/// counted: an error with a machine-applicable fix of its own (the next pass applies it),
/// and an error inside a step whose `kind`, `tool` or `model` a fix wrote, but outside
/// every value the fixes wrote (the fixes did not touch what it is about). An error at or
/// around a written value, or anywhere else (a renamed tool whose output a later step
/// cannot read), is counted.
fn added_errors(before: &Checked, after: &Checked, fixes: &[AppliedFix]) -> Vec<AddedError> {
    let old = before.error_keys();
    // The written paths with all their ancestors, and the steps they are in: each error
    // is then judged by its own ancestors (linear in the draft, whatever the fix count).
    let mut written: HashSet<&str> = HashSet::new();
    let mut around: HashSet<&str> = HashSet::new();
    let mut steps: HashSet<&str> = HashSet::new();
    for path in fixes.iter().flat_map(|f| f.patch.iter().flat_map(paths_of)) {
        written.insert(path);
        around.extend(ancestors(path));
        let step = step_of(path);
        if !step.is_empty() && gates(step, path) {
            steps.insert(step);
        }
    }
    let revealed = |pointer: &str| {
        let mut in_step = false;
        for a in ancestors(pointer).chain(std::iter::once(pointer)) {
            if written.contains(a) {
                return false;
            }
            in_step |= steps.contains(a);
        }
        in_step && !around.contains(pointer)
    };
    after
        .findings
        .iter()
        .filter(|f| {
            f.is_error()
                && !old.contains(&(f.code, f.pointer.as_str()))
                && !f.fix.as_ref().is_some_and(|x| {
                    x.applicability == Applicability::MachineApplicable && !x.patch.is_empty()
                })
                && !revealed(&f.pointer)
        })
        .map(|f| AddedError {
            code: f.code,
            pointer: f.pointer.clone(),
        })
        .collect()
}

/// Whether `path` is a field of `step` whose value decides how much of the step is
/// checked: its `kind` (the fields of that kind), `tool` (the arguments against its input
/// schema) or `model` (the requirements against the slot).
fn gates(step: &str, path: &str) -> bool {
    matches!(path.strip_prefix(step), Some("/kind" | "/tool" | "/model"))
}

/// The proper ancestors of a pointer, the root (`""`) first: `""`, `/steps`, `/steps/0`
/// for `/steps/0/tool`.
fn ancestors(pointer: &str) -> impl Iterator<Item = &str> {
    pointer.match_indices('/').map(move |(i, _)| &pointer[..i])
}

/// The fixes of errors in the draft (machine-applicable ones, or all with `least`
/// maybe-incorrect), in finding order, keeping each only
/// when its paths are disjoint from those of every fix kept before it.
fn disjoint_fixes(findings: &[Finding], least: Applicability) -> Vec<AppliedFix> {
    let mut taken: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for f in findings {
        let Some(fix) = &f.fix else { continue };
        if !f.is_error()
            || f.origin != lwir_spec::Origin::Draft
            || !(fix.applicability == Applicability::MachineApplicable
                || least == Applicability::MaybeIncorrect)
            || fix.patch.is_empty()
        {
            continue;
        }
        let paths: Vec<&str> = fix.patch.iter().flat_map(paths_of).collect();
        if paths.iter().any(|p| taken.iter().any(|t| overlaps(p, t))) {
            continue;
        }
        taken.extend(paths);
        out.push(AppliedFix {
            code: f.code,
            pointer: f.pointer.clone(),
            message: f.message.clone(),
            patch: fix.patch.clone(),
            added_errors: Vec::new(),
            untried: false,
        });
    }
    out
}

fn paths_of(op: &PatchOp) -> Vec<&str> {
    match op {
        PatchOp::Add { path, .. } | PatchOp::Remove { path } | PatchOp::Replace { path, .. } => {
            vec![path]
        }
        PatchOp::Move { from, path } => vec![from, path],
    }
}

/// Whether one pointer is the other or inside it.
fn overlaps(a: &str, b: &str) -> bool {
    let inside = |inner: &str, outer: &str| {
        inner == outer
            || (inner.starts_with(outer) && inner.as_bytes().get(outer.len()) == Some(&b'/'))
    };
    inside(a, b) || inside(b, a)
}

/// A draft written from its value: pretty JSON. (Fixes edit a draft's own text instead;
/// this is for a draft that has no text of its own to keep.)
pub fn to_bytes(document: &serde_json::Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(document).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_paths() {
        assert!(overlaps("/steps/0", "/steps/0"));
        assert!(overlaps("/steps/0/tool", "/steps/0"));
        assert!(overlaps("/steps/0", "/steps/0/tool"));
        assert!(!overlaps("/steps/0", "/steps/01"));
        assert!(!overlaps("/steps/1/tool", "/steps/0/tool"));
        assert!(overlaps("", "/steps"));
    }

    #[test]
    fn ancestors_of_a_pointer() {
        let all: Vec<&str> = ancestors("/steps/0/tool").collect();
        assert_eq!(all, ["", "/steps", "/steps/0"]);
        assert_eq!(ancestors("").count(), 0);
    }

    #[test]
    fn the_step_of_a_path() {
        assert_eq!(step_of("/steps/1/steps/0/tool"), "/steps/1/steps/0");
        assert_eq!(step_of("/steps/12/args/x"), "/steps/12");
        assert_eq!(step_of("/steps/3"), "/steps/3");
        assert_eq!(step_of("/output"), "");
        assert_eq!(step_of("/steps/x/steps/2/y"), "");
    }
}
