//! Tools over MCP (the Model Context Protocol) for lwirc: a blocking client of MCP servers
//! on rmcp, the official Rust SDK, and the normal form of their tools' schemas.
//!
//! # What it owns
//!
//! - [`Server`]: one connection to a server, started as a process speaking MCP over
//!   standard input and output ([`Server::start_stdio`]) or reached over streamable HTTP
//!   ([`Server::connect_http`]). Its tools are listed ([`Server::list_tools`]) and called
//!   ([`Server::call`]) from any number of threads at once; it is shut down once, on
//!   [`Server::shutdown`] or when dropped, leaving no process behind.
//! - [`normal`]: a tool schema in LWIR's JSON Schema subset, deterministic, with every
//!   keyword it dropped reported; [`tools_entries`] makes definition `tools` entries of a
//!   server's tools in that form (`lwirc tools import`, and what drift compares).
//!
//! The API blocks; the async runtime is inside. The crate owns one small tokio runtime (two
//! worker threads) that every connection shares, started on first use. Nothing async is
//! in its API, and it may be called from any thread, also one inside another runtime.
//!
//! # Threat model
//!
//! A tool server is untrusted. What it sends is hostile input:
//!
//! - an answer is held only up to its limit ([`CallOptions::max_result_bytes`],
//!   [`ConnectOptions::max_message_bytes`]); over stdio a larger one is read past without
//!   being held, and refused;
//! - a server that writes anything but MCP messages on its standard output, answers with
//!   the wrong shape, hangs, crashes or exits fails the start or the call with an
//!   [`Error`] that names the server and says what happened, never a panic or a wait
//!   without end: every request has a timeout, the handshake too, and `tools/list`
//!   pagination is bounded;
//! - text from it (its standard error, its error messages, excerpts of what it sent) is
//!   cleaned of terminal escapes and cut short before it is part of an error; a result's
//!   value is handed over as sent (the caller checks it against the tool's schema, and
//!   cleans its text before showing it: [`clean`]);
//! - results are not checked against the tool's `outputSchema` here, nor by rmcp (which
//!   validates nothing on the client side): the caller checks them, with pointers.
//!
//! What a server gets is minimal: a stdio server's environment is `PATH`, `HOME`, `LANG`
//! and the variables its binding names, nothing else of lwirc's (its API keys, its registry
//! password); its standard error is captured (the last 64 KiB), never passed to the
//! terminal; it runs in its own process group, which is killed at shutdown (a process that
//! left the group with `setsid` escapes this), and on Linux it is sent `SIGTERM` when
//! lwirc dies. An HTTP server gets the headers its binding names; their values never appear
//! in an error or in `Debug` ([`Secret`]).

mod error;
mod http;
mod import;
pub mod normal;
mod runtime;
mod server;
mod stdio;
mod text;
mod wire;

pub use error::Error;
pub use import::{entries, entry, tools_entries};
pub use normal::{Dropped, normalize};
pub use server::{
    CallOptions, ConnectOptions, HttpSpec, IDEMPOTENCY_KEY, Secret, Server, ServerInfo, StdioSpec,
    Tool, ToolResult, ToolValue,
};
pub use text::clean;
