//! `lwirc validate`: run every validator and report the findings.

use super::{ColorChoice, Format, print, read_pair, read_source};
use crate::exit;
use lwir_validators::pipeline;

/// Validate an LWIR draft and report every problem at once.
///
/// Runs every validator — document (strict I-JSON), shape (the meta-schemas), expression,
/// capability (tools), model (slots), compat (values flowing into schemas), graph (ids,
/// cycles, bounds) — and prints every finding with its code, JSON Pointer and exact bytes.
/// Without `-d`, the checks that need the workflow definition are skipped and a warning
/// says so. With `-d` and no draft, the definition itself is validated (its meta-schema,
/// the JSON Schema subset of its schemas, its planner's model slot): what every draft
/// compiled against it would otherwise report.
///
/// Exit status: 0 no errors (warnings allowed), 1 errors found, 2 usage error or
/// unreadable file.
///
/// Examples:
///   lwirc validate draft.json -d workflow.json
///   lwirc validate draft.json -d workflow.json --format json | jq '.findings[].code'
///   lwirc validate -d workflow.json                      # the definition alone
///   planner-cli | lwirc validate - -d workflow.json --format sarif > lwirc.sarif
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    /// The LWIR draft to validate (`-` for standard input). Without it, `-d` names the
    /// definition to validate on its own.
    #[arg(value_name = "DRAFT", required_unless_present = "definition")]
    draft: Option<String>,
    /// The WorkflowDefinition the draft is compiled against.
    #[arg(short = 'd', long = "definition", value_name = "WORKFLOW")]
    definition: Option<String>,
    /// Output format: `human` (for people), `json` (the findings contract), `sarif` (SARIF 2.1.0).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// When to colour human output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let validation = match (&args.draft, &args.definition) {
        (Some(draft), definition) => {
            let (draft, definition) = read_pair(draft, definition.as_deref())?;
            pipeline::validate(draft, definition)
        }
        (None, Some(definition)) => pipeline::validate_definition(read_source(definition)?),
        // clap requires one of them.
        (None, None) => anyhow::bail!("give a DRAFT, or `-d WORKFLOW` to validate a definition"),
    };
    super::say_misplaced(&validation);
    let text = args.format.render(&validation, args.color);
    print(&text)?;
    let code = if validation.has_errors() {
        exit::FINDINGS
    } else {
        exit::OK
    };
    // Freeing a large draft's tree takes a while (10 ms for a 50 MB draft), and the
    // process ends next: it is freed beside that, not before it.
    let size = validation
        .document(lwir_spec::Origin::Draft)
        .map_or(0, |d| d.source().len());
    if size > 1 << 20 {
        std::thread::spawn(move || drop(validation));
    }
    Ok(code)
}
