//! One module per subcommand.

pub(crate) mod explain;
pub(crate) mod validate;

use std::io::{IsTerminal, Read, Write};

use anyhow::{Context, bail};
use lwirc::pipeline::Source;

/// Reads `path`, or standard input for `-`.
pub(crate) fn read_source(path: &str) -> anyhow::Result<Source> {
    if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
        return Ok(Source {
            name: "<stdin>".to_owned(),
            bytes,
        });
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read `{path}`"))?;
    Ok(Source {
        name: path.to_owned(),
        bytes,
    })
}

/// Reads the draft and the definition, refusing to read standard input twice.
pub(crate) fn read_pair(
    draft: &str,
    definition: Option<&str>,
) -> anyhow::Result<(Source, Option<Source>)> {
    if draft == "-" && definition == Some("-") {
        bail!("only one of DRAFT and --definition can be `-` (standard input)");
    }
    let draft = read_source(draft)?;
    let definition = definition.map(read_source).transpose()?;
    Ok((draft, definition))
}

/// When to use colour.
#[derive(Clone, Copy, Debug, Default, clap::ValueEnum)]
pub(crate) enum ColorChoice {
    /// When standard output is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    pub(crate) fn enabled(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

/// Writes `text` to standard output; a closed pipe (`lwirc … | head`) is not an error.
pub(crate) fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to standard output"),
    }
}
