//! The expression pass of a large draft on two cores: this thread checks the first part
//! of the top-level steps while another checks the rest.
//!
//! Checking a top-level step reads the scope the steps before it left (their ids, output
//! types and whether they may be absent) and nothing else that the steps before it
//! change. The second thread first works that scope out for the first part *quietly* —
//! the checks that cannot change what a step adds to it (arguments, prompts, `when`,
//! loops, `with`) are skipped, and what the others find is thrown away — then checks the
//! rest of the draft in it. Where the first part ends is agreed as the two go (see
//! [`Boundary`]): the second thread, several times faster in its quiet pass, sets it where
//! the steps left to each are about as many bytes. When both are done, the scope it
//! assumed is compared with the one this thread's whole check of the first part left: the
//! second part's findings and references are taken only if the two are the same (they
//! always are; if they were not, the second part would be checked again here), so the
//! findings are those of one check in one thread, in the same order.

use super::*;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// Whether and how to split `steps`: `cut` says; how the split is chosen: by the draft's size, then as the two threads go (see
/// [`Boundary`]), or before a given step (tests).
#[derive(Clone, Copy)]
enum Cut {
    Moving,
    Fixed(usize),
}

fn cut(steps: &[Step<'_>]) -> Option<Cut> {
    let cut = match SPLIT.with(Cell::get) {
        Some(Some(k)) => return (0 < k && k < steps.len()).then_some(Cut::Fixed(k)),
        Some(None) => return None,
        None => Cut::Moving,
    };
    let (first, last) = (steps.first()?.node.span, steps.last()?.node.span);
    let bytes = last.end().saturating_sub(first.start());
    // Both halves of the state of a `Boundary` are step indices of 32 bits.
    if steps.len() < 2 || bytes < FEWEST_BYTES || steps.len() >= u32::MAX as usize {
        return None;
    }
    Some(cut)
}

/// Where the first part ends, agreed between the two threads while they run: this thread
/// claims each step before checking it, and the second thread — whose quiet pass moves
/// several times faster — sets the boundary once the steps left after where it stands
/// are no more (in bytes) than those this thread has left before it, and only if this
/// thread has not claimed that step yet. How fast each thread goes is not known in
/// advance (the meta-schema and hash threads share the cores, and the host takes its
/// share), so a split fixed in advance leaves one of them waiting for the other.
///
/// The state is one word, so that a claim and the boundary are decided in one order: the
/// boundary in the high 32 bits (`u32::MAX` while there is none), in the low 32 bits the
/// number of steps this thread has claimed.
struct Boundary(AtomicU64);

const NO_BOUNDARY: u64 = u32::MAX as u64;

impl Boundary {
    fn new(fixed: Option<usize>) -> Self {
        Boundary(AtomicU64::new(
            fixed.map_or(NO_BOUNDARY, |k| k as u64) << 32,
        ))
    }

    /// Claims step `j` for this thread; `false` when it is past the boundary.
    fn claim(&self, j: usize) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                ((j as u64) < s >> 32).then_some(s & !u64::from(u32::MAX) | (j as u64 + 1))
            })
            .is_ok()
    }

    /// How many steps this thread has claimed.
    fn claimed(&self) -> usize {
        (self.0.load(Ordering::Acquire) & u64::from(u32::MAX)) as usize
    }

    /// Sets the boundary before step `i`, unless this thread has claimed it.
    fn set(&self, i: usize) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                ((s & u64::from(u32::MAX)) <= i as u64)
                    .then_some((i as u64) << 32 | (s & u64::from(u32::MAX)))
            })
            .is_ok()
    }
}

/// What the second thread found.
struct Second<'d> {
    /// The step it started checking at.
    at: usize,
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
        let Some(cut) = cut(steps) else {
            return self.list(steps, scope);
        };
        let boundary = Boundary::new(match cut {
            Cut::Fixed(k) => Some(k),
            Cut::Moving => None,
        });
        let caches = caches_on();
        let (cx, input, ids) = (self.cx, self.input.clone(), self.ids);
        let mut done = 0;
        let found = std::thread::scope(|threads| {
            let boundary = &boundary;
            let worker = std::thread::Builder::new()
                .name("lwirc-expr".into())
                // The main thread's stack: the checks recurse as deep as the draft nests.
                .stack_size(8 * 1024 * 1024)
                .spawn_scoped(threads, move || {
                    CACHES.with(|c| c.set(caches));
                    let mut findings = Vec::new();
                    let mut checker = Checker::new(cx, input, ids, &mut findings, false);
                    let mut scope = Scope::default();
                    checker.quiet = true;
                    let at = checker.quiet_to_boundary(steps, cut, boundary, &mut scope)?;
                    checker.quiet = false;
                    checker.out.clear();
                    checker.analysis.references.clear();
                    let assumed = scope.steps.clone();
                    checker.list(&steps[at..], &mut scope);
                    let references = std::mem::take(&mut checker.analysis.references);
                    Some(Second {
                        at,
                        assumed,
                        scope,
                        findings,
                        references,
                    })
                });
            for (j, step) in steps.iter().enumerate() {
                if !boundary.claim(j) {
                    break;
                }
                if let Some(info) = self.step(step, scope) {
                    scope.push_step(info);
                }
                done = j + 1;
            }
            worker.ok().and_then(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        });
        match found {
            Some(found) if found.at == done && scope.steps == found.assumed => {
                self.out.extend(found.findings);
                let first = std::mem::take(&mut self.analysis.references);
                self.analysis.earlier.extend([first, found.references]);
                *scope = found.scope;
            }
            // No thread to be had, no boundary set, or (never) a different scope: the
            // rest, if any, is checked here.
            found => {
                debug_assert!(
                    found.is_none(),
                    "the quiet check of the first {done} steps left another scope"
                );
                self.list(&steps[done..], scope);
            }
        }
    }

    /// The quiet check of the steps before the boundary, which it sets (see [`Boundary`]):
    /// the boundary, or `None` when the first thread has claimed the steps it reached.
    fn quiet_to_boundary(
        &mut self,
        steps: &[Step<'d>],
        cut: Cut,
        boundary: &Boundary,
        scope: &mut Scope<'d>,
    ) -> Option<usize> {
        let (start, end) = (
            steps.first()?.node.span.start(),
            steps.last()?.node.span.end(),
        );
        let mut claimed = 0;
        for (i, step) in steps.iter().enumerate() {
            match cut {
                Cut::Fixed(k) if i == k => return Some(k),
                Cut::Fixed(_) => {}
                Cut::Moving => {
                    // What the first thread has done is read now and then: it writes it
                    // for every step, and reading it as often would share the cache line.
                    if i % 16 == 0 {
                        claimed = boundary.claimed();
                    }
                    let here = step.node.span.start();
                    if claimed > i {
                        // It starts behind the first thread and catches up — unless that
                        // thread has done half already, when there is little to share.
                        match steps.get(claimed) {
                            Some(s) if end - s.node.span.start() > (end - start) / 2 => {}
                            _ => return None,
                        }
                    } else if end - here <= here - steps[claimed].node.span.start()
                        && boundary.set(i)
                    {
                        return Some(i);
                    }
                }
            }
            if let Some(info) = self.step(step, scope) {
                scope.push_step(info);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the timing, the first thread stops exactly where the boundary was set, or
    /// claims every step when none could be.
    #[test]
    fn the_first_thread_stops_at_the_boundary_set_or_claims_every_step() {
        const STEPS: usize = 2_000;
        for round in 0..200 {
            let boundary = Boundary::new(None);
            let want = 1 + round * 7 % (STEPS - 1);
            let (done, set) = std::thread::scope(|threads| {
                let setter = threads.spawn(|| {
                    // Wait until the first thread is near, so that both sides of the race
                    // are taken in some rounds.
                    while boundary.claimed() + 50 < want {
                        std::hint::spin_loop();
                    }
                    boundary.set(want)
                });
                let mut done = 0;
                while done < STEPS && boundary.claim(done) {
                    done += 1;
                }
                (done, setter.join().unwrap())
            });
            if set {
                assert_eq!(
                    done, want,
                    "round {round}: stopped elsewhere than the boundary"
                );
                assert!(
                    !boundary.claim(want),
                    "round {round}: claimed past the boundary"
                );
            } else {
                assert_eq!(done, STEPS, "round {round}: stopped without a boundary");
            }
        }
    }

    #[test]
    fn a_fixed_boundary_is_there_from_the_start() {
        let boundary = Boundary::new(Some(3));
        assert!((0..3).all(|j| boundary.claim(j)));
        assert!(!boundary.claim(3));
        assert_eq!(boundary.claimed(), 3);
    }
}
