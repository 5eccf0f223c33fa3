//! [`Store`] on PostgreSQL (`--goals postgres://USER@HOST:PORT/DATABASE`): goals shared by
//! every machine of a team, with the guarantees of the directory store.
//!
//! - **Events** are rows keyed by `(goal, seq)`. An append reads the last row and inserts
//!   the next in one transaction, only when the last seq is the one its writer read; two
//!   writers that read the same state race for the same key, and the loser is told
//!   ([`StoreError::Conflict`]) and decides again — so concurrent `goal report`, `goal run`
//!   and `goal serve` on many machines serialize, and seqs have neither gaps nor
//!   duplicates. Each row keeps the event's JSON line exactly as written and a hash chained
//!   over every line before it: a row changed behind lwirc's back is found by every read.
//! - **The frozen goal file** is stored once per goal; every read re-hashes it against the
//!   digest its creation recorded (as for the directory).
//! - **Locks** are session-level advisory locks (`pg_try_advisory_lock`): the run lock of a
//!   goal (one driver at a time, so that no item is dispatched twice at once and no two
//!   replans of one goal run), all of one process's in one session of their own (however
//!   many goals a `goal serve` drives, one connection), and the lock of a running plan's
//!   log, in a connection of its own. They are advisory locks rather than row locks because they must outlive any
//!   one transaction (a run lasts hours), cost no row, and are released by the server the
//!   moment the process holding them dies and its connection drops — a crashed driver
//!   never leaves a lock to clean up.
//!
//! - **Waits** are bounded (`conn`): the handshake by `connect_timeout` (10 s unless the
//!   URL says), each statement by `statement_timeout` (30 s unless the URL says), set on the
//!   server and kept by lwirc too, so that a server stopped mid-run fails the statement in
//!   flight rather than blocking the process.
//!
//! - **The fold** is not checkpointed in a table: a driver (`goal run`, `goal serve`) keeps
//!   its goal's fold in memory and reads only the rows after the last it folded
//!   ([`Store::events_since`]: `seq >=` the last one, whose chain hash must be the one it
//!   read), so that each record costs its own rows, not the log's; a one-off command reads
//!   the whole log, as before.
//!
//! The schema is created and migrated by lwirc itself (table `lwir_schema` records which
//! migrations ran; concurrent first runs serialize on an advisory lock).

mod conn;

use std::sync::Mutex;
use std::time::Duration;

use conn::{Conn, Failure, Limits, NotConnected};
use lwir_repair::events::{Event, chain_of_line as chain};
use sha2::{Digest as _, Sha256};

use crate::events::{GoalEvent, PlanEvent};
use crate::store::{PlanLog, Position, RunGuard, Since, Store, StoreError};

/// The migrations, in order; each runs once, in a transaction.
const MIGRATIONS: &[&str] = &[
    // 1: goals, their logs, plans' logs and files.
    "CREATE TABLE lwir_goals (
        goal text PRIMARY KEY,
        file bytea NOT NULL,
        frozen_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE lwir_goal_events (
        goal text NOT NULL,
        seq bigint NOT NULL CHECK (seq >= 1),
        line text NOT NULL,
        chain text NOT NULL,
        PRIMARY KEY (goal, seq)
    );
    CREATE TABLE lwir_plans (
        goal text NOT NULL,
        plan text NOT NULL,
        PRIMARY KEY (goal, plan)
    );
    CREATE TABLE lwir_plan_events (
        goal text NOT NULL,
        plan text NOT NULL,
        seq bigint NOT NULL CHECK (seq >= 1),
        line text NOT NULL,
        chain text NOT NULL,
        PRIMARY KEY (goal, plan, seq)
    );
    CREATE TABLE lwir_plan_files (
        goal text NOT NULL,
        plan text NOT NULL,
        name text NOT NULL,
        bytes bytea NOT NULL,
        PRIMARY KEY (goal, plan, name)
    );",
];

/// The advisory lock key migrations take.
const MIGRATION_LOCK: i64 = 0x6c77_6972_6d69_6772; // "lwirmigr"

/// Goals in a PostgreSQL database.
pub struct Postgres {
    url: String,
    client: Mutex<Conn>,
    /// The session that holds this process's run locks, shared by the guards.
    runs: std::sync::Arc<Mutex<RunLocks>>,
}

/// One session for every run lock a process holds: a session can hold many advisory locks,
/// and a connection of its own per driven goal ran the server out of connections (two
/// `goal serve`s of 100 goals each exceed PostgreSQL's default 100). Advisory locks are
/// re-entrant within a session, so the keys this process holds are kept too: a second
/// driver of the same goal in this process is refused as one in another process is.
#[derive(Default)]
struct RunLocks {
    session: Option<Conn>,
    held: std::collections::BTreeSet<i64>,
}

/// A run lock held in the shared session: released there when dropped.
struct RunLock {
    runs: std::sync::Arc<Mutex<RunLocks>>,
    key: i64,
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let mut runs = self
            .runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        runs.held.remove(&self.key);
        if let Some(session) = &runs.session {
            // A failure leaves the lock to the session's end (the server releases every
            // lock of a session that ends).
            if session
                .execute("SELECT pg_advisory_unlock($1)", &[&self.key])
                .is_err()
            {
                runs.session = None;
            }
        }
    }
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("url", &shown(&self.url))
            .finish()
    }
}

/// `url` for messages: redacted of its password, in the user part or as `password=`.
fn shown(url: &str) -> String {
    lwir_spec::redact::redact(url).into_owned()
}

/// Whether `text` names a PostgreSQL database (`postgres://` or `postgresql://`).
pub fn is_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

fn failed(location: &str, e: &Failure) -> StoreError {
    StoreError::Io {
        location: location.to_owned(),
        // The server's reason may quote what it was sent.
        detail: lwir_spec::redact::redact(&e.to_string()).into_owned(),
    }
}

fn key(kind: &str, parts: &[&str]) -> i64 {
    let mut hash = Sha256::new();
    hash.update(kind.as_bytes());
    for part in parts {
        hash.update([0]);
        hash.update(part.as_bytes());
    }
    let bytes = hash.finalize();
    i64::from_be_bytes(bytes[..8].try_into().expect("a SHA-256 has 8 bytes"))
}

fn line_of(event: &Event) -> Result<String, StoreError> {
    if event.event.is_empty() || !event.data.is_object() {
        return Err(StoreError::Io {
            location: "the goal store".into(),
            detail: format!(
                "event `{}` is not an event (an empty kind, or data that is not an object)",
                event.event
            ),
        });
    }
    serde_json::to_string(event).map_err(|e| StoreError::Io {
        location: "the goal store".into(),
        detail: format!("event `{}` cannot be serialised: {e}", event.event),
    })
}

/// Reads rows `(seq, line, chain)` back into events, checking that seqs run 1, 2, 3, …
/// and that every chain hash is the hash of its line after the one before.
fn events_of(rows: &[tokio_postgres::Row], location: &str) -> Result<Vec<Event>, StoreError> {
    let mut previous = String::new();
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let seq: i64 = row.get(0);
        let line: String = row.get(1);
        let stored: String = row.get(2);
        let damaged = |detail: String| StoreError::Damaged {
            location: location.to_owned(),
            detail,
        };
        if seq != i as i64 + 1 {
            return Err(damaged(format!(
                "event {} is missing (the next is {seq})",
                i + 1
            )));
        }
        let expected = chain(&previous, &line);
        if expected != stored {
            return Err(damaged(format!(
                "event {seq} was changed after it was written"
            )));
        }
        let event: Event = serde_json::from_str(&line)
            .map_err(|e| damaged(format!("event {seq} does not read: {e}")))?;
        if event.seq != seq as u64 {
            return Err(damaged(format!(
                "the row of event {seq} holds event {}",
                event.seq
            )));
        }
        previous = stored;
        out.push(event);
    }
    Ok(out)
}

/// Reads rows `(seq, line, chain)` from the row of `after` on back into the events after
/// it and the position at the last row, checking each chain hash as [`events_of`] does;
/// `None` when the rows do not continue `after` (the whole read says why).
fn since_of(rows: &[tokio_postgres::Row], after: &Position) -> Option<(Vec<Event>, Position)> {
    let mut position = after.clone();
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let seq: i64 = row.get(0);
        let line: String = row.get(1);
        let stored: String = row.get(2);
        if i == 0 && after.seq > 0 {
            // The row `after` names, unchanged.
            if seq as u64 != after.seq
                || stored != after.chain
                || chain(&after.previous, &line) != stored
            {
                return None;
            }
            continue;
        }
        if seq as u64 != position.seq + 1 || chain(&position.chain, &line) != stored {
            return None;
        }
        let event: Event = serde_json::from_str(&line).ok()?;
        if event.seq != seq as u64 {
            return None;
        }
        position = Position {
            seq: event.seq,
            previous: std::mem::replace(&mut position.chain, stored.clone()),
            chain: stored,
            start: 0,
            end: 0,
        };
        out.push(event);
    }
    if after.seq > 0 && rows.is_empty() {
        return None;
    }
    Some((out, position))
}

impl Postgres {
    /// Connects to `url` and brings the schema up to date. Besides the driver's
    /// parameters, the URL may say `statement_timeout=SECONDS` (see `open`).
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let mut client = open(url)?;
        migrate(&mut client).map_err(|e| failed(&shown(url), &e))?;
        Ok(Self {
            url: url.to_owned(),
            client: Mutex::new(client),
            runs: std::sync::Arc::default(),
        })
    }

    /// Another connection, for a lock held as long as it is.
    fn connect_again(&self) -> Result<Conn, StoreError> {
        open(&self.url)
    }

    /// The connection, for this thread alone.
    fn client(&self) -> Result<std::sync::MutexGuard<'_, Conn>, StoreError> {
        self.client.lock().map_err(|_| StoreError::Io {
            location: shown(&self.url),
            detail: "the connection was poisoned by a failed thread".into(),
        })
    }

    fn with<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T, Failure>) -> Result<T, StoreError> {
        f(&mut *self.client()?).map_err(|e| failed(&shown(&self.url), &e))
    }

    fn location_of(&self, goal: &str) -> String {
        format!("goal `{goal}` in {}", shown(&self.url))
    }

    /// Inserts `record` as the next event of `goal` if the last is `expected`; the
    /// conflict says what is last.
    fn insert_event(
        &self,
        goal: &str,
        record: impl FnOnce(u64) -> Event,
        expected: u64,
    ) -> Result<Event, StoreError> {
        let mut guard = self.client()?;
        let location = self.location_of(goal);
        let tx = guard.transaction().map_err(|e| failed(&location, &e))?;
        let last = tx
            .query_opt(
                "SELECT seq, chain FROM lwir_goal_events WHERE goal = $1 ORDER BY seq DESC LIMIT 1",
                &[&goal],
            )
            .map_err(|e| failed(&location, &e))?;
        let (found, previous) = match &last {
            Some(row) => (row.get::<_, i64>(0) as u64, row.get::<_, String>(1)),
            None => (0, String::new()),
        };
        if found != expected {
            return Err(StoreError::Conflict { expected, found });
        }
        let event = record(found + 1);
        let line = line_of(&event)?;
        let chained = chain(&previous, &line);
        let inserted = tx.execute(
            "INSERT INTO lwir_goal_events (goal, seq, line, chain) VALUES ($1, $2, $3, $4)",
            &[&goal, &(event.seq as i64), &line, &chained],
        );
        match inserted {
            Ok(_) => {}
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {
                // Another writer appended the same seq first.
                return Err(StoreError::Conflict {
                    expected,
                    found: expected + 1,
                });
            }
            Err(e) => return Err(failed(&location, &e)),
        }
        match tx.commit() {
            Ok(()) => Ok(event),
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {
                Err(StoreError::Conflict {
                    expected,
                    found: expected + 1,
                })
            }
            Err(e) => Err(failed(&location, &e)),
        }
    }
}

/// How long making a connection may take, unless the URL says (`connect_timeout`): a
/// database that does not answer is an error, not a wait for ever.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one statement may take, unless the URL says (`statement_timeout`).
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// The most seconds `statement_timeout` may say (a day).
const MAX_STATEMENT_SECONDS: u64 = 86_400;

/// A connection to `url`, made within [`CONNECT_TIMEOUT`] (or the URL's
/// `connect_timeout`), each statement bounded by [`STATEMENT_TIMEOUT`] (or the URL's
/// `statement_timeout`, whole seconds from 1 to 86400 — lwirc's own parameter, taken out
/// of the URL before the driver reads it). A password the URL gives is registered with
/// [`lwir_spec::redact`], so that nothing lwirc prints or stores carries it.
fn open(url: &str) -> Result<Conn, StoreError> {
    let cannot = |detail: String| StoreError::Io {
        location: shown(url),
        detail: format!("cannot connect: {}", lwir_spec::redact::redact(&detail)),
    };
    let (url_for_driver, statement) = statement_timeout(url).map_err(cannot)?;
    let mut config: tokio_postgres::Config = url_for_driver
        .parse()
        .map_err(|e: tokio_postgres::Error| cannot(format!("{}", Failure::Db(e))))?;
    if let Some(password) = config.get_password() {
        lwir_spec::redact::register(&String::from_utf8_lossy(password));
    }
    let connect = config
        .get_connect_timeout()
        .copied()
        .unwrap_or(CONNECT_TIMEOUT);
    config.connect_timeout(connect);
    let limits = Limits { connect, statement };
    Conn::open(&config, limits).map_err(|e| match e {
        NotConnected::Failed(detail) => cannot(detail),
        NotConnected::Silent(limit) => cannot(format!(
            "the server did not complete the handshake within {} s (connect_timeout in the URL)",
            limit.as_secs_f64()
        )),
    })
}

/// `url` without its `statement_timeout` parameter, and the timeout it gives (else
/// [`STATEMENT_TIMEOUT`]).
fn statement_timeout(url: &str) -> Result<(String, Duration), String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), STATEMENT_TIMEOUT));
    };
    let mut timeout = STATEMENT_TIMEOUT;
    let mut kept = Vec::new();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("statement_timeout", value)) => {
                timeout = match value.parse::<u64>() {
                    Ok(seconds) if (1..=MAX_STATEMENT_SECONDS).contains(&seconds) => {
                        Duration::from_secs(seconds)
                    }
                    _ => {
                        return Err(format!(
                            "statement_timeout is `{value}`: expected a whole number of seconds \
                             from 1 to {MAX_STATEMENT_SECONDS}"
                        ));
                    }
                };
            }
            _ => kept.push(pair),
        }
    }
    if kept.is_empty() {
        Ok((base.to_owned(), timeout))
    } else {
        Ok((format!("{base}?{}", kept.join("&")), timeout))
    }
}

fn migrate(client: &mut Conn) -> Result<(), Failure> {
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])?;
    let result = (|| {
        client.batch_execute(
            "CREATE TABLE IF NOT EXISTS lwir_schema (version integer PRIMARY KEY)",
        )?;
        let applied: i32 = client
            .query_one("SELECT coalesce(max(version), 0) FROM lwir_schema", &[])?
            .get(0);
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(applied as usize) {
            let tx = client.transaction()?;
            tx.batch_execute(sql)?;
            tx.execute(
                "INSERT INTO lwir_schema (version) VALUES ($1)",
                &[&(i as i32 + 1)],
            )?;
            tx.commit()?;
        }
        Ok(())
    })();
    client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])?;
    result
}

fn now() -> String {
    lwir_spec::time::rfc3339_millis(std::time::SystemTime::now())
}

impl Store for Postgres {
    fn location(&self) -> String {
        shown(&self.url)
    }

    fn freeze(&self, goal: &str, bytes: &[u8]) -> Result<bool, StoreError> {
        let location = self.location_of(goal);
        self.with(|c| {
            let inserted = c.execute(
                "INSERT INTO lwir_goals (goal, file) VALUES ($1, $2) ON CONFLICT (goal) DO NOTHING",
                &[&goal, &bytes],
            )?;
            if inserted == 1 {
                return Ok(Ok(true));
            }
            let existing: Vec<u8> = c
                .query_one("SELECT file FROM lwir_goals WHERE goal = $1", &[&goal])?
                .get(0);
            Ok(if existing == bytes {
                Ok(false)
            } else {
                Err(StoreError::Damaged {
                    location,
                    detail: "it holds another goal file than the one its id names".into(),
                })
            })
        })?
    }

    fn frozen(&self, goal: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.with(|c| {
            Ok(
                c.query_opt("SELECT file FROM lwir_goals WHERE goal = $1", &[&goal])?
                    .map(|r| r.get(0)),
            )
        })
    }

    fn goals(&self) -> Result<Vec<String>, StoreError> {
        self.with(|c| {
            // Only ids a goal can have (as in a directory): a row written behind lwirc's
            // back with another name is not a goal, and its name is never printed.
            Ok(c.query("SELECT goal FROM lwir_goals ORDER BY goal", &[])?
                .iter()
                .map(|r| r.get::<_, String>(0))
                .filter(|goal| crate::store::safe(goal))
                .collect())
        })
    }

    fn events(&self, goal: &str) -> Result<Vec<Event>, StoreError> {
        let rows = self.with(|c| {
            c.query(
                "SELECT seq, line, chain FROM lwir_goal_events WHERE goal = $1 ORDER BY seq",
                &[&goal],
            )
        })?;
        events_of(&rows, &self.location_of(goal))
    }

    fn events_since(
        &self,
        goal: &str,
        after: Option<&Position>,
    ) -> Result<Option<Since>, StoreError> {
        let origin = Position::origin();
        let from = after.unwrap_or(&origin);
        let rows = self.with(|c| {
            c.query(
                "SELECT seq, line, chain FROM lwir_goal_events WHERE goal = $1 AND seq >= $2 ORDER BY seq",
                &[&goal, &(from.seq.max(1) as i64)],
            )
        })?;
        match since_of(&rows, from) {
            Some((events, position)) => Ok(Some((events, Some(position)))),
            None if after.is_none() => Ok(Some((self.events(goal)?, None))),
            None => Ok(None),
        }
    }

    fn append(
        &self,
        goal: &str,
        event: &GoalEvent,
        expected_last: u64,
    ) -> Result<Event, StoreError> {
        self.insert_event(
            goal,
            |seq| Event {
                seq,
                time: now(),
                event: event.name().to_owned(),
                data: event.data(),
            },
            expected_last,
        )
    }

    fn open_plan(&self, goal: &str, plan: &str) -> Result<Box<dyn PlanLog>, StoreError> {
        let client = self.connect_again()?;
        let location = format!("plan `{plan}` of {}", self.location_of(goal));
        let held: bool = client
            .query_one(
                "SELECT pg_try_advisory_lock($1)",
                &[&key("plan", &[goal, plan])],
            )
            .map_err(|e| failed(&location, &e))?
            .get(0);
        if !held {
            return Err(StoreError::Busy {
                what: format!("the log of plan `{plan}` of goal `{goal}`"),
            });
        }
        client
            .execute(
                "INSERT INTO lwir_plans (goal, plan) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&goal, &plan],
            )
            .map_err(|e| failed(&location, &e))?;
        // Left by a replan that died before it was recorded: taken over, after its events.
        let rows = client
            .query(
                "SELECT seq, line, chain FROM lwir_plan_events WHERE goal = $1 AND plan = $2 ORDER BY seq",
                &[&goal, &plan],
            )
            .map_err(|e| failed(&location, &e))?;
        let events = events_of(&rows, &location)?;
        let previous = rows
            .last()
            .map(|r| r.get::<_, String>(2))
            .unwrap_or_default();
        Ok(Box::new(PgPlan {
            client,
            goal: goal.to_owned(),
            plan: plan.to_owned(),
            next: events.len() as u64 + 1,
            previous,
            location,
        }))
    }

    fn plan_in_progress(&self, goal: &str, plan: &str) -> Result<bool, StoreError> {
        let k = key("plan", &[goal, plan]);
        self.with(|c| {
            let free: bool = c
                .query_one("SELECT pg_try_advisory_lock($1)", &[&k])?
                .get(0);
            if free {
                c.execute("SELECT pg_advisory_unlock($1)", &[&k])?;
            }
            Ok(!free)
        })
    }

    fn plan_file(&self, goal: &str, plan: &str, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.with(|c| {
            Ok(c.query_opt(
                "SELECT bytes FROM lwir_plan_files WHERE goal = $1 AND plan = $2 AND name = $3",
                &[&goal, &plan, &name],
            )?
            .map(|r| r.get(0)))
        })
    }

    fn lock_run(&self, goal: &str) -> Result<RunGuard, StoreError> {
        let busy = || StoreError::Busy {
            what: format!("goal `{goal}` (another `lwirc goal run` or `goal serve` drives it)"),
        };
        let key = key("run", &[goal]);
        let mut runs = self.runs.lock().map_err(|_| StoreError::Io {
            location: shown(&self.url),
            detail: "the run locks were poisoned by a failed thread".into(),
        })?;
        if runs.held.contains(&key) {
            return Err(busy());
        }
        if runs.session.is_none() {
            runs.session = Some(self.connect_again()?);
        }
        let Some(session) = &runs.session else {
            return Err(busy());
        };
        let held: bool = match session.query_one("SELECT pg_try_advisory_lock($1)", &[&key]) {
            Ok(row) => row.get(0),
            Err(e) => {
                // A session that failed holds nothing any more (the server let its locks
                // go): the next lock opens another.
                runs.session = None;
                return Err(failed(&self.location_of(goal), &e));
            }
        };
        if !held {
            return Err(busy());
        }
        runs.held.insert(key);
        // Held for as long as the guard is, or the session: the server lets go when the
        // process dies.
        Ok(RunGuard::new(Box::new(RunLock {
            runs: std::sync::Arc::clone(&self.runs),
            key,
        })))
    }

    fn import(&self, goal: &str, event: &Event) -> Result<(), StoreError> {
        // Inserted only when the last seq is the one before it: it keeps its own.
        let record = event.clone();
        self.insert_event(goal, move |_| record, event.seq.saturating_sub(1))
            .map(drop)
    }

    fn plans(&self, goal: &str) -> Result<Vec<String>, StoreError> {
        self.with(|c| {
            Ok(c.query(
                "SELECT plan FROM lwir_plans WHERE goal = $1 ORDER BY plan",
                &[&goal],
            )?
            .iter()
            .map(|r| r.get::<_, String>(0))
            .filter(|plan| crate::store::safe(plan))
            .collect())
        })
    }

    fn plan_events(&self, goal: &str, plan: &str) -> Result<Vec<Event>, StoreError> {
        let rows = self.with(|c| {
            c.query(
                "SELECT seq, line, chain FROM lwir_plan_events WHERE goal = $1 AND plan = $2 ORDER BY seq",
                &[&goal, &plan],
            )
        })?;
        events_of(
            &rows,
            &format!("plan `{plan}` of {}", self.location_of(goal)),
        )
    }

    fn plan_files(&self, goal: &str, plan: &str) -> Result<Vec<String>, StoreError> {
        self.with(|c| {
            Ok(c.query(
                "SELECT name FROM lwir_plan_files WHERE goal = $1 AND plan = $2 ORDER BY name",
                &[&goal, &plan],
            )?
            .iter()
            .map(|r| r.get::<_, String>(0))
            .filter(|name| crate::store::safe(name))
            .collect())
        })
    }

    fn import_plan(
        &self,
        goal: &str,
        plan: &str,
        events: &[Event],
        contents: &[(String, Vec<u8>)],
    ) -> Result<(), StoreError> {
        let location = format!("plan `{plan}` of {}", self.location_of(goal));
        let mut lines = Vec::with_capacity(events.len());
        let mut previous = String::new();
        for event in events {
            let line = line_of(event)?;
            previous = chain(&previous, &line);
            lines.push((event.seq as i64, line, previous.clone()));
        }
        self.with(|c| {
            let tx = c.transaction()?;
            let created = tx.execute(
                "INSERT INTO lwir_plans (goal, plan) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&goal, &plan],
            )?;
            if created == 0 {
                // It has a log here already.
                return Ok(());
            }
            for (seq, line, chained) in &lines {
                tx.execute(
                    "INSERT INTO lwir_plan_events (goal, plan, seq, line, chain) VALUES ($1, $2, $3, $4, $5)",
                    &[&goal, &plan, seq, line, chained],
                )?;
            }
            for (name, bytes) in contents {
                tx.execute(
                    "INSERT INTO lwir_plan_files (goal, plan, name, bytes) VALUES ($1, $2, $3, $4)",
                    &[&goal, &plan, name, bytes],
                )?;
            }
            tx.commit()
        })
        .map_err(|e| match e {
            StoreError::Io { detail, .. } => StoreError::Io { location, detail },
            other => other,
        })
    }
}

/// A plan's log held by its own connection (and its advisory lock).
struct PgPlan {
    client: Conn,
    goal: String,
    plan: String,
    next: u64,
    previous: String,
    location: String,
}

impl PlanLog for PgPlan {
    fn append(&mut self, event: PlanEvent<'_>) -> Result<(), StoreError> {
        let record = Event {
            seq: self.next,
            time: now(),
            event: event.name().to_owned(),
            data: event.data(),
        };
        let line = line_of(&record)?;
        let chained = chain(&self.previous, &line);
        self.client
            .execute(
                "INSERT INTO lwir_plan_events (goal, plan, seq, line, chain) VALUES ($1, $2, $3, $4, $5)",
                &[&self.goal, &self.plan, &(record.seq as i64), &line, &chained],
            )
            .map_err(|e| failed(&self.location, &e))?;
        self.next += 1;
        self.previous = chained;
        Ok(())
    }

    fn put(&mut self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        self.client
            .execute(
                "INSERT INTO lwir_plan_files (goal, plan, name, bytes) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (goal, plan, name) DO UPDATE SET bytes = EXCLUDED.bytes",
                &[&self.goal, &self.plan, &name, &bytes],
            )
            .map_err(|e| failed(&self.location, &e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(
            shown("postgres://lwir:secret@db:5432/goals"),
            "postgres://lwir:<redacted>@db:5432/goals"
        );
        assert_eq!(
            shown("postgres://lwir@db:5432/goals?connect_timeout=3&password=secret"),
            "postgres://lwir@db:5432/goals?connect_timeout=3&password=<redacted>"
        );
        assert_eq!(shown("postgres://db/goals"), "postgres://db/goals");
    }

    #[test]
    fn statement_timeout_is_lwircs_own_parameter() {
        assert_eq!(
            statement_timeout("postgres://u@h/d?connect_timeout=3&statement_timeout=7&x=y"),
            Ok((
                "postgres://u@h/d?connect_timeout=3&x=y".to_owned(),
                Duration::from_secs(7)
            ))
        );
        assert_eq!(
            statement_timeout("postgres://u@h/d?statement_timeout=1"),
            Ok(("postgres://u@h/d".to_owned(), Duration::from_secs(1)))
        );
        assert_eq!(
            statement_timeout("postgres://u@h/d"),
            Ok(("postgres://u@h/d".to_owned(), STATEMENT_TIMEOUT))
        );
        for bad in ["0", "-1", "1.5", "", "86401"] {
            assert!(
                statement_timeout(&format!("postgres://u@h/d?statement_timeout={bad}")).is_err(),
                "{bad}"
            );
        }
    }

    /// A server that completes the handshake and answers the statement timeout's `SET`,
    /// then says nothing more, its connections held open: what lwirc meets when the
    /// database is stopped (SIGSTOP) or the network goes away mid-run.
    fn silent_after_handshake() -> u16 {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let message = |stream: &mut std::net::TcpStream, tagged: bool| {
                        let mut head = vec![0u8; if tagged { 5 } else { 4 }];
                        stream.read_exact(&mut head)?;
                        let len = u32::from_be_bytes(head[head.len() - 4..].try_into().unwrap());
                        let mut rest = vec![0u8; len as usize - 4];
                        stream.read_exact(&mut rest)
                    };
                    // The startup message; AuthenticationOk, ReadyForQuery.
                    if message(&mut stream, false).is_err() {
                        return;
                    }
                    let _ = stream.write_all(b"R\0\0\0\x08\0\0\0\0Z\0\0\0\x05I");
                    // `SET statement_timeout`: CommandComplete, ReadyForQuery.
                    if message(&mut stream, true).is_err() {
                        return;
                    }
                    let _ = stream.write_all(b"C\0\0\0\x08SET\0Z\0\0\0\x05I");
                    let mut sink = [0u8; 4096];
                    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
                });
            }
        });
        port
    }

    #[test]
    fn a_statement_the_server_never_answers_fails_after_its_timeout() {
        let port = silent_after_handshake();
        let url = format!("postgres://lwir@127.0.0.1:{port}/lwir?statement_timeout=1");
        let started = std::time::Instant::now();
        let error = Postgres::connect(&url).unwrap_err().to_string();
        assert!(
            error.contains(&format!(
                "postgres://lwir@127.0.0.1:{port}/lwir?statement_timeout=1"
            )) && error.contains("the server did not answer within 2 s")
                && error.contains("statement_timeout=1 s"),
            "{error}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn chains_depend_on_every_line_before() {
        let a = chain("", "one");
        assert_ne!(chain(&a, "two"), chain(&chain("", "uno"), "two"));
    }
}
