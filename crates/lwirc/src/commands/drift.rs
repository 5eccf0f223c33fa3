//! `lwirc drift`: compare a registered version's pinned tools and model slots with today's
//! definition.

use std::path::PathBuf;

use lwir_registry::RegistryError;
use lwir_registry::drift;
use lwir_render::{File, Report};

use super::{ColorChoice, Format, open_registry, print, read_source, registry_failure};
use crate::exit;

/// Check whether anything a registered version depends on changed in today's definition.
///
/// Compares the capability and model-slot snapshot pinned when VERSION was registered with
/// WORKFLOW as it is now, and reports each change as a finding in the definition: a tool's
/// description, input or output schema changed, or the tool was removed (LW701–LW704); a
/// model slot was removed, names another model, has another quality tier, lost a
/// capability or has a smaller context window (LW705–LW709). Other changes to a slot it
/// uses are a warning (LW710). Changes to tools and slots the version does not use are not
/// drift. `lwirc explain LW702` tells more about each code.
///
/// VERSION is `sha256:<hex>` or a unique prefix of its hex digits.
///
/// Exit status: 0 no drift (warnings allowed), 3 drift, 1 version not found or registry
/// corrupt, or WORKFLOW is not I-JSON, 2 usage error, unreadable file, or no registry.
///
/// Examples:
///   lwirc drift 5c281a30 -d workflow.json
///   lwirc drift sha256:5c281a30 -d workflow.json --format json | jq '.findings[].message'
///   lwirc drift "$(lwirc register draft.json -d workflow.json)" -d workflow.json
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    /// The registered version: `sha256:<hex>` or a unique prefix of its hex digits.
    #[arg(value_name = "VERSION")]
    version: String,
    /// Today's WorkflowDefinition (`-` for standard input).
    #[arg(short = 'd', long = "definition", value_name = "WORKFLOW")]
    definition: String,
    /// The registry: a directory, or `oci://HOST[:PORT]/REPOSITORY` (`oci+http://` for
    /// plain HTTP), which may stay silent for `$LWIR_REGISTRY_TIMEOUT` seconds (30) at a
    /// time (default: `$LWIR_REGISTRY`, else `.lwir/registry`).
    #[arg(long, value_name = "REGISTRY")]
    registry: Option<PathBuf>,
    /// Output format: `human`, `json` (the findings contract of `validate`), `sarif`.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// When to colour human output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    registry_failure(check(args))
}

fn check(args: Args) -> anyhow::Result<u8> {
    let (registry, _) = open_registry(args.registry.clone(), true)?;
    let version = registry.resolve(&args.version)?;
    let entry = registry
        .entry(&version)?
        .ok_or_else(|| RegistryError::NotFound {
            prefix: args.version.clone(),
        })?;
    let definition = read_source(&args.definition)?;
    let (read, reader_findings) = lwir_spec::document::read_document(definition.bytes);
    let document = match read {
        Ok(document) if reader_findings.is_empty() => document,
        Ok(document) => {
            return not_json(&args, &definition.name, document.source(), &reader_findings);
        }
        Err(bytes) => return not_json(&args, &definition.name, &bytes, &reader_findings),
    };
    let pinned = entry.record.snapshot();
    let findings = drift::findings(&pinned, &version.to_string(), &document);
    let drifted = findings.iter().any(|f| f.is_error());
    // The report is about the pinned LWIR; the drift findings point into today's definition.
    let name = version.to_string();
    let lwir = registry.lwir(&version)?;
    let report = Report {
        findings: &findings,
        draft: Some(File {
            name: &name,
            bytes: &lwir,
            document: None,
        }),
        definition: Some(File {
            name: &definition.name,
            bytes: document.source(),
            document: Some(&document),
        }),
        version: (!drifted).then_some(name.as_str()),
    };
    let mut text = args.format.render(report, args.color);
    if matches!(args.format, Format::Human) {
        text.push_str(&format!(
            "pinned: {} tool{} and {} model slot{}; {}\n",
            pinned.tools.len(),
            if pinned.tools.len() == 1 { "" } else { "s" },
            pinned.model_slots.len(),
            if pinned.model_slots.len() == 1 {
                ""
            } else {
                "s"
            },
            if drifted { "drifted" } else { "no drift" }
        ));
    }
    print(&text)?;
    Ok(if drifted { exit::DRIFT } else { exit::OK })
}

/// Reports a definition that is not I-JSON: its reader findings (exit 1).
fn not_json(
    args: &Args,
    name: &str,
    bytes: &[u8],
    findings: &[lwir_spec::Finding],
) -> anyhow::Result<u8> {
    let file = File {
        name,
        bytes,
        document: None,
    };
    print(
        &args
            .format
            .render(Report::of_file(findings, file), args.color),
    )?;
    Ok(exit::FINDINGS)
}
