//! What can go wrong talking to an MCP server. Every message names the server (by the name
//! its binding gives it) and says what happened; text that came from the server (its
//! standard error, its error messages) is cleaned of terminal escapes and cut short.

use std::time::Duration;

/// A failure to start, list or call a tool server. A tool's own failure (`isError`) is
/// not an error here: it is a [`crate::ToolResult`] with `is_error` set.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server's description cannot be used as it is: an empty `command`, a variable
    /// name in `env` that is empty or holds `=` or NUL, a header name that is not an HTTP
    /// token, a URL that is not `http://` or `https://`, or a limit of zero.
    #[error("MCP server `{server}`: {reason}")]
    InvalidSpec {
        /// The server's name.
        server: String,
        /// What is wrong with the description.
        reason: String,
    },

    /// The server's command could not be started: `command: ["no-such-program"]` (not
    /// found, `ENOENT`), a file without the execute permission, a working directory that
    /// does not exist.
    #[error("MCP server `{server}`: cannot start `{program}`: {source}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The program of its command, cleaned.
        program: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },

    /// The server's process ended, or its connection closed, while lwirc waited for it:
    /// `command: ["sh", "-c", "exit 3"]` ends before the handshake; a server that crashes
    /// while it handles a `tools/call`; any request after the server went away.
    #[error("MCP server `{server}` {}{}", describe_exit(status.as_deref(), during), stderr_note(stderr))]
    Exited {
        /// The server's name.
        server: String,
        /// What lwirc was doing: `starting`, `` calling `echo` ``, `listing tools`.
        during: String,
        /// The exit status (`exit status 3`, `signal 9 (SIGKILL)`), when the process is
        /// known to have ended; `None` for a connection that closed.
        status: Option<String>,
        /// The end of the server's standard error, cleaned; empty when there was none.
        stderr: String,
    },

    /// The server broke the protocol: a line on its standard output that is not JSON
    /// (`Hello!`), a JSON value that is no JSON-RPC message (`[1, 2]`), an answer of the
    /// wrong shape (`{"result": "ok"}` to a `tools/call`), a failed handshake, a
    /// `tools/list` whose pages never end.
    #[error("MCP server `{server}`: {what}{}", stderr_note(stderr))]
    Protocol {
        /// The server's name.
        server: String,
        /// What it did, with an excerpt of what it sent, cleaned.
        what: String,
        /// The end of the server's standard error, cleaned; empty when there was none.
        stderr: String,
    },

    /// The server did not answer in time: a `tools/call` that runs past its
    /// [`crate::CallOptions::timeout`] (a `notifications/cancelled` was sent for it), a
    /// server that never answers `initialize`.
    #[error("MCP server `{server}`: no answer {during} within {}{}", seconds(*after), stderr_note(stderr))]
    Timeout {
        /// The server's name.
        server: String,
        /// What lwirc was waiting for: `to initialize`, `` to `tools/call` of `slow` ``.
        during: String,
        /// How long it waited.
        after: Duration,
        /// The end of the server's standard error, cleaned; empty when there was none.
        stderr: String,
    },

    /// An answer larger than allowed was refused before it was held whole: a tool that
    /// returns 100 MB against a [`crate::CallOptions::max_result_bytes`] of 16 MiB. The
    /// connection stays usable.
    #[error(
        "MCP server `{server}`: the answer to `{tool}` has at least {size} bytes, more than the {limit} allowed; it was refused"
    )]
    ResultTooLarge {
        /// The server's name.
        server: String,
        /// The tool (or method) whose answer it was.
        tool: String,
        /// The limit, in bytes.
        limit: usize,
        /// How many bytes had arrived when it was refused (at least this many).
        size: usize,
    },

    /// The server answered with a JSON-RPC error: a `tools/call` of a tool it does not
    /// have (`-32602 Unknown tool`), a request it does not support (`-32601`).
    #[error("MCP server `{server}`: {method} failed: {message} (JSON-RPC error {code})")]
    Rpc {
        /// The server's name.
        server: String,
        /// The request: `` `tools/call` of `echo` ``, `tools/list`.
        method: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message, cleaned.
        message: String,
    },

    /// The arguments of a call are not a JSON object (or null, which means none): `call`
    /// with `[1, 2]` or `"text"`. MCP passes arguments by name.
    #[error("MCP server `{server}`: the arguments of `{tool}` must be a JSON object, not {found}")]
    InvalidArguments {
        /// The server's name.
        server: String,
        /// The tool.
        tool: String,
        /// The JSON type given.
        found: &'static str,
    },

    /// The HTTP transport failed: a URL where nothing listens (connection refused), an
    /// answer `401 Unauthorized`, a server that closed the session.
    #[error("MCP server `{server}` at {url}: {message}")]
    Http {
        /// The server's name.
        server: String,
        /// The URL without credentials, query or fragment.
        url: String,
        /// What the HTTP client said, cleaned.
        message: String,
    },
}

fn describe_exit(status: Option<&str>, during: &str) -> String {
    match status {
        Some(status) => format!("exited ({status}) while {during}"),
        None => format!("closed its connection while {during}"),
    }
}

fn stderr_note(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("\n  its standard error ended with:\n{}", indent(stderr))
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("    {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.3} s", d.as_secs_f64())
    }
}
