//! Byte spans into a source file, and their line/column form.

use std::fmt;

/// A half-open byte range `[start, end)` into the bytes of a file as given.
///
/// Offsets are kept in 32 bits: a document has a span for every value and key, so this is
/// a good part of its memory, and lwirc reads no document of [`Span::MAX_OFFSET`] bytes or
/// more (the reader refuses it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    start: u32,
    end: u32,
}

impl Span {
    /// The largest offset a span holds: 4 GiB − 1.
    pub const MAX_OFFSET: usize = u32::MAX as usize;

    /// The span `[start, end)`. An offset past [`Span::MAX_OFFSET`] is taken as that (no
    /// document read has one).
    pub fn new(start: usize, end: usize) -> Self {
        let clamp = |offset: usize| u32::try_from(offset).unwrap_or(u32::MAX);
        Self {
            start: clamp(start),
            end: clamp(end),
        }
    }

    /// First byte, inclusive.
    pub const fn start(self) -> usize {
        self.start as usize
    }

    /// One past the last byte.
    pub const fn end(self) -> usize {
        self.end as usize
    }

    /// The bytes it covers, as a range for slicing.
    pub const fn range(self) -> std::ops::Range<usize> {
        self.start()..self.end()
    }

    /// Its length in bytes.
    pub const fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    /// Whether it covers no byte.
    pub const fn is_empty(self) -> bool {
        self.start == self.end
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// A 1-based line and column. Columns count Unicode scalar values (characters), as rustc
/// and SARIF's `unicodeCodePoints` column kind do; for ASCII text that is the byte column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineColumn {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

/// Start offsets of every line of a file. Looking up a line is a binary search; for
/// columns too, go through [`Locator`] or [`ColumnIndex`], which do not count from the
/// line start.
#[derive(Clone, Debug)]
pub struct LineIndex {
    line_starts: Vec<usize>,
}

impl LineIndex {
    /// Indexes the line starts of `bytes` (`\n` ends a line; a `\r` before it is part of it).
    pub fn new(bytes: &[u8]) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|&(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Self { line_starts }
    }

    /// 0-based line number of `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset) - 1
    }

    /// How many lines there are (a file without a newline has one).
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// Byte offset at which 0-based `line` starts.
    pub fn line_start(&self, line: usize) -> usize {
        self.line_starts[line]
    }
}

/// Turns byte offsets into line/column pairs, in any order, each in time independent of
/// the length of its line: the columns before every [`BLOCK`]-byte block are counted once,
/// so a finding far into a minified one-line document, or one whose related place is near
/// the start, costs no more than one on a short line.
#[derive(Debug)]
pub struct Locator<'a> {
    bytes: &'a [u8],
    index: ColumnIndex,
}

impl<'a> Locator<'a> {
    /// A locator over `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            index: ColumnIndex::new(bytes),
        }
    }

    /// The 1-based line and character column of byte `offset` (clamped to the file).
    pub fn locate(&self, offset: usize) -> LineColumn {
        self.index.locate(self.bytes, offset)
    }
}

/// What [`Locator`] knows of a file, without the file: its lines, and the columns before
/// every block. For an owner of the bytes that cannot lend them to a [`Locator`].
#[derive(Clone, Debug)]
pub struct ColumnIndex {
    lines: LineIndex,
    /// Per block: its start (at a character boundary) and the columns before it.
    blocks: Vec<(usize, usize)>,
}

/// The block size of [`ColumnIndex`]: its index is about 1.5% of the file.
const BLOCK: usize = 1024;

impl ColumnIndex {
    /// The index of `bytes`.
    pub fn new(bytes: &[u8]) -> Self {
        let mut blocks = vec![(0, 0)];
        let mut at = 0;
        let mut before = 0;
        loop {
            // The next block starts at a byte that does not continue a UTF-8 sequence, so
            // no character is split between two blocks.
            let mut next = (at + BLOCK).min(bytes.len());
            while next < bytes.len() && bytes[next] & 0xC0 == 0x80 && next < at + BLOCK + 3 {
                next += 1;
            }
            if next >= bytes.len() {
                break;
            }
            before += columns(&bytes[at..next]);
            blocks.push((next, before));
            at = next;
        }
        Self {
            lines: LineIndex::new(bytes),
            blocks,
        }
    }

    /// The lines.
    pub fn lines(&self) -> &LineIndex {
        &self.lines
    }

    /// The 1-based line and character column of byte `offset` of `bytes` (the bytes this
    /// index was made of), clamped to the file.
    pub fn locate(&self, bytes: &[u8], offset: usize) -> LineColumn {
        let offset = offset.min(bytes.len());
        let line = self.lines.line_of(offset);
        let start = self.lines.line_start(line);
        LineColumn {
            line: line + 1,
            column: self.columns_before(bytes, offset) - self.columns_before(bytes, start) + 1,
        }
    }

    /// How many columns the bytes before `offset` take.
    fn columns_before(&self, bytes: &[u8], offset: usize) -> usize {
        let block = self.blocks.partition_point(|&(start, _)| start <= offset) - 1;
        let (start, before) = self.blocks[block];
        before + columns(&bytes[start..offset])
    }
}

/// How many columns `bytes` take: one per character, and one per byte that is not part of
/// valid UTF-8 (as [`crate::document::display_text`] shows each such byte as `?`).
fn columns(mut bytes: &[u8]) -> usize {
    let mut n = 0;
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => return n + s.chars().count(),
            Err(e) => {
                let valid = e.valid_up_to();
                n += std::str::from_utf8(&bytes[..valid]).map_or(0, |s| s.chars().count());
                let bad = e.error_len().unwrap_or(bytes.len() - valid);
                n += bad;
                bytes = &bytes[valid + bad..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_lines_and_character_columns() {
        let text = "ab\n\u{e9}x\r\nyz".as_bytes();
        let loc = Locator::new(text);
        assert_eq!(loc.locate(0), LineColumn { line: 1, column: 1 });
        assert_eq!(loc.locate(1), LineColumn { line: 1, column: 2 });
        assert_eq!(loc.locate(3), LineColumn { line: 2, column: 1 });
        // `x` follows a two-byte `é`: byte 5, character column 2.
        assert_eq!(loc.locate(5), LineColumn { line: 2, column: 2 });
        assert_eq!(loc.locate(8), LineColumn { line: 3, column: 1 });
        // Any order.
        assert_eq!(loc.locate(1), LineColumn { line: 1, column: 2 });
        assert_eq!(loc.locate(100), LineColumn { line: 3, column: 3 });
    }

    #[test]
    fn invalid_bytes_take_one_column_each() {
        let text = b"a\x94\xE9b\xC3\xA9c";
        let loc = Locator::new(text);
        assert_eq!(loc.locate(3), LineColumn { line: 1, column: 4 });
        assert_eq!(loc.locate(6), LineColumn { line: 1, column: 6 });
    }

    /// The block index gives what counting from the line start gives, on long lines of
    /// multi-byte and invalid bytes, wherever the block boundaries fall.
    #[test]
    fn blocks_agree_with_counting_from_the_line_start() {
        let mut text = Vec::new();
        let pieces: [&[u8]; 7] = [
            b"a",
            "\u{e9}".as_bytes(),
            "\u{1f600}".as_bytes(),
            b"\x80\x80\x80\x80\x80",
            b"\xF0\x9F",
            b"\n",
            "\u{20ac}".as_bytes(),
        ];
        let mut seed = 7u32;
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let piece = pieces[(seed >> 16) as usize % pieces.len()];
            // Few line breaks: long lines.
            if piece == b"\n" && !(seed >> 8).is_multiple_of(50) {
                continue;
            }
            text.extend_from_slice(piece);
        }
        let loc = Locator::new(&text);
        let index = LineIndex::new(&text);
        for offset in (0..=text.len()).rev().step_by(7) {
            let line = index.line_of(offset);
            let naive = columns(&text[index.line_start(line)..offset]) + 1;
            assert_eq!(
                loc.locate(offset),
                LineColumn {
                    line: line + 1,
                    column: naive
                },
                "at {offset}"
            );
        }
    }
}
