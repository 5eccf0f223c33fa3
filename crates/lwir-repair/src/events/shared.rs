//! The shared log: a log that several processes write in turn (a goal's: runners
//! reporting, a replan, a person's decision). Each append takes the log's lock for itself
//! alone, waiting a bounded time ([`SHARED_LOCK_WAIT`]) for the writer before, reads only
//! the last committed line, drops a torn one, and can require that line to be the one its
//! writer decided on; every line carries its chain ([`super::chain_of`]). A log one process
//! owns for its whole life (a compile session's, a plan's) is an [`super::EventLog`].

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;
use std::time::SystemTime;

use super::{ChainOf, Event, LogError, encode, encode_chained, lock};

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
/// is chained, as every line of a shared log is ([`chain_of`](super::chain_of)).
pub fn append_shared_copy(path: &Path, record: &Event) -> Result<Event, LogError> {
    append_shared_as(path, record, true)
}

/// [`append_shared_copy`] for a log an [`EventLog`](super::EventLog) owns (a plan's): the line is written
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
