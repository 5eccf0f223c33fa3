//! Plan adaptation: revising the *remaining* plan while a goal runs
//! (`replanning.adaptation`, `crates/lwir-spec/README.md` §10.3).
//!
//! After an attempt ends, `goal run` asks whether the trigger fires (`on-failure`: after a
//! failed attempt; `every-step`: after every attempt). The planner then gets an `adapt`
//! request — the completed items with their outputs, the running and pending ones, the
//! bounds left — and answers `keep`, `revise` (the new remaining items and root) or
//! `attention`. A revision is checked like a replan, plus: every completed and running item
//! stays as it is (repeating one changed is LW1019); pending items the new root no longer
//! needs become `obsolete`; the generation advances. A trigger whose attempt was dispatched
//! in an earlier generation than the current one does not fire: the plan already changed
//! since that work began, so two near-simultaneous completions give one revision.

use lwir_spec::document::{self};
use lwir_spec::{Code, Finding, Node};
use serde::Serialize;

use crate::agent::Agent;
use crate::events::{self, GoalEvent, PlanEvent};
use crate::file::{Adaptation, ItemSpec};
use crate::goal::{GoalError, Goals, Loaded};
use crate::projection::{Status, WorkStatus};
use crate::replan::{attention, findings_json, goal_summary, proposed_root, refused};

/// Appends one event to the plan's log and the goal's.
type Append<'a> =
    dyn FnMut(GoalEvent, &mut Box<dyn crate::store::PlanLog>) -> Result<(), GoalError> + 'a;

/// The attempt whose end may trigger an adaptation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Trigger {
    /// The work id.
    pub work: String,
    /// Its key.
    pub key: String,
    /// The attempt.
    pub attempt: u32,
    /// Whether it succeeded.
    pub succeeded: bool,
    /// The generation it was dispatched in.
    pub generation: u32,
}

/// How an adaptation ended.
#[derive(Debug)]
pub enum Adapted {
    /// The trigger does not fire (why).
    NotTriggered(String),
    /// The planner kept the plan.
    Kept {
        /// The plan id.
        plan: String,
    },
    /// The revision was applied: the new generation.
    Revised {
        /// The plan id.
        plan: String,
        /// The new generation.
        generation: u32,
        /// The pending items it obsoleted.
        obsoleted: usize,
    },
    /// The revision is valid and waits for review (dispatch pauses meanwhile).
    AwaitingReview {
        /// The plan id.
        plan: String,
    },
    /// The planner asked for attention; the plan goes on as it was.
    Attention {
        /// The plan id.
        plan: String,
        /// Why.
        rationale: String,
    },
    /// The planner failed or its revision was refused; the plan goes on as it was.
    Failed {
        /// The plan id.
        plan: String,
        /// Whether it was charged.
        charged: bool,
        /// What happened.
        message: String,
        /// The refused revision's findings.
        findings: Vec<Finding>,
    },
}

impl Goals<'_> {
    /// Whether the end of `trigger`'s attempt makes goal `id` adapt now: `None` when it
    /// does, else why not.
    pub fn adaptation_due(&self, loaded: &Loaded, trigger: &Trigger) -> Option<String> {
        let Some(replanning) = loaded.file.replanning.as_ref() else {
            return Some("the goal does not adapt (no `replanning`)".into());
        };
        let fires = match replanning.adaptation_mode() {
            Adaptation::Off => false,
            Adaptation::OnFailure => !trigger.succeeded,
            Adaptation::EveryStep => true,
        };
        if !fires {
            return Some("the goal does not adapt on this".into());
        }
        let projection = self.project(loaded);
        if projection.adaptations.used >= projection.adaptations.max {
            return Some(format!(
                "its adaptations are spent ({} of {})",
                projection.adaptations.used, projection.adaptations.max
            ));
        }
        if matches!(
            projection.status,
            Status::Succeeded | Status::Cancelled | Status::Exhausted | Status::AwaitingReview
        ) {
            return Some(format!("the goal is {}", projection.status.as_str()));
        }
        if projection.plans.iter().any(|p| p.status == "in-progress") {
            return Some("a plan is in progress".into());
        }
        let generation = loaded.fold.generation.unwrap_or(0);
        if generation != trigger.generation {
            return Some(format!(
                "the plan already changed since `{}` was dispatched (generation {} → {generation})",
                trigger.key, trigger.generation
            ));
        }
        if !projection.work.iter().any(|w| {
            matches!(
                w.status,
                WorkStatus::Pending | WorkStatus::Ready | WorkStatus::Blocked | WorkStatus::Failed
            )
        }) {
            return Some("nothing of the plan remains to revise".into());
        }
        None
    }

    /// One adaptation of goal `id` after `trigger`'s attempt ended, when it is due.
    pub fn adapt(
        &self,
        id: &str,
        trigger: &Trigger,
        planner: &mut dyn Agent,
    ) -> Result<Adapted, GoalError> {
        let loaded = self.load(id)?;
        if let Some(why) = self.adaptation_due(&loaded, trigger) {
            return Ok(Adapted::NotTriggered(why));
        }
        let (loaded, replanning, plan, mut log) =
            self.begin_plan(
                id,
                "adapt",
                &|loaded, _| match self.adaptation_due(loaded, trigger) {
                    None => Ok(()),
                    Some(why) => Err(format!("goal `{id}` does not adapt now: {why}")),
                },
            )?;
        let mut writer = crate::replan::PlanWriter {
            store: self.store,
            id,
            seq: loaded.fold.last_seq + 1,
            doing: "adapted",
        };
        let mut append =
            |event: GoalEvent, log: &mut Box<dyn crate::store::PlanLog>| writer.append(log, &event);
        let request = self.adapt_request(&loaded, &plan, trigger);
        let bytes = serde_json::to_vec(&request).unwrap_or_default();
        log.put("request-1", &bytes)?;
        log.append(PlanEvent::SessionStarted(&events::SessionStarted {
            manifest: request["manifest"].clone(),
            planner: planner.describe(),
        }))?;
        let env = crate::replan::agent_env(1, id, &plan);
        let answer = match planner.call("adapt", &bytes, &env) {
            Ok(answer) => answer,
            Err(failure) => {
                let (charged, event) = crate::replan::no_answer(&plan, &failure);
                append(event, &mut log)?;
                return Ok(Adapted::Failed {
                    plan,
                    charged,
                    message: failure.message,
                    findings: Vec::new(),
                });
            }
        };
        log.put("answer-1", &answer)?;
        let (read, read_findings) = document::read_document(answer);
        // Refuses the revision with `findings`, which point into `source` (read into
        // `document` when it could be).
        let refuse = |findings: Vec<Finding>,
                      (source, document): (&[u8], Option<&lwir_spec::SpannedDocument>),
                      log: &mut Box<dyn crate::store::PlanLog>,
                      append: &mut Append<'_>|
         -> Result<Adapted, GoalError> {
            let json = findings_json(&findings, source, document);
            log.put("findings", &serde_json::to_vec(&json).unwrap_or_default())?;
            let message = format!(
                "the revision was refused with {} finding(s)",
                findings.iter().filter(|f| f.is_error()).count()
            );
            let event = refused(&plan, &findings, message.clone(), json);
            append(event, log)?;
            Ok(Adapted::Failed {
                plan: plan.clone(),
                charged: true,
                message,
                findings,
            })
        };
        let doc = match read {
            Ok(doc) if !read_findings.iter().any(Finding::is_error) => doc,
            read => {
                let mut findings = read_findings;
                if findings.is_empty() {
                    findings.push(Finding::new(
                        Code::InvalidProposal,
                        "",
                        lwir_spec::Span::default(),
                        "the planner printed nothing",
                    ));
                }
                let (source, document) = match &read {
                    Ok(doc) => (doc.source(), Some(doc)),
                    Err(bytes) => (bytes.as_slice(), None),
                };
                return refuse(findings, (source, document), &mut log, &mut append);
            }
        };
        match doc.root().get("kind").and_then(Node::as_str) {
            Some("keep") => {
                let event = GoalEvent::Kept(events::Kept { plan: plan.clone() });
                append(event, &mut log)?;
                Ok(Adapted::Kept { plan })
            }
            Some("attention") => {
                let rationale = crate::replan::rationale_of(&doc).trim().to_owned();
                let rationale = lwir_spec::text::ellipsis(
                    &rationale,
                    lwir_repair::protocol::MAX_RATIONALE_CHARS,
                );
                append(attention(&plan, &rationale, "planner"), &mut log)?;
                Ok(Adapted::Attention { plan, rationale })
            }
            Some("revise") => {
                let shape = lwir_validators::shape::check_proposal(&doc);
                if shape.iter().any(Finding::is_error) {
                    return refuse(shape, (doc.source(), Some(&doc)), &mut log, &mut append);
                }
                let Some(Ok(items)) = doc
                    .root()
                    .get("items")
                    .map(|n| serde_json::from_value::<Vec<ItemSpec>>(n.to_json()))
                else {
                    return refuse(shape, (doc.source(), Some(&doc)), &mut log, &mut append);
                };
                let root = proposed_root(&doc);
                let (kept, mut findings) = self.kept_items(&loaded, &doc, &items);
                let new_items: Vec<ItemSpec> = items
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !kept.contains(i))
                    .map(|(_, x)| x.clone())
                    .collect();
                if findings.iter().any(Finding::is_error) {
                    return refuse(findings, (doc.source(), Some(&doc)), &mut log, &mut append);
                }
                // The new items, checked as a document of their own (findings point into it).
                let json =
                    serde_json::json!({ "kind": "revise", "items": new_items, "root": root });
                let Some(checked_doc) =
                    document::read(serde_json::to_vec_pretty(&json).unwrap_or_default()).document
                else {
                    return refuse(findings, (doc.source(), Some(&doc)), &mut log, &mut append);
                };
                let (more, checked) =
                    self.check_plan(&loaded, &checked_doc, &new_items, &root, true);
                findings.extend(more);
                if checked.is_none() || findings.iter().any(Finding::is_error) {
                    return refuse(findings, (doc.source(), Some(&doc)), &mut log, &mut append);
                }
                let proposed = events::Proposed {
                    plan: plan.clone(),
                    round: 1,
                    items: new_items,
                    root,
                };
                append(GoalEvent::Proposed(proposed), &mut log)?;
                if replanning.auto_apply {
                    let generation = self.apply(id, &plan, "auto_apply")?;
                    let obsoleted = self
                        .load(id)?
                        .fold
                        .obsolete
                        .len()
                        .saturating_sub(loaded.fold.obsolete.len());
                    Ok(Adapted::Revised {
                        plan,
                        generation,
                        obsoleted,
                    })
                } else {
                    Ok(Adapted::AwaitingReview { plan })
                }
            }
            other => {
                let finding = crate::replan::unknown_kind(
                    &doc,
                    other,
                    "an adaptation answers \"keep\", \"revise\" or \"attention\"",
                );
                refuse(
                    vec![finding],
                    (doc.source(), Some(&doc)),
                    &mut log,
                    &mut append,
                )
            }
        }
    }

    /// The indexes of the revision's items that repeat an active item unchanged (kept), and
    /// the findings of those that repeat one changed.
    fn kept_items(
        &self,
        loaded: &Loaded,
        doc: &lwir_spec::SpannedDocument,
        items: &[ItemSpec],
    ) -> (Vec<usize>, Vec<Finding>) {
        let projection = self.project(loaded);
        let mut kept = Vec::new();
        let mut findings = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let Some(active) = projection.work.iter().find(|w| w.key == item.key) else {
                continue;
            };
            let Some(existing) = loaded.fold.item(&active.id) else {
                continue;
            };
            let after: Vec<String> = existing
                .spec
                .after
                .iter()
                .filter_map(|id| loaded.fold.item(id).map(|d| d.spec.key.clone()))
                .collect();
            let mut wanted = item.after.clone();
            let input = crate::goal::json_node(&item.input).unwrap_or(Node {
                span: lwir_spec::Span::default(),
                value: lwir_spec::document::Value::Null,
            });
            for key in crate::check::work_reads(&input) {
                if !wanted.contains(&key) {
                    wanted.push(key);
                }
            }
            let same =
                existing.spec.template == item.template && existing.spec.input == item.input && {
                    let (mut a, mut b) = (after.clone(), wanted);
                    a.sort();
                    b.sort();
                    a == b
                };
            if same {
                kept.push(i);
                continue;
            }
            let at = format!("/items/{i}");
            let span = doc.span_of(&format!("{at}/key")).unwrap_or_default();
            if matches!(active.status, WorkStatus::Succeeded | WorkStatus::Running) {
                findings.push(
                    Finding::new(
                        Code::AltersFinishedWork,
                        format!("{at}/key"),
                        span,
                        format!(
                            "`{}` has {}; a revision may repeat it only unchanged",
                            item.key,
                            if active.status == WorkStatus::Running {
                                "an attempt running"
                            } else {
                                "succeeded"
                            }
                        ),
                    )
                    .with_help("leave it out, or repeat it exactly; add new items after it"),
                );
            } else {
                findings.push(
                    Finding::new(Code::DuplicateWorkKey, format!("{at}/key"), span, format!("`{}` is a pending item of the plan; a changed item needs a new key (the pending one then becomes obsolete)", item.key)),
                );
            }
        }
        (kept, findings)
    }

    fn adapt_request(&self, loaded: &Loaded, plan: &str, trigger: &Trigger) -> serde_json::Value {
        let projection = self.project(loaded);
        let mut completed = Vec::new();
        let mut running = Vec::new();
        let mut pending = Vec::new();
        for w in &projection.work {
            let Some(item) = loaded.fold.item(&w.id) else {
                continue;
            };
            let keys = |ids: &[String]| -> Vec<String> {
                ids.iter()
                    .filter_map(|id| loaded.fold.item(id).map(|d| d.spec.key.clone()))
                    .collect()
            };
            match w.status {
                WorkStatus::Succeeded => completed.push(serde_json::json!({ "id": w.id, "key": w.key, "template": w.template, "output": item.output() })),
                WorkStatus::Running => running.push(serde_json::json!({ "id": w.id, "key": w.key, "template": w.template, "attempt": item.running() })),
                _ => pending.push(serde_json::json!({
                    "id": w.id, "key": w.key, "template": w.template, "status": w.status,
                    "attempts": w.attempts, "input": item.spec.input, "after": keys(&item.spec.after),
                })),
            }
        }
        let manifest = crate::replan::request_manifest(loaded, &self.context(loaded));
        let replanning = loaded.file.replanning.as_ref();
        serde_json::json!({
            "kind": "adapt",
            "protocol": lwir_repair::protocol::PROTOCOL,
            "call": 1,
            "goal": goal_summary(loaded),
            "plan": plan,
            "trigger": trigger,
            "root": projection.active_root,
            "completed": completed,
            "running": running,
            "pending": pending,
            "catalog": crate::replan::catalog_json(loaded),
            "bounds": {
                "adaptations_left": projection.adaptations.max.saturating_sub(projection.adaptations.used + 1),
                "max_items_per_plan": replanning.map_or(0, |r| r.max_items_per_plan),
                "planned_items_left": projection.planned_items.max.saturating_sub(projection.planned_items.used),
                "attempts_left": projection.attempts.max.saturating_sub(projection.attempts.used),
            },
            "projection": projection,
            "manifest": manifest,
        })
    }
}
