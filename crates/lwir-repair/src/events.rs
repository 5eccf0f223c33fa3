//! The session event log: an append-only JSON Lines file, `events.jsonl`, in the session
//! directory of an `lwirc compile` run.
//!
//! Each event is one compact JSON object on one line,
//! `{"seq":1,"time":"2026-11-30T00:10:01.123Z","event":"harness.session.started","data":{…}}`,
//! written with a single `write_all` and made durable with `sync_data` before [`EventLog::append`]
//! returns. After a crash the log therefore holds every committed event and at most the last
//! line is torn (written in part, without its newline). [`EventLog::resume`] drops such a torn
//! line and continues the log; any other damage is reported and the file is left as it is.
//!
//! A session belongs to one process at a time: an open [`EventLog`] holds an exclusive lock on
//! the log file (released when it is dropped, or when the process dies), and a second
//! [`EventLog::create`] or [`EventLog::resume`] of the same session is refused with
//! [`LogError::Locked`] before it reads or changes anything. Before every append the log
//! checks that the file still ends where its last append left it, so that a line is never
//! written after lines it has not seen.
//!
//! A log that several processes write in turn (a goal's: runners reporting, a replan) uses
//! [`append_shared`] instead: each append takes the lock for itself alone, waiting (a bounded
//! time, [`SHARED_LOCK_WAIT`]) for the writer before, continues from the last committed line,
//! and can require that line to be the one its writer decided on. Its lines also carry a
//! hash chained over every line before ([`chain_of`]), which every read checks.

mod typed;

pub(crate) use typed::code;
pub use typed::{
    CallFailed, LoggedFinding, ModelCalled, ModelResponded, RepairApplied, SessionEvent,
    SessionFailed, ValidationCompleted, WorkflowRegistered,
};

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::files::sync_dir;

/// The name of the event log inside a session directory.
pub const LOG_FILE: &str = "events.jsonl";

/// One event of the log, in the field order it is written.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// Position in the log: 1, 2, 3, … without gaps.
    pub seq: u64,
    /// When the event was written, RFC 3339 UTC to the millisecond.
    pub time: String,
    /// The event kind, e.g. `harness.model.called`; never empty.
    pub event: String,
    /// The event's payload, always a JSON object.
    pub data: serde_json::Value,
}

/// The chain hash of `event` after a line whose chain was `previous` (`""` before the
/// first): the hex SHA-256 of `previous`, a newline and the event's JSON line without its
/// chain. A log several processes share (a goal's) carries it on every line, so that a
/// line rewritten after it was written — even into another valid event — is found by every
/// read (and so does a goal store in PostgreSQL, row by row).
pub fn chain_of(previous: &str, event: &Event) -> String {
    let line = serde_json::to_string(event).unwrap_or_default();
    lwir_spec::digest::sha256_hex(format!("{previous}\n{line}").as_bytes())
}

/// The `chain` member of a line, when it has one.
#[derive(serde::Deserialize)]
struct ChainOf {
    #[serde(default)]
    chain: Option<String>,
}

/// An event as a chained line: its fields, then `chain`.
#[derive(serde::Serialize)]
struct Chained<'a> {
    #[serde(flatten)]
    event: &'a Event,
    chain: &'a str,
}

/// An open event log, positioned for appending.
#[derive(Debug)]
pub struct EventLog {
    /// The log file, opened for appending.
    file: File,
    /// Where the log file is.
    path: PathBuf,
    /// The `seq` the next appended event gets.
    next_seq: u64,
    /// The length of the file after the last committed line: where the next line goes.
    len: u64,
    /// Set when a write or sync failed: the end of the file is then uncertain and further
    /// appends are refused so that at most the last line can be torn.
    failed: bool,
    /// For a chained log ([`EventLog::create_chained`]): the chain of the last line (`""`
    /// before the first), which the next line's chain continues.
    chain: Option<String>,
}

impl EventLog {
    /// Starts a new log in `dir` (created with its parents if missing).
    ///
    /// Refuses with [`LogError::Exists`] when `dir/events.jsonl` already exists: a session is
    /// never started twice in one directory. The file is created with `create_new`, and both it
    /// and the directory are synced so that the empty log survives a crash.
    pub fn create(dir: &Path) -> Result<Self, LogError> {
        Self::create_with(dir, None)
    }

    /// [`EventLog::create`] for a log whose every line carries its chain hash
    /// ([`chain_of`]), as a run's log does: a line changed after it was written is found by
    /// every read.
    pub fn create_chained(dir: &Path) -> Result<Self, LogError> {
        Self::create_with(dir, Some(String::new()))
    }

    fn create_with(dir: &Path, chain: Option<String>) -> Result<Self, LogError> {
        let path = dir.join(LOG_FILE);
        crate::files::create_dirs(dir).map_err(|source| LogError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&path)
            .map_err(|source| {
                if source.kind() == io::ErrorKind::AlreadyExists {
                    // Say so when the session is in use rather than merely there.
                    if let Ok(existing) = File::open(&path)
                        && let Err(locked @ LogError::Locked { .. }) = lock(&existing, &path)
                    {
                        return locked;
                    }
                    LogError::Exists { path: path.clone() }
                } else {
                    LogError::Io {
                        path: path.clone(),
                        source,
                    }
                }
            })?;
        lock(&file, &path)?;
        file.sync_all().map_err(|source| LogError::Io {
            path: path.clone(),
            source,
        })?;
        sync_dir(dir).map_err(|source| LogError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        Ok(EventLog {
            file,
            path,
            next_seq: 1,
            len: 0,
            failed: false,
            chain,
        })
    }

    /// Opens the log in `dir` to continue it after a crash.
    ///
    /// Reads and checks every line (see [`read`]). A torn last line is dropped by truncating the
    /// file to the end of the last complete line (and syncing it). Returns the log positioned
    /// for appending (next seq = last seq + 1) together with the committed events in order.
    /// [`LogError::Missing`] when there is no log; [`LogError::Locked`] when another open log
    /// (another process) owns the session; [`LogError::Damaged`] when a complete line is not a
    /// valid next event. In both last cases the file is not changed.
    pub fn resume(dir: &Path) -> Result<(Self, Vec<Event>), LogError> {
        Self::resume_with(dir, false)
    }

    /// [`EventLog::resume`] for a chained log ([`EventLog::create_chained`]): every line
    /// must carry its chain ([`LogError::Damaged`] naming the first that does not), and the
    /// lines appended continue it.
    pub fn resume_chained(dir: &Path) -> Result<(Self, Vec<Event>), LogError> {
        Self::resume_with(dir, true)
    }

    fn resume_with(dir: &Path, chained: bool) -> Result<(Self, Vec<Event>), LogError> {
        let path = dir.join(LOG_FILE);
        let io_err = |source| LogError::Io {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)
            .map_err(|source| {
                if source.kind() == io::ErrorKind::NotFound {
                    LogError::Missing { path: path.clone() }
                } else {
                    io_err(source)
                }
            })?;
        // Locked before reading, so that what is read is the whole log and stays so.
        lock(&file, &path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_err)?;
        let (events, committed, last_chain) = parse(&path, &bytes)?;
        let chain = if chained {
            if !events.is_empty() && last_chain.is_none() {
                return Err(LogError::Damaged {
                    path,
                    line: 1,
                    reason: "it has no chain hash, and every line of this log must".into(),
                });
            }
            Some(last_chain.unwrap_or_default())
        } else {
            None
        };
        if committed < bytes.len() {
            // `usize` always fits in `u64` on supported targets.
            file.set_len(committed as u64).map_err(io_err)?;
            file.sync_all().map_err(io_err)?;
        }
        let next_seq = events.last().map_or(1, |e| e.seq + 1);
        Ok((
            EventLog {
                file,
                path,
                next_seq,
                len: committed as u64,
                failed: false,
                chain,
            },
            events,
        ))
    }

    /// Appends one event with the next seq and the current time, as one `write_all` of the whole
    /// line including its `\n`, then `sync_data`. Returns the event written.
    ///
    /// `data` that is not a JSON object, or an empty `event`, is a programming error and gives
    /// [`LogError::Invalid`] without writing anything. After a failed write or sync the log
    /// refuses further appends ([`LogError::Io`]); resume the session to continue. So it does,
    /// without writing, when the file no longer ends where the last append left it (something
    /// else wrote to it): [`LogError::Changed`].
    pub fn append(&mut self, event: &str, data: serde_json::Value) -> Result<Event, LogError> {
        let mut written = self.append_batch(vec![(event.to_owned(), data)])?;
        // One event in, one out.
        Ok(written.remove(0))
    }

    /// Appends `events` in order, each with the next seq and the current time, as one
    /// `write_all` of all their lines and one `sync_data` for the batch (a group commit:
    /// the events of one batch become durable together). As [`EventLog::append`] otherwise:
    /// an invalid event refuses the whole batch before anything is written, and after a
    /// crash at most the last line is torn, so the log holds a prefix of the batch.
    pub fn append_batch(
        &mut self,
        events: Vec<(String, serde_json::Value)>,
    ) -> Result<Vec<Event>, LogError> {
        let time = lwir_spec::time::rfc3339_millis(SystemTime::now());
        let mut records = Vec::with_capacity(events.len());
        let mut bytes = Vec::new();
        let mut chain = self.chain.clone();
        for (i, (event, data)) in events.into_iter().enumerate() {
            let record = Event {
                seq: self.next_seq + i as u64,
                time: time.clone(),
                event,
                data,
            };
            // Checked, and what is written must read back on resume (serde_json stops at
            // 128 levels).
            let line = match &mut chain {
                Some(previous) => {
                    let (line, next) = encode_chained(&record, previous)?;
                    *previous = next;
                    line
                }
                None => encode(&record)?,
            };
            bytes.extend_from_slice(&line);
            records.push(record);
        }
        if records.is_empty() {
            return Ok(records);
        }
        if self.failed {
            return Err(LogError::Io {
                path: self.path.clone(),
                source: io::Error::other(
                    "an earlier write to the log failed; resume the session to continue it",
                ),
            });
        }
        match self.file.metadata() {
            Ok(metadata) if metadata.len() == self.len => {}
            Ok(metadata) => {
                self.failed = true;
                return Err(LogError::Changed {
                    path: self.path.clone(),
                    expected: self.len,
                    found: metadata.len(),
                });
            }
            Err(source) => {
                return Err(LogError::Io {
                    path: self.path.clone(),
                    source,
                });
            }
        }
        if let Err(source) = self
            .file
            .write_all(&bytes)
            .and_then(|()| self.file.sync_data())
        {
            self.failed = true;
            return Err(LogError::Io {
                path: self.path.clone(),
                source,
            });
        }
        self.next_seq += records.len() as u64;
        self.len += bytes.len() as u64;
        self.chain = chain;
        Ok(records)
    }

    /// The log file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Appends one event to the log at `path`, for a log that several processes write in turn
/// (a goal's): the file (and its directory) is created if missing, and locked — waiting for
/// the writer before — for this one append. Under the lock the last committed line is read
/// (only the end of the file: an append does not read the whole log), a torn last line is
/// dropped, and the event is written with the next seq and synced. So no event is lost and
/// seqs have no gaps, however many writers there are.
///
/// With `expected_last`, the append happens only if the last event's seq is that (0: the
/// log is empty); otherwise [`LogError::Conflict`] and nothing is written — how a writer
/// makes sure that what it decided on is still the state of the log.
pub fn append_shared(
    path: &Path,
    event: &str,
    data: serde_json::Value,
    expected_last: Option<u64>,
) -> Result<Event, LogError> {
    append_shared_waiting(path, event, data, expected_last, SHARED_LOCK_WAIT)
}

/// How long [`append_shared`] waits for the writer before it: a writer holds the lock for
/// one write and its fsync, so a lock held this long belongs to a process that is stuck.
pub const SHARED_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// [`append_shared`], waiting at most `wait` for the lock; [`LogError::Busy`] after that,
/// with nothing written.
pub fn append_shared_waiting(
    path: &Path,
    event: &str,
    data: serde_json::Value,
    expected_last: Option<u64>,
    wait: std::time::Duration,
) -> Result<Event, LogError> {
    append_shared_at(path, event, data, expected_last, None, wait, true)
}

/// [`append_shared`] of several events at once: under one lock, after one look at the
/// log's end, written in one write and made durable by one fsync, each chained to the one
/// before. `expected_last` is checked once, before the first. A crash mid-write leaves the
/// events whose lines were written whole, as separate appends would have (the torn rest is
/// dropped by the next writer).
pub fn append_shared_all(
    path: &Path,
    events: Vec<(String, serde_json::Value)>,
    expected_last: Option<u64>,
) -> Result<Vec<Event>, LogError> {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let (mut file, mut last, previous) = open_shared(path, expected_last, SHARED_LOCK_WAIT)?;
    let mut chain = previous.unwrap_or_default();
    let mut bytes = Vec::new();
    let mut written = Vec::with_capacity(events.len());
    for (event, data) in events {
        last += 1;
        let record = Event {
            seq: last,
            time: lwir_spec::time::rfc3339_millis(SystemTime::now()),
            event,
            data,
        };
        let (line, next) = encode_chained(&record, &chain)?;
        bytes.extend_from_slice(&line);
        chain = next;
        written.push(record);
    }
    file.write_all(&bytes)
        .and_then(|()| file.sync_data())
        .map_err(|source| LogError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(written)
}

/// Appends a copy of `record`: at its own seq, with its own time.
fn append_shared_as(path: &Path, record: &Event, chained: bool) -> Result<Event, LogError> {
    append_shared_at(
        path,
        &record.event,
        record.data.clone(),
        Some(record.seq.saturating_sub(1)),
        Some(record.time.clone()),
        SHARED_LOCK_WAIT,
        chained,
    )
}

/// Appends `record` as it is — its time kept — when its seq is the next one (a copy of a
/// log from another store); [`LogError::Conflict`] otherwise, with nothing written. The line
/// is chained, as every line of a shared log is ([`chain_of`]).
pub fn append_shared_copy(path: &Path, record: &Event) -> Result<Event, LogError> {
    append_shared_as(path, record, true)
}

/// [`append_shared_copy`] for a log an [`EventLog`] owns (a plan's): the line is written
/// as the log's own are, without a chain.
pub fn append_copy(path: &Path, record: &Event) -> Result<Event, LogError> {
    append_shared_as(path, record, false)
}

/// The shared log at `path` opened for an append (its directory made, the file created):
/// locked (waiting at most `wait`), a torn last line from a writer that died dropped, as
/// resume drops it, and the last seq checked against `expected_last`. The file, the last
/// seq and the last line's chain.
fn open_shared(
    path: &Path,
    expected_last: Option<u64>,
    wait: std::time::Duration,
) -> Result<(File, u64, Option<String>), LogError> {
    let io_err = |source| LogError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::files::create_dirs(dir).map_err(io_err)?;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(io_err)?;
    lock_within(&file, path, wait)?;
    let (last, previous, committed, len) = last_committed(&mut file, path)?;
    if committed < len {
        file.set_len(committed).map_err(io_err)?;
        file.sync_all().map_err(io_err)?;
    }
    if let Some(expected) = expected_last
        && expected != last
    {
        return Err(LogError::Conflict {
            path: path.to_path_buf(),
            expected,
            found: last,
        });
    }
    Ok((file, last, previous))
}

/// Appends one event under the log's lock: the next seq, and `time` (else now).
fn append_shared_at(
    path: &Path,
    event: &str,
    data: serde_json::Value,
    expected_last: Option<u64>,
    time: Option<String>,
    wait: std::time::Duration,
    chained: bool,
) -> Result<Event, LogError> {
    let (mut file, last, previous) = open_shared(path, expected_last, wait)?;
    let record = Event {
        seq: last + 1,
        time: time.unwrap_or_else(|| lwir_spec::time::rfc3339_millis(SystemTime::now())),
        event: event.to_owned(),
        data,
    };
    let line = if chained {
        encode_chained(&record, &previous.unwrap_or_default())?.0
    } else {
        encode(&record)?
    };
    file.write_all(&line)
        .and_then(|()| file.sync_data())
        .map_err(|source| LogError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(record)
}

/// [`encode`], with the event's chain after the line whose chain was `previous`; and that
/// chain.
fn encode_chained(record: &Event, previous: &str) -> Result<(Vec<u8>, String), LogError> {
    encode(record)?;
    let chain = chain_of(previous, record);
    let mut line = serde_json::to_vec(&Chained {
        event: record,
        chain: &chain,
    })
    .map_err(|e| LogError::Invalid {
        reason: format!("event `{}` cannot be serialised: {e}", record.event),
    })?;
    line.push(b'\n');
    Ok((line, chain))
}

/// One event as its log line: checked (a non-empty kind, an object for data), compact JSON
/// that reads back, and its `\n`.
fn encode(record: &Event) -> Result<Vec<u8>, LogError> {
    if record.event.is_empty() {
        return Err(LogError::Invalid {
            reason: "the event kind is empty".into(),
        });
    }
    if !record.data.is_object() {
        return Err(LogError::Invalid {
            reason: format!("the data of event `{}` is not a JSON object", record.event),
        });
    }
    let mut line = serde_json::to_vec(record).map_err(|e| LogError::Invalid {
        reason: format!("event `{}` cannot be serialised: {e}", record.event),
    })?;
    if let Err(e) = serde_json::from_slice::<Event>(&line) {
        return Err(LogError::Invalid {
            reason: format!("event `{}` would not read back: {e}", record.event),
        });
    }
    line.push(b'\n');
    Ok(line)
}

/// The seq of the last complete line of the log open in `file`, the length of the file up
/// to and including that line, and the whole length. The end of the file is searched
/// backwards, a block at a time, for the two line breaks around that line, and only the
/// line itself is read.
fn last_committed(
    file: &mut File,
    path: &Path,
) -> Result<(u64, Option<String>, u64, u64), LogError> {
    use std::io::{Seek, SeekFrom};
    let io_err = |source| LogError::Io {
        path: path.to_path_buf(),
        source,
    };
    let len = file.metadata().map_err(io_err)?.len();
    // The last line break, and the one before it (or the start of the file): read backwards
    // in blocks that start at 4 KiB (a line of a goal's log is usually shorter) and grow to
    // 64 KiB, each scanned only until both are found.
    let mut found: Vec<u64> = Vec::with_capacity(2);
    let mut end = len;
    let mut block = vec![0; 4 * 1024];
    while found.len() < 2 && end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let chunk = &mut block[..usize::try_from(end - start).unwrap_or(0)];
        file.seek(SeekFrom::Start(start)).map_err(io_err)?;
        file.read_exact(chunk).map_err(io_err)?;
        let breaks = chunk.iter().enumerate().rev().filter(|&(_, &b)| b == b'\n');
        for (i, _) in breaks.take(2 - found.len()) {
            found.push(start + i as u64);
        }
        end = start;
        if block.len() < 64 * 1024 {
            block.resize(block.len() * 2, 0);
        }
    }
    let Some(&last_newline) = found.first() else {
        return Ok((0, None, 0, len));
    };
    let line_start = found.get(1).map_or(0, |&before| before + 1);
    let mut line = vec![0; usize::try_from(last_newline - line_start).unwrap_or(0)];
    file.seek(SeekFrom::Start(line_start)).map_err(io_err)?;
    file.read_exact(&mut line).map_err(io_err)?;
    let event: Event = serde_json::from_slice(&line).map_err(|e| LogError::Damaged {
        path: path.to_path_buf(),
        line: 0,
        reason: format!("its last line is not an event: {e}"),
    })?;
    let chain = serde_json::from_slice::<ChainOf>(&line)
        .ok()
        .and_then(|c| c.chain);
    Ok((event.seq, chain, last_newline + 1, len))
}

/// Whether the log in `dir` is owned by an open [`EventLog`] right now (of this or another
/// process): its lock is held. `false` when there is no log. Only a hint for a reader — the
/// owner may let go the moment after — but a `true` is never wrong about a log whose owner
/// died, because the lock goes with the process.
pub fn in_use(dir: &Path) -> Result<bool, LogError> {
    let path = dir.join(LOG_FILE);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(source) if source.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(source) => return Err(LogError::Io { path, source }),
    };
    match lock(&file, &path) {
        Ok(()) => Ok(false),
        Err(LogError::Locked { .. }) => Ok(true),
        Err(other) => Err(other),
    }
}

/// Reads and checks the log at `path` without changing it (for inspection and tests): the
/// committed events in order; a torn last line is left out.
///
/// [`LogError::Missing`] when there is no file at `path`; [`LogError::Damaged`] when a complete
/// line is not a valid next event.
pub fn read(path: &Path) -> Result<Vec<Event>, LogError> {
    let bytes = read_bytes(path)?;
    parse(path, &bytes).map(|(events, _, _)| events)
}

/// [`read`] for a chained log ([`EventLog::create_chained`]): every line must carry its
/// chain hash, and every chain must match ([`LogError::Damaged`] naming the first line that
/// does not).
pub fn read_chained(path: &Path) -> Result<Vec<Event>, LogError> {
    let bytes = read_bytes(path)?;
    let (events, _, _) = parse(path, &bytes)?;
    // Once a line has a chain every later one must (`parse`), so the first line decides.
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let chained = serde_json::from_slice::<ChainOf>(first)
        .ok()
        .and_then(|c| c.chain)
        .is_some();
    if !events.is_empty() && !chained {
        return Err(LogError::Damaged {
            path: path.to_path_buf(),
            line: 1,
            reason: "it has no chain hash, and every line of this log must".into(),
        });
    }
    Ok(events)
}

fn read_bytes(path: &Path) -> Result<Vec<u8>, LogError> {
    std::fs::read(path).map_err(|source| {
        if source.kind() == io::ErrorKind::NotFound {
            LogError::Missing {
                path: path.to_path_buf(),
            }
        } else {
            LogError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    })
}

/// Parses and checks the log's bytes. Returns the committed events, the length of the
/// committed prefix (up to and including the last `\n`; anything after it is a torn
/// write) and the chain of the last line, when the lines are chained.
fn parse(path: &Path, bytes: &[u8]) -> Result<(Vec<Event>, usize, Option<String>), LogError> {
    let mut events: Vec<Event> = Vec::new();
    let mut start = 0;
    // The chain of the last chained line; once a line has one, every later line must.
    let mut chain: Option<String> = None;
    while let Some(offset) = bytes[start..].iter().position(|&b| b == b'\n') {
        let end = start + offset;
        let line_no = events.len() + 1;
        let expected = events.len() as u64 + 1;
        let damaged = |reason: String| LogError::Damaged {
            path: path.to_path_buf(),
            line: line_no,
            reason,
        };
        let line = &bytes[start..end];
        let event = check_line(line, expected).map_err(damaged)?;
        match serde_json::from_slice::<ChainOf>(line)
            .ok()
            .and_then(|c| c.chain)
        {
            Some(stated) => {
                if stated != chain_of(chain.as_deref().unwrap_or_default(), &event) {
                    return Err(damaged(
                        "it was changed after it was written (its chain hash does not match)"
                            .into(),
                    ));
                }
                chain = Some(stated);
            }
            None if chain.is_some() => {
                return Err(damaged(
                    "it has no chain hash, after lines that have one".into(),
                ));
            }
            None => {}
        }
        events.push(event);
        start = end + 1;
    }
    Ok((events, start, chain))
}

/// Checks one complete line (without its `\n`) as the event with seq `expected`.
fn check_line(line: &[u8], expected: u64) -> Result<Event, String> {
    if line.is_empty() {
        return Err("empty line".into());
    }
    if let Err(e) = std::str::from_utf8(line) {
        return Err(format!("not UTF-8: {e}"));
    }
    let event: Event = serde_json::from_slice(line).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => format!("not an event: {e}"),
        _ => format!("not JSON: {e}"),
    })?;
    if event.seq != expected {
        return Err(format!("expected seq {expected}, found {}", event.seq));
    }
    if event.event.is_empty() {
        return Err("the event kind is empty".into());
    }
    if !event.data.is_object() {
        return Err("`data` is not a JSON object".into());
    }
    Ok(event)
}

/// Takes the exclusive lock on the open log `file`, waiting at most `wait` for its holder
/// (polling, with pauses growing to 50 ms); [`LogError::Busy`] when it is still held.
fn lock_within(file: &File, path: &Path, wait: std::time::Duration) -> Result<(), LogError> {
    let deadline = std::time::Instant::now() + wait;
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match lock(file, path) {
            Err(LogError::Locked { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(pause.min(deadline - std::time::Instant::now()));
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            Err(LogError::Locked { .. }) => {
                return Err(LogError::Busy {
                    path: path.to_path_buf(),
                    waited: wait,
                });
            }
            other => return other,
        }
    }
}

/// Takes the exclusive lock on the open log `file`, without waiting.
fn lock(file: &File, path: &Path) -> Result<(), LogError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(LogError::Locked {
            session: path.parent().unwrap_or(path).to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(LogError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Why the event log could not be created, resumed, read or appended to.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// Reading, writing or syncing the log (or its directory) failed.
    #[error("cannot read or write the session log `{}`: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// [`EventLog::create`] found a log already in the directory.
    #[error(
        "a session log already exists at `{}`; resume it with --resume or choose another --session directory",
        path.display()
    )]
    Exists {
        /// The existing log file.
        path: PathBuf,
    },
    /// Another open log — another lwirc process — owns the session.
    #[error(
        "the session `{}` is in use: another lwirc process owns it (its event log is locked); \
         nothing was read or written. Wait for that process to finish, or choose another \
         --session directory",
        session.display()
    )]
    Locked {
        /// The session directory.
        session: PathBuf,
    },
    /// The log file does not end where this log's last append left it: something else wrote
    /// to it (or cut it).
    #[error(
        "the session log `{}` changed on disk while this process owned it ({found} bytes, \
         {expected} expected); nothing more is appended to it",
        path.display()
    )]
    Changed {
        /// The log file.
        path: PathBuf,
        /// Its length after the last append of this log.
        expected: u64,
        /// Its length now.
        found: u64,
    },
    /// There is no log to resume or read.
    #[error("no session log at `{}`: nothing to resume", path.display())]
    Missing {
        /// Where the log was expected.
        path: PathBuf,
    },
    /// A complete line of the log is not the valid next event.
    #[error(
        "the session log `{}` is damaged at line {line}: {reason}; it was not changed",
        path.display()
    )]
    Damaged {
        /// The log file.
        path: PathBuf,
        /// The damaged line, 1-based.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The caller asked to append something that is not a valid event.
    #[error("invalid event: {reason}")]
    Invalid {
        /// What is wrong with it.
        reason: String,
    },
    /// [`append_shared`] waited its time for another writer's lock, in vain.
    #[error(
        "the log `{}` stayed locked by another writer for {} s; nothing was written",
        path.display(),
        waited.as_secs_f64()
    )]
    Busy {
        /// The log file.
        path: PathBuf,
        /// How long it waited.
        waited: std::time::Duration,
    },
    /// [`append_shared`] was told which event should be the last, and another is.
    #[error(
        "the log `{}` moved on: its last event is {found}, not {expected}; nothing was written",
        path.display()
    )]
    Conflict {
        /// The log file.
        path: PathBuf,
        /// The seq the caller expected last (0: an empty log).
        expected: u64,
        /// The seq that is last.
        found: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `EventLog::resume`, retried for a while when locked: another test's child process,
    /// forked but not yet exec'd, briefly shares the lock of a log this test just closed.
    fn resume_when_free(dir: &Path) -> Result<(EventLog, Vec<Event>), LogError> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match EventLog::resume(dir) {
                Err(LogError::Locked { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                other => return other,
            }
        }
    }

    fn append_raw(path: &Path, bytes: &[u8]) {
        let mut f = OpenOptions::new().append(true).open(path).unwrap();
        f.write_all(bytes).unwrap();
    }

    fn line(seq: u64, data: &str) -> String {
        format!(
            r#"{{"seq":{seq},"time":"2026-11-30T00:10:01.123Z","event":"test.ev","data":{data}}}"#
        )
    }

    fn is_millis_stamp(s: &str) -> bool {
        let b = s.as_bytes();
        b.len() == 24
            && b.iter().enumerate().all(|(i, &c)| match i {
                4 | 7 => c == b'-',
                10 => c == b'T',
                13 | 16 => c == b':',
                19 => c == b'.',
                23 => c == b'Z',
                _ => c.is_ascii_digit(),
            })
    }

    #[test]
    fn create_append_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("a/b/session");
        let mut log = EventLog::create(&session).unwrap();
        assert_eq!(log.path(), session.join(LOG_FILE));
        let written = [
            log.append("harness.session.started", json!({"goal": "x"}))
                .unwrap(),
            log.append(
                "harness.model.called",
                json!({"n": 1, "nested": {"a": [1, 2]}}),
            )
            .unwrap(),
            log.append("harness.session.ended", json!({})).unwrap(),
        ];
        let events = read(log.path()).unwrap();
        assert_eq!(events, written);
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(
            events.iter().all(|e| is_millis_stamp(&e.time)),
            "{events:?}"
        );
        assert_eq!(events[1].data, json!({"n": 1, "nested": {"a": [1, 2]}}));
        assert_eq!(events[0].event, "harness.session.started");

        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(text.matches('\n').count(), 3);
        assert!(text.ends_with('\n'));
        let first = text.lines().next().unwrap();
        assert!(
            first.starts_with(r#"{"seq":1,"time":""#)
                && first.contains(r#","event":"harness.session.started","data":{"goal":"x"}}"#),
            "{first}"
        );
    }

    /// An event nested past what the reader accepts is refused before it is written,
    /// instead of leaving a log that cannot be resumed.
    #[test]
    fn an_event_that_would_not_read_back_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::create(dir.path()).unwrap();
        log.append("a", json!({})).unwrap();
        let mut deep = json!(1);
        for _ in 0..200 {
            deep = json!([deep]);
        }
        let e = log.append("deep", json!({ "value": deep })).unwrap_err();
        assert!(e.to_string().contains("would not read back"), "{e}");
        log.append("b", json!({})).unwrap();
        let events = read(log.path()).unwrap();
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
    }

    /// A chained log: a batch is one write and one sync, every line carries its chain,
    /// resume continues the chain, and a line changed after it was written is found.
    #[test]
    fn chained_batches_resume_and_find_edits() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::create_chained(dir.path()).unwrap();
        let batch = log
            .append_batch(vec![
                ("a".into(), json!({"i": 1})),
                ("b".into(), json!({"i": 2})),
            ])
            .unwrap();
        assert_eq!(batch.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
        assert!(log.append_batch(Vec::new()).unwrap().is_empty());
        let path = log.path().to_path_buf();
        drop(log);
        let (log, events) = resume_when_free(dir.path()).unwrap();
        assert_eq!(events.len(), 2);
        drop(log);
        let (mut log, _) = EventLog::resume_chained(dir.path()).unwrap();
        log.append("c", json!({"i": 3})).unwrap();
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("\"chain\":").count(), 3);
        assert_eq!(read_chained(&path).unwrap().len(), 3);
        // An invalid event refuses the whole batch.
        let (mut log, _) = EventLog::resume_chained(dir.path()).unwrap();
        let err = log
            .append_batch(vec![("d".into(), json!({})), ("".into(), json!({}))])
            .unwrap_err();
        assert!(matches!(err, LogError::Invalid { .. }), "{err:?}");
        drop(log);
        assert_eq!(read_chained(&path).unwrap().len(), 3);
        // An edit is found by the chain.
        std::fs::write(&path, text.replace("\"i\":2", "\"i\":7")).unwrap();
        let err = read_chained(&path).unwrap_err();
        assert!(err.to_string().contains("chain hash"), "{err}");
        // An unchained log is not a chained one.
        let plain = tempfile::tempdir().unwrap();
        let mut log = EventLog::create(plain.path()).unwrap();
        log.append("a", json!({})).unwrap();
        let plain_path = log.path().to_path_buf();
        drop(log);
        assert!(read_chained(&plain_path).is_err());
        assert!(EventLog::resume_chained(plain.path()).is_err());
    }

    #[test]
    fn create_twice_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::create(dir.path()).unwrap();
        log.append("a", json!({})).unwrap();
        let path = log.path().to_path_buf();
        drop(log);
        let err = EventLog::create(dir.path()).unwrap_err();
        assert!(matches!(err, LogError::Exists { .. }), "{err:?}");
        assert!(err.to_string().contains("--resume"));
        assert_eq!(read(&path).unwrap().len(), 1);
    }

    #[test]
    fn resume_without_log_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let err = EventLog::resume(&dir.path().join("nope")).unwrap_err();
        assert!(matches!(err, LogError::Missing { .. }), "{err:?}");
        let err = EventLog::resume(dir.path()).unwrap_err();
        assert!(matches!(err, LogError::Missing { .. }), "{err:?}");
        let err = read(&dir.path().join(LOG_FILE)).unwrap_err();
        assert!(matches!(err, LogError::Missing { .. }), "{err:?}");
    }

    #[test]
    fn empty_log_resumes_at_seq_one() {
        let dir = tempfile::tempdir().unwrap();
        drop(EventLog::create(dir.path()).unwrap());
        let (mut log, events) = resume_when_free(dir.path()).unwrap();
        assert!(events.is_empty());
        assert_eq!(log.append("a", json!({})).unwrap().seq, 1);
    }

    #[test]
    fn torn_last_line_is_dropped_and_the_log_continues() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::create(dir.path()).unwrap();
        let e1 = log.append("a", json!({"i": 1})).unwrap();
        let e2 = log.append("b", json!({"i": 2})).unwrap();
        let path = log.path().to_path_buf();
        drop(log);
        let committed = std::fs::read(&path).unwrap();
        append_raw(&path, br#"{"seq":3,"ti"#);

        // `read` leaves the torn line out but does not change the file.
        assert_eq!(read(&path).unwrap(), [e1.clone(), e2.clone()]);
        assert_eq!(std::fs::read(&path).unwrap().len(), committed.len() + 12);

        let (mut log, events) = resume_when_free(dir.path()).unwrap();
        assert_eq!(events, [e1, e2]);
        assert_eq!(std::fs::read(&path).unwrap(), committed);

        let e3 = log.append("c", json!({"i": 3})).unwrap();
        assert_eq!(e3.seq, 3);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches('\n').count(), 3);
        assert!(text.ends_with('\n'));
        let events = read(&path).unwrap();
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(events[2], e3);
    }

    #[test]
    fn torn_line_that_parses_is_still_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::create(dir.path()).unwrap();
        log.append("a", json!({})).unwrap();
        let path = log.path().to_path_buf();
        drop(log);
        let committed = std::fs::read(&path).unwrap();
        append_raw(&path, line(2, "{}").as_bytes());

        assert_eq!(read(&path).unwrap().len(), 1);
        let (mut log, events) = resume_when_free(dir.path()).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(std::fs::read(&path).unwrap(), committed);
        assert_eq!(log.append("b", json!({})).unwrap().seq, 2);
        assert_eq!(read(&path).unwrap().len(), 2);
    }

    /// Writes `content` as the log of a fresh session directory and returns the resume error,
    /// checking that neither `read` nor `resume` changed the file.
    fn damaged(content: &[u8]) -> (usize, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        std::fs::write(&path, content).unwrap();
        let read_err = read(&path).unwrap_err();
        let err = EventLog::resume(dir.path()).unwrap_err();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            content,
            "the file was changed"
        );
        assert_eq!(read_err.to_string(), err.to_string());
        assert!(err.to_string().ends_with("; it was not changed"), "{err}");
        match err {
            LogError::Damaged { line, reason, .. } => (line, reason),
            other => panic!("expected Damaged, got {other:?}"),
        }
    }

    #[test]
    fn garbage_in_the_middle_is_damage_and_nothing_changes() {
        let content = format!("{}\nthis is not json\n{}\n", line(1, "{}"), line(2, "{}"));
        let (line_no, reason) = damaged(content.as_bytes());
        assert_eq!(line_no, 2);
        assert!(reason.starts_with("not JSON"), "{reason}");
        // Damage before a torn tail is still damage; the tail is not truncated either.
        let content = format!("{}\n\n{}", line(1, "{}"), line(2, "{}"));
        assert_eq!(damaged(content.as_bytes()), (2, "empty line".to_string()));
    }

    #[test]
    fn seq_gap_is_damage() {
        let content = format!(
            "{}\n{}\n{}\n{}\n",
            line(1, "{}"),
            line(2, "{}"),
            line(3, "{}"),
            line(6, "{}")
        );
        let (line_no, reason) = damaged(content.as_bytes());
        assert_eq!(line_no, 4);
        assert_eq!(reason, "expected seq 4, found 6");
        let (line_no, reason) = damaged(format!("{}\n", line(0, "{}")).as_bytes());
        assert_eq!((line_no, reason.as_str()), (1, "expected seq 1, found 0"));
    }

    #[test]
    fn non_object_data_and_other_bad_events_are_damage() {
        let content = format!("{}\n{}\n", line(1, "{}"), line(2, "[1,2]"));
        let (line_no, reason) = damaged(content.as_bytes());
        assert_eq!(line_no, 2);
        assert!(reason.contains("not a JSON object"), "{reason}");

        let (_, reason) = damaged(b"{\"seq\":1,\"time\":\"t\",\"event\":\"\",\"data\":{}}\n");
        assert!(reason.contains("empty"), "{reason}");
        let (_, reason) = damaged(b"{\"seq\":1,\"event\":\"a\",\"data\":{}}\n");
        assert!(reason.starts_with("not an event"), "{reason}");
        let mut bad_utf8 = line(1, r#"{"s":"x"}"#).into_bytes();
        let at = bad_utf8.len() - 4;
        bad_utf8[at] = 0xff;
        bad_utf8.push(b'\n');
        let (line_no, reason) = damaged(&bad_utf8);
        assert_eq!(line_no, 1);
        assert!(reason.starts_with("not UTF-8"), "{reason}");
    }

    #[test]
    fn append_refuses_invalid_events_without_writing() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::create(dir.path()).unwrap();
        for data in [json!([1]), json!("s"), json!(null), json!(3)] {
            let err = log.append("a", data).unwrap_err();
            assert!(matches!(err, LogError::Invalid { .. }), "{err:?}");
        }
        let err = log.append("", json!({})).unwrap_err();
        assert!(matches!(err, LogError::Invalid { .. }), "{err:?}");
        assert_eq!(std::fs::read(log.path()).unwrap(), b"");
        assert_eq!(log.append("a", json!({})).unwrap().seq, 1);
    }

    #[test]
    fn a_session_is_owned_by_one_open_log_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let mut owner = EventLog::create(dir.path()).unwrap();
        owner.append("a", json!({})).unwrap();
        let path = owner.path().to_path_buf();
        // A torn line the owner is in the middle of writing must survive the refusal.
        append_raw(&path, br#"{"seq":2,"#);
        let before = std::fs::read(&path).unwrap();

        let err = EventLog::resume(dir.path()).unwrap_err();
        assert!(matches!(err, LogError::Locked { .. }), "{err:?}");
        let message = err.to_string();
        assert!(
            message.contains("another lwirc process owns it"),
            "{message}"
        );
        assert!(
            message.contains(&dir.path().display().to_string()),
            "{message}"
        );
        let err = EventLog::create(dir.path()).unwrap_err();
        assert!(matches!(err, LogError::Locked { .. }), "{err:?}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "the log was changed");

        // Once the owner is gone, the session can be resumed.
        drop(owner);
        let (mut log, events) = resume_when_free(dir.path()).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(log.append("b", json!({})).unwrap().seq, 2);
        let err = EventLog::create(dir.path()).unwrap_err();
        assert!(matches!(err, LogError::Locked { .. }), "{err:?}");
        drop(log);
        let err = EventLog::create(dir.path()).unwrap_err();
        assert!(matches!(err, LogError::Exists { .. }), "{err:?}");
    }

    #[test]
    fn a_log_changed_by_another_writer_is_not_appended_to() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::create(dir.path()).unwrap();
        log.append("a", json!({})).unwrap();
        // A writer that ignores the lock appends seq 2 behind this log's back.
        append_raw(log.path(), format!("{}\n", line(2, "{}")).as_bytes());
        let before = std::fs::read(log.path()).unwrap();
        let err = log.append("b", json!({})).unwrap_err();
        assert!(matches!(err, LogError::Changed { .. }), "{err:?}");
        assert!(err.to_string().contains("changed on disk"), "{err}");
        assert!(log.append("c", json!({})).is_err());
        assert_eq!(std::fs::read(log.path()).unwrap(), before);
        let seqs: Vec<u64> = read(log.path()).unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2]);
    }
}
