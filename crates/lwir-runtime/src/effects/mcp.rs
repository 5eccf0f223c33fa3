//! Tools over MCP: one connection per server of the bindings, made on first use (the drift
//! check lists the tools before the first step, so in practice before it), shared by every
//! call of the run, and shut down when the effects are dropped — at the run's end.
//!
//! A stdio server that exits during the run (it crashed, or was killed) fails the calls it
//! had in flight; the next call that needs it starts it again — at most
//! [`MAX_RESTARTS`] times per server and run — and lists its tools again: a tool that is not
//! what the drift check saw fails the steps that call it, as a change the server announced
//! does.
//!
//! A stdio server gets `PATH`, `HOME`, `LANG` and the variables its binding's `env` names,
//! nothing else of lwirc's environment (`lwir_mcp` builds that environment). What a server
//! answers is hostile input: its errors come back cleaned and cut short by `lwir_mcp`, and
//! every message here is redacted once more before it is recorded or shown.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use lwir_mcp::{CallOptions, ConnectOptions, HttpSpec, Secret, StdioSpec};
use lwir_spec::Code;

use super::{EffectError, LiveTool, ToolAnswer, ToolCall, ToolValue};
use crate::bindings::{Bindings, Server, ToolBinding};

/// A connection, or why it could not be made (kept: a server that did not start is not
/// started again by every call).
type Slot = Arc<OnceLock<Result<Arc<lwir_mcp::Server>, String>>>;

/// How many times one stdio server is started again in one run after it exited.
pub(crate) const MAX_RESTARTS: u32 = 3;

/// The MCP servers of a bindings file, connected on first use.
pub(super) struct Servers {
    specs: BTreeMap<String, Server>,
    /// Per server, the largest answer one of its tools may give (a connection's message
    /// limit must allow it).
    max_message: BTreeMap<String, usize>,
    slots: Mutex<BTreeMap<String, Slot>>,
    /// Per server, what the drift check saw.
    listed: Mutex<BTreeMap<String, Listing>>,
    /// Per server, how many times it was started again (held while one is: restarts are
    /// one at a time).
    restarts: Mutex<BTreeMap<String, u32>>,
}

/// A server's tools as the drift check listed them, and what changed since.
struct Listing {
    /// The tools before the first step (the run's reference).
    reference: BTreeMap<String, LiveTool>,
    /// How many list changes the server had announced when it was last listed.
    seen: u64,
    /// The tools (by name on the server) whose listing differs from the reference now.
    changed: std::collections::BTreeSet<String>,
}

impl Listing {
    /// The server's tools as listed again (after `seen` list changes): which differ from
    /// the reference now.
    fn relisted(&mut self, tools: &BTreeMap<String, LiveTool>, seen: u64) {
        self.changed = self
            .reference
            .iter()
            .filter(|(n, t)| tools.get(*n) != Some(t))
            .map(|(n, _)| n.clone())
            .collect();
        self.seen = seen;
    }
}

impl Servers {
    pub(super) fn new(bindings: &Bindings) -> Self {
        let mut max_message: BTreeMap<String, usize> = BTreeMap::new();
        for binding in bindings.tools.values() {
            if let ToolBinding::Server {
                server, max_result, ..
            } = binding
            {
                let limit = max_message
                    .entry(server.clone())
                    .or_insert(ConnectOptions::default().max_message_bytes);
                *limit = (*limit).max(*max_result);
            }
        }
        Self {
            specs: bindings.servers.clone(),
            max_message,
            slots: Mutex::new(BTreeMap::new()),
            listed: Mutex::new(BTreeMap::new()),
            restarts: Mutex::new(BTreeMap::new()),
        }
    }

    /// `connection` to `server`, or, when its process has ended, a new one (started again
    /// within [`MAX_RESTARTS`], its tools listed again and compared with what the drift
    /// check saw); why there is none.
    fn alive(
        &self,
        server: &str,
        connection: Arc<lwir_mcp::Server>,
    ) -> Result<Arc<lwir_mcp::Server>, String> {
        if !connection.exited() {
            return Ok(connection);
        }
        let mut restarts = self.restarts.lock().unwrap_or_else(PoisonError::into_inner);
        // Another call may have started it again meanwhile.
        let current = self.connect(server)?;
        if !Arc::ptr_eq(&current, &connection) && !current.exited() {
            return Ok(current);
        }
        let used = restarts.entry(server.to_owned()).or_insert(0);
        if *used >= MAX_RESTARTS {
            return Err(format!(
                "MCP server `{server}` exited during the run and was started again {MAX_RESTARTS} \
                 times already; it is not started again in this run{}",
                stderr_note(&current)
            ));
        }
        *used += 1;
        let fresh = Arc::new(self.start(server).map_err(|why| {
            format!("it exited during the run, and starting it again failed: {why}")
        })?);
        let tools = live_tools(&fresh).map_err(|e| {
            format!(
                "it exited during the run; started again, listing its tools failed: {}",
                shown(&e)
            )
        })?;
        {
            let mut listed = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(listing) = listed.get_mut(server) {
                listing.relisted(&tools, fresh.list_changes());
            }
        }
        let slot: Slot = Arc::new(OnceLock::new());
        let _ = slot.set(Ok(Arc::clone(&fresh)));
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(server.to_owned(), slot);
        Ok(fresh)
    }

    /// The connection to `server`, made now if it was not yet; the reason it cannot be.
    fn connect(&self, server: &str) -> Result<Arc<lwir_mcp::Server>, String> {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(slots.entry(server.to_owned()).or_default())
        };
        slot.get_or_init(|| self.start(server).map(Arc::new))
            .clone()
    }

    fn start(&self, server: &str) -> Result<lwir_mcp::Server, String> {
        let Some(spec) = self.specs.get(server) else {
            return Err(format!("no server `{server}` is declared under `servers`"));
        };
        let options = |timeout: Duration| ConnectOptions {
            start_timeout: timeout,
            list_timeout: timeout,
            max_message_bytes: self
                .max_message
                .get(server)
                .copied()
                .unwrap_or(ConnectOptions::default().max_message_bytes),
            ..ConnectOptions::default()
        };
        let started = match spec {
            Server::Stdio {
                command,
                env,
                timeout,
            } => lwir_mcp::Server::start_stdio(&StdioSpec {
                name: server.to_owned(),
                command: command.clone(),
                cwd: None,
                env: env.clone(),
                options: options(*timeout),
            }),
            Server::Http {
                url,
                headers_env,
                timeout,
            } => {
                let mut headers = Vec::new();
                for (header, variable) in headers_env {
                    let Some(value) = std::env::var_os(variable) else {
                        return Err(format!(
                            "MCP server `{server}`: its header `{header}` is taken from \
                             `{variable}`, which is not set"
                        ));
                    };
                    let value = value.to_string_lossy().into_owned();
                    lwir_spec::redact::register_token(&value);
                    headers.push((header.clone(), Secret::new(value)));
                }
                lwir_mcp::Server::connect_http(&HttpSpec {
                    name: server.to_owned(),
                    url: url.clone(),
                    headers,
                    options: options(*timeout),
                })
            }
        };
        started.map_err(|e| shown(&e))
    }

    /// The tools `server` lists now, each as its normal form (the drift check's view):
    /// by name on the server.
    pub(super) fn list(&self, server: &str) -> Result<BTreeMap<String, LiveTool>, EffectError> {
        let unavailable = |why: String| EffectError::new(Code::CapabilityUnavailable, why);
        let connection = self.connect(server).map_err(unavailable)?;
        let seen = connection.list_changes();
        let tools = live_tools(&connection).map_err(|e| unavailable(shown(&e)))?;
        self.listed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                server.to_owned(),
                Listing {
                    reference: tools.clone(),
                    seen,
                    changed: Default::default(),
                },
            );
        Ok(tools)
    }

    /// Whether tool `name` of `server` is still as the drift check saw it: when the server
    /// announced a change of its tool list since, it is listed again. An error says how it
    /// changed (or that it could not be listed again).
    fn unchanged(
        &self,
        server: &str,
        name: &str,
        connection: &lwir_mcp::Server,
    ) -> Result<(), String> {
        let now = connection.list_changes();
        let mut listed = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(listing) = listed.get_mut(server) else {
            return Ok(());
        };
        if listing.seen != now {
            let tools = live_tools(connection).map_err(|e| {
                format!(
                    "it announced a change of its tools during the run, and listing them \
                     again failed: {}",
                    shown(&e)
                )
            })?;
            listing.relisted(&tools, now);
        }
        if listing.changed.contains(name) {
            return Err(format!(
                "MCP server `{server}` changed its tool `{name}` during the run (it sent \
                 `notifications/tools/list_changed`): its description or schemas are no longer \
                 those checked before the first step, or it is gone"
            ));
        }
        Ok(())
    }

    /// Calls tool `name` of `server` for `call`, with its idempotency key in `_meta`.
    pub(super) fn call(
        &self,
        server: &str,
        name: &str,
        timeout: Duration,
        max_result: usize,
        call: &ToolCall,
    ) -> Result<ToolAnswer, EffectError> {
        let failed = |why: String| EffectError::new(Code::ToolCallFailed, why);
        let connection = self.connect(server).map_err(|why| {
            failed(format!(
                "tool `{}`: its MCP server could not be started: {why}",
                call.tool
            ))
        })?;
        let connection = self
            .alive(server, connection)
            .map_err(|why| failed(format!("tool `{}`: {why}", call.tool)))?;
        self.unchanged(server, name, &connection)
            .map_err(|why| failed(format!("tool `{}`: {why}", call.tool)))?;
        let options = CallOptions {
            timeout,
            max_result_bytes: max_result,
            idempotency_key: Some(call.idempotency_key.clone()),
        };
        let result = connection
            .call(name, call.args.clone(), &options)
            .map_err(|e| failed(format!("tool `{}`: {}", call.tool, shown(&e))))?;
        let value = match result.value {
            lwir_mcp::ToolValue::Structured(v) => ToolValue::Json(v),
            // A failure's text becomes a message: cleaned of terminal escapes.
            lwir_mcp::ToolValue::Text(t) if result.is_error => {
                ToolValue::Text(lwir_spec::redact::redact(&lwir_mcp::clean(&t)).into_owned())
            }
            lwir_mcp::ToolValue::Text(t) => ToolValue::Text(t),
        };
        Ok(ToolAnswer {
            value,
            is_error: result.is_error,
        })
    }
}

/// The tools `server` lists now, each in the normal form (the drift check's view), by name.
fn live_tools(server: &lwir_mcp::Server) -> Result<BTreeMap<String, LiveTool>, lwir_mcp::Error> {
    Ok(server
        .list_tools()?
        .iter()
        .map(|tool| {
            let (entry, _dropped) = lwir_mcp::entry(tool);
            let live = LiveTool {
                description: entry["description"].clone(),
                input: entry["input"].clone(),
                output: tool.output_schema.as_ref().map(|_| entry["output"].clone()),
            };
            (tool.name.clone(), live)
        })
        .collect())
}

/// `; its standard error ends: …` for a server that wrote to it, redacted; else nothing.
fn stderr_note(server: &lwir_mcp::Server) -> String {
    let tail = server.stderr_tail();
    match tail.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(line) => format!(
            "; its standard error ends: {}",
            lwir_spec::redact::redact(line)
        ),
        None => String::new(),
    }
}

/// An `lwir_mcp` error as a message: it names the server and is cleaned already; redacted.
fn shown(error: &lwir_mcp::Error) -> String {
    lwir_spec::redact::redact(&error.to_string()).into_owned()
}
