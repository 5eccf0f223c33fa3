//! `lwirc registry`: list, show, verify and copy registered workflow versions.

use std::path::PathBuf;

use lwir_registry::{AnyStorage, Registry, RegistryError};
use lwir_render::terminal::{excerpt, sanitize};
use serde::Serialize;

use super::{open_registry, print, print_bytes, registry_failure};

/// At most this many characters of a workflow name are shown in `registry list`'s table.
const NAME_SHOWN: usize = 60;
use crate::exit;

/// Read, check and copy registries of workflow versions (directories or OCI registries).
///
/// `list` shows every version (workflow, version, when registered); `show` prints one
/// version's registration record (or, with `--lwir`, its canonical LWIR), found by a unique
/// prefix of its hash; `verify` re-reads and re-hashes everything and reports each corrupt,
/// missing or orphaned object; `copy` mirrors every version into another registry. Every
/// read re-verifies the hash of what it read.
///
/// The registry is `--registry REGISTRY`, else `$LWIR_REGISTRY`, else `.lwir/registry` under
/// the current directory: a directory, or a repository of an OCI distribution registry,
/// `oci://HOST[:PORT]/REPOSITORY` (`oci+http://` for plain HTTP; credentials from
/// `LWIR_REGISTRY_USER` and `LWIR_REGISTRY_PASSWORD`, else Docker's `config.json`). An OCI
/// registry may stay silent for `LWIR_REGISTRY_TIMEOUT` seconds (30 by default) at a time:
/// to accept the connection, to start answering, between two reads of an answer.
///
/// Exit status: 0 fine, 1 not found, ambiguous or corrupt, 2 usage error, or a registry
/// that does not exist or cannot be read.
///
/// Examples:
///   lwirc registry list
///   lwirc registry list --format json | jq -r '.[].version'
///   lwirc registry show 5c281a30
///   lwirc registry show sha256:5c281a30 --lwir > pinned.json
///   lwirc registry verify --registry /srv/lwir
///   lwirc registry list --registry oci://registry.example/team/lwir
///   lwirc registry copy .lwir/registry oci://registry.example/team/lwir
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: RegistryCommand,
    /// The registry: a directory, or `oci://HOST[:PORT]/REPOSITORY` (`oci+http://` for
    /// plain HTTP), which may stay silent for `$LWIR_REGISTRY_TIMEOUT` seconds (30) at a
    /// time (default: `$LWIR_REGISTRY`, else `.lwir/registry`).
    #[arg(long, value_name = "REGISTRY", global = true)]
    registry: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
enum RegistryCommand {
    /// List every registered version: workflow, version, when registered (oldest first).
    List {
        /// Output format.
        #[arg(long, value_enum, default_value_t = ListFormat::Human)]
        format: ListFormat,
    },
    /// Print the registration record of a version (JSON), found by a unique hash prefix.
    #[command(verbatim_doc_comment)]
    Show {
        /// The version: `sha256:<hex>` or a unique prefix of its hex digits, with or
        /// without `sha256:`; or a registered workflow's name (its latest version).
        #[arg(value_name = "VERSION|NAME")]
        version: String,
        /// Print the version's canonical LWIR instead of its record.
        #[arg(long)]
        lwir: bool,
    },
    /// Re-hash every stored file; report corrupt, missing and orphaned objects.
    ///
    /// Corrupt or missing objects are problems (exit 1). Orphans (objects no version
    /// refers to: a registration that did not finish, or one still running) and temporary
    /// files of unpublished writes are reported but harmless: nothing reads them.
    Verify,
    /// Copy every version from one registry to another (directory or OCI, either way).
    ///
    /// Each version is read and verified in FROM, written write-once to TO (blobs first,
    /// references last), then read back from TO and verified again. Versions already in
    /// TO are left as they are; every registration and record is copied as it is.
    ///
    /// Examples:
    ///   lwirc registry copy .lwir/registry oci://registry.example/team/lwir
    ///   lwirc registry copy oci+http://127.0.0.1:5000/lwir /srv/lwir-mirror
    #[command(verbatim_doc_comment)]
    Copy {
        /// The registry to copy from.
        #[arg(value_name = "FROM")]
        from: String,
        /// The registry to copy to (created on the first write).
        #[arg(value_name = "TO")]
        to: String,
    },
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum ListFormat {
    /// Aligned columns.
    Human,
    /// A JSON array of `{workflow, version, registered_at}`.
    Json,
}

#[derive(Serialize)]
struct Listed<'a> {
    workflow: &'a str,
    version: String,
    registered_at: &'a str,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    if let RegistryCommand::Copy { from, to } = &args.command {
        return registry_failure(copy(from, to));
    }
    let (registry, _) = open_registry(args.registry, true)?;
    let outcome = match args.command {
        RegistryCommand::List { format } => list(&registry, format),
        RegistryCommand::Show { version, lwir } => show(&registry, &version, lwir),
        RegistryCommand::Verify => verify(&registry),
        RegistryCommand::Copy { .. } => unreachable!("handled above"),
    };
    registry_failure(outcome)
}

fn list(registry: &Registry<AnyStorage>, format: ListFormat) -> anyhow::Result<u8> {
    let (entries, problems) = registry.list()?;
    let rows: Vec<Listed> = entries
        .iter()
        .map(|e| Listed {
            workflow: &e.record.workflow,
            version: e.version.to_string(),
            registered_at: &e.record.registered_at,
        })
        .collect();
    let text = match format {
        ListFormat::Json => serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n",
        ListFormat::Human => {
            // A name is cut for the table (the padding width must stay small: past 65 535
            // columns formatting panics); `--format json` has it whole.
            let shown: Vec<_> = rows
                .iter()
                .map(|r| {
                    let workflow = excerpt(&sanitize(r.workflow), NAME_SHOWN).into_owned();
                    (workflow, sanitize(r.registered_at))
                })
                .collect();
            let width = shown
                .iter()
                .map(|(w, _)| w.chars().count())
                .max()
                .unwrap_or(0);
            rows.iter()
                .zip(&shown)
                .map(|(r, (workflow, at))| format!("{workflow:<width$}  {}  {at}\n", r.version))
                .collect()
        }
    };
    print(&text)?;
    for problem in &problems {
        eprintln!("lwirc: {}", sanitize(&problem.to_string()));
    }
    Ok(if problems.is_empty() {
        exit::OK
    } else {
        exit::FINDINGS
    })
}

fn show(registry: &Registry<AnyStorage>, text: &str, lwir: bool) -> anyhow::Result<u8> {
    let version = registry.resolve_or_latest(text)?;
    let entry = registry.entry(&version)?.ok_or(RegistryError::NotFound {
        prefix: text.to_owned(),
    })?;
    let bytes = if lwir {
        registry.lwir(&version)?
    } else {
        registry.record_bytes(&entry)?
    };
    print_bytes(&bytes)?;
    Ok(exit::OK)
}

fn verify(registry: &Registry<AnyStorage>) -> anyhow::Result<u8> {
    let report = registry.verify()?;
    let mut text = String::new();
    for issue in &report.issues {
        text.push_str(&format!(
            "{:<10}  {}: {}\n",
            issue.kind.as_str(),
            sanitize(&issue.location),
            sanitize(&issue.detail)
        ));
    }
    let problems = report.issues.iter().filter(|i| i.kind.is_problem()).count();
    text.push_str(&format!(
        "verified {} version{} and {} object{}: {}\n",
        report.versions,
        if report.versions == 1 { "" } else { "s" },
        report.objects,
        if report.objects == 1 { "" } else { "s" },
        match problems {
            0 => "ok".to_owned(),
            1 => "1 problem".to_owned(),
            n => format!("{n} problems"),
        }
    ));
    print(&text)?;
    Ok(if report.has_problems() {
        exit::FINDINGS
    } else {
        exit::OK
    })
}

fn copy(from: &str, to: &str) -> anyhow::Result<u8> {
    let (source, source_name) = open_registry(Some(PathBuf::from(from)), true)?;
    let (destination, destination_name) = open_registry(Some(PathBuf::from(to)), false)?;
    destination
        .check_writable()
        .map_err(|why| anyhow::anyhow!("cannot write to {destination_name}: {why}"))?;
    let report = source.copy_to(&destination)?;
    for (version, workflow) in &report.copied {
        eprintln!(
            "copied  {version}  {}",
            sanitize(&excerpt(workflow, NAME_SHOWN))
        );
    }
    for (version, workflow) in &report.present {
        eprintln!(
            "present {version}  {}",
            sanitize(&excerpt(workflow, NAME_SHOWN))
        );
    }
    for problem in &report.problems {
        eprintln!("problem {}", sanitize(&problem.to_string()));
    }
    eprintln!(
        "{} copied, {} already there, {} problem{} ({source_name} → {destination_name})",
        report.copied.len(),
        report.present.len(),
        report.problems.len(),
        if report.problems.len() == 1 { "" } else { "s" }
    );
    Ok(if report.problems.is_empty() {
        exit::OK
    } else {
        exit::FINDINGS
    })
}
