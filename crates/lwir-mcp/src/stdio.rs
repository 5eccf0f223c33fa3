//! A server over standard input and output: its process, and the transport rmcp talks
//! through.
//!
//! The process runs in its own process group with an environment of `PATH`, `HOME`, `LANG`
//! and the variables its binding names, nothing else; on Linux it is sent `SIGTERM` when
//! lwirc dies. Its standard error is read into a bounded tail for error messages, never
//! passed to the terminal.
//!
//! The transport is ours rather than rmcp's (`transport-child-process`), because rmcp's
//! line reader drops a line that is not JSON, or is longer than its limit, and waits on:
//! a server that answers garbage or 100 MB would leave the call waiting for its timeout.
//! Here a reader task reads one line at a time, holding at most the largest answer a
//! pending request may get ([`Wire::read_limit`]). A longer line is read past without being
//! held, its `id` picked out as it streams by, and the request it answers gets an error in
//! its place. A line that is not JSON ends the connection with that reason: the protocol
//! allows nothing else on standard output. What rmcp sends is written by the task it sends
//! it from (rmcp spawns one per message), one message at a time.

use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, watch};

use crate::text::{self, Tail};
use crate::wire::{Refusal, Wire};

/// The variables of lwirc's environment every server gets (when lwirc has them).
pub(crate) const BASE_ENV: &[&str] = &["PATH", "HOME", "LANG"];

/// What it takes to start a server process.
pub(crate) struct Launch {
    pub(crate) command: Vec<String>,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) env: Vec<String>,
}

/// A started server process.
#[derive(Debug)]
pub(crate) struct Process {
    /// Its process id, which is also its process group's.
    pid: i32,
    /// Set once the process has ended (and was reaped).
    status: watch::Receiver<Option<ExitStatus>>,
    /// The end of its standard error.
    stderr: Arc<Mutex<Tail>>,
    /// True once its standard error reached its end.
    stderr_done: watch::Receiver<bool>,
    /// Its standard input, while open.
    stdin: Input,
}

/// The server's standard input, shared by the transport (which writes each message in the
/// task rmcp sends it from) and the process (which closes it).
pub(crate) type Input = Arc<tokio::sync::Mutex<Option<ChildStdin>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts the process (on a runtime worker: see [`crate::runtime`]), its reader and the
/// tasks that wait for it and read its standard error.
pub(crate) fn spawn(launch: &Launch, wire: Arc<Wire>) -> io::Result<(Process, StdioTransport)> {
    let mut cmd = Command::new(&launch.command[0]);
    cmd.args(&launch.command[1..])
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    for name in BASE_ENV
        .iter()
        .copied()
        .chain(launch.env.iter().map(String::as_str))
    {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    if let Some(cwd) = &launch.cwd {
        cmd.current_dir(cwd);
    }
    #[cfg(target_os = "linux")]
    // SAFETY: the closure runs in the forked child before exec and only calls `prctl`,
    // which is async-signal-safe; it allocates nothing and takes no locks.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| io::Error::other("the started process has no id"))?;
    let missing = || io::Error::other("a pipe of the started process is missing");
    let stdin = child.stdin.take().ok_or_else(missing)?;
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stderr = child.stderr.take().ok_or_else(missing)?;

    let (status_tx, status) = watch::channel(None);
    tokio::spawn(async move {
        // `wait` reaps the process; an error means it cannot be waited for at all.
        if let Ok(status) = child.wait().await {
            let _ = status_tx.send(Some(status));
        }
    });

    let tail = Arc::new(Mutex::new(Tail::default()));
    let (done_tx, stderr_done) = watch::channel(false);
    tokio::spawn(read_stderr(stderr, Arc::clone(&tail), done_tx));

    let input: Input = Arc::new(tokio::sync::Mutex::new(Some(stdin)));

    let (messages_tx, messages) = mpsc::channel(256);
    tokio::spawn(Reader::new(stdout, Arc::clone(&wire), messages_tx).run());

    let process = Process {
        pid,
        status,
        stderr: tail,
        stderr_done,
        stdin: Arc::clone(&input),
    };
    let transport = StdioTransport {
        wire,
        input,
        messages,
    };
    Ok((process, transport))
}

impl Process {
    /// The end of the server's standard error as error messages show it.
    pub(crate) fn stderr_tail(&self) -> String {
        text::stderr_tail(lock(&self.stderr).bytes())
    }

    /// Its exit status, once it has ended.
    pub(crate) fn status(&self) -> Option<ExitStatus> {
        *self.status.borrow()
    }

    /// Waits up to `limit` for the process to end; its status if it did.
    pub(crate) async fn wait(&self, limit: std::time::Duration) -> Option<ExitStatus> {
        let mut status = self.status.clone();
        let _ = tokio::time::timeout(limit, status.wait_for(Option::is_some)).await;
        self.status()
    }

    /// Waits up to `limit` for its standard error to reach its end (after it exited).
    pub(crate) async fn drain_stderr(&self, limit: std::time::Duration) {
        let mut done = self.stderr_done.clone();
        let _ = tokio::time::timeout(limit, done.wait_for(|d| *d)).await;
    }

    /// Closes the server's standard input. A write that is stuck (a server that reads
    /// nothing) is not waited for long: killing the server ends it.
    pub(crate) async fn close_stdin(&self) {
        let wait = std::time::Duration::from_millis(200);
        if let Ok(mut stdin) = tokio::time::timeout(wait, self.stdin.lock()).await {
            stdin.take();
        }
    }

    /// Kills its whole process group: the server and whatever it started that stayed in
    /// the group.
    pub(crate) fn kill_group(&self) {
        // SAFETY: `killpg` only sends a signal; an already empty group gives ESRCH.
        unsafe {
            libc::killpg(self.pid, libc::SIGKILL);
        }
    }
}

async fn read_stderr(mut pipe: ChildStderr, tail: Arc<Mutex<Tail>>, done: watch::Sender<bool>) {
    let mut chunk = vec![0; 8192];
    while let Ok(n) = pipe.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        lock(&tail).push(&chunk[..n]);
    }
    let _ = done.send(true);
}

/// The transport rmcp's service runs over.
pub(crate) struct StdioTransport {
    wire: Arc<Wire>,
    input: Input,
    messages: mpsc::Receiver<ServerJsonRpcMessage>,
}

impl Transport<RoleClient> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.wire.sending(&item);
        let line = serde_json::to_vec(&item).map_err(io::Error::other);
        let input = Arc::clone(&self.input);
        async move {
            let mut line = line?;
            line.push(b'\n');
            let mut stdin = input.lock().await;
            let pipe = stdin
                .as_mut()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
            pipe.write_all(&line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        self.messages.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.input.lock().await.take();
        Ok(())
    }
}

/// One line read from the server.
enum Line {
    /// A whole line (without its line break) is in the reader's buffer.
    Whole,
    /// A line longer than the limit, read past: its length and the `id` it carried.
    TooLong { size: usize, id: Option<RequestId> },
    /// The end of the output.
    End,
}

struct Reader {
    stdout: BufReader<ChildStdout>,
    wire: Arc<Wire>,
    messages: mpsc::Sender<ServerJsonRpcMessage>,
    line: Vec<u8>,
}

impl Reader {
    fn new(
        stdout: ChildStdout,
        wire: Arc<Wire>,
        messages: mpsc::Sender<ServerJsonRpcMessage>,
    ) -> Self {
        Reader {
            stdout: BufReader::with_capacity(64 * 1024, stdout),
            wire,
            messages,
            line: Vec::new(),
        }
    }

    /// Reads until the end of the output, a line that is not JSON, or rmcp stops listening.
    async fn run(mut self) {
        loop {
            let message = match self.read_line().await {
                Ok(Line::End) => return,
                Err(e) => {
                    self.wire
                        .set_fatal(format!("reading its standard output failed: {e}"));
                    return;
                }
                Ok(Line::TooLong { size, id }) => {
                    // The answer of a pending request is refused; anything else that
                    // large (a notification, a request of the server's) is dropped.
                    match id.and_then(|id| self.wire.answered(&id).map(|limit| (id, limit))) {
                        Some((id, limit)) => {
                            self.wire.refuse(id, Refusal::TooLarge { size, limit })
                        }
                        None => continue,
                    }
                }
                Ok(Line::Whole) => {
                    let line = trim(&self.line);
                    if line.is_empty() {
                        continue;
                    }
                    match self.parse(line) {
                        Parsed::Message(message) => *message,
                        Parsed::Skip => continue,
                        // Ending the reader ends the connection.
                        Parsed::Stop => return,
                    }
                }
            };
            if self.messages.send(message).await.is_err() {
                return;
            }
        }
    }

    /// The message on `line`, or the error that stands in for an answer that cannot be
    /// read. A line that is not JSON-RPC ends the connection.
    fn parse(&self, line: &[u8]) -> Parsed {
        let error = match serde_json::from_slice::<ServerJsonRpcMessage>(line) {
            Ok(message) => {
                self.wire.observe(&message);
                let id = match &message {
                    JsonRpcMessage::Response(r) => Some(&r.id),
                    JsonRpcMessage::Error(e) => e.id.as_ref(),
                    _ => None,
                };
                if let Some(id) = id
                    && let Some(limit) = self.wire.answered(id)
                    && line.len() > limit
                {
                    let id = id.clone();
                    return Parsed::Message(Box::new(self.wire.refuse(
                        id,
                        Refusal::TooLarge {
                            size: line.len(),
                            limit,
                        },
                    )));
                }
                return Parsed::Message(Box::new(message));
            }
            Err(e) => e,
        };
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
            self.wire.set_fatal(format!(
                "wrote a line that is not JSON on its standard output (only MCP messages may go there): {}",
                text::show_bytes(line)
            ));
            return Parsed::Stop;
        };
        let id = value
            .get("id")
            .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
        let answer = value.get("method").is_none()
            && (value.get("result").is_some() || value.get("error").is_some());
        match id {
            Some(id) if answer => {
                if self.wire.answered(&id).is_none() {
                    // An answer to nothing pending: nobody waits for it.
                    return Parsed::Skip;
                }
                Parsed::Message(Box::new(self.wire.refuse(
                    id,
                    Refusal::Unreadable(format!(
                        "its answer is not a JSON-RPC response ({}): {}",
                        text::show_message(&error.to_string()),
                        text::show_bytes(line)
                    )),
                )))
            }
            _ => {
                self.wire.set_fatal(format!(
                    "wrote JSON that is not a JSON-RPC message ({}): {}",
                    text::show_message(&error.to_string()),
                    text::show_bytes(line)
                ));
                Parsed::Stop
            }
        }
    }

    /// Reads one line, holding at most as much of it as the largest answer a pending
    /// request may get (asked again when the line passes it: the request it answers was
    /// registered before it was sent).
    async fn read_line(&mut self) -> io::Result<Line> {
        if self.line.capacity() > 1 << 20 {
            // Not kept for the connection's life after one large answer.
            self.line = Vec::new();
        }
        self.line.clear();
        let mut limit = self.wire.read_limit();
        let mut scan: Option<IdScan> = None;
        let mut size = 0usize;
        loop {
            let available = self.stdout.fill_buf().await?;
            if available.is_empty() {
                // A last message without a line break still counts.
                return Ok(match scan {
                    Some(scan) => Line::TooLong {
                        size,
                        id: scan.id(),
                    },
                    None if self.line.is_empty() => Line::End,
                    None => Line::Whole,
                });
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk = &available[..take];
            size += take;
            match &mut scan {
                Some(scan) => scan.feed(chunk),
                None if self.line.len() + take > limit
                    && self.line.len() + take > {
                        limit = self.wire.read_limit();
                        limit
                    } =>
                {
                    let mut fresh = IdScan::default();
                    fresh.feed(&self.line);
                    fresh.feed(chunk);
                    self.line = Vec::new();
                    scan = Some(fresh);
                }
                None => self.line.extend_from_slice(chunk),
            }
            self.stdout.consume(take);
            if newline.is_some() {
                return Ok(match scan {
                    Some(scan) => Line::TooLong {
                        size,
                        id: scan.id(),
                    },
                    None => Line::Whole,
                });
            }
        }
    }
}

/// What a line holds.
enum Parsed {
    /// A message for rmcp.
    Message(Box<ServerJsonRpcMessage>),
    /// Nothing anyone waits for.
    Skip,
    /// A breach of the protocol, recorded: the connection ends.
    Stop,
}

fn trim(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

/// Picks the value of a JSON object's top-level `id` member out of text streamed by,
/// without holding the text: for an answer too long to read.
#[derive(Debug, Default)]
struct IdScan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    state: ScanState,
    key: Vec<u8>,
    /// The raw text of the `id` value while it is read, and once it is.
    value: Vec<u8>,
    capturing: bool,
    found: bool,
}

#[derive(Debug, Default, PartialEq)]
enum ScanState {
    /// Before a key (after `{` or `,` at the top level).
    #[default]
    Key,
    /// Inside a key.
    InKey,
    /// After a key, before `:`.
    Colon,
    /// In a value.
    Value,
}

/// The most bytes of an `id` value kept: longer ones are no id rmcp gave.
const MAX_ID: usize = 64;

impl IdScan {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.found {
                return;
            }
            self.byte(b);
        }
    }

    fn keep(&mut self, b: u8) {
        if self.capturing && self.value.len() <= MAX_ID {
            self.value.push(b);
        }
    }

    /// Byte `b` inside a string: steps the escape state, and says whether `b` closed the
    /// string.
    fn closes_string(&mut self, b: u8) -> bool {
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
        } else if b == b'"' {
            self.in_string = false;
            return true;
        }
        false
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            if self.state == ScanState::InKey && self.depth == 1 {
                if self.closes_string(b) {
                    self.state = ScanState::Colon;
                } else if self.key.len() <= 8 {
                    self.key.push(b);
                }
                return;
            }
            self.keep(b);
            self.closes_string(b);
            return;
        }
        match b {
            b'"' if self.depth == 1 && self.state == ScanState::Key => {
                self.in_string = true;
                self.state = ScanState::InKey;
                self.key.clear();
            }
            b'"' => {
                self.in_string = true;
                self.keep(b);
            }
            b':' if self.depth == 1 && self.state == ScanState::Colon => {
                self.state = ScanState::Value;
                self.capturing = self.key == b"id";
            }
            b',' | b'}' if self.depth == 1 => {
                if self.capturing {
                    self.capturing = false;
                    self.found = true;
                }
                self.state = ScanState::Key;
                if b == b'}' {
                    self.depth = 0;
                }
            }
            b'{' | b'[' => {
                self.keep(b);
                self.depth += 1;
            }
            b'}' | b']' => {
                self.keep(b);
                self.depth = self.depth.saturating_sub(1);
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => self.keep(b),
        }
    }

    /// The `id` found, if it was one.
    fn id(&self) -> Option<RequestId> {
        if !self.found || self.value.len() > MAX_ID {
            return None;
        }
        serde_json::from_slice(&self.value).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Option<RequestId> {
        let mut scan = IdScan::default();
        for chunk in text.as_bytes().chunks(3) {
            scan.feed(chunk);
        }
        scan.id()
    }

    #[test]
    fn the_id_is_found_wherever_it_is() {
        assert_eq!(
            scan(r#"{"jsonrpc":"2.0","id":17,"result":{"x":"}"}}"#),
            Some(RequestId::Number(17))
        );
        assert_eq!(
            scan(
                r#"{"result":{"id":1,"content":[{"id":2}],"t":"\"id\":3"},"jsonrpc":"2.0","id":42}"#
            ),
            Some(RequestId::Number(42))
        );
        assert_eq!(
            scan(r#"{ "id" : "a\"b" , "result": 1}"#),
            Some(RequestId::String("a\"b".into()))
        );
        assert_eq!(scan(r#"{"result":{"id":5}}"#), None);
        assert_eq!(scan(r#"[{"id":5}]"#), None);
    }
}
