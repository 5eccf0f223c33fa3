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
///
/// Client settings (`initializationOptions`, or `lwirc` in the workspace configuration):
///   definition    the definition for drafts that name none (relative to the workspace)
///   drafts        globs of files that are drafts, whatever they hold
///   definitions   globs of files that are definitions
///   debounceMs    how long typing must pause before diagnostics are pushed (150)
///   codesUrl      where each code's documentation is (docs/codes.md)
///   registry      where goal files' templates are read from ($LWIR_REGISTRY, .lwir/registry)
///
/// Exit status: 0 after `shutdown` and `exit`, or when the editor closes standard input;
/// 1 on `exit` without `shutdown` (as the protocol says); 2 when the editor never
/// initializes.
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
    let (connection, io_threads) = lsp_server::Connection::stdio();
    let ended = lsp::serve(&connection, config);
    // The writer thread ends when the last sender goes: the connection first, then join.
    drop(connection);
    let joined = io_threads.join();
    match ended {
        Ok(Ended::Shutdown | Ended::Disconnected) => Ok(exit::OK),
        Ok(Ended::ExitWithoutShutdown) => Ok(exit::FINDINGS),
        Err(e) => {
            joined.ok();
            Err(e.into())
        }
    }
}
