//! `lwirc drift`: compare a registered version's pinned tools and model slots with today's
//! definition.

use std::path::PathBuf;

use lwirc::drift;
use lwirc::pipeline::{self, Source};
use lwirc::registry::{Registry, RegistryError};

use super::{
    ColorChoice, Format, existing_registry, print, read_source, reader_validation, registry_dir,
    registry_failure,
};
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
    /// The registry directory (default: `$LWIR_REGISTRY`, else `.lwir/registry`).
    #[arg(long, value_name = "DIR")]
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
    let dir = registry_dir(args.registry);
    existing_registry(&dir)?;
    let registry = Registry::at(&dir);
    let version = registry.resolve(&args.version)?;
    let entry = registry
        .entry(&version)?
        .ok_or_else(|| RegistryError::NotFound {
            prefix: args.version.clone(),
        })?;
    let definition = read_source(&args.definition)?;
    let read = lwir_spec::document::read(definition.bytes.clone());
    let document = match read.document {
        Some(document) if read.findings.is_empty() => document,
        _ => {
            let validation = reader_validation(&definition);
            print(&args.format.render(&validation, args.color))?;
            return Ok(exit::FINDINGS);
        }
    };
    let pinned = entry.record.snapshot();
    let findings = drift::findings(&pinned, &version.to_string(), &document);
    // The renderers of `validate` take a validation: that of the pinned LWIR against today's
    // definition carries both files, and its findings are replaced by the drift findings.
    let lwir = Source {
        name: version.to_string(),
        bytes: registry.lwir(&version)?,
    };
    let mut validation = pipeline::validate(lwir, Some(definition));
    let drifted = findings.iter().any(|f| f.is_error());
    validation.findings = findings;
    validation.version = (!drifted).then(|| version.to_string());
    let mut text = args.format.render(&validation, args.color);
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
