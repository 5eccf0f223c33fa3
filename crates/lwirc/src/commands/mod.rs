//! One module per subcommand.

pub(crate) mod bindings;
pub(crate) mod canon;
pub(crate) mod compile;
pub(crate) mod drift;
pub(crate) mod eval;
pub(crate) mod explain;
pub(crate) mod fix;
pub(crate) mod goal;
pub(crate) mod goals;
pub(crate) mod hash;
pub(crate) mod lsp;
pub(crate) mod manifest;
pub(crate) mod planning;
pub(crate) mod ranges;
pub(crate) mod register;
pub(crate) mod registry;
pub(crate) mod repair;
pub(crate) mod run;
pub(crate) mod runner;
pub(crate) mod runs;
pub(crate) mod sandbox;
pub(crate) mod test_code;
pub(crate) mod tools;
pub(crate) mod validate;

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use anyhow::{Context, bail};
use lwir_render::terminal::sanitize;
use lwir_render::{File, Report, human};
use lwir_spec::SpannedDocument;
use lwir_spec::document;
use lwir_validators::pipeline::Source;

/// Reads `path`, or standard input for `-`. A file larger than the reader reads
/// ([`document::MAX_BYTES`]) is refused before it is read.
pub(crate) fn read_source(path: &str) -> anyhow::Result<Source> {
    let limit = document::MAX_BYTES as u64;
    match read_at_most(path, limit)? {
        Ok(source) => Ok(source),
        Err(TooLarge { size: None }) => bail!(
            "standard input holds more than {limit} bytes; lwirc reads documents of up to \
             {limit} bytes (4 GiB)"
        ),
        Err(TooLarge { size: Some(size) }) => {
            bail!("`{path}` is {size} bytes; lwirc reads documents of up to {limit} bytes (4 GiB)")
        }
    }
}

/// A file or stream longer than the most a command reads of it.
pub(crate) struct TooLarge {
    /// The file's size (at least); `None` for standard input, which is not read past the
    /// limit.
    pub(crate) size: Option<u64>,
}

/// Reads `path` (standard input for `-`) when it holds at most `limit` bytes: a file whose
/// size says it is larger is not read at all, and no more than `limit + 1` bytes are read
/// of anything (a file that grows, a pipe, a device).
pub(crate) fn read_at_most(path: &str, limit: u64) -> anyhow::Result<Result<Source, TooLarge>> {
    let mut bytes = Vec::new();
    if path == "-" {
        std::io::stdin()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
        if bytes.len() as u64 > limit {
            return Ok(Err(TooLarge { size: None }));
        }
        return Ok(Ok(Source {
            name: "<stdin>".to_owned(),
            bytes,
        }));
    }
    let file = std::fs::File::open(path).with_context(|| format!("cannot read `{path}`"))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > limit {
        return Ok(Err(TooLarge { size: Some(size) }));
    }
    // The size is a hint (the file may change); the limit holds whatever is read.
    bytes.reserve(usize::try_from(size).unwrap_or(0));
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read `{path}`"))?;
    if bytes.len() as u64 > limit {
        return Ok(Err(TooLarge {
            size: Some(bytes.len() as u64),
        }));
    }
    Ok(Ok(Source {
        name: path.to_owned(),
        bytes,
    }))
}

/// A draft and the definition it is compiled against, both required (`register`, `repair`).
#[derive(clap::Args)]
pub(crate) struct DraftArgs {
    /// The LWIR draft (`-` for standard input).
    #[arg(value_name = "DRAFT")]
    pub(crate) draft: String,
    /// The WorkflowDefinition the draft is compiled against (`-` for standard input).
    #[arg(short = 'd', long = "definition", value_name = "WORKFLOW")]
    pub(crate) definition: String,
}

impl DraftArgs {
    /// Reads both files.
    pub(crate) fn read(&self) -> anyhow::Result<(Source, Source)> {
        let (draft, definition) = read_pair(&self.draft, Some(&self.definition))?;
        Ok((draft, definition.context("a definition is required")?))
    }
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
    print_bytes(text.as_bytes())
}

/// Reads `path` (`-` for standard input) as strict I-JSON: its document, or `None` after
/// printing the reader's findings for people on standard error.
pub(crate) fn read_json(path: &str) -> anyhow::Result<Option<SpannedDocument>> {
    Ok(document_or_report(read_source(path)?))
}

/// The limits of one call of a planner, reviewer or runner command: `seconds` to answer,
/// `max_output` bytes of answer.
pub(crate) fn process_limits(seconds: f64, max_output: usize) -> lwir_repair::process::Limits {
    lwir_repair::process::Limits {
        timeout: std::time::Duration::from_secs_f64(seconds),
        max_output,
    }
}

/// The one argument of `lwirc canon` and `lwirc hash`.
#[derive(clap::Args)]
pub(crate) struct JsonFile {
    /// The JSON file (`-` for standard input).
    #[arg(value_name = "FILE")]
    file: String,
}

impl JsonFile {
    /// Hands the RFC 8785 canonical bytes of the file, made without a document tree, to
    /// `print`: exit 0; exit 1 after printing the reader's findings for people on standard
    /// error where it is not I-JSON.
    pub(crate) fn print_canonical(
        &self,
        print: impl FnOnce(&[u8]) -> anyhow::Result<()>,
    ) -> anyhow::Result<u8> {
        let source = read_source(&self.file)?;
        let Some(canonical) = lwir_spec::canon::canonicalize(&source.bytes) else {
            // Not clean I-JSON: read it again, the usual way, which reports the findings.
            document_or_report(source);
            return Ok(crate::exit::FINDINGS);
        };
        print(&canonical)?;
        Ok(crate::exit::OK)
    }
}

/// `source` read as strict I-JSON: its document, or `None` after printing the reader's
/// findings for people on standard error. The bytes move into the document (no copy is
/// kept beside it).
pub(crate) fn document_or_report(source: Source) -> Option<SpannedDocument> {
    let Source { name, bytes } = source;
    let (document, findings) = document::read_document(bytes);
    let bytes = match document {
        Ok(document) if findings.is_empty() => return Some(document),
        Ok(document) => document.into_source(),
        Err(bytes) => bytes,
    };
    report_reader_findings(&name, &bytes, &findings);
    None
}

/// Prints the findings of reading `bytes` (file `name`) as strict I-JSON for people on
/// standard error.
fn report_reader_findings(name: &str, bytes: &[u8], findings: &[lwir_spec::Finding]) {
    let file = File {
        name,
        bytes,
        document: None,
    };
    let report = human::render(
        Report::of_file(findings, file),
        human::HumanOptions {
            color: stderr_color(),
            ..Default::default()
        },
    );
    eprint!("{report}");
}

/// Output formats of findings.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum Format {
    /// miette's graphical report.
    Human,
    /// One JSON object: file, version (when clean), findings, summary.
    Json,
    /// A SARIF 2.1.0 log.
    Sarif,
}

impl Format {
    /// The report (of a validation, or any findings) in this format, ending with a newline.
    pub(crate) fn render<'a>(self, report: impl Into<Report<'a>>, color: ColorChoice) -> String {
        let report = report.into();
        match self {
            Format::Human => human::render(
                report,
                human::HumanOptions {
                    color: color.enabled(),
                    ..Default::default()
                },
            ),
            Format::Json => lwir_render::json::render(report) + "\n",
            Format::Sarif => lwir_render::sarif::render(report) + "\n",
        }
    }
}

/// Whether standard error is a terminal that takes colour (`NO_COLOR` respected).
pub(crate) fn stderr_color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Writes `bytes` to standard output; a closed pipe is not an error.
pub(crate) fn print_bytes(bytes: &[u8]) -> anyhow::Result<()> {
    print_with(|out| out.write_all(bytes))
}

/// Runs `write` on standard output and flushes it; a closed pipe is not an error.
pub(crate) fn print_with(
    write: impl FnOnce(&mut std::io::StdoutLock<'static>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to standard output"),
    }
}

/// The registry `--registry` (else `LWIR_REGISTRY`, else `.lwir/registry`) names — a
/// directory, or `oci://HOST[:PORT]/REPOSITORY` — and how messages name it. With
/// `must_exist`, a directory that does not exist is a usage error (reading a mistyped path
/// must not look like reading an empty registry).
pub(crate) fn open_registry(
    flag: Option<PathBuf>,
    must_exist: bool,
) -> anyhow::Result<(lwir_registry::Registry<lwir_registry::AnyStorage>, String)> {
    let location = lwir_registry::location(flag.as_deref(), None);
    let text = location.to_string_lossy().into_owned();
    let storage = lwir_registry::AnyStorage::parse(&text).map_err(|e| anyhow::anyhow!("{e}"))?;
    let name = match &storage {
        lwir_registry::AnyStorage::Directory(d) => {
            if must_exist {
                existing_registry(d.root())?;
            }
            d.root().display().to_string()
        }
        lwir_registry::AnyStorage::Oci(o) => o.url().display(),
    };
    Ok((lwir_registry::Registry::new(storage), name))
}

/// Fails (a usage error, exit 2) naming `dir` when there is no registry there: reading a
/// mistyped path must not look like reading an empty registry. (`lwirc register` creates
/// the directory instead.)
pub(crate) fn existing_registry(dir: &std::path::Path) -> anyhow::Result<()> {
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "no registry at `{}`: the directory does not exist (`lwirc register` creates it; \
             --registry DIR or $LWIR_REGISTRY choose another)",
            dir.display()
        ),
        _ => Ok(()),
    }
}

/// A storage failure as an error that says its cause once: a [`StorageError`]'s message
/// already ends with the OS error, which is also its `source` (that `{:#}` would repeat).
///
/// [`StorageError`]: lwir_registry::StorageError
pub(crate) fn storage_error(e: lwir_registry::StorageError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// Maps an expected registry failure (not found, ambiguous, corrupt, refused) to a message on
/// standard error and exit 1; storage failures stay errors (exit 2).
pub(crate) fn registry_failure(outcome: anyhow::Result<u8>) -> anyhow::Result<u8> {
    let error = match outcome {
        Ok(code) => return Ok(code),
        Err(error) => error,
    };
    match error.downcast::<lwir_registry::RegistryError>() {
        Ok(lwir_registry::RegistryError::Storage(e)) => Err(storage_error(e)),
        Ok(e) => {
            eprintln!("lwirc: {}", sanitize(&e.to_string()));
            Ok(crate::exit::FINDINGS)
        }
        Err(other) => match other.downcast::<lwir_registry::StorageError>() {
            Ok(e) => Err(storage_error(e)),
            Err(other) => Err(other),
        },
    }
}

/// Writes `bytes` to `path` atomically ([`lwir_repair::files::write_atomically`]), with the
/// path in the error.
pub(crate) fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    lwir_repair::files::write_atomically(path, bytes)
        .with_context(|| format!("cannot write `{}`", path.display()))
}

/// Where `lwirc repair` keeps what the built-in model harness records (its turns, its
/// scratch space): a new directory under `.lwir/sessions/`, as a compile session's.
pub(crate) fn repair_record_dir() -> PathBuf {
    lwir_session::new_session_dir(std::path::Path::new(".lwir/sessions"))
}

/// What to say, before the findings, about files given in the wrong place: a draft and
/// its definition swapped, a goal file or a definition where a draft belongs, a draft
/// where the definition belongs. Said only when the validation has errors (a file of the
/// right kind is never second-guessed), one line each.
pub(crate) fn misplaced(validation: &lwir_validators::pipeline::Validation) -> Vec<String> {
    use lwir_spec::Origin;
    use lwir_spec::kind::FileKind;
    if !validation.has_errors() {
        return Vec::new();
    }
    let kind_of = |origin| {
        validation
            .document(origin)
            .and_then(|d| FileKind::of(d.root()))
    };
    let name = |origin| sanitize(&validation.source(origin).name);
    let draft = validation
        .has_draft()
        .then(|| kind_of(Origin::Draft))
        .flatten();
    let definition = kind_of(Origin::Definition);
    let mut notes = Vec::new();
    if draft == Some(FileKind::Definition) && definition == Some(FileKind::Draft) {
        notes.push(format!(
            "lwirc: `{}` is a workflow definition and `{}` an LWIR draft: did you swap them? \
             The draft comes first, the definition after -d: lwirc validate DRAFT -d WORKFLOW",
            name(Origin::Draft),
            name(Origin::Definition)
        ));
        return notes;
    }
    match draft {
        Some(FileKind::Definition) => notes.push(format!(
            "lwirc: `{0}` is a workflow definition, not a draft: to check the definition \
             alone, lwirc validate -d {0}",
            name(Origin::Draft)
        )),
        Some(FileKind::Goal) => notes.push(format!(
            "lwirc: `{}` is a goal file, not a draft: goal files are checked and created by \
             lwirc goal create",
            name(Origin::Draft)
        )),
        _ => {}
    }
    if let Some(kind @ (FileKind::Draft | FileKind::Goal)) = definition {
        notes.push(format!(
            "lwirc: `{}` is {}, not a workflow definition (the file that declares the \
             `tools` and `models` a draft may use)",
            name(Origin::Definition),
            kind.noun()
        ));
    }
    notes
}

/// Prints [`misplaced`]'s notes on standard error.
pub(crate) fn say_misplaced(validation: &lwir_validators::pipeline::Validation) {
    for note in misplaced(validation) {
        eprintln!("{note}");
    }
}
