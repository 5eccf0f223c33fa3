//! `lwirc explain`: what a finding code means, from the code table's documentation.

use anyhow::bail;
use lwir_spec::Code;

use super::print;
use crate::exit;

/// Explain a finding code: what it detects, why it matters, a bad and a good example, and
/// whether its fix is safe to apply unattended.
///
/// Without CODE, lists every code with its name, validator, severity and summary.
/// `lwirc explain functions` shows the functions expressions may call.
///
/// Examples:
///   lwirc explain LW301
///   lwirc explain unknown-tool
///   lwirc explain functions
///   lwirc explain
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    /// A code (`LW301`), a problem name (`unknown-tool`), or `functions`.
    #[arg(value_name = "CODE")]
    code: Option<String>,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let Some(text) = args.code else {
        print(&Code::index())?;
        return Ok(exit::OK);
    };
    if text.trim() == "functions" {
        print(&format!(
            "# The expression whitelist\n\nExpressions may call only these functions and macros; \
             anything else is LW202 (or LW204 when it reaches outside the sandbox).\n\n{}",
            lwir_spec::expr::functions::reference_markdown()
        ))?;
        return Ok(exit::OK);
    }
    let Some(code) = Code::parse(text.trim()) else {
        bail!("unknown code `{text}`; `lwirc explain` lists them all");
    };
    print(&code.explanation())?;
    Ok(exit::OK)
}
