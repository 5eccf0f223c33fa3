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
//! Its bytes: one line of header, JSON `{"format", "position", "length", "crc32"}` (the
//! length in bytes of the rest and its CRC-32, which catch a checkpoint cut short or
//! damaged), then the fold as JSON. The check is a CRC, not a cryptographic hash: it guards
//! against damage, not against someone who can write the goal's directory (who could as well
//! rewrite a hash), and a read checks it on every command, where SHA-256 of a 1 000-item
//! fold cost a tenth of a `goal show`.

use serde::{Deserialize, Serialize};

use crate::projection::Fold;
use crate::store::Position;

/// The format of the checkpoints this lwirc writes and reads. It names the fold's layout:
/// a change of [`Fold`]'s fields is a new format, and a checkpoint of an older one is
/// rebuilt.
pub const FORMAT: &str = "lwir-goal-fold/2";

/// After how many events folded beyond the checkpoint a read stores a new one, at least
/// ([`due`]).
pub const EVERY: usize = 64;

/// Whether a read that folded `folded` events beyond the checkpoint it started from (or
/// from the log's start) into `fold` stores a checkpoint of it: after [`EVERY`] events, or,
/// for a fold larger than that, after a thirty-second as many events as it holds items and
/// attempts. Storing a checkpoint costs what the fold holds; folding an event — its line
/// read, its chain hash checked, its JSON decoded — costs about four times what storing one
/// item or attempt does (measured on a 1 000-item goal of ~11 000 events). So storing costs
/// at most a fixed share of the folding it saves (no goal stores a checkpoint of its whole
/// fold every few events), and what a read may have to fold after the last checkpoint stays
/// a small fraction of the goal. A driver stores checkpoints by the same rule as it folds
/// its own appends.
pub fn due(folded: u64, fold: &Fold) -> bool {
    let size = fold.items.len() as u64 + u64::from(fold.attempts_used);
    folded >= (EVERY as u64).max(size / 32)
}

#[derive(Serialize, Deserialize)]
struct Header {
    format: String,
    position: Position,
    length: usize,
    crc32: u32,
}

/// The bytes of a checkpoint of `fold`, which covers the log up to `position`.
pub fn encode(fold: &Fold, position: &Position) -> Vec<u8> {
    let body = serde_json::to_vec(fold).unwrap_or_default();
    let header = Header {
        format: FORMAT.to_owned(),
        position: position.clone(),
        length: body.len(),
        crc32: crc32fast::hash(&body),
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
    if header.format != FORMAT
        || body.len() != header.length
        || crc32fast::hash(body) != header.crc32
    {
        return None;
    }
    // Checked as UTF-8 once, whole, not string by string as a read of bytes would.
    let fold: Fold = serde_json::from_str(std::str::from_utf8(body).ok()?).ok()?;
    if fold.last_seq != header.position.seq || header.position.seq == 0 {
        return None;
    }
    Some((fold.reindexed()?, header.position))
}

#[cfg(test)]
mod tests {
    use super::{decode, encode};
    use crate::projection::Fold;
    use crate::store::Position;

    fn kept() -> (Fold, Position, Vec<u8>) {
        let mut fold = Fold::default();
        fold.created_at = "2026-01-01T00:00:00Z".into();
        fold.attempts_used = 3;
        fold.last_seq = 7;
        let position = Position {
            seq: 7,
            chain: "c".repeat(64),
            previous: "p".repeat(64),
            start: 100,
            end: 180,
        };
        let bytes = encode(&fold, &position);
        (fold, position, bytes)
    }

    #[test]
    fn what_is_encoded_decodes_to_the_same_fold_and_position() {
        let (fold, position, bytes) = kept();
        assert_eq!(decode(&bytes), Some((fold, position)));
    }

    #[test]
    fn a_checkpoint_cut_short_damaged_or_grown_is_not_read() {
        let (_, _, bytes) = kept();
        let body = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
        // Cut anywhere, one bit flipped anywhere in the fold, or a byte added after it.
        for at in 0..bytes.len() {
            assert_eq!(decode(&bytes[..at]), None, "cut at {at}");
        }
        for at in body..bytes.len() {
            for bit in 0..8 {
                let mut damaged = bytes.clone();
                damaged[at] ^= 1 << bit;
                assert_eq!(decode(&damaged), None, "bit {bit} of byte {at}");
            }
        }
        let mut grown = bytes.clone();
        grown.push(b' ');
        assert_eq!(decode(&grown), None);
    }

    #[test]
    fn a_checkpoint_of_the_earlier_format_is_not_read() {
        // What lwirc wrote before `lwir-goal-fold/2`: a SHA-256 of the fold in the header.
        let (fold, position, _) = kept();
        let body = serde_json::to_vec(&fold).unwrap();
        let header = serde_json::json!({
            "format": "lwir-goal-fold/1",
            "position": position,
            "sha256": lwir_spec::digest::sha256_hex(&body),
        });
        let mut bytes = serde_json::to_vec(&header).unwrap();
        bytes.push(b'\n');
        bytes.extend_from_slice(&body);
        assert_eq!(decode(&bytes), None);
    }
}
