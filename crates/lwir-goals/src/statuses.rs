//! Every work item's status ([`WorkStatus`]), as the projection gives it, kept so that a
//! change costs what it changes: a driver deciding again after each event it folds does not
//! compute the statuses of the whole goal again.
//!
//! An item's status depends on its own attempts, on whether it is in the active generation,
//! on the goal's budgets, and — for an item of the active generation — on its dependencies'
//! statuses, which [`Statuses`] keeps as two counts per item (dependencies not succeeded,
//! dependencies failed or blocked). An attempt's event recomputes its item's status and,
//! where it changed, its dependents' counts and statuses, and so on. What changes more —
//! items materialized, a plan applied, the goal cancelled, the budgets spent — is computed
//! from the whole fold again ([`crate::projection::Fold::keep_statuses`]).

use std::collections::BTreeSet;

use crate::file::GoalFile;
use crate::projection::{Fold, WorkStatus};

/// Every item's status, in materialization order, and what keeping them up to date needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Statuses {
    /// The budgets they were computed for: whether a new attempt may start.
    budget_left: bool,
    status: Vec<WorkStatus>,
    /// Whether each item is in the active generation (the root's closure).
    active: Vec<bool>,
    /// Each item's template's ceiling.
    max_attempts: Vec<u32>,
    /// For each item, the items of the active generation that name it as a dependency (as
    /// many times as they name it).
    dependents: Vec<Vec<usize>>,
    /// For each item of the active generation, how many of its dependencies have not
    /// succeeded.
    unfinished: Vec<u32>,
    /// … and how many failed for good or are blocked.
    broken: Vec<u32>,
    /// The ready items (all of the active generation), in materialization order.
    ready: BTreeSet<usize>,
    /// The items with an attempt in flight, of any generation.
    running: BTreeSet<usize>,
    /// How many of those are in the active generation.
    active_running: u32,
}

impl Statuses {
    /// Every item's status in `fold`, for goal `file`, when a new attempt may start
    /// (`budget_left`) or not.
    pub(crate) fn of(fold: &Fold, file: &GoalFile, budget_left: bool) -> Statuses {
        let n = fold.items.len();
        let mut active = vec![false; n];
        for i in fold.active() {
            active[i] = true;
        }
        let mut statuses = Statuses {
            budget_left,
            status: Vec::with_capacity(n),
            active,
            max_attempts: fold
                .items
                .iter()
                .map(|item| {
                    file.templates
                        .get(&item.spec.template)
                        .map_or(1, |t| t.max_attempts)
                })
                .collect(),
            dependents: vec![Vec::new(); n],
            unfinished: vec![0; n],
            broken: vec![0; n],
            ready: BTreeSet::new(),
            running: BTreeSet::new(),
            active_running: 0,
        };
        // In materialization order: an item's dependencies are materialized before it.
        for i in 0..n {
            if statuses.active[i] {
                for j in dependencies(fold, i) {
                    statuses.dependents[j].push(i);
                    let status = statuses.status[j];
                    statuses.count(i, status, 1);
                }
            }
            let status = statuses.own(fold, i);
            statuses.status.push(status);
            statuses.note(i, None, status);
        }
        statuses
    }

    /// The budgets they were computed for.
    pub(crate) fn budget_left(&self) -> bool {
        self.budget_left
    }

    /// The status of item `i` (its place in [`Fold::items`]).
    pub fn status(&self, i: usize) -> WorkStatus {
        self.status[i]
    }

    /// The ceiling of attempts of item `i`'s template.
    pub fn max_attempts(&self, i: usize) -> u32 {
        self.max_attempts[i]
    }

    /// Whether item `i` is in the active generation.
    pub fn is_active(&self, i: usize) -> bool {
        self.active[i]
    }

    /// The items of the active generation, in materialization order.
    pub fn active(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.active.len()).filter(|&i| self.active[i])
    }

    /// The ready items, in materialization order.
    pub fn ready(&self) -> impl Iterator<Item = usize> + '_ {
        self.ready.iter().copied()
    }

    /// How many items are ready.
    pub fn ready_count(&self) -> usize {
        self.ready.len()
    }

    /// The items with an attempt in flight (of any generation), in materialization order.
    pub fn running(&self) -> impl Iterator<Item = usize> + '_ {
        self.running.iter().copied()
    }

    /// How many items of the active generation run.
    pub fn active_running(&self) -> u32 {
        self.active_running
    }

    /// Brings them up to date after item `i`'s attempts changed in `fold`: its status
    /// recomputed and, where a status changed, its dependents' counts and statuses.
    pub(crate) fn touch(&mut self, fold: &Fold, i: usize) {
        let mut changed = vec![i];
        while let Some(k) = changed.pop() {
            let old = self.status[k];
            let new = self.own(fold, k);
            if old == new {
                continue;
            }
            self.status[k] = new;
            self.note(k, Some(old), new);
            for d in 0..self.dependents[k].len() {
                let dependent = self.dependents[k][d];
                self.count(dependent, old, -1);
                self.count(dependent, new, 1);
                changed.push(dependent);
            }
        }
    }

    /// Item `i`'s status from its attempts and its counts (the rule of the projection).
    fn own(&self, fold: &Fold, i: usize) -> WorkStatus {
        let item = &fold.items[i];
        if item.output().is_some() {
            WorkStatus::Succeeded
        } else if item.running().is_some() {
            WorkStatus::Running
        } else if !self.active[i] && fold.obsolete.contains(&item.spec.work) {
            WorkStatus::Obsolete
        } else if !self.active[i] {
            WorkStatus::Superseded
        } else if self.broken[i] > 0 {
            WorkStatus::Blocked
        } else if self.unfinished[i] > 0 {
            WorkStatus::Pending
        } else {
            let spent = item.attempts.len() as u32 >= self.max_attempts[i];
            if spent || (!self.budget_left && !item.attempts.is_empty()) {
                WorkStatus::Failed
            } else if !self.budget_left {
                WorkStatus::Pending
            } else {
                WorkStatus::Ready
            }
        }
    }

    /// Counts a dependency of item `i` with `status` (`delta` 1) or no longer (-1).
    fn count(&mut self, i: usize, status: WorkStatus, delta: i32) {
        let add = |n: &mut u32| *n = n.checked_add_signed(delta).unwrap_or(0);
        if status != WorkStatus::Succeeded {
            add(&mut self.unfinished[i]);
        }
        if matches!(status, WorkStatus::Failed | WorkStatus::Blocked) {
            add(&mut self.broken[i]);
        }
    }

    /// Notes that item `i` went from `old` (none: it is new) to `new` in the sets kept.
    fn note(&mut self, i: usize, old: Option<WorkStatus>, new: WorkStatus) {
        for (status, add) in old.map(|o| (o, false)).into_iter().chain([(new, true)]) {
            match status {
                WorkStatus::Ready => {
                    if add {
                        self.ready.insert(i);
                    } else {
                        self.ready.remove(&i);
                    }
                }
                WorkStatus::Running => {
                    if add {
                        self.running.insert(i);
                    } else {
                        self.running.remove(&i);
                    }
                    if self.active[i] {
                        self.active_running = if add {
                            self.active_running + 1
                        } else {
                            self.active_running.saturating_sub(1)
                        };
                    }
                }
                _ => {}
            }
        }
    }
}

/// The items item `i` depends on, as its `after` names them (those materialized before it;
/// a name of nothing materialized is no dependency).
fn dependencies(fold: &Fold, i: usize) -> impl Iterator<Item = usize> + '_ {
    fold.items[i]
        .spec
        .after
        .iter()
        .filter_map(|d| fold.position(d))
        .filter(move |&j| j < i)
}
