//! Checkpoints of a goal's fold: what [`crate::projection::Fold`] made of a prefix of the
//! log, kept so that a read folds only the events after it.
//!
//! A checkpoint is only a cache; the log stays the only truth. It is addressed by the prefix
//! it covers — the seq of the last event folded and that event's chain hash, which stands for
//! every event before it — and it is used only when the log still holds that event, with
//! that chain hash, where the checkpoint says ([`crate::store::Store::events_since`]). One
//! that is missing, stale (the log does not continue it), corrupt (its bytes do not hash to
//! what its header says, or do not read as a fold) or of another format is ignored, and the
//! fold is made from the whole log again.
//!
//! Its bytes: one line of header, JSON `{"format", "position", "sha256"}` (`sha256`: hex
//! SHA-256 of the rest), then the fold as JSON.

use serde::{Deserialize, Serialize};

use crate::projection::Fold;
use crate::store::Position;

/// The format of the checkpoints this lwirc writes and reads. It names the fold's layout:
/// a change of [`Fold`]'s fields is a new format, and a checkpoint of an older one is
/// rebuilt.
pub const FORMAT: &str = "lwir-goal-fold/1";

/// After how many events folded beyond the checkpoint a read stores a new one, at least
/// ([`due`]).
pub const EVERY: usize = 64;

/// Whether a read that folded `folded` events beyond the checkpoint it started from (or
/// from the log's start) into `fold` stores a checkpoint of it: after [`EVERY`] events, or,
/// for a fold larger than that, after an eighth as many events as it holds items and
/// attempts. Storing a checkpoint costs what the fold holds, folding an event costs about
/// what one item does: so storing costs at most a fixed share of the folding it saves (no
/// goal stores a checkpoint of its whole fold every few events), and what is left to fold
/// after the last checkpoint stays a fraction of the goal. A driver stores checkpoints by the
/// same rule as it folds its own appends.
pub fn due(folded: u64, fold: &Fold) -> bool {
    let size = fold.items.len() as u64 + u64::from(fold.attempts_used);
    folded >= (EVERY as u64).max(size / 8)
}

#[derive(Serialize, Deserialize)]
struct Header {
    format: String,
    position: Position,
    sha256: String,
}

/// The bytes of a checkpoint of `fold`, which covers the log up to `position`.
pub fn encode(fold: &Fold, position: &Position) -> Vec<u8> {
    let body = serde_json::to_vec(fold).unwrap_or_default();
    let header = Header {
        format: FORMAT.to_owned(),
        position: position.clone(),
        sha256: lwir_spec::digest::sha256_hex(&body),
    };
    let mut bytes = serde_json::to_vec(&header).unwrap_or_default();
    bytes.push(b'\n');
    bytes.extend_from_slice(&body);
    bytes
}

/// The fold a checkpoint holds and the position it covers; `None` for bytes that are not a
/// whole checkpoint of [`FORMAT`] (whatever they are: they are never trusted further).
pub fn decode(bytes: &[u8]) -> Option<(Fold, Position)> {
    let split = bytes.iter().position(|&b| b == b'\n')?;
    let header: Header = serde_json::from_slice(&bytes[..split]).ok()?;
    let body = &bytes[split + 1..];
    if header.format != FORMAT || lwir_spec::digest::sha256_hex(body) != header.sha256 {
        return None;
    }
    let fold: Fold = serde_json::from_slice(body).ok()?;
    if fold.last_seq != header.position.seq || header.position.seq == 0 {
        return None;
    }
    Some((fold.reindexed()?, header.position))
}
