//! `lwirc register`: validate a draft and store it as an immutable workflow version.

use std::path::PathBuf;
use std::time::SystemTime;

use lwir_registry::{Registered, Registration, RegistryError};
use lwir_render::human;
use lwir_render::terminal::sanitize;
use lwir_validators::pipeline;

use super::{ColorChoice, DraftArgs, open_registry, print, stderr_color};
use crate::exit;

/// Validate a draft and register it as an immutable, content-addressed workflow version.
///
/// The draft is validated against its definition exactly as `lwirc validate` does. On any
/// error nothing is registered: the findings are printed and the exit status is 1. A clean
/// draft is stored as its RFC 8785 canonical bytes under its WorkflowVersion
/// (`sha256:` + SHA-256 of those bytes), with a registration record: the workflow name, a
/// snapshot of every tool and model slot the draft references (hashes of each tool's
/// description and schemas; each slot's model, quality, capabilities and context size), the
/// validation result with its warnings, the lwirc version and the time. The version is
/// printed on standard output, and warnings and progress on standard error; the findings
/// of a draft with errors are printed on standard output (nothing is registered).
///
/// Registering the same draft again is idempotent (exit 0, nothing written). Registering it
/// against a definition whose referenced tools or slots differ from the recorded snapshot
/// is refused (exit 1, naming each difference) — unless `--rebase` is given: then, the
/// draft having validated clean against today's definition, the version gets a new
/// registration record pinning today's snapshot, which supersedes the latest one for
/// `drift`, `registry show` and `registry list`. The version (the LWIR's hash) does not
/// change, and every earlier record stays stored. This is the way forward after `lwirc
/// drift` reports a change the draft still validates against. Stored files are read-only;
/// writes are atomic and safe with any number of concurrent `lwirc register` processes.
///
/// The registry is `--registry REGISTRY`, else `$LWIR_REGISTRY`, else `.lwir/registry` under
/// the current directory: a directory, or `oci://HOST[:PORT]/REPOSITORY` (`oci+http://` for
/// plain HTTP), where each version is an OCI artifact whose layer digest is the version.
///
/// Exit status: 0 registered (or already registered), 1 errors in the draft, refused, or a
/// corrupt registry, 2 usage error or unreadable file.
///
/// Examples:
///   lwirc register draft.json -d workflow.json
///   version=$(lwirc register draft.json -d workflow.json) && lwirc registry show "$version"
///   lwirc register draft.json -d workflow.json --registry /srv/lwir
///   lwirc register draft.json -d today.json --rebase     # after drift, re-pin the snapshot
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    #[command(flatten)]
    files: DraftArgs,
    /// The registry: a directory, or `oci://HOST[:PORT]/REPOSITORY` (`oci+http://` for
    /// plain HTTP), which may stay silent for `$LWIR_REGISTRY_TIMEOUT` seconds (30) at a
    /// time (default: `$LWIR_REGISTRY`, else `.lwir/registry`).
    #[arg(long, value_name = "REGISTRY")]
    registry: Option<PathBuf>,
    /// When the version is registered against another snapshot, register it again against
    /// this definition's (a new record; the earlier ones stay) instead of refusing.
    #[arg(long)]
    rebase: bool,
    /// When to colour the findings.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let (draft, definition) = args.files.read()?;
    let validation = pipeline::compile(draft, Some(definition));
    let options = |color| human::HumanOptions {
        color,
        ..Default::default()
    };
    let registration = match Registration::new(&validation, SystemTime::now()) {
        Ok(registration) => registration,
        Err(why) => {
            super::say_misplaced(&validation);
            print(&human::render(&validation, options(args.color.enabled())))?;
            eprintln!("lwirc: not registered: {}", sanitize(&why.to_string()));
            return Ok(exit::FINDINGS);
        }
    };
    if !validation.findings.is_empty() {
        // Warnings: worth seeing, but standard output is for the version.
        eprint!("{}", human::render(&validation, options(stderr_color())));
    }
    let (registry, dir) = open_registry(args.registry, false)?;
    match registry.register(&registration, args.rebase) {
        Ok(Registered::New(entry)) => {
            eprintln!(
                "registered `{}` as {} in {}",
                sanitize(&entry.record.workflow),
                entry.version,
                dir
            );
            print(&format!("{}\n", entry.version))?;
            Ok(exit::OK)
        }
        Ok(Registered::Already(entry)) => {
            eprintln!(
                "{} is already registered (`{}`, {}) with the same snapshot; nothing written",
                entry.version,
                sanitize(&entry.record.workflow),
                sanitize(&entry.record.registered_at)
            );
            print(&format!("{}\n", entry.version))?;
            Ok(exit::OK)
        }
        Ok(Registered::Rebased { entry, changes }) => {
            eprintln!(
                "registered `{}` again as {} (registration {}) in {}, pinning today's snapshot:",
                sanitize(&entry.record.workflow),
                entry.version,
                entry.registration + 1,
                dir
            );
            for change in changes {
                eprintln!("  - {}", sanitize(&change.to_string()));
            }
            eprintln!(
                "the earlier registration records are kept; drift now compares with this one"
            );
            print(&format!("{}\n", entry.version))?;
            Ok(exit::OK)
        }
        Err(RegistryError::SnapshotMismatch { version, changes }) => {
            eprintln!(
                "lwirc: refused: {version} is already registered against a different \
                 capability/model snapshot; what differs today:"
            );
            for change in changes {
                eprintln!("  - {}", sanitize(&change.to_string()));
            }
            eprintln!(
                "a version is immutable: `lwirc drift {version} -d {0}` shows the same; if the \
                 draft is still right against it, `lwirc register … -d {0} --rebase` records \
                 a new registration of the same version (the earlier one is kept)",
                sanitize(&args.files.definition)
            );
            Ok(exit::FINDINGS)
        }
        Err(RegistryError::Storage(e)) => Err(super::storage_error(e)),
        Err(e) => {
            eprintln!("lwirc: {}", sanitize(&e.to_string()));
            Ok(exit::FINDINGS)
        }
    }
}
