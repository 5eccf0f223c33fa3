//! The expression pass of a large draft on two cores: this thread checks the first part
//! of the top-level steps while another checks the rest.
//!
//! Checking a top-level step reads the scope the steps before it left (their ids, output
//! types and whether they may be absent) and nothing else that the steps before it
//! change. The second thread first works that scope out for the first part *quietly* —
//! the checks that cannot change what a step adds to it (arguments, prompts, `when`,
//! loops, `with`) are skipped, and what the others find is thrown away — then checks the
//! rest of the draft in it. When both are done, the scope it assumed is compared with
//! the one this thread's whole check of the first part left: the second part's findings
//! and references are taken only if the two are the same (they always are; if they were
//! not, the second part would be checked again here), so the findings are those of one
//! check in one thread, in the same order.

use super::*;

/// Below this many bytes of top-level steps, the pass runs on this thread alone: a second
/// thread costs more than it saves.
const FEWEST_BYTES: usize = 256 * 1024;

/// How to split: `None` by the draft's size; `Some(None)` never; `Some(Some(k))` before
/// top-level step `k` whatever the size (tests).
type Split = Option<Option<usize>>;

thread_local! {
    static SPLIT: Cell<Split> = const { Cell::new(None) };
}

/// Runs `f` with this thread's expression passes split before top-level step `before` (a
/// draft with fewer steps is not split), or, with `None`, never split — so that tests can
/// compare each split with the pass on one thread, on drafts of any size.
#[doc(hidden)]
pub fn with_split<R>(before: Option<usize>, f: impl FnOnce() -> R) -> R {
    struct Restore(Split);
    impl Drop for Restore {
        fn drop(&mut self) {
            SPLIT.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(SPLIT.with(|c| c.replace(Some(before))));
    f()
}

/// Where to split `steps`: the index of the first step the second thread checks.
fn split_point(steps: &[Step<'_>]) -> Option<usize> {
    match SPLIT.with(Cell::get) {
        Some(Some(k)) => return (0 < k && k < steps.len()).then_some(k),
        Some(None) => return None,
        None => {}
    }
    let (first, last) = (steps.first()?.node.span, steps.last()?.node.span);
    let bytes = last.end().saturating_sub(first.start());
    if steps.len() < 2 || bytes < FEWEST_BYTES {
        return None;
    }
    // The second thread also works out the first part's scope (about a fifth of the cost
    // of checking it), and the meta-schema and hash threads share the cores with both:
    // the first part is about two thirds (measured from 58 to 72 %; 62–65 % was fastest).
    let at = first.start() + bytes / 100 * 65;
    let k = steps.partition_point(|s| s.node.span.start() < at);
    (0 < k && k < steps.len()).then_some(k)
}

/// What the second thread found.
struct Second<'d> {
    /// The scope it worked out for the first part (what it assumed).
    assumed: Vec<StepInfo<'d>>,
    /// The scope after the last step.
    scope: Scope<'d>,
    findings: Vec<Finding>,
    references: Vec<Reference>,
}

impl<'d> Checker<'_, 'd, '_> {
    /// [`Checker::list`] of the top-level steps, on two threads when the draft is large.
    pub(super) fn halves(&mut self, steps: &[Step<'d>], scope: &mut Scope<'d>) {
        let Some(at) = split_point(steps) else {
            return self.list(steps, scope);
        };
        let (first, second) = steps.split_at(at);
        let caches = caches_on();
        let (cx, input, ids, in_order) = (self.cx, self.input.clone(), self.ids, self.ids_in_order);
        let found = std::thread::scope(|threads| {
            let worker = std::thread::Builder::new()
                .name("lwirc-expr".into())
                // The main thread's stack: the checks recurse as deep as the draft nests.
                .stack_size(8 * 1024 * 1024)
                .spawn_scoped(threads, move || {
                    CACHES.with(|c| c.set(caches));
                    let mut findings = Vec::new();
                    let mut checker = Checker::new(cx, input, ids, in_order, &mut findings, false);
                    let mut scope = Scope::default();
                    checker.quiet = true;
                    checker.list(first, &mut scope);
                    checker.quiet = false;
                    checker.out.clear();
                    checker.analysis.references.clear();
                    let assumed = scope.steps.clone();
                    checker.list(second, &mut scope);
                    let references = std::mem::take(&mut checker.analysis.references);
                    Second {
                        assumed,
                        scope,
                        findings,
                        references,
                    }
                });
            self.list(first, scope);
            worker.ok().map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        });
        match found {
            Some(found) if scope.steps == found.assumed => {
                self.out.extend(found.findings);
                let first = std::mem::take(&mut self.analysis.references);
                self.analysis.earlier.extend([first, found.references]);
                *scope = found.scope;
            }
            // No thread to be had, or (never) a different scope: the rest is checked here.
            found => {
                debug_assert!(
                    found.is_none(),
                    "the quiet check of the first {at} steps left another scope"
                );
                self.list(second, scope);
            }
        }
    }
}
