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
//! - **Locks** are session-level advisory locks (`pg_try_advisory_lock`), each held by a
//!   connection of its own: the run lock of a goal (one driver at a time, so that no item is
//!   dispatched twice at once and no two replans of one goal run) and the lock of a running
//!   plan's log. They are advisory locks rather than row locks because they must outlive any
//!   one transaction (a run lasts hours), cost no row, and are released by the server the
//!   moment the process holding them dies and its connection drops — a crashed driver
//!   never leaves a lock to clean up.
//!
//! The schema is created and migrated by lwirc itself (table `lwir_schema` records which
//! migrations ran; concurrent first runs serialize on an advisory lock).

use std::sync::Mutex;

use lwir_repair::events::Event;
use postgres::{Client, NoTls};
use sha2::{Digest as _, Sha256};

use crate::store::{PlanLog, RunGuard, Store, StoreError};

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
    client: Mutex<Client>,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("url", &shown(&self.url))
            .finish()
    }
}

/// `url` without its password, for messages.
fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.split_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}@{host}")
        }
        None => url.to_owned(),
    }
}

/// Whether `text` names a PostgreSQL database (`postgres://` or `postgresql://`).
pub fn is_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

fn failed(location: &str, e: &postgres::Error) -> StoreError {
    StoreError::Io {
        location: location.to_owned(),
        detail: e.to_string(),
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

fn chain(previous: &str, line: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(previous.as_bytes());
    hash.update(b"\n");
    hash.update(line.as_bytes());
    format!("{:x}", hash.finalize())
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
fn events_of(rows: &[postgres::Row], location: &str) -> Result<Vec<Event>, StoreError> {
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

impl Postgres {
    /// Connects to `url` and brings the schema up to date.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let mut client = open(url)?;
        migrate(&mut client).map_err(|e| failed(&shown(url), &e))?;
        Ok(Self {
            url: url.to_owned(),
            client: Mutex::new(client),
        })
    }

    /// Another connection, for a lock held as long as it is.
    fn connect_again(&self) -> Result<Client, StoreError> {
        open(&self.url)
    }

    /// The connection, for this thread alone.
    fn client(&self) -> Result<std::sync::MutexGuard<'_, Client>, StoreError> {
        self.client.lock().map_err(|_| StoreError::Io {
            location: shown(&self.url),
            detail: "the connection was poisoned by a failed thread".into(),
        })
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, StoreError> {
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
        let mut tx = guard.transaction().map_err(|e| failed(&location, &e))?;
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
            Err(e) if e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION) => {
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
            Err(e) if e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION) => {
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
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A connection to `url`, made within [`CONNECT_TIMEOUT`] (or the URL's
/// `connect_timeout`). The driver's own timeout covers only the TCP connection, not a
/// server that accepts it and then says nothing, so the whole handshake runs on a thread
/// of its own and is given up on after the timeout.
fn open(url: &str) -> Result<Client, StoreError> {
    let cannot = |detail: String| StoreError::Io {
        location: shown(url),
        detail: format!("cannot connect: {detail}"),
    };
    let mut config: postgres::Config = url.parse().map_err(|e| cannot(format!("{e}")))?;
    let limit = config
        .get_connect_timeout()
        .copied()
        .unwrap_or(CONNECT_TIMEOUT);
    config.connect_timeout(limit);
    let (sent, answer) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("lwirc-postgres-connect".into())
        .spawn(move || {
            let _ = sent.send(config.connect(NoTls));
        })
        .map_err(|e| cannot(format!("{e}")))?;
    match answer.recv_timeout(limit) {
        Ok(connected) => connected.map_err(|e| cannot(format!("{e}"))),
        Err(_) => Err(cannot(format!(
            "the server did not complete the handshake within {} s",
            limit.as_secs_f64()
        ))),
    }
}

fn migrate(client: &mut Client) -> Result<(), postgres::Error> {
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])?;
    let result = (|| {
        client.batch_execute(
            "CREATE TABLE IF NOT EXISTS lwir_schema (version integer PRIMARY KEY)",
        )?;
        let applied: i32 = client
            .query_one("SELECT coalesce(max(version), 0) FROM lwir_schema", &[])?
            .get(0);
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(applied as usize) {
            let mut tx = client.transaction()?;
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

    fn append(
        &self,
        goal: &str,
        event: &str,
        data: serde_json::Value,
        expected_last: u64,
    ) -> Result<Event, StoreError> {
        self.insert_event(
            goal,
            |seq| Event {
                seq,
                time: now(),
                event: event.to_owned(),
                data,
            },
            expected_last,
        )
    }

    fn open_plan(&self, goal: &str, plan: &str) -> Result<Box<dyn PlanLog>, StoreError> {
        let mut client = self.connect_again()?;
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
        let mut client = self.connect_again()?;
        let held: bool = client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key("run", &[goal])])
            .map_err(|e| failed(&self.location_of(goal), &e))?
            .get(0);
        if !held {
            return Err(StoreError::Busy {
                what: format!("goal `{goal}` (another `lwirc goal run` or `goal serve` drives it)"),
            });
        }
        // Held for as long as the connection is: the guard keeps it, and the server lets go
        // when the process dies.
        Ok(RunGuard::new(Box::new(client)))
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
            let mut tx = c.transaction()?;
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
    client: Client,
    goal: String,
    plan: String,
    next: u64,
    previous: String,
    location: String,
}

impl PlanLog for PgPlan {
    fn append(&mut self, event: &str, data: serde_json::Value) -> Result<(), StoreError> {
        let record = Event {
            seq: self.next,
            time: now(),
            event: event.to_owned(),
            data,
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
            "postgres://lwir@db:5432/goals"
        );
        assert_eq!(shown("postgres://db/goals"), "postgres://db/goals");
    }

    #[test]
    fn chains_depend_on_every_line_before() {
        let a = chain("", "one");
        assert_ne!(chain(&a, "two"), chain(&chain("", "uno"), "two"));
    }
}
