//! `lwirc manifest`: the PlannerManifest of a workflow definition.

use anyhow::Context;
use lwir_repair::manifest::{PlannerManifest, harness_id};

use super::{print, read_json, read_source};
use crate::exit;

/// Print the PlannerManifest of a workflow definition, as JSON.
///
/// The manifest pins what a planner session runs with: `harnessId` (this harness,
/// `lwirc/<version>`), `plannerModelSlotId` (`planner.model`), `systemPromptHash`
/// (`planner.system`), `skillsHash` (every skill's `{name, description}` frontmatter, in
/// order), `workflowDefinitionHash` (the whole definition), `globalToolsHash` (the `tools`
/// object) and `memoryStoreIds` (`planner.memory_stores`). Each hash is `sha256:<hex>` over
/// the RFC 8785 canonical JSON of its part (`crates/lwir-spec/README.md`, "PlannerManifest").
///
/// With `--against RECORDED`, also compares with a manifest printed earlier (the one a
/// session started with) and names every field that differs (exit 3).
///
/// Exit status: 0 printed (and unchanged), 3 differs from `--against`, 1 WORKFLOW is not
/// I-JSON, 2 usage error or unreadable file.
///
/// Examples:
///   lwirc manifest workflow.json
///   lwirc manifest workflow.json > session-manifest.json
///   lwirc manifest workflow.json --against session-manifest.json
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    /// The WorkflowDefinition (`-` for standard input).
    #[arg(value_name = "WORKFLOW")]
    definition: String,
    /// A manifest printed earlier, to compare with.
    #[arg(long, value_name = "RECORDED")]
    against: Option<String>,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let Some(document) = read_json(&args.definition)? else {
        return Ok(exit::FINDINGS);
    };
    let manifest = PlannerManifest::of(document.root(), harness_id());
    let recorded: Option<PlannerManifest> = match &args.against {
        Some(path) => {
            let recorded = read_source(path)?;
            Some(
                serde_json::from_slice(&recorded.bytes)
                    .with_context(|| format!("`{path}` is not a PlannerManifest"))?,
            )
        }
        None => None,
    };
    print(&(serde_json::to_string_pretty(&manifest)? + "\n"))?;
    if let Some(recorded) = recorded
        && let Err(drift) = recorded.check(&manifest)
    {
        eprintln!("lwirc: {drift}");
        for difference in &drift.differences {
            eprintln!("  - {difference}");
        }
        return Ok(exit::DRIFT);
    }
    Ok(exit::OK)
}
