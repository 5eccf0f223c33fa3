//! The writer of a run's log: one thread owns the [`EventLog`] (and so its lock) for as
//! long as the run goes on, and commits in groups.
//!
//! The executor hands it events ([`Writer::append`] returns a ticket at once); the thread
//! takes whatever has queued, writes it with one `write_all` and makes it durable with one
//! `sync_data`, then tells the executor how far the log is durable. A batch is as large as
//! what arrived while the previous one was being synced, so the fsyncs of one scheduling
//! round are shared (group commit), and the executor waits for durability only where it
//! must: before an effect that depends on a recorded result, and before the run's end.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use lwir_repair::events::EventLog;

use super::RunEvent;

/// How many events one batch takes at most (and so how much one `write_all` holds).
const MAX_BATCH: usize = 4096;

/// What the writer has done: the counts a run reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Events written.
    pub events: u64,
    /// `sync_data` calls made (one per batch).
    pub fsyncs: u64,
}

#[derive(Default)]
struct Shared {
    /// Tickets up to this one are durable.
    durable: u64,
    /// Why the log cannot be written any more.
    failed: Option<String>,
    stats: WriterStats,
}

/// The writer thread of one run's log.
pub(crate) struct Writer {
    tx: Option<Sender<RunEvent>>,
    shared: Arc<(Mutex<Shared>, Condvar)>,
    next: u64,
    thread: Option<JoinHandle<EventLog>>,
}

/// Called from the writer thread when durability advanced (the ticket now durable), or
/// when the log failed (`Err` with why).
pub(crate) type Notify = Box<dyn Fn(Result<u64, String>) + Send>;

impl Writer {
    /// Starts the writer thread over `log`, which it owns until [`Writer::finish`].
    pub(crate) fn start(log: EventLog, notify: Option<Notify>) -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        let shared = Arc::new((Mutex::new(Shared::default()), Condvar::new()));
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("lwir-run-log".into())
            .spawn(move || write_loop(log, &rx, &thread_shared, notify.as_deref()))
            .ok();
        let mut writer = Self {
            tx: Some(tx),
            shared,
            next: 0,
            thread,
        };
        if writer.thread.is_none() {
            writer.lock().failed = Some("cannot start the thread that writes the run log".into());
            writer.tx = None;
        }
        writer
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `event`; its ticket, which [`Writer::wait_durable`] takes. Events are written
    /// in the order they were appended.
    pub(crate) fn append(&mut self, event: RunEvent) -> u64 {
        self.next += 1;
        if let Some(tx) = &self.tx
            && tx.send(event).is_err()
        {
            let mut shared = self.lock();
            shared
                .failed
                .get_or_insert_with(|| "the run log's writer stopped".into());
        }
        self.next
    }

    /// Blocks until every event up to `ticket` is durable; why not when the log failed.
    pub(crate) fn wait_durable(&self, ticket: u64) -> Result<(), String> {
        let (lock, ready) = &*self.shared;
        let mut shared = lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(why) = &shared.failed {
                return Err(why.clone());
            }
            if shared.durable >= ticket {
                return Ok(());
            }
            shared = ready.wait(shared).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Writes what is queued, stops the thread and gives the log back (its lock still
    /// held), with what was done; why not when the log failed.
    pub(crate) fn finish(mut self) -> Result<(EventLog, WriterStats), String> {
        let last = self.next;
        let waited = self.wait_durable(last);
        self.tx = None;
        let log = self.thread.take().and_then(|t| t.join().ok());
        waited?;
        let stats = self.lock().stats;
        log.map(|log| (log, stats))
            .ok_or_else(|| "the thread that writes the run log failed".into())
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn write_loop(
    mut log: EventLog,
    rx: &Receiver<RunEvent>,
    shared: &(Mutex<Shared>, Condvar),
    notify: Option<&(dyn Fn(Result<u64, String>) + Send)>,
) -> EventLog {
    let mut written = 0u64;
    while let Ok(first) = rx.recv() {
        let mut batch = vec![(first.name().to_owned(), first.data())];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(event) => batch.push((event.name().to_owned(), event.data())),
                Err(_) => break,
            }
        }
        let n = batch.len() as u64;
        let outcome = log.append_batch(batch).map_err(|e| e.to_string());
        let (lock, ready) = shared;
        let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
        match outcome {
            Ok(_) => {
                written += n;
                state.durable = written;
                state.stats.events += n;
                state.stats.fsyncs += 1;
            }
            Err(why) => {
                state.failed = Some(why);
            }
        }
        let failed = state.failed.clone();
        drop(state);
        ready.notify_all();
        if let Some(notify) = notify {
            notify(match failed {
                Some(why) => Err(why),
                None => Ok(written),
            });
        }
        if lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .failed
            .is_some()
        {
            // Nothing more is written after a failed write: at most the last line is torn.
            break;
        }
    }
    log
}
