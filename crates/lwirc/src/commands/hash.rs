//! `lwirc hash`: the content hash of a JSON file, `sha256:` + SHA-256 of its canonical bytes.

use lwir_spec::canon::sha256_of;

use super::{JsonFile, print};

/// Print `sha256:<hex>`, the SHA-256 of a JSON file's RFC 8785 canonical bytes.
///
/// For an LWIR draft this is its WorkflowVersion: the same value `lwirc validate` reports for
/// a clean draft and `lwirc register` stores it under. Two files that differ only in
/// whitespace, key order, escapes or number spelling have the same hash. A file that is not
/// I-JSON is reported on standard error (exit 1).
///
/// Exit status: 0 printed, 1 not I-JSON, 2 usage error or unreadable file.
///
/// Examples:
///   lwirc hash draft.json
///   lwirc canon draft.json | sha256sum          # the same digest, without `sha256:`
///   planner-cli | lwirc hash -
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    #[command(flatten)]
    file: JsonFile,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    args.file
        .print_canonical(|canonical| print(&format!("{}\n", sha256_of(canonical))))
}
