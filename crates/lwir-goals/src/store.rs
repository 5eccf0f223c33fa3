//! Where goals live: [`Store`], and [`Directory`], its implementation on a local directory
//! (`.lwir/goals` by default).
//!
//! A goal is its frozen goal file, written once, and its append-only event log; everything
//! else is computed from the log when it is read. Appends carry the seq of the last event
//! their writer read (`expected_last`), so a writer that decided on a stale view is told
//! ([`StoreError::Conflict`]) and decides again — that is how concurrent reports lose
//! nothing and two replans never run at once. A replan also holds its plan's own log open
//! for as long as it runs ([`PlanLog`]); a plan that was requested but whose log nobody
//! holds was interrupted.
//!
//! Layout of [`Directory`]:
//!
//! ```text
//! <dir>/<goal-id>/goal.json                 the frozen goal file (RFC 8785 canonical bytes)
//! <dir>/<goal-id>/events.jsonl              the goal's event log
//! <dir>/<goal-id>/checkpoint.json           the fold of a prefix of the log (a cache)
//! <dir>/<goal-id>/plans/<plan>/events.jsonl the plan's own log (held while it runs)
//! <dir>/<goal-id>/plans/<plan>/<name>.json  the plan's request, answers and findings
//! ```

use std::path::{Path, PathBuf};

use lwir_repair::events::{self, Event, EventLog, LogError};
use lwir_repair::files;

use crate::events::{GoalEvent, PlanEvent};

/// Why the store could not do something.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The last event is not the one the writer read: decide again on a fresh view.
    #[error("the goal log changed meanwhile (expected event {expected} last, found {found})")]
    Conflict {
        /// The seq the writer expected last.
        expected: u64,
        /// The seq that is last.
        found: u64,
    },
    /// Another process holds what was asked for (a plan's log), or the goal log's lock
    /// stayed taken too long.
    #[error("{what} is in use by another lwirc process")]
    Busy {
        /// What is busy.
        what: String,
    },
    /// No goal with this id.
    #[error("no goal `{goal}` in {location}")]
    NotFound {
        /// The id asked for.
        goal: String,
        /// The store.
        location: String,
    },
    /// Stored data is not what it should be (a damaged log line, a goal file that does not
    /// hash to its recorded digest).
    #[error("{location} is damaged: {detail}")]
    Damaged {
        /// Where.
        location: String,
        /// What is wrong.
        detail: String,
    },
    /// Reading or writing failed.
    #[error("cannot read or write {location}: {detail}")]
    Io {
        /// Where.
        location: String,
        /// What the system said.
        detail: String,
    },
}

/// A plan's own log, held (exclusively) while its replan runs.
pub trait PlanLog {
    /// Appends one event to the plan's log.
    fn append(&mut self, event: PlanEvent<'_>) -> Result<(), StoreError>;
    /// Stores one file of the plan (`request`, `answer-1`, `findings`, …) as `<name>.json`.
    fn put(&mut self, name: &str, bytes: &[u8]) -> Result<(), StoreError>;
}

/// Held while one process (`goal run`, or `goal serve` for one step) drives a goal and
/// watches the runners it dispatched; released when dropped, or when the process dies.
pub struct RunGuard {
    _held: Box<dyn std::any::Any + Send>,
}

impl RunGuard {
    /// A guard holding `held` (a locked file, a database session, …) until it is dropped.
    pub fn new(held: Box<dyn std::any::Any + Send>) -> Self {
        Self { _held: held }
    }
}

/// Where a reader stands in a goal's log: the last event it read, named by its seq and its
/// chain hash (which stands for every event before it), and where that event's line is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Position {
    /// The seq of the last event read (0: none).
    pub seq: u64,
    /// Its chain hash, as the store keeps it (`""` for none).
    pub chain: String,
    /// The chain hash of the event before it (`""` for none).
    pub previous: String,
    /// Where its line begins, for a store that keeps lines in a file (0 otherwise).
    pub start: u64,
    /// Where its line ends, after its `\n` (0 for a store that keeps no file).
    pub end: u64,
}

impl Position {
    /// Before the first event.
    pub fn origin() -> Self {
        Position {
            seq: 0,
            chain: String::new(),
            previous: String::new(),
            start: 0,
            end: 0,
        }
    }
}

/// What [`Store::events_since`] read: the events after the position asked for, and where
/// the log ends now (`None` when the store cannot say).
pub type Since = (Vec<Event>, Option<Position>);

/// A place goals are kept.
pub trait Store: Sync {
    /// Where the store is, for messages.
    fn location(&self) -> String;
    /// Stores the frozen goal file of `goal` if it has none; `true` when it was written now.
    /// A different file under the same id is [`StoreError::Damaged`].
    fn freeze(&self, goal: &str, bytes: &[u8]) -> Result<bool, StoreError>;
    /// The frozen goal file of `goal`; `None` when there is no such goal.
    fn frozen(&self, goal: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Every goal id, sorted.
    fn goals(&self) -> Result<Vec<String>, StoreError>;
    /// The committed events of `goal`'s log, in order (empty when it has none yet).
    fn events(&self, goal: &str) -> Result<Vec<Event>, StoreError>;
    /// Appends one event to `goal`'s log if its last event is still `expected_last` (0: the
    /// log is empty); otherwise [`StoreError::Conflict`] and nothing is written.
    fn append(
        &self,
        goal: &str,
        event: &GoalEvent,
        expected_last: u64,
    ) -> Result<Event, StoreError>;
    /// [`Store::append`] of several events, in order, the first after `expected_last`:
    /// what a store can do in one write (one fsync, one transaction) it does so. The events
    /// appended.
    fn append_all(
        &self,
        goal: &str,
        events: &[GoalEvent],
        expected_last: u64,
    ) -> Result<Vec<Event>, StoreError> {
        let mut seq = expected_last;
        let mut out = Vec::with_capacity(events.len());
        for event in events {
            let e = self.append(goal, event, seq)?;
            seq = e.seq;
            out.push(e);
        }
        Ok(out)
    }
    /// The committed events of `goal`'s log after `after` (the whole log when `None`), and
    /// its position now — without reading what `after` covers, where the store can. The
    /// store checks that the log still holds the event `after` names, with its chain hash;
    /// `Ok(None)` when it does not (or the store cannot read from a position): the reader
    /// then reads the whole log ([`Store::events`]), which says what is wrong if anything
    /// is. A store without positions reads the whole log and gives no position.
    fn events_since(
        &self,
        goal: &str,
        after: Option<&Position>,
    ) -> Result<Option<Since>, StoreError> {
        match after {
            Some(_) => Ok(None),
            None => Ok(Some((self.events(goal)?, None))),
        }
    }
    /// The checkpoint of `goal`'s fold last stored ([`Store::put_checkpoint`]), as it was
    /// stored; `None` when there is none, or the store keeps none. Only a cache: whoever
    /// reads it checks it against the log.
    fn checkpoint(&self, goal: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let _ = goal;
        Ok(None)
    }
    /// Stores a checkpoint of `goal`'s fold in place of the one before (atomically: a reader
    /// finds the old one or the new one); a store that keeps none ignores it.
    fn put_checkpoint(&self, goal: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let _ = (goal, bytes);
        Ok(())
    }
    /// Opens the log of plan `plan` of `goal` for this process alone; [`StoreError::Busy`]
    /// when another process holds it.
    fn open_plan(&self, goal: &str, plan: &str) -> Result<Box<dyn PlanLog>, StoreError>;
    /// Whether some process holds the log of plan `plan` of `goal` now.
    fn plan_in_progress(&self, goal: &str, plan: &str) -> Result<bool, StoreError>;
    /// One file of a plan, as [`PlanLog::put`] stored it.
    fn plan_file(&self, goal: &str, plan: &str, name: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Takes the run lock of `goal` without waiting; [`StoreError::Busy`] when another
    /// process drives it.
    fn lock_run(&self, goal: &str) -> Result<RunGuard, StoreError>;
    /// Appends `event` to `goal`'s log as it is, its time kept, when its seq is the next
    /// one ([`StoreError::Conflict`] otherwise): how `lwirc goals copy` moves a log.
    fn import(&self, goal: &str, event: &Event) -> Result<(), StoreError>;
    /// The plans of `goal` that have a log, sorted.
    fn plans(&self, goal: &str) -> Result<Vec<String>, StoreError>;
    /// The events of plan `plan`'s own log, in order.
    fn plan_events(&self, goal: &str, plan: &str) -> Result<Vec<Event>, StoreError>;
    /// The names of plan `plan`'s files, sorted.
    fn plan_files(&self, goal: &str, plan: &str) -> Result<Vec<String>, StoreError>;
    /// Writes plan `plan`'s log and files as they are (a copy from another store), unless
    /// it has a log already.
    fn import_plan(
        &self,
        goal: &str,
        plan: &str,
        events: &[Event],
        files: &[(String, Vec<u8>)],
    ) -> Result<(), StoreError>;
}

/// Goals in a directory.
#[derive(Clone, Debug)]
pub struct Directory {
    root: PathBuf,
}

/// The name of a goal's frozen file.
pub const GOAL_FILE: &str = "goal.json";

impl Directory {
    /// The store in `root` (created when something is first written).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The directory of `goal`.
    pub fn goal_dir(&self, goal: &str) -> PathBuf {
        self.root.join(goal)
    }

    fn plan_dir(&self, goal: &str, plan: &str) -> PathBuf {
        self.goal_dir(goal).join("plans").join(plan)
    }
}

fn io(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Io {
        location: format!("`{}`", path.display()),
        detail: e.to_string(),
    }
}

fn from_log(e: LogError) -> StoreError {
    match e {
        LogError::Conflict {
            expected, found, ..
        } => StoreError::Conflict { expected, found },
        LogError::Busy { path, .. } | LogError::Locked { session: path } => StoreError::Busy {
            what: format!("`{}`", path.display()),
        },
        LogError::Damaged { path, line, reason } => StoreError::Damaged {
            location: format!("`{}`", path.display()),
            detail: format!("line {line}: {reason}"),
        },
        other => StoreError::Io {
            location: "the goal store".into(),
            detail: other.to_string(),
        },
    }
}

/// A name a goal or plan id may have in a path: no separators, no dots first.
pub(crate) fn safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn checked<'a>(kind: &str, name: &'a str) -> Result<&'a str, StoreError> {
    if safe(name) {
        Ok(name)
    } else {
        Err(StoreError::NotFound {
            goal: format!("{kind} {name:?}"),
            location: "this store (not a valid id)".into(),
        })
    }
}

impl Store for Directory {
    fn location(&self) -> String {
        format!("`{}`", self.root.display())
    }

    fn freeze(&self, goal: &str, bytes: &[u8]) -> Result<bool, StoreError> {
        let dir = self.goal_dir(checked("goal", goal)?);
        files::create_dirs(&dir).map_err(|e| io(&dir, e))?;
        let path = dir.join(GOAL_FILE);
        let written = files::write_once(&path, bytes, ".goal.").map_err(|e| io(&path, e))?;
        if !written {
            let existing = std::fs::read(&path).map_err(|e| io(&path, e))?;
            if existing != bytes {
                return Err(StoreError::Damaged {
                    location: format!("`{}`", path.display()),
                    detail: "it holds another goal file than the one its id names".into(),
                });
            }
        }
        Ok(written)
    }

    fn frozen(&self, goal: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.goal_dir(checked("goal", goal)?).join(GOAL_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&path, e)),
        }
    }

    fn goals(&self) -> Result<Vec<String>, StoreError> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&self.root, e)),
        };
        let mut goals = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io(&self.root, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if safe(&name) && entry.path().join(GOAL_FILE).is_file() {
                goals.push(name);
            }
        }
        goals.sort();
        Ok(goals)
    }

    fn events(&self, goal: &str) -> Result<Vec<Event>, StoreError> {
        let path = self.goal_dir(checked("goal", goal)?).join(events::LOG_FILE);
        match events::read(&path) {
            Ok(events) => Ok(events),
            Err(LogError::Missing { .. }) => Ok(Vec::new()),
            Err(e) => Err(from_log(e)),
        }
    }

    fn events_since(
        &self,
        goal: &str,
        after: Option<&Position>,
    ) -> Result<Option<Since>, StoreError> {
        let path = self.goal_dir(checked("goal", goal)?).join(events::LOG_FILE);
        match read_since(&path, after) {
            Ok(Some((events, position))) => Ok(Some((events, Some(position)))),
            Ok(None) => Ok(None),
            // Something is off past `after` (a damaged line, a log without chains): the
            // whole read says what, or reads a log this reader does not position.
            Err(()) if after.is_none() => Ok(Some((self.events(goal)?, None))),
            Err(()) => Ok(None),
        }
    }

    fn checkpoint(&self, goal: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.goal_dir(checked("goal", goal)?).join(CHECKPOINT);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&path, e)),
        }
    }

    fn put_checkpoint(&self, goal: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.goal_dir(checked("goal", goal)?).join(CHECKPOINT);
        // A cache its reader checks: not synced (see `files::write_cache`).
        files::write_cache(&path, bytes).map_err(|e| io(&path, e))
    }

    fn append(
        &self,
        goal: &str,
        event: &GoalEvent,
        expected_last: u64,
    ) -> Result<Event, StoreError> {
        let path = self.goal_dir(checked("goal", goal)?).join(events::LOG_FILE);
        events::append_shared(&path, event.name(), event.data(), Some(expected_last))
            .map_err(from_log)
    }

    fn append_all(
        &self,
        goal: &str,
        events: &[GoalEvent],
        expected_last: u64,
    ) -> Result<Vec<Event>, StoreError> {
        let path = self.goal_dir(checked("goal", goal)?).join(events::LOG_FILE);
        let events = events
            .iter()
            .map(|event| (event.name().to_owned(), event.data()))
            .collect();
        events::append_shared_all(&path, events, Some(expected_last)).map_err(from_log)
    }

    fn open_plan(&self, goal: &str, plan: &str) -> Result<Box<dyn PlanLog>, StoreError> {
        let dir = self.plan_dir(checked("goal", goal)?, checked("plan", plan)?);
        let log = match EventLog::create(&dir) {
            Ok(log) => log,
            // Left by a replan that died before it was recorded: taken over.
            Err(LogError::Exists { .. }) => EventLog::resume(&dir).map_err(from_log)?.0,
            Err(e) => return Err(from_log(e)),
        };
        Ok(Box::new(DirectoryPlan { dir, log }))
    }

    fn plan_in_progress(&self, goal: &str, plan: &str) -> Result<bool, StoreError> {
        let dir = self.plan_dir(checked("goal", goal)?, checked("plan", plan)?);
        events::in_use(&dir).map_err(from_log)
    }

    fn plan_file(&self, goal: &str, plan: &str, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self
            .plan_dir(checked("goal", goal)?, checked("plan", plan)?)
            .join(format!("{}.json", checked("file", name)?));
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&path, e)),
        }
    }

    fn lock_run(&self, goal: &str) -> Result<RunGuard, StoreError> {
        let dir = self.goal_dir(checked("goal", goal)?);
        let path = dir.join(RUN_LOCK);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io(&path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(RunGuard::new(Box::new(file))),
            Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Busy {
                what: format!("goal `{goal}` (another `lwirc goal run` or `goal serve` drives it)"),
            }),
            Err(std::fs::TryLockError::Error(e)) => Err(io(&path, e)),
        }
    }

    fn import(&self, goal: &str, event: &Event) -> Result<(), StoreError> {
        self.import_event(goal, event)
    }

    fn plans(&self, goal: &str) -> Result<Vec<String>, StoreError> {
        let dir = self.goal_dir(checked("goal", goal)?).join("plans");
        self.list_dir(&dir, |path, name| {
            (safe(name) && path.join(events::LOG_FILE).is_file()).then(|| name.to_owned())
        })
    }

    fn plan_events(&self, goal: &str, plan: &str) -> Result<Vec<Event>, StoreError> {
        let path = self
            .plan_dir(checked("goal", goal)?, checked("plan", plan)?)
            .join(events::LOG_FILE);
        match events::read(&path) {
            Ok(events) => Ok(events),
            Err(LogError::Missing { .. }) => Ok(Vec::new()),
            Err(e) => Err(from_log(e)),
        }
    }

    fn plan_files(&self, goal: &str, plan: &str) -> Result<Vec<String>, StoreError> {
        let dir = self.plan_dir(checked("goal", goal)?, checked("plan", plan)?);
        self.list_dir(&dir, |_, name| {
            name.strip_suffix(".json")
                .filter(|n| safe(n))
                .map(str::to_owned)
        })
    }

    fn import_plan(
        &self,
        goal: &str,
        plan: &str,
        events: &[Event],
        contents: &[(String, Vec<u8>)],
    ) -> Result<(), StoreError> {
        let dir = self.plan_dir(checked("goal", goal)?, checked("plan", plan)?);
        if dir.join(events::LOG_FILE).exists() {
            return Ok(());
        }
        for (name, bytes) in contents {
            let path = dir.join(format!("{}.json", checked("file", name)?));
            files::create_dirs(&dir).map_err(|e| io(&dir, e))?;
            files::write_atomically(&path, bytes).map_err(|e| io(&path, e))?;
        }
        // The log last: a plan with a log is a plan copied whole.
        let path = dir.join(events::LOG_FILE);
        for event in events {
            events::append_copy(&path, event).map_err(from_log)?;
        }
        if events.is_empty() {
            EventLog::create(&dir).map_err(from_log)?;
        }
        Ok(())
    }
}

impl Directory {
    fn import_event(&self, goal: &str, event: &Event) -> Result<(), StoreError> {
        let path = self.goal_dir(checked("goal", goal)?).join(events::LOG_FILE);
        events::append_shared_copy(&path, event)
            .map(drop)
            .map_err(from_log)
    }

    fn list_dir(
        &self,
        dir: &Path,
        keep: impl Fn(&Path, &str) -> Option<String>,
    ) -> Result<Vec<String>, StoreError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io(dir, e))?;
            if let Some(name) = entry.file_name().to_str()
                && let Some(kept) = keep(&entry.path(), name)
            {
                out.push(kept);
            }
        }
        out.sort();
        Ok(out)
    }
}

/// The name of the run lock in a goal's directory.
pub const RUN_LOCK: &str = "run.lock";

/// The name of the checkpoint of the fold in a goal's directory.
pub const CHECKPOINT: &str = "checkpoint.json";

/// The `chain` member of a log line.
#[derive(serde::Deserialize)]
struct ChainOf {
    #[serde(default)]
    chain: Option<String>,
}

/// One complete line of a goal log (without its `\n`) as the event with seq `expected`,
/// with its stated chain: the checks [`events::read`] makes of a line, or `None`.
fn line_event(line: &[u8], expected: u64) -> Option<(Event, String)> {
    let text = std::str::from_utf8(line).ok().filter(|t| !t.is_empty())?;
    let event: Event = serde_json::from_str(text).ok()?;
    if event.seq != expected || event.event.is_empty() || !event.data.is_object() {
        return None;
    }
    let chain = serde_json::from_str::<ChainOf>(text).ok()?.chain?;
    Some((event, chain))
}

/// The committed events of the goal log at `path` after `after` (all of them without),
/// read from where `after`'s line begins, and the position at its end. `Ok(None)` when the
/// log does not hold `after`'s event where it says, with its chain; `Err(())` when a line
/// past it is not a chained next event (the whole read, [`events::read`], says why).
fn read_since(path: &Path, after: Option<&Position>) -> Result<Option<(Vec<Event>, Position)>, ()> {
    use std::io::{Read, Seek, SeekFrom};
    let after = after.cloned().unwrap_or_else(Position::origin);
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && after.seq == 0 => {
            return Ok(Some((Vec::new(), after)));
        }
        Err(_) => return Ok(None),
    };
    let start = if after.seq == 0 { 0 } else { after.start };
    if after.seq > 0 && after.end <= start {
        return Ok(None);
    }
    let len = file.metadata().map_err(drop)?.len();
    if len < after.end {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len - start).unwrap_or(0));
    file.seek(SeekFrom::Start(start)).map_err(drop)?;
    file.read_to_end(&mut bytes).map_err(drop)?;
    let mut at = 0usize;
    let mut position = after.clone();
    if after.seq > 0 {
        // The line `after` names: the same event, with the same chain, still intact.
        let end = usize::try_from(after.end - start).map_err(drop)?;
        if bytes.get(end - 1) != Some(&b'\n') {
            return Ok(None);
        }
        let Some((event, chain)) = line_event(&bytes[..end - 1], after.seq) else {
            return Ok(None);
        };
        if chain != after.chain || events::chain_of(&after.previous, &event) != chain {
            return Ok(None);
        }
        at = end;
    }
    let mut out = Vec::new();
    while let Some(offset) = bytes[at..].iter().position(|&b| b == b'\n') {
        let line = &bytes[at..at + offset];
        let (event, chain) = line_event(line, position.seq + 1).ok_or(())?;
        if events::chain_of(&position.chain, &event) != chain {
            return Err(());
        }
        position = Position {
            seq: event.seq,
            previous: std::mem::replace(&mut position.chain, chain.clone()),
            chain,
            start: start + at as u64,
            end: start + (at + offset + 1) as u64,
        };
        out.push(event);
        at += offset + 1;
    }
    Ok(Some((out, position)))
}

struct DirectoryPlan {
    dir: PathBuf,
    log: EventLog,
}

impl PlanLog for DirectoryPlan {
    fn append(&mut self, event: PlanEvent<'_>) -> Result<(), StoreError> {
        self.log
            .append(event.name(), event.data())
            .map(drop)
            .map_err(from_log)
    }

    fn put(&mut self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.dir.join(format!("{}.json", checked("file", name)?));
        files::write_atomically(&path, bytes).map_err(|e| io(&path, e))
    }
}
