//! The run log and the store of runs.
//!
//! Each run is a directory `<runs>/<run-id>/` holding its append-only event log,
//! `events.jsonl`, written with the rules of every lwirc log (`lwir_repair::events`): one
//! `{seq, time, event, data, chain}` object per line, a torn last line dropped on resume, one
//! writer at a time (the log's lock, held by the run's writer thread for as long as the run
//! goes on), and each line chained to the one before by a hash that every read checks. The
//! events are [`RunEvent`]s; the store is [`RunStore`] (`--runs DIR`, `LWIR_RUNS`, else
//! `.lwir/runs`).

mod events;
mod writer;

use std::path::{Path, PathBuf};

pub use events::{
    CodeFinished, CodeStarted, Failure, LoggedFinding, ModelCalled, ModelResponded, RunEvent,
    RunFailed, RunPaused, RunResumed, RunStarted, RunSucceeded, StepFailed, StepSkipped,
    StepStarted, StepSucceeded, ToolCalled, ToolResponded, Usage,
};
pub(crate) use events::{Key, Phase, first_difference};
pub use lwir_repair::events::{Event, LOG_FILE, LogError};
pub use writer::WriterStats;
pub(crate) use writer::{Notify, Writer};

/// The store of runs when neither `--runs` nor `LWIR_RUNS` names one.
pub const DEFAULT_RUNS_DIR: &str = ".lwir/runs";

/// A directory of runs, one subdirectory each.
#[derive(Clone, Debug)]
pub struct RunStore {
    root: PathBuf,
}

/// A run of the store as its log has it: the committed events, typed.
#[derive(Clone, Debug)]
pub struct LoggedRun {
    /// The run id.
    pub id: String,
    /// The events as written (seq, time, name, data).
    pub raw: Vec<Event>,
    /// The same, typed.
    pub events: Vec<RunEvent>,
}

/// Why the store or a run's log could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No run has an id starting with what was given.
    #[error("no run matches `{prefix}` in `{}`", store.display())]
    NotFound {
        /// The prefix as given.
        prefix: String,
        /// The store.
        store: PathBuf,
    },
    /// Several runs start with what was given.
    #[error("`{prefix}` is ambiguous: it matches {}", candidates.join(", "))]
    Ambiguous {
        /// The prefix as given.
        prefix: String,
        /// Every run it matches.
        candidates: Vec<String>,
    },
    /// The run is being written by another lwirc process.
    #[error(
        "the run `{run}` is in use: another lwirc process is running it (its log is locked); \
         nothing was read or written"
    )]
    InUse {
        /// The run id.
        run: String,
    },
    /// A line of the run's log is not what was written (the chain hash does not match, a seq
    /// is missing, a line is not an event).
    #[error("the log of run `{run}` is damaged at line {line}: {reason}")]
    Damaged {
        /// The run id.
        run: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("the log of run `{run}`: {detail}")]
    Io {
        /// The run id.
        run: String,
        /// What happened.
        detail: String,
    },
}

impl StoreError {
    fn of(run: &str, error: LogError) -> Self {
        match error {
            LogError::Locked { .. } => StoreError::InUse {
                run: run.to_owned(),
            },
            LogError::Damaged { line, reason, .. } => StoreError::Damaged {
                run: run.to_owned(),
                line,
                reason,
            },
            other => StoreError::Io {
                run: run.to_owned(),
                detail: other.to_string(),
            },
        }
    }
}

impl RunStore {
    /// The store in `root` (created with the first run).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Where it is.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn dir(&self, run: &str) -> PathBuf {
        self.root.join(run)
    }

    /// A new run's log, created empty and locked.
    pub(crate) fn create(&self, run: &str) -> Result<lwir_repair::events::EventLog, StoreError> {
        lwir_repair::events::EventLog::create_chained(&self.dir(run))
            .map_err(|e| StoreError::of(run, e))
    }

    /// An existing run's log, locked for appending (a torn last line dropped), with its
    /// committed events.
    pub(crate) fn open(
        &self,
        run: &str,
    ) -> Result<(lwir_repair::events::EventLog, LoggedRun), StoreError> {
        let (log, raw) = lwir_repair::events::EventLog::resume_chained(&self.dir(run))
            .map_err(|e| StoreError::of(run, e))?;
        let logged = typed(run, raw)?;
        Ok((log, logged))
    }

    /// The committed events of run `run`, read without changing anything (a run in
    /// progress is read as far as it is committed).
    pub fn read(&self, run: &str) -> Result<LoggedRun, StoreError> {
        let raw = lwir_repair::events::read_chained(&self.dir(run).join(LOG_FILE))
            .map_err(|e| StoreError::of(run, e))?;
        typed(run, raw)
    }

    /// Whether another process is running `run` now (its log is locked).
    pub fn in_use(&self, run: &str) -> bool {
        lwir_repair::events::in_use(&self.dir(run)).unwrap_or(false)
    }

    /// Every run id of the store, sorted.
    pub fn ids(&self) -> Result<Vec<String>, StoreError> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(StoreError::Io {
                    run: String::new(),
                    detail: format!("cannot read `{}`: {e}", self.root.display()),
                });
            }
        };
        let mut ids: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| is_run_id(name) && self.dir(name).join(LOG_FILE).is_file())
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// The one run whose id starts with `prefix`.
    pub fn resolve(&self, prefix: &str) -> Result<String, StoreError> {
        let wanted = prefix.trim().to_ascii_lowercase();
        let mut found: Vec<String> = self
            .ids()?
            .into_iter()
            .filter(|id| !wanted.is_empty() && id.starts_with(&wanted))
            .collect();
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(StoreError::NotFound {
                prefix: prefix.to_owned(),
                store: self.root.clone(),
            }),
            _ => Err(StoreError::Ambiguous {
                prefix: prefix.to_owned(),
                candidates: found,
            }),
        }
    }
}

fn typed(run: &str, raw: Vec<Event>) -> Result<LoggedRun, StoreError> {
    let events = raw
        .iter()
        .map(|e| {
            RunEvent::parse(e).map_err(|reason| StoreError::Damaged {
                run: run.to_owned(),
                line: usize::try_from(e.seq).unwrap_or(usize::MAX),
                reason,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(LoggedRun {
        id: run.to_owned(),
        raw,
        events,
    })
}

/// The length of a run id, in hex digits.
const ID_LEN: usize = 16;

/// Whether `name` is a run id: 16 lowercase hex digits.
pub fn is_run_id(name: &str) -> bool {
    name.len() == ID_LEN && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A new run id: 16 hex digits of SHA-256 over the time, this process and a counter, and
/// (where there is one) the system's random source, so that two runs never share an id
/// (idempotency keys are derived from it).
pub(crate) fn new_run_id() -> String {
    use std::io::Read;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut random = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = f.read_exact(&mut random);
    }
    let seed = format!(
        "{nanos}\n{}\n{}\n{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        lwir_spec::digest::hex(&random)
    );
    lwir_spec::digest::sha256_hex(seed.as_bytes())[..ID_LEN].to_owned()
}
