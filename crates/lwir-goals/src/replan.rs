//! Plans after the first: `goal replan` (a bounded planner cycle, with its reviewer), a
//! proposal read and checked as the goal stands, its review (`goal approve`, `reject`,
//! `retry`), and applying it — materializing its items into a new generation. Every event
//! of a plan goes to its own log and the goal's (`PlanWriter`).

use std::collections::BTreeMap;

use lwir_repair::manifest::PlannerManifest;
use lwir_spec::document::{self};
use lwir_spec::{Code, Finding, Node, SpannedDocument};

use crate::agent::{Agent, CallFailure};
use crate::catalog::TemplateError;
use crate::check::{self, Active, Bounds, Mode};
use crate::events::{self, GoalEvent, PlanEvent};
use crate::file::ItemSpec;
use crate::goal::{
    Begun, GoalError, Goals, Loaded, MAX_CONFLICTS, Replanned, busy, planner_manifest,
    refuse_if_cancelled, work_id,
};

use crate::projection::{self, Projection, Status, WorkStatus};
use crate::store::{PlanLog, Store, StoreError};

impl Goals<'_> {
    /// `goal replan`: one bounded planner cycle, when the goal is eligible.
    pub fn replan(
        &self,
        id: &str,
        planner: &mut dyn Agent,
        mut reviewer: Option<&mut dyn Agent>,
    ) -> Result<Replanned, GoalError> {
        let (loaded, replanning, plan_id, mut log) = self.begin_replan(id)?;
        let mut feedback: Vec<serde_json::Value> = loaded
            .fold
            .plans
            .iter()
            .filter_map(|p| {
                let r = p.receipt.as_ref().filter(|r| r.verdict != "passed")?;
                Some(serde_json::json!({ "plan": p.id, "by": r.by, "feedback": r.feedback }))
            })
            .collect();
        let rounds = 1 + replanning.max_review_rounds;
        let mut writer = PlanWriter {
            store: self.store,
            id,
            seq: loaded.fold.last_seq + 1,
            doing: "replanned",
        };
        let mut append = |event: GoalEvent, log: &mut Box<dyn PlanLog>| writer.append(log, &event);
        for round in 1..=rounds {
            let request = self.replan_request(&loaded, &plan_id, round, &feedback);
            if round == 1 {
                // The planner session of this replan: its own manifest, with the hash of the
                // prior cycles' context it is given.
                log.append(PlanEvent::SessionStarted(&events::SessionStarted {
                    manifest: request["manifest"].clone(),
                    planner: planner.describe(),
                }))?;
            }
            let bytes = serde_json::to_vec(&request).unwrap_or_default();
            log.put(&format!("request-{round}"), &bytes)?;
            let env = agent_env(round, id, &plan_id);
            let answer = match planner.call("replan", &bytes, &env) {
                Ok(answer) => answer,
                Err(failure) => {
                    let (charged, event) = no_answer(&plan_id, &failure);
                    append(event, &mut log)?;
                    return Ok(Replanned::Failed {
                        plan: plan_id,
                        charged,
                        message: failure.message,
                        findings: None,
                    });
                }
            };
            log.put(&format!("answer-{round}"), &answer)?;
            let proposal = match self.read_answer(&loaded, answer) {
                Answer::Attention(rationale) => {
                    append(attention(&plan_id, &rationale, "planner"), &mut log)?;
                    return Ok(Replanned::Attention {
                        plan: plan_id,
                        rationale,
                    });
                }
                Answer::Refused {
                    document,
                    findings,
                    json,
                    message,
                } => {
                    log.put("findings", &serde_json::to_vec(&json).unwrap_or_default())?;
                    append(
                        refused(&plan_id, &findings, message.clone(), json),
                        &mut log,
                    )?;
                    return Ok(Replanned::Failed {
                        plan: plan_id,
                        charged: true,
                        message,
                        findings: Some((document, findings)),
                    });
                }
                Answer::Proposal(p) => p,
            };
            let proposed = events::Proposed {
                plan: plan_id.clone(),
                round,
                items: proposal.0,
                root: proposal.1,
            };
            append(GoalEvent::Proposed(proposed.clone()), &mut log)?;
            let Some(reviewer) = reviewer.as_deref_mut() else {
                break;
            };
            let request = serde_json::json!({
                "kind": "review",
                "protocol": lwir_repair::protocol::PROTOCOL,
                "call": round,
                "goal": goal_summary(&loaded),
                "plan": plan_id,
                "round": round,
                "max_rounds": rounds,
                "proposal": { "kind": "apply", "items": proposed.items, "root": proposed.root },
                "projection": self.project(&loaded),
            });
            let bytes = serde_json::to_vec(&request).unwrap_or_default();
            log.put(&format!("review-request-{round}"), &bytes)?;
            let env = agent_env(round, id, &plan_id);
            let verdict = match reviewer.call("review", &bytes, &env) {
                Ok(answer) => {
                    log.put(&format!("review-{round}"), &answer)?;
                    read_verdict(&answer)
                }
                Err(failure) => Err(failure.message),
            };
            let (verdict, text) = match verdict {
                Ok(v) => v,
                Err(message) => {
                    // The proposal stands; without a receipt it waits for a person.
                    return Ok(Replanned::AwaitingReview {
                        plan: plan_id,
                        note: Some(format!(
                            "the reviewer gave no verdict ({message}); the proposal waits for a person"
                        )),
                    });
                }
            };
            let by = reviewer.describe();
            let reviewed = events::Reviewed {
                plan: plan_id.clone(),
                round,
                verdict: verdict.to_owned(),
                reviewer: "reviewer".into(),
                by: by.clone(),
                feedback: text.clone(),
            };
            append(GoalEvent::Reviewed(reviewed), &mut log)?;
            match verdict {
                "passed" => break,
                "attention" => {
                    let rationale = text.unwrap_or_default();
                    append(attention(&plan_id, &rationale, "reviewer"), &mut log)?;
                    return Ok(Replanned::Attention {
                        plan: plan_id,
                        rationale,
                    });
                }
                _ => {
                    let text = text.unwrap_or_default();
                    if round == rounds {
                        let event = GoalEvent::Rejected(events::Rejected {
                            plan: plan_id.clone(),
                            by,
                            feedback: text.clone(),
                        });
                        append(event, &mut log)?;
                        return Ok(Replanned::Rejected {
                            plan: plan_id,
                            feedback: text,
                        });
                    }
                    feedback.push(serde_json::json!({ "plan": plan_id, "by": by, "feedback": text, "round": round }));
                }
            }
        }
        if replanning.auto_apply {
            // Applied while this replan still holds its plan: nobody else approves it meanwhile.
            let generation = self.apply(id, &plan_id, "auto_apply")?;
            drop(log);
            return Ok(Replanned::Applied {
                plan: plan_id,
                generation,
            });
        }
        drop(log);
        Ok(Replanned::AwaitingReview {
            plan: plan_id,
            note: None,
        })
    }

    /// Checks eligibility, opens the next plan's log and records `plan.requested`.
    fn begin_replan(&self, id: &str) -> Result<Begun, GoalError> {
        self.begin_plan(id, "replan", &|_, projection| {
            if projection.status == Status::Eligible {
                Ok(())
            } else {
                Err(format!(
                    "goal `{id}` is not eligible for a replan: it is {} — {}",
                    projection.status.as_str(),
                    projection.reason
                ))
            }
        })
    }

    /// Checks that goal `id` replans at all and allows a plan of `kind` now (`allowed`),
    /// opens the next plan's log and records `plan.requested`.
    pub(crate) fn begin_plan(
        &self,
        id: &str,
        kind: &str,
        allowed: &dyn Fn(&Loaded, &Projection) -> Result<(), String>,
    ) -> Result<Begun, GoalError> {
        for _ in 0..MAX_CONFLICTS {
            let loaded = self.load(id)?;
            if self.recover(&loaded)? {
                continue;
            }
            let projection = self.project(&loaded);
            allowed(&loaded, &projection).map_err(GoalError::Refused)?;
            let Some(replanning) = loaded.file.replanning.clone() else {
                return Err(GoalError::Refused(format!(
                    "goal `{id}` does not replan (its goal file has no `replanning`)"
                )));
            };
            let recorded: PlannerManifest = serde_json::from_value(
                loaded
                    .fold
                    .created
                    .as_ref()
                    .map(|c| c.planner_manifest.clone())
                    .unwrap_or_default(),
            )
            .map_err(|e| GoalError::Damaged {
                goal: id.to_owned(),
                detail: format!("its frozen planner manifest: {e}"),
            })?;
            recorded.check(&planner_manifest(&replanning.planner))?;
            let n = loaded
                .fold
                .plans
                .iter()
                .filter(|p| p.kind != "initial")
                .count()
                + 1;
            let plan = format!("p{n}");
            let mut log = match self.store.open_plan(id, &plan) {
                Ok(log) => log,
                Err(StoreError::Busy { .. }) => {
                    return Err(GoalError::Refused(format!(
                        "goal `{id}` is not eligible for a {kind}: another plan ({plan}) is starting"
                    )));
                }
                Err(e) => return Err(e.into()),
            };
            let context = self.context(&loaded);
            let requested = events::Requested {
                plan: plan.clone(),
                kind: kind.into(),
                generation: loaded.fold.generation.unwrap_or(0),
                context_hash: context_hash(&context),
                by: self.by.clone(),
            };
            let event = GoalEvent::Requested(requested);
            match self.store.append(id, &event, loaded.fold.last_seq) {
                Ok(_) => {
                    log.append(PlanEvent::Goal(&event))?;
                    return Ok((loaded, replanning, plan, log));
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(busy(id))
    }

    /// The prior cycles' context a replan is given: every failed attempt and every plan's
    /// outcome so far.
    pub(crate) fn context(&self, loaded: &Loaded) -> serde_json::Value {
        let failures: Vec<serde_json::Value> = loaded
            .fold
            .items
            .iter()
            .flat_map(|item| {
                item.attempts.iter().filter_map(move |a| match &a.state {
                    projection::AttemptState::Failed {
                        error,
                        interrupted,
                        code,
                    } => {
                        let mut failure = serde_json::json!({
                            "work": item.spec.work,
                            "key": item.spec.key,
                            "template": item.spec.template,
                            "generation": item.spec.generation,
                            "attempt": a.n,
                            "error": error,
                            "interrupted": interrupted,
                        });
                        if let Some(code) = code {
                            failure["code"] = code.as_str().into();
                        }
                        Some(failure)
                    }
                    _ => None,
                })
            })
            .collect();
        let plans: Vec<serde_json::Value> = loaded
            .fold
            .plans
            .iter()
            .map(|p| serde_json::json!({ "plan": p.id, "kind": p.kind, "outcome": p.outcome, "receipt": p.receipt }))
            .collect();
        serde_json::json!({ "failures": failures, "plans": plans })
    }

    fn replan_request(
        &self,
        loaded: &Loaded,
        plan: &str,
        round: u32,
        feedback: &[serde_json::Value],
    ) -> serde_json::Value {
        let projection = self.project(loaded);
        let replanning = loaded.file.replanning.as_ref();
        let context = self.context(loaded);
        let manifest = request_manifest(loaded, &context);
        let catalog = catalog_json(loaded);
        let wall_left = loaded.fold.created.as_ref().map_or(0, |c| {
            (c.created_unix_s + loaded.file.limits.max_wall_time_s).saturating_sub((self.now)())
        });
        serde_json::json!({
            "kind": "replan",
            "protocol": lwir_repair::protocol::PROTOCOL,
            "call": round,
            "goal": goal_summary(loaded),
            "plan": plan,
            "projection": projection,
            "failures": context["failures"],
            "catalog": catalog,
            "bounds": {
                "max_items_per_plan": replanning.map_or(0, |r| r.max_items_per_plan),
                "planned_items_left": projection.planned_items.max.saturating_sub(projection.planned_items.used),
                // This replan is already spent when the planner reads its request.
                "replans_left": projection.replans.max.saturating_sub(projection.replans.used + 1),
                "attempts_left": projection.attempts.max.saturating_sub(projection.attempts.used),
                "wall_time_left_s": wall_left,
            },
            "feedback": feedback,
            "manifest": manifest,
        })
    }

    fn read_answer(&self, loaded: &Loaded, answer: Vec<u8>) -> Answer {
        let refused_in =
            |source: &[u8], document: Option<Box<SpannedDocument>>, findings: Vec<Finding>| {
                let n = findings.iter().filter(|f| f.is_error()).count();
                Answer::Refused {
                    json: findings_json(
                        &findings,
                        document.as_deref().map_or(source, SpannedDocument::source),
                        document.as_deref(),
                    ),
                    document,
                    message: format!("the proposal was refused with {n} finding(s)"),
                    findings,
                }
            };
        let refused = |document: Box<SpannedDocument>, findings: Vec<Finding>| {
            refused_in(&[], Some(document), findings)
        };
        let (doc, read_findings) = document::read_document(answer);
        let doc = match doc {
            Ok(doc) => doc,
            Err(bytes) => return refused_in(&bytes, None, read_findings),
        };
        if read_findings.iter().any(Finding::is_error) {
            return refused(Box::new(doc), read_findings);
        }
        match doc.root().get("kind").and_then(Node::as_str) {
            Some("attention") => {
                let rationale = rationale_of(&doc).to_owned();
                if rationale.trim().is_empty() {
                    let span = doc.root().span;
                    return refused(
                        Box::new(doc),
                        vec![Finding::new(
                            Code::InvalidProposal,
                            "/rationale",
                            span,
                            "an attention answer needs a non-empty `rationale`",
                        )],
                    );
                }
                Answer::Attention(lwir_spec::text::ellipsis(
                    &rationale,
                    lwir_repair::protocol::MAX_RATIONALE_CHARS,
                ))
            }
            Some("apply") => {
                let shape = lwir_validators::shape::check_proposal(&doc);
                if shape.iter().any(Finding::is_error) {
                    return refused(Box::new(doc), shape);
                }
                let items: Vec<ItemSpec> = match doc
                    .root()
                    .get("items")
                    .map(Node::to_json)
                    .map(serde_json::from_value)
                {
                    Some(Ok(items)) => items,
                    _ => return refused(Box::new(doc), shape),
                };
                let root = proposed_root(&doc);
                let (findings, plan) = self.check_plan(loaded, &doc, &items, &root, false);
                match plan {
                    Some(_) => Answer::Proposal((items, root)),
                    None => refused(Box::new(doc), findings),
                }
            }
            other => {
                let finding =
                    unknown_kind(&doc, other, "a replan answers \"apply\" or \"attention\"");
                refused(Box::new(doc), vec![finding])
            }
        }
    }

    /// The checks of a proposal against the goal as it stands; `adaptation`: the plan is a
    /// revision, bounded by `max_adaptations` instead of `max_replans`.
    pub(crate) fn check_plan(
        &self,
        loaded: &Loaded,
        doc: &SpannedDocument,
        items: &[ItemSpec],
        root: &str,
        adaptation: bool,
    ) -> (Vec<Finding>, Option<check::Plan>) {
        let projection = self.project(loaded);
        let active: Vec<Active> = projection
            .work
            .iter()
            .map(|w| Active {
                key: w.key.clone(),
                id: w.id.clone(),
                template: w.template.clone(),
            })
            .collect();
        let r = loaded.file.replanning.as_ref();
        let wall = loaded.fold.created.as_ref().map_or(0, |c| {
            (c.created_unix_s + loaded.file.limits.max_wall_time_s).saturating_sub((self.now)())
        });
        let bounds = Bounds {
            max_items_per_plan: r.map_or(0, |r| r.max_items_per_plan),
            max_planned_items: r.map_or(0, |r| r.max_planned_items),
            planned_items: projection.planned_items.used,
            max_replans: r.map_or(0, |r| {
                if adaptation {
                    r.max_adaptations
                } else {
                    r.max_replans
                }
            }),
            replans_used: if adaptation {
                projection.adaptations.used
            } else {
                projection.replans.used
            },
            max_total_attempts: projection.attempts.max,
            attempts_used: projection.attempts.used,
            wall_time_left_s: wall,
            adaptation,
        };
        let cx = check::Context {
            document: doc,
            catalog: &loaded.file.templates,
            templates: &loaded.catalog,
            goal_input: &loaded.file.input,
            mode: Mode::Proposal { active, bounds },
        };
        check::check(&cx, items, root)
    }

    /// Materializes plan `plan` (idempotently: exact matches are reused, a conflicting item
    /// fails closed) and records `plan.applied`; the new generation.
    pub(crate) fn apply(&self, id: &str, plan: &str, by: &str) -> Result<u32, GoalError> {
        for _ in 0..MAX_CONFLICTS {
            let loaded = self.load(id)?;
            refuse_if_cancelled(&loaded)?;
            let Some(p) = loaded.fold.plan(plan) else {
                return Err(GoalError::Refused(format!(
                    "goal `{id}` has no plan `{plan}`"
                )));
            };
            if p.state == projection::PlanState::Applied {
                return Ok(loaded.fold.generation.unwrap_or(0));
            }
            let Some(proposal) = p.proposal.clone() else {
                return Err(GoalError::Refused(format!(
                    "plan `{plan}` has no proposal to apply"
                )));
            };
            // The proposal, as a document, to point findings into.
            let json = serde_json::json!({ "kind": "apply", "items": proposal.items, "root": proposal.root });
            let read = document::read(serde_json::to_vec_pretty(&json).unwrap_or_default());
            let Some(doc) = read.document else {
                return Err(GoalError::Damaged {
                    goal: id.to_owned(),
                    detail: format!("plan `{plan}`'s proposal does not read back"),
                });
            };
            // Items already materialized by an earlier, interrupted apply are active work
            // to `check_plan` only if the root was applied, which it was not: check against
            // the generation before.
            let (mut findings, checked) = self.check_plan(
                &loaded,
                &doc,
                &proposal.items,
                &proposal.root,
                p.kind == "adapt",
            );
            // Invariant 6: every template still matches its frozen digest, re-hashed now.
            for (i, item) in proposal.items.iter().enumerate() {
                let Some(entry) = loaded.file.templates.get(&item.template) else {
                    continue;
                };
                let at = format!("/items/{i}/template");
                let span = doc.span_of(&at).unwrap_or_default();
                match self.templates.template(&entry.version) {
                    Ok(t) if t.version == entry.version => {}
                    Ok(t) => findings.push(Finding::new(
                        Code::TemplateDigestMismatch,
                        at,
                        span,
                        format!(
                            "template `{}` is pinned to {}, but the registry answered {}",
                            item.template, entry.version, t.version
                        ),
                    )),
                    // A registry that cannot be read, or that lacks the version (the wrong --registry,
                    // say), is the environment's failure: nothing is recorded and the plan stays pending.
                    Err(
                        e @ (TemplateError::Unavailable { .. }
                        | TemplateError::NotRegistered { .. }),
                    ) => {
                        return Err(e.into());
                    }
                    Err(e) => findings.push(Finding::new(
                        Code::TemplateDigestMismatch,
                        at,
                        span,
                        format!(
                            "template `{}` no longer matches its frozen digest: {e}",
                            item.template
                        ),
                    )),
                }
            }
            lwir_spec::finding::sort_findings(&mut findings);
            let checked = match checked {
                Some(c) if !findings.iter().any(Finding::is_error) => c,
                _ => {
                    let json = findings_json(&findings, doc.source(), Some(&doc));
                    let message = "the plan was refused when it was materialized".to_owned();
                    let event = refused(plan, &findings, message, json);
                    match self.store.append(id, &event, loaded.fold.last_seq) {
                        Ok(_) => {}
                        Err(StoreError::Conflict { .. }) => continue,
                        Err(e) => return Err(e.into()),
                    }
                    return Err(GoalError::Findings {
                        document: Some(Box::new(doc)),
                        findings,
                    });
                }
            };
            let generation = loaded.fold.generation.map_or(0, |g| g + 1);
            match self.materialize_as(&loaded, plan, &checked, generation, by) {
                Ok(()) => return Ok(generation),
                Err(GoalError::Store(StoreError::Conflict { .. })) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(busy(id))
    }

    pub(crate) fn materialize(
        &self,
        loaded: &Loaded,
        plan: &str,
        checked: &check::Plan,
        generation: u32,
    ) -> Result<(), GoalError> {
        self.materialize_as(loaded, plan, checked, generation, &self.by.clone())
    }

    /// Appends the `work.materialized` events of `checked` that are missing (verifying those
    /// present), then `plan.applied`. A conflict with another writer is returned for the
    /// caller to decide again.
    fn materialize_as(
        &self,
        loaded: &Loaded,
        plan: &str,
        checked: &check::Plan,
        generation: u32,
        by: &str,
    ) -> Result<(), GoalError> {
        let active: BTreeMap<String, String> = self
            .project(loaded)
            .work
            .iter()
            .map(|w| (w.key.clone(), w.id.clone()))
            .collect();
        let ids: BTreeMap<&str, String> = checked
            .items
            .iter()
            .map(|i| (i.key.as_str(), work_id(&loaded.id, plan, &i.key)))
            .collect();
        let id_of = |key: &str| {
            ids.get(key)
                .cloned()
                .or_else(|| active.get(key).cloned())
                .unwrap_or_default()
        };
        let mut seq = loaded.fold.last_seq;
        let mut materialized = Vec::with_capacity(checked.items.len());
        for item in &checked.items {
            let node =
                lwir_spec::document::read(serde_json::to_vec(&item.input).unwrap_or_default())
                    .document;
            let reads: BTreeMap<String, String> = node
                .map(|d| check::work_reads(d.root()))
                .unwrap_or_default()
                .into_iter()
                .map(|k| {
                    let id = id_of(&k);
                    (k, id)
                })
                .collect();
            let spec = events::Materialized {
                work: id_of(&item.key),
                key: item.key.clone(),
                template: item.template.clone(),
                version: loaded
                    .file
                    .templates
                    .get(&item.template)
                    .map(|t| t.version.clone())
                    .unwrap_or_default(),
                plan: plan.to_owned(),
                generation,
                after: item.depends_on.iter().map(|k| id_of(k)).collect(),
                reads,
                input: item.input.clone(),
                root: item.key == checked.root,
            };
            if let Some(existing) = loaded.fold.item(&spec.work) {
                if existing.spec != spec {
                    return Err(GoalError::Damaged {
                        goal: loaded.id.clone(),
                        detail: format!(
                            "work `{}` was materialized before with other contents; refusing to apply plan `{plan}` over it",
                            spec.work
                        ),
                    });
                }
                continue;
            }
            materialized.push(GoalEvent::Materialized(spec));
        }
        // One write for the whole plan: a crash in it leaves the items written whole, and
        // applying the plan again completes it, as it would after separate appends.
        if let Some(e) = self
            .store
            .append_all(&loaded.id, &materialized, seq)?
            .last()
        {
            seq = e.seq;
        }
        // A revision of the remaining plan obsoletes the pending items its root no longer
        // needs; completed and running ones stay what they are.
        let mut obsoleted = Vec::new();
        if loaded.fold.plan(plan).is_some_and(|p| p.kind == "adapt") {
            let new_items: BTreeMap<String, &check::Planned> =
                checked.items.iter().map(|i| (id_of(&i.key), i)).collect();
            let mut reached = std::collections::BTreeSet::new();
            let mut stack = vec![id_of(&checked.root)];
            while let Some(id) = stack.pop() {
                if !reached.insert(id.clone()) {
                    continue;
                }
                match new_items.get(&id) {
                    Some(item) => stack.extend(item.depends_on.iter().map(|k| id_of(k))),
                    None => {
                        if let Some(existing) = loaded.fold.item(&id) {
                            stack.extend(existing.spec.after.iter().cloned());
                        }
                    }
                }
            }
            obsoleted = self
                .project(loaded)
                .work
                .iter()
                .filter(|w| !matches!(w.status, WorkStatus::Succeeded | WorkStatus::Running))
                .filter(|w| !reached.contains(&w.id))
                .map(|w| w.id.clone())
                .collect();
        }
        let applied = events::Applied {
            plan: plan.to_owned(),
            generation,
            root: id_of(&checked.root),
            by: by.to_owned(),
            obsoleted,
        };
        self.store
            .append(&loaded.id, &GoalEvent::Applied(applied), seq)?;
        Ok(())
    }

    /// Goal `id` (refused when cancelled) and the status of its plan `plan` (refused when it
    /// has none): what a person's review of the plan starts from.
    fn plan_status(&self, id: &str, plan: &str) -> Result<(Loaded, &'static str), GoalError> {
        let loaded = self.load(id)?;
        refuse_if_cancelled(&loaded)?;
        let projection = self.project(&loaded);
        let Some(view) = projection.plans.iter().find(|p| p.id == plan) else {
            return Err(GoalError::Refused(format!(
                "goal `{id}` has no plan `{plan}`"
            )));
        };
        Ok((loaded, view.status))
    }

    /// `goal approve`: a person's approval of a pending plan; applies it.
    pub fn approve(&self, id: &str, plan: &str) -> Result<u32, GoalError> {
        let (loaded, status) = self.plan_status(id, plan)?;
        match status {
            "awaiting-review" => {
                let round = loaded
                    .fold
                    .plan(plan)
                    .and_then(|p| p.proposal.as_ref())
                    .map_or(1, |p| p.round);
                let event = GoalEvent::Reviewed(events::Reviewed {
                    plan: plan.to_owned(),
                    round,
                    verdict: "passed".into(),
                    reviewer: "person".into(),
                    by: self.by.clone(),
                    feedback: None,
                });
                self.store.append(id, &event, loaded.fold.last_seq).map_err(|e| match e {
                    StoreError::Conflict { .. } => GoalError::Refused(format!("goal `{id}` changed while plan `{plan}` was being approved; look again with `lwirc goal show {id}`")),
                    e => e.into(),
                })?;
                self.apply(id, plan, &self.by)
            }
            // An approval that stopped part-way: applying again converges.
            "approved" => self.apply(id, plan, &self.by),
            "applied" => Err(GoalError::Refused(format!(
                "plan `{plan}` is already applied"
            ))),
            other => Err(GoalError::Refused(format!(
                "plan `{plan}` is {other}, not awaiting review"
            ))),
        }
    }

    /// `goal reject`: a person's rejection of a pending plan, with feedback for the next
    /// replan.
    pub fn reject(&self, id: &str, plan: &str, feedback: &str) -> Result<(), GoalError> {
        let (loaded, status) = self.plan_status(id, plan)?;
        if status != "awaiting-review" {
            return Err(GoalError::Refused(format!(
                "plan `{plan}` is {status}, not awaiting review"
            )));
        }
        let event = GoalEvent::Rejected(events::Rejected {
            plan: plan.to_owned(),
            by: self.by.clone(),
            feedback: feedback.to_owned(),
        });
        self.store
            .append(id, &event, loaded.fold.last_seq)
            .map_err(|e| changed_meanwhile(id, e))?;
        Ok(())
    }

    /// `goal retry`: an operator asks for another replan after plan `plan`'s attention.
    pub fn retry(&self, id: &str, plan: &str) -> Result<(), GoalError> {
        let loaded = self.load(id)?;
        refuse_if_cancelled(&loaded)?;
        let projection = self.project(&loaded);
        if projection.status != Status::Attention {
            return Err(GoalError::Refused(format!(
                "goal `{id}` is {}, not waiting after an attention",
                projection.status.as_str()
            )));
        }
        let latest = loaded
            .fold
            .plans
            .iter()
            .rev()
            .find(|p| p.kind == "replan")
            .map(|p| p.id.as_str());
        if latest != Some(plan) {
            return Err(GoalError::Refused(format!(
                "the standing attention is plan `{}`, not `{plan}`",
                latest.unwrap_or("?")
            )));
        }
        let event = GoalEvent::Retry(events::Retry {
            plan: plan.to_owned(),
            by: self.by.clone(),
        });
        self.store
            .append(id, &event, loaded.fold.last_seq)
            .map_err(|e| changed_meanwhile(id, e))?;
        Ok(())
    }
}

enum Answer {
    Attention(String),
    Proposal((Vec<ItemSpec>, String)),
    Refused {
        document: Option<Box<SpannedDocument>>,
        findings: Vec<Finding>,
        /// The findings as the log keeps them ([`findings_json`]), made while the answer's
        /// bytes were at hand.
        json: Vec<serde_json::Value>,
        message: String,
    },
}

/// A reviewer's answer: `passed`, `rejected` with feedback, or `attention` with a rationale.
fn read_verdict(answer: &[u8]) -> Result<(&'static str, Option<String>), String> {
    let read = document::read(answer.to_vec());
    let Some(doc) = read
        .document
        .filter(|_| !read.findings.iter().any(Finding::is_error))
    else {
        return Err("its answer is not JSON".into());
    };
    let text = |key: &str| {
        doc.root()
            .get(key)
            .and_then(Node::as_str)
            .map(|t| lwir_spec::text::ellipsis(t, lwir_repair::protocol::MAX_RATIONALE_CHARS))
    };
    match doc.root().get("kind").and_then(Node::as_str) {
        Some("passed") => Ok(("passed", None)),
        Some("rejected") => match text("feedback").filter(|t| !t.trim().is_empty()) {
            Some(f) => Ok(("rejected", Some(f))),
            None => Err("a rejection needs a non-empty `feedback`".into()),
        },
        Some("attention") => match text("rationale").filter(|t| !t.trim().is_empty()) {
            Some(r) => Ok(("attention", Some(r))),
            None => Err("an attention answer needs a non-empty `rationale`".into()),
        },
        _ => Err("its answer's `kind` is not \"passed\", \"rejected\" or \"attention\"".into()),
    }
}

/// The `root` a proposal names, empty when it names none.
pub(crate) fn proposed_root(doc: &SpannedDocument) -> String {
    doc.root()
        .get("root")
        .and_then(Node::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub(crate) fn goal_summary(loaded: &Loaded) -> serde_json::Value {
    serde_json::json!({
        "id": loaded.id,
        "name": loaded.file.goal,
        "objective": loaded.file.objective,
        "input": loaded.file.input,
    })
}

/// The catalog as a replan or adapt request gives it: each template's name, version,
/// root, ceiling, workflow, description and interface.
pub(crate) fn catalog_json(loaded: &Loaded) -> Vec<serde_json::Value> {
    loaded
        .file
        .templates
        .iter()
        .map(|(name, entry)| {
            let t = loaded.catalog.get(name);
            serde_json::json!({
                "name": name,
                "version": entry.version,
                "root": entry.root,
                "max_attempts": entry.max_attempts,
                "workflow": t.map(|t| t.workflow.clone()),
                "description": t.and_then(|t| t.description.clone()),
                "input": t.map(|t| t.input.clone()),
                "output": t.map(|t| t.output.clone()),
            })
        })
        .collect()
}

/// `sha256:` of the RFC 8785 form of `context`.
/// The goal's frozen PlannerManifest with the `outerLoopContextHash` of `context`: the
/// manifest a replan or adaptation request carries.
pub(crate) fn request_manifest(loaded: &Loaded, context: &serde_json::Value) -> serde_json::Value {
    let mut manifest = loaded
        .fold
        .created
        .as_ref()
        .map(|c| c.planner_manifest.clone())
        .unwrap_or_default();
    if let Some(m) = manifest.as_object_mut() {
        m.insert("outerLoopContextHash".into(), context_hash(context).into());
    }
    manifest
}

pub(crate) fn context_hash(context: &serde_json::Value) -> String {
    let bytes = serde_json::to_vec(context).unwrap_or_default();
    let canonical = lwir_spec::canon::canonicalize(&bytes).unwrap_or(bytes);
    lwir_spec::canon::sha256_of(&canonical)
}

/// Findings in a planner's answer `source` (read into `document` when it could be) as the
/// log and the plan's `findings` file keep them: as `lwirc validate --format json` prints
/// them, by the same renderer.
pub fn findings_json(
    findings: &[Finding],
    source: &[u8],
    document: Option<&SpannedDocument>,
) -> Vec<serde_json::Value> {
    let file = lwir_render::File {
        name: "answer",
        bytes: source,
        document,
    };
    match lwir_render::json::findings(lwir_render::Report::of_file(findings, file)) {
        serde_json::Value::Array(findings) => findings,
        _ => Vec::new(),
    }
}

/// The data of `plan.attention`.
pub(crate) fn attention(plan: &str, rationale: &str, from: &str) -> GoalEvent {
    GoalEvent::Attention(events::Attention {
        plan: plan.to_owned(),
        rationale: rationale.to_owned(),
        from: from.to_owned(),
    })
}

/// A decision a person took on a view of the goal that another writer changed meanwhile is
/// not taken again for them: they are told to look again.
fn changed_meanwhile(id: &str, e: StoreError) -> GoalError {
    match e {
        StoreError::Conflict { .. } => GoalError::Refused(format!(
            "goal `{id}` changed meanwhile; look again with `lwirc goal show {id}`"
        )),
        e => e.into(),
    }
}

/// Appends the events of a plan to its own log and to the goal's, for as long as the replan
/// or adaptation that holds the plan runs. Nothing but a cancellation should reach the goal
/// log meanwhile (the goal is quiescent, or its driver waits for this plan): a conflict is
/// retried on the fresh seq, unless the goal was cancelled, which stops the plan.
pub(crate) struct PlanWriter<'a> {
    pub(crate) store: &'a dyn Store,
    pub(crate) id: &'a str,
    /// The seq of the goal's last event, as this plan knows it.
    pub(crate) seq: u64,
    /// What the goal is being, for the message: `replanned`, `adapted`.
    pub(crate) doing: &'static str,
}

impl PlanWriter<'_> {
    pub(crate) fn append(
        &mut self,
        log: &mut Box<dyn PlanLog>,
        event: &GoalEvent,
    ) -> Result<(), GoalError> {
        log.append(PlanEvent::Goal(event))?;
        for _ in 0..MAX_CONFLICTS {
            match self.store.append(self.id, event, self.seq) {
                Ok(e) => {
                    self.seq = e.seq;
                    return Ok(());
                }
                Err(StoreError::Conflict { found, .. }) => {
                    let events = self.store.events(self.id)?;
                    if events.iter().any(|e| e.event == GoalEvent::CANCELLED) {
                        return Err(GoalError::Refused(format!(
                            "goal `{}` was cancelled while it was being {}; nothing more is recorded",
                            self.id, self.doing
                        )));
                    }
                    self.seq = found;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(busy(self.id))
    }
}

/// The environment of a planner or reviewer call of plan `plan` of goal `goal`.
pub(crate) fn agent_env(call: u32, goal: &str, plan: &str) -> [(&'static str, String); 3] {
    [
        ("LWIRC_PLANNER_CALL", call.to_string()),
        ("LWIRC_GOAL", goal.to_owned()),
        ("LWIRC_PLAN", plan.to_owned()),
    ]
}

/// Whether a planner call that gave no answer is charged (all but one that could not be
/// started: the environment's failure), and the `plan.failed` data recording it.
pub(crate) fn no_answer(plan: &str, failure: &CallFailure) -> (bool, GoalEvent) {
    let charged = failure.kind != lwir_repair::harness::FailureKind::NotStarted;
    let event = plan_failed(
        plan.to_owned(),
        charged,
        failure.kind.code().as_str().to_owned(),
        format!("the planner gave no answer: {}", failure.message),
        Vec::new(),
    );
    (charged, event)
}

/// The finding of an answer whose `kind` (`kind`, absent: `None`) is none of those `expected`
/// names, pointing at the `kind`.
pub(crate) fn unknown_kind(doc: &SpannedDocument, kind: Option<&str>, expected: &str) -> Finding {
    let at = if doc.root().get("kind").is_some() {
        "/kind"
    } else {
        ""
    };
    let span = doc.span_of(at).unwrap_or(doc.root().span);
    let shown = kind.map_or("no `kind`".to_owned(), |k| format!("`kind` {k:?}"));
    Finding::new(
        Code::InvalidProposal,
        at,
        span,
        format!("the answer has {shown}; {expected}"),
    )
}

/// The `plan.failed` of a proposal refused with `findings` (their JSON `json`): charged,
/// with the code of its first error.
pub(crate) fn refused(
    plan: &str,
    findings: &[Finding],
    message: String,
    json: Vec<serde_json::Value>,
) -> GoalEvent {
    let code = findings
        .iter()
        .find(|f| f.is_error())
        .map_or(Code::InvalidProposal, |f| f.code);
    plan_failed(
        plan.to_owned(),
        true,
        code.as_str().to_owned(),
        message,
        json,
    )
}

/// The data of `plan.failed`.
pub(crate) fn plan_failed(
    plan: String,
    charged: bool,
    code: String,
    message: String,
    findings: Vec<serde_json::Value>,
) -> GoalEvent {
    GoalEvent::PlanFailed(events::PlanFailed {
        plan,
        charged,
        code,
        message,
        findings,
    })
}

/// The `rationale` of a planner's answer (an attention's, a revision's); `""` when it has
/// none.
pub(crate) fn rationale_of(answer: &SpannedDocument) -> &str {
    answer
        .root()
        .get("rationale")
        .and_then(Node::as_str)
        .unwrap_or("")
}
