//! What the expression pass keeps of one revision of a draft for the next, in an editor:
//! a change to one step leaves the others' checks as they were.
//!
//! The check of a top-level step reads its own bytes, the scope before it (what the steps
//! before it added), the definition and the ids of the draft's steps (for "did you mean").
//! Nothing else: the pass's other state is caches of pure functions. So a step whose bytes
//! are the same as at the same index in the last revision, when the definition and the ids
//! are the same and every step before it added the same to the scope, has the same
//! findings, references and additions to the scope — moved by as many bytes as the step
//! moved. A step whose findings point outside it is always checked again.

use super::*;

/// What the validation of the last revision of one draft left for the next: the
/// expression pass's results by top-level step, and the steps that met the meta-schema.
/// Empty at first; [`crate::check_draft_memo`] fills it and uses it.
#[derive(Debug, Default)]
pub struct Memo {
    pub(crate) steps: Steps,
    pub(crate) shape: crate::shape::Memo,
}

/// The expression pass's part of a [`Memo`].
#[derive(Debug, Default)]
pub(crate) struct Steps {
    /// The text the entries were checked in.
    source: Vec<u8>,
    /// The definition's text, when there was one.
    definition: Option<Vec<u8>>,
    /// The ids of the draft's steps, in document order.
    ids: Vec<String>,
    /// By top-level step index.
    entries: Vec<Entry>,
    /// How many of the last check's steps were not checked again.
    reused: usize,
}

#[derive(Debug)]
struct Entry {
    /// The step's bytes in [`Memo::source`].
    span: Span,
    /// Whether its results can stand for the same bytes elsewhere (all its places are
    /// inside it).
    movable: bool,
    /// Its findings, their draft spans relative to the step's start.
    findings: Vec<Finding>,
    /// Its references, spans relative likewise.
    references: Vec<Reference>,
    /// What it added to the scope.
    pushed: Vec<Pushed>,
}

#[derive(Debug, PartialEq)]
struct Pushed {
    id: String,
    output: Option<Arc<Ty>>,
    maybe_absent: bool,
}

impl Memo {
    /// Forgets everything: the next check is a whole one.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// How many top-level steps it holds results of.
    pub fn len(&self) -> usize {
        self.steps.entries.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.steps.entries.is_empty()
    }

    /// How many top-level steps the last check's expression pass took from the revision
    /// before instead of checking them.
    pub fn reused(&self) -> usize {
        self.steps.reused
    }
}

fn shift(span: Span, by: isize) -> Span {
    Span::new(
        span.start().saturating_add_signed(by),
        span.end().saturating_add_signed(by),
    )
}

fn inside(span: Span, step: Span) -> bool {
    span.start() >= step.start() && span.end() <= step.end()
}

fn under(pointer: &str, step: &str) -> bool {
    pointer
        .strip_prefix(step)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

fn shifted_finding(f: &Finding, by: isize) -> Finding {
    let mut f = f.clone();
    if f.origin == lwir_spec::Origin::Draft {
        f.span = shift(f.span, by);
    }
    for r in &mut f.related {
        if r.origin == lwir_spec::Origin::Draft {
            r.span = shift(r.span, by);
        }
    }
    f
}

impl<'d> Checker<'_, 'd, '_> {
    /// [`Checker::list`] of the top-level steps, reusing `memo`'s results of the steps
    /// whose checks would read the same as in its revision, and leaving this revision's
    /// results in it.
    pub(super) fn top_level(
        &mut self,
        steps: &[Step<'d>],
        scope: &mut Scope<'d>,
        memo: &mut Steps,
    ) {
        let definition = self.cx.definition.as_ref().map(|(d, _)| d.source());
        let same_context = memo.definition.as_deref() == definition
            && memo.ids.len() == self.ids.in_order().len()
            && memo
                .ids
                .iter()
                .zip(self.ids.in_order())
                .all(|(a, b)| a == b);
        let old_source = std::mem::take(&mut memo.source);
        let mut old = std::mem::take(&mut memo.entries).into_iter();
        // Whether the scope before the next step is the one before it in the last revision.
        let mut same_scope = same_context;
        let mut entries = Vec::with_capacity(steps.len());
        memo.reused = 0;
        for step in steps {
            let mut prior = old.next();
            let span = step.node.span;
            let bytes = &self.source[span.range()];
            if let Some(mut same) = prior.take_if(|p| {
                same_scope && p.movable && old_source.get(p.span.range()) == Some(bytes)
            }) {
                if self.replay(&same, span, scope) {
                    same.span = span;
                    entries.push(same);
                    memo.reused += 1;
                    continue;
                }
                prior = Some(same);
            }
            let (findings, references, depth) = (
                self.out.len(),
                self.analysis.references.len(),
                scope.steps.len(),
            );
            if let Some(info) = self.step(step, scope) {
                scope.push_step(info);
            }
            let entry = self.record(step, span, findings, references, &scope.steps[depth..]);
            if same_scope && prior.is_none_or(|p| p.pushed != entry.pushed) {
                same_scope = false;
            }
            entries.push(entry);
        }
        memo.entries = entries;
        memo.source = self.source.to_vec();
        memo.definition = definition.map(<[u8]>::to_vec);
        memo.ids = self
            .ids
            .in_order()
            .iter()
            .map(|&id| id.to_owned())
            .collect();
    }

    /// Pushes what `entry` recorded, moved to `span`; `false` (and nothing pushed) when an
    /// id it added is not one of this draft's.
    fn replay(&mut self, entry: &Entry, span: Span, scope: &mut Scope<'d>) -> bool {
        let mut infos = Vec::with_capacity(entry.pushed.len());
        for p in &entry.pushed {
            let Some(&id) = self.ids.set().get(p.id.as_str()) else {
                return false;
            };
            infos.push(StepInfo {
                id,
                output: p.output.clone(),
                maybe_absent: p.maybe_absent,
            });
        }
        let by = span.start() as isize;
        self.out
            .extend(entry.findings.iter().map(|f| shifted_finding(f, by)));
        self.analysis
            .references
            .extend(entry.references.iter().map(|r| Reference {
                span: shift(r.span, by),
                ..r.clone()
            }));
        for info in infos {
            scope.push_step(info);
        }
        true
    }

    /// The entry of `step` at `span`, checked just now: the findings and references
    /// pushed since there were `findings` and `references`, and the scope's `pushed`.
    fn record(
        &self,
        step: &Step<'d>,
        span: Span,
        findings: usize,
        references: usize,
        pushed: &[StepInfo<'d>],
    ) -> Entry {
        let by = -(span.start() as isize);
        let found = &self.out[findings..];
        let referenced = &self.analysis.references[references..];
        let movable = found.iter().all(|f| {
            (f.origin != lwir_spec::Origin::Draft
                || (inside(f.span, span) && under(&f.pointer, &step.pointer)))
                && f.related.iter().all(|r| {
                    r.origin != lwir_spec::Origin::Draft
                        || (inside(r.span, span) && under(&r.pointer, &step.pointer))
                })
        }) && referenced
            .iter()
            .all(|r| inside(r.span, span) && under(&r.pointer, &step.pointer));
        Entry {
            span,
            movable,
            findings: if movable {
                found.iter().map(|f| shifted_finding(f, by)).collect()
            } else {
                Vec::new()
            },
            references: if movable {
                referenced
                    .iter()
                    .map(|r| Reference {
                        span: shift(r.span, by),
                        ..r.clone()
                    })
                    .collect()
            } else {
                Vec::new()
            },
            pushed: pushed
                .iter()
                .map(|info| Pushed {
                    id: info.id.to_owned(),
                    output: info.output.clone(),
                    maybe_absent: info.maybe_absent,
                })
                .collect(),
        }
    }
}
