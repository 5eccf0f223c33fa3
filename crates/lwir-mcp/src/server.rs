//! A connection to one MCP server: started (stdio) or reached (streamable HTTP) once, its
//! tools listed, its tools called from any number of threads, shut down once.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, Implementation, JsonObject, ListToolsRequest, MetaObject,
    PaginatedRequestParams, PingRequest, ProtocolVersion, RequestMetaObject, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, serve_client};
use serde_json::Value;

use crate::error::Error;
use crate::runtime;
use crate::stdio::{self, Launch, Process};
use crate::text::{self, clean};
use crate::wire::{AnswerLimit, Refusal, Wire};

/// The `_meta` key a call's idempotency key is sent under.
pub const IDEMPOTENCY_KEY: &str = "lwir/idempotency-key";

/// The MCP revision asked for in `initialize`: the newest one that has the handshake, so
/// that every server is met the same way (and its answer is checked, not assumed).
const PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// At most this many pages of `tools/list` are read.
const MAX_PAGES: usize = 1000;

/// At most this many tools are listed.
const MAX_TOOLS: usize = 10_000;

/// How many times the list is read again when it changed while it was read.
const MAX_RELISTS: usize = 5;

/// How a server is started and talked to: the limits of one connection.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// How long starting, the handshake and the settling after it may take (30 s).
    pub start_timeout: Duration,
    /// How long one page of `tools/list` may take (30 s).
    pub list_timeout: Duration,
    /// The most bytes one message from the server may have, whatever a call allows; also
    /// the limit of a `tools/list` page (64 MiB).
    pub max_message_bytes: usize,
    /// How long a server is given to exit after its standard input is closed, before its
    /// process group is killed (2 s).
    pub shutdown_grace: Duration,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            start_timeout: Duration::from_secs(30),
            list_timeout: Duration::from_secs(30),
            max_message_bytes: 64 << 20,
            shutdown_grace: Duration::from_secs(2),
        }
    }
}

/// A server that speaks MCP over its standard input and output.
#[derive(Debug, Clone)]
pub struct StdioSpec {
    /// The server's name in the bindings, used in every message about it.
    pub name: String,
    /// The program and its arguments, run as they are (no shell): `["node", "dist/index.js",
    /// "stdio"]`. The program is looked up in `PATH`.
    pub command: Vec<String>,
    /// The working directory; lwirc's own when `None`.
    pub cwd: Option<PathBuf>,
    /// The variables of lwirc's environment the server also gets, beside `PATH`, `HOME`
    /// and `LANG` (a variable lwirc does not have is left out). Nothing else of lwirc's
    /// environment reaches it.
    pub env: Vec<String>,
    /// The connection's limits.
    pub options: ConnectOptions,
}

impl StdioSpec {
    /// A server named `name` run as `command`, with the default limits, lwirc's working
    /// directory and only `PATH`, `HOME` and `LANG`.
    pub fn new(name: impl Into<String>, command: Vec<String>) -> Self {
        StdioSpec {
            name: name.into(),
            command,
            cwd: None,
            env: Vec::new(),
            options: ConnectOptions::default(),
        }
    }
}

/// A header value that is never shown: not in `Debug`, not in an error.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// The value, for the HTTP client.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl Secret {
    /// Wraps `value` (taken by the caller from the variable the bindings name).
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// A server reached over streamable HTTP.
#[derive(Debug, Clone)]
pub struct HttpSpec {
    /// The server's name in the bindings, used in every message about it.
    pub name: String,
    /// Its endpoint: `http://127.0.0.1:8931/mcp`, `https://…`.
    pub url: String,
    /// Headers sent with every request (`Authorization` …), their values resolved by the
    /// caller from the variables the bindings name.
    pub headers: Vec<(String, Secret)>,
    /// The connection's limits.
    pub options: ConnectOptions,
}

/// How one call may go.
#[derive(Debug, Clone)]
pub struct CallOptions {
    /// How long the server may take to answer (60 s). Past it the call fails and the
    /// server is sent `notifications/cancelled` for it.
    pub timeout: Duration,
    /// The most bytes the server's answer may have, as sent: the whole JSON-RPC message
    /// (16 MiB). A larger answer is refused while it arrives, over stdio before it is
    /// held; it is bounded by [`ConnectOptions::max_message_bytes`] as well.
    pub max_result_bytes: usize,
    /// Sent in the request's `_meta` as `"lwir/idempotency-key"`, so that the tool can tell
    /// a call sent again (after lwirc was interrupted) from a new one.
    pub idempotency_key: Option<String>,
}

impl Default for CallOptions {
    fn default() -> Self {
        CallOptions {
            timeout: Duration::from_secs(60),
            max_result_bytes: 16 << 20,
            idempotency_key: None,
        }
    }
}

/// A tool as the server lists it (schemas as it sent them; see [`crate::normal`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// Its name on the server.
    pub name: String,
    /// Its human-readable title, if it has one.
    pub title: Option<String>,
    /// What it does, if the server says.
    pub description: Option<String>,
    /// Its `inputSchema`.
    pub input_schema: Value,
    /// Its `outputSchema`, if it declares one.
    pub output_schema: Option<Value>,
}

/// What a call returned.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// Its `structuredContent` when present, else its text.
    pub value: ToolValue,
    /// Whether the tool reported a failure (`isError`): then `value` says why.
    pub is_error: bool,
    /// How many content blocks were not text (images, audio, resources): not in `value`.
    pub other_blocks: usize,
}

/// The value of a result.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolValue {
    /// The result's `structuredContent`, as sent.
    Structured(Value),
    /// The text of its text content blocks, joined by line breaks (empty when it has none),
    /// as sent: not cleaned.
    Text(String),
}

/// What the server said about itself in the handshake.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerInfo {
    /// The MCP revision it agreed to (`2025-11-25`).
    pub protocol_version: String,
    /// Its implementation's name and version, as it gave them (not cleaned).
    pub implementation: Option<(String, String)>,
}

/// The client rmcp runs: it declares the same capabilities (none) every time, so that a
/// server's tool list, which may depend on them, is the same for import, drift and runs.
#[derive(Clone)]
struct Handler;

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("lwirc", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(PROTOCOL)
    }
}

/// How the server is reached.
#[derive(Debug)]
enum Link {
    Stdio(Arc<Process>),
    /// The URL as messages show it.
    Http(String),
}

/// A connection to an MCP server. Calls may be made from many threads at once (`&Server`
/// is `Sync`). Dropping it shuts the server down as [`Server::shutdown`] does.
pub struct Server {
    name: String,
    peer: Peer<RoleClient>,
    wire: Arc<Wire>,
    link: Link,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    options: ConnectOptions,
    info: ServerInfo,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .field("link", &self.link)
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// Why a request failed, before it is told in terms of the server.
enum Failure {
    Service(ServiceError),
    Refused(Refusal),
}

impl Server {
    /// Starts the server's command, makes the handshake and waits for the server to settle
    /// (a `ping` answered: a server that changes its tool list right after `initialized`
    /// has said so by then).
    pub fn start_stdio(spec: &StdioSpec) -> Result<Server, Error> {
        let invalid = |reason: String| Error::InvalidSpec {
            server: spec.name.clone(),
            reason,
        };
        if spec.command.first().is_none_or(String::is_empty) {
            return Err(invalid("its command is empty".into()));
        }
        for name in &spec.env {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(invalid(format!(
                    "`{}` cannot be the name of an environment variable",
                    text::show_message(name)
                )));
            }
        }
        check_options(&spec.options).map_err(invalid)?;
        let wire = Arc::new(Wire::new(spec.options.max_message_bytes));
        let launch = Launch {
            command: spec.command.clone(),
            cwd: spec.cwd.clone(),
            env: spec.env.clone(),
        };
        let spawned = {
            let wire = Arc::clone(&wire);
            runtime::spawn_on_worker(move || stdio::spawn(&launch, wire))
        };
        let (process, transport) = spawned.map_err(|source| Error::Spawn {
            server: spec.name.clone(),
            program: text::show_message(&spec.command[0]),
            source,
        })?;
        let process = Arc::new(process);
        let link = Link::Stdio(Arc::clone(&process));
        let handshake = handshake(transport, spec.options.start_timeout);
        match runtime::block(handshake) {
            Ok(service) => Ok(Server::new(&spec.name, service, wire, link, &spec.options)),
            Err(failure) => {
                let error = describe_start(&spec.name, failure, &wire, &link, &spec.options);
                runtime::block(async move {
                    process.close_stdin().await;
                    process.kill_group();
                    process.wait(Duration::from_secs(1)).await;
                });
                Err(error)
            }
        }
    }

    /// Reaches the server at `spec.url` over streamable HTTP and makes the handshake, as
    /// [`Server::start_stdio`] does.
    pub fn connect_http(spec: &HttpSpec) -> Result<Server, Error> {
        let invalid = |reason: String| Error::InvalidSpec {
            server: spec.name.clone(),
            reason,
        };
        check_options(&spec.options).map_err(invalid)?;
        let config = crate::http::config(spec).map_err(invalid)?;
        let wire = Arc::new(Wire::new(spec.options.max_message_bytes));
        let link = Link::Http(crate::http::shown_url(&spec.url));
        let timeout = spec.options.start_timeout;
        let observed_wire = Arc::clone(&wire);
        let result = runtime::block(async move {
            let transport = crate::http::transport(config, observed_wire);
            handshake(transport, timeout).await
        });
        match result {
            Ok(service) => Ok(Server::new(&spec.name, service, wire, link, &spec.options)),
            Err(failure) => Err(describe_start(
                &spec.name,
                failure,
                &wire,
                &link,
                &spec.options,
            )),
        }
    }

    fn new(
        name: &str,
        service: RunningService<RoleClient, Handler>,
        wire: Arc<Wire>,
        link: Link,
        options: &ConnectOptions,
    ) -> Server {
        let peer = service.peer().clone();
        let info = peer
            .peer_info()
            .map(|info| ServerInfo {
                protocol_version: info.protocol_version.to_string(),
                implementation: info
                    .server_info
                    .as_ref()
                    .map(|i| (i.name.clone(), i.version.clone())),
            })
            .unwrap_or(ServerInfo {
                protocol_version: String::new(),
                implementation: None,
            });
        Server {
            name: name.to_owned(),
            peer,
            wire,
            link,
            service: Mutex::new(Some(service)),
            options: options.clone(),
            info,
        }
    }

    /// The server's name, as its spec gave it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the server said about itself in the handshake.
    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    /// The end of the server's standard error, cleaned (empty for an HTTP server).
    pub fn stderr_tail(&self) -> String {
        match &self.link {
            Link::Stdio(process) => process.stderr_tail(),
            Link::Http(_) => String::new(),
        }
    }

    /// How many `notifications/tools/list_changed` the server has sent so far: a caller that
    /// checked the tools once (drift) lists them again when this grows.
    pub fn list_changes(&self) -> u64 {
        self.wire.list_changes()
    }

    /// Every tool the server lists, following `nextCursor` (at most 1000 pages and 10 000
    /// tools). A list that changes while it is read (`notifications/tools/list_changed`) is
    /// read again, up to five times.
    pub fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        for _ in 0..MAX_RELISTS {
            let before = self.wire.list_changes();
            let tools = self.list_once()?;
            if self.wire.list_changes() == before {
                return Ok(tools);
            }
        }
        Err(self.protocol(format!(
            "its tool list changed each of the {MAX_RELISTS} times it was read"
        )))
    }

    fn list_once(&self) -> Result<Vec<Tool>, Error> {
        let mut tools = Vec::new();
        let mut cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
            let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
            let answer = self
                .request(request, self.options.list_timeout)
                .map_err(|f| self.failure(f, "listing tools", "`tools/list`"))?;
            let ServerResult::ListToolsResult(page) = answer else {
                return Err(self.protocol(format!(
                    "answered `tools/list` with something that is not a tool list: {}",
                    excerpt_of(&answer)
                )));
            };
            tools.extend(page.tools.into_iter().map(|t| {
                Tool {
                    name: t.name.into_owned(),
                    title: t.title,
                    description: t.description.map(|d| d.into_owned()),
                    input_schema: Value::Object(Arc::unwrap_or_clone(t.input_schema)),
                    output_schema: t
                        .output_schema
                        .map(|s| Value::Object(Arc::unwrap_or_clone(s))),
                }
            }));
            if tools.len() > MAX_TOOLS {
                return Err(self.protocol(format!("lists more than {MAX_TOOLS} tools")));
            }
            match page.next_cursor {
                None => return Ok(tools),
                Some(next) => {
                    if !cursors.insert(next.clone()) {
                        return Err(self.protocol(
                            "its `tools/list` pages repeat a `nextCursor`: the list never ends"
                                .into(),
                        ));
                    }
                    cursor = Some(next);
                }
            }
        }
        Err(self.protocol(format!("its `tools/list` has more than {MAX_PAGES} pages")))
    }

    /// Calls the tool `tool` with `arguments` (a JSON object, or null for none).
    ///
    /// A tool that fails on its own terms (`isError`, as servers answer bad arguments) is
    /// a result with [`ToolResult::is_error`]; an `Err` means the call itself failed.
    /// Nothing checks the result against the tool's `outputSchema` here: that is the
    /// caller's job (lwirc checks it with pointers).
    pub fn call(
        &self,
        tool: &str,
        arguments: Value,
        options: &CallOptions,
    ) -> Result<ToolResult, Error> {
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(Error::InvalidArguments {
                    server: self.name.clone(),
                    tool: text::show_message(tool),
                    found: lwir_spec::text::json_type(&other),
                });
            }
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        if let Some(key) = &options.idempotency_key {
            let mut meta = JsonObject::new();
            meta.insert(IDEMPOTENCY_KEY.to_owned(), Value::String(key.clone()));
            params.meta = Some(RequestMetaObject(MetaObject(meta)));
        }
        let mut request = CallToolRequest::new(params);
        request
            .extensions
            .insert(AnswerLimit(options.max_result_bytes));
        let shown = text::show_message(tool);
        let answer = self
            .request(ClientRequest::CallToolRequest(request), options.timeout)
            .map_err(|f| {
                self.failure(
                    f,
                    &format!("calling `{shown}`"),
                    &format!("`tools/call` of `{shown}`"),
                )
            })?;
        match answer {
            ServerResult::CallToolResult(result) => Ok(tool_result(result)),
            other => Err(self.protocol(format!(
                "answered `tools/call` of `{shown}` with something that is not a tool result: {}",
                excerpt_of(&other)
            ))),
        }
    }

    /// Whether the server's process has ended (a stdio server that exited, crashed or was
    /// killed): every request to it fails now. Always false for a streamable HTTP server,
    /// whose process is not lwirc's.
    pub fn exited(&self) -> bool {
        match &self.link {
            Link::Stdio(process) => process.status().is_some(),
            Link::Http(_) => false,
        }
    }

    /// Closes the connection: the server's standard input is closed, it is given
    /// [`ConnectOptions::shutdown_grace`] to exit, then its process group is killed (what
    /// it started in its group goes too) and it is reaped. Calls in flight fail.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let service = self
            .service
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut service) = service else {
            return;
        };
        let grace = self.options.shutdown_grace;
        match &self.link {
            Link::Stdio(process) => {
                let process = Arc::clone(process);
                runtime::block(async move {
                    process.close_stdin().await;
                    process.wait(grace).await;
                    process.kill_group();
                    process.wait(Duration::from_secs(1)).await;
                    let _ = service.close_with_timeout(Duration::from_millis(500)).await;
                });
            }
            Link::Http(_) => {
                runtime::block(async move {
                    let _ = service.close_with_timeout(grace).await;
                });
            }
        }
    }

    /// Sends `request` and waits for its answer, at most `timeout`.
    fn request(&self, request: ClientRequest, timeout: Duration) -> Result<ServerResult, Failure> {
        let peer = self.peer.clone();
        let wire = Arc::clone(&self.wire);
        runtime::block(async move {
            let handle = peer
                .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
                .await
                .map_err(Failure::Service)?;
            let id = handle.id.clone();
            let result = handle.await_response().await;
            match (result, wire.finish(&id)) {
                (Err(ServiceError::McpError(_)), Some(refusal)) => Err(Failure::Refused(refusal)),
                (result, _) => result.map_err(Failure::Service),
            }
        })
    }

    /// The error for a request that failed while `during` (`calling `echo``).
    fn failure(&self, failure: Failure, during: &str, method: &str) -> Error {
        let error = match failure {
            Failure::Refused(Refusal::TooLarge { size, limit }) => {
                return Error::ResultTooLarge {
                    server: self.name.clone(),
                    tool: method.to_owned(),
                    limit,
                    size,
                };
            }
            Failure::Refused(Refusal::Unreadable(what)) => {
                return self.protocol(format!("while {during}: {what}"));
            }
            Failure::Service(error) => error,
        };
        match error {
            ServiceError::McpError(e) => Error::Rpc {
                server: self.name.clone(),
                method: method.to_owned(),
                code: e.code.0,
                message: text::show_message(&e.message),
            },
            ServiceError::Timeout { timeout } => Error::Timeout {
                server: self.name.clone(),
                during: format!("to {method}"),
                after: timeout,
                stderr: self.stderr_tail(),
            },
            ServiceError::TransportClosed => self.gone(during, None),
            ServiceError::TransportSend(e) => {
                self.gone(during, Some(crate::http::transport_error(&e)))
            }
            ServiceError::UnexpectedResponse => {
                self.protocol(format!("answered {method} with an answer of another kind"))
            }
            other => self.protocol(format!(
                "while {during}: {}",
                text::show_message(&other.to_string())
            )),
        }
    }

    /// The error for a connection that ended while `during`.
    fn gone(&self, during: &str, detail: Option<String>) -> Error {
        if let Some(why) = self.wire.fatal() {
            return self.protocol(why);
        }
        match &self.link {
            Link::Stdio(process) => exited(&self.name, during, process),
            Link::Http(url) => Error::Http {
                server: self.name.clone(),
                url: url.clone(),
                message: match detail {
                    Some(detail) => format!("the connection failed while {during}: {detail}"),
                    None => format!("the connection closed while {during}"),
                },
            },
        }
    }

    fn protocol(&self, what: String) -> Error {
        Error::Protocol {
            server: self.name.clone(),
            what,
            stderr: self.stderr_tail(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn check_options(options: &ConnectOptions) -> Result<(), String> {
    if options.max_message_bytes == 0 {
        return Err("`max_message_bytes` is zero".into());
    }
    if options.start_timeout.is_zero() || options.list_timeout.is_zero() {
        return Err("a timeout is zero".into());
    }
    Ok(())
}

/// Why starting failed.
pub(crate) enum StartFailure {
    TimedOut,
    Handshake(Box<rmcp::service::ClientInitializeError>),
}

/// The handshake, then a `ping` to let the server settle, within `timeout`.
async fn handshake<T, E, A>(
    transport: T,
    timeout: Duration,
) -> Result<RunningService<RoleClient, Handler>, StartFailure>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let start = async {
        let service = serve_client(Handler, transport)
            .await
            .map_err(|e| StartFailure::Handshake(Box::new(e)))?;
        // Whatever the server sends before it answers (a tool-list change right after
        // `initialized`) has been read once the answer is; an error answer will do.
        let ping = ClientRequest::PingRequest(PingRequest {
            method: Default::default(),
            extensions: Default::default(),
        });
        let _ = service.peer().send_request(ping).await;
        Ok(service)
    };
    match tokio::time::timeout(timeout, start).await {
        Ok(result) => result,
        Err(_) => Err(StartFailure::TimedOut),
    }
}

fn describe_start(
    name: &str,
    failure: StartFailure,
    wire: &Wire,
    link: &Link,
    options: &ConnectOptions,
) -> Error {
    let stderr = || match link {
        Link::Stdio(process) => process.stderr_tail(),
        Link::Http(_) => String::new(),
    };
    if let Some(why) = wire.fatal() {
        return Error::Protocol {
            server: name.to_owned(),
            what: why,
            stderr: stderr(),
        };
    }
    let handshake = match failure {
        StartFailure::TimedOut => {
            return match link {
                Link::Stdio(process) if process.status().is_some() => {
                    exited(name, "starting", process)
                }
                _ => Error::Timeout {
                    server: name.to_owned(),
                    during: "to `initialize`".into(),
                    after: options.start_timeout,
                    stderr: stderr(),
                },
            };
        }
        StartFailure::Handshake(e) => e,
    };
    use rmcp::service::ClientInitializeError as Init;
    match (link, &*handshake) {
        (Link::Stdio(process), Init::ConnectionClosed(_) | Init::TransportError { .. }) => {
            exited(name, "starting", process)
        }
        (Link::Http(url), Init::TransportError { error, .. }) => Error::Http {
            server: name.to_owned(),
            url: url.clone(),
            message: format!(
                "the handshake failed: {}",
                crate::http::transport_error(error)
            ),
        },
        (Link::Http(url), Init::ConnectionClosed(_)) => Error::Http {
            server: name.to_owned(),
            url: url.clone(),
            message: "the connection closed during the handshake".into(),
        },
        (_, Init::JsonRpcError(e)) => Error::Rpc {
            server: name.to_owned(),
            method: "`initialize`".into(),
            code: e.code.0,
            message: text::show_message(&e.message),
        },
        _ => Error::Protocol {
            server: name.to_owned(),
            what: format!(
                "the handshake failed: {}",
                text::show_message(&handshake.to_string())
            ),
            stderr: stderr(),
        },
    }
}

/// The error for a server process that went away while `during`: its exit status when it
/// ended within a second, and the end of its standard error.
fn exited(name: &str, during: &str, process: &Arc<Process>) -> Error {
    let waiting = Arc::clone(process);
    let status = runtime::block(async move {
        let status = waiting.wait(Duration::from_secs(1)).await;
        if status.is_some() {
            waiting.drain_stderr(Duration::from_millis(200)).await;
        }
        status
    });
    Error::Exited {
        server: name.to_owned(),
        during: during.to_owned(),
        status: status.map(|s| s.to_string()),
        stderr: process.stderr_tail(),
    }
}

fn tool_result(result: CallToolResult) -> ToolResult {
    let is_error = result.is_error.unwrap_or(false);
    let mut texts = Vec::new();
    let mut other_blocks = 0;
    for block in &result.content {
        match block.as_text() {
            Some(t) => texts.push(t.text.as_str()),
            None => other_blocks += 1,
        }
    }
    let value = match result.structured_content {
        Some(value) => ToolValue::Structured(value),
        None => ToolValue::Text(texts.join("\n")),
    };
    ToolResult {
        value,
        is_error,
        other_blocks,
    }
}

fn excerpt_of(answer: &ServerResult) -> String {
    let json = serde_json::to_string(answer).unwrap_or_default();
    text::excerpt(&clean(&json), 300)
}
