//! The operations of `lwirc goal`: create, show, next, report, replan, approve, reject,
//! retry, cancel — each one reading the log, deciding on what it read, and appending with
//! the seq it read, so that a decision taken on a stale view is taken again.

use std::collections::BTreeMap;

use lwir_repair::manifest::{PlannerManifest, harness_id};
use lwir_spec::document::{self, Member, Value};
use lwir_spec::expr::eval::{Bindings, Val};
use lwir_spec::{Code, Finding, Node, Span, SpannedDocument};
use serde::Serialize;

use crate::agent::{Agent, CallFailure};
use crate::catalog::{Template, TemplateError, Templates};
use crate::check::{self, Active, Bounds, Mode};
use crate::events::{self, GoalEvent};
use crate::file::{self, GoalFile, ItemSpec};
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
    /// The frozen goal file's document.
    pub document: SpannedDocument,
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
    let node = json_node(&serde_json::json!({ "planner": profile }));
    PlannerManifest::of(&node, harness_id())
}

fn json_node(value: &serde_json::Value) -> Node {
    // Serialised JSON always reads back.
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    document::read(bytes)
        .document
        .map(|d| d.root().clone())
        .unwrap_or(Node {
            span: Span::default(),
            value: Value::Object(Box::<[Member]>::default()),
        })
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
                    document: document.clone(),
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
            };
            let mut data = GoalEvent::Created(created).data();
            data["catalog"] = serde_json::Value::Object(frozen_catalog.clone());
            match self.store.append(&id, "goal.created", data, fold.last_seq) {
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
        let read = document::read(bytes.to_vec());
        let (Some(document), Some(goal)) = (read.document, file::read_frozen(bytes)) else {
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
            document,
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
        let (name, data) = self.report_event(loaded, work, report, run)?;
        Ok(self
            .store
            .append(&loaded.id, name, data, loaded.fold.last_seq)?)
    }

    /// What [`Goals::report_on`] would append: the event's name and data, not appended.
    pub(crate) fn report_event(
        &self,
        loaded: &Loaded,
        work: &str,
        report: &Report,
        run: Option<&str>,
    ) -> Result<(&'static str, serde_json::Value), GoalError> {
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
            let (name, data) = match (report, view.status) {
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
                (Report::Started | Report::Dispatched, WorkStatus::Ready) => (
                    "work.started",
                    GoalEvent::Started(events::Started {
                        work: work.to_owned(),
                        attempt: view.attempts + 1,
                        dispatched: *report == Report::Dispatched,
                        generation: (*report == Report::Dispatched)
                            .then(|| loaded.fold.generation.unwrap_or(0)),
                    })
                    .data(),
                ),
                (
                    Report::Succeeded(_) | Report::Failed(_) | Report::FailedWith { .. },
                    WorkStatus::Running | WorkStatus::Ready,
                ) => {
                    let attempt = running.unwrap_or(view.attempts + 1);
                    match report {
                        Report::Succeeded(output) => {
                            self.check_output(&loaded.id, &loaded.catalog, &view.template, output)?;
                            (
                                "work.succeeded",
                                GoalEvent::Succeeded(events::Succeeded {
                                    work: work.to_owned(),
                                    attempt,
                                    output: output.clone(),
                                    run: run.clone(),
                                })
                                .data(),
                            )
                        }
                        Report::Failed(error) => (
                            "work.failed",
                            GoalEvent::Failed(events::Failed {
                                work: work.to_owned(),
                                attempt,
                                error: error.clone(),
                                interrupted: false,
                                code: None,
                                run: run.clone(),
                            })
                            .data(),
                        ),
                        Report::FailedWith { code, message } => (
                            "work.failed",
                            GoalEvent::Failed(events::Failed {
                                work: work.to_owned(),
                                attempt,
                                error: message.clone(),
                                interrupted: false,
                                code: Some(code.as_str().to_owned()),
                                run: run.clone(),
                            })
                            .data(),
                        ),
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
            Ok((name, data))
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
    fn recover(&self, loaded: &Loaded) -> Result<bool, GoalError> {
        let mut changed = false;
        let mut last = loaded.fold.last_seq;
        for plan in &loaded.fold.plans {
            if plan.state == projection::PlanState::Requested
                && !self.store.plan_in_progress(&loaded.id, &plan.id)?
            {
                let data = GoalEvent::Interrupted(events::Interrupted {
                    plan: plan.id.clone(),
                    detail: "its replan stopped before it ended (the planner or lwirc was killed)"
                        .into(),
                })
                .data();
                match self
                    .store
                    .append(&loaded.id, "plan.interrupted", data, last)
                {
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
        let mut append = |name: &str, data: serde_json::Value, log: &mut Box<dyn PlanLog>| {
            writer.append(log, name, data)
        };
        for round in 1..=rounds {
            let request = self.replan_request(&loaded, &plan_id, round, &feedback);
            if round == 1 {
                // The planner session of this replan: its own manifest, with the hash of the
                // prior cycles' context it is given.
                log.append(
                    "plan.session.started",
                    serde_json::json!({ "manifest": request["manifest"], "planner": planner.describe() }),
                )?;
            }
            let bytes = serde_json::to_vec(&request).unwrap_or_default();
            log.put(&format!("request-{round}"), &bytes)?;
            let env = agent_env(round, id, &plan_id);
            let answer = match planner.call("replan", &bytes, &env) {
                Ok(answer) => answer,
                Err(failure) => {
                    let (charged, data) = no_answer(&plan_id, &failure);
                    append("plan.failed", data, &mut log)?;
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
                    append(
                        "plan.attention",
                        attention(&plan_id, &rationale, "planner"),
                        &mut log,
                    )?;
                    return Ok(Replanned::Attention {
                        plan: plan_id,
                        rationale,
                    });
                }
                Answer::Refused {
                    document,
                    findings,
                    message,
                } => {
                    let json: Vec<serde_json::Value> = findings.iter().map(finding_json).collect();
                    log.put("findings", &serde_json::to_vec(&json).unwrap_or_default())?;
                    let code = findings
                        .iter()
                        .find(|f| f.is_error())
                        .map_or(Code::InvalidProposal, |f| f.code);
                    let data = plan_failed(
                        plan_id.clone(),
                        true,
                        code.as_str().to_owned(),
                        message.clone(),
                        json,
                    );
                    append("plan.failed", data, &mut log)?;
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
            append(
                "plan.proposed",
                GoalEvent::Proposed(proposed.clone()).data(),
                &mut log,
            )?;
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
            append(
                "plan.reviewed",
                GoalEvent::Reviewed(reviewed).data(),
                &mut log,
            )?;
            match verdict {
                "passed" => break,
                "attention" => {
                    let rationale = text.unwrap_or_default();
                    append(
                        "plan.attention",
                        attention(&plan_id, &rationale, "reviewer"),
                        &mut log,
                    )?;
                    return Ok(Replanned::Attention {
                        plan: plan_id,
                        rationale,
                    });
                }
                _ => {
                    let text = text.unwrap_or_default();
                    if round == rounds {
                        let data = GoalEvent::Rejected(events::Rejected {
                            plan: plan_id.clone(),
                            by,
                            feedback: text.clone(),
                        })
                        .data();
                        append("plan.rejected", data, &mut log)?;
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
            let data = GoalEvent::Requested(requested).data();
            match self
                .store
                .append(id, "plan.requested", data.clone(), loaded.fold.last_seq)
            {
                Ok(_) => {
                    log.append("plan.requested", data)?;
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
        let refused = |document: Option<Box<SpannedDocument>>, findings: Vec<Finding>| {
            let n = findings.iter().filter(|f| f.is_error()).count();
            Answer::Refused {
                document,
                message: format!("the proposal was refused with {n} finding(s)"),
                findings,
            }
        };
        let read = document::read(answer);
        let Some(doc) = read.document else {
            return refused(None, read.findings);
        };
        if read.findings.iter().any(Finding::is_error) {
            return refused(Some(Box::new(doc)), read.findings);
        }
        match doc.root().get("kind").and_then(Node::as_str) {
            Some("attention") => {
                let rationale = doc
                    .root()
                    .get("rationale")
                    .and_then(Node::as_str)
                    .unwrap_or("")
                    .to_owned();
                if rationale.trim().is_empty() {
                    let span = doc.root().span;
                    return refused(
                        Some(Box::new(doc)),
                        vec![Finding::new(
                            Code::InvalidProposal,
                            "/rationale",
                            span,
                            "an attention answer needs a non-empty `rationale`",
                        )],
                    );
                }
                Answer::Attention(cut(&rationale, lwir_repair::protocol::MAX_RATIONALE_CHARS))
            }
            Some("apply") => {
                let shape = lwir_validators::shape::check_proposal(&doc);
                if shape.iter().any(Finding::is_error) {
                    return refused(Some(Box::new(doc)), shape);
                }
                let items: Vec<ItemSpec> = match doc
                    .root()
                    .get("items")
                    .map(Node::to_json)
                    .map(serde_json::from_value)
                {
                    Some(Ok(items)) => items,
                    _ => return refused(Some(Box::new(doc)), shape),
                };
                let root = doc
                    .root()
                    .get("root")
                    .and_then(Node::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let (findings, plan) = self.check_plan(loaded, &doc, &items, &root, false);
                match plan {
                    Some(_) => Answer::Proposal((items, root)),
                    None => refused(Some(Box::new(doc)), findings),
                }
            }
            other => {
                let finding =
                    unknown_kind(&doc, other, "a replan answers \"apply\" or \"attention\"");
                refused(Some(Box::new(doc)), vec![finding])
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
                    let json: Vec<serde_json::Value> = findings.iter().map(finding_json).collect();
                    let code = findings
                        .iter()
                        .find(|f| f.is_error())
                        .map_or(Code::InvalidProposal, |f| f.code);
                    let data = plan_failed(
                        plan.to_owned(),
                        true,
                        code.as_str().to_owned(),
                        "the plan was refused when it was materialized".into(),
                        json,
                    );
                    match self
                        .store
                        .append(id, "plan.failed", data, loaded.fold.last_seq)
                    {
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

    fn materialize(
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
            materialized.push(("work.materialized", GoalEvent::Materialized(spec).data()));
        }
        // One write for the whole plan: a crash in it leaves the items written whole, and
        // applying the plan again completes it, as it would after separate appends.
        if let Some(e) = self.store.append_all(&loaded.id, materialized, seq)?.last() {
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
        self.store.append(
            &loaded.id,
            "plan.applied",
            GoalEvent::Applied(applied).data(),
            seq,
        )?;
        Ok(())
    }

    /// `goal approve`: a person's approval of a pending plan; applies it.
    pub fn approve(&self, id: &str, plan: &str) -> Result<u32, GoalError> {
        let loaded = self.load(id)?;
        refuse_if_cancelled(&loaded)?;
        let projection = self.project(&loaded);
        let Some(view) = projection.plans.iter().find(|p| p.id == plan) else {
            return Err(GoalError::Refused(format!(
                "goal `{id}` has no plan `{plan}`"
            )));
        };
        match view.status {
            "awaiting-review" => {
                let round = loaded
                    .fold
                    .plan(plan)
                    .and_then(|p| p.proposal.as_ref())
                    .map_or(1, |p| p.round);
                let data = GoalEvent::Reviewed(events::Reviewed {
                    plan: plan.to_owned(),
                    round,
                    verdict: "passed".into(),
                    reviewer: "person".into(),
                    by: self.by.clone(),
                    feedback: None,
                })
                .data();
                self.store.append(id, "plan.reviewed", data, loaded.fold.last_seq).map_err(|e| match e {
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
        let loaded = self.load(id)?;
        refuse_if_cancelled(&loaded)?;
        let projection = self.project(&loaded);
        let Some(view) = projection.plans.iter().find(|p| p.id == plan) else {
            return Err(GoalError::Refused(format!(
                "goal `{id}` has no plan `{plan}`"
            )));
        };
        if view.status != "awaiting-review" {
            return Err(GoalError::Refused(format!(
                "plan `{plan}` is {}, not awaiting review",
                view.status
            )));
        }
        let data = GoalEvent::Rejected(events::Rejected {
            plan: plan.to_owned(),
            by: self.by.clone(),
            feedback: feedback.to_owned(),
        })
        .data();
        self.store
            .append(id, "plan.rejected", data, loaded.fold.last_seq)
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
        let data = GoalEvent::Retry(events::Retry {
            plan: plan.to_owned(),
            by: self.by.clone(),
        })
        .data();
        self.store
            .append(id, "plan.retry", data, loaded.fold.last_seq)
            .map_err(|e| changed_meanwhile(id, e))?;
        Ok(())
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
            let data = GoalEvent::Cancelled(events::Cancelled {
                by: self.by.clone(),
                reason: reason.map(str::to_owned),
            })
            .data();
            match self
                .store
                .append(id, "goal.cancelled", data, loaded.fold.last_seq)
            {
                Ok(_) => return Ok(()),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(busy(id))
    }
}

enum Answer {
    Attention(String),
    Proposal((Vec<ItemSpec>, String)),
    Refused {
        document: Option<Box<SpannedDocument>>,
        findings: Vec<Finding>,
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
            .map(|t| cut(t, lwir_repair::protocol::MAX_RATIONALE_CHARS))
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

pub(crate) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut out: String = text.chars().take(max - 1).collect();
        out.push('…');
        out
    }
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

/// A finding as JSON for the log (the fields of `lwirc validate --format json`).
pub fn finding_json(f: &Finding) -> serde_json::Value {
    serde_json::json!({
        "code": f.code.as_str(),
        "name": f.code.name(),
        "severity": f.severity.as_str(),
        "pointer": f.pointer,
        "span": { "start": f.span.start(), "end": f.span.end() },
        "message": f.message,
        "help": f.help,
    })
}

/// The data of `plan.attention`.
pub(crate) fn attention(plan: &str, rationale: &str, from: &str) -> serde_json::Value {
    GoalEvent::Attention(events::Attention {
        plan: plan.to_owned(),
        rationale: rationale.to_owned(),
        from: from.to_owned(),
    })
    .data()
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
        name: &str,
        data: serde_json::Value,
    ) -> Result<(), GoalError> {
        log.append(name, data.clone())?;
        for _ in 0..MAX_CONFLICTS {
            match self.store.append(self.id, name, data.clone(), self.seq) {
                Ok(e) => {
                    self.seq = e.seq;
                    return Ok(());
                }
                Err(StoreError::Conflict { found, .. }) => {
                    let events = self.store.events(self.id)?;
                    if events.iter().any(|e| e.event == "goal.cancelled") {
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
pub(crate) fn no_answer(plan: &str, failure: &CallFailure) -> (bool, serde_json::Value) {
    let charged = failure.kind != lwir_repair::harness::FailureKind::NotStarted;
    let data = plan_failed(
        plan.to_owned(),
        charged,
        failure.kind.code().as_str().to_owned(),
        format!("the planner gave no answer: {}", failure.message),
        Vec::new(),
    );
    (charged, data)
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

/// The data of `plan.failed`.
pub(crate) fn plan_failed(
    plan: String,
    charged: bool,
    code: String,
    message: String,
    findings: Vec<serde_json::Value>,
) -> serde_json::Value {
    GoalEvent::PlanFailed(events::PlanFailed {
        plan,
        charged,
        code,
        message,
        findings,
    })
    .data()
}

/// A cancelled goal takes no more decisions.
fn refuse_if_cancelled(loaded: &Loaded) -> Result<(), GoalError> {
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
