//! `lwirc tools import`: an MCP server's tools as definition `tools` entries.

use std::time::Duration;

use lwir_mcp::{ConnectOptions, HttpSpec, Secret, Server, StdioSpec};
use lwir_render::terminal::sanitize;

use super::print;
use crate::exit;

/// Tools of an MCP server as definition `tools` entries.
///
/// `tools import` starts the server (`--mcp 'PROGRAM ARGS…'`, split like a shell would, but
/// run without one) or reaches it over streamable HTTP (`--mcp-url URL`), lists its tools
/// once it settled, and prints `{"tools": {ID: {description, input, output}}}` on standard
/// output: `input` from its `inputSchema`, `output` from its `outputSchema` (`{}` when it
/// declares none), both in LWIR's JSON Schema subset — local `$ref`s inlined, `$defs`
/// removed, annotations such as `$schema`, `title` and `default` dropped. This is the
/// normal form `lwirc run` and `lwirc bindings check` compare (drift). What was dropped
/// is said on standard error, one line each.
///
/// A started server gets `PATH`, `HOME`, `LANG` and the variables `--env` names, nothing
/// else of lwirc's environment; it is shut down before the command ends.
///
/// Exit status: 0 listed; 1 the server could not be started, reached or listed; 2 usage
/// error.
///
/// Examples:
///   lwirc tools import --mcp 'npx -y @modelcontextprotocol/server-everything' --prefix util.
///   lwirc tools import --mcp 'uvx mcp-server-time' > time-tools.json
///   lwirc tools import --mcp-url http://127.0.0.1:8931/mcp --header-env Authorization=REMOTE_AUTH
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: ToolsCommand,
}

#[derive(clap::Subcommand)]
enum ToolsCommand {
    /// List an MCP server's tools as definition `tools` entries.
    Import(Import),
}

#[derive(clap::Args)]
struct Import {
    /// The server's command line: a program and its arguments (quoted as in a shell).
    #[arg(
        long,
        value_name = "'CMD ARGS'",
        required_unless_present = "mcp_url",
        conflicts_with = "mcp_url"
    )]
    mcp: Option<String>,
    /// The server's streamable HTTP endpoint.
    #[arg(long, value_name = "URL")]
    mcp_url: Option<String>,
    /// Put before every tool's name to make its id (`util.` makes `util.echo`).
    #[arg(long, value_name = "NS.")]
    prefix: Option<String>,
    /// A variable of lwirc's environment the started server also gets (repeatable).
    #[arg(long, value_name = "NAME")]
    env: Vec<String>,
    /// A header sent to an HTTP server, its value taken from a variable: `NAME=VAR`
    /// (repeatable).
    #[arg(long, value_name = "NAME=VAR")]
    header_env: Vec<String>,
    /// How long starting (or reaching) the server and listing its tools may take, in
    /// seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    timeout: f64,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let ToolsCommand::Import(import) = args.command;
    if !(import.timeout > 0.0 && import.timeout <= 86_400.0) {
        eprintln!("lwirc: --timeout must be more than 0 and at most 86400 seconds");
        return Ok(exit::USAGE);
    }
    let timeout = Duration::from_secs_f64(import.timeout);
    let options = ConnectOptions {
        start_timeout: timeout,
        list_timeout: timeout,
        ..ConnectOptions::default()
    };
    let server = if let Some(line) = &import.mcp {
        let command = match shell_words::split(line) {
            Ok(words) if !words.is_empty() => words,
            Ok(_) => {
                eprintln!("lwirc: --mcp is empty; give the server's command line");
                return Ok(exit::USAGE);
            }
            Err(e) => {
                eprintln!("lwirc: --mcp `{}`: {e}", sanitize(line));
                return Ok(exit::USAGE);
            }
        };
        Server::start_stdio(&StdioSpec {
            name: command[0].clone(),
            command,
            cwd: None,
            env: import.env.clone(),
            options,
        })
    } else {
        let url = import.mcp_url.clone().unwrap_or_default();
        let mut headers = Vec::new();
        for pair in &import.header_env {
            let Some((name, var)) = pair.split_once('=') else {
                eprintln!("lwirc: --header-env `{}` is not NAME=VAR", sanitize(pair));
                return Ok(exit::USAGE);
            };
            let Some(value) = std::env::var_os(var) else {
                eprintln!(
                    "lwirc: --header-env {}: the variable `{}` is not set",
                    sanitize(name),
                    sanitize(var)
                );
                return Ok(exit::USAGE);
            };
            let value = value.to_string_lossy().into_owned();
            lwir_spec::redact::register_token(&value);
            headers.push((name.to_owned(), Secret::new(value)));
        }
        Server::connect_http(&HttpSpec {
            name: "server".into(),
            url,
            headers,
            options,
        })
    };
    let server = match server {
        Ok(server) => server,
        Err(e) => {
            eprintln!(
                "lwirc: {}",
                sanitize(&lwir_spec::redact::redact(&e.to_string()))
            );
            return Ok(exit::FINDINGS);
        }
    };
    let listed = lwir_mcp::tools_entries(&server, import.prefix.as_deref());
    server.shutdown();
    let (entries, dropped) = match listed {
        Ok(found) => found,
        Err(e) => {
            eprintln!(
                "lwirc: {}",
                sanitize(&lwir_spec::redact::redact(&e.to_string()))
            );
            return Ok(exit::FINDINGS);
        }
    };
    for d in &dropped {
        eprintln!("lwirc: {}", sanitize(&d.to_string()));
    }
    let count = entries["tools"].as_object().map_or(0, |t| t.len());
    eprintln!(
        "lwirc: {count} tool{} imported, {} thing{} dropped",
        if count == 1 { "" } else { "s" },
        dropped.len(),
        if dropped.len() == 1 { "" } else { "s" },
    );
    print(&format!("{}\n", serde_json::to_string_pretty(&entries)?))?;
    Ok(exit::OK)
}
