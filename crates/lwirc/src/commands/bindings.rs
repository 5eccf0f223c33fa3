//! `lwirc bindings check`: whether a bindings file runs a registered version as it was
//! registered.

use lwir_render::terminal::sanitize;
use lwir_runtime::Runtime;

use super::run::{Places, bound, read_bindings, report_findings};
use super::{open_registry, read_json};
use crate::exit;

/// Check a bindings file against a registered version, before running it.
///
/// Every tool and model slot VERSION references must be bound in FILE; every MCP server
/// those tools are bound to is started (or reached, for a URL), once, with the environment
/// a run gives it (`PATH`, `HOME`, `LANG` and the variables its `env` names), and must
/// list each tool bound to it; each tool's description and schemas as listed now (in the
/// normal form of `lwirc tools import`) and each slot's model as bound must be those the
/// version was registered with (drift, LW701–LW712, as `lwirc run` reports it). Servers are
/// shut down before it ends. Nothing is called and nothing is recorded.
///
/// Exit status: 0 the bindings run the version as registered; 1 the version is not found
/// or does not verify; 2 usage error, an unreadable or malformed bindings file, a tool or
/// slot not bound, or a server that cannot be started or listed; 3 drift.
///
/// Examples:
///   lwirc bindings check bindings.json --version 5c281a30
///   lwirc bindings check examples/everything/bindings.json --version "$version"
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: BindingsCommand,
}

#[derive(clap::Subcommand)]
enum BindingsCommand {
    /// Every referenced tool and slot bound, every server started and listing its tools,
    /// no drift.
    Check {
        /// The bindings file (`lwir.bindings/1`).
        #[arg(value_name = "FILE")]
        file: String,
        /// The registered version: `sha256:<hex>` or a unique prefix of its hex digits.
        #[arg(long, value_name = "VERSION")]
        version: String,
        /// For a version registered before lwirc kept the tools' schemas in its record:
        /// the definition it was compiled against.
        #[arg(short = 'd', long = "definition", value_name = "WORKFLOW")]
        definition: Option<String>,
        #[command(flatten)]
        places: Places,
    },
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let BindingsCommand::Check {
        file,
        version,
        definition,
        places,
    } = args.command;
    let (registry, _) = open_registry(places.registry.clone(), true)?;
    let Some((bindings, document)) = read_bindings(&file)? else {
        return Ok(exit::USAGE);
    };
    let definition = match &definition {
        Some(path) => match read_json(path)? {
            Some(doc) => Some(doc),
            None => return Ok(exit::FINDINGS),
        },
        None => None,
    };
    let runtime = Runtime::new(places.store(), &registry);
    let check = match runtime.check_bindings(
        &version,
        &bindings,
        Some(&document),
        definition.as_ref(),
        &bound,
    ) {
        Ok(check) => check,
        Err(lwir_runtime::RunError::Registry(e)) => {
            eprintln!("lwirc: {}", sanitize(&e.to_string()));
            return Ok(exit::FINDINGS);
        }
        Err(e) => return Err(anyhow::anyhow!("{e}")),
    };
    let short = &check.version[..check.version.len().min(19)];
    if check.findings.is_empty() {
        eprintln!(
            "{file}: binds {} tool{} and {} model slot{} of {short}; every server listed its \
             tools; no drift",
            check.tools.len(),
            if check.tools.len() == 1 { "" } else { "s" },
            check.slots.len(),
            if check.slots.len() == 1 { "" } else { "s" },
            file = sanitize(&file),
        );
        return Ok(exit::OK);
    }
    report_findings(&check.findings, &file, document.source());
    let drift = check
        .findings
        .iter()
        .all(|f| f.code.as_str().starts_with("LW7"));
    Ok(if drift { exit::DRIFT } else { exit::USAGE })
}
