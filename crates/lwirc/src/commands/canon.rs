//! `lwirc canon`: the RFC 8785 canonical bytes of a JSON file.

use super::{JsonFile, print_bytes};

/// Print the RFC 8785 (JCS) canonical form of a JSON file.
///
/// The file is read as strict I-JSON first: duplicate keys, lone surrogates, invalid UTF-8,
/// integers beyond ±(2^53−1) and numbers that overflow a double are reported (on standard
/// error, exit 1), never silently canonicalised. The canonical bytes have no whitespace,
/// keys sorted by UTF-16 code units, ECMAScript number formatting and minimal string
/// escaping; they are written without a trailing newline. `lwirc hash` prints their SHA-256.
///
/// Exit status: 0 printed, 1 not I-JSON, 2 usage error or unreadable file.
///
/// Examples:
///   lwirc canon draft.json
///   lwirc canon draft.json | sha256sum
///   echo '{"b": 1.0, "a": 1e2}' | lwirc canon -        # {"a":100,"b":1}
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    #[command(flatten)]
    json: JsonFile,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    args.json.print_canonical(print_bytes)
}
