//! The operations of `lwirc goal` on a goal and its work: create, load and fold, show,
//! list, next, report, cancel — each one reading the log, deciding on what it read, and
//! appending with the seq it read, so that a decision taken on a stale view is taken again.
//! Plans after the first (replan, review, apply) are [`crate::replan`]'s; driving a goal
//! through runners is [`crate::run`]'s.

use std::collections::BTreeMap;

use lwir_repair::manifest::{PlannerManifest, harness_id};
use lwir_spec::document::{self, Member, Value};
use lwir_spec::expr::eval::{Bindings, Val};
use lwir_spec::{Code, Finding, Node, Span, SpannedDocument};
use serde::Serialize;

use crate::catalog::{Template, TemplateError, Templates};
use crate::check::{self, Mode};
use crate::events::{self, GoalEvent};
use crate::file::{self, GoalFile};
use crate::projection::{self, Fold, Projection, Status, WorkStatus};
use crate::store::{PlanLog, Position, Store, StoreError};

/// How many times a writer decides again after another writer got in first.
pub(crate) const MAX_CONFLICTS: u32 = 1000;

/// A plan begun: the goal as it was read, its replanning block, the plan id and its log.
pub(crate) type Begun = (Loaded, file::Replanning, String, Box<dyn PlanLog>);

/// What went wrong with a goal command.
#[derive(Debug, thiserror::Error)]
pub enum GoalError {
    /// The document (a goal file, or a planner's proposal) has findings.
    #[error("{} finding(s)", findings.len())]
    Findings {
        /// The document they point into (absent when it is not JSON at all).
        document: Option<Box<SpannedDocument>>,
        /// The findings.
        findings: Vec<Finding>,
    },
    /// The command was refused: the goal is not in a state that allows it.
    #[error("{0}")]
    Refused(String),
    /// The planner's manifest differs from the one frozen with the goal (not charged).
    #[error(
        "{0}; the goal's planner profile is frozen — nothing was charged. Create a new goal to replan with this lwirc"
    )]
    Drift(#[from] lwir_repair::manifest::CapabilityDriftError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The registry could not be read.
    #[error(transparent)]
    Templates(#[from] TemplateError),
    /// lwirc failed while it drove the goal, in a thread of its own: a replan, an
    /// adaptation or a runner's call under `goal serve` or `goal run` that panicked (a bug,
    /// whatever the planner or runner answered). `goal serve` reports it as the goal's error
    /// and goes on; the goal's log is as its last event left it.
    #[error("lwirc failed internally: {0}")]
    Internal(String),
    /// The goal's stored state is not what lwirc wrote.
    #[error("the goal `{goal}` is damaged: {detail}")]
    Damaged {
        /// The goal id.
        goal: String,
        /// What is wrong.
        detail: String,
    },
}

/// A goal as read back: its frozen file, its catalog and its replayed events.
#[derive(Debug)]
pub struct Loaded {
    /// The goal id.
    pub id: String,
    /// The frozen goal file, typed.
    pub file: GoalFile,
    /// The catalog's interfaces as frozen at creation, by template name.
    pub catalog: BTreeMap<String, Template>,
    /// The events, replayed.
    pub fold: Fold,
}

/// A goal as a driver keeps it between its steps: read back, where its log was read to,
/// and the events it appended itself since (folded already, still to be read past).
#[derive(Debug)]
pub(crate) struct Held {
    /// The goal, read back.
    pub(crate) loaded: Loaded,
    /// Its frozen file's bytes, as verified.
    pub(crate) frozen: Vec<u8>,
    /// Where its log was read to, when the store gives positions.
    pub(crate) position: Option<Position>,
    /// Events this process appended and folded, not yet read past.
    pub(crate) own: Vec<lwir_repair::events::Event>,
}

/// The goal operations over a store and a registry.
pub struct Goals<'a> {
    /// Where goals are kept.
    pub store: &'a dyn Store,
    /// Where templates are read from (only `create` and materialization read it).
    pub templates: &'a dyn Templates,
    /// Who runs the commands (recorded in events).
    pub by: String,
    /// Now, in seconds since the Unix epoch (a function, so tests can set it).
    pub now: fn() -> u64,
}

/// What `goal list` shows: every goal that reads back, and the error of each that does not.
pub type Listing = (Vec<Projection>, Vec<(String, GoalError)>);

/// What `create` did.
#[derive(Debug)]
pub struct Created {
    /// The goal id.
    pub id: String,
    /// Whether anything was written (`false`: the same file again).
    pub new: bool,
    /// Warnings of the goal file.
    pub warnings: Vec<Finding>,
    /// The goal file's document, for rendering the warnings.
    pub document: SpannedDocument,
}

/// One dispatchable work item, with its input resolved.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Dispatch {
    /// The work id.
    pub id: String,
    /// Its key.
    pub key: String,
    /// Its template's name.
    pub template: String,
    /// The template's version.
    pub version: String,
    /// The attempt it would be.
    pub attempt: u32,
    /// The resolved input.
    pub input: serde_json::Value,
}

/// A ready item whose input could not be resolved.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unresolved {
    /// The work id.
    pub id: String,
    /// Its key.
    pub key: String,
    /// Why.
    pub error: String,
    /// The finding's code, when it has one (LW1020: the input is too large).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "code_text")]
    pub code: Option<Code>,
}

fn code_text<S: serde::Serializer>(code: &Option<Code>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(code.map_or("", |c| c.as_str()))
}

/// What a runtime reports of a work item.
#[derive(Clone, Debug, PartialEq)]
pub enum Report {
    /// An attempt started (an external runtime's).
    Started,
    /// An attempt started that this process dispatched to a runner and watches.
    Dispatched,
    /// The attempt succeeded with this output.
    Succeeded(serde_json::Value),
    /// The attempt failed with this error.
    Failed(String),
    /// The attempt failed in a way lwirc saw itself: a runner finding, an output that
    /// breaks the schema.
    FailedWith {
        /// Its code (LW1012–LW1018).
        code: Code,
        /// What happened.
        message: String,
    },
}

/// How a replan ended.
#[derive(Debug)]
pub enum Replanned {
    /// The proposal was applied (`auto_apply`): the new generation.
    Applied {
        /// The plan id.
        plan: String,
        /// The new generation.
        generation: u32,
    },
    /// The proposal is valid and waits for a person.
    AwaitingReview {
        /// The plan id.
        plan: String,
        /// A note, when the reviewer could not be run.
        note: Option<String>,
    },
    /// The planner (or reviewer) asked for attention.
    Attention {
        /// The plan id.
        plan: String,
        /// Why.
        rationale: String,
    },
    /// The reviewer rejected the last revision.
    Rejected {
        /// The plan id.
        plan: String,
        /// The feedback.
        feedback: String,
    },
    /// The planner failed, or its proposal was refused.
    Failed {
        /// The plan id.
        plan: String,
        /// Whether the replan was charged.
        charged: bool,
        /// What happened.
        message: String,
        /// The proposal's findings and its document, when it was refused.
        findings: Option<(Option<Box<SpannedDocument>>, Vec<Finding>)>,
    },
}

/// The id of the goal frozen as `canonical` with name `name`.
pub fn goal_id(name: &str, canonical: &[u8]) -> String {
    let hex = lwir_spec::digest::sha256_hex(canonical);
    format!("{name}-{}", &hex[..12])
}

/// The deterministic id of the work item `key` of plan `plan` of goal `goal`.
pub fn work_id(goal: &str, plan: &str, key: &str) -> String {
    let hex = lwir_spec::digest::sha256_hex(format!("{goal}\n{plan}\n{key}").as_bytes());
    format!("{key}-{}", &hex[..12])
}

/// The manifest of a goal's planner profile (`replanning.planner`): a PlannerManifest of
/// the definition `{"planner": profile}`.
pub fn planner_manifest(profile: &serde_json::Value) -> PlannerManifest {
    let node = json_node(&serde_json::json!({ "planner": profile })).unwrap_or(Node {
        span: Span::default(),
        value: Value::Object(Box::<[Member]>::default()),
    });
    PlannerManifest::of(&node, harness_id())
}

/// A JSON value as a document node (spans into its compact serialisation); `None` only for
/// a value the reader refuses (nested deeper than it reads).
pub(crate) fn json_node(value: &serde_json::Value) -> Option<Node> {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    document::read(bytes).document.map(|d| d.root().clone())
}

#[derive(Serialize, serde::Deserialize)]
struct FrozenTemplate {
    version: String,
    workflow: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    input: serde_json::Value,
    output: serde_json::Value,
}

impl Goals<'_> {
    /// `goal create`: validates the goal file, freezes it and materializes generation 0.
    /// The same file again (byte for byte, or the same canonical JSON) is the same goal:
    /// nothing is written, unless an earlier create stopped part-way, which this finishes.
    pub fn create(&self, bytes: Vec<u8>) -> Result<Created, GoalError> {
        let file::Read {
            document,
            file: goal,
            findings,
        } = file::read(bytes);
        let Some(document) = document else {
            return Err(GoalError::Findings {
                document: None,
                findings,
            });
        };
        let Some(goal) = goal else {
            return Err(GoalError::Findings {
                document: Some(Box::new(document)),
                findings,
            });
        };
        let mut findings = findings;
        let mut catalog = BTreeMap::new();
        for (name, entry) in &goal.templates {
            let at = format!("/templates/{name}/version");
            let span = document.span_of(&at).unwrap_or_default();
            match self.templates.template(&entry.version) {
                Ok(t) if t.version == entry.version => {
                    catalog.insert(name.clone(), t);
                }
                Ok(t) => findings.push(Finding::new(
                    Code::TemplateDigestMismatch,
                    at,
                    span,
                    format!("the registry answered {} for {}", t.version, entry.version),
                )),
                Err(TemplateError::NotRegistered { registry, .. }) => findings.push(
                    Finding::new(
                        Code::TemplateNotRegistered,
                        at,
                        span,
                        format!("template `{name}`: {} is not registered in {registry}", entry.version),
                    )
                    .with_help("register the template's draft first (`lwirc register DRAFT -d WORKFLOW`), or point --registry at the registry that has it"),
                ),
                Err(TemplateError::Corrupt { detail, .. }) => findings.push(
                    Finding::new(
                        Code::TemplateDigestMismatch,
                        at,
                        span,
                        format!("template `{name}`: {} does not verify: {detail}", entry.version),
                    )
                    .with_help("`lwirc registry verify` shows what is damaged"),
                ),
                Err(TemplateError::NoInterface { .. }) => findings.push(
                    Finding::new(
                        Code::TemplateWithoutInterface,
                        at,
                        span,
                        format!("template `{name}`: the registration of {} does not record its input and output schemas", entry.version),
                    )
                    .with_help("register it again with this lwirc: `lwirc register --rebase DRAFT -d WORKFLOW`"),
                ),
                Err(e @ TemplateError::Unavailable { .. }) => return Err(e.into()),
            }
        }
        let cx = check::Context {
            document: &document,
            catalog: &goal.templates,
            templates: &catalog,
            goal_input: &goal.input,
            mode: Mode::Initial,
        };
        let (more, plan) = check::check(&cx, &goal.work, &goal.root);
        findings.extend(more);
        lwir_spec::finding::sort_findings(&mut findings);
        let Some(plan) = plan.filter(|_| !findings.iter().any(Finding::is_error)) else {
            return Err(GoalError::Findings {
                document: Some(Box::new(document)),
                findings,
            });
        };
        let canonical = lwir_spec::canon::canonical_bytes(document.root());
        let digest = lwir_spec::canon::sha256_of(&canonical);
        let id = goal_id(&goal.goal, &canonical);
        let frozen_catalog: serde_json::Map<String, serde_json::Value> = catalog
            .iter()
            .map(|(name, t)| {
                let frozen = FrozenTemplate {
                    version: t.version.clone(),
                    workflow: t.workflow.clone(),
                    description: t.description.clone(),
                    input: t.input.clone(),
                    output: t.output.clone(),
                };
                (
                    name.clone(),
                    serde_json::to_value(frozen).unwrap_or_default(),
                )
            })
            .collect();
        let mut new = self.store.freeze(&id, &canonical)?;
        for _ in 0..MAX_CONFLICTS {
            let events = self.store.events(&id)?;
            let fold = Fold::of(&events).map_err(|detail| GoalError::Damaged {
                goal: id.clone(),
                detail,
            })?;
            if let Some(created) = &fold.created {
                if created.digest != digest {
                    return Err(GoalError::Damaged {
                        goal: id,
                        detail: format!("its log was created for {}, not {digest}", created.digest),
                    });
                }
                if fold.generation.is_some() {
                    return Ok(Created {
                        id,
                        new,
                        warnings: findings,
                        document,
                    });
                }
                let loaded = Loaded {
                    id: id.clone(),
                    file: goal.clone(),
                    catalog: catalog.clone(),
                    fold,
                };
                match self.materialize(&loaded, "p0", &plan, 0) {
                    Err(GoalError::Store(StoreError::Conflict { .. })) => continue,
                    Err(e) => return Err(e),
                    Ok(()) => {
                        new = true;
                        continue;
                    }
                }
            }
            let created = events::Created {
                goal: id.clone(),
                name: goal.goal.clone(),
                digest: digest.clone(),
                created_unix_s: (self.now)(),
                planner_manifest: goal
                    .replanning
                    .as_ref()
                    .map(|r| serde_json::to_value(planner_manifest(&r.planner)).unwrap_or_default())
                    .unwrap_or_default(),
                by: self.by.clone(),
                catalog: Some(frozen_catalog.clone()),
            };
            match self
                .store
                .append(&id, &GoalEvent::Created(created), fold.last_seq)
            {
                Ok(_) => new = true,
                Err(StoreError::Conflict { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Err(busy(&id))
    }

    /// Reads goal `id` back: its frozen file (verified against the digest its log recorded)
    /// and its events, folded — from the store's checkpoint and the events after it where
    /// the log still continues the checkpoint, else from the whole log ([`Goals::fold`]).
    pub fn load(&self, id: &str) -> Result<Loaded, GoalError> {
        Ok(self.load_held(id, true)?.loaded)
    }

    /// [`Goals::load`], with what a driver keeps to read only what follows; without
    /// `checkpoint`, from the whole log (every chain hash checked), whatever checkpoint
    /// there is.
    pub(crate) fn load_held(&self, id: &str, checkpoint: bool) -> Result<Held, GoalError> {
        let Some(bytes) = self.store.frozen(id)? else {
            return Err(StoreError::NotFound {
                goal: id.to_owned(),
                location: self.store.location(),
            }
            .into());
        };
        let (fold, position) = if checkpoint {
            self.fold(id)?
        } else {
            self.fold_whole(id)?
        };
        let loaded = self.loaded(id, &bytes, fold)?;
        Ok(Held {
            loaded,
            frozen: bytes,
            position,
            own: Vec::new(),
        })
    }

    /// Goal `id`'s log folded, and the position it covers when the store gives one: the
    /// checkpoint's fold and the events after it, when there is a checkpoint the log
    /// continues (see [`crate::checkpoint`]), else the whole log. A new checkpoint is stored
    /// when [`crate::checkpoint::due`] after the events folded beyond the one read (a
    /// checkpoint that cannot be stored is only not stored).
    pub fn fold(&self, id: &str) -> Result<(Fold, Option<Position>), GoalError> {
        let kept = self
            .store
            .checkpoint(id)
            .ok()
            .flatten()
            .and_then(|bytes| crate::checkpoint::decode(&bytes));
        if let Some((mut fold, position)) = kept
            && let Some((tail, Some(now))) = self.store.events_since(id, Some(&position))?
            && tail.iter().try_for_each(|e| fold.apply_event(e)).is_ok()
        {
            if crate::checkpoint::due(tail.len() as u64, &fold) {
                self.keep(id, &fold, &now);
            }
            return Ok((fold, Some(now)));
        }
        // No checkpoint the log continues (or a tail that contradicts it): the whole log,
        // whose read and fold say what is wrong if anything is.
        self.fold_whole(id)
    }

    /// [`Goals::fold`] of the whole log, whatever checkpoint there is (and a checkpoint of
    /// it stored, when [`crate::checkpoint::due`]).
    pub(crate) fn fold_whole(&self, id: &str) -> Result<(Fold, Option<Position>), GoalError> {
        let (events, position) = match self.store.events_since(id, None)? {
            Some(read) => read,
            None => (self.store.events(id)?, None),
        };
        let fold = Fold::of(&events).map_err(|detail| GoalError::Damaged {
            goal: id.to_owned(),
            detail,
        })?;
        if let Some(position) = &position
            && crate::checkpoint::due(events.len() as u64, &fold)
        {
            self.keep(id, &fold, position);
        }
        Ok((fold, position))
    }

    /// Stores a checkpoint of `fold`, which covers goal `id`'s log up to `position`; a
    /// failure to store it is ignored (it is a cache: the next read folds more).
    pub(crate) fn keep(&self, id: &str, fold: &Fold, position: &Position) {
        if position.seq > 0 && fold.last_seq == position.seq {
            let _ = self
                .store
                .put_checkpoint(id, &crate::checkpoint::encode(fold, position));
        }
    }

    /// A driver's goal brought up to date: the events appended since its position read and
    /// folded (its own appends, already folded, checked to be the events the log holds),
    /// and its frozen file checked to be the same bytes; read whole again when the store
    /// cannot read from a position, the log does not continue it, or the frozen file
    /// changed.
    pub(crate) fn refresh(&self, held: Held) -> Result<Held, GoalError> {
        let id = held.loaded.id.clone();
        let Held {
            mut loaded,
            frozen,
            position,
            own,
        } = held;
        let Some(position) = position else {
            return self.load_held(&id, true);
        };
        if self.store.frozen(&id)?.as_deref() != Some(&frozen[..]) {
            return self.load_held(&id, true);
        }
        let Some((tail, Some(now))) = self.store.events_since(&id, Some(&position))? else {
            return self.load_held(&id, true);
        };
        let mut own = own.into_iter().peekable();
        for event in &tail {
            match own.peek() {
                Some(mine) if mine.seq == event.seq => {
                    if mine != event {
                        return self.load_held(&id, true);
                    }
                    own.next();
                }
                Some(mine) if mine.seq < event.seq => return self.load_held(&id, true),
                _ => {
                    if event.seq <= loaded.fold.last_seq || loaded.fold.apply_event(event).is_err()
                    {
                        return self.load_held(&id, true);
                    }
                }
            }
        }
        Ok(Held {
            loaded,
            frozen,
            position: Some(now),
            own: own.collect(),
        })
    }

    /// Goal `id` read back from its frozen file's `bytes` and its log's `fold`: the file
    /// verified against the digest the log recorded, and read.
    fn loaded(&self, id: &str, bytes: &[u8], fold: Fold) -> Result<Loaded, GoalError> {
        let damaged = |detail: String| GoalError::Damaged {
            goal: id.to_owned(),
            detail,
        };
        let created = fold.created.as_ref().ok_or_else(|| {
            damaged(
                "its log has no `goal.created` event (run `lwirc goal create` with its file again)"
                    .into(),
            )
        })?;
        let digest = lwir_spec::canon::sha256_of(bytes);
        if created.digest != digest {
            return Err(damaged(format!(
                "its frozen goal file hashes to {digest}, but it was created as {}",
                created.digest
            )));
        }
        // Typed without the meta-schema's checks, which its bytes passed when it was created:
        // they hash to the digest the log recorded then.
        let Some(goal) = file::read_frozen(bytes) else {
            return Err(damaged(
                "its frozen goal file no longer reads as a goal file".into(),
            ));
        };
        let catalog_json = fold.frozen_catalog().cloned().unwrap_or_default();
        let frozen: BTreeMap<String, FrozenTemplate> = serde_json::from_value(catalog_json)
            .map_err(|e| damaged(format!("its frozen catalog: {e}")))?;
        let catalog = frozen
            .into_iter()
            .map(|(name, t)| {
                (
                    name,
                    Template {
                        version: t.version,
                        workflow: t.workflow,
                        description: t.description,
                        input: t.input,
                        output: t.output,
                        lwir: serde_json::Value::Null,
                    },
                )
            })
            .collect();
        Ok(Loaded {
            id: id.to_owned(),
            file: goal,
            catalog,
            fold,
        })
    }

    /// The projection of `loaded` now.
    pub fn project(&self, loaded: &Loaded) -> Projection {
        let in_progress = |plan: &str| {
            self.store
                .plan_in_progress(&loaded.id, plan)
                .unwrap_or(false)
        };
        projection::project(
            &loaded.fold,
            &projection::Inputs {
                file: &loaded.file,
                now_unix_s: (self.now)(),
                in_progress: &in_progress,
            },
        )
    }

    /// What a decision inside lwirc reads of `loaded` now: [`Goals::project`] without the
    /// work items' views nor the fingerprint ([`projection::outlook`]).
    pub(crate) fn outlook<'l>(&self, loaded: &'l Loaded) -> projection::Outlook<'l> {
        let in_progress = |plan: &str| {
            self.store
                .plan_in_progress(&loaded.id, plan)
                .unwrap_or(false)
        };
        projection::outlook(
            &loaded.fold,
            &projection::Inputs {
                file: &loaded.file,
                now_unix_s: (self.now)(),
                in_progress: &in_progress,
            },
        )
    }

    /// `goal show`.
    pub fn show(&self, id: &str) -> Result<Projection, GoalError> {
        Ok(self.project(&self.load(id)?))
    }

    /// `goal list`: every goal's projection, and the error of each that cannot be read.
    pub fn list(&self) -> Result<Listing, GoalError> {
        let mut shown = Vec::new();
        let mut failed = Vec::new();
        for id in self.store.goals()? {
            match self.show(&id) {
                Ok(p) => shown.push(p),
                Err(e) => failed.push((id, e)),
            }
        }
        Ok((shown, failed))
    }

    /// `goal next`: the work that can be dispatched now (at most `max_parallel` running in
    /// all, and no more than the attempts left), each with its input resolved; and the ready
    /// items whose input cannot be resolved.
    pub fn next(&self, id: &str) -> Result<(Vec<Dispatch>, Vec<Unresolved>), GoalError> {
        self.next_on(&self.load(id)?)
    }

    /// [`Goals::next`] of `loaded`.
    pub(crate) fn next_on(
        &self,
        loaded: &Loaded,
    ) -> Result<(Vec<Dispatch>, Vec<Unresolved>), GoalError> {
        let outlook = self.outlook(loaded);
        // Ready work is dispatchable while other work runs (up to max_parallel).
        if !outlook.dispatchable {
            return Ok((Vec::new(), Vec::new()));
        }
        let running = outlook.statuses.active_running();
        let mut slots = loaded
            .file
            .limits
            .max_parallel
            .saturating_sub(running)
            .min(outlook.attempts.max.saturating_sub(outlook.attempts.used));
        let mut ready = Vec::new();
        let mut unresolved = Vec::new();
        for i in outlook.statuses.ready() {
            if slots == 0 {
                break;
            }
            let item = &loaded.fold.items[i];
            let spec = &item.spec;
            match self.resolve_input(loaded, item) {
                Ok(input) => {
                    slots -= 1;
                    ready.push(Dispatch {
                        id: spec.work.clone(),
                        key: spec.key.clone(),
                        template: spec.template.clone(),
                        version: spec.version.clone(),
                        attempt: item.attempts.len() as u32 + 1,
                        input,
                    });
                }
                Err(e) => unresolved.push(Unresolved {
                    id: spec.work.clone(),
                    key: spec.key.clone(),
                    error: e.to_string(),
                    code: e.code,
                }),
            }
        }
        Ok((ready, unresolved))
    }

    /// The input of `item`, resolved over the goal input and its dependencies' outputs.
    pub fn resolve_input(
        &self,
        loaded: &Loaded,
        item: &projection::Item,
    ) -> Result<serde_json::Value, crate::resolve::ResolveError> {
        let mut work = BTreeMap::new();
        for (key, id) in &item.spec.reads {
            let output = loaded
                .fold
                .item(id)
                .and_then(projection::Item::output)
                .ok_or_else(|| crate::resolve::ResolveError {
                    pointer: String::new(),
                    message: format!("`work.{key}` has no output yet"),
                    code: None,
                })?;
            let mut entry = BTreeMap::new();
            entry.insert("output".to_owned(), Val::from_json(output));
            work.insert(key.clone(), Val::Map(std::rc::Rc::new(entry)));
        }
        let mut goal = BTreeMap::new();
        goal.insert("input".to_owned(), Val::from_json(&loaded.file.input));
        let mut bindings = Bindings::new();
        bindings.insert("goal".into(), Val::Map(std::rc::Rc::new(goal)));
        bindings.insert("work".into(), Val::Map(std::rc::Rc::new(work)));
        crate::resolve::resolve(&item.spec.input, &bindings)
    }

    /// `goal report`: records what a runtime did with work item `work`. Refused (nothing
    /// written) for work that is not in the active generation, already finished, over its
    /// ceiling or the goal's budget, or an output that breaks the template's output schema.
    pub fn report(
        &self,
        id: &str,
        work: &str,
        report: &Report,
    ) -> Result<lwir_repair::events::Event, GoalError> {
        self.report_run(id, work, report, None)
    }

    /// As [`Goals::report`], and an attempt's end records `run`, the run it was (a run id
    /// the runner named, checked with [`crate::runner::is_run_id`]).
    pub fn report_run(
        &self,
        id: &str,
        work: &str,
        report: &Report,
        run: Option<&str>,
    ) -> Result<lwir_repair::events::Event, GoalError> {
        if let Some(run) = run.filter(|r| !crate::runner::is_run_id(r)) {
            return Err(GoalError::Refused(format!(
                "`{}` is not a run id (1 to {} ASCII letters, digits, `-`, `_`, `.`, `:`)",
                run.escape_debug(),
                crate::runner::MAX_RUN_ID_CHARS
            )));
        }
        for _ in 0..MAX_CONFLICTS {
            let loaded = self.load(id)?;
            match self.report_on(&loaded, work, report, run) {
                Err(GoalError::Store(StoreError::Conflict { .. })) => continue,
                other => return other,
            }
        }
        Err(busy(id))
    }

    /// [`Goals::report_run`] decided on `loaded`, appended only if the log is still as it
    /// was read ([`StoreError::Conflict`] otherwise, to decide again on a fresh read).
    pub(crate) fn report_on(
        &self,
        loaded: &Loaded,
        work: &str,
        report: &Report,
        run: Option<&str>,
    ) -> Result<lwir_repair::events::Event, GoalError> {
        let event = self.report_event(loaded, work, report, run)?;
        Ok(self
            .store
            .append(&loaded.id, &event, loaded.fold.last_seq)?)
    }

    /// What [`Goals::report_on`] would append: the event, not appended.
    pub(crate) fn report_event(
        &self,
        loaded: &Loaded,
        work: &str,
        report: &Report,
        run: Option<&str>,
    ) -> Result<GoalEvent, GoalError> {
        let id = loaded.id.as_str();
        let run = run.map(str::to_owned);
        {
            let projection = self.outlook(loaded);
            let active = || {
                projection
                    .statuses
                    .active()
                    .map(|i| &loaded.fold.items[i].spec)
            };
            // A work id, or the key of an item of the active generation (keys are unique there).
            let work = match loaded.fold.item(work) {
                Some(_) => work,
                None => active()
                    .find(|w| w.key == work)
                    .map_or(work, |w| w.work.as_str()),
            };
            let Some(item) = loaded.fold.item(work) else {
                let known: Vec<String> = active()
                    .map(|w| format!("{} ({})", w.work, w.key))
                    .collect();
                return Err(GoalError::Refused(format!(
                    "goal `{id}` has no work `{work}`; its active work: {}",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                )));
            };
            // An attempt in flight is still recorded when it ends; nothing new starts.
            if let Some(c) = &projection.cancelled
                && item.running().is_none()
            {
                return Err(GoalError::Refused(format!(
                    "goal `{id}` was cancelled by {} at {}; nothing more is recorded",
                    c.by, c.at
                )));
            }
            let view = loaded
                .fold
                .position(work)
                .map(|i| projection::work_view(&loaded.fold, &projection.statuses, i));
            let Some(view) = view else {
                return Err(GoalError::Refused(format!(
                    "work `{work}` is not governed by goal `{id}`"
                )));
            };
            let running = item.running();
            let event = match (report, view.status) {
                (_, WorkStatus::Superseded) => {
                    return Err(GoalError::Refused(format!(
                        "work `{work}` ({}) belongs to generation {}, which plan {} superseded; it is not dispatched any more",
                        view.key,
                        view.generation,
                        loaded
                            .fold
                            .plans
                            .iter()
                            .rev()
                            .find(|p| p.state == projection::PlanState::Applied)
                            .map_or("?", |p| p.id.as_str())
                    )));
                }
                (_, WorkStatus::Succeeded) => {
                    return Err(GoalError::Refused(format!(
                        "work `{work}` ({}) already succeeded",
                        view.key
                    )));
                }
                (Report::Started | Report::Dispatched, WorkStatus::Running) => {
                    return Err(GoalError::Refused(format!(
                        "attempt {} of work `{work}` ({}) is already running; report it succeeded or failed first",
                        running.unwrap_or(0),
                        view.key
                    )));
                }
                (Report::Started | Report::Dispatched, WorkStatus::Ready)
                    if projection.statuses.active_running() >= loaded.file.limits.max_parallel =>
                {
                    return Err(GoalError::Refused(format!(
                        "work `{work}` ({}) cannot start: {} item(s) are running, the goal's max_parallel",
                        view.key, loaded.file.limits.max_parallel
                    )));
                }
                (Report::Started | Report::Dispatched, WorkStatus::Ready) => {
                    GoalEvent::Started(events::Started {
                        work: work.to_owned(),
                        attempt: view.attempts + 1,
                        dispatched: *report == Report::Dispatched,
                        generation: (*report == Report::Dispatched)
                            .then(|| loaded.fold.generation.unwrap_or(0)),
                    })
                }
                (
                    Report::Succeeded(_) | Report::Failed(_) | Report::FailedWith { .. },
                    WorkStatus::Running | WorkStatus::Ready,
                ) => {
                    let attempt = running.unwrap_or(view.attempts + 1);
                    match report {
                        Report::Succeeded(output) => {
                            self.check_output(&loaded.id, &loaded.catalog, &view.template, output)?;
                            GoalEvent::Succeeded(events::Succeeded {
                                work: work.to_owned(),
                                attempt,
                                output: output.clone(),
                                run: run.clone(),
                            })
                        }
                        Report::Failed(error) => GoalEvent::Failed(events::Failed {
                            work: work.to_owned(),
                            attempt,
                            error: error.clone(),
                            interrupted: false,
                            code: None,
                            run: run.clone(),
                        }),
                        Report::FailedWith { code, message } => GoalEvent::Failed(events::Failed {
                            work: work.to_owned(),
                            attempt,
                            error: message.clone(),
                            interrupted: false,
                            code: Some(code.as_str().to_owned()),
                            run: run.clone(),
                        }),
                        Report::Started | Report::Dispatched => unreachable!("matched above"),
                    }
                }
                (_, _) if projection.status == Status::Exhausted => {
                    return Err(GoalError::Refused(format!(
                        "work `{work}` ({}) cannot take a new attempt: the goal is exhausted — {}",
                        view.key, projection.reason
                    )));
                }
                (_, status) => {
                    let why = match status {
                        WorkStatus::Failed if view.attempts >= view.max_attempts => format!(
                            "it has used its {} of {} attempt(s)",
                            view.attempts, view.max_attempts
                        ),
                        WorkStatus::Failed | WorkStatus::Pending
                            if projection.attempts.used >= projection.attempts.max =>
                        {
                            format!(
                                "the goal's attempt budget is spent ({} of {})",
                                projection.attempts.used, projection.attempts.max
                            )
                        }
                        WorkStatus::Blocked => {
                            "a work item it depends on failed for good".to_owned()
                        }
                        WorkStatus::Pending => {
                            "the work it depends on has not succeeded yet".to_owned()
                        }
                        _ => format!(
                            "it is {}",
                            serde_json::to_value(status)
                                .unwrap_or_default()
                                .as_str()
                                .unwrap_or("not ready")
                        ),
                    };
                    return Err(GoalError::Refused(format!(
                        "work `{work}` ({}) cannot take a new attempt: {why}",
                        view.key
                    )));
                }
            };
            Ok(event)
        }
    }

    pub(crate) fn check_output(
        &self,
        goal: &str,
        catalog: &BTreeMap<String, Template>,
        template: &str,
        output: &serde_json::Value,
    ) -> Result<(), GoalError> {
        let Some(t) = catalog.get(template) else {
            return Ok(());
        };
        if t.output.is_null() {
            return Ok(());
        }
        let validator =
            jsonschema::draft202012::new(&t.output).map_err(|e| GoalError::Damaged {
                goal: goal.to_owned(),
                detail: format!("the output schema of template `{template}` does not compile: {e}"),
            })?;
        let errors: Vec<String> = validator
            .iter_errors(output)
            .take(20)
            .map(|e| {
                let at = e.instance_path().as_str().to_owned();
                format!(
                    "{}: {e}",
                    if at.is_empty() {
                        "(the output)".to_owned()
                    } else {
                        at
                    }
                )
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(GoalError::Refused(format!(
                "{} work-output-mismatch: the output does not satisfy the output schema of template `{template}`; nothing was recorded:\n  {}",
                Code::WorkOutputMismatch,
                errors.join("\n  ")
            )))
        }
    }

    /// Records `plan.interrupted` for every plan that was requested and whose replan no
    /// longer runs (its process died), so that the slot it consumed shows.
    pub(crate) fn recover(&self, loaded: &Loaded) -> Result<bool, GoalError> {
        let mut changed = false;
        let mut last = loaded.fold.last_seq;
        for plan in &loaded.fold.plans {
            if plan.state == projection::PlanState::Requested
                && !self.store.plan_in_progress(&loaded.id, &plan.id)?
            {
                let event = GoalEvent::Interrupted(events::Interrupted {
                    plan: plan.id.clone(),
                    detail: "its replan stopped before it ended (the planner or lwirc was killed)"
                        .into(),
                });
                match self.store.append(&loaded.id, &event, last) {
                    Ok(e) => {
                        last = e.seq;
                        changed = true;
                    }
                    Err(StoreError::Conflict { .. }) => return Ok(true),
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(changed)
    }

    /// `goal cancel`: stops the goal for good.
    pub fn cancel(&self, id: &str, reason: Option<&str>) -> Result<(), GoalError> {
        for _ in 0..MAX_CONFLICTS {
            let loaded = self.load(id)?;
            let projection = self.project(&loaded);
            match projection.status {
                Status::Cancelled => {
                    return Err(GoalError::Refused(format!(
                        "goal `{id}` is already cancelled ({})",
                        projection.reason
                    )));
                }
                Status::Succeeded => {
                    return Err(GoalError::Refused(format!(
                        "goal `{id}` has succeeded; there is nothing to cancel"
                    )));
                }
                _ => {}
            }
            let event = GoalEvent::Cancelled(events::Cancelled {
                by: self.by.clone(),
                reason: reason.map(str::to_owned),
            });
            match self.store.append(id, &event, loaded.fold.last_seq) {
                Ok(_) => return Ok(()),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(busy(id))
    }
}

/// A cancelled goal takes no more decisions.
pub(crate) fn refuse_if_cancelled(loaded: &Loaded) -> Result<(), GoalError> {
    match &loaded.fold.cancelled {
        Some((c, at)) => Err(GoalError::Refused(format!(
            "goal `{}` was cancelled by {} at {at}; nothing more is applied or replanned",
            loaded.id, c.by
        ))),
        None => Ok(()),
    }
}

pub(crate) fn busy(id: &str) -> GoalError {
    GoalError::Refused(format!(
        "goal `{id}` kept changing under this command; try again"
    ))
}
