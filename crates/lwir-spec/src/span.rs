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
        line_starts.extend(memchr::memchr_iter(b'\n', bytes).map(|i| i + 1));
        Self { line_starts }
    }

    /// The index of the text made by replacing bytes `start..end` of this one's text with
    /// `inserted`: the lines before the edit are kept, those after it moved, only the
    /// inserted bytes are read.
    pub fn replace(&mut self, start: usize, end: usize, inserted: &[u8]) {
        let end = end.max(start);
        // Line starts `s ≤ start` follow a newline before the edit; `start < s ≤ end` one
        // it removes; the rest one after it.
        let keep = self.line_starts.partition_point(|&s| s <= start);
        let after = self.line_starts.partition_point(|&s| s <= end);
        let added: Vec<usize> = memchr::memchr_iter(b'\n', inserted)
            .map(|i| start + i + 1)
            .collect();
        let moved = keep + added.len();
        self.line_starts.splice(keep..after, added);
        for s in &mut self.line_starts[moved..] {
            *s = *s - end + start + inserted.len();
        }
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

    /// The 1-based line and UTF-16 column of byte `offset` (clamped to the file): the
    /// column counts UTF-16 code units, what the Language Server Protocol counts by
    /// default (its positions are this minus one in both).
    pub fn locate_utf16(&self, offset: usize) -> LineColumn {
        self.index.locate_utf16(self.bytes, offset)
    }
}

/// What [`Locator`] knows of a file, without the file: its lines, and the columns before
/// every block. For an owner of the bytes that cannot lend them to a [`Locator`].
#[derive(Clone, Debug)]
pub struct ColumnIndex {
    lines: LineIndex,
    /// Per block: its start (at a character boundary), and the columns and UTF-16 code units
    /// before it.
    blocks: Vec<Block>,
}

/// A block of [`ColumnIndex`].
#[derive(Clone, Copy, Debug)]
struct Block {
    start: usize,
    columns: usize,
    units: usize,
}

/// The block size of [`ColumnIndex`]: its index is about 2.5% of the file.
const BLOCK: usize = 1024;

impl ColumnIndex {
    /// The index of `bytes`.
    pub fn new(bytes: &[u8]) -> Self {
        let mut blocks = vec![Block {
            start: 0,
            columns: 0,
            units: 0,
        }];
        let mut at = 0;
        let (mut columns_before, mut units_before) = (0, 0);
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
            let (c, u) = count(&bytes[at..next]);
            columns_before += c;
            units_before += u;
            blocks.push(Block {
                start: next,
                columns: columns_before,
                units: units_before,
            });
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
        self.position(bytes, offset, |c| c.0)
    }

    /// The 1-based line and UTF-16 column of byte `offset` of `bytes`, clamped to the file
    /// (see [`Locator::locate_utf16`]).
    pub fn locate_utf16(&self, bytes: &[u8], offset: usize) -> LineColumn {
        self.position(bytes, offset, |c| c.1)
    }

    /// The line of `offset` and its column as `pick` takes it from (characters, UTF-16
    /// units).
    fn position(
        &self,
        bytes: &[u8],
        offset: usize,
        pick: impl Fn((usize, usize)) -> usize,
    ) -> LineColumn {
        let offset = offset.min(bytes.len());
        let line = self.lines.line_of(offset);
        let start = self.lines.line_start(line);
        LineColumn {
            line: line + 1,
            column: pick(self.before(bytes, offset)) - pick(self.before(bytes, start)) + 1,
        }
    }

    /// How many columns and UTF-16 code units the bytes before `offset` take.
    fn before(&self, bytes: &[u8], offset: usize) -> (usize, usize) {
        let block = self.blocks.partition_point(|b| b.start <= offset) - 1;
        let Block {
            start,
            columns,
            units,
        } = self.blocks[block];
        let (c, u) = count(&bytes[start..offset]);
        (columns + c, units + u)
    }
}

/// How many columns `bytes` take — one per character, and one per byte that is not part
/// of valid UTF-8 (as [`crate::document::display_text`] shows each such byte as `?`) — and
/// how many UTF-16 code units (two for a character outside the BMP; one per invalid byte).
fn count(mut bytes: &[u8]) -> (usize, usize) {
    // In valid UTF-8 a character outside the BMP, two UTF-16 units, is the one whose first
    // byte is 0xF0 or more.
    let valid = |s: &str| {
        let chars = s.chars().count();
        (chars, chars + s.bytes().filter(|&b| b >= 0xF0).count())
    };
    let (mut columns, mut units) = (0, 0);
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                let (c, u) = valid(s);
                return (columns + c, units + u);
            }
            Err(e) => {
                let good = e.valid_up_to();
                let (c, u) = valid(std::str::from_utf8(&bytes[..good]).unwrap_or_default());
                let bad = e.error_len().unwrap_or(bytes.len() - good);
                columns += c + bad;
                units += u + bad;
                bytes = &bytes[good + bad..];
            }
        }
    }
}

/// How many columns `bytes` take (see [`count`]).
#[cfg(test)]
fn columns(bytes: &[u8]) -> usize {
    count(bytes).0
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// An index updated by an edit is the index of the edited text.
        #[test]
        fn an_edited_index_is_the_index_of_the_edited_text(
            text in "[a\n\r]{0,40}",
            edits in proptest::collection::vec((0usize..50, 0usize..50, "[b\n]{0,6}"), 1..6),
        ) {
            let mut text = text.into_bytes();
            let mut index = LineIndex::new(&text);
            for (a, b, inserted) in edits {
                let start = a.min(text.len());
                let end = b.min(text.len()).max(start);
                text.splice(start..end, inserted.bytes());
                index.replace(start, end, inserted.as_bytes());
                proptest::prop_assert_eq!(&index.line_starts, &LineIndex::new(&text).line_starts);
            }
        }
    }

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
    fn utf16_columns_count_surrogate_pairs_twice() {
        // `😀` is one character, two UTF-16 units; `é` one of each.
        let text = "a\u{1f600}b\n\u{e9}\u{1f600}\u{1f600}c".as_bytes();
        let loc = Locator::new(text);
        let b = text.iter().position(|&x| x == b'b').unwrap();
        assert_eq!(loc.locate(b), LineColumn { line: 1, column: 3 });
        assert_eq!(loc.locate_utf16(b), LineColumn { line: 1, column: 4 });
        let c = text.len() - 1;
        assert_eq!(loc.locate(c), LineColumn { line: 2, column: 4 });
        assert_eq!(loc.locate_utf16(c), LineColumn { line: 2, column: 6 });
    }

    /// Across blocks, on a long line of characters outside the BMP, the UTF-16 column
    /// agrees with encoding the line.
    #[test]
    fn utf16_columns_agree_with_encode_utf16_across_blocks() {
        let line: String = ["x", "\u{1f600}", "\u{e9}", "\u{20ac}"]
            .iter()
            .cycle()
            .take(4000)
            .copied()
            .collect();
        let text = format!("{{\n{line}\n}}");
        let loc = Locator::new(text.as_bytes());
        for (offset, _) in text.char_indices().step_by(13) {
            let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
            let units = text[start..offset].encode_utf16().count();
            assert_eq!(loc.locate_utf16(offset).column, units + 1, "at {offset}");
        }
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
