//! One connection to PostgreSQL, every exchange of which has a deadline.
//!
//! `tokio-postgres` on a current-thread runtime of the connection's own, which runs only
//! while lwirc waits for an answer. The handshake must be over within the connect timeout
//! (the driver's own covers only TCP, so a server that accepts and says nothing would be
//! waited for for ever); each statement is cancelled by the server after the statement
//! timeout (`SET statement_timeout`, which also bounds a wait for a lock), and lwirc gives
//! up waiting for an answer a little later — so a server that was stopped, or a network
//! that went away, fails the statement instead of blocking the process for good.

use std::future::Future;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Row, Transaction};

/// The waits of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Limits {
    /// The whole handshake.
    pub(super) connect: Duration,
    /// One statement, on the server.
    pub(super) statement: Duration,
}

impl Limits {
    /// How long an answer is waited for: the statement timeout, then as long again (at most
    /// 5 s more) for the server's own cancellation to arrive.
    pub(super) fn answer(&self) -> Duration {
        self.statement + self.statement.min(Duration::from_secs(5))
    }
}

/// Why an exchange failed.
#[derive(Debug)]
pub(super) enum Failure {
    /// The server (or the driver) said why.
    Db(tokio_postgres::Error),
    /// No answer came within [`Limits::answer`].
    Silent(Limits),
}

impl Failure {
    /// The SQLSTATE the server gave, when it gave one.
    pub(super) fn code(&self) -> Option<&SqlState> {
        match self {
            Failure::Db(e) => e.code(),
            Failure::Silent(_) => None,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // The driver's own text is its kind only ("db error"); the server's reason is its
            // source.
            Failure::Db(e) => match std::error::Error::source(e) {
                Some(source) => write!(f, "{e}: {source}"),
                None => write!(f, "{e}"),
            },
            Failure::Silent(limits) => write!(
                f,
                "the server did not answer within {} s (a statement may take \
                 statement_timeout={} s, set in the URL, and its answer {} s more to arrive)",
                limits.answer().as_secs_f64(),
                limits.statement.as_secs_f64(),
                (limits.answer() - limits.statement).as_secs_f64()
            ),
        }
    }
}

/// Runs `exchange` on `runtime`, giving up after `limits`' answer wait.
fn within<T>(
    runtime: &Runtime,
    limits: Limits,
    exchange: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, Failure> {
    // The timer is made inside the runtime, whose clock it needs.
    match runtime.block_on(async { tokio::time::timeout(limits.answer(), exchange).await }) {
        Ok(answered) => answered.map_err(Failure::Db),
        Err(_) => Err(Failure::Silent(limits)),
    }
}

/// Why a connection could not be made.
#[derive(Debug)]
pub(super) enum NotConnected {
    /// The driver or the server said why.
    Failed(String),
    /// The handshake was not over within the connect timeout.
    Silent(Duration),
}

/// What to do about a connection that failed, when the failure says: the database, the
/// role or the address, by name (the server's own text does not always name them).
fn hint(e: &tokio_postgres::Error, config: &Config) -> String {
    let database = config.get_dbname().unwrap_or("(the user's name)");
    let user = config.get_user().unwrap_or("(the user's name)");
    match e.code() {
        Some(&SqlState::INVALID_CATALOG_NAME) => format!(
            "; the database `{database}` does not exist on that server: create it (`createdb \
             {database}`), or name another in the URL's path"
        ),
        Some(&SqlState::INVALID_AUTHORIZATION_SPECIFICATION)
        | Some(&SqlState::INVALID_PASSWORD) => format!(
            "; the server does not accept the role `{user}` this way: check the user and \
             password in the URL, and the server's pg_hba.conf"
        ),
        Some(_) => String::new(),
        None => {
            let hosts: Vec<String> = config
                .get_hosts()
                .iter()
                .map(|h| match h {
                    tokio_postgres::config::Host::Tcp(name) => name.clone(),
                    tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
                })
                .collect();
            let ports = config.get_ports();
            let port = ports.first().copied().unwrap_or(5432);
            let text = e.to_string();
            let refused = std::error::Error::source(e).is_some_and(|s| {
                s.to_string().contains("refused") || s.to_string().contains("No such file")
            });
            if refused || text.contains("error connecting") {
                format!(
                    "; nothing accepted the connection at {}:{port}: is PostgreSQL running \
                     there, and is that its address and port?",
                    hosts.first().map_or("localhost", String::as_str)
                )
            } else {
                String::new()
            }
        }
    }
}

/// A connection.
pub(super) struct Conn {
    /// `None` only while it is dropped.
    client: Option<Client>,
    /// Drives the socket: a task on [`Conn::runtime`].
    connection: Option<tokio::task::JoinHandle<()>>,
    runtime: Runtime,
    limits: Limits,
}

impl Conn {
    /// Connects with `config` within `limits.connect`, the handshake and the statement
    /// timeout's `SET` included.
    pub(super) fn open(config: &Config, limits: Limits) -> Result<Self, NotConnected> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| NotConnected::Failed(e.to_string()))?;
        let statement_ms = limits.statement.as_millis().max(1);
        let handshake = async {
            let (client, connection) = config.connect(NoTls).await?;
            let connection = tokio::spawn(async move {
                // Its error, if any, is the next exchange's.
                let _ = connection.await;
            });
            client
                .batch_execute(&format!("SET statement_timeout = {statement_ms}"))
                .await?;
            Ok::<_, tokio_postgres::Error>((client, connection))
        };
        match runtime.block_on(async { tokio::time::timeout(limits.connect, handshake).await }) {
            Ok(Ok((client, connection))) => Ok(Self {
                client: Some(client),
                connection: Some(connection),
                runtime,
                limits,
            }),
            Ok(Err(e)) => {
                let hint = hint(&e, config);
                Err(NotConnected::Failed(format!("{}{hint}", Failure::Db(e))))
            }
            Err(_) => Err(NotConnected::Silent(limits.connect)),
        }
    }

    fn client(&self) -> &Client {
        self.client
            .as_ref()
            .expect("a connection has its client until it is dropped")
    }

    /// The rows of `sql`.
    pub(super) fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Failure> {
        within(&self.runtime, self.limits, self.client().query(sql, params))
    }

    /// The one row of `sql`.
    pub(super) fn query_one(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, Failure> {
        within(
            &self.runtime,
            self.limits,
            self.client().query_one(sql, params),
        )
    }

    /// The row of `sql`, if it has one.
    pub(super) fn query_opt(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Failure> {
        within(
            &self.runtime,
            self.limits,
            self.client().query_opt(sql, params),
        )
    }

    /// Runs `sql`; the rows it changed.
    pub(super) fn execute(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Failure> {
        within(
            &self.runtime,
            self.limits,
            self.client().execute(sql, params),
        )
    }

    /// Runs the statements of `sql`, without parameters.
    pub(super) fn batch_execute(&self, sql: &str) -> Result<(), Failure> {
        within(&self.runtime, self.limits, self.client().batch_execute(sql))
    }

    /// Begins a transaction, rolled back unless committed.
    pub(super) fn transaction(&mut self) -> Result<Tx<'_>, Failure> {
        let client = self
            .client
            .as_mut()
            .expect("a connection has its client until it is dropped");
        let tx = within(&self.runtime, self.limits, client.transaction())?;
        Ok(Tx {
            tx,
            runtime: &self.runtime,
            limits: self.limits,
        })
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Without its client the connection says goodbye to the server and closes; it is
        // given a moment to, so that the server ends the session at once (its advisory locks
        // with it) rather than when it finds the socket gone.
        drop(self.client.take());
        if let Some(connection) = self.connection.take() {
            let _ = self
                .runtime
                .block_on(async { tokio::time::timeout(Duration::from_secs(1), connection).await });
        }
    }
}

/// A transaction on a [`Conn`], each statement with the connection's deadline.
pub(super) struct Tx<'a> {
    tx: Transaction<'a>,
    runtime: &'a Runtime,
    limits: Limits,
}

impl Tx<'_> {
    /// The row of `sql`, if it has one.
    pub(super) fn query_opt(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Failure> {
        within(self.runtime, self.limits, self.tx.query_opt(sql, params))
    }

    /// Runs `sql`; the rows it changed.
    pub(super) fn execute(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Failure> {
        within(self.runtime, self.limits, self.tx.execute(sql, params))
    }

    /// Runs the statements of `sql`, without parameters.
    pub(super) fn batch_execute(&self, sql: &str) -> Result<(), Failure> {
        within(self.runtime, self.limits, self.tx.batch_execute(sql))
    }

    /// Commits it.
    pub(super) fn commit(self) -> Result<(), Failure> {
        within(self.runtime, self.limits, self.tx.commit())
    }
}
