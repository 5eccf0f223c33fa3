//! `lwirc lsp`: the language server, over standard input and output.

use lwir_lsp::{self as lsp, Config, Ended};

use crate::exit;

/// Run the language server on standard input and output, for an editor to start.
///
/// Every finding as you type (pushed, or pulled when the editor asks that way), fixes as
/// code actions (`source.fixAll.lwirc` applies every safe one), hover with types and the
/// schemas of tools, slots and producing steps, go to definition, completion and the
/// outline, for LWIR drafts, WorkflowDefinitions and goal files.
///
/// A draft is checked against the definition its `x-definition` member names, else the
/// one configured (`--definition`, or `definition` in the client's settings), else
/// `workflow.json` beside it; without one, only the draft-only checks run (LW901 says so).
/// Only a regular file inside the draft's workspace folder is read for it (the one given
/// with `--definition` wherever it is), at most 64 MiB.
///
/// Client settings (`initializationOptions`, or `lwirc` in the workspace configuration):
///   definition    the definition for drafts that name none (relative to the workspace)
///   drafts        globs of files that are drafts, whatever they hold
///   definitions   globs of files that are definitions
///   debounceMs    how long typing must pause before diagnostics are pushed (150)
///   codesUrl      where each code's documentation is (docs/codes.md)
///   registry      where goal files' templates are read from ($LWIR_REGISTRY, .lwir/registry)
///
/// A message that is not JSON-RPC (not JSON, not UTF-8, a request whose id is no string or
/// number) gets an error answer, -32700 or -32600, and the server goes on. A frame whose
/// headers cannot be read (no Content-Length, one that is not a number or is over 128 MiB,
/// a header line without its CR LF) or that the input ends inside leaves no next message to
/// find: the server stops, saying why on standard error.
///
/// Exit status: 0 after `shutdown` and `exit`, or when the editor closes standard input
/// between messages; 1 on `exit` without `shutdown` (as the protocol says); 2 when the
/// editor never initializes, or its input stops being the protocol's frames.
///
/// Examples:
///   lwirc lsp
///   lwirc lsp --definition examples/issue-triage/workflow.json
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    /// The definition for drafts that name none, as the `definition` setting.
    #[arg(long, value_name = "FILE")]
    definition: Option<std::path::PathBuf>,
    /// Accepted for editors that pass it; standard input and output are always used.
    #[arg(long, hide = true)]
    stdio: bool,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let mut config = Config::default();
    if let Some(definition) = args.definition {
        config.definition = Some(std::path::absolute(&definition).unwrap_or(definition));
    }
    let (connection, io) = lsp::wire::stdio();
    let ended = lsp::serve(&connection, config);
    // The writer thread ends when the last sender goes: the connection first, then join.
    drop(connection);
    // A stream that broke ended the server as a closed input would: say why, not 0.
    let broken = io.join();
    match (ended, broken) {
        (_, Err(broken)) => Err(anyhow::anyhow!("lwirc lsp cannot read on: {broken}")),
        (Ok(Ended::Shutdown | Ended::Disconnected), Ok(())) => Ok(exit::OK),
        (Ok(Ended::ExitWithoutShutdown), Ok(())) => Ok(exit::FINDINGS),
        (Err(e), Ok(())) => Err(e.into()),
    }
}
