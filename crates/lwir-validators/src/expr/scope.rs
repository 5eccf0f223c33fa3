//! What an expression can see: the steps before it and the variables bound around it,
//! and the references between steps it makes.

use super::*;
use lwir_spec::document::Str;
use std::sync::Arc;

/// A data dependency from an expression. A draft has several for each step: the pointers
/// are shared (the step's by all its references, the string's by the references in it) and
/// the id is kept inline, so that a reference allocates nothing of its own.
#[derive(Clone, Debug)]
pub(crate) struct Reference {
    /// The step whose field holds the expression.
    pub(crate) from_step: Arc<str>,
    /// The referenced step id.
    pub(crate) to: Str,
    /// Pointer and span of the reference.
    pub(crate) pointer: Arc<str>,
    pub(crate) span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct StepInfo<'d> {
    pub(super) id: &'d str,
    /// Shared: every revision's scope of an editor's draft (see `memo`) holds the same.
    pub(super) output: Option<Arc<Ty>>,
    pub(super) maybe_absent: bool,
}

/// What an expression can see: a stack of visible steps (innermost last) and of bound
/// variables, with an index so that lookups do not scan the stack.
#[derive(Debug, Default)]
pub(super) struct Scope<'d> {
    pub(super) steps: Vec<StepInfo<'d>>,
    /// For each of `steps`, the index of the step of the same id it hides, if any.
    hides: Vec<Option<usize>>,
    /// The index of the innermost step with each id.
    by_id: HashMap<&'d str, usize>,
    pub(super) vars: Vec<(String, Ty)>,
}

impl<'d> Scope<'d> {
    pub(super) fn push_step(&mut self, info: StepInfo<'d>) {
        let hidden = self.by_id.insert(info.id, self.steps.len());
        self.hides.push(hidden);
        self.steps.push(info);
    }

    /// Removes the steps pushed since the stack had `len` entries, and returns them.
    pub(super) fn pop_steps(&mut self, len: usize) -> Vec<StepInfo<'d>> {
        let removed: Vec<StepInfo<'d>> = self.steps.drain(len..).collect();
        for (info, hidden) in removed.iter().zip(self.hides.drain(len..)).rev() {
            match hidden {
                Some(i) => self.by_id.insert(info.id, i),
                None => self.by_id.remove(info.id),
            };
        }
        removed
    }

    /// The innermost visible step with id `id`.
    pub(super) fn step(&self, id: &str) -> Option<&StepInfo<'d>> {
        self.by_id.get(id).map(|&i| &self.steps[i])
    }
}
